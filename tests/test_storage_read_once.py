"""`openclaw storage` reads each file store's sessions.json once (issue 27 §1, 100,000 sessions):
the rows' file facts made in that read feed both the cleanup plan (what each setting would reclaim)
and the tally (kinds, snapshot bytes, transcripts); the document is the one made with a read each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cleanup_support import sessions_dir_of_every_kind
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.storage_support import SESSIONS_DIR, cli_json, make_state


def _state(state_dir: Path) -> None:
    """The fixture's legacy store with snapshot fields, a transcript under another name than its
    session id, and settings under which the plan prunes, caps and sweeps."""
    make_state("legacy", state_dir)
    sessions = state_dir / SESSIONS_DIR
    rows = json.loads((sessions / "sessions.json").read_text())
    keys = list(rows)
    rows[keys[0]]["systemPromptReport"] = {"chars": 1234, "text": "x" * 500}
    rows[keys[1]]["skillsSnapshot"] = {"promptRef": "sha256:" + "a" * 64, "skills": ["s"] * 20}
    rows[keys[2]]["sessionDiffBaseline"] = "b" * 300
    moved = sessions / f"{rows[keys[3]]['sessionId']}.jsonl"
    renamed = sessions / "renamed-transcript.jsonl"
    moved.rename(renamed)
    rows[keys[3]]["sessionFile"] = str(renamed)
    # OpenClaw's layout (`JSON.stringify(store, null, 2)`), which the per-row cutter reads
    (sessions / "sessions.json").write_text(json.dumps(rows, indent=2))
    (sessions / "99999999-2222-4333-8444-555555555555.jsonl").write_text('{"type":"session"}\n')  # orphan
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "warn", "pruneAfter": "3d", "maxEntries": 4}}})
    )


def _doc(*args: str) -> dict[str, Any]:
    code, doc, err = cli_json("storage", *args)
    assert code == 0, err
    doc.pop("generatedAt")
    return doc


def _calls_of(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> list[str]:
    """The store paths `cls.name` is called on from now on (the method still runs)."""
    calls: list[str] = []
    original = getattr(cls, name)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(self.path))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)
    return calls


@pytest.mark.parametrize("release", ["2026.7", "2026.9.6"])
def test_sessions_json_is_read_once_and_the_document_is_unchanged(
    release: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.ops import storage as ops_storage
    from openclaw_cli.store.legacy.store import LegacyStore

    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "cache"))
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", release)
    _state(state_dir)
    reads = _calls_of(monkeypatch, LegacyStore, "_split_rows")
    facts_made = _calls_of(monkeypatch, LegacyStore, "load_file_facts")
    once = _doc()
    assert once["cleanupPlanned"] is True and [r for r in once["reclaimable"] if r.get("bytes")]
    assert len(reads) == 1  # one read of sessions.json for the plan and the tally
    # 2026.7's disk budget projects the rewritten store (the plan reads whole rows): no facts held
    # beside them, the tally reads the rows itself
    assert len(facts_made) == (0 if release == "2026.7" else 1)
    assert sum(k["snapshotBytes"] for k in once["byKind"]) > 800
    # the same document with the plan and the tally each reading the store themselves
    monkeypatch.setattr(ops_storage, "_file_facts", lambda ctx, targets, *rest: {})
    reads.clear()
    assert _doc() == once
    if release != "2026.7":
        assert len(reads) == 2
    # and the tally alone (no plan) reads the whole rows: the same figures
    plain = _doc("--no-plan")
    for name in ("total", "byAgent", "byContainer", "byKind", "byPayload", "topSessions", "topEvents"):
        assert plain[name] == once[name], name


@pytest.mark.parametrize("cold", ["none", "dir", "link-to-self"])
def test_the_physical_budget_from_the_plans_listing_equals_a_listing_of_its_own(
    cold: str, tmp_path: Path
) -> None:
    """The 2026.9.6+ budget measures the sessions dir from the listing the plan already made
    (`measure_physical(..., snapshot)`): the same bytes as listing it again (leftovers left out,
    links and subdirectories not counted, `cold/` and prompt blobs still measured, once each)."""
    from openclaw_cli.maintenance.budget import measure_physical
    from openclaw_cli.store.files import scan_sessions_dir

    root = tmp_path / "sessions"
    sessions_dir_of_every_kind(root, cold)
    (root / "sessions.json").write_bytes(b"{}" * 50)
    listed = measure_physical(root, None)
    assert listed.total_bytes == 1000 + 100 + 300 + 77 + (400 if cold == "dir" else 0)
    assert measure_physical(root, None, scan_sessions_dir(root)) == listed


def _reference_shape(key: str) -> int:
    """`archiving._key_shape` as it was, from the public predicates (each parses the key)."""
    from openclaw_cli.keys import is_model_run_probe_key, is_synthetic_key, parse_thread
    from openclaw_cli.maintenance import archiving as a

    bits = a._MODEL_RUN | a._DISPOSABLE if is_model_run_probe_key(key) else 0
    if is_synthetic_key(key):
        bits |= a._DISPOSABLE
    rest = a._rest(key)
    if (rest or "").startswith("dashboard:"):
        bits |= a._DASHBOARD
    if not bits & a._DISPOSABLE:
        lowered = key.strip().lower()
        shape = rest if rest is not None else lowered
        if (
            lowered == "global"
            or rest == "main"
            or parse_thread(key)
            or a.is_delivery_route(key)
            or a._DIRECT_PEER.match(shape)
            or a._EXTERNAL_GROUP.match(shape)
            or a._TELEGRAM_DM_TOPIC.match(shape)
        ):
            bits |= a._KEY_PROTECTED
    return bits


def test_a_keys_shape_from_one_parse_equals_the_predicates_verdicts() -> None:
    """The planner's per-key verdicts (`_key_shape`, most of `storage`'s plan at 100,000 rows)
    parse the key once: the same bits as every predicate parsing it itself."""
    import itertools

    from openclaw_cli.maintenance.archiving import _key_shape

    heads = ["agent:main:", "AGENT:Ops:", " agent:main: ", "agent::", "agent:main::", "", "main:", "x:"]
    rests = [
        "main",
        "MAIN ",
        "global",
        "heartbeat",
        "cron:job1",
        "cron:job1:run:r2",
        "subagent:abc",
        "hook:h1",
        "acp:x",
        "node-1",
        "explicit:model-run-8b5d4fe0-8dd8-4991-9c37-3e37e00081cc",
        "dashboard:b7c0",
        "telegram:direct:100001",
        "telegram:acct:dm:42",
        "telegram:acct:dm: ",
        "telegram:group:-1006",
        "discord:channel:general",
        "telegram:direct:5:topic:9",
        "direct:alice",
        "whatsapp:group:",
        "slack:channel:c1:thread:t1",
        "x:thread:",
        "custom-name",
        "a:b:heartbeat:c",
        "agent:nested:main",
    ]
    keys = [h + r for h, r in itertools.product(heads, rests)] + ["global", "GLOBAL", "unknown", " ", ":"]
    for key in keys:
        assert _key_shape(key) == _reference_shape(key), key


def test_the_archive_planner_asks_each_rows_protection_once() -> None:
    """The prune and cap stages share each unarchived row's verdict (asked twice per row before,
    ~0.4 s of `storage`'s plan at 100,000 rows); the stages decide as before."""
    from collections import Counter

    from openclaw_cli.maintenance.archiving import Guard, plan_archiving

    day = 86_400_000
    now = 1_800_000_000_000
    store = {
        f"agent:main:custom-{i}": {"sessionId": f"s{i}", "updatedAt": now - (i % 40) * day} for i in range(60)
    }
    store["agent:main:custom-7"]["pinnedAt"] = now
    store["agent:main:custom-8"]["archivedAt"] = now - day
    store["agent:main:subagent:x"] = {"sessionId": "sx", "updatedAt": now - 50 * day}
    asked: Counter[tuple[str, bool]] = Counter()

    class Counting(Guard):
        def free_fn(self) -> Any:
            is_free = super().free_fn()

            def counted(key: str, entry: Any) -> bool:
                asked[(key, False)] += 1
                return is_free(key, entry)

            return counted

    def plan(guard: Guard) -> Any:
        return plan_archiving(
            store,
            guard=guard,
            prune_after_ms=30 * day,
            max_entries=10,
            dashboard_after_ms=None,
            model_run_after_ms=None,
        )

    counted = plan(Counting(frozenset(), frozenset(), None, now))
    plain = plan(Guard(frozenset(), frozenset(), None, now))
    assert (counted.deleted, counted.archived, counted.capped) == (
        plain.deleted,
        plain.archived,
        plain.capped,
    )
    assert counted.archived and counted.deleted  # (aged, capped and pruned rows all there)
    assert max(asked.values()) == 1


