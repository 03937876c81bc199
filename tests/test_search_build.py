"""The search index's first build (issue 26, the build path): what each shard is created with and
how a parallel build splits its work. Speed figures live in `scripts/bench` (search-big)."""

from __future__ import annotations

import io
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_cli.search.query import parse
from tests.conftest import generate_legacy_state


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    return state_dir


def _hashsize(path: Path) -> int | None:
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT v FROM fts_config WHERE k = 'hashsize'").fetchone()
    return int(row[0]) if row else None


def test_shards_hold_a_build_in_memory_before_writing_a_segment(tmp_path: Path) -> None:
    """Every shard's FTS5 table is created (and re-created by a reset) with the raised pending-data
    limit: a first build is written as one segment, not merged again level by level."""
    from openclaw_cli.search.index import FTS_HASHSIZE, AgentIndex

    index = AgentIndex(tmp_path / "idx.sqlite")
    try:
        paths = [p for p in index.paths if p is not None]
        assert len(paths) == 2
        assert [_hashsize(p) for p in paths] == [FTS_HASHSIZE] * 2
        index.reset()
        assert [_hashsize(p) for p in paths] == [FTS_HASHSIZE] * 2
    finally:
        index.close()
    assert FTS_HASHSIZE > 1 << 20  # FTS5's default is 1 MB


