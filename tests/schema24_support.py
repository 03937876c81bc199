"""Schema-24 OpenClaw agent databases for tests (issue 23, spec D24), in both shapes:

* **fresh**: the published v2026.9.9 catalog (`tests/fixtures/openclaw-2026.9.9/`, loaded with
  `sqlite3.executescript`; `snapshot_revision` right after `entry_json`), agent `keeper`;
* **migrated**: the real OpenClaw 2026.9.6 database of `tests/fixtures/openclaw-2026.9.6/` with
  snapshot fields put inline the way a 9.6 writer stores them, then migrated 23 -> 24 by following
  the documented algorithm (openclaw-after-2026.9.6.md §1 "Migration algorithm",
  `migrateSessionEntrySnapshotsInTransaction`): `snapshot_revision` appended last.

Also the row-level checks every write test runs afterwards (integrity, foreign keys, snapshot rows,
markers)."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, OPENCLAW_FIXTURE, copy_tree

CATALOG_SQL = FIXTURES / "openclaw-2026.9.9" / "openclaw-agent-v2026.9.9.sql"
SNAPSHOT_FIELDS = ("sessionDiffBaseline", "skillsSnapshot", "systemPromptReport")
DB_NAME = "openclaw-agent.sqlite"
MIGRATED_AT_MS = 1796100000000


def connect(db: Path) -> sqlite3.Connection:
    from openclaw_cli.store.openclaw.schema import add_schema_functions

    conn = sqlite3.connect(str(db), isolation_level=None)
    add_schema_functions(conn)
    return conn


def catalog_statements() -> list[str]:
    """The catalog's statements, in order (each ends a line with `;`)."""
    text = CATALOG_SQL.read_text()
    out, current = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("--") or (not current and not line.strip()):
            continue
        current.append(line)
        stripped = line.rstrip()
        joined = "".join(current).strip()
        if stripped.endswith(";") and (not joined.upper().startswith("CREATE TRIGGER") or stripped == "END;"):
            out.append(joined)
            current = []
    return out


def snapshot_ddl() -> list[str]:
    """The schema-24 DDL fragment: the snapshot table and its three triggers, as published."""
    return [
        s
        for s in catalog_statements()
        if "session_entry_snapshots" in s.split("\n", 1)[0]
        or s.startswith("CREATE TABLE session_entry_snapshots")
    ]


def load_catalog(db: Path) -> Path:
    """The published v2026.9.9 catalog as a database file (WAL, as OpenClaw keeps it)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(db)
    try:
        conn.executescript(CATALOG_SQL.read_text())
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    return db


FRESH_KEY = "agent:keeper:stable-upgrade"


def fresh_state(state: Path, *, snapshots: bool = False) -> Path:
    """A state dir whose agent `keeper` has the published schema-24 database. With `snapshots`,
    its one session gets the three snapshot rows a v2026.9.9 writer stores (rows inserted, the
    triggers counting them). Returns the database path."""
    db = load_catalog(state / "agents" / "keeper" / "agent" / DB_NAME)
    if snapshots:
        conn = connect(db)
        try:
            for field, value in snapshot_values(FRESH_KEY).items():
                conn.execute(
                    "INSERT INTO session_entry_snapshots(session_key, field, value_json) VALUES (?,?,?)",
                    (FRESH_KEY, field, json.dumps(value, separators=(",", ":"))),
                )
        finally:
            conn.close()
    return db


# ---- the migrated shape -----------------------------------------------------------------------------------


def snapshot_values(key: str) -> dict[str, Any]:
    """Deterministic snapshot fields of a 9.6-era entry (skills with a prompt ref, a report, a baseline)."""
    return {
        "sessionDiffBaseline": {
            "files": {f"src/{key[-6:]}.py": {"sha": "ab" * 20, "lines": 12}},
            "at": 1796000000000,
        },
        "skillsSnapshot": {
            "version": 3,
            "skills": [{"name": "search", "enabled": True}],
            "promptRef": {"system": "skills-prompts/sha256/cd/" + "cd" * 32 + ".txt"},
        },
        "systemPromptReport": {
            "chars": 18234,
            "sections": [{"name": "tools", "chars": 9000}],
            "truncated": False,
        },
    }


def put_inline(conn: sqlite3.Connection, key: str, fields: dict[str, Any]) -> None:
    """Write `fields` into the entry's JSON as a 9.6 writer stores them (inline), then re-validate."""
    text = conn.execute("SELECT entry_json FROM session_nodes WHERE session_key = ?", (key,)).fetchone()[0]
    entry = json.loads(text)
    entry.update(fields)
    conn.execute(
        "UPDATE session_nodes SET entry_json = ? WHERE session_key = ?",
        (json.dumps(entry, separators=(",", ":"), ensure_ascii=False), key),
    )
    conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (key,))


def _parse_record(key: str, sid: Any, updated: Any, text: Any) -> dict[str, Any] | None:
    """`parseSqliteSessionEntryRecord`: an object whose sessionId/updatedAt equal the columns."""
    try:
        entry = json.loads(text)
    except ValueError:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
        return None
    value = entry.get("updatedAt")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if entry["sessionId"] != sid or value != updated:
        return None
    return entry


