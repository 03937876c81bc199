"""Session lifecycle writes (compaction-lifecycle.md §3; spec D1, D6, D12, D15): the store write
protocol's `patch_entry`, `reset_session` and `fork_session` for the legacy store and our SQLite
store. The operations layer decides *what* a row becomes (`ops.lifecycle`, `lifecycle`); this
module makes it so, atomically and without losing a transcript line.

* **patch** — read-modify-write of one row. Legacy: under `sessions.json`'s lock (the store
  writer), re-read, mutate, one atomic rewrite. SQLite: one `BEGIN IMMEDIATE` transaction.
* **reset** — the session gets a new id (profile L): the old transcript leaves the store only
  through a verified archive `<oldId>.jsonl.reset.<ts>.zst` (D15) and a header-only transcript
  starts the new session. Legacy order, so a kill at any instant loses nothing: under the old
  transcript's write lock (waited for like every writer, D12) archive → new transcript file → row
  → unlink the original (only while it is still the archived file). SQLite: one transaction
  exports the window, writes the archive, creates the successor window (reason `reset`), points
  the row at it, drops the old window's events and records the archive row; a rollback removes
  the archive again.
* **fork** — a new row whose transcript is the parent's active branch (`store.fork`): legacy
  takes the parent's transcript lock without waiting (a held lock means a writer is mid-turn:
  refused with OpenClaw's "still active" text) and writes the child file before its row; SQLite
  reads the parent and creates the child window + row in one transaction (a busy database waits
  `busy_timeout`, then fails busy).
"""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import NotFoundError, PreconditionError, SessionBusyError
from openclaw_cli.fsio import FILE_MODE, O_CLOEXEC, O_NOFOLLOW, fsync_dir
from openclaw_cli.store.base import DeleteOutcome as DeleteOutcome  # re-exported: it lives with the protocol

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore
    from openclaw_cli.store.legacy.store import LegacyStore
    from openclaw_cli.store.sqlite.store import SqliteStore

ACTIVE_CODE = "OPENCLAW_SESSION_ACTIVE"

Mutate = Callable[[dict[str, Any] | None], dict[str, Any] | None]


@dataclass
class ResetOutcome:
    entry: dict[str, Any]
    session_id: str
    previous_session_id: str | None
    archive: Any = None  # archives.ArchiveResult of the previous transcript (None: nothing to archive)
    transcript: str | None = None  # the new transcript: a file path (legacy) or `sqlite:<db>#<id>`
    shared: bool = False  # another row still uses the previous transcript: it stayed in place


@dataclass
class ForkOutcome:
    key: str
    entry: dict[str, Any]
    session_id: str
    plan: Any  # store.fork.ForkPlan
    transcript: str | None = None


def active_parent_error(key: str) -> SessionBusyError:
    return SessionBusyError(f"Parent session {key} is still active; try again in a moment.", code=ACTIVE_CODE)


_iso = iso_ms  # `clock.iso_ms`


def _session_file_value(old: Any, new_path: Path) -> str | None:
    """Keep a row's `sessionFile` style: a bare name stays a bare name, a path stays absolute;
    a row without one gets none (the default name is the new id's)."""
    if not isinstance(old, str) or not old:
        return None
    if "/" not in old and "\\" not in old:
        return new_path.name
    return str(new_path)


def _create_exclusive(path: Path, lines: list[str]) -> None:
    """A new file with `lines`, published complete (temp, fsync, link/rename without replacing);
    an existing file of that name is never touched."""
    from openclaw_cli.store.archives import _publish

    data = b"".join(line.encode("utf-8") + b"\n" for line in lines)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if not _publish(tmp, path):
            raise PreconditionError(f"Refusing to overwrite existing transcript {path}")
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    fsync_dir(path.parent)


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# ---- legacy -------------------------------------------------------------------------------------------


