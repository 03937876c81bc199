"""The Gateway client against an in-process fake Gateway (tests/gateway_support.py): the frames it
sends (as the real CLI's `cli-*` fixtures), response matching, every error kind, timeouts."""

from __future__ import annotations

import re
import socket
import threading
import time
from types import SimpleNamespace

import pytest
from gateway_support import FakeGateway, free_port, threads_started_by_call

from openclaw_cli.errors import ExitCode, GatewayRequestError, GatewayTransportError
from openclaw_cli.gateway.client import OMIT, call
from openclaw_cli.gateway.discovery import discover

REQUEST_ID = re.compile(r"[12]:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def target(
    port: int,
    token: str | None = "secret-token",
    *,
    tmp_path=None,
    gateway: dict | None = None,
    env: dict | None = None,
):
    gw = {"port": port, **(gateway or {})}
    if token is not None:
        gw.setdefault("auth", {"mode": "token", "token": token})
    paths = SimpleNamespace(config_path="/cfg/openclaw.json", state_dir=tmp_path or "/state", profile=None)
    return discover(paths=paths, config={"gateway": gw}, env=env or {})


def test_call_sends_what_the_real_cli_sends_and_closes_with_1005() -> None:
    with FakeGateway() as fake:
        result = call(target(fake.port), "sessions.cleanup", {"agent": "main", "enforce": True})
        fake.wait_closed()
    connect, request = fake.received
    assert connect["type"] == "req" and connect["method"] == "connect"
    assert REQUEST_ID.fullmatch(connect["id"]) and connect["id"].startswith("1:")
    assert REQUEST_ID.fullmatch(request["id"]) and request["id"].startswith("2:")
    params = connect["params"]
    assert list(params) == ["minProtocol", "maxProtocol", "client", "caps", "auth", "role", "scopes"]
    assert (params["minProtocol"], params["maxProtocol"], params["role"], params["caps"]) == (
        4,
        4,
        "operator",
        [],
    )
    assert params["auth"] == {"token": "secret-token"}
    assert params["scopes"] == ["operator.admin"]  # least privilege for sessions.cleanup
    client = params["client"]
    assert client["id"] == "cli" and client["mode"] == "cli" and "device" not in params
    assert {"version", "platform", "deviceFamily", "instanceId"} <= set(client)
    assert request == {
        "type": "req",
        "id": request["id"],
        "method": "sessions.cleanup",
        "params": {"agent": "main", "enforce": True},
    }
    assert fake.closes == [1005]  # a close frame without a status code, like the real CLI
    assert result.payload == {"method": "sessions.cleanup", "params": {"agent": "main", "enforce": True}}


def test_read_methods_ask_for_read_scope_and_params_can_be_omitted() -> None:
    with FakeGateway() as fake:
        result = call(target(fake.port), "health")
    assert result.payload["ok"] is True
    connect, request = fake.received
    assert connect["params"]["scopes"] == ["operator.read"]
    assert "params" not in request  # the real CLI omits health's params
    assert result.hello["type"] == "hello-ok" and result.connect_latency_ms >= 0


def test_response_is_matched_by_id_ignoring_events_and_other_ids() -> None:
    def respond(method, params, send_event):
        send_event("tick", {"ts": 1})
        send_event("sessions.changed", {"reason": "cleanup"})
        return ("ok", {"rows": [1, 2, 3]})

    with FakeGateway(respond=respond) as fake:
        result = call(target(fake.port), "sessions.list", {"limit": 3})
    assert result.payload == {"rows": [1, 2, 3]}


def test_request_error_is_typed_with_openclaw_fields() -> None:
    error = {
        "code": "INVALID_REQUEST",
        "message": "invalid sessions.list params: at /limit: must be >= 1",
        "retryable": False,
    }
    with (
        FakeGateway(respond=lambda m, p, e: ("error", error)) as fake,
        pytest.raises(GatewayRequestError) as info,
    ):
        call(target(fake.port), "sessions.list", {"limit": 0})
    exc = info.value
    assert exc.exit_code == ExitCode.GATEWAY
    assert exc.to_json() == {
        "ok": False,
        "error": {
            "type": "gateway_request_error",
            "code": "INVALID_REQUEST",
            "message": error["message"],
            "retryable": False,
        },
    }


def test_forbidden_scope_error_keeps_details() -> None:
    error = {
        "code": "FORBIDDEN",
        "message": "missing scope: operator.admin",
        "details": {
            "code": "MISSING_SCOPE",
            "missingScope": "operator.admin",
            "requiredScopes": ["operator.admin"],
        },
    }
    with (
        FakeGateway(respond=lambda m, p, e: ("error", error)) as fake,
        pytest.raises(GatewayRequestError) as info,
    ):
        call(target(fake.port), "sessions.cleanup", {}, scopes=["operator.read"])
    assert info.value.to_json()["error"]["details"]["missingScope"] == "operator.admin"
    assert info.value.exit_code == ExitCode.GATEWAY
    assert fake.received[0]["params"]["scopes"] == ["operator.read"]


