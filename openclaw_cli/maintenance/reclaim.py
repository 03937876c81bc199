"""Over-budget reclamation as OpenClaw 2026.9.6 and 2026.9.9 apply it (`sessions cleanup
--enforce`, after the entry stages and the artifact sweep; D23, issue 22).

When the physical bytes of an agent's session data (`budget.measure_physical`: database main file
and WAL, every file of the sessions dir and `cold/`, prompt blobs) exceed `maxDiskBytes`, the
release reclaims in tiers, re-measuring after every step and stopping at `highWaterBytes`:

1. **pages**: the WAL is checkpointed and free pages returned (`store.reclaim_free_pages`); a
   checkpoint that cannot copy every frame defers the rest, as OpenClaw's does;
2. **archives**: the archives the store records, oldest first (file and record), then the other
   `.deleted.`/`.reset.`/`.bak.` archive files of the sessions dir, oldest mtime first (never
   one the store has not published yet);
3. **historical sessions**: windows no row references (`store.historical_session_ids`; those
   updated within `preserveRecent` are kept), oldest first — each archived (`deleted`) and dropped
   through `store.retire`, then the archive tier again while still above high water;
4. the archive tier once more, then **`active-session-cap` archives**: rows the cap archived,
   unprotected, oldest `archivedAt` first, removed with their transcripts;
5. 2026.9.9 only, with an explicitly configured `maxDiskBytes`: the **final tier**, the oldest idle
   thread / channel / group / topic conversations, removed one at a time.

Ours differs in one way, D6.2: a transcript leaves only through a verified archive, so tiers 4 and
5 archive what OpenClaw deletes outright; those archives stay (the budget's next run may remove
them). Every session the tiers evict has its usage appended to the usage ledger (reason
`budget`) before its transcript leaves, as cleanup's own removals do (issue 27 §6).

The result is OpenClaw's `diskBudget` object: `totalBytesBefore` measured before the first tier,
`totalBytesAfter` after the last, `freedBytes` their difference, `removedFiles` the archive files
removed, `removedEntries` the sessions and rows evicted, `overBudget` before > max.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.maintenance.archiving import REASON_CAP, Guard, activity_at
from openclaw_cli.maintenance.budget import DiskBudgetResult, measure_physical
from openclaw_cli.records import Record
from openclaw_cli.store.names import is_retained_archive_name

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

_CONVERSATION_KINDS = frozenset({"thread", "channel", "group", "topic"})
LEDGER_REASON = "budget"  # the usage ledger's `reason` of a session the tiers evict


class _State(Record):
    _fields = ("total", "removed_files", "removed_entries", "deferred")
    total: int
    removed_files: int
    removed_entries: int
    deferred: bool

    def __init__(
        self, total: int, removed_files: int = 0, removed_entries: int = 0, deferred: bool = False
    ) -> None:
        self.total = total
        self.removed_files = removed_files
        self.removed_entries = removed_entries
        self.deferred = deferred


class Reclaimer:
    """One reclamation run over `store` (the caller holds its writer)."""

    def __init__(
        self,
        store: SessionStore,
        *,
        max_bytes: int,
        high_water_bytes: int,
        preserve_recent_ms: int | None,
        now_ms: int,
        lock_settings: Any,
        checkpoint: Callable[[], None],
        final_tier: bool = False,
    ):
        self.store = store
        self.root = Path(store.sessions_dir)
        self.database = None if store.transcripts_in_files else Path(store.path)
        self.max_bytes, self.high = max_bytes, high_water_bytes
        self.preserve_recent_ms = preserve_recent_ms
        self.now_ms = now_ms
        self.lock_settings = lock_settings
        self.checkpoint = checkpoint
        self.final_tier = final_tier
        self.guard = Guard(frozenset(), frozenset(), preserve_recent_ms, now_ms)

    # ---- measuring ---------------------------------------------------------------------------------
    def measure(self) -> int:
        return measure_physical(self.root, self.database).total_bytes

    def _above(self, state: _State) -> bool:
        return state.total > self.high and not state.deferred

    # ---- tiers -------------------------------------------------------------------------------------
    def _retire(self, plan: Any) -> Any:
        """`store.retire` of one eviction, its usage in the ledger first (issue 27 §6: read from
        the archive's own export, appended once the archive is durable and before anything leaves,
        as cleanup's own removals are; a refused write takes the records back)."""
        from openclaw_cli.store.usage_ledger import RetirementLedger, ledgered

        ledger = RetirementLedger(self.store, plan, reason=LEDGER_REASON, now_ms=int(self.now_ms))
        with ledgered(ledger.appended):
            return self.store.retire(
                plan,
                lock_settings=self.lock_settings,
                now_ms=self.now_ms,
                checkpoint=self.checkpoint,
                leaving=ledger,
            )

    def _pages(self, state: _State) -> bool:
        if not self.store.reclaim_free_pages():
            state.deferred = True
        return not state.deferred

    def _archives(self, state: _State) -> None:
        """Tier 2 (after tier 1): recorded archives oldest first, then the other archive files."""
        if not self._pages(state):
            state.total = self.measure()
            return
        state.total = self.measure()
        for name in self.store.budget_archive_names():
            if state.total <= self.high:
                return
            if _unlink(self.root / name):
                state.removed_files += 1
            self.store.forget_archives([name])
            if not self._pages(state):
                state.total = self.measure()
                return
            state.total = self.measure()
        if state.total <= self.high:
            return
        keep = self.store.unpublished_archive_names()
        for path in _archive_files(self.root, keep):
            if state.total <= self.high:
                return
            if _unlink(path):
                state.removed_files += 1
                state.total = self.measure()

    def _historical(self, state: _State) -> None:
        from openclaw_cli.store.retire import Retirement

        since = self.now_ms - self.preserve_recent_ms if self.preserve_recent_ms else None
        for sid in self.store.historical_session_ids(recent_since_ms=since):
            if not self._above(state):
                return
            outcome = self._retire(Retirement([], session_ids=[sid], sweep_locks=False))
            if sid not in outcome.kept:
                state.removed_entries += 1
            state.total = self.measure()
            if state.total > self.high:
                self._archives(state)

    def _rows(self, state: _State, pick: Callable[[Mapping[str, Any]], list[str]]) -> None:
        """Remove the rows `pick` orders (with their transcripts, archived first) one at a time."""
        from openclaw_cli.maintenance.removal import retirement_for_keys

        entries = self.store.load_entries()
        for key in pick(entries):
            if not self._above(state):
                return
            plan = retirement_for_keys(self.store, entries, [key])
            outcome = self._retire(plan)
            if key not in outcome.kept:
                state.removed_entries += 1
                self._pages(state)
            state.total = self.measure()

    def cap_archived(self, entries: Mapping[str, Any]) -> list[str]:
        return cap_archived_keys(entries, self.guard)

    def idle_conversations(self, entries: Mapping[str, Any]) -> list[str]:
        """2026.9.9's final tier: thread / channel / group / topic conversations that are idle (not
        running, not pinned or locked, not active within preserveRecent), oldest activity first."""
        keys = []
        for key, entry in entries.items():
            if not isinstance(entry, Mapping) or not _is_conversation(key, entry):
                continue
            if entry.get("status") == "running" or entry.get("modelSelectionLocked") is True:
                continue
            if entry.get("pinnedAt") is not None:
                continue
            recent = self.preserve_recent_ms
            if recent and self.now_ms - activity_at(entry) <= recent:
                continue
            keys.append(key)
        return sorted(keys, key=lambda k: (activity_at(entries[k]), k))

    # ---- the run -----------------------------------------------------------------------------------
    def run(self, before: int | None = None) -> DiskBudgetResult:
        """`before`: the first measure when the caller has just taken it (`sweep_and_measure`)."""
        if before is None:
            before = self.measure()
        state = _State(before)
        if before > self.max_bytes:
            self._archives(state)
            if self._above(state):
                self._historical(state)
            if self._above(state):
                self._archives(state)
            if self._above(state):
                self._rows(state, self.cap_archived)
            if self._above(state) and self.final_tier:
                self._rows(state, self.idle_conversations)
        return DiskBudgetResult(
            before,
            state.total,
            state.removed_files,
            state.removed_entries,
            max(0, before - state.total),
            self.max_bytes,
            self.high,
            before > self.max_bytes,
        )


def has_candidates(store: SessionStore, *, preserve_recent_ms: int | None, now_ms: int) -> bool:
    """What OpenClaw's preview of an over-budget enforce run reports as `wouldMutate`: there are
    archives to remove, historical sessions or `active-session-cap` rows to evict."""
    root = Path(store.sessions_dir)
    if store.budget_archive_names() or next(iter(_archive_files(root, set())), None) is not None:
        return True
    since = now_ms - preserve_recent_ms if preserve_recent_ms else None
    if store.historical_session_ids(recent_since_ms=since):
        return True
    guard = Guard(frozenset(), frozenset(), preserve_recent_ms, now_ms)
    return bool(cap_archived_keys(store.load_entries(), guard))


def cap_archived_keys(entries: Mapping[str, Any], guard: Guard) -> list[str]:
    """Rows the cap archived (`active-session-cap`) that nothing protects, oldest archive first
    (OpenClaw's `isSessionEntryDiskBudgetEvictable`, ordered by archivedAt then key)."""
    keys = [
        key
        for key, entry in entries.items()
        if isinstance(entry, Mapping)
        and "archivedAt" in entry
        and entry.get("archiveReason") == REASON_CAP
        and not guard.preserved(key, entry, False)
    ]
    return sorted(keys, key=lambda k: (_number(entries[k].get("archivedAt")), k))


def _archive_files(root: Path, keep: set[str]) -> list[Path]:
    found: list[tuple[float, str, Path]] = []
    try:
        with os.scandir(root) as it:
            for item in it:
                if item.name in keep or not is_retained_archive_name(item.name):
                    continue
                try:
                    if item.is_file(follow_symlinks=False):
                        found.append((item.stat(follow_symlinks=False).st_mtime, item.name, Path(item.path)))
                except OSError:
                    continue
    except OSError:
        return []
    return [path for _, _, path in sorted(found)]


def _unlink(path: Path) -> bool:
    """Remove one archive file; a file already gone is not counted (OpenClaw's `missingFiles`)."""
    try:
        os.unlink(path)
        return True
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return float("inf")
    return float(value)


def _is_conversation(key: str, entry: Mapping[str, Any]) -> bool:
    parts = key.split(":")
    if any(part in _CONVERSATION_KINDS for part in parts[2:] if parts[:1] == ["agent"]):
        return True
    return entry.get("chatType") in ("group", "channel", "thread")
