"""Ownership across releases (issue 23 part 3, spec D25): our Gateway writes the state it serves
(schema-23 databases included) under every form of ownership the real releases recognise; while
any Gateway owns the state — ours, 2026.9.6's coordinator, a 2026.9.8+ owner file — offline
writes refuse with that release's wording, exit 5, `--store` included, and change nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.gateway_server_support import GatewayProcess, connected
from tests.openclaw_db_support import DB_REL, fixture_state, nodes

LEGACY_KEY = "agent:ops:main"


def _legacy_store(state: Path) -> Path:
    path = state / "agents" / "ops" / "sessions" / "sessions.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                LEGACY_KEY: {
                    "sessionId": "5f0c6a39-2d0e-4d2e-9a7c-1f1e8f7d1a01",
                    "updatedAt": int(time.time() * 1000),
                }
            }
        )
    )
    return path


def _files(state: Path) -> list[tuple[str, int]]:
    return sorted(
        (str(p.relative_to(state)), p.stat().st_size)
        for p in (state / "agents").rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    )


def _cli(*args: str) -> tuple[int, dict]:
    proc = run_cli(*args, "--json")
    return proc.returncode, json.loads(proc.stdout)


def _offline_writes(db: Path, legacy: Path, key: str) -> list[tuple[int, dict]]:
    return [
        _cli("sessions", "cleanup", "--enforce", "--store", str(db)),
        _cli("sessions", "pin", key, "--store", str(db)),
        _cli("compact", key, "--max-lines", "3", "--store", str(db)),
        _cli("sessions", "pin", LEGACY_KEY, "--store", str(legacy)),
        _cli("sessions", "cleanup", "--enforce", "--store", str(legacy)),
    ]


def _refused(result: tuple[int, dict], wording: str) -> None:
    code, doc = result
    assert code == 5, doc
    message = doc["error"]["message"] if "error" in doc else doc["results"][0]["error"]
    assert wording in message, message


def test_our_gateway_writes_its_schema23_state_and_offline_writes_refuse(state_dir: Path):
    from openclaw_cli.store.owner_file import lock_dir, owner_file_path, read_payload

    fixture_state(state_dir)
    db, legacy = state_dir / DB_REL, _legacy_store(state_dir)
    key = sorted(nodes(db))[0]
    with GatewayProcess() as gw:
        owner = read_payload(owner_file_path(state_dir))  # 2026.9.8+: role gateway, our pid
        assert owner is not None and owner["pid"] == gw.pid and owner["role"] == "gateway", owner
        lock = read_payload(lock_dir(state_dir) / "gateway.state.lock")  # 2026.9.6: with the port
        assert lock is not None and lock["pid"] == gw.pid and lock["port"] == int(gw.url.rsplit(":", 1)[1])
        assert "role" not in lock and lock["stateDir"] == os.path.realpath(state_dir)
        before, files = nodes(db), _files(state_dir)
        for result in _offline_writes(db, legacy, key):
            _refused(result, "owns this OpenClaw state directory")
        assert nodes(db) == before and _files(state_dir) == files  # no row, no backup, no archive
        with connected(gw.url) as client:
            res = client.request("sessions.patch", {"key": key, "pinned": True})
        assert res["ok"], res  # was UNAVAILABLE state_owned: its own lock refused it
    row = (
        sqlite3.connect(db)
        .execute("SELECT pinned_at FROM session_nodes WHERE session_key = ?", (key,))
        .fetchone()
    )
    assert row[0] is not None
    assert any(".openclaw-cli-backup-" in name for name, _ in _files(state_dir))  # the Gateway's guard rails
    assert (
        not owner_file_path(state_dir).exists() and not (lock_dir(state_dir) / "gateway.state.lock").exists()
    )
    code, doc = _cli("sessions", "pin", LEGACY_KEY, "--store", str(legacy))  # stopped: offline writes again
    assert code == 0, doc


@pytest.fixture
def holder():
    """A live process standing for another release's Gateway (argv names openclaw, D12)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "openclaw-gateway"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _plant_owner_file(state: Path, pid: int, role: str = "gateway") -> Path:
    from openclaw_cli.clock import iso_now
    from openclaw_cli.store.owner_file import owner_file_path, process_start_time

    path = owner_file_path(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "pid": pid,
        "ownerId": "5b1c1f4e-0d5e-4c55-9a55-2f8f0a0e8e11",
        "createdAt": iso_now(),
        "configPath": str(state / "openclaw.json"),
        "stateDir": str(state),
        "role": role,
    }
    start = process_start_time(pid)
    if start is not None:
        payload["startTime"] = start
    path.write_text(json.dumps(payload))
    return path


