"""The import's parser process (issue 30, `migration/parser_process.py`): a fresh store's import read
and parsed in a second process stores exactly what the in-process import stores, and keeps the
import's crash safety: a kill or Ctrl-C leaves no parser behind and loses or duplicates nothing,
and a parser that dies fails the import typed and rolled back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.hardening_support import (
    DB,
    SESSIONS,
    db_lines,
    doctor,
    file_lines,
    leftovers,
    make_state,
    transcripts,
    tree_digest,
)

PARSER = "openclaw_cli.migration.parser_process"


def _odd_state(root: Path) -> Path:
    """A generated state plus what each branch of the read takes: malformed, blank, reserved-type
    and non-object lines, a missing final newline, two keys naming one transcript, a missing
    transcript, a transcript over the parser's file limit (set small by the test)."""
    state = make_state(root, sessions=20, mb=0.2, seed=31)
    sessions = state / SESSIONS
    index = json.loads((sessions / "sessions.json").read_text())
    files = sorted(p for p in transcripts(state) if p.parent == sessions)
    odd = [
        b'{"type":"message","id":"a1","timestamp":"2026-11-01T10:00:00.000Z","message":{"role":"user","content":"x"}}\n'
        b"\n   \n"
        b'{"type":"message","id":"a2",BROKEN\n'
        b'{"type":"openclaw-cli.quarantined-line","raw":"x"}\n'
        b"[1,2]\n"
        # identities (the rows files hold them in the event rows): a repeated id (the first one
        # kept), a blank id and a non-string one (none), a parentId not a string (NULL)
        b'{"type":"custom","id":"a1","parentId":"p"}\n'
        b'{"type":"custom","id":"  ","parentId":"p"}\n'
        b'{"type":"custom","id":5}\n'
        b'{"type":"custom","id":"a4","parentId":7}\n'
        b'{"type":"custom","id":"a3","timestamp":1790000000000}',  # no final newline
        b"\xff\xfe not utf-8\n",
    ]
    with files[0].open("ab") as fh:
        fh.write(b"".join(odd))
    with files[1].open("ab") as fh:  # the parser's file limit is set under this one's size
        fh.write(b'{"type":"custom","id":"big","data":"' + b"y" * 300_000 + b'"}\n')
    keys = list(index)
    index[keys[2]]["sessionId"] = index[keys[3]]["sessionId"]  # two keys, one transcript (T-20)
    index[keys[2]].pop("sessionFile", None)
    index[keys[4]]["sessionId"] = "0badc0de-0000-4000-8000-000000000000"  # its transcript is missing
    index[keys[4]].pop("sessionFile", None)
    # the entries' rows, computed by the parser too: every projection, and a bare key merged into
    # its canonical one (the other row's transcript is imported without an entry)
    index[keys[5]].update(
        label="naïve ✓",
        displayName="D",
        status="done",
        spawnedBy="agent:main:p",
        pinnedAt=1.5,
        archivedAt=2,
        lastReadAt=3,
        lastInteractionAt=4,
        lastActivityAt=5,
        createdAt=6,
        sessionStartedAt=7,
        chatType="group",
        origin={"provider": "telegram", "chatType": "direct"},
        modelProvider="p",
        model="m",
    )
    index["cron:nightly"] = index.pop(keys[7])
    index["agent:main:cron:nightly"] = index.pop(keys[8])
    (sessions / "sessions.json").write_text(json.dumps(index, indent=2))
    return state


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in (
                ("session_nodes", "session_key"),
                ("session_windows", "session_id"),
                ("transcript_events", "session_id, seq"),
                ("transcript_event_identities", "session_id, event_id"),
            )
        }
    finally:
        conn.close()


def _report(report: Any, state: Path) -> dict[str, Any]:
    data = json.loads(json.dumps(report.to_json()).replace(str(state), "<state>"))
    data.pop("migrationRun", None)
    for target in data.get("targets", []):
        for key in ("archivedTranscriptFiles", "archivedLegacyStoreFiles", "compact"):
            target.pop(key, None)
    return data


