"""Issue 29, finding 8 (Gateway side): odd numbers in params and a full disk under the Gateway.

Integers are integers: a number the real Gateway treats as an integer (`3.0`, `1E2`: JavaScript
sees 3 and 100) is served as that integer, a fraction or a value beyond JavaScript's exact range
(`1e300`, `2**64+5`) is refused with the schema's `must be integer`; never `UNAVAILABLE internal
error: TypeError`. ENOSPC while the Gateway writes comes back UNAVAILABLE and retryable (the request
was fine; the disk is full), not INVALID_REQUEST or an internal error. (The answers judged against
the real Gateway's, byte for byte, are in tests/test_listing_peer.py, on the real Gateway it shares.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openclaw_cli.ops.methods import parse_params
from openclaw_cli.ops.params import MAX_SAFE_INTEGER
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import Client, GatewayThread, connected
from tests.hardening_support import can_mount, tmpfs


@pytest.fixture
def gateway(state_dir: Path):
    generate_legacy_state(state_dir, 8, 0, 4242, "--cron-key-style", "canonical")
    with GatewayThread(tick_interval_ms=60_000) as gw:
        yield gw


def _raw(client: Client, method: str, params_json: str) -> dict:
    """Send params exactly as written (Python's json would print 3.0 as 3.0 but 1E2 as 100.0)."""
    client.send(f'{{"type":"req","id":"r","method":"{method}","params":{params_json}}}')
    return client.response("r", timeout=30)


@pytest.mark.parametrize(
    ("params", "count"),
    [('{"limit":3.0}', 3), ('{"limit":1E2}', 8), ('{"limit":2}', 2), ('{"limit":2,"offset":1.0}', 2)],
)
def test_integral_numbers_are_served_as_integers(gateway: GatewayThread, params: str, count: int) -> None:
    with connected(gateway.url) as c:
        res = _raw(c, "sessions.list", params)
        assert res["ok"] is True, res
        assert len(res["payload"]["sessions"]) == count


@pytest.mark.parametrize(
    ("method", "params", "where"),
    [
        ("sessions.list", '{"limit":1e300}', "/limit"),
        ("sessions.list", '{"limit":18446744073709551621}', "/limit"),
        ("sessions.list", f'{{"limit":{MAX_SAFE_INTEGER + 2}}}', "/limit"),
        ("sessions.list", '{"limit":2.5}', "/limit"),
        ("sessions.list", '{"limit":1e400}', "/limit"),  # Infinity to JSON.parse; the real Gateway says this
        ("sessions.list", '{"offset":1e300}', "/offset"),
        ("sessions.list", '{"activeMinutes":1e300}', "/activeMinutes"),
        ("sessions.preview", '{"keys":["agent:main:main"],"limit":1e300}', "/limit"),
        ("sessions.preview", '{"keys":["agent:main:main"],"maxChars":1e300}', "/maxChars"),
        ("sessions.compact", '{"key":"agent:main:main","maxLines":1e300}', "/maxLines"),
    ],
)
def test_fractions_and_out_of_range_integers_are_schema_errors(
    gateway: GatewayThread, method: str, params: str, where: str
) -> None:
    with connected(gateway.url) as c:
        res = _raw(c, method, params)
        assert res["ok"] is False
        assert res["error"] == {
            "code": "INVALID_REQUEST",
            "message": f"invalid {method} params: at {where}: must be integer",
        }
        assert c.request("health")["ok"] is True  # the connection keeps being served


def test_normalized_params_carry_ints() -> None:
    error, params = parse_params("sessions.list", {"limit": 3.0, "offset": 0.0, "search": "x"})
    assert error is None and params == {"limit": 3, "offset": 0, "search": "x"}
    assert type(params["limit"]) is int and type(params["offset"]) is int
    error, params = parse_params("sessions.preview", {"keys": ["a"], "limit": 1e2, "maxChars": 2e1})
    assert error is None and params == {"keys": ["a"], "limit": 100, "maxChars": 20}
    assert parse_params("sessions.list", {"limit": float(MAX_SAFE_INTEGER)})[1] == {"limit": MAX_SAFE_INTEGER}


@pytest.fixture
def full_disk_gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    with tmpfs("4m") as mnt:
        state = mnt / "state"
        generate_legacy_state(state, 6, 0, 7, "--cron-key-style", "canonical")
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(state / "openclaw.json"))
        from openclaw_cli.gateway.ownership import take_ownership

        ownership = take_ownership(state)  # as `gateway run`: the Gateway owns the state it writes
        try:
            with GatewayThread(tick_interval_ms=60_000) as gw:
                yield gw, mnt, state
        finally:
            ownership.release()


def test_enospc_under_the_gateway_is_retryable_unavailable(full_disk_gateway) -> None:
    gw, mnt, state = full_disk_gateway
    store = state / "agents" / "main" / "sessions" / "sessions.json"
    key = next(iter(json.loads(store.read_text())))
    before = store.read_bytes()
    with connected(gw.url) as c:
        filler = mnt / "filler"
        with filler.open("wb") as fh:  # fill the disk to the last block
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        try:
            res = c.request("sessions.patch", {"key": key, "label": "x" * 400})
            assert res["ok"] is False, res
            error = res["error"]
            assert error["code"] == "UNAVAILABLE" and error["retryable"] is True, error
            assert error["details"]["type"] == "no_space", error
            assert "internal error" not in error["message"]
            assert store.read_bytes() == before  # nothing half-written
        finally:
            filler.unlink()
        # space again: the same request now succeeds (it was worth retrying)
        assert shutil.disk_usage(mnt).free > 1_000_000
        res = c.request("sessions.patch", {"key": key, "label": "x" * 400})
        assert res["ok"] is True, res
