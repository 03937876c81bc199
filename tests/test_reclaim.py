"""`sessions cleanup --orphans | --tombstones | --explain` (issue 27 §2, §7): collection never
touches a referenced transcript or anything outside the agent's sessions dir (symlinks included),
archives before it removes, a dry run writes nothing; one key's decision explained."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cleanup_support import tree_digest
from tests.lifecycle_support import archive_bytes
from tests.storage_support import SESSIONS_DIR, STORE_KINDS, cli, cli_json, make_state

ORPHAN_SID = "11111111-2222-4333-8444-555555555555"


def _plant(state: Path) -> dict[str, Path]:
    sessions = state / SESSIONS_DIR
    sessions.mkdir(parents=True, exist_ok=True)
    outside = state / "elsewhere"
    outside.mkdir()
    target = outside / "precious.jsonl"
    target.write_text('{"type":"session","id":"precious"}\n')
    link = sessions / "22222222-2222-4333-8444-555555555555.jsonl"
    link.symlink_to(target)
    sub = sessions / "nested"
    sub.mkdir()
    (sub / "33333333-2222-4333-8444-555555555555.jsonl").write_text('{"type":"session"}\n')
    orphan = sessions / f"{ORPHAN_SID}.jsonl"
    orphan.write_text(json.dumps({"type": "session", "id": ORPHAN_SID}) + '\n{"type":"message","id":"a"}\n')
    old = sessions / "44444444-2222-4333-8444-555555555555.jsonl.deleted.2026-01-01T00-00-00.000Z"
    old.write_text('{"type":"session"}\n')
    return {"outside": target, "link": link, "sub": sub, "orphan": orphan, "tombstone": old}


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_orphans_and_tombstones_dry_run_then_apply(kind: str, state_dir: Path) -> None:
    make_state(kind, state_dir)
    planted = _plant(state_dir)
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"resetArchiveRetention": "7d"}}})
    )
    sessions = state_dir / SESSIONS_DIR
    before = tree_digest(state_dir)
    code, dry, err = cli_json("sessions", "cleanup", "--orphans", "--tombstones", "--dry-run")
    assert code == 0, err
    assert tree_digest(state_dir) == before  # a dry run writes nothing
    [store] = dry["stores"]
    assert store["tombstones"]["names"] == [planted["tombstone"].name]
    orphan_text = planted["orphan"].read_bytes()
    if kind == "legacy":
        names = set(store["orphans"]["names"])
        assert planted["orphan"].name in names and planted["link"].name not in names
        rows = json.loads((sessions / "sessions.json").read_text())
        assert not names & {f"{row['sessionId']}.jsonl" for row in rows.values()}
    else:
        assert store["orphans"]["files"] == 0
    kept = {
        p: p.read_bytes()
        for p in sessions.glob("*.jsonl")
        if not p.is_symlink() and p not in (planted["orphan"],)
    }
    code, doc, err = cli_json("sessions", "cleanup", "--orphans", "--tombstones")
    assert code == 0, err
    assert not planted["tombstone"].exists()
    assert planted["link"].is_symlink() and planted["outside"].read_text().startswith('{"type":"session"')
    assert (planted["sub"] / "33333333-2222-4333-8444-555555555555.jsonl").exists()
    if kind == "legacy":
        assert not planted["orphan"].exists()
        [archive] = [a for a in doc["stores"][0]["archives"] if ORPHAN_SID in a]
        assert archive_bytes(sessions / archive) == orphan_text  # verified archive first
        assert doc["reclaimedBytes"] == dry["reclaimableBytes"]
        rows = json.loads((sessions / "sessions.json").read_text())
        for row in rows.values():
            live = sessions / f"{row['sessionId']}.jsonl"
            if live in kept:  # referenced transcripts untouched
                assert live.read_bytes() == kept[live]
        # what was collected can be brought back
        code, restored, err = cli_json("sessions", "restore", archive, "--as", "agent:main:recovered:orphan")
        assert code == 0, err
    else:
        assert planted["orphan"].exists()  # beside a database store: not its transcript to collect


def test_unset_retention_keeps_every_tombstone(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    planted = _plant(state_dir)
    code, doc, err = cli_json("sessions", "cleanup", "--tombstones")
    assert code == 0, err
    assert planted["tombstone"].exists() and doc["stores"][0]["tombstones"]["retentionMs"] is None
    code, out, _ = cli("sessions", "cleanup", "--tombstones", "--dry-run")
    assert "kept forever" in out


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_explain_says_why(kind: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_state(kind, state_dir)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state_dir / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "30d"}}}))
    snapshot = tree_digest(state_dir / "agents")
    code, doc, err = cli_json("sessions", "cleanup", "--explain", "agent:main:telegram:direct:stale-1")
    assert code == 0, err
    assert doc["removed"] and doc["action"] == "prune-stale" and "pruneAfter" in doc["decision"]
    code, doc, err = cli_json("cleanup", "--explain", "agent:main:main")
    assert code == 0, err
    assert not doc["removed"] and doc["protected"]
    code, out, _ = cli("cleanup", "--explain", "agent:main:main")
    assert code == 0 and "agent:main:main: kept" in out and "protected" in out
    code, doc, _ = cli_json("cleanup", "--explain", "agent:main:nobody:here")
    assert code == 4
    assert tree_digest(state_dir / "agents") == snapshot  # explaining writes nothing


def _transcript_bytes() -> dict[str, int]:
    """key -> the transcript bytes the store keeps for its session (event text without the
    newlines a file adds), read back through the store's export, not from its totals."""
    import io

    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    out: dict[str, int] = {}
    with open_agent_store(resolve_paths(), "main", read_only=True) as store:
        for key, entry in store.load_entries().items():
            if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
                sink = io.BytesIO()
                store.export_transcript(entry["sessionId"], sink, entry=entry)
                data = sink.getvalue()
                out[key] = len(data) - data.count(b"\n")
    return out


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_cleanup_text_says_what_each_reason_removes(
    kind: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per reason, the sessions the plan removes and their transcript bytes (issue 27 §7), on every
    store kind. The fixture ages with the real clock, so the counts come from the plan's own JSON
    and the bytes from what the apply took away: the files that went (legacy), else the removed
    sessions' event text, read back before the apply."""
    make_state(kind, state_dir)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 8}}})
    )
    from openclaw_cli.cli.render_storage import human

    sessions = state_dir / SESSIONS_DIR
    sizes = {p.name: p.stat().st_size for p in sessions.glob("*.jsonl")}
    kept = _transcript_bytes()
    code, plan, _ = cli_json("sessions", "cleanup", "--dry-run")
    assert code == 0 and plan["pruned"] >= 1 and plan["capped"] >= 1, plan
    code, out, _ = cli("sessions", "cleanup", "--dry-run")
    assert code == 0 and "Would remove, by reason" in out
    assert f"prune-stale: {plan['pruned']}," in out and f"cap-overflow: {plan['capped']}," in out
    code, out, _ = cli("sessions", "cleanup", "--enforce")
    assert code == 0 and "Removed, by reason" in out
    code, after, _ = cli_json("sessions", "--limit", "all")
    assert code == 0
    gone_keys = set(kept) - {s["key"] for s in after["sessions"]}
    report = out.split("Removed, by reason", 1)[1]
    counts = {m[0]: int(m[1]) for m in re.findall(r"^  ([^:\n]+): (\d+), ", report, re.M)}
    files = ("unreferenced artifacts", "tombstones (retention)", "disk budget files")
    sessions_counted = sum(n for reason, n in counts.items() if reason not in files)
    assert sessions_counted == len(gone_keys), (counts, gone_keys)
    if kind == "legacy":
        gone = sum(size for name, size in sizes.items() if not (sessions / name).exists())
    else:
        gone = sum(kept[key] for key in gone_keys)
    assert gone > 0 and f"  total: {human(gone)}" in out, out


