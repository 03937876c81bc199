"""Issue 16: the batched import into a fresh store (rows of many sessions per executemany, a private
build without syncs until one fsync) stores exactly what the general per-session path stores; the
set-based cleanup statements, the one-piece archive read-back and the bench floors."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import orjson
import pytest
import zstandard

from openclaw_cli.errors import InvalidDataError
from openclaw_cli.store.archives import hash_archive
from openclaw_cli.store.base import SessionTotals
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore
from tests.conftest import generate_legacy_state

ROOT = Path(__file__).resolve().parent.parent
SEED_KEY = "agent:main:seed"
SEED_SID = "5eed5eed-0000-4000-8000-000000000000"
TABLES = {
    "session_nodes": "SELECT * FROM session_nodes ORDER BY session_key",
    "session_windows": "SELECT * FROM session_windows ORDER BY session_id",
    "transcript_events": "SELECT * FROM transcript_events ORDER BY session_id, seq",
    "transcript_event_identities": "SELECT * FROM transcript_event_identities ORDER BY session_id, event_id",
}


def _db(root: Path) -> Path:
    return root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _records(state: Path) -> list[ImportRecord]:
    sessions = state / "agents" / "main" / "sessions"
    entries = orjson.loads((sessions / "sessions.json").read_bytes())
    out = []
    for key, entry in entries.items():
        f = sessions / f"{entry['sessionId']}.jsonl"
        out.append(
            ImportRecord(
                key,
                entry,
                f.read_bytes().split(b"\n") if f.exists() else (),
                source=f.name,
                created_at_ms=1_700_000_000_000,
            )
        )
    first_key, first = next(iter(entries.items()))
    lines = (sessions / f"{first['sessionId']}.jsonl").read_bytes().split(b"\n")
    # a second key sharing the first transcript (T-20), an alias loser without entry, a bad id,
    # a session without lines and a key repeated with another entry
    out.append(ImportRecord("agent:main:shared", {**first, "label": "shared"}, lines, source="shared"))
    out.append(ImportRecord(first_key, None, lines, session_id=first["sessionId"]))
    out.append(ImportRecord("agent:main:bad", {"sessionId": "../x"}, [b"{}"]))
    out.append(
        ImportRecord(
            "agent:main:empty", {"sessionId": "e0000000-0000-4000-8000-000000000000", "updatedAt": 5}, ()
        )
    )
    out.append(
        ImportRecord(
            "agent:main:empty", {"sessionId": "e0000000-0000-4000-8000-000000000000", "updatedAt": 9}, ()
        )
    )
    for rec in out:
        rec.created_at_ms = 1_700_000_000_000  # no wall-clock fallback: both runs store the same times
    return out


def _rows(db: Path, skip_seed: bool) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(db)
    try:
        out = {}
        for table, sql in TABLES.items():
            rows = conn.execute(sql).fetchall()
            out[table] = [r for r in rows if not skip_seed or (SEED_KEY not in r and SEED_SID not in r)]
        return out
    finally:
        conn.close()


@pytest.mark.parametrize("private_build", [False, True])
def test_fresh_store_batched_import_stores_what_the_general_path_stores(
    tmp_path: Path, private_build: bool
) -> None:
    state = generate_legacy_state(tmp_path / "legacy", 30, 0.3, 5, "--cron-key-style", "canonical")
    fresh = SqliteStore(_db(tmp_path / "fresh"), "main", create=True)
    assert fresh._db().execute("SELECT count(*) FROM session_nodes").fetchone()[0] == 0
    got = fresh.bulk_import(
        _records(state),
        batch_records=7,
        batch_rows=60,
        on_malformed="quarantine",
        private_build=private_build,
    )
    assert fresh._db().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert fresh._db().execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL again
    fresh.close()
    # the general path: a store that already holds a session does every statement per session
    general = SqliteStore(_db(tmp_path / "general"), "main", create=True)
    general.bulk_import([ImportRecord(SEED_KEY, {"sessionId": SEED_SID}, [b'{"type":"session","id":"x"}'])])
    want = general.bulk_import(_records(state), batch_records=7, batch_rows=60, on_malformed="quarantine")
    general.close()
    assert [
        (
            r.session_key,
            r.entry_inserted,
            r.entry_existing,
            r.events_inserted,
            r.events_existing,
            r.issue is None,
        )
        for r in got.records
    ] == [
        (
            r.session_key,
            r.entry_inserted,
            r.entry_existing,
            r.events_inserted,
            r.events_existing,
            r.issue is None,
        )
        for r in want.records
    ]
    assert _rows(_db(tmp_path / "fresh"), False) == _rows(_db(tmp_path / "general"), True)
    assert (
        got.records[-1].entry_existing and not got.records[-1].entry_inserted
    )  # the repeated key kept the first


def test_batched_import_interrupted_keeps_whole_committed_batches(tmp_path: Path) -> None:
    state = generate_legacy_state(tmp_path / "legacy", 12, 0.2, 3, "--cron-key-style", "canonical")
    records = _records(state)[:12]
    store = SqliteStore(_db(tmp_path / "db"), "main", create=True)

    def interrupted():
        for i, rec in enumerate(records):
            if i == 7:
                raise KeyboardInterrupt
            yield rec

    with pytest.raises(KeyboardInterrupt):
        store.bulk_import(interrupted(), batch_records=3, batch_rows=10_000)
    conn = store._db()
    nodes = conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
    windows = conn.execute("SELECT count(*) FROM session_windows").fetchone()[0]
    assert nodes == windows == 6  # two whole batches of three; nothing of the third
    totals = conn.execute("SELECT sum(event_count) FROM session_windows").fetchone()[0]
    assert totals == conn.execute("SELECT count(*) FROM transcript_events").fetchone()[0]
    store.close()


def test_drop_session_events_keeps_referenced_and_changed_sessions(tmp_path: Path) -> None:
    store = SqliteStore(_db(tmp_path), "main", create=True)
    sids = [f"a{i:07d}-0000-4000-8000-000000000000" for i in range(1200)]  # more than one 500-id chunk
    store.bulk_import(
        [
            ImportRecord(f"agent:main:k{i}", {"sessionId": sid}, [b'{"type":"session","id":"h"}'])
            for i, sid in enumerate(sids)
        ]
    )
    keep_ref = sids[3]
    changed = sids[700]
    store.delete_entries([f"agent:main:k{i}" for i in range(len(sids)) if sids[i] != keep_ref])
    expected = {sid: SessionTotals(events=1, bytes=27) for sid in sids}
    expected[changed] = SessionTotals(events=2, bytes=54)
    dropped = store.drop_session_events(sids, expected=expected)
    assert set(dropped) == set(sids) - {keep_ref, changed}
    left = {r[0] for r in store._db().execute("SELECT session_id FROM session_windows")}
    assert left == {keep_ref, changed}
    store.record_archives(
        [
            (
                f"{sid}.jsonl.deleted.2026-01-01T00-00-00.000Z.zst",
                sid,
                None,
                "deleted",
                "zstd",
                "0" * 64,
                10,
                1,
                27,
                1,
            )
            for sid in dropped[:3]
        ]
    )
    assert store._db().execute("SELECT count(*) FROM session_transcript_archives").fetchone()[0] == 3
    store.close()


def test_small_archive_read_back_checks_every_frame_and_truncation(tmp_path: Path) -> None:
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    path = tmp_path / "s.jsonl.deleted.2026-01-01T00-00-00.000Z.zst"
    path.write_bytes(cctx.compress(b"one\n") + cctx.compress(b"two\n"))
    import hashlib

    assert hash_archive(path) == (hashlib.sha256(b"one\ntwo\n").hexdigest(), 8)
    whole = path.read_bytes()
    path.write_bytes(whole[:-3])
    with pytest.raises(InvalidDataError, match="truncated|Cannot read"):
        hash_archive(path)


def test_bench_floors_run_on_a_small_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_floors
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    state = generate_legacy_state(tmp_path / "state", 6, 0.05, 2, "--cron-key-style", "canonical")
    assert bench_floors.import_floor(state) > 0
    before = sorted(p.name for p in (state / "agents" / "main" / "sessions").iterdir())
    assert bench_floors.import_floor_d6(state) > 0
    assert sorted(p.name for p in (state / "agents" / "main" / "sessions").iterdir()) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".floor-")]
    store = SqliteStore(_db(state), "main", create=True)
    store.bulk_import(_records(state)[:6])
    store.close()
    sids = sorted(bench_floors.session_ids(_db(state)))
    sessions = state / "agents" / "main" / "sessions"
    seen: list[str] = []
    real_open = os.open

    def spy(path: str, flags: int, *args: int) -> int:  # where the floor creates its archives
        if flags & os.O_CREAT and str(path).endswith(".zst"):
            seen.append(str(path))
        return real_open(path, flags, *args)

    kept = sorted(p.name for p in sessions.iterdir())
    with monkeypatch.context() as patch:
        patch.setattr(os, "open", spy)
        assert bench_floors.cleanup_floor(state, sids[:3]) > 0
    assert len(bench_floors.session_ids(_db(state))) == len(sids) - 3
    # the floor's archives go where ours must (the sessions dir), named as OpenClaw names them,
    # and only they are removed afterwards
    assert len(seen) == 3 and all(os.path.dirname(p) == str(sessions) for p in seen)
    assert all(".jsonl.deleted." in p for p in seen)
    assert sorted(p.name for p in sessions.iterdir()) == kept
    assert bench_floors.cleanup_floor(state, sids[3:5], in_db=True) > 0
    assert len(bench_floors.session_ids(_db(state))) == len(sids) - 5


def test_the_cleanup_case_keeps_every_copy_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's cleanup cases (issue 30, cleanup37, stop 44): every run, ours and the floor
    alike, gets its own copy made before the first run, and nothing is removed (no copy, no floor
    archive) until the bench ends: a removal frees inodes whose reuse the next run's (or the next
    case's) file creations pay for."""
    import shutil

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_floors
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    source = generate_legacy_state(
        tmp_path / "data" / "tiny-ours-imported", 6, 0.05, 2, "--cron-key-style", "canonical"
    )
    store = SqliteStore(_db(source), "main", create=True)
    store.bulk_import(_records(source)[:6])
    store.close()
    events: list[tuple[str, str]] = []
    real_rmtree = shutil.rmtree
    monkeypatch.setattr(bench_floors, "settle", lambda: events.append(("settle", "")))

    def spy_rmtree(path: Path, **kw: bool) -> None:
        if Path(path).exists():  # (the leftovers check before the copies finds nothing here)
            events.append(("rmtree", str(path)))
        real_rmtree(path, **kw)

    monkeypatch.setattr(bench_floors.shutil, "rmtree", spy_rmtree)

    def fake_ours(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, float, int]:
        state = Path(env["OPENCLAW_STATE_DIR"])
        events.append(("ours", state.name))
        conn = sqlite3.connect(_db(state))
        gone = [
            r[0] for r in conn.execute("SELECT session_id FROM session_windows ORDER BY session_id LIMIT 2")
        ]
        conn.executemany("DELETE FROM session_windows WHERE session_id = ?", [(g,) for g in gone])
        conn.commit()
        conn.close()
        return (0.1, 0.05, 0.05, 10.0, 0)

    class FakeBench:
        data = tmp_path / "data"
        runs = 3

        def ours_imported(self, name: str) -> Path:
            return source

        def env_ours(self, state: Path, config: dict | None = None) -> dict[str, str]:
            return {"OPENCLAW_STATE_DIR": str(state)}

    floor_calls: list[tuple[str, bool]] = []
    real_floor = bench_floors.cleanup_floor

    def spy_floor(state: Path, sids: list[str], **kw: bool) -> float:
        floor_calls.append((Path(state).name, kw.get("keep", False)))
        events.append(("floor", Path(state).name))
        seconds = real_floor(state, sids, **kw)
        assert list((Path(state) / "agents" / "main" / "sessions").glob("*.jsonl.deleted.*.zst"))  # kept
        return seconds

    monkeypatch.setattr(bench_floors, "cleanup_floor", spy_floor)
    runs, floors, in_db, removed = bench_floors.cleanup_runs(
        FakeBench(), ["ours"], "tiny", {}, child=fake_ours
    )
    assert len(runs) == len(floors) == 3 and in_db == [] and removed == 2
    timed = [i for i, (what, _) in enumerate(events) if what in ("ours", "floor")]
    assert timed and not [what for what, _ in events if what == "rmtree"]  # nothing removed in the case
    copies = sorted(p for p in (tmp_path / "data").iterdir() if "-cleanup-" in p.name)
    assert len(copies) == 6 and sorted(bench_floors._at_exit) == copies  # each left for the bench's end
    assert [what for what, _ in events if what in ("ours", "floor")] == [
        "ours",
        "floor",
        "floor",
        "ours",
        "ours",
        "floor",
    ]
    assert len({name for _, name in events if _ in ("ours", "floor")}) == 6  # one copy per run
    assert all(keep for _, keep in floor_calls)
    bench_floors.remove_deferred()  # what the bench's exit runs
    assert not [p for p in (tmp_path / "data").iterdir() if "-cleanup-" in p.name]  # all gone at the end


