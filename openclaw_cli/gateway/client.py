"""A Gateway client for the CLI: one WebSocket per RPC, as OpenClaw's CLI does (spec §8; the
fixtures' `cli-*` files are what it sends).

    TCP connect -> (TLS) -> WebSocket upgrade -> `connect.challenge` event
    -> req `connect {minProtocol:4, maxProtocol:4, client:{id:"cli", …}, role:"operator",
       scopes:[least privilege], caps:[], auth:{token|password}}` -> res `hello-ok`
    -> req `<method>` -> res (matched by id; events in between are ignored) -> close (1005)

Every read and write on the socket happens in the calling thread, in order (`gateway/wsconn.py`:
websockets' Sans-I/O protocol over our own TCP and TLS socket; its sync client would read in a
second thread, which races OpenSSL on TLS 1.3 session tickets). Request ids are `"<n>:<uuid>"`.
One deadline (`timeout_ms`, default 10 s like OpenClaw) covers the whole exchange. Failures are typed (`openclaw_cli.errors`): `GatewayTransportError` (kind
`closed`/`timeout`/`tls`/`protocol`; `unreachable=True` when nothing listens: refused, host or
network unreachable or unknown before any WebSocket opened), `GatewayRequestError` for an `ok:false`
response (to `connect` too: bad token, protocol mismatch).

Imported only by commands that contact a Gateway (websockets costs start-up time).
"""

from __future__ import annotations

import errno
import hashlib
import socket
import ssl
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from openclaw_cli import __version__
from openclaw_cli.errors import ExitCode, GatewayRequestError, GatewayTransportError
from openclaw_cli.gateway.discovery import GatewayTarget

PROTOCOL_VERSION = 4
CLIENT_ID = "cli"
CLIENT_MODE = "cli"
ROLE = "operator"
DEFAULT_TIMEOUT_MS = 10_000
MAX_FRAME_BYTES = 64 * 1024 * 1024  # the real Gateway's maxPayload is 25 MiB
CLOSE_TIMEOUT_S = 1.0
OMIT = object()  # `params` left out of the request frame (what the real CLI does for `health`)

_UNREACHABLE_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL}
_STARTING_RETRY_MS = 250  # when a retryable connect refusal names no retryAfterMs
_AUTH_DETAIL_CODES = {"DEVICE_IDENTITY_REQUIRED", "PAIRING_REQUIRED", "NOT_PAIRED"}
DISPATCHED_GUIDANCE = (
    "The request was already sent to the gateway, so the operation may have been applied even "
    "though no response arrived; its outcome is unknown. Verify the current state (for example, "
    "re-run the equivalent read-only command) before retrying, especially for write actions."
)


@dataclass
class CallResult:
    payload: Any
    hello: dict[str, Any]
    connect_latency_ms: int  # from the first TCP byte to hello-ok
    scopes: list[str]


def _errno_name(number: int | None) -> str | None:
    return errno.errorcode.get(number) if number is not None else None


class _Exchange:
    """One connection's state: the target, the deadline and what has been sent."""

    def __init__(self, target: GatewayTarget, timeout_ms: int):
        self.target = target
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000
        self.dispatched = False
        self.counter = 0

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.timeout()
        return left

    def next_id(self) -> str:
        self.counter += 1
        return f"{self.counter}:{uuid.uuid4()}"

    # ---- errors ---------------------------------------------------------------------------

    def _with_guidance(self, message: str) -> str:
        return f"{message}\n\n{DISPATCHED_GUIDANCE}" if self.dispatched else message

    def timeout(self) -> GatewayTransportError:
        message = f"gateway timeout after {self.timeout_ms}ms\n{self.target.details_message()}"
        return GatewayTransportError(
            "timeout",
            self._with_guidance(message),
            gateway=self.target.gateway_block(),
            timeout_ms=self.timeout_ms,
        )

    def unreachable(self, code_name: str | None, reason: str) -> GatewayTransportError:
        suffix = f" ({code_name})" if code_name else ""
        message = "\n".join(
            [
                f"Gateway not reachable at {self.target.url}{suffix}.",
                "Start it with `openclaw gateway run` or check `openclaw gateway status`.",
                self.target.details_message(),
            ]
        )
        return GatewayTransportError(
            "closed", message, gateway=self.target.gateway_block(), reason=reason, unreachable=True
        )

    def closed(self, code: int, reason: str) -> GatewayTransportError:
        reason = reason.strip() or "no close reason"
        hint = {1006: " abnormal closure (no close frame)", 1000: " normal closure"}.get(code, "")
        message = f"gateway closed ({code}{hint}): {reason}\n{self.target.details_message()}"
        return GatewayTransportError(
            "closed",
            self._with_guidance(message),
            gateway=self.target.gateway_block(),
            code=code,
            reason=reason,
        )

    def failure(self, kind: str, reason: str) -> GatewayTransportError:
        label = {"tls": "gateway TLS verification failed", "protocol": "gateway protocol error"}.get(
            kind, "gateway error"
        )
        message = f"{label}: {reason}\n{self.target.details_message()}"
        return GatewayTransportError(
            kind, self._with_guidance(message), gateway=self.target.gateway_block(), reason=reason
        )


