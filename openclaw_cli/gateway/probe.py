"""`status`'s Gateway block from a real, authenticated `health` call (spec D17):
`{mode, url, urlSource, misconfigured, reachable, connectLatencyMs, error, authWarning}` in
OpenClaw's key order. `reachable` means a Gateway answered (as OpenClaw's probe: a Gateway that
rejects our token is reachable, and `error` carries its message); `error` is null only when the
`health` call succeeded. Nothing listening costs one refused TCP connect (no websockets import)."""

from __future__ import annotations

import time
from typing import Any

from openclaw_cli.errors import GatewayRequestError, GatewayTransportError, OpenClawError

STATUS_PROBE_TIMEOUT_MS = 3000
NO_CREDENTIALS_WARNING = (
    "no Gateway credentials configured (gateway.auth.token/password or "
    "OPENCLAW_GATEWAY_TOKEN/OPENCLAW_GATEWAY_PASSWORD); the probe cannot authenticate"
)


def _block(target: Any, **fields: Any) -> dict[str, Any]:
    block: dict[str, Any] = {
        "mode": getattr(target, "mode", "local"),
        "url": getattr(target, "url", None),
        "urlSource": getattr(target, "url_source", None),
        "misconfigured": getattr(target, "remote_fallback_note", None) is not None,
        "reachable": False,
        "connectLatencyMs": None,
        "error": None,
        "authWarning": None,
    }
    block.update(fields)
    return block


def _resolvable(host: str) -> str | bytes:
    """`host` as `getaddrinfo` gets it: a str host is encoded by the "idna" codec, whose import
    (`encodings.idna`, `stringprep`, `unicodedata`) is ~1 ms of a cleanup that finds nothing
    listening; an ASCII name is given as the very bytes that codec makes of it (its ASCII path:
    the name itself, every label but the last 1-63 bytes, the last under 64), anything else as is
    (the codec encodes it, or refuses it as before)."""
    if not host.isascii():
        return host
    raw = host.encode("ascii")
    *labels, last = raw.split(b".")
    if len(last) >= 64 or not all(0 < len(label) < 64 for label in labels):
        return host
    return raw


def _connect(host: str | bytes, port: int, timeout: float) -> None:
    """`socket.create_connection((host, port), timeout)`, closed at once, through the C module
    `_socket`: `socket.py` builds its address-family and socket-kind enums when imported (~14 M
    instructions of a cleanup that finds nothing listening). The same steps: every address
    `getaddrinfo` gives, in order, until one connects; else the last error (a `getaddrinfo` error
    as raised)."""
    import _socket

    last: OSError | None = None
    for family, kind, proto, _, address in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        sock = None
        try:
            sock = _socket.socket(family, kind, proto)
            sock.settimeout(timeout)
            sock.connect(address)
            sock.close()
            return
        except OSError as exc:
            last = exc
            if sock is not None:
                sock.close()
    if last is not None:
        raise last
    raise OSError("getaddrinfo returns an empty list")


def nothing_listens(target: Any, timeout_ms: int) -> str | None:
    """A short TCP connect: the reason ("connect ECONNREFUSED 127.0.0.1:1") when nothing listens
    (refused, unreachable, unknown host), else None (something accepted, or it timed out)."""
    import _socket
    import errno

    try:
        _connect(_resolvable(target.host), target.port, timeout_ms / 1000)
        return None
    except _socket.gaierror:
        return f"getaddrinfo ENOTFOUND {target.host}"
    except TimeoutError:
        return None
    except OSError as exc:
        unreachable = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL}
        if isinstance(exc, ConnectionRefusedError) or exc.errno in unreachable:
            name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
            return f"connect {name} {target.host}:{target.port}"
        return None


def probe_report(
    paths: Any,
    config: Any,
    *,
    timeout_ms: int = STATUS_PROBE_TIMEOUT_MS,
    url: str | None = None,
    token: str | None = None,
    password: str | None = None,
) -> tuple[dict[str, Any], OpenClawError | None]:
    """The status block (plus `server` and `auth` from hello-ok when connected) and the typed
    error that kept it from an authenticated `health` (None on success); never raises for
    Gateway trouble."""
    from openclaw_cli.gateway.discovery import discover

    try:
        target = discover(paths=paths, config=config, url=url, token=token, password=password)
    except OpenClawError as exc:
        return _block(None, error=exc.message.split("\n", 1)[0]), exc
    warning = None if target.has_credentials or target.auth_mode == "none" else NO_CREDENTIALS_WARNING
    refused = nothing_listens(target, min(timeout_ms, 1000))
    if refused is not None:
        code = refused.split()[1]
        error = GatewayTransportError(
            "closed",
            f"Gateway not reachable at {target.url} ({code}).\n{target.details_message()}",
            gateway=target.gateway_block(),
            reason=refused,
            unreachable=True,
        )
        return _block(target, error=refused, authWarning=warning), error
    from openclaw_cli.gateway.client import call

    started = time.monotonic()
    try:
        result = call(target, "health", timeout_ms=timeout_ms)
    except GatewayRequestError as exc:
        latency = int((time.monotonic() - started) * 1000)
        detail = exc.details.get("code") if isinstance(exc.details, dict) else None
        text = f"{exc.message} ({detail})" if isinstance(detail, str) else exc.message
        return _block(target, reachable=True, connectLatencyMs=latency, error=text, authWarning=warning), exc
    except OpenClawError as exc:
        return _block(target, error=exc.message.split("\n", 1)[0], authWarning=warning), exc
    health = result.payload if isinstance(result.payload, dict) else {}
    hello_server: dict[str, Any] = (
        result.hello["server"] if isinstance(result.hello.get("server"), dict) else {}
    )
    hello_auth: dict[str, Any] = result.hello["auth"] if isinstance(result.hello.get("auth"), dict) else {}
    block = _block(target, reachable=True, connectLatencyMs=result.connect_latency_ms, authWarning=warning)
    block["server"] = {k: hello_server.get(k) for k in ("version", "connId") if k in hello_server}
    block["auth"] = {k: hello_auth.get(k) for k in ("method", "role", "scopes") if k in hello_auth}
    if health.get("ok", True) is False:
        block["error"] = "the Gateway reports itself unhealthy (health.ok=false)"
        return block, OpenClawError(block["error"], type="gateway_unhealthy")
    return block, None


def probe_gateway(paths: Any, config: Any, *, timeout_ms: int = STATUS_PROBE_TIMEOUT_MS) -> dict[str, Any]:
    """`status --json`'s `gateway` block (OpenClaw's keys only)."""
    block, _ = probe_report(paths, config, timeout_ms=timeout_ms)
    block.pop("server", None)
    block.pop("auth", None)
    return block


def status_probe(config: Any, paths: Any) -> dict[str, Any]:
    """`status`'s Gateway block for this config (`ops.status.GatewayProbe`, supplied by the front end)."""
    return probe_gateway(paths, config)
