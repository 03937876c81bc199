"""Our SQLite store's compaction writes (`commit_compaction`, `commit_max_lines`), each one
transaction: the protocol is in `store/compaction_common.py`'s docstring.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.errors import InvalidDataError
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.compaction_common import (
    ARCHIVE_REASON,
    Checkpoints,
    archive_json,
    archive_snapshot,
    can_rotate,
    checkpoint_record,
    expected_context,
    successor_entry,
    successor_for,
)
from openclaw_cli.store.rewrite import (
    entry_after_compaction,
    entry_after_max_lines,
)
from openclaw_cli.store.snapshot import (
    PersistResult,
    SnapshotChanged,
    TranscriptSnapshot,
)

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


def _verify(snapshot: TranscriptSnapshot) -> dict[str, Any]:
    store = snapshot.store
    totals = store.window_totals(snapshot.session_id)  # type: ignore[attr-defined]
    have = (totals.events, totals.bytes) if totals is not None else (0, 0)
    if have != snapshot.signature:
        raise SnapshotChanged(snapshot.key)
    row = store.get_entry(snapshot.key)
    if row is None or row.get("sessionId") != snapshot.entry.get("sessionId"):
        raise SnapshotChanged(snapshot.key)
    return row


def commit_compaction(
    snapshot: TranscriptSnapshot, comp: dict[str, Any], *, rotate: bool, now_ms: int, reason: str = "manual"
) -> PersistResult:
    store = cast("SqliteStore", snapshot.store)
    cp = Checkpoints()
    line = dumps_compact(comp)
    tokens_after = comp.get("tokensAfter")
    result = PersistResult(snapshot.session_id, None)
    successor_lines: list[str] | None = None
    new_sid = str(uuid.uuid4())
    archive: Any = None
    if rotate and can_rotate(snapshot.entry, result.warnings):
        all_lines, expected = expected_context(snapshot, line, comp)
        try:
            successor_lines = successor_for(
                snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=None
            )
        except InvalidDataError as exc:
            result.warnings.append(f"successor window not created: {exc.message}")
    with store.transaction():
        row = _verify(snapshot)
        if successor_lines is not None and not can_rotate(row, result.warnings):
            successor_lines = None
        if successor_lines is not None:  # inside the write transaction: a busy store writes nothing at all
            archive = archive_snapshot(store, snapshot, now_ms)
            result.archive = archive_json(archive)
            cp()
        store.append_events(snapshot.session_id, [line], session_key=snapshot.key)
        current = cast("dict[str, Any]", store.get_entry(snapshot.key))  # verified above, same transaction
        updated = entry_after_compaction(current, tokens_after=tokens_after, now_ms=now_ms)
        if successor_lines is not None:
            comp_id = comp.get("id")
            pre: dict[str, Any] = {
                "sessionId": snapshot.session_id,
                "leafId": comp.get("parentId"),
                "entryId": comp_id,
            }
            if isinstance(current.get("sessionFile"), str):
                pre["sessionFile"] = current["sessionFile"]
            post = {"sessionId": new_sid, "leafId": comp_id, "entryId": comp_id}
            updated = successor_entry(
                updated,
                new_sid,
                checkpoint_record(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            result.successor = _open_successor(
                store, snapshot, new_sid, successor_lines, updated, archive, now_ms
            )
            result.session_id = new_sid
        else:
            store.upsert_entries({snapshot.key: updated})
        result.entry = updated
        cp()  # a kill here rolls the whole transaction back
    cp()
    cp.finish()
    return result


def _open_successor(
    store: SqliteStore,
    snapshot: TranscriptSnapshot,
    new_sid: str,
    lines: list[Any],
    updated: dict[str, Any],
    archive: Any,
    now_ms: int,
) -> dict[str, Any]:
    """The successor window (reason `compaction`, the old header's cwd) under the row `updated`,
    the old window's archive recorded; returns the result's `successor`."""
    header = snapshot.header or {}
    store.create_window(
        snapshot.key,
        new_sid,
        previous_session_id=snapshot.session_id,
        reason="compaction",
        raw_lines=lines,
        entry=updated,
        created_at_ms=now_ms,
        cwd=header.get("cwd") if isinstance(header.get("cwd"), str) else None,
    )
    _record_archive(store, snapshot, archive, now_ms)
    return {
        "sessionId": new_sid,
        "previousSessionId": snapshot.session_id,
        "window": "compaction",
        "lines": len(lines),
    }


def _record_archive(store: SqliteStore, snapshot: TranscriptSnapshot, archive: Any, now_ms: int) -> None:
    store.record_archive(
        archive_name=archive.path.name,
        session_id=snapshot.session_id,
        session_key=snapshot.key,
        reason=ARCHIVE_REASON,
        encoding="zstd" if archive.compressed else "identity",
        sha256=archive.sha256,
        archive_bytes=archive.stored_size,
        event_count=len(snapshot.lines),
        raw_bytes=archive.size,
        created_at_ms=now_ms,
    )


def commit_max_lines(
    snapshot: TranscriptSnapshot, kept: list[bytes], *, now_ms: int, keep_session_id: bool = False
) -> PersistResult:
    """D15 + D16 on our SQLite store: the kept lines become a successor window (new sessionId,
    reason `compaction`); the previous window stays readable; the full original is archived.
    With `keep_session_id` (OpenClaw 2026.9.6+): the session keeps its id and window, which holds
    the kept lines from seq 0 (the full original archived first, as above)."""
    import orjson

    store = cast("SqliteStore", snapshot.store)
    cp = Checkpoints()
    if keep_session_id:
        result = PersistResult(snapshot.session_id, None)
        with store.transaction():
            _verify(snapshot)
            archive = archive_snapshot(store, snapshot, now_ms)
            result.archive = archive_json(archive)
            cp()
            store.replace_events(snapshot.session_id, kept, session_key=snapshot.key)
            current = cast(
                "dict[str, Any]", store.get_entry(snapshot.key)
            )  # verified above, same transaction
            updated = entry_after_max_lines(current, now_ms=now_ms, clears_usage=True)
            store.upsert_entries({snapshot.key: updated})
            _record_archive(store, snapshot, archive, now_ms)
            result.entry = updated
            cp()
        cp()
        cp.finish()
        return result
    new_sid = str(uuid.uuid4())
    lines: list[bytes] = list(kept)
    if lines:
        try:
            first = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            first = None
        if isinstance(first, dict) and first.get("type") == "session":  # the header names the new window
            first["id"] = new_sid
            first.pop("sessionId", None)
            lines[0] = orjson.dumps(first)
    result = PersistResult(new_sid, None)
    with store.transaction():
        _verify(snapshot)
        archive = archive_snapshot(store, snapshot, now_ms)
        result.archive = archive_json(archive)
        cp()
        current = cast("dict[str, Any]", store.get_entry(snapshot.key))  # verified above, same transaction
        updated = entry_after_compaction(current, tokens_after=None, now_ms=now_ms, count=False)
        pre: dict[str, Any] = {"sessionId": snapshot.session_id}
        if isinstance(current.get("sessionFile"), str):
            pre["sessionFile"] = current["sessionFile"]
        updated = successor_entry(
            updated,
            new_sid,
            checkpoint_record(
                snapshot.key, reason="manual", now_ms=now_ms, comp=None, pre=pre, post={"sessionId": new_sid}
            ),
        )
        result.successor = _open_successor(store, snapshot, new_sid, lines, updated, archive, now_ms)
        result.entry = updated
        cp()
    cp()
    cp.finish()
    return result
