"""Model prices for `sessions.usage`, from the operator's own sources, as OpenClaw 2026.9.6 prices a
call whose transcript recorded no cost (read from its installed package, then judged side by side:
docs/decisions.md, issue 25, helper gwparams).

A call is priced when its usage holds no cost evidence (no `usage.cost`, or one whose figures are all
zero and not `provider-billed`): the rates (USD per million tokens) come from the agent's
`models.json` (`<agentDir>/models.json`, `providers.<p>.models[{id, cost}]`), else the config's
`models.providers.<p>.models[{id, cost}]`. OpenClaw then falls back to the model catalogs its
provider plugins ship (and a hosted catalog); those are OpenClaw's, not the state's, and are not
here: a model priced only there counts in `missingCostEntries` with us (set its `cost` in the
config to price it). A call with no evidence and no rates is "missing" unless it used no tokens and
recorded a zero cost. Pure: no I/O but reading the one `models.json`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _zero(value: Any) -> float:
    return _finite(value) or 0.0


@dataclass(frozen=True)
class Tier:
    input: float
    output: float
    cache_read: float
    cache_write: float
    start: float
    end: float


@dataclass(frozen=True)
class Rates:
    """One model's rates per million tokens (`tiers`: by prompt size, first match)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    tiers: tuple[Tier, ...] = ()

    def select(self, prompt_tokens: float) -> Rates | Tier:
        if not self.tiers:
            return self
        if prompt_tokens <= 0:
            return self.tiers[0]
        for tier in self.tiers:
            if tier.start <= prompt_tokens < tier.end:
                return tier
        below = [tier for tier in self.tiers if prompt_tokens >= tier.start]
        return below[-1] if below else self.tiers[0]


def _tiers(raw: Any) -> tuple[Tier, ...]:
    out: list[Tier] = []
    for tier in raw if isinstance(raw, list) else ():
        if not isinstance(tier, Mapping):
            continue
        span = tier.get("range")
        if not isinstance(span, list) or not span:
            continue
        start = _finite(span[0])
        if start is None:
            continue
        end = _finite(span[1]) if len(span) >= 2 else None
        rates = [_finite(tier.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")]
        if any(r is None for r in rates):
            continue
        found = [r or 0.0 for r in rates]
        out.append(
            Tier(
                found[0],
                found[1],
                found[2],
                found[3],
                start,
                end if end is not None and end > start else math.inf,
            )
        )
    return tuple(sorted(out, key=lambda t: t.start))


def _has_rates(cost: Any) -> bool:
    return isinstance(cost, Mapping) and (
        any(cost.get(k) is not None for k in ("input", "output", "cacheRead", "cacheWrite"))
        or bool(cost.get("tieredPricing"))
    )


def _rates(cost: Mapping[str, Any]) -> Rates:
    return Rates(
        _zero(cost.get("input")),
        _zero(cost.get("output")),
        _zero(cost.get("cacheRead")),
        _zero(cost.get("cacheWrite")),
        _tiers(cost.get("tieredPricing")),
    )


def model_key(provider: str, model: str) -> str:
    return f"{provider.strip().lower()}/{model.strip()}"


def _index(providers: Any) -> dict[str, Mapping[str, Any]]:
    """`provider/model` -> the first listed cost of that model."""
    out: dict[str, Mapping[str, Any]] = {}
    for provider, entry in providers.items() if isinstance(providers, Mapping) else ():
        models = entry.get("models") if isinstance(entry, Mapping) else None
        for model in models if isinstance(models, list) else ():
            if isinstance(model, Mapping) and isinstance(model.get("id"), str) and isinstance(provider, str):
                cost = model.get("cost")
                if isinstance(cost, Mapping):
                    out.setdefault(model_key(provider, model["id"]), cost)
    return out


Prices = Callable[[str, str], "Rates | None"]


def load_prices(config_raw: Any, agent_dir: Path) -> Prices:
    """The price lookup of one agent: its `models.json`, then the config's providers."""
    try:
        models_json = json.loads((agent_dir / "models.json").read_text())
    except (OSError, ValueError):
        models_json = None
    own = _index(models_json.get("providers") if isinstance(models_json, Mapping) else None)
    models = config_raw.get("models") if isinstance(config_raw, Mapping) else None
    configured = _index(models.get("providers") if isinstance(models, Mapping) else None)

    def lookup(provider: str, model: str) -> Rates | None:
        key = model_key(provider, model)
        for source in (own, configured):
            cost = source.get(key)
            if _has_rates(cost):
                return _rates(cost)  # type: ignore[arg-type]
        return None

    return lookup


def has_recorded_cost(cost: Any) -> bool:
    """OpenClaw's `hasRecordedUsageCost`: a finite total >= 0 that is positive, provider-billed, or
    beside a non-zero part."""
    if not isinstance(cost, Mapping):
        return False
    total = _finite(cost.get("total"))
    if total is None or total < 0:
        return False
    return (
        total > 0
        or cost.get("totalOrigin") == "provider-billed"
        or any(_zero(cost.get(k)) != 0 for k in ("input", "output", "cacheRead", "cacheWrite"))
    )


def price(usage: Mapping[str, Any], rates: Rates) -> dict[str, float]:
    """OpenClaw's `calculateUsageCost`: each bucket at its rate (the tier chosen by the prompt's
    size, cache included); an hour-long cache write at twice the input rate."""
    tokens = {k: _zero(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")}
    chosen = rates.select(tokens["input"] + tokens["cacheRead"] + tokens["cacheWrite"])
    hour = min(tokens["cacheWrite"], max(0.0, _zero(usage.get("cacheWrite1h"))))
    five = tokens["cacheWrite"] - hour
    cost = {
        "input": tokens["input"] * chosen.input / 1e6,
        "output": tokens["output"] * chosen.output / 1e6,
        "cacheRead": tokens["cacheRead"] * chosen.cache_read / 1e6,
        "cacheWrite": (five * chosen.cache_write + hour * chosen.input * 2) / 1e6,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    return cost
