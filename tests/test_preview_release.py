"""Every preview follows the release that would apply it (issue 22 part 3, D23): a dry run is
computed locally, with the rules of the Gateway owning the state when one answers (its hello-ok
`server.version`), else D23's choice — so reset and `compact --max-lines` previews give one answer
with or without a Gateway, as cleanup's does (test_delegation.py). The fake Gateway announces
2026.9.6; the config's `meta.lastTouchedVersion` 2026.7.1 chooses 2026.7 when nothing listens."""

from __future__ import annotations

import json

import pytest
from cleanup_support import cli_json, make_legacy, make_sqlite, now_ms
from gateway_support import FakeGateway

TOKEN = "secret-token"
KEY = "agent:main:custom-1"


@pytest.fixture(autouse=True)
def config_port_decides(monkeypatch):
    monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)


def _state(state_dir, port: int, kind: str = "legacy") -> dict[str, str]:
    make = (
        make_legacy if kind == "legacy" else make_sqlite
    )  # (legacy --max-lines keeps the id in every release)
    make(state_dir, {KEY: {"sessionId": "s-old", "updatedAt": now_ms()}}, turns=4)
    config = {
        "gateway": {"port": port, "auth": {"mode": "token", "token": TOKEN}},
        "meta": {"lastTouchedVersion": "2026.7.1"},
    }
    (state_dir / "openclaw.json").write_text(json.dumps(config))
    return {"OPENCLAW_GATEWAY_PORT": ""}


def _never_applied(method, params, send_event):
    return ("error", {"code": "INVALID_REQUEST", "message": f"a preview must not send {method}"})


@pytest.mark.parametrize(
    ("args", "kind"),
    [(["sessions", "reset", KEY], "legacy"), (["compact", KEY, "--max-lines", "3"], "sqlite")],
)
def test_a_preview_follows_the_owning_gateways_release(state_dir, args, kind) -> None:
    with FakeGateway(respond=_never_applied) as fake:
        env = _state(state_dir, fake.port, kind)
        code, doc, err = cli_json(*args, "--dry-run", "--json", env=env)
        assert code == 0, err
        sent = [f["method"] for f in fake.requests() if f.get("method") != "connect"]
        assert sent == [] and fake.connections == 1  # asked its release (hello-ok), sent nothing
    # 2026.9.6 (the Gateway's release) keeps the sessionId
    assert doc.get("sessionId", "s-old") == "s-old" and "previousSessionId" not in doc
    assert doc.get("keepsSessionId", True) is True
    code, alone, err = cli_json(*args, "--dry-run", "--json", env=env)  # nothing listens now: 2026.7
    assert code == 0, err
    assert alone.get("previousSessionId") == "s-old" or alone.get("keepsSessionId") is False


def test_an_explicit_store_is_offline_repair_and_asks_no_gateway(state_dir) -> None:
    with FakeGateway(respond=_never_applied) as fake:
        env = _state(state_dir, fake.port)
        store = str(state_dir / "agents" / "main" / "sessions" / "sessions.json")
        code, doc, err = cli_json("sessions", "reset", KEY, "--dry-run", "--json", "--store", store, env=env)
        assert code == 0, err
        assert fake.connections == 0
    assert doc.get("previousSessionId") == "s-old"  # the store's own release: 2026.7
