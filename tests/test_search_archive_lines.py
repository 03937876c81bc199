"""An archive's hit lines kept in the index (issue 26, stop 40): a compressed archive never changes
under its identity (its file's size, mtime and inode), so the text of a line a search read back
from it is kept in the disposable index, and a later hit on that line is served from there —
no decompression, no `zstandard` import — while the archive is the same file. A replaced
archive is read again; a removed one takes its kept lines with it; `--reindex` drops them all.

Stop 41: the build that reads an archive keeps its short lines (<= BUILT_LINE_CHARS) the same way
(`built_lines`), so even the first search that hits one needs no decompression; a longer line is
still read back on its first hit and kept then."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from openclaw_cli.search import engine
from openclaw_cli.search import search as library_search
from openclaw_cli.search.index import index_path

ARCHIVE = "0badc0de-0000-4000-8000-000000000001.jsonl.deleted.2026-10-01T10-00-00.000Z.zst"
FILLER = 400  # lines before the hit: reading it back decompresses past the first read step


def _line(mid: str, text: str) -> bytes:
    message = {"role": "user", "content": text, "timestamp": 1796000000000}
    return json.dumps({"type": "message", "id": mid, "timestamp": 1796000000000, "message": message}).encode()


def _long(word: str) -> str:
    return f"the narwhal {word} sings" + " verse" * 1000  # over BUILT_LINE_CHARS: read back when hit


def _archive_bytes(word: str, long: bool = False) -> bytes:
    filler = [_line(f"fill{i:04d}", f"filler line {i} " + "padding " * 40) for i in range(FILLER)]
    hit = _line("arch0001", _long(word) if long else f"the narwhal {word} sings")
    return b"\n".join([*filler, hit, _line("arch0002", "end")]) + b"\n"


def _write_archive(sdir: Path, word: str, long: bool = False) -> Path:
    """The archive written to a new file renamed over the name (as a writer replaces a file)."""
    path = sdir / ARCHIVE
    tmp = sdir / ".archive.tmp"
    tmp.write_bytes(zstandard.ZstdCompressor().compress(_archive_bytes(word, long)))
    os.replace(tmp, path)
    return path


@pytest.fixture
def state(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sdir = state_dir / "agents" / "main" / "sessions"
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / "sessions.json").write_text("{}")
    live = sdir / "0badc0de-0000-4000-8000-000000000002.jsonl"
    live.write_bytes(_line("live0001", "a live narwhal line") + b"\n")
    _write_archive(sdir, "alpha")
    engine.close_kept()
    yield state_dir
    engine.close_kept()


def _kept_lines(state: Path, table: str = "lines") -> list[tuple[str, str, str]]:
    """The lines a search kept (`lines`: key, messageId, text), or a build (`built_lines`: the
    source id and position as the key)."""
    base = index_path(state / "agents" / "main" / "sessions" / "sessions.json")
    key = "key" if table == "lines" else "src || ':' || pos"
    found = []
    for i in range(2):
        conn = sqlite3.connect(base.with_name(f"{base.stem}.{i}{base.suffix}"))
        try:
            found += conn.execute(f"SELECT {key}, message_id, text FROM {table}").fetchall()
        finally:
            conn.close()
    return found


def _built_mids(state: Path) -> set[str]:
    return {mid for _, mid, _ in _kept_lines(state, "built_lines")}


_SEARCH = """
import json, sys
from openclaw_cli.search import search
hits = list(search(sys.argv[1], sys.argv[2]))
print(json.dumps({"hits": hits, "zstandard": "zstandard" in sys.modules}))
"""


def _search_in_a_new_process(state: Path, cache: Path, query: str = "narwhal") -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", _SEARCH, str(state), query],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found: dict[str, object] = json.loads(out.stdout)
    return found


def test_a_long_line_read_back_from_an_archive_is_served_from_the_index_without_zstandard(
    state: Path, tmp_path: Path
) -> None:
    _write_archive(state / "agents" / "main" / "sessions", "alpha", long=True)
    first = _search_in_a_new_process(state, tmp_path / "cache")  # builds the index, reads the line back
    assert first["zstandard"] is True
    hits = first["hits"]
    assert isinstance(hits, list)
    assert sorted(hit["messageId"] for hit in hits) == ["arch0001", "live0001"]
    assert [(mid, text) for _, mid, text in _kept_lines(state)] == [("arch0001", _long("alpha"))]
    built = {mid for _, mid, _ in _kept_lines(state, "built_lines")}
    assert "arch0002" in built and "arch0001" not in built  # the build kept only the short ones
    again = _search_in_a_new_process(state, tmp_path / "cache")
    assert again == {"hits": hits, "zstandard": False}  # the same bytes, the archive not opened


def test_the_first_search_that_hits_a_short_archive_line_needs_no_zstandard(
    state: Path, tmp_path: Path
) -> None:
    """The build kept the line's text: a process that never read it back serves it as read."""
    built = _search_in_a_new_process(state, tmp_path / "cache", "live")  # builds the index only
    assert [hit["messageId"] for hit in built["hits"]] == ["live0001"]  # type: ignore[attr-defined]
    built = {mid: text for _, mid, text in _kept_lines(state, "built_lines")}
    assert built["arch0001"] == "the narwhal alpha sings" and built["arch0002"] == "end"
    first = _search_in_a_new_process(state, tmp_path / "cache")
    assert first["zstandard"] is False  # imported on base, which had to read the line back
    assert _kept_lines(state) == []  # nothing read back, nothing kept by the search
    with_reads = _search_in_a_new_process(state, tmp_path / "fresh")  # one process: build, then hit
    assert first["hits"] == with_reads["hits"]
    assert sorted(hit["snippet"] for hit in first["hits"]) == [  # type: ignore[attr-defined]
        "a live narwhal line",
        "the narwhal alpha sings",
    ]