def test_a_forked_shard_builder_reuses_the_parents_file_sources(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources that share no connection (files) serve the forked child as the parent built them: it
    neither lists the sessions directory again nor parses sessions.json before its shard. A
    refresh that fails would make the child fail (and the parent redo its shard)."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.search import index as index_mod
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.store.detect import open_agent_store

    monkeypatch.setattr(index_mod, "PARALLEL_MIN_SOURCES", 1)
    monkeypatch.setattr(index_mod, "_single_threaded", lambda: True)
    collected: list[Any] = []
    real_collect = index_mod._collect

    def collect(child: tuple[int, int]) -> Any:
        stats = real_collect(child)
        collected.append(stats)
        return stats

    monkeypatch.setattr(index_mod, "_collect", collect)

    def no_refresh(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the child scanned the sources again")

    import openclaw_cli.search.engine as engine_mod

    real_agent_sources = engine_mod.agent_sources
    calls: list[int] = []

    def agent_sources(*args: Any, **kwargs: Any) -> Any:
        calls.append(os.getpid())
        if len(calls) > 1:
            no_refresh()
        return real_agent_sources(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "agent_sources", agent_sources)
    paths = resolve_paths()
    store = open_agent_store(paths, "main", read_only=True)
    try:
        target = StoreTarget(store, paths.import_archive_dir("main"))
        outcome = search([target], parse("session"), Options(limit=5, index_root=tmp_path / "idx", workers=2))
    finally:
        store.close()
    assert len(collected) == 1 and collected[0] is not None  # the child built its shard itself
    assert collected[0].sources_read > 0
    assert outcome.results


def _journal_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each shard write's journal mode as it starts, one line per write (`<pid> <shard> <mode>`):
    a file, since a forked builder writes too."""
    from openclaw_cli.search import index as index_mod

    log = tmp_path / "journal.log"
    real_write = index_mod._Shard._write

    def write(self: Any, *args: Any) -> Any:
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {Path(str(self.path)).stem.rsplit('.', 1)[-1]} {mode}\n")
        return real_write(self, *args)

    monkeypatch.setattr(index_mod._Shard, "_write", write)
    return log


def _index_tables(root: Path) -> list[Any]:
    shards = sorted((root / "search").glob("*.sqlite"))
    assert len(shards) == 2
    tables = []
    for path in shards:
        with closing(sqlite3.connect(path)) as conn:
            tables.append(
                (
                    conn.execute("SELECT * FROM rows ORDER BY id").fetchall(),
                    conn.execute(
                        "SELECT locator, token, pos, nlines, sig, nrows FROM sources ORDER BY id"
                    ).fetchall(),
                    conn.execute("SELECT rowid FROM fts WHERE fts MATCH 'session' ORDER BY rowid").fetchall(),
                )
            )
        with open(path, "rb") as fh:
            assert fh.read(20)[18:20] == b"\x02\x02"  # left in WAL mode
        assert not Path(f"{path}-journal").exists()
    return tables


def _search_main(root: Path, workers: int) -> Any:
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.store.detect import open_agent_store

    paths = resolve_paths()
    store = open_agent_store(paths, "main", read_only=True)
    try:
        target = StoreTarget(store, paths.import_archive_dir("main"))
        return search([target], parse("session"), Options(limit=5, index_root=root, workers=workers))
    finally:
        store.close()


def test_a_first_build_writes_under_a_rollback_journal_unless_another_connection_is_open(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build writes each shard under a rollback journal (each page once into the file, no
    WAL to checkpoint at its commit) and leaves it in WAL mode; with another connection open on a
    shard, that shard is written through the WAL as before; an update after the build too. The
    index is the same either way."""
    from openclaw_cli.search.index import AgentIndex, index_path

    log = _journal_log(tmp_path, monkeypatch)
    _search_main(tmp_path / "a", workers=1)
    assert [line.split()[1:] for line in log.read_text().splitlines()] == [["0", "delete"], ["1", "delete"]]
    built = _index_tables(tmp_path / "a")

    log.unlink()
    path = index_path(legacy / "agents" / "main" / "sessions" / "sessions.json", tmp_path / "b")
    AgentIndex(path).close()  # the empty shards, created
    with closing(sqlite3.connect(path.with_name(f"{path.stem}.0{path.suffix}"))) as other:
        assert other.execute("SELECT count(*) FROM sources").fetchone() == (0,)
        _search_main(tmp_path / "b", workers=1)
    assert [line.split()[1:] for line in log.read_text().splitlines()] == [["0", "wal"], ["1", "delete"]]
    assert _index_tables(tmp_path / "b") == built

    log.unlink()
    transcript = sorted((legacy / "agents" / "main" / "sessions").glob("*.jsonl"))[0]
    with open(transcript, "ab") as fh:
        fh.write(
            b'{"type":"message","id":"late1","message":{"role":"user","content":"a late session line"}}\n'
        )
    _search_main(tmp_path / "a", workers=1)
    assert [line.split()[2] for line in log.read_text().splitlines()] == ["wal"]  # only its shard changed
    _index_tables(tmp_path / "a")


def test_a_forked_builder_writes_its_first_build_under_a_rollback_journal(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent closes the shards its children build while they write them (an open connection of
    its would keep them in WAL) and opens them again after: both shards of a parallel first build
    are written under a rollback journal, the second by the child, and the index is the one a
    single process builds."""
    from openclaw_cli.search import index as index_mod

    monkeypatch.setattr(index_mod, "PARALLEL_MIN_SOURCES", 1)
    monkeypatch.setattr(index_mod, "_single_threaded", lambda: True)
    log = _journal_log(tmp_path, monkeypatch)
    outcome = _search_main(tmp_path / "par", workers=2)
    writes = sorted((line.split() for line in log.read_text().splitlines()), key=lambda w: w[1])
    assert [w[1:] for w in writes] == [["0", "delete"], ["1", "delete"]]
    by_shard = {w[1]: w[0] for w in writes}
    assert by_shard["0"] == str(os.getpid()) != by_shard["1"]  # the second shard: the child's write
    assert _index_tables(tmp_path / "par") == _index_tables_of_one_process(tmp_path, monkeypatch)
    assert outcome.results


def _index_tables_of_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    _search_main(tmp_path / "seq", workers=1)
    return _index_tables(tmp_path / "seq")


def test_a_shard_opened_during_another_first_build_waits_for_it_on_disk(tmp_path: Path) -> None:
    """A shard opened while another connection writes its first build under a rollback journal is
    opened on disk (not in memory, which would read everything again): it reads what is committed,
    and follows the file back into WAL mode once the build is done."""
    from openclaw_cli.search.index import _set_journal, _Shard

    path = tmp_path / "idx.0.sqlite"
    builder = _Shard(path)
    try:
        assert _set_journal(builder.conn, "delete")
        builder.conn.execute("BEGIN IMMEDIATE")
        builder.conn.execute("INSERT INTO meta VALUES ('built', 'yes')")
        other = _Shard(path)
        try:
            assert other.path == path
            assert other.conn.execute("SELECT value FROM meta WHERE key = 'built'").fetchone() is None
            builder.conn.execute("COMMIT")
            assert _set_journal(builder.conn, "wal")
            assert other.conn.execute("SELECT value FROM meta WHERE key = 'built'").fetchone() == ("yes",)
            assert other.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        finally:
            other.close()
    finally:
        builder.close()


def _signature_by_reading_the_file(path: Path, position: int) -> bytes | None:
    """What `tail_signature` signs, the plain way: the file's 64 bytes ending at `position`."""
    if position <= 0:
        return None
    with open(path, "rb") as fh:
        fh.seek(max(0, position - 64))
        return fh.read(min(64, position))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from([b"", b" ", b"{}", b' {"a": 1} ', b"x" * 70, b"y" * 130, b"\r", b"\xc3\xa9"]),
        min_size=1,
        max_size=20,
    ).map(lambda pieces: b"\n".join(pieces)),
    st.integers(min_value=1, max_value=200),
    st.integers(min_value=0, max_value=25),
    st.booleans(),
)
def test_a_signature_after_reading_is_the_bytes_read(
    tmp_path: Path, data: bytes, chunk: int, stop_after: int, from_a_line: bool
) -> None:
    """The signature taken right after a read (at the last line's end, or its start when reading
    stopped there) comes from the bytes read, equal to the file's own 64 bytes before that
    point, whatever the chunking, the lines before the window and the resume point."""
    import functools
    from unittest import mock

    from openclaw_cli.search import sources

    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    after = None
    if from_a_line:  # resume after the first line, as an incremental update does
        first = [line for line in sources._numbered_lines(io.BytesIO(data), 0, 0)][:1]
        after = first[0][1] if first else None
    chunked = functools.partial(sources._numbered_lines, size=chunk)
    with mock.patch.object(sources, "_numbered_lines", chunked):
        for which in (1, 0):  # the last line's end; its start
            reader = sources.FileReader(path)
            last = None
            for n, line in enumerate(reader.lines(after)):
                last = line
                if n >= stop_after:
                    break
            if last is None:
                continue
            position = last[which]
            with mock.patch("builtins.open", side_effect=open) as opened:
                got = reader.tail_signature(position)
            assert got == _signature_by_reading_the_file(path, position)
            if chunk >= len(data) and position - 64 >= (after or 0):
                assert not opened.called  # within the bytes just read: the file is not opened again


def test_the_signature_is_what_was_read_and_taken_once(tmp_path: Path) -> None:
    """A file rewritten between the read and the signature: the signature is of the bytes read
    (what was indexed); asked again, the reader looks at the file as it is."""
    from openclaw_cli.search.sources import FileReader

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": "' + b"x" * 100 + b'"}\n')
    reader = FileReader(path)
    (line,) = list(reader.lines())
    before = path.read_bytes()
    path.write_bytes(before.replace(b"x", b"z"))
    assert reader.tail_signature(line[1]) == before[line[1] - 64 : line[1]]
    assert reader.tail_signature(line[1]) == path.read_bytes()[line[1] - 64 : line[1]]


def test_a_build_flushes_its_rows_across_sources_in_batches(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows wait for a full batch across sources (one insert per batch, not per source), and so do
    the rows of the sources read whole: the index holds the same rows and sources (ids included)
    whatever the batch size, and the collector is paused while it builds."""
    import gc

    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.search import index as index_mod
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.store.detect import open_agent_store

    seen_gc: list[bool] = []
    real_index_source = index_mod._Shard._index_source

    def index_source(self: Any, *args: Any) -> Any:
        seen_gc.append(gc.isenabled())
        return real_index_source(self, *args)

    monkeypatch.setattr(index_mod._Shard, "_index_source", index_source)
    tables = []
    for batch, root in ((3, tmp_path / "small"), (index_mod.BATCH, tmp_path / "default")):
        monkeypatch.setattr(index_mod, "BATCH", batch)
        paths = resolve_paths()
        store = open_agent_store(paths, "main", read_only=True)
        try:
            target = StoreTarget(store, paths.import_archive_dir("main"))
            search([target], parse("session"), Options(limit=5, index_root=root, workers=1))
        finally:
            store.close()
        shards = sorted((root / "search").glob("*.sqlite"))
        tables.append(
            [
                (
                    conn.execute("SELECT * FROM rows ORDER BY id").fetchall(),
                    conn.execute("SELECT rowid FROM fts WHERE fts MATCH 'session' ORDER BY rowid").fetchall(),
                    conn.execute("SELECT * FROM sources ORDER BY id").fetchall(),
                )
                for conn in (sqlite3.connect(p) for p in shards)
            ]
        )
    assert tables[0] == tables[1]
    assert sum(len(rows) for rows, _, _ in tables[0]) > 3 * 2
    assert sum(len(sources) for _, _, sources in tables[0]) > 3  # more than one batch of them
    sdir = legacy / "agents" / "main" / "sessions"
    _check_sources(root, sdir)
    # then one transcript grows (resumed: its row updated) and one is rewritten (retired, read again)
    grown, rewritten = sorted(sdir.glob("*.jsonl"))[:2]
    with open(grown, "ab") as fh:
        fh.write(b'{"type":"message","id":"g1","message":{"role":"user","content":"grown session line"}}\n')
    rewritten.write_bytes(b"".join(rewritten.read_bytes().splitlines(keepends=True)[:-1]))
    paths = resolve_paths()
    store = open_agent_store(paths, "main", read_only=True)
    try:
        target = StoreTarget(store, paths.import_archive_dir("main"))
        search([target], parse("session"), Options(limit=5, index_root=root, workers=1))
    finally:
        store.close()
    assert _check_sources(root, sdir) == 1  # the rewritten one's first reading, retired
    assert seen_gc and not any(seen_gc) and gc.isenabled()


def _check_sources(root: Path, sdir: Path) -> int:
    """Every source row counts its own rows, and a live transcript's row ends where its file ends,
    signed by the file's last bytes; how many sources are retired."""
    retired = checked = 0
    for path in sorted((root / "search").glob("*.sqlite")):
        with closing(sqlite3.connect(path)) as conn:
            for sid, nrows, counted in conn.execute(
                "SELECT s.id, s.nrows, count(r.id) FROM sources s LEFT JOIN rows r ON r.src = s.id GROUP BY s.id"
            ):
                assert nrows == counted, sid
            for locator, pos, sig, live in conn.execute("SELECT locator, pos, sig, live FROM sources"):
                if not live:
                    retired += 1
                    continue
                if locator.startswith("file:") and locator.endswith(".jsonl"):
                    data = (sdir / locator[5:]).read_bytes()
                    assert (pos, sig) == (len(data), data[-64:]), locator
                    checked += 1
    assert checked >= 6
    return retired


# ---- extract, held to its plain definition ----------------------------------------------------------
def _extract_by_definition(obj: Any, line_no: int, fallback_ts: int = 0) -> Any:
    """`text.extract` written the plain way (two passes over the blocks, a parse per timestamp)."""
    from datetime import datetime

    def stamp(value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return int(value) if value == value and abs(value) < 1e16 else None
        if isinstance(value, str) and value:
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                return None
        return None

    def message_text(message: dict[str, Any]) -> str | None:
        content = message.get("content")
        if isinstance(content, str):
            return content.strip() or None
        text = message.get("text")
        if isinstance(text, str):
            return text.strip() or None
        if not isinstance(content, list):
            return None
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict)
            and b.get("type") in ("text", "input_text", "output_text")
            and isinstance(b.get("text"), str)
            and b["text"].strip()
        ]
        return "\n".join(parts) if parts else None

    def tool_calls(content: Any) -> list[str]:
        import orjson

        if not isinstance(content, list):
            return []
        out = []
        for b in content:
            if not isinstance(b, dict) or b.get("type") not in (
                "toolCall",
                "tool_use",
                "function_call",
                "toolUse",
            ):
                continue
            name, args = b.get("name"), b.get("arguments", b.get("input"))
            if isinstance(args, dict | list):
                try:
                    args = orjson.dumps(args).decode("utf-8")
                except TypeError:
                    args = None
            piece = " ".join(str(x) for x in (name, args) if isinstance(x, str) and x)
            if piece:
                out.append(piece)
        return out

    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role in ("user", "assistant"):
        text = message_text(message)
        calls = tool_calls(message.get("content")) if role == "assistant" else []
        if calls:
            text = "\n".join([text, *calls]) if text else "\n".join(calls)
    elif role in ("toolResult", "tool"):
        content = message.get("content")
        if isinstance(content, str):
            body = content.strip()
        elif isinstance(content, list):
            body = "\n".join(
                b["text"]
                for b in content
                if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].strip()
            )
        else:
            body = ""
        name = message.get("toolName")
        head = name if isinstance(name, str) and name else ""
        text = (f"{head}\n{body}" if head and body else (body or head)) or None
        role = "tool"
    else:
        return None
    if not text:
        return None
    raw_id = obj.get("id")
    message_id = raw_id.strip() if isinstance(raw_id, str) and raw_id.strip() else f"#{line_no}"
    ts = stamp(obj.get("timestamp"))
    if ts is None:
        ts = stamp(message.get("timestamp"))
    return message_id, role, ts if ts is not None else fallback_ts, text


