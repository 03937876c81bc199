"""The warm library path (issue 26, stop 37): a process that searches again keeps each index's
shard connections open, and every answer stays as fresh as a first search's — a new line is found
by the very next call, a deleted or replaced index is opened anew, a forked child never uses its
parent's connections — and the snippets are made for the page's hits only."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from openclaw_cli.search import engine
from openclaw_cli.search import search as library_search
from tests.conftest import generate_legacy_state


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    engine.close_kept()
    yield state_dir
    engine.close_kept()


def _message(mid: str, text: str) -> bytes:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1796000000000}
    return json.dumps({"type": "message", "id": mid, "timestamp": 1796000000000, "message": message}).encode()


def _append(state: Path, mid: str, text: str) -> None:
    sdir = state / "agents" / "main" / "sessions"
    sid = next(iter(json.loads((sdir / "sessions.json").read_text()).values()))["sessionId"]
    with open(sdir / f"{sid}.jsonl", "ab") as fh:
        fh.write(_message(mid, text) + b"\n")


class _Opens:
    """Counts the AgentIndex objects the engine opens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = engine.AgentIndex

        def counting(*args: object, **kwargs: object) -> engine.AgentIndex:
            self.count += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(engine, "AgentIndex", counting)


def test_a_second_search_reuses_the_open_index_and_still_sees_a_new_line(
    legacy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens = _Opens(monkeypatch)
    # the first search builds the files: not kept (their identity before it was none)
    first = list(library_search(legacy, "session", limit=25))
    assert list(library_search(legacy, "session", limit=25)) == first
    assert opens.count == 2
    assert list(library_search(legacy, "session", limit=25)) == first
    assert opens.count == 2  # kept open, not opened again
    _append(legacy, "warm0001", "marmoset ukulele")
    assert [r["messageId"] for r in library_search(legacy, "marmoset")] == ["warm0001"]
    _append(legacy, "warm0002", "marmoset again")
    assert sorted(r["messageId"] for r in library_search(legacy, "marmoset")) == ["warm0001", "warm0002"]
    assert opens.count == 2


def test_a_deleted_or_replaced_index_is_opened_anew(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens = _Opens(monkeypatch)
    _append(legacy, "gone0001", "tapir clarinet")
    assert [r["messageId"] for r in library_search(legacy, "tapir")] == ["gone0001"]
    assert [r["messageId"] for r in library_search(legacy, "tapir")] == ["gone0001"]  # kept from here
    assert opens.count == 2
    shutil.rmtree(tmp_path / "cache")  # another process's `rm -rf ~/.cache/openclaw-cli`
    assert [r["messageId"] for r in library_search(legacy, "tapir")] == ["gone0001"]
    assert opens.count == 3
    assert [r["messageId"] for r in library_search(legacy, "tapir")] == ["gone0001"]
    assert opens.count == 4  # built anew by this process (no identity before): kept from here
    assert [r["messageId"] for r in library_search(legacy, "tapir")] == ["gone0001"]
    assert opens.count == 4
    shards = sorted((tmp_path / "cache" / "openclaw-cli" / "search").glob("*.sqlite"))
    assert len(shards) == 2  # built again where the next process looks, not into the removed files
    # replaced (another process rebuilt it after removing it): the new files are the ones read
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "cache", moved)
    _append(legacy, "gone0002", "tapir again")
    assert sorted(r["messageId"] for r in library_search(legacy, "tapir")) == ["gone0001", "gone0002"]
    assert opens.count == 5


def test_a_forked_child_opens_its_own_index(legacy: Path) -> None:
    list(library_search(legacy, "session"))
    list(library_search(legacy, "session"))
    kept = dict(engine._kept)
    assert kept
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            hits = [r["messageId"] for r in library_search(legacy, "session", limit=3)]
            # the parent's kept indexes were set aside, not used, and the child keeps its own
            ok = engine._kept_pid == os.getpid() and all(
                i is not j
                for free in engine._kept.values()
                for i, _ in free
                for lst in kept.values()
                for j, _ in lst
            )
            os.write(write_end, json.dumps({"hits": hits, "ok": ok}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        doc = json.loads(fh.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert doc["ok"] and len(doc["hits"]) == 3
    assert [r["messageId"] for r in library_search(legacy, "session", limit=3)] == doc["hits"]


def test_snippets_are_made_for_the_page_only(legacy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = engine.make_snippet

    def counting(text: str, query: object) -> str:
        made.append(text)
        return real(text, query)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "make_snippet", counting)
    results = list(library_search(legacy, "session", limit=3))
    assert len(results) == 3 and len(made) == 3  # not the fourth hit that tells "truncated"


# ---- the watched sessions directory (search.watch) ------------------------------------------------


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The sessions directories listed (not served from a watch), in order."""
    from openclaw_cli.search import sources, watch

    watch.forget()
    listed: list[str] = []
    real = sources._list_dir

    def counting(base: str, live_files: bool) -> object:
        listed.append(base)
        return real(base, live_files)

    monkeypatch.setattr(sources, "_list_dir", counting)
    yield listed
    watch.forget()


def _ids(state: Path, query: str) -> list[str]:
    return sorted(r["messageId"] for r in library_search(state, query, limit=50))


def test_a_watched_directory_is_listed_again_only_after_a_change(legacy: Path, listings: list[str]) -> None:
    import zstandard

    sdir = legacy / "agents" / "main" / "sessions"
    sid = next(iter(json.loads((sdir / "sessions.json").read_text()).values()))["sessionId"]
    live = sdir / f"{sid}.jsonl"
    for _ in range(4):
        assert _ids(legacy, "narwhal") == []
    assert len(listings) == 2  # the first (no watch), the second (sets it up); then none
    changes = [
        ("append", lambda: _append(legacy, "watch001", "narwhal appended"), ["watch001"]),
        ("new file", lambda: (sdir / "12345678-1234-4234-8234-123456789abc.jsonl").write_bytes(
            _message("watch002", "narwhal new file") + b"\n"), ["watch001", "watch002"]),
        ("removed", lambda: (sdir / "12345678-1234-4234-8234-123456789abc.jsonl").unlink(), ["watch001"]),
        ("archive", lambda: (sdir / "abcdefab-1234-4234-8234-123456789abc.jsonl.deleted.2026-10-01T10-00-00.000Z.zst")
            .write_bytes(zstandard.ZstdCompressor().compress(_message("watch003", "narwhal archived") + b"\n")),
            ["watch001", "watch003"]),
        ("rewritten", lambda: live.write_bytes(live.read_bytes().replace(b"narwhal appended", b"walrus appended")),
            ["watch003"]),
        ("renamed in", lambda: os.replace(sdir / "abcdefab-1234-4234-8234-123456789abc.jsonl.deleted.2026-10-01T10-00-00.000Z.zst",
            sdir / "abcdefab-1234-4234-8234-123456789abc.jsonl.reset.2026-10-01T10-00-00.000Z.zst"), ["watch003"]),
    ]  # fmt: skip
    for what, change, expected in changes:
        before = len(listings)
        change()
        assert _ids(legacy, "narwhal") == expected, what
        assert len(listings) == before + 1, what
        assert _ids(legacy, "narwhal") == expected, what
        assert len(listings) == before + 1, what  # unchanged since: not listed again
    found = {r["messageId"]: r["source"] for r in library_search(legacy, "narwhal")}
    assert found == {"watch003": "archive:reset"}


def test_a_touched_transcript_is_seen(legacy: Path, listings: list[str]) -> None:
    """Same size, new mtime (IN_ATTRIB): its token changed, so the index compares it again."""
    sdir = legacy / "agents" / "main" / "sessions"
    for _ in range(3):
        list(library_search(legacy, "session"))
    before = len(listings)
    path = next(sdir.glob("*.jsonl"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    list(library_search(legacy, "session"))
    assert len(listings) == before + 1


def test_a_replaced_directory_is_listed_again(legacy: Path, listings: list[str]) -> None:
    """Another sessions directory at the same path (a state moved away and another put there):
    the watch follows the old one, so the path's directory is compared on every use."""
    sdir = legacy / "agents" / "main" / "sessions"
    for _ in range(3):
        assert _ids(legacy, "narwhal") == []
    copy = legacy / "agents" / "main" / "sessions.new"
    shutil.copytree(sdir, copy)
    sid = next(iter(json.loads((copy / "sessions.json").read_text()).values()))["sessionId"]
    with open(copy / f"{sid}.jsonl", "ab") as fh:
        fh.write(_message("moved001", "narwhal in the new directory") + b"\n")
    os.rename(sdir, legacy / "agents" / "main" / "sessions.old")
    os.rename(copy, sdir)
    assert _ids(legacy, "narwhal") == ["moved001"]
    for _ in range(3):
        assert _ids(legacy, "narwhal") == ["moved001"]
    _append(legacy, "moved002", "narwhal appended after the move")
    assert _ids(legacy, "narwhal") == ["moved001", "moved002"]


def test_a_linked_transcript_keeps_its_directory_listed_every_time(
    legacy: Path, tmp_path: Path, listings: list[str]
) -> None:
    """A write through a link in another directory is reported there, not in the watched one."""
    sdir = legacy / "agents" / "main" / "sessions"
    sid = next(iter(json.loads((sdir / "sessions.json").read_text()).values()))["sessionId"]
    elsewhere = tmp_path / "elsewhere.jsonl"
    os.link(sdir / f"{sid}.jsonl", elsewhere)
    for _ in range(4):
        assert _ids(legacy, "narwhal") == []
    with open(elsewhere, "ab") as fh:
        fh.write(_message("link0001", "narwhal through the other link") + b"\n")
    assert _ids(legacy, "narwhal") == ["link0001"]
    assert len(listings) == 5


def test_a_forked_child_sets_up_its_own_watch(legacy: Path, listings: list[str]) -> None:
    for _ in range(3):
        assert _ids(legacy, "narwhal") == []
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            found = _ids(legacy, "narwhal")
            _append(legacy, "fork0001", "narwhal from the child")
            found += _ids(legacy, "narwhal")
            os.write(write_end, json.dumps(found).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        child = json.loads(fh.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child == ["fork0001"]
    # the parent's watch saw the child's append (the child never read the parent's queue)
    assert _ids(legacy, "narwhal") == ["fork0001"]


# ---- an archive hit's line (sources.FileReader.read_at) --------------------------------------------


@pytest.mark.parametrize("step", [1, 7, 64, 1 << 16])
def test_an_archive_line_is_read_back_exactly_whatever_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    import random

    import zstandard

    from openclaw_cli.search import sources

    monkeypatch.setattr(sources, "ARCHIVE_READ_STEP", step)
    lines = [f'{{"n": {i}, "text": "{"x" * (i * 13 % 90)}"}}'.encode() for i in range(60)]
    data = b"\n".join(lines)  # the last line without its newline
    path = tmp_path / "a.jsonl.deleted.2026-10-01T10-00-00.000Z.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    positions = []
    at = 0
    for line in lines:
        positions.append((at, line))
        at += len(line) + 1
    order = list(positions)
    random.Random(step).shuffle(order)
    reader = sources.FileReader(path, compressed=True)  # one search: kept bytes reused and extended
    for position, line in order:
        assert reader.read_at(position) == line
    for position, line in positions:
        assert sources.FileReader(path, compressed=True).read_at(position) == line


def test_an_early_archive_hit_does_not_decompress_the_rest(tmp_path: Path) -> None:
    import zstandard

    from openclaw_cli.search import sources

    first = b'{"first": true}'
    data = first + b"\n" + b"\n".join(b'{"filler": "%d"}' % i for i in range(200_000)) + b"\n"
    path = tmp_path / "b.jsonl.deleted.2026-10-01T10-00-00.000Z.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    reader = sources.FileReader(path, compressed=True)
    assert reader.read_at(0) == first
    assert reader._data is not None and len(reader._data) <= sources.ARCHIVE_READ_STEP < len(data)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)
    assert reader.read_at(len(last[0]) + 1) == last[1]


# ---- snippets (search.snippet) -------------------------------------------------------------------


def test_a_tokens_span_is_the_same_counted_in_steps() -> None:
    """`_span` skips ASCII tokens SKIP_STEP at a time; the span is the one a plain count gives,
    from the text's start or from any token's start."""
    import random
    from itertools import islice

    from openclaw_cli.search import snippet
    from openclaw_cli.search.text import ASCII_TOKEN_RE, TOKEN_RE

    rng = random.Random(7)
    alphabet = "ab Z9 .,-_\n\t'\"é\ue000"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 900)))
        pattern = ASCII_TOKEN_RE if text.isascii() else TOKEN_RE
        spans = [m.span() for m in pattern.finditer(text)]
        if not spans:
            continue
        for _ in range(5):
            first = rng.randrange(len(spans))
            index = rng.randrange(len(spans) - first)
            start = spans[first][0] if rng.random() < 0.7 else 0
            offset = first if start else 0
            assert snippet._span(text, index, start) == spans[offset + index]
            assert next(islice(pattern.finditer(text), offset + index, None)).span() == spans[offset + index]


def test_snippets_of_long_lines_are_the_same_as_before() -> None:
    """The window chosen, its cut and the matches counted (list.index, fewer end checks) over long
    texts with many matches, phrases and prefixes: the same snippet as a count of every match."""
    import random

    from openclaw_cli.search.query import parse
    from openclaw_cli.search.snippet import WINDOW, _best_window, _matches, _words, make_snippet

    rng = random.Random(3)
    vocabulary = ["gateway", "the", "quokka", "lighthouse", "gate", "session", "turn", "x1", "Café"]
    queries = [parse(q) for q in ("gateway", '"quokka lighthouse"', "gate*", '"the gateway turn"', "café")]
    for _ in range(200):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randrange(1, 700)))
        for query in queries:
            words = _words(text)
            hits = _matches(words, query.highlight_terms)
            every = sorted(
                (i, i + len(term.words) - 1)
                for term in query.highlight_terms
                for i in range(len(words) - len(term.words) + 1)
                if words[i : i + len(term.words) - 1] == list(term.words[:-1])
                and (
                    words[i + len(term.words) - 1] == term.words[-1]
                    or (term.prefix and words[i + len(term.words) - 1].startswith(term.words[-1]))
                )
            )
            assert hits == every
            if len(words) > WINDOW:
                best, best_count = 0, -1
                for start in sorted({max(0, a - 4) for a, _ in hits}) or [0]:
                    start = min(start, len(words) - WINDOW)
                    count = sum(1 for a, b in hits if start <= a and b < start + WINDOW)
                    if count > best_count:
                        best, best_count = start, count
                assert _best_window(hits, len(words)) == best
            assert make_snippet(text, query)