def test_parser_process_stores_what_the_in_process_import_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.migration import parser_process
    from tests.test_migration_helpers import doctor as doctor_in_process

    template = _odd_state(tmp_path / "template")
    monkeypatch.setattr(parser_process, "PARSER_FILE_LIMIT", 200_000)  # sent to the parser at its start
    monkeypatch.setattr(parser_process, "ROWS_FILE_BYTES", 30_000)  # so is this: several rows files
    from openclaw_cli.migration.index_stream import StreamedEntries

    parsed_here: Counter[str] = Counter()  # entries the importing process parsed itself
    entry_at = StreamedEntries.entry_at

    def counted(self: StreamedEntries, n: int) -> Any:
        parsed_here[os.environ["OPENCLAW_IMPORT_PARSER"]] += 1
        return entry_at(self, n)

    monkeypatch.setattr(StreamedEntries, "entry_at", counted)
    from openclaw_cli.migration.importer import ImportRun

    sent: Counter[str] = Counter()  # records sent to the parser
    submit = ImportRun._submit

    def counted_submit(parser: Any, state: Any, rowid: int | None = None) -> None:
        sent[os.environ["OPENCLAW_IMPORT_PARSER"]] += 1
        submit(parser, state, rowid)

    monkeypatch.setattr(ImportRun, "_submit", staticmethod(counted_submit))
    from openclaw_cli.store.sqlite import store as sqlite_store

    # per-record line importers: a fresh store's records need none, rows prepared ahead or read
    # here (issue 30: the in-process records' lines go straight into the batch too)
    made: Counter[str] = Counter()
    session_import = sqlite_store._SessionImport

    class CountedImport(session_import):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made[os.environ["OPENCLAW_IMPORT_PARSER"]] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sqlite_store, "_SessionImport", CountedImport)
    remembered: Counter[str] = Counter()  # keys and ids the bulk import kept to find repeats
    bound: Counter[str] = Counter()  # entry and window rows the importing process bound itself
    bulk_state = sqlite_store._BulkState

    class KeptBulkState(bulk_state):  # type: ignore[misc, valid-type]
        def commit(self) -> None:
            super().commit()
            mode = os.environ["OPENCLAW_IMPORT_PARSER"]
            remembered[mode] = max(remembered[mode], len(self.keys) + len(self.sids))

        def write_gathered(self) -> None:
            mode = os.environ["OPENCLAW_IMPORT_PARSER"]
            bound[mode] += len(self.nodes) + len(self.nodes_at) + len(self.windows) + len(self.windows_at)
            super().write_gathered()

    copied: Counter[str] = Counter()  # rows files of the parser copied into the build
    entry_rows_copied: Counter[str] = Counter()  # entry and window rows that came in them

    class CountedCopies(KeptBulkState):
        def copy_rows(self, path: str) -> None:
            assert os.path.exists(path)
            with sqlite3.connect(path) as rows_file:
                entry_rows_copied[os.environ["OPENCLAW_IMPORT_PARSER"]] += sum(
                    rows_file.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("nd", "wn")
                )
            rows_file.close()
            super().copy_rows(path)
            self.join_copy()  # copied in a thread of its own (the records go on meanwhile)
            assert not os.path.exists(path)  # removed once copied
            copied[os.environ["OPENCLAW_IMPORT_PARSER"]] += 1

    monkeypatch.setattr(sqlite_store, "_BulkState", CountedCopies)
    results = {}
    # the exact shares below: no read ahead of its turn (`test_a_lagging_parsers_records_are_read_here`)
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_STEAL", "0")
    # split: the parser reads half the records it can take, the importing process every other one
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_SHARE", "0.5")
    for mode in ("inline", "process", "split"):
        state = tmp_path / mode / "state"
        shutil.copytree(template.parent, state.parent)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
        if mode == "process":
            monkeypatch.delenv("OPENCLAW_IMPORT_PARSER_SHARE")  # all of them (the default share)
        report = doctor_in_process("import")
        results[mode] = (_report(report, state), _tables(state / DB), sorted(os.listdir(state / SESSIONS)))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_SHARE", "0.5")
    inline = results["inline"]
    for mode in ("process", "split"):
        assert results[mode][0] == inline[0], mode
        assert results[mode][1] == inline[1], mode
        assert results[mode][2] == inline[2], mode
    # the parser computed the entries' rows of the records it read (the rest: the merged bare key's
    # pair, the missing and the oversized transcripts); split: about half of them
    assert parsed_here["inline"] >= 20 and parsed_here["process"] <= 6, parsed_here
    # split at 1/2: the parser is sent the second of every two records it can take (19 here: all
    # but the two keys of one transcript), the importing process reads the others and parses their
    # entries — 15 records with an entry it can send, 7 or 8 of them here by their place in the
    # session-id order the records are fed in
    assert sent == {"process": 19, "split": 9}, sent
    taken_here = parsed_here["inline"] - parsed_here["process"]
    assert taken_here == 15 and 7 <= parsed_here["split"] - parsed_here["process"] <= 8, parsed_here
    assert made["inline"] <= 6 and made["process"] <= 6 and made["split"] <= 6, made
    # the parser's records are not remembered (100,000 keys and ids: 8 MiB of the peak)
    assert remembered["inline"] >= 40 and remembered["process"] <= 12, remembered
    assert 20 <= remembered["split"] <= 28, remembered
    # the parser's rows came in its rows files (several, the last one at the end), not row by row
    assert copied["inline"] == 0 and copied["process"] >= 3 and copied["split"] >= 2, copied
    # ... with the entries' and windows' rows of the parser's records, at their rowids: the
    # importing process bound those rows only for the records it read itself (issue 30)
    assert bound["inline"] >= 40 and bound["process"] <= 12 and 14 <= bound["split"] <= 28, bound
    assert entry_rows_copied["process"] >= 28 and entry_rows_copied["split"] >= 14, entry_rows_copied
    assert bound["process"] + entry_rows_copied["process"] == bound["inline"], (bound, entry_rows_copied)
    assert bound["split"] + entry_rows_copied["split"] == bound["inline"], (bound, entry_rows_copied)
    assert leftovers(tmp_path / "process" / "state") == []
    assert leftovers(tmp_path / "split" / "state") == []
    codes = {issue["code"] for target in inline[0]["targets"] for issue in target["issues"]}
    assert {"transcript_malformed", "transcript_missing", "entry_alias_merged"} <= codes, codes
    nodes = {row[0]: row for row in inline[1]["session_nodes"]}
    assert nodes["agent:main:cron:nightly"] and any(row[7] == "naïve ✓" for row in nodes.values())
    events = inline[1]["transcript_events"]
    assert any(row[5].startswith('{"type":"openclaw-cli.quarantined-line"') for row in events)
    assert any(len(row[5]) > 300_000 for row in events)  # the transcript read in-process


