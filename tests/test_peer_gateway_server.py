"""The real OpenClaw 2026.9.6 CLI (/tmp/peer) pointed at OUR Gateway (OPENCLAW_GATEWAY_PORT /
OPENCLAW_GATEWAY_TOKEN): each command of the issue's "What must hold" exits 0 with the recorded
result shape, and what it changed is what our store holds afterwards. Skipped without /tmp/peer
(never installed from a test)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from openclaw_cli.ops.methods import METHODS
from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_server_support import RECORDED_CONFIG, TOKEN, GatewayProcess, write_config

PEER = Path("/tmp/peer/openclaw")
pytestmark = [
    pytest.mark.peer,
    pytest.mark.slow,
    pytest.mark.skipif(
        not PEER.exists(),
        reason="real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)",
    ),
]


@pytest.fixture
def served(state_dir: Path, tmp_path: Path):
    """Our Gateway on the recorded state (imported by us), and the peer CLI's own root whose config
    names the same agents and this Gateway's port and token."""
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, RECORDED_CONFIG)
    done = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert done.returncode == 0, done.stderr
    with GatewayProcess() as gw:
        port = int(gw.url.rsplit(":", 1)[1])
        peer_root = tmp_path / "peer"
        peer_state = peer_root / "home" / ".openclaw"
        peer_state.mkdir(parents=True)
        config = json.loads(json.dumps(RECORDED_CONFIG))
        config["gateway"]["port"] = port
        (peer_state / "openclaw.json").write_text(json.dumps(config))
        yield gw, peer_root, port


def peer(root: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OC_PEER_ROOT=str(root), OPENCLAW_GATEWAY_PORT=str(port), OPENCLAW_GATEWAY_TOKEN=TOKEN
    )
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME"):
        env.pop(name, None)  # the wrapper points them at the peer root
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=240)


def _json(proc: subprocess.CompletedProcess):
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return json.loads(proc.stdout)


def _store_entries(state: Path) -> dict:
    from openclaw_cli.store.sqlite.store import SqliteStore

    with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
        return store.load_entries()


def test_real_cli_against_our_gateway(served, state_dir: Path) -> None:
    gw, root, port = served
    listing = _json(peer(root, port, "gateway", "call", "sessions.list", "--params", '{"limit":3}', "--json"))
    assert listing["count"] == 3 and listing["totalCount"] == 12 and len(listing["sessions"]) == 3
    assert {"ts", "path", "limitApplied", "nextOffset", "hasMore", "owners", "defaults"} <= set(listing)

    cleanup = _json(peer(root, port, "sessions", "cleanup", "--enforce", "--json", "--agent", "main"))
    assert cleanup["agentId"] == "main" and cleanup["applied"] is True and cleanup["dryRun"] is False
    assert cleanup["storePath"] == str(state_dir / "agents/main/agent/openclaw-agent.sqlite")
    assert cleanup["afterCount"] == len(_store_entries(state_dir))

    compact = _json(
        peer(root, port, "sessions", "compact", "agent:main:cron:job1", "--max-lines", "3", "--json")
    )
    assert compact["ok"] is True and compact["compacted"] is True and compact["kept"] == 3

    deleted = _json(peer(root, port, "agents", "delete", "spare", "--force", "--json"))
    assert deleted["agentId"] == "spare" and deleted["transport"] == "gateway"
    config = json.loads((state_dir / "openclaw.json").read_text())
    assert "spare" not in config["agents"]["entries"]

    status = _json(peer(root, port, "status", "--json"))
    assert status["gateway"]["reachable"] is True and status["gateway"]["error"] is None
    assert status["sessions"]["count"] == len(_store_entries(state_dir))
    served_methods = "".join(gw.lines)
    for method in (
        "sessions.list",
        "sessions.cleanup",
        "sessions.compact",
        "agents.delete",
        "health",
        "status",
    ):
        assert f"res ✓ {method} " in served_methods, method  # each one went through our Gateway


@pytest.mark.skipif(
    "sessions.patch" not in METHODS, reason="sessions.patch is not in the method table yet (issue 11)"
)
def test_real_cli_archives_through_our_gateway(served, state_dir: Path) -> None:
    gw, root, port = served
    key = "agent:main:telegram:group:-1006"
    archived = _json(peer(root, port, "sessions", "archive", key, "--json"))
    assert archived["ok"] is True and archived["results"][0]["status"] == "archived"
    assert _store_entries(state_dir)[key].get("archivedAt") is not None


@pytest.mark.skipif(
    "sessions.delete" not in METHODS, reason="sessions.delete is not in the method table yet (issue 11)"
)
def test_real_cli_deletes_through_our_gateway(served, state_dir: Path) -> None:
    from openclaw_cli.store.archives import read_archive_bytes
    from openclaw_cli.store.sqlite.store import SqliteStore

    gw, root, port = served
    key = "agent:main:subagent:79f74d60-ac03-431e-835d-7d3b92e4016e"
    sid = _store_entries(state_dir)[key]["sessionId"]
    with SqliteStore(state_dir / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
        buf = io.BytesIO()
        store.export_transcript(sid, buf)
    done = _json(peer(root, port, "sessions", "delete", key, "--yes", "--json"))
    result = done["results"][0]
    assert done["ok"] is True and result["status"] == "deleted"
    path = Path(result["archived"][0])
    assert path.exists() and read_archive_bytes(path) == buf.getvalue()
    assert key not in _store_entries(state_dir)
