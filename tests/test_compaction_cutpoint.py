"""Messages projection, cut point (§4.5) and preparation (§4.6), with invariants on generated
transcripts: kept tail >= keep (or minimal), turn boundaries, tool pairing never broken."""

from __future__ import annotations

import random

import pytest

from openclaw_cli.compaction import build_compaction_entry, plan_compaction
from openclaw_cli.compaction.cutpoint import (
    ALREADY_COMPACTED,
    NOTHING_TO_COMPACT,
    find_cut_point,
    normalize_tool_name,
    prepare_compaction,
)
from openclaw_cli.compaction.messages import (
    compaction_summary_text,
    is_cut_point_entry,
    is_turn_start_entry,
    project_entries,
    project_entry,
    role_of,
    text_of,
    tool_call_ids,
    tool_result_id,
)
from openclaw_cli.compaction.tokens import Tokenizer
from openclaw_cli.errors import InvalidDataError
from tests.session_generator import generate_session

EST = Tokenizer("estimate")


class Builder:
    """Entries with exact estimate sizes: `tokens` t -> a text of 4t characters."""

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self.n = 0

    def _add(self, entry: dict) -> dict:
        self.n += 1
        entry.setdefault("id", f"e{self.n:04d}")
        entry["parentId"] = self.entries[-1]["id"] if self.entries else None
        entry["timestamp"] = f"2026-10-01T00:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
        self.entries.append(entry)
        return entry

    def message(self, message: dict, **extra) -> dict:
        return self._add({"type": "message", "message": message, **extra})

    def user(self, tokens: int, text: str | None = None) -> dict:
        return self.message(
            {"role": "user", "content": [{"type": "text", "text": text or "u" * (4 * tokens)}]}
        )

    def assistant(
        self, tokens: int, calls: list[str] = (), stop: str = "stop", tool: str = "read", args=None
    ) -> dict:
        content: list[dict] = [{"type": "text", "text": "a" * (4 * tokens)}]
        for call in calls:
            content.append({"type": "toolCall", "id": call, "name": tool, "arguments": args or {}})
        return self.message(
            {"role": "assistant", "content": content, "stopReason": "toolUse" if calls else stop}
        )

    def result(self, call: str, tokens: int, tool: str = "read", **extra) -> dict:
        return self.message(
            {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": tool,
                "content": [{"type": "text", "text": "r" * (4 * tokens)}],
                "isError": False,
                **extra,
            }
        )

    def meta(self, kind: str = "model_change") -> dict:
        return self._add({"type": kind, "provider": "openai", "modelId": "gpt-5.4"})

    def compaction(self, first_kept: str, summary: str = "previous summary", **extra) -> dict:
        return self._add(
            {
                "type": "compaction",
                "summary": summary,
                "firstKeptEntryId": first_kept,
                "tokensBefore": 1234,
                **extra,
            }
        )

    def index(self, entry: dict) -> int:
        return self.entries.index(entry)


# -- messages ---------------------------------------------------------------------------------------
def test_projection_and_predicates():
    b = Builder()
    u = b.user(1)
    a = b.assistant(1, ["c1", "c2"])
    t = b.result("c1", 1)
    meta = b.meta()
    cm = b._add({"type": "custom_message", "customType": "note", "content": "hi", "display": True})
    rc = b._add(
        {"type": "custom_message", "customType": "runtime-context", "content": "ctx", "display": False}
    )
    bs = b._add({"type": "branch_summary", "fromId": "x", "summary": "branch"})
    c = b.compaction("e0001")
    ex = b.message({"role": "bashExecution", "command": "ls", "output": "", "excludeFromContext": True})
    bash = b.message({"role": "bashExecution", "command": "ls", "output": "a"})
    roles = [role_of(m) for m in project_entries(b.entries)]
    assert roles == [
        "user",
        "assistant",
        "toolResult",
        "custom",
        "custom",
        "branchSummary",
        "compactionSummary",
        "bashExecution",
    ]
    assert project_entry(meta) is None and project_entry(ex) is None
    assert tool_call_ids(a["message"]) == ["c1", "c2"] and tool_result_id(t["message"]) == "c1"
    assert [is_cut_point_entry(e) for e in (u, a, t, meta, cm, rc, bs, c, bash)] == [
        True,
        True,
        False,
        False,
        True,
        False,
        True,
        False,
        True,
    ]
    assert [is_turn_start_entry(e) for e in (u, a, t, cm, bs, bash)] == [True, False, False, True, True, True]
    assert text_of(project_entry(c)) == "previous summary"
    assert compaction_summary_text("S") == (
        "The conversation history before this point was compacted into the "
        "following summary:\n\n<summary>\nS\n</summary>"
    )
    assert normalize_tool_name("mcp__fs__Read") == "read"


