"""`openclaw gateway call|probe|health` and `status`'s gateway block, as subprocesses against the
in-process fake Gateway; bad input gives a clear error and a documented exit code, no traceback."""

from __future__ import annotations

import pytest
from cleanup_support import cli, cli_json, write_config
from gateway_support import FakeGateway, free_port

from openclaw_cli.errors import ExitCode

TOKEN = "secret-token"


@pytest.fixture(autouse=True)
def config_port_decides(monkeypatch):
    monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)


def configure(state_dir, port: int, token: str | None = TOKEN) -> None:
    gateway: dict = {"port": port}
    if token is not None:
        gateway["auth"] = {"mode": "token", "token": token}
    write_config(state_dir, {"gateway": gateway})


def list_responder(method, params, send_event):
    if method == "sessions.list":
        send_event("tick", {"ts": 1})
        limit = (params or {}).get("limit", 100)
        return ("ok", {"count": limit, "sessions": [{"key": f"agent:main:s{i}"} for i in range(limit)]})
    if method == "health":
        return (
            "ok",
            {
                "ok": True,
                "durationMs": 6,
                "agents": [{"agentId": "main", "sessions": {"count": 12, "path": "/p"}}],
            },
        )
    return ("error", {"code": "INVALID_REQUEST", "message": f"unknown method: {method}"})


def test_call_prints_the_payload(state_dir):
    with FakeGateway(respond=list_responder) as fake:
        configure(state_dir, fake.port)
        code, doc, err = cli_json("gateway", "call", "sessions.list", "--params", '{"limit":3}', "--json")
        proc = cli("gateway", "call", "sessions.list", "--params", '{"limit":2}')
    assert code == 0, err
    assert len(doc["sessions"]) == 3
    assert fake.requests("sessions.list")[0]["params"] == {"limit": 3}
    assert fake.requests("connect")[0]["params"]["scopes"] == ["operator.read"]
    assert proc.returncode == 0 and proc.stderr.startswith("Gateway call: sessions.list")
    assert '"count": 2' in proc.stdout


def test_call_with_flags_only(state_dir):
    with FakeGateway(respond=list_responder, token="flag-token") as fake:
        configure(state_dir, free_port(), token=None)
        code, doc, err = cli_json(
            "gateway", "call", "health", "--url", fake.url, "--token", "flag-token", "--json"
        )
    assert code == 0, err
    assert doc["ok"] is True and fake.received[0]["params"]["auth"] == {"token": "flag-token"}


def test_unknown_method_is_the_gateways_error(state_dir):
    with FakeGateway(respond=list_responder) as fake:
        configure(state_dir, fake.port)
        code, doc, _ = cli_json("gateway", "call", "sessions.nope", "--json")
    assert code == ExitCode.GATEWAY
    assert doc["error"] == {
        "type": "gateway_request_error",
        "code": "INVALID_REQUEST",
        "message": "unknown method: sessions.nope",
        "retryable": False,
    }
    assert fake.requests("connect")[0]["params"]["scopes"][:3] == [
        "operator.admin",
        "operator.read",
        "operator.write",
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["gateway", "call", "health", "--params", "{not json"], "--params must be valid JSON"),
        (["gateway", "call", "no such method!"], "Invalid Gateway method name"),
        (["gateway", "call", "health", "--url", "ws://", "--token", "t"], "has no host"),
        (["gateway", "call", "health", "--url", "http//x", "--token", "t"], "ws:// or wss://"),
        (["gateway", "call", "health", "--timeout", "0"], "--timeout must be a positive number"),
    ],
)
def test_bad_input_is_a_usage_error(state_dir, args, needle):
    code, doc, err = cli_json(*args, "--json")
    assert code == ExitCode.USAGE, err
    assert needle in doc["error"]["message"] and "Traceback" not in err


def test_plaintext_url_to_a_remote_host_is_refused(state_dir):
    code, doc, _ = cli_json(
        "gateway", "call", "health", "--url", "ws://203.0.113.9:18789", "--token", "t", "--json"
    )
    assert code == ExitCode.REFUSED and doc["error"]["type"] == "gateway_security_error"


def test_call_when_nothing_listens(state_dir):
    port = free_port()
    configure(state_dir, port)
    code, doc, _ = cli_json("gateway", "call", "health", "--json")
    assert code == ExitCode.GATEWAY_UNAVAILABLE
    assert doc == {
        "ok": False,
        "error": {
            "type": "gateway_transport_error",
            "kind": "closed",
            "message": f"Gateway not reachable at ws://127.0.0.1:{port} (ECONNREFUSED).",
            "reason": f"connect ECONNREFUSED 127.0.0.1:{port}",
        },
        "gateway": {
            "url": f"ws://127.0.0.1:{port}",
            "urlSource": "local loopback",
            "bindDetail": "Bind: loopback",
        },
    }
    configure(state_dir, port, token=None)  # no credentials either: still "not reachable" first
    code, doc, _ = cli_json("gateway", "call", "health", "--json")
    assert code == ExitCode.GATEWAY_UNAVAILABLE and doc["error"]["type"] == "gateway_transport_error"


