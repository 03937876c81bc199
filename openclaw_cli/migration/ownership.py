"""The state-ownership lock taken by destructive `doctor --session-sqlite` modes (§6.3).

OpenClaw's Gateway and its SQLite maintenance commands own a state directory by holding an exclusive
SQLite transaction on a coordinator file `/tmp/openclaw-state-locks-<uid>/gateway-lifecycle.<8 hex of
sha256(realpath(<state>/state/openclaw.sqlite))>.lock.sqlite`. We take the same coordinator
(`busy_timeout=0`, `journal_mode=MEMORY`, `BEGIN EXCLUSIVE`, polled for 250 ms) and also honour the
Gateway's own lock files under `<state>/tmp/openclaw-<uid>/` when they exist.
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
STATE_LOCK_NAMES = ("gateway.state.lock", "gateway.state.lock.sqlite")


def _uid() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else "user"


def coordinator_path(state_dir: Path) -> Path:
    db = os.path.realpath(state_dir / "state" / "openclaw.sqlite")
    digest = hashlib.sha256(db.encode("utf-8")).hexdigest()[:8]
    base = Path("/tmp") if os.name == "posix" else Path(tempfile.gettempdir())
    root = base / f"openclaw-state-locks-{_uid()}"
    return root / f"gateway-lifecycle.{digest}.lock.sqlite"


def state_lock_paths(state_dir: Path) -> list[Path]:
    base = state_dir / "tmp" / f"openclaw-{_uid()}"
    return [base / name for name in STATE_LOCK_NAMES]


def refusal_message(mode: str) -> str:
    return (
        f"Cannot run session SQLite {mode} while the Gateway or another SQLite maintenance command owns "
        "this OpenClaw state directory. Stop the Gateway and retry."
    )


def _try_exclusive(path: Path, *, create: bool) -> sqlite3.Connection | None:
    """An open connection holding BEGIN EXCLUSIVE on `path`, or None when another process holds it."""
    if not create and not path.exists():
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
                return None  # not a SQLite lock file we understand: nothing to honour
            if time.monotonic() >= deadline:
                raise _Busy() from None
            time.sleep(POLL_S)


class _Busy(Exception):
    pass


def hold_coordinator(state_dir: Path) -> sqlite3.Connection | None:
    """The coordinator held (an open connection in BEGIN EXCLUSIVE) for as long as the caller
    keeps it open — a Gateway holds it for its whole life; None when someone else holds it.
    A dead holder's lock is released by the operating system, so a killed Gateway leaves nothing
    that blocks the next one."""
    try:
        return _try_exclusive(coordinator_path(state_dir), create=True)
    except _Busy:
        return None


def coordinator_held(state_dir: Path) -> bool:
    """Whether a live process holds the coordinator (a Gateway or a maintenance command)."""
    path = coordinator_path(state_dir)
    if not path.exists():
        return False
    conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.DatabaseError as exc:
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    finally:
        conn.close()


@contextmanager
def state_ownership(state_dir: Path, mode: str) -> Iterator[None]:
    """Hold the state ownership for the whole block; StateOwnedError (exit BUSY) when taken."""
    held: list[sqlite3.Connection] = []
    try:
        try:
            conn = _try_exclusive(coordinator_path(state_dir), create=True)
            if conn is not None:
                held.append(conn)
            for path in state_lock_paths(state_dir):
                conn = _try_exclusive(path, create=False)
                if conn is not None:
                    held.append(conn)
        except _Busy:
            raise StateOwnedError(refusal_message(mode)) from None
        except (OSError, sqlite3.Error) as exc:
            raise StateOwnedError(f"{refusal_message(mode)} (lock unavailable: {exc})") from None
        yield
    finally:
        for conn in held:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            conn.close()
