"""Migration 0002 (the label index sessions.patch's uniqueness check uses): a database at schema 1
still opens read-only exactly as it is (nothing written), the next read-write open migrates it, and
the label lookup is an index search, not a scan."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openclaw_cli.errors import InvalidDataError
from openclaw_cli.store import schema as schema_mod
from openclaw_cli.store.sqlite import SqliteStore


def _db(tmp_path: Path) -> Path:
    return tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _downgrade_to_v1(path: Path) -> None:
    """What a database written by a build with only migration 0001 looks like."""
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX idx_agent_session_nodes_label")
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
        store.upsert_entries({"agent:main:a": {"sessionId": "s1", "updatedAt": 2, "label": "alpha"},
                              "agent:main:b": {"sessionId": "s2", "updatedAt": 1}})
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
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_mod.USER_VERSION_BASE + schema_mod.SCHEMA_VERSION
        plan = " ".join(row[-1] for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT session_key FROM session_nodes WHERE label = ?", ("alpha",)))
        assert "USING INDEX idx_agent_session_nodes_label" in plan, plan
    finally:
        conn.close()


def test_a_database_older_than_readable_still_refuses_read_only(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
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
