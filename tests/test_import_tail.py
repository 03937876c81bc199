"""The import's tail after the bulk (issue 30): a private build's verification scan runs in the
parser process while the importing process plans the archive beside it — a plan held in no
manifest and used only when every state verified — and the planned moves are made again from
their states for publication instead of read back from the MoveLog. Each test compares with the
path without a parser (inline), which is the reference."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.publish import archive_name
from tests.test_migration_helpers import doctor

STAMP = 1_790_000_000_000
SESSIONS = Path("agents") / "main" / "sessions"
ARCHIVE = Path("agents") / "main" / "session-sqlite-import-archive"
DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"


def _state(root: Path, sessions: int = 8) -> Path:
    """Sessions with a few lines each, one with a trajectory, one with a trajectory `_run` links
    a second name to (its move fails: an issue of the plan), an unreferenced transcript, and an archive name
    already taken (the first session's transcript gets the next name: counter 1)."""
    state = root / "state"
    folder = state / SESSIONS
    folder.mkdir(parents=True)
    index: dict[str, Any] = {}
    for n in range(sessions):
        sid = f"5e55{n:04d}-0000-4000-8000-000000000000"
        index[f"agent:main:k{n}"] = {
            "sessionId": sid,
            "sessionFile": f"{sid}.jsonl",
            "updatedAt": 1000 + n,
            "chatType": "direct",
        }
        lines = [
            f'{{"type":"message","id":"m{n}-{i}","timestamp":{1000 + i},"n":"{"x" * i}"}}'
            for i in range(n + 2)
        ]
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    first = f"5e55{0:04d}-0000-4000-8000-000000000000"
    second = f"5e55{1:04d}-0000-4000-8000-000000000000"
    (folder / f"{first}.trajectory.jsonl").write_text('{"type":"trajectory","n":1}\n')
    (folder / f"{second}.trajectory.jsonl").write_text('{"type":"trajectory","n":2}\n')  # linked by `_run`
    (folder / "unreferenced.jsonl").write_text('{"type":"event","id":"u"}\n')
    (folder / "sessions.json").write_text(json.dumps(index, indent=2))
    (state / ARCHIVE).mkdir(parents=True, mode=0o700)
    (state / ARCHIVE / archive_name("agent:main:k0", f"{first}.jsonl", STAMP)).write_text("taken\n")
    return state


def _outcome(report: Any, state: Path) -> dict[str, Any]:
    """The report, the manifest's target and the files, with the state dir and run id masked."""
    text = re.sub(r"inode=\d+", "inode=*", json.dumps(report.to_json()))  # each import its own copy
    data = json.loads(text.replace(str(state), "<state>"))
    data.pop("migrationRun", None)
    for target in data.get("targets", []):
        target.pop("compact", None)
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    target = json.loads(
        re.sub(r"inode=\d+", "inode=*", json.dumps(manifest["targets"][0])).replace(str(state), "<state>")
    )
    for key in ("plannedMoves", "completedMoves"):
        for move in target[key]:
            del move["artifact"]["identity"]["ino"]  # each import reads its own copy
    return {
        "report": data,
        "manifest": {
            k: target[k] for k in ("plannedMoves", "completedMoves", "issues", "validationBeforeArchive")
        },
        "sessions": sorted(os.listdir(state / SESSIONS)),
        "archive": sorted(os.listdir(state / ARCHIVE)),
    }


def _original(func: Any) -> Any:
    return getattr(func, "original", func)


def _wrapping(wrapper: Any, func: Any) -> Any:
    """`wrapper` of `func`; a later run wraps `func` again, not this wrapper (`_original`)."""
    wrapper.original = func
    return wrapper


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, template: Path, *, damage: str = "none"
) -> tuple[dict[str, Any], dict[str, int]]:
    """Import a copy of `template` with `OPENCLAW_IMPORT_PARSER=mode`; counts of where the work
    went: scans made in this process, moves made again / read back, plans made beside the scan."""
    from openclaw_cli.migration import importer, verify
    from openclaw_cli.store.sqlite.store import SqliteStore

    state = tmp_path / mode / "state"
    shutil.copytree(template, state, symlinks=True)
    second = "5e550001-0000-4000-8000-000000000000.trajectory.jsonl"
    os.link(state / SESSIONS / second, state.parent / "second-name")  # nlink 2: not archived
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
    counts = {"local_scans": 0, "remade": 0, "read_back": 0, "preplans": 0}
    scan = _original(verify._scan_prefix_digests)

    def local_scan(*args: Any, **kwargs: Any) -> None:
        counts["local_scans"] += 1
        scan(*args, **kwargs)

    monkeypatch.setattr(verify, "_scan_prefix_digests", _wrapping(local_scan, scan))
    moves, logged = _original(importer._LoggedMoves.moves), importer.ImportRun._logged_move

    def checked_moves(self: Any, start: int, end: int) -> list[Any]:
        made: list[Any] = moves(self, start, end)
        for i, move in zip(range(start, end), made, strict=True):
            back = logged(self.run, self.log, self.first + i, self.states[i])  # what the log holds
            assert (move.source, move.dest, move.expected, move.payload) == (
                back.source,
                back.dest,
                back.expected,
                back.payload,
            )
            counts["remade" if self.counters[i] >= 0 else "read_back"] += 1
        return made

    monkeypatch.setattr(importer._LoggedMoves, "moves", _wrapping(checked_moves, moves))
    preplan = _original(importer.ImportRun._preplan)

    def counted_preplan(self: Any, tr: Any) -> Any:
        counts["preplans"] += 1
        return preplan(self, tr)

    monkeypatch.setattr(importer.ImportRun, "_preplan", _wrapping(counted_preplan, preplan))
    if damage != "none":
        real_bulk = SqliteStore.bulk_import

        def lossy_bulk(self: Any, records: Any, **kwargs: Any) -> Any:
            result = real_bulk(self, records, **kwargs)
            with self.transaction() as conn:
                if damage == "altered":  # same count, one byte different
                    conn.execute(
                        "UPDATE transcript_events SET event_json = replace(event_json, 'm3-1', 'm3-X')"
                    )
                else:
                    conn.execute("DELETE FROM transcript_events WHERE seq = 1 AND event_json LIKE '%m4-1%'")
            return result

        monkeypatch.setattr(SqliteStore, "bulk_import", lossy_bulk)
    report = doctor("import")
    return _outcome(report, state), counts


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for part in ("sessions", "archive"):
        assert got[part] == want[part], part
    for key, value in want["report"]["targets"][0].items():
        assert got["report"]["targets"][0][key] == value, key
    assert got["report"] == want["report"]
    for key, moves in want["manifest"].items():
        assert len(got["manifest"][key]) == len(moves), key
        if isinstance(moves, list):
            for a, b in zip(got["manifest"][key], moves, strict=True):
                assert a == b, key
        else:
            assert got["manifest"][key] == moves, key


