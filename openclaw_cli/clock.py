"""The one clock: wall time in epoch milliseconds (OpenClaw's unit for every stored time).

Operations read the time once per run through their `Context.clock`; tests pass a fixed clock.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)


def iso_ms(ms: int) -> str:
    """JavaScript's `new Date(ms).toISOString()` (milliseconds and a `Z`): the one ISO formatter."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def iso_now(ms: float | None = None) -> str:
    """`iso_ms` of `ms`, or of now: `new Date().toISOString()`."""
    return iso_ms(now_ms() if ms is None else int(ms))
