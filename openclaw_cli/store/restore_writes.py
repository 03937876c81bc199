"""Putting an archived session back into its store (issue 27 §3): a new row `key` whose transcript
is exactly the archive's lines, on every store kind.

* legacy: the archive's bytes become `<sid>.jsonl` (temp file, fsync, published without replacing
  anything), then the row is added to `sessions.json` under its lock; a row that cannot be added
  takes its new file back with it;
* our SQLite: one transaction creates the window (reason `recovery`) with the lines and the row;
* a real OpenClaw database (schema 23/24): one verified transaction (`openclaw_writes.transaction`:
  the run's backup first, projections settled) creates the window (`recovery`) and the row.

An existing row under `key`, or a window/file already holding the session id, is refused
(`PreconditionError`) with nothing written. The operation layer picks a new session id when the
old one is taken and a new key was asked for.

(One function over the store kinds for now; it becomes a write-protocol method of `SessionStore`
once the protocol refactor in flight has landed.)
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.fsio import FILE_MODE, fsync_dir

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass
class RestoreOutcome:
    key: str
    session_id: str
    entry: dict[str, Any]
    location: str  # the transcript file, or `sqlite:<db>#<sid>`
    events: int


def session_id_taken(store: Any, session_id: str) -> bool:
    """Whether `session_id` already names a transcript of this store (a row's, a window's or a file)."""
    if store.transcripts_in_files:
        if (Path(store.sessions_dir) / f"{session_id}.jsonl").exists():
            return True
    elif store.has_transcript(session_id):
        return True
    return any(entry.get("sessionId") == session_id for entry in store.load_entries().values())


def restore_session(
    store: Any, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any, now_ms: int
) -> RestoreOutcome:
    sid = entry["sessionId"]
    store.ensure_writable("restore a session")
    lines = [line for line in content.split(b"\n") if line.strip()]
    if store.transcripts_in_files:
        return _legacy(store, key, entry, content, len(lines), lock_settings)
    texts = [line.decode("utf-8") for line in lines]
    if store.kind == "sqlite":
        with store.transaction():
            if store.get_entry(key) is not None:
                raise PreconditionError(f"session already exists: {key}")
            row = dict(entry)
            row.pop("sessionFile", None)
            store.create_window(key, sid, reason="recovery", raw_lines=texts, entry=row, created_at_ms=now_ms)
        return RestoreOutcome(key, sid, row, f"sqlite:{store.path}#{sid}", len(texts))
    from openclaw_cli.store.openclaw.rows import create_window, read_entry
    from openclaw_cli.store.openclaw.writes import transaction

    row = dict(entry)
    row.pop("sessionFile", None)
    with transaction(store) as conn:
        if read_entry(conn, key) is not None:
            raise PreconditionError(f"session already exists: {key}")
        create_window(
            conn, store, key, sid, row, reason="recovery", previous=None, lines=texts, now_ms=now_ms
        )
    return RestoreOutcome(key, sid, row, f"sqlite:{store.path}#{sid}", len(texts))


def _legacy(
    store: Any, key: str, entry: dict[str, Any], content: bytes, events: int, lock_settings: Any
) -> RestoreOutcome:
    from openclaw_cli.store.archives import _publish
    from openclaw_cli.store.lock import transcript_lock

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
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            if not _publish(tmp, path):
                raise PreconditionError(f"Refusing to overwrite existing transcript {path}")
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        fsync_dir(path.parent)
        try:
            store.upsert_entries({key: row}, lock_settings=lock_settings)
        except BaseException:
            os.unlink(path)  # no row points at it: never leave a half-made restore behind
            raise
    return RestoreOutcome(key, sid, row, str(path), events)
