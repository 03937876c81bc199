"""Writes to a real OpenClaw schema-23 agent database (spec D21; storage-migration.md §4.7, §5;
maintenance.md §7.3, §8.3), row for row as OpenClaw 2026.9.6 writes them — checked by running
the real OpenClaw on the result (tests/test_openclaw_writes*.py; docs/decisions.md "Writing
schema-23 databases" lists where we differ and why).

Every operation is one `BEGIN IMMEDIATE` transaction on a connection with `foreign_keys = ON`,
taken only while no Gateway owns the state directory (`state_owner`), after a backup of the
database (once per run, unless `--no-backup`).

Retiring sessions (cleanup enforce, agent delete; `retire.py`'s `retire`, built on this module):
1. export each leaving session from one read snapshot — its events decoded (`event_json` or
   `event_zstd`) as JSONL, plus the facts OpenClaw's delete snapshot compares (window key and
   times, rewrite generation, last seq, event count, trajectory and ACP stream rows);
2. compress it (zstd), check the frame decompresses to the export, publish it as the registered
   archive file `<sid>.jsonl.deleted.<ts>.<generation>.zst` (0600, renamed without replacing,
   read back and compared by sha256; an identical file of the same generation left by an
   interrupted run is reused) and make the files durable together (`syncfs`);
3. one transaction: rows still as planned, sessions still unreferenced by every surviving row
   (sessionId, previousSessionId, usageFamilySessionIds, compaction checkpoints, and the windows
   of archived/pinned rows) and unchanged since the export; for each, the archive row
   (`session_transcript_archives`: blob, sha256, name, `published_at`) is inserted and the
   session's FTS rows and window go (the schema's cascades take its events, identities, active
   events, index state and watermark); windows of a removed row that a surviving row still
   references move to that row (OpenClaw re-homes them); a removed row whose windows cannot all
   go stays; then the node rows (cascading their participants, members, boards, pending inputs).
A kill before the commit leaves the database as it was (the published files are extra verified
copies, reused by the re-run); after it, as after.
"""

from __future__ import annotations

import hashlib
import io
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import InvalidDataError, OpenClawError
from openclaw_cli.fsio import FILE_MODE, O_CLOEXEC, O_NOFOLLOW
from openclaw_cli.store.generations import entry_session_ids
from openclaw_cli.store.openclaw import schema
from openclaw_cli.store.retire import (
    discard_created,
    sync_directory,
)

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

ZSTD_LEVEL = 3
ARCHIVES_DDL = (
    """CREATE TABLE IF NOT EXISTS session_transcript_archives (
  session_id TEXT NOT NULL,
  generation TEXT NOT NULL,
  session_key TEXT NOT NULL,
  reason TEXT NOT NULL CHECK (reason IN ('deleted', 'reset')),
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'zstd')),
  archive_blob BLOB NOT NULL,
  archive_sha256 TEXT NOT NULL CHECK (length(archive_sha256) = 64),
  archive_name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  published_at INTEGER,
  publish_attempts INTEGER NOT NULL DEFAULT 0 CHECK (publish_attempts >= 0),
  last_publish_attempt_at INTEGER,
  last_publish_error TEXT,
  PRIMARY KEY (session_id, generation),
  CHECK (archive_name NOT LIKE '%/%' AND archive_name NOT LIKE '%\\%')
) STRICT""",
    """CREATE INDEX IF NOT EXISTS idx_agent_session_transcript_archives_pending
  ON session_transcript_archives(created_at, session_id, generation)
  WHERE published_at IS NULL""",
    """CREATE INDEX IF NOT EXISTS idx_agent_session_transcript_archives_retention
  ON session_transcript_archives(created_at, session_id, generation)""",
)
_ARCHIVE_INSERT = (
    "INSERT INTO session_transcript_archives(session_id, generation, session_key, reason, encoding, archive_blob,"
    " archive_sha256, archive_name, created_at, published_at, publish_attempts, last_publish_attempt_at,"
    " last_publish_error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL) ON CONFLICT(session_id, generation) DO NOTHING"
)


