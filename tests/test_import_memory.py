"""Issue 16, import memory: `sessions.json` read member by member gives exactly what the
whole-document reader gives (or falls back to it), and the run manifest's moves kept out of memory
write the same bytes as plain lists — so manifests of earlier builds read and restore unchanged."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.migration import index_stream
from openclaw_cli.migration import manifest as mf
from openclaw_cli.migration.index_stream import ExactProbe, IndexChanged, StreamedEntries
from openclaw_cli.migration.legacy_reader import LegacyIndex, _parse_index, read_index
from openclaw_cli.migration.preflight import needs_exact_pass
from openclaw_cli.paths import IMPORT_ARCHIVE_DIR
from tests.test_migration_helpers import doctor, make_f

ENTRY = {
    "sessionId": "s-1",
    "updatedAt": 1795999700000,
    "sessionFile": "s-1.jsonl",
    "n": [1, {"a": None}],
    "f": 1.5,
    "t": True,
    "s": 'x"}\\n\n  }',
}


def _whole(raw: bytes) -> tuple[LegacyIndex, object, str | None]:
    """What the whole-document reader (the one before issue 16) makes of `raw`."""
    index = LegacyIndex(Path("x"))
    data, error = _parse_index(raw, index)
    return index, data, error


def _same(a: object, b: object) -> bool:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # the 1,000-deep cases
    try:
        return a == b
    finally:
        sys.setrecursionlimit(limit)


def _check_same(tmp_path: Path, raw: bytes) -> LegacyIndex:
    path = tmp_path / "sessions.json"
    path.write_bytes(raw)
    got = read_index(path)
    old, data, error = _whole(raw)
    assert got.identity is not None and got.identity.sha256 == hashlib.sha256(raw).hexdigest()
    if error is not None:
        assert not got.readable and [i.message for i in got.issues] == [f"{path}: {error}"]
    elif not isinstance(data, dict):
        assert not got.readable and [i.code for i in got.issues] == ["store_not_object"]
    else:
        assert got.readable and not got.issues
        items = list(got.entries.items())  # type: ignore[union-attr]
        assert _same(items, list(data.items()))
        assert [type(v) for _k, v in items] == [type(v) for v in data.values()]
        assert {k: (e.text, [f.path for f in e.findings]) for k, e in got.exact.items()} == {
            k: (e.text, [f.path for f in e.findings]) for k, e in old.exact.items()
        }
    got.close()
    return got


CASES = [
    b"{}",
    b" {} \n",
    b"{\n}\n",
    b"{}x",
    b"{} {}",
    b"\xef\xbb\xbf{}",
    b"[]",
    b"[1, 2]",
    b"3",
    b'"x"',
    b"",
    b"   ",
    b"{",
    b'{"a"}',
    b'{"a":}',
    b'{"a":1,}',
    b'{"a":1 "b":2}',
    b'{"a":1}\x0c',
    b'{"a" : 1 , "b" :\t{}\r\n}',
    b'{"a":1,"a":2,"b":3}',
    b'{"b":{"x":1},"a":2,"b":{"y":2}}',  # duplicates: first position, last value
    b'{"a":1e400}',
    b'{"a":100000000000000000000000}',
    b'{"a":18446744073709551615}',
    b'{"a":-9223372036854775809}',
    b'{"a":{"b":[1e999,2]}}',
    b'{"a":"\\ud800"}',
    b'{"\\ud800":{"sessionId":"x"}}',
    b'{"a":NaN}',
    b'{"a":Infinity}',
    b'{"a":"\xff"}',
    b'{"\xc3\xa9":1}',
    b'{"a":"\\u00e9\\"\\\\"}',
    b'{"k\\"}":1}',
    b'{"a":01}',
    b'{"a":1.}',
    b'{"a":.5}',
    b'{"a":tru}',
    b'{"a":true,"b":false,"c":null,"d":-0.0,"e":1E+5}',
    b"{'a':1}",
    b'{"a":1}//c',
    b'{"a":"1234567890123456789012 is text"}',
    b'{"id":"9e123-4"}',
    b'{"a":[1,\n 1234567890123456789012]}',
    b'{"x": "' + b"9" * 30 + b'"}',
    b'{"a":1}\n\n\n',
    b'{\n  "a": {\n    "x": 1\n    },\n  "b": {},\n  "c": [\n  1\n  ],\n  "d": {"e": "\\n  }"}\n}',  # odd layouts
    ("{" + "[" * 1023 + "]" * 1023 + "}").encode(),
    ('{"a":' + "[" * 1023 + "]" * 1023 + "}").encode(),
    ('{"a":' + "[" * 1022 + "]" * 1022 + "}").encode(),
    ('{"a":' + "[" * 1024 + "]" * 1024 + "}").encode(),
]


@pytest.mark.parametrize("raw", CASES, ids=[repr(c[:40]) for c in CASES])
def test_member_wise_reader_matches_the_whole_reader(tmp_path: Path, raw: bytes) -> None:
    _check_same(tmp_path, raw)


@pytest.mark.parametrize("indent", [None, 2, 4, "\t"])
def test_stores_of_every_layout_are_read_member_by_member(tmp_path: Path, indent: object) -> None:
    store = {f"agent:main:k{n}": dict(ENTRY, sessionId=f"s-{n}", empty={}, lst=[]) for n in range(300)}
    store["agent:main:big"] = dict(ENTRY, blob="y" * (3 * index_stream.CHUNK))  # larger than a chunk
    store["agent:main:nested"] = {"a": {"b": {"c": [[{"d": "}\n  }"}]]}}, "sessionId": "n"}
    raw = json.dumps(store, indent=indent).encode()  # type: ignore[arg-type]
    got = _check_same(tmp_path, raw)
    assert isinstance(got.entries, StreamedEntries)


def test_a_store_needing_the_exact_pass_is_read_whole(tmp_path: Path) -> None:
    raw = json.dumps({"a": ENTRY, "b": dict(ENTRY, big=10**30)}, indent=2).encode()
    got = _check_same(tmp_path, raw)
    assert isinstance(got.entries, dict) and set(got.exact) == {"b"}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=8), st.sampled_from([None, 2, 1, "\t"]))
def test_any_object_reads_the_same(store: dict, indent: object) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _check_same(Path(tmp), json.dumps(store, indent=indent).encode())  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"1",
                b"9" * 19,
                b"1e400",
                b"e",
                b"E+",
                b"-",
                b".",
                b" ",
                b",",
                b":",
                b"]",
                b"}",
                b"[",
                b"\n",
                b"a",
                b"0" * 25,
                b"2e+123",
            ]
        ),
        max_size=40,
    ),
    st.lists(st.integers(1, 64), min_size=1, max_size=8),
)
def test_the_chunked_number_check_is_the_whole_file_check(parts: list[bytes], sizes: list[int]) -> None:
    raw = b"".join(parts) * 3
    probe = ExactProbe()
    hit, pos, n = False, 0, 0
    while pos < len(raw) and not hit:
        size = sizes[n % len(sizes)]
        hit = probe.feed(raw[pos : pos + size], final=False)
        pos, n = pos + size, n + 1
    hit = hit or probe.feed(b"", final=True)
    assert hit == needs_exact_pass(raw)


def test_an_index_changed_after_it_was_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps({"a": ENTRY, "b": ENTRY}, indent=2))
    index = read_index(path)
    entries = index.entries
    assert isinstance(entries, StreamedEntries) and list(entries) == ["a", "b"]
    with open(path, "r+b") as fh:  # same size, same inode, other bytes
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"s-1", b"s-2"))
    with pytest.raises(IndexChanged):
        entries.entry_at(1)
    index.close()
    path.write_bytes(data)  # the bytes that were read: readable again
    assert entries["b"] == ENTRY
    index.close()
    os.replace(path, tmp_path / "moved.json")
    with pytest.raises(IndexChanged):  # gone
        entries.entry_at(0)
    path.write_bytes(data)
    with pytest.raises(IndexChanged):  # another file (inode) under the name
        entries.entry_at(0)


def _move(n: int, agent: str) -> dict:
    return mf.new_move(
        source=f"agents/{agent}/sessions/s-{n}.jsonl",
        archive=f"agents/{agent}/{IMPORT_ARCHIVE_DIR}/s-{n}.x",
        kind="transcript",
        session_key=f"agent:{agent}:k{n}",
        identity=mf.Identity(1, n, 3, 4, "a" * 64),
        classification="imported",
        reason="verified-import-original",
        dependencies=[f"d{n}"] if n % 2 else None,
    )


@pytest.mark.parametrize(
    "planned,completed",
    [
        (0, []),
        (1, [0]),
        (5, [0, 2, 4]),
        (5, []),
        (40, list(range(40))),
        (5, [0, 1, 2]),  # completed in planned order, not all: a stretch of the log
        (5, [1, 0, 2, 3, 4]),  # out of order: move by move
        (3000, list(range(3000))),  # more than one block of the spilled moves (1 MiB)
        (3000, [*range(2999), 2999]),
    ],
)
def test_streamed_moves_write_the_bytes_of_plain_lists(
    tmp_path: Path, planned: int, completed: list[int]
) -> None:
    data = mf.new_manifest("session-sqlite-1-abc", 1_796_000_000_000)
    plain = json.loads(json.dumps(data))
    for agent in ("main", "ops"):
        target = mf.new_target(
            agent, f"agents/{agent}/sessions/sessions.json", f"agents/{agent}/agent/x.sqlite"
        )
        log = mf.MoveLog(tmp_path / "runs")
        done = mf.CompletedMoves(log)
        target["plannedMoves"], target["completedMoves"] = log, done
        copy = json.loads(
            json.dumps({k: v for k, v in target.items() if k not in ("plannedMoves", "completedMoves")})
        )
        copy["plannedMoves"] = [_move(n, agent) for n in range(planned)]
        copy["completedMoves"] = [_move(n, agent) for n in completed]
        copy = {k: copy[k] for k in target}
        for n in range(planned):
            log.append(_move(n, agent))
        for n in completed:
            done.add(n)
        target["issues"] = copy["issues"] = [{"code": "x", "message": "moves-0"}]
        data["targets"].append(target)
        plain["targets"].append(copy)
        assert list(log) == copy["plannedMoves"] and list(done) == copy["completedMoves"]
        assert len(done) == len(completed) and bool(log) == bool(planned)
    path = tmp_path / "runs" / "session-sqlite-1-abc.json"
    mf.write_manifest(path, data)
    assert path.read_bytes() == orjson.dumps(plain, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    assert mf.validate_manifest(json.loads(path.read_bytes())) is None
    assert os.listdir(tmp_path / "runs") == [path.name]  # the spilled moves have no name


def test_a_move_that_failed_half_way_leaves_the_manifest_a_plain_list(tmp_path: Path) -> None:
    """A move whose dependencies raised while written leaves bytes nothing refers to in the log:
    the lists are then written move by move, still the bytes of plain lists."""
    from openclaw_cli.jsonutil import StreamedArray

    def failing() -> Iterator[str]:
        yield from (f"d{n}" for n in range(600))
        raise OSError("gone")

    log = mf.MoveLog(tmp_path)
    done = mf.CompletedMoves(log)
    log.append(_move(0, "main"))
    broken = _move(1, "main")
    broken["artifact"]["dependencies"] = StreamedArray(failing())
    with pytest.raises(OSError):
        log.append(broken)
    for n in (2, 3):
        log.append(_move(n, "main"))
    for n in range(3):
        done.add(n)
    expected = [_move(n, "main") for n in (0, 2, 3)]
    assert list(log) == expected and list(done) == expected
    data = mf.new_manifest("session-sqlite-1-abc", 1_796_000_000_000)
    target = mf.new_target("main", "agents/main/sessions/sessions.json", "agents/main/agent/x.sqlite")
    plain = json.loads(json.dumps({**data, "targets": [target]}))
    plain["targets"][0]["plannedMoves"] = plain["targets"][0]["completedMoves"] = expected
    target["plannedMoves"], target["completedMoves"] = log, done
    data["targets"].append(target)
    path = tmp_path / "runs" / "session-sqlite-1-abc.json"
    mf.write_manifest(path, data)
    assert path.read_bytes() == orjson.dumps(plain, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def test_a_manifest_written_as_before_still_restores(state_dir: Path) -> None:
    """The file is byte-identical to what the plain-list writer wrote, and restore reads it."""
    sessions = make_f(state_dir)
    originals = {p.name: p.read_bytes() for p in sessions.iterdir()}
    report = doctor("import")
    assert report.exit_code == 0
    path = Path(report.migration_run.manifest_path)
    raw = path.read_bytes()
    data = orjson.loads(raw)
    assert len(data["targets"][0]["plannedMoves"]) == 4 and data["targets"][0]["completedMoves"]
    assert orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE) == raw
    path.write_bytes(
        orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    )  # the old writer
    restored = doctor("restore")
    assert restored.exit_code == 0
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == originals


def test_moves_published_in_small_batches_from_the_log(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Publication reads planned moves back from the MoveLog a batch at a time: with batches of one
    move every file is still archived once, recorded as completed, and restorable."""
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer, "MAX_PUBLISH_BATCH", 1)
    monkeypatch.setattr(importer, "MIN_PUBLISH_BATCH", 1)
    sessions = make_f(state_dir)
    originals = {p.name: p.read_bytes() for p in sessions.iterdir()}
    report = doctor("import")
    assert report.exit_code == 0
    data = orjson.loads(Path(report.migration_run.manifest_path).read_bytes())
    target = data["targets"][0]
    assert sorted(m["sourcePath"] for m in target["completedMoves"]) == sorted(
        m["sourcePath"] for m in target["plannedMoves"]
    )
    assert len(target["plannedMoves"]) == 4 and list(sessions.iterdir()) == []  # every original archived once
    assert doctor("restore").exit_code == 0
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == originals


