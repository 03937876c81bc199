"""Retiring sessions from a store: archive, then remove (spec D6.2, D6.4, D15; maintenance.md §8).

The store write protocol's `retire` (cleanup enforce, agent delete, lifecycle delete): the
domain plans what leaves (`Retirement`), each store kind executes it in its package
(`legacy/retire.py`, `sqlite/retire.py`, `openclaw/retire.py`); what they share (the plan, the
outcome, the archive batch, the unlinks) is here.

Order, so that a SIGKILL at any instant never leaves a removed row whose transcript has neither
its original nor a verified archive:

1. archive: every file (legacy) or session (SQLite) that leaves is written as a verified zstd
   archive `<name>.deleted.<ts>.zst` in the sessions dir; an identical existing archive is reused.
   Archives are written without a per-file fsync and made durable together (`syncfs` of the
   directory's filesystem, then the directory fsync) — one flush instead of one per file. A
   SQLite store's exports (many sessions a statement) go through `archives.ExportArchiver`: one
   write and one read-back per archive.
   Then the caller's `LeavingHook.before_leaving` (the usage ledger, issue 27 §6: appended after
   the archives are durable and before anything leaves; a database store hands the hook each
   session's export as it archives it, so the ledger reads the archive's own export).
2. legacy: each original is removed under its OpenClaw transcript write lock, only while it is
   still the file that was archived (else it is archived again, durably, first); then one atomic
   rewrite of `sessions.json` (under its lock, held by the writer) removes the rows. A crash in
   between leaves rows whose transcripts are in verified archives; the re-run removes them.
   SQLite: one `BEGIN IMMEDIATE` transaction re-checks each row and each session's references and
   totals (a concurrent append is never lost, §8.3), deletes rows, events and windows and
   records the archives; our store runs it beside step 1 on a second connection (each session
   handed to it once its archive is verified) and commits it only after step 1 and the hook
   (`sqlite/retire.py` `_Removals`): nothing leaves before that COMMIT.
3. what is not transcript content: store/archive temps, expired archives, budget-removed files.
A failure while archiving removes the archives this run created whose originals are still in
place, so a store busy from the start fails with nothing changed.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.fsio import ensure_dir, fsync_dir
from openclaw_cli.records import Record
from openclaw_cli.store.base import ArchiveFile

if TYPE_CHECKING:
    pass

ProgressFn = Callable[[int], None]
ARCHIVE_SPACE_SLACK = 256 * 1024  # zstd frame overhead and the rewritten sessions.json / SQLite journal


class FileAction(Record):  # not frozen: cleanup builds one per removed transcript (frozen init is 3x slower)
    """One file leaving the sessions dir. `archive`: through a verified archive first (transcript
    content); otherwise it is unlinked (temps, prompt blobs, expired or budget-removed archives).
    Treated as immutable."""

    __slots__ = _fields = ("name", "size", "mtime_ms", "kind", "archive", "source", "session_id")
    name: str  # relative to the sessions dir, `/`-separated
    size: int
    mtime_ms: float
    kind: str
    archive: bool
    source: str  # entry | sweep | retention | budget
    session_id: str | None

    def __init__(
        self,
        name: str,
        size: int,
        mtime_ms: float,
        kind: str,
        archive: bool,
        source: str,
        session_id: str | None = None,
    ) -> None:
        self.name = name
        self.size = size
        self.mtime_ms = mtime_ms
        self.kind = kind
        self.archive = archive
        self.source = source
        self.session_id = session_id


class Retirement(Record):
    """What leaves a store in one operation, as the domain planned it. File-backed stores (legacy)
    act on `archive_actions` (transcript files: archived, then removed); database stores act on
    `session_ids` (sessions: exported, archived, then dropped). Both remove `removed_keys` rows
    (still as planned, §8.3) and unlink `unlink_actions` (nothing of transcript content)."""

    _fields = (
        "removed_keys",
        "entries",
        "archive_actions",
        "unlink_actions",
        "session_ids",
        "session_keys",
        "sweep_locks",
        "placeholder_keys",
        "archive_rows",
        "archived_at",
        "session_bytes",
    )
    removed_keys: list[str]
    entries: Mapping[str, Any]  # the rows as planned
    archive_actions: list[FileAction]
    unlink_actions: list[FileAction]
    session_ids: list[str]
    session_keys: Mapping[str, str]
    sweep_locks: bool  # legacy: remove dead transcript locks afterwards (warn mode touches no file)
    # 2026.9.9's cron-run placeholder sweep (real OpenClaw databases): keys whose row is still the
    # canonical retained-history placeholder (`entry_json` `{}`, `entry_valid` -1) go with their windows
    placeholder_keys: list[str]
    # rows archived in place (2026.9.6+, D23): key -> `archiveReason`, stamped `archived_at`, in the
    # same write that removes `removed_keys` (one transaction: a kill leaves before or after, D6.4)
    archive_rows: Mapping[str, str]
    archived_at: int
    # `SessionStore.session_bytes()` as the plan read it (the space check reads it, not again)
    session_bytes: Mapping[str, int] | None

    def __init__(
        self,
        removed_keys: list[str],
        entries: Mapping[str, Any] | None = None,
        archive_actions: list[FileAction] | None = None,
        unlink_actions: list[FileAction] | None = None,
        session_ids: list[str] | None = None,
        session_keys: Mapping[str, str] | None = None,
        sweep_locks: bool = True,
        placeholder_keys: list[str] | None = None,
        archive_rows: Mapping[str, str] | None = None,
        archived_at: int = 0,
        session_bytes: Mapping[str, int] | None = None,
    ) -> None:
        self.removed_keys = removed_keys
        self.entries = {} if entries is None else entries
        self.archive_actions = [] if archive_actions is None else archive_actions
        self.unlink_actions = [] if unlink_actions is None else unlink_actions
        self.session_ids = [] if session_ids is None else session_ids
        self.session_keys = {} if session_keys is None else session_keys
        self.sweep_locks = sweep_locks
        self.placeholder_keys = [] if placeholder_keys is None else placeholder_keys
        self.archive_rows = {} if archive_rows is None else archive_rows
        self.archived_at = archived_at
        self.session_bytes = session_bytes

    def work_units(self, transcripts_in_files: bool) -> int:
        """Progress total: legacy archives and removes each file (2 ticks), SQLite archives each session."""
        units = len(self.archive_actions) * 2 if transcripts_in_files else len(self.session_ids)
        return units + len(self.unlink_actions)


CRASH_ENV = "OPENCLAW_CLEANUP_CRASH_AT"  # crash-test hook (openclaw_cli/crashpoints.py)
CRASH_COUNT_ENV = "OPENCLAW_CLEANUP_CRASH_COUNT"


def Checkpoints() -> CrashPoints:  # noqa: N802 - kept name for callers
    return CrashPoints("OPENCLAW_CLEANUP")


def _syncfs(directory: Path | str) -> bool:
    """`syncfs` of the filesystem holding `directory` (Linux); False where it is not available."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            return bool(libc.syncfs(fd) == 0)
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        return False


