"""Store detection (spec D2): which store is at a path, which store an agent uses, the import hint."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from openclaw_cli.errors import InvalidDataError, NotFoundError, RefusedError
from openclaw_cli.paths import resolve_paths
from openclaw_cli.store.detect import (
    LegacyLocation,
    derive_agent_id_from_store_path,
    legacy_store_pending,
    locate_agent_store,
    open_agent_store,
    open_store_at,
)
from openclaw_cli.store.openclaw.store import OpenClawDbStore
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore
from tests.conftest import OPENCLAW_FIXTURE

legacy_mod = pytest.importorskip("openclaw_cli.store.legacy.store")


@pytest.mark.parametrize(
    ("path", "agent"),
    [
        ("/s/agents/main/sessions/sessions.json", "main"),
        ("/s/agents/Work Agent/sessions/sessions.json", "work-agent"),
        ("/s/agents/ops/agent/openclaw-agent.sqlite", "ops"),
        ("/s/agents/ops/agent/openclaw-agent.ops.2.sqlite", "ops"),
        ("/s/sessions/sessions.json", None),
        ("/custom/store.json", None),
        ("/s/agents/main/sessions/other.json", None),
        ("/s/agents/main/agent/other.db", None),
    ],
)
def test_derive_agent_id_from_store_path(path: str, agent: str | None) -> None:
    assert derive_agent_id_from_store_path(Path(path)) == agent


def test_open_store_at_dispatches_by_content(tmp_path: Path, imported_fixture_state: Path) -> None:
    real = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with open_store_at(real) as store:
        assert isinstance(store, OpenClawDbStore) and store.agent_id == "main"
    ours_path = tmp_path / "agents" / "ops" / "agent" / "openclaw-agent.sqlite"
    with open_store_at(ours_path, create=True) as store:
        assert isinstance(store, SqliteStore) and store.agent_id == "ops"
        store.upsert_entries({"agent:ops:main": {"sessionId": "s1"}})
    with open_store_at(ours_path) as store:
        assert isinstance(store, SqliteStore) and store.count_entries() == 1
    # our DB renamed to a neutral place keeps its owner (from schema_meta)
    elsewhere = tmp_path / "copy.sqlite"
    shutil.copyfile(ours_path, elsewhere)
    with open_store_at(elsewhere) as store:
        assert isinstance(store, SqliteStore) and store.agent_id == "ops"
    # a SQLite file named like a legacy store is still detected by its header
    disguised = tmp_path / "sessions.json"
    shutil.copyfile(real, disguised)
    with open_store_at(disguised) as store:
        assert isinstance(store, OpenClawDbStore)
    legacy = tmp_path / "agents" / "main" / "sessions" / "sessions.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('{"agent:main:main": {"sessionId": "abc", "updatedAt": 1}}')
    store = open_store_at(legacy)
    assert isinstance(store, legacy_mod.LegacyStore) and store.agent_id == "main"
    assert list(store.load_entries()) == ["agent:main:main"]


def test_open_store_at_errors_are_typed_and_name_the_file(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not sqlite at all, just text" * 10)
    with pytest.raises(InvalidDataError, match="garbage.sqlite is not a SQLite database"):
        open_store_at(garbage)
    with pytest.raises(NotFoundError):
        open_store_at(tmp_path / "missing.sqlite")
    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(InvalidDataError, match="another application"):
        open_store_at(foreign)
    unrelated = tmp_path / "unrelated.sqlite"
    conn = sqlite3.connect(unrelated)
    conn.execute("CREATE TABLE photos(x)")
    conn.close()
    with pytest.raises(InvalidDataError, match="not an OpenClaw agent database"):
        open_store_at(unrelated)
    newer = tmp_path / "newer.sqlite"
    shutil.copyfile(OPENCLAW_FIXTURE / "imported-state/agents/main/agent/openclaw-agent.sqlite", newer)
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 27")  # 24-26 are read since issue 23
    conn.close()
    with pytest.raises(InvalidDataError, match="newer schema version 27"):
        open_store_at(newer)
    with pytest.raises(InvalidDataError, match="directory"):
        open_store_at(tmp_path)


def test_open_agent_store_prefers_the_database(state_dir: Path) -> None:
    paths = resolve_paths()
    store = open_agent_store(paths, "main")
    assert isinstance(store, legacy_mod.LegacyStore)  # nothing on disk: an empty legacy store
    assert store.load_entries() == {} and store.path == paths.legacy_store_path("main")
    assert not paths.legacy_store_path("main").exists()  # opening wrote nothing
    SqliteStore(paths.agent_db_path("main"), "main", create=True).close()
    with open_agent_store(paths, "Main") as store:
        assert isinstance(store, SqliteStore) and store.path == paths.agent_db_path("main")
        assert not store.read_only
    before = sorted(os.listdir(paths.agent_db_path("main").parent))
    with open_agent_store(paths, "main", read_only=True) as store:
        assert store.read_only and store.count_entries() == 0
        with pytest.raises(RefusedError):
            store.upsert_entries({"k": {"sessionId": "s"}})
        assert sorted(os.listdir(paths.agent_db_path("main").parent)) == before
    with pytest.raises(NotFoundError):
        open_store_at(paths.agent_db_path("other"), create=True, read_only=True)


def test_locate_agent_store_answers_as_the_store_open_agent_store_opens(state_dir: Path) -> None:
    """stop 40: a search only locates an agent's legacy store; the location gives what the opened
    store gives (path, agent, sessions dir, layout facts, the D2 hint's answer) in each state — no
    sessions.json, transcripts only, a sessions.json — and a database is opened as before."""
    paths = resolve_paths()
    sessions = paths.sessions_dir("main")

    def same(agent: str) -> None:
        opened, located = (
            open_agent_store(paths, agent, read_only=True),
            locate_agent_store(paths, agent, read_only=True),
        )
        assert isinstance(opened, legacy_mod.LegacyStore) and isinstance(located, LegacyLocation)
        for name in (
            "kind",
            "path",
            "agent_id",
            "sessions_dir",
            "transcripts_in_files",
            "schema",
            "read_only",
        ):
            assert getattr(located, name) == getattr(opened, name), name
        assert located.legacy_data_present() == opened.legacy_data_present()
        located.close()
        opened.close()

    same("Main")
    assert not locate_agent_store(paths, "main").legacy_data_present()
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text("{}\n")
    same("main")
    assert locate_agent_store(paths, "main").legacy_data_present()
    (sessions / "a.jsonl").unlink()
    (sessions / "sessions.json").write_text("{}")
    same("MAIN")
    assert locate_agent_store(paths, "main").legacy_data_present()
    SqliteStore(paths.agent_db_path("main"), "main", create=True).close()
    store = locate_agent_store(paths, "main", read_only=True)
    try:
        assert isinstance(store, SqliteStore) and store.read_only
    finally:
        store.close()


def test_locate_agent_store_refuses_a_symlinked_legacy_store(state_dir: Path, tmp_path: Path) -> None:
    paths = resolve_paths()
    outside = tmp_path / "sessions.json"
    outside.write_text("{}")
    legacy = paths.legacy_store_path("main")
    legacy.parent.mkdir(parents=True)
    os.symlink(outside, legacy)
    with pytest.raises(RefusedError, match="symbolic links"):
        locate_agent_store(paths, "main")


def test_open_agent_store_reads_the_real_openclaw_db(imported_fixture_state: Path) -> None:
    with open_agent_store(resolve_paths(), "main") as store:
        assert isinstance(store, OpenClawDbStore) and store.count_entries() == 13


def test_open_agent_store_refuses_a_symlinked_database(state_dir: Path, tmp_path: Path) -> None:
    paths = resolve_paths()
    outside = tmp_path / "outside.sqlite"
    SqliteStore(outside, "main", create=True).close()
    db = paths.agent_db_path("main")
    db.parent.mkdir(parents=True)
    os.symlink(outside, db)
    with pytest.raises(RefusedError, match="symbolic links"):
        open_agent_store(paths, "main")


def test_legacy_store_pending(legacy_fixture_state: Path) -> None:
    paths = resolve_paths()
    assert legacy_store_pending(paths, "main")  # legacy store, no database
    assert not legacy_store_pending(paths, "other")  # nothing at all
    sessions = paths.sessions_dir("main")
    entries = orjson.loads((sessions / "sessions.json").read_bytes())
    records = []
    for key, entry in entries.items():
        f = sessions / f"{entry['sessionId']}.jsonl"
        records.append(ImportRecord(key, entry, f.read_bytes().split(b"\n") if f.exists() else ()))
    orphans = {f.stem for f in sessions.glob("*.jsonl")} - {e["sessionId"] for e in entries.values()}
    assert orphans  # the fixture has an orphan transcript
    with SqliteStore(paths.agent_db_path("main"), "main", create=True) as db:
        db.bulk_import(records)
        assert legacy_store_pending(paths, "main")  # the orphan is not covered yet
        for sid in orphans:
            db.bulk_import(
                [
                    ImportRecord(
                        f"agent:main:recovered:{sid}",
                        {"sessionId": sid},
                        (sessions / f"{sid}.jsonl").read_bytes().split(b"\n"),
                    )
                ]
            )
    assert not legacy_store_pending(paths, "main")
    # a key added to sessions.json later is pending again; bare cron keys count as canonicalised
    data = orjson.loads((sessions / "sessions.json").read_bytes())
    data["cron:nightly"] = {"sessionId": "nightly-1", "updatedAt": 1}
    (sessions / "sessions.json").write_bytes(orjson.dumps(data))
    assert legacy_store_pending(paths, "main")
    with SqliteStore(paths.agent_db_path("main"), "main") as db:
        db.upsert_entries({"agent:main:cron:nightly": {"sessionId": "nightly-1", "updatedAt": 1}})
    assert not legacy_store_pending(paths, "main")


def test_detect_sqlite_magic_matches_sqlite_common():
    """detect keeps its own copy of the SQLite header (opening a legacy store imports no SQLite
    module): it must be the one sqlite_common checks."""
    from openclaw_cli.store import detect, sqlite_common

    assert detect._SQLITE_MAGIC == sqlite_common.SQLITE_MAGIC
