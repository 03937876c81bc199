"""The fast paths of the planner and of the read-only summaries (status, stats) give the same
answers as straightforward reference implementations kept here: per-key predicates from
`keys.py`, the §5 stages written out literally, and the transcript rule of `paths.py`."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import NOW_MS, generate_legacy_state
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.keys import is_durable_external_pointer, is_model_run_probe_key, is_primary_key
from openclaw_cli.maintenance.plan import CAP_FLOOR, plan_cleanup, plan_runtime_maintenance
from openclaw_cli.paths import resolve_transcript_path
from openclaw_cli.store import archives as archives_mod
from openclaw_cli.store.legacy.store import LegacyStore

DAY = 86_400_000


@dataclass(frozen=True)
class Settings:
    mode: str = "enforce"
    prune_after_ms: int | None = 30 * DAY
    max_entries: int | None = 500
    reset_archive_retention_ms: int | None = None
    max_disk_bytes: int | None = None
    high_water_bytes: int | None = None
    model_run_prune_after_ms: int | None = DAY


# ---- the reference planner ----------------------------------------------------------------------


def _form(key: Any) -> str:
    return key.strip().lower() if isinstance(key, str) else ""


def _updated(entry: Any) -> float | None:
    value = entry.get("updatedAt") if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def reference_preserved(
    entries: Mapping[str, Any], preserve_keys=(), active_key=None, preserve_session_ids=()
) -> set[str]:
    keys = {_form(k) for k in preserve_keys if isinstance(k, str) and k.strip()}
    active = _form(active_key) if isinstance(active_key, str) and active_key.strip() else None
    if active:
        keys.add(active)
        by_form: dict[str, Any] = {}
        for k, e in entries.items():
            by_form.setdefault(_form(k), e)
        current = by_form.get(active)
        while isinstance(current, Mapping):
            parent = current.get("parentSessionKey")
            form = _form(parent)
            if not form or form in keys:
                break
            keys.add(form)
            current = by_form.get(form)
    sids = {s for s in preserve_session_ids if isinstance(s, str) and s}
    out = set()
    for key, entry in entries.items():
        mapping = entry if isinstance(entry, Mapping) else {}
        sid = mapping.get("sessionId")
        if (
            mapping.get("modelSelectionLocked") is True
            or _form(key) in keys
            or (isinstance(sid, str) and sid in sids)
            or is_durable_external_pointer(key, entry)
            or is_primary_key(key)
        ):
            out.add(key)
    return out


def reference_plan(entries: Mapping[str, Any], s: Settings, now_ms: float, **preserve) -> dict[str, Any]:
    """§5.5 forced maintenance written out literally (no repairs, no budget)."""
    preserved = reference_preserved(entries, **preserve)
    store = dict(entries)
    actions = {k: "keep" for k in entries}
    removed: list[str] = []
    counts = {"model_run_pruned": 0, "pruned": 0, "capped": 0}

    def remove(keys: list[str], action: str, counter: str) -> None:
        for k in keys:
            del store[k]
            actions[k] = action
            removed.append(k)
        counts[counter] = len(keys)

    if s.mode == "enforce":
        cap = _positive(s.max_entries)
        retention = _positive(s.model_run_prune_after_ms)
        if cap is not None and len(store) > cap and retention is not None:
            remove(
                [
                    k
                    for k, e in store.items()
                    if is_model_run_probe_key(k)
                    and k not in preserved
                    and _updated(e) is not None
                    and _updated(e) < now_ms - retention
                ],
                "prune-model-run",
                "model_run_pruned",
            )
        after = _positive(s.prune_after_ms)
        if after is not None:
            remove(
                [
                    k
                    for k, e in store.items()
                    if k not in preserved and _updated(e) is not None and _updated(e) < now_ms - after
                ],
                "prune-stale",
                "pruned",
            )
        if cap is not None:
            candidates = [k for k in store if k not in preserved]
            budget = max(0, cap - (len(store) - len(candidates)))
            if budget == 0:
                budget = min(cap, CAP_FLOOR)
            if len(candidates) > budget:
                order = {k: i for i, k in enumerate(store)}
                ranked = sorted(
                    candidates,
                    key=lambda k: (
                        0 if _updated(store[k]) is not None else 1,
                        -(_updated(store[k]) or 0),
                        order[k],
                    ),
                )
                victims = set(ranked[budget:])
                remove([k for k in store if k in victims], "cap-overflow", "capped")
    still = {e.get("sessionId") for e in store.values() if isinstance(e, Mapping)}
    unreferenced: list[str] = []
    for k in removed:
        sid = entries[k].get("sessionId") if isinstance(entries[k], Mapping) else None
        if isinstance(sid, str) and sid.strip() and sid not in still and sid not in unreferenced:
            unreferenced.append(sid)
    return {
        "actions": actions,
        "removed": removed,
        "preserved": preserved,
        "unreferenced": unreferenced,
        **counts,
    }


def assert_same(plan, ref: dict[str, Any]) -> None:
    assert plan.actions == ref["actions"]
    assert list(plan.actions) == list(ref["actions"])
    assert plan.removed == ref["removed"]
    assert set(plan.preserved_keys) == ref["preserved"]
    assert (plan.model_run_pruned, plan.pruned, plan.capped) == (
        ref["model_run_pruned"],
        ref["pruned"],
        ref["capped"],
    )
    assert plan.unreferenced_session_ids == ref["unreferenced"]


# ---- generated stores ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    return generate_legacy_state(
        root / "state", 1500, 0.3, 11, "--min-turns", "1", "--missing", "3", "--orphans", "4"
    )


def _entries(state: Path) -> dict[str, Any]:
    return orjson.loads((state / "agents" / "main" / "sessions" / "sessions.json").read_bytes())


@pytest.mark.parametrize(
    "s",
    [
        Settings(),
        Settings(max_entries=100),
        Settings(max_entries=5000, prune_after_ms=7 * DAY),
        Settings(max_entries=3, prune_after_ms=None),
        Settings(max_entries=None, prune_after_ms=DAY),
        Settings(mode="warn", max_entries=50),
    ],
)
def test_generated_store_plan_equals_reference(generated, s):
    entries = _entries(generated)
    plan = plan_cleanup(entries, s, now_ms=NOW_MS, agent_id="main")
    assert_same(plan, reference_plan(entries, s, NOW_MS))


def test_generated_store_with_preserve_keys_and_active_chain(generated):
    entries = _entries(generated)
    keys = list(entries)
    # an active key whose parent chain runs through three older rows
    chain = keys[-4:]
    for child, parent in zip(chain, chain[1:], strict=False):
        entries[child] = {**entries[child], "parentSessionKey": " " + parent.upper()}
    preserve = {
        "preserve_keys": [keys[10], keys[20].upper()],
        "active_key": chain[0],
        "preserve_session_ids": [entries[keys[30]]["sessionId"]],
    }
    s = Settings(max_entries=40, prune_after_ms=DAY)
    plan = plan_cleanup(entries, s, now_ms=NOW_MS, agent_id="main", **preserve)
    ref = reference_plan(entries, s, NOW_MS, **preserve)
    assert_same(plan, ref)
    assert set(chain) | {keys[10], keys[20], keys[30]} <= ref["preserved"]
    runtime = plan_runtime_maintenance(entries, s, now_ms=NOW_MS, force=True, **preserve)
    assert runtime.removed == ref["removed"] and set(runtime.preserved_keys) == ref["preserved"]


# ---- tricky keys and entries --------------------------------------------------------------------

_KEY_PARTS = [
    "agent:main:",
    "AGENT:Main:",
    " agent:ops:",
    "agent::",
    "",
    "global",
    "GLOBAL ",
    "main",
    " MAIN",
    "Main\t",
    "x:main",
    "telegram:group:-1:topic:2",
    "telegram:DM:u:TOPIC:9",
    "discord:channel:c",
    "slack:Group:g",
    ":thread:",
    ":THREAD: t",
    ":thread: ",
    "subagent:a",
    "cron:j:run:1",
    "cron:j",
    "heartbeat",
    "x:heartbeat",
    "hook:h",
    "acp:1",
    "explicit:model-run-123e4567-e89b-12d3-a456-426614174000",
    "direct:peer",
    "matrix:channel:!Room",
    "signal:group:AbC",
    "İmain",
    "dashboard:1",
    "hook:group:x",
    "acp-bridge:channel:y",
    "Node:Group:z",
    "x:group:heartbeat",
    "x:channel:HeartBeat",
    "tg:group:a b",
    "tg:group:x:thread:1",
    "discord:channel:c:topic:2",
    "telegram:group:-5",
]
_CHAT = [None, "direct", "group", " Group ", "THREAD", "channel", "room", 3, ["group"], ""]
_ORIGIN = [None, {"chatType": "channel"}, {"chatType": "direct"}, "origin", {"chatType": 5}]


@st.composite
def tricky_stores(draw) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 30))):
        key = "".join(draw(st.lists(st.sampled_from(_KEY_PARTS), min_size=1, max_size=3)))
        if draw(st.integers(0, 12)) == 0:
            out[key] = draw(st.sampled_from(["text", None, [1], 7]))
            continue
        entry: dict[str, Any] = {"sessionId": f"s{draw(st.integers(0, 9))}"}
        age = draw(st.sampled_from([None, 0, DAY, 2 * DAY, 40 * DAY, "old", True, float("nan"), 3.5 * DAY]))
        if age is not None:
            entry["updatedAt"] = (
                NOW_MS - age if isinstance(age, int | float) and not isinstance(age, bool) else age
            )
        chat = draw(st.sampled_from(_CHAT))
        if chat is not None:
            entry["chatType"] = chat
        origin = draw(st.sampled_from(_ORIGIN))
        if origin is not None:
            entry["origin"] = origin
        lock = draw(st.sampled_from([None, True, "true", False]))
        if lock is not None:
            entry["modelSelectionLocked"] = lock
        out[key] = entry
    return out


@settings(max_examples=300, deadline=None)
@given(
    tricky_stores(),
    st.sampled_from([None, 0, 1, 3, 10]),
    st.sampled_from([None, DAY, 30 * DAY]),
    st.lists(st.sampled_from(["agent:main:main", " GLOBAL", "agent:main:hook:h", "x"]), max_size=2),
    st.sampled_from([None, "agent:main:subagent:a", "AGENT:MAIN:DIRECT:PEER "]),
    st.lists(st.sampled_from(["s1", "s2"]), max_size=1),
)
def test_tricky_stores_plan_equals_reference(entries, cap, after, preserve_keys, active_key, sids):
    s = Settings(max_entries=cap, prune_after_ms=after)
    preserve = {"preserve_keys": preserve_keys, "active_key": active_key, "preserve_session_ids": sids}
    plan = plan_cleanup(entries, s, now_ms=NOW_MS, agent_id="main", **preserve)
    assert_same(plan, reference_plan(entries, s, NOW_MS, **preserve))


# ---- legacy store statistics ------------------------------------------------------------------


def reference_stats(store: LegacyStore) -> dict[str, Any]:
    """stats() from first principles: the general transcript rule for every usable row."""
    root = store.sessions_dir
    entries = store.load_entries()
    referenced: dict[Path, list[str]] = {}
    for key, entry in entries.items():
        session_file = entry.get("sessionFile") if isinstance(entry.get("sessionFile"), str) else None
        path = resolve_transcript_path(root, entry["sessionId"], session_file)
        if path is not None:
            referenced.setdefault(path, []).append(key)
    names = {p.name for p in referenced if p.parent == root}
    orphans = [
        p
        for p in root.iterdir()
        if p.name not in names
        and not p.is_symlink()
        and p.is_file()
        and archives_mod.is_primary_transcript_name(p.name)
    ]
    archives = archives_mod.list_archives(root)
    return {
        "sessions": len(entries),
        "transcript_bytes": sum(os.lstat(p).st_size for p in referenced),
        "archives": (len(archives), sum(a.size for a in archives)),
        "compactions": sum(
            e["compactionCount"]
            for e in entries.values()
            if type(e.get("compactionCount")) is int and e["compactionCount"] > 0
        ),
        "missingTranscripts": len(entries) - sum(len(v) for v in referenced.values()),
        "orphanTranscripts": len(orphans),
        "orphanTranscriptBytes": sum(os.lstat(p).st_size for p in orphans),
    }


def _stats_view(store: LegacyStore) -> dict[str, Any]:
    stats = store.stats()
    return {
        "sessions": stats.sessions,
        "transcript_bytes": stats.transcript_bytes,
        "archives": (stats.archives_count, stats.archives_bytes),
        "compactions": stats.compactions,
        **{k: stats.extra[k] for k in ("missingTranscripts", "orphanTranscripts", "orphanTranscriptBytes")},
    }


@pytest.mark.parametrize(
    "extra", [(), ("--relative-session-file",), ("--no-session-file",), ("--missing", "3", "--orphans", "2")]
)
def test_stats_equal_reference_on_generated_states(tmp_path, extra):
    state = generate_legacy_state(tmp_path / "s", 40, 0.05, 5, *extra)
    store = LegacyStore(state / "agents" / "main" / "sessions" / "sessions.json", "main")
    assert _stats_view(store) == reference_stats(store)


def test_stats_equal_reference_on_odd_rows(tmp_path):
    state = generate_legacy_state(tmp_path / "s", 30, 0.05, 9)
    root = state / "agents" / "main" / "sessions"
    store_file = root / "sessions.json"
    rows = orjson.loads(store_file.read_bytes())
    keys = list(rows)
    sids = [rows[k]["sessionId"] for k in keys]
    (root / "sub").mkdir()
    os.rename(root / f"{sids[0]}.jsonl", root / "sub" / f"{sids[0]}.jsonl")
    rows[keys[0]]["sessionFile"] = "sub/" + f"{sids[0]}.jsonl"  # a sub-directory: the general rule
    rows[keys[1]]["sessionFile"] = f"/elsewhere/machine/{sids[1]}.jsonl"  # re-rooted by basename
    rows[keys[2]]["sessionFile"] = str(root / "sub" / ".." / f"{sids[2]}.jsonl")  # not normalised
    rows[keys[3]]["sessionFile"] = "sqlite:transcript"
    rows[keys[4]]["sessionFile"] = "."
    os.rename(root / f"{sids[5]}.jsonl", root / f"{sids[5]}-topic-7.jsonl")
    rows[keys[5]]["sessionFile"] = f"{sids[5]}-topic-7.jsonl"
    rows[keys[6]]["sessionFile"] = rows[keys[7]]["sessionFile"]  # two rows, one file
    target = root / f"{sids[8]}.jsonl"
    os.rename(target, tmp_path / "outside.jsonl")
    target.symlink_to(tmp_path / "outside.jsonl")  # a symlinked transcript: not followed
    rows[keys[9]]["compactionCount"] = "3"  # wrong type: reported, not counted
    rows[keys[10]]["sessionFile"] = "a\\b.jsonl"
    rows["broken"] = {"sessionId": "../x"}  # unusable row: not loaded
    store_file.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    (root / f"{sids[11]}.jsonl.deleted.2026-01-02T03-04-05.000Z").write_text("x\n")
    (root / "notes.txt").write_text("n")
    store = LegacyStore(store_file, "main")
    assert _stats_view(store) == reference_stats(store)
    assert store.stats().extra["issues"] == len(store.issues) >= 3  # broken row, bad field, symlink
    summary = store.stats(count_issues=False)  # what status asks for: the same figures, no field scan
    assert "issues" not in summary.extra and _stats_view(store) == reference_stats(store)
    assert (summary.sessions, summary.transcript_bytes) == (
        store.stats().sessions,
        store.stats().transcript_bytes,
    )


# ---- status -----------------------------------------------------------------------------------


def test_status_preview_and_stores_equal_reference(generated, tmp_path, monkeypatch):
    from openclaw_cli.ops import status as status_report
    from openclaw_cli.paths import StatePaths

    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")  # the reference is G1's (D23)
    config = tmp_path / "openclaw.json"
    config.write_text('{"session":{"maintenance":{"pruneAfter":"7d","maxEntries":300}}}')
    result = status_report.build_status(StatePaths(tmp_path, generated, config), clock=lambda: NOW_MS)
    entries = _entries(generated)
    s = Settings(max_entries=300, prune_after_ms=7 * DAY)
    ref = reference_plan(entries, s, NOW_MS)
    kept = [
        _updated(e) for k, e in entries.items() if ref["actions"][k] == "keep" and k not in ref["preserved"]
    ]
    kept = [u for u in kept if u is not None]
    (preview,) = result["maintenance"]["wouldRemoveNow"]
    assert preview == {
        "agentId": "main",
        "beforeCount": len(entries),
        "afterCount": len(entries) - len(ref["removed"]),
        "modelRunPruned": ref["model_run_pruned"],
        "pruned": ref["pruned"],
        "capped": ref["capped"],
        "evicted": 0,
        "archived": 0,
        "capArchived": 0,
        "nextPruneAt": int(min(kept) + 7 * DAY) if kept else None,
    }
    (store,) = result["stores"]
    legacy = LegacyStore(generated / "agents" / "main" / "sessions" / "sessions.json", "main")
    view = reference_stats(legacy)
    assert (store["sessions"], store["transcriptBytes"], store["compactions"]) == (
        view["sessions"],
        view["transcript_bytes"],
        view["compactions"],
    )
    assert (store["archives"]["count"], store["archives"]["bytes"]) == view["archives"]
    newest = sorted(entries.items(), key=lambda kv: -kv[1]["updatedAt"])[: status_report.RECENT_LIMIT]
    assert [r["key"] for r in result["sessions"]["recent"]] == [k for k, _ in newest]


def test_preserved_verdicts_on_every_key_shape_pair():
    """Every pair of the tricky key parts behind each agent prefix, under each kind of chat
    metadata: the planner's one-pass verdicts equal the per-key predicates."""
    from openclaw_cli.maintenance.plan import Preserver

    parts = [
        *_KEY_PARTS,
        "tg:direct:x",
        "x:group:",
        "x:group:a:b",
        "agent:x:y:group:z",
        " hook:group:x",
        "cron :channel:y",
        "x:group: heartbeat",
    ]
    entries: dict[str, Any] = {}
    for prefix in ("agent:main:", " Agent:Ops:", "", "agent:m n:", "agent: :"):
        for a in parts:
            for b in ("", *parts):
                for i, chat in enumerate((None, "direct", "group", "room", {"chatType": "thread"})):
                    entry: dict[str, Any] = {"sessionId": f"s{i}"}
                    if isinstance(chat, dict):
                        entry["origin"] = chat
                    elif chat is not None:
                        entry["chatType"] = chat
                    entries[f"{prefix}{a}{b}" + " " * i] = entry
    assert len(entries) > 30_000
    assert Preserver(entries).preserved_among(entries) == reference_preserved(entries)
    assert Preserver(entries, ["agent:main:hook:group:x"]).preserved_among(entries) == reference_preserved(
        entries, ["agent:main:hook:group:x"]
    )


