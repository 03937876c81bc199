"""Issue 30: maintenance plans over per-session facts (`store/facts.py`) exactly as over whole
entries — every planner stage of both rule sets (2026.7 and the releases that archive in place),
the disk budget, the prompt-blob references — and a database store's `load_facts` gives those
facts in store order with the whole rows' sizes."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.behavior import BEHAVIOR_2026_7, BEHAVIOR_2026_9_6, BEHAVIOR_2026_9_9
from openclaw_cli.config.resolve import MaintenanceSettings
from openclaw_cli.jsonutil import JsonObjectText, dumps_compact
from openclaw_cli.maintenance.artifacts import prompt_hashes
from openclaw_cli.maintenance.budget import SqliteMeasure
from openclaw_cli.maintenance.plan import plan_cleanup, plan_runtime_maintenance
from openclaw_cli.store.facts import compact_bytes, entry_facts

NOW = 1_796_000_000_000
DAY = 86_400_000
_KEY_SHAPES = (
    "agent:{a}:main",
    "agent:{a}:telegram:direct:{n}",
    "agent:{a}:telegram:group:{n}",
    "agent:{a}:discord:channel:{n}",
    "agent:{a}:slack:thread:{n}:thread:{n}",
    "agent:{a}:telegram:direct:{n}:topic:7",
    "agent:{a}:cron:job-{n}",
    "agent:{a}:cron:job-{n}:run:r{n}",
    "agent:{a}:hook:{n}",
    "agent:{a}:subagent:{n}",
    "agent:{a}:dashboard:{n}",
    "agent:{a}:explicit:model-run-00000000-0000-4000-8000-{n:012d}",
    "agent:{a}:direct:{n}",
    "agent:{a}:webchat:{n}",
    "agent:{a}:heartbeat",
    "cron:legacy-{n}",
    "global",
    " Agent:{a}:Main ",
)


def _time(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.04:
        return rng.choice([None, "2026-01-01", True, float("nan"), -5, 0])
    return NOW - int(rng.random() * 90 * DAY)


def _entry(rng: random.Random, n: int, keys: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"sessionId": f"s-{n:06d}" if rng.random() > 0.03 else rng.choice(["", 7, None])}
    updated = _time(rng)
    if rng.random() > 0.03:
        entry["updatedAt"] = updated
    for name in ("lastInteractionAt", "lastActivityAt", "sessionStartedAt"):
        if rng.random() < 0.5:
            base = updated if isinstance(updated, int) and not isinstance(updated, bool) else NOW - 40 * DAY
            entry[name] = rng.choice([base, base - DAY, base + rng.randint(1, 20) * DAY, None, "x"])
    chat = rng.random()
    if chat < 0.6:
        entry["chatType"] = rng.choice(["direct", "group", "channel", "thread", " Group ", 3])
    elif chat < 0.75:
        entry["origin"] = rng.choice(
            [{"chatType": "group", "provider": "x"}, {"provider": "y"}, "telegram", {"chatType": None}]
        )
    if rng.random() < 0.05:
        entry["delivery"] = rng.choice([{"kind": "external", "to": "x"}, {"to": "y"}, "external"])
    if rng.random() < 0.05:
        entry["skillsSnapshot"] = rng.choice(
            [
                {"promptRef": "sha256:" + "ab" * 32, "skills": ["a"] * 5},
                {"promptRef": {"a": "cd" * 32, "b": 4}},
                {"skills": []},
                JsonObjectText('{"promptRef": "' + "ef" * 32 + '"}'),
                "not an object",
            ]
        )
    for name, chance, values in (
        ("modelSelectionLocked", 0.03, [True, False, "yes"]),
        ("archivedAt", 0.08, [NOW - 3 * DAY, None]),
        ("archiveReason", 0.04, ["age-retention", "active-session-cap"]),
        ("pinnedAt", 0.15, [NOW - 50 * DAY, None]),
        ("status", 0.05, ["running", "done"]),
        ("spawnedBy", 0.1, ["agent:main:main", ""]),
        ("parentSessionKey", 0.2, [*(keys[-3:] if keys else []), "agent:main:main", "agent:ops:main"]),
        ("initializationPending", 0.02, [True]),
        ("sessionFile", 0.5, [f"/state/agents/main/sessions/s-{n:06d}.jsonl"]),
    ):
        if rng.random() < chance:
            entry[name] = rng.choice(values)
    # display fields the planner never reads (what the facts leave out)
    entry.update(model="gpt-5.4", inputTokens=rng.randint(0, 9999), label=f"row {n}", channel="telegram")
    return entry


def _store(seed: int, size: int = 400) -> dict[str, Any]:
    rng = random.Random(seed)
    entries: dict[str, Any] = {}
    for n in range(size):
        key = rng.choice(_KEY_SHAPES).format(a=rng.choice(["main", "ops"]), n=n)
        entries[key] = _entry(rng, n, list(entries))
    entries["agent:main:not-an-object"] = ["a", "list"]
    return entries


def _settings(behavior: Any, **changes: Any) -> MaintenanceSettings:
    base = MaintenanceSettings(
        mode="enforce",
        prune_after_ms=30 * DAY,
        max_entries=120,
        max_disk_bytes=60_000,
        high_water_bytes=40_000,
    )
    if behavior.maintenance.archive_in_place:
        base = dataclasses.replace(base, archive_dashboard_after_ms=7 * DAY, preserve_recent_ms=2 * DAY)
    return dataclasses.replace(base, **changes)


def _outcome(plan: Any) -> dict[str, Any]:
    budget = plan.disk_budget
    return {
        "actions": plan.actions,
        "removed": plan.removed,
        "archived": plan.archived,
        "counts": (plan.model_run_pruned, plan.pruned, plan.capped, plan.cron_pruned, plan.evicted),
        "archivedCounts": (plan.archived_count, plan.cap_archived),
        "unreferenced": plan.unreferenced_session_ids,
        "preserved": plan.preserved_keys,
        "budget": budget.to_json() if budget is not None else None,
        "warning": plan.active_warning,
        "wouldEnforce": _outcome(plan.would_enforce) if plan.would_enforce is not None else None,
    }


def _budget(entries: dict[str, Any]) -> SqliteMeasure:
    """The database store's measure: transcript bytes per session, each row's bytes from the whole entry."""
    sessions = {e["sessionId"]: 700 for e in entries.values() if isinstance(e, dict) and e.get("sessionId")}
    return SqliteMeasure(sessions, {key: compact_bytes(entry) for key, entry in entries.items()})


@pytest.mark.parametrize("behavior", [BEHAVIOR_2026_7, BEHAVIOR_2026_9_6, BEHAVIOR_2026_9_9])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_plan_over_facts_is_the_plan_over_whole_entries(behavior: Any, seed: int) -> None:
    entries = _store(seed)
    facts = {key: entry_facts(entry) for key, entry in entries.items()}
    assert (
        sum(len(dumps_compact(f)) for f in facts.values())
        < sum(len(dumps_compact(e)) for e in entries.values()) / 2
    )
    measure = _budget(entries)
    keys = list(entries)
    # an active key whose parent chain (preserved with it under 2026.7) reaches stale rows
    children = [k for k, e in entries.items() if isinstance(e, dict) and e.get("parentSessionKey") in entries]
    for settings, extra in (
        (_settings(behavior), {}),
        (_settings(behavior, mode="warn"), {}),
        (_settings(behavior, max_entries=20, prune_after_ms=5 * DAY), {"active_key": children[-1]}),
        (
            _settings(behavior),
            {"preserve_session_ids": ["s-000011", "s-000012"], "preserve_keys": keys[20:25]},
        ),
        (_settings(behavior), {"cron_retention_ms": 3 * DAY, "fix_dm_scope": True, "agent_id": "main"}),
        (_settings(behavior, max_disk_bytes=None, high_water_bytes=None), {"mode_override": "enforce"}),
    ):
        whole = plan_cleanup(
            entries, settings, now_ms=NOW, budget_measure=measure, behavior=behavior, **extra
        )
        compact = plan_cleanup(
            facts, settings, now_ms=NOW, budget_measure=measure, behavior=behavior, **extra
        )
        assert _outcome(compact) == _outcome(whole)
        done = whole.would_enforce or whole  # (warn mode: what enforce would do)
        assert done.removed or done.archived  # the store gives the stages work
    for active in (children[0], children[-1], None):
        whole = plan_runtime_maintenance(
            entries, _settings(behavior, mode="warn"), now_ms=NOW, active_key=active, budget_measure=measure
        )
        compact = plan_runtime_maintenance(
            facts, _settings(behavior, mode="warn"), now_ms=NOW, active_key=active, budget_measure=measure
        )
        assert _outcome(compact) == _outcome(whole)


def test_prompt_blob_references_survive_in_the_facts() -> None:
    entries = _store(4, 600)
    facts = [entry_facts(e) for e in entries.values()]
    assert prompt_hashes(facts) == prompt_hashes(entries.values()) != set()


def test_facts_keep_what_the_planner_reads_and_drop_the_rest() -> None:
    entry = {
        "sessionId": "s1",
        "updatedAt": 100,
        "lastInteractionAt": 250,
        "lastActivityAt": 90,
        "sessionStartedAt": 100,
        "chatType": "group",
        "origin": {"chatType": "group", "provider": "telegram", "from": "x" * 100},
        "skillsSnapshot": {"promptRef": "ref", "skills": ["x"] * 50},
        "archivedAt": None,
        "model": "gpt-5.4",
        "sessionFile": "/x/s1.jsonl",
    }
    assert entry_facts(entry) == {
        "sessionId": "s1",
        "updatedAt": 100,
        "archivedAt": None,  # present, if null: status counts rows by the key
        "chatType": "group",
        "lastInteractionAt": 250,  # only the activity times above updatedAt decide the activity
        "origin": {"chatType": "group"},
        "skillsSnapshot": {"promptRef": "ref"},
    }
    assert entry_facts(["not", "an", "object"]) == ["not", "an", "object"]


def test_a_database_store_gives_facts_in_store_order_with_whole_row_sizes(tmp_path) -> None:
    from openclaw_cli.store.sqlite.store import SqliteStore

    entries = {
        k: e
        for k, e in _store(5, 300).items()
        if isinstance(e, dict) and isinstance(e.get("sessionId"), str) and e["sessionId"]
    }
    store = SqliteStore(tmp_path / "agent.sqlite", agent_id="main", create=True)
    try:
        store.upsert_entries(entries)
        whole = store.load_entries()
        sizes: dict[str, int] = {}
        facts = store.load_facts(entry_bytes=sizes)
        assert list(facts) == list(whole) == list(entries)
        assert facts == {key: entry_facts(entry) for key, entry in whole.items()}
        assert sizes == {key: compact_bytes(entry) for key, entry in whole.items()}
        assert store.load_facts() == facts
    finally:
        store.close()


def _legacy_state(state: Path, seed: int) -> dict[str, Any]:
    """A legacy store of `_store`'s rows whose transcripts, sidecars and checkpoints exist, beside
    old unreferenced transcripts and tombstones (the sweep's and the retention's work)."""
    import os

    from openclaw_cli.store.legacy.store import dump_store_bytes

    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    rng = random.Random(seed)
    entries: dict[str, Any] = {}
    for key, entry in _store(seed, 300).items():
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("sessionId"), str)
            or not entry["sessionId"]
        ):
            continue
        sid = entry["sessionId"]
        if "sessionFile" in entry:  # (a topic transcript: named only by the reference)
            name = f"{sid}.jsonl" if rng.random() < 0.5 else f"{sid}-topic-{rng.randint(1, 9)}.jsonl"
            entry["sessionFile"] = str(sessions / name)
            (sessions / name).write_text('{"type":"session"}\n')
        if rng.random() < 0.1:
            name = f"{sid}.checkpoint.{rng.randint(1, 9)}.jsonl"
            (sessions / name).write_text('{"type":"session"}\n')
            entry["compactionCheckpoints"] = [{"preCompaction": {"sessionFile": str(sessions / name)}}]
        if rng.random() < 0.9:
            (sessions / f"{sid}.jsonl").write_text('{"type":"session"}\n' * rng.randint(1, 5))
        entries[key] = entry
    old = (NOW - 60 * DAY) / 1000
    for n in range(12):
        for name in (
            f"orphan-{n:04d}.jsonl",
            f"gone-{n:04d}.jsonl.deleted.2026-01-0{1 + n % 9}T00-00-00.000Z",
        ):
            (sessions / name).write_text('{"type":"session"}\n')
            os.utime(sessions / name, (old, old))
    (sessions / "sessions.json").write_bytes(dump_store_bytes(entries))
    return entries


def _configure(state: Path, maintenance: dict[str, Any], release: str) -> None:
    (state / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": maintenance}, "openclawCli": {"behavior": release}})
    )


def _dry_plan(**options: Any) -> Any:
    """The enforcing dry run of the configured state (main agent), with per-reason bytes."""
    from openclaw_cli.ops.cleanup import CleanupOptions, cleanup_stores
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    (result,) = cleanup_stores(
        Context.load(resolve_paths()),
        CleanupOptions(dry_run=True, enforce=True, reason_bytes=True, **options),
        now_ms=NOW,
    )
    return result


@pytest.mark.parametrize("release", ["2026.7", "2026.9.6"])
@pytest.mark.parametrize("seed", [7, 8])
def test_a_file_store_dry_run_over_file_facts_is_the_plan_over_whole_entries(
    state_dir: Path, release: str, seed: int
) -> None:
    """A legacy store's dry run plans over `load_file_facts()` (every row's facts and file
    references, streamed): the same plan, files and summary as over the whole entries."""

    from openclaw_cli.store.legacy.store import LegacyStore

    _legacy_state(state_dir, seed)
    maintenance = {"mode": "warn", "pruneAfter": "30d", "maxEntries": 60, "resetArchiveRetention": "7d"}
    if release != "2026.7":  # (2026.7's budget projects the rewritten file: whole rows, tested below)
        maintenance["maxDiskBytes"] = "20kb"
    _configure(state_dir, maintenance, release)
    store = LegacyStore(state_dir / "agents/main/sessions/sessions.json", "main")
    facts = store.load_file_facts()
    assert facts is not None and list(facts) == list(store.load_entries())
    assert store.load_file_facts() is None  # (the file now held whole: the entries cost nothing)

    whole, compact = _dry_plan(text_report=True), _dry_plan()
    assert compact.entries.keys() == whole.entries.keys()
    assert any(compact.entries[k] != whole.entries[k] for k in whole.entries)  # facts, not whole rows
    assert _outcome(compact.plan) == _outcome(whole.plan)
    assert compact.archive_actions == whole.archive_actions and whole.archive_actions
    assert compact.unlink_actions == whole.unlink_actions and whole.unlink_actions
    assert compact.summary == whole.summary
    assert compact.reason_bytes == whole.reason_bytes


def test_a_file_store_with_an_unusable_row_plans_over_whole_entries(state_dir: Path) -> None:
    from openclaw_cli.store.legacy.store import LegacyStore, dump_store_bytes

    entries = _legacy_state(state_dir, 9)
    path = state_dir / "agents/main/sessions/sessions.json"
    assert LegacyStore(path, "main").load_file_facts() is not None
    path.write_bytes(dump_store_bytes({**entries, "agent:main:broken": {"sessionId": "../x"}}))
    assert LegacyStore(path, "main").load_file_facts() is None  # (its files stay alive: whole rows)
    path.write_text(dumps_compact(entries))  # not the layout the cutter reads
    assert LegacyStore(path, "main").load_file_facts() is None


@pytest.mark.parametrize("release", ["2026.7", "2026.9.6"])
@pytest.mark.parametrize("budget", [None, "20kb"])
def test_a_figures_only_plan_sums_the_removed_rows_files_to_the_same_figures(
    state_dir: Path, release: str, budget: str | None
) -> None:
    """Issue 27: a figures-only dry run (`storage`) sums the removed rows' files per session id
    (`entry_sid_bytes`) instead of a `FileAction` each: the same plan, disk budget and per-reason
    bytes as the cleanup's own dry run (with and without a disk budget to measure)."""

    _legacy_state(state_dir, 11)
    maintenance: dict[str, Any] = {"mode": "warn", "pruneAfter": "30d", "maxEntries": 60}
    if budget is not None:
        maintenance["maxDiskBytes"] = budget
    _configure(state_dir, maintenance, release)

    listed, summed = _dry_plan(), _dry_plan(figures_only=True)
    assert _outcome(summed.plan) == _outcome(listed.plan)
    assert summed.plan.disk_budget == listed.plan.disk_budget
    entry_actions = [a for a in listed.archive_actions if a.source == "entry"]
    assert entry_actions and summed.entry_sid_bytes and listed.entry_sid_bytes is None
    assert not [a for a in summed.archive_actions if a.source == "entry"]
    assert summed.reason_bytes == listed.reason_bytes
    assert sum(size for _, size in summed.reason_bytes.values()) > 0
