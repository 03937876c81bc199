"""The real OpenClaw 2026.9.6 reads the session groups our Gateway wrote (issue 25): on a state the
real OpenClaw imported (its state database holds the catalog, its schema-23 database the rows), our
Gateway creates, renames and configures groups and files a session in one; then the real Gateway,
started on the same state, lists the same catalog, defaults, sidebar order and membership."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.gateway_server_support import GatewayThread, connected, write_config
from tests.openclaw_db_support import NO_PEER, build_real_state, gateway_calls, have_peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
GROUP_CHAT = "agent:main:telegram:group:123"


def calls_when_ready(port: int, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """`gateway_calls`, retried while the real Gateway still closes connections as starting (1013)."""
    from websockets.exceptions import ConnectionClosed

    deadline = time.monotonic() + 180
    while True:
        try:
            return gateway_calls(port, calls)
        except ConnectionClosed:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


@pytest.mark.skipif(not have_peer(), reason=NO_PEER)
def test_real_gateway_reads_the_groups_ours_wrote(state_dir: Path) -> None:
    root = state_dir.parent.parent
    build_real_state(root, sessions=12, total_mb=0)
    assert (state_dir / "state" / "openclaw.sqlite").is_file()
    write_config(state_dir, CONFIG)
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        put = {"names": ["Work", "Play"], "sectionOrder": ["category:Work", "ungrouped", "category:Play"]}
        assert c.request("sessions.groups.put", put)["ok"]
        assert c.request("sessions.patch", {"key": GROUP_CHAT, "category": "Work"})["ok"]
        renamed = c.request("sessions.groups.rename", {"name": "Work", "to": "Job"})
        assert renamed["payload"]["updatedSessions"] == 1
        assert c.request("sessions.groups.update", {"name": "Play", "cwd": "/srv/play", "worktree": True})[
            "ok"
        ]
        ours = c.request("sessions.groups.list", {})["payload"]
    assert ours == {
        "groups": [{"name": "Job", "position": 0}, {"name": "Play", "position": 1}],
        "sectionOrder": ["category:Job", "ungrouped", "category:Play"],
    }
    with peer_gateway(root) as port:
        listed, defaults, rows = calls_when_ready(
            port,
            [
                ("sessions.groups.list", {}),
                ("sessions.groups.defaults", {}),
                ("sessions.list", {"agentId": "main", "limit": 50}),
            ],
        )
    assert listed["ok"] and listed["payload"] == ours
    assert defaults["payload"] == {
        "defaults": [{"name": "Job"}, {"name": "Play", "cwd": "/srv/play", "worktree": True}]
    }
    categories = {r["key"]: r.get("category") for r in rows["payload"]["sessions"]}
    assert categories[GROUP_CHAT] == "Job"
    assert [k for k, v in categories.items() if v] == [GROUP_CHAT]
