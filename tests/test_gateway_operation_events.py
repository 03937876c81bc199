"""`session.operation` (issue 25): a `sessions.compact` without `maxLines` (OpenClaw's model compaction,
ours the summariser, D8) is announced to subscribed connections — `phase: "start"`, then `phase:
"end"` with `completed` (and `reason` when nothing was compacted) — before its answer, with the
fields of the recorded frames (fixtures/gateway-2026.9.6/sessions-compact-no-max-lines.jsonl); a
`maxLines` trim sends none (sessions-compact.jsonl), nor does an unsubscribed connection get any."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import GatewayThread, connected, write_config

FIXTURES = Path(__file__).parent / "fixtures" / "gateway-2026.9.6"
GROUP = "agent:main:telegram:group:123"


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line)["frame"] for line in (FIXTURES / name).read_text().splitlines()]


def test_compaction_is_announced_as_an_operation(state_dir: Path) -> None:
    frames = recorded("sessions-compact-no-max-lines.jsonl")
    want = [f["payload"] for f in frames if f.get("event") == "session.operation"]
    assert [w["phase"] for w in want] == ["start", "end"]
    assert not [f for f in recorded("sessions-compact.jsonl") if f.get("event") == "session.operation"]
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}})
    with (
        GatewayThread(tick_interval_ms=60_000) as gw,
        connected(gw.url) as client,
        connected(gw.url) as idle,
    ):
        assert client.request("sessions.subscribe", {})["ok"]
        client.events.clear()
        res = client.request("sessions.compact", {"key": GROUP})
        assert res["ok"] and res["payload"]["compacted"], res
        ops = [e["payload"] for e in client.events if e["event"] == "session.operation"]
        assert [o["phase"] for o in ops] == ["start", "end"]  # both before the answer
        start, end = ops
        assert list(start) == list(want[0])
        assert list(end) == [k for k in want[1] if k != "reason"]  # it compacted: no reason
        assert start["operationId"] == end["operationId"] and start["operation"] == "compact"
        assert start["sessionKey"] == end["sessionKey"] == GROUP and start["agentId"] == "main"
        assert end["completed"] is True and end["ts"] >= start["ts"]
        # again: compacted once more, or an answer that did not compact, with OpenClaw's reason field
        client.events.clear()
        res = client.request("sessions.compact", {"key": GROUP})
        ops = [e["payload"] for e in client.events if e["event"] == "session.operation"]
        assert res["ok"] and [o["phase"] for o in ops] == ["start", "end"], (res, ops)
        if res["payload"]["compacted"]:
            assert ops[1]["completed"] is True and "reason" not in ops[1]
        else:
            assert list(ops[1]) == list(want[1]) and ops[1]["completed"] is False
            assert ops[1]["reason"] == res["payload"]["reason"]
        # a maxLines trim is no operation
        client.events.clear()
        res = client.request("sessions.compact", {"key": "agent:main:cron:job1", "maxLines": 3})
        assert res["ok"], res
        client.drain_events(0.3)
        assert not [e for e in client.events if e["event"] == "session.operation"]
        # a refusal still ends the operation it started
        client.events.clear()
        res = client.request("sessions.compact", {"key": "agent:main:nobody:here"})
        ops = [e["payload"] for e in client.events if e["event"] == "session.operation"]
        assert [o["phase"] for o in ops] == ["start", "end"], (res, ops)
        assert ops[1]["completed"] is False
        if not res["ok"]:
            assert ops[1]["reason"] == res["error"]["message"]
        idle.drain_events(0.3)
        assert not [e for e in idle.events if e["event"] == "session.operation"]
    hello_events = recorded("handshake-untruncated.jsonl")[2]["payload"]["features"]["events"]
    assert "session.operation" in hello_events


def test_config_changes_are_announced(state_dir: Path) -> None:
    """`config.changed {path, hash, ts}` (recorded after agents.delete, agents-delete.jsonl): sent
    when our own write rewrote the config, and when an operator's edit is seen (the next request);
    `hash` is config.get's; never for a write that left the config alone."""
    [want] = [f["payload"] for f in recorded("agents-delete.jsonl") if f.get("event") == "config.changed"]
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    config = state_dir / "openclaw.json"
    write_config(state_dir, {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}})
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as client:
        client.events.clear()
        assert client.request("sessions.patch", {"key": "agent:main:main", "pinned": True})["ok"]
        client.drain_events(0.3)
        assert not [e for e in client.events if e["event"] == "config.changed"]
        res = client.request("agents.delete", {"agentId": "ops", "deleteFiles": True})
        assert res["ok"] and res["payload"]["config"]["updated"], res
        client.drain_events(0.5)
        [seen] = [e["payload"] for e in client.events if e["event"] == "config.changed"]
        assert list(seen) == list(want)
        got = client.request("config.get", {})["payload"]
        assert seen["path"] == str(config) == got["path"] and seen["hash"] == got["hash"]
        client.events.clear()
        config.write_text(json.dumps({"agents": {"entries": {"main": {}}}, "session": {"mainKey": "main"}}))
        assert client.request("health", {})["ok"]
        client.drain_events(0.3)
        [edited] = [e["payload"] for e in client.events if e["event"] == "config.changed"]
        assert edited["hash"] == client.request("config.get", {})["payload"]["hash"] != seen["hash"]
