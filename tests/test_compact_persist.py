"""Units of the compaction write protocol (`store.snapshot`, `store.rewrite`, `store.<kind>.compaction`): the in-memory transcript parse and the linear-branch fast path
agree with the store's reader and tree walk; R4.17.2's successor builder on branched transcripts;
OpenClaw's max-lines split; R4.8.3 bookkeeping; and the optimistic write that re-plans after a
concurrent append instead of compacting a stale leaf."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.store import snapshot as persist
from openclaw_cli.store.rewrite import (
    build_successor_lines,
    entry_after_compaction,
    linear_branch,
    max_lines_split,
    parse_lines,
    parse_transcript_bytes,
    parse_transcript_stream,
    rebuilt_context,
)
from openclaw_cli.store.transcript import iter_jsonl_stream
from openclaw_cli.store.tree import active_branch
from tests.compact_support import (
    DB,
    SESSIONS,
    import_sqlite,
    invoke,
    patch_read_snapshot,
    rows,
    transcript_lines,
    write_legacy_state,
)
from tests.session_generator import generate_session

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'


def msg(ident: str, parent: str | None, role: str = "user", text: str = "hi", **extra) -> str:
    message = {"role": role, "content": [{"type": "text", "text": text}]}
    return json.dumps(
        {
            "type": "message",
            "id": ident,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": message,
            **extra,
        }
    )


def reference(data: bytes) -> tuple[list, list]:
    issues: list = []
    lines = list(iter_jsonl_stream(io.BytesIO(data), "x", issues=issues))
    return [(ln.seq, ln.raw, ln.obj, ln.line_no) for ln in lines], [str(i) for i in issues]


def fast(data: bytes) -> tuple[list, list]:
    issues: list = []
    lines = parse_transcript_bytes(data, "x", issues)
    return [(ln.seq, ln.raw, ln.obj, ln.line_no) for ln in lines], [str(i) for i in issues]


def streamed(data: bytes) -> tuple[list, list]:
    """The block-by-block parse a legacy snapshot makes (small blocks: lines cross them), its
    clean lines' text restored afterwards as a successor would."""
    issues: list = []

    class Trickle(io.BytesIO):
        def read(self, size: int = -1) -> bytes:
            return super().read(min(size, 7) if size and size > 0 else 7)

    lines = parse_transcript_stream(Trickle(data), "x", issues, keep_raw=False)
    missing = {ln.line_no: ln for ln in lines if ln.raw is None}
    sink = persist._LineSink(set(missing))
    sink.write(data)
    sink.close()
    for line_no, text in sink.found.items():
        missing[line_no].raw = text
    return [(ln.seq, ln.raw, ln.obj, ln.line_no) for ln in lines], [str(i) for i in issues]


def test_parse_matches_the_streaming_reader_on_awkward_input():
    data = b"".join(
        [
            b"\xef\xbb\xbf" + HEADER.encode() + b"\n",
            b"\n",
            b"   \n",
            msg("a", None).encode() + b"\r\n",
            b"null\n",
            b"0\n",
            b'""\n',
            b"[1,2]\n",
            b"{}\n",
            b'{"big":123456789012345678901234567890}\n',
            b'{"type":"message","id":"bad\n',
            b"\xff\xfe{}\n",
            msg("b", "a").encode() + b"\n",
            b'{"type":"mess',
        ]
    )
    assert fast(data) == reference(data) == streamed(data)
    assert fast(data + b"\n") == reference(data + b"\n") == streamed(data + b"\n")
    # valid UTF-8 takes the whole-text path: the same results, non-ASCII whitespace included
    valid = data.replace(b"\xff\xfe{}\n", '\u00a0\n\u2028\n\u00e9t\u00e9\n{"t":"\u00e9"}\n'.encode())
    valid.decode("utf-8")
    assert fast(valid) == reference(valid) == streamed(valid)
    assert fast(valid + b"\n") == reference(valid + b"\n") == streamed(valid + b"\n")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                HEADER,
                msg("a", None),
                msg("b", "a"),
                "",
                " ",
                "null",
                "[]",
                "{",
                "7",
                '{"type":"x"}',
                '{"a":1}\r',
                "\u00e9t\u00e9",
            ]
        ),
        max_size=12,
    ),
    st.booleans(),
)
def test_parse_matches_the_streaming_reader_property(lines, trailing_newline):
    data = "\n".join(lines).encode() + (b"\n" if trailing_newline else b"")
    assert fast(data) == reference(data) == streamed(data)


