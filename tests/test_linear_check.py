"""The streamed linear check of a transcript (`ops.transcript_export._is_linear`, what lets
chat.history and exports stream the active branch) keeps its ids in bounded memory: past
EXACT_IDS a fixed Bloom filter, with an exact recount of the ids it suspects. It must answer
exactly as `rewrite.linear_branch` (which holds every id), whatever the filter's size."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from openclaw_cli.ops import transcript_export
from openclaw_cli.store.base import TranscriptLine
from openclaw_cli.store.rewrite import linear_branch


def _chain(ids: list[str], *, header_id: str = "s1") -> list[TranscriptLine]:
    lines = [TranscriptLine(seq=0, raw="", obj={"type": "session", "id": header_id})]
    previous = None
    for n, ident in enumerate(ids, 1):
        obj = {"type": "message", "id": ident, "parentId": previous, "message": {"role": "user"}}
        lines.append(TranscriptLine(seq=n, raw="", obj=obj))
        previous = ident
    return lines


@pytest.mark.parametrize("bits", [1 << 6, 1 << 10, 1 << 27])
def test_bounded_check_answers_as_the_exact_rule(monkeypatch: pytest.MonkeyPatch, bits: int) -> None:
    monkeypatch.setattr(transcript_export, "EXACT_IDS", 8)
    monkeypatch.setattr(transcript_export, "_FILTER_BITS", bits)
    rng = random.Random(7)
    passes: list[int] = []
    for case in range(300):
        ids = [f"m{n}" for n in range(rng.randrange(1, 60))]
        if case % 3 == 0 and len(ids) > 2:  # a repeated id somewhere, early or late
            ids[rng.randrange(1, len(ids))] = ids[rng.randrange(0, len(ids) - 1)]
        if case % 7 == 0:
            ids.append("s1")  # a message id equal to the header's: not a repeat
        lines = _chain(ids)
        calls = 0

        def again(lines: list[TranscriptLine] = lines) -> Iterator[TranscriptLine]:
            nonlocal calls
            calls += 1
            return iter(lines)

        assert transcript_export._is_linear(again) == (linear_branch(lines) is not None), ids
        passes.append(calls)
    if bits == 1 << 6:
        assert max(passes) == 2  # a tiny filter suspects ids: the exact recount ran


def test_ids_past_the_exact_set_are_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcript_export, "EXACT_IDS", 1000)
    seen = transcript_export._SeenIds()
    for n in range(5000):
        assert seen.add(f"id-{n}")
    assert seen.bits is not None and not seen.exact
    assert len(seen.suspects) < 5
    assert not seen.add("id-3") or "id-3" in seen.suspects  # a repeat is caught or suspected
