"""The guard rails around every write to a real OpenClaw database (spec D21), as the store's
`write_lock`:

1. no Gateway but this process owns the state directory (`state_owner`, taken by `store_writer`
   around this lock, as for every store kind; the real CLI's refusal otherwise);
2. a backup before the first write of a run (SQLite's online backup into a sibling file
   `<db>.openclaw-cli-backup-<timestamp>`, written to a temp name, fsynced, then renamed), unless
   the run said `--no-backup`; a run is a command (one process) or one request to a Gateway.
   Backups are kept 7 days and at most 5 per database (D26): each new one prunes the rest. It is taken by the first write transaction right after its `BEGIN
   IMMEDIATE` (`take_due_backup`): the copy is exactly the state that transaction starts from, no
   writer can slip in between, and the archive files a cleanup publishes first are created before
   hundreds of megabytes of backup are in the page cache (file creation then stalls on writeback);
3. SQLite's write lock is free within `busy_timeout` (a probe `BEGIN IMMEDIATE`), so a busy
   database fails before anything changed; each write is then one transaction (D12).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.fsio import FILE_MODE, check_space, fsync_dir

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

_BACKED_UP: set[str] = set()  # databases backed up in this run (offline: the process; a Gateway: one request)
_GUARD = threading.Lock()
BACKUP_MARKER = ".openclaw-cli-backup-"
BACKUP_KEEP_MS = 7 * 86_400_000  # spec D26: backups are kept 7 days …
BACKUP_KEEP_COUNT = 5  # … and at most 5 per database (the newest)
BACKUP_SPACE_SLACK = 256 * 1024  # the copy's journal while it switches to DELETE mode, page rounding


def backup_need(store: OpenClawDbStore) -> int:
    """Bytes the backup still due in this run will take (0 when none is due): at most the
    database and its WAL."""
    if not store.backup_due or os.path.realpath(store.path) in _BACKED_UP:
        return 0
    total = BACKUP_SPACE_SLACK
    for suffix in ("", "-wal"):
        try:
            total += os.stat(f"{store.path}{suffix}").st_size
        except OSError:
            pass
    return total


def backup_path(db_path: Path, now_ms: int) -> Path:
    from openclaw_cli.store.archives import format_archive_timestamp

    return Path(db_path).with_name(f"{Path(db_path).name}{BACKUP_MARKER}{format_archive_timestamp(now_ms)}")


def write_backup(conn: sqlite3.Connection, db_path: Path, now_ms: int) -> Path:
    """A consistent copy of the database (WAL content included) next to it; returns its path."""
    dest = backup_path(db_path, now_ms)
    n = 0
    while dest.exists():
        n += 1
        dest = backup_path(db_path, now_ms + n)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.close(fd)
        target = sqlite3.connect(str(tmp))
        try:
            conn.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            target.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, dest)
    except BaseException:
        for leftover in (tmp, Path(f"{tmp}-journal")):
            try:
                os.unlink(leftover)
            except OSError:
                pass
        raise
    fsync_dir(dest.parent)
    return dest


def list_backups(db_path: Path) -> list[tuple[int, Path, int]]:
    """The database's backups `(taken at ms, path, bytes)`, oldest first (time from the name)."""
    from openclaw_cli.store.archives import parse_archive_timestamp

    db_path = Path(db_path)
    prefix = f"{db_path.name}{BACKUP_MARKER}"
    out: list[tuple[int, Path, int]] = []
    try:
        with os.scandir(db_path.parent) as it:
            for item in it:
                if not item.name.startswith(prefix) or not item.is_file(follow_symlinks=False):
                    continue
                taken = parse_archive_timestamp(item.name[len(prefix) :])
                if taken is not None:
                    out.append((taken, Path(item.path), item.stat(follow_symlinks=False).st_size))
    except OSError:
        return []
    return sorted(out, key=lambda b: (b[0], b[1].name))


def prune_backups(db_path: Path, now_ms: int, keep: Path | None = None) -> list[Path]:
    """Remove the database's backups older than 7 days and beyond the newest 5 (never `keep`,
    the one this run just took); returns what was removed."""
    backups = list_backups(db_path)
    newest = {b[1] for b in backups[-BACKUP_KEEP_COUNT:]}
    removed: list[Path] = []
    for taken, path, _size in backups:
        if path == keep or (path in newest and now_ms - taken <= BACKUP_KEEP_MS):
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    if removed:
        fsync_dir(Path(db_path).parent)
    return removed


def backups_summary(db_path: Path) -> dict[str, Any]:
    """What `status` shows of a database's backups."""
    backups = list_backups(db_path)
    return {
        "count": len(backups),
        "bytes": sum(b[2] for b in backups),
        "newest": str(backups[-1][1]) if backups else None,
        "keepDays": BACKUP_KEEP_MS // 86_400_000,
        "keepCount": BACKUP_KEEP_COUNT,
    }


def backup_once(store: OpenClawDbStore, now_ms: int) -> Path | None:
    """Back `store` up unless this process already did (compact --over-threshold writes one
    database many times: one backup). Called while the store's connection holds `BEGIN
    IMMEDIATE` before it wrote anything: a second, read-only connection copies the committed
    state, which is exactly what that transaction starts from (SQLite's backup cannot read
    through a connection that holds a write transaction)."""
    key = os.path.realpath(store.path)
    with _GUARD:
        if key in _BACKED_UP:
            return None
        source = sqlite3.connect(
            f"{Path(store.path).absolute().as_uri()}?mode=ro", uri=True, timeout=store.busy_timeout_ms / 1000
        )
        try:
            dest = write_backup(source, store.path, now_ms)
        finally:
            source.close()
        _BACKED_UP.add(key)
        prune_backups(store.path, now_ms, keep=dest)
    return dest


@contextmanager
def guarded_writes(store: OpenClawDbStore, lock_settings: Any) -> Iterator[None]:
    """The store writer's cross-process part for a schema-23 database (module docstring)."""
    from openclaw_cli.store.state_owner import held_here
    from openclaw_cli.store.writer import owning_state_dir, sqlite_write_lock

    options = store.write_options
    if held_here(owning_state_dir(store)):  # a Gateway's request is a run of its own: its backup
        with _GUARD:
            _BACKED_UP.discard(os.path.realpath(store.path))
    with sqlite_write_lock(store, lock_settings.acquire_timeout_ms):
        store.backup_due = bool(options.backup)
        try:
            # issue 13: refuse before writing anything when the backup cannot fit (archives add theirs)
            check_space(
                Path(store.path).parent,
                backup_need(store),
                f"the backup of {store.path}",
                consequence="nothing was written (--no-backup skips the backup)",
            )
            yield
        finally:
            store.backup_due = False


def take_due_backup(store: OpenClawDbStore) -> None:
    """Inside the first write transaction of a guarded write (before any statement writes)."""
    from openclaw_cli.clock import now_ms

    if not store.backup_due:
        return
    store.backup_due = False
    made = backup_once(store, now_ms())
    if made is not None:
        store.notices.append(f"Backup of {store.path} written to {made} (--no-backup skips it).")
