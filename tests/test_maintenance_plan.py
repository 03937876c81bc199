"""The pure maintenance planner (maintenance.md §4, §5, §8.1, §9.1, §10.4–§10.7, §13)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace

import pytest
from conftest import NOW_MS, OPENCLAW_FIXTURE
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.maintenance.budget import DirFile, LegacyDirMeasure
from openclaw_cli.maintenance.plan import (
    ACTION_CAP_OVERFLOW,
    ACTION_EVICT_BUDGET,
    ACTION_KEEP,
    ACTION_PRUNE_MISSING,
    ACTION_PRUNE_MODEL_RUN,
    ACTION_PRUNE_STALE,
    ACTION_RETIRE_DM_SCOPE,
    CAP_FLOOR,
    Preserver,
    cron_sweep_due,
    entry_high_water,
    plan_archive_retention,
    plan_cleanup,
    plan_cron_retention,
    plan_runtime_maintenance,
    should_run_model_run_prune,
)

DAY = 86_400_000
HOUR = 3_600_000
UUID = "123e4567-e89b-12d3-a456-4266141740{:02d}"


@dataclass(frozen=True)
class Settings:
    """Stand-in for config.resolve.MaintenanceSettings (same attribute names)."""

    mode: str = "enforce"
    prune_after_ms: int | None = 30 * DAY
    max_entries: int | None = 500
    reset_archive_retention_ms: int | None = None
    max_disk_bytes: int | None = 2 * 1024**3
    high_water_bytes: int | None = 1_717_986_918
    model_run_prune_after_ms: int | None = DAY


def probe(i: int = 0) -> str:
    return f"agent:main:explicit:model-run-{UUID.format(i)}"


def row(age_ms: float | None, sid: str | None = None, **extra) -> dict:
    entry = {"sessionId": sid or f"sid-{age_ms}-{len(extra)}", **extra}
    if age_ms is not None:
        entry["updatedAt"] = NOW_MS - age_ms
    return entry


def removed(plan) -> set[str]:
    return set(plan.removed)


# ---- §5.1 / §5.2 triggers -----------------------------------------------------------------------


def test_high_water_pinned():
    assert [entry_high_water(n) for n in (2, 50, 500)] == [3, 75, 550]
    assert entry_high_water(49) == 50 and entry_high_water(1000) == 1100
    assert (
        entry_high_water(0) == entry_high_water(None) == entry_high_water(-5) == entry_high_water(True) == 1
    )


def test_model_run_prune_trigger_pinned():
    assert not should_run_model_run_prune(60, 50, force=False)
    assert should_run_model_run_prune(60, 50, force=True)
    assert not should_run_model_run_prune(50, 50, force=True)
    assert should_run_model_run_prune(75, 50, force=False)


# ---- §13 conformance items ----------------------------------------------------------------------


def test_item1_forced_probe_pruned_before_cap():
    """51 rows (1 probe 2 d old, 50 real 3 d old), cap 50, pruneAfter 7 d, forced."""
    entries = {probe(): row(2 * DAY)} | {f"agent:main:real-{i}": row(3 * DAY, f"r{i}") for i in range(50)}
    plan = plan_cleanup(entries, Settings(prune_after_ms=7 * DAY, max_entries=50), now_ms=NOW_MS)
    assert plan.model_run_pruned == 1 and plan.capped == 0 and plan.pruned == 0
    assert plan.actions[probe()] == ACTION_PRUNE_MODEL_RUN
    assert plan.after_count == 50 and all(
        plan.actions[f"agent:main:real-{i}"] == ACTION_KEEP for i in range(50)
    )


def test_item2_unforced_write_below_high_water_keeps_probes():
    entries = {probe(i): row(2 * DAY) for i in range(10)} | {f"agent:main:r{i}": row(HOUR) for i in range(50)}
    plan = plan_runtime_maintenance(entries, Settings(max_entries=50), now_ms=NOW_MS)
    assert plan.model_run_pruned == 0 and plan.capped == 0 and plan.removed == []
    # at the high water (75) the same store gets its probes pruned and is capped to 50
    more = entries | {f"agent:main:x{i}": row(HOUR) for i in range(15)}
    plan = plan_runtime_maintenance(more, Settings(max_entries=50), now_ms=NOW_MS)
    assert plan.model_run_pruned == 10 and plan.after_count == 50


def test_item3_cap_removes_oldest():
    names = ["oldest", "old", "mid", "recent", "newest"]
    entries = {f"agent:main:{n}": row((4 - i) * DAY) for i, n in enumerate(names)}
    plan = plan_cleanup(entries, Settings(max_entries=3), now_ms=NOW_MS)
    assert plan.keys_with(ACTION_CAP_OVERFLOW) == ["agent:main:oldest", "agent:main:old"]
    assert plan.capped == 2 and plan.after_count == 3


def test_item4_protected_thread_counts_toward_cap():
    entries = {"agent:main:slack:channel:C1:thread:9": row(5 * DAY)}
    entries |= {f"agent:main:r{i}": row(i * DAY) for i in range(4)}
    plan = plan_cleanup(entries, Settings(max_entries=3), now_ms=NOW_MS)
    assert plan.capped == 2
    assert plan.actions["agent:main:slack:channel:C1:thread:9"] == ACTION_KEEP
    assert removed(plan) == {"agent:main:r3", "agent:main:r2"}


def test_item5_all_preserved_store_stays_above_cap():
    entries = {"agent:main:slack:channel:C1": row(DAY), "agent:main:main": row(2 * DAY)}
    plan = plan_cleanup(entries, Settings(max_entries=1), now_ms=NOW_MS)
    assert plan.removed == [] and plan.after_count == 2


def test_item6_stale_prune():
    entries = {"agent:main:old": row(31 * DAY), "agent:main:fresh": row(DAY)}
    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS)
    assert plan.pruned == 1 and plan.keys_with(ACTION_PRUNE_STALE) == ["agent:main:old"]


def test_item7_external_pointers_never_age_pruned():
    entries = {
        "agent:main:slack:channel:C1:thread:1710000000.000100": row(31 * DAY),
        "agent:main:telegram:group:-100123:topic:77": row(31 * DAY),
        "agent:main:slack:channel:C999": row(31 * DAY),
        "agent:main:opaque-a": row(31 * DAY, chatType="group"),
        "agent:main:opaque-b": row(31 * DAY, chatType="channel"),
        "agent:main:locked": row(31 * DAY, modelSelectionLocked=True),
        "agent:main:main": row(31 * DAY),  # [R] primary
        "global": row(31 * DAY),
    }
    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS)
    assert plan.removed == [] and plan.preserved_keys == frozenset(entries)


# ---- §5.2 model-run probes ----------------------------------------------------------------------


def test_model_run_probe_rules():
    settings_ = Settings(max_entries=3, prune_after_ms=30 * DAY)
    entries = {
        probe(1): row(25 * HOUR),
        probe(2): row(0),
        probe(3): row(None),  # missing updatedAt -> kept
        probe(4): row(25 * HOUR),  # preserved below
        probe(5): row(25 * HOUR, modelSelectionLocked=True),
        "agent:main:explicit:model-run-not-a-uuid": row(10 * DAY),
        f"agent:main:explicit:model-runner-{UUID.format(6)}": row(10 * DAY),
        "agent:main:telegram:group:-1:topic:2": row(10 * DAY),
        "agent:main:cron:job:run:7": row(10 * DAY),
    }
    plan = plan_cleanup(entries, settings_, now_ms=NOW_MS, preserve_keys=[f"  {probe(4).upper()} "])
    assert plan.keys_with(ACTION_PRUNE_MODEL_RUN) == [probe(1)]
    none_retention = plan_cleanup(entries, replace(settings_, model_run_prune_after_ms=None), now_ms=NOW_MS)
    assert none_retention.model_run_pruned == 0


def test_probe_exactly_24h_old_survives():
    entries = {probe(): row(DAY)} | {f"agent:main:r{i}": row(0) for i in range(3)}
    assert plan_cleanup(entries, Settings(max_entries=2), now_ms=NOW_MS).model_run_pruned == 0


# ---- §5.3 stale pruning -------------------------------------------------------------------------


def test_stale_cutoff_is_strict_and_needs_updated_at():
    entries = {
        "agent:main:edge": row(30 * DAY),
        "agent:main:older": row(30 * DAY + 1),
        "agent:main:nots": row(None),
        "agent:main:strts": {"sessionId": "x", "updatedAt": "1"},
    }
    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS)
    assert plan.keys_with(ACTION_PRUNE_STALE) == ["agent:main:older"]


@pytest.mark.parametrize("prune_after", [0, -1, None])
def test_non_positive_prune_after_never_age_prunes(prune_after):
    entries = {"agent:main:ancient": row(3650 * DAY), "agent:main:now": row(0)}
    plan = plan_cleanup(entries, Settings(prune_after_ms=prune_after), now_ms=NOW_MS)
    assert plan.removed == [] and plan.prune_after_ms == 0


# ---- §5.4 cap pinned ----------------------------------------------------------------------------


def test_cap_locked_entry_counts():
    entries = {
        "agent:main:locked": row(10 * DAY, modelSelectionLocked=True),
        "agent:main:recent": row(0),
        "agent:main:old": row(DAY),
    }
    plan = plan_cleanup(entries, Settings(max_entries=2), now_ms=NOW_MS)
    assert plan.keys_with(ACTION_CAP_OVERFLOW) == ["agent:main:old"]


def test_cap_preserved_subagent_child_normalised_preserve_key():
    entries = {
        "agent:main:subagent:child": row(10 * DAY),
        "agent:main:recent-1": row(0),
        "agent:main:recent-2": row(DAY),
        "agent:main:old": row(2 * DAY),
    }
    plan = plan_cleanup(
        entries, Settings(max_entries=2), now_ms=NOW_MS, preserve_keys=["  Agent:Main:Subagent:CHILD  "]
    )
    assert plan.capped == 2 and plan.remaining_keys == ["agent:main:subagent:child", "agent:main:recent-1"]


def test_cap_every_candidate_preserved():
    entries = {"agent:main:a": row(0), "agent:main:b": row(1)}
    plan = plan_cleanup(
        entries, Settings(max_entries=1), now_ms=NOW_MS, preserve_keys=["agent:main:a", "agent:main:b"]
    )
    assert plan.capped == 0


def test_cap_floor_keeps_newest_removable_rows():
    """[R] when preserved rows fill maxEntries, min(maxEntries, 25) newest removable rows survive."""
    preserved = {f"agent:main:slack:channel:C{i}": row(0) for i in range(3)}
    removable = {f"agent:main:r{i:02d}": row(i * HOUR) for i in range(40)}
    plan = plan_cleanup(preserved | removable, Settings(max_entries=3), now_ms=NOW_MS)
    assert plan.capped == 37 and plan.remaining_keys[3:] == [
        "agent:main:r00",
        "agent:main:r01",
        "agent:main:r02",
    ]
    big = plan_cleanup(preserved | removable, Settings(max_entries=2), now_ms=NOW_MS)
    assert big.after_count == 3 + 2
    wide = {f"agent:main:slack:channel:C{i}": row(0) for i in range(100)} | removable
    assert plan_cleanup(wide, Settings(max_entries=60), now_ms=NOW_MS).after_count == 100 + CAP_FLOOR


def test_cap_missing_updated_at_goes_first_and_ties_keep_store_order():
    entries = {
        "agent:main:a": row(0),
        "agent:main:nots": row(None),
        "agent:main:b": row(0),
        "agent:main:c": row(0),
    }
    plan = plan_cleanup(entries, Settings(max_entries=2), now_ms=NOW_MS)
    assert plan.keys_with(ACTION_CAP_OVERFLOW) == ["agent:main:nots", "agent:main:c"]


# ---- §4 preserve rules --------------------------------------------------------------------------


def test_admissions_and_writer_preserved():
    entries = {
        "agent:main:cron:job:run:active": row(40 * DAY),
        "writer": row(40 * DAY),
        "removable": row(40 * DAY),
    }
    plan = plan_cleanup(
        entries,
        Settings(max_entries=1),
        now_ms=NOW_MS,
        active_key="writer",
        preserve_keys=["agent:main:cron:job:run:active"],
    )
    assert plan.removed == ["removable"]


def test_store_aliases_of_admitted_session_id_preserved():
    entries = {
        "agent:main:a": row(40 * DAY, "shared"),
        "Agent:Main:Subagent:CHILD": row(40 * DAY, "c"),
        "agent:main:b": row(40 * DAY, "shared"),
        "agent:main:other": row(40 * DAY, "o"),
    }
    plan = plan_cleanup(
        entries,
        Settings(),
        now_ms=NOW_MS,
        preserve_session_ids=["shared"],
        preserve_keys=["agent:main:subagent:child"],
    )
    assert plan.removed == ["agent:main:other"]


def test_active_key_parent_chain_preserved():
    entries = {
        "agent:main:root": row(40 * DAY),
        "agent:main:mid": row(40 * DAY, parentSessionKey="agent:main:root"),
        "agent:main:leaf": row(40 * DAY, parentSessionKey="Agent:Main:MID"),
        "agent:main:x": row(40 * DAY),
        "agent:main:loop": row(40 * DAY, parentSessionKey="agent:main:loop"),
    }
    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS, active_key="agent:main:leaf")
    assert plan.removed == ["agent:main:x", "agent:main:loop"]


# ---- §5.5 pinned pipelines, §8.1 unreferenced session ids ----------------------------------------


def test_runtime_shared_session_not_released():
    entries = {
        "stale": row(30 * DAY, "stale-session"),
        "stale-shared": row(30 * DAY, "shared-session"),
        "fresh-shared": row(0, "shared-session"),
        "active": row(30 * DAY, "active-session"),
    }
    plan = plan_runtime_maintenance(
        entries, Settings(prune_after_ms=7 * DAY), now_ms=NOW_MS, active_key="active"
    )
    assert plan.removed == ["stale", "stale-shared"]
    assert plan.unreferenced_session_ids == ["stale-session"]
    assert plan.capped == 0 and plan.model_run_pruned == 0


def test_runtime_cap_is_batched_by_high_water():
    base = {f"agent:main:r{i:03d}": row(i * 1000) for i in range(74)}
    assert plan_runtime_maintenance(base, Settings(max_entries=50), now_ms=NOW_MS).capped == 0
    at_high_water = base | {"agent:main:one-more": row(0)}
    plan = plan_runtime_maintenance(at_high_water, Settings(max_entries=50), now_ms=NOW_MS)
    assert plan.capped == 25 and plan.after_count == 50


def test_runtime_forced_by_override():
    base = {f"agent:main:r{i}": row(i * 1000) for i in range(10)}
    assert plan_runtime_maintenance(base, Settings(max_entries=5), now_ms=NOW_MS, force=True).after_count == 5
    forced = plan_runtime_maintenance(
        base, Settings(mode="warn", max_entries=5), now_ms=NOW_MS, mode_override="enforce"
    )
    assert forced.forced and forced.after_count == 5


# ---- §5.6 warn mode -----------------------------------------------------------------------------


def test_runtime_warn_mode_active_key_warnings_pinned():
    entries = {"newest": row(0), "recent": row(1), "active": row(2), "old": row(3)}
    plan = plan_runtime_maintenance(
        entries, Settings(mode="warn", max_entries=2), now_ms=NOW_MS, active_key="active"
    )
    assert plan.removed == []
    warning = plan.active_warning
    assert warning.would_cap is True and warning.would_prune is False and warning.max_entries == 2
    ties = {"same-before": row(0), "active": row(0), "same-after": row(0)}
    plan = plan_runtime_maintenance(
        ties, Settings(mode="warn", max_entries=1), now_ms=NOW_MS, active_key="active"
    )
    assert plan.active_warning.would_cap is True
    fine = plan_runtime_maintenance(
        {"active": row(0), "old": row(1)},
        Settings(mode="warn", max_entries=1),
        now_ms=NOW_MS,
        active_key="active",
    )
    assert fine.active_warning is None and fine.removed == []


def test_runtime_warn_would_prune():
    entries = {"active": row(40 * DAY), "b": row(0), "c": row(0)}
    plan = plan_runtime_maintenance(
        entries, Settings(mode="warn", max_entries=2), now_ms=NOW_MS, active_key="active"
    )
    assert plan.active_warning.would_prune and plan.removed == []


def test_cleanup_warn_mode_reports_but_does_not_plan_automatic_removals():
    entries = {probe(): row(2 * DAY), "agent:main:old": row(40 * DAY), "agent:main:direct:peer": row(0)}
    entries |= {f"agent:main:r{i}": row(i) for i in range(5)}
    warn = plan_cleanup(
        entries,
        Settings(mode="warn", max_entries=3),
        now_ms=NOW_MS,
        fix_dm_scope=True,
        agent_id="main",
        session_bytes={},
    )
    assert warn.mode == "warn"
    assert warn.removed == ["agent:main:direct:peer"]  # explicit repairs apply in every mode (Q6)
    assert (warn.model_run_pruned, warn.pruned, warn.capped) == (0, 0, 0)
    assert warn.after_count == len(entries) - 1
    enforce = warn.would_enforce
    assert (
        enforce.mode == "enforce"
        and enforce.model_run_pruned == 1
        and enforce.pruned == 1
        and enforce.capped == 2
    )
    forced = plan_cleanup(
        entries,
        Settings(mode="warn", max_entries=3),
        now_ms=NOW_MS,
        fix_dm_scope=True,
        agent_id="main",
        mode_override="enforce",
    )
    assert forced.removed == enforce.removed and forced.would_enforce is None


def test_warn_mode_disk_budget_is_report_only():
    entries = {f"agent:main:r{i}": row(i, f"s{i}") for i in range(4)}
    sizes = {f"s{i}": 1000 for i in range(4)}
    small = Settings(mode="warn", max_disk_bytes=2000, high_water_bytes=1100)  # + ~50 B of entry JSON each
    warn = plan_cleanup(entries, small, now_ms=NOW_MS, session_bytes=sizes)
    assert warn.removed == [] and warn.disk_budget.over_budget and warn.disk_budget.removed_entries == 0
    assert warn.would_mutate is False
    enforce = plan_cleanup(entries, replace(small, mode="enforce"), now_ms=NOW_MS, session_bytes=sizes)
    assert enforce.keys_with(ACTION_EVICT_BUDGET) == ["agent:main:r3", "agent:main:r2", "agent:main:r1"]
    assert enforce.unreferenced_session_ids == ["s3", "s2", "s1"]
    assert enforce.disk_budget.removed_entries == 3 and enforce.would_mutate


# ---- disk budget inside the pipeline -------------------------------------------------------------


def test_budget_runs_after_forced_maintenance_and_skips_preserved():
    entries = {
        "agent:main:main": row(10, "m"),
        "agent:main:stale": row(40 * DAY, "st"),
        "agent:main:a": row(20, "a"),
        "agent:main:b": row(5, "b"),
    }
    sizes = {"m": 5000, "st": 5000, "a": 5000, "b": 5000}
    plan = plan_cleanup(
        entries, Settings(max_disk_bytes=12_000, high_water_bytes=10_500), now_ms=NOW_MS, session_bytes=sizes
    )
    assert plan.actions == {
        "agent:main:main": ACTION_KEEP,
        "agent:main:stale": ACTION_PRUNE_STALE,
        "agent:main:a": ACTION_EVICT_BUDGET,
        "agent:main:b": ACTION_KEEP,
    }
    assert plan.disk_budget.total_bytes_before < 15_000 + 1000  # measured after the stale prune


def test_no_measurement_means_no_budget():
    plan = plan_cleanup({"agent:main:a": row(0)}, Settings(), now_ms=NOW_MS)
    assert plan.disk_budget is None
    plan = plan_cleanup(
        {"agent:main:a": row(0)},
        Settings(max_disk_bytes=None, high_water_bytes=None),
        now_ms=NOW_MS,
        session_bytes={},
    )
    assert plan.disk_budget is None


def test_legacy_measure_in_pipeline(tmp_path):
    entries = {"agent:main:a": row(5, "a"), "agent:main:b": row(1, "b")}
    files = [
        DirFile("a.jsonl", 3000, 1),
        DirFile("b.jsonl", 3000, 1),
        DirFile("x.jsonl.deleted.2026-01-01T00-00-00.000Z", 1000, 1),
    ]
    plan = plan_cleanup(
        entries,
        Settings(max_disk_bytes=6000, high_water_bytes=4000),
        now_ms=NOW_MS,
        budget_measure=LegacyDirMeasure(files, tmp_path),
    )
    assert plan.keys_with(ACTION_EVICT_BUDGET) == ["agent:main:a"]
    assert [r.name for r in plan.budget_file_removals] == [
        "x.jsonl.deleted.2026-01-01T00-00-00.000Z",
        "a.jsonl",
    ]
    assert plan.unreferenced_session_ids == ["a"]


# ---- §10.4 / §10.5 repairs -----------------------------------------------------------------------


def test_fix_missing_rules():
    entries = {
        "agent:main:gone": row(0, "gone"),
        "agent:main:present": row(0, "present"),
        "agent:main:locked": row(0, "gone2", modelSelectionLocked=True),
        "agent:main:archived-preserved": row(0, "gone3", archivedAt=1, chatType="group"),
        "agent:main:archived-plain": row(0, "gone4", archivedAt=1),
        "agent:main:pending": row(0, "gone5", initializationPending=True),
        "agent:main:first-turn": {"sessionId": "agent:main:first-turn", "updatedAt": NOW_MS},
        "agent:main:no-sid": {"updatedAt": NOW_MS},
        "legacy-no-sid": {"updatedAt": NOW_MS},
        "agent:main:slack:channel:C1": row(0, "gone6"),  # pointer protection does not shield this repair
    }
    asked = []

    def missing(key, entry):
        asked.append(key)
        return entry["sessionId"].startswith("gone")

    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS, fix_missing=True, missing_transcript=missing)
    assert plan.keys_with(ACTION_PRUNE_MISSING) == [
        "agent:main:gone",
        "agent:main:archived-plain",
        "legacy-no-sid",
        "agent:main:slack:channel:C1",
    ]
    assert plan.missing == 4
    assert "agent:main:locked" not in asked and "agent:main:first-turn" not in asked
    with pytest.raises(ValueError):
        plan_cleanup(entries, Settings(), now_ms=NOW_MS, fix_missing=True)


def test_fix_dm_scope_rules():
    entries = {
        "agent:main:telegram:direct:1": row(0),
        "agent:main:telegram:acct:direct:2": row(0),
        "agent:main:direct:3": row(0),
        "agent:main:telegram:direct:active": row(0),
        "agent:main:telegram:direct:archived": row(0, archivedAt=5),
        "agent:work:telegram:direct:4": row(0),
        "agent:main:agent:direct:5": row(0),
        "agent:main:main": row(0),
    }
    plan = plan_cleanup(
        entries,
        Settings(),
        now_ms=NOW_MS,
        fix_dm_scope=True,
        agent_id="main",
        active_key="Agent:Main:Telegram:Direct:ACTIVE",
    )
    assert plan.keys_with(ACTION_RETIRE_DM_SCOPE) == [
        "agent:main:telegram:direct:1",
        "agent:main:telegram:acct:direct:2",
        "agent:main:direct:3",
    ]
    other_scope = plan_cleanup(
        entries, Settings(), now_ms=NOW_MS, fix_dm_scope=True, agent_id="main", dm_scope="per-peer"
    )
    assert other_scope.dm_scope_retired == 0


def test_key_matching_both_repairs_counts_once_as_missing():
    entries = {"agent:main:telegram:direct:1": row(0, "gone")}
    plan = plan_cleanup(
        entries,
        Settings(),
        now_ms=NOW_MS,
        fix_missing=True,
        fix_dm_scope=True,
        agent_id="main",
        missing_transcript=lambda k, e: True,
    )
    assert plan.actions == {"agent:main:telegram:direct:1": ACTION_PRUNE_MISSING}
    assert (plan.missing, plan.dm_scope_retired, plan.after_count) == (1, 0, 0)


def test_generator_preserve_keys_survive_the_warn_replan():
    entries = {"agent:main:old": row(40 * DAY), "agent:main:other": row(40 * DAY)}
    plan = plan_cleanup(
        entries, Settings(mode="warn"), now_ms=NOW_MS, preserve_keys=(k for k in ["agent:main:old"])
    )
    assert plan.would_enforce.removed == ["agent:main:other"]


def test_transcript_check_memoised_across_warn_replan():
    calls = []
    entries = {"agent:main:a": row(0, "a"), "agent:main:b": row(0, "b")}
    plan_cleanup(
        entries,
        Settings(mode="warn"),
        now_ms=NOW_MS,
        fix_missing=True,
        missing_transcript=lambda k, e: calls.append(k) or False,
    )
    assert sorted(calls) == ["agent:main:a", "agent:main:b"]


# ---- the real fixture ----------------------------------------------------------------------------


def test_real_fixture_store_under_our_rules():
    entries = json.loads((OPENCLAW_FIXTURE / "legacy-state/agents/main/sessions/sessions.json").read_text())
    plan = plan_cleanup(entries, Settings(), now_ms=NOW_MS, session_bytes={})
    # the fixture README: the 60-day-old telegram:direct:stale-1 row is prunable for us
    assert plan.keys_with(ACTION_PRUNE_STALE) == ["agent:main:telegram:direct:stale-1"]
    tight = plan_cleanup(entries, Settings(prune_after_ms=DAY, max_entries=2), now_ms=NOW_MS)
    assert tight.actions[probe_key := next(k for k in entries if "model-run" in k)] == ACTION_PRUNE_MODEL_RUN
    assert probe_key not in tight.remaining_keys
    for key in ("agent:main:main", "agent:main:telegram:group:123"):
        assert tight.actions[key] == ACTION_KEEP


# ---- cron retention (§9.1) and archive retention (§7.4) -----------------------------------------


def test_cron_retention():
    entries = {
        "agent:main:cron:job": row(10 * DAY, "base"),
        "agent:main:cron:job:run:1": row(25 * HOUR, "r1"),
        "agent:main:cron:job:run:2": row(HOUR, "r2"),
        "agent:main:cron:job:run:3": {"sessionId": "shared"},  # missing updatedAt = 0
        "agent:main:cron:job:run:busy": row(48 * HOUR, "busy"),
        "agent:main:cron:job:run:admitted": row(48 * HOUR, "admitted"),
        "agent:work:cron:job:run:4": row(48 * HOUR, "w"),
        "agent:main:keep-shared": row(0, "shared"),
    }
    plan = plan_cron_retention(
        entries,
        DAY,
        NOW_MS,
        ["Agent:Main:Cron:Job:Run:BUSY"],
        agent_id="main",
        preserve_session_ids=["admitted"],
    )
    assert plan.removed == ["agent:main:cron:job:run:1", "agent:main:cron:job:run:3"]
    assert plan.unreferenced_session_ids == ["r1"]
    assert plan_cron_retention(entries, None, NOW_MS).removed == []
    assert plan_cron_retention(entries, 0, NOW_MS).removed == []
    assert "agent:work:cron:job:run:4" in plan_cron_retention(entries, DAY, NOW_MS).removed
    assert cron_sweep_due(None, NOW_MS) and not cron_sweep_due(NOW_MS - 299_999, NOW_MS)
    assert cron_sweep_due(NOW_MS - 300_000, NOW_MS)


def test_item19_archive_retention():
    name = "x.jsonl.deleted.2026-01-01T00-00-00.000Z"
    now = 1767916800000  # 2026-01-09T00:00:00Z
    seven_days = 7 * DAY
    names = [name, "y.jsonl.reset.2026-01-08T00-00-00.000Z.zst", "keep.deleted.keep.jsonl", "z.jsonl"]
    plan = plan_archive_retention(names, seven_days, now)
    assert plan.removed == [name] and plan.scanned == 2
    assert plan_archive_retention(names, None, now).removed == []
    exactly = plan_archive_retention(["a.jsonl.deleted.2026-01-02T00-00-00.000Z"], seven_days, now)
    assert exactly.removed == []  # strictly older only


# ---- with the real config resolver (§13 items 8 and 10 end to end) -----------------------------


def _resolved(maintenance: dict):
    from pathlib import Path

    from openclaw_cli.config import maintenance_settings, validate_config

    return maintenance_settings(
        validate_config({"session": {"maintenance": maintenance}}, Path("/t/openclaw.json"))
    )


def test_numeric_prune_after_is_days_through_the_planner():
    entries = {"agent:main:d31": row(31 * DAY), "agent:main:d29": row(29 * DAY)}
    plan = plan_cleanup(entries, _resolved({"pruneAfter": 30}), now_ms=NOW_MS)
    assert plan.keys_with(ACTION_PRUNE_STALE) == ["agent:main:d31"]


def test_2gb_budget_high_water_in_the_plan():
    plan = plan_cleanup(
        {"agent:main:a": row(0, "a")},
        _resolved({"maxDiskBytes": "2gb"}),
        now_ms=NOW_MS,
        session_bytes={"a": 10},
    )
    assert (plan.disk_budget.max_bytes, plan.disk_budget.high_water_bytes) == (2_147_483_648, 1_717_986_918)
    assert (
        plan_cleanup({}, _resolved({"maxDiskBytes": False}), now_ms=NOW_MS, session_bytes={}).disk_budget
        is None
    )


def test_entry_high_water_agrees_with_config():
    from openclaw_cli.config import high_water_entries

    for n in [None, 0, 1, 2, 49, 50, 51, 249, 250, 251, 500, 10**6]:
        assert entry_high_water(n) == high_water_entries(n)


# ---- properties ----------------------------------------------------------------------------------

KEY_SHAPES = [
    "agent:main:r{}",
    "agent:main:telegram:direct:{}",
    "agent:main:slack:channel:C{}",
    "agent:main:subagent:{}",
    "agent:main:cron:job:run:{}",
    "agent:main:explicit:model-run-" + UUID,
    "agent:main:slack:channel:C1:thread:{}",
    "legacy-{}",
]

stores = st.lists(
    st.tuples(
        st.integers(0, len(KEY_SHAPES) - 1),
        st.integers(0, 60),
        st.one_of(st.none(), st.integers(0, 90 * DAY)),
        st.integers(0, 7),
        st.booleans(),
        st.sampled_from([None, "group", "direct"]),
    ),
    max_size=40,
).map(
    lambda rows: {
        KEY_SHAPES[shape].format(n): {
            "sessionId": f"s{sid}",
            **({"updatedAt": NOW_MS - age} if age is not None else {}),
            **({"modelSelectionLocked": True} if locked else {}),
            **({"chatType": chat} if chat else {}),
        }
        for shape, n, age, sid, locked, chat in rows
    }
)

settings_st = st.builds(
    Settings,
    mode=st.sampled_from(["enforce", "warn"]),
    prune_after_ms=st.sampled_from([None, 0, DAY, 30 * DAY]),
    max_entries=st.sampled_from([None, 1, 2, 5, 30]),
    max_disk_bytes=st.sampled_from([None, 500, 5000]),
    high_water_bytes=st.sampled_from([None, 100, 400]),
)


@settings(max_examples=200, deadline=None)
@given(
    stores,
    settings_st,
    st.booleans(),
    st.lists(st.sampled_from(["agent:main:r1", "agent:main:r2", "x"]), max_size=2),
    st.sampled_from([None, "agent:main:r3", "AGENT:MAIN:TELEGRAM:DIRECT:4"]),
)
def test_properties(entries, settings_, fix, preserve_keys, active_key):
    snapshot = copy.deepcopy(entries)
    sizes = {f"s{i}": 100 * i for i in range(8)}
    kwargs = dict(
        now_ms=NOW_MS,
        preserve_keys=preserve_keys,
        active_key=active_key,
        fix_dm_scope=fix,
        agent_id="main",
        session_bytes=sizes,
    )
    plan = plan_cleanup(entries, settings_, **kwargs)
    # pure and deterministic: the input is untouched, and planning again (the apply run after a
    # dry run) gives the same plan
    assert entries == snapshot
    again = plan_cleanup(copy.deepcopy(entries), settings_, **kwargs)
    assert (again.actions, again.removed, again.disk_budget, again.unreferenced_session_ids) == (
        plan.actions,
        plan.removed,
        plan.disk_budget,
        plan.unreferenced_session_ids,
    )
    # counters add up
    assert plan.before_count - plan.after_count == (
        plan.missing
        + plan.dm_scope_retired
        + plan.model_run_pruned
        + plan.pruned
        + plan.capped
        + plan.evicted
    )
    # no preserved key is ever removed by automatic maintenance
    preserver = Preserver(entries, preserve_keys, active_key)
    automatic = {ACTION_PRUNE_MODEL_RUN, ACTION_PRUNE_STALE, ACTION_CAP_OVERFLOW, ACTION_EVICT_BUDGET}
    for key in plan.removed:
        if plan.actions[key] in automatic:
            assert not preserver(key, entries[key]), key
    # the cap bound
    remaining = {k: entries[k] for k in plan.remaining_keys}
    if settings_.mode == "enforce" and settings_.max_entries:
        p = sum(1 for k, e in remaining.items() if preserver(k, e))
        assert len(remaining) <= max(settings_.max_entries, p + min(settings_.max_entries, CAP_FLOOR))
    if settings_.mode == "warn":
        assert not (set(plan.actions.values()) & automatic)
    # applying the plan reaches a fixed point: a second cleanup removes nothing automatic
    second = plan_cleanup(remaining, settings_, **{**kwargs, "fix_dm_scope": False, "session_bytes": sizes})
    assert second.removed == []
    # shared session ids are never released while referenced
    referenced = {e["sessionId"] for e in remaining.values()}
    assert not set(plan.unreferenced_session_ids) & referenced


def test_malformed_entries_never_crash_the_planner(tmp_path):
    """Corrupt rows (wrong types everywhere) are planned like rows without the bad fields."""
    from openclaw_cli.cli.render_cleanup import action_rows, render_dry_run_text
    from openclaw_cli.maintenance.report import cleanup_summary

    entries = {
        "a": "string",
        "b": None,
        "c": [1, 2],
        "agent:main:d": {"updatedAt": True, "sessionId": 5},
        "agent:main:e": {
            "updatedAt": "yesterday",
            "sessionId": ["x"],
            "chatType": 3,
            "origin": "o",
            "label": 7,
            "model": {"x": 1},
            "parentSessionKey": 9,
        },
        "agent:main:f": {
            "updatedAt": float("nan"),
            "sessionFile": "../../etc/passwd",
            "sessionId": "../x",
            "compactionCheckpoints": "nope",
            "skillsSnapshot": {"promptRef": 5},
        },
        "agent:main:g": row(90 * DAY, "g", modelSelectionLocked="yes"),
    }
    for measure in (
        {"session_bytes": {"g": 10**9}},
        {"budget_measure": LegacyDirMeasure([DirFile("passwd", 10**9, 1)], tmp_path)},
    ):
        plan = plan_cleanup(
            entries,
            Settings(max_entries=2, max_disk_bytes=1000, high_water_bytes=500),
            now_ms=NOW_MS,
            fix_missing=True,
            missing_transcript=lambda k, e: True,
            fix_dm_scope=True,
            active_key="agent:main:e",
            **measure,
        )
        assert plan.before_count == 7 and set(plan.actions) == set(entries)
        assert plan.actions["agent:main:g"] != ACTION_KEEP  # "yes" is not a lock
        summary = cleanup_summary(plan, agent_id="main", store_path=str(tmp_path), dry_run=True)
        text = render_dry_run_text(
            summary, action_rows([(a, k, entries.get(k)) for k, a in plan.actions.items()], NOW_MS)
        )
        assert "Summary by Label:" in text
