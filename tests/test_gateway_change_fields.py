"""The keyed `sessions.changed` projection (issue 25): OpenClaw 2026.9.6 repeats 62–76 fields of
the row beside `session`, in one order, its run-time fields included; ours sends the same fields
in the same order, with the idle values of a Gateway that runs no agent, as recorded."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import generate_legacy_state
from tests.gateway_server_support import GatewayThread, connected, write_config

RECORDED = Path(__file__).parent / "fixtures" / "gateway-2026.9.6-groups" / "groups-1.jsonl"
RUN_TIME = [
    "hasActiveRun",
    "activeRunIds",
    "lastRunId",
    "lastRunError",
    "endedAt",
    "runtimeMs",
    "placement",
    "placementMove",
    "restartRecoveryStatus",
    "activeModel",
    "activeModelProvider",
    "createdActor",
    "owner",
    "participants",
    "participantCount",
]
# the row's own differences (our row shows the legacy entry's channel; OpenClaw's imported one not)
ROW_OWN = {"channel", "lastChannel"}


def recorded_patch_change() -> dict:
    for line in RECORDED.read_text().splitlines():
        frame = json.loads(line)["frame"]
        if frame.get("event") == "sessions.changed" and frame["payload"].get("reason") == "patch":
            return frame["payload"]
    raise AssertionError("no recorded patch change")


def test_patch_change_has_openclaws_fields_in_its_order(state_dir: Path) -> None:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}})
    want = recorded_patch_change()
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        assert c.request("sessions.subscribe", {})["ok"]
        assert c.request("sessions.patch", {"key": want["sessionKey"], "category": "Work"})["ok"]
        c.drain_events(0.5)
    got = next(
        e["payload"] for e in c.events if e["event"] == "sessions.changed" and "session" in e["payload"]
    )
    assert [k for k in got if k not in ROW_OWN] == [k for k in want if k not in ROW_OWN]
    for name in RUN_TIME:
        assert got[name] == want[name], name
    assert got["category"] == want["category"] == "Work"
    assert got["activitySummary"] == {"state": "unavailable", "canEnsure": False}  # we summarise nothing
