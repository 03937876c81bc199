"""The import's serial head (issue 30, helper import43a): the first target's parser process is
started before the space check and reads `sessions.json` while the importing process lists the
sessions directory and builds the records from each part as it comes. What it builds is exactly
what the in-process read builds; anything else than a plain read there (a document the member-wise
reader does not take, a changed or missing file, a dead parser) is read in-process as before."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.hardening_support import SESSIONS, make_state


def _store(state: Path) -> Path:
    return state / SESSIONS / "sessions.json"


def _varied_index(state: Path) -> None:
    """Entries that take every branch of `build_records`: no sessionId, a bare cron key, a key that
    cannot name a session, sessionFile spellings, a missing transcript, a non-object entry."""
    path = _store(state)
    index = json.loads(path.read_text())
    keys = list(index)
    index[keys[0]].pop("sessionId")
    index["cron:nightly"] = index.pop(keys[1])
    index["agent:main:bad\u0000key"] = index.pop(keys[2])
    index[keys[3]]["sessionFile"] = os.path.basename(index[keys[3]].get("sessionFile") or "x.jsonl")
    index[keys[4]]["sessionFile"] = "sub/dir/elsewhere.jsonl"
    index[keys[5]]["sessionId"] = "0badc0de-0000-4000-8000-000000000000"
    index[keys[5]].pop("sessionFile", None)
    index["agent:main:not-an-object"] = [1, 2]
    path.write_text(json.dumps(index, indent=2))


def _records(records: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (
            r.key,
            r.source_key,
            r.session_id,
            r.transcript_text,
            r.expected_text,
            r.sqlite_marker,
            r.problem,
            r.entry_text,
            r.entry,
        )
        for r in records
    ]


def _in_process(state: Path) -> tuple[Any, ...]:
    from openclaw_cli.migration.legacy_reader import build_records, read_index

    index = read_index(_store(state))
    records, issues = build_records(index, state / SESSIONS, agent_id="main")
    out = (index.identity, index.fingerprint, index.issues, index.readable, _records(records), issues)
    index.close()
    return out


def _through_parser(state: Path, parser: Any = None) -> tuple[tuple[Any, ...], Any]:
    """`ImportRun._read_records` with a parser asked to read the index (`_early_index`)."""
    from types import SimpleNamespace

    from openclaw_cli.migration import importer
    from openclaw_cli.migration.legacy_reader import DirListing

    if parser is None:
        parser = importer.ParserProcess("quarantine", importer.BATCH_ROWS, None, False)
        parser.read_index(str(_store(state)))
    target = SimpleNamespace(store_path=_store(state), sessions_dir=state / SESSIONS, agent_id="main")
    run = importer.ImportRun.__new__(importer.ImportRun)
    run._parser_share = 0.75
    tr: Any = SimpleNamespace(target=target)
    try:
        index, records, issues, left = run._read_records(tr, parser, True, DirListing(state / SESSIONS), None)
        out = (index.identity, index.fingerprint, index.issues, index.readable, _records(records), issues)
        index.close()
    finally:
        parser.close()
    return out, left


def test_the_parser_reads_the_index_into_the_records_the_in_process_read_builds(tmp_path: Path) -> None:
    state = make_state(tmp_path, sessions=40, mb=0.1, seed=41)
    _varied_index(state)
    want = _in_process(state)
    assert want[3] and want[5]  # readable, with issues (the invalid entries)
    got, left = _through_parser(state)
    assert got == want
    assert left is not None  # a plain read: the parser goes on to the bulk


@pytest.mark.parametrize(
    "case",
    ["duplicate-key", "exact-number", "not-an-object", "symlink", "missing", "unreadable-json"],
)
def test_what_the_parser_does_not_read_plainly_is_read_in_process_as_before(
    tmp_path: Path, case: str
) -> None:
    state = make_state(tmp_path, sessions=6, mb=0.02, seed=42)
    path = _store(state)
    text = path.read_text()
    if case == "duplicate-key":
        index = json.loads(text)
        key = next(iter(index))
        path.write_text(text.rstrip().rstrip("}") + f", {json.dumps(key)}: {json.dumps(index[key])}\n}}\n")
    elif case == "exact-number":  # D22: a number the pre-flight keeps as written
        index = json.loads(text)
        key = next(iter(index))
        path.write_text(text.replace('"updatedAt": ', '"updatedAt": 12345678901234567890123, "x": ', 1))
        assert json.loads(path.read_text())[key]
    elif case == "not-an-object":
        path.write_text("[1, 2]\n")
    elif case == "symlink":
        real = path.with_name("real.json")
        path.rename(real)
        path.symlink_to(real)
    elif case == "missing":
        path.unlink()
    else:
        path.write_text(text[: len(text) // 2])
    want = _in_process(state)
    got, left = _through_parser(state)
    assert got == want
    assert left is not None  # the parser answered: it is still the bulk's


def test_a_parser_that_dies_while_it_reads_the_index_leaves_the_read_in_process(tmp_path: Path) -> None:
    from openclaw_cli.migration import importer

    state = make_state(tmp_path, sessions=30, mb=0.05, seed=43)
    want = _in_process(state)
    parser = importer.ParserProcess("quarantine", importer.BATCH_ROWS, None, False)
    parser.proc.kill()
    parser.proc.wait()
    try:
        parser.read_index(str(_store(state)))
    except RuntimeError:
        pass  # the pipe may already say so
    got, left = _through_parser(state, parser)
    assert got == want
    assert left is None  # not used for the bulk either


def test_index_parts_are_the_in_process_members_in_parts(tmp_path: Path) -> None:
    """`index_parts` hands over exactly what `read_index` keeps per member, in parts, and the
    identity of the bytes it read."""
    from array import array

    from openclaw_cli.migration.index_stream import StreamedEntries, index_parts
    from openclaw_cli.migration.legacy_reader import read_index

    state = make_state(tmp_path, sessions=25, mb=0.02, seed=44)
    index = read_index(_store(state))
    assert isinstance(index.entries, StreamedEntries)
    parts = list(index_parts(str(_store(state)), part=7))
    assert [p[0] for p in parts] == ["part"] * 4 + ["end"]
    keys = [k for p in parts[:-1] for k in p[1]]
    assert keys == index.entries.keys_list
    for n, name in ((2, "offsets"), (3, "lengths")):
        got = array("Q")
        for p in parts[:-1]:
            got.frombytes(p[n])
        assert got == getattr(index.entries, name)
    facts = [f for p in parts[:-1] for f in p[5]]
    assert facts == index.entries.take_facts()
    ident = index.identity
    assert ident is not None
    assert parts[-1][1] == (ident.dev, ident.ino, ident.mtime_ns, ident.size, ident.sha256)
    assert parts[-1][2] == index.fingerprint
    index.close()


def test_the_import_with_the_early_parser_stores_what_the_in_process_import_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole import (in-process CLI) with the parser forced: the index read there, the private
    build made while it reads (its first part not here yet when first wanted), the report and the
    stored rows those of the inline import."""
    import shutil

    from openclaw_cli.migration import importer
    from tests.hardening_support import DB, db_lines
    from tests.test_migration_helpers import doctor as doctor_in_process

    template = make_state(tmp_path / "template", sessions=40, mb=0.1, seed=45)
    _varied_index(template)
    asked: list[str] = []
    read_index = importer.ParserProcess.read_index

    def counted(self: Any, path: str) -> None:
        asked.append(path)
        read_index(self, path)

    monkeypatch.setattr(importer.ParserProcess, "read_index", counted)
    _build_made_in_the_wait(monkeypatch)
    results = {}
    for mode in ("inline", "split"):
        state = tmp_path / mode
        shutil.copytree(template, state, symlinks=True)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
        report = doctor_in_process("import").to_json()
        target = report["targets"][0]
        results[mode] = (
            {k: v for k, v in target.items() if k not in ("compact",)},
            db_lines(state / DB),
        )
    assert asked == [str(tmp_path / "split" / SESSIONS / "sessions.json")]
    assert _made == [("split", True)]  # (inline: made after the records, as always)
    inline, split = results["inline"], results["split"]

    def shown(doc: Any, mode: str) -> str:  # the run's names aside (paths, the archive's stamp)
        text = json.dumps(doc, sort_keys=True).replace(f"/{mode}/", "/x/")
        return re.sub(r"imported-\d+", "imported-N", text)

    assert shown(inline[0], "inline") == shown(split[0], "split")
    assert inline[0]["legacyEntries"] > 40 and inline[0]["issues"]
    assert inline[1] == split[1]


