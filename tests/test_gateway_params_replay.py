"""Issue 25, "Bad input": every param refusal the real 2026.9.6 Gateway gave for ~1,000 bad requests
to the methods we serve (tests/fixtures/gateway-2026.9.6-params, recorded by scripts/record_params.py;
README there) is ours too, byte for byte (`ok`, and the whole `error`: code, message, no details),
sent the same way to our Gateway on the same kind of state. Only requests naming one of our own
documented extension keys (`ops.params.EXTENSIONS`) are left out; the rest must all match.

The rule these recordings settle (ops/params.py's docstring): every error, in TypeBox's keyword order,
at most 8 per list, `required`/`additionalProperties` naming their first key, `schema is false` for
unknown keys past the cap, lengths in graphemes, `params: null` read as `{}`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.gateway.schemas import check_connect
from openclaw_cli.ops.methods import METHODS, check_params
from openclaw_cli.ops.params import EXTENSIONS, grapheme_count
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RECORDING = FIXTURES / "gateway-2026.9.6-params" / "params.jsonl"
# the recording's config: two agents, explicit ownership (so `{}` meets the owner rules)
CONFIG = {
    "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}},
    "gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}},
}


def exchanges(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    frames = [f for line in path.read_text().splitlines() if "frame" in (f := json.loads(line))]
    requests = {f["frame"]["id"]: f["frame"] for f in frames if f["dir"] == "out"}
    return [
        (requests[f["frame"]["id"]], f["frame"])
        for f in frames
        if f["dir"] == "in" and f["frame"].get("type") == "res" and f["frame"]["id"] != "rec-0"
    ]


def _ours_by_design(request: dict[str, Any]) -> bool:
    params = request["params"]
    return isinstance(params, dict) and bool(set(params) & EXTENSIONS.get(request["method"], frozenset()))


def test_every_recorded_refusal_is_ours(state_dir: Path) -> None:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    recorded = exchanges(RECORDING)
    assert len(recorded) > 900
    compared = refused = several = 0
    mismatches: list[str] = []
    with GatewayThread(tick_interval_ms=60_000) as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        for request, theirs in recorded:
            method = request["method"]
            assert method in METHODS, method
            if _ours_by_design(request):
                continue
            ours = client.request(method, request["params"])
            compared += 1
            if ours["ok"] != theirs["ok"] or (not theirs["ok"] and ours["error"] != theirs["error"]):
                mismatches.append(
                    f"{method} {json.dumps(request['params'])[:160]}\n  theirs {theirs}\n  ours   {ours}"
                )
            if not theirs["ok"]:
                refused += 1
                several += "; " in theirs["error"]["message"]
    assert not mismatches, f"{len(mismatches)} of {compared} differ:\n" + "\n".join(mismatches[:20])
    # the recording holds what it is meant to: many refusals, many listing several errors
    assert compared > 850 and refused > 800 and several > 200


@pytest.mark.parametrize(
    "path",
    sorted(p for d in FIXTURES.glob("gateway-2026.9.6*") for p in d.glob("*.jsonl")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_other_recorded_param_refusal(path: Path) -> None:
    """The refusals recorded before this rule was settled (fork's one `required`, branches.list's two
    errors, groups.update's anyOf, connect's enum) come out of the same validator."""
    seen = 0
    for request, theirs in exchanges(path) if path.name != "params.jsonl" else []:
        message = (theirs.get("error") or {}).get("message", "")
        if not message.startswith("invalid ") or " params: " not in message or _ours_by_design(request):
            continue
        if request["method"] != "connect" and request["method"] not in METHODS:
            continue  # not served (refused UNAVAILABLE: test_gateway_reads)
        params = {} if request.get("params") is None else request["params"]
        if request["method"] == "connect":
            assert check_connect(params) == message, path.name
        else:
            assert check_params(request["method"], params) == message, path.name
        seen += 1
    if path.name.startswith("error-connect-") and "again" not in path.name:
        assert seen == 1, path.name


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("abc", 3),
        ("e\u0301", 1),  # a combining mark joins its base
        ("\U0001f44d", 1),  # one code point, two UTF-16 units
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467", 1),  # a ZWJ sequence
        ("\U0001f1eb\U0001f1f7", 1),  # a flag: two regional indicators
        ("\u2764\ufe0f", 1),  # a variation selector
        ("\ud800x", 2),  # a lone surrogate counts alone
    ],
)
def test_lengths_count_graphemes_as_typebox_does(text: str, count: int) -> None:
    assert grapheme_count(text) == count


def test_nine_unknown_keys_fill_the_list_with_false_schemas() -> None:
    """TypeBox stops at 8 errors: with 9 unknown keys the `additionalProperties` error no longer
    fits, and the `schema is false` errors it would have replaced are what the client reads."""
    message = check_params("sessions.list", {f"k{i}": i for i in range(9)})
    assert message == "invalid sessions.list params: " + "; ".join(
        f"at /k{i}: schema is false" for i in range(8)
    )
