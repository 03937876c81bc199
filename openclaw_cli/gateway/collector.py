"""When the Gateway process runs its full garbage collections (issue 30).

A generation-2 pass of Python's cyclic collector walks every tracked container of the process and
holds the GIL meanwhile: in a serving Gateway (its imports, the listing's row and page caches, the
history pages) that was 22-39 ms during which no request moved, and with 20 clients the ~7
patches in flight at that moment were the mix's p99. Python starts such a pass from whichever
allocation happens to cross its thresholds, i.e. in the middle of requests.

`FullCollections` (`gateway run`: `ServerOptions.scheduled_gc`) moves them:
- at start, after the warm-up imports, one collection and `gc.freeze()`: start-up's heap (modules,
  classes, the config) goes to the permanent generation and no later pass walks it;
- the young generations are collected as before (cheap: their size is bounded by the thresholds);
  the automatic full pass is off (threshold 2 out of reach);
- a full pass runs when it is due — as many young collections since the last one as Python's own
  cadence (threshold 2, default 10) — at a moment when no request is being served (a long read
  waiting for the reader process does not count: it is not held up) *and* none was received or
  answered for `QUIET_S`, or, under load that never pauses, once `DEFER_MAX_S` have passed since
  the last one, so cyclic garbage stays bounded.

The quiet window: "nothing in progress" alone is not idle. Clients that send their next request as
soon as an answer arrives (an operator's script, the bench's 20 clients) leave the server with
nothing in progress for the round trip only, ~1 ms; a 20-40 ms pass started then lands in front of
every one of their next requests (issue 30, stop 41).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

DEFER_MAX_S = 60.0  # a full pass waits for an idle moment at most this long
QUIET_S = 0.05  # ... and an idle moment is this long without a request received or answered
NEVER = 1 << 30  # threshold 2 no young collection count reaches


class FullCollections:
    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        defer_max_s: float = DEFER_MAX_S,
        quiet_s: float | None = None,
    ) -> None:
        self._clock = clock
        self._defer_max_s = defer_max_s
        self.quiet_s = QUIET_S if quiet_s is None else quiet_s
        self.active = float("-inf")  # when a request was last received or answered
        self._saved: tuple[int, int, int] | None = None
        self.cadence = 10  # young collections between full ones (Python's threshold 2)
        self.last = clock()
        self.passes = 0  # full passes run here (tests, the trace)

    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self) -> None:
        """Collect, freeze what start-up left, and turn the automatic full pass off."""
        if self._saved is not None:
            return
        gc.collect()
        gc.freeze()
        t0, t1, t2 = self._saved = gc.get_threshold()
        self.cadence = max(1, t2)
        gc.set_threshold(t0, t1, NEVER)
        self.last = self._clock()

    def uninstall(self) -> None:
        """Python's own thresholds again; the frozen heap back in the oldest generation."""
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()

    def note_activity(self) -> None:
        """A request was received or answered now."""
        self.active = self._clock()

    def due(self, *, busy: bool) -> bool:
        """A full pass is owed (enough young collections since the last) and may run now: nothing
        is being served and nothing was received or answered for `quiet_s`, or it was deferred for
        `DEFER_MAX_S`."""
        if self._saved is None or gc.get_count()[2] < self.cadence:
            return False
        now = self._clock()
        if now - self.last >= self._defer_max_s:
            return True
        return not busy and now - self.active >= self.quiet_s

    def collect(self) -> None:
        gc.collect(2)
        self.passes += 1
        self.last = self._clock()

    def maybe_collect(self, *, busy: bool) -> bool:
        if not self.due(busy=busy):
            return False
        self.collect()
        return True
