"""SIGKILL at random instants during a schema-23 cleanup enforce (issue 12, D6.4): a few kills per
suite run (the long run, >= 50 kills: scripts/schema23-kill). After each kill the database is
exactly as before or as after an uninterrupted run, integrity and foreign-key checks are clean, a
re-run reaches the uninterrupted result; the real OpenClaw's inspect of the final state is clean
where /tmp/peer exists."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import schema23_kill  # noqa: E402


@pytest.mark.peer  # the real OpenClaw inspects the last kill's database (peer_check="final")
@pytest.mark.slow  # ~19 s of CPU at load 12 (the real import of the template included when it builds it)
def test_kills_leave_the_database_as_before_or_as_after(real_db_template: tuple[Path, bool], tmp_path: Path):
    template = tmp_path / "template"
    shutil.copytree(real_db_template[0], template)
    (template / "openclaw.json").write_text(json.dumps(schema23_kill.CONFIG))
    outcome = schema23_kill.campaign(
        template,
        tmp_path / "work",
        kills=5,
        seed=20261201,
        peer_check="final" if real_db_template[1] else "none",
        log=lambda _: None,
    )
    assert outcome["kills"] == 5 and outcome["asBefore"] + outcome["asAfter"] == 5
    assert outcome["peerChecks"] == (1 if real_db_template[1] else 0)


@pytest.mark.slow  # ~4 s of CPU at load 12
def test_ctrl_c_stops_at_a_safe_point_as_before_or_as_after(
    real_db_template: tuple[Path, bool], tmp_path: Path
):
    """Issue 13's interrupts on a schema-23 cleanup: SIGINT at a checkpoint before the archives,
    inside the write transaction, and after its commit exits 130 with the typed error; the database
    is as before (the first two: the transaction rolled back, the extra verified files are reused)
    or as after (the last), clean, and a re-run reaches the uninterrupted result."""
    import subprocess

    template = tmp_path / "template"
    shutil.copytree(real_db_template[0], template)
    (template / "openclaw.json").write_text(json.dumps(schema23_kill.CONFIG))
    before, after, checkpoints, _ = schema23_kill.reference(template, tmp_path / "work")
    for point, expected in ((1, before), (checkpoints - 1, before), (checkpoints, after)):
        state = schema23_kill._copy(template, tmp_path / "work" / "run")
        db = state / schema23_kill.DB_REL
        env = schema23_kill._env(
            state, OPENCLAW_CLEANUP_CRASH_AT=str(point), OPENCLAW_CLEANUP_CRASH_SIGNAL="INT"
        )
        proc = subprocess.run(
            schema23_kill._cmd(state), env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
        )
        assert proc.returncode == 130, (point, proc.stdout[-500:], proc.stderr[-500:])
        assert json.loads(proc.stdout)["error"]["type"] == "interrupted" and "Traceback" not in proc.stderr
        assert schema23_kill.logical_state(db) == expected, point
        assert schema23_kill.db_checks(db) == ("ok", [])
        rerun = subprocess.run(
            schema23_kill._cmd(state),
            env=schema23_kill._env(state),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        assert rerun.returncode == 0 and schema23_kill.logical_state(db) == after, rerun.stderr[-500:]
