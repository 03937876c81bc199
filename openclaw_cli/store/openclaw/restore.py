"""Putting an archived session back into a real OpenClaw database, schema 23/24 (issue 27 §3;
`SessionStore.restore_session`): one verified transaction (`writes.transaction`: the run's backup
first, projections settled) creates the window (reason `recovery`) with the archive's lines and the
row; an existing row under `key` is refused (`PreconditionError`), nothing written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.store.base import RestoreOutcome

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore


def restore_session(
    store: OpenClawDbStore, key: str, entry: dict[str, Any], content: bytes, *, now_ms: int
) -> RestoreOutcome:
    from openclaw_cli.store.openclaw.rows import create_window, read_entry
    from openclaw_cli.store.openclaw.writes import transaction

    sid = entry["sessionId"]
    texts = [line.decode("utf-8") for line in content.split(b"\n") if line.strip()]
    row = dict(entry)
    row.pop("sessionFile", None)
    with transaction(store) as conn:
        if read_entry(conn, key) is not None:
            raise PreconditionError(f"session already exists: {key}")
        create_window(
            conn, store, key, sid, row, reason="recovery", previous=None, lines=texts, now_ms=now_ms
        )
    return RestoreOutcome(key, sid, row, f"sqlite:{store.path}#{sid}", len(texts))
