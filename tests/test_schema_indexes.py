"""Migrations 0002/0003 (the label index sessions.patch's uniqueness check uses; the partial
archived / pinned indexes the Gateway listing counts with): a database at schema 1 still opens
read-only exactly as it is (nothing written), the next read-write open migrates it, the lookups
are index searches, and listings answer the same with and without the new indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openclaw_cli.errors import InvalidDataError
from openclaw_cli.store.sqlite import schema as schema_mod
from openclaw_cli.store.sqlite.store import SqliteStore


def _db(tmp_path: Path) -> Path:
    return tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _downgrade_to_v1(path: Path) -> None:
    """What a database written by a build with only migration 0001 looks like."""
    conn = sqlite3.connect(path)
    for index in (
        "idx_agent_session_nodes_label",
        "idx_agent_session_nodes_archived",
        "idx_agent_session_nodes_pinned",
    ):
        conn.execute(f"DROP INDEX {index}")
    conn.execute(f"DELETE FROM {schema_mod.MIGRATIONS_TABLE} WHERE name != '0001_initial'")
    conn.execute("UPDATE schema_meta SET schema_version = 1")
    conn.execute(f"PRAGMA user_version = {schema_mod.USER_VERSION_BASE + 1}")
    conn.commit()
    conn.close()


def _index_names(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        conn.close()


def test_old_schema_reads_as_is_and_a_write_open_migrates(tmp_path: Path) -> None:
    path = _db(tmp_path)
    with SqliteStore(path, "main", create=True) as store:
        store.upsert_entries(
            {
                "agent:main:a": {"sessionId": "s1", "updatedAt": 2, "label": "alpha"},
                "agent:main:b": {"sessionId": "s2", "updatedAt": 1},
            }
        )
    _downgrade_to_v1(path)
    before = path.read_bytes()

    with SqliteStore(path, "main", read_only=True) as old:
        assert [key for key, _ in old.list_entries(limit=10)[0]] == ["agent:main:a", "agent:main:b"]
        assert old.label_owners("alpha") == ["agent:main:a"]  # a scan on the old schema, same answer
        assert old.stats().extra["schemaVersion"] == 1
    assert path.read_bytes() == before  # a read-only open never migrates
    assert "idx_agent_session_nodes_label" not in _index_names(path)

    with SqliteStore(path, "main") as store:
        assert store.label_owners("alpha") == ["agent:main:a"]
        assert store.stats().extra["schemaVersion"] == schema_mod.SCHEMA_VERSION
    assert "idx_agent_session_nodes_label" in _index_names(path)
    conn = sqlite3.connect(path)
    try:
        assert (
            conn.execute("PRAGMA user_version").fetchone()[0]
            == schema_mod.USER_VERSION_BASE + schema_mod.SCHEMA_VERSION
        )
        plan = " ".join(
            row[-1]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT session_key FROM session_nodes WHERE label = ?", ("alpha",)
            )
        )
        assert "USING INDEX idx_agent_session_nodes_label" in plan, plan
        plan = " ".join(
            row[-1]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT session_key FROM session_nodes WHERE pinned_at IS NOT NULL AND archived_at IS NULL"
            )
        )
        assert "idx_agent_session_nodes_pinned" in plan, plan
        page = " ".join(
            row[-1]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT session_key FROM session_nodes WHERE archived_at IS NULL AND pinned_at IS NULL"
                " ORDER BY updated_at DESC, session_key LIMIT 50"
            )
        )
        assert "idx_agent_session_nodes_updated_at" in page and "TEMP B-TREE" not in page, page
    finally:
        conn.close()


def test_a_database_older_than_readable_still_refuses_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _db(tmp_path)
    SqliteStore(path, "main", create=True).close()
    _downgrade_to_v1(path)
    monkeypatch.setattr(schema_mod, "READABLE_SCHEMA_VERSION", 2)
    with pytest.raises(InvalidDataError, match="needs a schema upgrade"):
        SqliteStore(path, "main", read_only=True)


def test_keeper_follows_a_replaced_database_file(tmp_path: Path) -> None:
    """A live process (the Gateway) whose agent's database is deleted and created again must not
    keep answering from the keeper of the dead file (its data_version never changes again)."""
    from openclaw_cli.store import sqlite_common

    path = _db(tmp_path)
    SqliteStore(path, "main", create=True).close()
    sqlite_common.enable_live_reads()
    try:
        first = sqlite_common.keeper(path)
        assert first is not None and sqlite_common.keeper(path) is first
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink()
        assert sqlite_common.keeper(path) is None  # gone: no file is created by asking
        assert not path.exists()
        SqliteStore(path, "main", create=True).close()
        second = sqlite_common.keeper(path)
        assert second is not None and second is not first
    finally:
        sqlite_common.disable_live_reads()


@pytest.mark.parametrize("old_schema", [False, True])
def test_listing_counts_agree_with_the_reference(tmp_path: Path, old_schema: bool) -> None:
    from openclaw_cli.store.base import ListingQuery, listing_page

    path = _db(tmp_path)
    entries = {}
    for i in range(60):
        entry = {"sessionId": f"s{i}", "updatedAt": 1000 + i // 2, "label": f"l{i % 4}"}
        if i % 5 == 0:
            entry["archivedAt"] = 5
        if i % 7 == 0:
            entry["pinnedAt"] = 6
        entries[f"agent:main:direct:p{i:02d}"] = entry
    with SqliteStore(path, "main", create=True) as store:
        store.upsert_entries(entries)
    if old_schema:
        _downgrade_to_v1(path)
    with SqliteStore(path, "main", read_only=True) as store:
        for archived in (None, True, False):
            for extra in ({}, {"pinned": True}, {"label": "l1"}, {"active_since_ms": 1020}):
                for offset, limit in ((0, 5), (3, 50), (0, None)):
                    query = ListingQuery(archived=archived, offset=offset, limit=limit, **extra)
                    assert store.list_view(query) == listing_page(entries.items(), query), (query, old_schema)


def test_live_readers_are_pooled_and_see_every_commit(tmp_path: Path) -> None:
    """In a live process a read-only open reuses an idle reader of the keeper's pool (no new
    connection, no second schema check), and that reader sees what was committed meanwhile."""
    from openclaw_cli.store import sqlite_common

    path = _db(tmp_path)
    with SqliteStore(path, "main", create=True) as store:
        store.upsert_entries({"agent:main:a": {"sessionId": "s1", "updatedAt": 1}})
    sqlite_common.enable_live_reads()
    try:
        with SqliteStore(path, "main", read_only=True) as first:
            conn = first._conn
            assert first.count_entries() == 1
        with SqliteStore(path, "main") as writer:
            writer.upsert_entries({"agent:main:b": {"sessionId": "s2", "updatedAt": 2}})
        with SqliteStore(path, "main", read_only=True) as again:
            assert again._conn is conn  # the pooled reader
            assert again.count_entries() == 2 and again.get_entry("agent:main:b") is not None
            with pytest.raises(InvalidDataError, match="belongs to agent main"):
                SqliteStore(path, "work", read_only=True)  # a pooled reader is checked per agent
    finally:
        sqlite_common.disable_live_reads()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")  # the last live server stopped: pooled readers are closed


def test_a_live_process_checkpoints_outside_its_commits(tmp_path: Path) -> None:
    """Live write connections leave the WAL to `checkpoint_live_databases` (the Gateway's
    background loop), which copies it into the database."""
    from openclaw_cli.store import sqlite_common

    path = _db(tmp_path)
    SqliteStore(path, "main", create=True).close()
    sqlite_common.enable_live_reads()
    try:
        with SqliteStore(path, "main") as store:
            assert (
                store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                == sqlite_common.LIVE_WAL_AUTOCHECKPOINT
            )
            for i in range(50):
                store.upsert_entries({f"agent:main:k{i}": {"sessionId": f"s{i}", "updatedAt": i}})
        assert _file_rows(path) == 0  # all 50 rows are still in the WAL only
        sqlite_common.checkpoint_live_databases()
        assert _file_rows(path) == 50  # copied into the database file
    finally:
        sqlite_common.disable_live_reads()


def _file_rows(path: Path) -> int:
    """Rows the database file itself holds (immutable: the WAL is not read)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
    finally:
        conn.close()
