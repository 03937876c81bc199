"""The import's archive published by two processes (issue 30): once a fresh build verified, the idle
parser process publishes part of each batch (`parser_process._publish_part`: `publish.publish_batch`,
every A-4 check) while the importing process publishes the rest. The outcome is the one-process
import's (report, manifest moves in their order, files); a parser that dies in its part is settled
and its part published here; a kill at any point of either process's part, or Ctrl-C, loses and
duplicates nothing and leaves no parser behind."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.migration.context import CRASH_COUNT_ENV, CRASH_ENV
from tests.conftest import generate_legacy_state
from tests.test_import_parser import _no_parser_left
from tests.test_import_tail import ARCHIVE, SESSIONS, STAMP, _run, _same, _state
from tests.test_migration_crash import (
    _check_files_kept,
    _check_lines_once,
    _check_manifests,
    _doctor,
    _originals,
)

MOVE_CRASH_ENV = "OPENCLAW_IMPORT_PARSER_CRASH_AT"


@pytest.fixture()
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from openclaw_cli.migration.context import MigrationContext

    monkeypatch.setattr(MigrationContext, "now_ms", staticmethod(lambda: STAMP))


def _sent(monkeypatch: pytest.MonkeyPatch, kill: str = "no") -> list[int]:
    """Counts the moves sent to the parser (one entry a part). `kill`: "before" kills the parser
    before its first part is sent, "during" once its part started moving (a source with two
    names or gone), "no": not at all."""
    from openclaw_cli.migration import importer

    sent: list[int] = []
    real = importer.ParserProcess.move

    def move(self: Any, moves: list[Any], mode: Any) -> None:
        sent.append(len(moves))
        if kill == "before" and len(sent) == 1:
            self.proc.kill()
            self.proc.wait()
        real(self, moves, mode)
        if kill == "during" and len(sent) == 1:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    if any(os.lstat(m[0]).st_nlink == 2 for m in moves):
                        break
                except FileNotFoundError:
                    break
                time.sleep(0.0005)
            self.proc.kill()

    monkeypatch.setattr(importer.ParserProcess, "move", move)
    return sent


@pytest.mark.parametrize("share", [0.5, 0.99])
def test_the_parsers_part_of_each_batch_gives_the_one_process_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None, share: float
) -> None:
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer, "PARSER_MOVES_SHARE", share)
    monkeypatch.setattr(importer, "PARSER_MOVES_MIN", 4)
    template = _state(tmp_path / "template", sessions=40)
    inline, _ = _run(tmp_path, monkeypatch, "inline", template)
    sent = _sent(monkeypatch)
    split, _ = _run(tmp_path, monkeypatch, "split", template)
    _same(split, inline)
    # 40 transcripts, 1 trajectory, the unreferenced file, the hard-linked trajectory (its link
    # refused: at 0.99 in the parser's part), the legacy store's move published alone afterwards
    assert sent == [int(43 * share)]
    assert len(inline["manifest"]["completedMoves"]) == 42
    archive = tmp_path / "split" / "state" / ARCHIVE
    modes = {os.lstat(p).st_mode & 0o777 for p in archive.iterdir() if p.read_bytes() != b"taken\n"}
    assert modes == {0o600}


@pytest.mark.parametrize("kill", ["before", "during"])
def test_a_parser_that_dies_in_its_part_is_settled_and_published_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None, kill: str
) -> None:
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer, "PARSER_MOVES_MIN", 4)
    template = _state(tmp_path / "template", sessions=40)
    inline, _ = _run(tmp_path, monkeypatch, "inline", template)
    sent = _sent(monkeypatch, kill)
    split, _ = _run(tmp_path, monkeypatch, "split", template)
    assert sent == [21]
    _same(split, inline)  # every move published once, in the batch's order, nothing left as a pair
    archive = tmp_path / "split" / "state" / ARCHIVE
    assert all(os.lstat(p).st_nlink == 1 for p in archive.iterdir())  # no name pair left


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("split-publish-template") / "state"
    generate_legacy_state(root, 60, 0.3, 43, "--cron-key-style", "mixed", "--orphans", "2")
    return root


def _killed_then_rerun(template: Path, state: Path, expect: int, **env: str) -> None:
    originals = _originals(template)
    shutil.copytree(template, state)
    killed = _doctor(state, "import", OPENCLAW_IMPORT_PARSER="split", **env)
    assert killed.returncode == expect, (env, killed.returncode, killed.stderr[-800:])
    _no_parser_left(state)
    _check_files_kept(state, originals)
    _check_manifests(state)
    rerun = _doctor(state, "import", OPENCLAW_IMPORT_PARSER="split")
    assert rerun.returncode == 0, (env, rerun.stdout[-2000:])
    _check_lines_once(state, originals)
    _check_files_kept(state, originals)
    _check_manifests(state)
    assert not (state / SESSIONS / "sessions.json").exists()
    assert all(os.lstat(p).st_nlink == 1 for p in state.rglob("*") if p.is_file())
    _no_parser_left(state)


# the parser's part of the 62 sessions' moves (60 and 2 orphans): half, 31 links then 31 unlinks —
# the first point, the middle of the links, the last link, the first unlink, the middle and the last
@pytest.mark.parametrize("k", [1, 16, 31, 32, 47, 62])
def test_a_kill_at_a_point_of_the_parsers_part_loses_nothing(template: Path, tmp_path: Path, k: int) -> None:
    _killed_then_rerun(template, tmp_path / "state", -signal.SIGKILL, **{MOVE_CRASH_ENV: str(k)})


@pytest.mark.parametrize("how", ["KILL", "INT"])
def test_a_kill_or_ctrl_c_in_this_process_part_waits_for_or_stops_the_parser(
    template: Path, tmp_path: Path, how: str
) -> None:
    probe = tmp_path / "probe" / "state"
    shutil.copytree(template, probe)
    count_file = tmp_path / "count"
    done = _doctor(probe, "import", OPENCLAW_IMPORT_PARSER="split", **{CRASH_COUNT_ENV: str(count_file)})
    assert done.returncode == 0, done.stderr[-800:]
    total = int(count_file.read_text())
    # after this process's part (31 links, 31 unlinks): moves-recorded, the legacy store's link,
    # unlink and moves-recorded, finished; 20 before the end: among this process's unlinks
    expect = -signal.SIGKILL if how == "KILL" else 130
    _killed_then_rerun(
        template,
        tmp_path / "state",
        expect,
        **{CRASH_ENV: str(total - 20), "OPENCLAW_MIGRATION_CRASH_SIGNAL": how},
    )
