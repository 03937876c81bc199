"""Is a Gateway answering on the configured port? (status; later: delegation)."""

from __future__ import annotations

import socket
import time
from typing import Any


def probe_gateway(host: str, port: int, *, timeout_s: float = 0.5) -> dict[str, Any]:
    """TCP connect, then (only if something listens) a WebSocket handshake that must produce
    OpenClaw's `connect.challenge` event. Returns status's `gateway` fields."""
    url = f"ws://{host}:{port}"
    result: dict[str, Any] = {
        "mode": "local",
        "url": url,
        "urlSource": "local loopback",
        "reachable": False,
        "connectLatencyMs": None,
        "error": None,
    }
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "ECONNREFUSED" if isinstance(exc, ConnectionRefusedError) else type(exc).__name__
        result["error"] = f"connect {reason} {host}:{port}"
        return result
    try:
        from websockets.sync.client import connect

        with connect(url, open_timeout=timeout_s, close_timeout=0.2, proxy=None) as ws:
            import orjson

            frame = orjson.loads(ws.recv(timeout=timeout_s))
            if not (isinstance(frame, dict) and frame.get("event") == "connect.challenge"):
                result["error"] = "listener did not speak the Gateway protocol (no connect.challenge)"
                return result
    except Exception as exc:  # any handshake failure means "not a Gateway we can talk to"
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    result["reachable"] = True
    result["connectLatencyMs"] = int((time.monotonic() - start) * 1000)
    return result


def status_probe(config: Any, paths: Any) -> dict[str, Any]:
    """`status`'s Gateway block for this config (`ops.status.GatewayProbe`)."""
    from openclaw_cli.config import gateway_settings

    return probe_gateway("127.0.0.1", gateway_settings(config).port)
