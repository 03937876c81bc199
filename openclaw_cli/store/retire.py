"""Retiring sessions from a store: archive, then remove (spec D6.2, D6.4, D15; maintenance.md §8).

The store write protocol's `retire` (cleanup enforce, agent delete, lifecycle delete): the
domain plans what leaves (`Retirement`), the store executes it here.

Order, so that a SIGKILL at any instant never leaves a removed row whose transcript has neither
its original nor a verified archive:

1. archive: every file (legacy) or session (SQLite) that leaves is written as a verified zstd
   archive `<name>.deleted.<ts>.zst` in the sessions dir; an identical existing archive is reused.
   Archives are written without a per-file fsync and made durable together (`syncfs` of the
   directory's filesystem, then the directory fsync) — one flush instead of one per file. A
   SQLite store's exports (many sessions a statement) go through `archives.ExportArchiver`: one
   write and one read-back per archive.
2. legacy: each original is removed under its OpenClaw transcript write lock, only while it is
   still the file that was archived (else it is archived again, durably, first); then one atomic
   rewrite of `sessions.json` (under its lock, held by the writer) removes the rows. A crash in
   between leaves rows whose transcripts are in verified archives; the re-run removes them.
   SQLite: one `BEGIN IMMEDIATE` transaction re-checks each row and each session's references and
   totals (a concurrent append is never lost, §8.3), deletes rows, events and windows and
   records the archives.
3. what is not transcript content: store/archive temps, expired archives, budget-removed files.
A failure while archiving removes the archives this run created whose originals are still in
place, so a store busy from the start fails with nothing changed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.errors import InvalidIdError, OpenClawError
from openclaw_cli.fsio import check_space, ensure_dir, fsync_dir
from openclaw_cli.store.base import ArchiveFile, SessionTotals

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore
    from openclaw_cli.store.sqlite.store import SqliteStore

ProgressFn = Callable[[int], None]
ARCHIVE_SPACE_SLACK = 256 * 1024  # zstd frame overhead and the rewritten sessions.json / SQLite journal


@dataclass(slots=True)  # not frozen: cleanup builds one per removed transcript (frozen init is 3x slower)
class FileAction:
    """One file leaving the sessions dir. `archive`: through a verified archive first (transcript
    content); otherwise it is unlinked (temps, prompt blobs, expired or budget-removed archives).
    Treated as immutable."""

    name: str  # relative to the sessions dir, `/`-separated
    size: int
    mtime_ms: float
    kind: str
    archive: bool
    source: str  # entry | sweep | retention | budget
    session_id: str | None = None


@dataclass
class Retirement:
    """What leaves a store in one operation, as the domain planned it. File-backed stores (legacy)
    act on `archive_actions` (transcript files: archived, then removed); database stores act on
    `session_ids` (sessions: exported, archived, then dropped). Both remove `removed_keys` rows
    (still as planned, §8.3) and unlink `unlink_actions` (nothing of transcript content)."""

    removed_keys: list[str]
    entries: Mapping[str, Any] = field(default_factory=dict)  # the rows as planned
    archive_actions: list[FileAction] = field(default_factory=list)
    unlink_actions: list[FileAction] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    session_keys: Mapping[str, str] = field(default_factory=dict)
    sweep_locks: bool = True  # legacy: remove dead transcript locks afterwards (warn mode touches no file)
    # 2026.9.9's cron-run placeholder sweep (real OpenClaw databases): keys whose row is still the
    # canonical retained-history placeholder (`entry_json` `{}`, `entry_valid` -1) go with their windows
    placeholder_keys: list[str] = field(default_factory=list)
    # rows archived in place (2026.9.6+, D23): key -> `archiveReason`, stamped `archived_at`, in the
    # same write that removes `removed_keys` (one transaction: a kill leaves before or after, D6.4)
    archive_rows: Mapping[str, str] = field(default_factory=dict)
    archived_at: int = 0

    def work_units(self, transcripts_in_files: bool) -> int:
        """Progress total: legacy archives and removes each file (2 ticks), SQLite archives each session."""
        units = len(self.archive_actions) * 2 if transcripts_in_files else len(self.session_ids)
        return units + len(self.unlink_actions)


CRASH_ENV = "OPENCLAW_CLEANUP_CRASH_AT"  # crash-test hook (openclaw_cli/crashpoints.py)
CRASH_COUNT_ENV = "OPENCLAW_CLEANUP_CRASH_COUNT"


def Checkpoints() -> CrashPoints:  # noqa: N802 - kept name for callers
    return CrashPoints("OPENCLAW_CLEANUP")


def sync_directory(directory: Path) -> None:
    """Make every file written in `directory` durable: `syncfs` of its filesystem (Linux), else
    a global `sync`, then fsync of the directory itself."""
    done = False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            done = libc.syncfs(fd) == 0
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        done = False
    if not done:
        os.sync()
    fsync_dir(directory)


def _signature(path: Path) -> tuple[int, int, int] | None:
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


@dataclass
class Archived:
    action: FileAction
    path: Path  # the original
    archive: Path
    sha256: str
    size: int
    compressed: bool
    stored_size: int
    signature: tuple[int, int, int] | None  # the original as archived
    reused: bool


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
        self.created: list[Path] = []
        self.used: set[str] = set()
        self.checkpoint = checkpoint or (lambda: None)
        skip = set(never_reuse)
        self._index: dict[str, list[ArchiveFile]] = {}
        for archive in list_archives(self.directory):
            parsed = parse_archive_name(archive.path.name, "deleted")
            if parsed is not None and archive.path.name not in skip:
                self._index.setdefault(parsed[0], []).append(archive)

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
        before = _signature(path)
        if before is None:
            return None
        result = self._write(_archive_sid(action), path, action.name, sync=sync)
        after = _signature(path)
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
            self.directory, self._real, "deleted", self.now_ms, on_created=self.created.append
        )

    def archive_exports(self, items: Iterable[tuple[str, bytes, Any]]) -> Iterator[tuple[str, Any, Any]]:
        """Archive in-memory exports `(session id, content, tag)` as they come; yields `(session id,
        tag, ArchiveResult or None)` (None: empty content, nothing to archive), one checkpoint per
        archive. Files are recorded in `created` as they are published, so `rollback` after any
        failure removes every one. (Worker threads were measured and dropped: file creation in one
        directory serialises on its lock, and compression is a small part of the cost.)"""
        archiver = self._exporter()
        index = self._index
        for sid, data, tag in items:
            base = f"{sid.strip()}.jsonl"
            result = archiver.write(sid, data, base, index.get(base, ())) if data else None
            yield sid, tag, self._note(result)

    def _note(self, result: Any) -> Any:
        if result is not None:
            self.used.add(result.path.name)
            self.checkpoint()
        return result

    def commit(self) -> None:
        if self.created:
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


@dataclass
class ApplyOutcome:
    applied_count: int = 0
    archives: list[str] = field(default_factory=list)  # archive names written or reused
    sweep_removed: int = 0
    sweep_freed: int = 0
    retention_removed: int = 0
    budget_removed: int = 0
    kept: list[str] = field(default_factory=list)  # files/sessions left in place (changed under us)
    archived_keys: list[str] = field(default_factory=list)  # rows archived in place (`archive_rows`)


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
    if _signature(path) is None:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


# ---- legacy ---------------------------------------------------------------------------------------


def _wait_for_foreign_locks(root: Path, actions: list[FileAction], lock_settings: Any) -> None:
    """Before any effect: a transcript whose lock file exists is waited for (and a stale lock
    reclaimed) now, so a store busy from the start fails with nothing changed."""
    from openclaw_cli.store.lock import acquire_transcript_lock

    try:
        with os.scandir(root) as it:
            locked = {item.name[: -len(".lock")] for item in it if item.name.endswith(".jsonl.lock")}
    except OSError:
        return
    for action in actions:
        if action.kind == "transcript" and action.name in locked:
            acquire_transcript_lock(root / action.name, lock_settings).release()


def apply_legacy(
    store: LegacyStore,
    plan: Retirement,
    *,
    lock_settings: Any,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: ProgressFn | None = None,
) -> ApplyOutcome:
    """Apply a legacy store's plan; the caller holds the store writer (sessions.json lock).

    1. archive every leaving file and make the archives durable together;
    2. per original, under its transcript write lock: remove it if it is still the file that was
       archived, else archive it again (durably) first — the bytes removed are always the bytes
       of a verified archive, and nothing can append between the check and the removal;
    3. one atomic rewrite of `sessions.json` removes the rows (a crash before it leaves rows whose
       transcripts are in verified archives: the re-run removes the rows);
    4. temps, expired and budget-removed archives.
    Locks are taken only around the removals: a lock file that exists while the archives are
    flushed would be flushed too and cost a block to free (measured 10x slower removals); a lock
    already held when we start is waited for first, so a busy store fails with nothing changed."""
    from openclaw_cli.store.lock import transcript_lock

    removed_keys, archive_actions, unlink_actions = (
        plan.removed_keys,
        plan.archive_actions,
        plan.unlink_actions,
    )
    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    never_reuse = {a.name for a in unlink_actions if a.kind == "archive"}
    # the archives are written before any original goes (estimate: zstd halves JSONL at the least; a
    # write that still runs out is rolled back like any failed archive)
    check_space(
        root,
        sum(a.size for a in archive_actions) // 2 + ARCHIVE_SPACE_SLACK,
        "the verified archives",
        consequence="nothing was archived or removed",
    )
    batch = ArchiveBatch(root, now_ms, never_reuse=never_reuse, checkpoint=checkpoint)
    _wait_for_foreign_locks(root, archive_actions, lock_settings)
    archived: list[Archived] = []
    try:
        for action in archive_actions:
            try:
                done = batch._archive_unlocked(action, root / action.name, False)
            except InvalidIdError:
                outcome.kept.append(action.name)  # a name we cannot archive safely stays in place
                done = None
            if done is not None:
                archived.append(done)
            tick(1)
        batch.commit()
    except BaseException:
        batch.rollback()  # every original is still in place
        raise
    checkpoint()
    for item in archived:
        if item.action.kind == "transcript":
            with transcript_lock(item.path, lock_settings):
                _remove_original(batch, item, outcome)
        else:
            _remove_original(batch, item, outcome)
        checkpoint()
        tick(1)
    if archived:
        fsync_dir(root)
    if removed_keys or plan.archive_rows:  # one rewrite of sessions.json for both
        outcome.archived_keys = store.archive_rows(
            plan.archive_rows,
            archived_at=plan.archived_at,
            expected=plan.entries,
            lock_settings=lock_settings,
            remove=removed_keys,
        )
    checkpoint()
    unlink_planned(root, unlink_actions, batch.used, outcome, checkpoint, tick)
    if plan.sweep_locks:
        _sweep_dead_locks(root, lock_settings)
    for action in archive_actions:
        if action.source == "sweep" and action.name not in outcome.kept:
            outcome.sweep_removed += 1
            outcome.sweep_freed += action.size
    outcome.archives = [p.name for p in batch.created] + sorted(batch.used - {p.name for p in batch.created})
    outcome.applied_count = store.count_entries()
    return outcome


def _sweep_dead_locks(root: Path, lock_settings: Any) -> None:
    """Transcript locks whose holder is gone (a writer killed while holding one, e.g. an
    interrupted cleanup after it removed the transcript): removed, as `doctor` would (§12.7)."""
    from openclaw_cli.store.lock import sweep_stale_locks

    try:
        sweep_stale_locks(root, lock_settings, remove=True)
    except OSError:
        pass


def _remove_original(batch: ArchiveBatch, item: Archived, outcome: ApplyOutcome) -> None:
    """Unlink the original only while it is the file that was archived; a file that changed since
    is archived again (durably) first."""
    current = _signature(item.path)
    if current is None:
        return
    if item.signature is None or current != item.signature:
        try:
            again = batch._archive_unlocked(item.action, item.path, sync=True)
        except OpenClawError:
            outcome.kept.append(item.action.name)
            return
        if again is None or again.signature is None or _signature(item.path) != again.signature:
            outcome.kept.append(item.action.name)
            return
    os.unlink(item.path)


# ---- SQLite ---------------------------------------------------------------------------------------


@dataclass
class SessionArchive:
    session_id: str
    session_key: str | None
    totals: SessionTotals
    archive: Any | None  # ArchiveResult, None for an empty transcript


def apply_sqlite(
    store: SqliteStore,
    plan: Retirement,
    *,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: ProgressFn | None = None,
) -> ApplyOutcome:
    """Apply a SQLite store's plan: archive each leaving session from one consistent export, make
    the archives durable, then one write transaction (re-checked, §8.3)."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    session_ids = plan.session_ids
    session_keys, unlink_actions = plan.session_keys, plan.unlink_actions
    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    never_reuse = {a.name for a in unlink_actions if a.kind == "archive"}
    sizes = store.session_bytes() if session_ids else {}
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
    try:
        with store.transcript_snapshot():  # one read transaction for every export
            exports = (
                (sid, data if totals.events else b"", totals)
                for sid, data, totals in store.export_transcripts(valid)
            )
            for sid, totals, result in batch.archive_exports(exports):
                sessions.append(SessionArchive(sid, session_keys.get(sid), totals, result))
                tick(1)
        batch.commit()
    except BaseException:
        batch.rollback()
        raise
    checkpoint()
    expected = {s.session_id: s.totals for s in sessions}
    try:
        dropped = _commit_sqlite(store, plan, sessions, expected, outcome, now_ms)
    except BaseException:
        batch.rollback()  # nothing was deleted: the archives written above are extra copies
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
    outcome.archives = [p.name for p in batch.created] + sorted(batch.used - {p.name for p in batch.created})
    outcome.applied_count = store.count_entries()
    return outcome


