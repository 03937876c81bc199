"""`chat.metadata` through a real Gateway socket: OpenClaw 2026.9.6's params, owner rules and error
texts (recorded: tests/fixtures/gateway-2026.9.6-issue25/writes-5.jsonl and the peer run); no
models and no commands, since this Gateway runs no agent."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config

GATEWAY = {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}}
TWO_AGENTS = {
    "agents": {
        "ownership": "explicit",
        "entries": {"main": {}, "ops": {"tools": {"swarm": {"enabled": False}}}},
    }
}
WANTED = {
    "models": [],
    "commands": [],
    "accountSelection": {"kind": "automatic", "label": "Automatic account selection"},
}


def test_chat_metadata_with_several_agents(state_dir: Path) -> None:
    generate_legacy_state(state_dir, 6, 0, 4242)
    write_config(state_dir, {"gateway": GATEWAY, **TWO_AGENTS})
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello(scopes=["operator.read"])["ok"]
        for params, swarm in (
            ({"agentId": "main"}, True),
            ({"agentId": "Ops"}, False),  # normalised; the agent's own tools.swarm
            ({"sessionKey": "agent:main:main"}, True),
            ({"sessionKey": "agent:main:nope"}, True),  # an unknown session still has its agent's metadata
            ({"sessionKey": "main", "agentId": "ops"}, False),
        ):
            got = client.request("chat.metadata", params)
            assert got["ok"], (params, got)
            assert got["payload"] == {**WANTED, "swarmEnabled": swarm}, params
        for params, code, message in (
            (
                {},
                "INVALID_REQUEST",
                "Multiple agents are configured, but this Gateway request has no explicit owner. "
                "Set agentId to one of the configured agents.",
            ),
            ({"agentId": "nope"}, "INVALID_REQUEST", 'unknown agent id "nope"'),
            (
                {"sessionKey": "main"},
                "INVALID_REQUEST",
                'Multiple agents are configured, but session key "main" has no explicit owner. '
                "Pass agentId or use an agent-prefixed session key.",
            ),
            (
                {"agentId": "ops", "sessionKey": "agent:main:main"},
                "INVALID_REQUEST",
                'agent "ops" does not match session key agent "main"',
            ),
            (
                {"agentId": "main", "authProfileId": "x"},
                "FORBIDDEN",
                "This account action requires a current authorized connection; reconnect and try again.",
            ),
            (
                {"sessionKey": "agent:main:main", "authProfileId": "x"},
                "INVALID_REQUEST",
                "invalid chat.metadata params: must not be valid",
            ),
            (
                {"agentId": ""},
                "INVALID_REQUEST",
                "invalid chat.metadata params: at /agentId: must not have fewer than 1 characters",
            ),
            (
                {"bogus": 1},
                "INVALID_REQUEST",
                "invalid chat.metadata params: at root: unexpected property 'bogus'",
            ),
        ):
            got = client.request("chat.metadata", params)
            assert got["error"] == {"code": code, "message": message}, params


def test_chat_metadata_of_the_only_agent(state_dir: Path) -> None:
    generate_legacy_state(state_dir, 6, 0, 4242)
    write_config(state_dir, {"gateway": GATEWAY, "tools": {"swarm": {"enabled": False}}})
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello(scopes=["operator.read"])["ok"]
        assert client.request("chat.metadata", {})["payload"] == {**WANTED, "swarmEnabled": False}
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello(scopes=[])["ok"]
        assert client.request("chat.metadata", {})["error"]["message"] == "missing scope: operator.read"
