"""The real OpenClaw 2026.9.6 CLI against our Gateway and against its own, on identical copies of
one generated state (issue 25): `logs`, `system presence`, `gateway call chat.history`,
`sessions.resolve`, `sessions.get` and `sessions.search` succeed through ours and print what the
real Gateway answers (`logs`, `presence` and the refused resolve through the real CLI on both; the
calls' answers from the real Gateway on one connection of ours). What differs by nature is named:
log contents, the host's instance id and version, scores, the real one's event-log cursors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN as OUR_TOKEN
from tests.gateway_server_support import GatewayProcess
from tests.openclaw_db_support import NO_PEER, TOKEN, gateway_calls, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
GROUP = "agent:main:telegram:group:123"
GROUP_ID = "dd895c96-1745-4042-a925-feb3af6a2ff5"
# chat.history fields of the real one's event log, with no counterpart in a transcript file
EVENT_LOG_ONLY = {"activity", "deltaCursor"}
# the calls judged; the real CLI makes them through ours, and one connection to the real Gateway
# gets its answers (a real CLI run costs ~3 s of CPU: seven fewer per run)
CALLS = (
    ("history", "chat.history", {"sessionKey": GROUP, "limit": 3}),
    ("history-offset", "chat.history", {"sessionKey": GROUP, "limit": 2, "offset": 3}),
    ("resolve-key", "sessions.resolve", {"key": GROUP}),
    ("resolve-id", "sessions.resolve", {"sessionId": GROUP_ID}),
    ("resolve-missing", "sessions.resolve", {"key": "agent:main:nope", "allowMissing": True}),
    ("get", "sessions.get", {"key": GROUP, "limit": 4}),
    ("search", "sessions.search", {"query": "gamma", "sessionKeys": [GROUP], "agentId": "main"}),
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


@pytest.fixture
def two_gateways(tmp_path: Path):  # type: ignore[no-untyped-def]
    if not have_peer():
        pytest.skip(NO_PEER)
    theirs_root, ours_root = tmp_path / "theirs", tmp_path / "ours"
    state = theirs_root / "home" / ".openclaw"
    generate_legacy_state(state, 12, 0, 4242, "--cron-key-style", "canonical")
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
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
    assert [tuple(r[k] for k in hit) for r in ours["search"]["results"]] == [
        tuple(r[k] for k in hit) for r in theirs["search"]["results"]
    ]