def test_call_without_credentials_to_a_listening_gateway(state_dir):
    with FakeGateway() as fake:
        configure(state_dir, fake.port, token=None)
        code, doc, _ = cli_json("gateway", "call", "health", "--json")
    assert code == ExitCode.GATEWAY_AUTH and doc["error"]["type"] == "gateway_credentials_required"
    assert fake.requests() == []


def test_url_override_needs_explicit_credentials(state_dir):
    with FakeGateway() as fake:
        configure(state_dir, fake.port)
        code, doc, _ = cli_json("gateway", "call", "health", "--url", fake.url, "--json")
    assert code == ExitCode.GATEWAY_AUTH
    assert doc["error"]["message"].startswith("gateway url override requires explicit credentials")


def test_health(state_dir):
    with FakeGateway(respond=list_responder) as fake:
        configure(state_dir, fake.port)
        code, doc, _ = cli_json("gateway", "health", "--json")
        proc = cli("gateway", "health")
    assert code == 0 and doc["ok"] is True
    assert proc.returncode == 0 and proc.stdout.startswith(
        "Gateway Health\nOK (6ms)\nAgent main: 12 sessions"
    )


def test_probe_ok_and_failures(state_dir):
    with FakeGateway(respond=list_responder) as fake:
        configure(state_dir, fake.port)
        code, doc, _ = cli_json("gateway", "probe", "--json")
        assert code == 0 and doc["ok"] is True
        gw = doc["gateway"]
        assert gw["reachable"] is True and gw["error"] is None and gw["server"]["version"] == "2026.9.6"
        assert gw["auth"]["scopes"] == ["operator.read"]
        code, doc, _ = cli_json("gateway", "probe", "--json", "--token", "wrong")
        assert code == ExitCode.GATEWAY_AUTH and doc["ok"] is False
        assert doc["gateway"]["reachable"] is True and "AUTH_TOKEN_MISMATCH" in doc["gateway"]["error"]
        assert doc["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    code, doc, _ = cli_json("gateway", "probe", "--json")
    assert code == ExitCode.GATEWAY_UNAVAILABLE
    assert doc["gateway"]["reachable"] is False and "ECONNREFUSED" in doc["gateway"]["error"]


def status_gateway(env: dict | None = None) -> dict:
    code, doc, err = cli_json("status", "--json", env=env)
    assert code == 0, err
    return doc["gateway"]


def test_status_gateway_block(state_dir):
    with FakeGateway(respond=list_responder) as fake:
        configure(state_dir, fake.port)
        good = status_gateway()
        configure(state_dir, fake.port, token="wrong")
        bad = status_gateway()
        configure(state_dir, fake.port, token=None)
        anonymous = status_gateway()
    # OpenClaw's keys in its order (observed §7); `self` from the server's hello
    assert list(good) == [
        "mode",
        "url",
        "urlSource",
        "misconfigured",
        "reachable",
        "connectLatencyMs",
        "self",
        "error",
        "authWarning",
    ]
    assert good["reachable"] is True and good["error"] is None and isinstance(good["connectLatencyMs"], int)
    assert good["url"] == f"ws://127.0.0.1:{fake.port}" and good["urlSource"] == "local loopback"
    # a wrong token is not "healthy": the Gateway's error is shown
    assert bad["reachable"] is True and bad["error"].startswith("unauthorized: gateway token mismatch")
    assert anonymous["authWarning"] and anonymous["error"]
    down = status_gateway()
    assert down["reachable"] is False and down["error"] == f"connect ECONNREFUSED 127.0.0.1:{fake.port}"


def test_status_no_probe_and_a_bad_config_url(state_dir):
    configure(state_dir, free_port())
    assert status_gateway_args("--no-probe")["error"] == "not probed"
    write_config(state_dir, {"gateway": {"mode": "remote", "remote": {"url": "ws://203.0.113.9:1"}}})
    block = status_gateway()
    assert block["reachable"] is False and block["error"].startswith("SECURITY ERROR")


def status_gateway_args(*args: str) -> dict:
    code, doc, err = cli_json("status", "--json", *args)
    assert code == 0, err
    return doc["gateway"]


def test_commands_that_never_contact_a_gateway_do_not_load_the_client(state_dir):
    """`sessions --json` and `--help` import neither websockets nor the client (start-up time)."""
    from test_startup_imports import imported_modules

    # (`sessions cleanup --dry-run` asks an owning Gateway for its release since issue 22 (D23): not listed)
    for argv in (["openclaw", "sessions", "--json"], ["openclaw", "--help"]):
        names = imported_modules(
            "import sys",
            f"sys.argv = {argv!r}",
            "import openclaw_cli.cli.main as m",
            "m.app(standalone_mode=False)",
        )
        for module in ("websockets", "openclaw_cli.gateway.client", "openclaw_cli.gateway.discovery", "ssl"):
            assert module not in names, (argv, module)
