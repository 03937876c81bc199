"""Listing filters and orders of `openclaw sessions` (issue 27 §5) on every store kind: the same
keys whatever the store, in text and JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage_support import STORE_KINDS, cli, cli_json, make_state

GROUPS = {
    "agent:main:telegram:group:123",
    "agent:main:telegram:group:-1006",
    "agent:main:telegram:group:-1007",
}


@pytest.fixture(params=STORE_KINDS)
def kind_state(request: pytest.FixtureRequest, state_dir: Path) -> tuple[str, Path]:
    return request.param, make_state(request.param, state_dir)


def _keys(*args: str) -> list[str]:
    code, doc, err = cli_json("sessions", "--limit", "all", *args)
    assert code == 0, err
    return [row["key"] for row in doc["sessions"]]


def test_filters_select_the_same_rows_on_every_store_kind(kind_state: tuple[str, Path]) -> None:
    kind, _ = kind_state
    everything = _keys()
    assert set(_keys("--kind", "group")) == GROUPS
    assert set(_keys("--kind", "cron,hook")) == {k for k in everything if ":cron:" in k or ":hook:" in k}
    assert _keys("--kind", "main") == ["agent:main:main"]
    assert _keys("--kind", "subagent") == ["agent:main:subagent:79f74d60-ac03-431e-835d-7d3b92e4016e"]
    assert _keys("--kind", "dashboard") == [k for k in everything if ":dashboard:" in k]
    assert _keys("--label", "Cron: job1") == ["agent:main:cron:job1"]
    assert set(_keys("--match", "agent:main:telegram:direct:*")) == {
        k for k in everything if k.startswith("agent:main:telegram:direct:")
    }
    telegram = set(_keys("--channel", "telegram"))
    assert telegram >= GROUPS and "agent:main:cron:job1" not in telegram
    assert _keys("--pinned") == []
    code, _, err = cli("sessions", "pin", "agent:main:cron:job1", "agent:main:main")
    assert code == 0, err
    assert set(_keys("--pinned")) == {"agent:main:cron:job1", "agent:main:main"}
    assert _keys("--pinned", "--kind", "cron") == ["agent:main:cron:job1"]
    code, _, err = cli("sessions", "mark-unread", "agent:main:telegram:group:123")
    assert code == 0, err
    assert _keys("--unread") == ["agent:main:telegram:group:123"]


def test_orders_and_limit(kind_state: tuple[str, Path]) -> None:
    code, doc, err = cli_json("sessions", "--sort", "tokens", "--limit", "3")
    assert code == 0, err
    tokens = [row["totalTokens"] for row in doc["sessions"]]
    assert tokens == sorted(tokens, reverse=True) and doc["count"] == 3 and doc["totalCount"] >= 12
    code, everything, _ = cli_json("sessions", "--sort", "tokens", "--limit", "all")
    assert max(r.get("totalTokens") or 0 for r in everything["sessions"]) == tokens[0]
    # size: the biggest transcript first (stale-1 holds half the fixture's bytes)
    assert _keys("--sort", "size")[0] == "agent:main:telegram:direct:stale-1"
    created = _keys("--sort", "created", "--kind", "group")
    assert set(created) == GROUPS and len(created) == 3


def test_text_output_and_bad_values(kind_state: tuple[str, Path]) -> None:
    code, out, _ = cli("sessions", "list", "--kind", "group")
    assert code == 0
    assert "Sessions listed: 3" in out and "agent:main:telegram:group:123" in out
    code, _, err = cli("sessions", "--kind", "nonsense")
    assert code == 2 and "Unknown --kind" in err
    code, _, err = cli("sessions", "--sort", "weight")
    assert code == 2 and "Unknown --sort" in err


def test_the_fast_path_leaves_filtered_listings_to_the_typer_app() -> None:
    from openclaw_cli.cli import fast

    assert fast.parse(["sessions", "--json"]) is not None
    for option in ("--kind=group", "--pinned", "--sort=size", "--match=x*"):
        assert fast.parse(["sessions", option, "--json"]) is None
        assert fast.parse(["sessions", "list", option, "--json"]) is None
