"""Disk-budget math (maintenance.md §6): JSON byte sizes, artifact names, legacy and SQLite budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import NOW_MS, OPENCLAW_FIXTURE
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.maintenance.budget import (
    STALE_TEMP_MS,
    DirFile,
    LegacyDirMeasure,
    SqliteMeasure,
    budget_limits,
    entry_chunk_bytes,
    is_archive_artifact_name,
    is_checkpoint_name,
    is_primary_transcript_name,
    is_store_temp_name,
    js_json_bytes,
    legacy_total_bytes,
    parse_archive_timestamp,
    plan_legacy_budget,
    plan_sqlite_budget,
    sqlite_entry_bytes,
    sqlite_total_bytes,
    store_json_bytes,
)
from openclaw_cli.maintenance.plan import Preserver

SESSIONS = Path("/state/agents/main/sessions")
STAMP = "2026-01-01T00-00-00.000Z"
RESULT_KEYS = [
    "totalBytesBefore",
    "totalBytesAfter",
    "removedFiles",
    "removedEntries",
    "freedBytes",
    "maxBytes",
    "highWaterBytes",
    "overBudget",
]


def never(_key, _entry):
    return False


def measure(*files: DirFile, store: str = "sessions.json") -> LegacyDirMeasure:
    return LegacyDirMeasure(files=list(files), sessions_dir=SESSIONS, store_name=store)


# ---- JSON sizes ---------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_store_json_bytes_equals_pretty_dump(store):
    expected = len(json.dumps(store, indent=2, ensure_ascii=False).encode())
    assert store_json_bytes(store) == expected
    assert js_json_bytes(store) == expected


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, min_size=1, max_size=5))
def test_removing_an_entry_shrinks_by_chunk_plus_two(store):
    key = next(iter(store))
    rest = {k: v for k, v in store.items() if k != key}
    assert store_json_bytes(store) - store_json_bytes(rest) == entry_chunk_bytes(key, store[key]) + 2


def test_js_number_formatting_and_escapes():
    # JS prints integral floats without ".0" and small exponents as plain decimals.
    assert js_json_bytes(1.0) == 1
    assert js_json_bytes(1e-7) == len("1e-7")
    assert js_json_bytes(1.5e-5) == len("0.000015")
    assert js_json_bytes(1e21) == len("1e+21")
    assert js_json_bytes(float("nan")) == len("null")
    assert js_json_bytes("é\n\u2028") == len('"é\\n\u2028"'.encode())
    assert js_json_bytes("\ud800") == len('"\\ud800"')  # a lone surrogate is escaped by JS
    assert store_json_bytes({}) == 2
    assert sqlite_entry_bytes({"a": 1, "b": "é"}) == len('{"a":1,"b":"é"}'.encode())


# ---- artifact names (§7.2) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        f"abc.jsonl.deleted.{STAMP}",
        f"abc.jsonl.reset.{STAMP}",
        f"abc.jsonl.bak.{STAMP}",
        "sessions.json.bak.1737420882",
        f"abc.jsonl.deleted.{STAMP}.zst",
        f"abc.jsonl.deleted.2026-11-30T05-12-35.935Z.{'b3' * 16}.zst",
        "x.jsonl.reset.2026-01-01T00-00-00Z",
    ],
)
def test_archive_names(name):
    assert is_archive_artifact_name(name)
    assert not is_primary_transcript_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "keep.deleted.keep.jsonl",
        "abc.jsonl",
        "abc.jsonl.deleted.yesterday",
        "sessions.json",
        "abc.jsonl.migrated",
        "abc.jsonl.deleted.2026-13-01T00-00-00.000Z",
    ],
)
def test_not_archive_names(name):
    assert not is_archive_artifact_name(name)


def test_parse_archive_timestamp():
    assert parse_archive_timestamp(f"abc.jsonl.deleted.{STAMP}", "deleted") == 1767225600000
    assert parse_archive_timestamp(
        "a.jsonl.reset.2026-02-23T12-34-56.789Z." + "0f" * 16 + ".zst", "reset"
    ) == (1771850096789)
    assert parse_archive_timestamp("a.jsonl.reset.2026-02-23T12-34-56Z", "reset") == 1771850096000
    assert parse_archive_timestamp(f"abc.jsonl.deleted.{STAMP}", "reset") is None  # pinned
    assert parse_archive_timestamp("keep.deleted.keep.jsonl", "deleted") is None


def test_primary_checkpoint_and_temp_names():
    assert is_primary_transcript_name("keep.deleted.keep.jsonl")
    assert not is_primary_transcript_name("x.trajectory.jsonl")
    assert not is_checkpoint_name("abc.checkpoint.not-a-uuid.jsonl")
    assert is_checkpoint_name("abc.checkpoint.123e4567-e89b-12d3-a456-426614174000.jsonl")
    assert is_store_temp_name("sessions.json.123.123e4567-e89b-12d3-a456-426614174000.tmp")
    assert is_store_temp_name("sessions.json.123e4567-e89b-12d3-a456-426614174000.tmp")
    assert is_store_temp_name(f"sessions.json.4242.{'a' * 32}.tmp")  # our fsio naming
    assert not is_store_temp_name("notes.tmp")


# ---- limits -------------------------------------------------------------------------------------


def test_disabled_budget_gives_none():
    entries = {"k": {"sessionId": "s", "updatedAt": 1}}
    for max_b, high in [(None, None), (0, 0), (-1, 10), (100, None)]:
        assert budget_limits(max_b, high) is None
        assert (
            plan_sqlite_budget(
                entries,
                SqliteMeasure({"s": 10**9}),
                max_bytes=max_b,
                high_water_bytes=high,
                is_protected=never,
            ).result
            is None
        )
        assert (
            plan_legacy_budget(
                entries, measure(), max_bytes=max_b, high_water_bytes=high, now_ms=NOW_MS, is_protected=never
            ).result
            is None
        )


# ---- §6.3 SQLite --------------------------------------------------------------------------------


def _abc():
    entries = {
        "A": {"sessionId": "s1", "updatedAt": 1},
        "B": {"sessionId": "s1", "updatedAt": 2},
        "C": {"sessionId": "s2", "updatedAt": 3},
    }
    return entries, SqliteMeasure({"s1": 900, "s2": 500}, {"A": 400, "B": 300, "C": 200})


def test_sqlite_pinned_example_shared_session_released_on_last_reference():
    entries, m = _abc()
    assert sqlite_total_bytes(entries, m) == 2300
    plan = plan_sqlite_budget(entries, m, max_bytes=2000, high_water_bytes=1500, is_protected=never)
    assert plan.evicted_keys == ["A", "B"]
    assert plan.released_session_ids == ["s1"]
    assert plan.result.to_json() == {
        "totalBytesBefore": 2300,
        "totalBytesAfter": 700,
        "removedFiles": 0,
        "removedEntries": 2,
        "freedBytes": 1600,
        "maxBytes": 2000,
        "highWaterBytes": 1500,
        "overBudget": True,
    }
    assert list(plan.result.to_json()) == RESULT_KEYS


def test_sqlite_within_budget_and_warn_only():
    entries, m = _abc()
    idle = plan_sqlite_budget(entries, m, max_bytes=2300, high_water_bytes=1500, is_protected=never)
    assert idle.result.over_budget is False and idle.evicted_keys == []  # trigger is strictly greater
    warn = plan_sqlite_budget(
        entries, m, max_bytes=2000, high_water_bytes=1500, is_protected=never, warn_only=True
    )
    assert warn.evicted_keys == []
    assert warn.result.to_json() == {
        "totalBytesBefore": 2300,
        "totalBytesAfter": 2300,
        "removedFiles": 0,
        "removedEntries": 0,
        "freedBytes": 0,
        "maxBytes": 2000,
        "highWaterBytes": 1500,
        "overBudget": True,
    }


def test_sqlite_skips_protected_and_orders_missing_updated_at_first():
    entries = {
        "new": {"sessionId": "n", "updatedAt": 5},
        "nots": {"sessionId": "x"},
        "keep": {"sessionId": "k", "updatedAt": 1},
        "old": {"sessionId": "o", "updatedAt": 2},
    }
    m = SqliteMeasure({"n": 100, "x": 100, "k": 100, "o": 100}, {k: 0 for k in entries})
    plan = plan_sqlite_budget(
        entries, m, max_bytes=250, high_water_bytes=200, is_protected=lambda k, _e: k == "keep"
    )
    assert plan.evicted_keys == ["nots", "old"]  # `keep` is older than `old` but protected
    assert plan.result.total_bytes_after == 200 and plan.result.removed_entries == 2


def test_sqlite_entry_bytes_default_to_compact_json():
    entries = {"k": {"sessionId": "s", "updatedAt": 1}}
    m = SqliteMeasure({"s": 7})
    assert sqlite_total_bytes(entries, m) == 7 + len(json.dumps(entries["k"], separators=(",", ":")))


# ---- §6.2 legacy directory ----------------------------------------------------------------------


def test_marker_like_session_id_is_not_an_archive():
    entries = {"agent:main:keep": {"sessionId": "keep.deleted.keep", "updatedAt": 1}}
    plan = plan_legacy_budget(
        entries,
        measure(DirFile("keep.deleted.keep.jsonl", 256, 1)),
        max_bytes=150,
        high_water_bytes=100,
        now_ms=NOW_MS,
        is_protected=lambda k, _e: k == "agent:main:keep",
    )
    assert plan.result.over_budget and plan.result.removed_files == 0 and plan.result.removed_entries == 0
    assert plan.file_removals == []


def test_archive_removed_before_referenced_transcript_and_entries():
    """§13 item 11 and the pinned 80 B / 260 B example."""
    entries = {"agent:main:s": {"sessionId": "s", "updatedAt": 1}}
    files = [DirFile("s.jsonl", 80, 10), DirFile(f"old-session.jsonl.deleted.{STAMP}", 260, 20)]
    plan = plan_legacy_budget(
        entries, measure(*files), max_bytes=300, high_water_bytes=220, now_ms=NOW_MS, is_protected=never
    )
    assert [r.name for r in plan.file_removals] == [f"old-session.jsonl.deleted.{STAMP}"]
    assert plan.file_removals[0].kind == "archive" and not plan.file_removals[0].needs_archive
    assert plan.evicted_keys == []
    assert plan.result.removed_files == 1 and plan.result.removed_entries == 0
    assert plan.result.freed_bytes == 260
    assert plan.result.total_bytes_after == 80 + store_json_bytes(entries)


def test_only_stale_store_temp_removed():
    """Pinned: a 30-min-old temp goes, a fresh one stays even though still above high water."""
    stale = DirFile("sessions.json.11.123e4567-e89b-12d3-a456-426614174000.tmp", 300, NOW_MS - 30 * 60_000)
    fresh = DirFile("sessions.json.12.223e4567-e89b-12d3-a456-426614174000.tmp", 300, NOW_MS - 1000)
    notes = DirFile("notes.txt", 300, 1)
    plan = plan_legacy_budget(
        {},
        measure(stale, fresh, notes),
        max_bytes=750,
        high_water_bytes=600,
        now_ms=NOW_MS,
        is_protected=never,
    )
    assert [r.name for r in plan.file_removals] == [stale.name]
    assert plan.result.total_bytes_after == 602 and plan.result.total_bytes_after > 600
    assert plan.result.removed_files == 1


def test_fresh_store_temp_never_removed_under_pressure():
    """§13 item 12: a 1-min-old temp is a live atomic write, even when entries get evicted."""
    temp = DirFile(f"sessions.json.99.{'c' * 32}.tmp", 5000, NOW_MS - 60_000)
    old_temp = DirFile(f"sessions.json.98.{'d' * 32}.tmp", 10, NOW_MS - STALE_TEMP_MS)  # exactly 5 min: stale
    entries = {
        "agent:main:a": {"sessionId": "a", "updatedAt": 1},
        "agent:main:b": {"sessionId": "b", "updatedAt": 2},
    }
    plan = plan_legacy_budget(
        entries,
        measure(temp, old_temp, DirFile("a.jsonl", 100, 1)),
        max_bytes=1000,
        high_water_bytes=500,
        now_ms=NOW_MS,
        is_protected=never,
    )
    assert temp.name not in [r.name for r in plan.file_removals]
    assert old_temp.name in [r.name for r in plan.file_removals]
    assert plan.evicted_keys == ["agent:main:a", "agent:main:b"]  # still over: entries go, the temp stays


def test_preserved_entry_survives_budget():
    entries = {
        "agent:main:subagent:pending-budget": {"sessionId": "p", "updatedAt": 1},
        "agent:main:old-removable": {"sessionId": "o", "updatedAt": 2},
    }
    preserver = Preserver(entries, preserve_keys=["agent:main:subagent:pending-budget"])
    plan = plan_legacy_budget(
        entries, measure(), max_bytes=120, high_water_bytes=80, now_ms=NOW_MS, is_protected=preserver
    )
    assert plan.evicted_keys == ["agent:main:old-removable"]
    assert plan.result.removed_entries == 1
    assert plan.result.total_bytes_after == store_json_bytes(
        {"agent:main:subagent:pending-budget": entries["agent:main:subagent:pending-budget"]}
    )


def test_orphan_trajectory_sidecars_removed_referenced_kept():
    entries = {"agent:main:live": {"sessionId": "live", "updatedAt": 1}}
    files = [
        DirFile("old.trajectory.jsonl", 5000, 1),
        DirFile("old.trajectory-path.json", 5000, 2),
        DirFile("live.jsonl", 10, 3),
        DirFile("live.trajectory.jsonl", 10, 3),
        DirFile("live.trajectory-path.json", 10, 3),
    ]
    plan = plan_legacy_budget(
        entries,
        measure(*files),
        max_bytes=7000,
        high_water_bytes=2000,
        now_ms=NOW_MS,
        is_protected=lambda k, _e: True,
    )
    assert [r.name for r in plan.file_removals] == ["old.trajectory.jsonl", "old.trajectory-path.json"]
    assert all(r.kind == "trajectory" and not r.needs_archive for r in plan.file_removals)
    assert plan.result.removed_files == 2


def test_unreferenced_checkpoint_removed_referenced_ones_kept():
    ck = "123e4567-e89b-12d3-a456-42661417400{}"
    entry = {
        "sessionId": "s",
        "updatedAt": 1,
        "compactionCheckpoints": [
            {
                "preCompaction": {"sessionFile": str(SESSIONS / f"s.checkpoint.{ck.format(1)}.jsonl")},
                "postCompaction": {"sessionFile": "s-post.jsonl"},
            }
        ],
    }
    files = [
        DirFile(f"s.checkpoint.{ck.format(1)}.jsonl", 5000, 1),
        DirFile("s-post.jsonl", 5000, 1),
        DirFile(f"s.checkpoint.{ck.format(2)}.jsonl", 5000, 2),
        DirFile("s.jsonl", 10, 1),
    ]
    plan = plan_legacy_budget(
        {"agent:main:s": entry},
        measure(*files),
        max_bytes=1000,
        high_water_bytes=500,
        now_ms=NOW_MS,
        is_protected=lambda k, _e: True,
    )
    assert [(r.name, r.kind, r.needs_archive) for r in plan.file_removals] == [
        (f"s.checkpoint.{ck.format(2)}.jsonl", "checkpoint", True)
    ]


def test_protected_thread_and_active_main_survive_only_worker_evicted():
    entries = {
        "agent:main:slack:channel:C1:thread:1": {"sessionId": "t", "updatedAt": 1},
        "agent:main:subagent:old-worker": {"sessionId": "w", "updatedAt": 2},
        "agent:main:main": {"sessionId": "m", "updatedAt": 3},
    }
    files = [
        DirFile("t.jsonl", 400, 1),
        DirFile("w.jsonl", 400, 1),
        DirFile("w.trajectory.jsonl", 50, 1),
        DirFile("m.jsonl", 400, 1),
    ]
    preserver = Preserver(entries, active_key="agent:main:main")
    plan = plan_legacy_budget(
        entries, measure(*files), max_bytes=1000, high_water_bytes=500, now_ms=NOW_MS, is_protected=preserver
    )
    assert plan.evicted_keys == ["agent:main:subagent:old-worker"]
    assert [(r.name, r.needs_archive, r.session_id) for r in plan.file_removals] == [
        ("w.jsonl", True, "w"),
        ("w.trajectory.jsonl", False, "w"),
    ]
    assert plan.released_session_ids == ["w"]
    assert plan.result.total_bytes_after > 500  # protected rows keep it above high water


def test_shared_transcript_released_with_last_entry_only():
    entries = {
        "agent:main:a": {"sessionId": "s", "updatedAt": 1},
        "agent:main:b": {"sessionId": "s", "updatedAt": 2},
        "agent:main:main": {"sessionId": "m", "updatedAt": 3},
    }
    files = [DirFile("s.jsonl", 1000, 1), DirFile("m.jsonl", 10, 1)]
    plan = plan_legacy_budget(
        entries,
        measure(*files),
        max_bytes=900,
        high_water_bytes=400,
        now_ms=NOW_MS,
        is_protected=Preserver(entries),
    )
    assert plan.evicted_keys == ["agent:main:a", "agent:main:b"]
    assert [r.name for r in plan.file_removals] == ["s.jsonl"]
    assert plan.released_session_ids == ["s"]


def test_legacy_warn_only_reports_without_removing():
    files = [DirFile(f"x.jsonl.deleted.{STAMP}", 1000, 1)]
    plan = plan_legacy_budget(
        {},
        measure(*files),
        max_bytes=500,
        high_water_bytes=400,
        now_ms=NOW_MS,
        is_protected=never,
        warn_only=True,
    )
    assert plan.file_removals == [] and plan.result.over_budget
    assert plan.result.total_bytes_before == plan.result.total_bytes_after == 1002


def test_store_file_counted_as_projection_and_prompt_blobs():
    digest = "ab" * 32
    entries = {
        "agent:main:k": {
            "sessionId": "k",
            "updatedAt": 1,
            "skillsSnapshot": {"promptRef": f"sha256:{digest}"},
        }
    }
    files = [
        DirFile("sessions.json", 999_999, 1),
        DirFile(f"skills-prompts/sha256/ab/{digest}.txt", 300, 1),
        DirFile(f"skills-prompts/sha256/cd/{'cd' * 32}.txt", 300, 5),
        DirFile(f"skills-prompts/sha256/ef/{'ef' * 32}.txt.1.tmp", 300, NOW_MS),
    ]
    m = measure(*files)
    assert legacy_total_bytes(entries, m) == 900 + store_json_bytes(entries)
    plan = plan_legacy_budget(
        entries, m, max_bytes=800, high_water_bytes=700, now_ms=NOW_MS, is_protected=lambda k, _e: True
    )
    # only the unreferenced blob goes; the referenced one and the fresh blob temp stay
    assert [r.kind for r in plan.file_removals] == ["prompt-blob"]
    assert plan.file_removals[0].name.startswith("skills-prompts/sha256/cd/")


def test_tiers_archives_before_orphan_transcripts_even_when_newer():
    files = [DirFile("orphan.jsonl", 500, 1), DirFile(f"a.jsonl.reset.{STAMP}", 500, 100)]
    plan = plan_legacy_budget(
        {}, measure(*files), max_bytes=600, high_water_bytes=550, now_ms=NOW_MS, is_protected=never
    )
    assert [r.name for r in plan.file_removals] == [f"a.jsonl.reset.{STAMP}"]


def test_real_fixture_legacy_state_budget():
    """The real legacy fixture: the orphan transcript goes first (through an archive), then the
    oldest unprotected entries with their transcripts; groups and the primary key stay."""
    sessions_dir = OPENCLAW_FIXTURE / "legacy-state/agents/main/sessions"
    entries = json.loads((sessions_dir / "sessions.json").read_text())
    files = [
        DirFile(p.name, p.stat().st_size, p.stat().st_mtime * 1000)
        for p in sorted(sessions_dir.iterdir())
        if p.is_file()
    ]
    m = LegacyDirMeasure(files, sessions_dir)
    total = legacy_total_bytes(entries, m)
    plan = plan_legacy_budget(
        entries,
        m,
        max_bytes=total - 1,
        high_water_bytes=total // 2,
        now_ms=NOW_MS,
        is_protected=Preserver(entries),
    )
    referenced = {f"{e['sessionId']}.jsonl" for e in entries.values()}
    first = plan.file_removals[0]
    assert first.kind == "transcript" and first.needs_archive and first.name not in referenced
    assert first.session_id is None
    assert plan.evicted_keys, "half the budget needs entry evictions"
    assert not any(":group:" in k or k == "agent:main:main" for k in plan.evicted_keys)
    by_age = sorted((k for k in entries if k in plan.evicted_keys), key=lambda k: entries[k]["updatedAt"])
    assert plan.evicted_keys == by_age
    assert plan.result.total_bytes_after <= total // 2 or len(plan.evicted_keys) == sum(
        1 for k, e in entries.items() if not Preserver(entries)(k, e)
    )
