"""Issue 29 finding 4: `doctor --session-sqlite import` holds the legacy store's write lock
(`sessions.json.lock`) from its snapshot until it published or rolled back. A writer meanwhile
waits or is refused as busy (exit 5); a writer that opened the legacy store before the import
published is refused as busy rather than writing into (or reading as empty) a store the import has
superseded — no acknowledged write is undone, nothing is resurrected, a cleanup says "busy"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode, SessionBusyError
from openclaw_cli.store.lock import LockSettings
from tests.hardening_support import DB, SESSIONS, cli, doctor, env_for, make_state

DELETE_KEY = "agent:main:cron:job1"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return make_state(tmp_path_factory.mktemp("import-lock"), 12)


@pytest.fixture
def state(template: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(template, tmp_path / "state", symlinks=True)
    return tmp_path / "state"


def _start_import_and_stop_it_holding_the_lock(state: Path) -> subprocess.Popen:
    """The import runs until it holds `sessions.json.lock`, then is frozen (SIGSTOP) there."""
    lock = state / SESSIONS / "sessions.json.lock"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openclaw_cli",
            "doctor",
            "--session-sqlite",
            "import",
            "--session-sqlite-all-agents",
            "--json",
        ],
        env=env_for(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if json.loads(lock.read_text()).get("pid") == proc.pid:
                os.kill(proc.pid, signal.SIGSTOP)
                return proc
        except (OSError, ValueError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.001)
    proc.kill()
    out, err = proc.communicate()
    pytest.fail(f"the import never held the store's lock (exit {proc.returncode}): {out[-500:]} {err[-500:]}")


def _finish(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-2000:] + err[-2000:]


def test_writers_during_the_import_are_refused_busy_and_nothing_is_undone(state: Path) -> None:
    before = (state / SESSIONS / "sessions.json").read_bytes()
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
    importer = _start_import_and_stop_it_holding_the_lock(state)
    try:
        short = {"OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS": "300"}
        cleanup = cli(state, "sessions", "cleanup", "--enforce", "--json", **short)
        compact = cli(state, "sessions", "compact", "agent:main:main", "--max-lines", "3", "--json", **short)
        delete = cli(state, "sessions", "delete", DELETE_KEY, "--yes", "--json", **short)
        assert (state / SESSIONS / "sessions.json").read_bytes() == before
    finally:
        _finish(importer)
    for proc in (cleanup, compact):
        assert proc.returncode == ExitCode.BUSY, proc.stdout + proc.stderr
        error = json.loads(proc.stdout)["error"]
        # the store's lock, or (with the state-ownership rule of issue 23) the import's ownership of the state
        assert (error["type"], "sessions.json.lock" in error["message"]) in (
            ("session_busy", True),
            ("state_owned", False),
        ), error
    result = json.loads(delete.stdout)["results"][0]  # a batch: the key failed with the busy message
    assert delete.returncode in (1, ExitCode.BUSY) and result["status"] == "failed", delete.stdout
    assert "locked" in result["error"] or "owns this OpenClaw state directory" in result["error"], (
        delete.stdout
    )
    # the import published every row as it was: none of the refused writes happened, none is undone
    listing = json.loads(cli(state, "sessions", "list", "--json").stdout)
    assert listing["path"].endswith("openclaw-agent.sqlite")
    keys = {row["key"] for row in listing["sessions"]}
    assert DELETE_KEY in keys and set(json.loads(before)) <= keys | _unlisted(json.loads(before))
    again = cli(state, "sessions", "delete", DELETE_KEY, "--yes", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert DELETE_KEY not in {
        r["key"] for r in json.loads(cli(state, "sessions", "list", "--json").stdout)["sessions"]
    }


def _unlisted(rows: dict) -> set[str]:
    return {key for key, row in rows.items() if not isinstance(row, dict) or not row.get("sessionId")}


def test_a_writer_that_opened_the_legacy_store_before_the_import_published_is_refused(
    state: Path, monkeypatch
) -> None:
    """The race's last step, made deterministic: the store object was opened (legacy) before the
    import ran; the import publishes and archives `sessions.json`; the writer then takes the lock.
    Before the fix it read an empty store and wrote a new `sessions.json` (a resurrected row)."""
    from openclaw_cli.paths import StatePaths
    from openclaw_cli.store.detect import open_agent_store
    from openclaw_cli.store.writer import store_writer

    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    paths = StatePaths(home=state.parent, state_dir=state, config_path=state / "openclaw.json")
    store = open_agent_store(paths, "main")
    assert store.kind == "legacy"
    done = cli(state, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (state / DB).exists() and not (state / SESSIONS / "sessions.json").exists()
    with pytest.raises(SessionBusyError) as info:
        store.load_entries()
    assert "imported into SQLite" in info.value.message and info.value.exit_code == ExitCode.BUSY
    with pytest.raises(SessionBusyError), store_writer(store, LockSettings(acquire_timeout_ms=1000)):
        store.upsert_entries({"agent:main:resurrected": {"sessionId": "x", "updatedAt": 1}})
    assert not (state / SESSIONS / "sessions.json").exists()


def test_the_import_waits_for_a_writer_holding_the_lock_then_refuses_busy(
    state: Path, tmp_path: Path
) -> None:
    holder_script = tmp_path / "openclaw-holder.py"  # a live OpenClaw-looking owner (never reclaimed)
    holder_script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from openclaw_cli.store.lock import acquire_transcript_lock\n"
        "acquire_transcript_lock(Path(sys.argv[1]))\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, str(holder_script), str(state / SESSIONS / "sessions.json")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = cli(
            state,
            "doctor",
            "--session-sqlite",
            "import",
            "--session-sqlite-all-agents",
            "--json",
            OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS="300",
        )
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == ExitCode.BUSY, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["type"] == "session_busy"
    assert not (state / DB).exists() and (state / SESSIONS / "sessions.json").exists()


def test_the_lock_of_an_import_killed_after_it_archived_the_store_is_reclaimed(
    state: Path, tmp_path: Path
) -> None:
    """An import SIGKILLed at its last checkpoint (`sessions.json` archived, its lock still held)
    leaves `sessions.json.lock` with a dead pid; the next import, which finds no legacy store there
    and so selects no target, reclaims it as any writer would."""
    import shutil

    probe, points = tmp_path / "probe", tmp_path / "points"
    shutil.copytree(state, probe, symlinks=True)
    counted = doctor(probe, "import", "--json", OPENCLAW_MIGRATION_CRASH_COUNT_FILE=str(points))
    assert counted.returncode == 0, counted.stderr
    killed = doctor(state, "import", "--json", OPENCLAW_MIGRATION_CRASH_AT=points.read_text().strip())
    lock = state / SESSIONS / "sessions.json.lock"
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert lock.exists() and not (state / SESSIONS / "sessions.json").exists()
    again = doctor(state, "import", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["targets"] == [], again.stdout + again.stderr
    assert not lock.exists()
