"""The one clock: wall time in epoch milliseconds (OpenClaw's unit for every stored time).

Operations read the time once per run through their `Context.clock`; tests pass a fixed clock.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