@given(
    st.dictionaries(
        st.sampled_from(["lastInteractionAt", "lastActivityAt", "sessionStartedAt", "updatedAt", "other"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-(10**15), max_value=10**15),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=3),
        ),
    )
)
def test_activity_is_the_maximum_of_the_activity_fields(entry: dict[str, Any]) -> None:
    """`archiving.activity_at` without the generator equals its definition."""
    from openclaw_cli.maintenance.archiving import _number, activity_at

    fields = ("lastInteractionAt", "lastActivityAt", "sessionStartedAt", "updatedAt")
    expected = max(0.0, *(_number(entry.get(name)) for name in fields))
    got = activity_at(entry)
    assert got == expected and type(got) is float and str(got) == str(expected)


_GUARD_KEYS = [
    "agent:main:main",
    "global",
    "agent:main:custom-1",
    "agent:main:subagent:x",
    "subagent:y",
    "agent:main:dashboard:a",
    "agent:main:cron:job:run:1",
    "agent:main:telegram:direct:p",
    "agent:main:telegram:group:g",
    "agent:main:slack:channel:c:thread:1",
    "agent:main:direct:p",
    "agent:main:telegram:dm:p:topic:2",
    "agent:main:openai:probe-1",
    " Agent:Main:Custom-1 ",
]
_GUARD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5).map(lambda d: 1_800_000_000_000 + d * 3_600_000),
    st.sampled_from(
        ["running", "done", "group", " Channel ", "thread", "direct", "", "s1", "agent:main:main"]
    ),
    st.just({"kind": "external"}),
    st.just({"kind": "internal"}),
    st.just({"chatType": "group"}),
)


