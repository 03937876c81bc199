"""chat.history bench case for scripts/bench (issue 25): the first page of a large transcript
(`gen_legacy_store.py DEST 5 125 7`: agent:main:main is a ~50 MB transcript), asked by 20 clients at once over the WebSocket of our Gateway, each
after its own first request (the page is read once per transcript version, then served from the
Gateway's page cache; the cold read is reported apart). Target: p99 < 50 ms; the Gateway's RSS
is reported before and after (memory flat in transcript size)."""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLIENTS = 20
REQUESTS = 25  # per client


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    """The process's own user+sys CPU seconds (/proc/PID/stat utime, stime)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _client(
    url: str, token: str, key: str, out: list[float], cold: list[float], warmed: threading.Barrier
) -> None:
    from websockets.sync.client import connect

    with connect(url, max_size=None, open_timeout=60) as ws:
        ws.recv(timeout=60)
        ws.send(
            json.dumps(
                {
                    "type": "req",
                    "id": "c",
                    "method": "connect",
                    "params": {
                        "minProtocol": 4,
                        "maxProtocol": 4,
                        "client": {"id": "cli", "version": "bench", "platform": "linux", "mode": "cli"},
                        "role": "operator",
                        "scopes": ["operator.read"],
                        "caps": [],
                        "auth": {"token": token},
                    },
                }
            )
        )
        for n in range(REQUESTS + 1):
            started = time.perf_counter()
            ws.send(
                json.dumps(
                    {"type": "req", "id": str(n), "method": "chat.history", "params": {"sessionKey": key}}
                )
            )
            # only the frame's head is read: a client thread parsing each 0.7 MB page under the GIL
            # would measure the bench, not the Gateway (our frames start {"type","id","ok"})
            while True:
                text = ws.recv(timeout=120)
                head = text[:80] if isinstance(text, str) else text[:80].decode()
                if head.startswith(f'{{"type":"res","id":"{n}",'):
                    break
            elapsed = (time.perf_counter() - started) * 1000
            assert head.startswith(f'{{"type":"res","id":"{n}","ok":true'), head
            (cold if n == 0 else out).append(elapsed)
            if n == 0:
                warmed.wait(timeout=600)  # every client's cold request answered: the warm phase starts


def case_history(b: Any, ours: list[str]) -> None:
    from bench_dashboard import TOKEN, _Gateway

    # the bench's own table (bench.py runs as __main__)
    sys.modules[type(b).__module__].DATASETS.setdefault("history50", ["5", "125", "7"])
    state = b.legacy("history50")
    size = max(p.stat().st_size for p in (state / "agents" / "main" / "sessions").glob("*.jsonl"))
    gw = _Gateway(ours, b.env_ours(state))
    try:
        rss_before = _rss_kb(gw.proc.pid)
        cpu_marks: list[float] = []
        client_marks: list[float] = []

        def mark() -> None:
            cpu_marks.append(_cpu_s(gw.proc.pid))
            client_marks.append(_own_cpu_s())

        warmed = threading.Barrier(CLIENTS, action=mark)
        warm: list[float] = []
        cold: list[float] = []
        threads = [
            threading.Thread(target=_client, args=(gw.url, TOKEN, "agent:main:main", warm, cold, warmed))
            for _ in range(CLIENTS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        rss_after = _rss_kb(gw.proc.pid)
        cpu = _cpu_s(gw.proc.pid) - cpu_marks[0]
        client_cpu = _own_cpu_s() - client_marks[0]
        load = Path("/proc/loadavg").read_text().split()[0]
    finally:
        gw.stop()
    warm.sort()
    p99 = warm[min(len(warm) - 1, int(len(warm) * 0.99))]
    figures = {
        "transcriptMb": round(size / 1e6, 1),
        "clients": CLIENTS,
        "requests": len(warm),
        "p50Ms": round(statistics.median(warm), 2),
        "p99Ms": round(p99, 2),
        "coldMaxMs": round(max(cold), 1),
        # the Gateway's CPU (user+sys) per warm request (after every client's cold one), and the
        # load average beside it
        "gatewayCpuMsPerRequest": round(cpu * 1000 / len(warm), 2),
        "benchClientCpuMsPerRequest": round(client_cpu * 1000 / len(warm), 2),
        "loadAverage": float(load),
        "rssBeforeKb": rss_before,
        "rssAfterKb": rss_after,
    }
    b.record_figures(
        "chat-history-50mb", figures, "first page p99 < 50 ms with 20 clients", {"p99": p99 < 50}
    )


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    return {"chat-history-50mb": lambda b: case_history(b, ours)}
