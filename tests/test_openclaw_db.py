"""Reading a real OpenClaw schema-23 database (the fixture made by OpenClaw 2026.9.6), read-only."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from openclaw_cli.errors import ExitCode, InvalidDataError, NotFoundError, RefusedError
from openclaw_cli.store.base import ReadIssue
from openclaw_cli.store.openclaw.store import PAYLOAD_SIZE_MISMATCH, OpenClawDbStore
from tests.conftest import OPENCLAW_FIXTURE

FIXTURE_DB = OPENCLAW_FIXTURE / "imported-state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
ARCHIVE_DIR = OPENCLAW_FIXTURE / "imported-state" / "agents" / "main" / "session-sqlite-import-archive"
MAIN_SID = "df30a0ea-38b3-46e4-abd3-2c8eddd59451"


def originals() -> dict[str, list[bytes]]:
    """sessionId -> non-blank lines of the archived original JSONL (what OpenClaw imported)."""
    out = {}
    for f in ARCHIVE_DIR.glob("*.jsonl.imported-*"):
        sid = f.name.split(".jsonl.")[0].rsplit(".", 1)[1]
        out[sid] = [line for line in f.read_bytes().split(b"\n") if line.strip()]
    return out


def snapshot_dir(directory: Path) -> dict[str, tuple[int, str]]:
    return {
        p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(directory.iterdir())
    }


@pytest.fixture
def db(imported_fixture_state: Path) -> Path:
    return imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def writer(path: Path) -> sqlite3.Connection:
    """A plain connection that can modify a copy (OpenClaw's CHECKs use octet_length, SQLite 3.43+)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function(
        "octet_length", 1, lambda v: None if v is None else len(v.encode() if isinstance(v, str) else v)
    )
    return conn


def test_entries_match_the_real_cli_listing(db: Path) -> None:
    expected = orjson.loads((OPENCLAW_FIXTURE / "outputs" / "sessions.json").read_bytes())["sessions"]
    with OpenClawDbStore(db, "main") as store:
        assert store.kind == "openclaw-sqlite" and store.read_only and store.schema == "openclaw 23"
        assert store.agent_id == "main"
        assert store.sessions_dir == db.parent.parent / "sessions"
        rows, total = store.list_entries()
        assert total == 13 == store.count_entries() == len(store.load_entries())
        assert [(k, e["sessionId"], e["updatedAt"]) for k, e in rows] == [
            (s["key"], s["sessionId"], s["updatedAt"]) for s in expected
        ]
        by_key = {s["key"]: s for s in expected}
        for key, entry in rows:
            for field in ("inputTokens", "outputTokens"):
                if field in by_key[key]:
                    assert entry[field] == by_key[key][field]
        page, page_total = store.list_entries(limit=3)
        assert page == rows[:3] and page_total == 13
        assert store.get_entry("agent:main:main")["sessionId"] == MAIN_SID


def test_every_event_equals_the_archived_original_byte_for_byte(db: Path) -> None:
    src = originals()
    assert len(src) == 12
    raw = sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)
    compressed = raw.execute(
        "SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL"
    ).fetchone()[0]
    raw.close()
    assert compressed == 68  # the zstd path is really exercised
    seen = 0
    with OpenClawDbStore(db) as store:
        for sid, lines in src.items():
            issues: list[ReadIssue] = []
            got = list(store.iter_transcript(sid, issues=issues))
            assert not issues
            assert [line.raw.encode() for line in got] == lines
            assert [line.seq for line in got] == list(range(len(lines)))
            assert got[0].obj["type"] == "session"
            tail = store.tail_transcript(sid, 4)
            assert [line.raw.encode() for line in tail] == lines[-4:]
            buf = io.BytesIO()
            store.export_transcript(sid, buf)
            assert buf.getvalue() == b"".join(line + b"\n" for line in lines)
            seen += len(lines)
        assert seen == 335
        totals = store.session_totals()
        assert {sid: (t.events, t.bytes) for sid, t in totals.items()} == {
            sid: (len(lines), sum(map(len, lines))) for sid, lines in src.items()
        }
        # OpenClaw's own doctor reported the same byte total
        inspect = orjson.loads((OPENCLAW_FIXTURE / "outputs" / "doctor-inspect-after.json").read_bytes())
        db_stats = inspect["targets"][0]["dbStats"]
        assert sum(t.bytes for t in totals.values()) == db_stats["totalTranscriptRowBytes"]
        stats = store.stats()
        assert (stats.sessions, stats.transcript_events, stats.transcript_bytes) == (13, 335, 1053364)
        sizes = store.entry_sizes()
        assert len(sizes) == 13 and sizes["agent:main:main"][0] == MAIN_SID
        assert store.logical_bytes() == (sum(size for _, size in sizes.values()), 1053364)
        # the entry whose transcript was missing has none; that is not an error
        assert not store.has_transcript("906dd2b3-f6ca-47b6-affd-cbdf5556a57d")
        assert list(store.iter_transcript("906dd2b3-f6ca-47b6-affd-cbdf5556a57d")) == []