@pytest.fixture()
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MigrationContext, "now_ms", staticmethod(lambda: STAMP))


@pytest.mark.parametrize("full_scan", [True, False])
def test_the_scan_beside_the_plan_gives_the_inline_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None, full_scan: bool
) -> None:
    from openclaw_cli.migration import verify

    monkeypatch.setattr(verify, "FULL_SCAN_MIN_SESSIONS", 1 if full_scan else 10**9)  # sent to the parser
    template = _state(tmp_path / "template")
    inline, here = _run(tmp_path, monkeypatch, "inline", template)
    split, there = _run(tmp_path, monkeypatch, "split", template)
    _same(split, inline)
    assert here["local_scans"] == 1 and here["preplans"] == 0
    assert there["local_scans"] == 0 and there["preplans"] == 1  # scanned by the parser, planned beside
    codes = [i["code"] for i in inline["report"]["targets"][0]["issues"]]
    assert "transcript_archive_failed" in codes  # the hard-linked trajectory: reported, not moved
    assert inline["manifest"]["validationBeforeArchive"] == "passed"
    # every session's transcript move made again (the first with its name's counter 1); the
    # trajectory, the unreferenced file and the linked trajectory (planned as unreferenced, its
    # publication refused) read back from the log
    for counts in (here, there):
        assert counts["remade"] == 8 and counts["read_back"] == 3, counts
    names = inline["archive"]
    first = "5e550000-0000-4000-8000-000000000000.jsonl"
    assert archive_name("agent:main:k0", first, STAMP, 1) in names
    kinds = [m["kind"] for m in inline["manifest"]["plannedMoves"]]
    assert kinds.count("transcript") == 8 and kinds[-1] == "legacy-store" and len(kinds) == 12, kinds
    # the legacy index is kept: a transcript's trajectory could not be archived
    assert len(inline["manifest"]["completedMoves"]) == 10
    assert inline["sessions"] == ["5e550001-0000-4000-8000-000000000000.trajectory.jsonl", "sessions.json"]


