"""D6.4 crash safety: an import run as a real subprocess is SIGKILLed at many points (the
OPENCLAW_MIGRATION_CRASH_AT hook kills the process at its k-th checkpoint: between records of the
bulk import, between the link and the unlink of a publication, around manifest writes). Afterwards a
re-run — or `recover` — must reach a state where every original line is in SQLite exactly once,
every original file is in place or archived byte-identical, and every manifest is valid."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.migration.context import CRASH_COUNT_ENV, CRASH_ENV
from openclaw_cli.migration.manifest import load_manifest, manifest_files
from tests.conftest import generate_legacy_state
from tests.test_migration_helpers import db_events

POINTS = 18


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crash-template") / "state"
    generate_legacy_state(root, 100, 0.4, 77, "--cron-key-style", "mixed", "--orphans", "2", "--missing", "1")
    return root


def _env(state: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
            "HOME": str(state.parent),
            "OPENCLAW_HOME": str(state.parent),
            "NO_COLOR": "1",
        }
    )
    env.pop(CRASH_ENV, None)
    env.update(extra)
    return env


def _doctor(state: Path, mode: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "openclaw_cli",
            "doctor",
            "--session-sqlite",
            mode,
            "--session-sqlite-all-agents",
            "--json",
        ],
        env=_env(state, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _originals(state: Path) -> dict[str, bytes]:
    sessions = state / "agents" / "main" / "sessions"
    return {p.name: p.read_bytes() for p in sessions.iterdir() if p.is_file()}


def _check_lines_once(state: Path, originals: dict[str, bytes]) -> None:
    events = db_events(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    for name, data in originals.items():
        if not name.endswith(".jsonl"):
            continue
        lines = [line for line in data.split(b"\n") if line.strip()]
        assert events.get(name[: -len(".jsonl")], []) == lines, name  # each line once, in order


def _check_files_kept(state: Path, originals: dict[str, bytes]) -> None:
    sessions = state / "agents" / "main" / "sessions"
    archive = state / "agents" / "main" / "session-sqlite-import-archive"
    archived = (
        {hashlib.sha256(p.read_bytes()).hexdigest() for p in archive.iterdir()} if archive.exists() else set()
    )
    for name, data in originals.items():
        here = sessions / name
        if here.exists():
            assert here.read_bytes() == data, name
        else:
            assert hashlib.sha256(data).hexdigest() in archived, name


def _check_manifests(state: Path) -> None:
    runs = state / "session-sqlite-migration-runs"
    for path in manifest_files(runs):
        assert load_manifest(path, state) is not None, path
    assert not list(runs.glob("*.tmp")) if runs.exists() else True


@pytest.mark.slow  # ~19 s of CPU at load 12: imports SIGKILLed at 18 points, each re-run and checked
def test_killed_imports_recover_without_loss_or_duplicates(template: Path, tmp_path: Path) -> None:
    originals = _originals(template)
    # how many crash points a full import passes
    probe = tmp_path / "probe" / "state"
    shutil.copytree(template, probe)
    count_file = tmp_path / "count"
    done = _doctor(probe, "import", **{CRASH_COUNT_ENV: str(count_file)})
    assert done.returncode == 0, done.stderr
    total = int(count_file.read_text())
    assert total > 250  # records, links, unlinks, manifest writes
    rng = random.Random(20261130)
    points = sorted(set(rng.sample(range(1, total + 1), POINTS - 3)) | {1, total // 2, total})
    for i, k in enumerate(points):
        state = tmp_path / f"run-{k}" / "state"
        shutil.copytree(template, state)
        killed = _doctor(state, "import", **{CRASH_ENV: str(k)})
        assert killed.returncode == -signal.SIGKILL, (k, killed.returncode, killed.stderr[-500:])
        _check_files_kept(state, originals)
        _check_manifests(state)
        if i % 3 == 1:
            # recover puts back what the killed run had archived
            manifests = [
                json.loads(p.read_text()) for p in manifest_files(state / "session-sqlite-migration-runs")
            ]
            finished = manifests and all(m.get("completedAt") and not m.get("failedAt") for m in manifests)
            rec = _doctor(state, "recover")
            assert rec.returncode in (0, 1), rec.stderr
            if not finished:
                assert rec.returncode == 0, rec.stdout
                assert _originals(state) == originals, k
        rerun = _doctor(state, "import")
        assert rerun.returncode == 0, (k, rerun.stdout[-2000:])
        _check_lines_once(state, originals)
        _check_files_kept(state, originals)
        _check_manifests(state)
        assert not (state / "agents" / "main" / "sessions" / "sessions.json").exists()
        shutil.rmtree(state.parent)
