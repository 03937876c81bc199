"""Schema 24 (OpenClaw 2026.9.7–2026.9.9) read and written in both shapes (issue 23 parts 1 and 5,
spec D24): the published v2026.9.9 catalog (fresh DDL) and a real 2026.9.6 database migrated by
the documented algorithm (`snapshot_revision` last). After every write: integrity, foreign keys,
snapshot rows as expected, markers unchanged (`schema24_support.assert_sound`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cleanup_support import cli_json, release_2026_7, write_config  # noqa: F401 - fixture

from openclaw_cli.store.openclaw.store import OpenClawDbStore
from tests.conftest import run_cli
from tests.schema24_support import (
    FRESH_KEY,
    INLINE_KEYS,
    MISMATCHED_KEY,
    SNAPSHOT_FIELDS,
    assert_sound,
    catalog_statements,
    connect,
    fresh_state,
    markers,
    migrate_to_24,
    migrated_state,
    node,
    put_inline,
    revisions,
    snapshot_rows,
    snapshot_values,
)


@pytest.fixture(params=["fresh", "migrated"])
def shape(request: pytest.FixtureRequest, state_dir: Path) -> tuple[Path, str]:
    """(database, a key with all three snapshot rows) in each schema-24 shape."""
    if request.param == "fresh":
        return fresh_state(state_dir, snapshots=True), FRESH_KEY
    db, _ = migrated_state(state_dir)
    return db, INLINE_KEYS[1]  # not the main session: that one is never archived or deleted


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# ---- the published catalog -----------------------------------------------------------------------------


def test_the_published_catalog_is_a_schema_24_database(state_dir: Path):
    db = fresh_state(state_dir)
    conn = connect(db)
    try:
        objects = conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
        assert objects == 132  # the README's count of the writer-created catalog
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 24
        assert conn.execute("SELECT schema_version, app_version FROM schema_meta").fetchone() == (
            24,
            "2026.9.9",
        )
        columns = [r[1] for r in conn.execute("PRAGMA table_info(session_nodes)")]
        assert columns.index("snapshot_revision") == columns.index("entry_json") + 1  # fresh DDL
        assert conn.execute(
            "SELECT session_id FROM session_transcript_fts WHERE session_transcript_fts MATCH 'keeper'"
        ).fetchall() == [("10000000-0000-4000-8000-000000000001",)]
    finally:
        conn.close()
    with OpenClawDbStore(db) as store:
        assert store.schema == "openclaw 24" and store.agent_id == "keeper" and store.accepts_writes
        assert store.load_entries() == {
            FRESH_KEY: {
                "sessionId": "10000000-0000-4000-8000-000000000001",
                "updatedAt": 1791504000000,
                "label": "Stable keeper session",
                "delivery": {"kind": "none"},
            }
        }
        lines = [line.obj for line in store.iter_transcript("10000000-0000-4000-8000-000000000001")]
        assert [line["type"] for line in lines] == ["session", "message"]


def test_the_migrated_shape_appends_the_revision_column_last(state_dir: Path):
    db, expected = migrated_state(state_dir)
    conn = connect(db)
    try:
        assert [r[1] for r in conn.execute("PRAGMA table_info(session_nodes)")][-1] == "snapshot_revision"
    finally:
        conn.close()
    with OpenClawDbStore(db) as store:
        assert store.schema == "openclaw 24" and store.accepts_writes


# ---- reads ---------------------------------------------------------------------------------------------


def test_full_reads_reassemble_and_list_reads_omit(shape: tuple[Path, str]):
    db, key = shape
    stored = json.loads(node(db, key)["entry_json"])
    assert not set(SNAPSHOT_FIELDS) & set(stored)  # the rows hold them
    with OpenClawDbStore(db) as store:
        full = store.get_entry(key)
        assert list(full)[-3:] == list(SNAPSHOT_FIELDS)  # appended last, in field order
        assert {f: full[f] for f in SNAPSHOT_FIELDS} == snapshot_values(key)
        assert {k: v for k, v in full.items() if k not in SNAPSHOT_FIELDS} == stored
        assert store.load_entries()[key] == full
        rows, total = store.list_entries()
        listed = dict(rows)[key]
        assert listed == stored and total == store.count_entries()
        # the entry weighs what it would inline (the disk budget measures the same data alike)
        inline = len(_compact({**stored, **snapshot_values(key)}).encode())
        assert store.entry_sizes()[key][1] == inline
        assert store.issues == []


def test_an_unmigrated_inline_row_keeps_its_inline_values_on_full_reads(state_dir: Path):
    db, _ = migrated_state(state_dir)
    with OpenClawDbStore(db) as store:
        entry = store.get_entry(MISMATCHED_KEY)
        assert entry["skillsSnapshot"] == snapshot_values(MISMATCHED_KEY)["skillsSnapshot"]
        listed = dict(store.list_entries()[0])[MISMATCHED_KEY]
        assert not set(SNAPSHOT_FIELDS) & set(listed)  # list reads drop inline ones too


def test_cli_reads_on_schema_24(shape: tuple[Path, str]):
    db, key = shape
    code, doc, err = cli_json("sessions", "--store", str(db), "--json")
    assert code == 0, err
    row = next(r for r in doc["sessions"] if r["key"] == key)
    assert not set(SNAPSHOT_FIELDS) & set(row)
    code, doc, err = cli_json("status", "--json")
    assert code == 0, err
    code, doc, err = cli_json("sessions", "cleanup", "--dry-run", "--store", str(db), "--json")
    assert code == 0 and doc["beforeCount"] == len(revisions(db)), err
    code, doc, err = cli_json(
        "doctor", "--session-sqlite", "inspect", "--session-sqlite-store", str(db), "--json"
    )
    assert code == 0 and not doc["targets"][0]["issues"], err
    # a session's transcript through tail and export (its events, not the snapshot rows)
    code, tail, err = cli_json("sessions", "tail", "--session-key", key, "--store", str(db), "--json")
    assert code == 0 and tail["key"] == key, err
    conn = connect(db)
    sid = conn.execute(
        "SELECT current_session_id FROM session_nodes WHERE session_key = ?", (key,)
    ).fetchone()[0]
    events = conn.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (sid,)).fetchone()[0]
    conn.close()
    proc = run_cli("sessions", "export", key, "--store", str(db))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr
    if events:  # both shapes' sessions have messages: tail shows them, export writes them
        assert tail["entries"] and len(lines) >= len(tail["entries"])


# ---- test vector 1: the snapshot writer ------------------------------------------------------------------


def _write(db: Path, key: str, entry: dict[str, Any], *, fail: bool = False) -> int:
    """One entry write through our writer in its own transaction; returns the statements it ran
    on the snapshot table. `fail` rolls the transaction back after the write."""
    from openclaw_cli.store.openclaw.rows import write_entry

    conn = connect(db)
    conn.execute("PRAGMA foreign_keys = ON")
    statements: list[str] = []
    forbidden: list[str] = []

    def trace(sql: str) -> None:  # SQLite traces a statement again for each trigger it fires
        # ours never write the revision (the triggers own it) nor a version marker (a callback's
        # exception is swallowed by sqlite3: collected, asserted after)
        if "snapshot_revision" in sql or "schema_meta" in sql or "user_version" in sql.lower():
            forbidden.append(sql)
        if sql.startswith(
            ("DELETE FROM session_entry_snapshots", "INSERT INTO session_entry_snapshots")
        ) and (not statements or statements[-1] != sql):
            statements.append(sql)

    conn.set_trace_callback(trace)
    try:
        conn.execute("BEGIN IMMEDIATE")
        write_entry(conn, key, entry, now_ms=1796000000000)
        conn.execute("ROLLBACK" if fail else "COMMIT")
    finally:
        conn.close()
    assert forbidden == []
    return len(statements)


def test_snapshot_revisions_follow_real_changes_only(shape: tuple[Path, str]):
    db, base_key = shape
    before = markers(db)
    sid = node(db, base_key)["current_session_id"]
    first, second = "agent:x:first", "agent:x:second"
    hot = {"sessionId": sid, "updatedAt": 1796000000000}
    values = snapshot_values(first)
    for key in (first, second):
        assert (
            _write(
                db,
                key,
                {
                    **hot,
                    "skillsSnapshot": values["skillsSnapshot"],
                    "systemPromptReport": values["systemPromptReport"],
                },
            )
            == 2
        )
    assert revisions(db)[first] == 2
    assert _write(db, first, {**hot, **values}) == 2
    assert revisions(db)[first] == 3
    assert _write(db, first, {**hot, **values}) == 2 and revisions(db)[first] == 3  # no spurious bump
    changed = {**hot, "sessionDiffBaseline": values["sessionDiffBaseline"], "skillsSnapshot": {"version": 4}}
    assert _write(db, first, changed) == 2
    assert revisions(db)[first] == 5 and set(snapshot_rows(db)[first]) == {
        "sessionDiffBaseline",
        "skillsSnapshot",
    }
    assert _write(db, first, hot, fail=True) == 1 and revisions(db)[first] == 5  # rolled back
    assert _write(db, first, hot) == 1
    assert revisions(db)[first] == 7 and first not in snapshot_rows(db)
    assert revisions(db)[second] == 2  # the other entry was never touched
    assert json.loads(node(db, first)["entry_json"]) == hot and node(db, first)["entry_valid"] == 1
    with OpenClawDbStore(db) as store:
        assert set(SNAPSHOT_FIELDS) & set(store.get_entry(second)) == {"skillsSnapshot", "systemPromptReport"}
    assert_sound(db, before)


# ---- test vector 2: the 23 -> 24 migration ---------------------------------------------------------------


def test_the_migration_counts_revisions_and_leaves_unreadable_rows_byte_for_byte(state_dir: Path):
    from tests.conftest import OPENCLAW_FIXTURE, copy_tree

    copy_tree(OPENCLAW_FIXTURE / "imported-state", state_dir)
    db = state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = connect(db)
    try:
        for key in INLINE_KEYS[:2]:
            put_inline(conn, key, snapshot_values(key))
        put_inline(conn, MISMATCHED_KEY, {"skillsSnapshot": {"v": 1}, "updatedAt": 1})  # updatedAt != column
        sid = conn.execute("SELECT current_session_id FROM session_nodes LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at)"
            " VALUES ('agent:main:broken', ?, '{', 1)",
            (sid,),
        )
        left = dict(
            conn.execute(
                "SELECT session_key, entry_json FROM session_nodes"
                " WHERE session_key IN (?, 'agent:main:broken')",
                (MISMATCHED_KEY,),
            )
        )
    finally:
        conn.close()
    inserted = migrate_to_24(db)
    assert inserted == {key: 3 for key in INLINE_KEYS[:2]}
    revs = revisions(db)
    assert {k: v for k, v in revs.items() if v} == inserted
    for key, text in left.items():
        assert node(db, key)["entry_json"] == text and revs[key] == 0
    assert markers(db)[0] == 24 and markers(db)[1][0][2] == 24


# ---- test vector 3: versions and markers (schema 25/26, drift, disagreeing markers) -----------------------


def _set_versions(db: Path, user_version: int, meta: int) -> None:
    conn = connect(db)
    try:
        conn.execute(f"PRAGMA user_version = {user_version}")
        conn.execute("UPDATE schema_meta SET schema_version = ?", (meta,))
    finally:
        conn.close()


def _digest(db: Path) -> bytes:
    conn = connect(db)
    try:
        return b"".join(line.encode() for line in conn.iterdump())
    finally:
        conn.close()


@pytest.mark.parametrize("version", [25, 26])
def test_schema_25_and_26_are_read_and_never_written(shape: tuple[Path, str], version: int):
    db, key = shape
    _set_versions(db, version, version)
    before = _digest(db)
    code, doc, err = cli_json("sessions", "--store", str(db), "--json")
    assert code == 0 and key in {r["key"] for r in doc["sessions"]}, err
    for args in (
        ("sessions", "reset", key),
        ("sessions", "pin", key),
        ("compact", key, "--max-lines", "2"),
        ("sessions", "cleanup", "--enforce"),
    ):
        code, doc, err = cli_json(*args, "--store", str(db), "--json")
        assert code == 7, (args, err)
        assert f"schema version {version}" in json.dumps(doc)
    assert _digest(db) == before


def test_disagreeing_markers_are_refused_with_both_values(shape: tuple[Path, str]):
    db, _ = shape
    _set_versions(db, 24, 25)
    code, doc, _ = cli_json("sessions", "--store", str(db), "--json")
    message = doc["error"]["message"]
    assert (
        code == 6 and "PRAGMA user_version = 24" in message and "schema_meta.schema_version = 25" in message
    )


def test_schema_22_names_openclaw_doctor(shape: tuple[Path, str]):
    db, _ = shape
    _set_versions(db, 22, 22)
    code, doc, _ = cli_json("sessions", "--store", str(db), "--json")
    assert code == 6 and "openclaw doctor" in doc["error"]["message"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            "DROP TRIGGER session_entry_snapshots_after_update",
            "trigger session_entry_snapshots_after_update (on session_entry_snapshots) is missing",
        ),
        (
            "ALTER TABLE session_nodes ADD COLUMN session_started_at INTEGER",
            "unexpected column session_nodes.session_started_at",
        ),
        (
            "DROP TRIGGER session_nodes_entry_valid_after_insert",
            "trigger session_nodes_entry_valid_after_insert (on session_nodes) is missing",
        ),
    ],
)
def test_an_unknown_catalogue_is_read_and_a_write_names_the_difference(
    shape: tuple[Path, str], change: str, named: str
):
    db, key = shape
    conn = connect(db)
    conn.execute(change)
    conn.close()
    before = _digest(db)
    code, doc, err = cli_json("sessions", "--store", str(db), "--json")
    assert code == 0, err
    code, doc, err = cli_json("sessions", "reset", key, "--store", str(db), "--json")
    assert code == 7 and named in doc["error"]["message"], err
    assert _digest(db) == before
    with OpenClawDbStore(db) as store:
        assert not store.accepts_writes and store.get_entry(key)["skillsSnapshot"]


def test_a_schema_23_database_with_an_unknown_column_is_not_written(imported_fixture_state: Path):
    db = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = connect(db)
    conn.execute("ALTER TABLE session_windows ADD COLUMN surprise TEXT")
    conn.close()
    code, doc, _ = cli_json("sessions", "reset", "agent:main:main", "--store", str(db), "--json")
    assert code == 7 and "unexpected column session_windows.surprise" in doc["error"]["message"]


# ---- every write, on both shapes --------------------------------------------------------------------------


def test_patches_rewrite_the_hot_entry_and_leave_equal_snapshot_rows_alone(shape: tuple[Path, str]):
    db, key = shape
    before, rows, rev = markers(db), snapshot_rows(db)[key], revisions(db)[key]
    for args in (("pin", key), ("label", key, "Quarterly planning"), ("mark-unread", key), ("archive", key)):
        code, doc, err = cli_json("sessions", *args, "--store", str(db), "--json", "--no-backup")
        assert code == 0 and doc["ok"], (args, err)
    stored = node(db, key)
    entry = json.loads(stored["entry_json"])
    assert entry["label"] == stored["label"] == "Quarterly planning" and stored["pinned_at"] == entry.get(
        "pinnedAt"
    )
    assert stored["entry_valid"] == 1 and stored["archived_at"] == entry["archivedAt"]
    assert not set(SNAPSHOT_FIELDS) & set(entry)
    assert snapshot_rows(db)[key] == rows and revisions(db)[key] == rev  # unchanged rows not rewritten
    assert_sound(db, before)


def test_reset_drops_the_cleared_snapshots_and_keeps_the_baseline(
    shape: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    db, key = shape
    before, rev = markers(db), revisions(db)[key]
    old = node(db, key)["current_session_id"]
    code, doc, err = cli_json("sessions", "reset", key, "--store", str(db), "--json")
    assert code == 0 and doc["previousSessionId"] == old, err
    assert node(db, key)["current_session_id"] == doc["sessionId"] != old
    # a reset clears skillsSnapshot and systemPromptReport (OpenClaw's step 16): two rows deleted
    assert set(snapshot_rows(db)[key]) == {"sessionDiffBaseline"} and revisions(db)[key] == rev + 2
    assert_sound(db, before)


def test_fork_and_compaction_keep_the_snapshot_rows(shape: tuple[Path, str]):
    db, key = shape
    before, rows = markers(db), snapshot_rows(db)[key]
    child = key.rsplit(":", 1)[0] + ":forked"
    code, doc, err = cli_json("sessions", "fork", key, "--to", child, "--store", str(db), "--json")
    assert code == 0 and doc["ok"], err
    assert node(db, child)["entry_valid"] == 1 and child not in snapshot_rows(db)
    code, doc, err = cli_json("compact", key, "--store", str(db), "--json")
    assert code == 0 and doc["compacted"], err
    code, doc, err = cli_json("compact", key, "--max-lines", "2", "--store", str(db), "--json")
    assert code == 0, err
    assert snapshot_rows(db)[key] == rows
    with OpenClawDbStore(db) as store:
        assert {f: store.get_entry(key)[f] for f in SNAPSHOT_FIELDS} == snapshot_values(key)
    assert_sound(db, before)


def test_delete_cascades_the_snapshot_rows(shape: tuple[Path, str]):
    db, key = shape
    before = markers(db)
    assert key in snapshot_rows(db)
    code, doc, err = cli_json("sessions", "delete", key, "--yes", "--store", str(db), "--json")
    assert code == 0 and doc["results"][0]["status"] == "deleted", err
    assert node(db, key) is None and key not in snapshot_rows(db)
    assert_sound(db, before)


@pytest.mark.usefixtures("release_2026_7")  # G1 removals and budget (D23: schema 24 follows 2026.9.9)
def test_cleanup_and_its_disk_budget_remove_rows_with_their_snapshots(
    shape: tuple[Path, str], state_dir: Path
):
    db, key = shape
    write_config(
        state_dir,
        {
            "session": {
                "maintenance": {"mode": "enforce", "pruneAfter": "3d", "maxEntries": 4, "maxDiskBytes": "1mb"}
            }
        },
    )
    before = markers(db)
    keys_before = set(revisions(db))
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--store", str(db), "--json")
    assert code == 0, err
    gone = keys_before - set(revisions(db))
    assert gone and not gone & set(snapshot_rows(db))
    assert_sound(db, before)


def test_agent_delete_empties_a_schema_24_database(state_dir: Path):
    db = fresh_state(state_dir, snapshots=True)
    before = markers(db)
    write_config(state_dir, {"agents": {"list": [{"id": "main", "default": True}, {"id": "keeper"}]}})
    code, doc, err = cli_json("agents", "delete", "keeper", "--force", "--json")
    assert code == 0, err
    conn = connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM session_entry_snapshots").fetchone()[0] == 0
    finally:
        conn.close()
    assert_sound(db, before)


def test_a_write_on_schema_23_creates_no_snapshot_table(imported_fixture_state: Path):
    db = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    code, doc, err = cli_json(
        "sessions", "pin", "agent:main:main", "--store", str(db), "--json", "--no-backup"
    )
    assert code == 0, err
    conn = connect(db)
    try:
        assert (
            conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'session_entry_snapshots'").fetchone()
            is None
        )
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 23
    finally:
        conn.close()


# ---- bad input ----------------------------------------------------------------------------------------------

DEEP = "[" * 1500 + "]" * 1500  # deeper than SQLite's JSON nesting limit (1000; 2000 since 3.45: still valid)
DEEPER = '{"a":' * 2500 + "1" + "}" * 2500


def _bad_rows(db: Path, key: str) -> None:
    """A deep value, an orphan snapshot row (foreign keys off, as a partial write leaves it), and
    `key`'s fields both inline (stale values) and in rows."""
    conn = connect(db)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(
            "UPDATE session_entry_snapshots SET value_json = ? WHERE session_key = ? AND field = ?",
            (DEEPER, key, "sessionDiffBaseline"),
        )
        conn.execute(
            "INSERT INTO session_entry_snapshots(session_key, field, value_json) VALUES (?,?,?)",
            ("agent:main:ghost", "skillsSnapshot", '{"ghost":true}'),
        )
        put_inline(conn, key, {"skillsSnapshot": {"stale": True}, "systemPromptReport": {"stale": True}})
    finally:
        conn.close()


