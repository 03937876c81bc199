"""Cleanup under the releases that archive in place (issue 22 part 2, D23: 2026.9.6 / 2026.9.9):
the planner's stages and counters on small stores (the protected set, dashboards, preserveRecent,
the cap), the in-place archive write on every store kind, warn mode (a dry run shows what
--enforce would do; an apply removes nothing and says so), and 2026.7 kept as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    cli,
    db_path,
    entry,
    load_store,
    make_legacy,
    make_sqlite,
    now_ms,
    write_config,
)

from openclaw_cli.behavior import BEHAVIOR_2026_7, BEHAVIOR_2026_9_6
from openclaw_cli.config import maintenance_settings
from openclaw_cli.maintenance.archiving import is_delivery_route, is_protected
from openclaw_cli.maintenance.plan import plan_cleanup

NOW = 1_796_000_000_000


def cli_json(*args: str) -> dict:
    proc = cli(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


HOUR = 3_600_000


def _plan(entries, behavior=BEHAVIOR_2026_9_6, **maintenance):
    settings = maintenance_settings({"session": {"maintenance": maintenance}}, behavior)
    return plan_cleanup(entries, settings, now_ms=NOW, behavior=behavior)


def _store() -> dict:
    old = NOW - 60 * DAY
    return {
        "agent:main:main": entry("s-main", old),
        "agent:main:telegram:direct:stale-1": entry("s-dm", old),  # a DM: protected in 9.6, not in 2026.7
        "agent:main:telegram:acct:direct:100002": entry("s-dm2", old),
        "agent:main:direct:peer-9": entry("s-direct", old),
        "agent:main:telegram:group:123": entry("s-group", old),
        "agent:main:dashboard:d1": entry("s-dash", NOW - 2 * DAY),  # inactive > 1 h: archived
        "agent:main:dashboard:d2": entry("s-dash2", NOW - 10 * 60_000),  # active 10 min ago: kept
        "agent:main:cron:job-1:run:r1": entry("s-cron", old),  # synthetic: deleted
        "agent:main:hook:h1": entry("s-hook", old),
        "agent:main:custom-1": entry("s-custom", old),  # a human row, stale: archived
        "agent:main:custom-2": entry("s-custom2", old, pinnedAt=NOW - DAY),  # pinned: kept
        "agent:main:custom-3": entry("s-custom3", old, status="running"),
        "agent:main:custom-4": entry("s-custom4", old, archivedAt=NOW - DAY, archiveReason="manual"),
        "agent:main:custom-5": entry("s-custom5", old, delivery={"kind": "external"}),
    }


def test_the_observed_protected_set_includes_dms_and_delivery_routes() -> None:
    for key in (
        "agent:main:telegram:direct:stale-1",
        "agent:main:telegram:acct:direct:100002",
        "agent:main:direct:peer-9",
        "agent:main:slack:channel:C1",
        "agent:main:discord:dm:9",
        "agent:main:telegram:direct:1:topic:7",
        "agent:main:main",
        "global",
        "agent:main:x:thread:1",
    ):
        assert is_protected(key, {}), key
    for key in (
        "agent:main:cron:job:run:1",
        "agent:main:subagent:x",
        "agent:main:dashboard:d1",
        "agent:main:custom-1",
        "agent:main:hook:telegram:direct:1",
        "agent:main:telegram:direct",
    ):
        assert not is_protected(key, {}), key
    assert is_protected("agent:main:opaque", {"chatType": "channel"})
    assert is_protected("agent:main:opaque", {"origin": {"chatType": "group"}})
    assert not is_delivery_route("agent:main:agent:x:direct:1")  # a nested agent rest is opaque


def test_stale_human_rows_are_archived_synthetic_ones_deleted() -> None:
    plan = _plan(_store(), archiveDashboardAfter="1h")
    assert plan.archived == {
        "agent:main:dashboard:d1": "stale-dashboard",
        "agent:main:custom-1": "age-retention",
    }
    assert set(plan.removed) == {"agent:main:cron:job-1:run:r1", "agent:main:hook:h1"}
    assert plan.actions["agent:main:dashboard:d1"] == "archive-dashboard"
    assert plan.actions["agent:main:custom-1"] == "archive-age"
    assert plan.actions["agent:main:cron:job-1:run:r1"] == "prune-stale"
    assert (plan.archived_count, plan.cap_archived, plan.pruned, plan.capped) == (2, 0, 2, 0)
    assert plan.after_count == len(_store()) - 2  # archived rows stay


def test_2026_7_keeps_its_rules_on_the_same_store() -> None:
    plan = _plan(_store(), behavior=BEHAVIOR_2026_7)
    assert plan.archived == {} and plan.archived_count == 0
    assert "agent:main:telegram:direct:stale-1" in plan.removed  # G1: a DM is not protected
    assert "agent:main:custom-1" in plan.removed


def test_dashboard_default_is_seven_days_and_false_disables_it() -> None:
    store = {
        "agent:main:dashboard:a": entry("a", NOW - 8 * DAY),
        "agent:main:dashboard:b": entry("b", NOW - 6 * DAY),
    }
    assert _plan(store).archived == {"agent:main:dashboard:a": "stale-dashboard"}
    assert _plan(store, archiveDashboardAfter=False).archived == {}


def test_preserve_recent_protects_active_rows_but_not_synthetic_ones() -> None:
    store = {
        "agent:main:custom-1": entry("a", NOW - 40 * DAY, lastInteractionAt=NOW - HOUR),
        "agent:main:cron:j:run:1": entry("b", NOW - 40 * DAY, lastInteractionAt=NOW - HOUR),
    }
    assert _plan(store).archived == {"agent:main:custom-1": "age-retention"}
    plan = _plan(store, preserveRecent="1d")
    assert plan.archived == {} and plan.removed == ["agent:main:cron:j:run:1"]


def test_the_cap_counts_unarchived_rows_oldest_activity_first_and_has_no_floor() -> None:
    store = {f"agent:main:c{i}": entry(f"s{i}", NOW - i * HOUR) for i in range(6)}
    store["agent:main:cron:j:run:1"] = entry("cr", NOW - 30 * HOUR)
    store["agent:main:old-archived"] = entry("oa", NOW - 90 * HOUR, archivedAt=NOW - DAY)
    store["agent:main:main"] = entry("m", NOW - 99 * HOUR)  # protected: counts toward the cap, stays
    plan = _plan(store, maxEntries=4)
    # 8 unarchived rows, cap 4: the 4 oldest unprotected go; the synthetic one is deleted
    assert plan.removed == ["agent:main:cron:j:run:1"]
    assert plan.archived == {
        "agent:main:c5": "active-session-cap",
        "agent:main:c4": "active-session-cap",
        "agent:main:c3": "active-session-cap",
    }
    assert (plan.capped, plan.cap_archived, plan.archived_count) == (4, 3, 0)
    assert (
        plan.actions["agent:main:c5"] == "archive-cap"
        and plan.actions["agent:main:cron:j:run:1"] == "cap-overflow"
    )
    only_protected = {f"agent:main:telegram:direct:{i}": entry(str(i), NOW) for i in range(5)}
    assert _plan(only_protected, maxEntries=2).capped == 0  # protected rows keep the store above the cap


def test_model_run_probes_go_only_when_unarchived_rows_exceed_the_cap() -> None:
    probe = "agent:main:explicit:model-run-123e4567-e89b-12d3-a456-426614174000"
    store = {probe: entry("p", NOW - 2 * DAY), "agent:main:main": entry("m", NOW)}
    assert _plan(store).model_run_pruned == 0
    plan = _plan(store, maxEntries=1)
    assert plan.model_run_pruned == 1 and plan.actions[probe] == "prune-model-run"


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_enforce_archives_in_place_on_our_stores(state_dir: Path, kind: str) -> None:
    old = now_ms() - 40 * DAY
    rows = {
        "agent:main:main": entry("s-main", old),
        "agent:main:custom-1": entry("s-c1", old, archivedBy="x"),
        "agent:main:telegram:direct:1": entry("s-dm", old),
        "agent:main:hook:h": entry("s-hook", old),
    }
    (make_legacy if kind == "legacy" else make_sqlite)(state_dir, rows)
    preview = cli_json("sessions", "cleanup", "--dry-run", "--json")
    done = cli_json("sessions", "cleanup", "--enforce", "--json")
    for doc in (preview, done):
        assert (doc["archived"], doc["pruned"], doc["afterCount"], doc["capArchived"]) == (1, 1, 3, 0)
    stored = load_store(state_dir)
    assert set(stored) == {"agent:main:main", "agent:main:custom-1", "agent:main:telegram:direct:1"}
    archived = stored["agent:main:custom-1"]
    assert archived["archiveReason"] == "age-retention" and isinstance(archived["archivedAt"], int)
    assert "archivedBy" not in archived and archived["sessionId"] == "s-c1"
    assert "archivedAt" not in stored["agent:main:telegram:direct:1"]
    again = cli_json("sessions", "cleanup", "--enforce", "--json")  # archived rows are left alone
    assert (again["archived"], again["pruned"], again["wouldMutate"]) == (0, 0, False)


def test_enforce_archives_in_place_on_a_schema_23_database(real_state: Path) -> None:
    from tests.openclaw_db_support import nodes

    write_config(
        real_state, {"session": {"maintenance": {"pruneAfter": "1h", "archiveDashboardAfter": "1h"}}}
    )
    db = db_path(real_state)
    before = nodes(db)
    preview = cli_json("sessions", "cleanup", "--dry-run", "--json")
    done = cli_json("sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert preview["archived"] == done["archived"] > 0 and preview["pruned"] == done["pruned"]
    after = nodes(db)
    archived = {k for k, (_, text) in after.items() if "archivedAt" in json.loads(text)}
    assert len(archived) == done["archived"] and archived <= set(before)
    assert (
        len(after)
        == done["afterCount"]
        == len(before) - done["pruned"] - done["modelRunPruned"] - done["capped"] + done["capArchived"]
    )


def test_warn_mode_dry_run_shows_enforce_and_an_apply_removes_nothing(state_dir: Path) -> None:
    old = now_ms() - 40 * DAY
    make_sqlite(
        state_dir, {"agent:main:custom-1": entry("s-c1", old), "agent:main:hook:h": entry("s-hook", old)}
    )
    write_config(state_dir, {"session": {"maintenance": {"mode": "warn"}}})
    preview = cli_json("sessions", "cleanup", "--dry-run", "--json")
    assert (preview["mode"], preview["archived"], preview["pruned"], preview["wouldMutate"]) == (
        "warn",
        1,
        1,
        True,
    )
    text = cli("sessions", "cleanup", "--dry-run")
    assert "this preview shows what --enforce would do" in text.stdout
    applied = cli("sessions", "cleanup", "--json")
    doc = json.loads(applied.stdout)
    assert (doc["mode"], doc["archived"], doc["pruned"], doc["wouldMutate"], doc["appliedCount"]) == (
        "warn",
        0,
        0,
        False,
        2,
    )
    assert "nothing was removed or archived" in applied.stderr
    assert "nothing was removed or archived" in cli("sessions", "cleanup").stdout
    assert set(load_store(state_dir)) == {"agent:main:custom-1", "agent:main:hook:h"}
    assert "archivedAt" not in load_store(state_dir)["agent:main:custom-1"]
    # 2026.7: the warn-mode dry run is the warn-mode apply (automatic removals reported, not planned)
    legacy_rules = cli_json("--behavior", "2026.7", "sessions", "cleanup", "--dry-run", "--json")
    assert (legacy_rules["pruned"], legacy_rules["wouldMutate"]) == (0, False)