# ---- the page a kept index answered last ---------------------------------------------------------


def _count_line_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a search reads a line's text from its source."""
    reads: list[int] = []
    real = engine._line_text

    def counting(*args: object) -> object:
        reads.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_line_text", counting)
    return reads


def test_the_same_question_of_unchanged_sources_is_answered_again_without_reading(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _count_line_reads(monkeypatch)
    _append(legacy, "page0001", "ocelot harpsichord")
    for _ in range(2):  # the first builds the index (not kept), the second keeps the page
        first = list(library_search(legacy, "ocelot"))
    reads.clear()
    made: list[str] = []
    real_snippet = engine.make_snippet

    def counting_snippets(text: str, query: object) -> str:
        made.append(text)
        return real_snippet(text, query)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "make_snippet", counting_snippets)
    again = list(library_search(legacy, "ocelot"))
    assert again == first and [r["messageId"] for r in again] == ["page0001"] and reads == []
    assert made == []  # its snippet too
    again[0]["snippet"] = "changed by the caller"
    assert list(library_search(legacy, "ocelot")) == first  # a copy each time
    assert list(library_search(legacy, "ocelot", limit=5)) == first and reads  # another question
    reads.clear()
    assert [r["snippet"] for r in library_search(legacy, "ocelot", redact=True)] == [first[0]["snippet"]]
    _append(legacy, "page0002", "ocelot again")  # the sources changed: asked anew
    assert sorted(r["messageId"] for r in library_search(legacy, "ocelot")) == ["page0001", "page0002"]
    # another process empties the index (its generation moves): asked anew, built again
    from openclaw_cli.search import index as search_index

    other = search_index.AgentIndex(
        search_index.index_path(legacy / "agents" / "main" / "sessions" / "sessions.json")
    )
    other.reset()
    other.close()
    reads.clear()
    assert sorted(r["messageId"] for r in library_search(legacy, "ocelot")) == ["page0001", "page0002"]
    assert reads


