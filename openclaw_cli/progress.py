"""The one progress protocol: `factory(description, total) -> tick`, `tick(n)` advances, and an
optional `tick.close()` ends the task. Front ends supply the factory (the CLI draws a Rich bar on
an interactive stderr; the Gateway and `--json` pass none); operations only call it."""

from __future__ import annotations

from collections.abc import Callable

Tick = Callable[[int], None]
ProgressFactory = Callable[[str, int], Tick]


class TaskProgress:
    """Sequential tasks over one factory (multi-phase operations such as the migration): `start`
    ends the previous task and begins the next, `advance` ticks it, `stop` ends it. A sink without
    a factory does nothing."""

    def __init__(self, factory: ProgressFactory | None = None):
        self._factory = factory
        self._tick: Tick | None = None

    def start(self, description: str, total: int) -> None:
        self.stop()
        if self._factory is not None:
            self._tick = self._factory(description, total)

    def advance(self, n: int = 1) -> None:
        if self._tick is not None:
            self._tick(n)

    def stop(self) -> None:
        tick, self._tick = self._tick, None
        close = getattr(tick, "close", None)
        if close is not None:
            close()