def _parsers_of(state: Path) -> list[int]:
    """Parser processes started for this state (found by their environment)."""
    found = []
    marker = f"OPENCLAW_STATE_DIR={state}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if PARSER.encode() not in cmdline:
                continue
            if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found.append(int(entry))
        except OSError:
            continue
    return found


def _no_parser_left(state: Path) -> None:
    for _ in range(100):  # bounded: a parser whose importer died exits at its next read or write
        if not _parsers_of(state):
            return
        time.sleep(0.05)
    raise AssertionError(f"parser processes left running: {_parsers_of(state)}")


def _files(state: Path) -> dict[str, Any]:
    """The sessions directory but a killed writer's stale lock file (reclaimed by the next run)."""
    return {name: v for name, v in tree_digest(state / SESSIONS).items() if not name.endswith(".lock")}


@pytest.mark.parametrize("mode", ["process", "split"])
@pytest.mark.parametrize("how", ["KILL", "INT"])
def test_a_killed_or_interrupted_import_leaves_no_parser_and_loses_nothing(
    tmp_path: Path, how: str, mode: str
) -> None:
    state = make_state(tmp_path, sessions=30, mb=0.3, seed=32)
    before = _files(state)
    want = Counter(line for path in transcripts(state) for line in file_lines(path.read_bytes()))
    proc = doctor(
        state,
        "import",
        "--json",
        OPENCLAW_IMPORT_PARSER=mode,  # split: the 12th record is the importing process's own read
        OPENCLAW_MIGRATION_CRASH_AT="12",  # the 11th record: the parser is a window ahead
        OPENCLAW_MIGRATION_CRASH_SIGNAL=how,
    )
    if how == "KILL":
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-800:]
    else:
        assert proc.returncode == 130, proc.stderr[-800:]
        assert json.loads(proc.stdout)["error"]["type"] == "interrupted"
    _no_parser_left(state)
    assert _files(state) == before  # nothing was published: the legacy store is in use
    assert not (state / DB).exists()
    rerun = doctor(state, "import", "--json", OPENCLAW_IMPORT_PARSER=mode)
    assert rerun.returncode == 0, rerun.stdout[-2000:]
    assert db_lines(state / DB) == want  # every line once
    assert leftovers(state) == []
    _no_parser_left(state)