@pytest.mark.parametrize("layout", ["contiguous", "interleaved", "disordered", "short"])
def test_verification_digests_hold_one_hash_at_a_time_and_stay_exact(
    monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """The full scan settles each session's digest when its needed rows are hashed; sessions whose
    rows come apart, out of order or short still get the digest (or none) the slow path gives."""
    import sqlite3

    from openclaw_cli.migration import verify

    monkeypatch.setattr(verify, "FULL_SCAN_MIN_SESSIONS", 1)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT)")
    conn.execute("CREATE TABLE session_windows (session_id TEXT)")
    lines = {sid: [f'{{"n":{n},"s":"{sid}"}}' for n in range(4)] for sid in ("a", "b", "c")}
    rows = [(sid, n, text) for sid in lines for n, text in enumerate(lines[sid])]
    if layout == "interleaved":  # a session's rows come back after another session's
        rows = rows[:2] + rows[4:8] + rows[2:4] + rows[8:]
    elif layout == "disordered":
        rows[1], rows[2] = rows[2], rows[1]
    elif layout == "short":
        rows = [r for r in rows if not (r[0] == "b" and r[1] == 3)]
    conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?)", rows)
    conn.executemany("INSERT INTO session_windows VALUES (?)", [(sid,) for sid in lines])
    need = {"a": 3, "b": 4, "c": 2}

    def scan() -> tuple[dict[tuple[str, int], str], dict[str, int]]:
        digests: dict[tuple[str, int], str] = {}
        counts: dict[str, int] = {}
        wanted = dict(need)

        def settle(sid: str, count: int, digest: str | None) -> None:  # the last call is the answer
            counts[sid] = count
            digests.pop((sid, need[sid]), None)
            if digest is not None:
                digests[(sid, need[sid])] = digest

        verify._scan_prefix_digests(conn, wanted, settle)
        assert all(v < 0 for v in wanted.values())  # every session found was marked settled
        return digests, counts

    digests, counts = scan()
    monkeypatch.setattr(verify, "FULL_SCAN_MIN_SESSIONS", 10**9)
    slow = scan()
    assert (digests, counts) == slow
    assert counts == {"a": 4, "b": 3 if layout == "short" else 4, "c": 4}
    for sid, n in need.items():
        expected = hashlib.sha256("".join(text + "\n" for text in lines[sid][:n]).encode()).hexdigest()
        if layout == "short" and sid == "b":
            assert (sid, n) not in digests
        else:
            assert digests[(sid, n)] == expected


