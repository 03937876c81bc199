"""`sessions.fork`, `sessions.branches.switch`, `chat.metadata` and `sessions.usage` side by side:
the same requests to the real OpenClaw 2026.9.6 Gateway and to ours, on identical copies of one
generated state with a second branch in its telegram group, give the same outcomes — errors word
for word, the fork's editor text and transcript, the switched session's branches and history, a
new sessionId that names the old one, the `sessions.changed` reasons, the usage figures of the
active branches (skipped without the peer install)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN as OUR_TOKEN
from tests.gateway_server_support import Client, GatewayProcess
from tests.openclaw_db_support import NO_PEER, TOKEN, have_peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
GROUP = "agent:main:telegram:group:123"
GROUP_ID = "dd895c96-1745-4042-a925-feb3af6a2ff5"
# the generated group transcript: bcabb1ba (assistant) -> 9aae8c98 (user) -> … -> a68132dd (tip)
BRANCH = [
    {
        "type": "message",
        "id": "b1000001",
        "parentId": "bcabb1ba",
        "timestamp": "2026-12-02T01:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "branch two question"}]},
    },
    {
        "type": "message",
        "id": "b1000002",
        "parentId": "b1000001",
        "timestamp": "2026-12-02T01:00:05.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "branch two answer"}]},
    },
]
# what a history message carries that comes from the real one's event log, not the transcript
EVENT_LOG_ONLY = {"transcriptPosition"}


def _connect(url: str, token: str) -> Client:
    """A connected client; the real Gateway refuses connections (1013) for a moment after it listens."""
    for _ in range(120):
        client = Client(url)
        try:
            if client.hello(token=token)["ok"]:
                return client
        except Exception:  # noqa: BLE001 - closed while starting: try again
            pass
        client.close()
        time.sleep(0.5)
    raise AssertionError(f"no hello from {url}")


def _messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {**m, "__openclaw": {k: v for k, v in m["__openclaw"].items() if k not in EVENT_LOG_ONLY}}
        for m in doc["messages"]
    ]


def _changes(client: Client) -> list[tuple[str, str]]:
    client.drain_events(1.5)
    found = [
        (e["payload"].get("sessionKey"), e["payload"]["reason"])
        for e in client.events
        if e["event"] == "sessions.changed" and e["payload"].get("reason") in ("fork", "branch-switch")
    ]
    client.events.clear()
    return found


# sessions.usage figures both count from the transcripts (costs: the generated calls record a zero
# cost, which both price; the real one from the catalog its openai plugin ships, ours only from the
# operator's rates, none here, so ours lists them in `missingCostByModel`: test_gateway_usage_prices_peer)
USAGE_FIGURES = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "sessionId", "firstActivity")
USAGE_FIGURES += ("lastActivity", "durationMs", "messageCounts", "toolUsage", "activityDates")
USAGE_FIGURES += ("dailyMessageCounts", "utcQuarterHourMessageCounts")


def _usage(client: Client, params: dict[str, Any]) -> dict[str, Any]:
    """sessions.usage once its figures are computed (the real one answers "refreshing", usage
    null, while its cache fills)."""
    for _ in range(120):
        doc = client.request("sessions.usage", params, timeout=120)["payload"]
        if (doc.get("cacheStatus") or {}).get("status") != "refreshing":
            break
        time.sleep(0.5)
    rows = {}
    for row in doc["sessions"]:
        usage = row["usage"]
        rows[row["key"]] = {
            "fields": sorted(set(row) - {"origin", "label"}),
            "usage": {k: usage[k] for k in USAGE_FIGURES} if usage else None,
            "usage fields": sorted(set(usage) - {"missingCostByModel"}) if usage else None,
        }
    return {
        "rows": rows,
        "dates": (doc["startDate"], doc["endDate"]),
        "messages": doc["aggregates"]["messages"],
    }


def run(client: Client) -> dict[str, Any]:
    """The scenario on one Gateway: what it answered, with its own ids named by role."""
    got: dict[str, Any] = {}
    got["usage-one"] = _usage(client, {"key": GROUP, "range": "all"})
    got["usage-list"] = _usage(client, {"agentId": "main", "range": "all", "limit": 100})
    assert client.request("sessions.subscribe", {})["ok"]
    got["metadata"] = client.request("chat.metadata", {"agentId": "main"})["payload"]
    got["metadata-session"] = client.request("chat.metadata", {"sessionKey": GROUP})["payload"]
    for name, params in (
        ("metadata-no-owner", {}),
        ("metadata-unknown-agent", {"agentId": "nope"}),
        ("metadata-bare-key", {"sessionKey": "main"}),
        ("metadata-mismatch", {"agentId": "ops", "sessionKey": "agent:main:main"}),
        ("metadata-both", {"sessionKey": GROUP, "authProfileId": "x"}),
    ):
        got[name] = client.request("chat.metadata", params).get("error")
    for name, params in (
        ("fork-off-path", {"sessionKey": GROUP, "entryId": "9aae8c98"}),
        ("fork-not-user", {"sessionKey": GROUP, "entryId": "bcabb1ba"}),
        ("fork-missing", {"sessionKey": GROUP, "entryId": "nope"}),
        ("fork-no-session", {"sessionKey": "agent:main:nope", "entryId": "x"}),
        ("fork-bare-key", {"sessionKey": "main", "entryId": "x"}),
        ("fork-no-entry", {"sessionKey": GROUP}),
        ("switch-active", {"sessionKey": GROUP, "leafEntryId": "b1000002"}),
        ("switch-not-tip", {"sessionKey": GROUP, "leafEntryId": "9aae8c98"}),
        ("switch-missing", {"sessionKey": GROUP, "leafEntryId": "nope"}),
    ):
        method = "sessions.fork" if name.startswith("fork") else "sessions.branches.switch"
        got[name] = client.request(method, params).get("error")
    fork = client.request("sessions.fork", {"sessionKey": GROUP, "entryId": "b1000001"})
    assert fork["ok"], fork
    child = fork["payload"]["sessionKey"]
    got["fork"] = {**fork["payload"], "sessionKey": child.rsplit(":", 1)[0]}
    got["fork-events"] = [(k if k != child else "<child>", r) for k, r in _changes(client)]
    got["fork-history"] = _messages(client.request("chat.history", {"sessionKey": child})["payload"])
    row = client.request("sessions.describe", {"key": child})["payload"]["session"]
    got["fork-row"] = {k: row.get(k) for k in ("parentSessionKey", "forkSource", "createdVia", "kind")}
    got["fork-row"]["forkSource"] = {
        **row["forkSource"],
        "sessionId": row["forkSource"]["sessionId"] == GROUP_ID,
    }
    switch = client.request("sessions.branches.switch", {"sessionKey": GROUP, "leafEntryId": "a68132dd"})
    got["switch"] = switch.get("payload", switch.get("error"))
    got["switch-events"] = _changes(client)
    got["branches"] = client.request("sessions.branches.list", {"sessionKey": GROUP})["payload"]
    got["history"] = _messages(client.request("chat.history", {"sessionKey": GROUP})["payload"])
    session = client.request("sessions.describe", {"key": GROUP})["payload"]["session"]
    got["switched-row"] = {
        "new id": session["sessionId"] != GROUP_ID,
        "previousSessionId": session.get("previousSessionId"),
    }
    return got


@pytest.fixture
def two_states(tmp_path: Path) -> tuple[Path, Path]:
    if not have_peer():
        pytest.skip(NO_PEER)
    theirs_root, ours_root = tmp_path / "theirs", tmp_path / "ours"
    state = theirs_root / "home" / ".openclaw"
    generate_legacy_state(state, 12, 0, 4242, "--cron-key-style", "canonical")
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    with (state / "agents" / "main" / "sessions" / f"{GROUP_ID}.jsonl").open("a") as out:
        out.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in BRANCH)
    ours = ours_root / "home" / ".openclaw"
    shutil.copytree(state, ours)  # before the real Gateway imports its copy at start
    return theirs_root, ours


def test_fork_switch_and_metadata_side_by_side(two_states: tuple[Path, Path]) -> None:
    theirs_root, ours = two_states
    env = {"OPENCLAW_STATE_DIR": str(ours), "OPENCLAW_CONFIG_PATH": str(ours / "openclaw.json")}
    with peer_gateway(theirs_root) as port, GatewayProcess(env=env) as gw:
        with _connect(f"ws://127.0.0.1:{port}", TOKEN) as client:
            theirs = run(client)
        with _connect(gw.url, OUR_TOKEN) as client:
            mine = run(client)
    # chat.metadata: the same shape; no models on either (no credentials there, no models here)
    assert set(mine["metadata"]) == set(theirs["metadata"])
    assert mine["metadata"]["models"] == theirs["metadata"]["models"] == []
    for name in ("swarmEnabled", "accountSelection"):
        assert mine["metadata"][name] == theirs["metadata"][name]
        assert mine["metadata-session"][name] == theirs["metadata-session"][name]
    assert theirs["metadata"]["commands"] and mine["metadata"]["commands"] == []  # we run no agent
    for name in sorted(theirs):
        if name in ("metadata", "metadata-session"):
            continue
        assert mine[name] == theirs[name], name
