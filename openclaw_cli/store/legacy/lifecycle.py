"""The legacy store's session lifecycle writes (`patch_entry`, `reset_session`, `fork_session`,
`switch_branch`): the rules and the crash-safe order are in `store/lifecycle_common.py`'s docstring.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import NotFoundError, PreconditionError, SessionBusyError
from openclaw_cli.fsio import fsync_dir
from openclaw_cli.store.lifecycle_common import (
    ACTIVE_CODE,
    ForkOutcome,
    Mutate,
    ResetOutcome,
    SwitchOutcome,
    active_parent_error,
    create_exclusive,
    leaf_id,
    plan_child,
    session_file_value,
    switch_plan,
)

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore


def patch_entry(
    store: LegacyStore, key: str, mutate: Mutate, *, lock_settings: Any, create: bool
) -> dict[str, Any] | None:
    from openclaw_cli.store.lock import transcript_lock

    store.ensure_writable("update a session")
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        current = store.get_entry(key)
        if current is None and not create:
            raise NotFoundError(f"session not found: {key}")
        updated = mutate(dict(current) if current is not None else None)
        if updated is None or updated == current:
            return current
        store.upsert_entries({key: updated}, lock_settings=lock_settings)
        return updated


def _shares_transcript(store: LegacyStore, key: str, entry: dict[str, Any], path: Path | None) -> bool:
    """Does another row use this session's transcript (same id, or a `sessionFile` naming it)?"""
    sid = entry.get("sessionId")
    name = path.name if path is not None else None
    for other_key, other in store.load_entries().items():
        if other_key == key:
            continue
        if other.get("sessionId") == sid:
            return True
        ref = other.get("sessionFile")
        if name is not None and isinstance(ref, str) and os.path.basename(ref.replace("\\", "/")) == name:
            return True
    return False


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def reset_session(
    store: LegacyStore,
    key: str,
    build: Mutate,
    *,
    lock_settings: Any,
    now_ms: int,
    marker: dict[str, Any] | None = None,
) -> ResetOutcome:
    from openclaw_cli.jsonutil import dumps_compact
    from openclaw_cli.store.archives import write_verified_archive
    from openclaw_cli.store.lock import transcript_lock
    from openclaw_cli.store.transcript import header_line, read_header

    store.ensure_writable("reset a session")
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        current = store.get_entry(key)
        if current is None:
            raise NotFoundError(f"session not found: {key}")
        current = dict(current)
        updated = build(dict(current))
        assert updated is not None
        old_sid = current["sessionId"].strip()
        new_sid = updated["sessionId"]
        old_path = store.resolve_transcript(old_sid, current, [])
        if new_sid.strip() == old_sid:  # 2026.9.6: the session goes on; its transcript gets the reset entry
            if isinstance(current.get("sessionFile"), str):
                updated["sessionFile"] = current["sessionFile"]
            path = old_path
            if marker is not None and old_path is not None:
                line = dumps_compact({**marker, "parentId": leaf_id(store, old_sid, current)})
                path = store.append_transcript(
                    old_sid, [line], entry=current, lock_settings=lock_settings, now_ms=now_ms
                )
            store.upsert_entries({key: updated}, lock_settings=lock_settings)
            return ResetOutcome(
                updated, old_sid, old_sid, None, str(path) if path is not None else None, False
            )
        new_path = store.sessions_dir / f"{new_sid}.jsonl"
        header = read_header(old_path, []) if old_path is not None else None
        cwd = header.cwd if header is not None and header.cwd else os.getcwd()
        shared = _shares_transcript(store, key, current, old_path)
        session_file = session_file_value(current.get("sessionFile"), new_path)
        if session_file is not None:
            updated["sessionFile"] = session_file
        outcome = ResetOutcome(updated, new_sid, old_sid, None, str(new_path), shared)
        first = [header_line(new_sid, timestamp=iso_ms(now_ms), cwd=cwd)]
        if old_path is None or shared:
            create_exclusive(new_path, first)
            store.upsert_entries({key: updated}, lock_settings=lock_settings)
            return outcome
        with transcript_lock(old_path, lock_settings):
            # Under the transcript lock no cooperating writer appends: archive, re-check, switch.
            for _ in range(3):
                before = _signature(old_path)
                archive = write_verified_archive(
                    store.sessions_dir, old_sid, "reset", old_path, now_ms=now_ms
                )
                if before is not None and _signature(old_path) == before:
                    break
                if not archive.reused:
                    os.unlink(archive.path)  # a writer ignoring the lock appended meanwhile: again
            else:
                raise SessionBusyError(
                    f"Transcript {old_path} keeps changing while it is archived; retry later."
                )
            outcome.archive = archive
            create_exclusive(new_path, first)
            store.upsert_entries({key: updated}, lock_settings=lock_settings)
            if _signature(old_path) == before:
                os.unlink(old_path)
                fsync_dir(old_path.parent)
        return outcome


