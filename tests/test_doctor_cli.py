"""`openclaw doctor` as a real subprocess: argument errors (exit 2, OpenClaw's texts), the
state-ownership refusal (exit 5), text and JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode
from openclaw_cli.migration.ownership import refusal_message
from openclaw_cli.store.state_owner import coordinator_path
from tests.conftest import run_cli
from tests.test_migration_helpers import make_f, snapshot


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--session-sqlite", "explode"],
            "Invalid --session-sqlite mode. Use dry-run, import, validate, inspect, compact, restore, or recover.",
        ),
        (
            ["--session-sqlite-all-agents"],
            "doctor session SQLite options require --session-sqlite. Use `openclaw doctor --session-sqlite dry-run ...`.",
        ),
        (
            ["--session-sqlite", "import", "--github-issue"],
            "--github-issue requires --session-sqlite recover.",
        ),
        (
            ["--fix", "--session-sqlite", "import"],
            "doctor operations are mutually exclusive: choose one of --lint, --fix/--repair, --post-upgrade, "
            "--state-sqlite, or --session-sqlite.",
        ),
        (
            ["--lint", "--session-sqlite", "inspect"],
            "doctor --lint runs read-only lint checks and cannot be combined with --session-sqlite <mode>.",
        ),
    ],
)
def test_argument_errors_exit_2_with_openclaw_texts(state_dir: Path, args: list[str], message: str) -> None:
    result = run_cli("doctor", *args, "--json")
    assert result.returncode == ExitCode.USAGE
    assert json.loads(result.stdout) == {"ok": False, "error": {"type": "cli_error", "message": message}}
    text = run_cli("doctor", *args)
    assert text.returncode == ExitCode.USAGE and message in text.stderr and text.stdout == ""


def _hold_lock(state: Path) -> subprocess.Popen:
    path = coordinator_path(Path(os.path.realpath(state)))
    code = (
        "import sqlite3, sys, os\n"
        f"os.makedirs({str(path.parent)!r}, exist_ok=True)\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode = MEMORY'); c.execute('BEGIN EXCLUSIVE')\n"
        "print('ready', flush=True); sys.stdin.read()\n"
    )
    # argv says "openclaw" like a Gateway would (D12); the lock itself is what matters here
    holder = subprocess.Popen(
        [sys.executable, "-c", code, "openclaw-gateway"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "ready"
    return holder


def test_t45_destructive_modes_refuse_while_the_state_is_owned(state_dir: Path) -> None:
    make_f(state_dir)
    holder = _hold_lock(state_dir)
    try:
        before = snapshot(state_dir)
        for mode in ("import", "compact", "restore", "recover"):
            result = run_cli("doctor", "--session-sqlite", mode, "--session-sqlite-all-agents", "--json")
            assert result.returncode == ExitCode.BUSY, (mode, result.stdout)
            assert json.loads(result.stdout)["error"]["message"] == refusal_message(mode)
        assert snapshot(state_dir) == before
        for mode in ("inspect", "dry-run", "validate"):  # read-only modes take no lock
            result = run_cli("doctor", "--session-sqlite", mode, "--session-sqlite-all-agents", "--json")
            assert result.returncode in (0, 1) and "totals" in json.loads(result.stdout)
        assert snapshot(state_dir) == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents").returncode == 0


def test_gateway_state_lock_file_is_honoured(state_dir: Path) -> None:
    import sqlite3

    make_f(state_dir)
    lock = state_dir / "tmp" / f"openclaw-{os.getuid()}" / "gateway.state.lock.sqlite"
    lock.parent.mkdir(parents=True)
    conn = sqlite3.connect(lock, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        result = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents")
        assert result.returncode == ExitCode.BUSY and refusal_message("import") in result.stderr
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_text_report_of_an_import(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    (sessions / "sessions.json").write_text(
        json.dumps(
            {
                "agent:main:main": {"sessionId": "session-1", "updatedAt": 1},
                "agent:main:gone\x1b[31m": {"sessionId": "gone", "updatedAt": 1},
            }
        )
    )
    result = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # D19: the report is the result, on stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "session-sqlite import: 1 target(s), 2 legacy entries, 2 sqlite entries, 1 issue(s)"
    assert lines[1].startswith("- migration-run=session-sqlite-")
    assert lines[2].startswith(f"- manifest={state_dir}/session-sqlite-migration-runs/session-sqlite-")
    assert lines[3] == (
        "- main: imported=2/2 events, validated=0/0 events, archived-unreferenced-jsonl=1, "
        "unreferenced-jsonl=0"
    )
    assert lines[4].startswith("  compact reclaimed=0 bytes, db=")
    assert lines[5].startswith("  [transcript_missing] agent:main:gone: Transcript file is missing: ")
    assert "\x1b" not in result.stdout  # D6.8


def test_plain_doctor_previews_and_fix_imports(state_dir: Path) -> None:
    make_f(state_dir)
    before = snapshot(state_dir)
    preview = run_cli("doctor")
    assert preview.returncode == 0
    assert "- Legacy entries: 1; SQLite entries: 0." in preview.stdout
    assert 'Run "openclaw doctor --fix"' in preview.stdout
    assert snapshot(state_dir) == before  # D6.1: plain doctor writes nothing
    fixed = run_cli("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stderr
    assert "- Archived 2 legacy transcript artifact(s)." in fixed.stdout
    assert not (state_dir / "agents" / "main" / "sessions" / "sessions.json").exists()