@pytest.mark.parametrize("long", [False, True])
def test_a_replaced_archive_is_read_again(state: Path, monkeypatch: pytest.MonkeyPatch, long: bool) -> None:
    """Whether the line was kept by the build (short) or by the search that read it (long)."""
    sdir = state / "agents" / "main" / "sessions"
    if long:
        _write_archive(sdir, "alpha", long=True)
    first = list(library_search(state, "narwhal"))
    assert any("alpha sings" in hit["snippet"] for hit in first)
    engine.forget_answers()
    # the same name, the same length, another text: the index's rows (by name) still point at the
    # line, which must be read from the file as it is now
    path = _write_archive(sdir, "omega", long)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    snippets = [hit["snippet"] for hit in library_search(state, "narwhal")]
    assert any("omega sings" in s for s in snippets) and not any("alpha sings" in s for s in snippets)
    assert [text[:23] for _, _, text in _kept_lines(state)] == ["the narwhal omega sings"]
    engine.forget_answers()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the archive was opened")

    monkeypatch.setattr("openclaw_cli.store.archives.open_archive", refuse)
    assert [hit["snippet"] for hit in library_search(state, "narwhal")] == snippets  # kept again


def test_a_removed_archive_takes_its_lines_and_reindex_drops_them(state: Path) -> None:
    _write_archive(state / "agents" / "main" / "sessions", "alpha", long=True)
    list(library_search(state, "narwhal"))
    assert len(_kept_lines(state)) == 1 and "arch0002" in _built_mids(state)
    (state / "agents" / "main" / "sessions" / ARCHIVE).unlink()
    assert [hit["messageId"] for hit in library_search(state, "narwhal")] == ["live0001"]
    assert _kept_lines(state) == [] and _built_mids(state) == set()
    _write_archive(state / "agents" / "main" / "sessions", "alpha", long=True)
    list(library_search(state, "narwhal"))
    assert len(_kept_lines(state)) == 1 and "arch0002" in _built_mids(state)
    list(library_search(state, "filler", reindex=True))  # --reindex drops every kept line
    assert _kept_lines(state) == []  # (the filler lines it hits are short: the rebuild kept them)
    assert _built_mids(state) == {f"fill{i:04d}" for i in range(FILLER)} | {"arch0002"}
    list(library_search(state, "verse", reindex=True))  # the long line: read back again, kept again
    assert [mid for _, mid, _ in _kept_lines(state)] == ["arch0001"]
