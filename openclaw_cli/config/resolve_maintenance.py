"""`session.maintenance`'s effective settings as a value (`resolve.maintenance_settings` makes them):
apart from `resolve.py`, which every command imports, so that a command that never reads them
does not build their dataclass (~0.7 ms of start-up)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from openclaw_cli.config.resolve import (
    DEFAULT_MAINTENANCE_MODE,
    DEFAULT_MAX_DISK_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_PRUNE_AFTER_MS,
    HIGH_WATER_RATIO,
    MODEL_RUN_PRUNE_AFTER_MS,
)


@dataclass(frozen=True)
class MaintenanceSettings:
    """Effective `session.maintenance`.

    `prune_after_ms == 0` means age pruning is disabled: a configured zero duration would
    otherwise delete every unprotected row at once (later OpenClaw calls it a hazard too).
    `reset_archive_retention_ms is None` keeps archives forever; `max_disk_bytes is None`
    disables the disk budget (then `high_water_bytes` is None too).
    """

    mode: str = DEFAULT_MAINTENANCE_MODE
    prune_after_ms: int = DEFAULT_PRUNE_AFTER_MS
    max_entries: int = DEFAULT_MAX_ENTRIES
    reset_archive_retention_ms: int | None = None
    max_disk_bytes: int | None = DEFAULT_MAX_DISK_BYTES
    high_water_bytes: int | None = math.floor(DEFAULT_MAX_DISK_BYTES * HIGH_WATER_RATIO)
    model_run_prune_after_ms: int = MODEL_RUN_PRUNE_AFTER_MS
    # 2026.9.6+ (None under 2026.7, whose rules have no such stage): inactive `dashboard:` rows are
    # archived after this long; rows active within `preserve_recent_ms` are left alone
    archive_dashboard_after_ms: int | None = None
    preserve_recent_ms: int | None = None
    max_disk_bytes_explicit: bool = False  # maxDiskBytes was set in the config (2026.9.9's final tier)

    @property
    def prune_enabled(self) -> bool:
        return self.prune_after_ms > 0
