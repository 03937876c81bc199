#!/usr/bin/env python3
"""Summarise a Gateway trace (`OPENCLAW_GATEWAY_TRACE=<file>`, see openclaw_cli/gateway/trace.py).

    scripts/gateway_trace.py TRACE [TRACE ...]

Per file: the events (GC passes by generation, loop lag, checkpoints, long reads, health, first
imports), every method's server-side latency, and for `sessions.patch` — split into patches with
no other request within 300 ms ("alone") and the rest ("mix") — the median of each stage and the
slowest 1 % with their stages and the events that overlapped them.
"""

from __future__ import annotations

import bisect
import json
import statistics
import sys
from typing import Any

STAGES = ("pre", "queue", "pickup", "handler", "cpu", "back", "send")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def stages(r: dict[str, Any]) -> dict[str, float]:
    return {
        "pre": r.get("enq", r["start"]) - r["recv"],
        "queue": r["held"] - r["enq"],
        "pickup": r["tin"] - r["held"],
        "handler": r["tout"] - r["tin"],
        "cpu": r["cpu"],
        "back": r["res"] - r["tout"],
        "send": r["sent"] - r["res"],
    }


def summarise(path: str) -> None:
    with open(path) as lines:
        recs = [json.loads(line) for line in lines]
    reqs = [r for r in recs if r["k"] == "req" and "sent" in r]
    events = [r for r in recs if r["k"] != "req"]
    counts = []
    for kind in ("gc", "gcfull", "lag", "ckpt", "long", "health"):
        spans = [e["t1"] - e["t0"] for e in events if e["k"] == kind]
        counts.append(f"{kind} {len(spans)} (max {max(spans, default=0):.1f} ms, sum {sum(spans):.0f})")
    print(f"== {path}: {len(reqs)} answered; " + ", ".join(counts))
    for e in events:
        if e["k"] == "imports":
            print(f"   imports at {e['t0']:.0f} ms, noticed by {e['m']}: {' '.join(e['new'][:12])}")
    for gen in (0, 1, 2):
        spans = [e["t1"] - e["t0"] for e in events if e["k"] == "gc" and e.get("gen") == gen]
        if spans:
            print(f"   gc gen{gen}: {len(spans)} >= 0.5 ms, max {max(spans):.1f}, sum {sum(spans):.0f} ms")
    for method in sorted({r["m"] for r in reqs if r["m"]}):
        lat = [r["sent"] - r["recv"] for r in reqs if r["m"] == method]
        print(
            f"   {method}: n={len(lat)} p50 {pct(lat, 0.5):.1f} p99 {pct(lat, 0.99):.1f} max {max(lat):.1f}"
        )
    patches = [r for r in reqs if r["m"] == "sessions.patch" and "tin" in r]
    others = sorted(r["recv"] for r in reqs if r["m"] != "sessions.patch")

    def alone(r: dict[str, Any]) -> bool:
        i = bisect.bisect_left(others, r["recv"] - 300)
        return not (i < len(others) and others[i] <= r["sent"] + 300)

    for label, group in (
        ("alone", [r for r in patches if alone(r)]),
        ("mix", [r for r in patches if not alone(r)]),
    ):
        if not group:
            continue
        lat = [r["sent"] - r["recv"] for r in group]
        medians = {k: statistics.median(stages(r)[k] for r in group) for k in STAGES}
        print(
            f"  -- patch {label}: n={len(lat)} p50 {pct(lat, 0.5):.1f} p99 {pct(lat, 0.99):.1f}; median stages "
            + " ".join(f"{k}={v:.1f}" for k, v in medians.items())
            + f"; batch size median {statistics.median(r['n'] for r in group)}"
        )
        for r in sorted(group, key=lambda r: r["sent"] - r["recv"], reverse=True)[
            : max(5, len(group) // 100)
        ]:
            overlapping = [
                e for e in events if e["t1"] > r["recv"] and e["t0"] < r["sent"] and e["t1"] - e["t0"] >= 1
            ]
            print(
                f"   t={r['recv']:.0f} {r['sent'] - r['recv']:.1f} ms, batch {r['b']} of {r['n']}: "
                + " ".join(f"{k}={v:.1f}" for k, v in stages(r).items())
                + " | "
                + ",".join(f"{e['k']}{e.get('gen', '')}:{e['t1'] - e['t0']:.0f}" for e in overlapping)
            )


if __name__ == "__main__":
    for name in sys.argv[1:]:
        summarise(name)