def test_a_live_2026_9_8_owner_file_refuses_offline_writes_with_its_wording(state_dir: Path, holder):
    fixture_state(state_dir)
    db, legacy = state_dir / DB_REL, _legacy_store(state_dir)
    key = sorted(nodes(db))[0]
    planted = _plant_owner_file(state_dir, holder.pid)
    before, files = nodes(db), _files(state_dir)
    for result in _offline_writes(db, legacy, key):
        _refused(result, "OpenClaw state database is busy at ")
    assert nodes(db) == before and _files(state_dir) == files and planted.exists()
    holder.kill()
    holder.wait()  # its owner is gone: the file is stale, reclaimed, and ours is removed after the write
    code, doc = _cli("sessions", "pin", key, "--store", str(db))
    assert code == 0, doc
    assert not planted.exists()


def test_a_recycled_pid_does_not_own_the_state(state_dir: Path):
    """A payload whose startTime is not the live process's (the pid was reused) is stale."""
    from openclaw_cli.store.owner_file import live_owner, owner_file_path

    planted = _plant_owner_file(state_dir, os.getppid())
    data = json.loads(planted.read_text())
    assert live_owner(owner_file_path(state_dir)) is not None or "startTime" not in data
    data["startTime"] = data.get("startTime", 0) + 12345
    planted.write_text(json.dumps(data))
    assert live_owner(owner_file_path(state_dir)) is None


def test_an_offline_write_holds_an_owner_file_of_its_own_while_it_writes(state_dir: Path):
    from openclaw_cli.errors import StateOwnedError
    from openclaw_cli.store.owner_file import owner_file_path, read_payload
    from openclaw_cli.store.state_owner import state_not_owned

    with state_not_owned(state_dir, "offline changes"):
        held = read_payload(owner_file_path(state_dir))
        assert held is not None and held["pid"] == os.getpid() and held["role"] == "sqlite-maintenance"
        assert isinstance(held["createdAt"], str) and held["createdAt"].endswith("Z")
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                (
                    "import sys\nfrom pathlib import Path\nfrom openclaw_cli.store.state_owner import state_not_owned\n"
                    "from openclaw_cli.errors import StateOwnedError\n"
                    "try:\n    with state_not_owned(Path(sys.argv[1]), 'x'):\n        print('entered')\n"
                    "except StateOwnedError as e:\n    print(e.message)\n"
                ),
                str(state_dir),
            ],
            capture_output=True,
            text=True,
        )
        assert "owns this OpenClaw state directory" in probe.stdout, probe
    assert not owner_file_path(state_dir).exists()
    with pytest.raises(StateOwnedError), state_not_owned(state_dir, "a"), state_not_owned(state_dir, "b"):
        pass  # a second hold in one process is refused too: only a serving Gateway passes its own


def test_compact_over_threshold_with_a_gateway_up_does_not_suggest_store(state_dir: Path):
    from tests.gateway_server_support import TOKEN, write_config

    with GatewayProcess() as gw:
        write_config(state_dir, {"gateway": {"mode": "local", "auth": {"mode": "token", "token": TOKEN}}})
        proc = run_cli(
            "compact", "--over-threshold", "--json", env={"OPENCLAW_GATEWAY_PORT": gw.url.rsplit(":", 1)[1]}
        )
        code, doc = proc.returncode, json.loads(proc.stdout)
    assert code == 5 and doc["error"]["type"] == "state_owned", doc
    assert "--store" not in doc["error"]["message"] and "openclaw compact KEY" in doc["error"]["message"]
