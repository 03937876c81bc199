"""Our SQLite store's `retire` and `retire_all`: the order (archive, then one transaction) and why
are in `store/retire.py`'s docstring.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.fsio import check_space
from openclaw_cli.store.base import LeavingHook, SessionTotals
from openclaw_cli.store.retire import (
    ARCHIVE_SPACE_SLACK,
    ApplyOutcome,
    ArchiveBatch,
    ProgressFn,
    Retirement,
    unlink_planned,
)

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


class SessionArchive:
    """One leaving session as archived (one per session of the loop: slots, no dataclass)."""

    __slots__ = ("session_id", "session_key", "totals", "archive")

    def __init__(
        self, session_id: str, session_key: str | None, totals: SessionTotals, archive: Any | None
    ) -> None:
        self.session_id = session_id
        self.session_key = session_key
        self.totals = totals
        self.archive = archive  # ArchiveResult, None for an empty transcript


def retire(
    store: SqliteStore,
    plan: Retirement,
    *,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: ProgressFn | None = None,
    leaving: LeavingHook | None = None,
) -> ApplyOutcome:
    """Apply a SQLite store's plan: archive each leaving session from one consistent export, make
    the archives durable, then commit one write transaction (re-checked, §8.3) — prepared beside
    the archives by `_Removals`, committed only after them. `leaving` sees each export as it is
    archived, and is called between the durable archives and the COMMIT."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    session_ids = plan.session_ids
    session_keys, unlink_actions = plan.session_keys, plan.unlink_actions
    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    never_reuse = {a.name for a in unlink_actions if a.kind == "archive"}
    sizes = _session_sizes(store, plan) if session_ids else {}
    check_space(
        root,
        sum(sizes.get(sid, 0) for sid in session_ids) // 2 + ARCHIVE_SPACE_SLACK,
        "the verified archives",
        consequence="nothing was archived or removed",
    )
    batch = ArchiveBatch(root, now_ms, never_reuse=never_reuse, checkpoint=checkpoint)
    sessions: list[SessionArchive] = []
    valid = [sid for sid in session_ids if is_valid_legacy_session_id(sid)]  # never a path from another
    if len(valid) < len(session_ids):
        tick(len(session_ids) - len(valid))  # no events can exist for them
    removals = _Removals(store, plan, outcome, now_ms)
    try:
        with store.transcript_snapshot():  # one read transaction for every export
            exports = _exports(store.export_transcripts(valid), leaving)
            # (the compressing thread starts once the hook has forked, or will not: `_Ahead`)
            batch.ahead_when = None if leaving is None else (lambda: not leaving.may_fork())
            for sid, totals, result in batch.archive_exports(exports):
                item = SessionArchive(sid, session_keys.get(sid), totals, result)
                sessions.append(item)
                if not removals.started and (leaving is None or not leaving.may_fork()):
                    removals.start()  # (after the hook's fork, if it makes one)
                removals.archived(item)
                tick(1)
        # the last batch is dropped (uncommitted) while the archives are made durable and the hook
        # runs: the COMMIT is all that is left after them
        removals.seal()
        batch.commit()
        checkpoint()
        if leaving is not None:
            leaving.before_leaving()  # e.g. the usage ledger: before any session leaves
        dropped = removals.commit()
    except BaseException:
        removals.abort()
        if not removals.committed:  # nothing was deleted: the archives written above are extra copies
            batch.rollback()
        raise
    checkpoint()
    # A session that gained events (or a new reference) since the export stays; our fresh
    # archive of its older content is an extra copy and goes.
    stale = [
        s.archive.path
        for s in sessions
        if s.session_id not in dropped and s.archive is not None and not s.archive.reused
    ]
    if stale:
        outcome.kept.extend(s.session_id for s in sessions if s.session_id not in dropped)
        batch.rollback(stale)
    unlink_planned(root, unlink_actions, batch.used, outcome, checkpoint, tick)
    created = batch.created_names()
    outcome.archives = created + sorted(batch.used - set(created))
    outcome.applied_count = store.count_entries()
    return outcome


def _exports(
    exports: Iterator[tuple[str, bytes, SessionTotals]], leaving: LeavingHook | None
) -> Iterator[tuple[str, bytes, SessionTotals]]:
    """The exports as they are archived (a session without events has nothing to archive), each
    seen by `leaving` first."""
    told = leaving.exported if leaving is not None else None
    for sid, data, totals in exports:
        if not totals.events:
            data = b""
        if told is not None:
            told(sid, data)
        yield sid, data, totals


