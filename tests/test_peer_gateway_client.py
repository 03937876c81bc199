"""Our CLI as a client of the real OpenClaw 2026.9.6 Gateway (/tmp/peer; skipped when absent).

One Gateway per module (it takes 5–20 s to be ready and ~1 GiB): a 12-session state made by the
shared generator, imported by the real CLI, config `session.maintenance {mode: warn, maxEntries:
6}` (the Gateway's own maintenance then changes nothing; `--enforce` caps 4 rows). The scenarios
run in one test, in order, because the last one stops the Gateway (xdist may otherwise split
them over two workers, each starting its own Gateway)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cleanup_support import DAY, entry, make_legacy, now_ms
from conftest import GEN_LEGACY_STORE
from gateway_support import free_port

from openclaw_cli.errors import ExitCode

PEER = Path("/tmp/peer/openclaw")
PEER_GATEWAY = Path(__file__).resolve().parents[2] / "shared" / "tools" / "peer-gateway.sh"
TOKEN = "peer-token-0123456789"
pytestmark = [
    pytest.mark.peer,
    pytest.mark.slow,
    pytest.mark.skipif(
        not PEER.exists(),
        reason="real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)",
    ),
    pytest.mark.skipif(not PEER_GATEWAY.exists(), reason=f"{PEER_GATEWAY} not found"),
]


def peer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OC_PEER_ROOT=str(root))
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    root = tmp_path_factory.mktemp("peer-gateway")
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            "12",
            "0",
            "4242",
            "--cron-key-style",
            "canonical",
        ],
        check=True,
        capture_output=True,
    )
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}, "spare": {}}},
                "session": {"maintenance": {"mode": "warn", "maxEntries": 6}},
            }
        )
    )
    imported = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents")
    assert imported.returncode == 0, imported.stderr
    port = free_port()
    started = subprocess.run(
        ["bash", str(PEER_GATEWAY), "start", str(root), str(port), TOKEN],
        capture_output=True,
        text=True,
        timeout=240,  # ready in 5-15 s on a quiet machine; over 120 s was seen at load 18 on 2 cores
    )
    assert started.returncode == 0, started.stderr + (root / "gateway.out").read_text(errors="replace")
    pgid = started.stdout.strip()

    def stop() -> None:
        subprocess.run(["bash", str(PEER_GATEWAY), "stop", pgid], capture_output=True, timeout=30)

    try:
        yield {"root": root, "state": state, "port": port, "stop": stop}
    finally:
        stop()


def ours(gw: dict, *args: str) -> subprocess.CompletedProcess:
    """Our CLI on the Gateway's state dir; port and token come from its config (peer-gateway.sh)."""
    state = gw["state"]
    env = dict(
        os.environ,
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        HOME=str(gw["root"] / "home"),
        OPENCLAW_HOME=str(gw["root"] / "home"),
    )
    env.pop("OPENCLAW_GATEWAY_PORT", None)
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def ours_json(gw: dict, *args: str) -> tuple[int, dict, str]:
    proc = ours(gw, *args, "--json")
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def real_keys(gw: dict) -> list[str]:
    listing = peer(gw["root"], "sessions", "--json", "--agent", "main")
    assert listing.returncode == 0, listing.stderr
    return [row["key"] for row in json.loads(listing.stdout)["sessions"]]


def test_the_real_gateway_serves_our_mutations(gateway):
    gw = gateway
    keys_before = real_keys(gw)
    assert len(keys_before) == 12

    # gateway call: a read through the real Gateway
    code, doc, err = ours_json(gw, "gateway", "call", "sessions.list", "--params", '{"limit":3}')
    assert code == 0, err
    assert len(doc["sessions"]) == 3 and doc["limitApplied"] == 3 and doc["totalCount"] == 12

    # a wrong token: the Gateway's AUTH_TOKEN_MISMATCH, exit non-zero, nothing changed
    code, doc, err = ours_json(
        gw, "sessions", "cleanup", "--enforce", "--agent", "main", "--token", "wrong-token"
    )
    assert code == ExitCode.GATEWAY_AUTH, err
    assert doc["error"]["type"] == "gateway_request_error"
    assert doc["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    assert "ran locally" not in err
    assert real_keys(gw) == keys_before

    # status: an authenticated health call
    code, doc, err = ours_json(gw, "status")
    assert code == 0, err
    assert doc["gateway"]["reachable"] is True and doc["gateway"]["error"] is None
    assert doc["gateway"]["url"] == f"ws://127.0.0.1:{gw['port']}"

    # compact --max-lines through the Gateway
    code, doc, err = ours_json(gw, "compact", "agent:main:main", "--max-lines", "3")
    assert code == 0, err
    assert doc == {"ok": True, "key": "agent:main:main", "compacted": True, "kept": 3}

    # cleanup --enforce served by the Gateway, and the real CLI sees the result
    code, doc, err = ours_json(gw, "sessions", "cleanup", "--enforce", "--agent", "main")
    assert code == 0, err
    assert "ran locally" not in err
    assert doc["applied"] is True and doc["dryRun"] is False
    assert doc["storePath"] == str(gw["state"] / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    assert (doc["beforeCount"], doc["capped"], doc["afterCount"]) == (12, 4, 8)
    keys_after = real_keys(gw)
    assert len(keys_after) == doc["afterCount"] and set(keys_after) < set(keys_before)

    # agents delete of an extra agent
    code, doc, err = ours_json(gw, "agents", "delete", "spare", "--force")
    assert code == 0, err
    assert doc["ok"] is True and doc["agentId"] == "spare" and doc["failed"] == []
    agents = peer(gw["root"], "agents", "list", "--json")
    assert agents.returncode == 0, agents.stderr
    assert "spare" not in agents.stdout

    # the Gateway stopped: cleanup runs locally and says so
    gw["stop"]()
    make_legacy(
        gw["state"],
        {
            "agent:scratch:main": entry("keep", now_ms()),
            "agent:scratch:cron:old": entry("old", now_ms() - 40 * DAY),
        },
        agent="scratch",
    )
    # a config that lists agents covers only those (as OpenClaw): the new agent joins the roster
    config_path = gw["state"] / "openclaw.json"
    config = json.loads(config_path.read_text())
    agents_config = config.setdefault("agents", {})
    if isinstance(agents_config.get("entries"), dict):
        agents_config["entries"]["scratch"] = {}
    else:
        agents_config.setdefault("list", []).append({"id": "scratch"})
    config_path.write_text(json.dumps(config))
    code, doc, err = ours_json(gw, "sessions", "cleanup", "--enforce", "--agent", "scratch")
    assert code == 0, err
    assert f"No Gateway is listening at ws://127.0.0.1:{gw['port']}; ran locally." in err
    assert doc["applied"] is True and doc["afterCount"] < doc["beforeCount"]
    # ...and the real OpenClaw database is written offline, with a backup first (D21)
    code, doc, err = ours_json(gw, "sessions", "cleanup", "--enforce", "--agent", "main")
    assert code == 0 and "ran locally" in err and "Backup of" in err, err
    # (our G1 rules may remove rows 2026.9.6's later rules keep, D11); the real CLI reads the result
    assert doc["applied"] is True and set(real_keys(gw)) <= set(keys_after)
    assert len(real_keys(gw)) == doc["afterCount"]
