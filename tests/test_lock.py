"""OpenClaw transcript write lock (maintenance.md §12, D12): real holder processes in tmp dirs."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openclaw_cli import clock
from openclaw_cli.errors import ExitCode, SessionBusyError
from openclaw_cli.store import lock as lockmod
from openclaw_cli.store.lock import (
    LockSettings,
    acquire_transcript_lock,
    inspect_lock,
    lock_path_for,
    process_start_time,
    sweep_stale_locks,
    transcript_lock,
)
from openclaw_cli.store.transcript import append_jsonl

FAST = LockSettings(acquire_timeout_ms=300, stale_ms=1_800_000, max_hold_ms=300_000)

# A lock holder that writes the lock file exactly the way OpenClaw does. It takes every path from
# the environment, so nothing in its argv names `openclaw` unless a test adds it on purpose.
HOLDER = r"""
import datetime, json, os, sys, time
path = os.environ["LOCK_PATH"]
age = int(os.environ.get("LOCK_AGE_MS", "0"))
created = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(milliseconds=age)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with open("/proc/%d/stat" % os.getpid()) as fh:
    stat = fh.read()
start = int(stat[stat.rfind(")") + 2:].split()[19]) + int(os.environ.get("LOCK_START_DELTA", "0"))
payload = {"pid": os.getpid(), "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (created.microsecond // 1000),
           "maxHoldMs": int(os.environ.get("LOCK_MAX_HOLD_MS", "300000")), "starttime": start}
