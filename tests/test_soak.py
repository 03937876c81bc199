"""The short fault-injection profile (issue 13) inside the suite: one kill of every multi-step
operation at a crash point (SIGKILL or SIGINT; for Gateway-served writes the Gateway is killed),
recovered and accounted, and full disks where a tmpfs
can be mounted. `scripts/soak --full` runs the long profile (at least 1,000 kills). The accounting
itself is checked first: a store that did lose or duplicate a line is reported as such."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode
from tests import faults


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return faults.build_templates(tmp_path_factory.mktemp("soak-templates"), sessions=16)


def _base(templates: dict[str, Path], op: faults.Op) -> dict:
    legacy = faults.baseline(templates["legacy"])
    if op.template in ("legacy", "imported", "half-imported"):
        base = legacy
    else:
        base = faults.baseline(templates[op.template])
    if op.name == "cleanup-sqlite":
        base = {**legacy, "lines": faults._all_db_lines(templates[op.template] / faults.DB)}
    return base


@pytest.mark.parametrize("name", list(faults.OPS))
def test_short_profile_kill_recover_account(templates: dict[str, Path], tmp_path: Path, name: str) -> None:
    op = faults.OPS[name]
    template = templates[op.template]
    rng = random.Random(sum(map(ord, name)))
    # every operation passes at least 3 crash points (the full profile probes and uses them all);
    # half of them get SIGKILL, half SIGINT (stop at the next safe point, exit 130)
    mode = "point" if list(faults.OPS).index(name) % 2 or op.gateway else "sigint"
    outcome = faults.inject(
        op, template, _base(templates, op), tmp_path / "job", mode, float(rng.randint(2, 3)), rng
    )
    assert outcome.killed, outcome
    assert (outcome.lost, outcome.duplicated, outcome.problems) == (0, 0, []), outcome


def test_the_accounting_sees_a_lost_and_a_duplicated_line(templates: dict[str, Path], tmp_path: Path) -> None:
    op = faults.OPS["import"]
    state = faults._copy(templates["legacy"], tmp_path / "run")
    assert faults.run(state, op.args).returncode == 0
    base = _base(templates, op)
    assert op.account(state, base)[:2] == (0, 0)
    conn = sqlite3.connect(state / faults.DB)
    sid, seq = conn.execute(
        "SELECT session_id, max(seq) FROM transcript_events GROUP BY session_id LIMIT 1"
    ).fetchone()
    conn.execute("DELETE FROM transcript_events WHERE session_id = ? AND seq = ?", (sid, seq))
    conn.execute(
        "INSERT INTO transcript_events SELECT session_id, seq + 1000, created_at, event_utf8_bytes, "
        "event_type, event_json FROM transcript_events WHERE session_id = ? AND seq = 1",
        (sid,),
    )
    conn.commit()
    conn.close()
    lost, dup, _ = op.account(state, base)
    assert (lost, dup) == (1, 1)
    assert faults.NO_SPACE == ExitCode.NO_SPACE  # the engine's copy of the exit code
    shutil.rmtree(state.parent)


def test_full_disk_short_profile(templates: dict[str, Path]) -> None:
    reason = faults.mount_reason()
    if reason:
        pytest.skip(reason)
    figures = faults.enospc_soak(
        spares=[16 * 1024], ops=["import", "cleanup-sqlite", "compact-rotate-legacy"], templates=templates
    )
    assert figures.outcomes and not figures.failures, [o for o in figures.failures]
    assert any(
        o.code == ExitCode.NO_SPACE for o in figures.outcomes
    )  # the disk really was full for some of them


@pytest.mark.slow
def test_short_import_vs_writer_races_undo_nothing(tmp_path: Path) -> None:
    """Issue 29 #4 in the soak: imports raced by real writers (delete, label, compact, cleanup) at
    random instants; `scripts/soak --full` runs at least 200 of these."""
    from tests import import_race

    figures = import_race.race_soak(races=2, workers=2, seed=29)
    assert len(figures.races) == 2
    assert figures.failures == [], [(r.codes, r.undone, r.phantom, r.problems) for r in figures.failures]
