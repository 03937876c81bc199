"""Where a request's time goes inside the Gateway (issue 30): per-request stage timestamps and the
process events that can stall one, written as JSON lines when `OPENCLAW_GATEWAY_TRACE` names a
file. Off (None, nothing recorded) otherwise.

A request's record (`"k": "req"`), every time in ms since the trace began (`time.perf_counter`;
the `origin` record holds that start on the clock itself), with the request's `id` and its client's
`port`: `recv` the frame read and parsed on the loop, `start` its task running, `join` a read
joined an identical one waiting for its slot, `enq` a write joined its group-commit queue, `held` the batch holding its stores' writer, `tin`/`tout` the worker thread
entering and leaving the handler (`cpu`: that thread's CPU meanwhile, the rest is the GIL or I/O),
`res` the task back on the loop with the result, `sent` the answer written. `n`/`b`: the batch's
size and number. Events (`"k"`: `gc` a collection and its generation, `gcfull` a scheduled full
collection (`gateway/collector.py`) with the requests then being served, `lag` the loop late by
`ms`, `ckpt` a WAL checkpoint, `long` a read in the reader process, `health` a health refresh,
`imports` the modules a request imported first), each with `t0`/`t1`.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

ENV = "OPENCLAW_GATEWAY_TRACE"
LAG_PROBE_S = 0.002  # the loop-lag probe's sleep; a wake-up later than this by 2 ms is recorded
GC_MIN_MS = 0.5  # shorter collections are not recorded

_current: ContextVar[dict[str, Any] | None] = ContextVar("gateway_trace_request", default=None)


class Trace:
    def __init__(self, path: str) -> None:
        self.path = path
        self.t0 = time.perf_counter()
        self._records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        # the collector's callback may run inside `add` or `flush` (any allocation): its records
        # go to a list of their own, appended without the lock and written from an index
        self._collections: list[dict[str, Any]] = []
        self._collections_written = 0
        self._gc_start = 0.0
        self._batches = 0
        self._modules = set(sys.modules)
        gc.callbacks.append(self._gc)
        # where 0 is on `time.perf_counter`'s clock (CLOCK_MONOTONIC on Linux: the same in every
        # process), so a client's own timestamps can be set beside the stages
        self.add({"k": "origin", "t0": 0.0, "t1": 0.0, "perf": self.t0})

    def now(self) -> float:
        return round((time.perf_counter() - self.t0) * 1000, 3)

    # ---- requests ----------------------------------------------------------------------------------
    def request(self, method: Any, req_id: Any = None, port: Any = None) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "k": "req",
            "m": method if isinstance(method, str) else None,
            "recv": self.now(),
        }
        if isinstance(req_id, str | int) and isinstance(port, int):
            rec.update(id=req_id, port=port)  # the request as its client knows it (its local port)
        self.add(rec)
        return rec

    @staticmethod
    def enter(rec: dict[str, Any] | None) -> None:
        """`rec` is the running task's request (its writes' batch marks it)."""
        _current.set(rec)

    @staticmethod
    def current() -> dict[str, Any] | None:
        return _current.get()

    def mark(self, rec: dict[str, Any] | None, stage: str) -> None:
        if rec is not None:
            rec[stage] = self.now()
            if len(sys.modules) != len(self._modules):  # what this request imported first
                new = sorted(set(sys.modules) - self._modules)
                self._modules.update(new)
                self.add({"k": "imports", "t0": rec[stage], "t1": rec[stage], "m": rec.get("m"), "new": new})

    def batch(self) -> int:
        self._batches += 1
        return self._batches

    def timed(self, recs: list[dict[str, Any]], run: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        """`run(*args)` for a worker thread, marking `tin`, `tout` and `cpu` on every record of `recs`."""

        def traced() -> Any:
            tin, cpu = self.now(), time.thread_time()
            try:
                return run(*args)
            finally:
                tout, spent = self.now(), round((time.thread_time() - cpu) * 1000, 3)
                for rec in recs:
                    rec.update(tin=tin, tout=tout, cpu=spent)

        return traced

    # ---- events ------------------------------------------------------------------------------------
    def event(self, kind: str, t0: float, **extra: Any) -> None:
        self.add({"k": kind, "t0": t0, "t1": self.now(), **extra})

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
            return
        spent = (time.perf_counter() - self._gc_start) * 1000
        if spent >= GC_MIN_MS:
            end = self.now()
            self._collections.append(
                {"k": "gc", "t0": round(end - spent, 3), "t1": end, "gen": info.get("generation")}
            )

    async def lag_probe(self) -> None:
        import asyncio

        while True:
            before = time.perf_counter()
            await asyncio.sleep(LAG_PROBE_S)
            late = (time.perf_counter() - before - LAG_PROBE_S) * 1000
            if late >= 2.0:
                end = self.now()
                self.add({"k": "lag", "t0": round(end - late, 3), "t1": end, "ms": round(late, 3)})
            if len(self._records) >= 2000:
                self.flush()

    # ---- output ------------------------------------------------------------------------------------
    def add(self, rec: dict[str, Any]) -> None:
        with self._lock:
            self._records.append(rec)

    def flush(self, *, final: bool = False) -> None:
        """Append the records whose request is answered (all of them when `final`)."""
        from openclaw_cli.jsonutil import dumps_bytes

        with self._lock:
            done = [r for r in self._records if final or r["k"] != "req" or "sent" in r or "err" in r]
            keep = (
                []
                if final
                else [r for r in self._records if r["k"] == "req" and "sent" not in r and "err" not in r]
            )
            self._records = keep
            written = len(self._collections)
            done += self._collections[self._collections_written : written]
            self._collections_written = written
        if done:
            with open(self.path, "ab") as out:
                out.write(b"".join(dumps_bytes(r) + b"\n" for r in done))
        if final and self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)


def from_env() -> Trace | None:
    path = os.environ.get(ENV, "").strip()
    return Trace(path) if path else None
