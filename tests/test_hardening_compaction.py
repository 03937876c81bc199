"""Issue 13 case 8: a killed compaction leaves nothing a re-run does not finish or clean up — the
partial `.zst.<pid>.<hex>.tmp` archive, the successor's temp file and the dead owner's `.jsonl.lock`
are removed, and with `truncateAfterCompaction` a kill between the append and the rotation is
finished by the re-run (the successor is created or adopted) instead of "already compacted"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.store.compaction_common import CRASH_COUNT_ENV, CRASH_ENV
from openclaw_cli.store.rewrite import parse_lines, rebuilt_context
from tests.compact_support import SESSIONS, env_for, rows, use_template, write_config, write_legacy_state
from tests.session_generator import generate_session

KEY = "agent:main:main"
SESSION = generate_session(41, turns=60)
ORIGINAL = SESSION.jsonl().splitlines()


def _compact(state: Path, **env: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "openclaw_cli",
        "compact",
        KEY,
        "--json",
        "--keep-recent-tokens",
        "3000",
        "--tokenizer",
        "estimate",
    ]
    return subprocess.run(
        cmd, env={**os.environ, **env_for(state), **env}, capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("compact-leftovers") / "state"
    write_legacy_state(state, {KEY: SESSION})
    write_config(state, {"truncateAfterCompaction": True})
    return state


def _leftovers(state: Path) -> list[str]:
    return sorted(p.name for p in (state / SESSIONS).iterdir() if p.name.endswith((".tmp", ".lock")))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _check_rotated(state: Path, old_sid: str) -> None:
    row = rows(state)[KEY]
    assert row["sessionId"] != old_sid and row["compactionCount"] == 1
    old = (state / SESSIONS / f"{old_sid}.jsonl").read_text().splitlines()
    assert old[: len(ORIGINAL)] == ORIGINAL and json.loads(old[-1])["type"] == "compaction"
    successor = next((state / SESSIONS).glob(f"*_{row['sessionId']}.jsonl")).read_text().splitlines()
    assert rebuilt_context(parse_lines(successor)) == rebuilt_context(parse_lines(old))
    assert row["compactionCheckpoints"][-1]["preCompaction"]["sessionId"] == old_sid
    primaries = [p for p in (state / SESSIONS).glob("*.jsonl")]
    assert len(primaries) == 2  # the old transcript and exactly one successor: nothing orphaned


@pytest.mark.slow
def test_every_kill_is_finished_by_the_rerun_without_leftovers(
    template: Path, state_dir: Path, tmp_path: Path
):
    use_template(template, state_dir)
    old_sid = rows(state_dir)[KEY]["sessionId"]
    counter = tmp_path / "count"
    assert _compact(state_dir, **{CRASH_COUNT_ENV: str(counter)}).returncode == 0
    total = int(counter.read_text())
    resumed = 0
    for point in range(1, total + 1):
        use_template(template, state_dir)
        killed = _compact(state_dir, **{CRASH_ENV: str(point)})
        assert killed.returncode == -signal.SIGKILL
        again = _compact(state_dir)
        doc = json.loads(again.stdout)
        if again.returncode != 0:  # only when the killed run had already switched the row
            assert (
                doc["reason"] == "session is already compacted"
                and rows(state_dir)[KEY]["sessionId"] != old_sid
            )
        resumed += bool(doc.get("resumed"))
        _check_rotated(state_dir, old_sid)
        assert _leftovers(state_dir) == [], point
    assert resumed >= 2  # the kills between the append and the row update were finished, not skipped


def test_dead_writers_temp_files_and_locks_are_removed_by_the_next_compaction(
    template: Path, state_dir: Path
):
    use_template(template, state_dir)
    sid = rows(state_dir)[KEY]["sessionId"]
    sessions = state_dir / SESSIONS
    dead = _dead_pid()
    partial = sessions / f"{sid}.jsonl.bak.2026-12-01T00-00-00.000Z.zst.{dead}.{'a' * 32}.tmp"
    partial.write_bytes(b"\x28\xb5\x2f\xfd partial")
    successor_tmp = (
        sessions
        / f".2026-12-01T00-00-00-000Z_{'b' * 8}-bbbb-4bbb-8bbb-{'b' * 12}.jsonl.{dead}.{'c' * 32}.tmp"
    )
    successor_tmp.write_text("{}\n")
    payload = json.dumps({"pid": dead, "createdAt": "2026-12-01T00:00:00.000Z"})
    (sessions / f"{sid}.jsonl.lock").write_text(payload)
    (sessions / "sessions.json.lock").write_text(payload)
    live = sessions / f"{sid}.jsonl.bak.2026-12-01T00-00-01.000Z.zst.{os.getppid()}.{'d' * 32}.tmp"
    live.write_bytes(b"a live writer's temp")
    proc = _compact(state_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _leftovers(state_dir) == [live.name]  # a live process's temp file is never touched
    live.unlink()
    # even a re-run with nothing to do cleans up after a dead writer
    partial.write_bytes(b"again")
    (sessions / "sessions.json.lock").write_text(payload)
    again = _compact(state_dir)
    assert json.loads(again.stdout)["reason"] == "session is already compacted"
    assert _leftovers(state_dir) == []


def test_a_dry_run_removes_nothing(template: Path, state_dir: Path):
    use_template(template, state_dir)
    sid = rows(state_dir)[KEY]["sessionId"]
    partial = (
        state_dir / SESSIONS / f"{sid}.jsonl.bak.2026-12-01T00-00-00.000Z.zst.{_dead_pid()}.{'a' * 32}.tmp"
    )
    partial.write_bytes(b"partial")
    cmd = [
        sys.executable,
        "-m",
        "openclaw_cli",
        "compact",
        KEY,
        "--dry-run",
        "--json",
        "--tokenizer",
        "estimate",
    ]
    assert subprocess.run(cmd, env={**os.environ, **env_for(state_dir)}, capture_output=True).returncode == 0
    assert partial.exists()
