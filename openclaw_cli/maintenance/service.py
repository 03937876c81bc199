"""Cleaning one store (`openclaw sessions cleanup`, the Gateway's `sessions.cleanup`): plan it,
then apply the plan through the store's write protocol (`SessionStore.retire`). Target
selection, the writer and the JSON document are the operations layer's (`ops/cleanup.py`).

One pipeline for the dry run and the apply (maintenance.md §10.6/§10.7): the store is read, the
sessions dir is scanned once, and `plan_store` computes everything that would leave — entries
(`plan_cleanup`), their files, the unreferenced-artifact and archive-retention sweeps, the disk
budget — from that snapshot. The dry run stops there (it writes nothing: no store rewrite, no
database created, no lock file); the apply computes the same plan while holding the store's
writer and executes exactly it (`apply.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.behavior import Behavior
from openclaw_cli.errors import OpenClawError
from openclaw_cli.maintenance.artifacts import (
    RetentionPlan,
    SweepPlan,
    budget_measure,
    entry_file_actions,
    entry_file_sizes,
    plan_retention_sweep,
    plan_unreferenced_sweep,
    prompt_hashes,
    referenced_names,
    session_id_names,
)
from openclaw_cli.maintenance.plan import BudgetMeasure, CleanupPlan, plan_cleanup
from openclaw_cli.progress import ProgressFactory
from openclaw_cli.records import Record
from openclaw_cli.store.files import TRANSCRIPT_KINDS, scan_sessions_dir
from openclaw_cli.store.retire import ApplyOutcome, FileAction, Retirement

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

_MESSAGE_ROLES = frozenset({"user", "assistant", "tool", "toolResult", "system"})


class PartialCleanupError(OpenClawError):
    """A later target failed after earlier ones were cleaned (G3 contract, §10.9): the document
    carries the summaries that committed plus `partialError`."""

    def __init__(self, message: str, document: dict[str, Any]):
        super().__init__(message)
        self.document = document

    def to_json(self) -> dict[str, Any]:
        return self.document


class CleanupOptions(Record):
    _fields = (
        "agent",
        "all_agents",
        "store",
        "dry_run",
        "enforce",
        "active_key",
        "fix_missing",
        "fix_dm_scope",
        "text_report",
        "reason_bytes",
        "figures_only",
        "file_facts",
        "key_shapes",
        "listings",
    )
    agent: str | None
    all_agents: bool
    store: str | None
    dry_run: bool
    enforce: bool
    active_key: str | None
    fix_missing: bool
    fix_dm_scope: bool
    # the caller prints the dry run's text report, whose table shows fields of every row: plan over
    # whole entries (otherwise a database store's dry run plans over the rows' facts, issue 30)
    text_report: bool
    # measure what each reason removes (`ops.cleanup.reason_bytes`): a dry run's text report does
    # anyway; an apply only when this is set (the text report's lines by reason: not in the JSON,
    # issue 30: ~8 ms of *many*'s path before the first archive)
    reason_bytes: bool
    # a dry run whose caller reads only the plan and its per-reason bytes (`openclaw storage`):
    # no summary document, no symbolic-link warnings
    figures_only: bool
    # file stores' `load_file_facts()` the caller already made, by store path (`openclaw storage`
    # makes them in its own read of each sessions.json): a dry run plans over them, not read again
    file_facts: Mapping[str, dict[str, Any]] | None
    # `archiving.key_shape` of their keys, by store path (`openclaw storage` keeps them with the
    # facts): the archive-in-place stages do not parse those keys again
    key_shapes: Mapping[str, dict[str, int]] | None
    # sessions dirs the caller listed this run, by sessions dir (`openclaw storage`: the listing its
    # tally and disk walk share, `storage_memo.Listing`): a dry run's snapshot made from it
    listings: Mapping[str, Any] | None

    def __init__(
        self,
        agent: str | None = None,
        all_agents: bool = False,
        store: str | None = None,
        dry_run: bool = False,
        enforce: bool = False,
        active_key: str | None = None,
        fix_missing: bool = False,
        fix_dm_scope: bool = False,
        text_report: bool = False,
        reason_bytes: bool = False,
        figures_only: bool = False,
        file_facts: Mapping[str, dict[str, Any]] | None = None,
        key_shapes: Mapping[str, dict[str, int]] | None = None,
        listings: Mapping[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.all_agents = all_agents
        self.store = store
        self.dry_run = dry_run
        self.enforce = enforce
        self.active_key = active_key
        self.fix_missing = fix_missing
        self.fix_dm_scope = fix_dm_scope
        self.text_report = text_report
        self.reason_bytes = reason_bytes
        self.figures_only = figures_only
        self.file_facts = file_facts
        self.key_shapes = key_shapes
        self.listings = listings


class StoreCleanup(Record):
    """One store's cleanup: the plan and what it does to files and rows, then (apply) the outcome."""

    _fields = (
        "agent_id",
        "store_path",
        "kind",
        "entries",
        "plan",
        "now_ms",
        "sweep",
        "retention",
        "archive_actions",
        "unlink_actions",
        "sqlite_sessions",
        "sqlite_session_keys",
        "outcome",
        "summary",
        "archived_keys",
        "scanned_files",
        "preserve_recent_ms",
        "placeholders",
        "tombstones",
        "reason_bytes",
        "max_disk_bytes_explicit",
        "entry_sid_bytes",
        "session_sizes",
    )
    agent_id: str
    store_path: str
    kind: str
    entries: dict[str, Any]
    plan: CleanupPlan
    now_ms: int
    sweep: SweepPlan | None
    retention: RetentionPlan | None
    archive_actions: list[FileAction]  # legacy: archived, then removed
    unlink_actions: list[FileAction]  # removed without archive
    sqlite_sessions: list[str]  # SQLite: sessions archived, then dropped
    sqlite_session_keys: dict[str, str]
    outcome: ApplyOutcome | None
    summary: dict[str, Any]
    archived_keys: list[str]  # apply: the rows archived in place
    # 2026.9.6+: the sweep reports every file it looked at (all files of the sessions dir and the
    # prompt blobs, counted when it ran: after the apply's removals and archives)
    scanned_files: int | None
    preserve_recent_ms: int | None  # 2026.9.6+ budget tiers: `preserveRecent`
    # 2026.9.9's cron-run placeholder sweep (real OpenClaw databases): the keys and windows it
    # removes, and its result (`{candidates, removedNodes, sweptTranscriptStates, olderThanMs}`)
    placeholders: list[tuple[str, list[str]]]
    tombstones: dict[str, int] | None
    reason_bytes: dict[str, list[int]]  # reason -> [count, bytes] (text report)
    max_disk_bytes_explicit: bool  # 2026.9.9's final tier runs only then
    # a figures-only plan (`storage`): the removed rows' files as bytes per session id, in place of
    # their `FileAction`s in `archive_actions` (`ops.cleanup.reason_bytes` adds both)
    entry_sid_bytes: dict[str, int] | None
    # `store.session_bytes()`, once read for this plan (the budget, `reason_bytes`, the space check)
    session_sizes: dict[str, int] | None

    def __init__(
        self,
        agent_id: str,
        store_path: str,
        kind: str,
        entries: dict[str, Any],
        plan: CleanupPlan,
        now_ms: int,
        sweep: SweepPlan | None = None,
        retention: RetentionPlan | None = None,
        archive_actions: list[FileAction] | None = None,
        unlink_actions: list[FileAction] | None = None,
        sqlite_sessions: list[str] | None = None,
        sqlite_session_keys: dict[str, str] | None = None,
        outcome: ApplyOutcome | None = None,
        summary: dict[str, Any] | None = None,
        archived_keys: list[str] | None = None,
        scanned_files: int | None = None,
        preserve_recent_ms: int | None = None,
        placeholders: list[tuple[str, list[str]]] | None = None,
        tombstones: dict[str, int] | None = None,
        reason_bytes: dict[str, list[int]] | None = None,
        max_disk_bytes_explicit: bool = False,
        entry_sid_bytes: dict[str, int] | None = None,
        session_sizes: dict[str, int] | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.store_path = store_path
        self.kind = kind
        self.entries = entries
        self.plan = plan
        self.now_ms = now_ms
        self.sweep = sweep
        self.retention = retention
        self.archive_actions = [] if archive_actions is None else archive_actions
        self.unlink_actions = [] if unlink_actions is None else unlink_actions
        self.sqlite_sessions = [] if sqlite_sessions is None else sqlite_sessions
        self.sqlite_session_keys = {} if sqlite_session_keys is None else sqlite_session_keys
        self.outcome = outcome
        self.summary = {} if summary is None else summary
        self.archived_keys = [] if archived_keys is None else archived_keys
        self.scanned_files = scanned_files
        self.preserve_recent_ms = preserve_recent_ms
        self.placeholders = [] if placeholders is None else placeholders
        self.tombstones = tombstones
        self.reason_bytes = {} if reason_bytes is None else reason_bytes
        self.max_disk_bytes_explicit = max_disk_bytes_explicit
        self.entry_sid_bytes = entry_sid_bytes
        self.session_sizes = session_sizes

    def sizes_of_sessions(self, store: SessionStore) -> dict[str, int]:
        """`store.session_bytes()`, read once per plan (issue 30: 10 ms on *many*, read twice)."""
        if self.session_sizes is None:
            self.session_sizes = store.session_bytes()
        return self.session_sizes

    def summarize(self, *, dry_run: bool) -> dict[str, Any]:
        from openclaw_cli.maintenance.report import cleanup_summary, empty_unreferenced_artifacts

        outcome = self.outcome
        if self.sweep is None:
            artifacts = empty_unreferenced_artifacts(self.plan)
        elif outcome is None:
            artifacts = self.sweep.to_json()
        else:
            artifacts = self.sweep.to_json(outcome.sweep_removed, outcome.sweep_freed)
        if self.sweep is not None and self.scanned_files is not None:
            artifacts["scannedFiles"] = self.scanned_files
        retention = None
        if (
            self.retention is not None and not self.plan.behavior.maintenance.archive_in_place
        ):  # 9.6 dropped it
            retention = self.retention.to_json(outcome.retention_removed if outcome else None)
        self.summary = cleanup_summary(
            self.plan,
            agent_id=self.agent_id,
            store_path=self.store_path,
            dry_run=dry_run,
            unreferenced_artifacts=artifacts,
            archive_cleanup=retention,
            applied_count=outcome.applied_count if outcome else None,
            tombstones=self.tombstones,
            after_count=(
                outcome.applied_count
                if outcome is not None and self.plan.behavior.maintenance.budget_spares_live_rows
                else None
            ),
        )
        return self.summary


# ---- reading the store ------------------------------------------------------------------------


def _is_message(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if kind == "message":
        return True
    if kind is not None:
        return False
    message = obj.get("message")
    role = message.get("role") if isinstance(message, dict) else obj.get("role")
    return role in _MESSAGE_ROLES


def missing_transcript_check(store: SessionStore) -> Callable[[str, Mapping[str, Any]], bool]:
    """§10.4: True when the session's transcript has no message record (missing, empty or
    header-only). Anything that could not be read counts as present (never removed)."""
    from openclaw_cli.store.base import ReadIssue

    def check(key: str, entry: Mapping[str, Any]) -> bool:
        sid: str = entry.get("sessionId")  # type: ignore[assignment]  # a listed row carries one
        row = entry if isinstance(entry, dict) else dict(entry)  # the store reads rows as dicts
        issues: list[ReadIssue] = []
        try:
            if not store.locate_transcript(sid, row, issues):
                return not issues  # a symlinked transcript is not "missing"
            for line in store.iter_transcript(sid, entry=row, issues=issues):
                if _is_message(line.obj):
                    return False
        except OpenClawError:
            return False
        return not issues

    return check


def _other_store_session_ids(store: SessionStore) -> set[str] | None:
    """D6.3: the session ids a SQLite database of the same agent holds (legacy targets only);
    None when that database exists but cannot be read (then every transcript is protected)."""
    from openclaw_cli.paths import AGENT_DB_NAME

    db = Path(store.sessions_dir).parent / "agent" / AGENT_DB_NAME
    if not db.exists():
        return set()
    from openclaw_cli.store.detect import open_store_at

    try:
        other = open_store_at(db, agent_id=store.agent_id, read_only=True)
    except OpenClawError:
        return None
    try:
        sids = set(other.session_totals())
        sids.update(sid for sid, _ in other.entry_sizes().values() if sid)
        return sids
    finally:
        other.close()


# ---- planning ---------------------------------------------------------------------------------


def file_facts_plan(behavior: Behavior, settings: Any) -> bool:
    """Whether a file store's dry run (no --fix-missing, no text report) plans over its rows' file
    facts under `behavior` and the resolved maintenance `settings`: not when 2026.7's disk budget
    projects the rewritten sessions.json, which needs whole rows."""
    from openclaw_cli.maintenance.budget import budget_limits

    return behavior.maintenance.budget_spares_live_rows or (
        budget_limits(settings.max_disk_bytes, settings.high_water_bytes) is None
    )


def plan_store(
    ctx: Any, store: SessionStore, *, options: CleanupOptions, now_ms: int, behavior: Behavior
) -> StoreCleanup:
    """The one pipeline (dry run and apply): everything the cleanup of `store` removes, under the
    rules of `behavior` (the release the store follows, D23). Where a store keeps its transcripts
    decides what leaves with a removed row: files of the sessions dir (legacy), or sessions inside
    the database (`SessionStore.transcripts_in_files`)."""
    from openclaw_cli.config import cron_settings, dm_scope, maintenance_settings

    settings = maintenance_settings(ctx.config, behavior)
    mode = "enforce" if options.enforce else (settings.mode or "enforce")
    # 2026.9.6+: a dry run previews what an enforce would do, in either mode (its JSON keeps the
    # mode); a warn-mode apply then removes nothing. 2026.7: the dry run is the warn-mode apply.
    preview_enforce = options.dry_run and behavior.maintenance.warn_dry_run_shows_enforce
    mode_override = "enforce" if options.enforce or preview_enforce else None
    enforce = (mode_override or settings.mode or "enforce") == "enforce"
    in_files = store.transcripts_in_files
    # issue 30: a database store's dry run plans over the rows' facts (`store/facts.py`); the
    # apply (its writes compare whole rows), --fix-missing (transcript references), a file store
    # (file references; its one JSON document is whole anyway) and the text report read whole entries.
    # Facts save memory, not CPU: `load_facts` parses every row whole and then reduces it, so an
    # apply over facts plus its leaving rows read again by key cost *many*'s head ~+180 ms of
    # main-thread CPU (cleanup47b, stop 47: measured, not kept)
    facts = options.dry_run and not (options.fix_missing or options.text_report or in_files)
    file_facts = None
    # a file store's dry run over its rows' file facts, unless 2026.7's disk budget projects the
    # rewritten sessions.json (whole rows) or a row is unusable (its files stay alive)
    if (
        in_files
        and options.dry_run
        and not (options.fix_missing or options.text_report)
        and file_facts_plan(behavior, settings)
    ):
        given = options.file_facts.get(str(store.path)) if options.file_facts else None
        file_facts = given if given is not None else store.load_file_facts()
    if file_facts is not None:
        entries = file_facts
    else:
        entries = store.load_facts() if facts else store.load_entries()
    listed = options.listings.get(str(store.sessions_dir)) if options.listings and options.dry_run else None
    # (its files' mtimes given once: a second plan of the same directory lists it itself)
    snapshot = scan_sessions_dir(store.sessions_dir, None if listed is None else listed.regular_files())
    cron = cron_settings(ctx.config)
    common: dict[str, Any] = dict(
        now_ms=now_ms,
        active_key=options.active_key,
        agent_id=store.agent_id,
        fix_missing=options.fix_missing,
        fix_dm_scope=options.fix_dm_scope,
        dm_scope=dm_scope(ctx.config),
        missing_transcript=missing_transcript_check(store) if options.fix_missing else None,
        mode_override=mode_override,
        cron_retention_ms=cron.session_retention_ms,
        behavior=behavior,
    )
    shapes = options.key_shapes.get(str(store.path)) if options.key_shapes else None
    if shapes is not None:
        common["key_shapes"] = shapes
    result = StoreCleanup(store.agent_id, str(store.path), store.kind, entries, plan=None, now_ms=now_ms)  # type: ignore[arg-type]
    if in_files:
        plan = _plan_files(
            store,
            snapshot,
            entries,
            settings,
            enforce,
            now_ms,
            common,
            result,
            file_facts is not None,
            options.figures_only,
        )
    else:
        plan = _plan_database(store, snapshot, entries, settings, enforce, now_ms, common, result, facts)
    plan.mode = mode
    result.plan = plan
    result.preserve_recent_ms = settings.preserve_recent_ms
    retention = cron.session_retention_ms
    if (
        behavior.maintenance.cron_placeholder_sweep
        and retention is not None
        and store.holds_cron_placeholders
    ):
        if Path(store.path).exists():
            result.placeholders = store.cron_placeholders(before_ms=now_ms - retention)
        result.tombstones = {
            "candidates": len(result.placeholders),
            "removedNodes": 0,
            "sweptTranscriptStates": 0,
            "olderThanMs": retention,
        }
    result.max_disk_bytes_explicit = settings.max_disk_bytes_explicit
    budget = plan.disk_budget
    if (
        options.dry_run
        and behavior.maintenance.budget_spares_live_rows
        and mode == "enforce"
        and budget is not None
        and budget.over_budget
        and Path(store.path).exists()
    ):
        from openclaw_cli.maintenance.reclaim import has_candidates

        # OpenClaw's preview: the budget's tiers would reclaim something (archives, historical
        # sessions, cap-archived rows)
        plan.budget_reclaimable = has_candidates(
            store, preserve_recent_ms=settings.preserve_recent_ms, now_ms=now_ms
        )
    if behavior.maintenance.archive_in_place and result.sweep is not None and not options.figures_only:
        from openclaw_cli.maintenance.budget import count_swept_files

        # (only the summary reports it: a figures-only dry run makes none)
        result.scanned_files = count_swept_files(Path(store.sessions_dir))
    return result


def _plan_files(
    store: SessionStore,
    snapshot: Any,
    entries: dict[str, Any],
    settings: Any,
    enforce: bool,
    now_ms: int,
    common: dict[str, Any],
    result: StoreCleanup,
    file_facts: bool = False,
    figures_only: bool = False,
) -> CleanupPlan:
    """`file_facts`: `entries` are `load_file_facts()` (every row usable, none held whole).
    `figures_only`: the removed rows' files are summed (`result.entry_sid_bytes`), not listed."""
    from openclaw_cli.maintenance.budget import budget_limits, measure_physical
    from openclaw_cli.store.legacy.store import dump_store_bytes

    root = Path(store.sessions_dir)
    other_sids = _other_store_session_ids(store)
    if other_sids is None:  # an unreadable database of the agent: it may hold any of them
        protected = {n for n in snapshot.files if snapshot.kind(n) in TRANSCRIPT_KINDS}
    else:
        protected = session_id_names(other_sids, snapshot) if other_sids else set()
    if file_facts:  # (given only when every row is usable)
        unusable: dict[str, Any] = {}
    else:
        rows = store.load_rows() if store.exists() else {}
        # (every row usable, the usual file: one C-level key comparison)
        unusable = (
            {} if rows.keys() == entries.keys() else {k: v for k, v in rows.items() if k not in entries}
        )
    unusable_names = referenced_names(unusable.values(), root, snapshot)
    budget_on = budget_limits(settings.max_disk_bytes, settings.high_water_bytes) is not None
    settings_physical = common["behavior"].maintenance.budget_spares_live_rows
    stages: list[tuple[list[FileAction], SweepPlan | None, RetentionPlan | None, dict[str, int] | None]] = []

    def measure(remaining: Mapping[str, Any], removed: list[str]) -> BudgetMeasure | None:
        still = referenced_names(remaining.values(), root, snapshot) | unusable_names
        sid_bytes: dict[str, int] | None = None
        if figures_only:  # (storage: only summed, no FileAction per removed row)
            entry_sizes, sid_bytes = entry_file_sizes(snapshot, entries, removed, still, protected)
            entry_actions: list[FileAction] = []
            entry_names: Collection[str] = entry_sizes.keys()
        else:
            entry_sizes = {}
            entry_actions = entry_file_actions(snapshot, entries, removed, still, protected)
            entry_names = {a.name for a in entry_actions}
        sweep = retention = None
        if enforce:
            sweep = plan_unreferenced_sweep(
                snapshot,
                referenced=still,
                protected=protected,
                exclude=entry_names,
                referenced_hashes=prompt_hashes([*remaining.values(), *unusable.values()]),
                older_than_ms=settings.prune_after_ms or 0,
                now_ms=now_ms,
                transcripts=store.exists(),
            )
            retention = plan_retention_sweep(snapshot, settings.reset_archive_retention_ms, now_ms)
        stages.append((entry_actions, sweep, retention, sid_bytes))
        if not budget_on:
            return None
        if settings_physical:
            return measure_physical(Path(store.sessions_dir), None, snapshot)  # (not listed again)
        gone = set(entry_names)
        gone.update(a.name for a in (sweep.removals if sweep else ()))
        gone.update(a.name for a in (retention.removals if retention else ()))
        # (a figures-only plan's files: the measure reads their names and sizes)
        summed = [FileAction(n, size, 0.0, "transcript", True, "entry") for n, size in entry_sizes.items()]
        pending = [a for a in [*entry_actions, *summed, *(sweep.removals if sweep else ())] if a.archive]
        projected = len(dump_store_bytes({**remaining, **unusable}))
        return budget_measure(
            snapshot,
            gone=gone,
            pending=pending,
            protected=protected,
            projected_store_bytes=projected,
            now_ms=now_ms,
        )

    plan = plan_cleanup(entries, settings, budget_measure=measure, **common)
    entry_actions, sweep, retention, result.entry_sid_bytes = stages[
        0
    ]  # the first call is the plan's own (warn mode re-plans)
    budget_actions = []
    for removal in plan.budget_file_removals:
        f = snapshot.files.get(removal.name)
        budget_actions.append(
            FileAction(
                removal.name,
                removal.size,
                f.mtime_ms if f else now_ms,
                removal.kind,
                removal.kind in TRANSCRIPT_KINDS,
                "budget",
                removal.session_id,
            )
        )
    result.sweep, result.retention = sweep, retention
    result.archive_actions = [
        *entry_actions,
        *(a for a in (sweep.removals if sweep else ()) if a.archive),
        *(a for a in budget_actions if a.archive),
    ]
    result.unlink_actions = [
        *(a for a in (sweep.removals if sweep else ()) if not a.archive),
        *(retention.removals if retention else ()),
        *(a for a in budget_actions if not a.archive),
    ]
    return plan


def _plan_database(
    store: SessionStore,
    snapshot: Any,
    entries: dict[str, Any],
    settings: Any,
    enforce: bool,
    now_ms: int,
    common: dict[str, Any],
    result: StoreCleanup,
    facts: bool = False,
) -> CleanupPlan:
    from openclaw_cli.maintenance.budget import SqliteMeasure, budget_limits, measure_physical

    if common["behavior"].maintenance.budget_spares_live_rows:
        measure: Any = (
            measure_physical(Path(store.sessions_dir), Path(store.path))
            if Path(store.path).exists()
            else None
        )
    else:
        stored = store.entry_bytes()
        budget_on = budget_limits(settings.max_disk_bytes, settings.high_water_bytes) is not None
        if facts and budget_on and any(key not in stored for key in entries):
            entries = store.load_entries()  # a row without a stored size is sized whole, never by its facts
            result.entries = entries
        measure = SqliteMeasure(result.sizes_of_sessions(store), stored)
    plan = plan_cleanup(entries, settings, budget_measure=measure, **common)
    if enforce:
        # D6.3: transcript-like files in a SQLite agent's sessions dir are legacy data: never swept
        result.sweep = plan_unreferenced_sweep(
            snapshot,
            referenced=(),
            protected=(),
            exclude=(),
            referenced_hashes=prompt_hashes(entries.values()),
            older_than_ms=settings.prune_after_ms or 0,
            now_ms=now_ms,
            transcripts=False,
        )
        result.retention = plan_retention_sweep(snapshot, settings.reset_archive_retention_ms, now_ms)
        result.unlink_actions = [
            *result.sweep.removals,
            *(result.retention.removals if result.retention else ()),
        ]
    sids = list(plan.unreferenced_session_ids)
    keys: dict[str, str] = {}
    for key in plan.removed:
        sid = entries[key].get("sessionId") if isinstance(entries.get(key), dict) else None
        if isinstance(sid, str):
            keys.setdefault(sid, key)
    result.sqlite_sessions, result.sqlite_session_keys = sids, keys
    return plan


def _older_windows(store: SessionStore, result: StoreCleanup) -> None:
    """Earlier windows (compaction successors, D16) of removed keys leave with them."""
    if not result.plan.removed:
        return
    removed = set(result.plan.removed)
    still: set[Any] | None = None  # the kept rows' session ids: made only when a window needs them
    have = set(result.sqlite_sessions)
    for sid, key in store.windows_beside(removed, have):  # (most cleanups: none)
        if key in removed and sid not in have:
            if still is None:  # (most cleanups: every removed key's one window is leaving already)
                still = {
                    e.get("sessionId")
                    for k, e in result.entries.items()
                    if k not in removed and isinstance(e, dict)
                }
            if sid not in still:
                have.add(sid)
                result.sqlite_sessions.append(sid)
                result.sqlite_session_keys.setdefault(sid, key)


# ---- applying ---------------------------------------------------------------------------------


def retirement(store: SessionStore, result: StoreCleanup) -> Retirement:
    """The plan as the store's write protocol takes it."""
    plan = result.plan
    if not store.transcripts_in_files:
        _older_windows(store, result)
    session_ids, session_keys = result.sqlite_sessions, result.sqlite_session_keys
    placeholder_keys: list[str] = []
    if result.placeholders and plan.mode == "enforce":
        # 2026.9.9's cron-run placeholder sweep goes in the removals' write, not after it: a kill
        # leaves the database as before or as after the whole run (D6.4); each placeholder is
        # re-checked inside the transaction and kept, with its windows, if it changed
        session_ids, session_keys = list(session_ids), dict(session_keys)
        for key, generations in result.placeholders:
            placeholder_keys.append(key)
            for sid in generations:
                if sid not in session_keys:
                    session_ids.append(sid)
                    session_keys[sid] = key
    if not store.transcripts_in_files:
        # the leaving sessions in session-id order: the order of the events' primary-key index, of
        # the identities and windows tables (and of a fresh import's events): the exports read and
        # the removals' deletes walk each b-tree forwards, and a page left behind is not dirtied
        # again after the removals' cache spilled it (issue 30)
        session_ids = sorted(session_ids)
    return Retirement(
        list(plan.removed),
        entries=result.entries,
        archive_actions=result.archive_actions,
        unlink_actions=result.unlink_actions,
        session_ids=session_ids,
        session_keys=session_keys,
        placeholder_keys=placeholder_keys,
        sweep_locks=plan.mode == "enforce",  # warn mode touches no file (§5.6)
        # the rows the release archives in place, in the removals' write (a row that changed since
        # the plan read it is left as it is, like a removal's)
        archive_rows=dict(plan.archived),
        archived_at=int(result.now_ms),
        session_bytes=result.session_sizes,  # (read already for the budget or `reason_bytes`)
    )


def apply_store(
    store: SessionStore,
    result: StoreCleanup,
    *,
    lock_settings: Any,
    checkpoint: Any,
    progress: ProgressFactory | None,
) -> ApplyOutcome:
    """Execute the plan (the caller holds the store's writer)."""
    work = retirement(store, result)
    total = work.work_units(store.transcripts_in_files)
    bar = (
        progress(f"Cleaning {result.agent_id}", _items(work, store.transcripts_in_files))
        if progress and total
        else None
    )
    try:
        if result.plan.mode != "enforce" and not (
            work.removed_keys
            or work.archive_actions
            or work.unlink_actions
            or work.session_ids
            or work.archive_rows
        ):
            # warn mode with no explicit repair: nothing to write (no transaction, no backup)
            outcome = ApplyOutcome(applied_count=store.count_entries())
        else:
            from openclaw_cli.store.usage_ledger import RetirementLedger, ledgered

            # issue 27: what the leaving transcripts cost outlives them: read from the archives'
            # own exports, appended once the archives are durable and before anything leaves
            ledger = RetirementLedger(store, work, reason="cleanup", now_ms=int(result.now_ms), worker=True)
            try:
                with ledgered(ledger.appended):
                    outcome = store.retire(
                        work,
                        lock_settings=lock_settings,
                        now_ms=result.now_ms,
                        checkpoint=checkpoint,
                        progress=_per_item(bar, work, store.transcripts_in_files) if bar else None,
                        leaving=ledger,
                    )
            finally:
                ledger.close()  # its worker process, if a failure came before the ledger's append
            # a database store's removals thread holds `work` until its deferred WAL checkpoint and
            # close are done, which the process's exit waits for: the planned rows are let go
            # here (the COMMIT has returned), so the last reference to them is the caller's and
            # they are freed when the command ends, beside that checkpoint, not on its thread
            # after it (issue 30: ~12-17 ms on *many*'s exit path)
            work.entries = {}
        result.archived_keys = list(outcome.archived_keys)  # archived in place in retire's write
        if work.placeholder_keys:
            _count_swept_placeholders(result, outcome)
        if result.plan.behavior.maintenance.budget_spares_live_rows:
            _measure_after_apply(store, result, lock_settings=lock_settings, checkpoint=checkpoint)
            if result.plan.evicted:  # rows the budget's tiers removed: counted as OpenClaw does
                outcome.applied_count = store.count_entries()
        return outcome
    finally:
        close = getattr(bar, "close", None)
        if close is not None:
            close()


def _count_swept_placeholders(result: StoreCleanup, outcome: ApplyOutcome) -> None:
    """2026.9.9's counters: a placeholder counts as removed when its row and every window left
    (the write keeps one that changed since the plan read it, or whose windows cannot leave)."""
    kept = set(outcome.kept)
    removed = swept = 0
    for key, generations in result.placeholders:
        if key not in kept and not any(sid in kept for sid in generations):
            removed += 1
            swept += len(generations)
    if result.tombstones is not None:
        result.tombstones.update(removedNodes=removed, sweptTranscriptStates=swept)


def _measure_after_apply(
    store: SessionStore, result: StoreCleanup, *, lock_settings: Any, checkpoint: Any
) -> None:
    """2026.9.6+: what the sweep and the budget find once the entry changes are written (their
    archives included), as OpenClaw's apply measures them; an enforce run over the budget then
    reclaims in the release's tiers (`maintenance/reclaim.py`)."""
    from openclaw_cli.maintenance.budget import (
        count_swept_files,
        measure_physical,
        plan_physical_budget,
        sweep_and_measure,
    )
    from openclaw_cli.maintenance.reclaim import Reclaimer

    sessions_dir = Path(store.sessions_dir)
    budget = result.plan.disk_budget
    database = None if store.transcripts_in_files else Path(store.path)
    first = None  # the budget's first measure, from the sweep's listing (one listing, not two)
    if result.sweep is not None:
        if budget is None:
            result.scanned_files = count_swept_files(sessions_dir)
        else:
            result.scanned_files, first = sweep_and_measure(sessions_dir, database)
    if budget is None:
        return
    rules = result.plan.behavior.maintenance
    if result.plan.mode == "enforce" and Path(store.path).exists():
        reclaimer = Reclaimer(
            store,
            max_bytes=budget.max_bytes,
            high_water_bytes=budget.high_water_bytes,
            preserve_recent_ms=result.preserve_recent_ms,
            now_ms=result.now_ms,
            lock_settings=lock_settings,
            checkpoint=checkpoint,
            final_tier=rules.final_disk_tier and result.max_disk_bytes_explicit,
        )
        result.plan.disk_budget = reclaimer.run(None if first is None else first.total_bytes)
        return
    measured = plan_physical_budget(
        measure_physical(sessions_dir, database) if first is None else first,
        max_bytes=budget.max_bytes,
        high_water_bytes=budget.high_water_bytes,
    )
    result.plan.disk_budget = measured.result


def _items(work: Any, in_files: bool) -> int:
    """What the progress bar counts: the files (or sessions) leaving the store, plus the archives
    and temps removed — not the store's internal steps."""
    return (len(work.archive_actions) if in_files else len(work.session_ids)) + len(work.unlink_actions)


def _per_item(bar: Any, work: Any, in_files: bool) -> Any:
    """The store ticks twice per leaving file (archived, then removed): shown as half an item
    each, so 1,500 removals count to 1,500."""
    halves = 2 * len(work.archive_actions) if in_files else 0
    seen = 0

    def tick(n: int) -> None:
        nonlocal seen
        for _ in range(n):
            seen += 1
            bar(0.5 if seen <= halves else 1)

    return tick


def check_archive_dir(ctx: Any, store: SessionStore) -> None:
    """D6.7: archives are written into the agent's sessions dir; refuse when that dir (or a
    directory between it and the state dir) is a symbolic link, which could lead outside."""
    from openclaw_cli.errors import RefusedError

    state = Path(ctx.paths.state_dir)
    target = Path(store.sessions_dir)
    try:
        relative = target.relative_to(state)
    except ValueError:
        return  # an explicit --store outside the state dir: its own directory, no symlink walk
    current = state
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise RefusedError(
                f"Refusing to clean up {store.path}: {current} is a symbolic link "
                "(archives are never written through a link out of the state directory)"
            )
