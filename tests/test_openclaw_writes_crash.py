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

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import schema23_kill  # noqa: E402


def test_kills_leave_the_database_as_before_or_as_after(real_db_template: tuple[Path, bool], tmp_path: Path):
    template = tmp_path / "template"
    shutil.copytree(real_db_template[0], template)
    (template / "openclaw.json").write_text(json.dumps(schema23_kill.CONFIG))
    outcome = schema23_kill.campaign(template, tmp_path / "work", kills=5, seed=20261201,
                                     peer_check="final" if real_db_template[1] else "none", log=lambda _: None)
    assert outcome["kills"] == 5 and outcome["asBefore"] + outcome["asAfter"] == 5
    assert outcome["peerChecks"] == (1 if real_db_template[1] else 0)
