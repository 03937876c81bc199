"""maintenance.md §13 conformance list, run through the real cleanup pipeline (plan + apply) on a
legacy store and on our SQLite store. Item 9 is a config error (D10, config tests), item 15 is
Gateway delegation (later), items 16–18 are in test_cleanup_locks.py."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    archive_map,
    db_path,
    entry,
    maintenance_config,
    make_legacy,
    make_sqlite,
    release_2026_7,  # noqa: F401 - the fixture, used by pytestmark
    service,
    sessions_dir,
    sha,
    sqlite_transcript_bytes,
    tree_digest,
)
from conftest import NOW_MS

from openclaw_cli.store.archives import read_archive_bytes

pytestmark = pytest.mark.usefixtures("release_2026_7")  # G1 rules: written against 2026.7 (D23)

KINDS = ["legacy", "sqlite"]


def build(kind: str, state: Path, entries: dict, **kw) -> None:
    (make_legacy if kind == "legacy" else make_sqlite)(state, entries, **kw)


def originals(kind: str, state: Path, sids) -> dict[str, str]:
    """sha256 of each session's transcript bytes before cleanup."""
    out = {}
    for sid in sids:
        if kind == "legacy":
            out[sid] = sha((sessions_dir(state) / f"{sid}.jsonl").read_bytes())
        else:
            out[sid] = sha(sqlite_transcript_bytes(state, sid))
    return out


def current_keys(kind: str, state: Path) -> set[str]:
    from cleanup_support import load_store

    return set(load_store(state))


def assert_archived(kind: str, state: Path, before: dict[str, str], sids) -> None:
    archives = archive_map(sessions_dir(state))
    for sid in sids:
        assert before[sid] in archives.get(f"{sid}.jsonl", []), f"{sid} not archived"
        if kind == "legacy":
            assert not (sessions_dir(state) / f"{sid}.jsonl").exists()
        else:
            assert sqlite_transcript_bytes(state, sid) == b""


@pytest.mark.parametrize("kind", KINDS)
def test_1_probe_pruned_under_forced_pressure_none_capped(kind, state_dir):
    maintenance_config(state_dir, maxEntries=50, pruneAfter="7d")
    probe = "agent:main:explicit:model-run-123e4567-e89b-12d3-a456-426614174000"
    entries = {probe: entry("probe", NOW_MS - 2 * DAY)}
    entries.update({f"agent:main:s{i}": entry(f"s{i}", NOW_MS - 3 * DAY) for i in range(50)})
    build(kind, state_dir, entries)
    before = originals(kind, state_dir, ["probe"])
    doc = service(enforce=True, now_ms=NOW_MS)
    assert (doc["modelRunPruned"], doc["capped"], doc["pruned"], doc["appliedCount"]) == (1, 0, 0, 50)
    assert current_keys(kind, state_dir) == set(entries) - {probe}
    assert_archived(kind, state_dir, before, ["probe"])


def test_2_unforced_runtime_pass_does_not_prune_probes_below_high_water():
    from openclaw_cli.config import maintenance_settings
    from openclaw_cli.maintenance.plan import plan_runtime_maintenance

    settings = maintenance_settings({"session": {"maintenance": {"maxEntries": 50, "pruneAfter": "30d"}}})
    probe = "agent:main:explicit:model-run-123e4567-e89b-12d3-a456-426614174000"
    entries = {probe: entry("p", NOW_MS - 2 * DAY)}
    entries.update({f"agent:main:s{i}": entry(f"s{i}", NOW_MS - DAY) for i in range(59)})
    plan = plan_runtime_maintenance(entries, settings, now_ms=NOW_MS)
    assert plan.model_run_pruned == 0 and plan.removed == []


@pytest.mark.parametrize("kind", KINDS)
def test_3_cap_removes_the_oldest(kind, state_dir):
    maintenance_config(state_dir, maxEntries=3, pruneAfter="30d")
    ages = {"oldest": 4, "old": 3, "mid": 2, "recent": 1, "newest": 0}
    entries = {f"agent:main:{k}": entry(k, NOW_MS - d * DAY) for k, d in ages.items()}
    build(kind, state_dir, entries)
    before = originals(kind, state_dir, ages)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["capped"] == 2 and doc["appliedCount"] == 3
    assert current_keys(kind, state_dir) == {"agent:main:mid", "agent:main:recent", "agent:main:newest"}
    assert_archived(kind, state_dir, before, ["oldest", "old"])


