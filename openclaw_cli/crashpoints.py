"""Crash-test hook shared by every multi-step operation (spec D6.4 tests).

`CrashPoints("OPENCLAW_CLEANUP")` reads `OPENCLAW_CLEANUP_CRASH_AT=k`: the process SIGKILLs
itself at the k-th checkpoint, exactly as an operator's `kill -9` would. With
`OPENCLAW_CLEANUP_CRASH_COUNT=<file>`, `finish()` writes how many checkpoints a run passed, so a
test can choose kill points that exist; `OPENCLAW_CLEANUP_CRASH_SIGNAL=INT` sends SIGINT there instead.
Unset variables cost one environment lookup.

Every checkpoint is also a safe point for Ctrl-C/SIGTERM (`openclaw_cli.interrupts`): creating a
`CrashPoints` marks the start of a multi-step operation, and a signal received since then raises
`InterruptRequested` at the next checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

from openclaw_cli import interrupts

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # typeshed has no stub for the C module `signal` wraps
else:
    import _signal  # `signal` without its enums (~3.6 M instructions of every cleanup's start-up)


class CrashPoints:
    def __init__(self, prefix: str, *, count_env: str | None = None) -> None:
        self.count_env = count_env or f"{prefix}_CRASH_COUNT"
        raw = os.environ.get(f"{prefix}_CRASH_AT", "").strip()
        self.crash_at = int(raw) if raw.isdigit() else None
        # `<prefix>_CRASH_SIGNAL=INT|TERM`: send that signal instead (the Ctrl-C tests: a real
        # signal at a known instant; the handler defers it to the next safe point)
        name = os.environ.get(f"{prefix}_CRASH_SIGNAL", "KILL").strip().upper() if self.crash_at else "KILL"
        self.signal: int = getattr(_signal, f"SIG{name}", _signal.SIGKILL)
        self.passed = 0
        interrupts.begin_multistep()

    def __call__(self, label: str | None = None) -> None:
        self.passed += 1
        if self.crash_at is not None and self.passed == self.crash_at:
            os.kill(os.getpid(), self.signal)
        if interrupts._requested is not None:  # noqa: SLF001 - the hot path: one attribute read per checkpoint
            interrupts.check()

    def finish(self) -> None:
        path = os.environ.get(self.count_env)
        if path:
            Path(path).write_text(str(self.passed))
