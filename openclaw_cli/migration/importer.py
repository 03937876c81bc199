"""`doctor --session-sqlite import` (storage-migration.md §6.6 with spec D6, D13, D14).

Per run: settle interrupted publications of earlier runs, write the manifest before anything moves,
then per target: read `sessions.json` once (hashing the bytes it parses), stream every transcript
once (read, sha256, split) into the store's batched bulk import, validate *before* archiving (every
key with its sessionId, every stored line byte-identical: counts and a sha256 over the lines read
back from SQLite), record the planned moves, publish them by hard link in batches (`publish.py`) and
record what completed. `sessions.json` is archived last and only when everything it indexes is
covered. Entries are stored exactly as they were (D14) except bare `cron:`/`hook:` keys, which are
canonicalised to `agent:<agent>:…`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
from array import array
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openclaw_cli.errors import Interrupted, InvalidDataError, OpenClawError
from openclaw_cli.fsio import FILE_MODE, fsync_dir
from openclaw_cli.gcpause import gc_paused
from openclaw_cli.interrupts import InterruptRequested
from openclaw_cli.jsonutil import StreamedArray
from openclaw_cli.migration import manifest as mf
from openclaw_cli.migration import parser_process as parsing
from openclaw_cli.migration import staging
from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.dbinfo import db_refusal
from openclaw_cli.migration.import_faults import (
    check_archive_plan_space,
    check_import_space,
    full_disk,
    typed_failure,
)
from openclaw_cli.migration.legacy_reader import (
    CHANGED_MESSAGE,
    DirListing,
    LegacyIndex,
    Record,
    build_records,
    discover_orphans,
    read_index,
    trajectory_paths,
    unreferenced_jsonl,
)
from openclaw_cli.migration.parser_process import ParserProcess
from openclaw_cli.migration.publish import (
    ArtifactError,
    BatchResult,
    Identity,
    Move,
    NameReserver,
    archive_name,
    ensure_private_dir,
    fingerprint,
    hash_file,
    open_regular_nofollow,
    publish_batch,
    publish_batches,
    reconcile_pair,
    refuse_symlinks,
)
from openclaw_cli.migration.report import Issue, MigrationRun, Report, TargetReport
from openclaw_cli.paths import Target

WHOLE_FILE_LIMIT = 64 * 1024 * 1024  # larger transcripts are streamed instead of read whole
READ_CHUNK = 8 * 1024 * 1024
MIN_PUBLISH_BATCH = 1024
# Completed moves are recorded after each publication batch, in at most this many manifest writes
# per target (a 20,000-file store has a ~25 MB manifest). Correctness never depends on them: restore
# and the next import work from the planned moves and what is on disk. One: the run's last write
# records them (a write half-way cost ~0.1 s per 10,000 moves, issue 30).
MAX_MANIFEST_WRITES = 1
BATCH_ROWS = 20000  # rows gathered per write of the bulk import
# a fresh store's import of at least this many sessions reads and parses them in a second process
# (`parser_process`); `OPENCLAW_IMPORT_PARSER=process|inline` forces it either way
PARSER_MIN_RECORDS = 256
# ... whose transcripts are this large on average (sampled): the parser takes per-line work off the
# inserting process but costs it per session (the job, the result's marshal, the pipe). Measured
# (issue 30, same-run A/B at load 1.1-2.3): *big* (~105 KB a transcript) 4.55 s with the parser
# against 5.04 s without; *many* (~3.8 KB) 11.9 s / 14.2 s CPU with it against 10.2 s / 10.0 s
# without. The crossover between the two was not measured: this is between them.
PARSER_MIN_MEAN_BYTES = 16 * 1024
PARSER_ENV = "OPENCLAW_IMPORT_PARSER"
# The split (`OPENCLAW_IMPORT_PARSER=split`): the parser reads this share of the records it can take
# and the importing process reads every other one itself, spread evenly (`_parser_jobs`), so both
# cores work on small transcripts — the parser taking them all made it the bottleneck of *many*'s
# bulk phase (issue 30: ~220 us of parser against ~135 us of importer a record, ~285 us in-process;
# balanced near 3/4). `OPENCLAW_IMPORT_PARSER_SHARE` (0-1] sets the share of whichever parser runs.
PARSER_SPLIT_SHARE = 0.75
PARSER_SHARE_ENV = "OPENCLAW_IMPORT_PARSER_SHARE"
PARSER_STEAL_ENV = "OPENCLAW_IMPORT_PARSER_STEAL"
# The default for a fresh store of small transcripts (averaging under `PARSER_MIN_MEAN_BYTES`) on a
# spare core: the parser's share (0: in-process, no parser). The split, chosen by the quiet A/B of
# issue 30 (`OPENCLAW_IMPORT_PARSER=inline` against `split` on *many*, alternating, same minutes).
SMALL_TRANSCRIPTS_SHARE = PARSER_SPLIT_SHARE
MAX_PUBLISH_BATCH = 4096  # moves held at once while publishing (the manifest is still written as above)
# A fresh store's archive, when its parser process is idle after verification (`_validate`): the parser
# publishes this share of each batch (its first moves) while the importing process publishes the rest
# (`_publish_split`); a part under `PARSER_MOVES_MIN` moves is not sent (issue 30).
PARSER_MOVES_SHARE = 0.5
PARSER_MOVES_MIN = 16
# `OPENCLAW_IMPORT_PUBLISH=threads|serial`: publish with two batches in flight (this thread links one
# while a worker removes the previous one's original names: `publish.publish_batches`) or one at a
# time. The default is one at a time until a quiet A/B shows the two threads faster (issue 30).
PUBLISH_ENV = "OPENCLAW_IMPORT_PUBLISH"

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


# ---- per-record state --------------------------------------------------------------------------------


@dataclass(slots=True)  # one per session: 100,000 of them
class RecState:
    rec: Record
    alias_of: str | None = None  # set on a bare-key row merged into its canonical key
    packed_identity: bytes | Identity | None = None  # see `identity`
    mtime_ms: int | None = None
    ends_nl: bool = False
    nsplit: int = 0  # elements of data.split(b"\n")
    changed: bool = False
    unreadable: str | None = None
    missing: bool = False
    stream: _StreamFeed | None = None
    # what the bulk import reported (`_take_result`): the lines it read (-1: not imported), the
    # entry (1 inserted, 2 already stored), and the whole result only when it holds an issue
    lines_read: int = -1
    entry_state: int = 0
    result: Any = None  # ImportRecordResult, kept only with an issue
    digest: str | bool | None = None  # see `line_digest`
    stored_lines: int = 0
    verified: bool = False
    archive_ok: bool = True  # False once a transcript/trajectory move failed or was not attempted

    @property
    def has_file(self) -> bool:
        return (
            self.rec.transcript_text is not None
            and self.rec.problem is None
            and self.packed_identity is not None
        )

    # The file's identity is held packed (dev, ino, mtime, size and the raw sha256 in 64 bytes):
    # an `Identity` with its five objects is ~320 bytes, 100,000 of them 32 MB.
    @property
    def identity(self) -> Identity | None:
        packed = self.packed_identity
        if packed is None or isinstance(packed, Identity):
            return packed
        dev, ino, mtime_ns, size, sha = _IDENTITY.unpack(packed)
        return Identity(dev, ino, mtime_ns, size, sha.hex())

    @identity.setter
    def identity(self, ident: Identity | None) -> None:
        try:
            self.packed_identity = (
                None
                if ident is None
                else _IDENTITY.pack(
                    ident.dev, ident.ino, ident.mtime_ns, ident.size, bytes.fromhex(ident.sha256)
                )
            )
        except (struct.error, ValueError):  # not what a stat and a sha256 give: kept as it is
            self.packed_identity = ident

    @property
    def line_digest(self) -> str | None:
        """The sha256 of the lines SQLite should hold (`_compute_digests`); for a clean file it is
        the file's own sha256, kept once (in the identity)."""
        digest = self.digest
        if digest is True:
            packed = self.packed_identity
            if isinstance(packed, bytes):
                return packed[_IDENTITY_SHA:].hex()
            return None if packed is None else packed.sha256
        return digest if isinstance(digest, str) else None

    @line_digest.setter
    def line_digest(self, value: str | None) -> None:
        self.digest = value


_IDENTITY = parsing.IDENTITY  # the parser sends it packed
_IDENTITY_SHA = 32  # where the raw sha256 starts in a packed identity


class _StreamFeed:
    """Lines of a transcript too large to read whole: hashed as they stream, finished afterwards."""

    def __init__(self, fd: int, before: os.stat_result, state: RecState):
        self.fd = fd
        self.before = before
        self.state = state
        self.hash = hashlib.sha256()
        self.nsplit = 0
        self.last_chunk_end = b""
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        rest = b""
        while True:
            chunk = os.read(self.fd, READ_CHUNK)
            if not chunk:
                break
            self.hash.update(chunk)
            self.last_chunk_end = chunk[-1:]
            if rest:
                chunk = rest + chunk
            parts = chunk.split(b"\n")
            rest = parts.pop()
            for part in parts:
                self.nsplit += 1
                yield part
        self.nsplit += 1
        yield rest

    def finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            while True:  # the store may stop at a malformed line: hash the rest for the identity
                chunk = os.read(self.fd, READ_CHUNK)
                if not chunk:
                    break
                self.hash.update(chunk)
                self.last_chunk_end = chunk[-1:]
            after = os.fstat(self.fd)
        finally:
            os.close(self.fd)
        st = self.state
        path = st.rec.transcript
        try:
            now = os.lstat(path) if path is not None else None
        except OSError:
            now = None
        b = self.before
        if fingerprint(b) != fingerprint(after) or now is None or fingerprint(now) != fingerprint(b):
            st.changed = True
        st.identity = Identity(b.st_dev, b.st_ino, b.st_mtime_ns, b.st_size, self.hash.hexdigest())
        st.ends_nl = self.last_chunk_end == b"\n"
        st.nsplit = self.nsplit if self.nsplit else 1


# ---- the run -------------------------------------------------------------------------------------------


