"""Our SQLite schema (spec D4): OpenClaw's table and column names for what we store, our own additions
(per-session totals kept at write time), marked so a real OpenClaw refuses it cleanly:
`PRAGMA application_id = 0x4F43434C`, `PRAGMA user_version = 1000 + SCHEMA_VERSION`,
`schema_meta.app_version = 'openclaw-cli <version>'`.

Schema changes are named migrations recorded in `_openclaw_cli_migrations` (sqlite-utils'
`Migrations` idea, in a few lines of our own: see docs/decisions.md). Each migration runs in its own
`BEGIN IMMEDIATE` transaction and re-checks what is applied after taking the write lock, so two
processes opening a new database at the same time cannot both apply one.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from openclaw_cli import __version__
from openclaw_cli.errors import InvalidDataError, NotFoundError
from openclaw_cli.fsio import DIR_MODE, FILE_MODE, ensure_dir, fsync_dir
from openclaw_cli.store.sqlite_common import OUR_APPLICATION_ID, is_busy_error, now_ms, translate_error

USER_VERSION_BASE = 1000
MIGRATIONS_TABLE = "_openclaw_cli_migrations"
APP_VERSION = f"openclaw-cli {__version__}"
DEFAULT_BUSY_TIMEOUT_MS = 60000
PAGE_SIZE = 8192
WAL_AUTOCHECKPOINT = 1000  # SQLite's default, restored after a bulk import
BULK_WAL_AUTOCHECKPOINT = 10000  # fewer, larger checkpoints while importing (~7 % faster)

# Reasons a window may carry (OpenClaw's session_windows CHECK).
WINDOW_REASONS = ("initial", "reset", "rollover", "fork", "rewind", "switch", "recovery", "compaction")

# Small columns come before the JSON column in every wide table: SQLite stops reading a row at the
# last column a query needs, and the JSON spills into overflow pages (performance-limits.md §5).
_V1 = [
    """CREATE TABLE schema_meta (
  meta_key TEXT NOT NULL PRIMARY KEY,
  role TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  agent_id TEXT,
  app_version TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT""",
    # One row per session key. entry_json is the entry exactly as given (compact JSON, unknown
    # fields kept, spec D14); every other column is a projection derived from it. Numbers are
    # ANY so a float updatedAt is kept as it is.
    """CREATE TABLE session_nodes (
  session_key TEXT NOT NULL PRIMARY KEY,
  current_session_id TEXT,
  updated_at ANY,
  created_at ANY,
  status TEXT,
  parent_session_key TEXT,
  spawned_by TEXT,
  label TEXT,
  display_name TEXT,
  pinned_at ANY,
  archived_at ANY,
  last_read_at ANY,
  last_interaction_at ANY,
  last_activity_at ANY,
  entry_bytes INTEGER NOT NULL,
  entry_json TEXT NOT NULL
) STRICT""",
    # the listing sort key (performance-limits.md §5a: 180x faster than sorting 20k rows)
    "CREATE INDEX idx_agent_session_nodes_updated_at ON session_nodes(updated_at DESC, session_key)",
    "CREATE INDEX idx_agent_session_nodes_current_session_id ON session_nodes(current_session_id)",
    # One row per transcript generation. event_count / event_bytes / token_estimate /
    # compaction_count are ours: maintained in the same transaction as every event write, so
    # listing, status and disk budgets never scan transcript_events.
    """CREATE TABLE session_windows (
  session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL,
  previous_session_id TEXT,
  reason TEXT CHECK (reason IS NULL OR reason IN ('initial', 'reset', 'rollover', 'fork', 'rewind', 'switch', 'recovery', 'compaction')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  transcript_updated_at INTEGER,
  event_count INTEGER NOT NULL DEFAULT 0 CHECK (event_count >= 0),
  event_bytes INTEGER NOT NULL DEFAULT 0 CHECK (event_bytes >= 0),
  token_estimate INTEGER NOT NULL DEFAULT 0 CHECK (token_estimate >= 0),
  compaction_count INTEGER NOT NULL DEFAULT 0 CHECK (compaction_count >= 0),
  chat_type TEXT,
  channel TEXT,
  model_provider TEXT,
  model TEXT
) STRICT""",
    "CREATE INDEX idx_agent_session_windows_session_key ON session_windows(session_key, created_at DESC, session_id)",
    # One row per transcript line, header included (seq 0). event_json is the raw line text,
    # byte-exact, never re-serialised (spec D4/D14); event_utf8_bytes its UTF-8 length.
    """CREATE TABLE transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 0),
  created_at INTEGER NOT NULL,
  event_utf8_bytes INTEGER NOT NULL CHECK (event_utf8_bytes >= 0),
  event_type TEXT,
  event_json TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT""",
    # Lines with a non-blank `id` (the header's id is the sessionId): append dedupe and id lookups.
    # WITHOUT ROWID: narrow rows, one b-tree instead of table + PK index.
    """CREATE TABLE transcript_event_identities (
  session_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_type TEXT,
  parent_id TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, event_id)
) STRICT, WITHOUT ROWID""",
    # Archives we wrote as files (the file is the archive; the row records what went into it).
    r"""CREATE TABLE session_transcript_archives (
  archive_name TEXT NOT NULL PRIMARY KEY CHECK (archive_name NOT LIKE '%/%' AND archive_name NOT LIKE '%\%'),
  session_id TEXT NOT NULL,
  session_key TEXT,
  reason TEXT NOT NULL,
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'zstd')),
  archive_sha256 TEXT NOT NULL CHECK (length(archive_sha256) = 64),
  archive_bytes INTEGER NOT NULL,
  event_count INTEGER NOT NULL,
  raw_bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
) STRICT""",
    "CREATE INDEX idx_agent_session_transcript_archives_session ON session_transcript_archives(session_id)",
]


def _migration_0001_initial(conn: sqlite3.Connection, agent_id: str) -> None:
    for statement in _V1:
        conn.execute(statement)
    stamp = now_ms()
    conn.execute(
        "INSERT INTO schema_meta(meta_key, role, schema_version, agent_id, app_version, created_at, updated_at)"
        " VALUES ('primary', 'agent', 1, ?, ?, ?, ?)",
        (agent_id, APP_VERSION, stamp, stamp),
    )


def _migration_0002_label_index(conn: sqlite3.Connection, agent_id: str) -> None:
    # sessions.patch checks a label is unused (OpenClaw's uniqueness rule) on every label write:
    # without an index that is a full scan of session_nodes (~9 ms at 20k rows, the Gateway's
    # patch p99). Partial: most rows carry no label, and `label = ?` implies `label IS NOT NULL`.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_agent_session_nodes_label ON session_nodes(label)"
        " WHERE label IS NOT NULL"
    )


def _migration_0003_listing_indexes(conn: sqlite3.Connection, agent_id: str) -> None:
    # The Gateway's sessions.list counts the visible rows and names the pinned ones; every commit
    # (each sessions.patch) invalidates its cached count, and counting was a scan of the table
    # (~6-12 ms at 20k rows, per listing while patches run). With these two partial indexes the
    # count is count(*) minus the archived rows and the pinned rows are an index search. Partial:
    # a query for unarchived or unpinned rows (the listing page) never picks them, so the page
    # keeps walking the updated_at index.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_agent_session_nodes_archived ON session_nodes(archived_at)"
        " WHERE archived_at IS NOT NULL"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_agent_session_nodes_pinned ON session_nodes(pinned_at)"
        " WHERE pinned_at IS NOT NULL"
    )


# Append only; never edit an applied migration. SCHEMA_VERSION is the number of migrations.
MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection, str], None]]] = [
    ("0001_initial", _migration_0001_initial),
    ("0002_label_index", _migration_0002_label_index),
    ("0003_listing_indexes", _migration_0003_listing_indexes),
]
SCHEMA_VERSION = len(MIGRATIONS)
# The oldest schema a read-only open still reads as it is: migrations after it only add indexes,
# which reads do not need (they are applied by the next read-write open).
READABLE_SCHEMA_VERSION = 1
SCHEMA_LABEL = f"openclaw-cli {SCHEMA_VERSION}"


def configure(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Per-connection settings: busy_timeout = the write-lock acquire timeout (spec D12)."""
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA journal_size_limit = 67108864")


