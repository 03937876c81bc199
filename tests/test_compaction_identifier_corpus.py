"""Identifiers survive compaction (issue 15), end to end through `openclaw compact` on both store
kinds (a legacy state and the same state imported into our SQLite store): generated long sessions
with identifiers of every §4.13 class planted in early, middle and late turns, in user text,
assistant text and tool output.

- `--keep-recent-tokens 20000`: every planted identifier of the compacted part is in the summary
  or listed in `identifiersDropped`; with the default budget none is dropped.
- a small budget (and safeguard's 16000-character artifact): some are dropped, each one that is
  dropped is reported and absent from the summary, every other one is in it.
- five rounds of compaction with new turns in between: the first round's user identifiers are
  still in the fifth summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openclaw_cli.compaction.identifiers import IdentifierScanner
from tests.compact_support import (
    DB,
    SESSIONS,
    import_sqlite,
    invoke,
    rows,
    transcript_objects,
    use_template,
    write_config,
    write_legacy_state,
)
from tests.identifier_corpus import Corpus, generate_corpus

KEY = "agent:main:main"
PLANT = {2: 100, 20: 200, 40: 300, 90: 400}  # early, middle, late (all compacted), and one in the kept tail
CORPUS = generate_corpus(15, turns=100, plant_turns=PLANT)


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for kind in ("legacy", "sqlite"):
        state = tmp_path_factory.mktemp(f"corpus-{kind}") / "state"
        write_legacy_state(state, {KEY: CORPUS.session})
        if kind == "sqlite":
            import_sqlite(state)
        out[kind] = state
    return out


@pytest.fixture(params=["legacy", "sqlite"])
def store(request: pytest.FixtureRequest, templates: dict[str, Path], state_dir: Path) -> str:
    use_template(templates[request.param], state_dir)
    return request.param


def compact(*args: str) -> dict:
    code, doc, err = invoke("compact", KEY, *args)
    assert code == 0, (doc, err)
    return doc


def latest_summary(state: Path) -> str:
    row = rows(state)[KEY]
    compactions = [
        e for e in transcript_objects(state, row["sessionId"], row) if e.get("type") == "compaction"
    ]
    return compactions[-1]["summary"]


def compacted_ids(corpus: Corpus, first_kept: str) -> set[str]:
    ids = [e["id"] for e in corpus.session.entries]
    return set(ids[: ids.index(first_kept)])


def summary_identifiers(summary: str) -> dict[str, str]:
    return IdentifierScanner().scan(summary)


def test_corpus_plants_every_class_everywhere():
    kinds = {p.kind for p in CORPUS.planted}
    assert len(kinds) == 22 and {p.place for p in CORPUS.planted} == {"user", "assistant", "tool"}
    assert {p.turn for p in CORPUS.planted} == set(PLANT)
    assert len({p.value for p in CORPUS.planted}) == len(CORPUS.planted)  # unique per turn and place


def test_keep_recent_tokens_20000_keeps_or_reports_every_planted_identifier(store: str, state_dir: Path):
    doc = compact("--keep-recent-tokens", "20000")
    assert doc["compacted"] and not doc["hardCheckpoint"]
    compacted = compacted_ids(CORPUS, doc["firstKeptEntryId"])
    planted = CORPUS.in_entries(compacted)
    assert {p.turn for p in planted} == {2, 20, 40}  # early, middle and late turns were compacted
    summary = latest_summary(state_dir)
    found = summary_identifiers(summary)
    dropped = set(doc["identifiersDropped"])
    lost = [(p.kind, p.place, p.value) for p in planted if p.value not in found and p.value not in dropped]
    assert not lost
    # with the default budget nothing is dropped at all, and the report agrees with the summary
    assert doc["identifiersDropped"] == []
    assert {p.value for p in planted} <= set(doc["identifiersKept"])
    assert all(v in found for v in doc["identifiersKept"])


@pytest.mark.parametrize("mode", ["default", "safeguard"])
def test_a_small_budget_reports_what_it_drops(store: str, state_dir: Path, mode: str):
    # reserveTokens 1000 -> maxTokens 800 -> the smallest identifier budgets; safeguard adds its
    # 16000-character artifact
    write_config(state_dir, {"mode": mode, "reserveTokens": 1000, "reserveTokensFloor": 0})
    doc = compact("--keep-recent-tokens", "20000")
    planted = CORPUS.in_entries(compacted_ids(CORPUS, doc["firstKeptEntryId"]))
    summary = latest_summary(state_dir)
    found = summary_identifiers(summary)
    kept, dropped = set(doc["identifiersKept"]), set(doc["identifiersDropped"])
    assert dropped and not kept & dropped
    assert not [v for v in dropped if v in found]
    for p in planted:
        assert (p.value in found) == (p.value in kept) and (p.value in kept) != (p.value in dropped), p
    lost_places = {p.place for p in planted if p.value in dropped}
    assert lost_places and lost_places <= {"assistant", "tool"}  # some planted ones went; never the user's
    if mode == "safeguard":
        assert len(summary) <= 16000


def _append(state: Path, kind: str, lines: list[str], session_id: str) -> None:
    if kind == "legacy":
        with open(state / SESSIONS / f"{session_id}.jsonl", "a") as handle:
            handle.write("".join(line + "\n" for line in lines))
    else:
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(state / DB, "main") as st:
            st.append_events(session_id, lines, session_key=KEY)


def test_five_rounds_keep_the_first_rounds_user_identifiers(store: str, state_dir: Path):
    sid = CORPUS.session.header["id"]
    first = compact("--keep-recent-tokens", "20000")
    compacted = compacted_ids(CORPUS, first["firstKeptEntryId"])
    first_users = {p.value for p in CORPUS.in_entries(compacted, "user")}
    assert len(first_users) > 40
    parent = first["compactionEntryId"]
    for round_ in range(2, 6):
        more = generate_corpus(
            100 + round_,
            turns=30,
            plant_turns={3: 1000 * round_, 20: 1000 * round_ + 500},
            parent=parent,
            first_id=0x20000000 * round_,
            session_id=sid,
        )
        _append(state_dir, store, [json.dumps(e) for e in more.session.entries], sid)
        doc = compact("--keep-recent-tokens", "8000")
        assert doc["compacted"], doc
        parent = doc["compactionEntryId"]
        summary = latest_summary(state_dir)
        found = summary_identifiers(summary)
        missing = sorted(v for v in first_users if v not in found)
        assert not missing, f"round {round_}: lost {missing[:5]}"
        assert not first_users & set(doc["identifiersDropped"])
    assert summary.count("User-provided identifiers:") == 1  # re-distilled, not nested