def test_forgotten_answers_are_read_from_the_index_again(
    legacy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bench's "question not asked before": the same question after forget_answers reads lines
    reads = _count_line_reads(monkeypatch)
    _append(legacy, "page0001", "ocelot harpsichord")
    for _ in range(2):  # built, then the page kept
        first = list(library_search(legacy, "ocelot"))
    reads.clear()
    engine.forget_answers()
    assert list(library_search(legacy, "ocelot")) == first and reads
    assert engine._kept  # the open indexes stay


def test_the_directories_kept_are_bounded(
    legacy: Path, tmp_path: Path, listings: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.search import watch

    monkeypatch.setattr(watch, "KEEP_DIRECTORIES", 1)
    other = tmp_path / "other-state"
    shutil.copytree(legacy, other)
    _append(other, "bound001", "narwhal elsewhere")
    for _ in range(3):
        assert _ids(legacy, "narwhal") == []
        assert _ids(other, "narwhal") == ["bound001"]
        assert len(watch._dirs) <= 1 and len(watch._by_wd) <= 1
    assert len(listings) == 6  # each let go by the other: listed every time


def test_a_plain_line_is_read_back_without_the_archive_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stop 38: a hit in a plain transcript is read with `pread` up to its newline, not through
    `open_archive`'s stream and `readline`: the same bytes at every position (a line longer than
    one read step, blank lines, no final newline, past the end) and the same errors."""
    from openclaw_cli.errors import InvalidDataError, RefusedError
    from openclaw_cli.search import sources

    path = tmp_path / "t.jsonl"
    lines = [
        b'{"a": 1}',
        b"",
        b"  ",
        b'{"long": "' + b"x" * (sources.PLAIN_READ_STEP * 2 + 5) + b'"}',
        b"  tail  ",
    ]
    path.write_bytes(b"\n".join(lines))  # no final newline
    data = path.read_bytes()

    def expected(position: int) -> bytes | None:
        with open(path, "rb") as fh:
            fh.seek(position)
            return fh.readline().strip() or None

    positions = [0, 1, len(data) - 3, len(data), len(data) + 10]
    positions += [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    reader = sources.FileReader(str(path))

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("open_archive used for a plain line")

    monkeypatch.setattr("openclaw_cli.store.archives.open_archive", refuse)
    for position in positions:
        assert reader.read_at(position) == expected(position), position
    with pytest.raises(InvalidDataError, match="Archive not found"):
        sources.FileReader(str(tmp_path / "gone.jsonl")).read_at(0)
    (tmp_path / "link.jsonl").symlink_to(path)
    with pytest.raises(RefusedError, match="symbolic links are not followed"):
        sources.FileReader(str(tmp_path / "link.jsonl")).read_at(0)
    with pytest.raises(IsADirectoryError):  # as open_archive's fdopen says it
        sources.FileReader(str(tmp_path)).read_at(0)


def test_a_kept_ranking_and_the_skipped_lines_cost_one_lookup_and_stay_fresh(legacy: Path) -> None:
    """stop 38: a ranking kept for the shard's generation is read by one statement (no
    transaction of four), and what the sources skipped is kept per generation (no scan of every
    source); a write (a new bad line) is seen by the very next search."""
    from openclaw_cli.search.query import parse

    sdir = legacy / "agents" / "main" / "sessions"
    sid = next(iter(json.loads((sdir / "sessions.json").read_text()).values()))["sessionId"]

    def bad_line() -> None:
        with open(sdir / f"{sid}.jsonl", "ab") as fh:
            fh.write(b"{not json\n")

    _append(legacy, "good0001", "narwhal saxophone")
    bad_line()
    for _ in range(2):
        assert [hit["messageId"] for hit in library_search(legacy, "narwhal")] == ["good0001"]
    [[(index, _)]] = list(engine._kept.values())
    first = index.skipped()
    assert sum("not a JSON line" in line for line in first) == 1
    statements: list[str] = []
    for shard in index.shards:
        shard.conn.set_trace_callback(statements.append)
    try:
        assert index.skipped() == first
        assert [hit.message_id for hit in index.query(parse("narwhal").fts, limit=11)] == ["good0001"]
    finally:
        for shard in index.shards:
            shard.conn.set_trace_callback(None)
    assert not any("SELECT issues" in sql or sql == "BEGIN" for sql in statements), statements
    bad_line()
    assert [hit["messageId"] for hit in library_search(legacy, "narwhal")] == ["good0001"]
    [[(again, _)]] = list(engine._kept.values())
    assert again is index
    assert sum("not a JSON line" in line for line in index.skipped()) == 2


def test_the_top_hits_from_the_ranking_s_first_rows_are_the_whole_rule_s(
    legacy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stop 41: `_top` looks up the rows of the ranking's first entries only (those scoring at most
    the wanted-th's, and one more) when they are all live: the same hits in the same order as
    looking up every entry ranked — with tied scores (equal lines), retired rows (a rewritten
    transcript) and every page size."""
    from openclaw_cli.search import index as index_mod

    sdir = legacy / "agents" / "main" / "sessions"
    files = sorted(sdir.glob("*.jsonl"))
    for n, path in enumerate(files):
        with open(path, "ab") as fh:
            for i in range(12):
                words = " ".join(["walrus"] * (1 + (i + n) % 4))  # scores repeat: ties across lines
                # ids falling as the rows' ids rise: a tie is ordered otherwise by id than by row
                fh.write(_message(f"w{99 - n:02d}{99 - i:02d}", f"{words} kettle") + b"\n")
    assert len(list(library_search(legacy, "walrus"))) == 10
    data = files[0].read_bytes()  # rewritten (not appended): its rows retired, its lines read again
    files[0].write_bytes(data.replace(b"kettle", b"teapot"))
    assert len(list(library_search(legacy, "walrus"))) == 10
    [[(index, _)]] = list(engine._kept.values())
    assert any(
        shard.conn.execute("SELECT count(*) FROM sources WHERE live = 0").fetchone()[0]
        for shard in index.shards
    )

    def page(shard: index_mod._Shard, match: str, want: int) -> list[tuple[object, ...]]:
        hits = shard._top(match, want)
        assert hits is not None
        return [(h.row_id, h.rank, h.ts, h.message_id, h.source_row) for h in hits]

    real_prefix = index_mod._Shard._top_prefix
    used = [0]

    def counted(self: index_mod._Shard, *args: object) -> object:
        found = real_prefix(self, *args)  # type: ignore[arg-type]
        used[0] += found is not None
        return found

    for match in ('"walrus"', '"kettle"', '"teapot"'):
        for shard in index.shards:
            for want in range(1, 40):
                monkeypatch.setattr(index_mod._Shard, "_top_prefix", counted)
                fast = page(shard, match, want)
                monkeypatch.setattr(index_mod._Shard, "_top_prefix", lambda self, *args: None)
                assert fast == page(shard, match, want), (match, want)
    assert used[0] > 0
