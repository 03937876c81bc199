"""Issue 30: the Gateway's full garbage collections run between requests, not from whichever
allocation crosses Python's thresholds in the middle of them (`gateway/collector.py`), and its
reader process is started with it (`ServerOptions.reader_at_start`)."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.gateway.collector import NEVER, FullCollections
from tests.gateway_server_support import GatewayProcess, GatewayThread, connected
from tests.lifecycle_support import make_templates, use_template


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection the interpreter runs meanwhile."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _survivors(n: int) -> list[list[int]]:
    """n tracked containers that stay alive: they are promoted, and Python's own full pass comes
    once enough of them reach the oldest generation."""
    return [[i] for i in range(n)]


def test_python_alone_runs_full_passes_under_such_allocation(collections: list[int]) -> None:
    """The baseline the next test is judged against: without the schedule, keeping this much
    alive makes the interpreter run a full pass on its own."""
    gc.collect()
    kept = _survivors(2 * max(200_000, len(gc.get_objects())))
    assert 2 in collections
    del kept


def test_installed_no_full_pass_runs_on_its_own(collections: list[int]) -> None:
    full = FullCollections()
    full.install()
    try:
        assert gc.get_threshold()[2] == NEVER
        assert gc.get_freeze_count() > 0  # start-up's heap is out of every later pass
        collections.clear()  # install's own collection
        kept = _survivors(2 * max(200_000, len(gc.get_objects())))
        assert collections and 2 not in collections, collections  # young passes only
        assert gc.get_count()[2] >= full.cadence  # ... and a full one owed
        assert full.maybe_collect(busy=False)
        assert collections[-1] == 2 and full.passes == 1
        assert gc.get_count()[2] == 0
        del kept
    finally:
        full.uninstall()
    assert gc.get_threshold()[2] != NEVER and gc.get_freeze_count() == 0


def test_a_full_pass_waits_for_idle_or_the_deferral_bound() -> None:
    now = [100.0]
    full = FullCollections(clock=lambda: now[0], defer_max_s=60.0)
    full.install()
    try:
        assert not full.due(busy=False)  # nothing owed right after the start
        for _ in range(full.cadence):
            gc.collect(1)  # each young generation-1 pass counts toward the next full one
        assert full.due(busy=False)
        assert not full.due(busy=True)  # requests in progress: later
        now[0] += 59.0
        assert not full.maybe_collect(busy=True)
        now[0] += 1.0
        assert full.maybe_collect(busy=True)  # deferred long enough: even under load
        assert full.last == now[0] and not full.due(busy=False)
    finally:
        full.uninstall()


def test_a_full_pass_waits_for_a_quiet_moment_not_only_an_empty_one() -> None:
    """Nothing in progress is not idle: clients that send their next request as soon as an answer
    arrives leave the server empty for a round trip only (issue 30, stop 41)."""
    now = [100.0]
    full = FullCollections(clock=lambda: now[0], defer_max_s=60.0, quiet_s=0.05)
    full.install()
    try:
        for _ in range(full.cadence):
            gc.collect(1)
        full.note_activity()  # an answer written just now
        assert not full.due(busy=False)
        now[0] += 0.049
        assert not full.maybe_collect(busy=False)  # a closed-loop client's next request may be on its way
        now[0] += 0.002
        assert full.due(busy=False)  # nothing received or answered for the window
        full.note_activity()  # ... until a request arrives
        assert not full.due(busy=False)
        now[0] += 60.0
        full.note_activity()
        assert full.maybe_collect(busy=True)  # the deferral bound holds under any load
    finally:
        full.uninstall()


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "collector", kinds=("sqlite",))


def _eventually(check: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


def test_a_scheduled_gateway_collects_when_nothing_is_served(
    templates: dict[str, Path], state_dir: Path
) -> None:
    use_template(templates["sqlite"], state_dir)
    saved = gc.get_threshold()
    with GatewayThread(scheduled_gc=True) as gw:
        collector = gw.server._collector  # noqa: SLF001 - the schedule under test
        assert collector is not None and gc.get_threshold()[2] == NEVER
        with connected(gw.url) as client:
            for _ in range(collector.cadence):
                gc.collect(1)
            assert client.request("sessions.list", {"limit": 5})["ok"]
            # answered, and nothing else is served: the owed full pass runs
            assert _eventually(lambda: collector.passes >= 1)
    assert gc.get_threshold() == saved and gc.get_freeze_count() == 0  # stop() gave Python's back


def test_a_scheduled_gateway_does_not_collect_between_back_to_back_requests(
    templates: dict[str, Path], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client sending each request as soon as the last is answered: the owed full pass waits
    until the client stops (here a 2 s quiet window, far beyond any gap between its requests), not
    for the moment after an answer when nothing is in progress (it ran there before)."""
    from openclaw_cli.gateway import collector as collector_module

    monkeypatch.setattr(collector_module, "QUIET_S", 2.0)
    use_template(templates["sqlite"], state_dir)
    with GatewayThread(scheduled_gc=True) as gw:
        collector = gw.server._collector  # noqa: SLF001 - the schedule under test
        assert collector is not None and collector.quiet_s == 2.0
        with connected(gw.url) as client:
            for _ in range(collector.cadence):
                gc.collect(1)
            for _ in range(30):
                assert client.request("sessions.list", {"limit": 5})["ok"]
                assert collector.passes == 0
            assert _eventually(lambda: collector.passes >= 1)  # quiet now: the owed pass runs


def test_the_reader_process_starts_with_the_gateway(templates: dict[str, Path], state_dir: Path) -> None:
    """Issue 30: spawned at the first long read, the child stalled the serving loop and competed
    for the cores with the requests of that moment; `gateway run` starts it with the server."""
    use_template(templates["sqlite"], state_dir)
    with GatewayThread(reader_at_start=True) as gw:
        readers = gw.server._readers  # noqa: SLF001 - the reader under test
        assert _eventually(lambda: readers.pid is not None)  # no long read asked yet
        child = readers.pid
        assert child != os.getpid()
        with connected(gw.url) as client:
            res = client.request("sessions.cleanup", {"dryRun": True}, timeout=120)
        assert res["ok"], res
        assert readers.pid == child  # the read ran in the child started with the server


def test_gateway_run_starts_its_reader_and_schedules_collections() -> None:
    from openclaw_cli.cli.gateway_server import run_options
    from openclaw_cli.gateway.auth import AuthPolicy

    resolved = {"host": "127.0.0.1", "port": 0, "auth": AuthPolicy("none"), "ssl": None}
    options = run_options(resolved, verbose=False, log=print)
    assert options.reader_at_start and options.scheduled_gc


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_reader_process_exits_when_its_gateway_is_killed(state_dir: Path) -> None:
    """`gateway run` spawns its reader at start: a Gateway killed with SIGKILL (the soak does it
    hundreds of times) must not leave it behind (the pool's queues keep the pipes open in the
    child, so it never sees an end of file: it watches its parent instead)."""
    import signal

    gw = GatewayProcess().start()
    try:
        assert _eventually(lambda: any("spawn_main" in _cmdline(c) for c in _children(gw.pid)))
        reader = next(c for c in _children(gw.pid) if "spawn_main" in _cmdline(c))
        os.kill(gw.pid, signal.SIGKILL)  # the Gateway alone, not its process group
        gw.wait()
        assert _eventually(lambda: not _alive(reader), timeout=30), f"reader {reader} outlived its Gateway"
    finally:
        try:
            os.killpg(gw.pid, signal.SIGKILL)  # whatever is left in its group
        except ProcessLookupError:
            pass


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
