"""The real OpenClaw 2026.9.6 Gateway and ours, side by side on identical copies of one generated
state with a second branch in one of its telegram groups (issue 25); one pair of Gateways for the module
(a real Gateway start costs ~17 s of CPU, issue 24), the reading test first:

- the real CLI against both: `logs`, `system presence`, `gateway call chat.history`,
  `sessions.resolve`, `sessions.get` and `sessions.search` succeed through ours and print what the
  real Gateway answers (`logs`, `presence` and the refused resolve through the real CLI on both; the
  calls' answers from the real Gateway on one connection of ours). What differs by nature is named:
  log contents, the host's instance id and version, scores, the real one's event-log cursors;
- `sessions.fork`, `sessions.branches.switch`, `chat.metadata` and `sessions.usage`: the same
  requests give the same outcomes — errors word for word, the fork's editor text and transcript,
  the switched session's branches and history, a new sessionId that names the old one, the
  `sessions.changed` reasons, the usage figures of the active branches."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN as OUR_TOKEN
from tests.gateway_server_support import Client, GatewayProcess
from tests.openclaw_db_support import NO_PEER, TOKEN, gateway_calls, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
GROUP = "agent:main:telegram:group:123"
GROUP_ID = "dd895c96-1745-4042-a925-feb3af6a2ff5"
# the reads' session: another generated group of the same state, a transcript of one branch (the
# telegram group above gets a second branch for the fork and switch test)
READ = "agent:main:telegram:group:-1007"
READ_ID = "b35c7490-d4f9-4260-bbff-756ba29c7b39"
# the fork and branch-switch test's session: its generated transcript runs bcabb1ba (assistant) ->
# 9aae8c98 (user) -> … -> a68132dd (tip); BRANCH is a second branch off bcabb1ba
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
# chat.history fields of the real one's event log, with no counterpart in a transcript file
EVENT_LOG_ONLY = {"activity", "deltaCursor"}
# the calls judged; the real CLI makes them through ours, and one connection to the real Gateway
# gets its answers (a real CLI run costs ~3 s of CPU: seven fewer per run)
CALLS = (
    ("history", "chat.history", {"sessionKey": READ, "limit": 3}),
    ("history-offset", "chat.history", {"sessionKey": READ, "limit": 2, "offset": 3}),
    ("resolve-key", "sessions.resolve", {"key": READ}),
    ("resolve-id", "sessions.resolve", {"sessionId": READ_ID}),
    ("resolve-missing", "sessions.resolve", {"key": "agent:main:nope", "allowMissing": True}),
    ("get", "sessions.get", {"key": READ, "limit": 4}),
    ("search", "sessions.search", {"query": "gamma", "sessionKeys": [READ], "agentId": "main"}),
)


def call(root: Path, url: str, token: str, *args: str, params: Any = None) -> subprocess.CompletedProcess:
    extra = ["--params", json.dumps(params)] if params is not None else []
    return peer(root, *args, "--url", url, "--token", token, *extra, timeout=180)


def _messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for message in doc["messages"]:
        meta = {k: v for k, v in message["__openclaw"].items() if k != "transcriptPosition"}
        out.append({**message, "__openclaw": meta})
    return out


@pytest.fixture(scope="module")
def two_gateways(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Both Gateways on identical copies of one state, for the module's tests (in file order: the
    reads, then the fork and branch switch)."""
    if not have_peer():
        pytest.skip(NO_PEER)
    base = tmp_path_factory.mktemp("gateway-pair")
    theirs_root, ours_root = base / "theirs", base / "ours"
    state = theirs_root / "home" / ".openclaw"
    generate_legacy_state(state, 12, 0, 4242, "--cron-key-style", "canonical")
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    with (state / "agents" / "main" / "sessions" / f"{GROUP_ID}.jsonl").open("a") as out:
        out.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in BRANCH)
    ours = ours_root / "home" / ".openclaw"
    shutil.copytree(state, ours)  # before the real Gateway imports its copy at start
    env = {"OPENCLAW_STATE_DIR": str(ours), "OPENCLAW_CONFIG_PATH": str(ours / "openclaw.json")}
    with peer_gateway(theirs_root) as port, GatewayProcess(env=env) as gw:
        yield theirs_root, {"theirs": (f"ws://127.0.0.1:{port}", TOKEN), "ours": (gw.url, OUR_TOKEN)}