# -- spec examples ---------------------------------------------------------------------------------
def test_ex_4_5_a_clean_cut_at_turn_start():
    b = Builder()
    u1, a1, u2, a2 = b.user(1000), b.assistant(1000), b.user(1000), b.assistant(1000)
    cut = find_cut_point(b.entries, 0, 4, 1500, EST)
    assert (cut.first_kept_index, cut.is_split_turn) == (2, False)
    plan = prepare_compaction(b.entries, 1500, EST)
    assert plan.ready and plan.first_kept_entry_id == u2["id"]
    assert plan.messages_to_summarize == [u1["message"], a1["message"]]
    assert plan.kept_entries == [u2, a2] and plan.kept_tokens == 2000
    assert plan.tokens_before.tokens == 4000
    assert plan.tokens_after("s" * 400) == 2000 + EST.count_text(compaction_summary_text("s" * 400))


def test_ex_4_5_b_oversized_turn_is_split():
    b = Builder()
    u1 = b.user(100)
    call = b.assistant(50, ["c1"])
    t1 = b.result("c1", 30000)
    a1b = b.assistant(100)
    plan = prepare_compaction(b.entries, 20000, EST)
    assert plan.ready and plan.is_split_turn
    assert plan.first_kept_entry_id == a1b["id"] and plan.turn_start_index == 0
    assert plan.messages_to_summarize == []
    assert plan.turn_prefix_messages == [u1["message"], call["message"], t1["message"]]
    assert plan.kept_entries == [a1b]


def test_ex_4_5_c_short_session_is_nothing_to_compact():
    b = Builder()
    b.meta()
    b.user(10)
    b.assistant(10)
    plan = prepare_compaction(b.entries, 20000, EST)
    assert plan.status == NOTHING_TO_COMPACT and plan.first_kept_entry_id is None


def test_d16_small_turn_is_not_split_but_kept_whole():
    b = Builder()
    b.user(500), b.assistant(500)
    u1 = b.user(10)
    b.assistant(600)
    b.user(10), b.assistant(600)
    plan = prepare_compaction(b.entries, 1000, EST)
    assert plan.ready and not plan.is_split_turn
    assert plan.first_kept_entry_id == u1["id"]
    assert plan.kept_tokens == 1220 >= 1000
    assert len(plan.messages_to_summarize) == 2


def test_metadata_before_the_cut_stays_with_the_kept_tail_without_a_split():
    b = Builder()
    b.user(1000), b.assistant(1000)
    meta = b.meta()
    b.meta("thinking_level_change")
    b.user(1000), b.assistant(1000)
    plan = prepare_compaction(b.entries, 1500, EST)
    assert plan.first_kept_entry_id == meta["id"] and not plan.is_split_turn
    assert len(plan.messages_to_summarize) == 2


def test_displaced_tool_result_is_never_orphaned():
    b = Builder()
    b.user(2000), b.assistant(2000)
    u1 = b.user(10)
    b.assistant(10, ["x"])
    b.user(200)  # interjection before the result (EX4.10.e shape): raw R4.5 would cut here
    b.result("x", 10)
    b.assistant(10)
    b.user(300), b.assistant(300)
    plan = prepare_compaction(b.entries, 700, EST)
    # the cut may not fall between the call and its displaced result: the whole turn is kept
    assert plan.ready and not plan.is_split_turn
    assert plan.first_kept_entry_id == u1["id"]
    assert plan.kept_tokens == 10 + 12 + 200 + 10 + 10 + 300 + 300  # the call weighs 12 (name + args)
    assert len(plan.messages_to_summarize) == 2


def test_previous_compaction_boundary_and_rebuilt_context_tokens():
    b = Builder()
    b.user(1000), b.assistant(1000)
    u2 = b.user(1000)
    a2 = b.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a" * 4000}],
            "stopReason": "stop",
            "usage": {"totalTokens": 99999},
        }
    )  # stale usage before the compaction: ignored
    c = b.compaction(
        u2["id"], summary="S" * 400, details={"readFiles": ["old.txt"], "modifiedFiles": ["m.txt"]}
    )
    u3 = b.user(1000)
    b.assistant(1000)
    b.user(1000), b.assistant(1000)
    plan = prepare_compaction(b.entries, 1500, EST)
    assert plan.ready and plan.previous_summary == "S" * 400 and plan.previous_compaction_id == c["id"]
    assert plan.start_index == b.index(u2)
    # rebuilt context: summary (100) + U2 A2 (2000) + 4 entries after (4000)
    assert plan.tokens_before.tokens == 6100 and plan.tokens_before.method == "estimate"
    assert plan.messages_to_summarize[:2] == [u2["message"], a2["message"]]
    assert u3["message"] in plan.messages_to_summarize
    assert plan.read_files == ["old.txt"] and plan.modified_files == ["m.txt"]
    # fromHook compactions do not contribute their file lists
    c["fromHook"] = True
    assert prepare_compaction(b.entries, 1500, EST).read_files == []


