"""The per-store writer queue (maintenance.md §11, spec D9/D12): one mutation at a time per store.

In-process: one lock per resolved store path (re-entrant, so a task that already writes a store may
call another write of the same store without deadlocking; different stores run in parallel).
Cross-process:
* legacy store — OpenClaw's write lock on `sessions.json` (`sessions.json.lock`, §12), held for the
  whole mutation, so an OpenClaw runtime writer waits for us and we wait for it;
* our SQLite store — SQLite's own write lock: a `BEGIN IMMEDIATE` probe with `busy_timeout` =
  `session.writeLock.acquireTimeoutMs` before any effect, so a store held by another writer fails
  before anything changed (each later write transaction waits again, D12);
* a real OpenClaw schema-23 database — its guarded writes (`store/openclaw/guard.py`, D21): a
  backup first, then the same `BEGIN IMMEDIATE` probe.
Before any of them, every kind: no Gateway but this process owns the state directory (D25).
A busy store is reported with OpenClaw's lock-timeout wording and the "session busy" exit code.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import InvalidDataError, SessionBusyError, StoreBusyError
from openclaw_cli.store.lock import TIMEOUT_CODE, LockSettingsLike

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore
    from openclaw_cli.store.openclaw.store import OpenClawDbStore
    from openclaw_cli.store.sqlite.store import SqliteStore

_GUARD = threading.Lock()
_LOCKS: dict[str, threading.RLock] = {}
_USERS: dict[str, int] = {}


def writer_key(store_path: Any, label: str = "session store writer") -> str:
    """The queue key of a store: its resolved absolute path (§11.4: blank keys are an error)."""
    if not isinstance(store_path, str | os.PathLike) or not str(store_path).strip():
        import json

        raise InvalidDataError(
            f"{label}: storePath must be a non-empty string, got {json.dumps(str(store_path) if store_path is not None else None)}"
        )
    return os.path.realpath(os.path.abspath(os.fspath(store_path)))


@contextmanager
def _process_lock(key: str) -> Iterator[None]:
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.RLock()
        _USERS[key] = _USERS.get(key, 0) + 1
    try:
        with lock:
            yield
    finally:
        with _GUARD:
            _USERS[key] -= 1
            if _USERS[key] == 0:  # empty queues are dropped (§11.4)
                del _USERS[key]
                _LOCKS.pop(key, None)


def _timeout_text(ms: float) -> str:
    return str(int(ms)) if ms != math.inf and float(ms).is_integer() else str(ms)


def sqlite_busy(store_path: Path, timeout_ms: float) -> SessionBusyError:
    """The SQLite store counterpart of OpenClaw's lock timeout (D12): same wording, same code."""
    return SessionBusyError(
        f"session file locked (timeout {_timeout_text(timeout_ms)}ms): owner=unknown {store_path}",
        code=TIMEOUT_CODE,
    )


@contextmanager
def sqlite_write_lock(store: SqliteStore | OpenClawDbStore, timeout_ms: float) -> Iterator[None]:
    """Our SQLite store's cross-process part: wait (busy_timeout) for SQLite's write lock once,
    then give it back — proof that no other writer holds the store before anything changes; a
    later busy transaction is reported the same way (D12)."""
    try:
        with store.transaction():
            pass
        yield
    except StoreBusyError:
        raise sqlite_busy(store.path, timeout_ms) from None


def owning_state_dir(store: SessionStore) -> Path | None:
    """The state directory whose Gateway would own `store`: the one its path lies in
    (`<state>/agents/<id>/sessions/sessions.json`, `<state>/agents/<id>/agent/<db>`), else the run's
    state dir (a configured `session.store` elsewhere is still that state's store)."""
    path = Path(os.path.abspath(store.path))
    parents = path.parents
    if len(parents) >= 4 and parents[0].name in ("agent", "sessions") and parents[2].name == "agents":
        return parents[3]
    return store.write_options.state_dir if store.write_options is not None else None


@contextmanager
def store_writer(store: SessionStore, lock_settings: LockSettingsLike) -> Iterator[None]:
    """Hold the writer of `store` for one mutation: the in-process queue of its path, the state
    directory's ownership (spec D25: refused while any Gateway but this process owns it, `--store`
    included; `store.state_owner`), then the store's own cross-process lock
    (`SessionStore.write_lock`; see the module docstring)."""
    from openclaw_cli.store.state_owner import state_not_owned

    store.ensure_writable("change the session store")
    with (
        _process_lock(writer_key(store.path)),
        state_not_owned(owning_state_dir(store), f"offline changes to {store.path}"),
        store.write_lock(lock_settings),
    ):
        yield
