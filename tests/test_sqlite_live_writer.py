"""Issue 30: in a live process (the Gateway) our SQLite store keeps one idle write connection per
database between writes — a `sessions.patch` batch does not open, configure and check a connection
each time — and takes it again only while the database is the same file with the same schema."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from openclaw_cli.store.sqlite import schema as schema_mod
from openclaw_cli.store.sqlite.store import SqliteStore
from openclaw_cli.store.sqlite_common import disable_live_reads, enable_live_reads


@pytest.fixture
def live() -> Iterator[None]:
    enable_live_reads()
    try:
        yield
    finally:
        disable_live_reads()


def _db(tmp_path: Path) -> Path:
    path = tmp_path / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True)
    with SqliteStore(path, "main", create=True) as store:
        store.upsert_entries({"agent:main:main": {"sessionId": "s0", "updatedAt": 1}})
    return path


def _opens(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    opened: list[Path] = []
    real = schema_mod.open_database

    def counting(path: Path, *args: object, **kwargs: object) -> sqlite3.Connection:
        opened.append(path)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(schema_mod, "open_database", counting)
    return opened


def test_live_writes_reuse_one_connection(
    tmp_path: Path, live: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _db(tmp_path)
    opened = _opens(monkeypatch)
    for i in range(5):
        with SqliteStore(path, "main") as store:
            store.upsert_entries({f"agent:main:k{i}": {"sessionId": f"s{i + 1}", "updatedAt": i}})
    assert not opened  # the creating store's connection, taken again from the keeper each time
    with SqliteStore(path, "main", read_only=True) as reader:
        assert reader.count_entries() == 6  # every write committed
    # two writable stores at once: the second opens its own; one of them is kept afterwards
    with SqliteStore(path, "main") as first, SqliteStore(path, "main") as second:
        assert first._conn is not second._conn  # noqa: SLF001 - the connections under test
    assert len(opened) == 1


def test_a_kept_writer_is_not_reused_for_another_schema_agent_or_file(
    tmp_path: Path, live: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _db(tmp_path)
    with SqliteStore(path, "main") as store:
        store.upsert_entries({"agent:main:a": {"sessionId": "s1", "updatedAt": 1}})
    opened = _opens(monkeypatch)
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE unrelated (x)")  # anyone's schema change: the kept one is not trusted
    other.commit()
    other.close()
    with SqliteStore(path, "main") as store:
        store.upsert_entries({"agent:main:b": {"sessionId": "s2", "updatedAt": 2}})
    assert len(opened) == 1
    with SqliteStore(path, "main", busy_timeout_ms=1234):  # another busy timeout: its own
        pass
    assert len(opened) == 2
    # the file replaced (an agent deleted and created again): a new keeper, a new connection
    os.replace(_db(tmp_path / "again"), path)
    with SqliteStore(path, "main") as store:
        assert store.get_entry("agent:main:b") is None
    assert opened.count(path) == 3


def test_a_writer_is_given_back_outside_any_transaction(tmp_path: Path, live: None) -> None:
    path = _db(tmp_path)
    store = SqliteStore(path, "main")
    conn = store._conn  # noqa: SLF001 - the connection under test
    with pytest.raises(RuntimeError), store.transaction():
        store.upsert_entries({"agent:main:gone": {"sessionId": "s9", "updatedAt": 9}})
        raise RuntimeError("rolled back")
    store.close()
    with SqliteStore(path, "main") as again:
        assert again._conn is conn and not conn.in_transaction  # noqa: SLF001
        assert again.get_entry("agent:main:gone") is None
