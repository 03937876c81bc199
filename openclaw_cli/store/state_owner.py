"""Whether a Gateway owns an OpenClaw state directory, for writes to its schema-23 databases
(spec D21: offline only).

OpenClaw's Gateway, and each of its SQLite maintenance commands, owns a state directory by holding
an exclusive SQLite transaction on the coordinator `/tmp/openclaw-state-locks-<uid>/
gateway-lifecycle.<8 hex of sha256(realpath(<state>/state/openclaw.sqlite))>.lock.sqlite`; a
running Gateway also holds `<state>/tmp/openclaw-<uid>/gateway.state.lock[.sqlite]`. Our writer
takes the coordinator for the whole write (so no Gateway starts halfway through it, exactly as
OpenClaw's `doctor` maintenance does) and checks the Gateway's own locks; either one held by
someone else is a refusal with the real CLI's wording. The same protocol as the migration's
`migration/ownership.py`, here because the store layer may not import the migration.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openclaw_cli.errors import StateOwnedError

WAIT_BUDGET_S = 0.25
POLL_S = 0.025
_GATEWAY_LOCKS = ("gateway.state.lock", "gateway.state.lock.sqlite")


def _uid() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else "user"


def coordinator_path(state_dir: Path) -> Path:
    db = os.path.realpath(Path(state_dir) / "state" / "openclaw.sqlite")
    digest = hashlib.sha256(db.encode("utf-8")).hexdigest()[:8]
    base = Path("/tmp") if os.name == "posix" else Path(tempfile.gettempdir())
    return base / f"openclaw-state-locks-{_uid()}" / f"gateway-lifecycle.{digest}.lock.sqlite"


def owned_message(operation: str) -> str:
    """The real CLI's refusal (`DoctorSqliteMaintenanceLockUnavailableError`), plus where to go."""
    return (f"Cannot run {operation} while the Gateway or another SQLite maintenance command owns this "
            "OpenClaw state directory. Stop the Gateway and retry, or run the command without --store "
            "so that the running Gateway makes the change.")


class _Held(Exception):
    pass


def _exclusive(path: Path, *, create: bool) -> sqlite3.Connection | None:
    """A connection holding BEGIN EXCLUSIVE on `path`; None when there is no lock file to honour;
    `_Held` when another process holds it for longer than the wait budget."""
    if not create and not path.is_file():
        return None
    if create:
        os.makedirs(path.parent, 0o700, exist_ok=True)
    deadline = time.monotonic() + WAIT_BUDGET_S
    while True:
        conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA journal_mode = MEMORY")
            conn.execute("BEGIN EXCLUSIVE")
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            text = str(exc).lower()
            if "locked" not in text and "busy" not in text:
                if create:
                    raise
                return None  # not a SQLite lock we understand (a plain marker file): nothing to honour
            if time.monotonic() >= deadline:
                raise _Held() from None
            time.sleep(POLL_S)


@contextmanager
def state_not_owned(state_dir: Path | None, operation: str) -> Iterator[None]:
    """Hold the state directory's maintenance ownership for the block; `StateOwnedError` (exit
    BUSY) when a Gateway or another maintenance command owns it. Without a state directory
    (a database outside any `agents/<id>/agent/` layout) there is nothing a Gateway could own."""
    if state_dir is None:
        yield
        return
    held: list[sqlite3.Connection] = []
    try:
        try:
            conn = _exclusive(coordinator_path(state_dir), create=True)
            if conn is not None:
                held.append(conn)
            for name in _GATEWAY_LOCKS:
                conn = _exclusive(Path(state_dir) / "tmp" / f"openclaw-{_uid()}" / name, create=False)
                if conn is not None:
                    held.append(conn)
        except _Held:
            raise StateOwnedError(owned_message(operation)) from None
        except (OSError, sqlite3.Error) as exc:
            raise StateOwnedError(f"{owned_message(operation)} (lock unavailable: {exc})") from None
        yield
    finally:
        for conn in held:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            conn.close()