def _chain(n: int) -> list[str]:
    out, parent = [HEADER], None
    for i in range(n):
        ident = f"e{i}"
        out.append(msg(ident, parent, role="user" if i % 2 == 0 else "assistant"))
        parent = ident
    return out


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 12),
    st.lists(
        st.tuples(
            st.integers(0, 11),
            st.sampled_from(["side", "leaf", "reparent", "noparent", "dupe", "opaque", "reset", "label"]),
        ),
        max_size=3,
    ),
)
def test_linear_fast_path_is_exact_or_declines(n, changes):
    raw = _chain(n)
    for index, change in changes:
        if not n:
            break
        i = 1 + index % n
        obj = json.loads(raw[i])
        if change == "side":
            obj["appendMode"] = "side"
        elif change == "leaf":
            raw.append(json.dumps({"type": "leaf", "id": f"l{i}", "parentId": obj["id"], "targetId": "e0"}))
            continue
        elif change == "reparent":
            obj["parentId"] = "e0" if i > 1 else None
        elif change == "noparent":
            obj.pop("parentId", None)
        elif change == "dupe":
            obj["id"] = "e0"
        elif change == "opaque":
            obj["type"] = "mystery"
        elif change == "reset":
            obj = {"type": "reset", "id": obj["id"], "parentId": obj.get("parentId"), "reason": "new"}
        elif change == "label":
            obj = {"type": "label", "id": obj["id"], "parentId": obj.get("parentId"), "targetId": "e0"}
        raw[i] = json.dumps(obj)
    lines = parse_lines(raw)
    quick = linear_branch(lines)
    if quick is not None:
        assert [ln.raw for ln in quick] == [ln.raw for ln in active_branch(lines)]
    if not changes:
        assert quick is not None and len(quick) == n


def test_successor_keeps_side_branches_and_reparents_to_the_nearest_survivor():
    raw = [
        HEADER,
        json.dumps({"type": "model_change", "id": "m0", "parentId": None, "provider": "p", "modelId": "x"}),
        msg("u1", "m0"),
        msg("a1", "u1", role="assistant"),
        json.dumps({"type": "label", "id": "lab1", "parentId": "a1", "targetId": "u1", "label": "start"}),
        json.dumps(
            {
                "type": "custom_message",
                "id": "c1",
                "parentId": "lab1",
                "customType": "note",
                "content": "a note",
                "display": True,
            }
        ),
        msg("u2", "c1"),
        msg("side1", "u2", text="a side branch"),
        json.dumps({"type": "leaf", "id": "nav", "parentId": "side1", "targetId": "u2"}),
        msg("a2", "u2", role="assistant"),
        msg("u3", "a2"),
        msg("a3", "u3", role="assistant"),
    ]
    compaction = {
        "type": "compaction",
        "id": "cmp",
        "parentId": "a3",
        "timestamp": "2026-01-01T00:00:09.000Z",
        "summary": "S",
        "firstKeptEntryId": "u3",
        "tokensBefore": 10,
    }
    lines = parse_lines([*raw, json.dumps(compaction)])
    out = build_successor_lines(
        lines, session_id="new", timestamp="2026-01-02T00:00:00.000Z", cwd="/w", parent_session="/old.jsonl"
    )
    header, *rest = [json.loads(x) for x in out]
    assert header == {
        "type": "session",
        "version": 4,
        "id": "new",
        "timestamp": "2026-01-02T00:00:00.000Z",
        "cwd": "/w",
        "parentSession": "/old.jsonl",
    }
    ids = [e["id"] for e in rest]
    # off-branch entries first, then the branch; summarised messages and the label on u1 are gone
    assert ids == ["side1", "nav", "m0", "c1", "u3", "a3", "cmp"]
    by_id = {e["id"]: e for e in rest}
    assert by_id["c1"]["parentId"] == "m0" and by_id["u3"]["parentId"] == "c1"  # nearest surviving ancestor
    assert by_id["side1"]["parentId"] == "c1"
    assert out[-1] == json.dumps(compaction)  # untouched lines stay byte-exact
    assert rebuilt_context(parse_lines(out)) == rebuilt_context(lines)
    hard = dict(compaction, firstKeptEntryId="cmp")  # a hard checkpoint removes every message before it
    out = build_successor_lines(
        parse_lines([*raw, json.dumps(hard)]), session_id="n", timestamp="t", cwd="/", parent_session=None
    )
    assert [json.loads(x)["id"] for x in out[1:]] == ["side1", "nav", "m0", "c1", "cmp"]
    assert "parentSession" not in json.loads(out[0])
    assert rebuilt_context(parse_lines(out)) == rebuilt_context(parse_lines([*raw, json.dumps(hard)]))


