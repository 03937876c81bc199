"""chat.history's details as the real 2026.9.6 Gateway has them (issue 25): no `timestamp` added
to a message without one, the 128 KiB single-message placeholder, `messageId` pages (the window
around the message and the byte cap that grows around it), and the page and answer caches held
to bytes. The recorded answers of the same requests are compared in
test_gateway_history_paging.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.ops.context import Context
from openclaw_cli.ops.history import (
    MAX_MESSAGE_BYTES,
    OVERSIZED_TEXT,
    _around_bytes,
    _PageCache,
    message_of,
)
from openclaw_cli.ops.methods import call
from openclaw_cli.paths import resolve_paths
from tests import history_state
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import write_config

NOW = 1796000999000
CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}


@pytest.fixture
def crafted(state_dir: Path) -> list[str]:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    return history_state.craft(state_dir)


def _history(**params: Any) -> dict[str, Any]:
    ctx = Context.load(resolve_paths(), clock=lambda: NOW)
    return call(ctx, "chat.history", {"sessionKey": history_state.MAIN, **params})


def _ids(page: dict[str, Any]) -> list[str]:
    return [m["__openclaw"]["id"] for m in page["messages"]]


def test_no_timestamp_is_added_to_a_message_without_one() -> None:
    entry = {
        "type": "message",
        "id": "m1",
        "timestamp": "2026-11-30T08:15:00.000Z",
        "message": {"role": "user", "content": "hi", "idempotencyKey": "k1", "__openclaw": {"x": 1}},
    }
    got = message_of(entry, 3, 100)
    assert got is not None and "timestamp" not in got
    assert got["__openclaw"] == {
        "x": 1,
        "id": "m1",
        "idempotencyKey": "k1",
        "recordTimestampMs": 1796026500000,
        "seq": 3,
    }
    stamped = message_of({**entry, "message": {**entry["message"], "timestamp": 5}}, 3, 100)
    assert stamped is not None and stamped["timestamp"] == 5
    compaction = message_of(
        {"type": "compaction", "id": "c1", "timestamp": "2026-11-30T08:15:00.000Z", "tokensBefore": 9}, 4, 100
    )
    assert compaction is not None and compaction["timestamp"] == 1796026500000
    # as recorded (reads-6): a compaction row's metadata has no recordTimestampMs
    assert compaction["__openclaw"] == {"kind": "compaction", "id": "c1", "tokensBefore": 9, "seq": 4}


def test_the_crafted_message_without_timestamp_has_none(crafted: list[str]) -> None:
    page = _history(limit=6)
    by_id = {m["__openclaw"]["id"]: m for m in page["messages"]}
    assert "timestamp" not in by_id["hist0001"]
    assert by_id["hist0001"]["__openclaw"]["recordTimestampMs"] == 1796026500000  # the entry's STAMP_ISO
    assert by_id["hist0002"]["timestamp"] == history_state.STAMP_MS + 1


def test_messages_over_128_kib_are_replaced(crafted: list[str]) -> None:
    cut = _history(limit=6)  # 20,000 characters by default: cut, not replaced
    assert all(OVERSIZED_TEXT not in json.dumps(m) for m in cut["messages"])
    page = _history(limit=6, maxChars=500000)
    by_id = {m["__openclaw"]["id"]: m for m in page["messages"]}
    assert by_id["hist0002"] == {
        "role": "assistant",
        "timestamp": history_state.STAMP_MS + 1,
        "content": [{"type": "text", "text": OVERSIZED_TEXT}],
        "__openclaw": {
            "id": "hist0002",
            "seq": by_id["hist0002"]["__openclaw"]["seq"],
            "truncated": True,
            "reason": "oversized",
        },
    }
    assert by_id["hist0003"]["toolCallId"] == "call_big000000" and by_id["hist0003"]["toolName"] == "read"
    assert (
        by_id["hist0003"]["isError"] is False and by_id["hist0003"]["timestamp"] == history_state.STAMP_MS + 2
    )
    # no timestamp of its own: the clock's, as OpenClaw's Date.now()
    assert by_id["hist0004"]["timestamp"] == NOW and by_id["hist0004"]["isError"] is True
    assert by_id["hist0005"]["content"] == [{"type": "text", "text": "done after the large ones"}]
    assert all(len(json.dumps(m)) <= MAX_MESSAGE_BYTES for m in page["messages"])
    # the page's messages stay in order with their seqs, and the pages count as before
    assert [m["__openclaw"]["seq"] for m in page["messages"]] == [
        m["__openclaw"]["seq"] for m in cut["messages"]
    ]
    assert page["totalMessages"] == cut["totalMessages"]


def _window(total: int, anchor: int, limit: int) -> tuple[int, int]:
    """OpenClaw's range around the anchor (0-based positions), written out from its rule."""
    older = limit - limit // 2 - 1
    start = min(max(0, anchor - older), max(0, total - limit))
    return start, min(total, start + limit)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 8, 200])