def _commit_sqlite(
    store: SqliteStore,
    plan: Retirement,
    sessions: list[SessionArchive],
    expected: Mapping[str, SessionTotals],
    outcome: ApplyOutcome,
    now_ms: int,
) -> set[str]:
    """One write transaction: delete the rows still as planned, archive in place the rows the plan
    archives, drop the sessions nobody references any more whose totals still equal what was
    archived, record the archives. Returns the dropped session ids."""
    from openclaw_cli.jsonutil import loads

    entries, removed_keys = plan.entries, plan.removed_keys
    with store.transaction() as conn:
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
        dropped = set(store.drop_session_events(list(expected), expected=expected))
        store.record_archives(
            (
                a.path.name,
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
            if item.session_id in dropped and (a := item.archive) is not None
        )
    return dropped


# ---- everything (agents delete) ------------------------------------------------------------------------


def retire_all_legacy(
    store: LegacyStore, *, lock_settings: Any, now_ms: int, checkpoint: Callable[[], None]
) -> tuple[ApplyOutcome, int, int]:
    """Every transcript file of the sessions dir (orphans included) through a verified archive,
    then every row. Returns (outcome, rows removed, rows left: unusable rows stay)."""
    from openclaw_cli.store.files import TRANSCRIPT_KINDS, scan_sessions_dir

    entries = store.load_entries() if store.exists() else {}
    snapshot = scan_sessions_dir(store.sessions_dir)
    actions = []
    for name, f in sorted(snapshot.files.items()):
        kind = snapshot.kind(name)
        if "/" not in name and kind in TRANSCRIPT_KINDS:
            actions.append(FileAction(name, f.size, f.mtime_ms, kind, True, "entry"))
    outcome = apply_legacy(
        store,
        Retirement(list(entries), archive_actions=actions),
        lock_settings=lock_settings,
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), len(store.load_rows()) if store.exists() else 0


def retire_all_sqlite(
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
    outcome = apply_sqlite(
        store,
        Retirement(list(entries), entries=entries, session_ids=sids, session_keys=keys),
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), store.count_entries()
