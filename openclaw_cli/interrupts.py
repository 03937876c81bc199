"""Ctrl-C and SIGTERM: multi-step commands stop at their next safe point instead of mid-write.

The command runner (`cli.common.run`) installs `handled()` around every command. Until a
multi-step operation starts, a signal behaves as usual (KeyboardInterrupt, exit 130). Once one has
started (`begin_multistep()`, called by `CrashPoints`, which every multi-step operation creates
first), the first SIGINT/SIGTERM only sets a flag and says so on stderr; the operation's next safe
point (the same points the crash tests kill at) raises `InterruptRequested`, which the operation
turns into a typed `Interrupted` error naming the state it left and the command that finishes or
undoes it. A second signal stops at once (KeyboardInterrupt): every operation is crash-safe (D6.4),
so that is never worse than a kill.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    import signal as _signal  # typeshed has no stub for the C module `signal` wraps
    from typing import Any
else:
    import _signal  # `signal` without its enums (~3.6 M instructions of a search)

_requested: int | None = None  # the signal received while a multi-step operation runs
_multistep = False
_installed = False


class InterruptRequested(BaseException):
    """Raised at a safe point after SIGINT/SIGTERM. A BaseException so that no `except Exception`
    on the way swallows it."""

    def __init__(self, signum: int):
        import signal

        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _handler(signum: int, frame: Any) -> None:
    global _requested
    if not _multistep or _requested is not None:
        raise KeyboardInterrupt
    _requested = signum
    try:
        os.write(2, b"Stopping at the next safe point (press Ctrl-C again to stop at once)...\n")
    except OSError:
        pass


def begin_multistep() -> None:
    """From now on a signal is deferred to the next safe point (only when `handled()` is active)."""
    global _multistep
    _multistep = True


def check() -> None:
    """A safe point: raise `InterruptRequested` when a signal arrived since the last one."""
    global _requested
    if _requested is not None:
        signum, _requested = _requested, None
        raise InterruptRequested(signum)


def pending() -> bool:
    return _requested is not None


@contextmanager
def handled() -> Iterator[None]:
    """Install the deferring handlers for SIGINT and SIGTERM (main thread only) and restore the
    previous ones afterwards."""
    global _installed, _multistep, _requested
    if _installed:
        yield
        return
    previous = {}
    for sig in (_signal.SIGINT, _signal.SIGTERM):
        try:
            previous[sig] = _signal.signal(sig, _handler)
        except (ValueError, OSError):  # not the main thread (of the main interpreter)
            pass
    if not previous:
        # a thread other than the main one: handlers can only be set there, and this thread
        # leaves them and the flags alone (the interpreter decides, as `signal.signal` does, so
        # neither `threading` nor `signal`'s enums are imported: ~7 M instructions of a search)
        yield
        return
    _installed = True
    try:
        yield
    finally:
        for sig, old in previous.items():
            try:
                _signal.signal(sig, old)
            except (ValueError, OSError):  # pragma: no cover
                pass
        _installed = False
        _multistep = False
        _requested = None


def rerun_command() -> str:
    """The command line that was interrupted, for "run it again to finish" messages."""
    import shlex

    args = sys.argv[1:]
    return "openclaw " + shlex.join(args) if args else "openclaw"
