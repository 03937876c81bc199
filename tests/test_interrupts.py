"""`interrupts.handled()` (stop 40: set through `_signal`, without importing `threading` or
`signal`): on the main thread it installs the deferring handlers for SIGINT and SIGTERM and
restores the previous ones; on any other thread it leaves the handlers and its flags alone; a
signal during a multi-step operation is deferred to the next safe point and named there."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from openclaw_cli import interrupts


@pytest.fixture(autouse=True)
def _clean_flags() -> None:
    interrupts._installed = False
    interrupts._multistep = False
    interrupts._requested = None


def test_the_main_thread_installs_both_handlers_and_restores_the_previous_ones() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with interrupts.handled():
        assert signal.getsignal(signal.SIGINT) is interrupts._handler
        assert signal.getsignal(signal.SIGTERM) is interrupts._handler
        assert interrupts._installed
        with interrupts.handled():  # nested: nothing more installed, nothing restored early
            assert signal.getsignal(signal.SIGTERM) is interrupts._handler
        assert signal.getsignal(signal.SIGTERM) is interrupts._handler
    assert {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} == before
    assert not interrupts._installed


def test_another_thread_leaves_the_handlers_and_the_flags_alone() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def worker() -> None:
        interrupts._multistep = True  # as a multi-step operation in that thread would set it
        with interrupts.handled():
            seen.append((signal.getsignal(signal.SIGTERM), interrupts._installed))
        seen.append(interrupts._multistep)  # not reset: this thread installed nothing

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=60)
    assert seen == [(before, False), True]
    interrupts._multistep = False
    with interrupts.handled():  # the main thread still installs its own afterwards
        assert signal.getsignal(signal.SIGTERM) is interrupts._handler


def test_a_signal_in_a_multistep_operation_waits_for_the_next_safe_point(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with interrupts.handled():
        interrupts.begin_multistep()
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs on the main thread between bytecodes
            if interrupts.pending():
                break
            os.sched_yield()
        assert interrupts.pending()
        with pytest.raises(interrupts.InterruptRequested, match="interrupted by SIGTERM") as caught:
            interrupts.check()
        assert caught.value.signum == signal.SIGTERM
        assert not interrupts.pending()
    assert "Stopping at the next safe point" in capfd.readouterr().err
    assert not interrupts._multistep  # handled() resets the operation's flags when it ends


def test_a_second_signal_stops_at_once() -> None:
    with interrupts.handled():
        interrupts.begin_multistep()
        interrupts._handler(signal.SIGINT, None)  # the first: deferred
        with pytest.raises(KeyboardInterrupt):
            interrupts._handler(signal.SIGINT, None)  # the second: at once