@pytest.mark.parametrize("kind", ["sqlite", "schema23", "schema24"])
def test_database_orphans_are_found_collected_and_restorable(kind: str, state_dir: Path) -> None:
    """Issue 27 §2 on a database store: the transcript of a row removed with foreign keys off (its
    window and events left behind) is an orphan — `storage` counts it, `--orphans --dry-run` names
    it, `--orphans` archives then drops it, and the archive gives its events back."""
    import sqlite3

    from tests.storage_support import DB

    make_state(kind, state_dir)
    code, listing, err = cli_json("sessions", "--limit", "all")
    assert code == 0, err
    victim = next(s for s in listing["sessions"] if s.get("sessionId"))
    key, sid = victim["key"], victim["sessionId"]
    db = sqlite3.connect(state_dir / DB)
    db.execute("PRAGMA foreign_keys = OFF")
    events = [
        r[0]
        for r in db.execute("SELECT seq FROM transcript_events WHERE session_id = ? ORDER BY seq", (sid,))
    ]
    assert events, "the victim has a transcript in the database"
    db.execute("DELETE FROM session_nodes WHERE session_key = ?", (key,))
    db.commit()
    db.close()

    code, doc, err = cli_json("storage")
    assert code == 0, err
    orphans = next(r for r in doc["reclaimable"] if r["setting"] == "sessions cleanup --orphans")
    assert orphans["sessions"] == 1 and orphans["bytes"] > 0

    code, plan, err = cli_json("sessions", "cleanup", "--orphans", "--dry-run")
    assert code == 0, err
    [store] = plan["stores"]
    assert [s["sessionId"] for s in store["orphans"]["sessions"]] == [sid]
    assert store["orphans"]["bytes"] == orphans["bytes"]

    code, done, err = cli_json("sessions", "cleanup", "--orphans")
    assert code == 0, err
    assert done["reclaimedBytes"] == orphans["bytes"] and done["stores"][0]["archives"]
    db = sqlite3.connect(state_dir / DB)
    left = db.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (sid,)).fetchone()[0]
    db.close()
    assert left == 0
    code, doc, err = cli_json("storage")
    assert (
        next(r for r in doc["reclaimable"] if r["setting"] == "sessions cleanup --orphans")["sessions"] == 0
    )
    # rows and other transcripts untouched
    code, after, _ = cli_json("sessions", "--limit", "all")
    assert sorted(s["key"] for s in after["sessions"]) == sorted(
        s["key"] for s in listing["sessions"] if s["key"] != key
    )
