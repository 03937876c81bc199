"""Over-budget reclamation as 2026.9.6 / 2026.9.9 apply it (issue 22 part 2, D23;
`maintenance/reclaim.py`): pages, archives, historical sessions, `active-session-cap` rows and
9.9's final tier, on our SQLite store and a real schema-23 database; warn mode reclaims nothing;
the dry run's `wouldMutate` says whether the tiers have work. (The peer comparison is in
test_release_cleanup_peer.py.)"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    cli,
    db_path,
    entry,
    load_store,
    make_sqlite,
    now_ms,
    sessions_dir,
    write_config,
)

from openclaw_cli.store.sqlite.store import SqliteStore


def cli_json(*args: str) -> dict:
    proc = cli(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


BUDGET = {"pruneAfter": "365d", "maxEntries": 5000, "maxDiskBytes": 4096}
OLD_ARCHIVE = "old-1.jsonl.deleted.2026-01-01T00-00-00.000Z.zst"


def _state(state_dir: Path, maintenance: dict) -> dict[str, dict]:
    now = now_ms()
    rows = {
        "agent:main:main": entry("s-main", now - DAY),
        # archived by the cap, unprotected: the tier evicts it
        "agent:main:custom-1": entry(
            "s-cap", now - 3 * DAY, archivedAt=now - 2 * DAY, archiveReason="active-session-cap"
        ),
        # archived by the cap but pinned: protected
        "agent:main:custom-2": entry(
            "s-pin", now - 3 * DAY, archivedAt=now - 2 * DAY, archiveReason="active-session-cap", pinnedAt=now
        ),
        # archived by the operator: never evicted by the budget
        "agent:main:custom-3": entry(
            "s-manual", now - 3 * DAY, archivedAt=now - 2 * DAY, archiveReason="manual"
        ),
        "agent:main:telegram:group:7": entry("s-group", now - 5 * DAY),  # 9.9's final tier
    }
    make_sqlite(state_dir, rows)
    with SqliteStore(db_path(state_dir), "main") as store:  # an earlier window of main: historical
        store.append_events(
            "s-old",
            [json.dumps({"type": "message", "id": "o1", "message": {"role": "user"}})],
            session_key="agent:main:main",
        )
    sessions_dir(state_dir).mkdir(parents=True, exist_ok=True)
    (sessions_dir(state_dir) / OLD_ARCHIVE).write_bytes(b"x" * 5000)
    write_config(state_dir, {"session": {"maintenance": maintenance}})
    return rows


def _windows(state_dir: Path) -> set[str]:
    conn = sqlite3.connect(db_path(state_dir))
    try:
        return {sid for (sid,) in conn.execute("SELECT session_id FROM session_windows")}
    finally:
        conn.close()


def test_the_tiers_on_our_sqlite_store_under_2026_9_6(state_dir: Path) -> None:
    _state(state_dir, BUDGET)
    preview = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--dry-run", "--json")
    assert preview["wouldMutate"] is True and preview["diskBudget"]["overBudget"] is True
    assert preview["diskBudget"]["removedEntries"] == 0  # a preview measures, as OpenClaw's does
    done = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--enforce", "--json")
    budget = done["diskBudget"]
    # evicted: the historical window s-old and the cap-archived custom-1; the group row stays (9.6)
    assert budget["removedEntries"] == 2 and budget["overBudget"] is True
    assert budget["removedFiles"] >= 2  # the old archive, and s-old's archive written on eviction
    assert budget["freedBytes"] == budget["totalBytesBefore"] - budget["totalBytesAfter"] > 0
    stored = load_store(state_dir)
    assert set(stored) == {
        "agent:main:main",
        "agent:main:custom-2",
        "agent:main:custom-3",
        "agent:main:telegram:group:7",
    }
    assert done["afterCount"] == done["appliedCount"] == 4
    assert _windows(state_dir) == {"s-main", "s-pin", "s-manual", "s-group"}
    assert not (sessions_dir(state_dir) / OLD_ARCHIVE).exists()
    # D6.2: the cap-archived row's transcript left through a verified archive (OpenClaw deletes it)
    assert any(p.name.startswith("s-cap.jsonl.deleted.") for p in sessions_dir(state_dir).iterdir())


def test_2026_9_9_with_an_explicit_budget_also_removes_idle_conversations(state_dir: Path) -> None:
    _state(state_dir, BUDGET)
    done = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--enforce", "--json")
    assert done["diskBudget"]["removedEntries"] == 3
    assert set(load_store(state_dir)) == {"agent:main:main", "agent:main:custom-2", "agent:main:custom-3"}


def test_warn_mode_reclaims_nothing(state_dir: Path) -> None:
    _state(state_dir, {**BUDGET, "mode": "warn"})
    before = _windows(state_dir)
    done = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--json")
    assert done["diskBudget"]["overBudget"] is True
    assert (done["diskBudget"]["removedFiles"], done["diskBudget"]["removedEntries"]) == (0, 0)
    assert _windows(state_dir) == before and (sessions_dir(state_dir) / OLD_ARCHIVE).exists()
    assert len(load_store(state_dir)) == 5


def test_the_preview_says_whether_the_tiers_have_work(state_dir: Path) -> None:
    make_sqlite(state_dir, {"agent:main:main": entry("s-main", now_ms())})
    write_config(state_dir, {"session": {"maintenance": BUDGET}})
    sessions_dir(state_dir).mkdir(parents=True, exist_ok=True)
    idle = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--dry-run", "--json")
    assert idle["diskBudget"]["overBudget"] is True and idle["wouldMutate"] is False
    (sessions_dir(state_dir) / OLD_ARCHIVE).write_bytes(b"x")
    work = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--dry-run", "--json")
    assert work["wouldMutate"] is True
    # 2026.7 knows no such tiers (its budget evicts live rows, planned in the preview itself)
    assert (
        cli_json("--behavior", "2026.7", "sessions", "cleanup", "--dry-run", "--json")["diskBudget"][
            "removedEntries"
        ]
        == 0
    )


def test_a_real_database_gets_its_archives_pruned_and_its_pages_back(real_state: Path) -> None:
    write_config(real_state, {"session": {"maintenance": {"pruneAfter": "1h", "maxDiskBytes": 4096}}})
    db = db_path(real_state)
    done = cli_json("sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert done["pruned"] > 0  # synthetic rows deleted: their transcripts archived, then pruned
    budget = done["diskBudget"]
    assert budget["removedFiles"] >= done["pruned"] and budget["overBudget"] is True
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM session_transcript_archives").fetchone()[0] == 0
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0  # incremental vacuum ran
    finally:
        conn.close()
    assert not [p for p in sessions_dir(real_state).iterdir() if ".deleted." in p.name]
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed (TRUNCATE)


@pytest.mark.parametrize("kind", ["reset", "bak"])
def test_retained_archive_kinds_go_but_store_backups_stay(state_dir: Path, kind: str) -> None:
    make_sqlite(state_dir, {"agent:main:main": entry("s-main", now_ms())})
    write_config(state_dir, {"session": {"maintenance": BUDGET}})
    root = sessions_dir(state_dir)
    root.mkdir(parents=True, exist_ok=True)
    (root / f"s9.jsonl.{kind}.2026-01-01T00-00-00.000Z").write_bytes(b"y" * 100)
    (root / "sessions.json.bak.17").write_bytes(b"{}")
    done = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--enforce", "--json")
    assert done["diskBudget"]["removedFiles"] == 1
    assert sorted(p.name for p in root.iterdir()) == ["sessions.json.bak.17"]


def _make_placeholder(db: Path, *, age_ms: int) -> tuple[str, str]:
    """Turn one cron-run row of a real database into the canonical retained-history placeholder
    (`{}`, entry_valid -1), its row and windows last updated `age_ms` ago."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT session_key, current_session_id FROM session_nodes ORDER BY 1").fetchall()
        base, sid = next(((k, s) for k, s in rows if ":cron:" in k), rows[-1])
        key = "agent:main:cron:job-x:run:r1"  # (the generated state's cron rows are job rows)
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
            if "session_key" in columns:
                conn.execute(f'UPDATE "{table}" SET session_key = ? WHERE session_key = ?', (key, base))
        old = now_ms() - age_ms
        conn.execute("UPDATE session_windows SET updated_at = ? WHERE session_key = ?", (old, key))
        conn.execute(
            "UPDATE session_nodes SET entry_json = '{}', updated_at = ? WHERE session_key = ?", (old, key)
        )
        conn.execute("UPDATE session_nodes SET entry_valid = -1 WHERE session_key = ?", (key,))
        conn.commit()
    finally:
        conn.close()
    return key, sid