def _ssl_context(target: GatewayTarget) -> ssl.SSLContext:
    tls = target.tls
    if tls is not None and tls.fingerprint:
        # Pinned leaf certificate: the chain and host name are not checked (OpenClaw does the same);
        # the pin is compared right after the TLS handshake, before any credential is sent.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context = ssl.create_default_context()
    if tls is not None and tls.ca_file:
        try:
            context.load_verify_locations(cafile=tls.ca_file)
        except (OSError, ssl.SSLError) as exc:
            from openclaw_cli.errors import ConfigError

            raise ConfigError(
                f"NODE_EXTRA_CA_CERTS={tls.ca_file}: cannot load the CA bundle ({exc})"
            ) from None
    return context


def _connect_params(target: GatewayTarget, scopes: list[str]) -> dict[str, Any]:
    import platform

    auth: dict[str, str] = {}
    if target.token:
        auth["token"] = target.token
    if target.password:
        auth["password"] = target.password
    params: dict[str, Any] = {
        "minProtocol": PROTOCOL_VERSION,
        "maxProtocol": PROTOCOL_VERSION,
        "client": {
            "id": CLIENT_ID,
            "version": __version__,
            "platform": _node_platform(),
            "deviceFamily": platform.system() or "unknown",
            "mode": CLIENT_MODE,
            "instanceId": str(uuid.uuid4()),
        },
        "caps": [],
    }
    if auth:
        params["auth"] = auth
    params["role"] = ROLE
    params["scopes"] = scopes
    return params


def _node_platform() -> str:
    import sys

    return {"darwin": "darwin", "win32": "win32"}.get(
        sys.platform, "linux" if sys.platform.startswith("linux") else sys.platform
    )


def _is_auth_rejection(error: dict[str, Any]) -> bool:
    details = error.get("details")
    detail_code = details.get("code") if isinstance(details, dict) else None
    if isinstance(detail_code, str) and (
        detail_code.startswith("AUTH_") or detail_code in _AUTH_DETAIL_CODES
    ):
        return True
    return error.get("code") in ("NOT_PAIRED", "UNAUTHORIZED")


def _request_error(error: Any, method: str, *, connect: bool) -> GatewayRequestError:
    error = error if isinstance(error, dict) else {}
    code = error.get("code") if isinstance(error.get("code"), str) and error.get("code") else "UNAVAILABLE"
    message = error.get("message") if isinstance(error.get("message"), str) and error.get("message") else code
    retry_after = error.get("retryAfterMs")
    return GatewayRequestError(
        code,
        message,
        details=error.get("details"),
        retryable=error.get("retryable") is True,
        retry_after_ms=retry_after if isinstance(retry_after, int) and retry_after >= 0 else None,
        method=method,
        auth=connect and _is_auth_rejection(error),
    )


def _open_socket(ex: _Exchange) -> socket.socket:
    """The TCP connection; a refusal (or no route / unknown host) means nothing listens."""
    target = ex.target
    try:
        return socket.create_connection((target.host, target.port), timeout=ex.remaining())
    except socket.gaierror as exc:
        raise ex.unreachable(
            "ENOTFOUND", f"getaddrinfo ENOTFOUND {target.host}: {exc.strerror or exc}"
        ) from None
    except TimeoutError:
        raise ex.timeout() from None
    except OSError as exc:
        name = _errno_name(exc.errno)
        reason = f"connect {name or type(exc).__name__} {target.host}:{target.port}"
        if isinstance(exc, ConnectionRefusedError) or exc.errno in _UNREACHABLE_ERRNOS:
            raise ex.unreachable(name, reason) from None
        raise ex.failure("closed", f"{reason}: {exc.strerror or exc}") from None