def migrate_to_24(db: Path, *, app_version: str = "2026.9.9", now_ms: int = MIGRATED_AT_MS) -> dict[str, int]:
    """Schema 23 -> 24 as OpenClaw's migration does it, in one transaction with foreign keys off.
    Returns key -> snapshot rows inserted (the expected `snapshot_revision`)."""
    conn = connect(db)
    inserted: dict[str, int] = {}
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        user_version = conn.execute("PRAGMA user_version").fetchone()[0]
        meta = conn.execute("SELECT schema_version FROM schema_meta WHERE meta_key = 'primary'").fetchone()[0]
        assert user_version == meta == 23, "Agent schema markers disagree"
        conn.execute("ALTER TABLE session_nodes ADD COLUMN snapshot_revision INTEGER NOT NULL DEFAULT 0")
        for statement in snapshot_ddl():
            conn.execute(statement)
        after = None
        while True:
            rows = conn.execute(
                "SELECT session_key, current_session_id, updated_at, entry_json FROM session_nodes"
                " WHERE (? IS NULL OR session_key > ?) ORDER BY session_key LIMIT 64",
                (after, after),
            ).fetchall()
            if not rows:
                break
            for key, sid, updated, text in rows:
                if not (
                    isinstance(key, str)
                    and isinstance(sid, str)
                    and isinstance(updated, int | float)
                    and isinstance(text, str)
                ):
                    raise ValueError("Unreadable session row during snapshot migration")
                after = key
                entry = _parse_record(key, sid, updated, text)
                if entry is None:
                    continue  # left byte for byte for Doctor
                present = [f for f in SNAPSHOT_FIELDS if f in entry]
                if not present:
                    continue
                hot = {k: v for k, v in entry.items() if k not in SNAPSHOT_FIELDS}
                for field in present:
                    conn.execute(
                        "INSERT INTO session_entry_snapshots(session_key, field, value_json) VALUES (?,?,?)",
                        (key, field, json.dumps(entry[field], separators=(",", ":"), ensure_ascii=False)),
                    )
                conn.execute(
                    "UPDATE session_nodes SET entry_json = ? WHERE session_key = ?",
                    (json.dumps(hot, separators=(",", ":"), ensure_ascii=False), key),
                )
                conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (key,))
                inserted[key] = len(present)
        conn.execute("PRAGMA user_version = 24")
        conn.execute(
            "UPDATE schema_meta SET schema_version = 24, app_version = ?, updated_at = ? WHERE meta_key = 'primary'",
            (app_version, now_ms),
        )
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()
    return inserted


INLINE_KEYS = (
    "agent:main:main",
    "agent:main:telegram:group:123",
    "agent:main:cron:job1",
    "agent:main:telegram:direct:100001",
)
MISMATCHED_KEY = "agent:main:telegram:group:-1006"  # its entry names another sessionId: left inline


def migrated_state(state: Path) -> tuple[Path, dict[str, int]]:
    """The real 9.6 state copied into `state`, four entries given snapshot fields inline (one of
    them only two fields), one more whose sessionId disagrees with its column (the migration leaves
    it byte for byte), then migrated to schema 24. Returns (db, expected revisions)."""
    copy_tree(OPENCLAW_FIXTURE / "imported-state", state)
    db = state / "agents" / "main" / "agent" / DB_NAME
    conn = connect(db)
    try:
        for key in INLINE_KEYS:
            values = snapshot_values(key)
            if key.endswith("100001"):
                del values["sessionDiffBaseline"]
            put_inline(conn, key, values)
        put_inline(conn, MISMATCHED_KEY, {**snapshot_values(MISMATCHED_KEY), "sessionId": "not-the-column"})
    finally:
        conn.close()
    return db, migrate_to_24(db)


# ---- what every write test checks afterwards ---------------------------------------------------------------


def markers(db: Path) -> tuple[Any, ...]:
    conn = connect(db)
    try:
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("SELECT * FROM schema_meta ORDER BY meta_key").fetchall(),
        )
    finally:
        conn.close()


def snapshot_rows(db: Path) -> dict[str, dict[str, str]]:
    conn = connect(db)
    try:
        out: dict[str, dict[str, str]] = {}
        for key, field, value in conn.execute(
            "SELECT session_key, field, value_json FROM session_entry_snapshots"
        ):
            out.setdefault(key, {})[field] = value
        return out
    finally:
        conn.close()


def revisions(db: Path) -> dict[str, int]:
    conn = connect(db)
    try:
        return dict(conn.execute("SELECT session_key, snapshot_revision FROM session_nodes"))
    finally:
        conn.close()


def node(db: Path, key: str) -> dict[str, Any] | None:
    conn = connect(db)
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM session_nodes WHERE session_key = ?", (key,)).fetchone()
        return dict(row) if row is not None else None
    finally:
        conn.close()


def assert_sound(db: Path, before_markers: tuple[Any, ...], *, fk_before: list[Any] | None = None) -> None:
    """After a write: integrity ok, foreign keys as before (none), no entry_json holding a snapshot
    field that also has a row, every valid row's revision at least its rows, markers unchanged."""
    conn = connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == (fk_before or [])
        for key, text in conn.execute(
            "SELECT session_key, entry_json FROM session_nodes WHERE entry_valid = 1"
        ):
            stored = json.loads(text)
            rows = {
                f
                for (f,) in conn.execute(
                    "SELECT field FROM session_entry_snapshots WHERE session_key = ?", (key,)
                )
            }
            assert not (rows & set(stored)), f"{key}: {rows & set(stored)} both inline and in rows"
    finally:
        conn.close()
    assert markers(db) == before_markers
