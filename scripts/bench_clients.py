"""Gateway clients in processes of their own, for `scripts/bench`'s gateway-latency case (issue 30).

Twenty asyncio clients in the bench's own interpreter share one event loop: when the Gateway
answers a group commit of fourteen patches at once, the fourteenth answer waits for the thirteen
before it to be parsed and their next requests sent, and every pause of that one process (its
collector, the scheduler) stalls all twenty at once — latency no operator's client has, since
each operator's CLI or app is a process of its own. `run_clients` starts one process per spec
(`python bench_clients.py`, the spec as JSON on stdin; a spec's `group` puts several clients in
one process, each on its own connection), waits until every client has opened and authenticated
its connection, then says `go` to all; each times its requests from its own send to its own
receipt of the answer (`time.perf_counter`) and prints its latencies, failures, timed span and own
CPU as one JSON line. The frames the Gateway sends while the others connect (health, presence) are
read and dropped before `go`; everything after `go` — events, the answers' parsing, the client's
own scheduling — is in the figure. The bench measures 4 clients a process each and runs the other
16 as load in one more (`load`: they stop when told, and their latencies are `load <method>`).

Every loop is bounded: a client makes at most its `requests` calls (a load client stops earlier
when told); each process has a deadline to be ready and one to finish, and is killed after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 120.0  # to start, connect and authenticate
RUN_TIMEOUT_S = 600.0  # to make every request once `go` is said


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def patch_params(key: str, run: int, index: int, n: int) -> dict[str, Any]:
    """The n-th patch of client `index` in run `run`: a new label and a pin toggle in turn (the
    same requests whether the client runs in the bench's process or in one of its own)."""
    return {"key": key, "label": f"bench {run}-{index}-{n}"} if n % 2 else {"key": key, "pinned": n % 4 == 0}


async def _timed_part(spec: dict[str, Any], conn: Any, report: Any, load: Any, stop: asyncio.Event) -> None:
    role, requests = spec["role"], spec["requests"]
    until_stop = spec.get("load", False)  # a load client: it ends when told (at most `requests`)
    if role == "patch":  # each client alternates a new label and a pin toggle on its own keys
        own, index, run = spec["keys"], spec["index"], spec["run"]
        for n in range(requests):
            if until_stop and stop.is_set():
                break
            params = patch_params(own[n % len(own)], run, index, n)
            await load._timed(conn, report, "sessions.patch", params, "sessions.patch")
    elif role == "call":  # one method, the same params, again and again
        for _ in range(requests):
            if until_stop and stop.is_set():
                break
            await load._timed(conn, report, spec["method"], spec["params"], spec["method"])
    elif role == "mix":  # issue 30's mix, the same sequence `gateway_load.run_load` gives client `index`
        await load._client(
            spec["url"],
            spec["token"],
            spec["index"],
            requests,
            spec["keys"],
            spec["own"],
            report,
            True,
            spec["seed"],
            False,
            None,
            conn,
            stop if until_stop else None,
        )
    elif role == "dry":  # cleanup dry runs one after another until told to stop
        for _ in range(requests):
            if stop.is_set():
                break
            await load._timed(conn, report, "sessions.cleanup", {"dryRun": True}, "sessions.cleanup dryRun")
    else:
        raise ValueError(f"unknown role {role!r}")


async def _client(spec: dict[str, Any], load: Any) -> dict[str, Any]:
    """One process's clients (`spec`, or each of `spec["group"]`: clients sharing this process,
    each on its own connection), timed from `go`."""
    loop = asyncio.get_running_loop()
    words: asyncio.Queue[str] = asyncio.Queue()

    def read_words() -> None:  # the parent's `go` and `stop`, then the end of input
        for line in sys.stdin:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(words.put_nowait, line.strip())
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(words.put_nowait, "eof")

    members = [{**spec, **member} for member in spec.get("group", [{}])]
    conns = [await asyncio.wait_for(load._open(spec["url"], spec["token"]), READY_TIMEOUT_S) for _ in members]

    async def drop_frames(conn: Any) -> None:  # health and presence while the other clients connect
        while True:
            await conn.ws.recv()

    dropping = [asyncio.ensure_future(drop_frames(conn)) for conn in conns]
    threading.Thread(target=read_words, daemon=True).start()
    print("ready", flush=True)
    word = await asyncio.wait_for(words.get(), READY_TIMEOUT_S)
    for task in dropping:
        task.cancel()
    await asyncio.gather(*dropping, return_exceptions=True)
    reports = [load.LoadReport() for _ in members]
    stop = asyncio.Event()

    async def stop_on_word() -> None:
        while (await words.get()) not in ("stop", "eof"):
            pass
        stop.set()

    stopper = asyncio.ensure_future(stop_on_word())
    cpu, start = _cpu_s(), time.perf_counter()
    if word == "go":
        done = await asyncio.gather(
            *(
                asyncio.wait_for(_timed_part(member, conn, report, load, stop), RUN_TIMEOUT_S)
                for member, conn, report in zip(members, conns, reports, strict=True)
            ),
            return_exceptions=True,
        )
        for outcome, report in zip(done, reports, strict=True):
            if isinstance(outcome, BaseException):
                report.failures.append(f"client error: {type(outcome).__name__}: {outcome}")
    end, cpu = time.perf_counter(), _cpu_s() - cpu
    stopper.cancel()
    for conn in conns:
        with contextlib.suppress(Exception):
            await conn.ws.close()
    latencies: dict[str, list[float]] = {}
    for member, report in zip(members, reports, strict=True):
        # a load client's latencies are reported apart from the measured clients'
        prefix = "load " if member.get("load") else ""
        for label, values in report.latencies.items():
            latencies.setdefault(prefix + label, []).extend(values)
    return {
        "latencies": latencies,
        "failures": [failure for report in reports for failure in report.failures],
        "requests": sum(report.requests for report in reports),
        "start": start,
        "end": end,
        "cpu": cpu,
    }


def _pump(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")


def run_clients(
    url: str, token: str, specs: list[dict[str, Any]], background: dict[str, Any] | None = None
) -> Any:
    """A `gateway_load.LoadReport` of `specs` (one process each), all started together once every
    one is connected; `background` (the mix's dry runs) runs beside them and is told to stop when
    they are done. `report.seconds` spans the first start to the last end; `report.clients_cpu_s`
    is the clients' own CPU over their timed parts."""
    sys.path.insert(0, str(ROOT))
    from tests import gateway_load as load

    every = [*specs, *([background] if background is not None else [])]
    procs: list[tuple[subprocess.Popen[str], queue.Queue[str]]] = []
    report = load.LoadReport()
    try:
        for spec in every:
            proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            lines: queue.Queue[str] = queue.Queue()
            threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({**spec, "url": url, "token": token}) + "\n")
            proc.stdin.flush()
            procs.append((proc, lines))
        deadline = time.monotonic() + READY_TIMEOUT_S
        for _, lines in procs:
            if lines.get(timeout=max(0.0, deadline - time.monotonic())).strip() != "ready":
                raise RuntimeError("a bench client did not connect")
        for proc, _ in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        deadline = time.monotonic() + RUN_TIMEOUT_S
        results = [
            json.loads(lines.get(timeout=max(0.0, deadline - time.monotonic())))
            for _, lines in procs[: len(specs)]
        ]
        if background is not None:
            proc, lines = procs[-1]
            assert proc.stdin is not None
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            results.append(json.loads(lines.get(timeout=max(0.0, deadline - time.monotonic()))))
    finally:
        for proc, _ in procs:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
        for proc, _ in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for result in results:
        for label, values in result["latencies"].items():
            report.latencies.setdefault(label, []).extend(values)
        report.failures.extend(result["failures"])
        report.requests += result["requests"]
    report.seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
    report.clients_cpu_s = sum(r["cpu"] for r in results)
    return report


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    sys.path.insert(0, str(ROOT))
    from tests import gateway_load

    print(json.dumps(asyncio.run(_client(spec, gateway_load))), flush=True)


if __name__ == "__main__":
    main()
