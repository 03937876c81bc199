"""The real OpenClaw database's `retire` and `retire_all` (cleanup enforce, agent delete): the
order (export, verified archive files, one transaction) is in `writes.py`'s docstring.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openclaw_cli.store.base import LeavingHook
from openclaw_cli.store.openclaw.writes import (
    ArchivePublisher,
    SessionExport,
    chunks,
    cold_session_ids,
    compress,
    delete_session_states,
    ensure_archive_table,
    export_session,
    insert_archive,
    read_states,
    referenced_by,
    still_placeholders,
    transaction,
    unchanged_rows,
)
from openclaw_cli.store.retire import (
    ApplyOutcome,
    Retirement,
    unlink_planned,
)

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore


@dataclass
class _Decision:
    drop: dict[str, SessionExport] = field(default_factory=dict)
    rehome: dict[str, str] = field(default_factory=dict)  # window -> surviving key
    delete_keys: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _decide(
    conn: sqlite3.Connection, store: OpenClawDbStore, plan: Retirement, exports: dict[str, SessionExport]
) -> _Decision:
    """Inside the transaction: which rows go, which sessions go with them, which windows move."""
    decision = _Decision()
    removing, changed = unchanged_rows(conn, list(dict.fromkeys(plan.removed_keys)), plan.entries)
    decision.kept.extend(changed)
    placeholders = still_placeholders(conn, plan.placeholder_keys)
    decision.kept.extend(k for k in plan.placeholder_keys if k not in placeholders)
    removing.extend(k for k in placeholders if k not in removing)
    removing_set = set(removing)
    sids = list(exports)
    current = read_states(conn, sids, store._tables)
    cold = cold_session_ids(conn, sids, store._tables)
    while True:
        refs = referenced_by(conn, removing_set)
        drop: dict[str, SessionExport] = {}
        for sid, export in exports.items():
            if sid in refs or not export.readable or (export.blob is None and export.events):
                continue
            if sid in cold or current[sid] != export.state:
                continue
            drop[sid] = export
        blocked: list[str] = []
        rehome: dict[str, str] = {}
        for key in sorted(removing_set):
            for (sid,) in conn.execute(
                "SELECT session_id FROM session_windows WHERE session_key = ?", (key,)
            ):
                if sid in drop:
                    continue
                if sid in refs:
                    rehome[sid] = refs[sid]
                else:
                    blocked.append(
                        key
                    )  # a window nobody keeps that cannot leave now (cold, changed, unplanned)
                    break
        if not blocked:
            break
        removing_set.difference_update(blocked)  # those rows stay, and keep what they reference
    decision.drop, decision.rehome = drop, rehome
    decision.delete_keys = [key for key in removing if key in removing_set]
    decision.kept.extend(key for key in removing if key not in removing_set)
    decision.kept.extend(sid for sid in exports if sid not in drop)
    return decision


def _check_archive_space(store: OpenClawDbStore, root: Path, exports: Iterable[SessionExport]) -> None:
    """Issue 13: refuse before the first archive file when the verified archives (their exact
    compressed size), the run's backup still due and the transaction's journal cannot fit."""
    from openclaw_cli.fsio import check_space
    from openclaw_cli.store.openclaw.guard import backup_need
    from openclaw_cli.store.retire import ARCHIVE_SPACE_SLACK

    blobs = sum(len(e.blob) for e in exports if e.blob is not None and e.readable)
    if blobs:
        check_space(
            root,
            blobs + backup_need(store) + ARCHIVE_SPACE_SLACK,
            "the verified archives",
            consequence="nothing was archived or removed",
        )


def retire(
    store: OpenClawDbStore,
    plan: Retirement,
    *,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: Callable[[int], None] | None = None,
    reason: str = "deleted",
    leaving: LeavingHook | None = None,
) -> ApplyOutcome:
    """Apply a cleanup/agent-delete plan to a schema-23 database (module docstring). `leaving`
    sees each export as it is archived, and is called between the durable archive files and the
    transaction."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    conn = store._db()
    publisher = ArchivePublisher(root, now_ms, checkpoint)
    exports: dict[str, SessionExport] = {}
    sids = [
        sid
        for sid in dict.fromkeys(plan.session_ids)
        if isinstance(sid, str) and is_valid_legacy_session_id(sid)
    ]
    try:
        conn.execute("BEGIN")  # one read snapshot for every export
        try:
            states = read_states(conn, sids, store._tables)
            for sid in sids:
                made = export_session(store, sid, states[sid])
                if made is not None:
                    export, data = made
                    if leaving is not None:
                        leaving.exported(sid, data)
                    if data:
                        export.blob = compress(data)
                        export.sha256 = hashlib.sha256(export.blob).hexdigest()
                    exports[sid] = export
                tick(1)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        _check_archive_space(store, root, exports.values())
        for export in exports.values():
            if export.blob is not None and export.readable:
                publisher.publish(export, reason)
        publisher.commit(exports.values())
    except BaseException:
        publisher.rollback()
        raise
    checkpoint()
    try:
        if leaving is not None:
            leaving.before_leaving()  # e.g. the usage ledger: before any session leaves
        with transaction(store) as conn:
            decision = _decide(conn, store, plan, exports)
            if any(export.blob is not None for export in decision.drop.values()):
                ensure_archive_table(conn, store._tables)
            for sid, export in list(decision.drop.items()):
                key = export.state.session_key or plan.session_keys.get(sid)
                if export.blob is not None and not insert_archive(conn, export, key or "", reason, now_ms):
                    del decision.drop[sid]
                    decision.kept.append(sid)
            delete_session_states(conn, list(decision.drop), store._tables)
            for sid, key in decision.rehome.items():
                conn.execute("UPDATE session_windows SET session_key = ? WHERE session_id = ?", (key, sid))
            for chunk in chunks(decision.delete_keys):
                conn.execute(
                    f"DELETE FROM session_nodes WHERE session_key IN ({','.join('?' * len(chunk))})", chunk
                )
            _retention_rows(conn, store, plan)
            if plan.archive_rows:  # joins this transaction (D21: one transaction per operation)
                outcome.archived_keys = store.archive_rows(
                    plan.archive_rows, archived_at=plan.archived_at, expected=plan.entries, lock_settings=None
                )
            checkpoint()  # a kill here rolls the whole transaction back
    except BaseException:
        publisher.rollback()  # nothing was deleted: the files are extra copies
        raise
    checkpoint()
    stale = [
        e.path for sid, e in exports.items() if sid not in decision.drop and e.created and e.path is not None
    ]
    if stale:
        publisher.rollback(stale)
    outcome.kept.extend(decision.kept)
    used = {e.archive_name for e in decision.drop.values() if e.archive_name}
    unlink_planned(root, plan.unlink_actions, used, outcome, checkpoint, tick)
    outcome.archives = sorted(e.archive_name for e in decision.drop.values() if e.archive_name)
    outcome.applied_count = store.count_entries()
    return outcome


def _retention_rows(conn: sqlite3.Connection, store: OpenClawDbStore, plan: Retirement) -> None:
    """Archive rows whose published file the retention sweep removes leave with it (OpenClaw
    removes the rows of expired archives once their files are gone)."""
    names = [a.name for a in plan.unlink_actions if a.source == "retention" and a.kind == "archive"]
    if not names or "session_transcript_archives" not in store._tables:
        return
    for chunk in chunks(names):
        conn.execute(
            "DELETE FROM session_transcript_archives WHERE published_at IS NOT NULL"
            f" AND archive_name IN ({','.join('?' * len(chunk))})",
            chunk,
        )


def retire_all(
    store: OpenClawDbStore, *, now_ms: int, checkpoint: Callable[[], None]
) -> tuple[ApplyOutcome, int, int]:
    """Agent delete: every window (archived first) and every row."""
    entries = store.load_entries()
    sids: list[str] = []
    keys: dict[str, str] = {}
    for window in store.list_windows():
        sids.append(window["sessionId"])
        keys.setdefault(window["sessionId"], window["sessionKey"])
    outcome = retire(
        store,
        Retirement(list(entries), entries=entries, session_ids=sids, session_keys=keys),
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), store.count_entries()