def _nodes_and_windows(db: Path) -> tuple[set[str], set[str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return (
            {k for (k,) in conn.execute("SELECT session_key FROM session_nodes")},
            {s for (s,) in conn.execute("SELECT session_id FROM session_windows")},
        )
    finally:
        conn.close()


def test_2026_9_9_sweeps_expired_cron_run_placeholders(real_state: Path) -> None:
    write_config(real_state, {"session": {"maintenance": {"pruneAfter": "3650d", "maxDiskBytes": False}}})
    db = db_path(real_state)
    key, sid = _make_placeholder(db, age_ms=15 * DAY)
    preview = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--dry-run", "--json")
    assert preview["cronRunTombstones"] == {
        "candidates": 1,
        "removedNodes": 0,
        "sweptTranscriptStates": 0,
        "olderThanMs": DAY,
    }
    assert preview["wouldMutate"] is True and key in _nodes_and_windows(db)[0]  # a dry run removes nothing
    done = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert done["cronRunTombstones"]["removedNodes"] == 1
    assert done["cronRunTombstones"]["sweptTranscriptStates"] == 1
    nodes, windows = _nodes_and_windows(db)
    assert key not in nodes and sid not in windows
    assert any(p.name.startswith(f"{sid}.jsonl.deleted.") for p in sessions_dir(real_state).iterdir())
    again = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert again["cronRunTombstones"]["candidates"] == 0  # a rerun is a no-op
    # 2026.9.6 has no such sweep (and no such field)
    assert "cronRunTombstones" not in cli_json(
        "--behavior", "2026.9.6", "sessions", "cleanup", "--dry-run", "--json"
    )


def test_a_recent_or_non_canonical_placeholder_is_kept(real_state: Path) -> None:
    write_config(real_state, {"session": {"maintenance": {"pruneAfter": "3650d", "maxDiskBytes": False}}})
    db = db_path(real_state)
    key, _ = _make_placeholder(db, age_ms=3_600_000)  # inside the 24 h retention
    doc = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert doc["cronRunTombstones"]["candidates"] == 0 and key in _nodes_and_windows(db)[0]
    conn = sqlite3.connect(db)
    conn.execute("UPDATE session_nodes SET entry_json = '{\"x\":1}' WHERE session_key = ?", (key,))
    conn.execute("UPDATE session_nodes SET entry_valid = -1, updated_at = 0 WHERE session_key = ?", (key,))
    conn.execute("UPDATE session_windows SET updated_at = 0 WHERE session_key = ?", (key,))
    conn.commit()
    conn.close()
    doc = cli_json("--behavior", "2026.9.9", "sessions", "cleanup", "--enforce", "--json", "--no-backup")
    assert doc["cronRunTombstones"]["candidates"] == 0 and key in _nodes_and_windows(db)[0]


def test_a_legacy_store_loses_archives_and_cap_archived_rows_only(state_dir: Path) -> None:
    from cleanup_support import make_legacy

    now = now_ms()
    make_legacy(
        state_dir,
        {
            "agent:main:main": entry("a", now),
            "agent:main:c1": entry(
                "b", now - 3 * DAY, archivedAt=now - DAY, archiveReason="active-session-cap"
            ),
            "agent:main:c2": entry("c", now - 3 * DAY, archivedAt=now - DAY, archiveReason="manual"),
        },
    )
    (sessions_dir(state_dir) / "old.jsonl.reset.2026-01-01T00-00-00.000Z").write_text("x" * 100)
    write_config(state_dir, {"session": {"maintenance": {"maxDiskBytes": 100}}})
    done = cli_json("--behavior", "2026.9.6", "sessions", "cleanup", "--enforce", "--json")
    assert (done["diskBudget"]["removedFiles"], done["diskBudget"]["removedEntries"], done["afterCount"]) == (
        1,
        1,
        2,
    )
    assert set(load_store(state_dir)) == {"agent:main:main", "agent:main:c2"}
    names = {p.name for p in sessions_dir(state_dir).iterdir()}
    assert {"a.jsonl", "c.jsonl"} <= names and not any(n.startswith("old.jsonl.reset.") for n in names)
    assert any(n.startswith("b.jsonl.deleted.") for n in names)  # D6.2: archived, not deleted outright