# ---- transcript candidate names (cleanup) ---------------------------------------------------------

_ROOTS = ["/tmp/x/agents/main/sessions", "/home/u/.openclaw/agents/main/sessions", "/a/../b/sessions", "/s"]
_FILE_PARTS = [
    "{root}/",
    "{root}",
    "/",
    "./",
    "../",
    "sub/",
    "/elsewhere/",
    "\\",
    "sqlite:",
    "x",
    "{sid}",
    ".jsonl",
    "-topic-3",
    ".",
    "..",
    " ",
    "//",
]


def test_fast_candidate_names_equal_the_general_rule():
    """Every session file of up to three tricky parts, for plain and unusual roots and ids."""
    import itertools

    from openclaw_cli.maintenance.budget import _fast_candidate_names, _relative_name
    from openclaw_cli.paths import transcript_candidates

    checked = 0
    for root, sid in itertools.product(_ROOTS, ["abc-1", "a.b", "x y"]):
        base = Path(root)
        files = [None] + ["".join(p) for n in range(4) for p in itertools.product(_FILE_PARTS, repeat=n)]
        for pattern in dict.fromkeys(files):
            session_file = pattern.format(root=root, sid=sid) if pattern is not None else None
            fast = _fast_candidate_names(sid, session_file, base)
            if fast is not None:
                general = [_relative_name(p, base) for p in transcript_candidates(base, sid, session_file)]
                assert fast == [n for n in general if n], (root, sid, session_file)
                checked += 1
    assert checked > 5_000


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 5), st.sampled_from([None, 2.5, True, "7", float("inf")]), st.just("row")),
        max_size=30,
    ),
    st.integers(1, 12),
)
def test_status_newest_rows_equal_a_stable_sort(updated, n):
    from openclaw_cli.ops.status import _newest

    entries: dict[str, Any] = {}
    for i, value in enumerate(updated):
        entries[f"k{i}"] = [value] if value == "row" else ({} if value is None else {"updatedAt": value})

    def score(entry: Any) -> float:
        value = entry.get("updatedAt")
        return value if isinstance(value, int | float) and not isinstance(value, bool) else float("-inf")

    rows = [(k, e) for k, e in entries.items() if isinstance(e, dict)]
    assert _newest(entries, n) == sorted(rows, key=lambda kv: score(kv[1]), reverse=True)[:n]


def test_cron_run_parsing_equals_the_regex_rule():
    """`parse_cron_run`'s marker pre-check never changes an answer (EX1.3.f written out here)."""
    import itertools
    import re

    from openclaw_cli.keys import parse_agent_key, parse_cron_run

    rule = re.compile(r"^cron:([^:]+):run:([^:]+)(?::|$)")

    def reference(key: str) -> tuple[str, str] | None:
        parsed = parse_agent_key(key)
        match = rule.match(parsed[1].lower()) if parsed else None
        return (f"agent:{parsed[0]}:cron:{match.group(1)}", match.group(2)) if parsed and match else None

    keys = [
        "".join(p)
        for p in itertools.product(
            ["agent:main:", " AGENT:Ops:", "agent::", ""],
            ["cron:", "CRON:", "cron", "x:cron:"],
            ["job", "", "a:b", " "],
            [":run:", ":RUN:", ":Run:", "run", ":run", ""],
            ["r1", "", ":x", "İ"],
            ["", ":more", " "],
        )
    ]
    assert sum(reference(k) is not None for k in keys) > 50
    for key in keys:
        assert parse_cron_run(key) == reference(key), key
