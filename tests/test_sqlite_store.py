"""Our SQLite store (spec D4): schema marks and migrations, entries, byte-exact transcripts, totals,
bounded tails, busy handling (D12), windows, dropping rows, and the bulk-import path."""

from __future__ import annotations

import io
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import orjson
import pytest

from openclaw_cli import __version__
from openclaw_cli.errors import ExitCode, InvalidDataError, InvalidIdError, RefusedError, SessionBusyError
from openclaw_cli.store.base import SessionStore, SessionTotals
from openclaw_cli.store.sqlite.schema import MIGRATIONS, MIGRATIONS_TABLE, SCHEMA_VERSION
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore
from openclaw_cli.store.sqlite_common import OUR_APPLICATION_ID, event_token_estimate
from tests.conftest import OPENCLAW_FIXTURE, generate_legacy_state

MIGRATION_NAMES = [name for name, _ in MIGRATIONS]
KEY = "agent:main:main"
SID = "0b6f7a1c-1111-4222-8333-444455556666"


def db_path(root: Path, agent: str = "main") -> Path:
    return root / "agents" / agent / "agent" / "openclaw-agent.sqlite"


@pytest.fixture
def store(tmp_path: Path):
    s = SqliteStore(db_path(tmp_path), "main", create=True)
    yield s
    s.close()


def header(sid: str = SID) -> str:
    return orjson.dumps(
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-29T22:28:32.825Z", "cwd": "/w"}
    ).decode()


def message(i: int, text: str = "hi", parent: str | None = None) -> str:
    return orjson.dumps(
        {
            "type": "message",
            "id": f"m{i:04d}",
            "parentId": parent,
            "timestamp": "2026-11-29T22:30:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        }
    ).decode()


# ---- schema --------------------------------------------------------------------------------------


def test_schema_marks_modes_and_recorded_migrations(store: SqliteStore, tmp_path: Path) -> None:
    path = db_path(tmp_path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == OUR_APPLICATION_ID == 0x4F43434C
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1000 + SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    meta = conn.execute(
        "SELECT meta_key, role, schema_version, agent_id, app_version, created_at, updated_at"
        " FROM schema_meta"
    ).fetchall()
    assert len(meta) == 1
    key, role, version, agent, app_version, created, updated = meta[0]
    assert (key, role, version, agent, app_version) == (
        "primary",
        "agent",
        SCHEMA_VERSION,
        "main",
        f"openclaw-cli {__version__}",
    )
    assert created > 1_700_000_000_000 and updated >= created
    names = [r[0] for r in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")]
    assert names == MIGRATION_NAMES and names[0] == "0001_initial"
    index_sql = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'idx_agent_session_nodes_updated_at'"
    ).fetchone()[0]
    assert "updated_at DESC, session_key" in index_sql
    # small columns before the JSON column
    cols = [r[1] for r in conn.execute("PRAGMA table_info(transcript_events)")]
    assert cols[-1] == "event_json" and cols.index("event_utf8_bytes") < cols.index("event_json")
    cols = [r[1] for r in conn.execute("PRAGMA table_info(session_nodes)")]
    assert cols[-1] == "entry_json"
    conn.close()
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}})
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for suffix in ("", "-wal", "-shm"):
        sidecar = Path(f"{path}{suffix}")
        assert sidecar.exists() and stat.S_IMODE(sidecar.stat().st_mode) == 0o600, suffix
    assert store.schema == f"openclaw-cli {SCHEMA_VERSION}" and store.kind == "sqlite"
    assert store.sessions_dir == tmp_path / "agents" / "main" / "sessions"


def test_reopen_is_idempotent_and_writes_nothing(store: SqliteStore, tmp_path: Path) -> None:
    path = db_path(tmp_path)
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}})
    observer = sqlite3.connect(path)
    before = observer.execute("PRAGMA data_version").fetchone()[0]
    meta_before = observer.execute("SELECT * FROM schema_meta").fetchall()
    again = SqliteStore(path, "main")
    again.close()
    again = SqliteStore(path, "main", create=True)
    again.close()
    # data_version changes when another connection commits: re-opening a current DB commits nothing
    assert observer.execute("PRAGMA data_version").fetchone()[0] == before
    assert observer.execute("SELECT * FROM schema_meta").fetchall() == meta_before
    assert observer.execute(f"SELECT count(*) FROM {MIGRATIONS_TABLE}").fetchone()[0] == SCHEMA_VERSION
    observer.close()


