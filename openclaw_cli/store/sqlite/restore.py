"""Putting an archived session back into our SQLite store (issue 27 §3;
`SessionStore.restore_session`): one transaction creates the window (reason `recovery`) with the
archive's lines and the row; an existing row under `key` is refused (`PreconditionError`), nothing
written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.store.base import RestoreOutcome

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


def restore_session(
    store: SqliteStore, key: str, entry: dict[str, Any], content: bytes, *, now_ms: int
) -> RestoreOutcome:
    sid = entry["sessionId"]
    texts = [line.decode("utf-8") for line in content.split(b"\n") if line.strip()]
    with store.transaction():
        if store.get_entry(key) is not None:
            raise PreconditionError(f"session already exists: {key}")
        row = dict(entry)
        row.pop("sessionFile", None)
        store.create_window(key, sid, reason="recovery", raw_lines=texts, entry=row, created_at_ms=now_ms)
    return RestoreOutcome(key, sid, row, f"sqlite:{store.path}#{sid}", len(texts))
