"""The Gateway's reader process: long reads (`Method.long_read`, e.g. a `sessions.cleanup` dry run
over every row of a store) run in a child process, not in the server's threads (issue 30).

Why a process: the server is one Python interpreter. A read that plans over 20,000 rows holds the
GIL for a few hundred milliseconds of CPU at a stretch, and every thread that wants it back — a
patch's worker between its SQLite calls, the event loop writing its answer — waits a switch
interval each time; a patch measured 150-550 ms behind such reads. In a child it competes only
for a core, and mutations never wait behind it.

The child is started with `spawn` (a fork of a threaded asyncio process is not safe) when the
Gateway starts (`gateway run`; a server without `ServerOptions.reader_at_start` on its first long
read), and kept: it reads the state as any other reader of a live store does (WAL readers,
`enable_live_reads`), with the server's clock read at dispatch, at a lower CPU priority (nice 10).
One long read at a time (they queue for the child, FIFO). A failure comes back as the
`protocol.RequestError` the server would have answered; a child that died is started again on the
next long read and the read that was in it is answered UNAVAILABLE (retryable).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from openclaw_cli.gateway import protocol
from openclaw_cli.jsonutil import RawJson
from openclaw_cli.paths import StatePaths


@dataclass(frozen=True)
class _Failure:
    """A request error as plain fields (a RequestError itself does not survive pickling), and the
    traceback of an untyped one (a bug) for the server's log."""

    fields: dict[str, Any]
    trace: str | None = None


class ReaderFailed(Exception):
    """A long read refused or failed in the child: `error` is the answer, `trace` a bug's traceback."""

    def __init__(self, error: protocol.RequestError, trace: str | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.trace = trace


READER_NICENESS = 10  # the reader's CPU share beside the server's (a tenth of its weight when both run)


PARENT_CHECK_S = 1.0  # how often the child looks whether the server that started it still runs


def _exit_with_parent(parent: int) -> None:
    """A child whose server died (SIGKILL, out of memory) exits too: the pool's queues keep both
    pipe ends open in the child, so it would never read an end-of-file and stay forever."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _start_child(parent: int) -> None:
    from openclaw_cli.store.sqlite_common import enable_live_reads

    _exit_with_parent(parent)
    enable_live_reads()  # the server writes while the child reads: WAL readers, never immutable ones
    try:
        # a long read is background work: on a busy machine the server's writes and short reads
        # get the cores first
        os.nice(READER_NICENESS)
    except OSError:  # pragma: no cover - lowering one's own priority is always allowed on Linux
        pass


def _run_in_child(
    paths: StatePaths, name: str, params: dict[str, Any], now: int
) -> tuple[int, bytes | _Failure]:
    """(the child's pid, the result as its JSON text — what our readers keep exactly, raw numbers
    and all, crosses as written: nothing is pickled but bytes — or the failure)."""
    return os.getpid(), _outcome(paths, name, params, now)


def _outcome(paths: StatePaths, name: str, params: dict[str, Any], now: int) -> bytes | _Failure:
    from openclaw_cli.errors import OpenClawError, typed_error
    from openclaw_cli.gateway.server import _error_of
    from openclaw_cli.jsonutil import dumps_bytes
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import METHODS

    try:
        ctx = Context.load(paths, clock=lambda: now)
        return dumps_bytes(METHODS[name].run(ctx, params))
    except Exception as exc:
        error = _error_of(exc)
        bug = not isinstance(exc, OpenClawError | protocol.RequestError) and typed_error(exc) is None
        fields = {name: getattr(error, name) for name in error.__dataclass_fields__}
        return _Failure(fields, traceback.format_exc() if bug else None)


def _warm_child(modules: tuple[str, ...]) -> int:
    """Import what a long read runs (`_outcome`'s modules, the long-read methods' handlers) in the
    child before any read arrives; its pid."""
    import importlib

    for module in modules:
        importlib.import_module(module)
    return os.getpid()


def _long_read_modules() -> tuple[str, ...]:
    from openclaw_cli.ops.methods import METHODS

    handlers = {row.handler.partition(":")[0] for row in METHODS.values() if row.long_read and row.handler}
    return (
        "openclaw_cli.errors",
        "openclaw_cli.gateway.server",
        "openclaw_cli.jsonutil",
        "openclaw_cli.ops.context",
        "openclaw_cli.ops.methods",
        *sorted(handlers),
    )


class ReaderProcess:
    """One child process for the Gateway's long reads, started by `start()` (`gateway run`: with
    the server) or else on first use."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self.pid: int | None = None  # the child's, once it answered a read or its warm-up
        self._warming: Any = None  # the warm-up's concurrent future (kept: nobody waits for it)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_child,
                initargs=(os.getpid(),),
            )
        return self._pool

    def start(self) -> None:
        """Spawn the child now and have it import what a long read needs, without waiting for it.

        Issue 30: spawned at the first long read, the child's start stalled the server's event
        loop 31-40 ms (the spawn, under the GIL, in a process holding a serving heap) and its
        imports competed for the cores with the requests of that moment: the mix's slowest
        patches. At start nothing is being served yet, and the child imports at nice 10."""
        pool = self._executor()
        try:
            self._warming = pool.submit(_warm_child, _long_read_modules())
        except BrokenProcessPool:  # pragma: no cover - a child that died at once: `run` starts another
            self._pool = None
            return
        self._warming.add_done_callback(self._warmed)

    def _warmed(self, future: Any) -> None:
        if not future.cancelled() and future.exception() is None and self.pid is None:
            self.pid = future.result()

    async def run(self, paths: StatePaths, name: str, params: dict[str, Any], now: int) -> RawJson:
        """The method's result as the child wrote it (spliced into the answer as it is, not parsed
        and encoded again); `ReaderFailed` for a refusal or error."""
        pool = self._executor()
        try:
            self.pid, outcome = await asyncio.get_running_loop().run_in_executor(
                pool, _run_in_child, paths, name, params, now
            )
        except BrokenProcessPool as exc:  # the child died (killed, out of memory): a new one next time
            if self._pool is pool:
                self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise ReaderFailed(
                protocol.RequestError(
                    protocol.UNAVAILABLE, f"the Gateway's reader process stopped: {exc}", retryable=True
                ),
                None,
            ) from exc
        if isinstance(outcome, _Failure):
            raise ReaderFailed(protocol.RequestError(**outcome.fields), outcome.trace)
        return RawJson(outcome.decode("utf-8"))

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