def test_concurrent_creation_applies_each_migration_once(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            SqliteStore(path, "main", create=True).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    conn = sqlite3.connect(path)
    assert conn.execute(f"SELECT count(*) FROM {MIGRATIONS_TABLE}").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM schema_meta").fetchone()[0] == 1
    conn.close()


def _create_and_write(path: str, key: str, barrier, results) -> None:
    try:
        barrier.wait()
        with SqliteStore(Path(path), "main", create=True) as s:
            s.upsert_entries({key: {"sessionId": "s"}})
        results.put("ok")
    except BaseException as exc:  # reported to the parent
        results.put(repr(exc))


def test_concurrent_creation_by_processes(tmp_path: Path) -> None:
    """Several processes creating the same new database at once (the WAL switch and page size
    must not race: the database is published fully initialised)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for round_no in range(8):
        path = db_path(tmp_path / str(round_no))
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(target=_create_and_write, args=(str(path), f"k{i}", barrier, results))
            for i in range(4)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(30)
        assert [results.get(timeout=5) for _ in procs] == ["ok"] * 4
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0] == 4
        assert conn.execute(f"SELECT count(*) FROM {MIGRATIONS_TABLE}").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
        conn.close()
        assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_later_migration_is_applied_once_in_its_own_transaction(
    store: SqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.store.sqlite import schema as schema_mod

    path = db_path(tmp_path)
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}})
    store.close()
    calls = []

    def broken(conn: sqlite3.Connection, agent_id: str) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration failed midway")

    current = len(schema_mod.MIGRATIONS)
    monkeypatch.setattr(schema_mod, "MIGRATIONS", [*schema_mod.MIGRATIONS, ("9999_broken", broken)])
    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", current + 1)
    with pytest.raises(RuntimeError):
        SqliteStore(path, "main")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1000 + current  # rolled back: still current
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0
    conn.close()

    def add_column(conn: sqlite3.Connection, agent_id: str) -> None:
        calls.append(agent_id)
        conn.execute("ALTER TABLE session_windows ADD COLUMN note TEXT")

    monkeypatch.setattr(
        schema_mod, "MIGRATIONS", [*schema_mod.MIGRATIONS[:current], ("9999_note", add_column)]
    )
    SqliteStore(path, "main").close()
    SqliteStore(path, "main").close()
    assert calls == ["main"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1000 + current + 1
    assert [r[0] for r in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")] == [
        *MIGRATION_NAMES,
        "9999_note",
    ]
    assert conn.execute("SELECT schema_version FROM schema_meta").fetchone()[0] == current + 1
    assert "note" in [r[1] for r in conn.execute("PRAGMA table_info(session_windows)")]
    assert (
        conn.execute("SELECT entry_json FROM session_nodes").fetchone()[0]
        == '{"sessionId":"' + SID + '","updatedAt":1}'
    )
    conn.close()


def test_newer_schema_foreign_db_garbage_and_wrong_agent_are_typed_errors(
    store: SqliteStore, tmp_path: Path
) -> None:
    path = db_path(tmp_path)
    store.close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {1000 + SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(InvalidDataError, match="newer openclaw-cli schema version"):
        SqliteStore(path, "main")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {1000 + SCHEMA_VERSION}")
    conn.close()
    with pytest.raises(InvalidDataError, match="belongs to agent main; requested agent work"):
        SqliteStore(path, "work")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(InvalidDataError, match="garbage.sqlite"):
        SqliteStore(garbage, "main")
    real = tmp_path / "real.sqlite"
    real.write_bytes(
        (OPENCLAW_FIXTURE / "imported-state/agents/main/agent/openclaw-agent.sqlite").read_bytes()
    )
    with pytest.raises(InvalidDataError, match="not an openclaw-cli session database"):
        SqliteStore(real, "main")
    with pytest.raises(InvalidDataError, match="not an openclaw-cli session database"):
        SqliteStore(real, "main", create=True)


# ---- entries -------------------------------------------------------------------------------------


def test_entries_round_trip_exactly_with_unknown_fields(store: SqliteStore) -> None:
    entries = {
        KEY: {
            "sessionId": SID,
            "updatedAt": 1795999700000,
            "zUnknown": {"nested": [1, 2.5, None, True]},
            "label": "Grüße 👋",
            "aFirst": "order kept",
            "big": 2**70,
        },
        "agent:main:telegram:group:1": {
            "sessionId": "s-2",
            "updatedAt": 1795999700001.5,
            "chatType": "group",
        },
        "agent:main:no-session-id": {"updatedAt": "not a number", "custom": "x"},
        "agent:main:cron:job1": {"sessionId": "s-3"},
    }
    assert store.upsert_entries(entries) == 4
    loaded = store.load_entries()
    assert loaded == entries
    assert list(loaded) == list(entries)  # store order
    assert list(loaded[KEY]) == list(entries[KEY])  # key order inside the entry
    raw = store._conn.execute(
        "SELECT entry_json FROM session_nodes WHERE session_key = ?", (KEY,)
    ).fetchone()[0]
    assert (
        raw
        == orjson.dumps({k: v for k, v in entries[KEY].items() if k != "big"}).decode()[:-1]
        + ',"big":'
        + str(2**70)
        + "}"
    )
    assert store.get_entry("agent:main:cron:job1") == {"sessionId": "s-3"}
    assert store.get_entry("missing") is None
    assert store.count_entries() == 4
    # replace and delete
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 5}})
    assert store.get_entry(KEY) == {"sessionId": SID, "updatedAt": 5}
    assert store.delete_entries([KEY, "agent:main:nope"]) == 1
    assert store.get_entry(KEY) is None and store.count_entries() == 3
    with pytest.raises(InvalidDataError):
        store.upsert_entries({"k": ["not", "an", "object"]})  # type: ignore[dict-item]
    with pytest.raises(InvalidDataError):
        store.upsert_entries({"": {"sessionId": "x"}})


def _projections(store: SqliteStore, key: str) -> tuple:
    from openclaw_cli.store.sqlite.store import _NODE_READ_FOR_UPDATE

    return tuple(store._db().execute(_NODE_READ_FOR_UPDATE, (key,)).fetchone())


def test_a_patch_rewrites_the_changed_projections_and_repairs_stale_ones(store: SqliteStore) -> None:
    """`update_entry` sets only the projections that changed, so every column must still be what
    a full write of the entry gives — types included (1 and 1.0 stay apart), and a projection
    that is stale in the row (written by another version) is rewritten."""
    from openclaw_cli.store.sqlite.lifecycle import patch_entry

    before = {"sessionId": SID, "updatedAt": 1, "label": "a", "pinnedAt": 7, "status": "done"}
    store.upsert_entries({KEY: before, "twin": dict(before, label="b")})
    store._db().execute(
        "UPDATE session_nodes SET status = 'stale', spawned_by = 'x' WHERE session_key = ?", (KEY,)
    )
    after = {"sessionId": SID, "updatedAt": 2.0, "label": "c", "pinnedAt": 7, "status": "done"}
    assert patch_entry(store, KEY, lambda cur: after, create=False) == after
    store.upsert_entries({"twin": after})  # the full write of the same entry
    assert _projections(store, KEY)[1:] == _projections(store, "twin")[1:]
    assert store.get_entry(KEY) == after
    assert type(_projections(store, KEY)[2]) is float  # updated_at: 1 -> 2.0, a REAL now
    labelled = (
        "SELECT session_key FROM session_nodes INDEXED BY idx_agent_session_nodes_label WHERE label = ?"
    )
    assert store._db().execute(labelled, ("a",)).fetchall() == []
    assert sorted(store._db().execute(labelled, ("c",)).fetchall()) == [(KEY,), ("twin",)]
    # a key not there yet is inserted (create), with its window
    new = {"sessionId": "s-new", "updatedAt": 3}
    assert patch_entry(store, "fresh", lambda cur: new, create=True) == new
    assert store.get_entry("fresh") == new


def test_a_pin_patch_leaves_the_other_indexes_pages_alone(store: SqliteStore) -> None:
    """A pin toggle on a labelled row writes the row, the updated_at index, the pinned index and
    the window: its commit puts at most 4 pages in the WAL (the full upsert rewrote the label and
    current-session-id index entries too: 6 pages here)."""
    from openclaw_cli.store.sqlite.lifecycle import patch_entry

    store.upsert_entries(
        {f"k{i}": {"sessionId": f"s-{i}", "updatedAt": i, "label": f"l{i}"} for i in range(20)}
    )
    conn = store._db()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(str(store.path) + "-wal")

    def frames() -> int:
        data = wal.read_bytes()  # a 32-byte header (the page size at 8), then (24 + page)-byte frames
        return (len(data) - 32) // (24 + int.from_bytes(data[8:12], "big")) if data else 0

    start = frames()
    patch_entry(store, "k5", lambda cur: dict(cur, updatedAt=99, pinnedAt=99), create=False)
    assert frames() - start <= 4


def test_listing_order_filter_limit_and_both_query_paths_agree(store: SqliteStore) -> None:
    entries = {}
    for i in range(40):
        updated = None if i % 9 == 0 else 1000 + (i % 7)  # ties and missing values
        entry = {"sessionId": f"s{i}"}
        if updated is not None:
            entry["updatedAt"] = updated
        entries[f"agent:main:k{i:02d}"] = entry
    store.upsert_entries(entries)

    def expected_order(items):
        dated = sorted((k for k, e in items if "updatedAt" in e), key=lambda k: (-entries[k]["updatedAt"], k))
        return dated + sorted(k for k, e in items if "updatedAt" not in e)

    rows, total = store.list_entries()
    assert total == 40 and [k for k, _ in rows] == expected_order(entries.items())
    assert rows[0][1] == entries[rows[0][0]]
    small, small_total = store.list_entries(limit=7)  # index path
    assert small_total == 40 and small == rows[:7]
    big, _ = store.list_entries(limit=5000)  # scan path
    assert big == rows
    since, since_total = store.list_entries(updated_since_ms=1005)
    assert {k for k, _ in since} == {k for k, e in entries.items() if e.get("updatedAt", 0) >= 1005}
    assert since_total == len(since)
    page, page_total = store.list_entries(limit=2, updated_since_ms=1005)
    assert page == since[:2] and page_total == len(since)
    assert store.list_entries(limit=0) == ([], 40)
    # agrees with the interface's reference implementation wherever that one is defined (no ties)
    unique = {f"u{i}": {"sessionId": f"u{i}", "updatedAt": i * 10} for i in range(20)}
    store.delete_entries(list(entries))
    store.upsert_entries(unique)
    assert store.list_entries(limit=5)[0] == SessionStore.list_entries(store, limit=5)[0]


def test_listing_20k_entries_is_fast_and_small_pages_use_the_index(store: SqliteStore) -> None:
    entries = {
        f"agent:main:telegram:direct:{i}": {
            "sessionId": f"sid-{i}",
            "updatedAt": 1_790_000_000_000 + i * 997 % 20011,
            "chatType": "direct",
            "inputTokens": i,
            "model": "gpt-5.4",
            "origin": {"provider": "telegram", "chatType": "direct"},
        }
        for i in range(20000)
    }
    store.upsert_entries(entries)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        rows, total = store.list_entries()
    finally:
        store._conn.set_trace_callback(None)
    assert total == 20000 and len(rows) == 20000
    # fast by construction: a few statements whatever the row count, never one per row (the speed
    # itself, ~0.05 s for 20k, is scripts/bench's listing table, not a timed assertion)
    assert 1 <= len(statements) <= 4, statements
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT session_key, entry_json FROM session_nodes"
        " ORDER BY updated_at DESC, session_key LIMIT 50"
    ).fetchall()
    assert "idx_agent_session_nodes_updated_at" in str(plan) and "TEMP B-TREE" not in str(plan)


# ---- transcripts ---------------------------------------------------------------------------------

ODD_LINES = [
    '{"type": "session", "version": 3, "id": "'
    + SID
    + '", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}',
    '{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"Grüße, 世界 👋"}}',
    '{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"\\u00fc escaped stays escaped"}]},"n":1.0,"e":1e5}',
    '{ "type" : "custom" ,  "id":"a3", "data": {"z": 1, "a": 2} }',
    '{"type":"message","id":"a4","parentId":"a3","message":{"role":"toolResult","content":[{"type":"text","text":"'
    + "x" * 5000
    + '"}]}}',
]


def test_raw_lines_are_stored_byte_exact(store: SqliteStore) -> None:
    assert store.append_events(SID, ODD_LINES, session_key=KEY) == len(ODD_LINES)
    lines = list(store.iter_transcript(SID))
    assert [line.raw for line in lines] == ODD_LINES
    assert [line.seq for line in lines] == list(range(len(ODD_LINES)))
    assert lines[1].obj["message"]["content"] == "Grüße, 世界 👋"
    buf = io.BytesIO()
    written = store.export_transcript(SID, buf)
    expected = "".join(line + "\n" for line in ODD_LINES).encode("utf-8")
    assert buf.getvalue() == expected
    assert written.events == len(ODD_LINES) and written.bytes == len(expected) - len(ODD_LINES)
    assert [line.raw for line in store.tail_transcript(SID, 2)] == ODD_LINES[-2:]
    # bytes input takes the same path; trailing newline stripped, nothing else changed
    store.append_events(
        "s-bytes",
        [b'{"type":"session","version":4,"id":"s-bytes"}\n', ODD_LINES[3].encode()],
        session_key="k2",
    )
    assert [line.raw for line in store.iter_transcript("s-bytes")] == [
        '{"type":"session","version":4,"id":"s-bytes"}',
        ODD_LINES[3],
    ]


def test_header_is_written_for_a_new_session_and_dedupe(store: SqliteStore) -> None:
    n = store.append_events(
        SID,
        [message(1), message(2, parent="m0001")],
        session_key=KEY,
        created_at_ms=1_796_000_000_000,
        cwd="/home/user/ws",
    )
    assert n == 3  # header + 2
    first = next(store.iter_transcript(SID))
    assert first.obj == {
        "type": "session",
        "version": 4,
        "id": SID,
        "timestamp": "2026-11-30T00:53:20.000Z",
        "cwd": "/home/user/ws",
    }
    # ids already stored, an exact duplicate of an id-less line, duplicates within one call
    idless = '{"type":"note","text":"same"}'
    assert (
        store.append_events(SID, [message(2), idless, idless, message(3), message(3)], session_key=KEY) == 2
    )
    assert store.append_events(SID, [idless, message(1)], session_key=KEY) == 0
    raws = [line.raw for line in store.iter_transcript(SID)]
    assert raws.count(idless) == 1 and len(raws) == 5
    # a session whose first line is a header gets no second one
    assert store.append_events("s-h", [header("s-h"), message(1)], session_key="k") == 2
    assert [line.obj["type"] for line in store.iter_transcript("s-h")] == ["session", "message"]


def test_bad_appends_are_typed_errors_and_write_nothing(store: SqliteStore) -> None:
    with pytest.raises(InvalidIdError):
        store.append_events("../evil", [message(1)], session_key=KEY)
    with pytest.raises(InvalidDataError, match="line 2"):
        store.append_events(SID, [message(1), '{"type":"message", broken', message(3)], session_key=KEY)
    with pytest.raises(InvalidDataError):
        store.append_events(SID, [message(1), "[1, 2, 3]"], session_key=KEY)
    with pytest.raises(InvalidDataError):
        store.append_events(SID, ['{"a":1}\n{"b":2}'], session_key=KEY)
    with pytest.raises(InvalidDataError):  # a lone surrogate (e.g. from surrogateescape decoding)
        store.append_events(SID, ['{"text":"\udcff"}'], session_key=KEY)
    with pytest.raises(InvalidDataError):  # invalid UTF-8 bytes
        store.append_events(SID, [b'{"text":"\xff"}'], session_key=KEY)
    with pytest.raises(InvalidDataError):  # a raw control character inside a JSON string
        store.append_events(SID, ['{"text":"a\x00b"}'], session_key=KEY)
    assert not store.has_transcript(SID)
    assert store.session_totals() == {}


def test_totals_are_maintained_at_write_time(store: SqliteStore) -> None:
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}, "k2": {"sessionId": "s2", "updatedAt": 2}})
    store.append_events(SID, [header(), message(1, "hello world"), message(2, "x" * 4000)], session_key=KEY)
    store.append_events(SID, [message(2), message(3, "ü" * 10)], session_key=KEY)  # one dup
    compaction = orjson.dumps(
        {"type": "compaction", "id": "c1", "summary": "s" * 40, "firstKeptEntryId": "m0002"}
    ).decode()
    store.append_events("s2", [header("s2"), compaction], session_key="k2")

    def recomputed(sid: str) -> SessionTotals:
        lines = list(store.iter_transcript(sid))
        return SessionTotals(
            events=len(lines),
            bytes=sum(len(line.raw.encode()) for line in lines),
            token_estimate=sum(event_token_estimate(line.obj) for line in lines),
        )

    totals = store.session_totals()
    assert totals == {SID: recomputed(SID), "s2": recomputed("s2")}
    # 'hello world' 3, 4000 x's 1000, ten 'ü' weighted as accented Latin (1/2 token each) 5
    assert totals[SID].events == 4 and totals[SID].token_estimate == 3 + 1000 + 5
    # the totals are columns, not a scan: they equal the window row
    assert store._conn.execute(
        "SELECT event_count, event_bytes FROM session_windows WHERE session_id = ?", (SID,)
    ).fetchone() == (4, totals[SID].bytes)
    stats = store.stats()
    assert stats.sessions == 2 and stats.transcript_events == 6 and stats.compactions == 1
    entry_bytes = sum(len(orjson.dumps(e)) for e in store.load_entries().values())
    assert store.logical_bytes() == (entry_bytes, totals[SID].bytes + totals["s2"].bytes)
    assert store.entry_sizes() == {
        KEY: (SID, len(orjson.dumps(store.get_entry(KEY)))),
        "k2": ("s2", len(orjson.dumps(store.get_entry("k2")))),
    }
    assert stats.transcript_bytes == totals[SID].bytes + totals["s2"].bytes
    # the column readers the cleanup planner uses equal the general ones
    assert store.session_bytes() == {sid: t.bytes for sid, t in totals.items()}
    assert store.entry_bytes() == {k: size for k, (_, size) in store.entry_sizes().items()}
    store.delete_entries(["k2"])
    assert store.drop_session_events(["s2"]) == ["s2"]
    assert store.session_totals() == {SID: recomputed(SID)}
    assert store.stats().transcript_events == 4


def test_tail_reads_only_the_end(store: SqliteStore) -> None:
    store.append_events("small", [message(i) for i in range(20)], session_key="a")
    store.append_events("large", [message(i) for i in range(4000)], session_key="b")
    conn = store._conn
    steps = {"n": 0}

    def count() -> int:
        steps["n"] += 1
        return 0

    # an abandoned iteration releases its read snapshot (a checkpoint can then complete)
    iterator = store.iter_transcript("large")
    next(iterator)
    iterator.close()
    assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0

    def cost(fn) -> int:
        steps["n"] = 0
        conn.set_progress_handler(count, 10)
        try:
            fn()
        finally:
            conn.set_progress_handler(None, 10)
        return steps["n"]

    tail_small = cost(lambda: store.tail_transcript("small", 10))
    tail_large = cost(lambda: store.tail_transcript("large", 10))
    full_large = cost(lambda: list(store.iter_transcript("large")))
    assert [line.obj["id"] for line in store.tail_transcript("large", 3)] == ["m3997", "m3998", "m3999"]
    assert tail_large <= tail_small * 2 + 5  # independent of transcript length
    assert full_large > tail_large * 50
    assert store.tail_transcript("large", 0) == [] and store.tail_transcript("nope", 5) == []


# ---- busy (D12) ----------------------------------------------------------------------------------


def test_busy_database_waits_then_raises_session_busy(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    s = SqliteStore(path, "main", create=True, busy_timeout_ms=300)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        start = time.perf_counter()
        with pytest.raises(SessionBusyError) as info:
            s.upsert_entries({KEY: {"sessionId": SID}})
        waited = time.perf_counter() - start
        assert waited >= 0.25, "the write must wait for the busy timeout before giving up"
        assert str(info.value) == f"session store locked (timeout 300ms): {path}"
        assert info.value.exit_code == ExitCode.BUSY
        with pytest.raises(SessionBusyError):
            s.append_events(SID, [message(1)], session_key=KEY)
        # reads are not blocked by a writer (WAL)
        assert s.count_entries() == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    s.upsert_entries({KEY: {"sessionId": SID}})
    assert s.count_entries() == 1
    s.close()


def test_busy_is_released_when_the_holder_commits_within_the_timeout(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    s = SqliteStore(path, "main", create=True, busy_timeout_ms=5000)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    timer.start()
    start = time.perf_counter()
    s.upsert_entries({KEY: {"sessionId": SID}})
    assert time.perf_counter() - start >= 0.2
    timer.join()
    holder.close()
    s.close()


def test_sqlite_errors_map_to_typed_errors(store: SqliteStore, tmp_path: Path) -> None:
    from openclaw_cli.store.sqlite_common import translate_error

    path = db_path(tmp_path)
    ro = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as info:
        ro.execute("INSERT INTO session_nodes(session_key, entry_bytes, entry_json) VALUES ('k', 2, '{}')")
    ro.close()
    error = translate_error(info.value, path, 1000)
    assert isinstance(error, RefusedError) and str(path) in error.message


# ---- read-only, windows, drops, transactions -----------------------------------------------------


def test_read_only_open_refuses_writes_and_creates_nothing(store: SqliteStore, tmp_path: Path) -> None:
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}})
    store.append_events(SID, [message(1)], session_key=KEY)
    store.close()
    directory = db_path(tmp_path).parent
    before = sorted(os.listdir(directory))
    ro = SqliteStore(db_path(tmp_path), "main", read_only=True)
    assert ro.load_entries() == {KEY: {"sessionId": SID, "updatedAt": 1}}
    assert len(list(ro.iter_transcript(SID))) == 2
    for call in (
        lambda: ro.upsert_entries({}),
        lambda: ro.delete_entries([KEY]),
        lambda: ro.append_events(SID, [message(2)], session_key=KEY),
        lambda: ro.drop_session_events([SID]),
        lambda: ro.bulk_import([]),
    ):
        with pytest.raises(RefusedError, match="read-only"):
            call()
    assert sorted(os.listdir(directory)) == before
    ro.close()


def test_window_keys_are_the_windows_pairs_in_their_order(store: SqliteStore) -> None:
    """`window_keys` (cleanup's earlier windows of removed keys, issue 30: no dict per window) gives
    what `list_windows` gives of each window, in the same order, as the protocol's default does."""
    from openclaw_cli.store.base import SessionStore

    for i in range(6):
        key, sid = f"agent:main:k{i % 3}", f"c0ffee00-0000-4000-8000-00000000000{i}"
        store.upsert_entries({key: {"sessionId": sid, "updatedAt": i}})
        store.append_events(sid, [header(), message(1)], session_key=key, created_at_ms=1000 * (i % 2))
    pairs = [(w["sessionId"], w["sessionKey"]) for w in store.list_windows()]
    assert len(pairs) == 6
    assert store.window_keys() == pairs
    assert SessionStore.window_keys(store) == pairs


def test_create_window_successor_and_atomic_repoint(store: SqliteStore) -> None:
    store.upsert_entries({KEY: {"sessionId": SID, "updatedAt": 1}})
    store.append_events(SID, [header(), message(1), message(2)], session_key=KEY)
    new_sid = "c0ffee00-0000-4000-8000-000000000001"
    summary = orjson.dumps(
        {"type": "compaction", "id": "c1", "summary": "sum", "firstKeptEntryId": "m0002"}
    ).decode()
    entry = {"sessionId": new_sid, "updatedAt": 2, "compactionCount": 1}
    assert (
        store.create_window(
            KEY, new_sid, previous_session_id=SID, raw_lines=[summary, message(2)], entry=entry, cwd="/w"
        )
        == 3
    )
    assert store.get_entry(KEY) == entry
    windows = {w["sessionId"]: w for w in store.list_windows(KEY)}
    assert windows[new_sid]["reason"] == "compaction" and windows[new_sid]["previousSessionId"] == SID
    assert windows[new_sid]["compactions"] == 1 and windows[new_sid]["events"] == 3
    assert len(list(store.iter_transcript(SID))) == 3  # the previous window stays readable
    assert next(store.iter_transcript(new_sid)).obj["type"] == "session"
    with pytest.raises(RefusedError, match="already exists"):
        store.create_window(KEY, new_sid, previous_session_id=SID)
    with pytest.raises(InvalidDataError):
        store.create_window(KEY, "other-window", reason="bogus")
    # a bad entry aborts the whole operation: no window, no events
    with pytest.raises(InvalidDataError):
        store.create_window(KEY, "w3", raw_lines=[message(9)], entry={"sessionId": "mismatch"})
    assert store.window_totals("w3") is None and not store.has_transcript("w3")


def test_drop_session_events_only_unreferenced_and_unchanged(store: SqliteStore) -> None:
    store.upsert_entries({KEY: {"sessionId": SID}, "k2": {"sessionId": "s2"}})
    store.append_events(SID, [message(1)], session_key=KEY)
    store.append_events("s2", [message(1)], session_key="k2")
    assert store.drop_session_events([SID, "s2"]) == []  # both still referenced
    store.delete_entries(["k2"])
    buf = io.BytesIO()
    exported = store.export_transcript("s2", buf)
    store.append_events("s2", [message(2)], session_key="k2")  # a concurrent append after the archive
    assert store.drop_session_events(["s2"], expected={"s2": exported}) == []
    assert store.has_transcript("s2")
    exported = store.export_transcript("s2", io.BytesIO())
    assert store.drop_session_events(["s2"], expected={"s2": exported}) == ["s2"]
    assert not store.has_transcript("s2") and store.window_totals("s2") is None
    assert (
        store._conn.execute(
            "SELECT count(*) FROM transcript_event_identities WHERE session_id = 's2'"
        ).fetchone()[0]
        == 0
    )
    # the id is free again: a new append starts a fresh transcript with a header
    assert store.append_events("s2", [message(1)], session_key="k2") == 2


def test_transaction_combines_writes_and_rolls_back_on_error(store: SqliteStore) -> None:
    store.upsert_entries({KEY: {"sessionId": SID}})
    store.append_events(SID, [message(1)], session_key=KEY)
    with pytest.raises(RuntimeError), store.transaction():
        store.delete_entries([KEY])
        assert store.drop_session_events([SID]) == [SID]
        raise RuntimeError("crash before commit")
    assert store.get_entry(KEY) is not None and store.has_transcript(SID)
    with store.transaction():
        store.delete_entries([KEY])
        store.drop_session_events([SID])
        store.record_archive(
            archive_name=f"{SID}.jsonl.deleted.2026-01-01T00-00-00.000Z.zst",
            session_id=SID,
            session_key=KEY,
            reason="deleted",
            encoding="zstd",
            sha256="0" * 64,
            archive_bytes=10,
            event_count=2,
            raw_bytes=100,
        )
    assert store.get_entry(KEY) is None and not store.has_transcript(SID)


def test_list_archives_reads_the_sessions_dir(store: SqliteStore, tmp_path: Path) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{SID}.jsonl.deleted.2026-01-01T00-00-00.000Z.zst").write_bytes(b"12345")
    (sessions / "abc.jsonl.reset.2026-02-01T00-00-00.000Z").write_bytes(b"1")
    (sessions / "abc.jsonl").write_bytes(b"{}\n")
    (sessions / "keep.deleted.keep.jsonl").write_bytes(b"{}\n")
    archives = sorted(store.list_archives(), key=lambda a: a.path.name)
    assert [a.path.name for a in archives] == [
        "0b6f7a1c-1111-4222-8333-444455556666.jsonl.deleted.2026-01-01T00-00-00.000Z.zst",
        "abc.jsonl.reset.2026-02-01T00-00-00.000Z",
    ]
    assert archives[0].compressed and archives[0].size == 5 and archives[0].session_id == SID
    assert archives[1].reason == "reset" and not archives[1].compressed
    stats = store.stats()
    assert stats.archives_count == 2 and stats.archives_bytes == 6


# ---- bulk import ---------------------------------------------------------------------------------


def _records_from_state(state: Path) -> list[ImportRecord]:
    sessions = state / "agents" / "main" / "sessions"
    entries = orjson.loads((sessions / "sessions.json").read_bytes())
    out = []
    for key, entry in entries.items():
        f = sessions / f"{entry['sessionId']}.jsonl"
        out.append(ImportRecord(key, entry, f.read_bytes().split(b"\n") if f.exists() else (), source=f.name))
    return out


def test_bulk_import_is_byte_exact_and_idempotent(tmp_path: Path) -> None:
    state = generate_legacy_state(tmp_path / "legacy", 24, 0.4, 7, "--cron-key-style", "canonical")
    sessions = state / "agents" / "main" / "sessions"
    s = SqliteStore(db_path(tmp_path / "db"), "main", create=True)
    result = s.bulk_import(_records_from_state(state), batch_records=5, batch_rows=50)
    entries = orjson.loads((sessions / "sessions.json").read_bytes())
    assert result.entries_inserted == len(entries) and not result.issues
    assert s.load_entries() == entries
    total_lines = 0
    for entry in entries.values():
        f = sessions / f"{entry['sessionId']}.jsonl"
        buf = io.BytesIO()
        written = s.export_transcript(entry["sessionId"], buf)
        assert buf.getvalue() == f.read_bytes()  # byte-exact, header included
        total_lines += written.events
    assert result.events_inserted == total_lines
    assert s.stats().transcript_bytes == result.bytes_inserted
    again = s.bulk_import(_records_from_state(state))
    assert again.events_inserted == 0 and again.entries_inserted == 0
    assert again.events_existing == total_lines and again.entries_existing == len(entries)
    assert s.stats().transcript_events == total_lines
    s.close()


def test_bulk_import_resumes_a_partial_session_and_never_truncates(store: SqliteStore) -> None:
    lines = [header(), *(message(i) for i in range(10))]
    entry = {"sessionId": SID, "updatedAt": 1}
    first = store.bulk_import([ImportRecord(KEY, entry, [line.encode() for line in lines[:4]])])
    assert first.events_inserted == 4
    second = store.bulk_import([ImportRecord(KEY, entry, [line.encode() for line in lines])])
    assert (second.events_inserted, second.events_existing) == (7, 4)
    assert [line.raw for line in store.iter_transcript(SID)] == lines
    # history that grew after the import is kept; a re-import of the older file adds nothing
    store.append_events(SID, [message(50)], session_key=KEY)
    third = store.bulk_import([ImportRecord(KEY, entry, lines[:6])])
    assert third.events_inserted == 0
    assert len(list(store.iter_transcript(SID))) == 12
    # a diverged file: only lines whose id is not stored yet are added
    diverged = [header(), message(0), message(99), message(3)]
    fourth = store.bulk_import([ImportRecord(KEY, entry, diverged)])
    assert fourth.events_inserted == 1
    assert [line.obj.get("id") for line in store.iter_transcript(SID)][-1] == "m0099"
    assert store.session_totals()[SID].events == 13


def test_bulk_import_keeps_duplicate_ids_of_a_fresh_file(store: SqliteStore) -> None:
    lines = [header(), message(1), message(1), '{"type":"note"}', '{"type":"note"}']
    result = store.bulk_import([ImportRecord(KEY, {"sessionId": SID}, lines)])
    assert result.events_inserted == 5  # lossless: a fresh import stores every line
    assert [line.raw for line in store.iter_transcript(SID)] == lines


def test_bulk_import_malformed_line_policies(tmp_path: Path) -> None:
    lines = [header(), message(1), '{"type":"message","id":"x", trunc', message(3)]
    stop = SqliteStore(db_path(tmp_path / "a"), "main", create=True)
    r = stop.bulk_import([ImportRecord(KEY, {"sessionId": SID}, lines, source="f.jsonl")])
    assert r.events_inserted == 2 and r.issues[0].line == 3 and r.issues[0].path == "f.jsonl"
    skip = SqliteStore(db_path(tmp_path / "b"), "main", create=True)
    r = skip.bulk_import([ImportRecord(KEY, {"sessionId": SID}, lines)], on_malformed="skip")
    assert r.events_inserted == 3 and len(r.issues) == 1
    strict = SqliteStore(db_path(tmp_path / "c"), "main", create=True)
    with pytest.raises(InvalidDataError, match=":3:"):
        strict.bulk_import(
            [
                ImportRecord("k0", {"sessionId": "s0"}, [header("s0")]),
                ImportRecord(KEY, {"sessionId": SID}, lines),
            ],
            on_malformed="raise",
        )
    assert strict.count_entries() == 0  # the batch was rolled back
    bad_id = stop.bulk_import([ImportRecord("k-bad", {"sessionId": "../x"}, [message(1)])])
    assert bad_id.entries_inserted == 1 and bad_id.events_inserted == 0 and bad_id.issues
    for s in (stop, skip, strict):
        s.close()


def test_bulk_import_interrupted_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    state = generate_legacy_state(tmp_path / "legacy", 12, 0.2, 11, "--cron-key-style", "canonical")
    records = _records_from_state(state)
    s = SqliteStore(db_path(tmp_path / "db"), "main", create=True)

    def interrupted():
        for i, rec in enumerate(records):
            if i == 7:
                raise KeyboardInterrupt
            yield rec

    with pytest.raises(KeyboardInterrupt):
        s.bulk_import(interrupted(), batch_records=3, batch_rows=10)
    assert 0 < s.count_entries() < len(records)
    s.bulk_import(_records_from_state(state))
    sessions = state / "agents" / "main" / "sessions"
    for rec in records:
        buf = io.BytesIO()
        s.export_transcript(rec.entry["sessionId"], buf)
        assert buf.getvalue() == (sessions / f"{rec.entry['sessionId']}.jsonl").read_bytes()
    assert s.count_entries() == len(records)
    s.close()


def test_write_time_token_estimate_is_the_labelled_estimate_non_latin_scripts_included():
    """The per-session estimate kept at write time is the figure compaction's estimate gives
    (one weighting of non-Latin scripts, not chars/4): CJK, Cyrillic, emoji, tool calls, images."""
    from openclaw_cli.compaction.tokens import estimate_message_tokens

    messages = [
        {"role": "user", "content": [{"type": "text", "text": "请修复这个错误,然后运行测试。" * 20}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Готово 🎉 " * 30},
                {"type": "thinking", "thinking": "思考中"},
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "read",
                    "arguments": {"path": "/srv/データ/файл.py"},
                },
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "content": [{"type": "text", "text": "ok"}, {"type": "image", "data": "x"}],
        },
        {"role": "user", "content": "plain ascii " * 40},
    ]
    for message in messages:
        event = {"type": "message", "id": "e", "parentId": None, "message": message}
        assert event_token_estimate(event) == estimate_message_tokens(message), message["role"]
    assert (
        event_token_estimate({"type": "message", "message": messages[0]})
        > len("请修复这个错误,然后运行测试。" * 20) / 2
    )


def test_archive_rows_in_one_statement_set_equals_the_patch_by_patch_default(tmp_path: Path) -> None:
    """Issue 30: our store archives rows in place set-based (one read per 500 rows, one upsert);
    rows, windows and the keys reported equal what the default (`patch_entries`, one savepoint,
    read and upsert per row) gives: the row still as planned is archived, one gone, archived
    already, of another session or updated since is left as it is."""
    import uuid

    def sid(i: int) -> str:
        return str(uuid.UUID(int=i + 1))

    entries = {f"agent:main:s{i}": {"sessionId": sid(i), "updatedAt": 1_000 + i} for i in range(1200)}
    entries["agent:main:s3"]["archivedAt"] = 5  # archived already
    planned = {key: dict(entry) for key, entry in entries.items()}
    planned["agent:main:s4"]["sessionId"] = sid(9999)  # reset since the plan read it
    planned["agent:main:s5"]["updatedAt"] = 1  # updated since
    archives = {key: "cap" if i % 2 else "stale" for i, key in enumerate(entries)}
    archives["agent:main:gone"] = "cap"
    results = []
    for name, archive in (
        ("set", lambda st: st.archive_rows(archives, archived_at=777, expected=planned, lock_settings=None)),
        (
            "default",
            lambda st: SessionStore.archive_rows(
                st, archives, archived_at=777, expected=planned, lock_settings=None
            ),
        ),
    ):
        with SqliteStore(db_path(tmp_path / name), "main", create=True) as st:
            st.upsert_entries(entries)
            done = archive(st)
            results.append((done, st.load_entries(), st.list_windows()))
    assert results[0] == results[1]
    done, rows, _ = results[0]
    assert len(done) == 1200 - 3 and not {"agent:main:s3", "agent:main:s4", "agent:main:s5"} & set(done)
    assert rows["agent:main:s7"]["archivedAt"] == 777 and rows["agent:main:s7"]["archiveReason"] == "cap"
    assert rows["agent:main:s4"] == entries["agent:main:s4"]


def test_entry_batches_decode_as_the_json_wrapper_row_by_row():
    """Issue 30: a batch of stored entries is decoded by orjson itself (no wrapper call per row);
    a batch holding a row orjson rejects (a number beyond 64 bits) is decoded again through
    `jsonutil.loads`, so every row reads exactly as before."""
    from openclaw_cli import jsonutil
    from openclaw_cli.store.sqlite.store import _parse_entries

    plain = [("a", '{"sessionId":"s1","updatedAt":1}'), ("b", '{"x":[1,2.5,"é"]}')]
    assert _parse_entries(plain) == [(k, jsonutil.loads(t)) for k, t in plain]
    wide = [*plain, ("c", '{"n":123456789012345678901234567890}')]
    got = _parse_entries(wide)
    want = [(k, jsonutil.loads(t)) for k, t in wide]
    assert [k for k, _ in got] == ["a", "b", "c"]
    assert repr(got) == repr(want) and got[:2] == want[:2]
    with pytest.raises(ValueError):
        _parse_entries([("d", "{not json")])