@pytest.mark.parametrize("count", [0, 1, 2, 511, 512, 513, 1300])
def test_streamed_dependencies_write_the_bytes_of_a_plain_list(tmp_path: Path, count: int) -> None:
    """The legacy index's move names every transcript; its dependencies are dumped a batch at a
    time into the MoveLog, and the chunk is the bytes of the move with a plain list."""
    from openclaw_cli.jsonutil import StreamedArray

    odd = ['q"uote', "back\\slash", "ünï", "tab\tline\nnl", "\u2028", "e\U0001f600", ", \n  x"]
    deps = [
        odd[n % len(odd)] + f"/{n}" if n % 3 == 0 else f"agents/main/sessions/s-{n}.jsonl"
        for n in range(count)
    ]

    def move(dependencies: object) -> dict:
        return mf.new_move(
            source="agents/main/sessions/sessions.json",
            archive="agents/main/a/sessions.json.x",
            kind="legacy-store",
            session_key=None,
            identity=mf.Identity(1, 2, 3, 4, "b" * 64),
            classification="imported",
            reason="verified-index-import",
            dependencies=dependencies,
        )  # type: ignore[arg-type]

    log = mf.MoveLog(tmp_path)
    n = log.append(move(StreamedArray(iter(deps))))
    plain = mf.MoveLog(tmp_path)
    plain.append(move(deps))
    assert log.chunk(n) == plain.chunk(0)
    assert orjson.loads(log.chunk(n))["artifact"]["dependencies"] == deps
    log.append(_move(7, "main"))  # what follows is indexed after the streamed move
    assert list(log)[1] == _move(7, "main")


