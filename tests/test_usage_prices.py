"""How `sessions.usage` prices a call without a recorded cost (issue 25; the real Gateway's figures on
one state: tests/test_gateway_usage_prices_peer.py): the operator's rates (the agent's `models.json`
first, then the config), OpenClaw's cost evidence rule, tiers, hour-long cache writes, and what is
"missing"."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

from openclaw_cli.usage_prices import Rates, has_recorded_cost, load_prices, price
from openclaw_cli.usage_summary import SessionUsage

T = 1_790_000_000_000


def _config(cost: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"providers": {"OpenAI": {"models": [{"id": "gpt-5.4", "cost": cost}]}}}}


def test_models_json_comes_before_the_config(tmp_path: Path) -> None:
    prices = load_prices(_config({"input": 2, "output": 8, "cacheRead": 0, "cacheWrite": 0}), tmp_path)
    assert prices("openai", " gpt-5.4 ") == Rates(2, 8, 0, 0)  # provider case and blanks as OpenClaw's keys
    assert prices("openai", "gpt-5.5") is None and prices("acme", "gpt-5.4") is None
    (tmp_path / "models.json").write_text(
        json.dumps({"providers": {"openai": {"models": [{"id": "gpt-5.4", "cost": {"input": 1}}]}}})
    )
    assert load_prices(_config({"input": 2, "output": 8}), tmp_path)("openai", "gpt-5.4") == Rates(1, 0, 0, 0)
    (tmp_path / "models.json").write_text("{broken")
    assert load_prices({}, tmp_path)("openai", "gpt-5.4") is None  # unreadable: no rates, no error


def test_price_by_bucket_tier_and_hour_long_cache_write() -> None:
    flat = Rates(input=2, output=10, cache_read=0.5, cache_write=4)
    cost = price(
        {"input": 1000, "output": 100, "cacheRead": 2000, "cacheWrite": 300, "cacheWrite1h": 100}, flat
    )
    assert cost["input"] == 1000 * 2 / 1e6 and cost["output"] == 100 * 10 / 1e6
    assert cost["cacheRead"] == 2000 * 0.5 / 1e6
    assert cost["cacheWrite"] == (200 * 4 + 100 * 2 * 2) / 1e6  # the hour-long part at twice the input rate
    assert cost["total"] == cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    raw = {"tieredPricing": [{"range": [200_000], "input": 4, "output": 20, "cacheRead": 1, "cacheWrite": 8}]}
    tiers = load_prices(
        _config(
            {
                "input": 2,
                "output": 10,
                "cacheRead": 0.5,
                "cacheWrite": 4,
                "tieredPricing": [
                    {"range": [0, 200_000], "input": 2, "output": 10, "cacheRead": 0.5, "cacheWrite": 4},
                    *raw["tieredPricing"],
                ],
            }
        ),
        Path("/nonexistent"),
    )("openai", "gpt-5.4")
    assert tiers is not None
    assert price({"input": 150_000, "cacheRead": 60_000}, tiers)["input"] == 150_000 * 4 / 1e6  # prompt 210k
    assert price({"input": 150_000}, tiers)["input"] == 150_000 * 2 / 1e6


def test_cost_evidence() -> None:
    assert not has_recorded_cost({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0})
    assert not has_recorded_cost(None) and not has_recorded_cost({"total": -1, "input": 1})
    assert has_recorded_cost({"total": 0, "totalOrigin": "provider-billed"})
    assert has_recorded_cost({"total": 0, "output": 0.2}) and has_recorded_cost({"total": 0.1})


def _line(at: int, provider: str, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "provider": provider, "model": model, "usage": usage, "timestamp": at}
    return {"type": "message", "message": message}


def test_session_usage_prices_what_has_no_cost_and_counts_what_it_cannot() -> None:
    prices = load_prices(
        _config({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}), Path("/nonexistent")
    )
    usage = SessionUsage(0, 2 * T, UTC, prices=prices)
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage.add_entry(_line(T, "openai", "gpt-5.4", {"input": 1000, "output": 500, "cost": zero}))  # priced
    usage.add_entry(
        _line(T, "openai", "gpt-5.4", {"input": 10, "cost": {**zero, "input": 0.5, "total": 0.5}})
    )
    usage.add_entry(_line(T + 1, "acme", "x", {"input": 10, "cost": zero}))  # no rate: missing
    usage.add_entry(_line(T + 2, "acme", "x", {"input": 0, "output": 0, "cost": zero}))  # nothing used: $0
    usage.add_entry(_line(T + 3, "acme", "y", {"input": 0}))  # no cost, no rate: missing
    doc = usage.doc("s", "f")
    assert doc is not None
    assert doc["inputCost"] == 1000 / 1e6 + 0.5 and doc["outputCost"] == 1000 / 1e6
    assert doc["missingCostEntries"] == 2 and doc["missingCostByModel"] == {"acme/x": 1, "acme/y": 1}
    assert doc["cacheReadCost"] == 0 and isinstance(doc["cacheReadCost"], int)  # JSON `0`, as OpenClaw's
    assert [m["model"] for m in doc["modelUsage"]] == ["gpt-5.4", "x", "y"]  # by cost, then tokens
    assert doc["dailyBreakdown"][0]["missingCostByModel"] == {"acme/x": 1, "acme/y": 1}
