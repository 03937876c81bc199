"""Issue 29 finding 3: a lock path no lock holder makes (a directory, a symbolic link, a dangling
one, a FIFO) or an error while locking is a typed error at once — never "no lock", never a busy
spin — and every acquire honours its timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode, LockPathError
from openclaw_cli.store.lock import LockSettings, acquire_transcript_lock
from tests.hardening_support import SESSIONS, cli, make_state


def _plant(kind: str, path: Path, tmp: Path) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        target = tmp / "elsewhere.lock"
        target.write_text("{}")
        path.symlink_to(target)
    elif kind == "dangling symlink":
        path.symlink_to(tmp / "missing" / "x.lock")
    elif kind == "fifo":
        os.mkfifo(path)


KINDS = ["directory", "symlink", "dangling symlink", "fifo"]


@pytest.mark.parametrize("kind", KINDS)
def test_unusable_lock_path_is_a_typed_error_without_waiting(tmp_path: Path, kind: str) -> None:
    transcript = tmp_path / "s.jsonl"
    _plant(kind, tmp_path / "s.jsonl.lock", tmp_path)
    sleeps: list[float] = []
    with pytest.raises(LockPathError) as info:
        # an endless timeout: before the fix this never returned (100 % CPU, no sleep)
        acquire_transcript_lock(
            transcript, LockSettings(acquire_timeout_ms=float("inf")), sleep=sleeps.append
        )
    assert info.value.exit_code == ExitCode.BUSY and str(tmp_path / "s.jsonl.lock") in info.value.message
    assert sleeps == []
    assert os.path.lexists(tmp_path / "s.jsonl.lock")  # left as it was


def test_a_lock_that_keeps_vanishing_sleeps_and_honours_the_timeout(tmp_path: Path, monkeypatch) -> None:
    """Every inspection finds the file gone (a holder releasing and re-taking it in between): the
    acquire sleeps between rounds and gives up at its timeout instead of spinning."""
    from openclaw_cli.store import lock as lockmod

    transcript = tmp_path / "s.jsonl"
    (tmp_path / "s.jsonl.lock").write_text(json.dumps({"pid": os.getpid()}))
    monkeypatch.setattr(lockmod, "inspect_lock", lambda *a, **k: None)
    sleeps: list[float] = []
    clock = [0.0]

    def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(lockmod.time, "monotonic", lambda: clock[0])
    with pytest.raises(lockmod.SessionBusyError) as info:
        acquire_transcript_lock(transcript, LockSettings(acquire_timeout_ms=500), sleep=fake_sleep)
    assert info.value.code == lockmod.TIMEOUT_CODE
    assert 5 <= len(sleeps) <= 20 and all(s > 0 for s in sleeps)


@pytest.mark.parametrize("kind", KINDS)
def test_cli_write_with_an_unusable_store_lock_exits_busy(tmp_path: Path, kind: str) -> None:
    state = make_state(tmp_path, 5)
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
    _plant(kind, state / SESSIONS / "sessions.json.lock", tmp_path)
    before = (state / SESSIONS / "sessions.json").read_bytes()
    started = time.monotonic()
    proc = cli(state, "sessions", "cleanup", "--enforce", "--json", timeout=60)
    assert proc.returncode == ExitCode.BUSY, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "lock_unusable" and "sessions.json.lock" in error["message"]
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 30  # no 60 s acquire timeout either: it is reported at once
    assert (state / SESSIONS / "sessions.json").read_bytes() == before


def test_emfile_while_locking_is_resource_exit(tmp_path: Path) -> None:
    code = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from openclaw_cli.store.lock import acquire_transcript_lock\n"
        "from openclaw_cli.errors import OpenClawError\n"
        "fds = []\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "try:\n"
        "    while True: fds.append(open('/dev/null'))\n"
        "except OSError: pass\n"
        "try:\n"
        f"    acquire_transcript_lock(Path({str(tmp_path / 's.jsonl')!r}))\n"
        "except OpenClawError as exc:\n"
        "    print(exc.type, int(exc.exit_code)); sys.exit(0)\n"
        "print('acquired'); sys.exit(1)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["resource_limit", "13"], proc.stdout + proc.stderr