def test_wrong_token_is_an_auth_request_error() -> None:
    with FakeGateway(token="right") as fake, pytest.raises(GatewayRequestError) as info:
        call(target(fake.port, token="wrong"), "health")
    exc = info.value
    assert exc.code == "INVALID_REQUEST" and exc.details["code"] == "AUTH_TOKEN_MISMATCH"
    assert exc.exit_code == ExitCode.GATEWAY_AUTH
    assert len(fake.requests()) == 1  # only the connect: the request was never sent


def test_protocol_mismatch_is_reported() -> None:
    with FakeGateway(protocol=5) as fake, pytest.raises(GatewayRequestError) as info:
        call(target(fake.port), "health")
    assert info.value.details["code"] == "PROTOCOL_MISMATCH"
    assert info.value.exit_code == ExitCode.GATEWAY


def test_nothing_listening_is_unreachable_and_fast() -> None:
    port = free_port()
    with pytest.raises(GatewayTransportError) as info:
        # a deadline no test waits for: the refusal itself must end the call (else kind "timeout")
        call(target(port), "health", timeout_ms=600_000)
    exc = info.value
    assert exc.unreachable and exc.kind == "closed" and exc.code is None
    assert exc.reason == f"connect ECONNREFUSED 127.0.0.1:{port}"
    doc = exc.to_json()
    assert doc["error"]["message"] == f"Gateway not reachable at ws://127.0.0.1:{port} (ECONNREFUSED)."
    assert doc["gateway"] == {
        "url": f"ws://127.0.0.1:{port}",
        "urlSource": "local loopback",
        "bindDetail": "Bind: loopback",
    }
    assert exc.exit_code == ExitCode.GATEWAY_UNAVAILABLE


def test_unknown_host_is_unreachable() -> None:
    t = target(
        1, gateway={"mode": "remote", "remote": {"url": "wss://no-such-host.invalid:443", "token": "t"}}
    )
    with pytest.raises(GatewayTransportError) as info:
        call(t, "health", timeout_ms=5000)
    assert info.value.unreachable and "ENOTFOUND" in info.value.message


def test_timeout_waiting_for_the_response_after_dispatch() -> None:
    with FakeGateway(respond=lambda m, p, e: ("hang",)) as fake:
        started = time.monotonic()
        with pytest.raises(GatewayTransportError) as info:
            # (2 s: the handshake must finish within it for the request to be dispatched at all,
            # 400 ms was not always enough on a loaded machine)
            call(target(fake.port), "sessions.cleanup", {}, timeout_ms=2_000)
        elapsed = time.monotonic() - started
    exc = info.value
    # the Gateway never answers, so only the deadline ends the call; never before it (a lower
    # bound: a loaded machine only makes it later)
    assert elapsed >= 1.99
    assert exc.kind == "timeout" and exc.timeout_ms == 2_000 and not exc.unreachable
    assert exc.to_json()["error"] == {
        "type": "gateway_transport_error",
        "kind": "timeout",
        "message": "gateway timeout after 2000ms",
        "timeoutMs": 2_000,
    }
    assert "outcome is unknown" in exc.message  # the request had been sent


def test_timeout_when_the_listener_never_speaks() -> None:
    with FakeGateway(challenge=False) as fake, pytest.raises(GatewayTransportError) as info:
        call(target(fake.port), "health", timeout_ms=300)
    assert info.value.kind == "timeout" and "outcome is unknown" not in info.value.message


def test_timeout_when_tcp_accepts_but_nothing_answers() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)  # accepts at the kernel level; never reads or writes
    try:
        with pytest.raises(GatewayTransportError) as info:
            call(target(server.getsockname()[1]), "health", timeout_ms=300)
    finally:
        server.close()
    assert info.value.kind == "timeout" and not info.value.unreachable


def test_server_closing_mid_request_is_a_closed_error_with_code() -> None:
    with (
        FakeGateway(respond=lambda m, p, e: ("close", 1011, "boom")) as fake,
        pytest.raises(GatewayTransportError) as info,
    ):
        call(target(fake.port), "sessions.cleanup", {})
    exc = info.value
    assert (exc.kind, exc.code, exc.reason) == ("closed", 1011, "boom")
    assert not exc.unreachable
    assert exc.to_json()["error"]["message"] == "gateway closed (1011): boom"


def test_non_json_frame_is_a_protocol_error() -> None:
    with (
        FakeGateway(respond=lambda m, p, e: ("raw", "this is not json")) as fake,
        pytest.raises(GatewayTransportError) as info,
    ):
        call(target(fake.port), "health")
    assert info.value.kind == "protocol"