def test_archived_paths_read_back_from_the_log(tmp_path: Path) -> None:
    """The report's archived files are the completed moves' `archivePath`s, escapes included."""
    log = mf.MoveLog(tmp_path)
    mapper = mf.PathMapper(tmp_path, relative=True)
    names = ["a.jsonl", 'q"uote.jsonl', "back\\slash.jsonl", "ünï.jsonl", "/abs/out/side.jsonl"]
    paths = mf.ArchivedPaths(log, mapper.to_real_text)
    assert paths == [] and not paths
    for n, name in enumerate(names):
        move = _move(n, "main")
        move["archivePath"] = name if name.startswith("/") else f"agents/main/{IMPORT_ARCHIVE_DIR}/{name}"
        log.append(move)
    for n in (3, 0, 4, 1, 2):
        paths.add(n)
    expected = [mapper.to_real_text(m["archivePath"]) for m in (list(log)[i] for i in (3, 0, 4, 1, 2))]
    assert list(paths) == expected and paths == expected and len(paths) == 5
    assert (
        expected[2] == "/abs/out/side.jsonl"
        and expected[0] == f"{tmp_path}/agents/main/{IMPORT_ARCHIVE_DIR}/ünï.jsonl"
    )


def test_archived_paths_across_blocks_and_jumps(tmp_path: Path) -> None:
    """Read from a log of several blocks (`_SPILL_BLOCK`): forward, back, far ahead and repeated
    indexes give each move's `archivePath` as parsing its JSON does, escapes included."""
    log = mf.MoveLog(tmp_path)
    mapper = mf.PathMapper(tmp_path, relative=True)
    count = 3000  # ~1.3 MB of moves with their dependencies
    for n in range(count):
        move = _move(n, "main")
        move["artifact"]["dependencies"] = [f"agents/main/sessions/dep-{n}-{i}.jsonl" for i in range(4)]
        if n % 97 == 5:
            move["archivePath"] = f'agents/main/{IMPORT_ARCHIVE_DIR}/q"{n}\\x.jsonl'
        log.append(move)
    assert log._end > 2 * mf._SPILL_BLOCK
    order = [*range(0, count, 3), 2999, 0, 1500, 1501, 10, 2998, 7, 7, *range(count - 1, 0, -211)]
    paths = mf.ArchivedPaths(log, mapper.to_real_text)
    for n in order:
        paths.add(n)
    expected = [mapper.to_real_text(orjson.loads(log.chunk(n))["archivePath"]) for n in order]
    assert list(paths) == expected
    assert list(log.archive_paths([5, 4, 5])) == [
        orjson.loads(log.chunk(n))["archivePath"] for n in (5, 4, 5)
    ]


