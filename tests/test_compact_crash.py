"""D6.4 crash safety of the multi-step compactions: `truncateAfterCompaction` (successor
transcript / window) and `--max-lines`, on a legacy store and on our SQLite store. The command runs
as a real subprocess and is SIGKILLed at its numbered checkpoints (OPENCLAW_COMPACT_CRASH_AT=k:
between the archive, the append, the successor's temp file and its rename, the row update; inside
the SQLite transaction) and at random instants. Afterwards the row names either the old transcript
or a complete successor with the same rebuilt context, the full history survives (the old
transcript is a byte-identical superset of the original, or a verified archive holds it), and a
re-run (which reclaims the dead process's lock) reaches a consistent state."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openclaw_cli.store.archives import archive_temp_pid, read_archive_bytes
from openclaw_cli.store.compaction_common import CRASH_COUNT_ENV, CRASH_ENV
from openclaw_cli.store.rewrite import parse_lines, rebuilt_context
from tests.compact_support import (
    SESSIONS,
    env_for,
    import_sqlite,
    rows,
    transcript_lines,
    use_template,
    write_config,
    write_legacy_state,
)
from tests.session_generator import generate_session

KEY = "agent:main:main"
SESSION = generate_session(41, turns=60)
ORIGINAL = SESSION.jsonl()
SEED = int(os.environ.get("COMPACT_CRASH_SEED", "20261130"))


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    legacy = tmp_path_factory.mktemp("crash-legacy") / "state"
    write_legacy_state(legacy, {KEY: SESSION})
    sqlite = tmp_path_factory.mktemp("crash-sqlite") / "state"
    write_legacy_state(sqlite, {KEY: SESSION})
    import_sqlite(sqlite)
    return {"legacy": legacy, "sqlite": sqlite}


def command(mode: str) -> list[str]:
    extra = (
        ["--max-lines", "7"]
        if mode == "max-lines"
        else ["--keep-recent-tokens", "3000", "--tokenizer", "estimate"]
    )
    return [sys.executable, "-m", "openclaw_cli", "compact", KEY, "--json", *extra]


def run(state: Path, mode: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(mode), env={**os.environ, **env_for(state), **env}, capture_output=True, text=True, timeout=60
    )


def checkpoints(state: Path, mode: str, tmp_path: Path) -> int:
    counter = tmp_path / "count"
    proc = run(state, mode, **{CRASH_COUNT_ENV: str(counter)})
    assert proc.returncode == 0, proc.stderr
    return int(counter.read_text())


def prepare(template: Path, state: Path, mode: str) -> None:
    use_template(template, state)
    if mode == "truncate":
        write_config(state, {"truncateAfterCompaction": True})


def old_transcript(state: Path, kind: str, old_sid: str) -> list[str]:
    if kind == "legacy":
        data = (state / SESSIONS / f"{old_sid}.jsonl").read_bytes()
        assert data.endswith(b"\n")  # never a torn line
        return data.decode().splitlines()
    return transcript_lines(state, old_sid)


def archives(state: Path) -> list[Path]:
    """Published archives; a kill while one is written leaves its temp file (`<name>.<pid>.<hex>.tmp`,
    removed by cleanup later), which is not an archive yet."""
    return sorted(p for p in (state / SESSIONS).glob("*.jsonl.bak.*") if archive_temp_pid(p.name) is None)


def check_truncate(state: Path, kind: str, old_sid: str) -> str:
    """Invariants after a kill during a compaction with truncateAfterCompaction; returns the phase."""
    original = ORIGINAL.splitlines()
    old = old_transcript(state, kind, old_sid)
    assert old[: len(original)] == original and len(old) - len(original) in (0, 1)
    compacted = len(old) == len(original) + 1
    if compacted:
        assert json.loads(old[-1])["type"] == "compaction"
    for archive in archives(state):  # an archive, once published, is the complete original
        assert read_archive_bytes(archive) == ORIGINAL.encode()
    row = rows(state)[KEY]
    if row["sessionId"] == old_sid:
        assert row.get("compactionCount", 0) in (0, 1)
        return "compacted-in-place" if compacted else "untouched"
    assert compacted and row["compactionCount"] == 1
    new = transcript_lines(state, row["sessionId"], row)
    assert rebuilt_context(parse_lines(new)) == rebuilt_context(parse_lines(old))
    assert row["compactionCheckpoints"][-1]["preCompaction"]["sessionId"] == old_sid
    return "rotated"


def check_max_lines(state: Path, kind: str, old_sid: str) -> str:
    original = ORIGINAL.splitlines()
    row = rows(state)[KEY]
    if kind == "legacy":
        current = old_transcript(state, kind, old_sid)
        assert row["sessionId"] == old_sid
    else:
        current = transcript_lines(state, row["sessionId"], row)
        if row["sessionId"] != old_sid:  # 2026.7: a successor window; the previous one is never touched
            assert old_transcript(state, kind, old_sid) == original
    for archive in archives(state):
        assert read_archive_bytes(archive) == ORIGINAL.encode()
    if current == original:
        return "untouched"
    assert len(current) == 7 and current[2:] == original[-5:] and json.loads(current[1])["parentId"] is None
    assert archives(state), "the dropped prefix left the store without a verified archive"
    return "truncated"


CHECK = {"truncate": check_truncate, "max-lines": check_max_lines}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "mode"),
    [("legacy", "truncate"), ("sqlite", "truncate"), ("legacy", "max-lines"), ("sqlite", "max-lines")],
)
def test_sigkill_at_every_checkpoint_leaves_a_consistent_state(
    kind: str, mode: str, templates, state_dir: Path, tmp_path: Path
):
    prepare(templates[kind], state_dir, mode)
    old_sid = rows(state_dir)[KEY]["sessionId"]
    total = checkpoints(state_dir, mode, tmp_path)
    assert total >= (5 if kind == "legacy" else 3)
    assert CHECK[mode](state_dir, kind, old_sid) in ("rotated", "truncated")
    phases: set[str] = set()
    rng = random.Random(SEED + total)
    rerun_at = set(rng.sample(range(1, total + 1), k=1))
    for point in range(1, total + 1):
        prepare(templates[kind], state_dir, mode)
        proc = run(state_dir, mode, **{CRASH_ENV: str(point)})
        assert proc.returncode == -signal.SIGKILL, (point, proc.stderr)
        phases.add(CHECK[mode](state_dir, kind, old_sid))
        if point in rerun_at:  # a re-run after the kill (the dead process's lock is reclaimed)
            again = run(state_dir, mode)
            doc = json.loads(again.stdout)
            assert again.returncode == 0 or doc.get("reason") == "session is already compacted", again.stdout
            CHECK[mode](state_dir, kind, old_sid)
    assert "untouched" in phases and phases - {"untouched"}, phases


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_sigkill_at_random_instants(kind: str, templates, state_dir: Path):
    rng = random.Random(SEED)
    phases: set[str] = set()
    for _ in range(2):
        prepare(templates[kind], state_dir, "truncate")
        old_sid = rows(state_dir)[KEY]["sessionId"]
        proc = subprocess.Popen(
            command("truncate"),
            env={**os.environ, **env_for(state_dir)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.2, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        phases.add(check_truncate(state_dir, kind, old_sid))
    assert phases
