"""`sessions.usage` through a real Gateway socket on every store kind: OpenClaw 2026.9.6's params,
owner rules, errors and result shape (its field names recorded from the real Gateway), figures
counted again here from the transcript itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config
from tests.storage_support import STORE_KINDS, make_state

GROUP = "agent:main:telegram:group:123"
GATEWAY = {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}}
RECORDED = Path(__file__).resolve().parent / "fixtures" / "gateway-2026.9.6-issue25" / "reads-2.jsonl"


def recorded_usage() -> dict[str, Any]:
    """The real Gateway's answer to `sessions.usage {key: agent:main:main}` (reads-2.jsonl)."""
    frames = [json.loads(line)["frame"] for line in RECORDED.read_text().splitlines()]
    wanted = next(f["id"] for f in frames if f.get("method") == "sessions.usage" and f["params"].get("key"))
    return next(f["payload"] for f in frames if f.get("type") == "res" and f["id"] == wanted)


def counted(state: Path, key: str) -> dict[str, int]:
    """The session's figures counted from its transcript lines (not through our usage code)."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    out = dict.fromkeys(
        ("input", "output", "totalTokens", "user", "assistant", "toolResults", "toolCalls"), 0
    )
    with open_agent_store(resolve_paths(), "main", read_only=True) as store:
        entry = store.get_entry(key)
        for line in store.iter_transcript(entry["sessionId"], entry=entry):
            message = (line.obj or {}).get("message")
            if not isinstance(message, dict) or message.get("role") not in (
                "user",
                "assistant",
                "toolResult",
            ):
                continue
            out[message["role"] + ("s" if message["role"] == "toolResult" else "")] += 1
            usage = message.get("usage") or {}
            for name in ("input", "output", "totalTokens"):
                out[name] += usage.get(name, 0)
            out["toolCalls"] += sum(1 for b in message.get("content") or [] if b.get("type") == "toolCall")
    return out


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest, state_dir: Path) -> str:
    make_state(request.param, state_dir)
    write_config(state_dir, {"gateway": GATEWAY})
    return str(request.param)


def test_sessions_usage_of_one_session(kind: str, state_dir: Path) -> None:
    want = counted(state_dir, GROUP)
    assert want["assistant"] and want["totalTokens"]
    real = recorded_usage()
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello(scopes=["operator.read"])["ok"]
        got = client.request("sessions.usage", {"key": GROUP, "range": "all"})
        assert got["ok"], got
        doc = got["payload"]
        assert set(doc) == set(real) - {"cacheStatus"}  # no cache of ours is ever refreshing
        (row,) = doc["sessions"]
        assert row["key"] == GROUP and row["scope"] == "instance" and row["creatorKey"] == '["unknown"]'
        usage = row["usage"]
        for name in ("input", "output", "totalTokens"):
            assert usage[name] == want[name] == doc["totals"][name], name
        counts = usage["messageCounts"]
        assert (counts["user"], counts["assistant"], counts["toolResults"], counts["toolCalls"]) == (
            want["user"],
            want["assistant"],
            want["toolResults"],
            want["toolCalls"],
        )
        assert counts["total"] == want["user"] + want["assistant"]
        assert doc["aggregates"]["sessionCount"] == 1 and doc["aggregates"]["messages"] == counts
        assert sum(d["totalTokens"] for d in usage["dailyBreakdown"]) == want["totalTokens"]
        assert usage["durationMs"] == usage["lastActivity"] - usage["firstActivity"]
        # the list: every session with activity, newest first, `limit` listed, all counted
        listed = client.request("sessions.usage", {"agentId": "main", "range": "all", "limit": 2})["payload"]
        assert len(listed["sessions"]) == 2
        assert listed["sessions"][0]["updatedAt"] >= listed["sessions"][1]["updatedAt"]
        assert listed["aggregates"]["sessionCount"] > 2
        assert listed["totals"]["totalTokens"] > usage["totalTokens"]
        # a range with no activity: the session is listed, without usage
        empty = client.request(
            "sessions.usage", {"key": GROUP, "startDate": "2001-01-01", "endDate": "2001-01-02"}
        )
        assert empty["payload"]["sessions"][0]["usage"] is None
        assert empty["payload"]["startDate"] == "2001-01-01" and empty["payload"]["endDate"] == "2001-01-02"
        unknown = client.request("sessions.usage", {"key": "agent:main:nope"})["payload"]
        assert unknown["sessions"] == [] and unknown["creatorOptions"] == []
        for params, message in (
            ({"bogus": 1}, "invalid sessions.usage params: at root: unexpected property 'bogus'"),
            ({"limit": 0}, "invalid sessions.usage params: at /limit: must be >= 1"),
            (
                {"key": GROUP, "startDate": "x"},
                'invalid sessions.usage params: at /startDate: must match pattern "^\\d{4}-\\d{2}-\\d{2}$"',
            ),
            ({"agentScope": "all", "key": GROUP}, "agentScope=all cannot be combined with key or agentId"),
            ({"startDate": "2026-12-01"}, "startDate and endDate must be provided together"),
            ({"startDate": "2026-12-02", "endDate": "2026-12-01"}, "startDate must not be after endDate"),
            (
                {"startDate": "2026-02-30", "endDate": "2026-03-01"},
                "invalid startDate: expected a valid YYYY-MM-DD calendar date",
            ),
        ):
            refused = client.request("sessions.usage", params)
            assert refused["error"] == {"code": "INVALID_REQUEST", "message": message}, params


def test_sessions_usage_needs_an_owner_among_several_agents(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    write_config(state_dir, {"gateway": GATEWAY, "agents": {"entries": {"main": {}, "ops": {}}}})
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        # recorded (reads-1.jsonl): with no key and no agent, OpenClaw asks who owns "main"
        assert client.request("sessions.usage", {})["error"]["message"] == (
            'Multiple agents are configured, but session key "main" has no explicit owner. '
            "Pass agentId or use an agent-prefixed session key."
        )
        everyone = client.request("sessions.usage", {"agentScope": "all", "range": "all"})["payload"]
        assert {row["agentId"] for row in everyone["sessions"]} == {"main"}
        assert everyone["aggregates"]["byAgent"][0]["agentId"] == "main"