def test_message_id_pages_around_the_message(crafted: list[str], limit: int) -> None:
    whole = _history(limit=1000)["messages"]
    total = len(whole)
    for anchor in (0, 1, total // 2, total - 3, total - 1):
        wanted = whole[anchor]["__openclaw"]["id"]
        page = _history(limit=limit, messageId=wanted)
        start, end = _window(total, anchor, limit)
        assert page["messages"] == whole[start:end], (limit, anchor)
        assert wanted in _ids(page)
        for name in ("offset", "nextOffset", "hasMore", "totalMessages"):
            assert name not in page  # as OpenClaw: a messageId page has no offsets


def test_message_id_unknown_or_not_shown_is_an_empty_page(crafted: list[str], state_dir: Path) -> None:
    assert _history(limit=5, messageId="nope")["messages"] == []
    other = history_state.other_ids(state_dir)
    assert _history(limit=5, messageId=other["nonMessage"])["messages"] == []
    same = _history(limit=3, messageId=crafted[4], sessionId=other["sessionId"])
    assert crafted[4] in _ids(same)


def test_message_id_page_grows_around_the_message_within_max_bytes(crafted: list[str]) -> None:
    whole = _history(limit=1000)["messages"]
    anchor = len(whole) // 2
    wanted = whole[anchor]["__openclaw"]["id"]
    full = _history(limit=9, messageId=wanted)["messages"]
    sizes = [len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode()) for m in full]
    index = _ids({"messages": full}).index(wanted)
    for budget in (1024, 1500, 2500, sum(sizes) + 200):
        page = _history(limit=9, messageId=wanted, maxBytes=budget)["messages"]
        first, last = _around_bytes(sizes, index, budget - 1)
        assert page == full[first:last], budget
        assert wanted in _ids({"messages": page})
        cost = sum(s + 1 for s in sizes[first:last])
        assert cost <= budget - 1 or last - first == 1


def test_around_bytes_rule() -> None:
    # the anchor alone when it does not fit; then older and newer in turn, each side until it stops
    assert _around_bytes([10, 500, 10], 1, 100) == (1, 2)
    assert _around_bytes([10, 10, 10, 10, 10], 2, 1000) == (0, 5)
    assert _around_bytes([50, 10, 10, 10, 10], 2, 40) == (1, 4)  # 11+11+11=33; older 51 does not fit
    assert _around_bytes([10, 10, 10, 50, 10], 2, 40) == (0, 3)  # newer stops at 51; older goes on
    assert _around_bytes([5], 0, 1) == (0, 1)


def test_page_cache_is_held_to_bytes() -> None:
    cache = _PageCache(budget=100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    assert cache.held_bytes == 80
    assert cache.get("a") == "A"  # now the most recent
    cache.put("c", "C", 40)  # over 100: the least recently used (b) goes
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.held_bytes == 80
    cache.put("big", "X", 101)  # larger than the whole budget: not kept, nothing evicted
    assert cache.get("big") is None and cache.held_bytes == 80
    cache.put("a", "A2", 10)  # replaced: counted once
    assert cache.get("a") == "A2" and cache.held_bytes == 50


def test_answer_cache_is_held_to_bytes(tmp_path: Path) -> None:
    from openclaw_cli.gateway.answers import AnswerCache
    from openclaw_cli.ops.context import Reuse
    from openclaw_cli.store.base import FileProbe

    watched = tmp_path / "f"
    watched.write_text("1")
    probe = FileProbe(str(watched))
    cache, config = AnswerCache(budget=3000), object()

    def keep(name: str, size: int) -> None:
        key = cache.key("chat.history", {"sessionKey": name})
        result = {"text": "x" * size}
        cache.after(key, config, Reuse(probe), None, result)  # a candidate
        _, value = cache.before(key, config)
        cache.after(key, config, Reuse(probe), value, result)  # kept

    def kept(name: str) -> bool:
        return cache.before(cache.key("chat.history", {"sessionKey": name}), config)[0] is not None

    keep("a", 1000)
    keep("b", 1000)
    assert kept("a") and kept("b") and 2000 < cache.held_bytes < 2200
    keep("c", 1000)  # over 3,000 bytes: the least recently used goes
    assert not kept("a") and kept("b") and kept("c")
    keep("huge", 5000)  # larger than the budget: never kept
    assert not kept("huge") and kept("b") and kept("c")
    assert cache.held_bytes < 3000
