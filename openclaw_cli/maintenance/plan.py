"""Maintenance planning as pure functions: entries + settings + now -> plan (no I/O).

`plan_cleanup` is `openclaw sessions cleanup` (dry run and apply use the *same* plan; the dry run
prints it, apply executes it), `plan_runtime_maintenance` is the unforced pass run by write paths,
`plan_cron_retention` is the `cron.sessionRetention` reaper. Rules: `maintenance.md` §3–§6,
§9.1, §10.4–§10.8, with every [R] point adopted:

* primary keys (`agent:<id>:main`, `global`) are preserved (§3.6, §4.4);
* `pruneAfter <= 0` never age-prunes (§5.3);
* the cap keeps at least `min(maxEntries, 25)` removable rows when preserved rows fill it (§5.4);
* `maxDiskBytes <= 0` disables the budget (§2.1).

Entries are `{sessionKey: entry}` in store order (that order breaks `updatedAt` ties).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from openclaw_cli.behavior import BEHAVIOR_2026_7, Behavior
from openclaw_cli.keys import (
    PROBE_KEY_MIN_LEN,
    SYNTHETIC_PREFIXES,
    has_durable_chat_type,
    is_cron_run_key,
    is_dm_scope_retire_candidate,
    is_durable_external_pointer,
    is_model_run_probe_key,
    is_primary_key,
    parse_agent_key,
    preserve_key_form,
)
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.maintenance.archiving import ARCHIVE_ACTIONS, Guard, plan_archiving
from openclaw_cli.maintenance.budget import (
    BudgetPlan,
    DiskBudgetResult,
    FileRemoval,
    LegacyDirMeasure,
    PhysicalMeasure,
    SessionIdsFn,
    SqliteMeasure,
    entry_session_ids,
    plan_legacy_budget,
    plan_physical_budget,
    plan_sqlite_budget,
)
from openclaw_cli.records import FrozenRecord, Record
from openclaw_cli.store.names import archive_stamp_ms as parse_archive_timestamp

ACTION_KEEP = "keep"
ACTION_PRUNE_MISSING = "prune-missing"
ACTION_RETIRE_DM_SCOPE = "retire-dm-scope"
ACTION_PRUNE_MODEL_RUN = "prune-model-run"
ACTION_PRUNE_STALE = "prune-stale"
ACTION_CAP_OVERFLOW = "cap-overflow"
ACTION_PRUNE_CRON = "prune-cron-retention"
ACTION_EVICT_BUDGET = "evict-budget"
# Pipeline order (§10.7); an entry leaves at its first matching stage, so each key has one action.

MODEL_RUN_PRUNE_AFTER_MS = 86_400_000  # fixed 24 h (§2.1, derived, not configurable)
CAP_FLOOR = 25  # [R] G2 floor (§5.4)
CRON_SWEEP_INTERVAL_MS = 300_000  # the cron reaper runs at most every 5 min per store (§9.1)


class MaintenanceSettingsLike(Protocol):
    """What the planner reads from resolved `session.maintenance` settings
    (`openclaw_cli.config.resolve.MaintenanceSettings` has exactly these attributes)."""

    mode: str
    prune_after_ms: int | None
    max_entries: int | None
    reset_archive_retention_ms: int | None
    max_disk_bytes: int | None
    high_water_bytes: int | None
    model_run_prune_after_ms: int | None


BudgetMeasure = SqliteMeasure | LegacyDirMeasure | PhysicalMeasure
# A measure built when the budget stage starts, from (entries left, keys removed so far): lets a
# caller measure the directory as it will be after the entry removals' file effects.
BudgetMeasureFn = Callable[[Mapping[str, Any], list[str]], BudgetMeasure | None]
MissingTranscriptFn = Callable[[str, Mapping[str, Any]], bool]


# ---- small rules --------------------------------------------------------------------------------


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def entry_high_water(max_entries: Any) -> int:
    """§5.1 batched trigger: not a positive int -> 1; <= 49 -> max + 1; else max + max(25, ceil(10 %))."""
    cap = _positive_int(max_entries)
    if cap is None:
        return 1
    if cap <= 49:
        return cap + 1
    return cap + max(25, math.ceil(cap * 0.1))


def should_run_entry_maintenance(count: int, max_entries: Any, force: bool) -> bool:
    return force or count >= entry_high_water(max_entries)


def should_run_model_run_prune(count: int, max_entries: Any, force: bool) -> bool:
    """§5.2: forced -> count > maxEntries; unforced -> count >= highWater(maxEntries)."""
    cap = _positive_int(max_entries)
    if force:
        return cap is not None and count > cap
    return count >= entry_high_water(max_entries)


def cap_budget(max_entries: int, preserved: int) -> int:
    """§5.4 with the [R] floor: room for removable rows next to `preserved` ones."""
    budget = max(0, max_entries - preserved)
    if budget == 0 and max_entries > 0:
        budget = min(max_entries, CAP_FLOOR)
    return budget


def updated_at(entry: Any) -> float | None:
    """`entry.updatedAt` as a finite number, else None (strings, booleans, NaN don't count)."""
    if type(entry) is dict:  # fast path (isinstance against an ABC is slow on 20,000 rows)
        value = entry.get("updatedAt")
        if type(value) is int:
            return float(value)
    else:
        value = entry.get("updatedAt") if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _field(entry: Any, name: str) -> Any:
    if type(entry) is dict:
        return entry.get(name)
    return entry.get(name) if isinstance(entry, Mapping) else None


def _is_locked(entry: Any) -> bool:
    return _field(entry, "modelSelectionLocked") is True


def _is_archived(entry: Any) -> bool:
    return _field(entry, "archivedAt") is not None


class Preserver:
    """The §4 predicate: who is never an automatic victim (model-run prune, stale prune, cap,
    disk budget). Preserve keys are compared trimmed and lower-cased; the active key's
    `parentSessionKey` chain is preserved with it (OpenClaw does that on SQLite stores; we do it
    on both kinds, which only ever keeps more)."""

    def __init__(
        self,
        entries: Mapping[str, Any],
        preserve_keys: Iterable[str] = (),
        active_key: str | None = None,
        preserve_session_ids: Iterable[str] = (),
    ):
        keys = {preserve_key_form(k) for k in preserve_keys if isinstance(k, str) and k.strip()}
        self.active = (
            preserve_key_form(active_key) if isinstance(active_key, str) and active_key.strip() else None
        )
        if self.active:
            keys.add(self.active)
            by_form: dict[str, Any] = {}
            for key, entry in entries.items():
                by_form.setdefault(preserve_key_form(key), entry)
            current = by_form.get(self.active)
            while current is not None:
                parent = _field(current, "parentSessionKey")
                form = preserve_key_form(parent) if isinstance(parent, str) else ""
                if not form or form in keys:
                    break
                keys.add(form)
                current = by_form.get(form)
        self.keys = frozenset(keys)
        self.session_ids = frozenset(s for s in preserve_session_ids if isinstance(s, str) and s)
        self._cache: dict[str, tuple[Any, bool]] = {}
        self._among: tuple[Mapping[str, Any], frozenset[str]] | None = None

    def is_preserved(self, key: str, entry: Any, *, ignore_active: bool = False) -> bool:
        if ignore_active:
            return self._decide(key, entry, ignore_active=True)
        among = self._among
        if among is not None and among[0].get(key, _ABSENT) is entry:
            return key in among[1]
        cached = self._cache.get(key)
        if cached is not None and cached[0] is entry:
            return cached[1]
        verdict = self._decide(key, entry, ignore_active=False)
        self._cache[key] = (entry, verdict)
        return verdict

    def _decide(self, key: str, entry: Any, *, ignore_active: bool) -> bool:
        if _is_locked(entry):
            return True
        form = preserve_key_form(key)
        if form in self.keys and not (ignore_active and form == self.active):
            return True
        if self.session_ids:
            sid = _field(entry, "sessionId")
            if isinstance(sid, str) and sid in self.session_ids:
                return True
        return _preserved_by_shape(key, form, entry)

    __call__ = is_preserved

    def preserved_among(self, entries: Mapping[str, Any]) -> frozenset[str]:
        """The preserved keys of `entries` in one pass (a planning run asks about the same rows in
        every stage; its stages then test set membership). Remembered for `entries`: later
        `is_preserved` calls about the same (key, entry object) are answered from it."""
        among = self._among
        if among is not None and among[0] is entries:
            return among[1]
        keys, decide, by_sid = self.keys, self._decide, bool(self.session_ids)
        group_form = _EXTERNAL_GROUP_FORM.fullmatch
        out = []
        for key, entry in entries.items():
            if type(entry) is dict and type(key) is str and not by_sid:
                form = key.strip().lower()
                if form not in keys and entry.get("modelSelectionLocked") is not True:
                    # no explicit reason: the key's shape and chat metadata decide (`_preserved_by_shape`)
                    if (
                        ":thread:" not in form
                        and ":topic:" not in form
                        and ":group:" not in form
                        and ":channel:" not in form
                        and not form.endswith("main")
                        and form != "global"
                        and entry.get("chatType") == "direct"
                    ):
                        continue  # the common row: no rule can apply
                    if (match := group_form(form)) is not None:
                        # `agent:<id>:<channel>:group|channel:<id>`: an external group unless synthetic
                        if match[1] not in _SYNTHETIC_HEADS and match[2] != "heartbeat":
                            out.append(key)
                        continue
            if decide(key, entry, ignore_active=False):
                out.append(key)
        verdicts = frozenset(out)
        self._among = (entries, verdicts)
        return verdicts


_ABSENT = object()
# `agent:<id>:<channel>:group|channel:<peer>` (trimmed, lower-cased): `is_synthetic_key` holds iff
# <channel> is a synthetic prefix or <peer> is `heartbeat`; otherwise the external-group rule matches.
_EXTERNAL_GROUP_FORM = lazy_pattern(
    globals(), "_EXTERNAL_GROUP_FORM", r"agent:[^:\s]+:([^:\s]+):(?:group|channel):([^:\s]+)"
)
_SYNTHETIC_HEADS = frozenset(prefix.rstrip(":") for prefix in SYNTHETIC_PREFIXES)


def _preserved_by_shape(key: Any, form: str, entry: Any) -> bool:
    """`is_durable_external_pointer(key, entry) or is_primary_key(key)`, answering the common row
    (no thread/topic/group/channel marker, not a main or global key, a direct chat) without
    parsing the key: each rule needs one of those markers in the trimmed, lower-cased key."""
    if (
        ":thread:" not in form
        and ":topic:" not in form
        and ":group:" not in form
        and ":channel:" not in form
        and not form.endswith("main")
        and form != "global"
        and not _durable_chat(entry)
    ):
        return False
    return is_durable_external_pointer(key, entry) or is_primary_key(key)


def _durable_chat(entry: Any) -> bool:
    if type(entry) is dict:
        chat = entry.get("chatType")
        if chat == "direct" or (chat is None and entry.get("origin") is None):
            return False
    return has_durable_chat_type(entry)


# ---- the plan -----------------------------------------------------------------------------------


class ActiveKeyWarning(FrozenRecord):
    """Warn-mode runtime notice (§5.6): the active session would be pruned or capped."""

    __slots__ = _fields = ("key", "would_prune", "would_cap", "prune_after_ms", "max_entries")
    key: str
    would_prune: bool
    would_cap: bool
    prune_after_ms: int | None
    max_entries: int | None

    def __init__(
        self,
        key: str,
        would_prune: bool,
        would_cap: bool,
        prune_after_ms: int | None,
        max_entries: int | None,
    ) -> None:
        self._assign(key, would_prune, would_cap, prune_after_ms, max_entries)


class CleanupPlan(Record):
    """What maintenance removes, per key, and the counters OpenClaw reports.

    `actions` maps every key of the input store (store order) to its action; removed keys are
    listed in `removed` in pipeline order. `unreferenced_session_ids` are the session ids of
    removed entries that no remaining entry references: their transcripts are to be archived
    (`deleted`) and removed (§8.1). `budget_file_removals` are the files the legacy disk budget
    removes (in order; `needs_archive` ones go through a verified archive first).
    """

    # (shown and compared: every field but `unreferenced_from` and `preserved_from`)
    _fields = (
        "mode",
        "forced",
        "prune_after_ms",
        "max_entries",
        "before_count",
        "actions",
        "removed",
        "missing",
        "dm_scope_retired",
        "model_run_pruned",
        "pruned",
        "capped",
        "cron_pruned",
        "cron_retention_ran",
        "disk_budget",
        "budget_file_removals",
        "would_enforce",
        "active_warning",
        "behavior",
        "archived",
        "archived_count",
        "cap_archived",
        "now_ms",
        "budget_reclaimable",
    )
    mode: str
    forced: bool
    prune_after_ms: int
    max_entries: int | None
    before_count: int
    actions: dict[str, str]
    removed: list[str]
    missing: int
    dm_scope_retired: int
    model_run_pruned: int
    pruned: int
    capped: int
    cron_pruned: int
    cron_retention_ran: bool  # cron retention was enabled and the store had cron run keys
    disk_budget: DiskBudgetResult | None
    budget_file_removals: list[FileRemoval]
    # `unreferenced_session_ids` as (the removed rows' entries, the remaining rows' entries, the
    # rule) until first asked for (a database store's cleanup reads them; `storage` never does:
    # 100,000 rows' ids at issue 27's scale)
    unreferenced_from: tuple[list[Any], list[Any], SessionIdsFn] | list[str]
    # the §4 preserved keys of the planned entries: (preserver, entries) until first asked for
    # (`preserved_keys`: collection and status read them, cleanup and `storage` never do)
    preserved_from: tuple[Preserver, Mapping[str, Any]] | frozenset[str]
    would_enforce: CleanupPlan | None
    active_warning: ActiveKeyWarning | None
    behavior: Behavior  # the release whose rules made this plan
    # releases that archive in place: key -> archiveReason of the rows archived (they stay in the
    # store with `archivedAt = now_ms`), and OpenClaw's counters for them
    archived: dict[str, str]
    archived_count: int  # dashboard + age archives (the JSON's `archived`)
    cap_archived: int
    now_ms: float
    # 2026.9.6+ preview of an enforce run over the budget: its reclamation tiers have candidates
    budget_reclaimable: bool

    def __init__(
        self,
        mode: str,
        forced: bool,
        prune_after_ms: int,
        max_entries: int | None,
        before_count: int,
        actions: dict[str, str],
        removed: list[str] | None = None,
        missing: int = 0,
        dm_scope_retired: int = 0,
        model_run_pruned: int = 0,
        pruned: int = 0,
        capped: int = 0,
        cron_pruned: int = 0,
        cron_retention_ran: bool = False,
        disk_budget: DiskBudgetResult | None = None,
        budget_file_removals: list[FileRemoval] | None = None,
        unreferenced_from: tuple[list[Any], list[Any], SessionIdsFn] | list[str] | None = None,
        preserved_from: tuple[Preserver, Mapping[str, Any]] | frozenset[str] = frozenset(),
        would_enforce: CleanupPlan | None = None,
        active_warning: ActiveKeyWarning | None = None,
        behavior: Behavior = BEHAVIOR_2026_7,
        archived: dict[str, str] | None = None,
        archived_count: int = 0,
        cap_archived: int = 0,
        now_ms: float = 0,
        budget_reclaimable: bool = False,
    ) -> None:
        self.mode = mode
        self.forced = forced
        self.prune_after_ms = prune_after_ms
        self.max_entries = max_entries
        self.before_count = before_count
        self.actions = actions
        self.removed = [] if removed is None else removed
        self.missing = missing
        self.dm_scope_retired = dm_scope_retired
        self.model_run_pruned = model_run_pruned
        self.pruned = pruned
        self.capped = capped
        self.cron_pruned = cron_pruned
        self.cron_retention_ran = cron_retention_ran
        self.disk_budget = disk_budget
        self.budget_file_removals = [] if budget_file_removals is None else budget_file_removals
        self.unreferenced_from = [] if unreferenced_from is None else unreferenced_from
        self.preserved_from = preserved_from
        self.would_enforce = would_enforce
        self.active_warning = active_warning
        self.behavior = behavior
        self.archived = {} if archived is None else archived
        self.archived_count = archived_count
        self.cap_archived = cap_archived
        self.now_ms = now_ms
        self.budget_reclaimable = budget_reclaimable

    @property
    def preserved_keys(self) -> frozenset[str]:
        """The keys of the planned entries no automatic stage may remove (`Preserver`), worked out
        once, when first asked (100,000 rows: a pass most callers never need)."""
        held = self.preserved_from
        if not isinstance(held, frozenset):
            held = self.preserved_from = held[0].preserved_among(held[1])
        return held

    @property
    def unreferenced_session_ids(self) -> list[str]:
        """The session ids of the removed entries no remaining entry references, in removal order,
        once each: worked out when first asked (the list is the plan's from then on)."""
        held = self.unreferenced_from
        if not isinstance(held, list):
            held = self.unreferenced_from = _unreferenced_ids(*held)
        return held

    @property
    def after_count(self) -> int:
        return self.before_count - len(self.removed)

    @property
    def evicted(self) -> int:
        return self.disk_budget.removed_entries if self.disk_budget else 0

    @property
    def remaining_keys(self) -> list[str]:
        return [k for k, a in self.actions.items() if a == ACTION_KEEP]

    def keys_with(self, action: str) -> list[str]:
        return [k for k in self.removed if self.actions[k] == action]

    @property
    def would_mutate(self) -> bool:
        budget = self.disk_budget
        return (
            bool(self.removed)
            or bool(self.archived)
            or bool(budget and (budget.removed_entries or budget.removed_files))
            or bool(budget and budget.total_bytes_after < budget.total_bytes_before)
            or self.budget_reclaimable
        )


class _Run:
    """Mutable working state of one planning run (a copy of the store, never the input)."""

    def __init__(self, entries: Mapping[str, Any]):
        self.store: dict[str, Any] = dict(entries)
        self.actions: dict[str, str] = dict.fromkeys(self.store, ACTION_KEEP)  # (store order)
        self.removed: list[str] = []

    def remove(self, key: str, action: str) -> None:
        del self.store[key]
        self.actions[key] = action
        self.removed.append(key)

    def remove_all(self, keys: list[str], action: str) -> int:
        store, actions = self.store, self.actions
        for key in keys:
            del store[key]
            actions[key] = action
        self.removed.extend(keys)
        return len(keys)


def updated_map(entries: Mapping[str, Any]) -> dict[str, float | None]:
    """`updated_at` of every row, read once per planning run."""
    return {k: updated_at(e) for k, e in entries.items()}


def _model_run_victims(
    store: Mapping[str, Any],
    protected: Collection[str],
    updated: Mapping[str, float | None],
    retention_ms: Any,
    now_ms: float,
) -> list[str]:
    retention = _positive_int(retention_ms)
    if retention is None:
        return []
    cutoff = now_ms - retention
    return [
        k
        for k in store  # (most keys are too short to be a probe key: checked first)
        if len(k) >= PROBE_KEY_MIN_LEN
        and (u := updated[k]) is not None
        and u < cutoff
        and k not in protected
        and is_model_run_probe_key(k)
    ]


def _stale_victims(
    store: Mapping[str, Any],
    protected: Collection[str],
    updated: Mapping[str, float | None],
    prune_after_ms: Any,
    now_ms: float,
) -> list[str]:
    after = _positive_int(prune_after_ms)
    if after is None:  # [R] pruneAfter <= 0 (or unset) never age-prunes
        return []
    cutoff = now_ms - after
    return [k for k in store if (u := updated[k]) is not None and u < cutoff and k not in protected]


def _newest_first(u: float | None) -> float:
    return -u if u is not None else math.inf  # missing updatedAt ranks oldest


def _cap_victims(
    store: Mapping[str, Any],
    protected: Collection[str],
    updated: Mapping[str, float | None],
    max_entries: Any,
) -> list[str]:
    cap = _positive_int(max_entries)
    if cap is None:
        return []
    candidates = [k for k in store if k not in protected]
    budget = cap_budget(cap, len(store) - len(candidates))
    if len(candidates) <= budget:
        return []
    # `sorted` is stable, so store order breaks ties.
    ranked = sorted(candidates, key=lambda k: _newest_first(updated[k]))
    victims = set(ranked[budget:])
    return [k for k in store if k in victims]


def _missing_victims(
    store: Mapping[str, Any], preserver: Preserver, missing_transcript: MissingTranscriptFn
) -> list[str]:
    """§10.4 `--fix-missing`. Only a model-selection lock, or an archived *and* preserved row,
    shields an entry (external-pointer protection does not apply to this repair)."""
    out: list[str] = []
    for key, entry in store.items():
        if _is_locked(entry) or (_is_archived(entry) and preserver(key, entry)):
            continue
        scoped = parse_agent_key(key) is not None
        entry_map = entry if isinstance(entry, Mapping) else {}
        sid = entry_map.get("sessionId")
        if scoped and entry_map.get("initializationPending") is True:
            continue
        if scoped and sid == key and not entry_map.get("sessionFile"):
            continue  # pre-first-turn shape
        if not isinstance(sid, str) or not sid.strip():
            if not scoped:
                out.append(key)
            continue
        if missing_transcript(key, entry_map):
            out.append(key)
    return out


def _memoized(fn: MissingTranscriptFn) -> MissingTranscriptFn:
    """Ask the (I/O-backed) transcript check once per key, also across the warn-mode re-plan."""
    if getattr(fn, "_memoized", False):
        return fn
    cache: dict[str, bool] = {}

    def check(key: str, entry: Mapping[str, Any]) -> bool:
        if key not in cache:
            cache[key] = bool(fn(key, entry))
        return cache[key]

    check._memoized = True  # type: ignore[attr-defined]
    return check


def _dm_scope_victims(store: Mapping[str, Any], agent_id: str | None, active: str | None) -> list[str]:
    """§10.5 `--fix-dm-scope`: non-archived peer-keyed direct rows of the target agent, except the
    active key."""
    return [
        k
        for k, e in store.items()
        if not _is_archived(e)
        and preserve_key_form(k) != active
        and is_dm_scope_retire_candidate(k, agent_id)
    ]


def _plan_budget(
    store: dict[str, Any],
    settings: MaintenanceSettingsLike,
    preserver: Preserver,
    measure: BudgetMeasure | None,
    now_ms: float,
    warn_only: bool,
) -> BudgetPlan:
    if measure is None:
        return BudgetPlan(None)
    if isinstance(measure, PhysicalMeasure):
        return plan_physical_budget(
            measure, max_bytes=settings.max_disk_bytes, high_water_bytes=settings.high_water_bytes
        )
    if isinstance(measure, LegacyDirMeasure):
        return plan_legacy_budget(
            store,
            measure,
            max_bytes=settings.max_disk_bytes,
            high_water_bytes=settings.high_water_bytes,
            now_ms=now_ms,
            is_protected=preserver,
            warn_only=warn_only,
        )
    return plan_sqlite_budget(
        store,
        measure,
        max_bytes=settings.max_disk_bytes,
        high_water_bytes=settings.high_water_bytes,
        is_protected=preserver,
        warn_only=warn_only,
    )


def _resolve_measure(
    session_bytes: Mapping[str, int] | None,
    budget_measure: BudgetMeasure | BudgetMeasureFn | None,
    run: _Run | None = None,
) -> BudgetMeasure | None:
    if budget_measure is not None:
        if callable(budget_measure):
            return budget_measure(run.store if run is not None else {}, list(run.removed) if run else [])
        return budget_measure
    return SqliteMeasure(session_bytes) if session_bytes is not None else None


def _finish(
    run: _Run,
    entries: Mapping[str, Any],
    plan: CleanupPlan,
    budget: BudgetPlan,
    preserver: Preserver,
    session_ids_of: SessionIdsFn,
) -> CleanupPlan:
    run.remove_all(budget.evicted_keys, ACTION_EVICT_BUDGET)
    plan.actions = run.actions
    plan.removed = run.removed
    plan.disk_budget = budget.result
    plan.budget_file_removals = budget.file_removals
    plan.preserved_from = (preserver, entries)
    if run.removed:  # (the entries as they are now: `unreferenced_session_ids` reads them when asked)
        plan.unreferenced_from = (
            [entries[key] for key in run.removed],
            list(run.store.values()),
            session_ids_of,
        )
    return plan


def _unreferenced_ids(removed: list[Any], remaining: list[Any], session_ids_of: SessionIdsFn) -> list[str]:
    """The session ids of the `removed` entries that none of the `remaining` ones references, in
    order, once each."""
    removed_ids = _all_session_ids(removed, session_ids_of)
    if not removed_ids:
        return []
    leaving = set(removed_ids)  # the ids still referenced among those only (not a set of every row's id)
    still = {sid for sid in _all_session_ids(remaining, session_ids_of) if sid in leaving}
    return list(dict.fromkeys(sid for sid in removed_ids if sid not in still))


def _all_session_ids(values: list[Any], session_ids_of: SessionIdsFn) -> list[str]:
    """`session_ids_of` of every entry, in order; the default rule inlined when every row is a
    plain dict (the usual store)."""
    if session_ids_of is not entry_session_ids or not all(type(e) is dict for e in values):
        return [sid for e in values for sid in session_ids_of(e)]
    return [sid for sid in [e.get("sessionId") for e in values] if isinstance(sid, str) and sid.strip()]


def _effective_mode(settings: MaintenanceSettingsLike, mode_override: str | None) -> str:
    return mode_override or getattr(settings, "mode", None) or "enforce"


def plan_cleanup(
    entries: Mapping[str, Any],
    settings: MaintenanceSettingsLike,
    *,
    now_ms: float,
    preserve_keys: Iterable[str] = (),
    preserve_session_ids: Iterable[str] = (),
    active_key: str | None = None,
    agent_id: str | None = None,
    fix_missing: bool = False,
    fix_dm_scope: bool = False,
    dm_scope: str | None = "main",
    missing_transcript: MissingTranscriptFn | None = None,
    session_bytes: Mapping[str, int] | None = None,
    budget_measure: BudgetMeasure | BudgetMeasureFn | None = None,
    mode_override: str | None = None,
    session_ids_of: SessionIdsFn = entry_session_ids,
    cron_retention_ms: int | None = None,
    behavior: Behavior = BEHAVIOR_2026_7,
    key_shapes: dict[str, int] | None = None,
) -> CleanupPlan:
    """Plan `openclaw sessions cleanup` for one store; the dry run and the apply use this same plan.
    `behavior` is the release whose rules apply (spec D23; `ops.behavior.behavior_for`); its
    defaults are already in `settings` (`config.maintenance_settings(cfg, behavior)`).

    Pipeline (§10.7, followed by both dry run and apply):
    1. explicit repairs: `--fix-missing` (§10.4, needs `missing_transcript(key, entry)` -> True when
       the transcript has no message records), then `--fix-dm-scope` (§10.5, only when
       `dm_scope == "main"`; `agent_id` scopes it to the target agent). A key matching both counts
       as `prune-missing` (its first stage); the action sets are therefore disjoint;
    2. forced maintenance (§5.5): model-run probes older than 24 h iff count > maxEntries, then
       (when `cron_retention_ms` is given: `cron.sessionRetention`, §9.1) cron *run* rows older
       than the retention, then stale entries, then the cap straight to maxEntries (no
       high-water slack). Expired cron runs go before the cap so they never take a slot from a
       live session;
    3. the disk budget (§6) on what is left: SQLite logical bytes (`session_bytes`, or a
       `SqliteMeasure`) or a legacy directory snapshot (`LegacyDirMeasure`), or a callable that
       builds the measure from the entries left when the stage starts. Without either the
       budget is not measured and `disk_budget` is None, like a disabled budget.
    (The unreferenced-artifact and archive-retention sweeps between 2 and 3 touch files only; they
    are the applier's, not the planner's.)

    Warn mode (`settings.mode == "warn"` and no `mode_override="enforce"`) — decision: following
    §10.7 and §5.6, automatic removals are *reported, not planned*. The plan removes nothing in
    stages 2–3, its counters (`modelRunPruned`, `pruned`, `capped`) are 0 and `afterCount` counts
    only the explicit repairs, which apply in every mode (Q6) because the operator asked for them
    by flag. The disk budget is report-only (`overBudget` true when over, nothing removed). What
    `--enforce` would remove is in `would_enforce` (the same plan computed in enforce mode), for
    the text report's hint; the JSON keeps OpenClaw's shape. This makes dry run == apply in every
    mode, and a warn-mode dry run shows what a warn-mode apply really does.

    `key_shapes`: `archiving.key_shape` of the keys, already known to the caller (`openclaw
    storage` keeps them with the rows' facts); the archive-in-place stages add the ones missing.
    """
    preserve_keys, preserve_session_ids = tuple(preserve_keys), tuple(preserve_session_ids)  # reused below
    mode = _effective_mode(settings, mode_override)
    enforce = mode == "enforce"
    preserver = Preserver(entries, preserve_keys, active_key, preserve_session_ids)
    run = _Run(entries)
    plan = CleanupPlan(
        mode=mode,
        forced=True,
        prune_after_ms=max(0, _positive_int(settings.prune_after_ms) or 0),
        max_entries=_positive_int(settings.max_entries),
        before_count=len(entries),
        actions={},
        behavior=behavior,
    )
    if fix_missing:
        if missing_transcript is None:
            raise ValueError("fix_missing needs a missing_transcript callable")
        missing_transcript = _memoized(missing_transcript)
        plan.missing = run.remove_all(
            _missing_victims(run.store, preserver, missing_transcript), ACTION_PRUNE_MISSING
        )
    if fix_dm_scope and (dm_scope or "main") == "main":
        plan.dm_scope_retired = run.remove_all(
            _dm_scope_victims(run.store, agent_id, preserver.active), ACTION_RETIRE_DM_SCOPE
        )
    plan.now_ms = now_ms
    if enforce and behavior.maintenance.archive_in_place:
        _archive_in_place(run, plan, settings, preserver, now_ms, key_shapes)
    elif enforce:
        # the verdicts and timestamps every stage reads, computed once (the entry objects of
        # `run.store` are those of `entries`)
        protected, updated = preserver.preserved_among(entries), updated_map(entries)
        if should_run_model_run_prune(len(run.store), settings.max_entries, force=True):
            plan.model_run_pruned = run.remove_all(
                _model_run_victims(run.store, protected, updated, settings.model_run_prune_after_ms, now_ms),
                ACTION_PRUNE_MODEL_RUN,
            )
        if _positive_int(cron_retention_ms) is not None and any(is_cron_run_key(k) for k in run.store):
            plan.cron_retention_ran = True
            cron = plan_cron_retention(
                run.store,
                cron_retention_ms,
                now_ms,
                preserver.keys,
                agent_id=agent_id,
                preserve_session_ids=preserver.session_ids,
                session_ids_of=session_ids_of,
            )
            plan.cron_pruned = run.remove_all(cron.removed, ACTION_PRUNE_CRON)
        plan.pruned = run.remove_all(
            _stale_victims(run.store, protected, updated, settings.prune_after_ms, now_ms), ACTION_PRUNE_STALE
        )
        plan.capped = run.remove_all(
            _cap_victims(run.store, protected, updated, settings.max_entries), ACTION_CAP_OVERFLOW
        )
    measure = _resolve_measure(session_bytes, budget_measure, run)
    budget = _plan_budget(run.store, settings, preserver, measure, now_ms, warn_only=not enforce)
    plan = _finish(run, entries, plan, budget, preserver, session_ids_of)
    for key, reason in plan.archived.items():
        plan.actions[key] = ARCHIVE_ACTIONS[reason]
    if not enforce:
        plan.would_enforce = plan_cleanup(
            entries,
            settings,
            now_ms=now_ms,
            preserve_keys=preserve_keys,
            preserve_session_ids=preserve_session_ids,
            active_key=active_key,
            agent_id=agent_id,
            fix_missing=fix_missing,
            fix_dm_scope=fix_dm_scope,
            dm_scope=dm_scope,
            missing_transcript=missing_transcript,
            session_bytes=session_bytes,
            budget_measure=budget_measure,
            mode_override="enforce",
            session_ids_of=session_ids_of,
            cron_retention_ms=cron_retention_ms,
            behavior=behavior,
            key_shapes=key_shapes,
        )
    return plan


def _archive_in_place(
    run: _Run,
    plan: CleanupPlan,
    settings: MaintenanceSettingsLike,
    preserver: Preserver,
    now_ms: float,
    key_shapes: dict[str, int] | None = None,
) -> None:
    """The entry stages of the releases that archive in place (`maintenance/archiving.py`)."""
    guard = Guard(
        preserve_keys=preserver.keys,
        preserve_session_ids=preserver.session_ids,
        preserve_recent_ms=getattr(settings, "preserve_recent_ms", None),
        now_ms=now_ms,
        shapes=key_shapes if key_shapes is not None else {},
    )
    result = plan_archiving(
        run.store,
        guard=guard,
        prune_after_ms=settings.prune_after_ms,
        max_entries=settings.max_entries,
        dashboard_after_ms=getattr(settings, "archive_dashboard_after_ms", None),
        model_run_after_ms=settings.model_run_prune_after_ms,
    )
    for key, action in result.deleted:
        run.remove(key, action)
    plan.archived = dict(result.archived)
    plan.model_run_pruned, plan.pruned, plan.capped = result.model_run_pruned, result.pruned, result.capped
    plan.archived_count, plan.cap_archived = result.archived_count, result.cap_archived


def plan_runtime_maintenance(
    entries: Mapping[str, Any],
    settings: MaintenanceSettingsLike,
    *,
    now_ms: float,
    active_key: str | None = None,
    preserve_keys: Iterable[str] = (),
    preserve_session_ids: Iterable[str] = (),
    force: bool = False,
    session_bytes: Mapping[str, int] | None = None,
    budget_measure: BudgetMeasure | None = None,
    mode_override: str | None = None,
    session_ids_of: SessionIdsFn = entry_session_ids,
) -> CleanupPlan:
    """The maintenance pass of a store write (§5.5), batched by the high-water trigger (§5.1).

    Enforce: model-run prune under pressure (count >= highWater; forced: count > maxEntries),
    stale prune on every write, cap to maxEntries once count >= highWater (or forced), then the
    disk budget. Counts are taken before the pass, as OpenClaw does. A `mode_override` forces the
    pass like OpenClaw's maintenance override. Warn: nothing is removed; `active_warning` says
    whether the active key would be pruned or capped (§5.6: evaluated as if the active key were
    not preserved), and the disk budget is report-only.
    """
    force = force or mode_override is not None
    mode = _effective_mode(settings, mode_override)
    preserver = Preserver(entries, preserve_keys, active_key, preserve_session_ids)
    run = _Run(entries)
    count = len(entries)
    pressure = should_run_entry_maintenance(count, settings.max_entries, force)
    plan = CleanupPlan(
        mode=mode,
        forced=force,
        prune_after_ms=max(0, _positive_int(settings.prune_after_ms) or 0),
        max_entries=_positive_int(settings.max_entries),
        before_count=count,
        actions={},
    )
    enforce = mode == "enforce"
    if enforce:
        protected, updated = preserver.preserved_among(entries), updated_map(entries)
        if should_run_model_run_prune(count, settings.max_entries, force):
            plan.model_run_pruned = run.remove_all(
                _model_run_victims(run.store, protected, updated, settings.model_run_prune_after_ms, now_ms),
                ACTION_PRUNE_MODEL_RUN,
            )
        plan.pruned = run.remove_all(
            _stale_victims(run.store, protected, updated, settings.prune_after_ms, now_ms), ACTION_PRUNE_STALE
        )
        if pressure:
            plan.capped = run.remove_all(
                _cap_victims(run.store, protected, updated, settings.max_entries), ACTION_CAP_OVERFLOW
            )
    elif pressure and preserver.active:
        plan.active_warning = _active_warning(entries, settings, preserver, active_key or "", now_ms)
    measure = _resolve_measure(session_bytes, budget_measure, run)
    budget = _plan_budget(run.store, settings, preserver, measure, now_ms, warn_only=not enforce)
    return _finish(run, entries, plan, budget, preserver, session_ids_of)


def _active_warning(
    entries: Mapping[str, Any],
    settings: MaintenanceSettingsLike,
    preserver: Preserver,
    active_key: str,
    now_ms: float,
) -> ActiveKeyWarning | None:
    key = next((k for k in entries if preserve_key_form(k) == preserver.active), None)
    if key is None:
        return None
    others = frozenset(k for k, e in entries.items() if preserver.is_preserved(k, e, ignore_active=True))
    entry = entries[key]
    after = _positive_int(settings.prune_after_ms)
    u = updated_at(entry)
    would_prune = key not in others and after is not None and u is not None and u < now_ms - after
    would_cap = key in _cap_victims(entries, others, updated_map(entries), settings.max_entries)
    if not (would_prune or would_cap):
        return None
    return ActiveKeyWarning(
        active_key,
        would_prune,
        would_cap,
        _positive_int(settings.prune_after_ms),
        _positive_int(settings.max_entries),
    )


# ---- cron retention (§9.1) ----------------------------------------------------------------------


class CronRetentionPlan(Record):
    _fields = ("removed", "unreferenced_session_ids")
    removed: list[str]
    unreferenced_session_ids: list[str]

    def __init__(
        self, removed: list[str] | None = None, unreferenced_session_ids: list[str] | None = None
    ) -> None:
        self.removed = [] if removed is None else removed
        self.unreferenced_session_ids = [] if unreferenced_session_ids is None else unreferenced_session_ids


def cron_sweep_due(last_sweep_ms: float | None, now_ms: float) -> bool:
    """The reaper sweeps a store at most once per 5 minutes."""
    return last_sweep_ms is None or now_ms - last_sweep_ms >= CRON_SWEEP_INTERVAL_MS


def plan_cron_retention(
    entries: Mapping[str, Any],
    retention_ms: int | None,
    now_ms: float,
    preserve: Iterable[str] = (),
    *,
    agent_id: str | None = None,
    preserve_session_ids: Iterable[str] = (),
    session_ids_of: SessionIdsFn = entry_session_ids,
) -> CronRetentionPlan:
    """`cron.sessionRetention`: cron *run* keys (never the base job key) whose `updatedAt`
    (missing = 0) is older than the retention. Rows in `preserve` (in-use keys, continuations
    awaiting sub-agents; compared trimmed, lower-cased), rows whose session id is admitted, and
    model-selection-locked rows (§4) are kept. `retention_ms` None or <= 0 disables the reaper."""
    retention = _positive_int(retention_ms)
    plan = CronRetentionPlan()
    if retention is None:
        return plan
    keep = {preserve_key_form(k) for k in preserve if isinstance(k, str)}
    keep_sids = {s for s in preserve_session_ids if isinstance(s, str)}
    cutoff = now_ms - retention
    for key, entry in entries.items():
        if not is_cron_run_key(key):
            continue
        if agent_id is not None and (parse_agent_key(key) or ("",))[0] != preserve_key_form(agent_id):
            continue
        sid = _field(entry, "sessionId")
        if preserve_key_form(key) in keep or _is_locked(entry) or (isinstance(sid, str) and sid in keep_sids):
            continue
        if (updated_at(entry) or 0.0) < cutoff:
            plan.removed.append(key)
    removed = set(plan.removed)
    still = {sid for k, e in entries.items() if k not in removed for sid in session_ids_of(e)}
    for key in plan.removed:
        for sid in session_ids_of(entries[key]):
            if sid not in still and sid not in plan.unreferenced_session_ids:
                plan.unreferenced_session_ids.append(sid)
    return plan


# ---- archive retention (§7.4) -------------------------------------------------------------------


class ArchiveRetentionPlan(Record):
    _fields = ("scanned", "removed")
    scanned: int
    removed: list[str]

    def __init__(self, scanned: int = 0, removed: list[str] | None = None) -> None:
        self.scanned = scanned
        self.removed = [] if removed is None else removed


def plan_archive_retention(
    names: Iterable[str],
    retention_ms: int | None,
    now_ms: float,
    reasons: Iterable[str] = ("deleted", "reset"),
) -> ArchiveRetentionPlan:
    """`resetArchiveRetention`: an archive whose *name* timestamp (not its mtime) is more than
    `retention_ms` old is removed (strict `>`); the first reason that parses counts the file as
    scanned. `retention_ms` None (unset) keeps archives forever."""
    plan = ArchiveRetentionPlan()
    if retention_ms is None or isinstance(retention_ms, bool) or retention_ms < 0:
        return plan
    reasons = tuple(reasons)
    for name in names:
        for reason in reasons:
            stamp = parse_archive_timestamp(name, reason)
            if stamp is None:
                continue
            plan.scanned += 1
            if now_ms - stamp > retention_ms:
                plan.removed.append(name)
            break
    return plan