@pytest.mark.parametrize("kind", KINDS)
def test_4_protected_thread_counts_toward_the_cap_and_stays(kind, state_dir):
    maintenance_config(state_dir, maxEntries=3)
    thread = "agent:main:slack:channel:C1:thread:1710000000.000100"
    entries = {thread: entry("t", NOW_MS - 5 * DAY)}
    entries.update({f"agent:main:o{i}": entry(f"o{i}", NOW_MS - (4 - i) * DAY) for i in range(4)})
    build(kind, state_dir, entries)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["capped"] == 2
    assert current_keys(kind, state_dir) == {thread, "agent:main:o2", "agent:main:o3"}


@pytest.mark.parametrize("kind", KINDS)
def test_5_all_preserved_nothing_removed(kind, state_dir):
    maintenance_config(state_dir, maxEntries=1)
    entries = {
        "agent:main:telegram:group:1": entry("g1", NOW_MS - DAY),
        "agent:main:discord:channel:2": entry("g2", NOW_MS - 2 * DAY),
    }
    build(kind, state_dir, entries)
    digest = tree_digest(state_dir / "agents")
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["capped"] == 0 and doc["appliedCount"] == 2
    assert current_keys(kind, state_dir) == set(entries)
    assert tree_digest(state_dir / "agents") == digest or kind == "sqlite"  # SQLite may checkpoint its WAL


@pytest.mark.parametrize("kind", KINDS)
def test_6_stale_entry_pruned(kind, state_dir):
    maintenance_config(state_dir, pruneAfter="30d")
    entries = {
        "agent:main:old": entry("old", NOW_MS - 31 * DAY),
        "agent:main:fresh": entry("fresh", NOW_MS - DAY),
    }
    build(kind, state_dir, entries)
    before = originals(kind, state_dir, ["old"])
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["pruned"] == 1
    assert current_keys(kind, state_dir) == {"agent:main:fresh"}
    assert_archived(kind, state_dir, before, ["old"])


@pytest.mark.parametrize("kind", KINDS)
def test_7_external_pointers_never_age_pruned(kind, state_dir):
    maintenance_config(state_dir, pruneAfter="30d")
    old = NOW_MS - 31 * DAY
    entries = {
        "agent:main:telegram:group:-100123": entry("a", old),
        "agent:main:slack:channel:C999": entry("b", old),
        "agent:main:slack:channel:C1:thread:17.1": entry("c", old),
        "agent:main:telegram:group:-100123:topic:77": entry("d", old),
        "agent:main:opaque": entry("e", old, chatType="channel"),
        "agent:main:locked": entry("f", old, modelSelectionLocked=True),
    }
    build(kind, state_dir, entries)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["pruned"] == 0 and current_keys(kind, state_dir) == set(entries)


@pytest.mark.parametrize("kind", KINDS)
def test_8_numeric_prune_after_means_days(kind, state_dir):
    maintenance_config(state_dir, pruneAfter=30)
    entries = {"agent:main:a": entry("a", NOW_MS - 31 * DAY), "agent:main:b": entry("b", NOW_MS - 29 * DAY)}
    build(kind, state_dir, entries)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["unreferencedArtifacts"]["olderThanMs"] == 30 * DAY
    assert current_keys(kind, state_dir) == {"agent:main:b"}


@pytest.mark.parametrize("kind", KINDS)
def test_10_default_high_water_is_80_percent(kind, state_dir):
    maintenance_config(state_dir, maxDiskBytes="2gb")
    build(kind, state_dir, {"agent:main:a": entry("a", NOW_MS)})
    doc = service(dry_run=True, now_ms=NOW_MS)
    assert doc["diskBudget"]["maxBytes"] == 2_147_483_648
    assert doc["diskBudget"]["highWaterBytes"] == 1_717_986_918


def test_11_legacy_budget_removes_an_archive_before_any_entry(state_dir):
    entries = {"agent:main:a": entry("a", NOW_MS - DAY), "agent:main:b": entry("b", NOW_MS)}
    root = make_legacy(state_dir, entries)
    old_archive = root / "zz.jsonl.deleted.2026-01-01T00-00-00.000Z"
    old_archive.write_bytes(b"x" * 5000)
    os.utime(old_archive, (1, 1))
    maintenance_config(state_dir)
    total = service(dry_run=True, now_ms=NOW_MS)["diskBudget"]["totalBytesBefore"]
    maintenance_config(state_dir, maxDiskBytes=total - 100, highWaterBytes=total - 4000)
    preview = service(dry_run=True, now_ms=NOW_MS)
    assert preview["diskBudget"]["removedFiles"] == 1 and preview["diskBudget"]["removedEntries"] == 0
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["diskBudget"] == preview["diskBudget"]
    assert not old_archive.exists()
    assert current_keys("legacy", state_dir) == set(entries)
    assert (root / "a.jsonl").exists() and (root / "b.jsonl").exists()