def test_real_cli_reads_through_our_gateway(two_gateways) -> None:  # type: ignore[no-untyped-def]
    root, gateways = two_gateways
    got: dict[str, dict[str, Any]] = {"theirs": {}, "ours": {}}
    for side, (url, token) in gateways.items():
        presence = call(root, url, token, "system", "presence", "--json")
        assert presence.returncode == 0, (side, presence.stderr[-2000:])
        got[side]["presence"] = json.loads(presence.stdout)
        logs = call(root, url, token, "logs", "--limit", "5", "--json")
        assert logs.returncode == 0, (side, logs.stderr[-2000:])
        got[side]["logs"] = [json.loads(line) for line in logs.stdout.splitlines() if line.startswith("{")]
        if side == "ours":  # the real CLI through our Gateway: it accepts every answer and prints it
            for name, method, params in CALLS:
                done = call(root, url, token, "gateway", "call", method, "--json", params=params)
                assert done.returncode == 0, (side, name, done.stderr[-2000:])
                got[side][name] = json.loads(done.stdout)
        else:  # the real Gateway's answers on one connection (`gateway call --json` prints the payload)
            port = int(url.rsplit(":", 1)[1])
            frames = gateway_calls(port, [(method, params) for _, method, params in CALLS])
            for (name, _, _), frame in zip(CALLS, frames, strict=True):
                assert frame["ok"], (side, name, frame)
                got[side][name] = frame["payload"]
        failed = call(
            root, url, token, "gateway", "call", "sessions.resolve", "--json", params={"label": "nope"}
        )
        got[side]["resolve-error"] = (failed.returncode, failed.stdout + failed.stderr)
    theirs, ours = got["theirs"], got["ours"]

    # system presence: one self entry, the same fields; host and mode as the real one says them
    assert [set(e) for e in ours["presence"]] == [set(e) for e in theirs["presence"]]
    for field in ("host", "mode", "reason", "deviceFamily"):
        assert ours["presence"][0][field] == theirs["presence"][0][field]
    # logs: a meta record naming the file, then log records with the parsed fields
    assert ours["logs"][0]["type"] == theirs["logs"][0]["type"] == "meta"
    assert set(ours["logs"][0]) == set(theirs["logs"][0])
    our_lines = [r for r in ours["logs"] if r["type"] == "log"]
    assert our_lines and all({"time", "level", "subsystem", "message", "raw"} <= set(r) for r in our_lines)
    # chat.history: the same page of the same messages
    for name in ("history", "history-offset"):
        mine, real = ours[name], theirs[name]
        assert _messages(mine) == _messages(real), name
        assert set(real) - EVENT_LOG_ONLY == set(mine), name
        for key in ("sessionKey", "sessionId", "hasMore", "totalMessages", "nextOffset", "pendingInputs"):
            assert mine.get(key) == real.get(key), (name, key)
    # resolve and get: identical
    for name in ("resolve-key", "resolve-id", "resolve-missing"):
        assert ours[name] == theirs[name], name
    assert _messages(ours["get"]) == _messages(theirs["get"])
    assert ours["resolve-error"][0] == theirs["resolve-error"][0] != 0
    assert "No session found with label: nope" in ours["resolve-error"][1]
    # search: the same hits in the same order (scores are each index's own)
    hit = ("sessionKey", "sessionId", "messageId", "role", "timestamp")
    assert theirs["search"]["results"], "the word is in the session: the comparison is of real hits"
    assert [tuple(r[k] for k in hit) for r in ours["search"]["results"]] == [
        tuple(r[k] for k in hit) for r in theirs["search"]["results"]
    ]


# ---- fork, branch switch, chat.metadata, sessions.usage (they write: after the reads) ----


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


def test_fork_switch_and_metadata_side_by_side(two_gateways) -> None:  # type: ignore[no-untyped-def]
    """After the reading test on the same pair (it writes nothing: the state is as generated)."""
    _, gateways = two_gateways
    with _connect(*gateways["theirs"]) as client:
        theirs = run(client)
    with _connect(*gateways["ours"]) as client:
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