def test_a_parser_that_dies_fails_the_import_typed_and_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.migration import importer
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = make_state(tmp_path, sessions=12, mb=0.1, seed=33)
    before = tree_digest(state / SESSIONS)
    started: list[Any] = []

    class Dying(importer.ParserProcess):
        """Killed as it starts: every result the import waits for never comes."""

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            started.append(self.proc.pid)
            self.proc.kill()
            self.proc.wait()

    monkeypatch.setattr(importer, "ParserProcess", Dying)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", "process")
    from openclaw_cli.errors import OpenClawError

    with pytest.raises(OpenClawError) as failed:
        doctor_in_process("import")
    assert "parser process" in failed.value.message and "rolled back" in failed.value.message
    assert started and all(not Path(f"/proc/{pid}").exists() for pid in set(started))
    assert tree_digest(state / SESSIONS) == before
    assert not (state / DB).exists()
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", "inline")
    assert doctor_in_process("import").exit_code == 0


def test_the_parser_computes_an_entrys_rows_as_the_store_does() -> None:
    """The rows the parser sends for an entry (`entry_rows`) are the store's own (`node_row`,
    `window_row` over the entry parsed as the index reader parses it); an entry it cannot take
    (not an object, not JSON, the store's to decide) comes back as (None, None)."""
    from openclaw_cli.migration.parser_process import ENTRY_BYTES, ENTRY_NO_ROWS, ENTRY_NONE, entry_rows
    from openclaw_cli.store.sqlite.lines import encode_entry, node_row, window_row

    sid, key, mtime_ns = "5eed5eed-0000-4000-8000-000000000000", "agent:main:k", 1_790_000_000_123_456_789
    entry = {
        "sessionId": sid,
        "updatedAt": 17.5,
        "label": "l",
        "origin": {"provider": "x"},
        "n": [1, {"a": None}],
    }
    data = json.dumps(entry, indent=2).encode()
    node, window = entry_rows(sid, key, ENTRY_BYTES, data, mtime_ns)
    assert node == node_row(key, entry, encode_entry(entry))
    assert window == window_row(sid, key, entry, fallback_ms=1_790_000_000_123)
    assert entry_rows(sid, key, ENTRY_NONE, None, mtime_ns) == (
        None,
        window_row(sid, key, None, fallback_ms=1_790_000_000_123),
    )
    assert entry_rows(sid, key, ENTRY_NO_ROWS, data, mtime_ns) == (None, None)
    assert entry_rows(sid, key, ENTRY_BYTES, b"[1, 2]", mtime_ns) == (None, None)
    assert entry_rows(sid, key, ENTRY_BYTES, b"{nope", mtime_ns) == (None, None)


