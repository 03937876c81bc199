"""The legacy stores' write locks held by the `doctor --session-sqlite` modes that move their files
(issue 29 #4): the import from its snapshot of `sessions.json` until it published or rolled back,
`restore` and `recover` while they move `sessions.json` and transcripts back. A write accepted
meanwhile would be undone by the move; writers wait for the lock (up to their acquire timeout) or
are refused as busy (exit 5), and a mode that cannot take a lock in time is refused busy too."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openclaw_cli.paths import Target


def hold_legacy_store_locks(ctx: Any, targets: list[Target], held: ExitStack) -> None:
    """Enter every legacy target store's `sessions.json.lock` (the one OpenClaw's and our writers
    take; once per store file) into `held`. A store whose directory does not exist has nothing to
    hold (no directory is created for a lock)."""
    from openclaw_cli.config import write_lock_settings
    from openclaw_cli.store.lock import MAX_LOCK_HOLD_MS, LockSettings, lock_path_for, transcript_lock

    configured = write_lock_settings(ctx.config)
    # a big store may be held longer than a writer's maxHoldMs (5 min): our watchdog must not
    # release it halfway; a killed run's lock is reclaimed as dead-pid
    settings = LockSettings(
        acquire_timeout_ms=configured.acquire_timeout_ms,
        stale_ms=configured.stale_ms,
        max_hold_ms=MAX_LOCK_HOLD_MS,
    )
    seen: set[str] = set()
    for t in targets:
        if t.is_sqlite_selector or not t.store_path.parent.is_dir():
            continue
        key = str(lock_path_for(t.store_path))
        if key in seen:
            continue
        seen.add(key)
        held.enter_context(transcript_lock(t.store_path, settings, allow_reentrant=True))