# ---- snapshots of sessions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StateSnapshot:
    """What OpenClaw's `readSessionStateDeleteSnapshot` compares before deleting a session."""

    session_key: str | None
    window_updated_at: int | None
    transcript_updated_at: int | None
    generation: str | None
    last_seq: int | None
    events: int
    trajectory_last_seq: int | None
    acp_events: int


def read_states(conn: sqlite3.Connection, sids: list[str], tables: set[str]) -> dict[str, StateSnapshot]:
    """`read_state` of many sessions with a handful of statements per 500 ids."""
    window: dict[str, tuple[Any, Any, Any]] = {}
    generation: dict[str, str] = {}
    events: dict[str, tuple[int, int]] = {}
    trajectory: dict[str, int] = {}
    acp: dict[str, int] = {}
    for chunk in chunks(sids):
        marks = ",".join("?" * len(chunk))
        for sid, key, updated, transcript in conn.execute(
            "SELECT session_id, session_key, updated_at, transcript_updated_at FROM session_windows"
            f" WHERE session_id IN ({marks})",
            chunk,
        ):
            window[sid] = (key, updated, transcript)
        if "transcript_rewrite_watermarks" in tables:
            generation.update(
                conn.execute(
                    f"SELECT session_id, generation FROM transcript_rewrite_watermarks WHERE session_id IN ({marks})",
                    chunk,
                )
            )
        for sid, count, last in conn.execute(
            f"SELECT session_id, count(*), max(seq) FROM transcript_events WHERE session_id IN ({marks})"
            " GROUP BY session_id",
            chunk,
        ):
            events[sid] = (count, last)
        if "trajectory_runtime_events" in tables:
            trajectory.update(
                conn.execute(
                    f"SELECT session_id, max(seq) FROM trajectory_runtime_events WHERE session_id IN ({marks})"
                    " GROUP BY session_id",
                    chunk,
                )
            )
        if "acp_parent_stream_events" in tables:
            acp.update(
                conn.execute(
                    f"SELECT session_id, count(*) FROM acp_parent_stream_events WHERE session_id IN ({marks})"
                    " GROUP BY session_id",
                    chunk,
                )
            )
    out = {}
    for sid in sids:
        key, updated, transcript = window.get(sid, (None, None, None))
        count, last = events.get(sid, (0, None))
        out[sid] = StateSnapshot(
            key, updated, transcript, generation.get(sid), last, count, trajectory.get(sid), acp.get(sid, 0)
        )
    return out


