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
    pytest.mark.skipif(not PEER.exists(), reason="real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)"),
]


def peer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OC_PEER_ROOT=str(root))
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=300)


def test_import_and_listing_match_the_real_openclaw(state_dir: Path, tmp_path: Path) -> None:
    generate_legacy_state(state_dir, 12, 0.5, 99, "--cron-key-style", "canonical", "--missing", "1")
    peer_root = tmp_path / "peer"
    shutil.copytree(state_dir, peer_root / "home" / ".openclaw")
    real_import = peer(peer_root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert real_import.returncode == 0, real_import.stderr
    ours_import = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert ours_import.returncode == 0, ours_import.stderr
    theirs, ours = json.loads(real_import.stdout), json.loads(ours_import.stdout)
    assert list(ours) == list(theirs)
    assert list(ours["targets"][0]) == list(theirs["targets"][0])
    for name in ("importedEntries", "importedTranscriptEvents", "legacyEntries", "archivedTranscriptFiles"):
        assert ours["totals"][name] == theirs["totals"][name], name
    assert [i["code"] for i in ours["targets"][0]["issues"]] == [i["code"] for i in theirs["targets"][0]["issues"]]

    real_list = peer(peer_root, "sessions", "--json", "--limit", "all")
    assert real_list.returncode == 0, real_list.stderr
    our_list = run_cli("sessions", "--json", "--limit", "all", "--all")  # the real CLI lists archived rows
    fields = ("key", "sessionId", "updatedAt", "inputTokens", "outputTokens", "totalTokens", "kind")
    assert [tuple(r.get(f) for f in fields) for r in json.loads(our_list.stdout)["sessions"]] == [
        tuple(r.get(f) for f in fields) for r in json.loads(real_list.stdout)["sessions"]
    ]