_ODD_LINES: list[bytes | str] = [
    b'{"type":"session","id":"h1","timestamp":"2026-01-02T03:04:05.678Z"}',
    b"",
    b"   ",
    b"\t",
    b'{"type":"message","id":"m1","parentId":"h1","timestamp":"2026-01-02T03:04:05.678Z",'
    b'"message":{"role":"user","content":"hi \xc3\xa9t\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd"}}',
    b'{"type":"message","id":"m2","parentId":7,"timestamp":1767323045679,"message":{"role":"assistant",'
    b'"content":[{"type":"text","text":"abc"},{"type":"toolCall","name":"x","arguments":{"a":1}},{"type":"image"}]}}',
    b'{"type":"message","id":"  ","timestamp":true,"message":{"role":"user","content":"bool stamp, blank id"}}',
    b'{"type":"message","id":3,"timestamp":1,"message":{"role":"user","content":"int id"}}',
    b'{"type":"message","id":"b2","timestamp":true}',
    b'{"type":"message","timestamp":1.0,"message":{"role":"user","content":"float stamp after int"}}',
    b'{"type":"message","timestamp":"not a date"}',
    b'{"type":"message","timestamp":"not a date"}',
    b'{"type":"compaction","id":"c1","summary":"s","timestamp":"2025-12-31T23:59:59Z"}',
    b'{"type":["x"],"id":"t1"}',
    b"[1, 2]",
    b"42",
    b'"text"',
    b"{truncated",
    b'{"a":1}\xff',
    b'{"n":1e999}',
    b'{"a":"\x00"}',
    b'{"type":"openclaw-cli.quarantined-line","reason":"x","raw":"y"}',
    b'{"type":"message","id":"nl"}\n',
    '{"type":"message","id":"as-str","timestamp":"2026-01-02T03:04:06.000Z"}',
    b'{"type":"message","id":"m1","timestamp":"2026-01-02T03:04:07.000Z"}',
    b'{"type":"custom_message","id":"cm","content":[{"type":"thinking","thinking":"hmm"}]}',
    b'{"type":"branch_summary","id":"bs","summary":"a branch"}',
    b'{"type":"model_change","id":"mc","summary":"not estimated"}',
]


