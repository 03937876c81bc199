"""Issue 23.3 leftovers: 2026.9.8+'s `processNamespace` (written and judged as upstream's
`classifyGatewayLockProcessNamespace` does), 2026.9.6's per-config `gateway.<hash>.lock` taken by our
Gateway and honoured by offline writes, and the import's owner file taken only after its checks."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.gateway_server_support import GatewayProcess
from tests.openclaw_db_support import DB_REL, fixture_state, nodes

BOOT_RE = re.compile(r"^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$")
linux_only = pytest.mark.skipif(
    not os.path.exists("/proc/sys/kernel/random/boot_id"), reason="boot id and PID namespaces are Linux's"
)


def _plant(state: Path, pid: int, namespace: object, *, age_s: float = 0.0) -> Path:
    from openclaw_cli.clock import iso_now
    from openclaw_cli.store.owner_file import owner_file_path

    path = owner_file_path(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "pid": pid,
        "ownerId": "0b5e8c0e-4a0e-4bb4-8a53-4f3b1d1fd2a7",
        "createdAt": iso_now(),
        "configPath": str(state / "openclaw.json"),
        "stateDir": str(state),
        "role": "gateway",
        "processNamespace": namespace,
    }
    path.write_text(json.dumps(payload))
    if age_s:
        past = time.time() - age_s
        os.utime(path, (past, past))
    return path


def _ours() -> dict:
    from openclaw_cli.store.owner_file import process_namespace

    current = process_namespace()
    assert current is not None
    return json.loads(json.dumps(current))


def _pin(state: Path) -> tuple[int, dict]:
    db = state / DB_REL
    key = sorted(nodes(db))[0]
    proc = run_cli("sessions", "pin", key, "--store", str(db), "--json")
    return proc.returncode, json.loads(proc.stdout)


@linux_only
def test_our_payload_carries_a_process_namespace_of_upstreams_shape(state_dir: Path):
    from openclaw_cli.store.owner_file import owner_file_path, read_payload
    from openclaw_cli.store.state_owner import state_not_owned

    with state_not_owned(state_dir, "offline changes"):
        held = read_payload(owner_file_path(state_dir))
    assert held is not None
    ns = held["processNamespace"]
    assert set(ns) == {"host", "boot", "pidNamespace"}
    assert ns["boot"]["platform"] == "linux" and BOOT_RE.match(ns["boot"]["identity"])
    assert ns["pidNamespace"] == str(os.stat("/proc/self/ns/pid").st_ino) and ns["host"]


@linux_only
def test_a_foreign_namespace_owner_is_judged_by_its_heartbeat(state_dir: Path):
    """A pid from another PID namespace means nothing here: a dead-looking pid with a fresh
    heartbeat still owns the state (refused with OpenClaw's namespace wording, exit 5); the same
    file with its mtime over 90 s old is stale and reclaimed."""
    from openclaw_cli.store.owner_file import classify_namespace, live_owner

    fixture_state(state_dir)
    dead_pid = 2**22 + 12345  # beyond pid_max: no such process here
    foreign = {**_ours(), "pidNamespace": "4026999999"}
    planted = _plant(state_dir, dead_pid, foreign)
    assert classify_namespace(json.loads(planted.read_text()), planted) == "unknown"
    before = nodes(state_dir / DB_REL)
    code, doc = _pin(state_dir)
    assert code == 5, doc
    message = doc["error"]["message"] if "error" in doc else doc["results"][0]["error"]
    assert "different PID namespace" in message and "heartbeat is fresh" in message, message
    assert nodes(state_dir / DB_REL) == before and planted.exists()
    past = time.time() - 91
    os.utime(planted, (past, past))
    assert live_owner(planted) is None
    code, doc = _pin(state_dir)
    assert code == 0, doc
    assert not planted.exists()


@linux_only
def test_namespace_classes_follow_upstream(state_dir: Path):
    from openclaw_cli.store.owner_file import classify_namespace

    ours = _ours()
    other_boot = {**ours, "boot": {"platform": "linux", "identity": "00000000-0000-4000-8000-000000000000"}}
    cases = [
        ("absent", None, "same"),
        ("ours", ours, "same"),
        ("another boot of this host", other_boot, "dead"),
        ("another host and boot, fresh", {**other_boot, "host": "elsewhere.invalid"}, "unknown"),
        ("null (probe unavailable), fresh", "null", "unknown"),
        (
            "malformed boot, fresh",
            {**ours, "boot": {"platform": "linux", "identity": "x", "extra": 1}},
            "unknown",
        ),
    ]
    for label, namespace, expected in cases:
        path = _plant(state_dir, os.getpid(), None if namespace == "null" else namespace)
        data = json.loads(path.read_text())
        if label == "absent":
            data.pop("processNamespace")
        assert classify_namespace(data, path) == expected, label
    stale = _plant(state_dir, os.getpid(), None, age_s=120)
    assert classify_namespace(json.loads(stale.read_text()), stale) == "dead"


def test_our_gateway_takes_the_per_config_lock_and_offline_writes_honour_it(state_dir: Path):
    """2026.9.6 finds a running Gateway by `gateway.<8 hex of sha256(config path)>.lock` first: ours
    holds its SQLite sidecar and writes its payload (with the port); any live holder of such a
    sidecar makes an offline write refuse."""
    import hashlib

    from openclaw_cli.store.owner_file import lock_dir, read_payload

    fixture_state(state_dir)
    config = state_dir / "openclaw.json"
    name = f"gateway.{hashlib.sha256(str(config.absolute()).encode()).hexdigest()[:8]}.lock"
    with GatewayProcess() as gw:
        payload = read_payload(lock_dir(state_dir) / name)
        assert payload is not None and payload["pid"] == gw.pid, payload
        assert payload["port"] == int(gw.url.rsplit(":", 1)[1]) and payload["configPath"] == str(
            config.absolute()
        )
        state_payload = read_payload(lock_dir(state_dir) / "gateway.state.lock")
        assert state_payload is not None and state_payload["ownerId"] == payload["ownerId"]
        probe = sqlite3.connect(lock_dir(state_dir) / f"{name}.sqlite", timeout=0)
        with pytest.raises(sqlite3.OperationalError):
            probe.execute("BEGIN EXCLUSIVE")  # held by the Gateway
        probe.close()
    assert not (lock_dir(state_dir) / name).exists()

    # a 2026.9.6 Gateway holding only a per-config sidecar (another config's) still owns the state
    sidecar = lock_dir(state_dir) / "gateway.0123abcd.lock.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys,time\nc=sqlite3.connect(sys.argv[1],isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\nprint('held',flush=True)\ntime.sleep(60)",
            str(sidecar),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = nodes(state_dir / DB_REL)
        code, doc = _pin(state_dir)
        assert code == 5, doc
        assert nodes(state_dir / DB_REL) == before
    finally:
        holder.kill()
        holder.wait()
    code, doc = _pin(state_dir)
    assert code == 0, doc


def test_a_refused_import_creates_no_owner_file_directory(state_dir: Path, monkeypatch):
    """The import takes its 2026.9.8+ owner file only after its read-only checks: refused by one
    (a symbolic link on the way), it never creates one, nor `<state>/tmp/` for it."""
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app
    from openclaw_cli.store import owner_file

    sessions = state_dir / "agents" / "main" / "sessions"
    elsewhere = state_dir.parent / f"{state_dir.name}-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "sessions.json").write_text("{}")
    sessions.parent.mkdir(parents=True)
    sessions.symlink_to(elsewhere, target_is_directory=True)
    taken: list[Path] = []
    original = owner_file.acquire
    monkeypatch.setattr(owner_file, "acquire", lambda path, data: taken.append(path) or original(path, data))
    mtime = state_dir.stat().st_mtime_ns
    result = CliRunner().invoke(app, ["doctor", "--session-sqlite", "import", "--json"])
    assert result.exit_code not in (0, 1), result.output  # a typed refusal
    assert taken == [], taken
    assert not (state_dir / "tmp").exists(), sorted(p.name for p in state_dir.iterdir())
    assert state_dir.stat().st_mtime_ns == mtime


def test_an_import_holds_an_owner_file_while_it_writes(state_dir: Path, monkeypatch):
    """...and a successful import still holds one (taken after the checks), removed after."""
    from openclaw_cli.migration import importer
    from openclaw_cli.store.owner_file import owner_file_path, read_payload

    sessions = state_dir / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(
        json.dumps({"agent:main:main": {"sessionId": "5f0c6a39-2d0e-4d2e-9a7c-1f1e8f7d1a02", "updatedAt": 1}})
    )
    seen: list[dict | None] = []
    original = importer.ImportRun._run_locked

    def spy(self):
        seen.append(read_payload(owner_file_path(state_dir)))
        return original(self)

    monkeypatch.setattr(importer.ImportRun, "_run_locked", spy)
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app  # in-process, so the spy sees the run

    result = CliRunner().invoke(app, ["doctor", "--session-sqlite", "import", "--json"])
    assert result.exit_code == 0, result.output
    assert seen and seen[0] is not None and seen[0]["pid"] == os.getpid(), seen
    assert seen[0]["role"] == "sqlite-maintenance"
    assert not owner_file_path(state_dir).exists()


def _node_receipt(db: Path, agent_id: str) -> str:
    """The receipt as 2026.9.6 computes it, by Node's own `fs.statSync(…, {bigint: true})`."""
    script = (
        "const fs=require('fs');const s=fs.statSync(process.argv[1],{bigint:true});"
        "console.log(JSON.stringify([1,process.argv[2],`${s.dev}:${s.ino}`,s.birthtimeNs.toString()]))"
    )
    return subprocess.run(
        ["node", "-e", script, str(db), agent_id], capture_output=True, text=True, check=True
    ).stdout.strip()


def _contract(db: Path) -> tuple[object, int]:
    conn = sqlite3.connect(db)
    try:
        ready = conn.execute("SELECT canonical_ready FROM session_key_contract WHERE id = 1").fetchone()[0]
        pending = conn.execute("SELECT count(*) FROM session_canonical_validation_pending").fetchone()[0]
    finally:
        conn.close()
    return ready, pending


@pytest.mark.skipif(shutil.which("node") is None, reason="node (the real writer's runtime) not installed")
def test_our_gateway_records_the_canonical_receipt_and_offline_writes_leave_it(state_dir: Path):
    """Our Gateway certifies every row and records `canonical_ready` as the real certifying Gateway
    does (Node's file identity, the agent id); an offline write leaves it; a row it cannot vouch for
    keeps the receipt unwritten (the real Gateway validates everything then)."""
    from tests.gateway_server_support import connected

    fixture_state(state_dir)
    db = state_dir / DB_REL
    keys = sorted(nodes(db))
    assert _contract(db)[0] is None  # the real import leaves it unset
    with GatewayProcess() as gw, connected(gw.url) as client:
        res = client.request("sessions.patch", {"key": keys[0], "pinned": True})
        assert res["ok"], res
    ready, pending = _contract(db)
    assert ready == _node_receipt(db, "main") and pending == 0

    proc = run_cli("sessions", "pin", keys[1], "--store", str(db), "--json")  # offline
    assert proc.returncode == 0, proc.stdout
    assert _contract(db) == (ready, 0)

    conn = sqlite3.connect(db)  # a row nobody could certify (not canonical: upper case)
    with conn:
        conn.execute("UPDATE session_key_contract SET canonical_ready = NULL")
        conn.execute(
            "UPDATE session_nodes SET session_key = 'agent:main:Mixed-Case' WHERE session_key = ?", (keys[2],)
        )
    conn.close()
    with GatewayProcess() as gw, connected(gw.url) as client:
        res = client.request("sessions.patch", {"key": keys[0], "pinned": False})
        assert res["ok"], res
    ready, pending = _contract(db)
    assert ready is None and pending >= 1
