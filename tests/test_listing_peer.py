"""Listings as the real OpenClaw 2026.9.6 fills them (issue 22 §5), side by side on copies of one
state its own import wrote (a schema-23 database with an archived `recovered:` orphan, a Discord
room with a channel name, Telegram groups and DMs): `openclaw sessions --json` row for row, and
the Gateway's `sessions.list` / `sessions.describe` / `agents.list` fields against the real
Gateway's. Skipped without /tmp/peer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GEN_LEGACY_STORE, run_cli
from tests.openclaw_db_support import NO_PEER, gateway_calls, have_peer, peer, peer_gateway, peer_json

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]

# Row fields §5 names, compared value for value (displayName included: a row nothing names shows
# its first user message's title, as the real Gateway derives it)
GATEWAY_FIELDS = (
    "key",
    "spawnedBy",
    "controlOwnerSessionKey",
    "displayName",
    "kind",
    "classification",
    "agentId",
    "peerKind",
    "isMain",
    "isBackground",
    "channel",
    "subject",
    "groupChannel",
    "chatType",
    "origin",
    "updatedAt",
    "archived",
    "archivedAt",
    "pinned",
    "unread",
    "sessionId",
    "inputTokens",
    "outputTokens",
    "totalTokensFresh",
    "modelProvider",
    "model",
    "deliveryContext",
    "lastChannel",
)


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the real OpenClaw's peer root, our copy of its state): 25 generated sessions and one orphan
    transcript, imported by the real OpenClaw."""
    base = tmp_path_factory.mktemp("listing-peer")
    root = base / "peer"
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            "25",
            "0",
            "4242",
            "--cron-key-style",
            "canonical",
            "--orphans",
            "1",
            "--now-ms",
            str(int(time.time() * 1000)),
        ],
        check=True,
        capture_output=True,
    )
    done = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    ours = base / "ours" / ".openclaw"
    shutil.copytree(state, ours)
    return root, ours


@pytest.fixture
def our_env(states: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    ours = states[1]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(ours))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(ours / "openclaw.json"))
    return ours


def test_sessions_json_equals_the_real_listing_archived_rows_included(states, our_env):
    root, _ = states
    real = peer_json(root, "sessions", "--json", "--limit", "all")
    done = run_cli("sessions", "--json", "--limit", "all")
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    assert [r["key"] for r in ours["sessions"]] == [r["key"] for r in real["sessions"]]
    recovered = [r["key"] for r in real["sessions"] if ":recovered:" in r["key"]]
    assert recovered, "the real import archives the orphan as a recovered: row, and the real CLI lists it"
    assert {r["key"] for r in ours["sessions"] if r["archived"]} == set(recovered)  # listed and marked
    for mine, theirs in zip(ours["sessions"], real["sessions"], strict=True):
        assert [k for k in mine if k in theirs] == [k for k in theirs if k in mine], mine[
            "key"
        ]  # their order
        assert set(theirs) <= set(mine), (mine["key"], set(theirs) - set(mine))
        for name, value in theirs.items():
            if name != "ageMs":
                assert mine[name] == value, (mine["key"], name, mine[name], value)
    assert {k: ours[k] for k in ("count", "totalCount", "limitApplied", "hasMore")} == {
        k: real[k] for k in ("count", "totalCount", "limitApplied", "hasMore")
    }


def _our_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    ctx = Context.load(resolve_paths())
    return [call(ctx, method, params) for method, params in calls]


def test_gateway_rows_equal_the_real_gateways(states, our_env):
    root, ours = states
    calls = [
        ("sessions.list", {"archived": "all", "limit": 100}),
        ("sessions.list", {}),
        ("sessions.describe", {"key": "main"}),
        ("agents.list", {}),
        ("sessions.list", {"archived": "all", "limit": 100, "includeDerivedTitles": True}),
    ]
    with peer_gateway(root) as port:
        real = [frame["payload"] for frame in gateway_calls(port, calls)]
    mine = _our_calls(calls)

    for theirs, ours_list in ((real[0], mine[0]), (real[1], mine[1]), (real[4], mine[4])):
        for name in ("modelProvider", "model", "contextTokens"):
            assert ours_list["defaults"][name] == theirs["defaults"][name], name
        assert [r["key"] for r in ours_list["sessions"]] == [r["key"] for r in theirs["sessions"]]
        for row, want in zip(ours_list["sessions"], theirs["sessions"], strict=True):
            for name in (*GATEWAY_FIELDS, "derivedTitle"):
                assert row.get(name) == want.get(name), (row["key"], name, row.get(name), want.get(name))
            if want.get("classification") in ("group", "channel") or "label" in want:
                assert row.get("displayName") == want.get("displayName"), row["key"]
    by_key = {r["key"]: r for r in mine[0]["sessions"]}
    room = by_key["agent:main:discord:channel:900015"]
    assert (room["classification"], room["displayName"], room["groupChannel"]) == (
        "channel",
        "#chan-15",
        "#chan-15",
    )
    [orphan] = [r for r in mine[0]["sessions"] if ":recovered:" in r["key"]]
    assert (orphan["classification"], orphan["model"], orphan["archived"]) == ("custom", "gpt-6-astra", True)
    assert not any(r["archived"] for r in mine[1]["sessions"])  # the Gateway hides them unless asked

    assert any("derivedTitle" in r for r in mine[4]["sessions"])  # asked for: listed
    assert not any("derivedTitle" in r for r in mine[0]["sessions"])
    described, want = mine[2]["session"], real[2]["session"]
    assert described is not None and described["key"] == want["key"] == "agent:main:main"
    for name in GATEWAY_FIELDS:
        assert described.get(name) == want.get(name), name

    def relative(path: str, base: Path) -> str:
        return path.replace(str(base), "<state>")

    assert [(a["id"], relative(a["workspace"], ours), a["model"]) for a in mine[3]["agents"]] == [
        (a["id"], relative(a["workspace"], root / "home" / ".openclaw"), a["model"])
        for a in real[3]["agents"]
    ]
    for name in ("defaultId", "ownership", "selectionRequired", "mainKey", "scope"):
        assert mine[3][name] == real[3][name], name
