"""Plain `doctor` reports legacy config keys, DB schemas and stale locks and writes nothing;
`doctor --fix` removes the legacy keys (after a byte-identical .bak) and dead owners' locks."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.test_cli_read_commands import tree_digest

CONFIG = '// legacy keys\n{session: {parentForkMaxTokens: 5000, maintenance: {rotateBytes: "10mb"}}}\n'


def _dead_pid_lock(sessions: Path) -> Path:
    lock = sessions / "df30a0ea-38b3-46e4-abd3-2c8eddd59451.jsonl.lock"
    lock.write_text(
        json.dumps(
            {"pid": 999_999_999, "createdAt": "2026-01-01T00:00:00.000Z", "maxHoldMs": 300000}, indent=2
        )
    )
    return lock


def test_plain_doctor_reports_and_writes_nothing(legacy_fixture_state: Path) -> None:
    (legacy_fixture_state / "openclaw.json").write_text(CONFIG)
    lock = _dead_pid_lock(legacy_fixture_state / "agents/main/sessions")
    before = tree_digest(legacy_fixture_state)
    proc = run_cli("doctor")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout  # D19: the report on stdout; the findings are listed there, not warned twice
    assert "rotateBytes" not in proc.stderr
    assert "session.maintenance.rotateBytes is deprecated" in text
    assert "session.parentForkMaxTokens was removed" in text
    assert f"stale session lock: {lock}" in text and "dead-pid" in text
    assert tree_digest(legacy_fixture_state) == before
    data = json.loads(run_cli("doctor", "--json").stdout)
    assert len(data["config"]["findings"]) == 2 and data["staleLocks"][0]["removed"] is False
    assert tree_digest(legacy_fixture_state) == before


def test_doctor_fix_removes_legacy_keys_and_dead_locks(legacy_fixture_state: Path) -> None:
    config = legacy_fixture_state / "openclaw.json"
    config.write_text(CONFIG)
    lock = _dead_pid_lock(legacy_fixture_state / "agents/main/sessions")
    proc = run_cli("doctor", "--fix")
    assert proc.returncode == 0, proc.stderr
    assert "Removed deprecated session.maintenance.rotateBytes." in proc.stdout
    assert (legacy_fixture_state / "openclaw.json.bak").read_text() == CONFIG
    fixed = json.loads(config.read_text())
    assert (
        "rotateBytes" not in fixed["session"]["maintenance"] and "parentForkMaxTokens" not in fixed["session"]
    )
    assert not lock.exists()
    # the import ran too: the store is now SQLite, and doctor reports its schema
    data = json.loads(run_cli("doctor", "--json").stdout)
    assert data["databases"][0]["kind"] == "sqlite" and data["databases"][0]["schema"].startswith(
        "openclaw-cli"
    )
    assert data["config"]["findings"] == []


def test_doctor_reports_a_real_openclaw_db_schema(imported_fixture_state: Path) -> None:
    before = tree_digest(imported_fixture_state)
    data = json.loads(run_cli("doctor", "--json").stdout)
    assert data["databases"] == [
        {
            "agentId": "main",
            "path": str(imported_fixture_state / "agents/main/agent/openclaw-agent.sqlite"),
            "kind": "openclaw-sqlite",
            "schema": "openclaw 23",
            "readOnly": False,  # written since issue 12 (D21)
        }
    ]
    assert tree_digest(imported_fixture_state) == before


def test_doctor_reports_an_invalid_config_and_fix_leaves_it_alone(legacy_fixture_state: Path) -> None:
    config = legacy_fixture_state / "openclaw.json"
    text = '{session: {maintenance: {rotateBytes: "1mb", maxDiskBytes: "lots"}}}'
    config.write_text(text)
    proc = run_cli("doctor", "--json")  # an invalid value is a config error (D10), named with its key
    assert proc.returncode == 3 and "maxDiskBytes" in json.loads(proc.stdout)["error"]["message"]
    assert run_cli("doctor", "--fix").returncode == 3
    assert config.read_text() == text and not (legacy_fixture_state / "openclaw.json.bak").exists()
