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


def _events(monkeypatch: pytest.MonkeyPatch, kill_at: int = 0) -> list[str]:
    """The order of the parser's parts sent ("move") and of the batches' bookkeeping
    ("published"); `kill_at`: the parser is killed right after its `kill_at`-th part was sent."""
    from openclaw_cli.migration import importer

    events: list[str] = []
    move, published = importer.ParserProcess.move, importer.ImportRun._published

    def sent(self: Any, moves: list[Any], mode: Any) -> None:
        events.append("move")
        move(self, moves, mode)
        if events.count("move") == kill_at:
            self.proc.kill()

    def booked(self: Any, tr: Any, batch: list[Any], result: Any) -> None:
        events.append("published")
        published(self, tr, batch, result)

    monkeypatch.setattr(importer.ParserProcess, "move", sent)
    monkeypatch.setattr(importer.ImportRun, "_published", booked)
    return events


@pytest.mark.parametrize("kill_at", [0, 1, 2])
def test_the_parsers_next_part_is_sent_before_this_batchs_bookkeeping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None, kill_at: int
) -> None:
    """Several batches: the parser is sent its part of batch k+1 before this process waits for its
    part of batch k and records the batch, so it never idles between two parts; the outcome is the
    one-process import's — also with the parser killed after its first or second part was sent
    (two parts then in flight: each settled here, nothing left as a name pair)."""
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer, "MAX_PUBLISH_BATCH", 10)  # 43 moves: 10, 10, 10, 10, 3
    monkeypatch.setattr(importer, "PARSER_MOVES_MIN", 4)  # the last batch's part (1) is not sent
    template = _state(tmp_path / "template", sessions=40)
    inline, _ = _run(tmp_path, monkeypatch, "inline", template)
    events = _events(monkeypatch, kill_at)
    split, _ = _run(tmp_path, monkeypatch, "split", template)
    _same(split, inline)
    archive = tmp_path / "split" / "state" / ARCHIVE
    assert all(os.lstat(p).st_nlink == 1 for p in archive.iterdir())
    if kill_at == 0:  # the last batch's part (1 move) is not sent; the legacy store is kept here
        want = ["move", "move", "published", "move", "published", "move", "published", "published"]
        assert events == [*want, "published"], events
    else:  # no part is sent once the parser is found failed: its parts and the rest published here
        # (one more part may go out before: the killed parser's earlier answer may still be whole)
        assert kill_at <= events.count("move") <= kill_at + 1, events
        assert events[:2] == ["move", "move"], events
    _no_parser_left(tmp_path / "split" / "state")


def test_ctrl_c_in_this_process_half_waits_for_the_parts_sent(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at a point of this process's half of the third batch: the parser's part sent is
    waited for (no parser left, nothing moving), and a re-run settles this process's name pairs and
    archives everything once, every line stored once."""
    from openclaw_cli.errors import Interrupted
    from openclaw_cli.interrupts import InterruptRequested
    from openclaw_cli.migration import importer
    from openclaw_cli.migration.context import MigrationContext
    from tests.test_migration_helpers import doctor

    monkeypatch.setattr(importer, "MAX_PUBLISH_BATCH", 10)  # 62 moves: 6 batches of 10, then 2
    monkeypatch.setattr(importer, "PARSER_MOVES_MIN", 4)
    originals = _originals(template)
    state = tmp_path / "state"
    shutil.copytree(template, state)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", "split")
    checkpoint = MigrationContext.checkpoint
    seen = [0]

    def interrupted(self: Any, label: str) -> None:
        if label == "unlinked":
            seen[0] += 1
            if seen[0] == 13:  # this process's half is 5 moves a batch: the third batch's third unlink
                raise InterruptRequested(signal.SIGINT)
        checkpoint(self, label)

    monkeypatch.setattr(MigrationContext, "checkpoint", interrupted)
    with pytest.raises(Interrupted):
        doctor("import")
    _no_parser_left(state)  # this process's half left name pairs (settled by the re-run), nothing moves
    _check_files_kept(state, originals)
    monkeypatch.setattr(MigrationContext, "checkpoint", checkpoint)
    again = doctor("import")
    assert again.exit_code == 0, again.to_json()
    _check_lines_once(state, originals)
    _check_files_kept(state, originals)
    _check_manifests(state)
    assert not (state / SESSIONS / "sessions.json").exists()
    assert all(os.lstat(p).st_nlink == 1 for p in state.rglob("*") if p.is_file())