_made: list[tuple[str, bool]] = []


def _build_made_in_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser's first part is not here when first wanted (as on *many*: the parser reads
    ~0.2 s): the build is made then. `_made` records each build made by a parser's import: (the
    state's name, whether the index's records were still being read)."""
    from openclaw_cli.migration import importer

    _made.clear()
    ready, open_store = importer.ParserProcess.ready, importer.ImportRun._open_store
    first: list[bool] = []

    def not_yet(self: Any) -> bool:
        if not first:
            first.append(True)
            return False
        return ready(self)

    def recorded(self: Any, tr: Any) -> Any:
        if self._early is None and os.environ.get("OPENCLAW_IMPORT_PARSER") != "inline":
            _made.append((Path(os.environ["OPENCLAW_STATE_DIR"]).name, tr.index is None))
        return open_store(self, tr)

    monkeypatch.setattr(importer.ParserProcess, "ready", not_yet)
    monkeypatch.setattr(importer.ImportRun, "_open_store", recorded)


def test_a_build_made_while_the_parser_read_an_unreadable_index_is_discarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build made while the parser reads goes when the index turns out unreadable (the
    parser's fallback, then the in-process read refuses it): nothing of it is left, and the report
    is the inline import's."""
    import shutil

    from tests.hardening_support import DB
    from tests.test_migration_helpers import doctor as doctor_in_process

    template = make_state(tmp_path / "template", sessions=12, mb=0.05, seed=47)
    index = _store(template).read_text()
    _store(template).write_text(index[: len(index) // 2])  # invalid JSON, cut in an entry
    _build_made_in_the_wait(monkeypatch)
    results = {}
    for mode in ("inline", "split"):
        state = tmp_path / mode
        shutil.copytree(template, state, symlinks=True)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
        report = doctor_in_process("import")
        db_dir = (state / DB).parent
        results[mode] = (
            report.exit_code,
            json.dumps(report.to_json()["targets"], sort_keys=True).replace(f"/{mode}/", "/x/"),
            sorted(os.listdir(db_dir)) if db_dir.exists() else None,
        )
    assert _made == [("split", True)]
    assert results["inline"] == results["split"]
    assert "store_unreadable" in results["split"][1] and results["split"][2] is None


def test_a_refused_space_check_leaves_no_parser_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early parser is started before the space check: a refusal stops it, and nothing is
    written anywhere (it writes nothing before its setup)."""
    from openclaw_cli.errors import NoSpaceError
    from openclaw_cli.migration import importer
    from tests.hardening_support import tree_digest
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = make_state(tmp_path, sessions=12, mb=0.05, seed=46)
    before = tree_digest(tmp_path)
    started: list[int] = []

    class Counted(importer.ParserProcess):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            started.append(self.proc.pid)

    def refuse(*_args: Any) -> None:
        raise NoSpaceError("not enough space (need 2, have 1)")

    monkeypatch.setattr(importer, "ParserProcess", Counted)
    monkeypatch.setattr(importer, "check_import_space", refuse)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", "split")
    with pytest.raises(NoSpaceError):
        doctor_in_process("import")
    assert len(started) == 1 and not Path(f"/proc/{started[0]}").exists()
    assert tree_digest(tmp_path) == before
