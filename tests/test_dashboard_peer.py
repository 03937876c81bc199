"""`openclaw dashboard --no-open --json`, ours beside the real OpenClaw 2026.9.6's, on one state
with the real Gateway running, then stopped: the same document (the real one adds its device
pairing fields, `browserUrl` and `browserBootstrapExpiresAtMs`, which we do not build), the same
failure and exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.openclaw_db_support import NO_PEER, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

PAIRING_FIELDS = {"browserUrl", "browserBootstrapExpiresAtMs"}


def both(root: Path, state: Path, port: int | None) -> tuple[tuple[int, dict], tuple[int, dict]]:
    env = {"OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json")}
    if port is not None:
        env["OPENCLAW_GATEWAY_PORT"] = str(port)  # the conftest points probes at port 1
    ours = run_cli("dashboard", "--no-open", "--json", env=env)
    theirs = peer(root, "dashboard", "--no-open", "--json")
    return (ours.returncode, json.loads(ours.stdout)), (theirs.returncode, json.loads(theirs.stdout))


def test_dashboard_json_matches_the_real_command(tmp_path: Path) -> None:
    if not have_peer():
        pytest.skip(NO_PEER)
    root = tmp_path / "peer"
    state = root / "home" / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps({"agents": {"entries": {"main": {}}}}))
    with peer_gateway(root) as port:
        (code, ours), (their_code, theirs) = both(root, state, port)
        assert code == their_code == 0
        assert set(theirs) - set(ours) <= PAIRING_FIELDS
        assert ours == {k: v for k, v in theirs.items() if k not in PAIRING_FIELDS}
        assert ours["port"] == port and ours["tokenIncluded"] is True
    (code, ours), (their_code, theirs) = both(root, state, port)
    assert code == their_code == 1
    assert ours == theirs == {"ok": False, "reason": "Gateway is not running."}
