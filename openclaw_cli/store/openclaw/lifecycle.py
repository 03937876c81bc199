"""Session lifecycle writes on a real OpenClaw schema-23 database (issue 11's protocol:
`patch_entry`, `reset_session`, `fork_session`; `delete_session` is the base one, through
`retire`), each one `BEGIN IMMEDIATE` transaction of `openclaw_writes`, rows as OpenClaw writes them:

* **patch** (archive/unarchive, pin, label, unread/read, overrides): the entry and every projected
  column rewritten, `entry_valid = 1`, the window's projections (OpenClaw's `sessions.patch`
  touches nothing else: no event, no lifecycle revision);
* **reset**: the row gets its new session (the operations layer builds it: new `sessionId`,
  `lifecycleRevision`, counters zeroed, `usageFamilySessionIds` naming both generations); the
  new generation is a window (reason `reset`, `previous_session_id` = the old one) starting with
  a header event; the old window and its events stay, as OpenClaw keeps older generations
  (storage-migration.md S-3) — nothing leaves, so nothing needs an archive;
* **fork**: a child row whose window (reason `fork`) holds the parent's active branch
  (`store.fork.plan_fork`), read inside the same transaction.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import NotFoundError, PreconditionError
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.openclaw.rows import create_window, read_entry, read_snapshot, write_entry
from openclaw_cli.store.openclaw.writes import transaction

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

Mutate = Callable[[dict[str, Any] | None], dict[str, Any] | None]


def patch_entry(
    store: OpenClawDbStore, key: str, mutate: Mutate, *, create: bool, now_ms: int
) -> dict[str, Any] | None:
    with transaction(store) as conn:
        current = read_entry(conn, key)
        if current is None and not create:
            raise NotFoundError(f"session not found: {key}")
        updated = mutate(dict(current) if current is not None else None)
        if updated is None or updated == current:
            return current
        write_entry(conn, key, updated, now_ms=now_ms, store=store)
        return updated


def _header_cwd(store: OpenClawDbStore, sid: str) -> str:
    lines = store.iter_transcript(sid, issues=[])
    try:
        first = next(lines, None)
    finally:
        lines.close()
    if first is not None and first.obj is not None and first.obj.get("type") == "session":
        cwd = first.obj.get("cwd")
        if isinstance(cwd, str):
            return cwd
    return os.getcwd()


def _leaf_id(conn: Any, sid: str) -> str | None:
    """The id of the session's last non-header event (the leaf a new entry hangs from)."""
    row = conn.execute(
        "SELECT event_id FROM transcript_event_identities WHERE session_id = ? AND"
        " coalesce(event_type, '') != 'session' ORDER BY seq DESC LIMIT 1",
        (sid,),
    ).fetchone()
    return row[0] if row else None


def reset_session(
    store: OpenClawDbStore, key: str, build: Mutate, *, now_ms: int, marker: dict[str, Any] | None = None
) -> Any:
    from openclaw_cli.clock import iso_ms
    from openclaw_cli.store.lifecycle_common import ResetOutcome
    from openclaw_cli.store.openclaw.rows import append_events

    with transaction(store) as conn:
        current = read_entry(conn, key)
        if current is None:
            raise NotFoundError(f"session not found: {key}")
        updated = build(dict(current))
        assert updated is not None
        old_sid, new_sid = current.get("sessionId"), updated["sessionId"]
        if new_sid == old_sid:  # 2026.9.6: the session goes on; its transcript gets the reset entry
            if (
                marker is not None
                and conn.execute("SELECT 1 FROM session_windows WHERE session_id = ?", (old_sid,)).fetchone()
            ):
                line = dumps_compact({**marker, "parentId": _leaf_id(conn, old_sid)})
                append_events(conn, old_sid, [line], now_ms=now_ms, tables=store._tables, store=store)
            write_entry(conn, key, updated, now_ms=now_ms, store=store)
            return ResetOutcome(updated, new_sid, old_sid, None, f"sqlite:{store.path}#{new_sid}", False)
        updated.pop("sessionFile", None)  # a legacy file name would name the wrong session now
        header = {
            "type": "session",
            "version": 4,
            "id": new_sid,
            "timestamp": iso_ms(now_ms),
            "cwd": _header_cwd(store, old_sid) if isinstance(old_sid, str) else os.getcwd(),
        }
        create_window(
            conn,
            store,
            key,
            new_sid,
            updated,
            reason="reset",
            previous=old_sid if isinstance(old_sid, str) else None,
            lines=[dumps_compact(header)],
            now_ms=now_ms,
        )
    return ResetOutcome(updated, new_sid, old_sid, None, f"sqlite:{store.path}#{new_sid}", False)


def fork_session(
    store: OpenClawDbStore,
    parent_key: str,
    child_key: str,
    build: Callable[[dict[str, Any], Any], dict[str, Any]],
    *,
    now_ms: int,
    max_tokens: int,
    through_last_completed: bool,
    at_entry: str | None = None,
) -> Any:
    from openclaw_cli.store.lifecycle_common import ForkOutcome, plan_child

    with transaction(store) as conn:
        parent = read_entry(conn, parent_key)
        if parent is None:
            raise NotFoundError(f"session not found: {parent_key}")
        if read_entry(conn, child_key) is not None:
            raise PreconditionError(f"session already exists: {child_key}")
        snapshot = read_snapshot(store, parent_key, parent)
        child_sid, _cwd, plan, child = plan_child(
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
        create_window(
            conn,
            store,
            child_key,
            child_sid,
            child,
            reason=None if at_entry is not None else "fork",  # OpenClaw's message-cut window has none
            previous=None,
            lines=plan.lines,
            now_ms=now_ms,
        )
    return ForkOutcome(child_key, child, child_sid, plan, f"sqlite:{store.path}#{child_sid}")


def switch_branch(
    store: OpenClawDbStore,
    key: str,
    leaf_id: str,
    build: Callable[[dict[str, Any], str], dict[str, Any]],
    *,
    now_ms: int,
) -> Any:
    """OpenClaw's branch switch: the row moves to a new window (no reason, the old one as its
    predecessor) holding the old events and a `leaf` control; the old window and its events stay."""
    from openclaw_cli.store.lifecycle_common import SwitchOutcome, switch_plan

    with transaction(store) as conn:
        current = read_entry(conn, key)
        if current is None or not current.get("sessionId"):
            raise NotFoundError(f"session not found: {key}")
        snapshot = read_snapshot(store, key, current)
        new_sid, lines, updated = switch_plan(snapshot, leaf_id, build, current, now_ms)
        updated.pop("sessionFile", None)
        old_sid = current["sessionId"]
        create_window(
            conn, store, key, new_sid, updated, reason=None, previous=old_sid, lines=lines, now_ms=now_ms
        )
    return SwitchOutcome(updated, new_sid, old_sid, f"sqlite:{store.path}#{new_sid}")