def test_usage_after_boundary_anchors_tokens_before():
    b = Builder()
    u1 = b.user(100)
    b.assistant(100)
    b.compaction(u1["id"])
    b.user(100)
    b.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "z" * 40}],
            "stopReason": "stop",
            "usage": {"input": 5000, "output": 100},
        }
    )
    b.user(25)
    plan = prepare_compaction(b.entries, 10, EST)
    assert plan.tokens_before.method == "usage" and plan.tokens_before.tokens == 5100 + 25


def test_already_compacted_and_hard_checkpoint():
    b = Builder()
    b.user(1000), b.assistant(1000), b.user(1000), b.assistant(1000)
    plan = plan_compaction(b.entries, hard_checkpoint=True)
    assert plan.ready and plan.hard_checkpoint and plan.first_kept_entry_id is None
    assert len(plan.messages_to_summarize) == 4 and plan.kept_entries == [] and plan.kept_tokens == 0
    entry = build_compaction_entry(plan, "summary", entry_id="cccc0001", timestamp="2026-10-01T01:00:00.000Z")
    assert entry["firstKeptEntryId"] == "cccc0001"  # not before the compaction: nothing retained
    assert list(entry) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
    ]
    assert entry["parentId"] == b.entries[-1]["id"] and entry["tokensBefore"] == 4000
    b.entries.append(entry)
    again = plan_compaction(b.entries, hard_checkpoint=True)
    assert again.status == ALREADY_COMPACTED and not again.ready
    # after new messages the next compaction starts at the checkpoint (nothing before it is re-summarised)
    b.user(10), b.assistant(10)
    nxt = plan_compaction(b.entries, hard_checkpoint=True)
    assert nxt.ready and len(nxt.messages_to_summarize) == 2 and nxt.previous_summary == "summary"
    assert nxt.tokens_before.tokens == EST.count_text("summary") + 20


def test_reset_boundary_starts_a_fresh_context():
    b = Builder()
    b.user(1000), b.assistant(1000)
    b._add({"type": "reset", "reason": "daily"})
    assert prepare_compaction(b.entries, 10, EST).status == NOTHING_TO_COMPACT
    u = b.user(1000)
    b.assistant(1000), b.user(1000), b.assistant(1000)
    plan = prepare_compaction(b.entries, 1500, EST)
    assert plan.ready and plan.previous_summary is None and plan.start_index == b.index(u)
    assert len(plan.messages_to_summarize) == 2 and plan.tokens_before.tokens == 4000


def test_first_kept_entry_without_id_is_invalid_session():
    b = Builder()
    b.user(1000), b.assistant(1000)
    u = b.user(1000)
    b.assistant(1000)
    del u["id"]
    with pytest.raises(InvalidDataError) as info:
        prepare_compaction(b.entries, 1500, EST)
    assert info.value.type == "invalid_session"
    assert "First kept entry has no UUID" in info.value.message


def test_file_operations_details():
    b = Builder()
    b.user(10)
    b.assistant(10, ["r1"], tool="read", args={"path": "a.py"})
    b.result("r1", 1)
    b.assistant(10, ["r2"], tool="mcp__fs__read", args={"file_path": "b.py"})
    b.result("r2", 1)
    b.assistant(10, ["w1"], tool="Write", args={"filePath": "b.py"})
    b.result("w1", 1)
    b.assistant(10, ["e1"], tool="edit", args={"path": "c.py"})
    b.result("e1", 1)
    b.assistant(10, ["p1"], tool="apply_patch", args={})
    b.result("p1", 1, tool="apply_patch", details={"summary": {"added": ["new.py"], "modified": ["d.py"]}})
    b.assistant(10)
    b.user(5000), b.assistant(5000)
    plan = prepare_compaction(b.entries, 100, EST)
    assert plan.read_files == ["a.py"]
    assert plan.modified_files == ["b.py", "c.py", "d.py", "new.py"]


