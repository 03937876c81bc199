"""Our SQLite store's session lifecycle writes (`patch_entry`, `patch_entries`, `reset_session`,
`fork_session`, `switch_branch`), each one transaction: the rules are in
`store/lifecycle_common.py`'s docstring.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import NotFoundError, PreconditionError
from openclaw_cli.store.lifecycle_common import (
    ForkOutcome,
    Mutate,
    ResetOutcome,
    SwitchOutcome,
    leaf_id,
    plan_child,
    switch_plan,
)

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


def patch_entry(store: SqliteStore, key: str, mutate: Mutate, *, create: bool) -> dict[str, Any] | None:
    store.ensure_writable("update a session")
    with store.transaction():
        found = store.entry_for_update(key)
        current = found[0] if found is not None else None
        if current is None and not create:
            raise NotFoundError(f"session not found: {key}")
        updated = mutate(dict(current) if current is not None else None)
        if updated is None or updated == current:
            return current
        if found is None:
            store.upsert_entries({key: updated})
        else:
            store.update_entry(key, updated, found[1])
        return updated


def patch_entries(store: SqliteStore, items: list[tuple[str, Mutate]], *, create: bool) -> list[Any]:
    """Several patches in one transaction (one commit), each in its own savepoint: a refused patch
    (an `OpenClawError` from its mutation) is rolled back alone and reported in its place; later
    patches see the earlier ones (a label taken by patch 1 is taken for patch 2). Any other error
    rolls the whole transaction back."""
    from openclaw_cli.errors import OpenClawError

    store.ensure_writable("update a session")
    out: list[Any] = []
    with store.transaction() as conn:
        for key, mutate in items:
            conn.execute("SAVEPOINT openclaw_patch")
            try:
                out.append(patch_entry(store, key, mutate, create=create))
            except OpenClawError as exc:
                conn.execute("ROLLBACK TO openclaw_patch")
                out.append(exc)
            conn.execute("RELEASE openclaw_patch")
    return out


def archive_rows(
    store: SqliteStore, archives: Mapping[str, str], *, archived_at: int, expected: Mapping[str, Any]
) -> list[str]:
    """`SessionStore.archive_rows` in one transaction, set-based: the rows read 500 a statement,
    each changed as `archive_mutation` says, the changed ones written with one upsert (the
    default's `patch_entries` took a savepoint, a read and an upsert per row: 2,000 rows archived
    by a cleanup's cap, issue 30). Joins the caller's transaction (cleanup's removals)."""
    from openclaw_cli.jsonutil import loads
    from openclaw_cli.store.base import archive_mutation

    store.ensure_writable("archive sessions")
    keys = list(archives)
    if not keys:
        return []
    with store.transaction() as conn:
        current: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, text in conn.execute(
                f"SELECT session_key, entry_json FROM session_nodes WHERE session_key IN ({marks})", chunk
            ):
                current[key] = loads(text)
        updates: dict[str, dict[str, Any]] = {}
        for key, reason in archives.items():
            row = current.get(key)
            updated = archive_mutation(reason, archived_at, expected.get(key))(
                dict(row) if row is not None else None
            )
            if updated is not None and updated != row:
                updates[key] = updated
        if updates:
            store.upsert_entries(updates)
    done = []
    for key, reason in archives.items():
        row = updates.get(key, current.get(key))
        if (
            isinstance(row, dict)
            and row.get("archivedAt") == archived_at
            and row.get("archiveReason") == reason
        ):
            done.append(key)
    return done


def reset_session(
    store: SqliteStore, key: str, build: Mutate, *, now_ms: int, marker: dict[str, Any] | None = None
) -> ResetOutcome:
    from openclaw_cli.jsonutil import dumps_compact
    from openclaw_cli.store.archives import write_verified_archive

    store.ensure_writable("reset a session")
    archive = None
    try:
        with store.transaction() as conn:
            current = store.get_entry(key)
            if current is None:
                raise NotFoundError(f"session not found: {key}")
            updated = build(dict(current))
            assert updated is not None
            old_sid = current["sessionId"]
            new_sid = updated["sessionId"]
            if new_sid == old_sid:  # 2026.9.6: the session goes on; its transcript gets the reset entry
                if marker is not None and store.has_transcript(old_sid):
                    line = dumps_compact({**marker, "parentId": leaf_id(store, old_sid, current)})
                    store.append_events(old_sid, [line], session_key=key, created_at_ms=now_ms)
                store.upsert_entries({key: updated})
                return ResetOutcome(updated, old_sid, old_sid, None, f"sqlite:{store.path}#{old_sid}", False)
            updated.pop("sessionFile", None)  # a legacy file name would name the wrong session now
            shared = (
                conn.execute(
                    "SELECT 1 FROM session_nodes WHERE current_session_id = ? AND session_key != ? LIMIT 1",
                    (old_sid, key),
                ).fetchone()
                is not None
            )
            lines = store.iter_transcript(old_sid)
            try:
                first = next(lines, None)
            finally:
                lines.close()
            cwd = None
            if first is not None and first.obj is not None and first.obj.get("type") == "session":
                cwd = first.obj.get("cwd") if isinstance(first.obj.get("cwd"), str) else None
            totals = None
            if not shared:
                buffer = io.BytesIO()
                totals = store.export_transcript(old_sid, buffer)
                if totals.events:
                    archive = write_verified_archive(
                        store.sessions_dir, old_sid, "reset", buffer.getvalue(), now_ms=now_ms
                    )
            header = {
                "type": "session",
                "version": 4,
                "id": new_sid,
                "timestamp": iso_ms(now_ms),
                "cwd": cwd if cwd is not None else os.getcwd(),
            }
            store.create_window(
                key,
                new_sid,
                previous_session_id=old_sid,
                reason="reset",
                raw_lines=[dumps_compact(header)],
                entry=updated,
                created_at_ms=now_ms,
            )
            if totals is not None:
                dropped = store.drop_session_events([old_sid], expected={old_sid: totals})
                if dropped and archive is not None:
                    store.record_archive(
                        archive_name=archive.path.name,
                        session_id=old_sid,
                        session_key=key,
                        reason="reset",
                        encoding="zstd" if archive.compressed else "identity",
                        sha256=archive.sha256,
                        archive_bytes=archive.stored_size,
                        event_count=totals.events,
                        raw_bytes=archive.size,
                        created_at_ms=now_ms,
                    )
    except BaseException:
        if archive is not None and not archive.reused:
            try:
                os.unlink(archive.path)  # the transaction rolled back: the original is still there
            except OSError:
                pass
        raise
    return ResetOutcome(updated, new_sid, old_sid, archive, f"sqlite:{store.path}#{new_sid}", shared)


def fork_session(
    store: SqliteStore,
    parent_key: str,
    child_key: str,
    build: Callable[[dict[str, Any], Any], dict[str, Any]],
    *,
    now_ms: int,
    max_tokens: int,
    through_last_completed: bool,
    at_entry: str | None = None,
) -> ForkOutcome:
    store.ensure_writable("fork a session")
    with store.transaction():
        parent = store.get_entry(parent_key)
        if parent is None:
            raise NotFoundError(f"session not found: {parent_key}")
        if store.get_entry(child_key) is not None:
            raise PreconditionError(f"session already exists: {child_key}")
        snapshot = store.read_snapshot(parent_key, parent)
        child_sid, cwd, plan, child = plan_child(
            parent,
            snapshot,
            build,
            now_ms=now_ms,
            parent_ref=f"sqlite:{store.path}#{parent['sessionId']}",
            max_tokens=max_tokens,
            through_last_completed=through_last_completed,
            at_entry=at_entry,
        )
        child.pop("sessionFile", None)
        store.create_window(
            child_key,
            child_sid,
            reason="fork",
            raw_lines=plan.lines,
            entry=child,
            created_at_ms=now_ms,
            cwd=cwd,
        )
    return ForkOutcome(child_key, child, child_sid, plan, f"sqlite:{store.path}#{child_sid}")


def switch_branch(
    store: SqliteStore,
    key: str,
    leaf_id: str,
    build: Callable[[dict[str, Any], str], dict[str, Any]],
    *,
    now_ms: int,
) -> SwitchOutcome:
    """One transaction: read the session, create the successor window (reason `switch`, the old
    one as its predecessor, whose events stay) and point the row at it."""
    store.ensure_writable("switch a session's branch")
    with store.transaction():
        current = store.get_entry(key)
        if current is None or not current.get("sessionId"):
            raise NotFoundError(f"session not found: {key}")
        current = dict(current)
        snapshot = store.read_snapshot(key, current)
        new_sid, lines, updated = switch_plan(snapshot, leaf_id, build, current, now_ms)
        updated.pop("sessionFile", None)
        store.create_window(
            key,
            new_sid,
            previous_session_id=current["sessionId"],
            reason="switch",
            raw_lines=lines,
            entry=updated,
            created_at_ms=now_ms,
        )
    return SwitchOutcome(updated, new_sid, current["sessionId"], f"sqlite:{store.path}#{new_sid}")