@pytest.mark.parametrize("policy", ["quarantine", "skip", "stop"])
def test_fresh_store_line_loop_matches_the_general_path_on_odd_lines(tmp_path: Path, policy: str) -> None:
    """The fresh store's inlined line loop keeps the general path's per-line rules: blank and
    non-object lines, reserved and invalid lines under each policy, ids, parents, timestamps of every
    type (a repeated timestamp parsed once), token estimates and compaction counts."""
    sids = [f"0dd{i:05d}-0000-4000-8000-000000000000" for i in range(3)]

    def records() -> list[ImportRecord]:
        return [
            ImportRecord(
                f"agent:main:odd{i}",
                {"sessionId": sid, "updatedAt": 10 + i},
                _ODD_LINES[i:] + _ODD_LINES[:i],
                source=f"odd{i}",
                created_at_ms=1_700_000_000_000,
            )
            for i, sid in enumerate(sids)
        ]

    fresh = SqliteStore(_db(tmp_path / "fresh"), "main", create=True)
    got = fresh.bulk_import(records(), batch_records=2, batch_rows=5, on_malformed=policy)  # type: ignore[arg-type]
    fresh.close()
    general = SqliteStore(_db(tmp_path / "general"), "main", create=True)
    general.bulk_import([ImportRecord(SEED_KEY, {"sessionId": SEED_SID}, [b'{"type":"session","id":"x"}'])])
    want = general.bulk_import(records(), batch_records=2, batch_rows=5, on_malformed=policy)  # type: ignore[arg-type]
    general.close()

    def facts(result):
        return [
            (r.events_inserted, r.bytes_inserted, r.lines_read, r.quarantined, r.issue)
            for r in result.records
        ]

    assert facts(got) == facts(want)
    assert any(r.events_inserted for r in got.records)
    assert _rows(_db(tmp_path / "fresh"), False) == _rows(_db(tmp_path / "general"), True)


