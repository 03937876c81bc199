"""chat.history's `maxBytes` and `cursor` against the real 2026.9.6 Gateway's recorded answers
(tests/fixtures/gateway-2026.9.6-issue25/reads-6.jsonl, README there): the same requests on the
same generated state keep the same messages of the page (the newest that fit, counted on each
Gateway's own message JSON), continue at the same `nextOffset`, answer a cursor with
`{kind: "reset"}` and refuse conflicting params with the same texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gateway-2026.9.6-issue25" / "reads-6.jsonl"
CONFIG = {
    "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}},
    "gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}},
}
# what only OpenClaw's event log has (its position of each message, the delta cursor, the tool
# activity rows) is not compared
EVENT_LOG_FIELDS = ("deltaCursor", "activity")


def exchanges() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    frames = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    requests = {f["frame"]["id"]: f["frame"] for f in frames if f["dir"] == "out"}
    return [
        (requests[f["frame"]["id"]], f["frame"])
        for f in frames
        if f["dir"] == "in" and f["frame"].get("type") == "res" and f["frame"]["id"] != "rec-0"
    ]


@pytest.fixture
def state(state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    return state_dir


def _seqs(payload: dict[str, Any]) -> list[Any]:
    return [m["__openclaw"]["seq"] for m in payload["messages"]]


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


# each capped request and the same request without maxBytes (both recorded)
CAPPED = {"rec-1": "rec-14", "rec-2": "rec-15", "rec-3": "rec-16", "rec-4": "rec-17"}


def test_the_rule_reproduces_the_recorded_pages() -> None:
    """OpenClaw's cap, applied to its own recorded messages (each with its activity row, and the
    activity's framing), keeps exactly the messages it sent: the newest that fit."""
    from openclaw_cli.ops.history import MAX_HISTORY_BYTES, _within_bytes

    pairs = {request["id"]: (request, recorded) for request, recorded in exchanges()}
    for capped, whole in CAPPED.items():
        request, got = pairs[capped]
        full = pairs[whole][1]["payload"]
        rows = {a["messageId"]: a for a in full.get("activity", [])}
        sizes = [
            _size(m) + (_size(rows[m["__openclaw"]["id"]]) + 1 if m["__openclaw"].get("id") in rows else 0)
            for m in full["messages"]
        ]
        budget = min(request["params"]["maxBytes"], MAX_HISTORY_BYTES) - (13 if rows else 0)
        kept = _seqs(full)[_within_bytes(sizes, budget) :]
        assert _seqs(got["payload"]) == kept, capped
        assert len(kept) < len(full["messages"]) or capped == "rec-3"  # the budget bit (but in rec-3)


def test_recorded_budget_cursor_and_conflicts(state: Path) -> None:
    compared = 0
    answers: dict[str, dict[str, Any]] = {}
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        for request, recorded in exchanges():
            ours = client.request(request["method"], request["params"])
            answers[request["id"]] = ours
            where = f"{request['id']} {request['params']}"
            assert ours["ok"] == recorded["ok"], f"{where}: {ours}"
            compared += 1
            if not recorded["ok"]:
                assert ours["error"] == recorded["error"], where
                continue
            theirs = recorded["payload"]
            if theirs.get("kind") == "reset":
                assert ours["payload"] == theirs, where
                continue
            mine = ours["payload"]
            assert {k for k in theirs if k not in EVENT_LOG_FIELDS} <= set(mine), where
            if request["id"] in CAPPED:
                continue  # below: the same rule on our own messages
            assert _seqs(mine) == _seqs(theirs), where
            for name in ("offset", "nextOffset", "hasMore", "totalMessages", "sessionId"):
                assert mine.get(name) == theirs.get(name), f"{where}: {name}"
    assert compared == 17
    from openclaw_cli.ops.history import _within_bytes

    requests = {request["id"]: request for request, _ in exchanges()}
    dropped = 0
    for capped, whole in CAPPED.items():
        full, got = answers[whole]["payload"], answers[capped]["payload"]
        start = _within_bytes([_size(m) for m in full["messages"]], requests[capped]["params"]["maxBytes"])
        assert got["messages"] == full["messages"][start:], capped
        offset = requests[capped]["params"].get("offset", 0)
        dropped += start
        if start:
            assert got["nextOffset"] == offset + len(got["messages"]) and got["hasMore"] is True
        else:
            assert got.get("nextOffset") == full.get("nextOffset") and got["hasMore"] == full["hasMore"]
        assert got["totalMessages"] == full["totalMessages"]
    assert dropped  # the budgets bit on our messages too


def test_budget_keeps_the_newest_message_and_pages_on(state: Path) -> None:
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        whole = client.request("chat.history", {"sessionKey": "agent:main:main", "limit": 10})["payload"]
        sizes = [
            len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode()) for m in whole["messages"]
        ]
        # a budget of exactly the newest four as a JSON array keeps those four
        budget = 2 + sum(sizes[-4:]) + 3
        page = client.request(
            "chat.history", {"sessionKey": "agent:main:main", "limit": 10, "maxBytes": max(1024, budget)}
        )["payload"]
        if budget >= 1024:
            assert page["messages"] == whole["messages"][-4:]
            assert page["nextOffset"] == 4
        tiny = client.request(
            "chat.history", {"sessionKey": "agent:main:main", "limit": 10, "maxBytes": 1024}
        )["payload"]
        assert tiny["messages"] and tiny["messages"][-1] == whole["messages"][-1]
        kept = len(tiny["messages"])
        assert 2 + sum(sizes[-kept:]) + kept - 1 <= 1024 or kept == 1
        assert tiny["nextOffset"] == kept and tiny["hasMore"] is True
        # the next page continues right before the oldest kept message
        older = client.request(
            "chat.history", {"sessionKey": "agent:main:main", "limit": 2, "offset": tiny["nextOffset"]}
        )["payload"]
        assert _seqs(older)[-1] == _seqs(tiny)[0] - 1
