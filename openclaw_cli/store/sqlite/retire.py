"""Our SQLite store's `retire` and `retire_all`: the order (archive, then one transaction) and why
are in `store/retire.py`'s docstring.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.fsio import check_space
from openclaw_cli.store.base import LeavingHook, SessionTotals
from openclaw_cli.store.retire import (
    ARCHIVE_SPACE_SLACK,
    ApplyOutcome,
    ArchiveBatch,
    ProgressFn,
    Retirement,
    unlink_planned,
)

if TYPE_CHECKING:
    from openclaw_cli.store.sqlite.store import SqliteStore


@dataclass
class SessionArchive:
    session_id: str
    session_key: str | None
    totals: SessionTotals
    archive: Any | None  # ArchiveResult, None for an empty transcript


def retire(
    store: SqliteStore,
    plan: Retirement,
    *,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: ProgressFn | None = None,
    leaving: LeavingHook | None = None,
) -> ApplyOutcome:
    """Apply a SQLite store's plan: archive each leaving session from one consistent export, make
    the archives durable, then one write transaction (re-checked, §8.3). `leaving` sees each
    export as it is archived, and is called between the durable archives and the transaction."""
    from openclaw_cli.ids import is_valid_legacy_session_id

    session_ids = plan.session_ids
    session_keys, unlink_actions = plan.session_keys, plan.unlink_actions
    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    never_reuse = {a.name for a in unlink_actions if a.kind == "archive"}
    sizes = store.session_bytes() if session_ids else {}
    check_space(
        root,
        sum(sizes.get(sid, 0) for sid in session_ids) // 2 + ARCHIVE_SPACE_SLACK,
        "the verified archives",
        consequence="nothing was archived or removed",
    )
    batch = ArchiveBatch(root, now_ms, never_reuse=never_reuse, checkpoint=checkpoint)
    sessions: list[SessionArchive] = []
    valid = [sid for sid in session_ids if is_valid_legacy_session_id(sid)]  # never a path from another
    if len(valid) < len(session_ids):
        tick(len(session_ids) - len(valid))  # no events can exist for them
    try:
        with store.transcript_snapshot():  # one read transaction for every export
            exports: Iterator[tuple[str, bytes, SessionTotals]] = (
                (sid, data if totals.events else b"", totals)
                for sid, data, totals in store.export_transcripts(valid)
            )
            if leaving is not None:
                exports = _told(exports, leaving)
            for sid, totals, result in batch.archive_exports(exports):
                sessions.append(SessionArchive(sid, session_keys.get(sid), totals, result))
                tick(1)
        batch.commit()
    except BaseException:
        batch.rollback()
        raise
    checkpoint()
    expected = {s.session_id: s.totals for s in sessions}
    try:
        if leaving is not None:
            leaving.before_leaving()  # e.g. the usage ledger: before any session leaves
        dropped = _commit(store, plan, sessions, expected, outcome, now_ms)
    except BaseException:
        batch.rollback()  # nothing was deleted: the archives written above are extra copies
        raise
    checkpoint()
    # A session that gained events (or a new reference) since the export stays; our fresh
    # archive of its older content is an extra copy and goes.
    stale = [
        s.archive.path
        for s in sessions
        if s.session_id not in dropped and s.archive is not None and not s.archive.reused
    ]
    if stale:
        outcome.kept.extend(s.session_id for s in sessions if s.session_id not in dropped)
        batch.rollback(stale)
    unlink_planned(root, unlink_actions, batch.used, outcome, checkpoint, tick)
    outcome.archives = [p.name for p in batch.created] + sorted(batch.used - {p.name for p in batch.created})
    outcome.applied_count = store.count_entries()
    return outcome


def _told(
    exports: Iterator[tuple[str, bytes, SessionTotals]], leaving: LeavingHook
) -> Iterator[tuple[str, bytes, SessionTotals]]:
    for sid, data, totals in exports:
        leaving.exported(sid, data)
        yield sid, data, totals


# The removals' transaction changes most pages of the events table and its indexes when thousands
# of sessions leave (their rows are spread over every page): with the connection's usual 2 MB page
# cache the dirty pages spill to the WAL mid-transaction and are read and written again before the
# commit. A bounded larger cache for this one transaction (allocated only as pages are used, given
# back after): one many cleanup (6,736 sessions leave) made 85,801 pwrite64 and 124,157 pread64
# with the usual cache, 64,864 and 86,336 with this one (peak RSS 92 -> 113 MB; 64 MB: 58,527
# and 79,010, 147 MB) — issue 30.
REMOVAL_CACHE_KIB = 32 * 1024


@contextmanager
def _removal_cache(conn: sqlite3.Connection) -> Iterator[None]:
    (before,) = conn.execute("PRAGMA cache_size").fetchone()
    if not -REMOVAL_CACHE_KIB < before < 0:  # already as large (or set in pages): left as it is
        yield
        return
    conn.execute(f"PRAGMA cache_size = -{REMOVAL_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(before)}")


def _commit(
    store: SqliteStore,
    plan: Retirement,
    sessions: list[SessionArchive],
    expected: Mapping[str, SessionTotals],
    outcome: ApplyOutcome,
    now_ms: int,
) -> set[str]:
    """One write transaction: delete the rows still as planned, archive in place the rows the plan
    archives, drop the sessions nobody references any more whose totals still equal what was
    archived, record the archives. Returns the dropped session ids."""
    from openclaw_cli.jsonutil import loads

    entries, removed_keys = plan.entries, plan.removed_keys
    with store.transaction() as conn, _removal_cache(conn):
        unchanged: list[str] = []
        for start in range(0, len(removed_keys), 500):
            chunk = removed_keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, text in conn.execute(
                f"SELECT session_key, entry_json FROM session_nodes WHERE session_key IN ({marks})", chunk
            ):
                try:
                    same = loads(text) == entries.get(key)
                except ValueError:
                    same = False
                if same:
                    unchanged.append(key)
                else:
                    outcome.kept.append(key)  # written since we planned: a later cleanup decides
        store.delete_entries(unchanged)
        if plan.archive_rows:  # joins this transaction
            outcome.archived_keys = store.archive_rows(
                plan.archive_rows, archived_at=plan.archived_at, expected=entries, lock_settings=None
            )
        dropped = set(store.drop_session_events(list(expected), expected=expected))
        store.record_archives(
            (
                a.path.name,
                item.session_id,
                item.session_key,
                "deleted",
                "zstd" if a.compressed else "identity",
                a.sha256,
                a.stored_size,
                item.totals.events,
                a.size,
                now_ms,
            )
            for item in sessions
            if item.session_id in dropped and (a := item.archive) is not None
        )
    return dropped


def retire_all(
    store: SqliteStore, *, now_ms: int, checkpoint: Callable[[], None]
) -> tuple[ApplyOutcome, int, int]:
    """Every session window and every row (archived first)."""
    entries = store.load_entries()
    sids: list[str] = []
    keys: dict[str, str] = {}
    for window in store.list_windows():
        sids.append(window["sessionId"])
        keys.setdefault(window["sessionId"], window["sessionKey"])
    for key, entry in entries.items():
        sid = entry.get("sessionId")
        if isinstance(sid, str) and sid not in keys:
            sids.append(sid)
            keys[sid] = key
    outcome = retire(
        store,
        Retirement(list(entries), entries=entries, session_ids=sids, session_keys=keys),
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), store.count_entries()