def test_read_only_directory_gets_no_sidecars(tmp_path: Path) -> None:
    directory = tmp_path / "ro" / "agents" / "main" / "agent"
    directory.mkdir(parents=True)
    path = directory / "openclaw-agent.sqlite"
    shutil.copyfile(FIXTURE_DB, path)
    os.chmod(path, 0o444)
    os.chmod(directory, 0o555)
    try:
        before = snapshot_dir(directory)
        with OpenClawDbStore(path) as store:
            assert store.count_entries() == 13
            assert [line.raw.encode() for line in store.iter_transcript(MAIN_SID)] == originals()[MAIN_SID]
            store.stats()
            store.session_totals()
            with pytest.raises(RefusedError) as info:
                store.upsert_entries({"k": {"sessionId": "x"}})
            assert info.value.exit_code == ExitCode.REFUSED
            assert snapshot_dir(directory) == before  # no -wal, no -shm, nothing modified
        assert snapshot_dir(directory) == before
    finally:
        os.chmod(directory, 0o700)


def test_writable_directory_gets_no_sidecars_either(db: Path) -> None:
    before = snapshot_dir(db.parent)
    with OpenClawDbStore(db) as store:
        store.list_entries()
        list(store.iter_transcript(MAIN_SID))
        assert store.open_mode == "immutable"
    assert snapshot_dir(db.parent) == before


@pytest.mark.parametrize("read_only", [True, False])
def test_raw_writes_are_refused_and_a_read_only_store_refuses_every_write(db: Path, read_only: bool) -> None:
    """The low-level writes of our own stores never touch an OpenClaw database (only the verified
    operations of the write protocol do, D21); opened read-only, those refuse too."""
    from openclaw_cli.store.retire import Retirement

    with OpenClawDbStore(db, read_only=read_only) as store:
        calls = [
            lambda: store.upsert_entries({"k": {}}),
            lambda: store.delete_entries(["agent:main:main"]),
            lambda: store.append_events(MAIN_SID, ["{}"], session_key="agent:main:main"),
            lambda: store.drop_session_events([MAIN_SID]),
            lambda: store.create_window("agent:main:main", "new-sid"),
            lambda: store.record_archive(archive_name="x"),
            lambda: store.bulk_import([]),
        ]
        for call in calls:
            with pytest.raises(RefusedError, match="real OpenClaw database"):
                call()
        if read_only:
            protocol = [
                lambda: store.transaction(),
                lambda: store.write_lock(None),
                lambda: store.retire(
                    Retirement(["agent:main:main"]), lock_settings=None, now_ms=0, checkpoint=lambda: None
                ),
                lambda: store.retire_all(lock_settings=None, now_ms=0, checkpoint=lambda: None),
                lambda: store.commit_max_lines(None, [], now_ms=0, lock_settings=None),
            ]
            for call in protocol:
                with pytest.raises(RefusedError, match="opened read-only"):
                    call()
    assert OpenClawDbStore(db).count_entries() == 13


