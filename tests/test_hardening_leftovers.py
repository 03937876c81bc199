"""What the soak found at random kill instants: a manifest, a new database, an archive or a config
being written atomically leaves `<name>.<pid>.<hex32>.tmp` (and a temp database its `-wal`/`-shm`)
when the writer is killed. The next run of the same kind of command removes a dead writer's temp
files — never a live one's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.hardening_support import DB, SESSIONS, cli, doctor, make_state


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _temp(directory: Path, name: str, pid: int, *sidecars: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.{pid}.{'e' * 32}.tmp{suffix}" for suffix in ("", *sidecars)]
    for path in paths:
        path.write_bytes(b"half written")
    return paths


def test_import_removes_a_killed_runs_temp_database_and_manifest(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    dead = _dead_pid()
    left = [
        *_temp(
            (state / DB).parent, ".openclaw-agent.sqlite.import-session-sqlite-1-aa", dead, "-wal", "-shm"
        ),
        *_temp(state / "session-sqlite-migration-runs", "session-sqlite-1-aa.json", dead),
    ]
    live = _temp(state / "session-sqlite-migration-runs", "session-sqlite-2-bb.json", os.getppid())
    assert doctor(state, "import").returncode == 0
    assert not any(p.exists() for p in left)
    assert all(p.exists() for p in live)  # a live process's temp file is never touched


def test_restore_and_recover_remove_a_killed_runs_manifest_temp(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    assert doctor(state, "import").returncode == 0
    for mode in ("restore", "recover"):
        left = _temp(state / "session-sqlite-migration-runs", "session-sqlite-3-cc.json", _dead_pid())
        doctor(state, mode)
        assert not any(p.exists() for p in left), mode


def test_agents_delete_removes_a_killed_deletes_archive_and_config_temps(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    work = tmp_path / "work-src"
    make_state(work, 6, 0.05, 4, "--agent", "work")
    shutil.copytree(work / "state" / "agents" / "work", state / "agents" / "work")
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"list": [{"id": "main", "default": True}, {"id": "work"}]}})
    )
    sessions = state / "agents" / "work" / "sessions"
    dead = _dead_pid()
    left = [
        *_temp(sessions, "x.jsonl.deleted.2026-12-01T00-00-00.000Z.zst", dead),
        *_temp(state, "openclaw.json", dead),
    ]
    proc = cli(state, "agents", "delete", "work", "--force", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not any(p.exists() for p in left)
    assert (state / SESSIONS / "sessions.json").exists()  # the other agent is untouched


def test_import_sweeps_each_sessions_dir_from_its_space_checks_listing(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The import's space check lists each sessions dir (issue 30, the serial head): the leftovers'
    sweep that follows takes those names instead of listing the directory again. A dead writer's
    temp file and transcript lock there are removed, a live writer's temp file is kept."""
    from openclaw_cli.store import leftovers
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = make_state(tmp_path)
    sessions = state / SESSIONS
    left = _temp(sessions, "sessions.json", _dead_pid())
    lock = sessions / "df30a0ea-38b3-46e4-abd3-2c8eddd59451.jsonl.lock"
    lock.write_text(
        json.dumps({"pid": 999_999_999, "createdAt": "2026-01-01T00:00:00.000Z", "maxHoldMs": 300000})
    )
    live = _temp(sessions, "sessions.json", os.getppid())
    swept: dict[Path, bool] = {}
    real = leftovers.sweep_crash_leftovers

    def sweep(directory: Path, lock_settings: Any = None, names: Any = None) -> list[str]:
        swept[Path(directory)] = names is not None
        return real(directory, lock_settings, names)

    monkeypatch.setattr(leftovers, "sweep_crash_leftovers", sweep)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    report = doctor_in_process("import")
    assert report.exit_code == 0, report.to_json()
    assert swept[sessions] is True  # the space check's names: not listed a second time
    assert not any(p.exists() for p in left) and not lock.exists()
    assert all(p.exists() for p in live)
