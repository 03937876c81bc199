"""Our SQLite session store (spec D4): one database per agent at
`agents/<id>/agent/openclaw-agent.sqlite`, schema in `store/sqlite/schema.py`.

Hot paths are plain SQL on indexed columns: the listing walks the `updated_at` index, a tail walks
the `(session_id, seq)` primary key backwards, per-session totals are columns maintained in the
same transaction as every event write. Every write runs in a `BEGIN IMMEDIATE` transaction; a
database busy beyond `busy_timeout_ms` raises `SessionBusyError` (spec D12).
"""

from __future__ import annotations

import gc
import io
import itertools
import operator
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

import orjson

from openclaw_cli import jsonutil
from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import InvalidDataError, InvalidIdError, NotFoundError, RefusedError
from openclaw_cli.ids import is_valid_legacy_session_id, normalize_agent_id
from openclaw_cli.store.base import (
    KIND_SQLITE,
    SORT_ACTIVITY,
    SORT_UPDATED,
    ArchiveFile,
    ChangeProbe,
    LeavingHook,
    ListingQuery,
    ReadIssue,
    RestoreOutcome,
    SessionStore,
    SessionTotals,
    StoreStats,
    TranscriptLine,
    finite_timestamp,
    pin_timestamp,
)
from openclaw_cli.store.quarantine import QUARANTINE_TYPE, original_bytes
from openclaw_cli.store.sqlite import schema as schema_mod
from openclaw_cli.store.sqlite.lines import (
    GATHER_BYTES,
    QUARANTINED,
    MalformedPolicy,
    PreparedLines,
    bind_none_as_null,
    gather_lines,
    prepare_line,
    refused_line,
)
from openclaw_cli.store.sqlite.lines import encode_entry as _encode_entry
from openclaw_cli.store.sqlite.lines import node_row as _node_row
from openclaw_cli.store.sqlite.lines import text_value as _text
from openclaw_cli.store.sqlite.lines import window_row as _window_row
from openclaw_cli.store.sqlite.lines import window_with_totals as _window_with_totals
from openclaw_cli.store.sqlite_common import (
    LIVE_WAL_AUTOCHECKPOINT,
    ReadOnlyConnection,
    cached_fact,
    event_token_estimate,
    keeper,
    list_archive_files,
    now_ms,
    open_readonly,
    sessions_dir_for,
    timestamp_ms,
    translate_error,
    write_transaction,
)

_NODE_COLUMNS = (
    "session_key, current_session_id, updated_at, created_at, status, parent_session_key, spawned_by, "
    "label, display_name, pinned_at, archived_at, last_read_at, last_interaction_at, last_activity_at, "
    "entry_bytes, entry_json"
)
_NODE_UPSERT = (
    f"INSERT INTO session_nodes({_NODE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_key) DO UPDATE SET current_session_id = excluded.current_session_id, "
    "updated_at = excluded.updated_at, created_at = excluded.created_at, status = excluded.status, "
    "parent_session_key = excluded.parent_session_key, spawned_by = excluded.spawned_by, "
    "label = excluded.label, display_name = excluded.display_name, pinned_at = excluded.pinned_at, "
    "archived_at = excluded.archived_at, last_read_at = excluded.last_read_at, "
    "last_interaction_at = excluded.last_interaction_at, last_activity_at = excluded.last_activity_at, "
    "entry_bytes = excluded.entry_bytes, entry_json = excluded.entry_json"
)
# the projection columns between the key and entry_bytes, in `node_row`'s order
_NODE_PROJECTIONS = tuple(name.strip() for name in _NODE_COLUMNS.split(","))[1:-2]
_NODE_READ_FOR_UPDATE = (
    f"SELECT entry_json, {', '.join(_NODE_PROJECTIONS)} FROM session_nodes WHERE session_key = ?"
)
_NODE_INSERT_IF_ABSENT = (
    f"INSERT INTO session_nodes({_NODE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_key) DO NOTHING"
)
# ... at a given rowid (`ImportRecord.rowid`: an import feeding its records out of their index's order)
_NODE_INSERT_AT_IF_ABSENT = (
    f"INSERT INTO session_nodes(rowid, {_NODE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_key) DO NOTHING"
)
_WINDOW_COLUMNS = (
    "session_id, session_key, previous_session_id, reason, created_at, updated_at, chat_type, channel, "
    "model_provider, model"
)
_WINDOW_INSERT_IF_ABSENT = (
    f"INSERT INTO session_windows({_WINDOW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_id) DO NOTHING"
)
_WINDOW_INSERT_AT_IF_ABSENT = (
    f"INSERT INTO session_windows(rowid, {_WINDOW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_id) DO NOTHING"
)
# a window inserted whole, totals included: the batched import of a store that was empty
_WINDOW_INSERT_WITH_TOTALS = (
    f"INSERT INTO session_windows({_WINDOW_COLUMNS}, transcript_updated_at, event_count, event_bytes, "
    "token_estimate, compaction_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id) DO NOTHING"
)
_WINDOW_INSERT_AT_WITH_TOTALS = (
    f"INSERT INTO session_windows(rowid, {_WINDOW_COLUMNS}, transcript_updated_at, event_count, event_bytes, "
    "token_estimate, compaction_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id) DO NOTHING"
)
_WINDOW_UPSERT_FROM_ENTRY = (
    f"INSERT INTO session_windows({_WINDOW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT(session_id) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at), "
    "chat_type = coalesce(excluded.chat_type, chat_type), channel = coalesce(excluded.channel, channel), "
    "model_provider = coalesce(excluded.model_provider, model_provider), model = coalesce(excluded.model, model)"
)
_WINDOW_ADD_TOTALS = (
    "UPDATE session_windows SET event_count = event_count + ?, event_bytes = event_bytes + ?, "
    "token_estimate = token_estimate + ?, compaction_count = compaction_count + ?, "
    "updated_at = max(updated_at, ?), transcript_updated_at = ? WHERE session_id = ?"
)
_EVENT_INSERT = (
    "INSERT INTO transcript_events(session_id, seq, created_at, event_utf8_bytes, event_type, event_json) "
    "VALUES (?,?,?,?,?,?)"
)
_IDENTITY_INSERT = (
    "INSERT OR IGNORE INTO transcript_event_identities(session_id, event_id, seq, event_type, parent_id, created_at) "
    "VALUES (?,?,?,?,?,?)"
)
# a rows file of the import's parser process (`parser_process.RowsFiles`), attached as `parsed_rows`
_EVENT_COPY = (
    "INSERT INTO main.transcript_events(session_id, seq, created_at, event_utf8_bytes, event_type, event_json) "
    "SELECT session_id, seq, created_at, event_utf8_bytes, event_type, event_json FROM parsed_rows.ev ORDER BY rowid"
)
_IDENTITY_COPY = (
    "INSERT OR IGNORE INTO main.transcript_event_identities(session_id, event_id, seq, event_type, parent_id, "
    "created_at) SELECT session_id, event_id, seq, event_type, parent_id, created_at FROM parsed_rows.ev "
    "WHERE event_id IS NOT NULL ORDER BY rowid"
)
# ... and the entries' rows the parser computed, at their records' rowids (`nd`: the rowid then a
# `node_row`; `wn`: the rowid then a window row with its totals, as `_imported_window` makes it), in
# the file's (the feed's) order as the importing process inserts its own: an ORDER BY on the rowids
# sorted a file's entries in memory bounded by the build's 32 MiB cache (+6 MB of *many*'s peak)
_NODE_COPY = (
    f"INSERT INTO main.session_nodes(rowid, {_NODE_COLUMNS}) SELECT * FROM parsed_rows.nd WHERE true "
    "ON CONFLICT(session_key) DO NOTHING"
)
_WINDOW_COPY = (
    f"INSERT INTO main.session_windows(rowid, {_WINDOW_COLUMNS}, transcript_updated_at, event_count, "
    "event_bytes, token_estimate, compaction_count) SELECT * FROM parsed_rows.wn WHERE true "
    "ON CONFLICT(session_id) DO NOTHING"
)

DEFAULT_CACHE_SIZE = -2000  # SQLite's default page cache (KiB when negative): a connection's own
PRIVATE_BUILD_CACHE_KIB = 32 * 1024  # page cache of an import's private build (SQLite's default: 2 MiB)
# ... less what the importer holds per session beyond 20,000 sessions, down to 8 MiB: a smaller cache
# spills and rewrites more pages (~0.2 s more system time at 20,000 sessions with 8 MiB), while at
# 100,000 sessions the per-session state needs the room (decisions: import memory at 100,000)
PRIVATE_BUILD_CACHE_MIN_KIB = 8 * 1024
PRIVATE_BUILD_CACHE_FULL_RECORDS = 20_000
PRIVATE_BUILD_CACHE_BYTES_PER_RECORD = 320


def private_build_cache_kib(records: int | None) -> int:
    """The private build's page cache for an import of `records` sessions (None: not known)."""
    if records is None or records <= PRIVATE_BUILD_CACHE_FULL_RECORDS:
        return PRIVATE_BUILD_CACHE_KIB
    taken = (records - PRIVATE_BUILD_CACHE_FULL_RECORDS) * PRIVATE_BUILD_CACHE_BYTES_PER_RECORD // 1024
    return max(PRIVATE_BUILD_CACHE_MIN_KIB, PRIVATE_BUILD_CACHE_KIB - taken)


# A private build commits per this many bytes of rows, each commit checkpointed: index pages dirtied
# by every batch are written to the WAL once per commit (commits every 1,000 records wrote each
# page 3-4 times), and the WAL stays below the import's space allowance (import_faults.py).
PRIVATE_BUILD_COMMIT_BYTES = 32 * 1024 * 1024
ROW_OVERHEAD_BYTES = (
    128  # what a row adds besides its JSON (keys, projections, index entries), for that budget
)


_INDEX_LISTING_MAX = 1000  # pages up to this size use the updated_at index
_SQL_INT_MAX = 2**63 - 1


def _sql_int(value: int | float) -> int:
    """A bound for SQL (LIMIT, a cutoff): clamped to what SQLite holds — `--tail 10**30` means all
    of them, not an overflow."""
    return int(max(-_SQL_INT_MAX, min(_SQL_INT_MAX, value)))


_BY_KEY = itemgetter(0)
_BY_UPDATED = itemgetter(1)


def _sort_for_listing(rows: list[tuple[str, Any, str]]) -> list[tuple[str, Any, str]]:
    """SQL `ORDER BY updated_at DESC, session_key` with NULLs last, as two stable C-key sorts
    (Python's code-point order of str equals SQLite's byte order of UTF-8)."""
    rows.sort(key=_BY_KEY)
    dated = [row for row in rows if row[1] is not None]
    dated.sort(key=_BY_UPDATED, reverse=True)  # reverse keeps stability: ties stay key-ordered
    dated.extend(row for row in rows if row[1] is None)
    return dated


def _counted(row: tuple[int, str | None]) -> tuple[int, list[str]]:
    return row[0], (orjson.loads(row[1]) if row[1] else [])


# base.listing_sort_key's timestamps over the projection columns, which hold what its `_finite`
# accepts (finite numbers) or NULL; a missing one counts as 0.
_LAST_INTERACTION_SQL = "coalesce(last_interaction_at, 0)"
_ACTIVITY_SQL = (
    "CASE WHEN last_activity_at > 0 OR last_interaction_at > 0 THEN max("
    "CASE WHEN last_activity_at > 0 THEN last_activity_at ELSE 0 END,"
    " CASE WHEN last_interaction_at > 0 THEN last_interaction_at ELSE 0 END)"
    " WHEN updated_at > 0 THEN updated_at WHEN created_at > 0 THEN created_at ELSE 0 END"
)


