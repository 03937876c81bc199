"""Issue 29 finding 4, compaction: a legacy session whose transcript an import running on its store
has just moved read as "nothing compactable" (exit 0), so `compact --max-lines` acknowledged a
compaction that the import then undid (1-3 % of the soak's 200 import-vs-writer races). While the
import runs (its manifest incomplete, the state's coordinator held) it is busy (exit 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.hardening_support import SESSIONS, cli, make_state

KEY = "agent:main:telegram:group:123"


def _hold_coordinator(state: Path) -> subprocess.Popen:
    code = (
        "import sys\nfrom pathlib import Path\nfrom openclaw_cli.store.state_owner import hold_coordinator\n"
        "conn = hold_coordinator(Path(sys.argv[1]))\nassert conn is not None\nprint('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(state)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_compact_of_a_transcript_running_import_moved_is_busy(tmp_path: Path) -> None:
    state = make_state(tmp_path, 6)
    store = json.loads((state / SESSIONS / "sessions.json").read_text())
    sid = store[KEY]["sessionId"]
    runs = state / "session-sqlite-migration-runs"
    runs.mkdir(exist_ok=True)
    run_id = "session-sqlite-1796000000000-0a1b2c3d"
    manifest = {"mode": "import", "runId": run_id, "startedAt": "2026-12-01T00:00:00.000Z"}
    manifest["targets"] = [{"agentId": "main"}]
    (runs / f"{run_id}.json").write_text(json.dumps(manifest))
    moved = tmp_path / "moved.jsonl"
    (state / SESSIONS / f"{sid}.jsonl").rename(moved)  # what the running import's move leaves behind
    holder = _hold_coordinator(state)
    try:
        proc = cli(state, "sessions", "compact", KEY, "--max-lines", "3", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 5, proc.stdout[-800:]
    doc = json.loads(proc.stdout)
    assert "is moving this store's transcripts" in doc["error"]["message"], doc
    # an interrupted import (nobody holds the coordinator) keeps OpenClaw's skip and its hint
    proc = cli(state, "sessions", "compact", KEY, "--max-lines", "3", "--json")
    assert proc.returncode == 0, proc.stdout[-800:]
    assert json.loads(proc.stdout)["compacted"] is False
