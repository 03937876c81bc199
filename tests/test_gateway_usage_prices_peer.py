"""`sessions.usage` prices a call its transcript recorded no cost for, as the real OpenClaw 2026.9.6
does (issue 25; docs/decisions.md, helper gwparams): on one generated state whose main session has a
call of an unpriced model (`acme/mystery-1`, zero cost), a call with a recorded cost, a call with no
cost and cache tokens, and calls with an all-zero cost, with the config pricing `openai/gpt-5.4`,
our Gateway (on the legacy state) and the real one (on the same state after its own import) answer
the same figures, float for float: totals, per-model and per-day costs, `missingCostEntries` and
`missingCostByModel`, the orders by cost."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import GatewayThread, connected, write_config
from tests.openclaw_db_support import NO_PEER, gateway_calls, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

PRICES = {"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 3.75}
CONFIG = {
    "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}},
    "models": {
        "mode": "merge",
        "providers": {
            "openai": {
                "baseUrl": "https://api.openai.com/v1",
                "api": "openai-responses",
                "models": [
                    {
                        "id": "gpt-5.4",
                        "name": "GPT-5.4",
                        "reasoning": True,
                        "input": ["text"],
                        "cost": PRICES,
                        "contextWindow": 1050000,
                        "maxTokens": 128000,
                    }
                ],
            }
        },
    },
}
MAIN = "agent:main:main"
# what differs by nature (paths, clocks, the real one's cache) or by the real import (`origin`, which
# its import derives for channel rows; not a usage figure)
IGNORED = {"updatedAt", "sessionFile", "cacheStatus", "endDate", "origin"}


def priced_state(state: Path) -> None:
    generate_legacy_state(state, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state, CONFIG)
    index = json.loads((state / "agents" / "main" / "sessions" / "sessions.json").read_text())
    transcript = state / "agents" / "main" / "sessions" / f"{index[MAIN]['sessionId']}.jsonl"
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assistant = [
        o["message"] for o in lines if o.get("type") == "message" and o["message"].get("role") == "assistant"
    ]
    assert len(assistant) >= 4
    assistant[0]["provider"], assistant[0]["model"] = "acme", "mystery-1"  # no price anywhere
    assistant[1]["usage"]["cost"] = {
        "input": 0.01,
        "output": 0.02,
        "cacheRead": 0,
        "cacheWrite": 0,
        "total": 0.03,
    }
    del assistant[2]["usage"]["cost"]  # no cost at all, cache tokens
    assistant[2]["usage"].update(cacheRead=1000, cacheWrite=500)
    assistant[2]["usage"]["totalTokens"] += 1500
    transcript.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in lines))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


REQUESTS = [("sessions.usage", {"agentId": "main", "range": "all"}), ("sessions.usage", {"key": MAIN})]


def real_answers(port: int) -> list[dict[str, Any]]:
    """The real Gateway's answers once its usage cache is fresh (its first answers are partial)."""
    from websockets.exceptions import ConnectionClosed

    deadline = time.monotonic() + 300
    while True:
        try:
            answers = gateway_calls(port, REQUESTS)
        except ConnectionClosed:
            answers = []
        if answers and all(
            (a.get("payload") or {}).get("cacheStatus", {}).get("status") == "fresh" for a in answers
        ):
            return answers
        assert time.monotonic() < deadline, answers
        time.sleep(2)


@pytest.mark.skipif(not have_peer(), reason=NO_PEER)
def test_usage_costs_equal_the_real_gateways(state_dir: Path) -> None:
    priced_state(state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        ours = [c.request(method, params) for method, params in REQUESTS]
    root = state_dir.parent.parent
    for _attempt in (1, 2):  # one run of 3 at load 20 exited 1 with only warnings on stderr: once more
        imported = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents")
        if imported.returncode == 0:
            break
    assert imported.returncode == 0, (imported.stdout + imported.stderr)[-3000:]
    with peer_gateway(root) as port:  # (started once more if its start-up times out: PeerGateway)
        theirs = real_answers(port)
    for mine, real in zip(ours, theirs, strict=True):
        assert mine["ok"] and real["ok"], (mine, real)
        assert _strip(mine["payload"]) == _strip(real["payload"])
    totals = ours[0]["payload"]["totals"]
    assert totals["missingCostEntries"] == 1 and totals["missingCostByModel"] == {"acme/mystery-1": 1}
    assert totals["cacheReadCost"] == 1000 * PRICES["cacheRead"] / 1e6 and totals["totalCost"] > 0