def test_live_wal_is_read_through_the_existing_shm(db: Path) -> None:
    """A running OpenClaw keeps -wal/-shm; committed rows still in the WAL must be visible."""
    live = writer(db)
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute("BEGIN IMMEDIATE")
    live.execute(
        "INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at)"
        " VALUES ('agent:main:new', 'new-sid', '{\"sessionId\":\"new-sid\",\"updatedAt\":1796100000000}',"
        " 1796100000000)"
    )
    live.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = 'agent:main:new'")
    live.execute("COMMIT")
    try:
        assert Path(f"{db}-wal").stat().st_size > 0 and Path(f"{db}-shm").exists()
        names = sorted(os.listdir(db.parent))
        with OpenClawDbStore(db) as store:
            assert store.open_mode == "ro"
            rows, total = store.list_entries(limit=1)
            assert total == 14 and rows[0][0] == "agent:main:new"
        assert sorted(os.listdir(db.parent)) == names
    finally:
        live.close()


def test_wal_without_shm_in_a_read_only_dir_is_read_from_a_private_copy(db: Path, tmp_path: Path) -> None:
    live = writer(db)
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute(
        "UPDATE session_nodes SET entry_json = json_set(entry_json, '$.label', 'from-wal')"
        " WHERE session_key = 'agent:main:main'"
    )
    live.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = 'agent:main:main'")
    crashed = tmp_path / "crashed" / "agent"
    crashed.mkdir(parents=True)
    shutil.copyfile(db, crashed / db.name)
    shutil.copyfile(f"{db}-wal", crashed / f"{db.name}-wal")  # a crashed writer: WAL, no -shm
    live.close()
    os.chmod(crashed, 0o555)
    try:
        before = snapshot_dir(crashed)
        with OpenClawDbStore(crashed / db.name) as store:
            assert store.open_mode == "snapshot"
            assert store.get_entry("agent:main:main")["label"] == "from-wal"
        assert snapshot_dir(crashed) == before
    finally:
        os.chmod(crashed, 0o700)


def test_corrupt_zstd_payload_size_is_detected(db: Path) -> None:
    conn = writer(db)
    seq = conn.execute(
        "SELECT seq FROM transcript_events WHERE session_id = ? AND event_zstd IS NOT NULL"
        " ORDER BY seq LIMIT 1",
        (MAIN_SID,),
    ).fetchone()[0]
    conn.execute(
        "UPDATE transcript_events SET event_utf8_bytes = event_utf8_bytes + 1 WHERE session_id = ? AND seq = ?",
        (MAIN_SID, seq),
    )
    conn.close()
    with OpenClawDbStore(db) as store:
        with pytest.raises(InvalidDataError, match=PAYLOAD_SIZE_MISMATCH):
            list(store.iter_transcript(MAIN_SID))
        issues: list[ReadIssue] = []
        lines = list(store.iter_transcript(MAIN_SID, issues=issues))
        assert len(lines) == len(originals()[MAIN_SID]) - 1 and seq not in [line.seq for line in lines]
        assert len(issues) == 1 and issues[0].message.startswith(PAYLOAD_SIZE_MISMATCH)
    assert (
        PAYLOAD_SIZE_MISMATCH == "Compressed transcript payload length does not match its recorded UTF-8 size"
    )