def sync_directory(directory: Path) -> None:
    """Make every file written in `directory` durable: `syncfs` of its filesystem (Linux), else
    a global `sync`, then fsync of the directory itself."""
    if not _syncfs(directory):
        os.sync()
    fsync_dir(directory)


# An export cleanup writes thousands of archives, and beside them the removals' transaction spills
# its pages to the WAL: the one `sync_directory` after the last archive (the flush that makes them
# durable, D6.2) found all of it still to write (~0.13 s of a quiet *many* cleanup's wall, issue
# 30). An early writeback starts it while more are written: every this many archives or bytes a
# thread of its own calls `syncfs` (nothing waits for it; the final flush is still made and waited).
EARLY_FLUSH_FILES = 512
EARLY_FLUSH_BYTES = 8 << 20


class EarlyFlush:
    """`syncfs` of a directory's filesystem on a thread of its own each time it is `kick`ed (kicks
    while one runs make one more): the writeback of files written so far starts early. It never
    makes anything durable that a caller relies on — the caller's own flush afterwards does."""

    def __init__(self, directory: Path | str) -> None:
        import threading

        self.directory = directory
        self.flushes = 0
        self._kicked = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="archive-writeback", daemon=True)
        self._thread.start()

    def kick(self) -> None:
        self._kicked.set()

    def close(self) -> None:
        self._stopped = True
        self._kicked.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._kicked.wait()
            self._kicked.clear()
            if self._stopped or not _syncfs(self.directory):
                return
            self.flushes += 1