def _parse_entries(rows: list[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    """Decode entry JSON; the cyclic GC is paused while thousands of dicts are built (it would
    otherwise rescan them repeatedly: ~20 % of a 20k listing)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:  # (orjson itself for each row: no wrapper call per row, issue 30: 20,000 rows a cleanup)
            return [(key, _orjson_loads(text)) for key, text in rows]
        except orjson.JSONDecodeError:  # what orjson rejects: the batch again through the wrapper
            return [(key, _loads_line(text)) for key, text in rows]
    finally:
        if enabled:
            gc.enable()


def _entry_window(key: str, entry: dict[str, Any], stamp: int) -> tuple[Any, ...] | None:
    """The window row an entry upserts (`_WINDOW_UPSERT_FROM_ENTRY`): None without a valid sessionId."""
    sid = entry.get("sessionId")
    if isinstance(sid, str) and is_valid_legacy_session_id(sid):
        return _window_row(sid, key, entry, fallback_ms=stamp)
    return None


_loads_line = jsonutil.loads  # orjson, with the stdlib fallback for what orjson rejects
_orjson_loads = orjson.loads
# A pinned row's place in the default listing order, by its key, kept with the exact stored JSON
# it was computed from: every list of a live store (the Gateway's) reads each pinned row, and one
# right after a commit would otherwise decode all of them and test each for pinnability to show
# the first 50 (issue 30: the mix's lists with ~300 pinned rows). Looked up by the key and checked
# by comparing the text (a memcmp), not by hashing every row's JSON again (each read is a new str).
_PINNED_ORDER: dict[str, tuple[str, tuple[float, float, str]]] = {}
_PINNED_ORDER_MAX = 4096


def _pinned_order(key: str, text: str) -> tuple[float, float, str]:
    """(-pin timestamp, -updatedAt, key): `listing_sort_key`'s default order for a pinned row."""
    kept = _PINNED_ORDER.get(key)
    if kept is not None and kept[0] == text:
        return kept[1]
    entry = _loads_line(text)
    entry = entry if isinstance(entry, dict) else {}
    found = (-pin_timestamp(key, entry), -(finite_timestamp(entry.get("updatedAt")) or 0), key)
    if kept is None and len(_PINNED_ORDER) >= _PINNED_ORDER_MAX:
        _PINNED_ORDER.clear()
    _PINNED_ORDER[key] = (text, found)
    return found


EXPORT_BATCH_MAX_BYTES = 4 * 1024 * 1024  # export_transcripts: larger transcripts are exported one by one
_QUARANTINE_PREFIX = '{"type":"' + QUARANTINE_TYPE + '",'
_QUARANTINE_BYTES = _QUARANTINE_PREFIX.encode()


def _utf8_or_error(content: bytes, path: Path, timeout_ms: int) -> None:
    """The export's lines read as their stored bytes must be the UTF-8 text a read as text gives
    (where that read fails, this one fails the same way: sqlite3's decode error, translated)."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        raise translate_error(
            sqlite3.OperationalError("Could not decode to UTF-8 column 'event_json'"), path, timeout_ms
        ) from None


@dataclass(slots=True)  # one per imported session
class ImportRecord:
    """One session to import: its entry (None for a transcript without entry) and raw lines.
    `lines` may be bytes (the fast path: `data.split(b"\\n")`) or str, blank lines are skipped."""

    session_key: str
    entry: dict[str, Any] | None
    lines: Iterable[str | bytes] = ()
    session_id: str | None = None  # defaults to entry["sessionId"]
    source: str | None = None  # file name used in issues
    created_at_ms: int | None = None  # fallback event/window time (e.g. the file mtime)
    entry_text: str | None = None  # the entry's original JSON text, stored as is (D22)
    # the rows of `lines` computed ahead (the import's parser process): only for a session the
    # gathered path imports (a fresh store, a key and session id no other record of the run names:
    # the store does not remember them, `_BulkState.keys`)
    prepared: PreparedLines | None = None
    # the rowid of the record's `session_nodes` and `session_windows` rows (None: the next one): an
    # import that feeds its records in another order than its index's (session-id order, so that the
    # transcript rows are appended to their keys' b-trees) keeps the index's order in both tables
    rowid: int | None = None


@dataclass(slots=True)  # one per imported session, kept for the caller
class ImportRecordResult:
    session_key: str
    session_id: str | None
    entry_inserted: bool
    entry_existing: bool
    events_inserted: int = 0
    events_existing: int = 0  # lines skipped because they are already stored
    bytes_inserted: int = 0
    lines_read: int = 0  # non-blank lines consumed (up to a malformed line under "stop")
    issue: ReadIssue | None = None
    quarantined: int = 0  # malformed lines kept as quarantined raw lines ("quarantine" policy)


@dataclass
class BulkImportResult:
    records: list[ImportRecordResult] = field(default_factory=list)

    @property
    def entries_inserted(self) -> int:
        return sum(r.entry_inserted for r in self.records)

    @property
    def entries_existing(self) -> int:
        return sum(r.entry_existing for r in self.records)

    @property
    def events_inserted(self) -> int:
        return sum(r.events_inserted for r in self.records)

    @property
    def events_existing(self) -> int:
        return sum(r.events_existing for r in self.records)

    @property
    def bytes_inserted(self) -> int:
        return sum(r.bytes_inserted for r in self.records)

    @property
    def issues(self) -> list[ReadIssue]:
        return [r.issue for r in self.records if r.issue is not None]


@dataclass(frozen=True)
class KeeperProbe(ChangeProbe):
    """A live process's keeper of one database: (inode, data_version), never opening or waiting."""

    path: str

    def read(self) -> Any:
        from openclaw_cli.store.sqlite_common import peek_version

        return peek_version(self.path)


# `record_archives`: rows a statement (10 parameters each: within SQLite's oldest limit of 999)
_RECORD_ROWS = 99
_RECORD_ARCHIVES = (
    "INSERT OR REPLACE INTO session_transcript_archives(archive_name, session_id, session_key, reason,"
    " encoding, archive_sha256, archive_bytes, event_count, raw_bytes, created_at) VALUES "
)


class SqliteStore(SessionStore):
    kind = KIND_SQLITE
    max_lines_opens_successor = True

    def __init__(
        self,
        db_path: Path,
        agent_id: str,
        *,
        create: bool = False,
        busy_timeout_ms: int = schema_mod.DEFAULT_BUSY_TIMEOUT_MS,
        read_only: bool = False,
    ):
        self.path = Path(db_path)
        self.agent_id = normalize_agent_id(agent_id)
        self.sessions_dir = sessions_dir_for(self.path)
        self.read_only = read_only
        self.schema = schema_mod.SCHEMA_LABEL
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._lock = threading.RLock()
        self._depth = 0
        self._ro: ReadOnlyConnection | None = None
        self._listing_indexes: bool | None = None  # whether the schema-3 listing indexes exist
        self._writer_pool: Any = None  # the live keeper this write connection goes back to at close
        keep: Any = None
        if read_only:
            if not self.path.exists():
                raise NotFoundError(f"Session database not found: {self.path}")
            self._ro = open_readonly(self.path, timeout_ms=self.busy_timeout_ms)
            self._conn = self._ro.conn
            if self._ro.verified == self.agent_id:
                return  # a pooled reader this agent's store already checked (live mode)
            try:
                if schema_mod.check_ours(
                    self._conn, self.path, allow_fresh=False
                ) and not schema_mod.readable_as_is(self._conn):
                    raise InvalidDataError(
                        f"Session database {self.path} needs a schema upgrade; run any openclaw write command "
                        "(or `openclaw doctor --fix`) once to apply it.",
                        type="unsupported_schema",
                    )
            except BaseException:
                self._ro.close()
                raise
        else:
            # a live process (the Gateway) keeps one idle write connection per database, checked
            # and migrated when it was opened: a write batch does not open, configure and check
            # one (~1.5 ms of a sessions.patch batch's ~4 ms of CPU, issue 30)
            keep = keeper(self.path, self.busy_timeout_ms)
            pooled = keep.take_writer(self._writer_tag()) if keep is not None else None
            if pooled is not None:
                self._conn, self._writer_pool = pooled, keep
                return
            self._conn = schema_mod.open_database(
                self.path, self.agent_id, busy_timeout_ms=self.busy_timeout_ms, create=create
            )
            # a live process (the Gateway) keeps its keeper open beside every write connection, so
            # closing this one is never the database's last close (which checkpoints the WAL:
            # ~5 ms per sessions.patch on a 20k store); its commits leave the WAL to the process's
            # background checkpoints. Its savepoints' journals (a group commit's patch each: ~0.7 MB
            # for 18) stay in memory, not a temp file created, written and freed per batch
            keep = keeper(self.path, self.busy_timeout_ms)
            if keep is not None:
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {LIVE_WAL_AUTOCHECKPOINT}")
                self._conn.execute("PRAGMA temp_store = MEMORY")
        try:
            self._check_owner()
        except BaseException:
            self.close()
            raise
        if self._ro is not None:
            self._ro.verified = self.agent_id
        elif keep is not None:
            self._writer_pool = keep  # checked: given back to the keeper at close

    def _writer_tag(self) -> tuple[str, int]:
        return self.agent_id, self.busy_timeout_ms

    def _check_owner(self) -> None:
        meta = self._q(lambda c: schema_mod.read_meta(c))
        if meta is None:
            raise InvalidDataError(f"Session database {self.path} has no schema_meta row")
        if meta.get("role") != "agent":
            raise InvalidDataError(
                f"Session database {self.path} has schema role {meta.get('role')}; expected agent."
            )
        owner = meta.get("agent_id")
        if isinstance(owner, str) and owner and owner != self.agent_id:
            raise InvalidDataError(
                f"Session database {self.path} belongs to agent {owner}; requested agent {self.agent_id}."
            )

    # ---- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is None:
            return
        self._conn = None  # type: ignore[assignment]
        if self._ro is not None:
            self._ro.close()
        elif self._writer_pool is not None and self._writer_pool.give_writer(conn, self._writer_tag()):
            self._writer_pool = None
        else:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RefusedError(f"Session store {self.path} is closed")
        return self._conn

    def _q(self, fn: Any) -> Any:
        """Run a read; sqlite errors become typed errors."""
        try:
            return fn(self._db())
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None

    def ensure_writable(self, operation: str) -> None:
        if self.read_only:
            raise RefusedError(f"Refusing to {operation}: {self.path} was opened read-only")

    # ---- the write protocol ------------------------------------------------------------------------
    def write_lock(self, lock_settings: Any) -> Any:
        from openclaw_cli.store.writer import sqlite_write_lock

        return sqlite_write_lock(self, lock_settings.acquire_timeout_ms)

    def read_snapshot(
        self, key: str, entry: dict[str, Any], *, data_on_demand: bool = False, on_entry: Any = None
    ) -> Any:
        from openclaw_cli.store.snapshot import read_database_snapshot

        return read_database_snapshot(self, key, entry, data_on_demand=data_on_demand, on_entry=on_entry)

    def commit_compaction(
        self,
        snapshot: Any,
        comp: dict[str, Any],
        *,
        rotate: bool,
        now_ms: int,
        lock_settings: Any,
        reason: str = "manual",
    ) -> Any:
        from openclaw_cli.store.sqlite.compaction import commit_compaction

        return commit_compaction(snapshot, comp, rotate=rotate, now_ms=now_ms, reason=reason)

    def commit_max_lines(
        self,
        snapshot: Any,
        kept: list[bytes],
        *,
        now_ms: int,
        lock_settings: Any,
        keep_session_id: bool = False,
    ) -> Any:
        from openclaw_cli.store.sqlite.compaction import commit_max_lines

        return commit_max_lines(snapshot, kept, now_ms=now_ms, keep_session_id=keep_session_id)

    def retire(
        self,
        plan: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        checkpoint: Any,
        progress: Any = None,
        leaving: LeavingHook | None = None,
    ) -> Any:
        from openclaw_cli.store.sqlite.retire import retire

        return retire(self, plan, now_ms=now_ms, checkpoint=checkpoint, progress=progress, leaving=leaving)

    def retire_all(self, *, lock_settings: Any, now_ms: int, checkpoint: Any) -> tuple[Any, int, int]:
        from openclaw_cli.store.sqlite.retire import retire_all

        return retire_all(self, now_ms=now_ms, checkpoint=checkpoint)

    def restore_session(
        self, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any, now_ms: int
    ) -> RestoreOutcome:
        from openclaw_cli.store.sqlite.restore import restore_session

        self.ensure_writable("restore a session")
        return restore_session(self, key, entry, content, now_ms=now_ms)

    def patch_entry(
        self, key: str, mutate: Any, *, lock_settings: Any, create: bool = False, now_ms: int | None = None
    ) -> Any:
        from openclaw_cli.store.sqlite.lifecycle import patch_entry

        return patch_entry(self, key, mutate, create=create)

    def patch_entries(
        self,
        items: list[tuple[str, Any]],
        *,
        lock_settings: Any,
        create: bool = False,
        now_ms: int | None = None,
    ) -> list[Any]:
        from openclaw_cli.store.sqlite.lifecycle import patch_entries

        return patch_entries(self, items, create=create)

    def archive_rows(
        self, archives: Any, *, archived_at: int, expected: Any, lock_settings: Any
    ) -> list[str]:
        from openclaw_cli.store.sqlite.lifecycle import archive_rows

        return archive_rows(self, archives, archived_at=archived_at, expected=expected)

    def reset_session(
        self, key: str, build: Any, *, lock_settings: Any, now_ms: int, marker: dict[str, Any] | None = None
    ) -> Any:
        from openclaw_cli.store.sqlite.lifecycle import reset_session

        return reset_session(self, key, build, now_ms=now_ms, marker=marker)

    def switch_branch(self, key: str, leaf_id: str, build: Any, *, lock_settings: Any, now_ms: int) -> Any:
        from openclaw_cli.store.sqlite.lifecycle import switch_branch

        return switch_branch(self, key, leaf_id, build, now_ms=now_ms)

    def fork_session(
        self,
        parent_key: str,
        child_key: str,
        build: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        max_tokens: int,
        wait: bool = False,
        through_last_completed: bool = False,
        at_entry: str | None = None,
    ) -> Any:
        from openclaw_cli.store.sqlite.lifecycle import fork_session

        return fork_session(
            self,
            parent_key,
            child_key,
            build,
            now_ms=now_ms,
            max_tokens=max_tokens,
            through_last_completed=through_last_completed,
            at_entry=at_entry,
        )

    def current_for_writes(self) -> bool:
        return not schema_mod.check_ours(self._db(), self.path, allow_fresh=False)

    def label_owners(self, label: str) -> list[str]:
        return [
            row[0]
            for row in self._q(
                lambda c: c.execute(
                    "SELECT session_key FROM session_nodes WHERE label = ?", (label,)
                ).fetchall()
            )
        ]

    def count_archived(self, *, updated_since_ms: int | None = None) -> int:
        sql, params = "SELECT count(*) FROM session_nodes WHERE archived_at IS NOT NULL", []
        if updated_since_ms is not None:
            sql += " AND updated_at >= ?"
            params.append(_sql_int(updated_since_ms))
        return cast("int", self._q(lambda c: c.execute(sql, params).fetchone()[0]))

    def window_session_ids(self, key: str) -> list[str]:
        return [window["sessionId"] for window in self.list_windows(key)]

    # ---- disk-budget reclamation (2026.9.6+) ---------------------------------------------------------
    def reclaim_free_pages(self) -> bool:
        from openclaw_cli.store.sqlite_common import reclaim_free_pages

        self.ensure_writable("reclaim database pages")
        with self._lock:
            return cast("bool", self._q(reclaim_free_pages))

    def budget_archive_names(self) -> list[str]:
        return [
            row[0]
            for row in self._q(
                lambda c: c.execute(
                    "SELECT archive_name FROM session_transcript_archives ORDER BY created_at, archive_name"
                ).fetchall()
            )
        ]

    def forget_archives(self, names: list[str]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "DELETE FROM session_transcript_archives WHERE archive_name = ?", [(n,) for n in names]
            )

    def historical_session_ids(self, *, recent_since_ms: float | None) -> list[str]:
        from openclaw_cli.store.generations import entry_session_ids

        def run(c: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            windows = c.execute(
                "SELECT w.session_id, w.updated_at, n.archived_at IS NOT NULL OR n.pinned_at IS NOT NULL"
                " FROM session_windows AS w LEFT JOIN session_nodes AS n ON n.session_key = w.session_key"
                " ORDER BY w.updated_at, w.session_id"
            ).fetchall()
            return windows, c.execute("SELECT entry_json FROM session_nodes").fetchall()

        windows, rows = self._q(run)
        referenced: set[str] = set()
        for (text,) in rows:
            try:
                entry = jsonutil.loads(text)
            except ValueError:
                return []  # a row we cannot read may reference any window: evict none
            if isinstance(entry, dict):
                referenced.update(entry_session_ids(entry))
        return [
            sid
            for sid, updated, kept_by_row in windows
            if sid not in referenced
            and not kept_by_row  # an archived or pinned row keeps its whole history
            and not (recent_since_ms is not None and isinstance(updated, int) and updated >= recent_since_ms)
        ]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A `BEGIN IMMEDIATE` write transaction; nested uses join the outer one. Lets a caller
        combine writes atomically (e.g. delete entries + drop their events, spec maintenance §8.3)."""
        self.ensure_writable("write to the session store")
        with self._lock, write_transaction(self, begin_error_writing=False) as conn:
            yield conn

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A consistent read over several statements (a deferred read transaction)."""
        with self._lock:
            conn = self._db()
            if conn.in_transaction:
                yield conn
                return
            try:
                conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise translate_error(exc, self.path, self.busy_timeout_ms) from None
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def transcript_snapshot(self) -> Any:
        return self._snapshot()

    # ---- entries -----------------------------------------------------------------------------------
    def load_entries(self) -> dict[str, dict[str, Any]]:
        """Every entry, decoded batch by batch: the JSON text of all rows is never held at once
        (at 100,000 rows ~70 MB beside the ~150 MB of decoded entries)."""

        def run(c: sqlite3.Connection) -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            cursor = c.execute("SELECT session_key, entry_json FROM session_nodes ORDER BY rowid")
            try:
                while batch := cursor.fetchmany(1024):
                    out.update(_parse_entries(batch))
            finally:
                cursor.close()
            return out

        return cast("dict[str, dict[str, Any]]", self._q(run))

    def load_facts(self, *, entry_bytes: dict[str, int] | None = None) -> dict[str, Any]:
        """Every row's facts, decoded batch by batch: no whole entry outlives its row (100,000
        rows: ~35 MB of facts instead of ~190 MB of entries)."""
        from openclaw_cli.gcpause import gc_paused
        from openclaw_cli.store.facts import compact_bytes, entry_facts

        def run(c: sqlite3.Connection) -> dict[str, Any]:
            out: dict[str, Any] = {}
            cursor = c.execute("SELECT session_key, entry_json FROM session_nodes ORDER BY rowid")
            try:
                with gc_paused():
                    while batch := cursor.fetchmany(1024):
                        for key, text in batch:
                            entry = _loads_line(text)
                            out[key] = entry_facts(entry)
                            if entry_bytes is not None:
                                entry_bytes[key] = compact_bytes(entry)
            finally:
                cursor.close()
            return out

        return cast("dict[str, Any]", self._q(run))

    def list_entries(
        self, *, limit: int | None = None, updated_since_ms: int | None = None
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """Newest first (`updated_at DESC, session_key`; missing updatedAt last). Small pages walk
        the updated_at index; large or unbounded listings scan the table sequentially and sort the
        small (key, updated_at) tuples in memory, which beats one random row seek per entry."""
        where, params = "", []
        if updated_since_ms is not None:
            where, params = " WHERE updated_at >= ?", [_sql_int(updated_since_ms)]
        if limit is not None and limit <= _INDEX_LISTING_MAX:

            def run(c: sqlite3.Connection) -> tuple[list[tuple[str, str]], int]:
                with self._snapshot():
                    rows = c.execute(
                        f"SELECT session_key, entry_json FROM session_nodes{where}"
                        " ORDER BY updated_at DESC, session_key LIMIT ?",
                        [*params, _sql_int(max(int(limit), 0))],
                    ).fetchall()
                    if len(rows) < limit:
                        return rows, len(rows)
                    return rows, c.execute(f"SELECT count(*) FROM session_nodes{where}", params).fetchone()[0]

            page, total = self._q(run)
            return _parse_entries(page), total
        scanned = self._q(
            lambda c: c.execute(
                f"SELECT session_key, updated_at, entry_json FROM session_nodes{where}", params
            ).fetchall()
        )
        scanned = _sort_for_listing(scanned)
        total = len(scanned)
        if limit is not None:
            scanned = scanned[: max(int(limit), 0)]
        return _parse_entries([(key, text) for key, _, text in scanned]), total

    def iter_listing(
        self, *, updated_since_ms: int | None = None, archived: bool | None = None
    ) -> tuple[int, Iterator[tuple[str, dict[str, Any]]]]:
        """The listing streamed along the updated_at index (`list_entries` order) in batches, the
        count and the rows from one read snapshot; memory stays one batch whatever the store's size
        (a sequential scan plus an in-memory sort, `list_entries`' choice for big pages, would hold
        every row). `archived` filters on the archived_at projection."""
        where, params = [], []
        if updated_since_ms is not None:
            where.append("updated_at >= ?")
            params.append(_sql_int(updated_since_ms))
        if archived is not None:
            where.append("archived_at IS NOT NULL" if archived else "archived_at IS NULL")
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        snapshot = self._snapshot()
        conn = snapshot.__enter__()
        try:
            if updated_since_ms is None and archived is False and self._q(self._has_listing_indexes):
                # count(*) (an index scan) minus the archived rows (a partial index): no table scan
                total = self._q(
                    lambda c: (
                        c.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
                        - c.execute(
                            "SELECT count(*) FROM session_nodes WHERE archived_at IS NOT NULL"
                        ).fetchone()[0]
                    )
                )
            else:
                total = self._q(
                    lambda c: c.execute(f"SELECT count(*) FROM session_nodes{condition}", params).fetchone()[
                        0
                    ]
                )
            cursor = self._q(
                lambda c: c.execute(
                    f"SELECT session_key, entry_json FROM session_nodes{condition} ORDER BY updated_at DESC, session_key",
                    params,
                )
            )
        except BaseException:
            snapshot.__exit__(None, None, None)
            raise

        def rows() -> Iterator[tuple[str, dict[str, Any]]]:
            try:
                while True:
                    try:
                        batch = cursor.fetchmany(512)
                    except sqlite3.Error as exc:
                        raise translate_error(exc, self.path, self.busy_timeout_ms) from None
                    if not batch:
                        return
                    for key, text in batch:
                        yield key, _loads_line(text)
            finally:
                cursor.close()
                snapshot.__exit__(None, None, None)

        del conn
        return total, rows()

    def change_token(self) -> Any:
        """The keeper's `PRAGMA data_version` in a live process (it changes on every commit of
        another connection, which every write is); None otherwise."""
        from openclaw_cli.store.sqlite_common import keeper

        keep = keeper(self.path, self.busy_timeout_ms)
        return None if keep is None else (str(self.path), keep.version())

    def change_probe(self) -> ChangeProbe | None:
        """The keeper's `PRAGMA data_version` (rows and transcripts are both in the database)."""
        return KeeperProbe(str(self.path))

    def list_view(self, query: ListingQuery) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """From the projection columns. The default order: one counting scan (which also names
        the pinned rows), the pinned rows, then the unpinned page walked along the updated_at
        index. The other orders: the count, then a sort of (rowid, timestamp, key) with only the
        page's entries read. A `match` filter needs every entry: the generic path."""
        if query.match is not None:
            return super().list_view(query)
        where: list[str] = ["1"]
        params: list[Any] = []
        if query.archived is not None:
            where.append("archived_at IS NOT NULL" if query.archived else "archived_at IS NULL")
        if query.pinned is not None:
            where.append("pinned_at IS NOT NULL" if query.pinned else "pinned_at IS NULL")
        if query.active_since_ms is not None:
            where.append(f"{_ACTIVITY_SQL if query.sort_by == SORT_ACTIVITY else 'updated_at'} >= ?")
            params.append(query.active_since_ms)
        if query.label is not None:
            where.append("label = ?")
            params.append(query.label)
        condition = " AND ".join(where)

        def run(c: sqlite3.Connection) -> tuple[list[tuple[str, dict[str, Any]]], int] | None:
            with self._snapshot():
                c.execute("SELECT 1 FROM session_nodes LIMIT 1").fetchone()  # the snapshot starts here
                by_time = query.sort_by != SORT_UPDATED
                wants_pinned = not by_time or query.pinned is not None
                # the pinned rows' JSON read by the counting pass when it runs (after every commit
                # in a live store): one walk of the pinned index and its rows, not a second lookup
                # of each pinned key (issue 30: ~350 pinned rows, half a list's CPU)
                texts: list[list[tuple[str, str]]] = []
                total, pinned_keys, walk_exact = cached_fact(
                    self.path,
                    ("listing", condition, tuple(params)),
                    lambda: self._listing_counts(
                        c, query, condition, params, texts=texts if wants_pinned else None
                    ),
                )
                found: list[tuple[str, str]] = []
                order: list[tuple[float, float, str]] = []
                if pinned_keys and wants_pinned:
                    if texts:
                        found = texts[0]
                    else:
                        marks = ",".join("?" * len(pinned_keys))
                        found = c.execute(
                            f"SELECT session_key, entry_json FROM session_nodes WHERE session_key IN ({marks})",
                            pinned_keys,
                        ).fetchall()
                    # a pinnedAt on a row that cannot be pinned (the pinned_at column does not
                    # know), or one that does not put the row first: let Python filter and order
                    order = [_pinned_order(key, text) for key, text in found]
                    if not all(-stamp > 0 for stamp, _, _ in order):
                        return None
                if by_time:
                    return self._sorted_page(c, query, condition, params), total
                # the default order (`listing_sort_key`: every row here is pinned, pinnedAt set,
                # stamp > 0); only the page's pinned rows are decoded
                offset, limit = query.offset, query.limit
                ranked = sorted(range(len(found)), key=order.__getitem__)
                page = _parse_entries(
                    [found[i] for i in ranked[offset : None if limit is None else offset + limit]]
                )
                wanted = -1 if limit is None else limit - len(page)
                if wanted != 0:
                    # the index order is the listing's unless rows without updatedAt (0 to the
                    # listing, last to the index) meet rows at or below 0: then sort by the value
                    walk = "updated_at DESC" if walk_exact else "coalesce(updated_at, 0) DESC"
                    rows = c.execute(
                        f"SELECT session_key, entry_json FROM session_nodes WHERE {condition} AND pinned_at IS NULL"
                        f" ORDER BY {walk}, session_key LIMIT ? OFFSET ?",
                        [*params, wanted, max(0, offset - len(found))],
                    ).fetchall()
                    page.extend(_parse_entries(rows))
                return page, total

        found = self._q(run)
        return super().list_view(query) if found is None else found

    def _sorted_page(
        self, c: sqlite3.Connection, query: ListingQuery, condition: str, params: list[Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """A page in the lastInteractionAt or activity order (no pinned-first): SQLite sorts the
        small (rowid, timestamp, key) tuples of every matching row, then only the page's
        entries are read and decoded."""
        stamp = _ACTIVITY_SQL if query.sort_by == SORT_ACTIVITY else _LAST_INTERACTION_SQL
        ids = [
            row[0]
            for row in c.execute(
                f"SELECT rowid FROM session_nodes WHERE {condition} ORDER BY {stamp} DESC, session_key LIMIT ? OFFSET ?",
                [*params, -1 if query.limit is None else query.limit, query.offset],
            )
        ]
        texts: dict[int, tuple[str, str]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for rowid, key, text in c.execute(
                f"SELECT rowid, session_key, entry_json FROM session_nodes WHERE rowid IN ({marks})", chunk
            ):
                texts[rowid] = (key, text)
        return _parse_entries([texts[rowid] for rowid in ids])

    def _listing_counts(
        self,
        c: sqlite3.Connection,
        query: ListingQuery,
        condition: str,
        params: list[Any],
        *,
        texts: list[list[tuple[str, str]]] | None = None,
    ) -> tuple[int, list[str], bool]:
        """(rows matching, the pinned keys among them, whether the updated_at index walk is the
        listing's order). Filtered by archived state only (the Gateway's default listing) and on
        a schema with the partial archived / pinned indexes: count(*) minus the archived rows,
        and an index search for the pinned ones (with `texts`, their (key, JSON) rows are read
        in the same pass and appended to it as one list); otherwise one scan. The walk is exact
        unless the store holds both rows without updatedAt and rows at or below 0 (two index
        probes)."""
        walk_exact = not c.execute(
            "SELECT EXISTS (SELECT 1 FROM session_nodes WHERE updated_at IS NULL)"
            " AND EXISTS (SELECT 1 FROM session_nodes WHERE updated_at <= 0)"
        ).fetchone()[0]
        simple = query.active_since_ms is None and query.label is None and query.pinned is None
        if simple and self._has_listing_indexes(c):
            archived_rows = c.execute(
                "SELECT count(*) FROM session_nodes WHERE archived_at IS NOT NULL"
            ).fetchone()[0]
            if query.archived is None:
                total = c.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
            elif query.archived:
                total = archived_rows
            else:
                total = c.execute("SELECT count(*) FROM session_nodes").fetchone()[0] - archived_rows
            if texts is not None:
                rows = c.execute(
                    f"SELECT session_key, entry_json FROM session_nodes WHERE pinned_at IS NOT NULL AND {condition}",
                    params,
                ).fetchall()
                texts.append(rows)
                return total, [row[0] for row in rows], walk_exact
            pinned = [
                row[0]
                for row in c.execute(
                    f"SELECT session_key FROM session_nodes WHERE pinned_at IS NOT NULL AND {condition}",
                    params,
                )
            ]
            return total, pinned, walk_exact
        return (
            *_counted(
                c.execute(
                    "SELECT count(*), json_group_array(session_key) FILTER (WHERE pinned_at IS NOT NULL)"
                    f" FROM session_nodes WHERE {condition}",
                    params,
                ).fetchone()
            ),
            walk_exact,
        )

    def _has_listing_indexes(self, c: sqlite3.Connection) -> bool:
        if self._listing_indexes is None:
            self._listing_indexes = (
                c.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN"
                    " ('idx_agent_session_nodes_archived', 'idx_agent_session_nodes_pinned')"
                ).fetchone()[0]
                == 2
            )
        return self._listing_indexes

    def entry_keys(self) -> set[str]:
        return {
            row[0] for row in self._q(lambda c: c.execute("SELECT session_key FROM session_nodes").fetchall())
        }

    def get_entry(self, key: str) -> dict[str, Any] | None:
        row = self._q(
            lambda c: c.execute(
                "SELECT entry_json FROM session_nodes WHERE session_key = ?", (key,)
            ).fetchone()
        )
        return _loads_line(row[0]) if row else None

    def count_entries(self) -> int:
        return cast("int", self._q(lambda c: c.execute("SELECT count(*) FROM session_nodes").fetchone()[0]))

    def logical_bytes(self) -> tuple[int, int]:
        """(Σ entry JSON bytes, Σ transcript event bytes): the disk-budget overflow pre-check
        (maintenance.md §6.3) from maintained columns, without touching any JSON."""

        def run(c: sqlite3.Connection) -> tuple[int, int]:
            with self._snapshot():
                entries = c.execute("SELECT coalesce(sum(entry_bytes), 0) FROM session_nodes").fetchone()[0]
                events = c.execute("SELECT coalesce(sum(event_bytes), 0) FROM session_windows").fetchone()[0]
            return entries, events

        return cast("tuple[int, int]", self._q(run))

    def entry_sizes(self) -> dict[str, tuple[str | None, int]]:
        """key -> (sessionId, UTF-8 bytes of the stored entry JSON): the disk-budget inputs
        (maintenance.md §6.3) without decoding any JSON."""
        rows = self._q(
            lambda c: c.execute(
                "SELECT session_key, current_session_id, entry_bytes FROM session_nodes"
            ).fetchall()
        )
        return {key: (sid, size) for key, sid, size in rows}

    def entry_bytes(self) -> dict[str, int]:
        """key -> UTF-8 bytes of the stored entry JSON (`entry_sizes` without the session ids)."""
        return self._column_map("SELECT session_key, entry_bytes FROM session_nodes")

    def _column_map(self, sql: str) -> dict[Any, Any]:
        """A two-column query as a dict, straight from the rows (no object per row)."""
        return dict(self._q(lambda c: c.execute(sql).fetchall()))

    def upsert_entries(self, entries: Mapping[str, dict[str, Any]]) -> int:
        """Insert or replace entries, stored exactly as given (compact JSON, unknown fields kept).
        Also upserts the session window of each entry's `sessionId`. Returns the number written."""
        self.ensure_writable("update session entries")
        nodes: list[tuple[Any, ...]] = []
        windows: list[tuple[Any, ...]] = []
        stamp = now_ms()
        for key, entry in entries.items():
            if not isinstance(key, str) or not key.strip():
                raise InvalidDataError(f"Invalid session key: {key!r}")
            if not isinstance(entry, dict):
                raise InvalidDataError(f"Session entry for {key} is not a JSON object")
            nodes.append(_node_row(key, entry, _encode_entry(entry)))
            window = _entry_window(key, entry, stamp)
            if window is not None:
                windows.append(window)
        with self.transaction() as conn:
            conn.executemany(_NODE_UPSERT, nodes)
            conn.executemany(_WINDOW_UPSERT_FROM_ENTRY, windows)
        return len(nodes)

    def entry_for_update(self, key: str) -> tuple[dict[str, Any], tuple[Any, ...]] | None:
        """An entry and its stored projection columns (`update_entry`'s `stored`), in one read."""
        row = self._q(lambda c: c.execute(_NODE_READ_FOR_UPDATE, (key,)).fetchone())
        return (_loads_line(row[0]), row[1:]) if row else None

    def update_entry(self, key: str, entry: dict[str, Any], stored: tuple[Any, ...]) -> None:
        """Rewrite an existing row (read with `entry_for_update` in this transaction): entry_json,
        and only the projections whose value changed. An UPDATE rewrites the index entries of
        every column it sets, to the same value too: the full upsert dirtied a leaf of every
        index (current session id, label, pin ...) on each label or pin patch: 3.8 WAL pages a
        bench patch, 2.7 now — the Gateway's WAL reaches its checkpoint inside a commit a third
        less often (issue 30)."""
        self.ensure_writable("update session entries")
        if not isinstance(entry, dict):
            raise InvalidDataError(f"Session entry for {key} is not a JSON object")
        row = _node_row(key, entry, _encode_entry(entry))
        sets: list[str] = []
        args: list[Any] = []
        for name, new, old in zip(_NODE_PROJECTIONS, row[1:-2], stored, strict=True):
            # SQLite gives a value back as stored (STRICT, ANY keeps int and float apart)
            if new != old or type(new) is not type(old):
                sets.append(f"{name} = ?")
                args.append(new)
        sets.append("entry_bytes = ?, entry_json = ?")
        args += [row[-2], row[-1], key]
        window = _entry_window(key, entry, now_ms())
        update = f"UPDATE session_nodes SET {', '.join(sets)} WHERE session_key = ?"
        with self.transaction() as conn:
            if conn.execute(update, args).rowcount != 1:
                conn.execute(_NODE_UPSERT, row)  # not there after all: the upsert's insert
            if window is not None:
                conn.execute(_WINDOW_UPSERT_FROM_ENTRY, window)

    def delete_entries(self, keys: Iterable[str]) -> int:
        """Delete entry rows only (transcripts stay until `drop_session_events`). Returns the count."""
        self.ensure_writable("delete session entries")
        keys = list(keys)
        deleted = 0
        with self.transaction() as conn:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                deleted += conn.execute(
                    f"DELETE FROM session_nodes WHERE session_key IN ({marks})", chunk
                ).rowcount
        return deleted

    # ---- transcripts: reads ------------------------------------------------------------------------
    def _line(
        self, session_id: str, seq: int, text: str, issues: list[ReadIssue] | None
    ) -> TranscriptLine | None:
        if text.startswith(_QUARANTINE_PREFIX):
            return TranscriptLine(seq=seq, raw=text, obj=None)  # a quarantined raw line: opaque
        try:
            obj = _loads_line(text)
        except jsonutil.JSONDecodeError as exc:
            if issues is not None:
                issues.append(ReadIssue(f"{self.path}#{session_id}", seq + 1, f"malformed JSON: {exc}"))
            return None
        return TranscriptLine(seq=seq, raw=text, obj=obj if isinstance(obj, dict) else None)

    def iter_transcript(
        self, session_id: str, *, entry: dict[str, Any] | None = None, issues: list[ReadIssue] | None = None
    ) -> Generator[TranscriptLine, None, None]:
        try:
            cursor = self._db().execute(
                "SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            )
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        try:
            for seq, text in cursor:
                line = self._line(session_id, seq, text, issues)
                if line is not None:
                    yield line
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        finally:
            cursor.close()  # an abandoned iteration must not keep a read snapshot open

    def tail_transcript(
        self,
        session_id: str,
        n: int,
        *,
        entry: dict[str, Any] | None = None,
        issues: list[ReadIssue] | None = None,
    ) -> list[TranscriptLine]:
        if n <= 0:
            return []
        rows = self._q(
            lambda c: c.execute(
                "SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, _sql_int(n)),
            ).fetchall()
        )
        out = [self._line(session_id, seq, text, issues) for seq, text in reversed(rows)]
        return [line for line in out if line is not None]

    def has_transcript(self, session_id: str, *, entry: dict[str, Any] | None = None) -> bool:
        return (
            self._q(
                lambda c: c.execute(
                    "SELECT 1 FROM transcript_events WHERE session_id = ? LIMIT 1", (session_id,)
                ).fetchone()
            )
            is not None
        )

    def session_totals(self) -> dict[str, SessionTotals]:
        rows = self._q(
            lambda c: c.execute(
                "SELECT session_id, event_count, event_bytes, token_estimate FROM session_windows"
                " WHERE event_count > 0"
            ).fetchall()
        )
        return {sid: SessionTotals(events=n, bytes=b, token_estimate=t) for sid, n, b, t in rows}

    def session_bytes(self) -> dict[str, int]:
        """`session_totals()` bytes straight from the column (no object per session)."""
        return self._column_map("SELECT session_id, event_bytes FROM session_windows WHERE event_count > 0")

    def orphan_sessions(self) -> list[tuple[str, int, int]]:
        rows: list[tuple[str, int, int]] = self._q(
            lambda c: c.execute(
                "SELECT w.session_id, w.event_count, w.event_bytes FROM session_windows AS w"
                " WHERE NOT EXISTS (SELECT 1 FROM session_nodes AS n WHERE n.session_key = w.session_key)"
                " UNION ALL"
                " SELECT e.session_id, count(*), sum(e.event_utf8_bytes) FROM transcript_events AS e"
                " WHERE NOT EXISTS (SELECT 1 FROM session_windows AS w WHERE w.session_id = e.session_id)"
                " GROUP BY e.session_id ORDER BY 1"
            ).fetchall()
        )
        return [(str(sid), int(n or 0), int(size or 0)) for sid, n, size in rows]

    def window_totals(self, session_id: str) -> SessionTotals | None:
        row = self._q(
            lambda c: c.execute(
                "SELECT event_count, event_bytes, token_estimate FROM session_windows WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        )
        return SessionTotals(events=row[0], bytes=row[1], token_estimate=row[2]) if row else None

    def list_windows(self, session_key: str | None = None) -> list[dict[str, Any]]:
        """Session windows (transcript generations), newest first; for one key when given."""
        sql = (
            "SELECT session_id, session_key, previous_session_id, reason, created_at, updated_at, "
            "event_count, event_bytes, token_estimate, compaction_count FROM session_windows"
        )
        params: tuple[Any, ...] = ()
        if session_key is not None:
            sql += " WHERE session_key = ?"
            params = (session_key,)
        sql += " ORDER BY created_at DESC, session_id"
        names = (
            "sessionId",
            "sessionKey",
            "previousSessionId",
            "reason",
            "createdAt",
            "updatedAt",
            "events",
            "bytes",
            "tokenEstimate",
            "compactions",
        )
        rows = self._q(lambda c: c.execute(sql, params).fetchall())
        return [dict(zip(names, row, strict=True)) for row in rows]

    def window_keys(self) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = self._q(
            lambda c: c.execute(
                "SELECT session_id, session_key FROM session_windows ORDER BY created_at DESC, session_id"
            ).fetchall()
        )
        return rows

    def windows_beside(self, keys: Collection[str], leaving: Collection[str]) -> list[tuple[str, str]]:
        """Only the windows of `keys` read, through the session-key index, 500 keys a statement (a
        cleanup's removed rows: not every window sorted, issue 30); the few found in
        `window_keys()`' order (`created_at DESC, session_id`: code-point order is UTF-8's)."""

        def run(c: sqlite3.Connection) -> list[tuple[int, str, str]]:
            found: list[tuple[int, str, str]] = []
            wanted = list(keys)
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for sid, key, created in c.execute(
                    f"SELECT session_id, session_key, created_at FROM session_windows"
                    f" WHERE session_key IN ({marks})",
                    chunk,
                ):
                    if sid not in leaving:
                        found.append((-created, sid, key))
            return found

        found = cast("list[tuple[int, str, str]]", self._q(run))
        found.sort()
        return [(sid, key) for _, sid, key in found]

    def export_transcript(
        self, session_id: str, dest: BinaryIO, *, entry: dict[str, Any] | None = None
    ) -> SessionTotals:
        """Write the session's transcript as JSONL (raw lines + `\\n`) from one consistent snapshot;
        returns what was written (compare it with `window_totals` before dropping rows)."""
        events = total = tokens = 0
        buf: list[bytes] = []
        size = 0
        try:
            with self._snapshot() as conn:
                row = conn.execute(
                    "SELECT token_estimate FROM session_windows WHERE session_id = ?", (session_id,)
                ).fetchone()
                tokens = row[0] if row else 0
                for (text,) in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                ):
                    # a quarantined line is exported as the bytes it was imported from
                    data = (
                        original_bytes(text) if text.startswith(_QUARANTINE_PREFIX) else text.encode("utf-8")
                    )
                    buf.append(data)
                    buf.append(b"\n")
                    events += 1
                    total += len(data)
                    size += len(data) + 1
                    if size >= 1 << 20:
                        dest.write(b"".join(buf))
                        buf.clear()
                        size = 0
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        if buf:
            dest.write(b"".join(buf))
        return SessionTotals(events=events, bytes=total, token_estimate=tokens)

    def export_transcripts(
        self, session_ids: Iterable[str], *, batch: int = 64
    ) -> Iterator[tuple[str, bytes, SessionTotals]]:
        """`export_transcript` of many sessions, `batch` a statement: yields (session id, JSONL
        content, totals) in the order given. Call inside `transcript_snapshot()` for one consistent
        read of them all (a cleanup exporting 15,000 sessions ran 2 statements per session)."""
        ids = list(session_ids)
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            wanted = list(dict.fromkeys(chunk))
            marks = ",".join("?" * len(wanted))
            try:
                with self._snapshot() as conn:
                    windows = {
                        sid: (tokens, nbytes)
                        for sid, tokens, nbytes in conn.execute(
                            "SELECT session_id, token_estimate, event_bytes FROM session_windows"
                            f" WHERE session_id IN ({marks})",
                            wanted,
                        )
                    }
                    # a large transcript is streamed on its own (never held as rows, text and bytes at once)
                    small = [sid for sid in wanted if windows.get(sid, (0, 0))[1] <= EXPORT_BATCH_MAX_BYTES]
                    # each line as its stored UTF-8 bytes (no str made and encoded again, issue 30)
                    rows = (
                        conn.execute(
                            "SELECT session_id, CAST(event_json AS BLOB) FROM transcript_events"
                            f" WHERE session_id IN ({','.join('?' * len(small))}) ORDER BY session_id, seq",
                            small,
                        ).fetchall()
                        if small
                        else []
                    )
            except sqlite3.Error as exc:
                raise translate_error(exc, self.path, self.busy_timeout_ms) from None
            exported: dict[str, tuple[bytes, int]] = {}
            for sid, group in itertools.groupby(rows, key=operator.itemgetter(0)):
                lines = [line for _, line in group]
                events = len(lines)
                lines.append(b"")  # (the last line's newline)
                content = b"\n".join(lines)
                if not content.isascii():
                    _utf8_or_error(content, self.path, self.busy_timeout_ms)
                if _QUARANTINE_BYTES in content and any(line.startswith(_QUARANTINE_BYTES) for line in lines):
                    # a quarantined line is exported as the bytes it was imported from
                    content = b"".join(
                        (original_bytes(line) if line.startswith(_QUARANTINE_BYTES) else line) + b"\n"
                        for line in lines[:-1]
                    )
                exported[sid] = (content, events)
            del rows
            for sid in chunk:
                if windows.get(sid, (0, 0))[1] > EXPORT_BATCH_MAX_BYTES:
                    buf = io.BytesIO()
                    totals = self.export_transcript(sid, buf)
                    yield sid, buf.getvalue(), totals
                    continue
                content, events = exported.get(sid, (b"", 0))
                yield (
                    sid,
                    content,
                    SessionTotals(
                        events=events,
                        bytes=len(content) - events,
                        token_estimate=windows.get(sid, (0, 0))[0] or 0,
                    ),
                )

    # ---- transcripts: writes -----------------------------------------------------------------------
    def append_events(
        self,
        session_id: str,
        raw_lines: Iterable[str | bytes],
        *,
        session_key: str,
        created_at_ms: int | None = None,
        cwd: str | None = None,
    ) -> int:
        """Append raw JSONL lines (stored byte-exact) at MAX(seq)+1. Lines whose `id` is already
        stored for the session, and id-less lines identical to a stored one, are skipped. A session
        without events starts with a `type:"session"` header (written when the first line is not
        one). Returns the number of lines inserted."""
        self.ensure_writable("append transcript events")
        if not isinstance(session_id, str) or not is_valid_legacy_session_id(session_id):
            raise InvalidIdError(f"Invalid session ID: {session_id}")
        prepared: list[tuple[str, int, dict[str, Any]]] = []
        for index, raw in enumerate(raw_lines, start=1):
            try:
                item = prepare_line(raw)
            except (ValueError, orjson.JSONDecodeError) as exc:
                raise InvalidDataError(
                    f"Transcript line {index} for session {session_id} is invalid: {exc}"
                ) from None
            if item is not None:
                prepared.append(item)
        stamp = now_ms()
        with self.transaction() as conn:
            return self._append_prepared(conn, session_id, session_key, prepared, created_at_ms, stamp, cwd)

    def _append_prepared(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        session_key: str,
        prepared: list[tuple[str, int, dict[str, Any]]],
        created_at_ms: int | None,
        stamp: int,
        cwd: str | None,
        *,
        previous: str | None = None,
        reason: str | None = None,
    ) -> int:
        if not prepared:
            return 0
        base_ms = created_at_ms if created_at_ms is not None else stamp
        conn.execute(
            _WINDOW_INSERT_IF_ABSENT,
            (session_id, session_key, previous, reason, base_ms, base_ms, None, None, None, None),
        )
        last = conn.execute(
            "SELECT max(seq) FROM transcript_events WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        if last is None and prepared[0][2].get("type") != "session":
            header = {
                "type": "session",
                "version": 4,
                "id": session_id,
                "timestamp": iso_ms(base_ms),
                "cwd": cwd if cwd is not None else str(Path.cwd()),
            }
            data = orjson.dumps(header)
            prepared = [(data.decode("utf-8"), len(data), header), *prepared]
        seq = -1 if last is None else last
        seen_ids: set[str] = set()
        seen_texts: set[str] = set()
        events: list[tuple[Any, ...]] = []
        identities: list[tuple[Any, ...]] = []
        nbytes = tokens = compactions = 0
        newest = base_ms
        for text, size, obj in prepared:
            event_id = obj.get("id")
            event_id = event_id if isinstance(event_id, str) and event_id.strip() else None
            if event_id is not None:
                if (
                    event_id in seen_ids
                    or conn.execute(
                        "SELECT 1 FROM transcript_event_identities WHERE session_id = ? AND event_id = ?",
                        (session_id, event_id),
                    ).fetchone()
                ):
                    continue
                seen_ids.add(event_id)
            else:
                # id-less lines (pre-v3 files, foreign tools): an exact duplicate is a retried append
                if text in seen_texts or (
                    last is not None
                    and conn.execute(
                        "SELECT 1 FROM transcript_events WHERE session_id = ? AND event_json = ?",
                        (session_id, text),
                    ).fetchone()
                ):
                    continue
                seen_texts.add(text)
            seq += 1
            kind = _text(obj.get("type"))
            created = timestamp_ms(obj.get("timestamp"))
            created = created if created is not None else base_ms
            newest = max(newest, created)
            events.append((session_id, seq, created, size, kind, text))
            if event_id is not None:
                parent = _text(obj.get("parentId"))
                identities.append((session_id, event_id, seq, kind, parent, created))
            nbytes += size
            tokens += event_token_estimate(obj)
            compactions += kind == "compaction"
        if events:
            conn.executemany(_EVENT_INSERT, events)
            conn.executemany(_IDENTITY_INSERT, identities)
            conn.execute(
                _WINDOW_ADD_TOTALS, (len(events), nbytes, tokens, compactions, newest, stamp, session_id)
            )
        return len(events)

    def create_window(
        self,
        session_key: str,
        session_id: str,
        *,
        previous_session_id: str | None = None,
        reason: str = "compaction",
        raw_lines: Iterable[str | bytes] = (),
        entry: dict[str, Any] | None = None,
        created_at_ms: int | None = None,
        cwd: str | None = None,
    ) -> int:
        """Create a successor session window (spec D16: reason `compaction`) holding `raw_lines`
        (a header is written first when missing) and, when `entry` is given, repoint the entry to
        it — all in one transaction, so a crash leaves either the old or the new state. The
        previous window and its events stay readable. Returns the number of events inserted."""
        self.ensure_writable("create a session window")
        if not is_valid_legacy_session_id(session_id):
            raise InvalidIdError(f"Invalid session ID: {session_id}")
        if reason not in schema_mod.WINDOW_REASONS:
            raise InvalidDataError(f"Invalid session window reason: {reason}")
        if entry is not None and entry.get("sessionId") != session_id:
            raise InvalidDataError(
                f"Entry for {session_key} must have sessionId {session_id} to point at the new window"
            )
        prepared: list[tuple[str, int, dict[str, Any]]] = []
        for index, raw in enumerate(raw_lines, start=1):
            try:
                item = prepare_line(raw)
            except (ValueError, orjson.JSONDecodeError) as exc:
                raise InvalidDataError(
                    f"Transcript line {index} for session {session_id} is invalid: {exc}"
                ) from None
            if item is not None:
                prepared.append(item)
        stamp = now_ms()
        base_ms = created_at_ms if created_at_ms is not None else stamp
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM session_windows WHERE session_id = ?", (session_id,)).fetchone():
                raise RefusedError(f"Session window {session_id} already exists")
            conn.execute(
                f"INSERT INTO session_windows({_WINDOW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    session_id,
                    session_key,
                    previous_session_id,
                    reason,
                    base_ms,
                    base_ms,
                    None,
                    None,
                    None,
                    None,
                ),
            )
            inserted = self._append_prepared(conn, session_id, session_key, prepared, base_ms, stamp, cwd)
            if entry is not None:
                self.upsert_entries({session_key: entry})
        return inserted

    def replace_events(self, session_id: str, raw_lines: Iterable[str | bytes], *, session_key: str) -> int:
        """The window `session_id` keeps its id and holds exactly `raw_lines` from seq 0 (OpenClaw
        2026.9.6's `compact --max-lines`: the session keeps its id); its totals are recounted. One
        transaction; the caller archived the previous lines first (D15)."""
        self.ensure_writable("rewrite transcript events")
        prepared: list[tuple[str, int, dict[str, Any]]] = []
        for index, raw in enumerate(raw_lines, start=1):
            try:
                item = prepare_line(raw)
            except (ValueError, orjson.JSONDecodeError) as exc:
                raise InvalidDataError(
                    f"Transcript line {index} for session {session_id} is invalid: {exc}"
                ) from None
            if item is not None:
                prepared.append(item)
        stamp = now_ms()
        with self.transaction() as conn:
            for table in ("transcript_event_identities", "transcript_events"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE session_windows SET event_count = 0, event_bytes = 0, token_estimate = 0, "
                "compaction_count = 0 WHERE session_id = ?",
                (session_id,),
            )
            return self._append_prepared(conn, session_id, session_key, prepared, None, stamp, None)

    def drop_session_events(
        self, session_ids: Iterable[str], *, expected: Mapping[str, SessionTotals] | None = None
    ) -> list[str]:
        """Delete the events, identities and window rows of sessions that no entry references.
        Only call this after a verified archive of each session exists (spec D6.2). With
        `expected` (the totals `export_transcript` returned), a session whose totals changed since
        (a concurrent append) is kept. Returns the session ids actually dropped."""
        self.ensure_writable("delete transcript events")
        dropped: list[str] = []
        sids = list(dict.fromkeys(session_ids))
        with self.transaction() as conn:
            # set-based, 500 ids a statement (a 15,000-session cleanup ran 5 statements per session)
            for start in range(0, len(sids), 500):
                chunk = sids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                referenced = {
                    row[0]
                    for row in conn.execute(
                        f"SELECT current_session_id FROM session_nodes WHERE current_session_id IN ({marks})",
                        chunk,
                    )
                }
                totals = {
                    row[0]: (row[1], row[2])
                    for row in conn.execute(
                        f"SELECT session_id, event_count, event_bytes FROM session_windows WHERE session_id IN ({marks})",
                        chunk,
                    )
                }
                gone: list[str] = []
                for sid in chunk:
                    if sid in referenced:
                        continue
                    if expected is not None and sid in expected:
                        want = expected[sid]
                        if totals.get(sid, (0, 0)) != (want.events, want.bytes):
                            continue
                    gone.append(sid)
                if not gone:
                    continue
                marks = ",".join("?" * len(gone))
                for table in ("transcript_event_identities", "transcript_events", "session_windows"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", gone)
                dropped.extend(gone)
        return dropped

    def record_archive(
        self,
        *,
        archive_name: str,
        session_id: str,
        session_key: str | None,
        reason: str,
        encoding: str,
        sha256: str,
        archive_bytes: int,
        event_count: int,
        raw_bytes: int,
        created_at_ms: int | None = None,
    ) -> None:
        """Remember an archive file written for a session (use inside `transaction()` together with
        `drop_session_events` so the record and the deletion commit together)."""
        self.ensure_writable("record a transcript archive")
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO session_transcript_archives(archive_name, session_id, session_key, reason,"
                " encoding, archive_sha256, archive_bytes, event_count, raw_bytes, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    archive_name,
                    session_id,
                    session_key,
                    reason,
                    encoding,
                    sha256,
                    archive_bytes,
                    event_count,
                    raw_bytes,
                    created_at_ms if created_at_ms is not None else now_ms(),
                ),
            )

    def record_archives(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """`record_archive` for many archives: rows of (archive_name, session_id, session_key,
        reason, encoding, sha256, archive_bytes, event_count, raw_bytes, created_at_ms), inserted in
        their order, `_RECORD_ROWS` a statement (issue 30: a cleanup's removals recorded 6,736
        archives a row at a time, ~30K instructions each; -6.5K with 99 rows a statement)."""
        self.ensure_writable("record transcript archives")
        rows = list(rows)
        with self.transaction() as conn:
            for start in range(0, len(rows), _RECORD_ROWS):
                chunk = rows[start : start + _RECORD_ROWS]
                conn.execute(
                    _RECORD_ARCHIVES + ",".join(["(?,?,?,?,?,?,?,?,?,?)"] * len(chunk)),
                    [value for row in chunk for value in row],
                )

    # ---- bulk import (migration) -------------------------------------------------------------------
    def bulk_import(
        self,
        records: Iterable[ImportRecord],
        *,
        batch_records: int = 256,
        batch_rows: int = 4000,
        on_malformed: MalformedPolicy = "stop",
        private_build: bool = False,
        on_result: Callable[[ImportRecordResult], None] | None = None,
        expected_records: int | None = None,
        rows_at_end: Callable[[], str | None] | None = None,
    ) -> BulkImportResult:
        """Insert many entries and their raw lines, committing every `batch_records` records or
        `batch_rows` rows (WAL + synchronous=NORMAL: no fsync per commit). Idempotent: an existing
        entry is kept as is; a session whose stored events are a prefix of the incoming lines gets
        only the rest; a session whose history diverged gets the lines whose id (or exact text)
        is not stored yet. Never deletes or truncates anything.

        `on_malformed`: "quarantine" keeps a malformed line in place as a quarantined raw line
        (store/quarantine.py) and goes on (spec D22, the migration's policy); "stop" keeps the readable prefix of a session and reports an issue (what
        OpenClaw's import does), "skip" drops just the bad line, "raise" aborts (the current batch
        is rolled back; committed batches stay and a re-run completes them).

        `private_build`: the database is an import's private build (spec D22) that no other
        process opens and that is discarded, never resumed, when the import stops early: no sync
        per commit or checkpoint, a larger page cache (fewer pages spilled and written again), and
        commits per `PRIVATE_BUILD_COMMIT_BYTES` of rows instead of per batch, each checkpointed;
        the file is fsynced once before this returns. Into an empty build, the rows go in under a
        rollback journal (each page written once; it is WAL again, as published, when this returns)
        and the secondary indexes of the session tables are created after the rows.

        `on_result`: each record's result is handed to it as the record is imported, instead of
        being kept in the returned `records` (an import of 100,000 sessions keeps what it needs).
        `expected_records`: how many records come (a private build's page cache is sized by it).
        `rows_at_end`: called once the records are exhausted; the rows file it names (prepared rows
        written ahead, `PreparedLines.rows`) is copied in like each record's `copy_first`."""
        self.ensure_writable("import sessions")
        if self._depth:
            raise RefusedError("bulk_import commits in batches and cannot run inside transaction()")
        result = BulkImportResult()
        state = _BulkState(self, batch_records, batch_rows)
        self._writer_pool = None  # its pragmas change for the import: closed, never kept for reuse
        with self._lock:
            conn = self._db()
            conn.execute(
                f"PRAGMA wal_autocheckpoint = {1 if private_build else schema_mod.BULK_WAL_AUTOCHECKPOINT}"
            )
            if private_build:
                self._private_build_mode(conn, True, cache_kib=private_build_cache_kib(expected_records))
                state.commit_bytes = PRIVATE_BUILD_COMMIT_BYTES
            deferred = _drop_secondary_indexes(conn) if private_build and state.fast else []
            try:
                for record in records:
                    state.begin()
                    res = state.import_one(record, on_malformed)
                    if on_result is None:
                        result.records.append(res)
                    else:
                        on_result(res)
                    state.records += 1
                    state.maybe_commit()
                last = rows_at_end() if rows_at_end is not None else None
                if last is not None:
                    state.copy_rows(last)
                state.commit()
                if deferred:  # built once from the sorted rows: cheaper than kept up per insert
                    # the rows are committed: the build's large page cache is given back first, and
                    # each index's sorter (whose memory SQLite bounds by the cache size) works within
                    # the default cache too — at 100,000 sessions the 8 MiB cache and an 8 MiB sorter
                    # on top of it were the import's peak RSS (issue 30)
                    conn.execute(f"PRAGMA cache_size = {DEFAULT_CACHE_SIZE}")
                    conn.execute("BEGIN IMMEDIATE")
                    for sql in deferred:
                        conn.execute(sql)
                    conn.execute("COMMIT")
            except BaseException as exc:
                try:
                    state.rollback()
                except sqlite3.Error:
                    pass  # a full disk can fail the rollback's journal work too: SQLite rolls back on close
                if isinstance(exc, sqlite3.Error):
                    raise translate_error(exc, self.path, self.busy_timeout_ms, writing=True) from None
                raise
            finally:
                conn.execute(f"PRAGMA wal_autocheckpoint = {schema_mod.WAL_AUTOCHECKPOINT}")
            if private_build:
                self._private_build_mode(conn, False)
        return result

    def _private_build_mode(
        self, conn: sqlite3.Connection, on: bool, cache_kib: int = PRIVATE_BUILD_CACHE_KIB
    ) -> None:
        try:
            if on:
                conn.execute("PRAGMA synchronous = OFF")
                conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
                # a rollback journal: each page is written once, into the database (WAL writes
                # every page twice: into the WAL, then by the checkpoint); no reader, no resume.
                # Best effort: a connection we do not know of keeps it in WAL, as before.
                try:
                    conn.execute("PRAGMA journal_mode = DELETE")
                except sqlite3.Error:
                    pass
                return
            conn.execute(f"PRAGMA cache_size = {DEFAULT_CACHE_SIZE}")
            conn.execute("PRAGMA journal_mode = WAL")  # what it is published as (and was created as)
            conn.execute("PRAGMA synchronous = NORMAL")  # the closing checkpoint syncs the WAL's rest
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms, writing=True) from None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)  # once, for every page the build wrote
        finally:
            os.close(fd)

    # ---- archives & stats --------------------------------------------------------------------------
    def list_archives(self) -> list[ArchiveFile]:
        files = list_archive_files(self.sessions_dir)
        rows = self._q(
            lambda c: c.execute("SELECT archive_name, session_id FROM session_transcript_archives").fetchall()
        )
        known = dict(rows)
        for item in files:
            if item.session_id is None and item.path.name in known:
                item.session_id = known[item.path.name]
        return files

    def stats(self, *, count_issues: bool = True) -> StoreStats:
        def run(c: sqlite3.Connection) -> tuple[Any, ...]:
            with self._snapshot():
                sessions = c.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
                windows, events, nbytes, compactions, tokens = c.execute(
                    "SELECT count(*), coalesce(sum(event_count), 0), coalesce(sum(event_bytes), 0),"
                    " coalesce(sum(compaction_count), 0), coalesce(sum(token_estimate), 0) FROM session_windows"
                ).fetchone()
                entry_bytes = c.execute("SELECT coalesce(sum(entry_bytes), 0) FROM session_nodes").fetchone()[
                    0
                ]
            return sessions, windows, events, nbytes, compactions, tokens, entry_bytes

        sessions, windows, events, nbytes, compactions, tokens, entry_bytes = self._q(run)
        archives = self.list_archives()
        wal = Path(f"{self.path}-wal")
        return StoreStats(
            sessions=sessions,
            transcript_bytes=nbytes,
            transcript_events=events,
            archives_count=len(archives),
            archives_bytes=sum(a.size for a in archives),
            compactions=compactions,
            extra={
                "windows": windows,
                "entryBytes": entry_bytes,
                "tokenEstimate": tokens,
                "dbSizeBytes": self.path.stat().st_size if self.path.exists() else 0,
                "walSizeBytes": wal.stat().st_size if wal.exists() else 0,
                "schemaVersion": self._q(schema_mod.schema_version),
            },
        )


# The tables whose secondary indexes a fresh private build creates after its rows (the primary keys
# stay: the gathered import relies on them).
_DEFERRED_INDEX_TABLES = ("session_nodes", "session_windows")


def _drop_secondary_indexes(conn: sqlite3.Connection) -> list[str]:
    """Drop the explicit indexes of the session tables of an empty private build; returns their
    `CREATE INDEX` statements (as stored in the schema), to be run again once the rows are in."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        f" AND tbl_name IN ({', '.join('?' for _ in _DEFERRED_INDEX_TABLES)}) ORDER BY rowid",
        _DEFERRED_INDEX_TABLES,
    ).fetchall()
    for name, _sql in rows:
        conn.execute(f'DROP INDEX "{name}"')
    return [sql for _name, sql in rows]


_NODE_BYTES = 14  # entry_bytes in a `node_row`


class _BulkState:
    """Batching for `SqliteStore.bulk_import`: one open transaction, rows flushed with executemany.

    Into a store that held no session at the start (a fresh import), rows of many sessions are
    gathered and written with one executemany per table per batch: no per-session statement (a
    20,000-session import ran 5 execute + 2 executemany per session). A key or session id seen
    twice takes the general path (which reads what is stored) after the gathered rows are written."""

    def __init__(self, store: SqliteStore, batch_records: int, batch_rows: int):
        bind_none_as_null()
        self.store = store
        self._conn = store._db()
        # a rows file being copied in its own thread (`copy_rows`), and what that copy raised
        self._copying: threading.Thread | None = None
        self._copy_failed: BaseException | None = None
        self._carried = False  # the counters already count toward the transaction after the copy
        self.batch_records = max(1, batch_records)
        self.batch_rows = max(1, batch_rows)
        self.records = 0
        self.rows = 0
        self.bytes = 0  # JSON bytes (+ a per-row allowance) written since the last commit
        self.commit_bytes: int | None = None  # set: commit by bytes only (a private build)
        self.stamp = now_ms()
        self.fast = (
            self.conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM session_nodes) AND NOT EXISTS (SELECT 1 FROM session_windows)"
            ).fetchone()[0]
            == 1
        )
        # fast mode: keys and session ids written by this run — but those of records whose rows
        # came prepared: the caller prepares rows only for a key and id no other record of the run
        # names (`ImportRecord.prepared`; the import's `_parser_jobs`), and at 100,000 sessions the
        # two sets were 8 MiB of the import's peak. Were that broken, the events' primary key or the
        # import's verification would refuse the result, never keep it silently.
        self.keys: set[str] = set()
        self.sids: set[str] = set()
        self.nodes: list[tuple[Any, ...]] = []
        self.windows: list[tuple[Any, ...]] = []
        self.nodes_at: list[tuple[Any, ...]] = []  # rows of records with a `rowid`: (rowid, *row)
        self.windows_at: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.identities: list[tuple[Any, ...]] = []
        self.gathered_bytes = 0

    @property
    def conn(self) -> sqlite3.Connection:
        """The write connection, once a rows file's copy in flight (`copy_rows`) has ended."""
        if self._copying is not None:
            self.join_copy()
        return self._conn

    def join_copy(self) -> None:
        """Wait for the rows file's copy in flight, if any; what it raised is raised here."""
        copying = self._copying
        if copying is None:
            return
        copying.join()
        self._copying = None
        failed, self._copy_failed = self._copy_failed, None
        if failed is not None:
            raise failed

    def begin(self) -> None:
        copying = self._copying
        if copying is not None:
            if copying.is_alive():
                return  # the copy's transaction: what comes meanwhile is written after it
            self.join_copy()
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN IMMEDIATE")
            if self._carried:  # counted since the copy began, toward this transaction
                self._carried = False
            else:
                self.records = self.rows = self.bytes = 0

    def write_gathered(self) -> None:
        if not (self.nodes or self.windows or self.events or self.nodes_at or self.windows_at):
            return
        conn = self.conn
        self.begin()
        if self.nodes:
            conn.executemany(_NODE_INSERT_IF_ABSENT, self.nodes)
        if self.nodes_at:
            conn.executemany(_NODE_INSERT_AT_IF_ABSENT, self.nodes_at)
            self.nodes_at = []
        if self.windows:
            conn.executemany(_WINDOW_INSERT_WITH_TOTALS, self.windows)
        if self.windows_at:
            conn.executemany(_WINDOW_INSERT_AT_WITH_TOTALS, self.windows_at)
            self.windows_at = []
        if self.events:
            conn.executemany(_EVENT_INSERT, self.events)
        if self.identities:
            conn.executemany(_IDENTITY_INSERT, self.identities)
        self.nodes, self.windows, self.events, self.identities = [], [], [], []
        self.gathered_bytes = 0

    def commit(self) -> None:
        self.write_gathered()
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def copy_rows(self, path: str) -> None:
        """Copy a closed rows file of the import's parser process (`parser_process.RowsFiles`) in
        one `INSERT ... SELECT` per table, in its row order, commit, and remove the file — in a
        thread of its own (`_copy_file`: SQLite copies without the GIL) while this thread goes on
        with the next records. The parser used to idle through each copy, its window of jobs done
        long before (issue 30: ~0.3-0.5 s of *many*'s bulk). The rows gathered so far are written
        first (the batch starts empty: the next write, which waits for the copy, comes as late as
        it can). Nothing else uses the connection meanwhile: `conn` waits for the copy first; a
        failed copy is raised there (the import fails, the private build is discarded)."""
        self.write_gathered()  # (a previous copy has ended: `conn`)
        conn = self.conn
        self.begin()
        self.records = self.rows = self.bytes = 0  # the copy commits: what follows counts toward the next
        self._carried = True
        thread = threading.Thread(target=self._copy_file, args=(conn, path), name="rows-copy", daemon=True)
        self._copying = thread
        thread.start()

    def _copy_file(self, conn: sqlite3.Connection, path: str) -> None:
        """`copy_rows`' thread: the copy, its commit and the file's removal (an attached file can be
        detached only outside the transaction that read it)."""
        try:
            conn.execute("ATTACH DATABASE ? AS parsed_rows", (path,))
            try:
                conn.execute(_EVENT_COPY)
                conn.execute(_IDENTITY_COPY)
                conn.execute(_NODE_COPY)
                conn.execute(_WINDOW_COPY)
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")  # a failed copy: the import fails, the build is discarded
                conn.execute("DETACH DATABASE parsed_rows")
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        except BaseException as exc:  # noqa: BLE001 - raised in the importing thread (`join_copy`)
            self._copy_failed = exc

    def add_window(self, row: tuple[Any, ...], record: ImportRecord) -> None:
        """A gathered window row (with its totals), at the record's `rowid` when it has one."""
        if record.rowid is None:
            self.windows.append(row)
        else:
            self.windows_at.append((record.rowid, *row))

    def rollback(self) -> None:
        self.nodes, self.windows, self.events, self.identities = [], [], [], []
        self.nodes_at, self.windows_at = [], []
        try:
            self.join_copy()  # never left copying behind a failure
        except Exception:  # noqa: BLE001 - the run already fails with its own error
            pass
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def maybe_commit(self) -> None:
        if self.commit_bytes is not None:
            if self.bytes >= self.commit_bytes:
                self.commit()
        elif self.records >= self.batch_records or self.rows >= self.batch_rows:
            self.commit()

    def import_one(self, record: ImportRecord, on_malformed: MalformedPolicy) -> ImportRecordResult:
        entry = record.entry
        key = record.session_key
        if not isinstance(key, str) or not key.strip():
            raise InvalidDataError(f"Invalid session key: {key!r}")
        if entry is not None and not isinstance(entry, dict):
            raise InvalidDataError(f"Session entry for {key} is not a JSON object")
        sid = record.session_id if record.session_id is not None else (entry or {}).get("sessionId")
        out = ImportRecordResult(key, sid if isinstance(sid, str) else None, False, False)
        valid_sid = isinstance(sid, str) and is_valid_legacy_session_id(sid)
        prepared = record.prepared
        if prepared is not None and prepared.copy_first is not None:
            self.copy_rows(prepared.copy_first)  # earlier records' rows, written ahead
        if prepared is not None and prepared.written >= 0:
            self._take_written(out, record, prepared, valid_sid)
            return out
        window = prepared.window if prepared is not None else None  # set: the entry's rows came too
        node = prepared.node if prepared is not None and window is not None else None
        if window is not None and entry is not None:
            raise RuntimeError(f"an entry and its rows prepared ahead for {key}: one or the other")
        fast = (
            self.fast
            and ((entry is None and node is None) or key not in self.keys)
            and (not valid_sid or sid not in self.sids)
        )
        if not fast and prepared is not None:
            raise RuntimeError(f"rows prepared ahead for {key}, which the gathered import cannot take")
        if not fast and self.fast:
            self.write_gathered()  # the general path reads what is stored
        if not fast:
            self.join_copy()  # the general path reads and writes here: a rows file's copy ended first
            self.begin()
        conn = self._conn
        rowid = record.rowid
        if node is not None:  # the parser's `node_row`: the entry inserted as the store would
            self.bytes += node[_NODE_BYTES] + ROW_OVERHEAD_BYTES
            if rowid is None:
                self.nodes.append(node)
            else:
                self.nodes_at.append((rowid, *node))
            out.entry_inserted = True
        elif entry is not None:
            data = (
                record.entry_text.encode("utf-8") if record.entry_text is not None else _encode_entry(entry)
            )
            self.bytes += len(data) + ROW_OVERHEAD_BYTES
            if fast:
                if rowid is None:
                    self.nodes.append(_node_row(key, entry, data))
                else:
                    self.nodes_at.append((rowid, *_node_row(key, entry, data)))
                self.keys.add(key)
                inserted = 1
            elif rowid is None:
                inserted = conn.execute(_NODE_INSERT_IF_ABSENT, _node_row(key, entry, data)).rowcount
            else:
                inserted = conn.execute(
                    _NODE_INSERT_AT_IF_ABSENT, (rowid, *_node_row(key, entry, data))
                ).rowcount
            out.entry_inserted = inserted == 1
            out.entry_existing = inserted != 1
        if not valid_sid:
            if record.lines:
                out.issue = ReadIssue(
                    record.source or key, None, f"invalid session id {sid!r}: transcript not imported"
                )
            return out
        assert isinstance(sid, str)
        fallback = record.created_at_ms if record.created_at_ms is not None else self.stamp
        if window is None:
            window = _window_row(sid, key, entry, fallback_ms=fallback)
        if fast:
            if prepared is not None:
                self._gather_prepared(out, record, prepared, window, fallback)
            else:
                self.sids.add(sid)
                self._gather_inline(out, record, sid, window, fallback, on_malformed)
            return out
        existing = conn.execute(
            "SELECT event_count FROM session_windows WHERE session_id = ?", (sid,)
        ).fetchone()
        if existing is None:
            if rowid is None:
                conn.execute(_WINDOW_INSERT_IF_ABSENT, window)
            else:
                conn.execute(_WINDOW_INSERT_AT_IF_ABSENT, (rowid, *window))
        stored_count = existing[0] if existing else 0
        _SessionImport(
            self, out, sid, record, fallback, stored_count, on_malformed, new_window=existing is None
        ).run()
        return out

    def _gather_inline(
        self,
        out: ImportRecordResult,
        record: ImportRecord,
        sid: str,
        window: tuple[Any, ...],
        fallback_ms: int,
        policy: MalformedPolicy,
    ) -> None:
        """What `_SessionImport(..., window=window).run()` does with the lines of a record read in
        this process, without an object per record (issue 30: ~8 us of a 20,000-session import's
        per-record plumbing): `gather_lines` hands each chunk to the batch as `flush` adds it, then
        the window row is built as `_gather_window` builds it."""
        # first created, newest, events, bytes, tokens, compactions (the record's totals)
        acc: list[Any] = [None, fallback_ms, 0, 0, 0, 0]
        events_out, identities_out = self.events, self.identities
        batch_rows = self.batch_rows

        def hand_over(
            events: list[tuple[Any, ...]],
            identities: list[tuple[Any, ...]],
            _seq: int,
            newest: int,
            nbytes: int,
            tokens: int,
            compactions: int,
        ) -> None:
            nonlocal events_out, identities_out
            acc[1] = newest
            if not events:
                return
            if acc[0] is None:
                acc[0] = events[0][2]
            n = len(events)
            events_out.extend(events)
            identities_out.extend(identities)
            acc[2] += n
            acc[3] += nbytes
            acc[4] += tokens
            acc[5] += compactions
            self.rows += n
            self.bytes += nbytes + ROW_OVERHEAD_BYTES * n
            self.gathered_bytes += nbytes
            if len(events_out) >= batch_rows or self.gathered_bytes >= GATHER_BYTES:
                self.write_gathered()  # bounded memory; committed between records only
                events_out, identities_out = self.events, self.identities  # the batch's new lists

        gather_lines(
            out,
            sid,
            record.lines,
            source=record.source or record.session_key,
            policy=policy,
            seq=0,
            newest=fallback_ms,
            limit_rows=batch_rows,
            hand_over=hand_over,
        )
        first_created, newest, total_events, total_bytes, total_tokens, total_compactions = acc
        out.events_inserted += total_events
        out.bytes_inserted += total_bytes
        totals = (total_events, total_bytes, total_tokens, total_compactions)
        self.add_window(_imported_window(window, record, self.stamp, first_created, newest, totals), record)

    def _take_written(
        self, out: ImportRecordResult, record: ImportRecord, prepared: PreparedLines, valid_sid: bool
    ) -> None:
        """A record whose rows the import's parser wrote whole into its rows file — transcript
        rows, window and entry (`PreparedLines.written`) — copied with that file: only its counts
        are taken here, nothing is held or bound per record (issue 30)."""
        if record.entry is not None or prepared.rows is None:
            raise RuntimeError(
                f"an entry and its rows prepared ahead for {record.session_key}: one or the other"
            )
        written = prepared.written
        if not (
            self.fast
            and valid_sid
            and (not written or record.session_key not in self.keys)
            and record.session_id not in self.sids
        ):
            raise RuntimeError(
                f"rows prepared ahead for {record.session_key}, which the gathered import cannot take"
            )
        if written:
            self.bytes += written + ROW_OVERHEAD_BYTES
            out.entry_inserted = True
        _file, _first, _newest, events, nbytes, _tokens, _compactions = prepared.rows
        self.rows += events
        self.bytes += nbytes + ROW_OVERHEAD_BYTES * events
        out.events_inserted += events
        out.bytes_inserted += nbytes
        out.lines_read += prepared.lines_read
        out.quarantined += prepared.quarantined
        if out.issue is None:
            out.issue = prepared.issue

    def _gather_prepared(
        self,
        out: ImportRecordResult,
        record: ImportRecord,
        prepared: PreparedLines,
        window: tuple[Any, ...],
        fallback_ms: int,
    ) -> None:
        """What `_SessionImport(..., window=window).run()` does with rows computed ahead (the import's
        parser process), without an object per record: each chunk joins the batch as `flush`
        adds it (the batch written at the same sizes), then the window row with the totals as
        `_gather_window` builds it."""
        first_created: int | None = None
        newest = fallback_ms
        total_events = total_bytes = total_tokens = total_compactions = 0
        if prepared.rows is not None:  # written ahead into a rows file: only the totals come
            _file, first_created, newest, total_events, total_bytes, total_tokens, total_compactions = (
                prepared.rows
            )
            self.rows += total_events
            self.bytes += total_bytes + ROW_OVERHEAD_BYTES * total_events
        for chunk in prepared.chunks:
            events, identities, _seq, newest, nbytes, tokens, compactions = chunk  # newest: the last chunk's
            if not events:
                continue
            if first_created is None:
                first_created = events[0][2]
            n = len(events)
            self.events.extend(events)
            self.identities.extend(identities)
            total_events += n
            total_bytes += nbytes
            total_tokens += tokens
            total_compactions += compactions
            self.rows += n
            self.bytes += nbytes + ROW_OVERHEAD_BYTES * n
            self.gathered_bytes += nbytes
            if len(self.events) >= self.batch_rows or self.gathered_bytes >= GATHER_BYTES:
                self.write_gathered()  # bounded memory; committed between records only
        out.events_inserted += total_events
        out.bytes_inserted += total_bytes
        out.lines_read += prepared.lines_read
        out.quarantined += prepared.quarantined
        if out.issue is None:
            out.issue = prepared.issue
        totals = (total_events, total_bytes, total_tokens, total_compactions)
        self.add_window(_imported_window(window, record, self.stamp, first_created, newest, totals), record)
        # a record whose rows went into a rows file hands over no chunk: its entry's bytes count
        # here, so the gathered entries and windows are written (bounded) whatever the share
        self.gathered_bytes += ROW_OVERHEAD_BYTES + (
            prepared.node[_NODE_BYTES] if prepared.node is not None else 0
        )
        if self.gathered_bytes >= GATHER_BYTES:
            self.write_gathered()  # bounded memory; committed between records only


def _imported_window(
    window: tuple[Any, ...],
    record: ImportRecord,
    stamp: int,
    first_created: int | None,
    newest: int,
    totals: tuple[int, int, int, int],
) -> tuple[Any, ...]:
    """A record's window row with what its lines added (`lines.window_with_totals`), the watermark
    the record's creation, else the import's."""
    watermark = record.created_at_ms if record.created_at_ms is not None else stamp
    return _window_with_totals(window, watermark, first_created, newest, totals)


class _SessionImport:
    """The lines of one record: prefix-resume or id-merge against what is stored, batched inserts."""

    def __init__(
        self,
        bulk: _BulkState,
        out: ImportRecordResult,
        sid: str,
        record: ImportRecord,
        fallback_ms: int,
        stored_count: int,
        on_malformed: MalformedPolicy,
        *,
        new_window: bool,
        window: tuple[Any, ...] | None = None,
    ):
        self.bulk = bulk
        # gathered mode (a fresh store): the window row is written once, totals included, with
        # the batch; its events join the batch's rows
        self.window = window
        self.first_created: int | None = None
        self.total_events = self.total_bytes = self.total_tokens = self.total_compactions = 0
        self.new_window = new_window  # its created_at becomes the first event's time (the header's)
        self.out = out
        self.sid = sid
        self.record = record
        self.fallback_ms = fallback_ms
        self.on_malformed = on_malformed
        self.stored: list[str] | None = None
        self.merge_ids: set[str] | None = None
        self.merge_texts: set[str] | None = None
        self.next_seq = 0
        if stored_count:
            conn = bulk.conn
            self.stored = [
                row[0]
                for row in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (sid,)
                )
            ]
            self.next_seq = (
                conn.execute(
                    "SELECT max(seq) FROM transcript_events WHERE session_id = ?", (sid,)
                ).fetchone()[0]
                + 1
            )
        self.events: list[tuple[Any, ...]] = []
        self.identities: list[tuple[Any, ...]] = []
        self.nbytes = self.tokens = self.compactions = 0
        self.newest = fallback_ms

    def _enter_merge(self) -> None:
        conn = self.bulk.conn
        self.merge_ids = {
            row[0]
            for row in conn.execute(
                "SELECT event_id FROM transcript_event_identities WHERE session_id = ?", (self.sid,)
            )
        }
        # nothing of this record is pending yet: appends start only after the stored prefix
        self.merge_texts = set(self.stored or ())

    def _malformed(
        self, raw: str | bytes, line_no: int, source: str, exc: BaseException
    ) -> tuple[str, int, Any] | None | Literal[False]:
        """A line `prepare_line` refused, under the record's policy (`lines.refused_line`)."""
        return refused_line(self.out, self.on_malformed, raw, line_no, source, exc)

    def run(self) -> None:
        if self.window is not None:
            self._run_gathered()
            return
        sid = self.sid
        position = 0  # index among non-blank lines, for the prefix comparison
        source = self.record.source or self.record.session_key
        for line_no, raw in enumerate(self.record.lines, start=1):
            item: tuple[str, int, Any] | Literal[False] | None
            try:
                item = prepare_line(raw, internal=False)
            except (ValueError, orjson.JSONDecodeError) as exc:
                item = self._malformed(raw, line_no, source, exc)
                if item is False:
                    break
            if item is None:
                continue
            self.out.lines_read += 1
            text, size, obj = item
            stored = self.stored
            if stored is not None and self.merge_ids is None:
                if position < len(stored):
                    position += 1
                    if stored[position - 1] == text:
                        self.out.events_existing += 1
                        continue
                    self._enter_merge()  # history diverged: fall back to id/text dedupe
                else:
                    position += 1
            event_id = obj.get("id") if obj is not QUARANTINED else None
            event_id = event_id if isinstance(event_id, str) and event_id.strip() else None
            if self.merge_ids is not None:
                if event_id is not None:
                    if event_id in self.merge_ids:
                        self.out.events_existing += 1
                        continue
                    self.merge_ids.add(event_id)
                else:
                    assert self.merge_texts is not None
                    if text in self.merge_texts:
                        self.out.events_existing += 1
                        continue
                    self.merge_texts.add(text)
            seq = self.next_seq
            self.next_seq += 1
            kind = obj.get("type")
            kind = kind if isinstance(kind, str) else None
            created = timestamp_ms(obj.get("timestamp"))
            if created is None:
                created = self.newest
            elif created > self.newest:
                self.newest = created
            self.events.append((sid, seq, created, size, kind, text))
            if event_id is not None:
                parent = obj.get("parentId")
                self.identities.append(
                    (sid, event_id, seq, kind, parent if isinstance(parent, str) else None, created)
                )
            self.nbytes += size
            if obj is not QUARANTINED:
                self.tokens += event_token_estimate(obj)
            if kind == "compaction":
                self.compactions += 1
            if len(self.events) >= self.bulk.batch_rows or self.nbytes >= GATHER_BYTES:
                self.flush()
        self.flush()

    def _run_gathered(self) -> None:
        """`run` for a session of a fresh store (nothing stored to compare with, no merge): the
        rows `lines.gather_lines` computes, here or ahead in the import's parser process
        (`record.prepared`, replayed chunk by chunk)."""
        prepared = self.record.prepared
        if prepared is None:
            gather_lines(
                self.out,
                self.sid,
                self.record.lines,
                source=self.record.source or self.record.session_key,
                policy=self.on_malformed,
                seq=self.next_seq,
                newest=self.newest,
                limit_rows=self.bulk.batch_rows,
                hand_over=self._hand_over,
            )
        else:
            for chunk in prepared.chunks:
                self._hand_over(*chunk)
            out = self.out
            out.lines_read += prepared.lines_read
            out.quarantined += prepared.quarantined
            if out.issue is None:
                out.issue = prepared.issue
        self._gather_window()

    def _hand_over(
        self,
        events: list[tuple[Any, ...]],
        identities: list[tuple[Any, ...]],
        seq: int,
        newest: int,
        nbytes: int,
        tokens: int,
        compactions: int,
    ) -> None:
        self.events, self.identities = events, identities
        self.next_seq, self.newest = seq, newest
        self.nbytes, self.tokens, self.compactions = nbytes, tokens, compactions
        self.flush()

    def _gather_window(self) -> None:
        assert self.window is not None
        totals = (self.total_events, self.total_bytes, self.total_tokens, self.total_compactions)
        row = _imported_window(
            self.window, self.record, self.bulk.stamp, self.first_created, self.newest, totals
        )
        self.bulk.add_window(row, self.record)

    def flush(self) -> None:
        if not self.events:
            return
        bulk = self.bulk
        if self.window is not None:
            if self.first_created is None:
                self.first_created = self.events[0][2]
            bulk.events.extend(self.events)
            bulk.identities.extend(self.identities)
            self.total_events += len(self.events)
            self.total_bytes += self.nbytes
            self.total_tokens += self.tokens
            self.total_compactions += self.compactions
            self.out.events_inserted += len(self.events)
            self.out.bytes_inserted += self.nbytes
            bulk.rows += len(self.events)
            bulk.bytes += self.nbytes + ROW_OVERHEAD_BYTES * len(self.events)
            self.events = []
            self.identities = []
            bulk.gathered_bytes += self.nbytes
            if len(bulk.events) >= bulk.batch_rows or bulk.gathered_bytes >= GATHER_BYTES:
                bulk.write_gathered()  # bounded memory; committed between records only
            self.nbytes = self.tokens = self.compactions = 0
            return
        conn = bulk.conn
        bulk.begin()
        conn.executemany(_EVENT_INSERT, self.events)
        if self.identities:
            conn.executemany(_IDENTITY_INSERT, self.identities)
        if self.new_window:
            conn.execute(
                "UPDATE session_windows SET created_at = ? WHERE session_id = ?",
                (self.events[0][2], self.sid),
            )
            self.new_window = False
        # An imported transcript's mutation watermark is its file's mtime (storage-migration §6.6
        # step 5, T-24), not the time of the import.
        watermark = self.record.created_at_ms if self.record.created_at_ms is not None else bulk.stamp
        conn.execute(
            _WINDOW_ADD_TOTALS,
            (len(self.events), self.nbytes, self.tokens, self.compactions, self.newest, watermark, self.sid),
        )
        self.out.events_inserted += len(self.events)
        self.out.bytes_inserted += self.nbytes
        bulk.rows += len(self.events)
        bulk.bytes += self.nbytes + ROW_OVERHEAD_BYTES * len(self.events)
        self.events = []
        self.identities = []
        self.nbytes = self.tokens = self.compactions = 0
        if bulk.rows >= bulk.batch_rows:
            bulk.commit()
            bulk.begin()
