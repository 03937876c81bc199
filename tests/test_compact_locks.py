"""Compaction against other writers (D12): a transcript or `sessions.json` locked by a live
OpenClaw-looking process, our SQLite store held by another connection's `BEGIN IMMEDIATE` — wait
`session.writeLock.acquireTimeoutMs`, then fail with OpenClaw's busy message, exit 5, nothing
changed (not even an archive). A dead holder's lock is reclaimed; a dry run needs no lock."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.compact_support import (
    DB,
    SESSIONS,
    import_sqlite,
    invoke,
    rows,
    tree_digest,
    use_template,
    write_legacy_state,
)
from tests.session_generator import generate_session

KEY = "agent:main:main"
CONFIG = {
    "session": {"writeLock": {"acquireTimeoutMs": 300}},
    "agents": {"defaults": {"compaction": {"truncateAfterCompaction": True}}},
}
HOLDER = r"""
import datetime, json, os, time
path = os.environ["LOCK_PATH"]
created = datetime.datetime.now(datetime.timezone.utc)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with open("/proc/%d/stat" % os.getpid()) as fh:
    stat = fh.read()
start = int(stat[stat.rfind(")") + 2:].split()[19])
payload = {"pid": os.getpid(), "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (created.microsecond // 1000),
           "maxHoldMs": 300000, "starttime": start}
os.write(fd, json.dumps(payload, indent=2).encode())
print("ready", flush=True)
time.sleep(30)
"""
SQLITE_HOLDER = r"""
import os, sqlite3, time
conn = sqlite3.connect(os.environ["DB_PATH"], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("ready", flush=True)
time.sleep(30)
"""


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    sessions = {KEY: generate_session(61, turns=30)}
    out = {}
    for kind in ("legacy", "sqlite"):
        state = tmp_path_factory.mktemp(f"locks-{kind}") / "state"
        write_legacy_state(state, sessions)
        if kind == "sqlite":
            import_sqlite(state)
        (state / "openclaw.json").write_text(json.dumps(CONFIG))
        out[kind] = state
    return out


@pytest.mark.parametrize("locked", ["transcript", "sessions.json"])
def test_a_locked_legacy_file_fails_busy_with_nothing_changed(locked: str, templates, state_dir: Path, spawn):
    use_template(templates["legacy"], state_dir)
    sid = rows(state_dir)[KEY]["sessionId"]
    lock = state_dir / SESSIONS / (f"{sid}.jsonl.lock" if locked == "transcript" else "sessions.json.lock")
    holder = spawn(HOLDER, LOCK_PATH=str(lock))
    before = tree_digest(state_dir)
    assert invoke("compact", KEY, "--dry-run")[0] == 0  # a dry run takes no lock
    started = time.monotonic()
    rc, doc, _ = invoke("compact", KEY, "--keep-recent-tokens", "2000")
    assert time.monotonic() - started >= 0.3
    assert rc == 5 and doc["error"]["type"] == "session_busy"
    assert re.fullmatch(
        rf"session file locked \(timeout 300ms\): pid={holder.pid} alive=true ageMs=\d+ "
        rf"{re.escape(str(lock))}",
        doc["error"]["message"],
    )
    assert tree_digest(state_dir) == before


def test_a_busy_sqlite_store_fails_busy_with_nothing_changed(templates, state_dir: Path, spawn):
    use_template(templates["sqlite"], state_dir)
    spawn(SQLITE_HOLDER, DB_PATH=str(state_dir / DB))
    before = tree_digest(state_dir)
    rc, doc, _ = invoke("compact", KEY, "--keep-recent-tokens", "2000")
    assert (
        rc == 5
        and doc["error"]["message"] == f"session file locked (timeout 300ms): owner=unknown {state_dir / DB}"
    )
    assert tree_digest(state_dir) == before and not list((state_dir / SESSIONS).glob("*.bak.*"))


def test_a_dead_holders_lock_is_reclaimed(templates, state_dir: Path):
    use_template(templates["legacy"], state_dir)
    sid = rows(state_dir)[KEY]["sessionId"]
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    lock = state_dir / SESSIONS / f"{sid}.jsonl.lock"
    lock.write_text(
        json.dumps(
            {"pid": int(dead.stdout), "createdAt": "2026-01-01T00:00:00.000Z", "maxHoldMs": 300000}, indent=2
        )
    )
    rc, doc, err = invoke("compact", KEY, "--keep-recent-tokens", "2000")
    assert rc == 0 and doc["compacted"] and doc["successor"], err
    assert not lock.exists()
