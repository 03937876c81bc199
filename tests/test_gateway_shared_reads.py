"""Issue 30: identical reads waiting for a read slot share one read (`answers.WaitingReads`).

In the mix (20 clients: list, patch, describe), every `sessions.list` after a commit was read again
by each client queued behind the read slots. Now a read joins an identical one only while that one
has not started: its snapshot is then taken after the joiner asked, so it holds every write
answered before — what the joiner's own read would have seen. A read that has started is never
joined. A real Gateway with one read slot; the real list handler, counted, and held after its read
(before answering) by the test, so which read saw what is decided by the order, not by timing."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.gateway.limits import Limits
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import Client, GatewayThread, connected

DEADLINE_S = 60.0
LIST = {"limit": 1000}


def _wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S} s: {what}")
        time.sleep(0.01)


class HeldList:
    """The real `sessions.list` handler, counted; the first call's answer is held (after its read)
    until `release()`."""

    def __init__(self) -> None:
        from openclaw_cli.ops import session_views

        self.real = session_views.list_gateway_sessions
        self.calls = 0
        self.counting = False
        self.held = threading.Event()
        self.go = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, ctx: Any, params: dict[str, Any]) -> Any:
        result = self.real(ctx, params)
        if not self.counting:
            return result
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:
            self.held.set()
            assert self.go.wait(DEADLINE_S), "never released"
        return result


@pytest.fixture
def held_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldList]:
    from openclaw_cli.ops.methods import METHODS

    held = HeldList()
    # the Gateway resolves a row's handler reference: the row names this module's wrapper
    monkeypatch.setattr(sys.modules[__name__], "_held_list", held, raising=False)
    row = METHODS["sessions.list"]
    monkeypatch.setitem(METHODS, "sessions.list", dataclasses.replace(row, handler=f"{__name__}:_held_list"))
    yield held
    held.go.set()


def _labels(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["ok"], reply
    return {row["key"]: row.get("label") for row in reply["payload"]["sessions"]}


def test_identical_reads_waiting_for_a_slot_share_one_read_that_sees_earlier_writes(
    state_dir: Path, held_list: HeldList
) -> None:
    generate_legacy_state(state_dir, 30, 0.02, 4343, "--cron-key-style", "canonical")
    with GatewayThread(tick_interval_ms=60_000, limits=Limits(parallel_reads=1)) as gw:
        clients = [connected(gw.url) for _ in range(5)]
        try:
            a, b, c, d, e = clients
            key = next(k for k in _labels(a.request("sessions.list", LIST)) if ":cron:" not in k)
            held_list.counting = True
            a.send({"type": "req", "id": "l1", "method": "sessions.list", "params": LIST})
            assert held_list.held.wait(DEADLINE_S)  # l1 has read and holds the only slot
            b.send({"type": "req", "id": "l2", "method": "sessions.list", "params": LIST})
            _wait_until(lambda: len(gw.server._waiting) == 1, "l2 waits for the slot")
            c.send({"type": "req", "id": "l3", "method": "sessions.list", "params": LIST})
            patched = d.request("sessions.patch", {"key": key, "label": "shared read 1"})
            assert patched["ok"], patched  # answered before l4 is sent
            e.send({"type": "req", "id": "l4", "method": "sessions.list", "params": LIST})
            _wait_until(lambda: gw.server._waiting.joined == 2, "l3 and l4 joined l2")
            held_list.go.set()
            l1, l2, l3, l4 = a.response("l1"), b.response("l2"), c.response("l3"), e.response("l4")
        finally:
            for client in clients:
                client.close()
    assert held_list.calls == 2  # l1, and one read for l2, l3, l4 (each its own read before)
    assert _labels(l1)[key] != "shared read 1"  # read before the patch
    # the shared read started after l4 was sent, so it holds the patch l4's client saw answered
    # (joining l1, which had started, would have answered l4 without it)
    assert _labels(l4)[key] == "shared read 1"
    assert l2["payload"] == l3["payload"] == l4["payload"]


def test_a_read_whose_sharer_left_before_reading_reads_for_itself(
    state_dir: Path, held_list: HeldList
) -> None:
    generate_legacy_state(state_dir, 30, 0.02, 4344, "--cron-key-style", "canonical")
    with GatewayThread(tick_interval_ms=60_000, limits=Limits(parallel_reads=1)) as gw:
        a, c = connected(gw.url), connected(gw.url)
        b: Client = connected(gw.url)
        try:
            held_list.counting = True
            a.send({"type": "req", "id": "l1", "method": "sessions.list", "params": LIST})
            assert held_list.held.wait(DEADLINE_S)
            b.send({"type": "req", "id": "l2", "method": "sessions.list", "params": LIST})
            _wait_until(lambda: len(gw.server._waiting) == 1, "l2 waits for the slot")
            c.send({"type": "req", "id": "l3", "method": "sessions.list", "params": LIST})
            _wait_until(lambda: gw.server._waiting.joined == 1, "l3 joined l2")
            b.close()  # l2's client leaves: l2 will not read (nobody to answer)
            _wait_until(lambda: len(gw.server.connections) == 2, "l2's connection gone")
            held_list.go.set()
            l1, l3 = a.response("l1"), c.response("l3")
        finally:
            a.close()
            c.close()
    assert l1["ok"] and l3["ok"], (l1, l3)  # l3 not failed with l2's "connection closed"
    assert held_list.calls == 2  # l1 and l3's own read


def test_a_read_does_not_start_while_a_group_commit_runs(
    state_dir: Path, held_list: HeldList, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes first: a list that arrives while a batch of patches is in its handler starts only
    once that batch is done (the batch then shares the GIL with fewer threads)."""
    from openclaw_cli.ops import lifecycle
    from openclaw_cli.ops.methods import METHODS

    generate_legacy_state(state_dir, 30, 0.02, 4345, "--cron-key-style", "canonical")
    batch_in, batch_go, batch_done = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def held_batch(ctx: Any, requests: list[dict[str, Any]]) -> Any:
        batch_in.set()
        assert batch_go.wait(DEADLINE_S), "never released"
        try:
            return lifecycle.sessions_patch_many(ctx, requests)
        finally:
            batch_done.set()

    def watched_list(ctx: Any, params: dict[str, Any]) -> Any:
        seen.append(batch_done.is_set())
        return held_list.real(ctx, params)

    monkeypatch.setattr(sys.modules[__name__], "_held_batch", held_batch, raising=False)
    monkeypatch.setattr(sys.modules[__name__], "_watched_list", watched_list, raising=False)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        a, b = connected(gw.url), connected(gw.url)
        try:
            key = next(k for k in _labels(a.request("sessions.list", LIST)) if ":cron:" not in k)
            patch, listing = METHODS["sessions.patch"], METHODS["sessions.list"]
            monkeypatch.setitem(
                METHODS, "sessions.patch", dataclasses.replace(patch, batch=f"{__name__}:_held_batch")
            )
            monkeypatch.setitem(
                METHODS, "sessions.list", dataclasses.replace(listing, handler=f"{__name__}:_watched_list")
            )
            a.send(
                {
                    "type": "req",
                    "id": "p",
                    "method": "sessions.patch",
                    "params": {"key": key, "label": "first"},
                }
            )
            assert batch_in.wait(DEADLINE_S)  # the batch is in its handler
            b.send({"type": "req", "id": "l", "method": "sessions.list", "params": LIST})
            _wait_until(lambda: gw.server._serving == 2, "the list taken in")
            batch_go.set()
            patched, listed = a.response("p"), b.response("l")
        finally:
            a.close()
            b.close()
    assert patched["ok"] and listed["ok"], (patched, listed)
    assert seen == [True]  # the list started after the batch was done (before: at once)
    assert _labels(listed)[key] == "first"
