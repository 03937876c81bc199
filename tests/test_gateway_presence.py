"""The `presence` event and `system-presence` (issue 25): a client that stays (not `cli`,
`backend` or `probe`) is announced to every reading connection on connect and on disconnect, with
OpenClaw 2026.9.6's entry fields in its order (recorded: fixtures/gateway-2026.9.6-presence)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.gateway_server_support import Client, GatewayThread, connected

RECORDED = Path(__file__).parent / "fixtures" / "gateway-2026.9.6-presence" / "presence-1.jsonl"
UI_CLIENT = {
    "id": "test",
    "version": "2026.9.6",
    "platform": "linux",
    "mode": "test",
    "displayName": "tui-test",
    "instanceId": "inst-1",
}
NO_IDENTITIES = {"user"}  # OpenClaw names the operator's user profile; we hold no identities


def recorded_presence_events() -> list[dict[str, Any]]:
    out = []
    for line in RECORDED.read_text().splitlines():
        item = json.loads(line)
        if item["conn"] == "watcher" and item["frame"].get("event") == "presence":
            out.append(item["frame"])
    return out


def presence_events(client: Client) -> list[dict[str, Any]]:
    return [e for e in client.events if e["event"] == "presence"]


def test_presence_on_connect_and_disconnect_as_recorded(state_dir: Path) -> None:
    want_connect, want_disconnect = recorded_presence_events()
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as watcher:
        with Client(gw.url) as cli:  # an ephemeral client is not announced
            assert cli.hello()["ok"]
        watcher.drain_events(0.3)
        assert presence_events(watcher) == []
        hello = watcher.request("health", {})  # any request: the watcher's own hello came first
        assert hello["ok"]
        with Client(gw.url) as ui:
            assert ui.hello(client=UI_CLIENT, scopes=["operator.read"])["ok"]
            watcher.drain_events(0.5)
            [connect] = presence_events(watcher)
            listed = watcher.request("system-presence", {})["payload"]
        watcher.drain_events(0.5)
        disconnect = presence_events(watcher)[-1]
        after = watcher.request("system-presence", {})["payload"]
    for want, got in ((want_connect, connect), (want_disconnect, disconnect)):
        self_entry, entry = got["payload"]["presence"]
        want_self, want_entry = want["payload"]["presence"]
        assert (
            list(self_entry) == [k for k in want_self if k in self_entry] and self_entry["reason"] == "self"
        )
        assert list(entry) == [k for k in want_entry if k not in NO_IDENTITIES]
        for name in (
            "clientId",
            "mode",
            "roles",
            "text",
            "host",
            "version",
            "platform",
            "instanceId",
            "reason",
        ):
            assert entry[name] == want_entry[name], name
        assert set(got["stateVersion"]) == {"presence", "health"}
    assert disconnect["stateVersion"]["presence"] == connect["stateVersion"]["presence"] + 1
    assert (
        connect["payload"]["presence"][1]["onlineSince"]
        == disconnect["payload"]["presence"][1]["onlineSince"]
    )
    assert [e["reason"] for e in listed] == ["self", "connect"]
    assert [e["reason"] for e in after] == ["self", "disconnect"]  # kept after leaving, as recorded


def test_presence_goes_to_readers_only_and_hello_lists_it(state_dir: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000) as gw, Client(gw.url) as ui:
        hello = ui.hello(client=UI_CLIENT, scopes=["operator.read"])
        assert [e["reason"] for e in hello["payload"]["snapshot"]["presence"]] == ["self"]
        with Client(gw.url) as scopeless, Client(gw.url) as reader:
            assert scopeless.hello(scopes=[])["ok"]
            snapshot = reader.hello(scopes=["operator.read"])["payload"]["snapshot"]
            assert [e["reason"] for e in snapshot["presence"]] == ["self", "connect"]
            assert snapshot["stateVersion"]["presence"] == 2
            with Client(gw.url) as second:
                assert second.hello(client={**UI_CLIENT, "instanceId": "inst-2"}, scopes=[])["ok"]
            reader.drain_events(0.5)
            scopeless.drain_events(0.1)
            assert len(presence_events(reader)) == 2  # the second client's connect and disconnect
            assert presence_events(scopeless) == []