def _generated_store(state: Path, agent: str, count: int) -> None:
    """`count` sessions of three lines each (uuid-like ids, keys of realistic length)."""
    sessions = state / "agents" / agent / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    entries = {}
    for n in range(count):
        sid = f"{n:08x}-1d2e-4f5a-8b9c-{n:012x}"
        entries[f"agent:{agent}:telegram:direct:user-{n:06d}"] = {
            "sessionId": sid,
            "updatedAt": 1_790_000_000_000 + n,
        }
        (sessions / f"{sid}.jsonl").write_text(
            f'{{"type":"session","id":"{sid}","timestamp":"2026-11-01T10:00:00.000Z"}}\n'
            f'{{"type":"message","id":"m1-{n}","parentId":null,"message":{{"role":"user","content":"hi {n}"}}}}\n'
            f'{{"type":"message","id":"m2-{n}","parentId":"m1-{n}","message":{{"role":"assistant","content":"ok"}}}}\n'
        )
    (sessions / "sessions.json").write_text(json.dumps(entries, indent=2))


def test_import_memory_per_session_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-session state of an import stays compact: the traced peak of importing 4N sessions
    exceeds that of N by under 1,200 bytes a session (measured: 1,041 here, 1,695 before — the
    bulk-import results, unpacked identities, verification's maps and the report's paths held each
    ~150-300 bytes more). Buffers that are bounded in a real run (gathered rows, the MoveLog's write
    buffer, a publication batch) are made small here so that what grows with N is the per-session
    state alone."""
    import tracemalloc

    from openclaw_cli.migration import importer
    from openclaw_cli.store.sqlite import store as sqlite_store

    monkeypatch.setattr(sqlite_store, "GATHER_BYTES", 16 * 1024)
    monkeypatch.setattr(mf, "_SPILL_BLOCK", 16 * 1024)
    monkeypatch.setattr(importer, "MAX_PUBLISH_BATCH", 64)
    monkeypatch.setattr(importer, "MIN_PUBLISH_BATCH", 64)
    warm = tmp_path / "warm"  # imports, caches and a first run's one-off allocations
    _generated_store(warm, "main", 20)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(warm))
    assert doctor("import").exit_code == 0
    peaks = {}
    for count in (300, 1200):
        state = tmp_path / f"state-{count}"
        _generated_store(state, "main", count)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        tracemalloc.start()
        try:
            report = doctor("import")
            peaks[count] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert report.exit_code == 0 and len(report.targets[0].archived_transcript_files) == count
    per_session = (peaks[1200] - peaks[300]) / 900
    assert per_session < 1200, f"{per_session:.0f} bytes a session ({peaks})"


def test_private_build_cache_gives_room_to_large_imports() -> None:
    from openclaw_cli.store.sqlite.store import (
        PRIVATE_BUILD_CACHE_KIB,
        PRIVATE_BUILD_CACHE_MIN_KIB,
        private_build_cache_kib,
    )

    assert private_build_cache_kib(None) == private_build_cache_kib(20_000) == PRIVATE_BUILD_CACHE_KIB
    assert PRIVATE_BUILD_CACHE_MIN_KIB < private_build_cache_kib(60_000) < PRIVATE_BUILD_CACHE_KIB
    assert private_build_cache_kib(100_000) == private_build_cache_kib(10**7) == PRIVATE_BUILD_CACHE_MIN_KIB


_NUMBERISH = st.lists(
    st.sampled_from(
        [b"1", b"9" * 19, b"1e400", b"1E-999", b"3e123", b"1e234f", b"e", b"E+", b"-", b".", b" ", b"\t"]
        + [b"\x0b", b"\x0c", b"\n", b",", b":", b"]", b"}", b"[", b'"', b"a", b"0" * 25, b"2e+123", b"5."]
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_NUMBERISH, st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_the_number_check_is_the_regex_over_the_whole_file(parts: list[bytes], sizes: list[int]) -> None:
    """The needles with the exponent's closing test (UUID hex like `1e234` is passed over without
    the regex, issue 30) answer what `_SUSPECT` answers over the whole file, whole or chunked."""
    from openclaw_cli.migration.preflight import SUSPECT

    raw = b"".join(parts)
    expected = SUSPECT.search(raw) is not None
    assert needs_exact_pass(raw) == expected
    probe = ExactProbe()
    hit, pos, n = False, 0, 0
    while pos < len(raw) and not hit:
        size = sizes[n % len(sizes)]
        hit = probe.feed(raw[pos : pos + size], final=False)
        pos, n = pos + size, n + 1
    assert (hit or probe.feed(b"", final=True)) == expected


@pytest.mark.parametrize("space", [b"", b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"  \n  "])
@pytest.mark.parametrize("number", [b"1e400", b"-2.5E-999", b"7e+1234"])
def test_an_exponent_before_any_space_and_a_closer_is_found(space: bytes, number: bytes) -> None:
    from openclaw_cli.migration.preflight import SUSPECT

    for closer in (b",", b"]", b"}"):
        raw = b'{"a": ' + number + space + closer + b'"3e123-1e234f"}'
        assert SUSPECT.search(raw) is not None
        assert needs_exact_pass(raw)
        probe = ExactProbe()
        assert probe.feed(raw, final=False) or probe.feed(b"", final=True)
    raw = b'{"a": "' + number + space + b'x"}'  # not followed by a closer: not a number token
    assert not needs_exact_pass(raw) and SUSPECT.search(raw) is None


def test_the_space_checks_names_are_not_held_through_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The space check lists each sessions dir for the leftovers' sweep (import44b); at 100,000
    sessions those names are ~8 MB, and held through the bulk they took the import's peak RSS from
    ~140 to ~150 MB (issue 30's ceiling). They are gone once the store is locked."""
    import gc
    import weakref

    from openclaw_cli.migration import importer

    class Names(list):  # a list a weak reference can follow
        pass

    seen: list[weakref.ref[Names]] = []
    real_check = importer.check_import_space

    def check(targets: Any, kinds: Any, runs: Any, listed: Any = None) -> None:
        real_check(targets, kinds, runs, listed)
        for directory, names in list((listed or {}).items()):
            listed[directory] = kept = Names(names)
            seen.append(weakref.ref(kept))

    alive: list[int] = []
    real_locked = importer.ImportRun._run_locked

    def locked(self: Any) -> Any:
        gc.collect()
        alive.append(sum(ref() is not None for ref in seen))
        return real_locked(self)

    monkeypatch.setattr(importer, "check_import_space", check)
    monkeypatch.setattr(importer.ImportRun, "_run_locked", locked)
    _generated_store(tmp_path / "state", "main", 30)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    assert doctor("import").exit_code == 0
    assert seen and alive == [0]
