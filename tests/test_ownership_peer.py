"""Issue 23 parts 3 and 4 judged by the real OpenClaw 2026.9.6 (/tmp/peer; skipped without it):
the real CLI, pointed at OUR Gateway serving a schema-23 state the real OpenClaw migrated, pins,
archives, resets, deletes and cleans up — and while ours runs, the real CLI's own maintenance sees
it as the state's owner. (The other half, the real Gateway's start after our offline writes logging
no transcript reconcile and its search finding the written sessions, is judged in
tests/test_openclaw_writes_peer.py on the real Gateway that test starts after the same writes.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cleanup_support import write_config

from tests.gateway_server_support import TOKEN, GatewayProcess
from tests.openclaw_db_support import (
    DB_REL,
    NO_PEER,
    PEER,
    checks,
    have_peer,
    nodes,
    peer,
    reset_kept_its_session,
    unsettled,
)

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]
MAIN, GROUP = "agent:main:main", "agent:main:telegram:group:123"


def _picked(db: Path) -> list[str]:
    return sorted(k for k in nodes(db) if k not in (MAIN, GROUP) and "model-run" not in k)[:5]


def _peer_at(root: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OC_PEER_ROOT=str(root), OPENCLAW_GATEWAY_PORT=str(port), OPENCLAW_GATEWAY_TOKEN=TOKEN
    )
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME"):
        env.pop(name, None)
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=240)


def _ok(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return json.loads(proc.stdout)


def test_the_real_cli_writes_a_state_it_migrated_through_our_gateway(real_state: Path, tmp_path: Path):
    db = real_state / DB_REL
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    pinned, archived, reset, deleted, _ = _picked(db)
    before = nodes(db)
    with GatewayProcess() as gw:
        port = int(gw.url.rsplit(":", 1)[1])
        root = tmp_path / "peer-cli"
        (root / "home" / ".openclaw").mkdir(parents=True)
        (root / "home" / ".openclaw" / "openclaw.json").write_text(
            json.dumps(
                {"gateway": {"mode": "local", "port": port, "auth": {"mode": "token", "token": TOKEN}}}
            )
        )
        _ok(
            _peer_at(
                root,
                port,
                "gateway",
                "call",
                "sessions.patch",
                "--params",
                json.dumps({"key": pinned, "pinned": True}),
                "--json",
            )
        )
        done = _ok(_peer_at(root, port, "sessions", "archive", archived, "--json"))
        assert done["ok"] is True and done["results"][0]["status"] == "archived"
        _ok(
            _peer_at(
                root,
                port,
                "gateway",
                "call",
                "sessions.reset",
                "--params",
                json.dumps({"key": reset}),
                "--json",
            )
        )
        done = _ok(_peer_at(root, port, "sessions", "delete", deleted, "--yes", "--json"))
        assert done["ok"] is True and done["results"][0]["status"] == "deleted"
        cleaned = _ok(_peer_at(root, port, "sessions", "cleanup", "--enforce", "--json"))
        assert cleaned["applied"] is True
        # the real CLI's own maintenance on the state our Gateway serves: refused, ours is the owner
        refused = peer(real_state.parent.parent, "doctor", "--session-sqlite", "compact", "--json")
        assert refused.returncode != 0 and "owns this OpenClaw state directory" in refused.stdout, (
            refused.stdout[-800:]
        )
        served = "".join(gw.lines)
    for method in ("sessions.patch", "sessions.reset", "sessions.delete", "sessions.cleanup"):
        assert f"res ✓ {method} " in served, method  # went through our Gateway (no UNAVAILABLE state_owned)
    ours = nodes(db)
    assert json.loads(ours[pinned][1]).get("pinnedAt") is not None
    assert archived not in ours or json.loads(ours[archived][1]).get("archivedAt") is not None
    assert deleted not in ours
    reset_kept_its_session(db, ours, before, reset)
    left = unsettled(db)
    assert left["reconcile"] == [] and left["orphans"] == [] and left["unmapped"] == []
    assert not {pinned, archived, reset} & set(left["pending"])
    assert checks(db) == ("ok", [])