def test_12_fresh_store_temp_of_a_live_writer_is_never_removed(state_dir):
    entries = {"agent:main:main": entry("a", NOW_MS)}  # primary: preserved, stays above the budget
    root = make_legacy(state_dir, entries)
    live = root / f"sessions.json.{os.getpid()}.{uuid.uuid4()}.tmp"
    live.write_bytes(b"{" * 20000)
    stale = root / f"sessions.json.{uuid.uuid4()}.tmp"
    stale.write_bytes(b"{" * 300)
    os.utime(stale, (NOW_MS / 1000 - 1800, NOW_MS / 1000 - 1800))
    os.utime(live, (NOW_MS / 1000 - 60, NOW_MS / 1000 - 60))
    maintenance_config(state_dir, maxDiskBytes=1000, highWaterBytes=500)  # far over budget
    doc = service(enforce=True, now_ms=NOW_MS)
    assert live.exists()
    assert not stale.exists()
    assert doc["appliedCount"] == 1 and doc["unreferencedArtifacts"]["removedFiles"] == 1  # the sweep took it
    assert doc["diskBudget"]["totalBytesAfter"] > doc["diskBudget"]["highWaterBytes"]


def test_13_all_agents_with_one_configured_agent_prints_the_bare_summary(state_dir):
    make_legacy(state_dir, {"agent:main:a": entry("a", NOW_MS)})
    doc = service(all_agents=True, dry_run=True, now_ms=NOW_MS)
    assert "stores" not in doc and doc["agentId"] == "main"


@pytest.mark.parametrize("kind", KINDS)
def test_14_dry_run_writes_nothing(kind, state_dir):
    maintenance_config(state_dir, maxEntries=1, pruneAfter="1d")
    entries = {f"agent:main:s{i}": entry(f"s{i}", NOW_MS - i * DAY) for i in range(6)}
    build(kind, state_dir, entries)
    before = tree_digest(state_dir)
    doc = service(dry_run=True, now_ms=NOW_MS)
    assert doc["wouldMutate"] and doc["dryRun"] is True and doc["afterCount"] < 6
    assert tree_digest(state_dir) == before


def test_19_archive_retention_by_name_timestamp(state_dir):
    now = 1767916800000  # 2026-01-09T00:00:00Z
    root = make_legacy(state_dir, {"agent:main:a": entry("a", now)})
    old = root / "x.jsonl.deleted.2026-01-01T00-00-00.000Z"
    reset = root / "y.jsonl.reset.2026-01-08T00-00-00.000Z.zst"
    for path in (old, reset):
        path.write_bytes(b"data")
    maintenance_config(state_dir)
    doc = service(enforce=True, now_ms=now)
    assert old.exists() and reset.exists() and "archiveCleanup" not in doc  # unset retention keeps archives
    maintenance_config(state_dir, resetArchiveRetention="7d")
    preview = service(dry_run=True, now_ms=now)
    doc = service(enforce=True, now_ms=now)
    assert preview["archiveCleanup"] == {"scannedFiles": 2, "removedFiles": 1}
    assert doc["archiveCleanup"] == preview["archiveCleanup"]
    assert not old.exists() and reset.exists()


def test_20_sqlite_archive_is_zstd_and_empty_transcripts_leave_no_archive(state_dir):
    maintenance_config(state_dir, pruneAfter="30d")
    entries = {
        "agent:main:full": entry("full", NOW_MS - 40 * DAY),
        "agent:main:empty": entry("empty", NOW_MS - 40 * DAY),
    }
    make_sqlite(state_dir, entries, skip={"empty"})
    data = sqlite_transcript_bytes(state_dir, "full")
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["pruned"] == 2 and doc["appliedCount"] == 0
    names = sorted(p.name for p in sessions_dir(state_dir).iterdir())
    assert len(names) == 1 and names[0].startswith("full.jsonl.deleted.") and names[0].endswith(".zst")
    assert read_archive_bytes(sessions_dir(state_dir) / names[0]) == data
    import sqlite3

    conn = sqlite3.connect(db_path(state_dir))
    rows = conn.execute(
        "SELECT archive_name, session_id, encoding, event_count FROM session_transcript_archives"
    ).fetchall()
    events = conn.execute("SELECT count(*) FROM transcript_events").fetchone()[0]
    conn.close()
    assert rows == [(names[0], "full", "zstd", data.count(b"\n"))] and events == 0