def test_private_build_commits_by_bytes_entries_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private build commits per PRIVATE_BUILD_COMMIT_BYTES of rows (its WAL stays within the
    import's space allowance), entries counted too: sessions without lines still commit."""
    from openclaw_cli.store.sqlite import store as sqlite_mod

    monkeypatch.setattr(sqlite_mod, "PRIVATE_BUILD_COMMIT_BYTES", 64 * 1024)
    store = SqliteStore(_db(tmp_path), "main", create=True)
    statements: list[str] = []
    store._db().set_trace_callback(statements.append)
    padding = "x" * 1000
    records = [
        ImportRecord(
            f"agent:main:k{i}",
            {"sessionId": f"b{i:07d}-0000-4000-8000-000000000000", "label": f"l{i}", "note": padding},
            (),
        )
        for i in range(300)
    ]
    store.bulk_import(records, batch_records=10**6, batch_rows=10**6, private_build=True)
    commits = sum(s == "COMMIT" for s in statements)
    assert 4 <= commits <= 8, commits  # ~330 KB of entries in 64 KiB commits
    assert store._db().execute("SELECT count(*) FROM session_nodes").fetchone()[0] == 300
    store.close()


def test_private_build_writes_once_and_indexes_after_the_rows(tmp_path: Path) -> None:
    """Issue 30: an empty private build takes its rows under a rollback journal (each page written
    once, not into a WAL and again by its checkpoint) and creates the session tables' secondary
    indexes after the rows; it is published as any store is: WAL, the same schema, intact."""
    store = SqliteStore(_db(tmp_path / "build"), "main", create=True)
    statements: list[str] = []
    store._db().set_trace_callback(statements.append)
    modes: list[str] = []

    def records() -> object:
        for i in range(50):
            if i == 25:
                modes.append(store._db().execute("PRAGMA journal_mode").fetchone()[0])
            sid = f"c{i:07d}-0000-4000-8000-000000000000"
            yield ImportRecord(
                f"agent:main:k{i}",
                {"sessionId": sid, "label": f"l{i}", "updatedAt": 1000 + i},
                [
                    orjson.dumps({"type": "session", "id": sid}),
                    orjson.dumps({"type": "message", "id": f"m{i}"}),
                ],
            )

    store.bulk_import(records(), batch_records=10, batch_rows=40, private_build=True)  # type: ignore[arg-type]
    assert modes == ["delete"]
    conn = store._db()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    creates = [i for i, s in enumerate(statements) if s.startswith("CREATE INDEX")]
    node_inserts = [i for i, s in enumerate(statements) if "INTO session_nodes" in s]
    assert creates and node_inserts and min(creates) > max(node_inserts)
    store.close()
    plain = SqliteStore(_db(tmp_path / "plain"), "main", create=True)
    schema = (
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    )
    want = plain._db().execute(schema).fetchall()
    plain.close()
    check = sqlite3.connect(_db(tmp_path / "build"))
    try:
        assert check.execute(schema).fetchall() == want
        assert check.execute("SELECT count(*) FROM session_nodes WHERE label = 'l7'").fetchone()[0] == 1
        plan = check.execute("EXPLAIN QUERY PLAN SELECT * FROM session_nodes WHERE label = 'l7'").fetchall()
        assert "idx_agent_session_nodes_label" in str(plan)
    finally:
        check.close()


def test_private_build_gives_its_cache_back_before_building_the_indexes(tmp_path: Path) -> None:
    """Issue 30: the deferred indexes are built with the default page cache, not the build's large
    one: SQLite bounds each index's sorter by the cache size, and the large cache plus a sorter as
    large were the peak RSS of an import of 100,000 sessions."""
    from openclaw_cli.store.sqlite.store import DEFAULT_CACHE_SIZE

    store = SqliteStore(_db(tmp_path / "build"), "main", create=True)
    statements: list[str] = []
    store._db().set_trace_callback(statements.append)

    def records() -> object:
        for i in range(20):
            sid = f"d{i:07d}-0000-4000-8000-000000000000"
            yield ImportRecord(
                f"agent:main:k{i}", {"sessionId": sid}, [orjson.dumps({"type": "session", "id": sid})]
            )

    store.bulk_import(records(), private_build=True, expected_records=20)  # type: ignore[arg-type]
    creates = [i for i, s in enumerate(statements) if s.startswith("CREATE INDEX")]
    caches = [(i, s) for i, s in enumerate(statements) if s.startswith("PRAGMA cache_size")]
    assert creates and caches
    large = [i for i, s in caches if s != f"PRAGMA cache_size = {DEFAULT_CACHE_SIZE}"]
    small = [i for i, s in caches if s == f"PRAGMA cache_size = {DEFAULT_CACHE_SIZE}"]
    assert large and max(large) < min(creates)  # the build's cache was set while rows went in ...
    assert any(max(large) < i < min(creates) for i in small)  # ... and given back before any index build
    store.close()