# exports handed to the compressing thread at a time: archive k+1's chunk is compressed and checked
# there while this thread writes, reads back and links archive k's files (and reads the next exports).
# A chunk ends at this many exports or once it holds this many bytes, and the next chunk is read
# ahead only while the one in hand is below it: a large transcript is never held beside another
AHEAD_CHUNK = 16
AHEAD_BYTES = 1 << 20
# chunks handed to the thread ahead of the archive in hand (within `AHEAD_BYTES`): with 2 cores and
# four busy threads or processes the compressing thread waits for a core now and then; with only
# the next chunk handed over, the loop then waited for it (issue 30, stop 46)
AHEAD_DEPTH = 3


class _Ahead:
    """`items` (session id, content, tag) with `prepare(content)` of each non-empty content made on
    a thread of its own up to `AHEAD_DEPTH` chunks ahead: iterating yields `(session id, content,
    tag, prepared or None)` in the items' order. The items themselves are read on the caller's thread (an export
    generator's connection, a leaving hook's fork at the first one: the thread starts after it).
    `prepare` touches no file; an error it raises is raised here at its item. (Whole archives on
    worker threads were measured and dropped: their file creations serialise on the directory's
    lock. Here the files stay on the caller's thread; only zstd and sha256 — which run without the
    GIL — move: issue 30, stop 45.)"""

    def __init__(
        self,
        prepare: Callable[[bytes], Any],
        items: Iterable[tuple[str, bytes, Any]],
        ready: Callable[[], bool] | None = None,
    ) -> None:
        import queue

        self._prepare = prepare
        self._items = iter(items)
        self._ready = ready  # False: no thread yet (a leaving hook may still fork), each item inline
        self._todo: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: Any = None

    def _run(self) -> None:
        prepare = self._prepare
        while (chunk := self._todo.get()) is not None:
            try:
                self._done.put([prepare(data) if data else None for _, data, _ in chunk])
            except BaseException as exc:  # (raised again on the caller's thread)
                self._done.put(exc)

    def _chunk(self) -> tuple[list[tuple[str, bytes, Any]], int]:
        chunk: list[tuple[str, bytes, Any]] = []
        size = 0
        for item in self._items:
            chunk.append(item)
            size += len(item[1])
            if len(chunk) >= AHEAD_CHUNK or size >= AHEAD_BYTES:
                break
        if chunk:
            self._todo.put(chunk)
        return chunk, size

    def __iter__(self) -> Iterator[tuple[str, bytes, Any, Any]]:
        import threading

        ready = self._ready
        while ready is not None and not ready():  # (a fork copies no thread of ours)
            item = next(self._items, None)
            if item is None:
                return
            yield item[0], item[1], item[2], None  # (`write` prepares it itself)
        self._thread = threading.Thread(target=self._run, name="archive-prepare", daemon=True)
        queued: deque[tuple[list[tuple[str, bytes, Any]], int]] = deque()  # handed over, in order
        held = 0  # their bytes
        more, started = True, False
        while True:
            # chunks are read (and handed over) while the first is prepared: up to `AHEAD_DEPTH`,
            # while those handed over hold less than `AHEAD_BYTES` (a large transcript is held alone)
            while more and (not queued or (len(queued) < AHEAD_DEPTH and held < AHEAD_BYTES)):
                chunk, size = self._chunk()
                if not chunk:
                    more = False
                    break
                if not started:
                    self._thread.start()  # (after the first export: a leaving hook may fork there)
                    started = True
                queued.append((chunk, size))
                held += size
            if not queued:
                return
            chunk, size = queued.popleft()
            held -= size
            made = self._done.get()
            if isinstance(made, BaseException):
                raise made
            for (sid, data, tag), prepared in zip(chunk, made, strict=True):
                yield sid, data, tag, prepared

    def close(self) -> None:
        """Stop the thread (it ends after the chunk in hand; nothing it makes is used)."""
        self._todo.put(None)


