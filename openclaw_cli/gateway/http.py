"""Plain HTTP beside the WebSocket upgrade (issue 28): the dashboard's static assets, served on
the Gateway's own port as OpenClaw serves its Control UI there, and the Origin rule a browser's
WebSocket must pass.

Only GET of a few fixed paths (the files of `gateway/dashboard/`, shipped as package data and
read once); no other HTTP API. Every answer carries a strict Content-Security-Policy (no inline
script or style, connections to this origin only), `nosniff`, no referrer and no framing. A
request that asks for the WebSocket upgrade goes on to the protocol untouched.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

# The page's own files (path -> (file, content type)); anything else is 404.
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
# OpenClaw's directives (default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors
# 'none'), narrowed: no inline script or style at all, no third-party origin, no form posts.
CSP = (
    "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; "
    "script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; form-action 'none'"
)
SECURITY_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)


@cache
def asset(name: str) -> bytes:
    return resources.files("openclaw_cli.gateway").joinpath("dashboard", name).read_bytes()


def total_asset_bytes() -> int:
    return sum(len(asset(name)) for name in {file for file, _ in ASSETS.values()})


def wants_upgrade(request: Request) -> bool:
    tokens = ",".join(request.headers.get_all("Connection")).lower()
    return "upgrade" in tokens and request.headers.get("Upgrade", "").lower() == "websocket"


def _response(status: int, reason: str, body: bytes, content_type: str) -> Response:
    headers = Headers()
    headers["Content-Type"] = content_type
    headers["Content-Length"] = str(len(body))
    headers["Cache-Control"] = "no-cache"
    headers["Connection"] = "close"
    for name, value in SECURITY_HEADERS:
        headers[name] = value
    return Response(status, reason, headers, body)


def static_response(request: Request) -> Response:
    """The answer to a plain (non-upgrade) GET."""
    path = urlsplit(request.path).path or "/"
    found = ASSETS.get(path)
    if found is None:
        return _response(404, "Not Found", b"Not Found\n", "text/plain; charset=utf-8")
    name, content_type = found
    return _response(200, "OK", asset(name), content_type)


def origin_allowed(origin: str | None, host: str | None, allowed: tuple[str, ...] = ()) -> bool:
    """A browser's WebSocket (it sends Origin) must come from the page this Gateway served: the
    same scheme-less host and port as the Host it asked for, or an origin the config allows
    (`gateway.controlUi.allowedOrigins`). Non-browser clients send no Origin and pass; a page on
    another site cannot drive the Gateway with the operator's browser (cross-site WebSocket)."""
    if origin is None:
        return True
    if origin in allowed or "*" in allowed:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or not host:
        return False
    default = 443 if parts.scheme == "https" else 80
    try:
        origin_port = parts.port or default
    except ValueError:
        return False
    wanted = urlsplit(f"//{host}")
    try:
        host_port = wanted.port or default
    except ValueError:
        return False
    return (parts.hostname or "").lower() == (wanted.hostname or "").lower() and origin_port == host_port


def allowed_origins(config: Any) -> tuple[str, ...]:
    raw = getattr(config, "raw", None)
    gateway = raw.get("gateway") if isinstance(raw, dict) else None
    ui = gateway.get("controlUi") if isinstance(gateway, dict) else None
    values = ui.get("allowedOrigins") if isinstance(ui, dict) else None
    if not isinstance(values, list):
        return ()
    return tuple(v.strip().rstrip("/") for v in values if isinstance(v, str) and v.strip())