@settings(max_examples=2000, deadline=None)
@given(
    st.sampled_from(_GUARD_KEYS),
    st.dictionaries(
        st.sampled_from(
            [
                "pinnedAt",
                "modelSelectionLocked",
                "status",
                "sessionId",
                "spawnedBy",
                "parentSessionKey",
                "lastInteractionAt",
                "updatedAt",
                "delivery",
                "chatType",
                "origin",
            ]
        ),
        _GUARD_VALUES,
    ),
    st.sampled_from([None, 0, 3_600_000, 86_400_000]),
    st.sampled_from([(), ("agent:main:custom-1",), ("s1",)]),
)
def test_the_guards_per_row_verdict_is_not_preserved(
    key: str, entry: dict[str, Any], recent: int | None, preserve: tuple[str, ...]
) -> None:
    """`Guard.free_fn` (the archive planner's per-row check, its conditions inline and reordered)
    answers `not Guard.preserved(key, entry, False)` for every row."""
    from openclaw_cli.maintenance.archiving import Guard

    guard = Guard(frozenset(preserve), frozenset(preserve), recent, 1_800_000_000_000)
    assert guard.free_fn()(key, entry) is (not guard.preserved(key, entry, False))


@given(st.one_of(st.text(max_size=12), st.sampled_from(["", " x", "a/b", "..", "abc-DEF_1.2:3@4", "é"])))
def test_a_facts_rows_names_without_its_session_file_equal_the_general_rule(sid: str) -> None:
    """`artifacts._names_fn` of a row whose `sessionFile` was left out (its default) answers
    `_fast_candidate_names(sid, None, root)`, or the general rule when that has no answer."""
    from openclaw_cli.maintenance.artifacts import _names_fn
    from openclaw_cli.maintenance.budget import _fast_candidate_names, entry_artifact_names
    from openclaw_cli.store.files import DirSnapshot

    root = Path("/state/agents/main/sessions")
    entry = {"sessionId": sid, "updatedAt": 1}
    fast = _fast_candidate_names(sid, None, root)
    expected = fast if fast is not None else entry_artifact_names(entry, root)
    assert _names_fn(DirSnapshot(root), root)(entry) == expected


def test_entry_file_sizes_sum_what_entry_file_actions_list(tmp_path: Path) -> None:
    """Issue 27: a figures-only plan (`storage`) sums the removed rows' files without a
    `FileAction` each: the same files, sizes and order, and the bytes per session id that
    `reason_bytes` summed over the actions (shared, still referenced, protected, missing files,
    a row without a session id, a file two removed rows name)."""
    from openclaw_cli.maintenance.artifacts import entry_file_actions, entry_file_sizes
    from openclaw_cli.store.files import scan_sessions_dir

    root = tmp_path / "sessions"
    root.mkdir()
    for name, size in [
        ("a.jsonl", 100),
        ("a.trajectory.jsonl", 30),
        ("b.jsonl", 200),
        ("c.jsonl", 400),
        ("d.jsonl", 800),
        ("kept.jsonl", 1600),
        ("shared.jsonl", 3200),
        ("e-topic-7.jsonl", 6400),
    ]:
        (root / name).write_bytes(b"x" * size)
    entries: dict[str, Any] = {
        "agent:main:a": {"sessionId": "a", "sessionFile": str(root / "a.jsonl")},
        "agent:main:b": {"sessionId": "b"},
        "agent:main:c": {"sessionId": "c"},  # protected (another store holds it)
        "agent:main:d": {"sessionFile": str(root / "d.jsonl")},  # no session id
        "agent:main:s1": {"sessionId": "s1", "sessionFile": str(root / "shared.jsonl")},
        "agent:main:s2": {"sessionId": "s2", "sessionFile": str(root / "shared.jsonl")},
        "agent:main:gone": {"sessionId": "gone"},  # no file
        "agent:main:e": {"sessionId": "e", "sessionFile": str(root / "e-topic-7.jsonl")},
        "agent:main:kept": {"sessionId": "kept"},
    }
    removed = [k for k in entries if k != "agent:main:kept"]
    snapshot = scan_sessions_dir(root)
    still, protected = {"kept.jsonl", "b.jsonl"}, {"c.jsonl"}
    actions = entry_file_actions(snapshot, entries, removed, still, protected)
    sizes, by_sid = entry_file_sizes(snapshot, entries, removed, still, protected)
    assert list(sizes.items()) == [(a.name, a.size) for a in actions]
    assert "shared.jsonl" in sizes and "b.jsonl" not in sizes and "c.jsonl" not in sizes
    expected: dict[str, int] = {}
    for action in actions:
        if action.session_id:
            expected[action.session_id] = expected.get(action.session_id, 0) + action.size
    assert by_sid == expected
    assert by_sid["a"] == 130 and by_sid["s1"] == 3200 and "s2" not in by_sid
