"""A load driver for our Gateway (used by tests/test_gateway_load.py, small, and scripts/bench, full):
N concurrent WebSocket clients each send M mixed requests — `sessions.list {limit:50}`,
`sessions.describe`, `sessions.preview`, and `sessions.patch` pin/label when the method table has
it — while one `sessions.cleanup` and one `sessions.compact` run; it reports every failure, the
latency of each method (p50/p99), requests per second, and the last acknowledged patch of every key
(each client patches only its own keys, so the store must hold exactly those values afterwards).
`preview=False` leaves previews out (issue 30's mix: list, patch, describe); `dry_runs` keeps a
`sessions.cleanup {dryRun: true}` running on its own connection, one after another, until the
clients are done (at most that many): the long read a patch must not wait behind.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from websockets.asyncio.client import connect

ALL_SCOPES = ["operator.admin", "operator.read", "operator.write"]
# clients opening their connection at once: the Gateway, as OpenClaw's, admits 32 unauthenticated
# connections per address and refuses the rest (50 clients at once lost 20 of them, every run)
OPENING = 16


def connect_frame(token: str) -> dict[str, Any]:
    return {
        "type": "req",
        "id": "c",
        "method": "connect",
        "params": {
            "minProtocol": 4,
            "maxProtocol": 4,
            "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
            "role": "operator",
            "scopes": ALL_SCOPES,
            "caps": [],
            "auth": {"token": token},
        },
    }


@dataclass
class LoadReport:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> {pinned?, label?}
    background: dict[str, Any] = field(default_factory=dict)
    requests: int = 0
    seconds: float = 0.0

    def percentile(self, method: str, q: float) -> float | None:
        values = sorted(self.latencies.get(method, []))
        if not values:
            return None
        index = min(len(values) - 1, max(0, int(round(q * (len(values) - 1)))))
        return values[index]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requests": self.requests,
            "seconds": round(self.seconds, 2),
            "reqPerSec": round(self.requests / self.seconds, 1) if self.seconds else None,
            "failures": len(self.failures),
        }
        for method, values in sorted(self.latencies.items()):
            out[method] = {
                "n": len(values),
                "p50ms": round(statistics.median(values) * 1000, 2),
                "p99ms": round((self.percentile(method, 0.99) or 0) * 1000, 2),
            }
        return out


class _Conn:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.n = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        req_id = f"r{self.n}"
        await self.ws.send(
            orjson.dumps({"type": "req", "id": req_id, "method": method, "params": params}).decode()
        )
        while True:
            frame = orjson.loads(await self.ws.recv())
            if frame.get("type") == "res" and frame.get("id") == req_id:
                return frame


async def _open(url: str, token: str) -> _Conn:
    ws = await connect(url, max_size=None, compression=None, open_timeout=30, proxy=None)
    json.loads(await ws.recv())  # the challenge
    await ws.send(json.dumps(connect_frame(token)))
    hello = json.loads(await ws.recv())
    if not hello.get("ok"):
        raise RuntimeError(f"connect failed: {hello}")
    return _Conn(ws)


async def _timed(conn: _Conn, report: LoadReport, method: str, params: dict[str, Any], label: str) -> dict:
    start = time.perf_counter()
    res = await conn.call(method, params)
    report.latencies.setdefault(label, []).append(time.perf_counter() - start)
    report.requests += 1
    if not res.get("ok"):
        report.failures.append(f"{label} {json.dumps(params)[:120]}: {res.get('error')}")
    return res


async def _client(
    url: str,
    token: str,
    index: int,
    requests: int,
    keys: list[str],
    own: list[str],
    report: LoadReport,
    patch: bool,
    seed: int,
    preview: bool = True,
    opening: asyncio.Semaphore | None = None,
    conn: _Conn | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """One client's requests (on `conn` when given: a connection already open, as the bench's
    client processes hand it in; ending early once `stop` is set)."""
    rng = random.Random(seed * 1000 + index)
    if conn is not None:
        pass
    elif opening is None:
        conn = await _open(url, token)
    else:
        async with (
            opening
        ):  # at most OPENING clients unauthenticated at once (the Gateway admits 32 per address)
            conn = await _open(url, token)
    try:
        for n in range(requests):
            if stop is not None and stop.is_set():
                break
            roll = rng.random()
            if patch and roll < 0.3 and own:
                key = rng.choice(own)
                if rng.random() < 0.5:
                    value: dict[str, Any] = {"pinned": rng.random() < 0.5}
                    label = "sessions.patch"
                else:
                    value = {"label": f"load {seed}-{index}-{n}"}
                    label = "sessions.patch"
                res = await _timed(conn, report, "sessions.patch", {"key": key, **value}, label)
                if res.get("ok"):
                    report.acknowledged.setdefault(key, {}).update(value)
            elif roll < (0.55 if preview else 0.65):
                await _timed(conn, report, "sessions.list", {"limit": 50}, "sessions.list")
            elif roll < 0.8 or not preview:
                await _timed(
                    conn, report, "sessions.describe", {"key": rng.choice(keys)}, "sessions.describe"
                )
            else:
                await _timed(
                    conn,
                    report,
                    "sessions.preview",
                    {"keys": [rng.choice(keys)], "limit": 3},
                    "sessions.preview",
                )
    finally:
        await conn.ws.close()


async def _background(url: str, token: str, method: str, params: dict[str, Any], report: LoadReport) -> None:
    conn = await _open(url, token)
    try:
        res = await _timed(conn, report, method, params, method)
        report.background[method] = res
    finally:
        await conn.ws.close()


async def _dry_runs(url: str, token: str, limit: int, done: asyncio.Event, report: LoadReport) -> None:
    """`sessions.cleanup {dryRun: true}` again and again until `done` (at most `limit` times)."""
    conn = await _open(url, token)
    try:
        for _ in range(limit):
            if done.is_set():
                break
            await _timed(conn, report, "sessions.cleanup", {"dryRun": True}, "sessions.cleanup dryRun")
    finally:
        await conn.ws.close()


async def run_load(
    url: str,
    token: str,
    *,
    clients: int,
    requests: int,
    keys: list[str],
    patch: bool,
    cleanup: dict[str, Any] | None,
    compact: dict[str, Any] | None,
    patch_keys: list[str] | None = None,
    seed: int = 7,
    preview: bool = True,
    dry_runs: int = 0,
) -> LoadReport:
    """Run the mix; every client owns a disjoint slice of `patch_keys` (default `keys`: choose keys
    the concurrent cleanup keeps) for its patches."""
    report = LoadReport()
    owned = keys if patch_keys is None else patch_keys
    slices = [owned[i::clients] for i in range(clients)]
    done = asyncio.Event()
    opening = asyncio.Semaphore(OPENING)

    async def clients_then_done() -> list[Any]:
        try:
            return await asyncio.gather(
                *(
                    _client(url, token, i, requests, keys, slices[i], report, patch, seed, preview, opening)
                    for i in range(clients)
                ),
                return_exceptions=True,
            )
        finally:
            done.set()

    start = time.perf_counter()
    jobs: list[Any] = [clients_then_done()]
    if dry_runs:
        jobs.append(_dry_runs(url, token, dry_runs, done, report))
    if cleanup is not None:
        jobs.append(_background(url, token, "sessions.cleanup", cleanup, report))
    if compact is not None:
        jobs.append(_background(url, token, "sessions.compact", compact, report))
    gathered = await asyncio.gather(*jobs, return_exceptions=True)
    report.seconds = time.perf_counter() - start
    first = gathered[0]
    results = [*(first if isinstance(first, list) else [first]), *gathered[1:]]
    for result in results:
        if isinstance(result, BaseException):
            report.failures.append(f"client error: {type(result).__name__}: {result}")
    return report


def lost_updates(report: LoadReport, entries: dict[str, dict[str, Any]]) -> list[str]:
    """Acknowledged patches the store does not hold (pinned is `pinnedAt` present)."""
    lost = []
    for key, values in report.acknowledged.items():
        entry = entries.get(key)
        if entry is None:
            lost.append(f"{key}: gone")
            continue
        if "label" in values and entry.get("label") != values["label"]:
            lost.append(f"{key}: label {entry.get('label')!r} != acknowledged {values['label']!r}")
        if "pinned" in values and (entry.get("pinnedAt") is not None) != values["pinned"]:
            lost.append(
                f"{key}: pinned {entry.get('pinnedAt') is not None} != acknowledged {values['pinned']}"
            )
    return lost
