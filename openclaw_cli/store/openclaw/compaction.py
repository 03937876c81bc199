"""The real OpenClaw database's compaction writes (`commit_compaction`, `commit_max_lines`; schema
23 and 24), each one transaction: the protocol is in `store/compaction_common.py`'s docstring.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import uuid
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.errors import InvalidDataError
from openclaw_cli.jsonutil import dumps_compact, loads
from openclaw_cli.store.compaction_common import archive_json
from openclaw_cli.store.openclaw.rows import (
    append_events,
    create_window,
    drop_projection,
    mark_transcript_changed,
    read_entry,
    write_entry,
)
from openclaw_cli.store.openclaw.writes import read_state, transaction
from openclaw_cli.store.snapshot import PersistResult, SnapshotChanged, TranscriptSnapshot

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

BAK_REASON = "bak"  # `<sid>.jsonl.bak.<ts>.zst`: the verified copy of a transcript a compaction rewrites


def _verify(conn: sqlite3.Connection, snapshot: TranscriptSnapshot) -> dict[str, Any]:
    store = snapshot.store
    if snapshot.issues:
        raise SnapshotChanged(snapshot.key)  # an unreadable event: never rewritten around
    if dataclasses.astuple(read_state(conn, snapshot.session_id, store._tables)) != snapshot.signature:  # type: ignore[attr-defined]
        raise SnapshotChanged(snapshot.key)
    row = read_entry(conn, snapshot.key)
    if row is None or row.get("sessionId") != snapshot.entry.get("sessionId"):
        raise SnapshotChanged(snapshot.key)
    return row


def _bak_archive(snapshot: TranscriptSnapshot, now_ms: int) -> Any:
    from openclaw_cli.store.archives import write_verified_archive

    return write_verified_archive(
        snapshot.store.sessions_dir, snapshot.session_id, BAK_REASON, snapshot.data, now_ms=now_ms
    )


def commit_compaction(
    snapshot: TranscriptSnapshot, comp: dict[str, Any], *, rotate: bool, now_ms: int, reason: str = "manual"
) -> PersistResult:
    """R4.8.1 on schema 23: ONE compaction event appended to the session's transcript and the
    row's bookkeeping, in one transaction. With `rotate` (truncateAfterCompaction, D16) the
    successor lines become a new window (reason `compaction`) the row points at; the previous
    window stays, and a verified copy of it is archived first."""
    from openclaw_cli.store.compaction_common import (
        Checkpoints,
        can_rotate,
        checkpoint_record,
        expected_context,
        successor_entry,
        successor_for,
    )
    from openclaw_cli.store.rewrite import entry_after_compaction

    store = cast("OpenClawDbStore", snapshot.store)
    cp = Checkpoints()
    line = dumps_compact(comp)
    result = PersistResult(snapshot.session_id, None)
    successor: list[str] | None = None
    new_sid = str(uuid.uuid4())
    if rotate and can_rotate(snapshot.entry, result.warnings):
        all_lines, expected = expected_context(snapshot, line, comp)
        try:
            successor = successor_for(
                snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=None
            )
        except InvalidDataError as exc:
            result.warnings.append(f"successor window not created: {exc.message}")
    with transaction(store) as conn:
        row = _verify(conn, snapshot)
        if successor is not None and can_rotate(row, result.warnings):
            result.archive = archive_json(_bak_archive(snapshot, now_ms))
            cp()
        else:
            successor = None
        append_events(conn, snapshot.session_id, [line], now_ms=now_ms, tables=store._tables, store=store)
        updated = entry_after_compaction(row, tokens_after=comp.get("tokensAfter"), now_ms=now_ms)
        if successor is not None:
            comp_id = comp.get("id")
            pre: dict[str, Any] = {
                "sessionId": snapshot.session_id,
                "leafId": comp.get("parentId"),
                "entryId": comp_id,
            }
            post = {"sessionId": new_sid, "leafId": comp_id, "entryId": comp_id}
            updated = successor_entry(
                updated,
                new_sid,
                checkpoint_record(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            _new_window(conn, store, snapshot, new_sid, successor, updated, now_ms)
            result.session_id = new_sid
            result.successor = {
                "sessionId": new_sid,
                "previousSessionId": snapshot.session_id,
                "window": "compaction",
                "lines": len(successor),
            }
        else:
            write_entry(conn, snapshot.key, updated, now_ms=now_ms, store=store)
        result.entry = updated
        cp()  # a kill here rolls the whole transaction back
    cp()
    cp.finish()
    return result


def _new_window(
    conn: sqlite3.Connection,
    store: OpenClawDbStore,
    snapshot: TranscriptSnapshot,
    new_sid: str,
    lines: list[str],
    entry: dict[str, Any],
    now_ms: int,
) -> None:
    """A compaction successor window holding `lines` (a header first), the row pointing at it."""
    header = snapshot.header or {}
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
    first = loads(lines[0]) if lines else None
    if not (isinstance(first, dict) and first.get("type") == "session"):
        from openclaw_cli.clock import iso_ms

        lines = [
            dumps_compact(
                {"type": "session", "version": 4, "id": new_sid, "timestamp": iso_ms(now_ms), "cwd": cwd}
            ),
            *lines,
        ]
    create_window(
        conn,
        store,
        snapshot.key,
        new_sid,
        entry,
        reason="compaction",
        previous=snapshot.session_id,
        lines=lines,
        now_ms=now_ms,
    )


def commit_max_lines(
    snapshot: TranscriptSnapshot, kept: list[bytes], *, now_ms: int, clears_usage: bool = True
) -> PersistResult:
    """OpenClaw's `sessions.compact {maxLines}` on schema 23: the session keeps its id and its
    window; its events become `kept` (seq renumbered from 0), the rewrite generation rotates and
    the projection is dropped for OpenClaw to rebuild. The full original is archived first (D15:
    a verified `<sid>.jsonl.bak.<ts>.zst`; OpenClaw itself keeps no copy)."""
    from openclaw_cli.store.compaction_common import Checkpoints
    from openclaw_cli.store.rewrite import entry_after_max_lines

    store = cast("OpenClawDbStore", snapshot.store)
    cp = Checkpoints()
    texts = [line.decode("utf-8") for line in kept]
    result = PersistResult(snapshot.session_id, None)
    with transaction(store) as conn:
        row = _verify(conn, snapshot)
        result.archive = archive_json(_bak_archive(snapshot, now_ms))
        cp()
        sid = snapshot.session_id
        drop_projection(conn, sid, store._tables, store=store)
        conn.execute("DELETE FROM transcript_event_identities WHERE session_id = ?", (sid,))
        conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (sid,))
        append_events(conn, sid, texts, now_ms=now_ms, tables=store._tables, start_seq=0, store=store)
        mark_transcript_changed(conn, sid, now_ms=now_ms, tables=store._tables, rotate=True, store=store)
        updated = entry_after_max_lines(row, now_ms=now_ms, clears_usage=clears_usage)
        write_entry(conn, snapshot.key, updated, now_ms=now_ms, store=store)
        result.entry = updated
        cp()
    cp()
    cp.finish()
    return result