def test_cold_session_is_reported_cold_not_empty(db: Path) -> None:
    sid = "0d57c3a5-5014-46d7-9e64-8cdc886d0090"
    conn = writer(db)
    conn.execute(
        "INSERT INTO session_transcript_cold_archives(session_id, generation, archive_name, archive_sha256,"
        " event_count, raw_bytes, archive_bytes, last_seq, archived_at, storage)"
        " VALUES (?, 'g1', ?, ?, 35, 525976, 1000, 34, 1796000000000, 'file')",
        (sid, "a" * 64 + ".jsonl.zst", "a" * 64),
    )
    conn.execute("DELETE FROM transcript_event_identities WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (sid,))
    conn.close()
    with OpenClawDbStore(db) as store:
        assert store.has_transcript(sid) and store.is_cold(sid)
        with pytest.raises(InvalidDataError, match="cold storage") as info:
            list(store.iter_transcript(sid))
        assert info.value.type == "cold_transcript"
        with pytest.raises(InvalidDataError, match="cold storage"):
            store.tail_transcript(sid, 5)
        issues: list[ReadIssue] = []
        assert list(store.iter_transcript(sid, issues=issues)) == [] and "cold storage" in issues[0].message
        totals = store.session_totals()[sid]
        assert (totals.events, totals.bytes, totals.cold) == (35, 525976, True)
        assert store.stats().extra["coldSessions"] == 1


def test_archive_rows_and_files_are_listed(db: Path) -> None:
    sessions = db.parent.parent / "sessions"
    sessions.mkdir(exist_ok=True)
    (sessions / f"{MAIN_SID}.jsonl.reset.2026-11-29T00-00-00.000Z").write_bytes(b"{}\n")
    conn = writer(db)
    conn.execute(
        "INSERT INTO session_transcript_archives(session_id, generation, session_key, reason, encoding,"
        " archive_blob, archive_sha256, archive_name, created_at) VALUES"
        " (?, 'g1', 'agent:main:main', 'deleted', 'zstd', x'00112233', ?, ?, 1796000000000)",
        (MAIN_SID, "b" * 64, f"{MAIN_SID}.jsonl.deleted.2026-11-30T00-00-00.000Z.zst"),
    )
    conn.close()
    with OpenClawDbStore(db) as store:
        archives = {a.path.name: a for a in store.list_archives()}
        assert set(archives) == {
            f"{MAIN_SID}.jsonl.reset.2026-11-29T00-00-00.000Z",
            f"{MAIN_SID}.jsonl.deleted.2026-11-30T00-00-00.000Z.zst",
        }
        row = archives[f"{MAIN_SID}.jsonl.deleted.2026-11-30T00-00-00.000Z.zst"]
        assert (row.session_id, row.reason, row.compressed, row.size) == (MAIN_SID, "deleted", True, 4)
        assert store.stats().archives_count == 2


def _set_version(path: Path, version: int) -> None:
    conn = writer(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()


def test_newer_schema_is_named(db: Path) -> None:
    _set_version(db, 27)
    with pytest.raises(InvalidDataError) as info:
        OpenClawDbStore(db)
    assert (
        f"{db} uses newer schema version 27; this build reads 23–26 and writes 23 and 24."
        in info.value.message
    )


def test_older_schema_asks_for_doctor_fix(db: Path) -> None:
    _set_version(db, 22)
    with pytest.raises(InvalidDataError) as info:
        OpenClawDbStore(db)
    assert info.value.message == (
        f"OpenClaw agent database {db} uses schema version 22; stop active agents and run "
        "openclaw doctor --fix to migrate session identities before using it."
    )


def test_pre_14_unversioned_database_asks_for_doctor_fix(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE session_entries (session_key TEXT PRIMARY KEY, session_id TEXT, entry_json TEXT)"
    )
    conn.close()
    with pytest.raises(
        InvalidDataError, match="uses schema version 0; stop active agents and run openclaw doctor --fix"
    ):
        OpenClawDbStore(path)


def test_wrong_role_owner_and_garbage(db: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidDataError, match="belongs to agent main; requested agent work"):
        OpenClawDbStore(db, "work")
    conn = writer(db)
    conn.execute("UPDATE schema_meta SET role = 'global'")
    conn.close()
    with pytest.raises(InvalidDataError) as info:
        OpenClawDbStore(db)
    assert info.value.message == f"OpenClaw agent database {db} has schema role global; expected agent."
    garbage = tmp_path / "openclaw-agent.sqlite"
    garbage.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(InvalidDataError, match=str(garbage)) as info:
        OpenClawDbStore(garbage)
    assert info.value.exit_code == ExitCode.INVALID_DATA
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(FIXTURE_DB.read_bytes()[:50])
    with pytest.raises(InvalidDataError, match="truncated.sqlite"):
        OpenClawDbStore(truncated)
    with pytest.raises(NotFoundError):
        OpenClawDbStore(tmp_path / "missing.sqlite")


def test_byte_readers_equal_the_totals(db: Path) -> None:
    with OpenClawDbStore(db, "main") as store:
        assert store.session_bytes() == {sid: t.bytes for sid, t in store.session_totals().items()}
        assert store.entry_bytes() == {k: size for k, (_, size) in store.entry_sizes().items()}
        assert store.session_bytes() and store.entry_bytes()
