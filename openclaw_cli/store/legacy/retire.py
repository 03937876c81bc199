"""The legacy store's `retire` and `retire_all`: the order (archive, then remove) and why are in
`store/retire.py`'s docstring.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import InvalidIdError, OpenClawError
from openclaw_cli.fsio import check_space, fsync_dir
from openclaw_cli.store.base import LeavingHook
from openclaw_cli.store.retire import (
    ARCHIVE_SPACE_SLACK,
    ApplyOutcome,
    ArchiveBatch,
    Archived,
    FileAction,
    ProgressFn,
    Retirement,
    regular_file_signature,
    unlink_planned,
)

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore


def _wait_for_foreign_locks(root: Path, actions: list[FileAction], lock_settings: Any) -> None:
    """Before any effect: a transcript whose lock file exists is waited for (and a stale lock
    reclaimed) now, so a store busy from the start fails with nothing changed."""
    from openclaw_cli.store.lock import acquire_transcript_lock

    try:
        with os.scandir(root) as it:
            locked = {item.name[: -len(".lock")] for item in it if item.name.endswith(".jsonl.lock")}
    except OSError:
        return
    for action in actions:
        if action.kind == "transcript" and action.name in locked:
            acquire_transcript_lock(root / action.name, lock_settings).release()


def retire(
    store: LegacyStore,
    plan: Retirement,
    *,
    lock_settings: Any,
    now_ms: int,
    checkpoint: Callable[[], None],
    progress: ProgressFn | None = None,
    leaving: LeavingHook | None = None,
) -> ApplyOutcome:
    """Apply a legacy store's plan; the caller holds the store writer (sessions.json lock).

    1. archive every leaving file and make the archives durable together;
    2. per original, under its transcript write lock: remove it if it is still the file that was
       archived, else archive it again (durably) first — the bytes removed are always the bytes
       of a verified archive, and nothing can append between the check and the removal;
    3. one atomic rewrite of `sessions.json` removes the rows (a crash before it leaves rows whose
       transcripts are in verified archives: the re-run removes the rows);
    4. temps, expired and budget-removed archives.
    Locks are taken only around the removals: a lock file that exists while the archives are
    flushed would be flushed too and cost a block to free (measured 10x slower removals); a lock
    already held when we start is waited for first, so a busy store fails with nothing changed."""
    from openclaw_cli.store.lock import transcript_lock

    removed_keys, archive_actions, unlink_actions = (
        plan.removed_keys,
        plan.archive_actions,
        plan.unlink_actions,
    )
    outcome = ApplyOutcome()
    tick = progress or (lambda n: None)
    root = Path(store.sessions_dir)
    never_reuse = {a.name for a in unlink_actions if a.kind == "archive"}
    # the archives are written before any original goes (estimate: zstd halves JSONL at the least; a
    # write that still runs out is rolled back like any failed archive)
    check_space(
        root,
        sum(a.size for a in archive_actions) // 2 + ARCHIVE_SPACE_SLACK,
        "the verified archives",
        consequence="nothing was archived or removed",
    )
    batch = ArchiveBatch(root, now_ms, never_reuse=never_reuse, checkpoint=checkpoint)
    _wait_for_foreign_locks(root, archive_actions, lock_settings)
    archived: list[Archived] = []
    try:
        for action in archive_actions:
            try:
                done = batch._archive_unlocked(action, root / action.name, False)
            except InvalidIdError:
                outcome.kept.append(action.name)  # a name we cannot archive safely stays in place
                done = None
            if done is not None:
                archived.append(done)
            tick(1)
        batch.commit()
    except BaseException:
        batch.rollback()  # every original is still in place
        raise
    checkpoint()
    if leaving is not None:
        try:
            leaving.before_leaving()  # e.g. the usage ledger, reading the originals still in place
        except BaseException:
            batch.rollback()
            raise
    for item in archived:
        if item.action.kind == "transcript":
            with transcript_lock(item.path, lock_settings):
                _remove_original(batch, item, outcome)
        else:
            _remove_original(batch, item, outcome)
        checkpoint()
        tick(1)
    if archived:
        fsync_dir(root)
    if removed_keys or plan.archive_rows:  # one rewrite of sessions.json for both
        outcome.archived_keys = store.archive_rows(
            plan.archive_rows,
            archived_at=plan.archived_at,
            expected=plan.entries,
            lock_settings=lock_settings,
            remove=removed_keys,
        )
    checkpoint()
    unlink_planned(root, unlink_actions, batch.used, outcome, checkpoint, tick)
    if plan.sweep_locks:
        _sweep_dead_locks(root, lock_settings)
    for action in archive_actions:
        if action.source == "sweep" and action.name not in outcome.kept:
            outcome.sweep_removed += 1
            outcome.sweep_freed += action.size
    outcome.archives = [p.name for p in batch.created] + sorted(batch.used - {p.name for p in batch.created})
    outcome.applied_count = store.count_entries()
    return outcome


def _sweep_dead_locks(root: Path, lock_settings: Any) -> None:
    """Transcript locks whose holder is gone (a writer killed while holding one, e.g. an
    interrupted cleanup after it removed the transcript): removed, as `doctor` would (§12.7)."""
    from openclaw_cli.store.lock import sweep_stale_locks

    try:
        sweep_stale_locks(root, lock_settings, remove=True)
    except OSError:
        pass


def _remove_original(batch: ArchiveBatch, item: Archived, outcome: ApplyOutcome) -> None:
    """Unlink the original only while it is the file that was archived; a file that changed since
    is archived again (durably) first."""
    current = regular_file_signature(item.path)
    if current is None:
        return
    if item.signature is None or current != item.signature:
        try:
            again = batch._archive_unlocked(item.action, item.path, sync=True)
        except OpenClawError:
            outcome.kept.append(item.action.name)
            return
        if again is None or again.signature is None or regular_file_signature(item.path) != again.signature:
            outcome.kept.append(item.action.name)
            return
    os.unlink(item.path)


def retire_all(
    store: LegacyStore, *, lock_settings: Any, now_ms: int, checkpoint: Callable[[], None]
) -> tuple[ApplyOutcome, int, int]:
    """Every transcript file of the sessions dir (orphans included) through a verified archive,
    then every row. Returns (outcome, rows removed, rows left: unusable rows stay)."""
    from openclaw_cli.store.files import TRANSCRIPT_KINDS, scan_sessions_dir

    entries = store.load_entries() if store.exists() else {}
    snapshot = scan_sessions_dir(store.sessions_dir)
    actions = []
    for name, f in sorted(snapshot.files.items()):
        kind = snapshot.kind(name)
        if "/" not in name and kind in TRANSCRIPT_KINDS:
            actions.append(FileAction(name, f.size, f.mtime_ms, kind, True, "entry"))
    outcome = retire(
        store,
        Retirement(list(entries), archive_actions=actions),
        lock_settings=lock_settings,
        now_ms=now_ms,
        checkpoint=checkpoint,
    )
    return outcome, len(entries), len(store.load_rows()) if store.exists() else 0
