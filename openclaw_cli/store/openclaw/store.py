"""A real OpenClaw agent database (role agent; schemas 23–26: spec D4, D21, D24; storage-migration.md §4).

Reads: entries (`session_nodes WHERE entry_valid = 1`), transcripts in seq order including
zstd-compressed `event_zstd` rows, totals, archives, cold-storage markers. Opened read-only (the
default) the database is opened so that no `-wal`/`-shm` file is created (see
`sqlite_common.open_readonly`). Opened for writing (`read_only=False`), the store write protocol
writes rows as OpenClaw does (`openclaw_writes`), behind the guard rails of `openclaw_guard`
(offline only, a backup first, one transaction per operation). Other schema versions and roles
are refused when opened, whatever the mode.

Schemas 24+ keep three entry fields in `session_entry_snapshots` (`openclaw_v24`): full reads
(`load_entries`, `get_entry`) reassemble them, list reads (`list_entries`, `list_view`) leave
them out. Schemas 25 and 26, and a catalogue that matches no shape we know, are read and never
written (`openclaw_catalog`: every write asks `ensure_writable`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from openclaw_cli import jsonutil
from openclaw_cli.errors import InvalidDataError, NotFoundError, RefusedError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.store.base import (
    KIND_OPENCLAW_SQLITE,
    ArchiveFile,
    LeavingHook,
    ReadIssue,
    RestoreOutcome,
    SessionStore,
    SessionTotals,
    StoreStats,
    TranscriptLine,
    WriteOptions,
)
from openclaw_cli.store.sqlite_common import (
    OPENCLAW_SCHEMA_VERSION,
    OUR_APPLICATION_ID,
    list_archive_files,
    open_readonly,
    read_header,
    sessions_dir_for,
    table_names,
    translate_error,
)

PAYLOAD_SIZE_MISMATCH = "Compressed transcript payload length does not match its recorded UTF-8 size"
_MAX_EVENT_BYTES = 64 * 1024 * 1024  # sanity bound before allocating (OpenClaw's CHECK says 4 MiB)
_PRE14_TABLES = {"session_entries", "sessions", "session_routes"}
# an unversioned database holding any of these is an old OpenClaw one (storage-migration.md §4.9)
_OPENCLAW_TABLES = _PRE14_TABLES | {"schema_meta", "session_nodes", "session_windows", "transcript_events"}

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.projection import Touched


def _unsupported(message: str) -> InvalidDataError:
    return InvalidDataError(message, type="unsupported_schema")


class _WriteHandle:
    """The read-write connection in the place of `open_readonly`'s handle."""

    mode = "rw"

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def close(self) -> None:
        self.conn.close()