_WORDS = st.sampled_from(["", " ", "alpha", " beta ", "gamma\n", "é", "x y"])
_STAMPS = st.sampled_from(
    [None, True, 1795885046446, 1.5e12, float("nan"), 1e17, "", "2026-11-28T16:57:26.446Z",
     "2026-11-28T16:57:26.446+02:00", "2026-11-28", "not a time", "2026-11-28T16:57:27.000Z"]
)  # fmt: skip
_TEXT_BLOCK = st.builds(
    lambda t, x: {"type": t, "text": x},
    st.sampled_from(["text", "text", "input_text", "output_text", "image"]),
    st.one_of(_WORDS, st.none(), st.integers()),
)
_CALL_BLOCK = st.builds(
    lambda t, n, a, i: {k: v for k, v in (("type", t), ("name", n), ("arguments", a), ("input", i)) if v != "<absent>"},
    st.sampled_from(["toolCall", "tool_use", "function_call", "toolUse", "thinking"]),
    st.sampled_from(["<absent>", None, "", "read", "read", 7]),
    st.sampled_from(["<absent>", None, "", '{"p": 1}', {"path": "a/b.md"}, [1, "x"], 3]),
    st.sampled_from(["<absent>", None, {"q": "z"}, "raw input"]),
)  # fmt: skip
_BLOCKS = st.lists(st.one_of(_TEXT_BLOCK, _CALL_BLOCK, st.sampled_from(["loose text", None, 5])), max_size=4)
_MESSAGES = st.builds(
    lambda role, content, text, tool, stamp: {
        k: v
        for k, v in (
            ("role", role),
            ("content", content),
            ("text", text),
            ("toolName", tool),
            ("timestamp", stamp),
        )
        if v != "<absent>"
    },
    st.sampled_from(["assistant", "assistant", "user", "toolResult", "tool", "system", None]),
    st.one_of(_BLOCKS, _BLOCKS, _WORDS, st.none(), st.integers(), st.just("<absent>")),
    st.one_of(st.just("<absent>"), _WORDS, st.none()),
    st.sampled_from(["<absent>", "", "read", None, 3]),
    st.one_of(st.just("<absent>"), _STAMPS),
)
_LINES = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "message", "message", "session", None]),
        "message": st.one_of(_MESSAGES, _MESSAGES, _MESSAGES, st.none(), st.just("x")),
    },
    optional={"id": st.sampled_from(["", "  ", " m1 ", "m2", None, 4]), "timestamp": _STAMPS},
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(_LINES, st.integers(min_value=1, max_value=9)), min_size=1, max_size=6))
def test_extract_matches_its_plain_definition(lines: list[tuple[dict[str, Any], int]]) -> None:
    """The one-pass `extract` (an assistant's blocks read once, the last timestamp string's value
    kept) gives exactly what the plain definition gives, line after line as a build calls it."""
    from openclaw_cli.search.text import extract

    for obj, line_no in lines:
        assert extract(obj, line_no, 17) == _extract_by_definition(obj, line_no, 17)


