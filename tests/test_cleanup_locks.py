"""Cleanup against other writers (D12, maintenance.md §12, §13 items 16–18): a transcript or
`sessions.json` locked by a live OpenClaw-looking process, a SQLite store held by another
connection's `BEGIN IMMEDIATE` — wait, then fail with OpenClaw's busy message, exit 5, nothing
changed; a dead holder's lock is reclaimed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    cli_json,
    db_path,
    entry,
    load_store,
    make_legacy,
    make_sqlite,
    now_ms,
    release_2026_7,  # noqa: F401 - the fixture, used by pytestmark
    sessions_dir,
    tree_digest,
    write_config,
)

pytestmark = pytest.mark.usefixtures("release_2026_7")  # G1 rules: written against 2026.7 (D23)

HOLDER = r"""
import datetime, json, os, sys, time
path = os.environ["LOCK_PATH"]
age = int(os.environ.get("LOCK_AGE_MS", "0"))
created = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(milliseconds=age)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with open("/proc/%d/stat" % os.getpid()) as fh:
    stat = fh.read()
start = int(stat[stat.rfind(")") + 2:].split()[19])
payload = {"pid": os.getpid(), "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (created.microsecond // 1000),
           "maxHoldMs": int(os.environ.get("LOCK_MAX_HOLD_MS", "300000")), "starttime": start}
os.write(fd, json.dumps(payload, indent=2).encode())
print("ready", flush=True)
time.sleep(30)
"""

SQLITE_HOLDER = r"""
import os, sqlite3, sys, time
conn = sqlite3.connect(os.environ["DB_PATH"], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("ready", flush=True)
time.sleep(30)
"""


def _store(state: Path, kind: str = "legacy") -> dict:
    write_config(
        state, {"session": {"maintenance": {"pruneAfter": "30d"}, "writeLock": {"acquireTimeoutMs": 300}}}
    )
    now = now_ms()
    entries = {
        "agent:main:old": entry("old", now - 40 * DAY),
        "agent:main:older": entry("older", now - 50 * DAY),
        "agent:main:fresh": entry("fresh", now),
    }
    (make_legacy if kind == "legacy" else make_sqlite)(state, entries)
    return entries


def _busy_message(pid: int, lock: Path) -> re.Pattern:
    return re.compile(
        rf"session file locked \(timeout 300ms\): pid={pid} alive=true ageMs=\d+ {re.escape(str(lock))}"
    )


@pytest.mark.parametrize("locked", ["old.jsonl", "sessions.json"])
def test_locked_legacy_file_waits_then_fails_with_nothing_changed(locked, state_dir, spawn):
    entries = _store(state_dir)
    lock = sessions_dir(state_dir) / f"{locked}.lock"
    holder = spawn(HOLDER, LOCK_PATH=str(lock))
    before = tree_digest(state_dir)
    started = time.monotonic()
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert time.monotonic() - started >= 0.3  # it waited for the timeout
    assert code == 5, err
    assert doc["error"]["type"] == "session_busy"
    assert _busy_message(holder.pid, lock).fullmatch(doc["error"]["message"])
    assert tree_digest(state_dir) == before
    assert set(load_store(state_dir)) == set(entries)


def test_live_openclaw_lock_older_than_stale_ms_is_reported_stale(state_dir, spawn):
    _store(state_dir)
    lock = sessions_dir(state_dir) / "old.jsonl.lock"
    holder = spawn(HOLDER, LOCK_PATH=str(lock), LOCK_AGE_MS=str(31 * 60_000), LOCK_MAX_HOLD_MS=str(3_600_000))
    before = tree_digest(state_dir)
    code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 5
    assert re.fullmatch(
        rf"session file lock stale \(too-old\): pid={holder.pid} alive=true ageMs=\d+ "
        rf"{re.escape(str(lock))}",
        doc["error"]["message"],
    )
    assert tree_digest(state_dir) == before


def test_dead_holders_lock_is_reclaimed(state_dir):
    _store(state_dir)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    lock = sessions_dir(state_dir) / "old.jsonl.lock"
    payload = {"pid": int(dead.stdout), "createdAt": "2026-01-01T00:00:00.000Z", "maxHoldMs": 300000}
    lock.write_text(json.dumps(payload, indent=2))
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 0, err
    assert doc["pruned"] == 2 and not lock.exists()
    assert not [p for p in sessions_dir(state_dir).iterdir() if p.name.endswith(".lock")]


def test_sqlite_store_held_by_another_writer_waits_then_fails(state_dir, spawn):
    entries = _store(state_dir, "sqlite")
    before = tree_digest(state_dir / "agents" / "main")
    spawn(SQLITE_HOLDER, DB_PATH=str(db_path(state_dir)))
    started = time.monotonic()
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert time.monotonic() - started >= 0.3
    assert code == 5, err
    assert (
        doc["error"]["message"] == f"session file locked (timeout 300ms): owner=unknown {db_path(state_dir)}"
    )
    assert not sessions_dir(state_dir).exists()  # not even an archive was written
    assert set(load_store(state_dir)) == set(entries)
    after = tree_digest(state_dir / "agents" / "main")
    assert after.get("agent/openclaw-agent.sqlite") == before.get("agent/openclaw-agent.sqlite")
