"""Our own client (the delegation issue) against our Gateway: the commands of the issue's "What
must hold" are served by the Gateway (its log shows each method) and print the same documents as
a local run would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_server_support import RECORDED_CONFIG, TOKEN, GatewayProcess, write_config


@pytest.mark.slow
def test_our_cli_delegates_to_our_gateway(state_dir: Path) -> None:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, RECORDED_CONFIG)
    assert (
        run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json").returncode
        == 0
    )
    with GatewayProcess() as gw:
        env = {"OPENCLAW_GATEWAY_PORT": gw.url.rsplit(":", 1)[1], "OPENCLAW_GATEWAY_TOKEN": TOKEN}

        def served(*args: str) -> dict:
            proc = run_cli(*args, env=env)
            assert proc.returncode == 0, (args, proc.stdout[-1500:], proc.stderr[-1500:])
            assert "ran locally" not in proc.stderr, args
            return json.loads(proc.stdout)

        listing = served("gateway", "call", "sessions.list", "--params", '{"limit":3}', "--json")
        assert listing["count"] == 3 and listing["totalCount"] == 12
        cleanup = served("sessions", "cleanup", "--enforce", "--json", "--agent", "main")
        assert cleanup["applied"] is True and cleanup["agentId"] == "main"
        compact = served("compact", "agent:main:cron:job1", "--max-lines", "3", "--json", "--agent", "main")
        assert compact["compacted"] is True and compact["kept"] == 3
        deleted = served("agents", "delete", "spare", "--force", "--json")
        assert deleted["ok"] is True and deleted["agentId"] == "spare"
        archived = served("sessions", "archive", "agent:main:telegram:group:-1006", "--json")
        assert archived["ok"] is True and archived["results"][0]["status"] == "archived"
        key = "agent:main:subagent:79f74d60-ac03-431e-835d-7d3b92e4016e"
        deleted_session = served("sessions", "delete", key, "--yes", "--json")
        result = deleted_session["results"][0]
        assert (
            deleted_session["ok"] is True
            and result["status"] == "deleted"
            and Path(result["archived"][0]).exists()
        )
        status = served("status", "--json")
        assert status["gateway"]["reachable"] is True and status["gateway"]["error"] is None
        log = "".join(gw.lines)
        for method in (
            "sessions.list",
            "sessions.cleanup",
            "sessions.compact",
            "agents.delete",
            "sessions.patch",
            "sessions.delete",
            "health",
        ):
            assert f"res ✓ {method} " in log, method