def _start_tls(ex: _Exchange, sock: socket.socket) -> socket.socket:
    """The whole TLS handshake, then the pin check, before anything else is sent or read."""
    target = ex.target
    try:
        sock.settimeout(ex.remaining())
        tls = _ssl_context(target).wrap_socket(sock, server_hostname=target.host)
    except ssl.SSLCertVerificationError as exc:
        raise ex.failure("tls", exc.verify_message or str(exc)) from None
    except ssl.SSLError as exc:
        raise ex.failure("tls", exc.reason or str(exc)) from None
    except TimeoutError:
        raise ex.timeout() from None
    except OSError as exc:
        raise ex.closed(1006, str(exc) or type(exc).__name__) from None
    fingerprint = target.tls.fingerprint if target.tls is not None else None
    if fingerprint:
        der = tls.getpeercert(binary_form=True)
        seen = hashlib.sha256(der).hexdigest() if der else ""
        if seen != fingerprint:
            tls.close()
            reason = "gateway tls fingerprint mismatch" if seen else "gateway tls fingerprint unavailable"
            raise ex.failure("tls", f"{reason} (expected {fingerprint}, got {seen or 'none'})")
    return tls


def _open_websocket(ex: _Exchange, sock: socket.socket) -> Any:
    """(TLS and) the WebSocket upgrade on our TCP socket, every read and write in this thread
    (`wsconn`: websockets' sync client would read in a second thread; see its docstring)."""
    from websockets.exceptions import WebSocketException

    from openclaw_cli.gateway.wsconn import ClientWebSocket

    target = ex.target
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
    if target.secure:
        sock = _start_tls(ex, sock)
    ws = ClientWebSocket(sock, target.url, user_agent=f"openclaw-cli/{__version__}", max_size=MAX_FRAME_BYTES)
    try:
        ws.handshake(ex.deadline)
    except (OSError, WebSocketException) as exc:
        sock.close()
        raise _upgrade_error(ex, exc) from None
    except BaseException:
        sock.close()
        raise
    return ws


def _upgrade_error(ex: _Exchange, exc: OSError | Exception) -> GatewayTransportError:
    from websockets.exceptions import InvalidHandshake, InvalidStatus

    if isinstance(exc, ssl.SSLError):
        return ex.failure("tls", exc.reason or str(exc))
    if isinstance(exc, TimeoutError):
        return ex.timeout()
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        return ex.failure(
            "protocol", f"the listener is not a Gateway (HTTP {status} to the WebSocket upgrade)"
        )
    if isinstance(exc, InvalidHandshake):
        return ex.failure("protocol", f"WebSocket handshake failed: {exc}")
    if isinstance(exc, OSError):
        return ex.closed(1006, str(exc) or type(exc).__name__)
    return ex.failure("protocol", str(exc))


def _receive(ex: _Exchange, ws: Any) -> dict[str, Any]:
    from openclaw_cli.gateway.wsconn import Closed

    try:
        data = ws.recv(ex.deadline)
    except TimeoutError:
        raise ex.timeout() from None
    except Closed as exc:
        raise ex.closed(exc.code, exc.reason) from None
    except OSError:
        raise ex.closed(1006, "") from None
    try:
        frame = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ex.failure("protocol", "the Gateway sent a frame that is not JSON") from None
    if not isinstance(frame, dict):
        raise ex.failure("protocol", "the Gateway sent a frame that is not a JSON object")
    return frame


def _await_response(ex: _Exchange, ws: Any, request_id: str) -> dict[str, Any]:
    """The `res` frame for `request_id`; events and responses to other ids are skipped."""
    while True:
        frame = _receive(ex, ws)
        if frame.get("type") == "res" and frame.get("id") == request_id:
            return frame


def _send(ex: _Exchange, ws: Any, frame: dict[str, Any]) -> None:
    from openclaw_cli.gateway.wsconn import Closed

    try:
        ws.send_text(orjson.dumps(frame), ex.deadline)
    except Closed as exc:
        raise ex.closed(exc.code, exc.reason) from None
    except TimeoutError:  # the one deadline covers sending too
        raise ex.timeout() from None
    except OSError as exc:
        raise ex.closed(1006, str(exc) or type(exc).__name__) from None


