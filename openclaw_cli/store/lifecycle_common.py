"""Session lifecycle writes (compaction-lifecycle.md §3; spec D1, D6, D12, D15): what the store
kinds' `patch_entry`, `reset_session`, `fork_session` and `switch_branch` share (outcomes, the
exclusive file create, the switch plan). Each kind's writes live in its package
(`legacy/lifecycle.py`, `sqlite/lifecycle.py`, `openclaw/lifecycle.py`). The operations layer
decides *what* a row becomes (`ops.lifecycle`, `lifecycle`); the store kinds make it so,
atomically and without losing a transcript line.

* **patch** — read-modify-write of one row. Legacy: under `sessions.json`'s lock (the store
  writer), re-read, mutate, one atomic rewrite. SQLite: one `BEGIN IMMEDIATE` transaction.
* **reset** — the session gets a new id (profile L): the old transcript leaves the store only
  through a verified archive `<oldId>.jsonl.reset.<ts>.zst` (D15) and a header-only transcript
  starts the new session. Legacy order, so a kill at any instant loses nothing: under the old
  transcript's write lock (waited for like every writer, D12) archive → new transcript file → row
  → unlink the original (only while it is still the archived file). SQLite: one transaction
  exports the window, writes the archive, creates the successor window (reason `reset`), points
  the row at it, drops the old window's events and records the archive row; a rollback removes
  the archive again.
* **fork** — a new row whose transcript is the parent's active branch (`store.fork`): legacy
  takes the parent's transcript lock without waiting (a held lock means a writer is mid-turn:
  refused with OpenClaw's "still active" text) and writes the child file before its row; SQLite
  reads the parent and creates the child window + row in one transaction (a busy database waits
  `busy_timeout`, then fails busy).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import PreconditionError, SessionBusyError
from openclaw_cli.fsio import FILE_MODE, O_CLOEXEC, O_NOFOLLOW, fsync_dir
from openclaw_cli.records import Record

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


ACTIVE_CODE = "OPENCLAW_SESSION_ACTIVE"


Mutate = Callable[[dict[str, Any] | None], dict[str, Any] | None]


class ResetOutcome(Record):
    _fields = ("entry", "session_id", "previous_session_id", "archive", "transcript", "shared")
    entry: dict[str, Any]
    session_id: str
    previous_session_id: str | None
    archive: Any  # archives.ArchiveResult of the previous transcript (None: nothing to archive)
    transcript: str | None  # the new transcript: a file path (legacy) or `sqlite:<db>#<id>`
    shared: bool  # another row still uses the previous transcript: it stayed in place

    def __init__(
        self,
        entry: dict[str, Any],
        session_id: str,
        previous_session_id: str | None,
        archive: Any = None,
        transcript: str | None = None,
        shared: bool = False,
    ) -> None:
        self.entry = entry
        self.session_id = session_id
        self.previous_session_id = previous_session_id
        self.archive = archive
        self.transcript = transcript
        self.shared = shared


class ForkOutcome(Record):
    _fields = ("key", "entry", "session_id", "plan", "transcript")
    key: str
    entry: dict[str, Any]
    session_id: str
    plan: Any  # store.fork.ForkPlan
    transcript: str | None

    def __init__(
        self, key: str, entry: dict[str, Any], session_id: str, plan: Any, transcript: str | None = None
    ) -> None:
        self.key = key
        self.entry = entry
        self.session_id = session_id
        self.plan = plan
        self.transcript = transcript


def plan_child(
    parent: dict[str, Any],
    snapshot: Any,
    build: Callable[[dict[str, Any], Any], dict[str, Any]],
    *,
    now_ms: int,
    parent_ref: str | None,
    max_tokens: int,
    through_last_completed: bool,
    at_entry: str | None,
) -> tuple[str, str, Any, dict[str, Any]]:
    """A fork's child, the same for every store kind: its new session id, its cwd (the parent
    header's, else ours), the plan of its lines (`store.fork.plan_fork` over the parent's
    `snapshot`) and its row as `build` makes it."""
    from openclaw_cli.store.fork import plan_fork

    child_sid = str(uuid.uuid4())
    header = snapshot.header or {}
    cwd: str = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
    plan = plan_fork(
        parent,
        header,
        snapshot.branch,
        child_session_id=child_sid,
        timestamp=iso_ms(now_ms),
        cwd=cwd,
        parent_ref=parent_ref,
        max_tokens=max_tokens,
        through_last_completed=through_last_completed,
        at_entry=at_entry,
        all_lines=snapshot.lines,
    )
    return child_sid, cwd, plan, build({"sessionId": child_sid}, plan)


def active_parent_error(key: str) -> SessionBusyError:
    return SessionBusyError(f"Parent session {key} is still active; try again in a moment.", code=ACTIVE_CODE)


def session_file_value(old: Any, new_path: Path) -> str | None:
    """Keep a row's `sessionFile` style: a bare name stays a bare name, a path stays absolute;
    a row without one gets none (the default name is the new id's)."""
    if not isinstance(old, str) or not old:
        return None
    if "/" not in old and "\\" not in old:
        return new_path.name
    return str(new_path)


def create_exclusive(path: Path, lines: list[str]) -> None:
    """A new file with `lines`, published complete (temp, fsync, link/rename without replacing);
    an existing file of that name is never touched."""
    create_exclusive_bytes(path, b"".join(line.encode("utf-8") + b"\n" for line in lines))


def create_exclusive_bytes(path: Path, data: bytes) -> None:
    """`create_exclusive` of bytes as they are (a restored archive's content)."""
    from openclaw_cli.store.archives import _publish

    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if not _publish(tmp, path):
            raise PreconditionError(f"Refusing to overwrite existing transcript {path}")
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    fsync_dir(path.parent)


def leaf_id(store: SessionStore, session_id: str, entry: dict[str, Any] | None) -> str | None:
    """The id of the transcript's last non-header entry (the leaf a new entry hangs from)."""
    for line in reversed(store.tail_transcript(session_id, 8, entry=entry, issues=[])):
        obj = line.obj
        if isinstance(obj, dict) and obj.get("type") != "session" and isinstance(obj.get("id"), str):
            return cast(str, obj["id"])
    return None


class SwitchOutcome(Record):
    _fields = ("entry", "session_id", "previous_session_id", "transcript")
    entry: dict[str, Any]
    session_id: str
    previous_session_id: str
    transcript: str | None

    def __init__(
        self, entry: dict[str, Any], session_id: str, previous_session_id: str, transcript: str | None = None
    ) -> None:
        self.entry = entry
        self.session_id = session_id
        self.previous_session_id = previous_session_id
        self.transcript = transcript


def switch_plan(
    snapshot: Any,
    leaf_id: str,
    build: Callable[[dict[str, Any], str], dict[str, Any]],
    current: dict[str, Any],
    now_ms: int,
) -> tuple[str, list[str], dict[str, Any]]:
    from openclaw_cli.store.message_cut import plan_switch

    new_sid = str(uuid.uuid4())
    snapshot.restore_raw()  # every line is copied as it is
    lines = plan_switch(
        snapshot.lines, leaf_id, session_id=new_sid, timestamp=iso_ms(now_ms), cwd=os.getcwd()
    )
    return new_sid, lines, build(dict(current), new_sid)