os.write(fd, json.dumps(payload, indent=2).encode())
print("ready", flush=True)
time.sleep(float(os.environ.get("HOLD_SECONDS", "30")))
"""


@pytest.fixture
def spawn_holder() -> Iterator[Callable[..., subprocess.Popen]]:
    procs: list[subprocess.Popen] = []

    def spawn(lock_path: Path, *, openclaw_argv: bool = True, **env: str) -> subprocess.Popen:
        argv = [sys.executable, "-c", HOLDER]
        if openclaw_argv:
            argv.append("/opt/tools/openclaw-gateway")  # basename contains "openclaw" (D12)
        full_env = dict(os.environ, LOCK_PATH=str(lock_path), **env)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=full_env, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        return proc

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _transcript(tmp_path: Path) -> Path:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    path = sessions / "abc.jsonl"
    path.write_bytes(
        b'{"type":"session","version":4,"id":"abc","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
    )
    return path


def test_live_openclaw_holder_makes_append_wait_then_fail_with_exact_timeout(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    before = transcript.read_bytes()
    lock_path = lock_path_for(transcript)
    holder = spawn_holder(lock_path)
    started = time.monotonic()
    with pytest.raises(SessionBusyError) as info:
        append_jsonl(transcript, ['{"type":"custom","id":"x","parentId":null}'], lock_settings=FAST)
    waited = time.monotonic() - started
    assert waited >= 0.3
    err = info.value
    assert err.code == "OPENCLAW_SESSION_WRITE_LOCK_TIMEOUT"
    assert err.exit_code == ExitCode.BUSY
    assert re.fullmatch(
        rf"session file locked \(timeout 300ms\): pid={holder.pid} alive=true ageMs=\d+ {re.escape(str(lock_path))}",
        err.message,
    ), err.message
    assert transcript.read_bytes() == before  # nothing appended
    assert json.loads(lock_path.read_text())["pid"] == holder.pid  # not stolen

    # Once the holder is gone its lock is a dead-pid lock: reclaimed, the append goes through.
    holder.kill()
    holder.wait()
    append_jsonl(transcript, ['{"type":"custom","id":"x","parentId":null}'], lock_settings=FAST)
    assert transcript.read_bytes() == before + b'{"type":"custom","id":"x","parentId":null}\n'
    assert not lock_path.exists()


def test_dead_pid_lock_is_reclaimed(tmp_path):
    transcript = _transcript(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    lock_path = lock_path_for(transcript)
    lock_path.write_text(
        json.dumps({"pid": proc.pid, "createdAt": clock.iso_now(), "maxHoldMs": 300000}, indent=2)
    )
    inspection = inspect_lock(lock_path, FAST)
    assert inspection is not None and inspection.stale_reasons == ["dead-pid"]
    with transcript_lock(transcript, FAST) as held:
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()
        assert held.lock_path == lock_path
    assert not lock_path.exists()


def test_live_non_openclaw_holder_is_reclaimed_as_stale(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    holder = spawn_holder(lock_path, openclaw_argv=False)
    inspection = inspect_lock(lock_path, FAST)
    assert inspection is not None and inspection.pid == holder.pid and inspection.pid_alive
    assert inspection.stale_reasons == ["non-openclaw-owner"]

    def never(_: float) -> None:  # reclaimed at once: a wait would be a sleep (no wall-clock bound)
        raise AssertionError("waited for a stale lock")

    with acquire_transcript_lock(transcript, FAST, sleep=never):
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()
    append_jsonl(transcript, ['{"a":1}'], lock_settings=FAST)
    assert transcript.read_bytes().endswith(b'{"a":1}\n')
    assert holder.poll() is None  # the other process is untouched, only its lock file was stale
    assert not lock_path.exists()


def test_too_old_live_openclaw_holder_raises_stale_without_stealing(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    holder = spawn_holder(lock_path, LOCK_AGE_MS=str(31 * 60_000), LOCK_MAX_HOLD_MS=str(10**10))
    with pytest.raises(SessionBusyError) as info:
        append_jsonl(transcript, ['{"a":1}'], lock_settings=FAST)
    assert info.value.code == "OPENCLAW_SESSION_WRITE_LOCK_STALE"
    assert re.fullmatch(
        rf"session file lock stale \(too-old\): pid={holder.pid} alive=true ageMs=18\d{{5}} {re.escape(str(lock_path))}",
        info.value.message,
    ), info.value.message
    assert json.loads(lock_path.read_text())["pid"] == holder.pid


def test_hold_exceeded_live_openclaw_holder_raises_stale(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    spawn_holder(lock_path, LOCK_AGE_MS=str(6 * 60_000), LOCK_MAX_HOLD_MS="300000")
    with pytest.raises(SessionBusyError) as info:
        append_jsonl(transcript, ['{"a":1}'], lock_settings=FAST)
    assert info.value.message.startswith("session file lock stale (hold-exceeded): pid=")
    assert lock_path.exists()


def test_recycled_pid_is_reclaimed(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    spawn_holder(lock_path, LOCK_START_DELTA="7")
    inspection = inspect_lock(lock_path, FAST)
    assert inspection is not None and inspection.stale_reasons == ["recycled-pid"]
    with transcript_lock(transcript, FAST):
        pass


def test_exec_a_openclaw_process_counts_as_openclaw(tmp_path):
    proc = subprocess.Popen(["bash", "-c", "exec -a openclaw sleep 30"])
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            if cmdline.startswith(b"openclaw\0"):
                break
            time.sleep(0.01)
        assert lockmod.looks_like_openclaw(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([b"python", b"-m", b"openclaw_cli", b"sessions"], True),
        ([b"/home/u/.venv/bin/openclaw", b"status"], True),
        ([b"node", b"/usr/lib/node_modules/openclaw/openclaw.mjs", b"gateway"], True),
        ([b"/Apps/OpenClaw"], True),
        ([b"python", b"-c", b"print('x')"], False),
        ([b"node", b"/srv/openclaw/bin/server.js"], False),  # only basenames count
    ],
)
def test_argv_rule(argv, expected, monkeypatch):
    data = b"\0".join(argv) + b"\0"
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path) == "/proc/4242/cmdline":
            return io.BytesIO(data)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert lockmod.looks_like_openclaw(4242) is expected


def test_lock_file_format_matches_openclaw(tmp_path):
    transcript = _transcript(tmp_path)
    with transcript_lock(transcript, LockSettings(max_hold_ms=123456)) as held:
        raw = held.lock_path.read_text()
        payload = json.loads(raw)
        assert list(payload) == ["pid", "createdAt", "maxHoldMs", "starttime"]
        assert raw == json.dumps(payload, indent=2)  # JSON.stringify(payload, null, 2)
        assert payload["pid"] == os.getpid()
        assert payload["maxHoldMs"] == 123456
        assert payload["starttime"] == process_start_time(os.getpid())
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", payload["createdAt"])
        assert (held.lock_path.stat().st_mode & 0o777) == 0o600
        assert held.lock_path == transcript.parent.resolve() / "abc.jsonl.lock"


def test_lock_path_uses_realpath_of_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert lock_path_for(tmp_path / "link" / "x.jsonl") == real / "x.jsonl.lock"


def test_payloadless_lock_waits_while_fresh_and_is_reclaimed_when_aged(tmp_path):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    lock_path.write_bytes(b"")  # created but the payload is not written yet
    with pytest.raises(SessionBusyError) as info:
        acquire_transcript_lock(transcript, FAST)
    assert info.value.message == f"session file locked (timeout 300ms): owner=unknown {lock_path}"
    old = time.time() - 10  # > 5 s grace (the acquire timeout is below 30 s)
    os.utime(lock_path, (old, old))
    with transcript_lock(transcript, FAST):
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()


def test_payloadless_grace_is_30s_for_long_timeouts(tmp_path):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    lock_path.write_bytes(b"{}")
    old = time.time() - 10
    os.utime(lock_path, (old, old))
    inspection = inspect_lock(lock_path, LockSettings())
    assert inspection is not None
    assert inspection.stale_reasons == ["missing-pid", "invalid-createdAt"]
    assert lockmod.decide(inspection, LockSettings(acquire_timeout_ms=60_000)) == "wait"
    assert lockmod.decide(inspection, LockSettings(acquire_timeout_ms=1_000)) == "reclaim"


def test_orphan_self_pid_lock_is_reclaimed(tmp_path):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    lock_path.write_text(json.dumps({"pid": os.getpid(), "createdAt": clock.iso_now()}, indent=2))
    inspection = inspect_lock(lock_path, FAST)
    assert inspection is not None and inspection.stale_reasons == ["orphan-self-pid"]
    with transcript_lock(transcript, FAST):
        pass


def test_non_reentrant_second_acquire_in_same_process_times_out(tmp_path):
    transcript = _transcript(tmp_path)
    with transcript_lock(transcript, FAST) as held:
        with pytest.raises(SessionBusyError) as info:
            acquire_transcript_lock(transcript, FAST)
        assert info.value.message.startswith(
            f"session file locked (timeout 300ms): pid={os.getpid()} alive=true"
        )
        assert held.lock_path.exists()
    assert not held.lock_path.exists()


def test_reentrant_acquire_is_ref_counted(tmp_path):
    transcript = _transcript(tmp_path)
    first = acquire_transcript_lock(transcript, FAST, allow_reentrant=True)
    second = acquire_transcript_lock(transcript, FAST, allow_reentrant=True)
    second.release()
    assert first.lock_path.exists()
    first.release()
    assert not first.lock_path.exists()


def test_release_never_deletes_a_lock_that_is_no_longer_ours(tmp_path):
    transcript = _transcript(tmp_path)
    held = acquire_transcript_lock(transcript, FAST)
    held.lock_path.unlink()
    held.lock_path.write_text('{"pid": 1, "createdAt": "2026-01-01T00:00:00.000Z"}')
    held.release()
    assert held.lock_path.read_text() == '{"pid": 1, "createdAt": "2026-01-01T00:00:00.000Z"}'


def test_watchdog_force_releases_overlong_hold(tmp_path):
    transcript = _transcript(tmp_path)
    held = acquire_transcript_lock(transcript, LockSettings(max_hold_ms=1000))
    err = io.StringIO()
    assert lockmod.watchdog_check(time.monotonic() + 0.5, stderr=err) == 0
    assert lockmod.watchdog_check(time.monotonic() + 5, stderr=err) == 1
    assert re.fullmatch(
        rf"\[session-write-lock\] releasing lock held for \d+ms \(max=1000ms\): {re.escape(str(held.lock_path))}\n",
        err.getvalue(),
    )
    assert not held.lock_path.exists()
    held.release()  # a later release is a no-op


def test_sweep_reports_and_removes_only_removable_stale_locks(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    sessions = transcript.parent
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (sessions / "a.jsonl.lock").write_text(json.dumps({"pid": dead.pid, "createdAt": clock.iso_now()}))
    live_old = spawn_holder(
        sessions / "b.jsonl.lock", LOCK_AGE_MS=str(40 * 60_000), LOCK_MAX_HOLD_MS=str(10**10)
    )
    live = spawn_holder(sessions / "c.jsonl.lock")
    (sessions / "sessions.json.lock").write_text("{}")  # not a transcript lock: out of scope

    report = sweep_stale_locks(sessions, LockSettings())
    assert [Path(r["lockPath"]).name for r in report] == ["a.jsonl.lock", "b.jsonl.lock", "c.jsonl.lock"]
    assert [r["staleReasons"] for r in report] == [["dead-pid"], ["too-old"], []]
    assert [r["pid"] for r in report] == [dead.pid, live_old.pid, live.pid]
    assert not any(r["removed"] for r in report)
    assert (sessions / "a.jsonl.lock").exists()  # a report-only sweep writes nothing

    logged: list[str] = []
    report = sweep_stale_locks(sessions, LockSettings(), remove=True, log=logged.append)
    assert [r["removed"] for r in report] == [True, False, False]
    assert set(report[0]) == {
        "lockPath",
        "pid",
        "pidAlive",
        "createdAt",
        "ageMs",
        "stale",
        "staleReasons",
        "removed",
    }
    assert logged == [f"removed stale session lock: {sessions / 'a.jsonl.lock'} (dead-pid)"]
    assert not (sessions / "a.jsonl.lock").exists()
    assert (sessions / "b.jsonl.lock").exists() and (sessions / "c.jsonl.lock").exists()


def test_infinite_timeout_waits_until_the_holder_leaves(tmp_path, spawn_holder):
    transcript = _transcript(tmp_path)
    lock_path = lock_path_for(transcript)
    spawn_holder(lock_path, HOLD_SECONDS="0.4")
    started = time.monotonic()
    # The holder exits without removing its file: the lock becomes dead-pid and is reclaimed.
    with transcript_lock(transcript, LockSettings(acquire_timeout_ms=float("inf"))):
        assert time.monotonic() - started >= 0.2