def test_bad_snapshot_rows_are_read_listed_and_survive_a_write(shape: tuple[Path, str]):
    db, key = shape
    _bad_rows(db, key)
    conn = connect(db)
    try:
        with pytest.raises(sqlite3.OperationalError):  # SQLite itself cannot read the deep value
            conn.execute(
                "SELECT json_extract(value_json, '$') FROM session_entry_snapshots WHERE value_json = ?",
                (DEEPER,),
            ).fetchall()
        fk_before = conn.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        conn.close()
    before = markers(db)
    for args in (
        ("sessions", "export", key),
        ("sessions", "tail", "--session-key", key),
        ("sessions", "--json"),
    ):
        code, out, err = cli_json(*args, "--store", str(db))
        assert code == 0 and "Traceback" not in err, (args, err)
    with OpenClawDbStore(db) as store:
        entry = store.get_entry(key)
        assert entry["skillsSnapshot"] == snapshot_values(key)["skillsSnapshot"]
        from openclaw_cli.jsonutil import RawJson, dumps_compact

        assert entry["sessionDiffBaseline"] == RawJson(DEEPER)
        assert dumps_compact(entry["sessionDiffBaseline"]) == DEEPER
        issues = {(code, k) for code, _, k in store.snapshot_issues()}
    assert issues == {
        ("sqlite_snapshot_orphan", "agent:main:ghost"),
        ("sqlite_snapshot_inline_duplicate", key),
        ("sqlite_snapshot_deep_json", key),
    }
    rev = revisions(db)[key]
    code, doc, err = cli_json("sessions", "pin", key, "--store", str(db), "--json", "--no-backup")
    assert code == 0, err
    assert "both inline in entry_json" in doc["hint"]  # the normalisation is said, not silent
    rows = snapshot_rows(db)[key]
    assert rows["sessionDiffBaseline"] == DEEPER and revisions(db)[key] == rev  # equal rows untouched
    assert_sound(db, before, fk_before=fk_before)  # the orphan is still the only violation, nothing new


