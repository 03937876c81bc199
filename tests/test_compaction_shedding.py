"""Tool output shed while a summary compaction reads (`compaction/shedding.py`, issue 15): the
documents (summary, identifiers kept and dropped, token figures, cut point) are exactly those made
from whole objects, on both store kinds and both tokenizers, for hard checkpoints and kept tails
(a cut inside a block, blocks around a previous compaction), with failed results, bash output
between results, an abandoned branch and non-ASCII tool output; a rotation's successor is the same;
a transcript that changed before a re-read is never mixed in."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.compaction import service, shedding
from openclaw_cli.compaction.identifiers import IdentifierScanner
from openclaw_cli.compaction.summarizer import _tool_identifiers
from openclaw_cli.store.snapshot import SnapshotChanged
from tests.compact_support import (
    SESSIONS,
    import_sqlite,
    invoke,
    rows,
    transcript_lines,
    write_config,
    write_legacy_state,
)
from tests.conftest import copy_tree
from tests.session_generator import generate_session

KEY = "agent:main:main"


def _relink(entries: list[dict[str, Any]]) -> None:
    for previous, entry in zip(entries, entries[1:], strict=False):
        entry["parentId"] = previous["id"]


def _session(seed: int) -> Any:
    """A generated session plus what the generator never writes: bash executions between tool
    results, tool output in CJK / Cyrillic / emoji, an image block, a failed result whose first
    lines are blank, and an abandoned branch holding identifiers of its own."""
    session = generate_session(seed, turns=70, tool_output_chars=(100, 2500))
    entries = session.entries
    rng = random.Random(seed)
    results = [i for i, e in enumerate(entries) if e.get("message", {}).get("role") == "toolResult"]
    for n, index in enumerate(results[::7]):
        message = entries[index]["message"]
        message["content"][0]["text"] += f"\n修改 /srv/数据/报告_{n}.md 完成。 Привет ✅ build-{n:04d}-ok"
        if n % 3 == 0:
            message["content"].append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        if n % 4 == 1:
            message["isError"] = True
            message["content"][0]["text"] = (
                f"\n  \nError: exit 3 at step-{n}\n" + message["content"][0]["text"]
            )
    for index in sorted(rng.sample(results, 6), reverse=True):
        entries.insert(
            index + 1,
            {
                "type": "message",
                "id": f"bash{index:04x}",
                "parentId": None,
                "timestamp": entries[index]["timestamp"],
                "message": {
                    "role": "bashExecution",
                    "command": f"ls /srv/bash-{index}",
                    "output": f"/srv/bash-{index}/out_{index}.log\nOPS-{index}",
                    "exitCode": 1,
                    "timestamp": 1,
                },
            },
        )
    _relink(entries)
    side_at = len(entries) // 3
    side = {
        "type": "message",
        "id": "side0001",
        "parentId": entries[side_at]["id"],
        "timestamp": entries[side_at]["timestamp"],
        "message": {
            "role": "toolResult",
            "toolCallId": "call_side",
            "toolName": "read",
            "content": [{"type": "text", "text": "side branch /srv/side/only_here.py SIDE-4242"}],
            "isError": False,
            "timestamp": 1,
        },
    }
    entries.insert(side_at + 2, side)  # the next entry's parent stays side_at + 1: `side` is abandoned
    return session


def _normalised(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("compactionEntryId", None)
    return doc


class _Recorder:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, window: int, block: int):
        self.made: list[shedding.ToolOutputShedder] = []
        monkeypatch.setattr(shedding, "WINDOW_CHARS", window)
        monkeypatch.setattr(shedding, "ESTIMATE_WINDOW_CHARS", window)
        monkeypatch.setattr(shedding, "BLOCK_CHARS", block)
        monkeypatch.setattr(shedding, "_LINE_CACHE_CHARS", min(block, 10**7))  # small: cleared, overflowed
        real = service._shedder

        def record(method: str) -> Any:
            made = real(method)
            self.made.append(made)
            return made

        monkeypatch.setattr(service, "_shedder", record)


def _compact(*args: str) -> dict[str, Any]:
    code, doc, stderr = invoke("compact", KEY, *args)
    assert code == 0, (doc, stderr)
    return doc


def _state(state_dir: Path, kind: str, seed: int) -> None:
    write_legacy_state(state_dir, {KEY: _session(seed)})
    if kind == "sqlite":
        import_sqlite(state_dir)


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
@pytest.mark.parametrize("tokenizer", ["estimate", "exact"])
def test_dry_runs_are_identical_with_and_without_shedding(
    state_dir: Path, monkeypatch, kind: str, tokenizer: str
):
    _state(state_dir, kind, 31)
    cases = [
        (),
        ("--keep-recent-tokens", "3000"),
        ("--keep-recent-tokens", "20000"),
        ("--keep-recent-tokens", "250"),
    ]
    whole = []
    with monkeypatch.context() as m:
        _Recorder(m, 10**12, 10**12)
        whole = [_compact("--dry-run", "--tokenizer", tokenizer, *case) for case in cases]
    recorder = _Recorder(monkeypatch, 3000, 7000)
    shed = [_compact("--dry-run", "--tokenizer", tokenizer, *case) for case in cases]
    for case, a, b in zip(cases, whole, shed, strict=True):
        assert _normalised(a) == _normalised(b), case
        assert a["summary"] and a["identifiersKept"]
    assert all(r.shed_total > 100 for r in recorder.made)  # most tool results were shed
    assert "SIDE-4242" not in json.dumps(shed)  # the abandoned branch never mixes in
    if tokenizer == "exact":  # exact counts re-read what they count; estimates never re-read
        assert any(r.rereads for r in recorder.made)
    else:
        assert all(r.rereads == 0 or r.restored for r in recorder.made)


@pytest.mark.parametrize(
    ("kind", "tokenizer"), [("legacy", "exact"), ("sqlite", "exact"), ("legacy", "estimate")]
)
def test_repeated_compaction_and_rotation_match_whole_objects(
    state_dir: Path, tmp_path: Path, monkeypatch, kind: str, tokenizer: str
):
    """Real runs: a compaction after a previous one (blocks straddle its kept start), then a
    rotation (truncateAfterCompaction): the same documents, and the successor holds the same lines
    (exact mode also leaves unread message fields out: the successor gets them back)."""
    _state(state_dir, kind, 32)
    pristine = copy_tree(state_dir, tmp_path / "pristine")

    def rounds(window: int, block: int) -> tuple[list[dict[str, Any]], list[str]]:
        shutil.rmtree(state_dir)
        copy_tree(pristine, state_dir)
        with monkeypatch.context() as m:
            _Recorder(m, window, block)
            first = _compact("--keep-recent-tokens", "6000", "--tokenizer", "exact")
            _append_turns(state_dir, kind, 12)
            write_config(state_dir, {"truncateAfterCompaction": True})
            second = _compact("--keep-recent-tokens", "1500", "--tokenizer", tokenizer)
        assert second.get("successor") and not second.get("warnings"), {
            k: v for k, v in second.items() if k != "summary"
        }
        successor = [
            json.loads(x) for x in transcript_lines(state_dir, second["sessionId"], rows(state_dir)[KEY])
        ]
        body = [
            json.dumps(e, sort_keys=True).replace(first["compactionEntryId"], "<first compaction>")
            for e in successor
            if e.get("type") not in ("session", "compaction")
        ]
        return [first, second], body

    whole_docs, whole_lines = rounds(10**12, 10**12)
    shed_docs, shed_lines = rounds(2000, 5000)
    assert shed_lines == whole_lines and len(whole_lines) > 3

    def comparable(doc: dict[str, Any]) -> dict[str, Any]:
        drop = ("compactionEntryId", "sessionId", "successor", "archive", "path")
        return {k: v for k, v in doc.items() if k not in drop}

    assert [comparable(d) for d in shed_docs] == [comparable(d) for d in whole_docs]


def _append_turns(state_dir: Path, kind: str, turns: int) -> None:
    """New turns after a compaction (tool output with identifiers of their own)."""
    from openclaw_cli.store.sqlite.store import SqliteStore

    row = rows(state_dir)[KEY]
    sid = row["sessionId"]
    parent = json.loads(transcript_lines(state_dir, sid, row)[-1])["id"]
    lines = []
    for n in range(turns):
        for role, extra in (
            ("user", {}),
            ("assistant", {}),
            ("toolResult", {"toolCallId": f"call_n{n}", "toolName": "read"}),
        ):
            ident = f"new{n:02d}{role[:3]}"
            text = f"round two {role} {n}: /srv/round2/file_{n}.py REL-{n}00 " + "log line\n" * 200
            lines.append(
                json.dumps(
                    {
                        "type": "message",
                        "id": ident,
                        "parentId": parent,
                        "timestamp": f"2026-10-02T10:{n:02d}:00.000Z",
                        "message": {"role": role, "content": [{"type": "text", "text": text}], **extra},
                    }
                )
            )
            parent = ident
    if kind == "sqlite":
        from tests.compact_support import DB

        with SqliteStore(state_dir / DB, "main") as st:
            entry = st.get_entry(KEY)
            st.append_events(entry["sessionId"], lines, session_key=KEY)
    else:
        with (state_dir / SESSIONS / f"{sid}.jsonl").open("a") as fh:
            fh.write("".join(line + "\n" for line in lines))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab/.:1-2 \nx_9", max_size=40), max_size=14), st.data())
def test_block_identifiers_stand_for_their_texts(texts: list[str], data: Any):
    """Runs of newest-first tool texts replaced by their block's identifiers give the same values in
    the same order as one scan of every text (what `shedding` relies on)."""
    expected = list(IdentifierScanner().scan_many(texts, prose=False))
    items: list[Any] = []
    index = 0
    while index < len(texts):
        size = data.draw(st.integers(1, len(texts) - index))
        run = texts[index : index + size]
        if data.draw(st.booleans()):
            ids = tuple(IdentifierScanner().scan_many(run, prose=False))
            items.append(shedding.ShedBlock(ids, (), 0))
        else:
            items.extend(run)
        index += size
    assert list(_tool_identifiers(IdentifierScanner(), items)) == expected


def test_a_changed_transcript_is_never_re_read_into_a_plan(state_dir: Path):
    from openclaw_cli.store.legacy.store import LegacyStore

    write_legacy_state(state_dir, {KEY: _session(33)})
    store = LegacyStore(state_dir / SESSIONS / "sessions.json", "main")
    entry = store.get_entry(KEY)
    shedder = shedding.ToolOutputShedder(1000, 3000)
    snapshot = store.read_snapshot(KEY, entry, data_on_demand=True, on_entry=shedder)
    shedder.bind(snapshot)
    shed = [e for e in snapshot.branch_entries if shedding.shed_of(e.get("message")) is not None]
    assert shed and all(p["text"] == "" for e in shed for p in e["message"]["content"] if p["type"] == "text")
    shedder.restore([shedding.shed_of(shed[0]["message"]).line_no])  # whole again, exactly
    original = {json.loads(x)["id"]: json.loads(x) for x in transcript_lines(state_dir, entry["sessionId"])}
    assert shed[0] == original[shed[0]["id"]] | {"parentId": shed[0]["parentId"]}
    with snapshot.path.open("a") as fh:
        fh.write(json.dumps({"type": "custom", "id": "late0001", "parentId": None}) + "\n")
    with pytest.raises(SnapshotChanged):
        shedder.restore([shedding.shed_of(shed[-1]["message"]).line_no])
