"""`openclaw storage` at 100,000 sessions (issue 27, speed and memory): the two shortcuts it takes
give exactly the figures of the long way, on real files.

* a whole transcript tallied in one buffer (`_tally_whole`) = the line-by-line `TallySink`;
* a pretty-printed `sessions.json` read one row at a time (`iter_rows_with_transcripts`) = the
  whole-file parse, and any file the row cutter doubts falls back to it."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.maintenance.storage import PayloadTally, TallySink, _tally_file
from openclaw_cli.store.legacy.store import LegacyStore, dump_store_bytes

_LINES = [
    '{"type":"session","id":"s"}',
    '{"type":"message","message":{"role":"user","content":"hi"}}',
    '{"type":"message","message":{"role":"toolResult","content":"out"}}',
    '{"type": "message", "message": {"role": "toolResult", "content": "spaced"}}',
    '{"type":"tool_result","content":"x"}',
    '{"type":"compaction","summary":"s","role":"toolResult"}',
    '{"type": "compaction", "summary": "spaced"}',
    '{"type":"message","pad":"' + "p" * 420 + '","message":{"role":"toolResult"}}',  # past the head
    '{"type":"message","text":"mentions \\"compaction\\" and toolResult in passing"}',
    '{"type":"message","message":{"content":[{"type":"image","mimeType":"image/png","data":"'
    + "A" * 300
    + '"}]}}',
    "",
    "   ",
    "\t",
    '  {"type":"message","lead":"space"}',
    '{"type":"message","trail":"space"}  ',
]


def _tally_both(tmp_path: Path, text: bytes, top_n: int) -> tuple[tuple, tuple]:
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    fast = PayloadTally(top_n=top_n)
    figures = _tally_file(str(path), fast, ("main", "k", "s"))
    slow = PayloadTally(top_n=top_n)
    sink = TallySink(slow, ("main", "k", "s"))
    for i in range(0, len(text), 7):  # small blocks: lines cut across writes
        sink.write(text[i : i + 7])
    sink.close()

    def doc(tally: PayloadTally) -> tuple:
        return (tally.classes, tally.media, sorted(tally.top_events))

    return (figures, doc(fast)), ((sink.lines, sink.bytes), doc(slow))


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(range(len(_LINES))), max_size=25),
    final_newline=st.booleans(),
    top_n=st.sampled_from([0, 1, 3, 10]),
)
def test_whole_file_tally_equals_the_line_by_line_tally(
    tmp_path_factory, lines: list[int], final_newline: bool, top_n: int
) -> None:
    text = "\n".join(_LINES[i] for i in lines).encode()
    if final_newline and text:
        text += b"\n"
    fast, slow = _tally_both(tmp_path_factory.mktemp("t"), text, top_n)
    assert fast == slow


def test_tool_results_and_compactions_are_classified_in_one_buffer(tmp_path: Path) -> None:
    text = "\n".join(_LINES[1:9]).encode() + b"\n"
    (figures, (classes, _media, top)), slow = _tally_both(tmp_path, text, 3)
    assert (figures, (classes, _media, top)) == slow
    assert classes["toolResults"][1] == 3  # two roles + tool_result; the padded one is text
    assert classes["compactionSummaries"][1] == 2  # the compaction that also names toolResult
    assert classes["text"][1] == 3
    assert figures == (8, sum(len(line) for line in _LINES[1:9]))


def _store(tmp_path: Path, raw: bytes) -> LegacyStore:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_bytes(raw)
    for sid in ("a1", "b2", "c3"):
        (sessions / f"{sid}.jsonl").write_text('{"type":"session"}\n')
    return LegacyStore(sessions / "sessions.json", "main")


def _rows(store: LegacyStore) -> list[tuple[str, dict, str | None]]:
    return list(store.iter_rows_with_transcripts())


ROWS = {
    "agent:main:a": {"sessionId": "a1", "updatedAt": 3, "nested": {"k": [1, {"x": "y"}]}},
    "agent:main:bad": {"updatedAt": 2},  # no sessionId: unusable, skipped as by load_entries
    "agent:main:b": {"sessionId": "b2", "sessionFile": "b2.jsonl", "label": 'a "quoted"\nline'},
    "agent:main:gone": {"sessionId": "zz9", "updatedAt": 1},  # no transcript file
    "agent:main:c": {"sessionId": "c3", "updatedAt": 0},
}


def _expected(store: LegacyStore) -> list[tuple[str, dict, str | None]]:
    prefix = str(store.sessions_dir) + "/"
    out = []
    for key, entry in store.load_entries().items():
        sid = entry["sessionId"]
        out.append((key, entry, prefix + f"{sid}.jsonl" if sid != "zz9" else None))
    return out


def test_pretty_printed_store_is_read_row_by_row_with_the_same_rows(tmp_path: Path) -> None:
    store = _store(tmp_path, dump_store_bytes(ROWS))
    got = _rows(store)
    assert store._snapshot is None  # never parsed whole
    assert got == _expected(store)
    assert [k for k, _, _ in got] == ["agent:main:a", "agent:main:b", "agent:main:gone", "agent:main:c"]


def test_other_layouts_fall_back_to_the_whole_parse(tmp_path: Path) -> None:
    pretty = dump_store_bytes(ROWS).decode()
    cases = {
        "compact": json.dumps(ROWS, separators=(",", ":")),
        "indent4": json.dumps(ROWS, indent=4),
        # a number orjson refuses (> 64 bits) in the last row
        "bigint": pretty[:-2]
        + ',\n  "agent:main:z": {"sessionId": "c3", "n": 123456789012345678901234567890}\n}',
        "trailing": pretty + "\n\n",
    }
    for name, raw in cases.items():
        store = _store(tmp_path / name, raw.encode())
        assert _rows(store) == _expected(store), name


def test_a_repeated_key_keeps_its_first_row(tmp_path: Path) -> None:
    """No writer repeats a key (JSON.stringify cannot); rows already given are not taken back, so a
    repeat stops the row cutter and the row keeps what was first written."""
    pretty = dump_store_bytes(ROWS).decode()
    store = _store(tmp_path, (pretty[:-2] + ',\n  "agent:main:a": {"sessionId": "c3"}\n}').encode())
    got = _rows(store)
    assert [k for k, _, _ in got] == ["agent:main:a", "agent:main:b", "agent:main:gone", "agent:main:c"]
    assert got[0][1]["sessionId"] == "a1"


def test_a_broken_store_still_raises_what_the_whole_parse_raises(tmp_path: Path) -> None:
    from openclaw_cli.errors import OpenClawError

    store = _store(tmp_path, dump_store_bytes(ROWS)[:-40])
    try:
        _rows(store)
    except OpenClawError as exc:
        assert "sessions.json" in exc.message
    else:
        raise AssertionError("a truncated sessions.json must be an error")
