"""Row writes into a real OpenClaw schema-23 database that are not removals: one session entry
(`session_nodes` + its window, as OpenClaw's `writeSessionEntry`), transcript events
(storage-migration.md §4.7 step 5: identity rows — `event_json` set, `event_zstd` and
`navigation_json` NULL — plus `transcript_event_identities`), and the compaction writes built on
them (`commit_compaction`, `commit_max_lines`). Everything runs inside the caller's
`openclaw_writes.transaction`.

The active-event projection, its index state and the FTS rows are kept as OpenClaw's writers keep
them (D26): every session whose events an operation changes is marked here and rebuilt before its
transaction commits (`openclaw_projection.settle`), with the canonical validation queue.
"""

from __future__ import annotations

import dataclasses
import io
import sqlite3
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import InvalidDataError, NotFoundError
from openclaw_cli.jsonutil import dumps_compact, loads
from openclaw_cli.store.openclaw import schema, v24
from openclaw_cli.store.openclaw.projection import touch_key, touch_session
from openclaw_cli.store.openclaw.writes import read_state
from openclaw_cli.store.snapshot import TranscriptSnapshot

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

_EVENT_INSERT = (
    "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes,"
    " navigation_json) VALUES (?,?,?,?,NULL,?,NULL)"
)
_IDENTITY_INSERT = (
    "INSERT OR IGNORE INTO transcript_event_identities(session_id, event_id, seq, event_type, parent_id,"
    " message_idempotency_key, created_at) VALUES (?,?,?,?,?,NULL,?)"
)


# ---- entries ---------------------------------------------------------------------------------------------


def entry_text(entry: dict[str, Any]) -> str:
    return dumps_compact(entry)


def write_entry(
    conn: sqlite3.Connection,
    key: str,
    entry: dict[str, Any],
    *,
    now_ms: int,
    store: OpenClawDbStore | None = None,
) -> None:
    """Upsert one session entry with every projected column and `entry_valid = 1` (the triggers
    reset it to 0 on every write; OpenClaw's writer sets it back in the same transaction), then
    its window's projections (S-3). The canonical-validation-pending row the triggers add is
    certified before the commit (`openclaw_projection.settle`, D26; `store` marks the key). On schema 24 (`openclaw_v24`) `entry_json` holds the
    entry without its snapshot fields, whose rows are replaced before `entry_valid` is set."""
    sid = entry.get("sessionId")
    if not isinstance(sid, str) or not sid.strip():
        raise InvalidDataError(f"Session entry for {key} has no sessionId")
    if store is not None:
        touch_key(store, key)
    updated = entry.get("updatedAt")
    updated_at = (
        int(updated) if isinstance(updated, int | float) and not isinstance(updated, bool) else now_ms
    )
    notices = store.notices if store is not None else None
    snapshots = v24.prepare_write(conn, key, entry, notices) if v24.has_snapshots(conn) else None
    values = schema.node_values(entry, entry_text(snapshots.hot if snapshots else entry), updated_at)
    columns = ", ".join(schema.NODE_COLUMNS)
    assignments = ", ".join(f"{c} = excluded.{c}" for c in schema.NODE_COLUMNS)
    conn.execute(
        f"INSERT INTO session_nodes(session_key, {columns}, entry_valid) VALUES (?{', ?' * len(values)}, 1)"
        f" ON CONFLICT(session_key) DO UPDATE SET {assignments}",
        (key, *values),
    )
    if snapshots is not None:
        snapshots.apply(conn, key)
    conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (key,))
    window = schema.window_values(key, entry)
    row = conn.execute(
        "SELECT transcript_updated_at FROM session_windows WHERE session_id = ?", (sid,)
    ).fetchone()
    if row is None:
        conn.execute(
            f"INSERT INTO session_windows(session_id, session_key, reason, created_at, updated_at, transcript_observed_at,"
            f" {', '.join(schema.WINDOW_COLUMNS)}) VALUES (?,?,?,?,?,?{', ?' * len(window)})",
            (sid, key, None, schema.window_created_at(entry, updated_at), updated_at, updated_at, *window),
        )
        return
    observed = row[0] if row[0] is not None else updated_at
    # the window keeps its owner (OpenClaw's retainWindow), and the predecessor it was created
    # with when the entry names none (a reset or compaction successor of ours)
    sets = ", ".join(
        "previous_session_id = coalesce(?, previous_session_id)" if c == "previous_session_id" else f"{c} = ?"
        for c in schema.WINDOW_COLUMNS
    )
    conn.execute(
        f"UPDATE session_windows SET updated_at = ?, transcript_observed_at = ?, {sets} WHERE session_id = ?",
        (updated_at, observed, *window, sid),
    )


