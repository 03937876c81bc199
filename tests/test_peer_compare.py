"""Side by side with the real OpenClaw 2026.9.6 (installed by ../shared/tools/peer-install.sh under
/tmp/peer). Skipped when it is absent; these tests never install it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import generate_legacy_state, run_cli

PEER = Path("/tmp/peer/openclaw")
pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(
        not PEER.exists(),
        reason="real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)",
    ),
]


def peer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OC_PEER_ROOT=str(root))
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=300)


def test_import_and_listing_match_the_real_openclaw(state_dir: Path, tmp_path: Path) -> None:
    generate_legacy_state(state_dir, 12, 0.5, 99, "--cron-key-style", "canonical", "--missing", "1")
    peer_root = tmp_path / "peer"
    shutil.copytree(state_dir, peer_root / "home" / ".openclaw")
    real_import = peer(
        peer_root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"
    )
    assert real_import.returncode == 0, real_import.stderr
    ours_import = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert ours_import.returncode == 0, ours_import.stderr
    theirs, ours = json.loads(real_import.stdout), json.loads(ours_import.stdout)
    assert list(ours) == list(theirs)
    assert list(ours["targets"][0]) == list(theirs["targets"][0])
    for name in ("importedEntries", "importedTranscriptEvents", "legacyEntries", "archivedTranscriptFiles"):
        assert ours["totals"][name] == theirs["totals"][name], name
    assert [i["code"] for i in ours["targets"][0]["issues"]] == [
        i["code"] for i in theirs["targets"][0]["issues"]
    ]

    real_list = peer(peer_root, "sessions", "--json", "--limit", "all")
    assert real_list.returncode == 0, real_list.stderr
    our_list = run_cli("sessions", "--json", "--limit", "all", "--all")  # the real CLI lists archived rows
    fields = ("key", "sessionId", "updatedAt", "inputTokens", "outputTokens", "totalTokens", "kind")
    assert [tuple(r.get(f) for f in fields) for r in json.loads(our_list.stdout)["sessions"]] == [
        tuple(r.get(f) for f in fields) for r in json.loads(real_list.stdout)["sessions"]
    ]


@pytest.mark.parametrize(
    "agents",
    [
        {"list": [{"id": "main", "default": True}, {"id": "work", "workspace": "/srv/work-ws"}]},
        {
            "ownership": "explicit",
            "list": [{"id": "main"}, {"id": "work"}],
            "defaults": {"model": "openai/gpt-5.4", "workspace": "/srv/ws"},
        },
    ],
    ids=["legacy-default", "explicit"],
)
def test_agents_and_status_shapes_match_the_real_openclaw(
    state_dir: Path, tmp_path: Path, agents: dict
) -> None:
    """`agents list --json` and `status --json`'s `agents`/`gateway` blocks on a multi-agent state:
    OpenClaw's keys in OpenClaw's order (ours may add keys, never rename or reorder), and the same
    values where both fill them."""
    generate_legacy_state(state_dir, 6, 0.1, 7, "--cron-key-style", "canonical")
    generate_legacy_state(state_dir, 5, 0.1, 8, "--cron-key-style", "canonical", "--agent", "work")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": agents}))
    peer_root = tmp_path / "peer"
    peer_state = peer_root / "home" / ".openclaw"
    shutil.copytree(state_dir, peer_state)  # the real CLI may rewrite its config: it gets its own copy

    def relative(value, root: Path):
        return value.replace(str(root), "<state>") if isinstance(value, str) else value

    theirs_agents = peer(peer_root, "agents", "list", "--json")
    assert theirs_agents.returncode == 0, theirs_agents.stderr
    ours_agents = run_cli("agents", "list", "--json")
    assert ours_agents.returncode == 0, ours_agents.stderr
    theirs, ours = json.loads(theirs_agents.stdout), json.loads(ours_agents.stdout)
    assert [a["id"] for a in ours] == [a["id"] for a in theirs]
    for mine, real in zip(ours, theirs, strict=True):
        assert [k for k in mine if k in real] == list(real), mine["id"]  # theirs, in their order
        for key in real:
            assert relative(mine[key], state_dir) == relative(real[key], peer_state), (mine["id"], key)

    theirs_status = peer(peer_root, "status", "--json")
    assert theirs_status.returncode == 0, theirs_status.stderr
    ours_status = run_cli("status", "--json")
    assert ours_status.returncode == 0, ours_status.stderr
    theirs, ours = json.loads(theirs_status.stdout), json.loads(ours_status.stdout)
    real_agents, my_agents = theirs["agents"], ours["agents"]
    assert [k for k in real_agents if k in my_agents] == list(my_agents)  # a subset, in their order
    assert set(real_agents) - set(my_agents) == {"bootstrapPendingCount"}  # what we cannot fill
    for key in ("defaultId", "ownership", "selectionRequired"):
        assert my_agents[key] == real_agents[key], key
    assert [a["id"] for a in my_agents["agents"]] == [a["id"] for a in real_agents["agents"]]
    for mine, real in zip(my_agents["agents"], real_agents["agents"], strict=True):
        assert [k for k in real if k in mine] == list(mine)
        assert relative(mine["workspaceDir"], state_dir) == relative(real["workspaceDir"], peer_state)
    real_gateway = theirs["gateway"]
    assert [k for k in ours["gateway"] if k in real_gateway] == list(real_gateway)  # every key, their order
    for key in ("mode", "url", "urlSource", "misconfigured", "reachable", "connectLatencyMs", "self"):
        assert ours["gateway"][key] == real_gateway[key], key
    assert (ours["gateway"]["error"] is None) == (real_gateway["error"] is None)
