"""Usage of session transcripts as OpenClaw 2026.9.6's `sessions.usage` reports it (field names and
shapes recorded from the real Gateway; issue 25): per session, the tokens and costs of the
assistant messages on its active branch inside a date range, message/tool/model counts, latency (an assistant
message's time after the user message it answers) and the same per day and per UTC quarter hour;
over many sessions, the aggregates by model, provider, agent, channel, creator and day.

Costs are the ones the transcript recorded (`usage.cost`); a usage without cost evidence (no cost,
or an all-zero one) is priced from the operator's own rates (`usage_prices`: the agent's
`models.json`, the config's `models.providers`), as OpenClaw prices it; one that no rate prices
counts in `missingCostEntries` and, per `provider/model`, `missingCostByModel`. Pure: the caller
feeds parsed transcript entries and the price lookup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from openclaw_cli.usage_prices import Prices, has_recorded_cost, price

TOKENS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
COSTS = ("totalCost", "inputCost", "outputCost", "cacheReadCost", "cacheWriteCost")
COUNTS = ("total", "user", "assistant", "toolCalls", "toolResults", "errors")
UNKNOWN_CREATOR = '["unknown"]'


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return value


def _ms(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return None
    return None


def empty_totals() -> dict[str, Any]:
    return {**dict.fromkeys(TOKENS, 0), **dict.fromkeys(COSTS, 0), "missingCostEntries": 0}


def add_totals(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    for name in (*TOKENS, *COSTS, "missingCostEntries"):
        into[name] += other.get(name, 0)
    missing = other.get("missingCostByModel")
    if isinstance(missing, Mapping) and missing:
        mine = into.setdefault("missingCostByModel", {})
        for model, count in missing.items():
            mine[model] = mine.get(model, 0) + count


def empty_counts() -> dict[str, int]:
    return dict.fromkeys(COUNTS, 0)


def _whole(value: float) -> float:
    """A whole number as an int (JSON `0`, as OpenClaw sends it, not `0.0`)."""
    return int(value) if value == int(value) else value


def _latency(values: list[int]) -> dict[str, Any]:
    ordered = sorted(values)
    if not ordered:
        return {"count": 0, "avgMs": 0, "p95Ms": 0, "minMs": 0, "maxMs": 0}
    p95 = ordered[min(len(ordered) - 1, max(0, math.ceil(0.95 * len(ordered)) - 1))]
    return {
        "count": len(ordered),
        "avgMs": _whole(sum(ordered) / len(ordered)),
        "p95Ms": p95,
        "minMs": ordered[0],
        "maxMs": ordered[-1],
    }


class SessionUsage:
    """One session's usage inside [start_ms, end_ms], days labelled in `zone`."""

    def __init__(
        self,
        start_ms: int,
        end_ms: int,
        zone: tzinfo,
        *,
        untimestamped: bool = False,
        prices: Prices | None = None,
    ) -> None:
        self.start_ms, self.end_ms, self.zone, self.untimestamped = start_ms, end_ms, zone, untimestamped
        self.prices = prices
        self.totals = empty_totals()
        self.counts = empty_counts()
        self.tools: dict[str, int] = {}
        self.models: dict[tuple[str, str], list[Any]] = {}  # (provider, model) -> [count, totals]
        self.latencies: list[tuple[str, int]] = []
        self.first: int | None = None
        self.last: int | None = None
        self.daily: dict[str, dict[str, Any]] = {}
        self.daily_counts: dict[str, dict[str, int]] = {}
        self.quarter_counts: dict[tuple[str, int], dict[str, int]] = {}
        self.quarter_tokens: dict[tuple[str, int], dict[str, Any]] = {}
        self.daily_models: dict[tuple[str, str, str], list[Any]] = {}
        # timestamp (None: untimestamped) -> (totals, (provider, model) -> [count, totals])
        self.buckets: dict[int | None, tuple[dict[str, Any], dict[tuple[str, str], list[Any]]]] = {}
        self._asked_at: int | None = None
        self.seen = False

    def day(self, ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, self.zone).strftime("%Y-%m-%d")

    def add_entry(self, obj: Mapping[str, Any]) -> None:
        message = obj.get("message") if obj.get("type") == "message" else None
        if not isinstance(message, Mapping):
            return
        role = message.get("role")
        if role not in ("user", "assistant", "toolResult"):
            return
        at = _ms(message.get("timestamp"))
        if at is None:
            at = _ms(obj.get("timestamp"))
        if at is None:
            if not self.untimestamped:
                return
        elif not self.start_ms <= at <= self.end_ms:
            return
        self.seen = True
        day = self.day(at) if at is not None else "unknown"
        quarter_key = (
            (datetime.fromtimestamp(at / 1000, UTC).strftime("%Y-%m-%d"), (at // 900_000) % 96)
            if at is not None
            else None
        )
        counts = [self.counts, self.daily_counts.setdefault(day, empty_counts())]
        if quarter_key is not None:
            counts.append(self.quarter_counts.setdefault(quarter_key, empty_counts()))
        if at is not None:
            self.first = at if self.first is None else min(self.first, at)
            self.last = at if self.last is None else max(self.last, at)
        if role == "toolResult":
            for c in counts:
                c["toolResults"] += 1
            return
        for c in counts:
            c["total"] += 1
            c[role] += 1
        if role == "user":
            self._asked_at = at
            return
        if message.get("stopReason") == "error" or message.get("errorMessage"):
            for c in counts:
                c["errors"] += 1
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                name = str(block.get("name") or "unknown")
                self.tools[name] = self.tools.get(name, 0) + 1
                for c in counts:
                    c["toolCalls"] += 1
        if at is not None and self._asked_at is not None and at >= self._asked_at:
            self.latencies.append((day, at - self._asked_at))
        usage = message.get("usage")
        if not isinstance(usage, Mapping):
            return
        figures: dict[str, Any] = {name: int(_num(usage.get(name))) for name in TOKENS}
        if not figures["totalTokens"]:
            figures["totalTokens"] = sum(figures[n] for n in TOKENS[:4])
        provider = str(message.get("provider") or "unknown")
        model = str(message.get("model") or "unknown")
        cost = usage.get("cost")
        breakdown: Mapping[str, Any] | None = cost if isinstance(cost, Mapping) else None
        total = breakdown.get("total") if breakdown is not None else None
        cost_total = total if isinstance(total, int | float) and not isinstance(total, bool) else None
        if not ((cost_total or 0) > 0 or has_recorded_cost(breakdown)):  # no evidence: price it
            raw_provider, raw_model = message.get("provider"), message.get("model")
            rates = (
                self.prices(raw_provider, raw_model)
                if self.prices is not None
                and isinstance(raw_provider, str)
                and isinstance(raw_model, str)
                and raw_provider.strip()
                and raw_model.strip()
                else None
            )
            if rates is None and figures["totalTokens"] > 0:
                breakdown = cost_total = None
            elif cost_total is None or figures["totalTokens"] > 0:
                breakdown = price(usage, rates) if rates is not None else None
                cost_total = breakdown["total"] if breakdown is not None else None
        if breakdown is not None and cost_total is not None:
            figures.update(
                {
                    "totalCost": _whole(_num(cost_total)),
                    "inputCost": _whole(_num(breakdown.get("input"))),
                    "outputCost": _whole(_num(breakdown.get("output"))),
                    "cacheReadCost": _whole(_num(breakdown.get("cacheRead"))),
                    "cacheWriteCost": _whole(_num(breakdown.get("cacheWrite"))),
                    "missingCostEntries": 0,
                }
            )
        else:
            figures.update({**dict.fromkeys(COSTS, 0), "missingCostEntries": 1})
            figures["missingCostByModel"] = {f"{provider}/{model}": 1}
        # OpenClaw sums a session's figures per timestamp first (its rollup's buckets), then the
        # buckets in time order: the same order here gives the same float sums
        bucket = self.buckets.setdefault(at, (empty_totals(), {}))
        add_totals(bucket[0], figures)
        slot = bucket[1].setdefault((provider, model), [0, empty_totals()])
        slot[0] += 1
        add_totals(slot[1], figures)

    def _merge_buckets(self) -> None:
        """The buckets into the session's totals, models, days, quarter hours and day-models, in
        time order (an untimestamped bucket counts in the totals and models only)."""
        timed = sorted((at, b) for at, b in self.buckets.items() if at is not None)
        untimed = self.buckets.get(None)
        for at, (totals, models) in [*timed, *([(None, untimed)] if untimed is not None else [])]:
            add_totals(self.totals, totals)
            for key, (count, model_totals) in models.items():
                slot = self.models.setdefault(key, [0, empty_totals()])
                slot[0] += count
                add_totals(slot[1], model_totals)
            if at is None:
                continue
            day = self.day(at)
            add_totals(self.daily.setdefault(day, empty_totals()), totals)
            quarter_key = (datetime.fromtimestamp(at / 1000, UTC).strftime("%Y-%m-%d"), (at // 900_000) % 96)
            quarter = self.quarter_tokens.setdefault(
                quarter_key, {**dict.fromkeys(TOKENS, 0), "totalCost": 0}
            )
            for name in (*TOKENS, "totalCost"):
                quarter[name] += totals[name]
            for (provider, model), (count, model_totals) in models.items():
                daily_model = self.daily_models.setdefault((day, provider, model), [0, 0, 0])
                daily_model[0] += model_totals["totalTokens"]
                daily_model[1] += model_totals["totalCost"]
                daily_model[2] += count
        self.buckets = {}

    def doc(self, session_id: str, session_file: str) -> dict[str, Any] | None:
        """OpenClaw's per-session `usage` object (None: nothing in the range)."""
        if not self.seen:
            return None
        self._merge_buckets()
        dates = sorted(self.daily_counts)
        by_day_latency: dict[str, list[int]] = {}
        for day, value in self.latencies:
            by_day_latency.setdefault(day, []).append(value)
        return {
            **self.totals,
            "sessionId": session_id,
            "sessionFile": session_file,
            "firstActivity": self.first,
            "lastActivity": self.last,
            "durationMs": (self.last - self.first) if self.first is not None and self.last is not None else 0,
            "messageCounts": dict(self.counts),
            "toolUsage": tool_usage(self.tools),
            "modelUsage": [
                {"provider": p, "model": m, "count": c, "totals": t}
                for (p, m), (c, t) in sorted(
                    self.models.items(), key=lambda kv: (-kv[1][1]["totalCost"], -kv[1][1]["totalTokens"])
                )
            ],
            "latency": _latency([v for _d, v in self.latencies]),
            "activityDates": dates,
            "dailyBreakdown": [
                {"date": d, "tokens": t["totalTokens"], "cost": t["totalCost"], **t}
                for d, t in sorted(self.daily.items())
            ],
            "dailyMessageCounts": [{"date": d, **self.daily_counts[d]} for d in dates],
            "utcQuarterHourMessageCounts": [
                {"date": d, "quarterIndex": q, **c} for (d, q), c in sorted(self.quarter_counts.items())
            ],
            "utcQuarterHourTokenUsage": [
                {"date": d, "quarterIndex": q, **t} for (d, q), t in sorted(self.quarter_tokens.items())
            ],
            "dailyLatency": [{"date": d, **_latency(v)} for d, v in sorted(by_day_latency.items())],
            "dailyModelUsage": [
                {"date": d, "provider": p, "model": m, "tokens": tok, "cost": cost, "count": n}
                for (d, p, m), (tok, cost, n) in sorted(
                    self.daily_models.items(), key=lambda kv: (kv[0][0], -kv[1][1])
                )
            ],
        }


def tool_usage(tools: Mapping[str, int]) -> dict[str, Any]:
    ordered = sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "totalCalls": sum(tools.values()),
        "uniqueTools": len(tools),
        "tools": [{"name": n, "count": c} for n, c in ordered],
    }


class Aggregates:
    """OpenClaw's `totals` and `aggregates` over the sessions' usage objects."""

    def __init__(self) -> None:
        self.totals = empty_totals()
        self.sessions = 0
        self.longest = 0
        self.counts = empty_counts()
        self.tools: dict[str, int] = {}
        self.models: dict[tuple[str, str], list[Any]] = {}
        self.providers: dict[str, list[Any]] = {}
        self.agents: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.creators: dict[str, list[Any]] = {}  # key -> [totals, sessions, daily, activity]
        self.daily: dict[str, dict[str, Any]] = {}
        self.daily_extra: dict[str, list[int]] = {}  # messages, toolCalls, errors
        self.latencies: list[Mapping[str, Any]] = []
        self.latency_days: dict[str, list[Any]] = {}
        self.model_daily: dict[tuple[str, str, str], list[Any]] = {}
        self.has_latency = False

    def add(
        self, usage: Mapping[str, Any] | None, *, agent_id: str, channel: str | None, creator: str
    ) -> None:
        creator_slot = self.creators.setdefault(creator, [empty_totals(), 0, {}, {}])
        if usage is None:
            return
        self.sessions += 1
        creator_slot[1] += 1
        self.longest = max(self.longest, usage.get("durationMs") or 0)
        add_totals(self.totals, usage)
        add_totals(self.agents.setdefault(agent_id, empty_totals()), usage)
        add_totals(creator_slot[0], usage)
        if channel:
            add_totals(self.channels.setdefault(channel, empty_totals()), usage)
        for name in COUNTS:
            self.counts[name] += usage["messageCounts"][name]
        for tool in usage["toolUsage"]["tools"]:
            self.tools[tool["name"]] = self.tools.get(tool["name"], 0) + tool["count"]
        for model in usage["modelUsage"]:
            slot = self.models.setdefault((model["provider"], model["model"]), [0, empty_totals()])
            slot[0] += model["count"]
            add_totals(slot[1], model["totals"])
            pslot = self.providers.setdefault(model["provider"], [0, empty_totals()])
            pslot[0] += model["count"]
            add_totals(pslot[1], model["totals"])
        for day in usage["dailyBreakdown"]:
            totals = {k: v for k, v in day.items() if k not in ("date", "tokens", "cost")}
            add_totals(self.daily.setdefault(day["date"], empty_totals()), totals)
            add_totals(creator_slot[2].setdefault(day["date"], empty_totals()), totals)
        dates = tuple(usage["activityDates"])
        creator_slot[3][dates] = creator_slot[3].get(dates, 0) + 1
        for day in usage["dailyMessageCounts"]:
            extra = self.daily_extra.setdefault(day["date"], [0, 0, 0])
            extra[0] += day["total"]
            extra[1] += day["toolCalls"]
            extra[2] += day["errors"]
        if usage["latency"]["count"]:
            self.has_latency = True
            self.latencies.append(usage["latency"])
        for day in usage["dailyLatency"]:
            self.latency_days.setdefault(day["date"], []).append(day)
        for item in usage["dailyModelUsage"]:
            slot = self.model_daily.setdefault((item["date"], item["provider"], item["model"]), [0, 0, 0])
            slot[0] += item["tokens"]
            slot[1] += item["cost"]
            slot[2] += item["count"]

    def doc(self) -> dict[str, Any]:
        def by_tokens(items: Any, key: Callable[[Any], Any]) -> list[Any]:
            return sorted(items, key=key)

        out: dict[str, Any] = {"sessionCount": self.sessions}
        if self.sessions:
            out["longestSessionDurationMs"] = self.longest
        out["messages"] = dict(self.counts)
        out["tools"] = tool_usage(self.tools)
        out["byModel"] = [
            {"provider": p, "model": m, "count": c, "totals": t}
            for (p, m), (c, t) in by_tokens(
                self.models.items(), lambda kv: (-kv[1][1]["totalCost"], -kv[1][1]["totalTokens"])
            )
        ]
        out["byProvider"] = [
            {"provider": p, "count": c, "totals": t}
            for p, (c, t) in by_tokens(
                self.providers.items(), lambda kv: (-kv[1][1]["totalCost"], -kv[1][1]["totalTokens"])
            )
        ]
        out["byAgent"] = [
            {"agentId": a, "totals": t}
            for a, t in by_tokens(self.agents.items(), lambda kv: -kv[1]["totalCost"])
        ]
        out["byChannel"] = [
            {"channel": c, "totals": t}
            for c, t in by_tokens(self.channels.items(), lambda kv: -kv[1]["totalCost"])
        ]
        out["byCreator"] = [
            {
                "key": key,
                "totals": totals,
                "sessionCount": count,
                "daily": [{"date": d, **t} for d, t in sorted(daily.items())],
                "sessionActivity": [
                    {"dates": list(d), "sessionCount": n}
                    for d, n in sorted(activity.items(), key=lambda kv: ",".join(kv[0]))
                ],
            }
            for key, (totals, count, daily, activity) in self.creators.items()
            if count
        ]
        out["costDaily"] = [{"date": d, **t} for d, t in sorted(self.daily.items())]
        if self.has_latency:
            out["latency"] = _merge_latency(self.latencies)
        out["dailyLatency"] = [{"date": d, **_merge_latency(v)} for d, v in sorted(self.latency_days.items())]
        out["modelDaily"] = [
            {"date": d, "provider": p, "model": m, "tokens": tok, "cost": cost, "count": n}
            for (d, p, m), (tok, cost, n) in sorted(
                self.model_daily.items(), key=lambda kv: (kv[0][0], -kv[1][1])
            )
        ]
        out["daily"] = [
            {
                "date": d,
                "tokens": t["totalTokens"],
                "cost": t["totalCost"],
                "messages": self.daily_extra.get(d, [0, 0, 0])[0],
                "toolCalls": self.daily_extra.get(d, [0, 0, 0])[1],
                "errors": self.daily_extra.get(d, [0, 0, 0])[2],
            }
            for d, t in sorted(self.daily.items())
        ]
        return out


def _merge_latency(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    count = sum(p["count"] for p in parts)
    if not count:
        return {"count": 0, "avgMs": 0, "minMs": 0, "maxMs": 0, "p95Ms": 0}
    return {
        "count": count,
        "avgMs": _whole(sum(p["avgMs"] * p["count"] for p in parts) / count),
        "minMs": min(p["minMs"] for p in parts if p["count"]),
        "maxMs": max(p["maxMs"] for p in parts if p["count"]),
        "p95Ms": max(p["p95Ms"] for p in parts if p["count"]),
    }