def cold_session_ids(conn: sqlite3.Connection, sids: list[str], tables: set[str]) -> set[str]:
    if "session_transcript_cold_archives" not in tables:
        return set()
    cold: set[str] = set()
    for chunk in chunks(sids):
        cold.update(
            row[0]
            for row in conn.execute(
                f"SELECT session_id FROM session_transcript_cold_archives WHERE session_id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
        )
    return cold


def read_state(conn: sqlite3.Connection, sid: str, tables: set[str]) -> StateSnapshot:
    window = conn.execute(
        "SELECT session_key, updated_at, transcript_updated_at FROM session_windows WHERE session_id = ?",
        (sid,),
    ).fetchone() or (None, None, None)
    generation = None
    if "transcript_rewrite_watermarks" in tables:
        row = conn.execute(
            "SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = ?", (sid,)
        ).fetchone()
        generation = row[0] if row else None
    count, last = conn.execute(
        "SELECT count(*), max(seq) FROM transcript_events WHERE session_id = ?", (sid,)
    ).fetchone()
    trajectory = acp = None
    if "trajectory_runtime_events" in tables:
        trajectory = conn.execute(
            "SELECT max(seq) FROM trajectory_runtime_events WHERE session_id = ?", (sid,)
        ).fetchone()[0]
    if "acp_parent_stream_events" in tables:
        acp = conn.execute(
            "SELECT count(*) FROM acp_parent_stream_events WHERE session_id = ?", (sid,)
        ).fetchone()[0]
    return StateSnapshot(window[0], window[1], window[2], generation, last, count, trajectory, acp or 0)


@dataclass
class SessionExport:
    session_id: str
    state: StateSnapshot
    events: int
    raw_bytes: int  # JSONL bytes of the export (what the archive decompresses to)
    generation: str  # the window's rewrite generation, or a new one for a window without
    blob: bytes | None = None  # zstd frame of the export; None for an empty transcript
    sha256: str | None = None  # of the blob (OpenClaw's `archive_sha256`)
    archive_name: str | None = None
    created_at: int | None = None
    path: Path | None = None  # the published file
    created: bool = False  # published by this run (not reused)
    readable: bool = True  # every event decoded (a session with an unreadable event never leaves)


def export_session(
    store: OpenClawDbStore, sid: str, state: StateSnapshot
) -> tuple[SessionExport, bytes] | None:
    """The session as JSONL with its delete snapshot `state` (read in the same read transaction
    by the caller); None when it has neither a window nor events."""
    from openclaw_cli.store.base import ReadIssue

    if state.session_key is None and state.events == 0:
        return None
    issues: list[ReadIssue] = []
    buf = io.BytesIO()
    events = 0
    for line in store.iter_transcript(sid, issues=issues):
        buf.write(line.raw.encode("utf-8"))
        buf.write(b"\n")
        events += 1
    data = buf.getvalue()
    export = SessionExport(
        sid,
        state,
        events,
        len(data),
        state.generation or schema.new_generation(),
        readable=not issues and events == state.events,
    )
    return export, data


# ---- archive files ----------------------------------------------------------------------------------------

_contexts: dict[str, Any] = {}


def compress(data: bytes) -> bytes:
    """One zstd frame of `data` (content size and checksum recorded), checked to decompress to it."""
    import zstandard

    cctx = _contexts.get("c")
    if cctx is None:
        cctx = _contexts["c"] = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
        _contexts["d"] = zstandard.ZstdDecompressor()
    frame = cctx.compress(data)
    if _contexts["d"].decompress(frame, max_output_size=len(data) + 1) != data:
        raise InvalidDataError("zstd round trip of a transcript archive failed")
    return frame


def _existing_archives(root: Path) -> dict[tuple[str, str], list[str]]:
    """Registered-name archive files already in the sessions dir, by (sid component, generation)."""
    from openclaw_cli.store.archives import parse_archive_name

    found: dict[tuple[str, str], list[str]] = {}
    try:
        with os.scandir(root) as it:
            names = [item.name for item in it if ".deleted." in item.name and item.name.endswith(".zst")]
    except OSError:
        return found
    for name in names:
        stem = name[: -len(schema.ARCHIVE_ZSTD_SUFFIX)]
        base, _, generation = stem.rpartition(".")
        if len(generation) != 32 or parse_archive_name(name, "deleted") is None:
            continue
        component = base.split(".jsonl.deleted.", 1)[0]
        found.setdefault((component, generation), []).append(name)
    return found


def _sha_of_file(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class ArchivePublisher:
    """The published archive files of one operation in one sessions dir: written without a
    per-file fsync and made durable together, verified by reading back, removed again when the
    transaction that needed them does not commit."""

    def __init__(self, root: Path, now_ms: int, checkpoint: Callable[[], None]):
        self.root = Path(root)
        self.now_ms = int(now_ms)
        self.checkpoint = checkpoint
        self.created: list[Path] = []
        self._existing: dict[tuple[str, str], list[str]] | None = None

    def _reuse(self, export: SessionExport, component: str) -> bool:
        from openclaw_cli.store.archives import parse_archive_name

        if self._existing is None:
            self._existing = _existing_archives(self.root)
        for name in self._existing.get((component, export.generation), ()):
            parsed = parse_archive_name(name, "deleted")
            if parsed is None or parsed[2] is None or _sha_of_file(self.root / name) != export.sha256:
                continue
            export.archive_name, export.created_at, export.path = name, parsed[2], self.root / name
            return True
        return False

    def publish(self, export: SessionExport, reason: str = "deleted") -> None:
        from openclaw_cli.store.archives import _publish, _unlink_quiet

        assert export.blob is not None and export.sha256 is not None
        os.makedirs(self.root, 0o700, exist_ok=True)
        name = schema.registered_archive_name(
            export.session_id, reason, self.now_ms, export.generation, compressed=True
        )
        component = name.split(".jsonl.", 1)[0]
        if reason == "deleted" and self._reuse(export, component):
            return
        for attempt in range(10):
            created_at = self.now_ms + attempt
            name = schema.registered_archive_name(
                export.session_id, reason, created_at, export.generation, compressed=True
            )
            final = self.root / name
            if os.path.dirname(os.path.abspath(final)) != os.path.abspath(self.root):
                raise InvalidDataError(f"Cannot archive SQLite transcript outside {self.root}")
            tmp = self.root / f"{name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(export.blob)
                published = _publish(tmp, final)
            finally:
                _unlink_quiet(tmp)
            if published:
                self.created.append(final)
                export.archive_name, export.created_at, export.path, export.created = (
                    name,
                    created_at,
                    final,
                    True,
                )
                self.checkpoint()
                return
        raise OpenClawError(
            f"Could not create SQLite transcript archive for {export.session_id}", type="archive_error"
        )

    def commit(self, exports: Iterable[SessionExport]) -> None:
        """Durable, then verified: every published file holds exactly its blob."""
        if self.created:
            sync_directory(self.root)
        for export in exports:
            if export.path is not None and _sha_of_file(export.path) != export.sha256:
                raise OpenClawError(
                    f"SQLite transcript archive verification failed for {export.session_id}",
                    type="archive_error",
                )

    def rollback(self, paths: Iterable[Path] | None = None) -> None:
        discard_created(self.created, paths, self.root)


# ---- the write transaction --------------------------------------------------------------------------------


@contextmanager
def transaction(store: OpenClawDbStore) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` on the store's write connection (nested uses join the outer one): the run's
    backup and the projection bookkeeping first, the projections settled last (D26)."""
    from openclaw_cli.clock import now_ms
    from openclaw_cli.store.openclaw.guard import take_due_backup
    from openclaw_cli.store.openclaw.projection import begin, settle
    from openclaw_cli.store.sqlite_common import write_transaction

    def before() -> None:
        take_due_backup(store)  # the run's backup: the state this first write starts from
        begin(store)

    def aborted() -> None:
        store.touched = None

    with write_transaction(
        store, before=before, after=lambda: settle(store, now_ms()), aborted=aborted
    ) as conn:
        yield conn


def chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def unchanged_rows(
    conn: sqlite3.Connection, keys: list[str], planned: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(keys whose stored entry still equals the planned one, keys written since)."""
    from openclaw_cli.jsonutil import loads
    from openclaw_cli.store.openclaw import v24

    same: list[str] = []
    changed: list[str] = []
    if v24.has_snapshots(conn):  # schema 24: the planned entries were read whole (full reads)
        for key, text, values in v24.full_entries(conn, keys):
            (same if v24.same_entry(text, values, planned.get(key)) else changed).append(key)
        return same, changed
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        for key, text in conn.execute(
            f"SELECT session_key, entry_json FROM session_nodes WHERE entry_valid = 1 AND session_key IN ({marks})",
            chunk,
        ):
            try:
                equal = loads(text) == planned.get(key)
            except ValueError:
                equal = False
            (same if equal else changed).append(key)
    return same, changed


PLACEHOLDER_SQL = "entry_json = '{}' AND entry_valid = -1"


def still_placeholders(conn: sqlite3.Connection, keys: list[str]) -> list[str]:
    """The keys whose row is (still) the canonical retained-history placeholder."""
    out: list[str] = []
    for chunk in chunks(list(dict.fromkeys(keys))):
        marks = ",".join("?" * len(chunk))
        out.extend(
            key
            for (key,) in conn.execute(
                f"SELECT session_key FROM session_nodes WHERE {PLACEHOLDER_SQL} AND session_key IN ({marks})",
                chunk,
            )
        )
    return out


def referenced_by(conn: sqlite3.Connection, excluded: set[str]) -> dict[str, str]:
    """session id -> the first surviving key (by key order) that keeps it: its current session,
    the ids its entry names, and every window of an archived or pinned row."""
    from openclaw_cli.jsonutil import loads

    refs: dict[str, str] = {}
    for key, sid in conn.execute(
        "SELECT session_key, current_session_id FROM session_nodes ORDER BY session_key"
    ):
        if key not in excluded:
            refs.setdefault(sid, key)
    for key, text in conn.execute(
        "SELECT session_key, entry_json FROM session_nodes WHERE NOT json_valid(entry_json)"
        " OR json_type(entry_json, '$.previousSessionId') IS NOT NULL"
        " OR json_type(entry_json, '$.usageFamilySessionIds') IS NOT NULL"
        " OR json_type(entry_json, '$.compactionCheckpoints') IS NOT NULL ORDER BY session_key"
    ):
        if key in excluded:
            continue
        try:
            entry = loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict):
            for sid in entry_session_ids(entry):
                refs.setdefault(sid, key)
    for sid, key in conn.execute(
        "SELECT w.session_id, n.session_key FROM session_windows AS w JOIN session_nodes AS n"
        " ON n.session_key = w.session_key WHERE n.archived_at IS NOT NULL OR n.pinned_at IS NOT NULL"
    ):
        if key not in excluded:
            refs.setdefault(sid, key)
    return refs


def ensure_archive_table(conn: sqlite3.Connection, tables: set[str]) -> None:
    if "session_transcript_archives" not in tables:
        for ddl in ARCHIVES_DDL:
            conn.execute(ddl)
        tables.add("session_transcript_archives")


def insert_archive(
    conn: sqlite3.Connection, export: SessionExport, session_key: str, reason: str, published_at: int
) -> bool:
    """The archive row; False when a different archive of this generation is already recorded."""
    inserted = conn.execute(
        _ARCHIVE_INSERT,
        (
            export.session_id,
            export.generation,
            session_key,
            reason,
            "zstd",
            export.blob,
            export.sha256,
            export.archive_name,
            export.created_at,
            published_at,
            1,
            published_at,
        ),
    ).rowcount
    if inserted == 1:
        return True
    row = conn.execute(
        "SELECT archive_sha256 FROM session_transcript_archives WHERE session_id = ? AND generation = ?",
        (export.session_id, export.generation),
    ).fetchone()
    return row is not None and row[0] == export.sha256


def delete_session_states(conn: sqlite3.Connection, sids: list[str], tables: set[str]) -> None:
    """Session windows and everything derived from them (OpenClaw's `deleteSqliteSessionStateRows`):
    FTS rows (their trigger removes the FTS documents), active events, index state, identities and
    events explicitly, then the windows (cascading the rest: watermark, conversations, trajectory
    and ACP rows, pending inputs, completions). One statement per table over a temp table of the
    ids: half the time of per-session statements with foreign keys on."""
    if not sids:
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS openclaw_cli_leaving(session_id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.openclaw_cli_leaving")
    conn.executemany(
        "INSERT OR IGNORE INTO temp.openclaw_cli_leaving(session_id) VALUES (?)", [(s,) for s in sids]
    )
    leaving = "SELECT session_id FROM temp.openclaw_cli_leaving"
    for table in (
        "session_transcript_fts_rows",
        "session_transcript_active_events",
        "session_transcript_index_state",
        "transcript_event_identities",
        "transcript_events",
        "session_windows",
    ):
        if table in tables:
            conn.execute(f"DELETE FROM {table} WHERE session_id IN ({leaving})")
    conn.execute("DELETE FROM temp.openclaw_cli_leaving")


def delete_session_state(conn: sqlite3.Connection, sid: str, tables: set[str]) -> None:
    delete_session_states(conn, [sid], tables)