# -- invariants on generated transcripts -----------------------------------------------------------------
def random_transcript(seed: int) -> list[dict]:
    rng = random.Random(seed)
    b = Builder()
    call = 0
    for _ in range(rng.randint(3, 40)):
        if rng.random() < 0.1:
            b.meta()
        b.user(rng.choice((5, 50, 400)))
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            ids = [f"c{(call := call + 1)}" for _ in range(rng.choice((1, 1, 2)))]
            aborted = rng.random() < 0.05
            b.assistant(rng.choice((5, 40, 300)), ids, stop="aborted" if aborted else "toolUse")
            if aborted and rng.random() < 0.5:
                continue  # an aborted call may never get its result
            if rng.random() < 0.1:
                b.user(rng.choice((5, 100)))  # result displaced after an interjection
            for ident in ids:
                b.result(ident, rng.choice((10, 200, 3000, 12000)))
        b.assistant(rng.choice((10, 100, 800)))
    return b.entries


def boundaries(entries: list[dict]) -> list[int]:
    """Indices of turn starts that do not sit between a tool call and its (displaced) result."""
    calls: dict[str, int] = {}
    inside: set[int] = set()
    for i, e in enumerate(entries):
        m = project_entry(e)
        for c in tool_call_ids(m):
            calls[c] = i
        if role_of(m) == "toolResult" and tool_result_id(m) in calls:
            inside.update(range(calls[tool_result_id(m)] + 1, i + 1))
    return [i for i, e in enumerate(entries) if is_turn_start_entry(e) and i not in inside]


def check_invariants(entries: list[dict], keep: int, hard: bool = False) -> None:
    plan = prepare_compaction(entries, keep, EST, hard_checkpoint=hard)
    # everything from the previous boundary's kept start on, except the boundary itself
    context = [
        e for e in entries[plan.start_index :] if project_entry(e) is not None and e["type"] != "compaction"
    ]
    summarized = [*plan.messages_to_summarize, *plan.turn_prefix_messages]
    kept = [project_entry(e) for e in plan.kept_entries]
    if not plan.ready:
        assert plan.status in (NOTHING_TO_COMPACT, ALREADY_COMPACTED)
        return
    # nothing lost, nothing duplicated, order preserved
    assert summarized + kept == [project_entry(e) for e in context]
    if hard:
        assert kept == []
        return
    total = sum(EST(e) for e in context)  # >= what the budget walk sees
    kept_tokens = sum(EST(e) for e in plan.kept_entries)
    assert kept_tokens == plan.kept_tokens
    first_msg = next(i for i in range(plan.first_kept_index, len(entries)) if project_entry(entries[i]))
    if kept_tokens < keep and total >= keep:
        # minimal: starting at the previous valid cut point would already hold the budget
        earlier = [i for i in range(plan.start_index, first_msg) if is_cut_point_entry(entries[i])]
        assert earlier, "a short tail needs an earlier candidate that was skipped"
        assert sum(EST(e) for e in entries[earlier[-1] :]) >= keep or plan.is_split_turn
    # turn boundary, or a split of one turn larger than the budget
    starts = boundaries(entries)
    if plan.is_split_turn:
        ts = plan.turn_start_index
        nxt = next((i for i in starts if i > first_msg), len(entries))
        assert ts in starts and ts < first_msg
        assert sum(EST(e) for e in entries[ts:nxt]) > keep
        assert plan.turn_prefix_messages[0] == project_entry(entries[ts])
    else:
        assert first_msg in starts or not any(i < first_msg for i in starts)
    # tool pairing: no kept result without its call, no summarised call without its result
    kept_calls = {c for m in kept for c in tool_call_ids(m)}
    for m in kept:
        if role_of(m) == "toolResult":
            assert tool_result_id(m) in kept_calls
    results_anywhere = {tool_result_id(m) for m in map(project_entry, context) if role_of(m) == "toolResult"}
    summarized_results = {tool_result_id(m) for m in summarized if role_of(m) == "toolResult"}
    for m in summarized:
        for c in tool_call_ids(m):
            if c in results_anywhere:
                assert c in summarized_results


@pytest.mark.parametrize("seed", range(40))
def test_invariants_random_transcripts(seed):
    entries = random_transcript(seed)
    for keep in (100, 1000, 5000, 20000):
        check_invariants(entries, keep)
    check_invariants(entries, 0, hard=True)


def test_invariants_generated_pi_sessions_and_repeated_compaction():
    session = generate_session(11, turns=120)
    entries = list(session.entries)
    for keep in (500, 4000, 20000):
        check_invariants(entries, keep)
    # compact three times in a row (appending the compaction entries) and re-check each time
    for round_ in range(3):
        plan = prepare_compaction(entries, 4000, EST)
        assert plan.ready
        entries.append(build_compaction_entry(plan, f"summary {round_}", entry_id=f"comp{round_:04d}"))
        more = generate_session(100 + round_, turns=30).entries
        more[0] = {**more[0], "parentId": entries[-1]["id"]}
        entries.extend(more)
        check_invariants(entries, 4000)