class OpenClawDbStore(SessionStore):
    kind = KIND_OPENCLAW_SQLITE
    read_only = True
    holds_cron_placeholders = True
    schema = f"openclaw {OPENCLAW_SCHEMA_VERSION}"
    schema_version = OPENCLAW_SCHEMA_VERSION

    def __init__(
        self,
        db_path: Path,
        agent_id: str | None = None,
        *,
        busy_timeout_ms: int = 60000,
        read_only: bool = True,
    ):
        self.path = Path(db_path)
        self.sessions_dir = sessions_dir_for(self.path)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.issues: list[ReadIssue] = []  # entries skipped while loading (invalid entry_json)
        self._dctx: Any = None
        self.read_only = read_only
        self.write_options: WriteOptions = WriteOptions()  # never None: the guard reads `backup`
        self.notices: list[str] = []
        self.backup_due = False  # set by the guard: the next write transaction backs the database up first
        self.touched: Touched | None = None  # what the open write transaction changed (projection.begin)
        self._depth = 0
        self._snapshots = False  # schema 24+: the snapshot fields live in their own table
        self._refusal: str | None | bool = False  # why writes are refused (False: not computed yet)
        if not self.path.exists():
            raise NotFoundError(f"OpenClaw agent database not found: {self.path}")
        header = read_header(self.path)
        if header is None:
            raise InvalidDataError(f"{self.path} is an empty file, not an OpenClaw agent database")
        if header.application_id == OUR_APPLICATION_ID:
            raise InvalidDataError(f"{self.path} is an openclaw-cli database, not a real OpenClaw one")
        if read_only:
            self._ro: Any = open_readonly(self.path, timeout_ms=self.busy_timeout_ms)
        else:
            from openclaw_cli.store.openclaw.schema import open_writable

            try:
                self._ro = _WriteHandle(open_writable(self.path, self.busy_timeout_ms))
            except sqlite3.Error as exc:  # (a full disk can fail the open: SQLite creates its -shm)
                raise translate_error(exc, self.path, self.busy_timeout_ms, writing=True) from None
        self._conn: sqlite3.Connection | None = self._ro.conn
        try:
            self.agent_id = self._validate(agent_id)
            self._tables = table_names(self._conn)
        except BaseException:
            self.close()
            raise

    def _validate(self, requested: str | None) -> str:
        conn = self._db()
        path = self.path
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = table_names(conn)
        except sqlite3.Error as exc:
            raise translate_error(
                exc, path, self.busy_timeout_ms, writing=isinstance(self._ro, _WriteHandle)
            ) from None
        from openclaw_cli.store.openclaw import catalog

        if version > catalog.NEWEST_READ:
            raise _unsupported(
                f"This openclaw-cli build cannot open your existing data: OpenClaw agent database {path} "
                f"uses newer schema version {version}; this build reads {catalog.OLDEST_READ}–{catalog.NEWEST_READ} "
                f"and writes {' and '.join(map(str, sorted(catalog.WRITABLE)))}."
            )
        if version == 0 and not tables:
            raise InvalidDataError(f"{path} is an empty SQLite database, not an OpenClaw agent database")
        if version == 0 and not tables & _OPENCLAW_TABLES:
            raise InvalidDataError(f"{path} is not an OpenClaw agent database (no OpenClaw session tables)")
        if version < OPENCLAW_SCHEMA_VERSION or ("session_nodes" not in tables and tables & _PRE14_TABLES):
            raise _unsupported(
                f"OpenClaw agent database {path} uses schema version {version}; stop active agents and run "
                "openclaw doctor --fix to migrate session identities before using it."
            )
        if "schema_meta" not in tables or "session_nodes" not in tables or "transcript_events" not in tables:
            raise InvalidDataError(f"{path} is not an OpenClaw agent database (session tables are missing)")
        row = conn.execute(
            "SELECT role, agent_id, schema_version FROM schema_meta WHERE meta_key = 'primary'"
        ).fetchone()
        if row is None:
            raise InvalidDataError(f"OpenClaw agent database {path} has no schema metadata.")
        role, owner, meta_version = row
        if meta_version != version:
            raise _unsupported(catalog.markers_disagree(path, version, meta_version))
        self.schema_version = version
        self.schema = f"openclaw {version}"
        from openclaw_cli.store.openclaw import v24 as openclaw_v24

        self._snapshots = version >= openclaw_v24.VERSION and openclaw_v24.SNAPSHOT_TABLE in tables
        if role != "agent":
            raise _unsupported(f"OpenClaw agent database {path} has schema role {role}; expected agent.")
        if not isinstance(owner, str) or not owner.strip():
            raise InvalidDataError(f"OpenClaw agent database {path} has no agent owner.")
        owner = normalize_agent_id(owner)
        if requested is not None and normalize_agent_id(requested) != owner:
            raise InvalidDataError(
                f"OpenClaw agent database {path} belongs to agent {owner}; requested agent "
                f"{normalize_agent_id(requested)}."
            )
        return owner

    # ---- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self._conn = None
            self._ro.close()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise InvalidDataError(f"OpenClaw agent database {self.path} is closed")
        return self._conn

    def _q(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db().execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None

    @property
    def open_mode(self) -> str:
        """How the file was opened: immutable | ro | snapshot (see sqlite_common.open_readonly)."""
        return cast("str", self._ro.mode)

    # ---- entries -----------------------------------------------------------------------------------
    def _entry(self, key: str, text: str) -> dict[str, Any] | None:
        try:
            value = jsonutil.loads(text)
        except RecursionError:
            self.issues.append(
                ReadIssue(str(self.path), None, f"entry {key}: entry_json nests too deep to read")
            )
            return None
        except jsonutil.JSONDecodeError as exc:
            self.issues.append(ReadIssue(str(self.path), None, f"entry {key}: malformed entry_json: {exc}"))
            return None
        if not isinstance(value, dict):
            self.issues.append(ReadIssue(str(self.path), None, f"entry {key}: entry_json is not an object"))
            return None
        return value

    def _full_entry(
        self, key: str, text: str, values: Iterable[Any], *, lazy: bool = False
    ) -> dict[str, Any] | None:
        """The entry of a full read: on schema 24+ with its snapshot values attached (`lazy`: the
        object values held as their text, see `openclaw_v24.parse_value`)."""
        entry = self._entry(key, text)
        if entry is not None and self._snapshots:
            from openclaw_cli.store.openclaw.v24 import attach

            def issue(field: str, message: str) -> None:
                self.issues.append(
                    ReadIssue(str(self.path), None, f"entry {key}: snapshot {field}: {message}")
                )

            attach(entry, values, issue, lazy=lazy)
        return entry

    def _list_entry(self, key: str, text: str) -> dict[str, Any] | None:
        """The entry of a list read: on schema 24+ without the snapshot fields (inline or not)."""
        entry = self._entry(key, text)
        if entry is not None and self._snapshots:
            from openclaw_cli.store.openclaw.v24 import strip

            strip(entry)
        return entry

    def _full_select(self) -> str:
        if not self._snapshots:
            return "SELECT n.session_key, n.entry_json FROM session_nodes AS n"
        from openclaw_cli.store.openclaw.v24 import SNAPSHOT_SELECT

        return f"SELECT n.session_key, n.entry_json, {SNAPSHOT_SELECT} FROM session_nodes AS n"

    def iter_full_entries(self, *, lazy: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every valid entry, reassembled, one row at a time. Snapshot objects are held as their
        text unless `lazy` is False (20,000 entries: ~70 MB instead of ~185 MB)."""
        try:
            cursor = self._db().execute(self._full_select() + " WHERE n.entry_valid = 1 ORDER BY n.rowid")
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        try:
            for key, text, *values in cursor:
                entry = self._full_entry(key, text, values, lazy=lazy)
                if entry is not None:
                    yield key, entry
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        finally:
            cursor.close()

    def load_entries(self) -> dict[str, dict[str, Any]]:
        return dict(self.iter_full_entries())

    def load_facts(self, *, entry_bytes: dict[str, int] | None = None) -> dict[str, Any]:
        """Every valid row's facts, made one row at a time (no whole entry held beyond its row)."""
        from openclaw_cli.store.facts import compact_bytes, entry_facts

        out: dict[str, Any] = {}
        for key, entry in self.iter_full_entries():
            out[key] = entry_facts(entry)
            if entry_bytes is not None:
                entry_bytes[key] = compact_bytes(entry)
        return out

    def list_view(self, query: Any) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        from openclaw_cli.store.base import listing_page

        rows = self._q(
            "SELECT session_key, entry_json FROM session_nodes WHERE entry_valid = 1 ORDER BY rowid"
        )
        return listing_page(
            ((key, entry) for key, text in rows if (entry := self._list_entry(key, text)) is not None), query
        )

    def list_entries(
        self, *, limit: int | None = None, updated_since_ms: int | None = None
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        where, params = " WHERE entry_valid = 1", []
        if updated_since_ms is not None:
            where += " AND updated_at >= ?"
            params.append(updated_since_ms)
        sql = (
            f"SELECT session_key, entry_json FROM session_nodes{where} ORDER BY updated_at DESC, session_key"
        )
        rows = self._q(
            sql + (" LIMIT ?" if limit is not None else ""),
            [*params, max(int(limit), 0)] if limit is not None else params,
        )
        if limit is None or len(rows) < limit:
            total = len(rows)
        else:
            total = self._q(f"SELECT count(*) FROM session_nodes{where}", params)[0][0]
        out = []
        for key, text in rows:
            entry = self._list_entry(key, text)
            if entry is not None:
                out.append((key, entry))
        return out, total

    def entry_keys(self) -> set[str]:
        return {row[0] for row in self._q("SELECT session_key FROM session_nodes WHERE entry_valid = 1")}

    def count_archived(self, *, updated_since_ms: int | None = None) -> int:
        """Rows whose entry has `archivedAt` (the listing's filter), counted in SQL."""
        sql = (
            "SELECT count(*) FROM session_nodes WHERE entry_valid = 1 AND json_valid(entry_json)"
            " AND coalesce(json_type(entry_json, '$.archivedAt'), 'null') != 'null'"
        )
        params: list[Any] = []
        if updated_since_ms is not None:
            sql += " AND updated_at >= ?"
            params.append(updated_since_ms)
        return cast("int", self._q(sql, params)[0][0])

    def _entry_bytes_sql(self) -> str:
        """UTF-8 bytes of the whole entry: on schema 24+ its snapshot values count as they would
        inline (`,"<field>":<value>`), so the same entry weighs the same on schema 23 and 24."""
        if not self._snapshots:
            return "length(CAST(n.entry_json AS BLOB))"
        return (
            "length(CAST(n.entry_json AS BLOB)) + coalesce((SELECT sum(length(CAST(s.value_json AS BLOB))"
            " + length(s.field) + 4) FROM session_entry_snapshots AS s WHERE s.session_key = n.session_key), 0)"
        )

    def entry_sizes(self) -> dict[str, tuple[str | None, int]]:
        """key -> (sessionId, UTF-8 bytes of the entry), as SqliteStore.entry_sizes."""
        rows = self._q(
            f"SELECT n.session_key, n.current_session_id, {self._entry_bytes_sql()}"
            " FROM session_nodes AS n WHERE n.entry_valid = 1"
        )
        return {key: (sid, size) for key, sid, size in rows}

    def entry_bytes(self) -> dict[str, int]:
        """key -> UTF-8 bytes of entry_json, as SqliteStore.entry_bytes."""
        return {key: size for key, (_, size) in self.entry_sizes().items()}

    def logical_bytes(self) -> tuple[int, int]:
        """(Σ entry JSON bytes, Σ event JSON bytes) — OpenClaw G1's SQLite budget measure (§6.3)."""
        entries = self._q(
            f"SELECT coalesce(sum({self._entry_bytes_sql()}), 0) FROM session_nodes AS n"
            " WHERE n.entry_valid = 1"
        )[0][0]
        events = self._q(
            "SELECT coalesce(sum(coalesce(event_utf8_bytes, length(CAST(event_json AS BLOB)))), 0)"
            " FROM transcript_events"
        )[0][0]
        return entries, events

    def get_entry(self, key: str) -> dict[str, Any] | None:
        rows = self._q(self._full_select() + " WHERE n.session_key = ? AND n.entry_valid = 1", (key,))
        return self._full_entry(key, rows[0][1], rows[0][2:]) if rows else None

    def count_entries(self) -> int:
        return cast("int", self._q("SELECT count(*) FROM session_nodes WHERE entry_valid = 1")[0][0])

    # ---- transcripts -------------------------------------------------------------------------------
    def _decode(
        self, session_id: str, seq: int, text: str | None, blob: bytes | None, size: int | None
    ) -> str:
        """The event JSON text: `event_json`, or the zstd payload decoded to exactly
        `event_utf8_bytes` bytes of UTF-8 (storage-migration.md §4.4 S-6)."""
        if text is not None:
            return text
        where = f"{self.path} session {session_id} seq {seq}"
        if blob is None or not isinstance(size, int) or size < 0 or size > _MAX_EVENT_BYTES:
            raise InvalidDataError(f"Transcript event has no readable payload: {where}")
        import zstandard as zstd

        if self._dctx is None:  # one decompressor for every compressed event of this store
            self._dctx = zstd.ZstdDecompressor()
        payload = bytes(blob)
        declared = zstd.frame_content_size(payload) if len(payload) >= 4 else -1
        if declared not in (-1, size):
            raise InvalidDataError(f"{PAYLOAD_SIZE_MISMATCH}: {where}")
        try:
            data = self._dctx.decompress(payload, max_output_size=size + 1)
        except zstd.ZstdError as exc:
            raise InvalidDataError(f"Cannot decompress transcript event ({exc}): {where}") from None
        if len(data) != size:
            raise InvalidDataError(f"{PAYLOAD_SIZE_MISMATCH}: {where}")
        try:
            return cast("str", data.decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidDataError(f"Compressed transcript payload is not valid UTF-8: {where}") from None

    def _line(
        self, session_id: str, row: tuple[Any, ...], issues: list[ReadIssue] | None
    ) -> TranscriptLine | None:
        seq, text, blob, size = row
        try:
            raw = self._decode(session_id, seq, text, blob, size)
            obj = jsonutil.loads(raw)
        except InvalidDataError as exc:
            if issues is None:
                raise
            issues.append(ReadIssue(f"{self.path}#{session_id}", seq + 1, exc.message))
            return None
        except jsonutil.JSONDecodeError as exc:
            if issues is None:
                raise InvalidDataError(
                    f"Malformed transcript event JSON: {self.path} session {session_id} seq {seq}: {exc}"
                ) from None
            issues.append(ReadIssue(f"{self.path}#{session_id}", seq + 1, f"malformed JSON: {exc}"))
            return None
        return TranscriptLine(seq=seq, raw=raw, obj=obj if isinstance(obj, dict) else None)

    def cold_sessions(self) -> dict[str, dict[str, Any]]:
        """Sessions whose events OpenClaw moved to cold storage (`sessions/cold/<sha256>.jsonl.zst`)."""
        if "session_transcript_cold_archives" not in self._tables:
            return {}
        rows = self._q(
            "SELECT session_id, archive_name, event_count, raw_bytes, archived_at, storage"
            " FROM session_transcript_cold_archives"
        )
        return {
            sid: {"archiveName": name, "events": n, "rawBytes": b, "archivedAt": at, "storage": storage}
            for sid, name, n, b, at, storage in rows
        }

    def is_cold(self, session_id: str) -> bool:
        if "session_transcript_cold_archives" not in self._tables:
            return False
        return bool(
            self._q("SELECT 1 FROM session_transcript_cold_archives WHERE session_id = ?", (session_id,))
        )

    def _cold_error(self, session_id: str) -> InvalidDataError:
        info = self.cold_sessions().get(session_id, {})
        return InvalidDataError(
            f"Transcript of session {session_id} is in OpenClaw cold storage ({info.get('archiveName')}, "
            f"{info.get('events')} events) in {self.path}; restore it with OpenClaw before reading it.",
            type="cold_transcript",
        )

    def iter_transcript(
        self, session_id: str, *, entry: dict[str, Any] | None = None, issues: list[ReadIssue] | None = None
    ) -> Generator[TranscriptLine, None, None]:
        """Events in seq order. A cold session is an error (or an issue when `issues` is given),
        never an empty transcript."""
        any_row = False
        try:
            cursor = self._db().execute(
                "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events"
                " WHERE session_id = ? ORDER BY seq",
                (session_id,),
            )
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        try:
            for row in cursor:
                any_row = True
                line = self._line(session_id, row, issues)
                if line is not None:
                    yield line
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        finally:
            cursor.close()
        if not any_row and self.is_cold(session_id):
            error = self._cold_error(session_id)
            if issues is None:
                raise error
            issues.append(ReadIssue(f"{self.path}#{session_id}", None, error.message))

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
            "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events"
            " WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
            (session_id, int(n)),
        )
        if not rows and self.is_cold(session_id):
            error = self._cold_error(session_id)
            if issues is None:
                raise error
            issues.append(ReadIssue(f"{self.path}#{session_id}", None, error.message))
            return []
        lines = [self._line(session_id, row, issues) for row in reversed(rows)]
        return [line for line in lines if line is not None]

    def has_transcript(self, session_id: str, *, entry: dict[str, Any] | None = None) -> bool:
        if self._q("SELECT 1 FROM transcript_events WHERE session_id = ? LIMIT 1", (session_id,)):
            return True
        return self.is_cold(session_id)

    def session_totals(self) -> dict[str, SessionTotals]:
        """One GROUP BY over the events (OpenClaw keeps no per-session totals); cold sessions carry
        their archived counts and `cold=True`."""
        rows = self._q(
            "SELECT session_id, count(*), sum(coalesce(event_utf8_bytes, length(CAST(event_json AS BLOB))))"
            " FROM transcript_events GROUP BY session_id"
        )
        out = {sid: SessionTotals(events=n, bytes=b or 0) for sid, n, b in rows}
        for sid, info in self.cold_sessions().items():
            if sid not in out:
                out[sid] = SessionTotals(events=info["events"], bytes=info["rawBytes"], cold=True)
        return out

    def export_transcript(
        self, session_id: str, dest: BinaryIO, *, entry: dict[str, Any] | None = None
    ) -> SessionTotals:
        """The transcript as JSONL bytes (decoded lines + `\\n`): a read, allowed on OpenClaw DBs."""
        events = total = 0
        for line in self.iter_transcript(session_id):
            data = line.raw.encode("utf-8")
            dest.write(data + b"\n")
            events += 1
            total += len(data)
        return SessionTotals(events=events, bytes=total)

    # ---- archives & stats --------------------------------------------------------------------------
    def list_archives(self) -> list[ArchiveFile]:
        files = list_archive_files(self.sessions_dir)
        seen = {item.path.name for item in files}
        if "session_transcript_archives" in self._tables:
            for sid, reason, encoding, name, created, size in self._q(
                "SELECT session_id, reason, encoding, archive_name, created_at, length(archive_blob)"
                " FROM session_transcript_archives ORDER BY created_at, archive_name"
            ):
                if name in seen or "/" in name or "\\" in name:
                    continue
                files.append(
                    ArchiveFile(self.sessions_dir / name, sid, reason, created, encoding == "zstd", size or 0)
                )
        return files

    def stats(self, *, count_issues: bool = True) -> StoreStats:
        from openclaw_cli.store.openclaw.guard import backups_summary

        totals = self.session_totals()
        archives = self.list_archives()
        compactions = 0
        if "transcript_event_identities" in self._tables:
            compactions = self._q(
                "SELECT count(*) FROM transcript_event_identities WHERE event_type = 'compaction'"
            )[0][0]
        wal = Path(f"{self.path}-wal")
        return StoreStats(
            sessions=self.count_entries(),
            transcript_bytes=sum(t.bytes for t in totals.values()),
            transcript_events=sum(t.events for t in totals.values()),
            archives_count=len(archives),
            archives_bytes=sum(a.size for a in archives),
            compactions=compactions,
            extra={
                "dbSizeBytes": self.path.stat().st_size,
                "walSizeBytes": wal.stat().st_size if wal.exists() else 0,
                "coldSessions": sum(1 for t in totals.values() if t.cold),
                "openMode": self.open_mode,
                "backups": backups_summary(self.path),  # ours, before our writes (D26: status counts them)
            },
        )

    def list_windows(self, session_key: str | None = None) -> list[dict[str, Any]]:
        """Session windows (transcript generations), newest first; for one key when given."""
        sql = "SELECT session_id, session_key, previous_session_id, reason, created_at, updated_at FROM session_windows"
        params: tuple[Any, ...] = ()
        if session_key is not None:
            sql += " WHERE session_key = ?"
            params = (session_key,)
        names = ("sessionId", "sessionKey", "previousSessionId", "reason", "createdAt", "updatedAt")
        return [
            dict(zip(names, row, strict=True))
            for row in self._q(sql + " ORDER BY created_at DESC, session_id", params)
        ]

    def window_keys(self) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = self._q(
            "SELECT session_id, session_key FROM session_windows ORDER BY created_at DESC, session_id"
        )
        return rows

    # ---- the write protocol (spec D21: openclaw_writes, behind openclaw_guard) --------------------------
    def write_refusal(self) -> str | None:
        """Why this database is never written (schema 25/26, an unknown catalogue; D24), or None."""
        if self._refusal is False:
            from openclaw_cli.store.openclaw.catalog import write_refusal

            try:
                self._refusal = write_refusal(self._db(), self.path, self.schema_version)
            except sqlite3.Error as exc:
                raise translate_error(exc, self.path, self.busy_timeout_ms) from None
        return self._refusal  # type: ignore[return-value]

    @property
    def accepts_writes(self) -> bool:  # type: ignore[override]
        return self.write_refusal() is None

    def ensure_writable(self, operation: str) -> None:
        refusal = self.write_refusal()
        if refusal is not None:
            raise RefusedError(f"Refusing to {operation}: {refusal}", type="unsupported_schema")
        if self.read_only:
            raise RefusedError(f"Refusing to {operation}: {self.path} was opened read-only")

    def snapshot_issues(self) -> list[tuple[str, str, str | None]]:
        """What `doctor --session-sqlite validate` lists about the snapshot rows (schema 24+)."""
        if not self._snapshots:
            return []
        from openclaw_cli.store.openclaw.v24 import snapshot_issues

        try:
            return snapshot_issues(self._db())
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms) from None

    def configure_writes(self, options: WriteOptions) -> None:
        self.write_options = options

    def write_notices(self) -> list[str]:
        return list(self.notices)

    def write_lock(self, lock_settings: Any) -> Any:
        from openclaw_cli.store.openclaw.guard import guarded_writes

        self.ensure_writable("change the session store")
        return guarded_writes(self, lock_settings)

    def transaction(self) -> Any:
        from openclaw_cli.store.openclaw.writes import transaction

        self.ensure_writable("write to the session store")
        return transaction(self)

    def read_snapshot(
        self, key: str, entry: dict[str, Any], *, data_on_demand: bool = False, on_entry: Any = None
    ) -> Any:
        from openclaw_cli.store.openclaw.rows import read_snapshot

        return read_snapshot(self, key, entry)

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
        from openclaw_cli.store.openclaw.compaction import commit_compaction

        self.ensure_writable("compact a session")
        return commit_compaction(snapshot, comp, rotate=rotate, now_ms=now_ms, reason=reason)

    def commit_max_lines(
        self,
        snapshot: Any,
        kept: list[bytes],
        *,
        now_ms: int,
        lock_settings: Any,
        keep_session_id: bool = True,
    ) -> Any:  # the id is kept here anyway; the flag says which release's row change (2026.9.6+ clears usage)
        from openclaw_cli.store.openclaw.compaction import commit_max_lines

        self.ensure_writable("compact a session")
        return commit_max_lines(snapshot, kept, now_ms=now_ms, clears_usage=keep_session_id)

    def patch_entry(
        self, key: str, mutate: Any, *, lock_settings: Any, create: bool = False, now_ms: int | None = None
    ) -> Any:
        from openclaw_cli import clock
        from openclaw_cli.store.openclaw.lifecycle import patch_entry

        self.ensure_writable("update a session")
        return patch_entry(
            self, key, mutate, create=create, now_ms=clock.now_ms() if now_ms is None else now_ms
        )

    def archive_rows(
        self, archives: Any, *, archived_at: int, expected: Any, lock_settings: Any
    ) -> list[str]:
        """Every row in one write transaction, as OpenClaw's entry writes (projections included)."""
        from openclaw_cli.store.base import archive_mutation
        from openclaw_cli.store.openclaw.rows import read_entry, write_entry
        from openclaw_cli.store.openclaw.writes import transaction

        self.ensure_writable("archive sessions")
        done: list[str] = []
        if not archives:
            return done
        with transaction(self) as conn:
            for key, reason in archives.items():
                current = read_entry(conn, key)
                updated = archive_mutation(reason, archived_at, expected.get(key))(
                    dict(current) if current is not None else None
                )
                if updated is not None:
                    write_entry(conn, key, updated, now_ms=archived_at)
                    done.append(key)
        return done

    def reset_session(
        self, key: str, build: Any, *, lock_settings: Any, now_ms: int, marker: dict[str, Any] | None = None
    ) -> Any:
        from openclaw_cli.store.openclaw.lifecycle import reset_session

        self.ensure_writable("reset a session")
        return reset_session(self, key, build, now_ms=now_ms, marker=marker)

    def switch_branch(self, key: str, leaf_id: str, build: Any, *, lock_settings: Any, now_ms: int) -> Any:
        from openclaw_cli.store.openclaw.lifecycle import switch_branch

        self.ensure_writable("switch a session's branch")
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
        from openclaw_cli.store.openclaw.lifecycle import fork_session

        self.ensure_writable("fork a session")
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

    def label_owners(self, label: str) -> list[str]:
        return [
            key
            for key, text in self._q(
                "SELECT session_key, entry_json FROM session_nodes WHERE entry_valid = 1 AND label = ?",
                (label.strip(),),
            )
            if (self._entry(key, text) or {}).get("label") == label
        ]

    def window_session_ids(self, key: str) -> list[str]:
        return [window["sessionId"] for window in self.list_windows(key)]

    # ---- disk-budget reclamation (2026.9.6+: what its history eviction reads and writes) ------------
    def reclaim_free_pages(self) -> bool:
        from openclaw_cli.store.sqlite_common import reclaim_free_pages

        self.ensure_writable("reclaim database pages")
        try:
            return reclaim_free_pages(self._db())
        except sqlite3.Error as exc:
            raise translate_error(exc, self.path, self.busy_timeout_ms, writing=True) from None

    def _archive_names(self, published: bool) -> list[str]:
        if "session_transcript_archives" not in self._tables:
            return []
        where = "IS NOT NULL" if published else "IS NULL"
        return [
            row[0]
            for row in self._q(
                f"SELECT archive_name FROM session_transcript_archives WHERE published_at {where}"
                " ORDER BY created_at, session_id, generation"
            )
        ]

    def budget_archive_names(self) -> list[str]:
        return self._archive_names(True)

    def unpublished_archive_names(self) -> set[str]:
        return set(self._archive_names(False))

    def forget_archives(self, names: list[str]) -> None:
        if "session_transcript_archives" not in self._tables or not names:
            return
        with self.transaction() as conn:
            conn.executemany(
                "DELETE FROM session_transcript_archives WHERE published_at IS NOT NULL AND archive_name = ?",
                [(n,) for n in names],
            )

    def cron_placeholders(self, *, before_ms: float) -> list[tuple[str, list[str]]]:
        from openclaw_cli.keys import is_cron_run_key, parse_agent_key
        from openclaw_cli.store.openclaw.writes import PLACEHOLDER_SQL

        windows: dict[str, list[tuple[str, Any]]] = {}
        for sid, key, updated in self._q("SELECT session_id, session_key, updated_at FROM session_windows"):
            windows.setdefault(key, []).append((sid, updated))
        out = []
        for key, updated in self._q(
            f"SELECT session_key, updated_at FROM session_nodes WHERE {PLACEHOLDER_SQL}"
        ):
            parsed = parse_agent_key(key)
            if not is_cron_run_key(key) or parsed is None or normalize_agent_id(parsed[0]) != self.agent_id:
                continue
            owned = windows.get(key, [])
            times = [t for t in [updated, *(t for _, t in owned)] if isinstance(t, int | float)]
            if times and max(times) < before_ms:
                out.append((key, sorted(sid for sid, _ in owned)))
        return out

    def orphan_sessions(self) -> list[tuple[str, int, int]]:
        # (with foreign keys on neither can exist; a database written with them off can hold both:
        # OpenClaw's doctor has an orphan-window repair)
        events = (
            "SELECT count(e.seq), coalesce(sum(coalesce(e.event_utf8_bytes, length(CAST(e.event_json AS BLOB)))), 0)"
            " FROM transcript_events AS e WHERE e.session_id = ?"
        )
        found = self._q(
            "SELECT w.session_id FROM session_windows AS w"
            " WHERE NOT EXISTS (SELECT 1 FROM session_nodes AS n WHERE n.session_key = w.session_key)"
            " UNION"
            " SELECT DISTINCT e.session_id FROM transcript_events AS e"
            " WHERE NOT EXISTS (SELECT 1 FROM session_windows AS w WHERE w.session_id = e.session_id)"
            " ORDER BY 1"
        )
        out: list[tuple[str, int, int]] = []
        for (sid,) in found:
            ((n, size),) = self._q(events, (sid,))
            out.append((str(sid), int(n or 0), int(size or 0)))
        return out

    def historical_session_ids(self, *, recent_since_ms: float | None) -> list[str]:
        from openclaw_cli.store.openclaw.writes import referenced_by

        conn = self._db()
        refs = referenced_by(conn, set())
        if any(not ok for (ok,) in self._q("SELECT json_valid(entry_json) FROM session_nodes")):
            return []  # a row we cannot read may reference any window: evict none
        return [
            sid
            for sid, updated in self._q(
                "SELECT session_id, updated_at FROM session_windows ORDER BY updated_at, session_id"
            )
            if sid not in refs
            and not (recent_since_ms is not None and isinstance(updated, int) and updated >= recent_since_ms)
        ]

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
        from openclaw_cli.store.openclaw.retire import retire

        self.ensure_writable("remove sessions")
        return retire(self, plan, now_ms=now_ms, checkpoint=checkpoint, progress=progress, leaving=leaving)

    def retire_all(self, *, lock_settings: Any, now_ms: int, checkpoint: Any) -> tuple[Any, int, int]:
        from openclaw_cli.store.openclaw.retire import retire_all

        self.ensure_writable("remove sessions")
        return retire_all(self, now_ms=now_ms, checkpoint=checkpoint)

    def restore_session(
        self, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any, now_ms: int
    ) -> RestoreOutcome:
        from openclaw_cli.store.openclaw.restore import restore_session

        self.ensure_writable("restore a session")
        return restore_session(self, key, entry, content, now_ms=now_ms)

    # ---- low-level writes our own stores offer: never on an OpenClaw database -------------------------
    def _no_raw_writes(self, operation: str) -> RefusedError:
        return RefusedError(
            f"Refusing to {operation}: openclaw-cli changes a real OpenClaw database ({self.path}) only through "
            "its verified operations (cleanup, compaction, agent delete, session lifecycle)."
        )

    def upsert_entries(self, entries: Mapping[str, dict[str, Any]]) -> int:
        raise self._no_raw_writes("update session entries")

    def delete_entries(self, keys: Iterable[str]) -> int:
        raise self._no_raw_writes("delete session entries")

    def append_events(
        self,
        session_id: str,
        raw_lines: Iterable[str | bytes],
        *,
        session_key: str,
        created_at_ms: int | None = None,
        cwd: str | None = None,
    ) -> int:
        raise self._no_raw_writes("append transcript events")

    def drop_session_events(self, session_ids: Iterable[str], *, expected: Any = None) -> list[str]:
        raise self._no_raw_writes("delete transcript events")

    def create_window(self, session_key: str, session_id: str, **kwargs: Any) -> int:
        raise self._no_raw_writes("create a session window")

    def record_archive(self, **kwargs: Any) -> None:
        raise self._no_raw_writes("record a transcript archive")

    def bulk_import(self, records: Iterable[Any], **kwargs: Any) -> Any:
        raise self._no_raw_writes("import sessions")