def test_doctor_validate_lists_bad_snapshot_rows(state_dir: Path):
    db, _ = migrated_state(state_dir)
    _bad_rows(db, "agent:main:main")
    code, doc, err = cli_json(
        "doctor", "--session-sqlite", "validate", "--session-sqlite-agent", "main", "--json"
    )
    assert doc is not None, err
    codes = {issue["code"] for target in doc["targets"] for issue in target["issues"]}
    assert {
        "sqlite_snapshot_orphan",
        "sqlite_snapshot_inline_duplicate",
        "sqlite_snapshot_deep_json",
    } <= codes
    assert "Traceback" not in err


def test_catalog_statements_cover_the_whole_file():
    statements = catalog_statements()
    assert statements[0] == "PRAGMA foreign_keys = OFF;" and statements[-1] == "PRAGMA foreign_keys = ON;"
    assert sum(s.startswith("CREATE TRIGGER") for s in statements) == 26


# ---- the value types bulk reads hand out ------------------------------------------------------------------


def test_bulk_reads_hold_snapshot_objects_as_text_and_they_behave_as_mappings(shape: tuple[Path, str]):
    from openclaw_cli.jsonutil import JsonObjectText, dumps_compact, dumps_pretty

    db, key = shape
    with OpenClawDbStore(db) as store:
        bulk = store.load_entries()[key]
        single = store.get_entry(key)
    skills = bulk["skillsSnapshot"]
    assert isinstance(skills, JsonObjectText) and isinstance(single["skillsSnapshot"], dict)
    assert bulk == single and single == bulk  # both directions
    assert skills.get("promptRef") == snapshot_values(key)["skillsSnapshot"]["promptRef"]
    assert dict(skills) == snapshot_values(key)["skillsSnapshot"] and "version" in skills and len(skills) == 3
    assert dumps_compact(bulk) == dumps_compact(single) and dumps_pretty(bulk) == dumps_pretty(single)
    with pytest.raises(TypeError):
        hash(skills)


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("{}", True),
        ('{"a":[1,{"b":null}]}', True),
        (" [ ] ", True),
        ('"x\\u00e9"', True),
        ("-1.5e3", True),
        ("", False),
        ("[1,]", False),
        ('{"a"}', False),
        ("{1:2}", False),
        ("[}", False),
        ("01", False),
        ("{} {}", False),
        ("nul", False),
    ],
)
def test_json_text_check_without_recursion(text: str, valid: bool):
    from openclaw_cli.jsonutil import is_json_text, loads_or_raw

    assert is_json_text(text) is valid
    assert is_json_text("[" * 5000 + "]" * 5000) and not is_json_text("[" * 5000 + "]" * 4999)
    with pytest.raises(ValueError):
        loads_or_raw("[" * 5000 + "x" + "]" * 5000)