def _connect_file(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(
            str(path), isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
        )
        configure(conn, busy_timeout_ms)
    except sqlite3.Error as exc:
        raise translate_error(exc, path, busy_timeout_ms) from None
    return conn


def _ensure_wal(conn: sqlite3.Connection, path: Path, busy_timeout_ms: int) -> None:
    """Switch to WAL, retrying: the switch needs an exclusive lock and SQLite may report BUSY
    without calling the busy handler while other connections are opening the file."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.Error as exc:
            if not is_busy_error(exc) or time.monotonic() >= deadline:
                raise translate_error(exc, path, busy_timeout_ms) from None
            time.sleep(0.02)


def _create_database(path: Path, agent_id: str, busy_timeout_ms: int) -> None:
    """Build a new database in a private temp file (page size, WAL, every migration) and publish
    it with a hard link, which never overwrites: concurrent creators race only on the link, and
    no process ever opens a half-initialised file."""
    ensure_dir(path.parent, DIR_MODE)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    try:
        conn = _connect_file(tmp, busy_timeout_ms)
        try:
            # before the first write: ~2-4 KB transcript lines overflow 4 KiB pages (measured ~5 %
            # faster bulk import with 8 KiB pages on the 200 MB benchmark)
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            _ensure_wal(conn, tmp, busy_timeout_ms)
            ensure_schema(conn, tmp, agent_id, busy_timeout_ms=busy_timeout_ms, allow_fresh=True)
        finally:
            conn.close()  # the last connection checkpoints and removes the temp -wal/-shm
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process published first: use its database
        except OSError:
            if not path.exists():  # no hard links on this filesystem
                os.rename(tmp, path)
        fsync_dir(path.parent)
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def open_database(
    path: Path, agent_id: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, create: bool = False
) -> sqlite3.Connection:
    """A read-write connection to our database with the schema current; a missing database is
    created when `create` (0700 directory, 0600 files)."""
    if not path.exists():
        if not create:
            raise NotFoundError(f"Session database not found: {path}")
        _create_database(path, agent_id, busy_timeout_ms)
    conn = _connect_file(path, busy_timeout_ms)
    try:
        _ensure_wal(conn, path, busy_timeout_ms)
        ensure_schema(conn, path, agent_id, busy_timeout_ms=busy_timeout_ms, allow_fresh=create)
    except BaseException:
        conn.close()
        raise
    return conn


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MIGRATIONS_TABLE,)
    ).fetchone()
    if not exists:
        return []
    return [row[0] for row in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")]


def _pragmas(conn: sqlite3.Connection) -> tuple[int, int]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    return app_id, user_version


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone() is not None


def check_ours(conn: sqlite3.Connection, path: Path, *, allow_fresh: bool) -> bool:
    """Raise unless `conn` is our database (or a fresh empty one when allowed).
    Returns True when migrations are pending (see `schema_version` for which)."""
    # one read snapshot: another process may commit the initial migration between two
    # autocommit statements (seen as "no application_id, but tables")
    own_txn = not conn.in_transaction
    if own_txn:
        conn.execute("BEGIN")
    try:
        app_id, user_version = _pragmas(conn)
        fresh = app_id == 0 and user_version == 0 and not _has_tables(conn)
    finally:
        if own_txn and conn.in_transaction:
            conn.execute("COMMIT")
    if fresh:
        if allow_fresh:
            return True
        raise InvalidDataError(f"{path} is an empty SQLite database, not an openclaw-cli session store")
    if app_id != OUR_APPLICATION_ID:
        raise InvalidDataError(
            f"{path} is not an openclaw-cli session database (application_id {app_id:#x}, user_version {user_version})"
        )
    version = user_version - USER_VERSION_BASE
    if version > SCHEMA_VERSION:
        raise InvalidDataError(
            f"Session database {path} uses newer openclaw-cli schema version {version}; "
            f"this build supports {SCHEMA_VERSION}. Upgrade openclaw-cli.",
            type="unsupported_schema",
        )
    return version < SCHEMA_VERSION


def schema_version(conn: sqlite3.Connection) -> int:
    """Our schema version of a database `check_ours` accepted (0: fresh)."""
    return max(0, int(conn.execute("PRAGMA user_version").fetchone()[0]) - USER_VERSION_BASE)


def readable_as_is(conn: sqlite3.Connection) -> bool:
    """Whether a read-only open can read this (checked, maybe older) database without migrating."""
    return schema_version(conn) >= READABLE_SCHEMA_VERSION


def ensure_schema(
    conn: sqlite3.Connection, path: Path, agent_id: str, *, busy_timeout_ms: int, allow_fresh: bool
) -> None:
    """Apply pending migrations, one `BEGIN IMMEDIATE` transaction each; no-op (and no write) when
    the database is current."""
    if not check_ours(conn, path, allow_fresh=allow_fresh):
        return
    for index, (name, migrate) in enumerate(MIGRATIONS, start=1):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate_error(exc, path, busy_timeout_ms) from None
        try:
            # re-check under the write lock: another process may have applied it meanwhile
            if name in applied_migrations(conn):
                conn.execute("COMMIT")
                continue
            app_id, user_version = _pragmas(conn)
            if index > 1 and app_id != OUR_APPLICATION_ID:
                raise InvalidDataError(f"{path} is not an openclaw-cli session database")
            if index == 1 and _has_tables(conn) and app_id != OUR_APPLICATION_ID:
                raise InvalidDataError(f"{path} is not an openclaw-cli session database")
            if index == 1:
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} ("
                    "name TEXT NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL, app_version TEXT NOT NULL) STRICT"
                )
            migrate(conn, agent_id)
            stamp = now_ms()
            conn.execute(
                f"INSERT INTO {MIGRATIONS_TABLE}(name, applied_at, app_version) VALUES (?, ?, ?)",
                (name, stamp, APP_VERSION),
            )
            conn.execute(
                "UPDATE schema_meta SET schema_version = ?, app_version = ?, updated_at = ? "
                "WHERE meta_key = 'primary'",
                (index, APP_VERSION, stamp),
            )
            conn.execute(f"PRAGMA application_id = {OUR_APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {USER_VERSION_BASE + index}")
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise translate_error(exc, path, busy_timeout_ms) from None
            raise


def read_meta(conn: sqlite3.Connection) -> dict[str, object] | None:
    row = conn.execute(
        "SELECT role, schema_version, agent_id, app_version, created_at, updated_at FROM schema_meta"
        " WHERE meta_key = 'primary'"
    ).fetchone()
    if row is None:
        return None
    keys = ("role", "schema_version", "agent_id", "app_version", "created_at", "updated_at")
    return dict(zip(keys, row, strict=True))
