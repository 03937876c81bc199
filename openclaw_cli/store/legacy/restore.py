"""Putting an archived session back into a legacy store (issue 27 §3; `SessionStore.restore_session`):
the archive's bytes become `<sid>.jsonl` (temp file, fsync, published without replacing anything),
then the row is added to `sessions.json` under its lock; a row that cannot be added takes its new
file back with it. An existing row under `key`, or a file already holding the session id, is
refused (`PreconditionError`) with nothing written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.store.base import RestoreOutcome
from openclaw_cli.store.lifecycle_common import create_exclusive_bytes

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore


def restore_session(
    store: LegacyStore, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any
) -> RestoreOutcome:
    from openclaw_cli.store.lock import transcript_lock

    events = sum(1 for line in content.split(b"\n") if line.strip())
    sid = entry["sessionId"]
    path = Path(store.sessions_dir) / f"{sid}.jsonl"
    row = dict(entry)
    if "sessionFile" in row:
        row["sessionFile"] = str(path)
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        if store.get_entry(key) is not None:
            raise PreconditionError(f"session already exists: {key}")
        if os.path.lexists(path):
            raise PreconditionError(f"Refusing to overwrite existing transcript {path}")
        Path(store.sessions_dir).mkdir(parents=True, exist_ok=True)
        create_exclusive_bytes(path, content)
        try:
            store.upsert_entries({key: row}, lock_settings=lock_settings)
        except BaseException:
            os.unlink(path)  # no row points at it: never leave a half-made restore behind
            raise
    return RestoreOutcome(key, sid, row, str(path), events)
