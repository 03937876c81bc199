"""`openclaw storage` keeps each transcript file's figures between runs (issue 27, speed: 100,000
sessions < 3 s warm): a run answered from the cache gives exactly the figures of a run that reads
every file, on real files — classes, inline media, the biggest sessions and the biggest events with
their ties — and a file that changed is read again."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.maintenance.storage import FileFigures, PayloadTally, tally_sessions
from openclaw_cli.store.legacy.store import LegacyStore, dump_store_bytes
from tests.storage_support import cli_json, make_state

_LINES = [
    '{"type":"session","id":"s"}',
    '{"type":"message","message":{"role":"user","content":"hi"}}',
    '{"type":"message","message":{"role":"user","content":"ho"}}',  # as big as the one above: ties
    '{"type":"message","message":{"role":"toolResult","content":"out"}}',
    '{"type":"compaction","summary":"s"}',
    '{"type":"message","message":{"content":[{"type":"image","mimeType":"image/png","data":"'
    + "A" * 300
    + '"}]}}',
    '{"type":"message","message":{"content":[{"type":"image","mimeType":"image/webp","data":"'
    + "B" * 400
    + '"}]}}',
    "",
]
_PAST = time.time() - 3600  # written an hour ago: settled, so its figures are kept


def _state(tmp_path: Path, files: list[list[int]]) -> LegacyStore:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    rows = {}
    for i, lines in enumerate(files):
        sid = f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd"
        path = sessions / f"{sid}.jsonl"
        path.write_text("".join(_LINES[n] + "\n" for n in lines))
        os.utime(path, (_PAST, _PAST))
        rows[f"agent:main:cron:job{i}" if i % 2 else f"agent:main:telegram:direct:u{i}"] = {
            "sessionId": sid,
            "updatedAt": 1_700_000_000_000 + i,
            "sessionFile": str(path),
        }
    (sessions / "sessions.json").write_bytes(dump_store_bytes(rows))
    return LegacyStore(sessions / "sessions.json", "main")


def _tally(store: LegacyStore, top_n: int, files: FileFigures | None) -> tuple[Any, ...]:
    tally = PayloadTally(top_n=top_n)
    by_kind: dict[str, list[int]] = {}
    top: list[Any] = []
    unreadable: list[dict[str, str]] = []
    count = tally_sessions(
        store, store.iter_rows_with_transcripts(), tally, by_kind, top, top_n, unreadable, set(), files
    )
    events = sorted(tally.top_events, key=lambda t: (-t[0], -t[1]))
    return (
        count,
        tally.classes,
        tally.media,
        [(size, where) for size, _, where in events],
        by_kind,
        sorted(top),
        unreadable,
    )


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(st.lists(st.sampled_from(range(len(_LINES))), max_size=8), min_size=1, max_size=8),
    top_n=st.sampled_from([0, 1, 2, 3, 10]),
    cached_top_n=st.sampled_from([0, 1, 3]),
)
def test_figures_from_the_cache_equal_figures_read_from_every_file(
    tmp_path_factory, files: list[list[int]], top_n: int, cached_top_n: int
) -> None:
    root = tmp_path_factory.mktemp("c")
    store = _state(root, files)
    cache = root / "cache"
    expected = _tally(store, top_n, None)
    first = FileFigures(str(store.sessions_dir), cache)
    _tally(store, cached_top_n, first)  # (the cache made under another --top)
    assert first.read == len(files)
    warm = FileFigures(str(store.sessions_dir), cache)
    assert _tally(store, top_n, warm) == expected
    assert warm.read == 0  # nothing read but the files whose lines may be the biggest


def test_a_changed_file_is_read_again_and_a_young_file_is_not_kept(tmp_path: Path) -> None:
    store = _state(tmp_path, [[0, 1, 3], [0, 4, 5], [0, 2]])
    cache = tmp_path / "cache"
    _tally(store, 3, FileFigures(str(store.sessions_dir), cache))
    changed = store.sessions_dir / "00000001-aaaa-bbbb-cccc-dddddddddddd.jsonl"
    with changed.open("a") as fh:
        fh.write(_LINES[6] + "\n")  # just now: read, and read again next time
    for _ in range(2):
        files = FileFigures(str(store.sessions_dir), cache)
        assert _tally(store, 3, files) == _tally(store, 3, None)
        assert files.read == 1
    os.utime(changed, (_PAST, _PAST))  # settled: read once more, then kept
    for read in (1, 0):
        files = FileFigures(str(store.sessions_dir), cache)
        assert _tally(store, 3, files) == _tally(store, 3, None)
        assert files.read == read


def test_a_damaged_or_unwritable_cache_only_costs_the_reading(tmp_path: Path) -> None:
    store = _state(tmp_path, [[0, 1], [0, 3, 5]])
    cache = tmp_path / "cache"
    expected = _tally(store, 2, None)
    _tally(store, 2, FileFigures(str(store.sessions_dir), cache))
    [kept] = (cache / "storage").iterdir()
    kept.write_bytes(b"\x00garbage")
    files = FileFigures(str(store.sessions_dir), cache)
    assert _tally(store, 2, files) == expected and files.read == 2
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be")
    files = FileFigures(str(store.sessions_dir), blocked)
    assert _tally(store, 2, files) == expected and files.read == 2


def test_storage_answers_the_same_from_the_cache_on_the_fixture(state_dir: Path, monkeypatch) -> None:
    """The whole command: the second run (figures from the cache) prints the first run's document,
    and so does a run that reads every file after one transcript grew."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "cache"))
    make_state("legacy", state_dir)
    sessions = state_dir / "agents" / "main" / "sessions"
    for path in sessions.glob("*.jsonl"):
        os.utime(path, (_PAST, _PAST))

    def doc() -> dict[str, Any]:
        code, out, err = cli_json("storage", "--no-plan")
        assert code == 0, err
        out.pop("generatedAt")
        return out

    first = doc()
    assert list((state_dir.parent / "cache" / "openclaw-cli" / "storage").iterdir())
    assert doc() == first
    rows = json.loads((sessions / "sessions.json").read_text())
    grown = sessions / f"{rows['agent:main:main']['sessionId']}.jsonl"
    with grown.open("a") as fh:
        fh.write('{"type":"message","message":{"role":"user","content":"' + "z" * 300_000 + '"}}\n')
    after = doc()
    assert after["topEvents"][0]["key"] == "agent:main:main" and after["topEvents"][0]["bytes"] > 300_000
    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "empty-cache"))
    assert doc() == after  # every file read
