"""Issue 29 finding 4, restore and recover: `doctor --session-sqlite restore|recover` move
`sessions.json` and transcripts back, so they hold the legacy store's write lock
(`sessions.json.lock`) as the import does; while a writer holds it they are refused busy (exit 5)
and move nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardening_support import SESSIONS, doctor, env_for, make_state, tree_digest


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    state = make_state(tmp_path_factory.mktemp("restore-lock"), 6)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return state


@pytest.fixture
def state(imported: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(imported, tmp_path / "state", symlinks=True)
    return tmp_path / "state"


def _hold_store_lock(state: Path) -> subprocess.Popen:
    """Another writer holding `sessions.json.lock` (taken as our writers take it)."""
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom openclaw_cli.store.lock import transcript_lock\n"
        "with transcript_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(state / SESSIONS / "sessions.json")],
        env=env_for(state),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.parametrize("mode", ["restore", "recover"])
def test_restore_and_recover_wait_for_the_store_lock(state: Path, mode: str) -> None:
    sessions = state / SESSIONS
    before = tree_digest(sessions)
    holder = _hold_store_lock(state)
    try:
        proc = doctor(state, mode, "--json", OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS="300")
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["error"]["type"] in ("session_busy", "busy", "state_owned"), doc
    after = tree_digest(sessions)
    after.pop("sessions.json.lock", None)
    assert after == before  # nothing moved back while the writer held the store
    proc = doctor(state, mode, "--json")  # the writer is gone: it runs
    if mode == "restore":
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert tree_digest(sessions) != before  # the archived transcripts came back
    else:  # the import finished: nothing to recover (OpenClaw's exit 1), but not busy
        issues = [i["code"] for t in json.loads(proc.stdout)["targets"] for i in t["issues"]]
        assert proc.returncode == 1 and issues == ["recover_manifest_missing"], proc.stdout[-2000:]