def test_a_row_changed_since_the_plan_is_told_apart_from_an_unchanged_one(shape: tuple[Path, str]):
    from openclaw_cli.store.openclaw.writes import unchanged_rows

    db, key = shape
    with OpenClawDbStore(db) as store:
        planned = store.load_entries()
    conn = connect(db)
    try:
        assert unchanged_rows(conn, [key], planned) == ([key], [])
        conn.execute(
            "UPDATE session_entry_snapshots SET value_json = ? WHERE session_key = ? AND field = ?",
            ('{"version":9}', key, "skillsSnapshot"),
        )
        assert unchanged_rows(conn, [key], planned) == ([], [key])
        conn.execute(
            "DELETE FROM session_entry_snapshots WHERE session_key = ? AND field = 'skillsSnapshot'", (key,)
        )
        assert unchanged_rows(conn, [key], planned) == ([], [key])  # the field is gone
        without = {k: {f: v for f, v in e.items() if f != "skillsSnapshot"} for k, e in planned.items()}
        assert unchanged_rows(conn, [key], without) == ([key], [])
    finally:
        conn.close()


# ---- our Gateway serving a schema-24 state ------------------------------------------------------------------


def test_our_gateway_lists_describes_and_patches_a_schema_24_state(state_dir: Path):
    from tests.gateway_server_support import GatewayThread, connected

    db, _ = migrated_state(state_dir)
    key = INLINE_KEYS[1]
    before, rows = markers(db), snapshot_rows(db)[key]
    with GatewayThread() as gateway, connected(gateway.url) as client:
        listed = client.request("sessions.list", {"limit": 50})
        assert listed["ok"], listed
        row = next(r for r in listed["payload"]["sessions"] if r["key"] == key)
        assert not set(SNAPSHOT_FIELDS) & set(row)
        patched = client.request("sessions.patch", {"key": key, "label": "From the Gateway"})
        assert patched["ok"], patched
        assert patched["payload"]["entry"]["skillsSnapshot"] == snapshot_values(key)["skillsSnapshot"]
    stored = node(db, key)
    assert stored["label"] == "From the Gateway" and stored["entry_valid"] == 1
    assert snapshot_rows(db)[key] == rows
    assert_sound(db, before)