def _http_404_server() -> tuple[socket.socket, threading.Thread]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_a_listener_that_is_not_a_gateway_is_a_protocol_error() -> None:
    server, thread = _http_404_server()
    try:
        with pytest.raises(GatewayTransportError) as info:
            call(target(server.getsockname()[1]), "health", timeout_ms=3000)
    finally:
        thread.join(5)
        server.close()
    assert info.value.kind == "protocol" and "HTTP 404" in info.value.message
    assert not info.value.unreachable


def test_password_auth_is_sent_as_password() -> None:
    with FakeGateway(token=None) as fake:
        t = target(fake.port, token=None, gateway={"auth": {"mode": "password", "password": "pw"}})
        call(t, "health")
    assert fake.received[0]["params"]["auth"] == {"password": "pw"}


def test_no_auth_omits_the_auth_block() -> None:
    with FakeGateway(token=None) as fake:
        call(target(fake.port, token=None), "health", params=OMIT)
    assert "auth" not in fake.received[0]["params"]


def test_one_thread_reads_and_writes_the_socket(monkeypatch) -> None:
    # websockets' sync client reads in a thread of its own while ours writes; on TLS that races
    # OpenSSL (decisions.md "Gateway client: TLS 1.3 tickets"). Our connection starts no thread.
    with FakeGateway() as fake:
        started = threads_started_by_call(monkeypatch, lambda: call(target(fake.port), "health"))
    assert started == []


def test_the_upgrade_request_is_unchanged() -> None:
    from openclaw_cli import __version__

    with FakeGateway() as fake:
        call(target(fake.port), "health")
    headers = fake.upgrade_headers[0]
    assert list(headers) == [
        "Host",
        "Upgrade",
        "Connection",
        "Sec-WebSocket-Key",
        "Sec-WebSocket-Version",
        "Sec-WebSocket-Extensions",
        "User-Agent",
    ]
    assert headers["Host"] == f"127.0.0.1:{fake.port}"
    assert (headers["Upgrade"], headers["Connection"], headers["Sec-WebSocket-Version"]) == (
        "websocket",
        "Upgrade",
        "13",
    )
    assert headers["Sec-WebSocket-Extensions"] == "permessage-deflate; client_max_window_bits"
    assert headers["User-Agent"] == f"openclaw-cli/{__version__}"


def test_pings_are_answered_and_fragmented_responses_joined() -> None:
    payload = {"ok": True, "rows": ["x" * 50] * 40}

    def respond(method, params, send_event):
        if method == "sessions.list":
            return ("fragments", payload, 7)
        return ("ping", payload)

    with FakeGateway(respond=respond) as fake:
        assert call(target(fake.port), "health").payload == payload
        assert call(target(fake.port), "sessions.list", {}).payload == payload
        fake.wait_closed(2)
    assert fake.pongs == 1 and fake.closes == [1005, 1005]


def test_a_gateway_still_starting_is_connected_again_and_the_request_sent_once() -> None:
    # The real Gateway refuses connects with a retryable UNAVAILABLE while its startup sidecars run;
    # OpenClaw's clients wait retryAfterMs and connect again, and so does ours.
    with FakeGateway(starting=2) as fake:
        result = call(target(fake.port), "sessions.cleanup", {"agent": "main", "enforce": True})
    assert result.payload == {"method": "sessions.cleanup", "params": {"agent": "main", "enforce": True}}
    assert fake.connections == 3
    assert len(fake.requests("connect")) == 3 and len(fake.requests("sessions.cleanup")) == 1


def test_a_deadline_that_runs_out_in_a_retry_reports_the_refusal_not_a_bare_timeout() -> None:
    # Refused as starting, then the retry's connection never speaks (a loaded machine, a Gateway busy
    # with its sidecars): the deadline runs out mid-handshake, and the Gateway's own words are reported.
    with FakeGateway(starting=1, silent_from=2) as fake, pytest.raises(GatewayRequestError) as caught:
        call(target(fake.port), "sessions.cleanup", {"agent": "main"}, timeout_ms=1_500)
    assert caught.value.message == "gateway starting; retry shortly" and caught.value.retryable
    assert fake.connections == 2 and fake.requests("sessions.cleanup") == []


def test_a_gateway_that_stays_starting_past_the_deadline_is_named_not_a_bare_timeout() -> None:
    with FakeGateway(starting=1_000) as fake, pytest.raises(GatewayRequestError) as caught:
        # (a deadline long enough for the first refusal to arrive on a loaded machine: 400 ms was
        # once spent before the fake answered at all, a bare timeout at load 20)
        call(target(fake.port), "sessions.cleanup", {"agent": "main"}, timeout_ms=3_000)
    assert caught.value.message == "gateway starting; retry shortly" and caught.value.retryable
    assert caught.value.exit_code == ExitCode.GATEWAY  # the Gateway answered: a request error
    assert fake.requests("sessions.cleanup") == []