@pytest.mark.parametrize("tool", ["<absent>", "read", ""])
@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": " \n "}],
        [{"type": "text", "text": ""}],
        [{"type": "text", "text": "  the result  "}],
        [{"type": "image", "text": "alt text"}],
        [{"type": "text"}],
        [{"type": "text", "text": 5}],
        ["loose text"],
        [None],
        [],
        [{"type": "text", "text": "one"}, {"type": "text", "text": " "}, {"type": "text", "text": "two"}],
    ],
)
@pytest.mark.parametrize("stamp", ["2026-11-28T16:57:26.446Z", 1795885046446, 1.5e12, True, None, "", "bad"])
def test_a_tool_results_blocks_and_a_stamp_as_the_plain_definition_reads_them(
    tool: str, content: list[Any], stamp: Any
) -> None:
    """The one-block tool result (read without a generator and a join) and a timestamp of each type
    (a string tested first) give what the plain definition gives: a blank block is no body."""
    from openclaw_cli.search.text import extract

    message: dict[str, Any] = {"role": "toolResult", "content": content}
    if tool != "<absent>":
        message["toolName"] = tool
    obj = {"type": "message", "id": "t1", "timestamp": stamp, "message": message}
    assert extract(obj, 3, 17) == _extract_by_definition(obj, 3, 17)
