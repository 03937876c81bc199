"""`openclaw compact KEY` on generated long transcripts, on a legacy store and on our SQLite store
(imported with our own `doctor --session-sqlite import`): the kept tail, tool pairing, the rebuilt
context, append-only persistence, hard checkpoints, identifiers, dry runs and `--max-lines`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from openclaw_cli.compaction.messages import COMPACTION_SUMMARY_PREFIX
from openclaw_cli.compaction.thresholds import compaction_threshold
from openclaw_cli.compaction.tokens import Tokenizer
from openclaw_cli.store.archives import read_archive_bytes
from openclaw_cli.store.tree import entry_message
from tests.compact_support import (
    DB,
    SESSIONS,
    header_only,
    import_sqlite,
    invoke,
    rows,
    transcript_lines,
    transcript_objects,
    tree_digest,
    use_template,
    write_config,
    write_legacy_state,
)
from tests.session_generator import generate_session

MAIN = "agent:main:main"
IDS = "agent:main:ids"
SMALL = "agent:main:small"
EMPTY = "agent:main:empty"
MISSING = "agent:main:missing"
GENERATED = {
    MAIN: generate_session(11, target_bytes=2_500_000),
    IDS: generate_session(12, turns=90, plant_every=1),
    SMALL: generate_session(13, turns=4),
    EMPTY: header_only(14),
    MISSING: None,
}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    legacy = tmp_path_factory.mktemp("compact-legacy") / "state"
    write_legacy_state(legacy, GENERATED)
    sqlite = tmp_path_factory.mktemp("compact-sqlite") / "state"
    write_legacy_state(sqlite, GENERATED)
    import_sqlite(sqlite)
    return {"legacy": legacy, "sqlite": sqlite}


@pytest.fixture(params=["legacy", "sqlite"])
def store(request: pytest.FixtureRequest, templates: dict[str, Path], state_dir: Path) -> str:
    use_template(templates[request.param], state_dir)
    return request.param


def run_json(*args: str) -> dict:
    """The command in-process (real files, real SQLite); the text and crash tests use subprocesses."""
    rc, doc, err = invoke(*args)
    assert rc == 0, (doc, err)
    return doc


def original_lines(key: str) -> list[str]:
    return GENERATED[key].jsonl().splitlines()  # type: ignore[union-attr]


def message(entry: dict) -> dict:
    return entry.get("message") if entry.get("type") == "message" else {}


def tool_ids(entries: list[dict]) -> tuple[set[str], set[str]]:
    calls, results = set(), set()
    for entry in entries:
        msg = message(entry)
        if msg.get("role") == "assistant":
            calls.update(b["id"] for b in msg.get("content", []) if b.get("type") == "toolCall")
        elif msg.get("role") == "toolResult":
            results.add(msg["toolCallId"])
    return calls, results


def context_of(key: str) -> list[dict]:
    rc, doc, err = invoke("sessions", "tail", "--session-key", key, "--context", "--tail", "1000000")
    assert rc == 0, err
    return doc["entries"]


def test_keep_recent_tokens_keeps_a_turn_aligned_tail_and_rebuilds_a_small_context(
    store: str, state_dir: Path
):
    sid = rows(state_dir)[MAIN]["sessionId"]
    result = run_json("compact", MAIN, "--keep-recent-tokens", "20000")
    assert result["ok"] and result["compacted"] and result["key"] == MAIN
    assert (
        result["provider"] == "builtin"
        and result["fallbackReason"] is None
        and result["tokenMethod"] == "exact"
    )
    assert result["hardCheckpoint"] is False and result["sessionId"] == sid

    # append-only: every original line is still there, byte-identical, followed by ONE compaction entry
    after = transcript_lines(state_dir, sid, rows(state_dir)[MAIN])
    before = original_lines(MAIN)
    assert after[: len(before)] == before and len(after) == len(before) + 1
    compaction = json.loads(after[-1])
    entries = [json.loads(line) for line in before[1:]]
    assert compaction["type"] == "compaction" and compaction["parentId"] == entries[-1]["id"]
    assert compaction["id"] == result["compactionEntryId"]
    assert compaction["firstKeptEntryId"] == result["firstKeptEntryId"]
    assert compaction["tokensBefore"] == result["result"]["tokensBefore"]
    assert compaction["tokensAfter"] == result["result"]["tokensAfter"] < result["result"]["tokensBefore"]

    # the kept tail: >= 20000 exact tokens, starting on a turn boundary
    first_kept = next(i for i, e in enumerate(entries) if e["id"] == compaction["firstKeptEntryId"])
    kept, summarised = entries[first_kept:], entries[:first_kept]
    exact = Tokenizer("exact")
    assert not result["splitTurn"]
    assert sum(exact(e) for e in kept) >= 20000
    first_message = next(e for e in kept if e["type"] in ("message", "custom_message"))
    assert first_message["type"] == "custom_message" or message(first_message)["role"] == "user"
    assert (
        sum(exact(e) for e in kept) - sum(exact(e) for e in kept[: _turn_end(kept)]) < 20000
    )  # not a turn more

    # tool pairing: no kept result without its call, no summarised call without its result
    kept_calls, kept_results = tool_ids(kept)
    summarised_calls, summarised_results = tool_ids(summarised)
    assert kept_results <= kept_calls and summarised_calls <= summarised_results

    # the rebuilt context: the summary, then exactly the kept messages; below the threshold
    context = context_of(MAIN)
    assert (
        context[0]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + compaction["summary"] + "\n</summary>"
    )
    assert context[1:] == [m for m in (entry_message(e) for e in kept) if m is not None]
    counted = sum(exact(m) for m in context)
    assert counted == result["result"]["tokensAfter"]
    assert counted < compaction_threshold(200000) == result["threshold"]
    assert rows(state_dir)[MAIN]["totalTokens"] == counted and rows(state_dir)[MAIN]["compactionCount"] == 1
    assert rows(state_dir)[MAIN]["totalTokensFresh"] is True


def _turn_end(entries: list[dict]) -> int:
    """Index of the second turn start: dropping the first kept turn must go below the budget."""
    starts = [i for i, e in enumerate(entries) if message(e).get("role") == "user"]
    return starts[1] if len(starts) > 1 else len(entries)


def test_without_keep_recent_tokens_manual_compaction_is_a_hard_checkpoint(store: str, state_dir: Path):
    sid = rows(state_dir)[MAIN]["sessionId"]
    result = run_json("compact", MAIN)
    assert (
        result["hardCheckpoint"] is True
        and result["firstKeptEntryId"] is None
        and result["keptMessages"] == 0
    )
    compaction = json.loads(transcript_lines(state_dir, sid, rows(state_dir)[MAIN])[-1])
    assert compaction["firstKeptEntryId"] == compaction["id"]  # not before the entry: nothing retained
    context = context_of(MAIN)
    assert len(context) == 1 and context[0]["content"][0]["text"].startswith(COMPACTION_SUMMARY_PREFIX)
    assert transcript_lines(state_dir, sid, rows(state_dir)[MAIN])[:-1] == original_lines(MAIN)


def test_configured_keep_recent_tokens_replaces_the_hard_checkpoint(templates, state_dir: Path):
    use_template(templates["legacy"], state_dir)
    write_config(state_dir, {"keepRecentTokens": 6000})
    result = run_json("compact", MAIN)
    assert result["hardCheckpoint"] is False and result["keepRecentTokens"] == 6000
    assert result["keptTokens"] >= 6000 and len(context_of(MAIN)) > 1


def test_planted_identifiers_of_the_compacted_part_are_in_the_stored_summary(store: str, state_dir: Path):
    session = GENERATED[IDS]
    sid = rows(state_dir)[IDS]["sessionId"]
    result = run_json("compact", IDS, "--keep-recent-tokens", "3000")
    stored = json.loads(transcript_lines(state_dir, sid, rows(state_dir)[IDS])[-1])
    first_kept = next(i for i, e in enumerate(session.entries) if e["id"] == result["firstKeptEntryId"])
    compacted = [
        ident
        for e in session.entries[:first_kept]
        for ident in session.user_identifiers_by_entry.get(e["id"], [])
    ]
    assert len(compacted) > 100
    missing = [ident for ident in compacted if ident not in stored["summary"]]
    assert not missing, missing[:5]
    newest_markers = [e for e in session.tool_identifiers if e.startswith("build-")][-3:]
    assert all(m in stored["summary"] for m in newest_markers if _in_part(session, m, first_kept))


def _in_part(session, marker: str, first_kept: int) -> bool:
    return any(marker in json.dumps(e) for e in session.entries[:first_kept])


def test_dry_run_shows_the_plan_and_writes_nothing(store: str, state_dir: Path):
    before = tree_digest(state_dir)
    result = run_json("compact", MAIN, "--keep-recent-tokens", "20000", "--dry-run")
    assert result["ok"] and result["dryRun"] and result["compacted"] is False
    assert result["cutPoint"]["entryId"] == result["firstKeptEntryId"] and result["summary"].startswith(
        "## Goal"
    )
    assert result["result"]["tokensBefore"] > result["result"]["tokensAfter"] > 20000
    rc, estimate, stderr = invoke("compact", MAIN, "--dry-run", "--tokenizer", "estimate")
    assert rc == 0 and estimate["tokenMethod"] == "estimate" and estimate["hardCheckpoint"]
    assert tree_digest(state_dir) == before  # no lock file, no archive, no rewritten sessions.json


def test_text_report_goes_to_stdout(templates, state_dir: Path):
    """D19: the report is the result (stdout); only hints go to stderr."""
    from tests.conftest import run_cli

    use_template(templates["legacy"], state_dir)
    proc = run_cli("sessions", "compact", MAIN, "--keep-recent-tokens", "20000")
    assert proc.returncode == 0
    assert "Compacted agent:main:main (" in proc.stdout and "cut point: entry" in proc.stdout
    assert "Compacted" not in proc.stderr and proc.stderr.startswith("Hint: ")
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    dry = CliRunner().invoke(app, ["compact", SMALL, "--dry-run"])
    assert dry.exit_code == 0
    assert "Dry run: nothing was written." in dry.stdout and "hard checkpoint" in dry.stdout
    assert "Summary:\n  ## Goal" in dry.stdout and "Summary:" not in dry.stderr


# ---- refusals ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "code", "kind", "text"),
    [
        ("agent:main:nope", 4, "not_found", "Session not found: agent:main:nope."),
        ("../../etc/passwd", 4, "not_found", "Session not found"),
    ],
)
def test_refusals_modify_nothing(store: str, state_dir: Path, key: str, code: int, kind: str, text: str):
    before = tree_digest(state_dir)
    rc, doc, _ = invoke("compact", key)
    assert rc == code and doc["ok"] is False
    assert doc["error"]["type"] == kind and text in doc["error"]["message"]
    assert tree_digest(state_dir) == before


@pytest.mark.parametrize("key", [EMPTY, MISSING])
def test_nothing_to_compact_is_a_success(store: str, state_dir: Path, key: str):
    """A nightly `openclaw compact KEY` must not fail on an idle session: exit 0, `compacted:
    false` and the reason (no error envelope); nothing is written."""
    before = tree_digest(state_dir)
    rc, doc, _ = invoke("compact", key)
    assert rc == 0 and doc["ok"] is True and "error" not in doc
    assert doc["key"] == key and doc["compacted"] is False
    assert doc["reason"] == "nothing compactable in this session yet" and doc["code"]
    assert tree_digest(state_dir) == before
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    text = CliRunner().invoke(app, ["compact", key])
    assert text.exit_code == 0
    assert text.stdout == f"{key}: nothing to compact (nothing compactable in this session yet).\n"


def test_a_session_compacted_at_its_tail_is_skipped(store: str, state_dir: Path):
    assert invoke("compact", SMALL)[0] == 0
    before = tree_digest(state_dir)
    rc, doc, _ = invoke("compact", SMALL, "--keep-recent-tokens", "100")
    assert rc == 0 and doc["reason"] == "session is already compacted" and doc["compacted"] is False
    assert tree_digest(state_dir) == before


@pytest.mark.parametrize(
    "args",
    [
        ("compact",),
        ("compact", MAIN, "--over-threshold"),
        ("compact", MAIN, "--keep-recent-tokens", "0"),
        ("compact", MAIN, "--tokenizer", "words"),
        ("compact", MAIN, "--max-lines", "3", "--keep-recent-tokens", "9"),
        ("compact", MAIN, "--max-lines", "0"),
        ("compact", MAIN, "--all-agents"),
        ("compact", MAIN, "--provider", "nope"),
        ("compact", "--over-threshold", "--max-lines", "4"),
    ],
)
def test_bad_arguments_are_usage_errors(templates, state_dir: Path, args):
    use_template(templates["legacy"], state_dir)
    before = tree_digest(state_dir)
    rc, doc, _ = invoke(*args)
    assert rc == 2 and doc["error"]["type"] == "cli_error", doc
    assert tree_digest(state_dir) == before


def test_malformed_lines_are_skipped_and_kept(templates, state_dir: Path):
    use_template(templates["legacy"], state_dir)
    sid = rows(state_dir)[SMALL]["sessionId"]
    path = state_dir / SESSIONS / f"{sid}.jsonl"
    lines = path.read_text().splitlines()
    damaged = "\n".join([*lines[:4], '{"type":"message","id":"bad', *lines[4:]]) + '\n{"type":"mess'
    path.write_text(damaged)
    result = run_json("compact", SMALL)
    assert result["compacted"] and len(result["issues"]) == 2
    assert path.read_text().startswith(damaged + "\n")  # the damaged bytes stay; a newline ends the torn line


def test_real_openclaw_database_dry_run_writes_nothing_and_a_compaction_is_written(
    imported_fixture_state: Path,
):
    db = imported_fixture_state / DB
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    key = "agent:main:telegram:direct:stale-1"  # the fixture's longest transcript
    dry = run_json("compact", key, "--dry-run", "--keep-recent-tokens", "2000")
    assert dry["ok"] and dry["dryRun"] and dry["summary"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    rc, doc, _ = invoke("compact", key, "--keep-recent-tokens", "2000")
    assert rc == 0 and doc["compacted"] and doc["firstKeptEntryId"] == dry["firstKeptEntryId"]  # D21
    assert "Backup of" in doc["hint"]


# ---- --max-lines ---------------------------------------------------------------------------------------------


# a row's run usage and token figures (what `compact --max-lines` clears or marks stale)
USAGE = {"inputTokens": 1200, "outputTokens": 300, "totalTokens": 1500, "totalTokensFresh": True}


def _set_row(state_dir: Path, key: str, **fields) -> dict:
    """Add `fields` to the row of `key` in whichever store the state has; returns the row."""
    row = {**rows(state_dir)[key], **fields}
    if (state_dir / DB).exists():
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(state_dir / DB, "main") as db:
            db.upsert_entries({key: row})
    else:
        path = state_dir / SESSIONS / "sessions.json"
        data = json.loads(path.read_text())
        data[key] = row
        path.write_text(json.dumps(data, indent=2))
    return row


def test_max_lines_keeps_the_header_and_the_last_lines_after_archiving_everything(
    store: str, state_dir: Path
):
    old = _set_row(state_dir, SMALL, **USAGE)
    before = original_lines(SMALL)
    rc, dry, _ = invoke("compact", SMALL, "--max-lines", "5", "--dry-run")
    assert rc == 0 and dry["kept"] == 5 and dry["dropped"] == len(before) - 5 and dry["compacted"] is False
    result = run_json("sessions", "compact", SMALL, "--max-lines", "5")
    assert {k: result[k] for k in ("ok", "key", "compacted", "kept")} == {
        "ok": True,
        "key": SMALL,
        "compacted": True,
        "kept": 5,
    }
    row = rows(state_dir)[SMALL]
    now = transcript_objects(state_dir, row["sessionId"], row)
    assert len(now) == 5 and now[0]["type"] == "session" and now[1]["parentId"] is None
    assert [json.loads(x) for x in before[-3:]] == now[2:]
    assert {k: v for k, v in now[1].items() if k != "parentId"} == {
        k: v for k, v in json.loads(before[-4]).items() if k != "parentId"
    }
    archive = Path(result["archive"]["path"])
    assert archive.parent == state_dir / SESSIONS and ".jsonl.bak." in archive.name
    assert read_archive_bytes(archive) == GENERATED[SMALL].jsonl().encode()
    # the row as OpenClaw 2026.9.6+ leaves it (peer-observed): run usage and token figures cleared
    from openclaw_cli.store.rewrite import MAX_LINES_CLEARED

    assert not MAX_LINES_CLEARED & set(row), row
    assert row["compactionCount"] == old.get("compactionCount", 0) and row["updatedAt"] > old["updatedAt"]
    # the session keeps its id, as OpenClaw 2026.9.6+ does (the default release here: 2026.9.9)
    assert row["sessionId"] == old["sessionId"] and "previousSessionId" not in result
    rc, again, _ = invoke("compact", SMALL, "--max-lines", "5")
    assert rc == 0 and again["compacted"] is False and again["kept"] == 5


def test_max_lines_under_2026_7_gives_our_sqlite_store_a_successor_window(
    templates, state_dir: Path, monkeypatch
):
    """Release 2026.7 (profile L, D16): the kept lines become a successor window with a new id;
    the previous window stays readable."""
    use_template(templates["sqlite"], state_dir)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    old = _set_row(state_dir, SMALL, **USAGE)
    before = original_lines(SMALL)
    result = run_json("sessions", "compact", SMALL, "--max-lines", "5")
    row = rows(state_dir)[SMALL]
    assert row["sessionId"] != old["sessionId"] == result["previousSessionId"]
    assert transcript_lines(state_dir, old["sessionId"]) == before
    assert transcript_objects(state_dir, row["sessionId"], row)[0]["id"] == row["sessionId"]
    # profile L keeps the figures and marks them stale
    assert row["totalTokensFresh"] is False and row["inputTokens"] == old["inputTokens"]


# ---- truncateAfterCompaction -----------------------------------------------------------------------------------


def test_truncate_after_compaction_rotates_to_a_validated_successor(store: str, state_dir: Path):
    from openclaw_cli.store.rewrite import parse_lines, rebuilt_context

    write_config(state_dir, {"truncateAfterCompaction": True})
    old = rows(state_dir)[MAIN]
    result = run_json("compact", MAIN, "--keep-recent-tokens", "20000")
    row = rows(state_dir)[MAIN]
    assert row["sessionId"] == result["sessionId"] == result["successor"]["sessionId"] != old["sessionId"]
    assert result["previousSessionId"] == old["sessionId"]
    # the old transcript: original lines + the compaction entry; the archive holds the original
    old_lines = transcript_lines(state_dir, old["sessionId"], old)
    assert old_lines[:-1] == original_lines(MAIN) and json.loads(old_lines[-1])["type"] == "compaction"
    assert read_archive_bytes(Path(result["archive"]["path"])) == GENERATED[MAIN].jsonl().encode()
    # the successor: header, surviving entries, the compaction; same rebuilt context as the old one
    new_lines = transcript_lines(state_dir, row["sessionId"], row)
    header = json.loads(new_lines[0])
    assert header["type"] == "session" and header["id"] == row["sessionId"]
    assert len(new_lines) < len(old_lines) / 10
    assert (
        rebuilt_context(parse_lines(new_lines)) == rebuilt_context(parse_lines(old_lines)) == context_of(MAIN)
    )
    checkpoint = row["compactionCheckpoints"][-1]
    assert checkpoint["preCompaction"]["sessionId"] == old["sessionId"]
    assert checkpoint["postCompaction"]["sessionId"] == row["sessionId"] and checkpoint["reason"] == "manual"
    if store == "legacy":
        old_path = str(state_dir / SESSIONS / old["sessionFile"])
        assert header["parentSession"] == old_path == checkpoint["preCompaction"]["sessionFile"]
        name = Path(row["sessionFile"]).name
        assert name.endswith(f"_{row['sessionId']}.jsonl") and name[4] == "-" and ":" not in name
    else:
        import sqlite3

        with sqlite3.connect(state_dir / DB) as conn:
            window = conn.execute(
                "SELECT previous_session_id, reason FROM session_windows WHERE session_id = ?",
                (row["sessionId"],),
            ).fetchone()
        assert window == (old["sessionId"], "compaction") and "sessionFile" not in row


def test_a_symlinked_transcript_is_never_followed(templates, state_dir: Path, tmp_path: Path):
    use_template(templates["legacy"], state_dir)
    sid = rows(state_dir)[SMALL]["sessionId"]
    path = state_dir / SESSIONS / f"{sid}.jsonl"
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    before = outside.read_bytes()
    rc, doc, _ = invoke("compact", SMALL)
    assert rc == 1 and doc["reason"] == "nothing compactable in this session yet"
    assert "symbolic link" in doc["issues"][0] and "symbolic link" in doc["error"]["message"]
    assert outside.read_bytes() == before and path.is_symlink()


def test_a_malformed_checkpoint_list_is_kept_and_the_session_not_rotated(store: str, state_dir: Path):
    row = _set_row(state_dir, SMALL, compactionCheckpoints="not a list")
    write_config(state_dir, {"truncateAfterCompaction": True})
    names = {p.name for p in (state_dir / SESSIONS).iterdir()} if (state_dir / SESSIONS).exists() else set()
    result = run_json("compact", SMALL)
    assert result["compacted"] and result["successor"] is None and result["archive"] is None
    assert any("compactionCheckpoints is not a list" in w for w in result["warnings"])
    after = rows(state_dir)[SMALL]
    assert after["compactionCheckpoints"] == "not a list" and after["compactionCount"] == 1
    assert after["sessionId"] == row["sessionId"]
    assert json.loads(transcript_lines(state_dir, after["sessionId"], after)[-1])["type"] == "compaction"
    now = {p.name for p in (state_dir / SESSIONS).iterdir()} if (state_dir / SESSIONS).exists() else set()
    assert now - names <= {"sessions.json"}  # no archive, no unreferenced successor file


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_exact_counts_say_which_parts_were_estimated(
    kind: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """D7 with the bounded exact count: tokensBefore of a context larger than the exact budget is
    labelled `estimate` (and says how much was estimated) while tokensAfter stays exact; within
    the budget everything is exact. The entry's details.tokenMethods say the same."""
    import functools

    import openclaw_cli.compaction as compaction

    session = generate_session(15, turns=40, with_usage=False)
    write_legacy_state(state_dir, {MAIN: session})
    if kind == "sqlite":
        import_sqlite(state_dir)
    exact = run_json("compact", MAIN, "--keep-recent-tokens", "2000", "--dry-run")
    assert exact["tokenMethod"] == "exact" and exact["tokensBeforeMethod"] == "exact"
    assert exact["tokensBeforeDetail"] == {"tokens": exact["result"]["tokensBefore"], "method": "exact"}
    monkeypatch.setattr(
        compaction, "plan_compaction", functools.partial(compaction.plan_compaction, exact_context_chars=5000)
    )
    bounded = run_json("compact", MAIN, "--keep-recent-tokens", "2000")
    detail = bounded["tokensBeforeDetail"]
    assert (
        bounded["tokenMethod"] == "exact" and bounded["tokensBeforeMethod"] == detail["method"] == "estimate"
    )
    assert 0 < detail["estimatedTokens"] < detail["tokens"] == bounded["result"]["tokensBefore"]
    assert detail["estimatedMessages"] > 0
    assert bounded["firstKeptEntryId"] == exact["firstKeptEntryId"]  # the cut point is exact either way
    assert bounded["result"]["tokensAfter"] == exact["result"]["tokensAfter"]
    row = rows(state_dir)[MAIN]
    written = transcript_objects(state_dir, row["sessionId"], row)[-1]
    assert written["type"] == "compaction"
    assert written["details"]["tokenMethods"] == {"tokensBefore": "estimate", "tokensAfter": "exact"}
    assert written["tokensBefore"] == detail["tokens"]