def patch_legacy(
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


def leaf_id(store: SessionStore, session_id: str, entry: dict[str, Any] | None) -> str | None:
    """The id of the transcript's last non-header entry (the leaf a new entry hangs from)."""
    for line in reversed(store.tail_transcript(session_id, 8, entry=entry, issues=[])):
        obj = line.obj
        if isinstance(obj, dict) and obj.get("type") != "session" and isinstance(obj.get("id"), str):
            return cast(str, obj["id"])
    return None


def reset_legacy(
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
        session_file = _session_file_value(current.get("sessionFile"), new_path)
        if session_file is not None:
            updated["sessionFile"] = session_file
        outcome = ResetOutcome(updated, new_sid, old_sid, None, str(new_path), shared)
        first = [header_line(new_sid, timestamp=_iso(now_ms), cwd=cwd)]
        if old_path is None or shared:
            _create_exclusive(new_path, first)
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
            _create_exclusive(new_path, first)
            store.upsert_entries({key: updated}, lock_settings=lock_settings)
            if _signature(old_path) == before:
                os.unlink(old_path)
                fsync_dir(old_path.parent)
        return outcome


def fork_legacy(
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
    from openclaw_cli.store.fork import plan_fork
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
            child_sid = str(uuid.uuid4())
            header = snapshot.header or {}
            cwd: str = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
            plan = plan_fork(
                parent,
                header,
                snapshot.branch,
                child_session_id=child_sid,
                timestamp=_iso(now_ms),
                cwd=cwd,
                parent_ref=str(path) if path is not None else None,
                max_tokens=max_tokens,
                through_last_completed=through_last_completed,
                at_entry=at_entry,
                all_lines=snapshot.lines,
            )
            child = build({"sessionId": child_sid}, plan)
            child_path = store.sessions_dir / f"{child_sid}.jsonl"
            session_file = _session_file_value(parent.get("sessionFile"), child_path)
            if session_file is not None:
                child["sessionFile"] = session_file
            _create_exclusive(child_path, plan.lines)
            try:
                store.upsert_entries({child_key: child}, lock_settings=lock_settings)
            except BaseException:
                os.unlink(child_path)  # no row points at it: never leave a half-made fork behind
                raise
        finally:
            if lock is not None:
                lock.release()
        return ForkOutcome(child_key, child, child_sid, plan, str(child_path))


# ---- our SQLite store ------------------------------------------------------------------------------------


def patch_sqlite(store: SqliteStore, key: str, mutate: Mutate, *, create: bool) -> dict[str, Any] | None:
    store.ensure_writable("update a session")
    with store.transaction():
        current = store.get_entry(key)
        if current is None and not create:
            raise NotFoundError(f"session not found: {key}")
        updated = mutate(dict(current) if current is not None else None)
        if updated is None or updated == current:
            return current
        store.upsert_entries({key: updated})
        return updated


def patch_many_sqlite(store: SqliteStore, items: list[tuple[str, Mutate]], *, create: bool) -> list[Any]:
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
                out.append(patch_sqlite(store, key, mutate, create=create))
            except OpenClawError as exc:
                conn.execute("ROLLBACK TO openclaw_patch")
                out.append(exc)
            conn.execute("RELEASE openclaw_patch")
    return out


def reset_sqlite(
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
                "timestamp": _iso(now_ms),
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


def fork_sqlite(
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
    from openclaw_cli.store.fork import plan_fork

    store.ensure_writable("fork a session")
    with store.transaction():
        parent = store.get_entry(parent_key)
        if parent is None:
            raise NotFoundError(f"session not found: {parent_key}")
        if store.get_entry(child_key) is not None:
            raise PreconditionError(f"session already exists: {child_key}")
        snapshot = store.read_snapshot(parent_key, parent)
        child_sid = str(uuid.uuid4())
        header = snapshot.header or {}
        cwd: str = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
        plan = plan_fork(
            parent,
            header,
            snapshot.branch,
            child_session_id=child_sid,
            timestamp=_iso(now_ms),
            cwd=cwd,
            parent_ref=f"sqlite:{store.path}#{parent['sessionId']}",
            max_tokens=max_tokens,
            through_last_completed=through_last_completed,
            at_entry=at_entry,
            all_lines=snapshot.lines,
        )
        child = build({"sessionId": child_sid}, plan)
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


# ---- branch switch ------------------------------------------------------------------------------------


@dataclass
class SwitchOutcome:
    entry: dict[str, Any]
    session_id: str
    previous_session_id: str
    transcript: str | None = None


def _switch_plan(
    snapshot: Any,
    leaf_id: str,
    build: Callable[[dict[str, Any], str], dict[str, Any]],
    current: dict[str, Any],
    now_ms: int,
) -> tuple[str, list[str], dict[str, Any]]:
    from openclaw_cli.store.message_cut import plan_switch

    new_sid = str(uuid.uuid4())
    snapshot.restore_raw()  # every line is copied as it is
    lines = plan_switch(snapshot.lines, leaf_id, session_id=new_sid, timestamp=_iso(now_ms), cwd=os.getcwd())
    return new_sid, lines, build(dict(current), new_sid)


def switch_legacy(
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
            new_sid, lines, updated = _switch_plan(snapshot, leaf_id, build, current, now_ms)
            new_path = store.sessions_dir / f"{new_sid}.jsonl"
            session_file = _session_file_value(current.get("sessionFile"), new_path)
            if session_file is not None:
                updated["sessionFile"] = session_file
            _create_exclusive(new_path, lines)
            try:
                store.upsert_entries({key: updated}, lock_settings=lock_settings)
            except BaseException:
                os.unlink(new_path)  # no row points at it
                raise
        finally:
            lock.release()
    return SwitchOutcome(updated, new_sid, old_sid, str(new_path))


def switch_sqlite(
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
        new_sid, lines, updated = _switch_plan(snapshot, leaf_id, build, current, now_ms)
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
