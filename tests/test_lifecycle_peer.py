"""Our `sessions archive` and `sessions delete --yes` served by the real OpenClaw 2026.9.6 Gateway
(/tmp/peer, started with ../shared/tools/peer-gateway.sh in its own process group), and the real
CLI's listing agreeing afterwards. Needs the Gateway client of the delegation issue
(`openclaw_cli.gateway.client`); skipped with that reason until it is on this branch."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GEN_LEGACY_STORE, NOW_MS, ROOT

PEER = Path("/tmp/peer/openclaw")
GATEWAY_SH = ROOT.parent / "shared" / "tools" / "peer-gateway.sh"
TOKEN = "lifecycle-peer-token-0123456789"
pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(
        not PEER.exists(),
        reason="real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("openclaw_cli.gateway.client") is None,
        reason="the Gateway client (delegation issue) is not on this branch yet: delegate() cannot "
        "reach a listening Gateway, so nothing would be served by it",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    return subprocess.run(
        [str(PEER), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**env, "OC_PEER_ROOT": str(root)},
    )


def _ours(state: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "HOME": str(state.parent),
        "OPENCLAW_HOME": str(state.parent),
        "OPENCLAW_GATEWAY_PORT": str(port),
        "OPENCLAW_GATEWAY_TOKEN": TOKEN,
    }
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args], capture_output=True, text=True, timeout=240, env=env
    )


def _real_rows(root: Path) -> dict[str, dict]:
    proc = _peer(root, "sessions", "--json", "--limit", "all")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {row["key"]: row for row in json.loads(proc.stdout)["sessions"]}


@pytest.fixture
def gateway(tmp_path: Path):
    root = tmp_path / "peer"
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
            "--now-ms",
            str(NOW_MS),
        ],
        check=True,
        capture_output=True,
    )
    imported = _peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert imported.returncode == 0, imported.stderr[-2000:]
    port = _free_port()
    started = subprocess.run(
        ["bash", str(GATEWAY_SH), "start", str(root), str(port), TOKEN],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if started.returncode != 0:
        pytest.fail(f"real Gateway did not start: {started.stderr[-2000:]}")
    pgid = started.stdout.strip()
    try:
        yield root, state, port
    finally:
        subprocess.run(["bash", str(GATEWAY_SH), "stop", pgid], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def test_archive_and_delete_are_served_by_the_real_gateway(gateway):
    root, state, port = gateway
    before = _real_rows(root)
    archive_key = "agent:main:telegram:group:-1006"
    delete_key = next(key for key in before if ":subagent:" in key)
    assert archive_key in before

    proc = _ours(state, port, "sessions", "archive", archive_key, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["results"] == [{"key": archive_key, "ok": True, "status": "archived"}]
    assert "ran locally" not in doc.get("hint", "")  # served by the Gateway, not by a local write

    proc = _ours(state, port, "sessions", "delete", delete_key, "--yes", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    [result] = doc["results"]
    assert result["status"] == "deleted" and "ran locally" not in doc.get("hint", "")
    assert result["archived"] and all(
        ".jsonl.deleted." in path and Path(path).exists() for path in result["archived"]
    )

    after = _real_rows(root)
    assert delete_key not in after
    if archive_key in after:  # the real local listing may still show it: then with the archive's time
        assert after[archive_key]["updatedAt"] >= before[archive_key]["updatedAt"]
    ours = _ours(state, port, "sessions", "--all", "--json", "--limit", "all")
    flags = {row["key"]: row["archived"] for row in json.loads(ours.stdout)["sessions"]}
    assert flags[archive_key] is True and delete_key not in flags