def test_max_lines_split():
    data = "\n".join(_chain(6)).encode() + b"\n"
    kept, dropped, total = max_lines_split(data, 3)
    assert (dropped, total) == (4, 7) and kept[0] == HEADER.encode()
    assert (
        json.loads(kept[1]) == {**json.loads(_chain(6)[5]), "parentId": None}
        and kept[2] == _chain(6)[6].encode()
    )
    assert max_lines_split(data, 1) == ([HEADER.encode()], 6, 7)
    assert max_lines_split(data, 7)[1:] == (0, 7)
    headerless = "\r\n".join(_chain(4)[1:]).encode()
    kept, dropped, _ = max_lines_split(headerless, 2)
    assert (
        dropped == 2
        and [json.loads(k)["id"] for k in kept] == ["e2", "e3"]
        and json.loads(kept[0])["parentId"] is None
    )


def test_bookkeeping_keeps_unknown_fields_in_order():
    entry = {"sessionId": "s", "zeta": [1], "compactionCount": "3", "totalTokens": 9, "alpha": None}
    out = entry_after_compaction(entry, tokens_after=120, now_ms=5)
    assert list(out)[:5] == list(entry) and out["compactionCount"] == 1 and out["totalTokens"] == 120
    assert out["totalTokensFresh"] is True and out["updatedAt"] == 5 and entry["totalTokens"] == 9
    assert entry_after_compaction({"compactionCount": 2}, tokens_after=None, now_ms=1) == {
        "compactionCount": 3,
        "updatedAt": 1,
        "totalTokensFresh": False,
    }


def _append_on_first_read(monkeypatch, state: Path, kind: str, appended: list[str]) -> None:
    def racing(real, store, key, entry, **kwargs):
        snapshot = real(store, key, entry, **kwargs)
        if not appended:  # another writer appends right after our read
            last = snapshot.branch_entries[-1]["id"]
            line = msg("late1", last, text="a message written meanwhile")
            appended.append(line)
            if kind == "legacy":
                with open(snapshot.path, "a") as fh:
                    fh.write(line + "\n")
            else:
                from openclaw_cli.store.sqlite.store import SqliteStore

                with SqliteStore(state / DB, "main") as other:
                    other.append_events(snapshot.session_id, [line], session_key=key)
        return snapshot

    patch_read_snapshot(monkeypatch, racing)


def test_a_concurrent_append_makes_it_replan_on_the_new_leaf(state_dir: Path, monkeypatch):
    for kind in ("legacy", "sqlite"):
        for child in list(state_dir.iterdir()):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        write_legacy_state(state_dir, {"agent:main:main": generate_session(71, turns=12)})
        if kind == "sqlite":
            import_sqlite(state_dir)
        appended: list[str] = []
        _append_on_first_read(monkeypatch, state_dir, kind, appended)
        rc, doc, err = invoke("compact", "agent:main:main", "--keep-recent-tokens", "500")
        assert rc == 0, (doc, err)
        row = rows(state_dir)["agent:main:main"]
        lines = transcript_lines(state_dir, row["sessionId"], row)
        assert lines[-2] == appended[0]  # the late line is kept, and the compaction follows it
        assert json.loads(lines[-1])["parentId"] == "late1" and json.loads(lines[-1])["type"] == "compaction"
        assert sum(json.loads(x)["type"] == "compaction" for x in lines) == 1
        assert (state_dir / SESSIONS).exists()


def _snapshot_view(snapshot: persist.TranscriptSnapshot) -> list:
    return [(ln.seq, ln.raw, ln.obj, ln.line_no) for ln in snapshot.lines]


