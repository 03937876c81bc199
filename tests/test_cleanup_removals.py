"""Our SQLite store's cleanup: the removals' one write transaction runs beside the archives (a
thread of its own on a second connection, issue 30) and commits only after every archive is
durable and the usage ledger is appended — until then nothing has left for any reader, and a
failure of that transaction leaves the store and the sessions dir as found (D6.2, D6.4)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.storage_support import cli, cli_json, make_state

STALE = "agent:main:telegram:direct:stale-1"


def _setup(state: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_state("sqlite", state)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
    )
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _counts(db: Path) -> tuple[int, int, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("session_nodes", "session_windows", "transcript_events")
        )
    finally:
        conn.close()


def _recorded(db: Path) -> int:
    """The archives recorded in the store (`session_transcript_archives`)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM session_transcript_archives").fetchone()[0])
    finally:
        conn.close()


def _archives(state: Path) -> set[str]:
    root = state / "agents" / "main" / "sessions"
    return {p.name for p in root.iterdir() if ".deleted." in p.name} if root.exists() else set()


def test_the_removals_run_beside_the_archives_and_nothing_leaves_before_the_commit(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the ledger is appended (every archive durable), the removals' transaction already holds
    SQLite's write lock — it began beside the archives, and has dropped every batch and recorded
    their archives by then — yet another connection still reads every row, window and event and
    no new archive record: nothing has left before the COMMIT. After it, the stale rows are gone
    and their archives recorded."""
    from openclaw_cli.store import usage_ledger

    db = _setup(state_dir, monkeypatch)
    before, recorded = _counts(db), _recorded(db)
    append = usage_ledger.RetirementLedger.before_leaving
    seen: list[tuple[tuple[int, int, int], bool]] = []
    records_seen: list[int] = []

    def before_leaving(self) -> None:
        other = sqlite3.connect(db, timeout=0, isolation_level=None)
        try:
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                locked = False
            except sqlite3.OperationalError as exc:
                assert "locked" in str(exc)
                locked = True
        finally:
            other.close()
        seen.append((_counts(db), locked))
        records_seen.append(_recorded(db))
        append(self)

    monkeypatch.setattr(usage_ledger.RetirementLedger, "before_leaving", before_leaving)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce")
    assert code == 0, err
    assert seen == [(before, True)]
    assert records_seen == [recorded]
    after = _counts(db)
    assert after[0] < before[0] and after[1] < before[1] and after[2] < before[2]
    assert _recorded(db) > recorded
    code, listing, _ = cli_json("sessions", "--limit", "all")
    assert STALE not in {row["key"] for row in listing["sessions"]}


def test_a_failing_removals_transaction_leaves_everything_as_found(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removals' thread fails (here: a busy store as it deletes the planned rows): the run fails
    with that error, the archives it wrote are removed, the rows and transcripts are all there and
    no ledger line stays."""
    from openclaw_cli.errors import StoreBusyError
    from openclaw_cli.store.sqlite import retire

    db = _setup(state_dir, monkeypatch)
    before, archives = _counts(db), _archives(state_dir)

    def busy(*args, **kwargs):
        raise StoreBusyError("the-store-under-test", 1)

    monkeypatch.setattr(retire, "_remove_rows", busy)
    code, out, err = cli("sessions", "cleanup", "--enforce", "--json")
    assert code != 0
    assert json.loads(out)["error"]["type"] == "session_busy", err  # (re-worded as the store's lock)
    assert _counts(db) == before
    assert _archives(state_dir) == archives
    ledger = state_dir / "openclaw-cli-usage" / "main.ledger.jsonl"
    assert not ledger.exists() or not ledger.read_text().strip()


def test_a_failure_after_the_archives_rolls_the_removals_back(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removals' transaction has deleted rows and events (uncommitted) when the ledger fails:
    it is rolled back, so every row and event is still there, and the archives are removed."""
    from openclaw_cli.store import usage_ledger

    db = _setup(state_dir, monkeypatch)
    before, archives = _counts(db), _archives(state_dir)

    def fail(self) -> None:
        raise RuntimeError("ledger failed")

    monkeypatch.setattr(usage_ledger.RetirementLedger, "before_leaving", fail)
    code, _, _ = cli("sessions", "cleanup", "--enforce", "--json")
    assert code != 0
    assert _counts(db) == before
    assert _archives(state_dir) == archives


def test_archive_records_go_in_by_statements_of_many_rows_in_their_order(tmp_path: Path) -> None:
    """Issue 30: `record_archives` (the removals' record of each batch's archives) inserts up to
    `_RECORD_ROWS` rows a statement, not one statement per row, and the table ends as a row-by-row
    `record_archive` of the same rows leaves it — a name recorded twice keeps its later row
    (`INSERT OR REPLACE`, in the rows' order); a refused row refuses the whole call as before."""
    from openclaw_cli.errors import InvalidDataError
    from openclaw_cli.store.base import ARCHIVE_RECORD_FIELDS
    from openclaw_cli.store.sqlite.store import SqliteStore

    def rows(n: int) -> list[tuple[object, ...]]:
        out: list[tuple[object, ...]] = [
            (
                f"s{i}.jsonl.deleted.2026-01-01T00-00-00.000Z.zst",
                f"s{i}",
                f"agent:main:k{i}" if i % 3 else None,
                "deleted",
                "zstd" if i % 2 else "identity",
                f"{i:064x}",
                10 + i,
                i % 7,
                27 * i,
                1_000 + i,
            )
            for i in range(n)
        ]
        if n > 5:
            out.append((out[5][0], "again", None, "deleted", "zstd", "f" * 64, 1, 2, 3, 4))  # later wins
        return out

    def table(store: SqliteStore) -> list[tuple[object, ...]]:
        return (
            store._db().execute("SELECT * FROM session_transcript_archives ORDER BY archive_name").fetchall()
        )

    one = SqliteStore(tmp_path / "one.sqlite", "main", create=True)
    many = SqliteStore(tmp_path / "many.sqlite", "main", create=True)
    for row in rows(250):
        one.record_archive(**dict(zip(ARCHIVE_RECORD_FIELDS, row, strict=True)))  # type: ignore[arg-type]
    statements: list[str] = []
    many._db().set_trace_callback(statements.append)
    many.record_archives(rows(250))
    many._db().set_trace_callback(None)
    inserts = [s for s in statements if s.startswith("INSERT OR REPLACE INTO session_transcript_archives")]
    assert len(inserts) == 3  # (251 rows, 99 a statement; one a row before)
    assert table(many) == table(one) and len(table(many)) == 250
    bad = rows(3)
    bad[1] = ("a/b.zst", *bad[1][1:])  # (the table's CHECK refuses a name with a separator)
    with pytest.raises(InvalidDataError, match="CHECK constraint"):
        many.record_archives(bad)
    assert table(many) == table(one)
    one.close()
    many.close()