def call(
    target: GatewayTarget,
    method: str,
    params: Any = OMIT,
    *,
    scopes: list[str] | None = None,
    timeout_ms: int | None = None,
) -> CallResult:
    """Send one request to the Gateway and return its payload (see the module docstring)."""
    from openclaw_cli.ops.scopes import least_privilege_scopes

    if scopes is None:
        scopes = least_privilege_scopes(method, None if params is OMIT else params)
    ex = _Exchange(target, DEFAULT_TIMEOUT_MS if timeout_ms is None else int(timeout_ms))
    started = time.monotonic()
    ws, hello_ok = _connect(ex, target, scopes)
    try:
        return _exchange(ex, ws, hello_ok, method, params, scopes, started)
    finally:
        ws.close(CLOSE_TIMEOUT_S)  # a close frame without a status code (1005), as the real CLI sends


def hello(
    target: GatewayTarget, *, scopes: list[str] | None = None, timeout_ms: int | None = None
) -> dict[str, Any]:
    """Connect and authenticate only, and return the Gateway's `hello-ok` (its `server.version`,
    …): no request is sent."""
    ex = _Exchange(target, DEFAULT_TIMEOUT_MS if timeout_ms is None else int(timeout_ms))
    ws, hello_ok = _connect(ex, target, list(scopes or ["operator.read"]))
    ws.close(CLOSE_TIMEOUT_S)
    return hello_ok


def _connect(ex: _Exchange, target: GatewayTarget, scopes: list[str]) -> tuple[Any, dict[str, Any]]:
    """An open, authenticated WebSocket and its `hello-ok`. A Gateway still starting answers the
    connect with a retryable UNAVAILABLE ("gateway starting; retry shortly", retryAfterMs 250-500):
    OpenClaw's own clients wait that long and connect again, and so do we, within the one deadline.
    Nothing has been requested yet, so a retry can never repeat a write. Its own words beat a bare
    timeout: when the deadline runs out during a retry, the last refusal is what we report."""
    refusal: GatewayRequestError | None = None
    while True:
        try:
            return _connect_once(ex, target, scopes)
        except GatewayRequestError as exc:
            wait_s = (exc.retry_after_ms if exc.retry_after_ms is not None else _STARTING_RETRY_MS) / 1000
            if not exc.retryable or exc.exit_code == ExitCode.GATEWAY_AUTH:
                raise
            if ex.deadline - time.monotonic() <= wait_s:
                raise
            refusal = exc
            time.sleep(wait_s)
        except GatewayTransportError as exc:
            if refusal is not None and exc.kind == "timeout":
                raise refusal from None
            raise


def _connect_once(ex: _Exchange, target: GatewayTarget, scopes: list[str]) -> tuple[Any, dict[str, Any]]:
    sock = _open_socket(ex)
    try:
        ws = _open_websocket(ex, sock)
    except BaseException:
        sock.close()
        raise
    try:
        return ws, _handshake(ex, ws, target, scopes)
    except BaseException:
        ws.close(CLOSE_TIMEOUT_S)
        raise


def _handshake(ex: _Exchange, ws: Any, target: GatewayTarget, scopes: list[str]) -> dict[str, Any]:
    while True:  # the server speaks first
        frame = _receive(ex, ws)
        if frame.get("type") == "event" and frame.get("event") == "connect.challenge":
            break
    connect_id = ex.next_id()
    _send(
        ex,
        ws,
        {
            "type": "req",
            "id": connect_id,
            "method": "connect",
            "params": _connect_params(target, list(scopes)),
        },
    )
    reply = _await_response(ex, ws, connect_id)
    if reply.get("ok") is not True:
        raise _request_error(reply.get("error"), "connect", connect=True)
    hello = reply.get("payload")
    if not isinstance(hello, dict) or hello.get("type") != "hello-ok":
        raise ex.failure("protocol", "the connect reply is not hello-ok")
    if hello.get("protocol") != PROTOCOL_VERSION:
        raise ex.failure(
            "protocol", f"the Gateway speaks protocol {hello.get('protocol')!r}, we speak {PROTOCOL_VERSION}"
        )
    return hello


def _exchange(
    ex: _Exchange,
    ws: Any,
    hello: dict[str, Any],
    method: str,
    params: Any,
    scopes: list[str],
    started: float,
) -> CallResult:
    latency = int((time.monotonic() - started) * 1000)
    request_id = ex.next_id()
    request: dict[str, Any] = {"type": "req", "id": request_id, "method": method}
    if params is not OMIT:
        request["params"] = params
    _send(ex, ws, request)
    ex.dispatched = True
    response = _await_response(ex, ws, request_id)
    if response.get("ok") is not True:
        raise _request_error(response.get("error"), method, connect=False)
    return CallResult(
        payload=response.get("payload"), hello=hello, connect_latency_ms=latency, scopes=list(scopes)
    )