@pytest.mark.parametrize("damage", ["altered", "dropped"])
@pytest.mark.parametrize("full_scan", [True, False])
def test_a_build_that_lost_a_line_fails_verification_beside_the_plan_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None, damage: str, full_scan: bool
) -> None:
    """The parser's scan finds what the local scan finds; the plan made beside it is dropped:
    nothing planned in the manifest, nothing archived, the legacy store in use."""
    from openclaw_cli.migration import verify

    monkeypatch.setattr(verify, "FULL_SCAN_MIN_SESSIONS", 1 if full_scan else 10**9)
    template = _state(tmp_path / "template")
    inline, here = _run(tmp_path, monkeypatch, "inline", template, damage=damage)
    split, there = _run(tmp_path, monkeypatch, "split", template, damage=damage)
    assert split == inline
    assert there["local_scans"] == 0 and there["preplans"] == 1
    expected = "sqlite_transcript_mismatch" if damage == "altered" else "sqlite_transcript_count_mismatch"
    assert expected in [i["code"] for i in split["report"]["targets"][0]["issues"]]
    assert split["manifest"]["validationBeforeArchive"] == "failed"
    assert split["manifest"]["plannedMoves"] == [] and split["manifest"]["completedMoves"] == []
    assert split["archive"] == sorted(os.listdir(template / ARCHIVE))  # nothing archived
    assert "sessions.json" in split["sessions"]
    assert not (tmp_path / "split" / "state" / DB).exists()  # the build was not published


def test_a_scan_that_fails_in_the_parser_is_made_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_clock: None
) -> None:
    from openclaw_cli.migration import importer

    beside = importer._scan_beside

    def elsewhere(parser: Any, states: Any, db: Path) -> Any:
        return beside(parser, states, db.with_name("no-such-database"))  # the parser's scan fails

    monkeypatch.setattr(importer, "_scan_beside", elsewhere)
    template = _state(tmp_path / "template")
    inline, _ = _run(tmp_path, monkeypatch, "inline", template)
    split, there = _run(tmp_path, monkeypatch, "split", template)
    assert split == inline
    assert there["local_scans"] == 1 and there["preplans"] == 1  # verified here after all


def test_the_scan_answers_only_what_is_not_a_clean_match(tmp_path: Path) -> None:
    """`scan_wanted` returns the settlements `verify_records` keeps and the sessions it never
    settled; every other session of `wanted` matched."""
    import hashlib
    import sqlite3

    from openclaw_cli.migration import verify

    db = tmp_path / "b.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT)")
    conn.execute("CREATE TABLE session_windows (session_id TEXT)")
    rows = [(sid, n, f'{{"s":"{sid}","n":{n}}}') for sid in ("a", "b", "c", "d") for n in range(3)]
    conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?)", rows)
    conn.executemany("INSERT INTO session_windows VALUES (?)", [(s,) for s in "abcd"])
    conn.commit()
    conn.close()

    def digest(sid: str, n: int) -> str:
        return hashlib.sha256("".join(f'{{"s":"{sid}","n":{i}}}\n' for i in range(n)).encode()).hexdigest()

    wanted: dict[str, tuple[int, str | None]] = {
        "a": (3, digest("a", 3)),  # a clean match: not answered
        "b": (2, "0" * 64),  # a different digest
        "c": (3, None),  # shared by two states: every settlement answered
        "d": (4, digest("d", 4)),  # short of a line
        "e": (1, digest("e", 1)),  # not stored at all: never settled
    }
    answered = [("b", 3, digest("b", 2)), ("c", 3, digest("c", 3)), ("d", 3, None)]
    calls, unsettled = verify.scan_wanted(str(db), wanted, 1)  # the full scan never meets "e"
    assert sorted(calls) == answered and unsettled == ["e"]
    calls, unsettled = verify.scan_wanted(str(db), wanted, 10**9)  # point queries find it empty
    assert sorted(calls) == [*answered, ("e", 0, None)] and unsettled == []