def read_entry(conn: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    """The stored entry (a full read: on schema 24 with its snapshot values attached)."""
    if v24.has_snapshots(conn):
        for _, text, values in v24.full_entries(conn, [key]):
            entry = _parse_entry(text)
            return v24.attach(entry, values) if entry is not None else None
        return None
    row = conn.execute(
        "SELECT entry_json FROM session_nodes WHERE session_key = ? AND entry_valid = 1", (key,)
    ).fetchone()
    return _parse_entry(row[0]) if row is not None else None


def _parse_entry(text: Any) -> dict[str, Any] | None:
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


# ---- events ----------------------------------------------------------------------------------------------


def _timestamp_ms(obj: dict[str, Any], fallback: int) -> int:
    from openclaw_cli.store.sqlite_common import timestamp_ms

    value = timestamp_ms(obj.get("timestamp"))
    return int(value) if value is not None else fallback


def append_events(
    conn: sqlite3.Connection,
    sid: str,
    lines: list[str],
    *,
    now_ms: int,
    tables: set[str],
    start_seq: int | None = None,
    store: OpenClawDbStore | None = None,
) -> int:
    """Insert `lines` (exact JSON text) as identity rows at the next seqs; an event whose `id` is
    already stored for the session is skipped (S-5). Returns the rows inserted."""
    if start_seq is None:
        last = conn.execute("SELECT max(seq) FROM transcript_events WHERE session_id = ?", (sid,)).fetchone()[
            0
        ]
        start_seq = 0 if last is None else last + 1
    seq = start_seq
    inserted = 0
    for text in lines:
        obj = loads(text)
        if not isinstance(obj, dict):
            raise InvalidDataError(f"Transcript line for session {sid} is not a JSON object")
        event_id = obj.get("id") if isinstance(obj.get("id"), str) and obj["id"].strip() else None
        if obj.get("type") == "session":
            event_id = sid
        if (
            event_id is not None
            and conn.execute(
                "SELECT 1 FROM transcript_event_identities WHERE session_id = ? AND event_id = ?",
                (sid, event_id),
            ).fetchone()
        ):
            continue
        created = _timestamp_ms(obj, now_ms)
        conn.execute(_EVENT_INSERT, (sid, seq, text, created, len(text.encode("utf-8"))))
        if event_id is not None:
            kind = obj.get("type") if isinstance(obj.get("type"), str) else None
            parent = obj.get("parentId") if isinstance(obj.get("parentId"), str) else None
            conn.execute(_IDENTITY_INSERT, (sid, event_id, seq, kind, parent, created))
        seq += 1
        inserted += 1
    if inserted:
        mark_transcript_changed(conn, sid, now_ms=now_ms, tables=tables, rotate=False, store=store)
    return inserted


def mark_transcript_changed(
    conn: sqlite3.Connection,
    sid: str,
    *,
    now_ms: int,
    tables: set[str],
    rotate: bool,
    store: OpenClawDbStore | None = None,
) -> None:
    """After events changed: the window's transcript time, the rewrite generation (materialised
    once for appends, rotated for rewrites), and the projection marked stale — rebuilt before the
    transaction commits when `store` is given (`openclaw_projection.settle`, D26)."""
    if store is not None:
        touch_session(store, sid)
    conn.execute("UPDATE session_windows SET transcript_updated_at = ? WHERE session_id = ?", (now_ms, sid))
    if "transcript_rewrite_watermarks" in tables:
        generation = schema.new_generation()
        if rotate:
            conn.execute(
                "INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?,?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation,"
                " updated_at = excluded.updated_at",
                (sid, generation, now_ms),
            )
        else:
            conn.execute(
                "INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?,?,?)"
                " ON CONFLICT(session_id) DO NOTHING",
                (sid, generation, now_ms),
            )
    if store is None and "session_transcript_index_state" in tables:  # (else settled before the commit)
        conn.execute(
            "UPDATE session_transcript_index_state SET needs_rebuild = 1, updated_at = ? WHERE session_id = ?",
            (now_ms, sid),
        )


def drop_projection(
    conn: sqlite3.Connection, sid: str, tables: set[str], store: OpenClawDbStore | None = None
) -> None:
    """The derived rows of a session whose events are rewritten (rebuilt before the commit when
    `store` is given)."""
    if store is not None:
        touch_session(store, sid)
    if "session_transcript_fts_rows" in tables:
        conn.execute("DELETE FROM session_transcript_fts_rows WHERE session_id = ?", (sid,))
    if "session_transcript_active_events" in tables:
        conn.execute("DELETE FROM session_transcript_active_events WHERE session_id = ?", (sid,))
    if "session_transcript_index_state" in tables:
        conn.execute("DELETE FROM session_transcript_index_state WHERE session_id = ?", (sid,))


# ---- snapshots -------------------------------------------------------------------------------------------


def read_snapshot(store: OpenClawDbStore, key: str, entry: dict[str, Any]) -> TranscriptSnapshot:
    """The session's events and delete-snapshot facts from one read transaction; the facts are
    the snapshot's signature, re-checked inside the write transaction."""
    from openclaw_cli.store.base import ReadIssue
    from openclaw_cli.store.rewrite import parse_transcript_bytes

    sid = entry.get("sessionId")
    if not isinstance(sid, str) or not sid.strip():
        raise NotFoundError(f"Session {key} has no sessionId; nothing to compact.")
    sid = sid.strip()
    conn = store._db()
    issues: list[ReadIssue] = []
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        state = read_state(conn, sid, store._tables)
        buf = io.BytesIO()
        for line in store.iter_transcript(sid, entry=entry, issues=issues):
            buf.write(line.raw.encode("utf-8") + b"\n")
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")
    data = buf.getvalue()
    label = f"{store.path}#{sid}"
    lines = parse_transcript_bytes(data, label, issues) if data else []
    return TranscriptSnapshot(store, key, entry, sid, data, lines, issues, None, dataclasses.astuple(state))


# ---- windows ---------------------------------------------------------------------------------------------


def create_window(
    conn: sqlite3.Connection,
    store: OpenClawDbStore,
    key: str,
    sid: str,
    entry: dict[str, Any],
    *,
    reason: str | None,
    previous: str | None,
    lines: list[str],
    now_ms: int,
) -> None:
    """A new window `sid` (refused when it exists) for the row `key` = `entry` (written first:
    the window's owner must exist), with its `reason`, predecessor and events `lines`."""
    from openclaw_cli.errors import PreconditionError

    if conn.execute("SELECT 1 FROM session_windows WHERE session_id = ?", (sid,)).fetchone():
        raise PreconditionError(f"Session window {sid} already exists")
    if entry.get("sessionId") != sid:
        raise InvalidDataError(f"Entry for {key} must have sessionId {sid} to point at its new window")
    write_entry(conn, key, entry, now_ms=now_ms, store=store)
    conn.execute(
        "UPDATE session_windows SET reason = ?, previous_session_id = coalesce(?, previous_session_id),"
        " created_at = ?, updated_at = max(updated_at, ?) WHERE session_id = ?",
        (reason, previous, now_ms, now_ms, sid),
    )
    if lines:
        append_events(conn, sid, lines, now_ms=now_ms, tables=store._tables, start_seq=0, store=store)