# The removals' transaction changes most pages of the events table and its indexes when thousands
# of sessions leave (their rows are spread over every page): with the connection's usual 2 MB page
# cache the dirty pages spill to the WAL mid-transaction and are read and written again before the
# commit. A bounded larger cache for this one transaction (allocated only as pages are used, given
# back after): one many cleanup (6,736 sessions leave) made 85,801 pwrite64 and 124,157 pread64
# with the usual cache, 64,864 and 86,336 with this one (peak RSS 92 -> 113 MB; 64 MB: 58,527
# and 79,010, 147 MB) — issue 30.
REMOVAL_CACHE_KIB = 32 * 1024


@contextmanager
def _removal_cache(conn: sqlite3.Connection) -> Iterator[None]:
    (before,) = conn.execute("PRAGMA cache_size").fetchone()
    if not -REMOVAL_CACHE_KIB < before < 0:  # already as large (or set in pages): left as it is
        yield
        return
    conn.execute(f"PRAGMA cache_size = -{REMOVAL_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(before)}")


class _Aborted(BaseException):
    """The removals' thread was told to roll back (a failure or an interruption before the commit)."""


_COMMIT = object()  # (sentinels: compared by identity)
_ABORT = object()
# sessions handed to the removals' thread at a time (one statement of each kind per batch): small
# enough that the last batch, dropped after the last archive, is a small part of the deletes
DROP_CHUNK = 256
DROP_CHUNK_BYTES = 4 << 20


