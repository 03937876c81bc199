"""Chunking (§4.10): EX4.10.a-k, adaptive ratio, fixed-size chunks, pruning for a context share."""

from __future__ import annotations

import pytest

from openclaw_cli.compaction.chunking import (
    chunk_messages_by_max_tokens,
    compute_adaptive_chunk_ratio,
    max_chunk_tokens,
    prune_history_for_context_share,
    repair_tool_pairing,
    split_messages_by_token_share,
)
from openclaw_cli.compaction.messages import role_of
from openclaw_cli.compaction.tokens import estimate_message_tokens


def U(chars: int = 20, ts: int = 0) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": "u" * chars}], "timestamp": ts}


def A(chars: int = 20, calls: tuple[str, ...] = (), stop: str | None = None, ts: int = 0) -> dict:
    content = [{"type": "text", "text": "a" * chars}]
    content += [{"type": "toolCall", "id": c, "name": "exec", "arguments": {}} for c in calls]
    return {
        "role": "assistant",
        "content": content,
        "stopReason": stop or ("toolUse" if calls else "stop"),
        "timestamp": ts,
    }


def T(call: str | None, chars: int = 20) -> dict:
    out = {
        "role": "toolResult",
        "toolName": "exec",
        "content": [{"type": "text", "text": "t" * chars}],
        "isError": False,
    }
    if call is not None:
        out["toolCallId"] = call
    return out


def flat(chunks: list[list[dict]]) -> list[dict]:
    return [m for chunk in chunks for m in chunk]


def chunk_of(chunks: list[list[dict]], message: dict) -> int:
    return next(i for i, chunk in enumerate(chunks) if any(m is message for m in chunk))


def test_ex_4_10_a_equal_user_messages():
    messages = [U(4000) for _ in range(4)]
    chunks = split_messages_by_token_share(messages, 2)
    assert len(chunks) == 2 and all(chunks)
    assert flat(chunks) == messages


def test_ex_4_10_b_order_preserved():
    messages = [U(400 * (i + 1), ts=i) for i in range(6)]
    chunks = split_messages_by_token_share(messages, 3)
    assert [m["timestamp"] for m in flat(chunks)] == list(range(6))
    assert len(chunks) <= 3


def test_ex_4_10_c_call_and_result_share_a_chunk():
    a, t = A(20, ("call_split",)), T("call_split", 800)
    messages = [U(4000), a, t, U(4000)]
    chunks = split_messages_by_token_share(messages, 2)
    assert chunk_of(chunks, a) == chunk_of(chunks, t)
    assert flat(chunks) == messages


def test_ex_4_10_d_two_results_stay_with_their_assistant():
    a = A(4000, ("call_a", "call_b"))
    ta, tb = T("call_a"), T("call_b")
    chunks = split_messages_by_token_share([a, ta, tb, U(20)], 2)
    assert chunk_of(chunks, a) == chunk_of(chunks, ta) == chunk_of(chunks, tb)


def test_ex_4_10_e_displaced_result():
    a, t = A(20, ("c1",)), T("c1")
    chunks = split_messages_by_token_share([U(20), a, U(800), t], 2)
    assert chunk_of(chunks, a) == chunk_of(chunks, t)


def test_ex_4_10_f_first_chunk_holds_call_and_result():
    a, t, u = A(4000, ("c1",)), T("c1", 4000), U(4000)
    chunks = split_messages_by_token_share([a, t, u], 2)
    assert len(chunks) == 2
    assert any(m is a for m in chunks[0]) and any(m is t for m in chunks[0])


def test_ex_4_10_g_split_before_the_tool_block():
    u, a, t = U(4000), A(200, ("c1",)), T("c1", 4000)
    chunks = split_messages_by_token_share([u, a, t], 2)
    assert chunks == [[u], [a, t]]


def test_ex_4_10_h_aborted_call_does_not_block_the_split():
    chunks = split_messages_by_token_share([A(4000, ("c1",), stop="aborted"), U(20), U(20)], 2)
    assert len(chunks) == 2


def test_ex_4_10_i_result_never_arrives():
    u1, a, u2 = U(4000), A(20, ("c1",)), U(4000)
    chunks = split_messages_by_token_share([u1, a, u2], 2)
    assert chunks == [[u1], [a, u2]]


def test_ex_4_10_j_pruning_drops_oldest_chunks():
    messages = [U(4000) for _ in range(4)]
    result = prune_history_for_context_share(messages, 2000, 0.5)
    assert result.dropped_chunks >= 1
    assert result.kept_tokens <= 1000 == result.budget_tokens
    assert result.messages == messages[len(messages) - len(result.messages) :]
    assert result.dropped_messages_list + result.messages == messages


def test_ex_4_10_k_pruning_repairs_tool_pairing():
    messages = [A(20, ("call_123",)), T("call_123", 4000), U(500)]
    result = prune_history_for_context_share(messages, 2000)
    assert not any(role_of(m) == "toolResult" for m in result.messages)
    assert result.dropped_messages == len(result.dropped_messages_list)
    assert result.dropped_tokens + result.kept_tokens == sum(estimate_message_tokens(m) for m in messages)


def test_pruning_orphans_are_dropped_in_original_order():
    # an aborted call does not hold the chunk open, so its late result is orphaned by the first
    # drop and removed; a later drop takes the message that sat between them
    a, x, t = A(8000, ("c9",), stop="aborted"), U(400), T("c9", 40)
    messages = [U(4000), a, x, t, U(4000), U(4000), U(4000)]
    result = prune_history_for_context_share(messages, 2000, 0.5)
    dropped = result.dropped_messages_list
    position = {id(m): i for i, m in enumerate(messages)}
    assert result.dropped_chunks >= 2 and any(m is t for m in dropped) and any(m is x for m in dropped)
    assert [position[id(m)] for m in dropped] == sorted(position[id(m)] for m in dropped)
    assert dropped + result.messages == messages


def test_adaptive_ratio():
    assert compute_adaptive_chunk_ratio([], 200000) == 0.4
    assert compute_adaptive_chunk_ratio([U(400)] * 10, 200000) == 0.4
    # average 40000 tokens in a 100000 window: avg share 0.48 -> 0.4 - 0.25 -> 0.15
    assert compute_adaptive_chunk_ratio([U(160000)] * 2, 100000) == pytest.approx(0.15)
    # average share 0.12 -> 0.4 - 0.24
    ratio = compute_adaptive_chunk_ratio([U(40000)], 100000)
    assert abs(ratio - 0.16) < 1e-9
    assert max_chunk_tokens(200000, 0.4) == 80000 - 4096
    assert max_chunk_tokens(1000, 0.15) == 1


def test_fixed_size_chunks_and_repair():
    messages = [U(400) for _ in range(10)]  # 100 tokens each
    chunks = chunk_messages_by_max_tokens(messages, 360)  # limit floor(360 / 1.2) = 300
    assert [len(c) for c in chunks] == [3, 3, 3, 1] and flat(chunks) == messages
    assert chunk_messages_by_max_tokens([U(40000)], 10) == [
        [messages[0] | {"content": [{"type": "text", "text": "u" * 40000}]}]
    ]
    kept, dropped = repair_tool_pairing([T("x"), A(20, ("y",)), T("y"), T(None)])
    assert [role_of(m) for m in kept] == ["assistant", "toolResult", "toolResult"] and len(dropped) == 1