@dataclass
class TargetRun:
    target: Target
    report: TargetReport
    mt: dict[str, Any]  # this target's manifest entry
    index: LegacyIndex | None = None
    states: list[RecState] = field(default_factory=list)
    completed: bool = False  # validation passed and nothing blocking
    index_move: Move | None = None  # the legacy-store move, planned with the transcripts
    fresh: bool = False  # no database yet: built under a private name, published when verified (D22)
    build: Path | None = None  # the private build while it is not published
    published: bool = False  # the target's database is live (it was, or this run published it)
    preplan: _ArchivePlan | None = None  # the archive planned beside verification's scan (`_validate`)
    # the idle parser kept to publish part of the archive (`_publish_split`)
    mover: ParserProcess | None = None

    @property
    def db(self) -> Path:
        """Where this run writes and validates: the private build, else the live database."""
        return self.build if self.build is not None else self.target.sqlite_path


class ImportRun:
    def __init__(self, ctx: MigrationContext, targets: list[Target]):
        self.ctx = ctx
        self.targets = targets
        self.report = Report("import")
        self.runs_dir = ctx.paths.migration_runs_dir()
        self.mapper = mf.PathMapper(ctx.state_dir, relative=True)
        self.manifest: dict[str, Any] = {}
        self.manifest_path: Path | None = None
        self._db_kinds: dict[Path, str] = {}
        self._current_db: Path | None = None  # the database being written (named in typed errors)
        self._rows_file = -1  # the parser's rows file the last records' rows are in (not copied yet)
        self._parser_share = 0.0  # the share of its records the running parser reads (`_parser_jobs`)
        # the first target's parser, started before the space check (`_early_parser`): (its target,
        # the process, its share, whether it was asked to read the target's index)
        self._early: tuple[Target, ParserProcess, float, bool] | None = None

    # ---- orchestration ---------------------------------------------------------------------------
    def run(self) -> Report:
        self._prechecks()
        # the serial head (issue 30): the first target's parser starts now, its start-up beside the
        # space check, and reads that target's index once the store's lock is held, beside the
        # manifest and the directory listing (`_read_records`); it writes nothing before its setup
        self._early_parser()
        try:
            listed: dict[Path, list[str]] = {}  # the sessions dirs' names: swept without a listing again
            check_import_space(
                self.targets, self._db_kinds, self.runs_dir, listed
            )  # refused before any write, lock included
            self.ctx.claim_state(listed)  # our owner file (state dir's tmp/) only once nothing refused
            del listed  # 100,000 names are ~8 MB: not held through the import (issue 30's 150 MB)
            with ExitStack() as held:
                self._lock_stores(held)
                self._early_index()
                return self._run_locked()
        finally:
            if self._early is not None:  # not taken by its target's import: not needed
                self._early[1].close()
                self._early = None

    def _lock_stores(self, held: ExitStack) -> None:
        """Hold every legacy store's write lock from before the store is read until the run
        published or rolled back (issue 29 #4; `store_locks.hold_legacy_store_locks`)."""
        from openclaw_cli.migration.store_locks import hold_legacy_store_locks

        hold_legacy_store_locks(self.ctx, self.targets, held)

    def _run_locked(self) -> Report:
        ctx = self.ctx
        reconcile_interrupted(ctx)
        if not self.targets:
            return self.report
        started = ctx.now_ms()
        run_id = mf.new_run_id(started)
        self.manifest = mf.new_manifest(run_id, started)
        self.manifest_path = self.runs_dir / f"{run_id}.json"
        runs: list[TargetRun] = []
        for target in self.targets:
            report = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
            mt = mf.new_target(
                target.agent_id,
                self.mapper.to_manifest(target.store_path),
                self.mapper.to_manifest(target.sqlite_path),
            )
            planned = mf.MoveLog(self.runs_dir)  # moves stay out of memory; the file's shape is unchanged
            mt["plannedMoves"], mt["completedMoves"] = planned, mf.CompletedMoves(planned)
            report.archived_transcript_files = mf.ArchivedPaths(planned, self.mapper.to_real_text)  # type: ignore[assignment]
            self.manifest["targets"].append(mt)
            self.report.targets.append(report)
            runs.append(TargetRun(target, report, mt))
        self._save_manifest()  # step 2: before touching anything
        self.report.migration_run = MigrationRun(run_id, str(self.manifest_path))
        try:
            ctx.checkpoint("manifest-created")
            # hundreds of thousands of short-lived rows and tens of thousands of per-record objects
            # that hold no cycles: every generation-2 pass would rescan all of them (see gcpause)
            with gc_paused():
                for tr in runs:
                    self._import_target(tr)
                    if tr.index is not None:
                        tr.index.close()  # entries were read again while stored; not needed after this
                self._archive_all(runs)
                for tr in runs:
                    # freed by reference counting now, not scanned by the first collection after
                    # the pause (0.1-0.2 s at 20,000 sessions): only the reports are needed on
                    tr.states, tr.index, tr.index_move = [], None, None
        except InterruptRequested:
            self._abort(runs, "import_interrupted", "The import was interrupted (SIGINT/SIGTERM).")
            raise Interrupted(self._interrupted_message(runs)) from None
        except Exception as exc:  # noqa: BLE001 - whatever stopped the run, nothing half-done is published
            typed = exc if isinstance(exc, OpenClawError) else typed_failure(exc, self._current_db)
            typed = full_disk(typed, self._current_db)
            self._abort(runs, "sqlite_import_failed", typed.message)
            rolled_back = ", ".join(tr.target.agent_id for tr in runs if tr.fresh and not tr.published)
            if rolled_back:
                typed.message = (
                    f"{typed.message.rstrip('.')}. The import was rolled back for {rolled_back}: nothing "
                    "was published and the legacy store is unchanged and still in use."
                )
            raise typed from None
        self._finish(runs)
        return self.report

    def _abort(self, runs: list[TargetRun], code: str, message: str) -> None:
        """The run stops early: unpublished builds are discarded (the legacy store they copied is
        untouched and stays in use), and the manifest records the failure — best effort, the disk
        may be full."""
        for tr in runs:
            self._close_mover(tr)  # a parser kept for the archive: idle or its part taken
            if tr.build is not None:
                try:
                    staging.discard(tr.build)
                except OSError:
                    pass
                tr.build = None
        stamp = mf.iso_now(self.ctx.now_ms())
        for tr in runs:
            tr.report.add(code, message)
            tr.mt["issues"] = [i.to_json() for i in tr.report.issues]
        self.manifest["failedAt"] = stamp
        try:
            self._save_manifest()
        except OSError:
            pass

    def _interrupted_message(self, runs: list[TargetRun]) -> str:
        live = [tr.target.agent_id for tr in runs if tr.published]
        pending = [tr.target.agent_id for tr in runs if not tr.published]
        parts = ["Import interrupted at a safe point."]
        if live:
            parts.append(
                f"Now read from SQLite (imported and verified): {', '.join(live)}; originals not yet "
                "archived stay in place."
            )
        if pending:
            parts.append(
                f"Not published, still read from the legacy store (unchanged): {', '.join(pending)}."
            )
        parts.append(f"Run `{staging.IMPORT_COMMAND}` to finish, or `{staging.RECOVER_COMMAND}` to undo.")
        return " ".join(parts)

    def _prechecks(self) -> None:
        """Refuse before anything is written: symlinks on the way (T-18), databases we must not
        write (a real OpenClaw DB, spec D4), unusable databases."""
        from openclaw_cli.migration.dbinfo import classify_db

        root = self.ctx.state_dir
        for t in self.targets:
            refuse_symlinks([t.store_path, t.archive_dir, t.sqlite_path], root)
            info = classify_db(t.sqlite_path, t.agent_id)
            self._db_kinds[t.sqlite_path] = info.kind
            refusal = db_refusal(t.sqlite_path, info)
            if refusal is not None:
                raise refusal

    def _save_manifest(self) -> None:
        assert self.manifest_path is not None
        mf.write_manifest(self.manifest_path, self.manifest)

    # ---- one target: read, import, validate ------------------------------------------------------------
    def _import_target(self, tr: TargetRun) -> None:
        tr.fresh = self._db_kinds.get(tr.target.sqlite_path, "missing") in ("missing", "empty")
        tr.published = not tr.fresh
        self._rows_file = -1
        self._parser_share = 0.0
        asked = False
        early, self._early = self._early, None
        if early is not None and early[0] is tr.target:
            parser: ParserProcess | None = self._configure(tr, early[1], early[2])
            asked = early[3] and parser is early[1]  # (a parser started anew was not asked)
        else:
            if early is not None:
                early[1].close()
            parser = self._start_parser(tr)  # first: its start-up overlaps reading the index
        try:
            self._import_records(tr, parser, asked)
        finally:
            if parser is not None and parser is not tr.mover:  # a kept one is closed by `_archive_all`
                parser.close()

    def _import_records(self, tr: TargetRun, parser: ParserProcess | None, asked: bool = False) -> None:
        t, report = tr.target, tr.report
        owner_filter = _owner_filter(t, self.ctx) if t.shared else None
        listing = DirListing(t.sessions_dir)  # for the records and the orphans (while the parser reads)
        made: list[SqliteStore] = []  # a fresh store's build, made while waiting for the parser's parts
        created: list[Path] = []  # the directories the build's creation makes (deepest first)

        def make_build() -> None:
            created.extend(_missing_dirs(t.sqlite_path.parent))
            made.append(self._open_store(tr))

        try:
            index, records, issues, parser = self._read_records(
                tr, parser, asked, listing, owner_filter, idle=make_build if tr.fresh else None
            )
            tr.index = index
            for issue in index.issues:
                report.issues.append(issue)
            if index.exists and not index.readable:
                if made:  # nothing is imported: the build made meanwhile goes
                    made.pop().close()
                    build, tr.build = tr.build, None
                    if build is not None:
                        staging.discard(build)
                    for directory in created:  # as without the build: no directory made either
                        try:
                            os.rmdir(directory)
                        except OSError:
                            break
                tr.mt["issues"] = [i.to_json() for i in report.issues]
                return
            report.issues.extend(issues)
            if not t.shared:
                records += discover_orphans(t.sessions_dir, records, agent_id=t.agent_id, listing=listing)
            del listing  # a name per file (~10 MB at 100,000): not held through the bulk
            states = _merge_aliases(records, report)
            tr.states = states
            report.legacy_entries = sum(1 for s in states if s.alias_of is None)
            report.referenced_transcript_files = sum(
                1 for s in states if not s.rec.sqlite_marker and s.alias_of is None
            )
            # a private build takes the records in session-id order (`_feed_order`); everything else
            # (the report, verification, the archive plan) keeps the index's order
            order = _feed_order(states) if tr.fresh else None
            if not made:
                made.append(self._open_store(tr))
            store = made[0]
            self.ctx.progress.start(f"Importing {t.agent_id}", len(states))
            self._fed: deque[RecState] = deque()  # the states in the order `_feed` hands them over
            taken = _popped(self._fed)
            store.bulk_import(
                self._feed(states, parser, order),
                batch_records=1000,
                batch_rows=BATCH_ROWS,
                on_malformed="quarantine",
                private_build=tr.build is not None,
                expected_records=len(states),
                on_result=lambda res: _take_result(next(taken), res, report),
                rows_at_end=None if parser is None else lambda: self._last_rows(parser),
            )
            if next(taken, None) is not None:
                raise RuntimeError("the bulk import did not report every record")
            # the parser, idle now, is kept for verification's scan (`_validate`)
            self.ctx.checkpoint("bulk-import-done")
            self._reconcile_entries(store, states, report)
        finally:
            for opened in made:  # a build left by a failure is discarded by `_abort`
                opened.close()
        self._validate(tr, parser)

    def _open_store(self, tr: TargetRun) -> SqliteStore:
        """The store the target's records go into: a fresh store's private build (D22: a stale
        build of a killed run is never resumed), else the live database."""
        from openclaw_cli.store.sqlite.store import SqliteStore

        t = tr.target
        if tr.fresh:
            staging.discard_all(t.sqlite_path)
            tr.build = staging.build_path(t.sqlite_path, self.manifest["runId"])
        self._current_db = tr.db
        return SqliteStore(tr.db, t.agent_id, create=True, busy_timeout_ms=self.ctx.busy_timeout_ms)

    def _validate(self, tr: TargetRun, parser: ParserProcess | None) -> None:
        """Validate before archive (every key, every stored line), then publish a private build
        that passed. A private build's read-back scan runs in the parser process, idle once every
        record was taken, while this process plans the archive moves beside it (`_preplan`): that
        plan is in no manifest (a scratch MoveLog) and is used only if every state verified; else
        it is dropped and the archive is planned after verification, as without a parser."""
        t, report, states = tr.target, tr.report, tr.states
        self._record_issues(tr)
        self._compute_digests(states)
        from openclaw_cli.migration import verify

        self.ctx.progress.start(f"Validating {t.agent_id}", len(states))
        scanned = None
        if parser is not None:
            if tr.build is not None:  # only a private build: nothing else writes it meanwhile
                scanned = _scan_beside(parser, states, tr.db)
            if scanned is None:
                parser.close()
        if scanned is not None:
            tr.preplan = self._preplan(tr)
        unverified = verify.verify_records(tr.db, states, report, progress=self.ctx.progress, scanned=scanned)
        if parser is not None:
            if (
                tr.preplan is not None
                and not unverified
                and tr.target is self.targets[-1]
                and (_parser_choice() in ("process", "split") or _spare_core())
            ):
                # idle: kept to publish part of the archive (`_publish_split`) when a core is
                # spare now (as `_start_parser` asks): on a busy machine the two halves wait for
                # each other's turn (issue 30, load 12-16: the tail's wall rose)
                tr.mover = parser
            else:
                parser.close()
        report.sqlite_entries = _count_entries(tr.db)
        blocking = report.has_blocking
        tr.mt["validationBeforeArchive"] = (
            "failed" if any(i.code.startswith("sqlite_") for i in report.issues) else "passed"
        )
        tr.completed = not blocking
        if tr.preplan is not None and (unverified or not tr.completed):
            tr.preplan.drop()  # planned on states that did not all verify: not used
            tr.preplan = None
            self._close_mover(tr)
        report.compact = _finalize_db(tr.db)
        tr.mt["issues"] = [i.to_json() for i in report.issues]
        self.ctx.checkpoint("validated")
        if tr.build is not None:
            if tr.completed:
                staging.publish(tr.build, t.sqlite_path)  # the one step that makes it live
                tr.published = True
                self.ctx.checkpoint("published")
            else:
                staging.discard(tr.build)  # nothing was published: the legacy store stays in use
                report.sqlite_entries = 0
            tr.build = None

    def _read_records(
        self,
        tr: TargetRun,
        parser: ParserProcess | None,
        asked: bool,
        listing: DirListing,
        owner_filter: Any,
        idle: Callable[[], None] | None = None,
    ) -> tuple[LegacyIndex, list[Record], list[Issue], ParserProcess | None]:
        """The target's index and its records (`read_index`, `build_records`), from the parser's
        read of the index when it was asked for it (`_early_index`): the records are built from
        each part as it comes, while the parser reads the next. Anything else than a plain read
        there (a fallback, a parser that failed) is read here, as without it: (index, records,
        issues, the parser — None once it failed). `idle`: called once, the first time the parser's
        next part has not arrived when it is wanted (this process's work that does not need the
        records: not called when the index is read here)."""
        t = tr.target
        if asked and parser is not None:
            from openclaw_cli.migration.index_stream import StreamedEntries

            index = LegacyIndex(t.store_path, exists=True)
            index.entries = StreamedEntries(t.store_path, (-1, -1))  # (dev, ino): the read's, at its end
            index.entries.take_facts()  # the facts come with the parts
            try:
                records, issues = build_records(
                    index,
                    t.sessions_dir,
                    agent_id=t.agent_id,
                    owner_filter=owner_filter,
                    listing=listing,
                    members=_index_members(parser, index, idle),
                )
                return index, records, issues, parser
            except _IndexNotRead as exc:
                index.close()
                if exc.parser_failed:  # its answers can no longer be trusted to follow: in-process
                    parser.close()
                    parser = None
                    self._parser_share = 0.0
        index = read_index(t.store_path)
        if index.exists and not index.readable:
            return index, [], [], parser
        records, issues = build_records(
            index, t.sessions_dir, agent_id=t.agent_id, owner_filter=owner_filter, listing=listing
        )
        return index, records, issues, parser

    def _early_parser(self) -> None:
        """The first target's parser process, when its import will want one (as `_start_parser`
        decides), spawned now: its start-up runs beside the space check and the lock."""
        if not self.targets:
            return
        t = self.targets[0]
        share = self._parser_wanted(
            t, fresh=self._db_kinds.get(t.sqlite_path, "missing") in ("missing", "empty")
        )
        if share <= 0.0:
            return
        try:
            parser = ParserProcess("quarantine", BATCH_ROWS, None, False)  # configured by `_configure`
        except OSError:
            return  # no process to spare: the target's import starts its own (or reads in-process)
        self._early = (t, parser, share, False)

    def _early_index(self) -> None:
        """Under the store's lock: the early parser reads its target's index (`_read_records`)."""
        if self._early is None:
            return
        t, parser, share, _ = self._early
        try:
            parser.read_index(str(t.store_path))
        except (OSError, RuntimeError):
            return  # read here as without it (the parser's failure shows at `_configure`)
        self._early = (t, parser, share, True)

    def _configure(self, tr: TargetRun, parser: ParserProcess, share: float) -> ParserProcess | None:
        """The early parser's setup, now that the build is named (`_start_parser`'s rows base)."""
        build = staging.build_path(tr.target.sqlite_path, self.manifest["runId"])
        try:
            parser.configure("quarantine", BATCH_ROWS, staging.rows_base(build))
        except (OSError, RuntimeError):
            parser.close()
            return self._start_parser(tr)
        self._parser_share = share
        return parser

    @staticmethod
    def _parser_wanted(t: Target, *, fresh: bool) -> float:
        """The share of a target's parser (`parser_share`), 0.0 when none runs: not a fresh store,
        too few or too small transcripts, or no spare core (unless forced)."""
        share = parser_share(t.sessions_dir, fresh=fresh)
        if share <= 0.0:
            return 0.0
        if _parser_choice() not in ("process", "split") and not _spare_core():
            return 0.0
        return share

    def _start_parser(self, tr: TargetRun) -> ParserProcess | None:
        """The parser process for a fresh store's import of enough transcripts on more than one
        core (`OPENCLAW_IMPORT_PARSER=process|split|inline` forces it either way); None: read
        in-process. Sets the share of the records it reads (`parser_share`)."""
        share = self._parser_wanted(tr.target, fresh=tr.fresh)
        if share <= 0.0:
            return None
        build = staging.build_path(
            tr.target.sqlite_path, self.manifest["runId"]
        )  # as `_import_records` names it
        try:
            parser = ParserProcess("quarantine", BATCH_ROWS, staging.rows_base(build))
        except OSError:
            return None  # no process to spare (EMFILE, EAGAIN, ENOMEM): the import reads in-process
        self._parser_share = share
        return parser

    def _feed(
        self, states: list[RecState], parser: ParserProcess | None = None, order: array[int] | None = None
    ) -> Iterator[Any]:
        """The records to import, in `order` (indexes into `states`; None: theirs), each with its
        position in `states` as the rowid of its entry's and window's rows when an order is given.
        Each state is appended to `self._fed` as its record is handed over (the order results come
        back in). With an order, when the parser's oldest answer has not arrived, this process
        reads the record the parser would be sent next itself instead of waiting (the adaptive
        share: the two processes stay busy whatever their speeds) and skips it when the order
        reaches it."""
        from openclaw_cli.store.sqlite.store import ImportRecord

        # the parser takes the jobs in record order, a bounded window ahead of the record imported
        jobs = _parser_jobs(states, self._parser_share, order) if parser is not None else iter(())
        sent: deque[RecState] = deque()
        more = parser is not None
        steal = more and order is not None and _steal_enabled()
        stolen: set[int] = set()  # positions read here ahead of their turn
        fed = self._fed
        previous: RecState | None = None

        def record(state: RecState, position: int, lines: Any, prepared: Any) -> Any:
            rec = state.rec
            return ImportRecord(
                session_key=rec.key,
                # rows computed by the parser: the entry is not parsed here (`PreparedLines.node`)
                entry=None
                if state.alias_of is not None or (prepared and (prepared.window or prepared.written >= 0))
                else rec.entry,
                lines=lines,
                session_id=rec.session_id,
                source=rec.transcript_text or rec.expected_text or rec.key,
                created_at_ms=state.mtime_ms,
                entry_text=None if state.alias_of is not None else rec.entry_text,
                prepared=prepared,
                rowid=None if order is None else position + 1,
            )

        for position in range(len(states)) if order is None else order:
            if stolen and position in stolen:
                stolen.discard(position)  # read and imported ahead of its turn
                continue
            state = states[position]
            if previous is not None and previous.stream is not None:
                previous.stream.finish()
                previous = None
            if more:
                assert parser is not None
                while parser.room():
                    at, job = next(jobs, (-1, None))
                    if job is None:
                        more = False
                        break
                    # its rows' rowid, as the importing process's own records' (`ImportRecord.rowid`)
                    self._submit(parser, job, None if order is None else at + 1)
                    sent.append(job)
            rec = state.rec
            lines: Any = ()
            prepared = None
            if sent and sent[0] is state:
                assert parser is not None
                while steal and more and not parser.ready():
                    at, job = next(jobs, (-1, None))
                    if job is None:
                        more = False
                        break
                    stolen.add(at)
                    own = self._open_transcript(job)
                    fed.append(job)
                    yield record(job, at, own, None)
                    job.mtime_ms = None
                    if job.stream is not None:
                        job.stream.finish()
                    self.ctx.progress.advance(1)
                    self.ctx.checkpoint("record")
                sent.popleft()
                lines, prepared = self._parsed(state, parser.take(), parser)
            elif rec.transcript_text is not None and rec.problem is None:
                lines = self._open_transcript(state)
            fed.append(state)
            yield record(state, position, lines, prepared)
            state.mtime_ms = None  # read once, here (an int per session otherwise held to the end)
            previous = state
            self.ctx.progress.advance(1)
            self.ctx.checkpoint("record")
        if previous is not None and previous.stream is not None:
            previous.stream.finish()

    @staticmethod
    def _submit(parser: ParserProcess, state: RecState, rowid: int | None = None) -> None:
        """A record's job: its transcript, and its entry's bytes when the parser can compute the
        entry's rows (a member-wise read index; an entry with its original text is the store's),
        which it writes into its rows file at `rowid` (None: it sends them back)."""
        rec = state.rec
        if state.alias_of is not None:
            how, data = parsing.ENTRY_NONE, None  # imported without its entry (the key's is another's)
        elif rec.entry_text is None and (data := rec.entry_bytes()) is not None:
            how = parsing.ENTRY_BYTES
        else:
            how, data = parsing.ENTRY_NO_ROWS, None
        parser.submit(rec.transcript_text, rec.session_id, rec.key, how, data, rowid)  # type: ignore[arg-type]

    def _last_rows(self, parser: ParserProcess) -> str | None:
        """The parser's last rows file, closed now that every record was taken (None: it wrote none):
        the file the last records named, whether their last one or `FINISH` closed it."""
        number = parser.finish()
        last, self._rows_file = self._rows_file, -1
        if number != last:
            raise RuntimeError(f"the import's parser process closed rows file {number}, not {last}")
        return None if number < 0 else parser.rows_file(number)

    def _parsed(self, state: RecState, message: tuple[Any, ...], parser: ParserProcess) -> tuple[Any, Any]:
        """A record's state and rows from the parser's message (what `_open_transcript` and the
        store's line loop would have found): (lines, prepared rows)."""
        read_issue, prepared_lines = _STORE_TYPES or _store_types()
        kind = message[0]
        path = state.rec.transcript_text
        if kind == parsing.OK:
            _, identity, ends_nl, nsplit, chunks, lines_read, quarantined, issue, node, window, written = (
                message
            )
            if identity.__class__ is bytes:
                state.packed_identity = identity
            else:
                state.identity = Identity(*identity)
            if written < 0:  # the store computes the window: the file's mtime is its fallback time
                mtime_ns = _IDENTITY.unpack_from(identity)[2] if identity.__class__ is bytes else identity[2]
                state.mtime_ms = mtime_ns // 1_000_000
            state.ends_nl = ends_nl
            state.nsplit = nsplit
            found = None if issue is None else read_issue(path or state.rec.key, issue[0], issue[1])
            if isinstance(chunks, tuple):  # written into the parser's rows file: its number and totals
                number, copy_first = chunks[0], None
                if number >= 0 and number != self._rows_file:
                    if self._rows_file >= 0:  # a later file: the parser closed the previous one
                        copy_first = parser.rows_file(self._rows_file)
                    self._rows_file = number
                return (), prepared_lines(
                    [], lines_read, quarantined, found, node, window, chunks, copy_first, written
                )
            return (), prepared_lines(chunks, lines_read, quarantined, found, node, window)
        if kind == parsing.MISSING:
            state.missing = True
        elif kind == parsing.UNREADABLE:
            state.unreadable = message[1]
        elif kind == parsing.CHANGED:
            state.mtime_ms = message[1] // 1_000_000
            state.changed = True  # never import a file that moved under us: the original stays as is
        elif kind == parsing.INLINE:
            return self._open_transcript(state), None
        elif kind == parsing.OS_ERROR:
            raise OSError(message[1], message[2], message[3])  # typed by the run, as an in-process read
        elif kind == parsing.INVALID:
            raise InvalidDataError(message[1])
        else:
            raise RuntimeError(f"the import's parser process failed on {path}: {message[1]}")
        return (), None

    def _open_transcript(self, state: RecState) -> Any:
        path = state.rec.transcript_text
        assert path is not None
        opened = parsing.open_transcript(path)
        if opened is None:
            state.missing = True
            return ()
        if isinstance(opened, str):
            state.unreadable = opened
            return ()
        fd, before = opened
        state.mtime_ms = before.st_mtime_ns // 1_000_000
        if before.st_size > WHOLE_FILE_LIMIT:
            state.stream = _StreamFeed(fd, before, state)
            return state.stream
        data = parsing.read_whole(fd, before, path)
        if data is None:
            state.changed = True  # never import a file that moved under us: the original stays as is
            return ()
        state.identity = Identity(
            before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, hashlib.sha256(data).hexdigest()
        )
        state.ends_nl = data.endswith(b"\n")
        lines = data.split(b"\n")
        state.nsplit = len(lines)
        return lines

    def _reconcile_entries(self, store: SqliteStore, states: list[RecState], report: TargetReport) -> None:
        """The bulk path keeps an existing entry. A legacy row that is newer than the stored one
        (e.g. written by an older runtime after a restore) replaces it; otherwise SQLite wins."""
        from openclaw_cli.store.sqlite_common import finite_number

        newer: dict[str, dict[str, Any]] = {}
        for state in states:
            if state.alias_of is not None or state.lines_read < 0:
                continue
            if state.entry_state == _ENTRY_INSERTED:
                report.imported_entries += 1
                continue
            stored = store.get_entry(state.rec.key)
            legacy = state.rec.entry
            if stored == legacy or stored is None:
                report.validated_entries += 1
                continue
            mine, theirs = finite_number(legacy.get("updatedAt")), finite_number(stored.get("updatedAt"))
            if mine is not None and (theirs is None or mine > theirs):
                newer[state.rec.key] = legacy
                report.imported_entries += 1
            else:
                report.validated_entries += 1
        if newer:
            store.upsert_entries(newer)

    def _record_issues(self, tr: TargetRun) -> None:
        report = tr.report
        for state in tr.states:
            rec = state.rec
            res = state.result
            if rec.sqlite_marker:
                continue
            if rec.problem is not None:
                report.add("transcript_archive_failed", rec.problem, rec.source_key)
                state.archive_ok = False
                continue
            if rec.transcript_text is None or state.missing:
                expected = rec.expected or tr.target.sessions_dir / f"{rec.session_id}.jsonl"
                if not (
                    state.entry_state == _ENTRY_EXISTING
                    and _stored_sid_matches(tr.target.sqlite_path, rec.key, rec.session_id)
                ):
                    report.add(
                        "transcript_missing", f"Transcript file is missing: {expected}", rec.source_key
                    )
                if state.missing:
                    state.archive_ok = False
                continue
            if state.unreadable is not None:
                report.add(
                    "transcript_unreadable",
                    f"{state.unreadable}. The original was left in place.",
                    rec.source_key,
                )
                state.archive_ok = False
                continue
            if state.changed:
                report.add(
                    "transcript_changed_during_import", f"{rec.transcript}: {CHANGED_MESSAGE}", rec.source_key
                )
                state.archive_ok = False
                continue
            if res is not None and res.issue is not None:
                from openclaw_cli.migration.legacy_reader import malformed_message

                where = f"{rec.transcript}:{res.issue.line}" if res.issue.line else str(rec.transcript)
                detail = res.issue.message
                report.add(
                    "transcript_malformed",
                    malformed_message(f"{where}: {detail}", res.quarantined),
                    rec.source_key,
                )

    def _compute_digests(self, states: list[RecState]) -> None:
        """The digest of the lines SQLite should hold: the file's sha256 for a clean file (every
        line stored, final newline), else recomputed from the file (rare: blank lines, a missing
        final newline, a malformed line)."""
        for state in states:
            if not state.has_file or state.changed or state.lines_read < 0:
                continue
            state.stored_lines = state.lines_read
            # every line stored (malformed ones quarantined, D22), no blank line, a final newline
            clean = state.ends_nl and state.lines_read == state.nsplit - 1
            if clean:
                state.digest = True  # the file's sha256 (`line_digest`): not a second copy of it
                continue
            try:
                state.line_digest = _digest_stored_prefix(state)
            except (OSError, ArtifactError, ValueError) as exc:
                state.changed = True
                state.unreadable = str(exc)

    # ---- archive ---------------------------------------------------------------------------------------
    def _archive_all(self, runs: list[TargetRun]) -> None:
        # shared stores: the index moves only when every owner of its keys imported completely
        by_store: dict[Path, list[TargetRun]] = {}
        for tr in runs:
            by_store.setdefault(tr.target.store_path, []).append(tr)
        try:
            for tr in runs:
                self._archive_target(tr, sole_owner=len(by_store[tr.target.store_path]) == 1)
                self._close_mover(tr)
            for store_path, group in by_store.items():
                self._archive_index(store_path, group)
        finally:
            for tr in runs:
                self._close_mover(tr)

    @staticmethod
    def _close_mover(tr: TargetRun) -> None:
        if tr.mover is not None:
            mover, tr.mover = tr.mover, None
            mover.close()

    def _archive_target(self, tr: TargetRun, *, sole_owner: bool) -> None:
        t, report = tr.target, tr.report
        plan, tr.preplan = tr.preplan, None  # planned beside verification's scan (`_validate`)
        if plan is not None and (not tr.published or len(tr.mt["plannedMoves"])):
            plan.drop()  # (never: a plan is kept only for a build that verified and was published)
            plan = None
        if not tr.published:
            # D22: nothing leaves the legacy store while it is the store in use
            for state in tr.states:
                state.archive_ok = False
            return
        if not tr.states and not tr.completed:
            return
        try:
            ensure_private_dir(t.archive_dir)
        except OSError as exc:
            for state in tr.states:
                state.archive_ok = False
            report.add(
                "transcript_archive_failed",
                f"{t.archive_dir}: cannot create the archive directory: {exc.strerror or exc}",
            )
            return
        if plan is not None:
            # the plan's own MoveLog becomes the target's: its moves enter the manifest only now
            tr.mt["plannedMoves"].close()
            tr.mt["plannedMoves"], tr.mt["completedMoves"] = plan.log, mf.CompletedMoves(plan.log)
            report.archived_transcript_files = mf.ArchivedPaths(plan.log, self.mapper.to_real_text)  # type: ignore[assignment]
        else:
            plan = self._plan_archive(tr, tr.mt["plannedMoves"], sole_owner=sole_owner, assume_verified=False)
        for code, message, source_key, owner in plan.issues:
            report.add(code, message, source_key)
            if owner is not None:
                owner.archive_ok = False
        tr.index_move = plan.index_move
        self._publish(tr, logged=plan.moves, also_planned=[tr.index_move] if tr.index_move else [])

    def _preplan(self, tr: TargetRun) -> _ArchivePlan:
        """The archive plan of a private build whose every state is assumed to verify, made while
        the parser process scans the build (`_validate`): into a MoveLog of its own, its issues held
        back — nothing of it is in the manifest or the report until `_archive_target` takes it."""
        store = tr.target.store_path
        sole_owner = sum(1 for t in self.targets if t.store_path == store) == 1  # as `_archive_all`
        return self._plan_archive(tr, mf.MoveLog(self.runs_dir), sole_owner=sole_owner, assume_verified=True)

    def _plan_archive(
        self, tr: TargetRun, log: mf.MoveLog, *, sole_owner: bool, assume_verified: bool
    ) -> _ArchivePlan:
        """Every move of the target's archive, appended to `log` (the transcripts' and
        trajectories' in the states' order, the unreferenced files', then the legacy store's move,
        which `_publish` records): what `_archive_target` publishes. `assume_verified`: planned
        before verification ended, as if every state verified (`_preplan`)."""
        t = tr.target
        issues: list[tuple[str, str, str | None, RecState | None]] = []  # reported by the caller
        # the archive dir may not exist yet: its listing is empty then (`_archive_target` makes it)
        reserver = NameReserver(t.archive_dir)
        stamp = self.ctx.now_ms()
        moves = _LoggedMoves(self, log, reserver.prefix, stamp)  # in the MoveLog, not held
        # the sources planned: a transcript only when two keys share it (T-20; found by a transient
        # set, freed before the reservations grow: 100,000 paths held beside them were ~4 MB of the
        # 100k peak), trajectories and unreferenced files (few) always
        shared = _shared_transcripts(tr.states)
        seen_sources: set[str] = set()
        try:  # only trajectory names are looked up (100,000 transcript names are not kept)
            names = {name for name in os.listdir(t.sessions_dir) if ".trajectory" in name}
        except OSError:
            names = set()
        for state in tr.states:
            if not state.has_file or state.changed or not (state.verified or assume_verified):
                if state.has_file and not state.verified and not assume_verified:
                    state.archive_ok = False
                continue
            rec = state.rec
            src = rec.transcript_text  # text: a Path per session costs ~0.4 s at 100,000 sessions
            ident = state.identity  # unpacked once
            assert src is not None and ident is not None
            if src in seen_sources:
                continue  # two keys sharing one transcript: archived once (T-20)
            if src in shared:
                seen_sources.add(src)  # the record's own string: no copy
            if rec.recovered:
                classification, reason = "protected", "indexed-historical-primary"
            elif state.result is not None and state.result.issue is not None:
                classification, reason = "protected", "unimported-or-unknown-history"
            else:
                classification, reason = "imported", "verified-import-original"
            move = self._plan(
                t, reserver, stamp, src, "transcript", rec.key, ident, classification, reason, state
            )
            moves.append(move, reserver.counter)
            if not names:
                continue  # no trajectory file in the directory (the common case): no name to test
            name = os.path.basename(src)
            stem = name[:-6] if name.endswith(".jsonl") else name
            if f"{stem}.trajectory.jsonl" not in names and f"{stem}.trajectory-path.json" not in names:
                continue
            for extra in trajectory_paths(Path(src)):
                if extra.name not in names:
                    continue
                try:
                    ident = hash_file(extra)
                    if os.lstat(extra).st_nlink != 1:
                        raise ArtifactError(f"{extra}: another hard link references this file")
                except (OSError, ArtifactError) as exc:
                    issues.append(("transcript_archive_failed", f"{extra}: {exc}", rec.source_key, state))
                    continue
                seen_sources.add(str(extra))
                moves.append(
                    self._plan(
                        t,
                        reserver,
                        stamp,
                        extra,
                        "trajectory",
                        rec.key,
                        ident,
                        "protected",
                        "unimported-or-unknown-history",
                        state,
                    )
                )
        if (tr.completed or assume_verified) and not t.shared:
            for path in unreferenced_jsonl(t.sessions_dir, (s.rec for s in tr.states)):
                if str(path) in seen_sources:
                    continue
                try:
                    ident = hash_file(path)
                except (OSError, ArtifactError) as exc:
                    issues.append(("unreferenced_jsonl_archive_failed", f"{path}: {exc}", None, None))
                    continue
                seen_sources.add(str(path))
                moves.append(
                    self._plan(
                        t,
                        reserver,
                        stamp,
                        path,
                        "unreferenced-jsonl",
                        "archive-tier",
                        ident,
                        "protected",
                        "unreferenced-history",
                        None,
                    )
                )
        del names, seen_sources, shared  # not held beside the index move's dependencies
        index = tr.index
        index_move = None
        complete = tr.completed or assume_verified
        if sole_owner and complete and index is not None and index.exists and index.identity is not None:
            # planned now (one manifest write for everything), published last and only if all else
            # succeeded; left unpublished, a planned move is harmless (restore skips it)
            archive = reserver.reserve("legacy-store", t.store_path.name, stamp)  # the last name, as before
            del reserver  # 100,000 reserved names: not held beside the dependencies nor while publishing
            index_move = self._plan(
                t,
                archive,
                stamp,
                t.store_path,
                "legacy-store",
                "legacy-store",
                index.identity,
                *self._index_classification([tr]),
                None,
                dependencies=self._index_dependencies([tr]),
            )
        else:
            del reserver
        return _ArchivePlan(log, moves, index_move, issues)

    def _record(self, log: mf.MoveLog, move: Move) -> int:
        """Append a planned move to a MoveLog; the move keeps its index, not the dict."""
        entry, kind, state = move.payload
        n: int = log.append(entry)
        move.payload = (n, kind, state, entry.get("sessionKey"))
        return n

    def _logged_move(self, log: mf.MoveLog, n: int, state: RecState | None) -> Move:
        """A planned move read back from the MoveLog (publication batches are built as they go)."""
        entry = orjson.loads(log.chunk(n))
        i = entry["artifact"]["identity"]  # written by `_plan` from an Identity: no validation again
        ident = Identity(int(i["dev"]), int(i["ino"]), int(i["mtimeNs"]), i["size"], i["sha256"])

        real = self.mapper.to_real_text  # str paths: publish_batch takes either
        return Move(
            real(entry["sourcePath"]),
            real(entry["archivePath"]),
            ident,
            payload=(n, entry["kind"], state, entry.get("sessionKey")),
        )

    def _plan(
        self,
        t: Target,
        reserver: NameReserver | str,
        stamp: int,
        src: Path | str,
        kind: str,
        key: str,
        ident: Identity,
        classification: str,
        reason: str,
        state: RecState | None,
        dependencies: StreamedArray | None = None,
    ) -> Move:
        """A move to an archive name reserved now (or already: `reserver` is then the name)."""
        archive = (
            reserver if isinstance(reserver, str) else reserver.reserve(key, os.path.basename(src), stamp)
        )
        entry = mf.new_move(
            source=self.mapper.to_manifest(src),
            archive=self.mapper.to_manifest(archive),
            kind=kind,
            session_key=None if kind == "unreferenced-jsonl" else key,
            identity=ident,
            classification=classification,
            reason=reason,
            dependencies=dependencies,
        )
        if kind == "legacy-store":
            entry.pop("sessionKey", None)
        return Move(src, archive, ident, payload=(entry, kind, state))

    def _publish(
        self,
        tr: TargetRun,
        moves: list[Move] | None = None,
        *,
        logged: _LoggedMoves | None = None,
        also_planned: list[Move] | None = None,
        planned: bool = False,
    ) -> None:
        """Record the planned moves, publish them in batches, record what completed. The completed
        moves of the last batch are written with the next manifest write (the next planned moves or
        the run's end): completed moves are bookkeeping, planned moves are what recovery needs.
        `logged`: moves `_archive_target` already appended to the MoveLog; they are read back a
        batch at a time (100,000 Move objects are not held)."""
        moves = moves or []
        extra = also_planned or []
        count = len(logged) if logged is not None else len(moves)
        if not count and not extra:
            return
        if not planned:
            for m in [*moves, *extra]:
                self._record(tr.mt["plannedMoves"], m)
            # hard links need no data space, the manifest that records them does
            check_archive_plan_space(self.runs_dir, self.manifest_path, count + len(extra))
            self._save_manifest()  # planned moves are durable before the first link
            self.ctx.checkpoint("moves-planned")
        if not count:
            return
        size = max(MIN_PUBLISH_BATCH, -(-count // MAX_MANIFEST_WRITES))
        self.ctx.progress.start(f"Archiving {tr.target.agent_id}", count)
        starts = range(0, count, size)
        two_threads = _publish_threads()
        for start in starts:
            stop = min(start + size, count)
            batches = (  # bounded memory (one batch, two with two threads); the manifest cadence is `size`
                logged.moves(sub, min(sub + MAX_PUBLISH_BATCH, stop))
                if logged is not None
                else moves[sub : min(sub + MAX_PUBLISH_BATCH, stop)]
                for sub in range(start, stop, MAX_PUBLISH_BATCH)
            )
            published = (
                self._publish_split(tr, batches)
                if tr.mover is not None
                else publish_batches(
                    batches, checkpoint=self.ctx.checkpoint, mode=FILE_MODE, two_threads=two_threads
                )
            )
            with closing(published):  # its worker is joined whatever happens here
                for batch, result in published:
                    self._published(tr, batch, result)
            tr.mt["issues"] = [i.to_json() for i in tr.report.issues]
            if start != starts[-1]:
                self._save_manifest()
            self.ctx.checkpoint("moves-recorded")

    def _publish_split(
        self, tr: TargetRun, batches: Iterator[list[Move]]
    ) -> Generator[tuple[list[Move], BatchResult], None, None]:
        """`publish_batches` with the kept parser (`tr.mover`) publishing part of each batch: the
        parser publishes each batch's first `PARSER_MOVES_SHARE` (`parser_process._publish_part`:
        `publish_batch`, every A-4 check) while this process publishes the rest with its own crash
        points, the results in the batch's order (the completed moves stay in the log's order).
        The parser's part of the next batch is sent before this process waits for its part of this
        one, so it goes on with it while this process takes the answer, makes the batch's
        bookkeeping and reads the next batch (issue 30). Whatever stops this process (Ctrl-C at a
        point, an error, the generator closed), every part sent is waited for first — no process
        moves anything after that; a parser that fails or dies is closed and its parts settled
        here (`_settle_part`)."""
        inflight: deque[list[Move]] = deque()  # the parser's parts sent, not answered yet
        try:
            batch = next(batches, None)
            parts = self._send_part(tr, batch, inflight) if batch is not None else None
            while batch is not None and parts is not None:
                theirs, mine, sent = parts
                if theirs and not sent:  # the parser could not be sent its part: the whole batch here
                    own = self._settle_part(theirs, mine, publish=True)
                else:
                    own = publish_batch(mine, checkpoint=self.ctx.checkpoint, mode=FILE_MODE)
                following = next(batches, None)
                parts = self._send_part(tr, following, inflight) if following is not None else None
                if sent:
                    result = self._take_part(tr, inflight.popleft(), publish=True)
                    result.done += own.done
                    result.failed += own.failed
                else:
                    result = own
                yield batch, result
                batch = following
        except BaseException:
            while inflight:  # their moves are not recorded (as this process's interrupted ones)
                self._take_part(tr, inflight.popleft(), publish=False)
            raise

    def _send_part(
        self, tr: TargetRun, batch: list[Move], inflight: deque[list[Move]]
    ) -> tuple[list[Move], list[Move], bool]:
        """The batch cut for `_publish_split`: (the parser's part, this process's, whether the
        parser was sent its part — then it is appended to `inflight`). A part under
        `PARSER_MOVES_MIN` moves, or no parser: all here."""
        mover = tr.mover
        cut = int(len(batch) * PARSER_MOVES_SHARE)
        if mover is None or cut < PARSER_MOVES_MIN:
            return [], batch, False
        theirs, mine = batch[:cut], batch[cut:]
        try:
            mover.move(
                [
                    (os.fspath(m.source), os.fspath(m.dest), e.dev, e.ino, e.mtime_ns, e.size)
                    for m in theirs
                    for e in (m.expected,)
                ],
                FILE_MODE,
            )
        except (OSError, RuntimeError):  # not started: the whole batch here (`_settle_part`)
            self._close_mover(tr)
            return theirs, mine, False
        inflight.append(theirs)
        return theirs, mine, True

    def _take_part(self, tr: TargetRun, theirs: list[Move], *, publish: bool) -> BatchResult:
        """The parser's answer for its part (`_publish_split`), as a `BatchResult` of its moves;
        when it has none (it failed or died, or was closed for an earlier part), it is closed and
        its part settled here."""
        try:
            message = tr.mover.take() if tr.mover is not None else None
        except (OSError, RuntimeError, ValueError, EOFError):
            message = None
        if message is None or message[0] != parsing.MOVED:
            self._close_mover(tr)  # killed and reaped: nothing of the part moves any more
            return self._settle_part(theirs, [], publish=publish)
        result = BatchResult()
        for n, error in message[2]:
            move = theirs[n]
            move.error = error
            result.failed.append(move)
        for n in message[1]:
            move = theirs[n]
            move.done = True
            result.done.append(move)
        return result

    def _settle_part(self, theirs: list[Move], mine: list[Move], *, publish: bool) -> BatchResult:
        """A part no process publishes any more (the parser stopped, killed and reaped): each move
        is where a kill there would have left it. A name pair is settled back to the source
        (`reconcile_pair`, as a re-run would); a move whose archive name alone is the hashed inode
        with one name is done (both directories synced again); the rest, and `mine`, are published
        here when `publish`, else left to the re-run (an interrupted run)."""
        result = BatchResult()
        again: list[Move] = []
        synced: set[str] = set()
        for move in theirs:
            source, dest = Path(move.source), Path(move.dest)
            try:
                where = reconcile_pair(source, dest)
                if where == "dest":
                    st = os.lstat(dest)
                    if st.st_nlink != 1 or not move.expected.same_object(st):
                        raise ArtifactError("archive changed after publication")
                    for directory in (source.parent, dest.parent):
                        if str(directory) not in synced:
                            fsync_dir(directory)
                            synced.add(str(directory))
                    move.done = True
                    result.done.append(move)
                    continue
            except (OSError, ArtifactError) as exc:
                move.error = f"published file could not be re-verified: {exc}"
                result.failed.append(move)
                continue
            again.append(move)  # at its source ('source', 'settled'), or refused below ('both', 'none')
        again += mine
        if publish and again:
            here = publish_batch(again, checkpoint=self.ctx.checkpoint, mode=FILE_MODE)
            result.done += here.done
            result.failed += here.failed
        elif again:
            for move in again:
                move.error = "not published: the run stopped"
                result.failed.append(move)
        order = {id(move): n for n, move in enumerate(theirs + mine)}
        result.done.sort(key=lambda move: order[id(move)])  # the batch's order, as one process gives it
        return result

    def _published(self, tr: TargetRun, batch: list[Move], result: BatchResult) -> None:
        for move in result.done:
            n, kind, _state, _key = move.payload
            tr.mt["completedMoves"].add(n)
            if kind in ("transcript", "trajectory"):
                tr.report.archived_transcript_files.add(n)  # type: ignore[attr-defined]  # read back from the log
            elif kind == "unreferenced-jsonl":
                tr.report.archived_unreferenced_jsonl_files.append(str(move.dest))
            else:
                tr.report.archived_legacy_store_files.append(str(move.dest))
        for move in result.failed:
            _n, kind, state, key = move.payload
            if kind == "unreferenced-jsonl":
                tr.report.add("unreferenced_jsonl_archive_failed", f"{move.source}: {move.error}")
            elif kind == "legacy-store":
                tr.report.add("legacy_store_archive_failed", f"{move.source}: {move.error}")
            else:
                tr.report.add(
                    "transcript_archive_failed",
                    f"{move.source}: {move.error}",
                    state.rec.source_key if state is not None else key,
                )
                if state is not None:
                    state.archive_ok = False
        self.ctx.progress.advance(len(batch))

    def _archive_index(self, store_path: Path, group: list[TargetRun]) -> None:
        """Step 11: `sessions.json` leaves only when it is unchanged since it was read and everything
        it indexes is in SQLite and archived (or was missing to begin with)."""
        last = group[-1]
        index = last.index
        if index is None or not index.exists or index.identity is None:
            return
        if any(not tr.completed for tr in group):
            return
        owners_needed = _index_owners(index, last.target, self.ctx) if last.target.shared else None
        if owners_needed is not None and not owners_needed <= {tr.target.agent_id for tr in group}:
            return  # another agent's rows live in this shared store and were not imported (T-29)
        retained = [
            s
            for tr in group
            for s in tr.states
            if s.alias_of is None and not s.archive_ok and not s.rec.sqlite_marker
        ]
        if retained:
            last.report.add(
                "legacy_store_archive_failed",
                f"{store_path}: retaining the legacy index because {len(retained)} referenced transcript(s) could "
                "not be imported or archived (see the issues above); resolve them and rerun the import.",
            )
            last.mt["issues"] = [i.to_json() for i in last.report.issues]
            self._save_manifest()
            return
        try:
            now = hash_file(store_path)
        except (OSError, ArtifactError) as exc:
            last.report.add("legacy_store_archive_failed", f"{store_path}: {exc}")
            return
        if not now.same_content(index.identity) or now.ino != index.identity.ino:
            last.report.add(
                "legacy_store_archive_failed",
                f"{store_path}: the index changed since it was imported; rerun the import.",
            )
            return
        if last.index_move is not None:
            last.index_move.expected = now
            self._publish(last, [last.index_move], planned=True)
        else:
            try:
                ensure_private_dir(last.target.archive_dir)
            except OSError as exc:
                last.report.add("legacy_store_archive_failed", f"{store_path}: {exc.strerror or exc}")
                return
            reserver = NameReserver(last.target.archive_dir)
            move = self._plan(
                last.target,
                reserver,
                self.ctx.now_ms(),
                store_path,
                "legacy-store",
                "legacy-store",
                now,
                *self._index_classification(group),
                None,
                dependencies=self._index_dependencies(group),
            )
            self._publish(last, [move])
        archived = last.report.archived_legacy_store_files
        if archived:
            for tr in group[:-1]:
                tr.report.archived_legacy_store_files.extend(archived)

    def _index_classification(self, group: list[TargetRun]) -> tuple[str, str]:
        complete = not any(
            i.code in ("transcript_missing", "transcript_malformed", "entry_invalid", "entry_key_invalid")
            for tr in group
            for i in tr.report.issues
        )
        return ("imported", "verified-index-import") if complete else ("protected", "incomplete-index-import")

    def _index_dependencies(self, group: list[TargetRun]) -> StreamedArray:
        """Every transcript the index names, as manifest paths in first-seen order, produced while
        the move is written to the MoveLog (100,000 mapped paths are not held). Duplicates are
        dropped by the record's own path string: the mapping only strips the state dir's prefix,
        which no two of these paths (built from a directory and a file name) share differently."""
        to_manifest = self.mapper.to_manifest

        def paths() -> Iterator[str]:
            seen: set[str] = set()
            for tr in group:
                for s in tr.states:
                    path = s.rec.transcript_text or s.rec.expected_text
                    if path is not None and path not in seen:
                        seen.add(path)
                        yield to_manifest(path)

        return StreamedArray(paths())

    # ---- finish ----------------------------------------------------------------------------------------
    def _finish(self, runs: list[TargetRun]) -> None:
        stamp = mf.iso_now(self.ctx.now_ms())
        for tr in runs:
            tr.mt["issues"] = [i.to_json() for i in tr.report.issues]
        self.manifest["completedAt"] = stamp
        if self.report.has_blocking:
            self.manifest["failedAt"] = stamp
            from openclaw_cli.migration.failure import write_failure_reports

            assert self.manifest_path is not None
            json_path, md_path = write_failure_reports(
                self.ctx,
                self.manifest_path,
                self.manifest,
                reason="doctor import reported session SQLite migration issues",
            )
            self.manifest["failureReports"] = {"jsonPath": str(json_path), "markdownPath": str(md_path)}
            assert self.report.migration_run is not None
            self.report.migration_run.failure_report_json_path = str(json_path)
            self.report.migration_run.failure_report_markdown_path = str(md_path)
        self._save_manifest()
        self.ctx.checkpoint("finished")


# ---- helpers ---------------------------------------------------------------------------------------------


class _LoggedMoves:
    """The moves `_plan_archive` plans, appended to a MoveLog as they are planned and not held:
    publication takes them back a batch at a time. A session's transcript move is made again from
    its state (source, identity) and its archive name's counter (`NameReserver.counter`: the name
    is `archive_name` of the key, the file name and the plan's stamp), one byte a move; any other
    move is read back from the log."""

    def __init__(self, run: ImportRun, log: mf.MoveLog, prefix: str, stamp: int):
        self.run = run
        self.log = log
        self.first = len(log)
        self.prefix = prefix  # the archive dir's, as `NameReserver.reserve` joins it
        self.stamp = stamp
        self.states: list[RecState | None] = []
        self.counters = array("b")  # the transcript move's name counter; -1: read back from the log

    def append(self, move: Move, counter: int = -1) -> None:
        self.run._record(self.log, move)
        self.states.append(move.payload[2])
        # made again only from what `_plan` was given: a transcript's own absolute path text
        # (`PathMapper.to_real_text` gives such a path back exactly from the log, too)
        remade = 0 <= counter < 128 and move.payload[1] == "transcript" and str(move.source).startswith("/")
        self.counters.append(counter if remade else -1)

    def __len__(self) -> int:
        return len(self.states)

    def moves(self, start: int, end: int) -> list[Move]:
        out: list[Move] = []
        states, counters, first = self.states, self.counters, self.first
        prefix, stamp = self.prefix, self.stamp
        basename = os.path.basename
        for i in range(start, end):
            state, counter = states[i], counters[i]
            if counter < 0 or state is None:
                out.append(self.run._logged_move(self.log, first + i, state))
                continue
            rec = state.rec
            src = rec.transcript_text
            assert src is not None
            dest = f"{prefix}{archive_name(rec.key, basename(src), stamp, counter)}"
            ident = state.identity
            assert ident is not None
            out.append(Move(src, dest, ident, payload=(first + i, "transcript", state, rec.key)))
        return out


@dataclass(slots=True)
class _ArchivePlan:
    """A target's planned archive (`_plan_archive`): its MoveLog, the moves in it, the legacy
    store's move (recorded when published) and the issues planning found (reported by the caller)."""

    log: mf.MoveLog
    moves: _LoggedMoves
    index_move: Move | None
    issues: list[tuple[str, str, str | None, RecState | None]]

    def drop(self) -> None:
        """Not used: its MoveLog is closed (it was in no manifest)."""
        self.log.close()


def _shared_transcripts(states: list[RecState]) -> set[str]:
    """The transcript paths more than one state names (the set of every path is transient)."""
    seen: set[str] = set()
    shared: set[str] = set()
    for state in states:
        src = state.rec.transcript_text
        if src is not None:
            if src in seen:
                shared.add(src)
            else:
                seen.add(src)
    return shared


class _IndexNotRead(Exception):
    """The parser did not read the index (`_index_members`): it is read in-process."""

    def __init__(self, why: str, *, parser_failed: bool):
        super().__init__(why)
        self.parser_failed = parser_failed


def _missing_dirs(directory: Path) -> list[Path]:
    """`directory` and its ancestors that do not exist, deepest first."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    return missing


def _index_members(
    parser: ParserProcess, index: LegacyIndex, idle: Callable[[], None] | None = None
) -> Iterator[tuple[str, Any]]:
    """(key, (sessionId, sessionFile) or None) of every member of the index the parser reads
    (`index_stream.index_parts`), part by part as they come, for `build_records`; `index`'s
    entries (an empty `StreamedEntries`) grow as they come, its identity is set at the end.
    `_IndexNotRead` for a fallback. `idle` runs once, the first time a part is not here yet."""
    from openclaw_cli.migration.index_stream import StreamedEntries

    streamed = index.entries
    assert isinstance(streamed, StreamedEntries)
    while True:
        if idle is not None and not parser.ready():
            idle()  # in the wait: the parser reads on meanwhile
            idle = None
        try:
            message = parser.index_message()
        except (OSError, RuntimeError, ValueError, EOFError) as exc:
            raise _IndexNotRead(str(exc), parser_failed=True) from None
        if message[0] != parsing.INDEXED:
            raise _IndexNotRead(f"unexpected answer {message[0]!r}", parser_failed=True)
        kind = message[1]
        if kind == "part":
            _, _, keys, offsets, lengths, crcs, facts = message
            streamed.add_part(keys, offsets, lengths, crcs)
            yield from zip(keys, facts, strict=True)
        elif kind == "end":
            identity, print_ = message[2], message[3]
            index.identity = Identity(*identity)
            index.fingerprint = tuple(print_)
            streamed.set_identity(identity[0], identity[1])
            return
        else:
            raise _IndexNotRead(str(message[2:]), parser_failed=False)


def _scan_beside(parser: ParserProcess, states: list[RecState], db: Path) -> Any:
    """Verification's scan of the private build `db`, started in the parser process (idle once
    every record was taken; `verify.scan_wanted`). Returns what takes its answer (None from it:
    the scan failed there, and verification scans here), or None when it could not be started."""
    from openclaw_cli.migration import verify

    try:
        parser.scan(verify.wanted(states), str(db), verify.FULL_SCAN_MIN_SESSIONS)
    except (OSError, RuntimeError):
        return None

    def answer() -> verify.Scanned | None:
        try:
            message = parser.take()
        except (OSError, RuntimeError, ValueError, EOFError):
            return None
        if message[0] != parsing.SCANNED:
            return None
        return message[1], message[2]

    return answer


_ENTRY_INSERTED, _ENTRY_EXISTING = 1, 2


_STORE_TYPES: Any = None  # (ReadIssue, PreparedLines) once loaded (`_store_types`)


def _store_types() -> Any:
    """The store's types `_parsed` makes per parser record, imported once: an `import` statement
    run per record cost ~7,000 instructions each time (issue 30)."""
    global _STORE_TYPES
    if _STORE_TYPES is None:
        from openclaw_cli.store.base import ReadIssue
        from openclaw_cli.store.sqlite.lines import PreparedLines

        _STORE_TYPES = (ReadIssue, PreparedLines)
    return _STORE_TYPES


def _take_result(state: RecState | None, res: Any, report: TargetReport) -> None:
    """One record's bulk-import result, kept in its state's slots (an `ImportRecordResult` with
    its ints is ~150 bytes; 100,000 of them were held to the end); the event counts are summed now."""
    assert state is not None
    state.lines_read = res.lines_read
    state.entry_state = (
        _ENTRY_INSERTED if res.entry_inserted else _ENTRY_EXISTING if res.entry_existing else 0
    )
    if res.issue is not None:
        state.result = res
    report.imported_transcript_events += res.events_inserted
    report.validated_transcript_events += res.events_existing


def _owner_filter(target: Target, ctx: MigrationContext) -> Any:
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.keys import parse_agent_key

    default = default_agent_id(ctx.config)

    def owns(key: str) -> bool:
        parsed = parse_agent_key(key)
        owner = parsed[0] if parsed else default
        return owner == target.agent_id

    return owns


def _index_owners(index: LegacyIndex, target: Target, ctx: MigrationContext) -> set[str]:
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.keys import parse_agent_key

    default = default_agent_id(ctx.config)
    owners: set[str] = set()
    for key in index.entries or {}:
        parsed = parse_agent_key(key)
        owners.add(parsed[0] if parsed else default)
    return owners


def parser_wanted(sessions_dir: Path, *, fresh: bool) -> bool:
    """Whether a target's import reads in the parser process, but for the spare core `_start_parser`
    also asks for when it starts (the load can change meanwhile). The space pre-check counts the
    parser's rows files for such a target (`import_faults`)."""
    return parser_share(sessions_dir, fresh=fresh) > 0.0


def parser_share(sessions_dir: Path, *, fresh: bool) -> float:
    """The share of the records the parser may take (`_parser_jobs`) that it reads for a target's
    import, 0.0: no parser. Only a fresh store; `OPENCLAW_IMPORT_PARSER=inline` none,
    `process` all of them, `split` `PARSER_SPLIT_SHARE`; by default all of them when the sampled
    transcripts average `PARSER_MIN_MEAN_BYTES`, else `SMALL_TRANSCRIPTS_SHARE` (no parser for fewer
    than `PARSER_MIN_RECORDS`). `OPENCLAW_IMPORT_PARSER_SHARE` sets the share of a parser that runs."""
    choice = _parser_choice()
    if choice == "inline" or not fresh:
        return 0.0
    if choice == "process":
        return _share_from_env(1.0)
    if choice == "split":
        return _share_from_env(PARSER_SPLIT_SHARE)
    mean = _mean_transcript_bytes(sessions_dir, PARSER_MIN_RECORDS)
    if mean is None:
        return 0.0
    if mean >= PARSER_MIN_MEAN_BYTES:
        return _share_from_env(1.0)
    return _share_from_env(SMALL_TRANSCRIPTS_SHARE) if SMALL_TRANSCRIPTS_SHARE > 0.0 else 0.0


def _publish_threads() -> bool:
    """Whether the moves are published with two threads (`PUBLISH_ENV`)."""
    return os.environ.get(PUBLISH_ENV, "").strip().lower() == "threads"


def _parser_choice() -> str:
    return os.environ.get(PARSER_ENV, "").strip().lower()


def _share_from_env(default: float) -> float:
    """`OPENCLAW_IMPORT_PARSER_SHARE` as a share in (0, 1] (over 1: 1; 0 or less: no parser), else
    `default` (unset or not a number)."""
    text = os.environ.get(PARSER_SHARE_ENV, "").strip()
    if not text:
        return default
    try:
        share = float(text)
    except ValueError:
        return default
    if share != share:  # NaN
        return default
    return max(0.0, min(1.0, share))


def _mean_transcript_bytes(directory: Path, count: int) -> float | None:
    """The mean size of the first `count` transcripts `directory` lists (its listing order: a sample
    of no order in particular; one lstat each), None when it lists fewer."""
    found = total = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith(".jsonl"):
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        pass
                    found += 1
                    if found >= count:
                        return total / found
    except OSError:
        pass
    return None


def _spare_core() -> bool:
    """Whether a second core is there for the parser process: two or more usable cores, and a
    1-minute load average below their number. On a busy machine the two processes wait for each
    other's turn at every result (issue 30, *many* at load 8-14: 58-63 s wall and 14.4 s CPU with the
    parser against 27-47 s and 11.8-12.4 s without); with a core free the parser takes the rows'
    work off the inserting process (the quiet-machine wall figures of issue 30's rounds)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return False
    if cores < 2:
        return False
    try:
        return os.getloadavg()[0] < cores
    except OSError:
        return True  # no load figure: as before, the cores decide


def _parser_jobs(
    states: list[RecState], share: float = 1.0, order: array[int] | None = None
) -> Iterator[tuple[int, RecState]]:
    """The records the parser reads, in order: of those it can take — a readable transcript of a
    valid session id that no other record of the run names (a session seen twice takes the store's
    general path, which needs the lines; keys need no check: `_merge_aliases` leaves one entry per
    key) — `share` of them, spread evenly (with 3/4: the first of every four is the importing
    process's own, read while the parser starts). The importing process reads the others itself,
    as it reads the records the parser cannot take: each record's rows go whole into the parser's
    rows file or into the importer's batch, so a session's rows stay contiguous in the build.
    `order`: the records are imported in this order (`_feed_order`). Each comes with its position
    in `states`."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    seen: set[str] = set()
    shared: set[str] = set()
    for state in states:  # a transient set, freed before the first record is imported
        sid = state.rec.session_id
        if sid in seen:
            shared.add(sid)
        else:
            seen.add(sid)
    del seen
    credit = 0.0
    for position in range(len(states)) if order is None else order:
        state = states[position]
        rec = state.rec
        sid = rec.session_id
        if (
            rec.transcript_text is not None
            and rec.problem is None
            and sid not in shared
            and isinstance(sid, str)
            and is_valid_legacy_session_id(sid)
        ):
            credit += share
            if credit >= 1.0:
                credit -= 1.0
                yield position, state


def _popped(queue: deque[RecState]) -> Iterator[RecState]:
    while queue:
        yield queue.popleft()


def _steal_enabled() -> bool:
    """`OPENCLAW_IMPORT_PARSER_STEAL=0` turns off the importing process's reads ahead of their turn
    when the parser lags (`_feed`): the parser then takes exactly its share."""
    return os.environ.get(PARSER_STEAL_ENV, "1") != "0"


def _feed_order(states: list[RecState]) -> array[int]:
    """The order a fresh private build takes its records in: by session id (the records of one
    session id in their index order), as indexes into `states` (an array: 4 bytes a session). Each
    record's entry and window rows take its position in the index as their rowid, so those tables
    keep the index's order (verification meets the keys in the order of `states`; readers by rowid
    see what they saw before), while the transcript rows go in as the D6 floor's do: appended to
    the `(session_id, seq)` key and the identities' b-tree instead of at random places (issue 30).
    Sorted a first character at a time: the int objects a sort needs exist for one bucket at once
    (at 100,000 sessions a whole sort's 100,000 ints and key list were +5 MB of the peak)."""
    buckets: dict[int, array[int]] = {}
    for i, state in enumerate(states):
        sid = state.rec.session_id
        first = ord(sid[0]) if sid else -1
        bucket = buckets.get(first)
        if bucket is None:
            bucket = buckets[first] = array("I")
        bucket.append(i)
    order = array("I")
    for first in sorted(buckets):
        order.extend(sorted(buckets.pop(first), key=lambda i: states[i].rec.session_id))
    return order


def _merge_aliases(records: list[Record], report: TargetReport) -> list[RecState]:
    """D14: a bare `cron:`/`hook:` key becomes `agent:<id>:…`. When the canonical key is also in
    the store, the newer row (by updatedAt) keeps the key; the other row stays in the archived
    `sessions.json` and, when it names another session, its transcript is still imported."""
    from openclaw_cli.store.sqlite_common import finite_number

    by_key: dict[str, RecState] = {}
    states: list[RecState] = []
    for rec in records:
        state = RecState(rec)
        states.append(state)
        other = by_key.get(rec.key)
        if other is None:
            by_key[rec.key] = state
            continue
        a = finite_number(other.rec.entry.get("updatedAt")) or 0
        b = finite_number(rec.entry.get("updatedAt")) or 0
        winner, loser = (
            (state, other) if (b > a or (b == a and rec.source_key == rec.key)) else (other, state)
        )
        loser.alias_of = winner.rec.key
        by_key[rec.key] = winner
        report.add(
            "entry_alias_merged",
            f"{loser.rec.source_key} and {winner.rec.source_key} both map to {rec.key}; kept the newer row "
            f"(sessionId {winner.rec.session_id}); the other row stays in the archived index"
            + (
                f" and its transcript is imported as session {loser.rec.session_id}"
                if loser.rec.session_id != winner.rec.session_id
                else ""
            ),
            loser.rec.source_key,
        )
    # the winner must be imported before the loser so the key's entry is the winner's
    winners = [s for s in states if s.alias_of is None]
    losers = [s for s in states if s.alias_of is not None]
    return winners + losers


def _digest_stored_prefix(state: RecState) -> str:
    """sha256 over the first `stored_lines` non-blank lines (+ `\\n`), re-read from the file and
    checked against the identity hashed during the import."""
    path = state.rec.transcript
    assert path is not None and state.identity is not None
    fd, before = open_regular_nofollow(path)
    file_hash = hashlib.sha256()
    line_hash = hashlib.sha256()
    want = state.stored_lines
    taken = 0
    rest = b""
    try:
        while True:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                break
            file_hash.update(chunk)
            if taken >= want:
                continue
            data = rest + chunk if rest else chunk
            parts = data.split(b"\n")
            rest = parts.pop()
            for part in parts:
                if taken >= want:
                    break
                if not part or part.isspace():
                    continue
                line_hash.update(part)
                line_hash.update(b"\n")
                taken += 1
        if rest and taken < want and not rest.isspace():
            line_hash.update(rest)
            line_hash.update(b"\n")
            taken += 1
    finally:
        os.close(fd)
    if file_hash.hexdigest() != state.identity.sha256 or not state.identity.same_object(before):
        raise ValueError(f"{path} changed during import")
    return line_hash.hexdigest()


def _stored_sid_matches(db: Path, key: str, session_id: str) -> bool:
    try:
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        row = conn.execute(
            "SELECT current_session_id FROM session_nodes WHERE session_key = ?", (key,)
        ).fetchone()
        return bool(row) and row[0] == session_id
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _count_entries(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _finalize_db(db: Path) -> dict[str, Any]:
    """`import-finalize`: checkpoint the WAL into the database (no VACUUM: a fresh import has no
    free pages worth a rewrite). Reported like OpenClaw's `compact` block."""
    from openclaw_cli.migration.vacuum import db_sizes

    before = db_sizes(db)
    try:
        conn = sqlite3.connect(str(db), isolation_level=None, timeout=5)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            freelist_before = conn.execute("PRAGMA freelist_count").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        freelist_before, page_size = 0, 4096
    after = db_sizes(db)
    return {
        "dbSizeAfterBytes": after[0],
        "dbSizeBeforeBytes": before[0],
        "freelistAfterPages": freelist_before,
        "freelistBeforePages": freelist_before,
        "pageSizeBytes": page_size,
        "reclaimedBytes": max(0, before[0] - after[0]),
        "skipped": False,
        "walSizeAfterBytes": after[1],
        "walSizeBeforeBytes": before[1],
    }


def reconcile_interrupted(ctx: MigrationContext) -> int:
    """Step 1: a publication killed between link and unlink leaves both names on one inode; drop
    the extra name so the source holds the bytes again (the move is simply redone). Returns the
    number of pairs settled."""
    # a run whose moves all completed has nothing to settle: not parsed (`moves_all_completed`)
    manifests, _bad = mf.load_all(ctx.paths.migration_runs_dir(), ctx.state_dir, skip=mf.moves_all_completed)
    settled = 0
    for loaded in manifests:
        for target in loaded.data.get("targets", []):
            completed = {(m["sourcePath"], m["archivePath"]) for m in target.get("completedMoves", [])}
            for move in target.get("plannedMoves", []):
                if (move["sourcePath"], move["archivePath"]) in completed and not loaded.data.get("restore"):
                    continue
                src = loaded.mapper.to_real(move["sourcePath"])
                dst = loaded.mapper.to_real(move["archivePath"])
                try:
                    if reconcile_pair(src, dst) == "settled":
                        settled += 1
                except OSError:
                    continue
    return settled