class _Removals:
    """The removals' one write transaction, run by a thread of its own on a second write connection
    while the caller writes the archives (issue 30). It begins at once: the planned rows re-checked
    and deleted, the rows archived in place; then it drops each batch of sessions whose archives are
    written and verified as they come (their totals re-checked, as before), and it records the
    archives with them (the same transaction); it commits only when `commit` says so — after every
    archive is durable and the hook's `before_leaving`. Until that COMMIT nothing has left (D6.2,
    D6.4): a kill anywhere before it leaves the database as it was (the transaction's pages are
    never committed), and a failure or an interruption rolls the transaction back (`abort`),
    exactly as for the one transaction that used to follow the archives. The exports read the
    caller's connection in their own snapshot, which never sees these uncommitted deletes; a
    concurrent writer waits for the COMMIT (the transaction holds SQLite's write lock from its
    start). SQLite runs each statement without the GIL, so the deletes — the floor's own work —
    overlap the archives' instead of following them. The WAL checkpoint the COMMIT would run
    (thousands of pages copied into the database and made durable) runs after it on this thread
    while the caller goes on (`_DeferredCheckpoint`)."""

    def __init__(self, store: SqliteStore, plan: Retirement, outcome: ApplyOutcome, now_ms: int) -> None:
        self.store, self.plan, self.outcome, self.now_ms = store, plan, outcome, now_ms
        self.dropped: set[str] = set()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending: dict[str, SessionArchive] = {}
        self._pending_bytes = 0
        self._seen: set[str] = set()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._settled = threading.Event()  # committed, rolled back or failed: the caller goes on
        self.committed = False  # the COMMIT returned: the sessions dropped have left

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._thread is None:
            # not a daemon: a checkpoint left after the COMMIT ends before the process does
            self._thread = threading.Thread(target=self._run, name="cleanup-removals")
            self._thread.start()

    def archived(self, item: SessionArchive) -> None:
        """`item.session_id` has its verified archive (or had nothing to archive): it may leave with
        the rest, if its totals are still `item.totals`, and its archive is then recorded. Raises
        what stopped the transaction, if anything did."""
        if self._error is not None:
            raise self._error
        session_id = item.session_id
        if session_id in self._seen:
            return
        self._seen.add(session_id)
        self._pending[session_id] = item
        self._pending_bytes += item.totals.bytes
        if self._thread is not None and (
            len(self._pending) >= DROP_CHUNK or self._pending_bytes >= DROP_CHUNK_BYTES
        ):
            self._queue.put(self._pending)
            self._pending, self._pending_bytes = {}, 0

    def seal(self) -> None:
        """Every session has been handed over: the last batch is dropped now (nothing commits)."""
        self.start()
        if self._pending:
            self._queue.put(self._pending)
            self._pending, self._pending_bytes = {}, 0

    def commit(self) -> set[str]:
        """COMMIT (every batch dropped and its archives recorded), and return the dropped ids."""
        self.seal()
        self._queue.put(_COMMIT)
        while not self._settled.wait(0.25):  # (a signal handler still runs in between)
            pass
        if self._error is not None and not self.committed:
            raise self._error
        return self.dropped

    def abort(self) -> None:
        """Roll the transaction back (nothing was committed) and wait for the thread."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(_ABORT)
        self._join()

    def _join(self) -> None:
        if self._thread is None:
            return
        while self._thread.is_alive():
            self._thread.join(0.25)  # (a signal handler still runs in between)

    def _run(self) -> None:
        writer: SqliteStore | None = None
        later: _DeferredCheckpoint | None = None
        try:
            # a second write connection of the same store (its own transaction, beside the
            # caller's read snapshot on the first)
            writer = type(self.store)(
                self.store.path, self.store.agent_id, busy_timeout_ms=self.store.busy_timeout_ms
            )
            with writer.transaction() as conn, _removal_cache(conn):
                later = _DeferredCheckpoint.pause(conn, writer.path)
                _remove_rows(writer, conn, self.plan, self.outcome)
                while True:
                    item = self._queue.get()
                    if item is _ABORT:
                        raise _Aborted
                    if item is _COMMIT:
                        break
                    expected = {sid: s.totals for sid, s in item.items()}
                    gone = writer.drop_session_events(list(item), expected=expected)
                    self.dropped.update(gone)
                    _record(writer, [item[sid] for sid in gone], self.now_ms)  # (the same transaction)
                if later is not None:
                    later.decide()
            self.committed = True
            if later is not None and not later.deferred:
                later.run()  # the database grows: checkpointed before the caller goes on, as before
        except _Aborted:
            pass
        except BaseException as exc:  # raised again in the caller's thread
            self._error = exc
        finally:
            # the caller goes on before the rest only for a deferred checkpoint; otherwise the
            # writer is closed first (its close, the last connection's, may checkpoint and remove
            # the WAL: nothing the caller measures or opens next may race it)
            deferred = self.committed and later is not None and later.deferred
            if deferred:
                self._settled.set()
            try:
                if later is not None:
                    later.run() if self.committed else later.restore()
            except BaseException:
                pass  # (committed or rolled back: a checkpoint left undone is the next one's)
            if writer is not None:
                try:
                    writer.close()
                except BaseException:
                    pass  # (after the COMMIT or the rollback it changes nothing)
            self._settled.set()


class _DeferredCheckpoint:
    """The removals' COMMIT without its WAL checkpoint, which follows on the removals' thread once
    the caller has gone on (issue 30: on *many* the COMMIT's checkpoint copied ~12,000 pages into the
    database and made them durable, ~0.25 s of the main thread's path after everything else).
    Nothing of D6 depends on it: the COMMIT is what removes, and it has returned. It is deferred only
    when it cannot change what a caller may measure next — the database file already holds every
    page the committed database has (a checkpoint then writes inside the file, never grows or cuts
    it; the WAL file's size it never changes); otherwise it runs before the caller goes on, as the
    COMMIT ran it. Only a connection with SQLite's usual automatic checkpoints is touched (not a
    live process's, whose checkpoints run in the background)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, every: int) -> None:
        self.conn, self.path, self.every = conn, path, every
        self.deferred = False
        self._done = False

    @classmethod
    def pause(cls, conn: sqlite3.Connection, path: Path | str) -> _DeferredCheckpoint | None:
        from openclaw_cli.store.sqlite_common import LIVE_WAL_AUTOCHECKPOINT

        (every,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        if not 0 < every < LIVE_WAL_AUTOCHECKPOINT:
            return None
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        return cls(conn, Path(path), int(every))

    def decide(self) -> None:
        """Inside the transaction, before its COMMIT: defer when the file holds every page, in the
        `openclaw` executable only (its exit waits for this thread; in a library caller's process
        the checkpoint and the connection's close would race what it does next)."""
        import openclaw_cli

        if not openclaw_cli.EXECUTABLE:
            self.deferred = False
            return
        (pages,) = self.conn.execute("PRAGMA page_count").fetchone()
        (size,) = self.conn.execute("PRAGMA page_size").fetchone()
        try:
            self.deferred = os.path.getsize(self.path) == pages * size
        except OSError:
            self.deferred = False

    def run(self) -> None:
        """The checkpoint SQLite's automatic one would have made (a passive one, when the WAL may
        hold that many pages), then the connection's setting back."""
        if self._done:
            return
        self._done = True
        try:
            (size,) = self.conn.execute("PRAGMA page_size").fetchone()
            wal = os.path.getsize(f"{self.path}-wal")
            if wal >= self.every * (size + 24):
                with _Writeback(self.path):  # the database's pages written back as they are copied
                    self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except OSError:
            pass
        finally:
            self.restore()

    def restore(self) -> None:
        self._done = True
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {self.every}")


# the pause between two of `_Writeback`'s flushes (each ends with a flush of the disk's cache)
WRITEBACK_PAUSE_S = 0.01
# how often it looks whether the checkpoint's copy has begun writing the file (its mtime)
WRITEBACK_POLL_S = 0.002


class _Writeback:
    """`fdatasync` of a file over and over on a thread of its own while SQLite writes it: the
    writeback of its pages starts while the rest are written, not at SQLite's own sync. Issue 30: on
    *many* the checkpoint after the removals' COMMIT copies ~14,000 pages (115 MB) into the database
    and then syncs it, the disk idle while the pages are copied and the CPU idle while they are
    written — the exit waits for both. It starts once the copy has written the file (its mtime
    moved): before that SQLite syncs the WAL, and a flush of a file with nothing to write still
    flushes the disk's cache behind the WAL's writes (stop 46: the WAL's sync 462 -> 295 ms). It
    only writes back sooner what the kernel may write back at any time: what SQLite relies on is
    made durable by its own syncs, in their order."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.flushes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cleanup-writeback", daemon=True)

    def __enter__(self) -> _Writeback:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        from openclaw_cli.fsio import O_CLOEXEC

        try:
            fd = os.open(self.path, os.O_RDONLY | O_CLOEXEC)
        except OSError:
            return  # (no early writeback: SQLite's sync writes it all, as without this)
        try:
            # not before the copy writes the file: SQLite syncs the WAL first, and a flush of a
            # file with nothing to write still flushes the disk's cache, behind the WAL's writes
            first = os.fstat(fd).st_mtime_ns
            while not self._stop.is_set() and os.fstat(fd).st_mtime_ns == first:
                self._stop.wait(WRITEBACK_POLL_S)
            while not self._stop.is_set():
                os.fdatasync(fd)
                self.flushes += 1
                self._stop.wait(WRITEBACK_PAUSE_S)
        except OSError:
            pass
        finally:
            os.close(fd)


def _session_sizes(store: SqliteStore, plan: Retirement) -> Mapping[str, int]:
    """`store.session_bytes()`, unless the plan read it already (`Retirement.session_bytes`)."""
    return plan.session_bytes if plan.session_bytes is not None else store.session_bytes()


def _remove_rows(
    store: SqliteStore, conn: sqlite3.Connection, plan: Retirement, outcome: ApplyOutcome
) -> None:
    """Inside the removals' transaction: delete the rows still as planned, archive in place the rows
    the plan archives (a row written since the plan read it stays for a later cleanup)."""
    from openclaw_cli.jsonutil import loads

    entries, removed_keys = plan.entries, plan.removed_keys
    unchanged: list[str] = []
    for start in range(0, len(removed_keys), 500):
        chunk = removed_keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for key, text in conn.execute(
            f"SELECT session_key, entry_json FROM session_nodes WHERE session_key IN ({marks})", chunk
        ):
            try:
                same = loads(text) == entries.get(key)
            except ValueError:
                same = False
            if same:
                unchanged.append(key)
            else:
                outcome.kept.append(key)  # written since we planned: a later cleanup decides
    store.delete_entries(unchanged)
    if plan.archive_rows:  # joins this transaction
        outcome.archived_keys = store.archive_rows(
            plan.archive_rows, archived_at=plan.archived_at, expected=entries, lock_settings=None
        )


def _record(store: SqliteStore, sessions: list[SessionArchive], now_ms: int) -> None:
    """The archives of `sessions` (dropped in the caller's transaction) recorded in it."""
    store.record_archives(
        (
            a.name,
            item.session_id,
            item.session_key,
            "deleted",
            "zstd" if a.compressed else "identity",
            a.sha256,
            a.stored_size,
            item.totals.events,
            a.size,
            now_ms,
        )
        for item in sessions
        if (a := item.archive) is not None
    )


def retire_all(
    store: SqliteStore, *, now_ms: int, checkpoint: Callable[[], None]
) -> tuple[ApplyOutcome, int, int]:
    """Every session window and every row (archived first)."""
    entries = store.load_entries()
    sids: list[str] = []
    keys: dict[str, str] = {}
    for window in store.list_windows():
        sids.append(window["sessionId"])
        keys.setdefault(window["sessionId"], window["sessionKey"])
    for key, entry in entries.items():
        sid = entry.get("sessionId")
        if isinstance(sid, str) and sid not in keys:
            sids.append(sid)
            keys[sid] = key
    outcome = retire(
        store,
        Retirement(list(entries), entries=entries, session_ids=sids, session_keys=keys),
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), store.count_entries()