def test_the_parser_is_started_only_when_a_core_is_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: the parser process by default only with two usable cores and a load average below
    their number (on a busy machine the two processes wait for each other: slower and more CPU)."""
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer.os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(importer.os, "getloadavg", lambda: (0.9, 0.5, 0.2))
    assert importer._spare_core()
    monkeypatch.setattr(importer.os, "getloadavg", lambda: (2.0, 1.5, 1.0))
    assert not importer._spare_core()

    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(importer.os, "getloadavg", no_load)
    assert importer._spare_core()
    monkeypatch.setattr(importer.os, "sched_getaffinity", lambda _pid: {0})
    assert not importer._spare_core()


def test_the_parser_is_the_default_for_large_transcripts_only(tmp_path: Path) -> None:
    """Issue 30: by default the parser reads a store of enough transcripts that are large on
    average (its per-session cost outweighs the per-line work it takes for small ones)."""
    from openclaw_cli.migration import importer

    small, large, few = tmp_path / "small", tmp_path / "large", tmp_path / "few"
    for directory, count, size in ((small, 300, 100), (large, 300, 40_000), (few, 10, 40_000)):
        directory.mkdir()
        for n in range(count):
            (directory / f"s{n}.jsonl").write_bytes(b"x" * size)
        (directory / "sessions.json").write_bytes(b"{}")
    assert importer._mean_transcript_bytes(few, importer.PARSER_MIN_RECORDS) is None
    mean_small = importer._mean_transcript_bytes(small, importer.PARSER_MIN_RECORDS)
    mean_large = importer._mean_transcript_bytes(large, importer.PARSER_MIN_RECORDS)
    assert mean_small == 100 and mean_large == 40_000
    assert mean_small < importer.PARSER_MIN_MEAN_BYTES <= mean_large


def test_rows_files_go_with_their_build(tmp_path: Path) -> None:
    """The parser's rows files (`<build>-rows-<n>`) are not builds themselves and are removed with
    their build (a killed import's are discarded by the next run or `recover`)."""
    from openclaw_cli.migration import staging

    live = tmp_path / "openclaw-agent.sqlite"
    build = staging.build_path(live, "session-sqlite-1-aa")
    build.write_bytes(b"")
    rows = [Path(f"{staging.rows_base(build)}{n}") for n in range(3)]
    for path in rows:
        path.write_bytes(b"x")
    other = Path(f"{staging.rows_base(staging.build_path(live, 'session-sqlite-2-bb'))}0")
    other.write_bytes(b"x")  # another run's: not this build's
    assert staging.builds(live) == [build]
    assert staging.discard(build)
    assert not build.exists() and not any(path.exists() for path in rows)
    assert other.exists()


def test_rows_files_have_large_pages(tmp_path: Path) -> None:
    """A rows file is written with `ROWS_PAGE_SIZE` pages (a line never spills into an overflow
    page; a system call per 64 KiB written or read), and holds what was put in it."""
    from contextlib import closing

    from openclaw_cli.migration import parser_process

    sink = parser_process.RowsFiles(str(tmp_path / "rows-"))
    assert sink.open() == 0
    event = ("s1", 0, 1, 3, "message", "e1", None, '{"type":"message","text":"' + "x" * 3000 + '"}')
    sink.insert([event], len(event[7]))
    assert sink.close() == 0
    with closing(sqlite3.connect(tmp_path / "rows-0")) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == parser_process.ROWS_PAGE_SIZE == 65536
        assert conn.execute("SELECT * FROM ev").fetchall() == [event]


def test_the_space_precheck_counts_the_parsers_rows_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: the parser's rows files sit beside the build while it is written (the closed one
    not copied yet, the next one, the window ahead), so the space pre-check counts them for a target
    the parser may read (forced, or large transcripts into a fresh store), and only then."""
    from openclaw_cli.migration import import_faults
    from openclaw_cli.paths import Target

    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    for n in range(300):
        (sessions / f"s{n}.jsonl").write_bytes(b"x" * 40_000)
    (sessions / "sessions.json").write_bytes(b"{}")
    live = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    target = Target("main", sessions / "sessions.json", live)
    asked: list[tuple[int, str]] = []
    monkeypatch.setattr(import_faults, "check_space", lambda _path, need, what: asked.append((need, what)))

    def need(choice: str | None, kinds: dict[Path, str] | None = None) -> tuple[int, str]:
        if choice is None:
            monkeypatch.delenv("OPENCLAW_IMPORT_PARSER", raising=False)
        else:
            monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", choice)
        asked.clear()
        import_faults.check_import_space([target], kinds or {}, tmp_path / "runs")
        assert len(asked) == 1  # one filesystem: the database, the rows files and the manifest together
        return asked[0]

    inline, inline_what = need("inline")
    from openclaw_cli.migration import parser_process

    slack = 2 * import_faults.ROWS_FILE_SLACK_PAGES * parser_process.ROWS_PAGE_SIZE  # two files' pages
    assert "rows files" not in inline_what
    data = 300 * 40_000 + 2
    for choice in ("process", "split", None):  # forced, and the default for transcripts averaging 40 KB
        forced, what = need(choice)
        assert "rows files of agent main" in what
        # every transcript's lines may be in rows files at once here (fewer than the window holds)
        assert forced - inline == import_faults.ROWS_FILE_FACTOR * data + slack
    assert need("process", {live: "ours"})[0] == need("inline", {live: "ours"})[0]  # no build: no parser
    # a store larger than what can be on disk at once: bounded by two files and the window
    big = import_faults.rows_files_bytes(10 * 1024**3, 40_000)
    assert big == slack + import_faults.ROWS_FILE_FACTOR * (
        2 * (parser_process.ROWS_FILE_BYTES + 40_000) + parser_process.WINDOW_JOBS * 40_000
    )


def _fake_states(sids: list[str | None], problem_at: int = -1) -> list[Any]:
    from types import SimpleNamespace

    return [
        SimpleNamespace(
            rec=SimpleNamespace(
                session_id=sid,
                transcript_text=f"/s/{n}.jsonl",
                problem="unreadable" if n == problem_at else None,
            )
        )
        for n, sid in enumerate(sids)
    ]


def test_the_split_gives_the_parser_its_share_of_the_records_it_can_take_spread_evenly() -> None:
    """Issue 30, the split: of the records the parser can take (not a shared, invalid or missing
    session id, not a record with a problem) it reads `share`, spread evenly; the importing process
    reads the rest itself. Share 1: every one (the parser as before)."""
    from openclaw_cli.migration import importer

    sids: list[str | None] = [f"5eed{n:04d}-0000-4000-8000-000000000000" for n in range(100)]
    sids[10] = sids[11]  # a session named twice: the store's general path, never the parser's
    sids[20] = "../nope"
    sids[30] = None
    states = _fake_states(sids, problem_at=40)
    eligible = [s for n, s in enumerate(states) if n not in (10, 11, 20, 30, 40)]

    def jobs(*args: Any) -> list[Any]:
        found = list(importer._parser_jobs(states, *args))
        assert all(states[position] is state for position, state in found)  # with their positions
        return [state for _, state in found]

    assert jobs() == eligible
    assert jobs(1.0) == eligible
    for share, period in ((0.75, 4), (0.5, 2)):
        taken = jobs(share)
        assert len(taken) == int(len(eligible) * share)
        picked = {id(s) for s in taken}
        marks = [id(s) in picked for s in eligible]
        # the importing process's own records: the first, then one in every `period`, never two together
        assert [n for n, m in enumerate(marks) if not m] == list(range(0, len(eligible), period)), share
    assert jobs(0.0) == []


def test_the_parsers_share_by_choice_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`OPENCLAW_IMPORT_PARSER=inline|process|split` and `OPENCLAW_IMPORT_PARSER_SHARE`; by default
    all records of large transcripts, `SMALL_TRANSCRIPTS_SHARE` of small ones, none for a store that
    is not fresh or has too few transcripts."""
    from openclaw_cli.migration import importer

    small, large, few = tmp_path / "small", tmp_path / "large", tmp_path / "few"
    for directory, count, size in ((small, 300, 100), (large, 300, 40_000), (few, 10, 40_000)):
        directory.mkdir()
        for n in range(count):
            (directory / f"s{n}.jsonl").write_bytes(b"x" * size)

    def share(directory: Path, choice: str | None, value: str | None = None, fresh: bool = True) -> float:
        for name, setting in (("OPENCLAW_IMPORT_PARSER", choice), ("OPENCLAW_IMPORT_PARSER_SHARE", value)):
            if setting is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, setting)
        got = importer.parser_share(directory, fresh=fresh)
        assert importer.parser_wanted(directory, fresh=fresh) is (got > 0)
        return got

    assert share(large, None) == 1.0
    assert share(few, None) == 0.0
    assert share(small, None) == importer.SMALL_TRANSCRIPTS_SHARE == importer.PARSER_SPLIT_SHARE
    assert share(large, None, fresh=False) == share(large, "process", fresh=False) == 0.0
    assert share(small, "inline") == share(large, "inline", "0.5") == 0.0
    assert share(small, "process") == share(few, "process") == 1.0
    assert share(small, "split") == importer.PARSER_SPLIT_SHARE == 0.75
    assert share(small, "split", "0.6") == 0.6
    assert share(large, None, "0.5") == 0.5  # the default's parser, at that share
    assert share(small, "split", "7") == 1.0
    assert share(small, "split", "-1") == share(small, "split", "0") == 0.0
    assert share(small, "split", "lots") == share(small, "split", "nan") == 0.75
    monkeypatch.setattr(importer, "SMALL_TRANSCRIPTS_SHARE", 0.75)  # the split as the default
    assert share(small, None) == 0.75 and share(small, None, "0.6") == 0.6 and share(large, None) == 1.0