def test_sqlite_lines_from_rows_equal_the_export_and_bytes_come_on_demand(state_dir: Path):
    """Our SQLite store: a summary compaction takes the lines straight from the rows (no export);
    they equal what parsing the exported JSONL gives, the bytes are exported only when asked, and
    never for a session that changed since the snapshot; unusual rows take the export path."""
    import sqlite3

    from openclaw_cli.store.sqlite.store import SqliteStore

    key = "agent:main:main"
    write_legacy_state(state_dir, {key: generate_session(72, turns=10)})
    import_sqlite(state_dir)
    with SqliteStore(state_dir / DB, "main") as st:
        entry = st.get_entry(key)
        full = st.read_snapshot(key, entry)
        quick = st.read_snapshot(key, entry, data_on_demand=True)
        assert full.raw_data is not None and quick.raw_data is None  # the rows path was taken
        assert all(ln.raw is None for ln in quick.lines)  # the rows' text is not kept meanwhile
        quick.restore_raw()  # ... and comes back exactly (what a successor is built from)
        assert _snapshot_view(quick) == _snapshot_view(full) and quick.signature == full.signature
        assert quick.data == full.data and quick.raw_data == full.data
        stale = st.read_snapshot(key, entry, data_on_demand=True)
        st.append_events(entry["sessionId"], [msg("late", stale.branch_entries[-1]["id"])], session_key=key)
        with pytest.raises(persist.SnapshotChanged):
            stale.data  # noqa: B018 - the property is the operation under test
        sid = entry["sessionId"]
        seq = (
            sqlite3.connect(state_dir / DB)
            .execute(
                "SELECT seq FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT 1 OFFSET 3", (sid,)
            )
            .fetchone()[0]
        )
        for odd in (
            "null",
            '{"type":"x","id":"odd"}\r',
            "{bad",
            "[1,2]",
            "{}",
            '{"a":1}\n{"b":2}',
            "\ufeff{}",
        ):
            with sqlite3.connect(state_dir / DB) as conn:
                conn.execute(
                    "UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = ?",
                    (odd, sid, seq),
                )
            conn.close()
            full = st.read_snapshot(key, entry)
            quick = st.read_snapshot(key, entry, data_on_demand=True)
            assert quick.raw_data is not None, odd  # declined: the export path
            assert _snapshot_view(quick) == _snapshot_view(full), odd
            assert [str(i) for i in quick.issues] == [str(i) for i in full.issues], odd


def test_legacy_snapshot_holds_no_transcript_bytes_and_copies_only_the_same_file(state_dir: Path):
    """A legacy snapshot parses the file while reading it: no bytes, clean lines without their
    text; the text comes back exactly when asked, and the archive source copies the file only
    while it is the snapshot's (an append meanwhile is a SnapshotChanged, nothing copied)."""
    from openclaw_cli.store.legacy.store import LegacyStore

    key = "agent:main:main"
    write_legacy_state(state_dir, {key: generate_session(73, turns=10)})
    st = LegacyStore(state_dir / SESSIONS / "sessions.json", "main")
    entry = st.get_entry(key)
    snap = st.read_snapshot(key, entry, data_on_demand=True)
    assert snap.raw_data is None and snap.lines and all(ln.raw is None for ln in snap.lines)
    original = snap.path.read_bytes()
    expected = [
        (ln.seq, ln.raw, ln.obj, ln.line_no) for ln in parse_transcript_bytes(original, str(snap.path))
    ]
    snap.restore_raw(snap.lines[-3:])  # what a successor copies, only
    assert [ln.raw is None for ln in snap.lines] == [True] * (len(snap.lines) - 3) + [False] * 3
    assert _snapshot_view(snap)[-3:] == expected[-3:]
    snap.restore_raw()
    assert _snapshot_view(snap) == expected
    copied = io.BytesIO()
    assert snap.write_transcript(copied) == len(original) and copied.getvalue() == original
    with snap.path.open("ab") as fh:
        fh.write((msg("late", snap.branch_entries[-1]["id"]) + "\n").encode())
    with pytest.raises(persist.SnapshotChanged):
        snap.write_transcript(io.BytesIO())
    assert snap.raw_data is None