def regular_file_signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _archive_sid(action: FileAction) -> str:
    """A session id for the archive writer's messages (the archive name is the file's name)."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    if action.session_id and is_valid_legacy_session_id(action.session_id):
        return action.session_id.strip()
    stem = action.name
    for marker in (".checkpoint.", ".trajectory", ".jsonl", "-topic-"):
        stem = stem.split(marker, 1)[0]
    return stem if is_valid_legacy_session_id(stem) else "orphan"


class Archived(Record):
    _fields = (
        "action",
        "path",
        "archive",
        "sha256",
        "size",
        "compressed",
        "stored_size",
        "signature",
        "reused",
    )
    action: FileAction
    path: Path  # the original
    archive: Path
    sha256: str
    size: int
    compressed: bool
    stored_size: int
    signature: tuple[int, int, int] | None  # the original as archived
    reused: bool

    def __init__(
        self,
        action: FileAction,
        path: Path,
        archive: Path,
        sha256: str,
        size: int,
        compressed: bool,
        stored_size: int,
        signature: tuple[int, int, int] | None,
        reused: bool,
    ) -> None:
        self.action = action
        self.path = path
        self.archive = archive
        self.sha256 = sha256
        self.size = size
        self.compressed = compressed
        self.stored_size = stored_size
        self.signature = signature
        self.reused = reused


class ArchiveBatch:
    """Archives of one cleanup run in one directory: reuse candidates listed once, durability in
    one flush, rollback of what this run created."""

    def __init__(
        self,
        directory: Path,
        now_ms: int,
        *,
        never_reuse: Iterable[str] = (),
        checkpoint: Callable[[], None] | None = None,
    ):
        from openclaw_cli.store.archives import list_archives, parse_archive_name

        self.directory = Path(os.path.abspath(directory))
        self._real: str | None = None
        self.now_ms = int(now_ms)
        self._created: list[Path] = []
        # export archives created since `created` was last read: their `Path`s are made only if
        # it is (a rollback); a run's outcome takes their names (`created_names`)
        self._exported: list[Any] = []
        self.used: set[str] = set()
        self.checkpoint = checkpoint or (lambda: None)
        self.early_flushes = 0  # `EarlyFlush` writebacks started while exports were archived
        # `archive_exports`: when its compressing thread may start (None: at once; e.g. not while
        # a leaving hook may still fork, which it does only where no other thread runs)
        self.ahead_when: Callable[[], bool] | None = None
        skip = set(never_reuse)
        self._index: dict[str, list[ArchiveFile]] = {}
        for archive in list_archives(self.directory):
            parsed = parse_archive_name(archive.path.name, "deleted")
            if parsed is not None and archive.path.name not in skip:
                self._index.setdefault(parsed[0], []).append(archive)

    @property
    def created(self) -> list[Path]:
        """The archives this run created, in order (what `rollback` removes)."""
        if self._exported:
            self._created.extend(result.path for result in self._exported)
            self._exported.clear()
        return self._created

    def created_names(self) -> list[str]:
        """The names of `created`, in order."""
        return [path.name for path in self._created] + [result.name for result in self._exported]

    def _write(self, session_id: str, source: bytes | Path, base: str, *, sync: bool = False) -> Any:
        from openclaw_cli.store.archives import write_verified_archive

        if self._real is None:  # created and resolved once for the batch
            ensure_dir(self.directory)
            self._real = os.path.realpath(self.directory)
        result = write_verified_archive(
            self.directory,
            session_id,
            "deleted",
            source,
            now_ms=self.now_ms,
            base_name=base,
            sync=sync,
            existing=self._index.get(base, ()),
            dest_real=self._real,
        )
        self.used.add(result.path.name)
        if not result.reused:
            self.created.append(result.path)
        self.checkpoint()
        return result

    def _archive_unlocked(self, action: FileAction, path: Path, sync: bool) -> Archived | None:
        before = regular_file_signature(path)
        if before is None:
            return None
        result = self._write(_archive_sid(action), path, action.name, sync=sync)
        after = regular_file_signature(path)
        return Archived(
            action,
            path,
            result.path,
            result.sha256,
            result.size,
            result.compressed,
            result.stored_size,
            before if before == after else None,
            result.reused,
        )

    def _exporter(self) -> Any:
        from openclaw_cli.store.archives import ExportArchiver

        if self._real is None:
            ensure_dir(self.directory)
            self._real = os.path.realpath(self.directory)
        return ExportArchiver(
            self.directory, self._real, "deleted", self.now_ms, on_created=self._exported.append
        )

    def archive_exports(self, items: Iterable[tuple[str, bytes, Any]]) -> Iterator[tuple[str, Any, Any]]:
        """Archive in-memory exports `(session id, content, tag)` as they come; yields `(session id,
        tag, ArchiveResult or None)` (None: empty content, nothing to archive), one checkpoint per
        archive. Files are recorded in `created` as they are published, so `rollback` after any
        failure removes every one. Each export's sha256, zstd frame and the frame's check
        (`ExportArchiver.prepare`) are made on a thread of its own a few chunks ahead (`_Ahead`); the
        files are written, read back and named on this thread, in order (worker threads writing
        whole archives were measured and dropped: file creation in one directory serialises on
        its lock); `ahead_when`, if set, says when that thread may start (until then each export is
        archived whole here). Every
        `EARLY_FLUSH_FILES` archives or `EARLY_FLUSH_BYTES` their writeback starts (`EarlyFlush`);
        `commit` still makes them all durable."""
        archiver = self._exporter()
        index = self._index
        flusher: EarlyFlush | None = None
        files = stored = 0
        ahead = _Ahead(archiver.prepare, items, self.ahead_when)
        try:
            for sid, data, tag, prepared in ahead:
                base = f"{sid.strip()}.jsonl"
                result = archiver.write(sid, data, base, index.get(base, ()), prepared) if data else None
                if result is not None and not result.reused:
                    files += 1
                    stored += result.stored_size
                    if files >= EARLY_FLUSH_FILES or stored >= EARLY_FLUSH_BYTES:
                        # (started only now: after the first export, where a leaving hook forks)
                        flusher = flusher or EarlyFlush(self.directory)
                        flusher.kick()
                        files = stored = 0
                yield sid, tag, self._note(result)
        finally:
            ahead.close()
            archiver.close()
            if flusher is not None:
                flusher.close()
                self.early_flushes += flusher.flushes

    def _note(self, result: Any) -> Any:
        if result is not None:
            self.used.add(result.name)
            self.checkpoint()
        return result

    def commit(self) -> None:
        if self._created or self._exported:
            sync_directory(self.directory)

    def rollback(self, paths: Iterable[Path] | None = None) -> None:
        """Remove archives this run created (all, or the given ones): they are extra copies of
        data that stays in place."""
        discard_created(self.created, paths, self.directory)


def discard_created(created: list[Path], paths: Iterable[Path] | None, directory: Path) -> None:
    """Unlink the files a run created (all of `created`, or the given ones), forget them, and make
    the removals durable with one directory sync."""
    targets = list(created if paths is None else paths)
    for path in targets:
        try:
            os.unlink(path)
        except OSError:
            pass
        if path in created:
            created.remove(path)
    if targets:
        fsync_dir(directory)


class ApplyOutcome(Record):
    _fields = (
        "applied_count",
        "archives",
        "sweep_removed",
        "sweep_freed",
        "retention_removed",
        "budget_removed",
        "kept",
        "archived_keys",
    )
    applied_count: int
    archives: list[str]  # archive names written or reused
    sweep_removed: int
    sweep_freed: int
    retention_removed: int
    budget_removed: int
    kept: list[str]  # files/sessions left in place (changed under us)
    archived_keys: list[str]  # rows archived in place (`archive_rows`)

    def __init__(
        self,
        applied_count: int = 0,
        archives: list[str] | None = None,
        sweep_removed: int = 0,
        sweep_freed: int = 0,
        retention_removed: int = 0,
        budget_removed: int = 0,
        kept: list[str] | None = None,
        archived_keys: list[str] | None = None,
    ) -> None:
        self.applied_count = applied_count
        self.archives = [] if archives is None else archives
        self.sweep_removed = sweep_removed
        self.sweep_freed = sweep_freed
        self.retention_removed = retention_removed
        self.budget_removed = budget_removed
        self.kept = [] if kept is None else kept
        self.archived_keys = [] if archived_keys is None else archived_keys


def unlink_planned(
    root: Path,
    actions: list[FileAction],
    used: set[str],
    outcome: ApplyOutcome,
    checkpoint: Callable[[], None],
    tick: Callable[[int], None],
) -> None:
    """Unlink a plan's non-transcript files (sweep, retention, budget) and count what went; an
    archive this run relies on (`used`) is never dropped. One directory sync at the end."""
    for action in actions:
        if action.kind == "archive" and action.name in used:
            continue
        if _unlink_if_regular(root / action.name):
            if action.source == "sweep":
                outcome.sweep_removed += 1
                outcome.sweep_freed += action.size
            elif action.source == "retention":
                outcome.retention_removed += 1
            else:
                outcome.budget_removed += 1
        checkpoint()
        tick(1)
    if actions:
        fsync_dir(root)


def _unlink_if_regular(path: Path) -> bool:
    if regular_file_signature(path) is None:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