@pytest.mark.parametrize("mode", ["inline", "process", "split"])
def test_a_fresh_build_takes_the_transcript_rows_in_session_id_order_and_keeps_the_index_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Issue 30: a private build is fed in session-id order, so each session's rows are appended to
    the `(session_id, seq)` and identities' b-trees as the D6 floor's are; the entries and windows
    keep the index's order (their rowids), and so does everything the report and the archive plan
    list. Fails on a feed in index order (the rows' sessions come in the index's order)."""
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = make_state(tmp_path, sessions=16, mb=0.05, seed=41)
    sessions = state / SESSIONS
    index = json.loads((sessions / "sessions.json").read_text())
    # the index in descending session-id order, the opposite of the rows' order
    ordered = dict(sorted(index.items(), key=lambda item: item[1]["sessionId"], reverse=True))
    assert list(ordered) != list(index) or len(ordered) < 2
    (sessions / "sessions.json").write_text(json.dumps(ordered, indent=2))
    sids = [entry["sessionId"] for entry in ordered.values()]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_SHARE", "0.5" if mode == "split" else "1")
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_STEAL", "0")  # the two runs of the split exactly
    report = doctor_in_process("import")
    assert not report.targets[0].has_blocking
    conn = sqlite3.connect(state / DB)
    try:
        rows = [r[0] for r in conn.execute("SELECT session_id FROM transcript_events ORDER BY rowid")]
        keys = [r[0] for r in conn.execute("SELECT session_key FROM session_nodes ORDER BY rowid")]
        windows = [r[0] for r in conn.execute("SELECT session_id FROM session_windows ORDER BY rowid")]
    finally:
        conn.close()
    runs = [sid for n, sid in enumerate(rows) if n == 0 or rows[n - 1] != sid]
    assert sorted(runs) == sorted(set(sids))  # each session's rows contiguous
    if mode == "split":
        # the importing process's own records and the parser's (one rows file here, copied at the
        # end): each in session-id order, one after the other
        assert sum(a > b for a, b in zip(runs[:-1], runs[1:], strict=True)) <= 1, runs
    else:
        assert runs == sorted(sids)
    assert keys == list(ordered)
    assert windows == sids
    archived = [Path(p).name for p in report.targets[0].archived_transcript_files]
    assert [sid for name in archived for sid in sids if sid in name] == sids  # the index's order


def test_the_feed_order_is_the_session_id_order_stable_in_the_index_order() -> None:
    """`_feed_order` sorts a first character at a time (memory): the same order as one stable sort
    of the indexes by session id, for ids of any first character, empty and shared ones."""
    import random
    import uuid
    from types import SimpleNamespace

    from openclaw_cli.migration.importer import _feed_order

    rng = random.Random(41)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(2000)]
    ids += ["", "a", "A", "é", "Z-1", "0", "zz", "\U0001f600x"] * 3 + ids[:40]
    rng.shuffle(ids)
    states: Any = [SimpleNamespace(rec=SimpleNamespace(session_id=sid)) for sid in ids]
    order = list(_feed_order(states))
    assert order == sorted(range(len(ids)), key=lambda i: ids[i])
    assert sorted(order) == list(range(len(ids)))


def test_the_parser_sends_the_files_identity_packed_and_as_it_is_when_it_does_not_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: the parser's message carries a file's identity packed as the importing process keeps
    it (one bytes object, not five values and a hex digest); one that does not pack (an mtime
    outside 64 bits) crosses as a tuple — either way the record's state holds the same identity."""
    import hashlib
    import struct
    from types import SimpleNamespace

    from openclaw_cli.migration import importer, parser_process
    from openclaw_cli.migration.legacy_reader import Record
    from openclaw_cli.migration.publish import Identity

    sid = "5eed5eed-0000-4000-8000-000000000000"
    path = tmp_path / f"{sid}.jsonl"
    data = b'{"type":"session","id":"' + sid.encode() + b'"}\n{"type":"message","id":"m1"}\n'
    path.write_bytes(data)
    st = os.stat(path)
    want = Identity(st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())
    packed = parser_process.parse_one(str(path), sid, "quarantine", 100, 1 << 20)

    class Refusing:
        def pack(self, *_values: Any) -> bytes:
            raise struct.error("argument out of range")

    monkeypatch.setattr(parser_process, "IDENTITY", Refusing())
    as_is = parser_process.parse_one(str(path), sid, "quarantine", 100, 1 << 20)
    assert isinstance(packed[1], bytes) and len(packed[1]) == importer._IDENTITY.size
    assert as_is[1] == (want.dev, want.ino, want.mtime_ns, want.size, want.sha256) and packed[2:] == as_is[2:]
    for message in (packed, as_is):
        state = importer.RecState(Record("agent:main:k", "agent:main:k", sid, {"sessionId": sid}))
        lines, prepared = importer.ImportRun._parsed(SimpleNamespace(_rows_file=-1), state, message, None)  # type: ignore[arg-type]
        assert lines == () and prepared is not None and prepared.lines_read == 2
        assert state.identity == want and state.line_digest is None
        assert state.mtime_ms == st.st_mtime_ns // 1_000_000  # the store's fallback time (no rows file)
        assert state.ends_nl and state.nsplit == 3


