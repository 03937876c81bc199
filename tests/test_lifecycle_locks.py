"""Reset, delete and fork racing a transcript writer (spec D12; maintenance.md §12): a live
OpenClaw-looking process holds the transcript's write lock (legacy) or our SQLite store's write
transaction and appends a line. The lifecycle command waits for the lock (the appended line ends
up in the verified archive, never lost) or, past `session.writeLock.acquireTimeoutMs`, fails with
the busy error and exit 5 having changed nothing. A fork refuses a parent whose lock is held."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.lifecycle_support import (
    DB,
    KEYS,
    SESSIONS,
    archive_bytes,
    cli_json,
    make_templates,
    rows,
    transcript_bytes,
    tree_digest,
    use_template,
)

APPENDED = '{"type":"custom","id":"racer01","parentId":null,"timestamp":"2026-11-30T00:00:00.000Z","customType":"race"}'
LEGACY_HOLDER = r"""
import datetime, json, os, sys, time
lock, transcript, hold = os.environ["LOCK_PATH"], os.environ["TRANSCRIPT"], float(os.environ["HOLD_S"])
created = datetime.datetime.now(datetime.timezone.utc)
fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with open("/proc/%d/stat" % os.getpid()) as fh:
    stat = fh.read()
start = int(stat[stat.rfind(")") + 2:].split()[19])
payload = {"pid": os.getpid(), "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (created.microsecond // 1000),
           "maxHoldMs": 300000, "starttime": start}
os.write(fd, json.dumps(payload, indent=2).encode())
print("ready", flush=True)
time.sleep(min(hold, 0.4))
with open(transcript, "a") as fh:
    fh.write(os.environ["LINE"] + "\n")
    fh.flush()
    os.fsync(fh.fileno())
time.sleep(max(0.0, hold - 0.4))
os.close(fd)
os.unlink(lock)
"""
SQLITE_HOLDER = r"""
import os, time
from openclaw_cli.store.sqlite.store import SqliteStore
st = SqliteStore(os.environ["DB_PATH"], "main")
with st.transaction():
    st.append_events(os.environ["SID"], [os.environ["LINE"]], session_key=os.environ["KEY"])
    print("ready", flush=True)
    time.sleep(float(os.environ["HOLD_S"]))
"""


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "locks")


def _config(state: Path, timeout_ms: int) -> None:
    (state / "openclaw.json").write_text(
        json.dumps({"session": {"writeLock": {"acquireTimeoutMs": timeout_ms}}})
    )


def _hold(spawn, state: Path, kind: str, key: str, hold_s: float):
    sid = rows(state)[key]["sessionId"]
    if kind == "legacy":
        transcript = state / SESSIONS / f"{sid}.jsonl"
        return spawn(
            LEGACY_HOLDER,
            LOCK_PATH=f"{transcript}.lock",
            TRANSCRIPT=str(transcript),
            HOLD_S=str(hold_s),
            LINE=APPENDED,
        )
    return spawn(SQLITE_HOLDER, DB_PATH=str(state / DB), SID=sid, KEY=key, HOLD_S=str(hold_s), LINE=APPENDED)


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
@pytest.mark.parametrize("command", ["reset", "delete"])
def test_waits_for_the_writer_and_keeps_its_line(
    templates, state_dir: Path, spawn, kind: str, command: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    use_template(templates[kind], state_dir)
    _config(state_dir, 15_000)
    key = KEYS["other"]
    sid = rows(state_dir)[key]["sessionId"]
    before = transcript_bytes(state_dir, sid)
    holder = _hold(spawn, state_dir, kind, key, 1.2)
    started = time.monotonic()
    args = ["sessions", command, key] + (["--yes"] if command == "delete" else [])
    rc, doc = cli_json(*args)
    assert rc == 0, doc
    assert time.monotonic() - started >= 0.5  # it waited for the holder
    holder.wait(timeout=10)
    archive = doc["archived"][0] if command == "reset" else doc["results"][0]["archived"][0]
    kept = archive_bytes(archive)
    assert kept.startswith(before) and kept.endswith(
        (APPENDED + "\n").encode()
    )  # the racing line is archived
    assert (
        transcript_bytes(state_dir, sid) == b""
        if kind == "sqlite"
        else not (state_dir / SESSIONS / f"{sid}.jsonl").exists()
    )


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
@pytest.mark.parametrize("command", ["reset", "delete"])
def test_fails_busy_past_the_timeout_with_nothing_changed(
    templates, state_dir: Path, spawn, kind: str, command: str
):
    use_template(templates[kind], state_dir)
    _config(state_dir, 300)
    key = KEYS["other"]
    _hold(spawn, state_dir, kind, key, 20)
    time.sleep(0.6)  # the holder appended its line (legacy) / holds its transaction (SQLite)
    before = tree_digest(state_dir)
    args = ["sessions", command, key] + (["--yes"] if command == "delete" else [])
    rc, doc = cli_json(*args)
    if command == "reset":
        assert rc == 5 and doc["error"]["type"] == "session_busy"
        assert doc["error"]["message"].startswith("session file locked (timeout 300ms)")
    else:
        # every key refused busy, nothing written: the batch exits busy as the single command does
        assert rc == 5 and doc["results"][0]["status"] == "failed"
        assert doc["results"][0]["error"].startswith("session file locked (timeout 300ms)")
    assert tree_digest(state_dir) == before  # not even an archive


def test_fork_refuses_a_parent_whose_transcript_is_locked(templates, state_dir: Path, spawn):
    use_template(templates["legacy"], state_dir)
    # refused at once, not after waiting: the acquire timeout and the hold are longer than any
    # run, so a fork that waited would either still wait or succeed once the holder let go
    _config(state_dir, 600_000)
    key = KEYS["group"]
    _hold(spawn, state_dir, "legacy", key, 240)
    # the holder appends its line 0.4 s after it holds the lock: the state to keep is after that
    transcript = state_dir / SESSIONS / f"{rows(state_dir)[key]['sessionId']}.jsonl"
    for _ in range(600):  # bounded: 60 s
        if APPENDED in transcript.read_text():
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the holder never appended its line")
    before = tree_digest(state_dir)
    rc, doc = cli_json("sessions", "fork", key)
    assert (
        rc == 5 and doc["error"]["message"] == f"Parent session {key} is still active; try again in a moment."
    )
    assert tree_digest(state_dir) == before
