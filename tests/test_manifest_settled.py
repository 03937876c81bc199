"""A finished import's run manifest is not parsed again by later imports (`reconcile_interrupted`
skips a run whose moves all completed: `manifest.moves_all_completed`, read in bounded memory), and
every run that may still hold a half-published move is loaded and reconciled as before."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from openclaw_cli.migration import manifest as mf
from tests.test_migration_helpers import doctor, make_f

PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def _move(n: int) -> dict:
    return mf.new_move(
        source=f"agents/main/sessions/s-{n}.jsonl",
        archive=f"agents/main/x/s-{n}.x",
        kind="transcript",
        session_key=f"agent:main:k{n}",
        identity=mf.Identity(1, n, 3, 4, "a" * 64),
        classification="imported",
        reason="verified-import-original",
        dependencies=[f"d{n}", f"e{n}"] if n % 2 else None,
    )


def _doc(planned: list[list[int]], completed: list[list[int]], **top: object) -> dict:
    data = mf.new_manifest("session-sqlite-1-abc", 1_796_000_000_000)
    for p, c in zip(planned, completed, strict=True):
        target = mf.new_target("main", "agents/main/sessions/sessions.json", "agents/main/agent/x.sqlite")
        target["plannedMoves"] = [_move(n) for n in p]
        target["completedMoves"] = [_move(n) for n in c]
        data["targets"].append(target)
    data.update(top)
    return data


def _answer(tmp_path: Path, raw: bytes) -> bool:
    path = tmp_path / "session-sqlite-1-abc.json"
    path.write_bytes(raw)
    return mf.moves_all_completed(path)


@pytest.mark.parametrize("chunk", [mf._SETTLED_CHUNK, 7, 8, 9, 64, 1000])
@pytest.mark.parametrize(
    "planned,completed,expected",
    [
        ([], [], True),  # no target
        ([[]], [[]], True),  # a target with nothing to move
        ([[0, 1, 2]], [[0, 1, 2]], True),
        ([[0, 1, 2], [3, 4]], [[0, 1, 2], [3, 4]], True),  # two targets
        ([[0, 1, 2]], [[0, 1]], False),  # a move not completed: it may be half-published
        ([[0, 1, 2]], [[]], False),
        ([[0, 1, 2]], [[0, 2, 1]], False),  # the same moves in another order: loaded (safe)
        ([[0, 1], [3, 4]], [[0, 1], [3]], False),  # the second target's last move
    ],
)
def test_settled_runs_are_recognised_whatever_the_chunking(
    tmp_path, monkeypatch, chunk, planned, completed, expected
):
    monkeypatch.setattr(mf, "_SETTLED_CHUNK", chunk)
    raw = orjson.dumps(_doc(planned, completed), option=PRETTY)
    assert _answer(tmp_path, raw) is expected


def test_anything_but_the_writers_layout_is_loaded(tmp_path):
    done = _doc([[0, 1]], [[0, 1]])
    raw = orjson.dumps(done, option=PRETTY)
    assert _answer(tmp_path, raw)
    assert not _answer(tmp_path, orjson.dumps(done))  # compact JSON
    assert not _answer(tmp_path, raw[:-1])  # no final newline
    assert not _answer(tmp_path, raw[: len(raw) // 2])  # cut short
    assert not _answer(tmp_path, orjson.dumps({**done, "restore": {"state": "started"}}, option=PRETTY))
    assert not _answer(tmp_path, raw.replace(b"\n    {\n", b'\n    {\n      "x": 1,\n    },\n    {\n', 1))
    assert not _answer(tmp_path, raw.replace(b'      "plannedMoves": [', b'      "plannedmoves": [', 1))
    assert not _answer(tmp_path, b"")
    os.symlink(tmp_path / "session-sqlite-1-abc.json", tmp_path / "link.json")
    assert not mf.moves_all_completed(tmp_path / "link.json")  # never through a link
    assert not mf.moves_all_completed(tmp_path / "missing.json")


def test_a_finished_import_is_not_parsed_by_the_next_and_an_interrupted_one_is(state_dir, monkeypatch):
    """After an import, its manifest is recognised as settled and a second import loads no
    manifest; a run with a move planned but not completed is loaded and reconciled: its
    half-published pair (both names on one inode) is settled as before."""
    from openclaw_cli.migration import importer

    make_f(state_dir)
    first = doctor("import")
    assert first.exit_code == 0
    path = Path(first.migration_run.manifest_path)
    assert mf.moves_all_completed(path)
    loaded: list[Path] = []
    real_load = mf.load_manifest
    monkeypatch.setattr(mf, "load_manifest", lambda p, s: loaded.append(p) or real_load(p, s))
    assert doctor("import").exit_code == 0
    assert path not in loaded

    # the same run as if killed between the link and the unlink of its first move
    data = orjson.loads(path.read_bytes())
    target = data["targets"][0]
    move = next(m for m in target["plannedMoves"] if m["kind"] == "transcript")
    target["completedMoves"] = [m for m in target["completedMoves"] if m != move]
    path.write_bytes(orjson.dumps(data, option=PRETTY))
    source, archive = state_dir / move["sourcePath"], state_dir / move["archivePath"]
    os.link(archive, source)
    assert not mf.moves_all_completed(path)
    loaded.clear()
    assert importer.reconcile_interrupted(importer_context(state_dir)) == 1
    assert path in loaded
    assert (
        archive.exists() != source.exists() and os.stat(archive if archive.exists() else source).st_nlink == 1
    )


def importer_context(state_dir: Path):
    from openclaw_cli.migration.context import MigrationContext, Options
    from openclaw_cli.paths import resolve_paths

    paths = resolve_paths()
    assert paths.state_dir == state_dir.resolve()
    return MigrationContext(paths, None, Options(mode="import", all_agents=True))
