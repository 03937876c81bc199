"""Effective `cron.*` (maintenance.md §2.3).

Its own module so that commands which never reap cron sessions do not pay for its class.
"""

from __future__ import annotations

from openclaw_cli.config.resolve import (
    DEFAULT_CRON_SESSION_RETENTION_MS,
    DEFAULT_RUN_LOG_KEEP_LINES,
    DEFAULT_RUN_LOG_MAX_BYTES,
    _model,
    _or,
)
from openclaw_cli.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class CronSettings(FrozenRecord):
    __slots__ = _fields = ("session_retention_ms", "run_log_keep_lines", "run_log_max_bytes")
    session_retention_ms: int | None  # None = reaper disabled
    run_log_keep_lines: int
    run_log_max_bytes: int  # accepted, no effect (maintenance.md §9.2)

    def __init__(
        self,
        session_retention_ms: int | None = DEFAULT_CRON_SESSION_RETENTION_MS,
        run_log_keep_lines: int = DEFAULT_RUN_LOG_KEEP_LINES,
        run_log_max_bytes: int = DEFAULT_RUN_LOG_MAX_BYTES,
    ) -> None:
        self._assign(session_retention_ms, run_log_keep_lines, run_log_max_bytes)


def cron_settings(cfg: Any = None) -> CronSettings:
    c = _model(cfg).cron
    retention = c.session_retention
    if retention is False:
        retention_ms: int | None = None
    elif retention is None:
        retention_ms = DEFAULT_CRON_SESSION_RETENTION_MS
    else:
        retention_ms = retention if retention > 0 else None  # "0h" disables
    return CronSettings(
        session_retention_ms=retention_ms,
        run_log_keep_lines=_or(c.run_log.keep_lines, DEFAULT_RUN_LOG_KEEP_LINES),
        run_log_max_bytes=_or(c.run_log.max_bytes, DEFAULT_RUN_LOG_MAX_BYTES),
    )