def test_none_is_bound_as_null_through_the_registered_adapter() -> None:
    """Issue 30: the bulk import and the parser's rows files register an adapter for None (Python
    3.11's sqlite3 otherwise raises and formats an AttributeError inside each None it binds); a
    None still goes in as NULL, and nothing else is adapted."""
    from openclaw_cli.store.sqlite.lines import bind_none_as_null

    bind_none_as_null()
    bind_none_as_null()  # idempotent
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t(a)")
        conn.executemany("INSERT INTO t VALUES (?)", [(None,), (1,), ("x",), (b"y",), (1.5,)])
        kinds = conn.execute("SELECT typeof(a) FROM t ORDER BY rowid").fetchall()
        assert kinds == [("null",), ("integer",), ("text",), ("blob",), ("real",)]
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["process", "split"])
def test_a_lagging_parsers_records_are_read_here_once_each_and_stored_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Issue 30, the adaptive share: when the parser's oldest answer has not arrived, the importing
    process reads the record the parser would be sent next itself, ahead of its turn, and skips it
    when the order reaches it. Whatever the timing, every record is imported once and the build
    holds what an in-process import stores (rows, report, files). Here the parser is made to look
    late on every other question; fails if a read-ahead record is imported twice or skipped."""
    from openclaw_cli.migration import importer, parser_process
    from tests.test_migration_helpers import doctor as doctor_in_process

    template = _odd_state(tmp_path / "template")
    monkeypatch.setattr(parser_process, "PARSER_FILE_LIMIT", 200_000)
    monkeypatch.setattr(parser_process, "ROWS_FILE_BYTES", 30_000)
    monkeypatch.setattr(parser_process, "WINDOW_JOBS", 3)  # jobs left to send: records to read here
    asked: Counter[str] = Counter()
    ready = parser_process.ParserProcess.ready

    def late(self: Any) -> bool:
        asked["questions"] += 1
        return asked["questions"] % 2 == 0 and ready(self)

    monkeypatch.setattr(parser_process.ParserProcess, "ready", late)
    sent: list[str] = []
    submit = importer.ImportRun._submit

    def counted_submit(parser: Any, state: Any, rowid: int | None = None) -> None:
        sent.append(state.rec.key)
        submit(parser, state, rowid)

    monkeypatch.setattr(importer.ImportRun, "_submit", staticmethod(counted_submit))
    results = {}
    for run in ("inline", mode):
        state = tmp_path / run / "state"
        shutil.copytree(template.parent, state.parent)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", run)
        sent.clear()
        report = doctor_in_process("import")
        results[run] = (_report(report, state), _tables(state / DB), sorted(os.listdir(state / SESSIONS)))
        assert leftovers(state) == []
    assert results[mode] == results["inline"]
    # the parser was sent some records, and fewer than it can take (19): the rest were read here
    assert 0 < len(sent) < 19 and len(set(sent)) == len(sent), sent
    assert asked["questions"] > 0


def test_the_parsers_answers_are_ready_only_once_whole() -> None:
    """`ParserProcess.ready` asks the pipe without blocking: an answer is ready once its length and
    all its bytes have arrived (or the stream has ended); reading it then does not wait."""
    import marshal
    import struct

    from openclaw_cli.migration.parser_process import _read_message, _ResultReader

    r, w = os.pipe()
    reader = _ResultReader(os.fdopen(r, "rb"))
    try:
        body = marshal.dumps((0, b"x" * 5000, "y"))
        message = struct.pack("<Q", len(body)) + body
        assert not reader.ready()
        os.write(w, message[:5])
        assert not reader.ready()
        os.write(w, message[5:100])
        assert not reader.ready()
        os.write(w, message[100:] + message[:3])
        assert reader.ready()
        assert _read_message(reader) == (0, b"x" * 5000, "y")
        assert not reader.ready()  # three bytes of the next one
        os.write(w, message[3:])
        assert reader.ready() and _read_message(reader) == (0, b"x" * 5000, "y")
        os.close(w)
        w = -1
        assert reader.ready() and _read_message(reader) is None  # the end: reading does not wait
    finally:
        if w >= 0:
            os.close(w)
        reader.close()