def fork_session(
    store: LegacyStore,
    parent_key: str,
    child_key: str,
    build: Callable[[dict[str, Any], Any], dict[str, Any]],
    *,
    lock_settings: Any,
    now_ms: int,
    max_tokens: int,
    wait: bool,
    through_last_completed: bool,
    at_entry: str | None = None,
) -> ForkOutcome:
    from openclaw_cli.store.lock import LockSettings, acquire_transcript_lock, transcript_lock

    store.ensure_writable("fork a session")
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        parent = store.get_entry(parent_key)
        if parent is None:
            raise NotFoundError(f"session not found: {parent_key}")
        if store.get_entry(child_key) is not None:
            raise PreconditionError(f"session already exists: {child_key}")
        parent = dict(parent)
        path = store.resolve_transcript(parent["sessionId"], parent, [])
        lock = None
        if path is not None and not wait:
            no_wait = LockSettings(
                acquire_timeout_ms=0, stale_ms=lock_settings.stale_ms, max_hold_ms=lock_settings.max_hold_ms
            )
            try:
                lock = acquire_transcript_lock(path, no_wait)
            except SessionBusyError:
                raise active_parent_error(parent_key) from None
        try:
            snapshot = store.read_snapshot(parent_key, parent)
            child_sid, _cwd, plan, child = plan_child(
                parent,
                snapshot,
                build,
                now_ms=now_ms,
                parent_ref=str(path) if path is not None else None,
                max_tokens=max_tokens,
                through_last_completed=through_last_completed,
                at_entry=at_entry,
            )
            child_path = store.sessions_dir / f"{child_sid}.jsonl"
            session_file = session_file_value(parent.get("sessionFile"), child_path)
            if session_file is not None:
                child["sessionFile"] = session_file
            create_exclusive(child_path, plan.lines)
            try:
                store.upsert_entries({child_key: child}, lock_settings=lock_settings)
            except BaseException:
                os.unlink(child_path)  # no row points at it: never leave a half-made fork behind
                raise
        finally:
            if lock is not None:
                lock.release()
        return ForkOutcome(child_key, child, child_sid, plan, str(child_path))


def switch_branch(
    store: LegacyStore,
    key: str,
    leaf_id: str,
    build: Callable[[dict[str, Any], str], dict[str, Any]],
    *,
    lock_settings: Any,
    now_ms: int,
) -> SwitchOutcome:
    """Under the store writer and the old transcript's lock (not waited for: a held lock is a
    writer mid-turn), the new transcript is written (exclusively) before the row points at it;
    the old file is never touched."""
    from openclaw_cli.store.lock import LockSettings, acquire_transcript_lock, transcript_lock

    store.ensure_writable("switch a session's branch")
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        current = store.get_entry(key)
        if current is None or not current.get("sessionId"):
            raise NotFoundError(f"session not found: {key}")
        current = dict(current)
        old_sid = current["sessionId"]
        path = store.resolve_transcript(old_sid, current, [])
        if path is None:
            raise PreconditionError(f"branch entry not found: {leaf_id}")
        no_wait = LockSettings(
            acquire_timeout_ms=0, stale_ms=lock_settings.stale_ms, max_hold_ms=lock_settings.max_hold_ms
        )
        try:
            lock = acquire_transcript_lock(path, no_wait)
        except SessionBusyError:
            raise SessionBusyError(
                "Branch switch is unavailable while the agent is working.", code=ACTIVE_CODE
            ) from None
        try:
            snapshot = store.read_snapshot(key, current)
            new_sid, lines, updated = switch_plan(snapshot, leaf_id, build, current, now_ms)
            new_path = store.sessions_dir / f"{new_sid}.jsonl"
            session_file = session_file_value(current.get("sessionFile"), new_path)
            if session_file is not None:
                updated["sessionFile"] = session_file
            create_exclusive(new_path, lines)
            try:
                store.upsert_entries({key: updated}, lock_settings=lock_settings)
            except BaseException:
                os.unlink(new_path)  # no row points at it
                raise
        finally:
            lock.release()
    return SwitchOutcome(updated, new_sid, old_sid, str(new_path))
