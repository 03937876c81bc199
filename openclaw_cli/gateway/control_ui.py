"""`gateway run --control-ui DIR`: the operator's own build of OpenClaw's Control UI (the
`dist/control-ui` of their installed `openclaw` package; never shipped with this project) served at
`/` on the Gateway's port, as OpenClaw's Gateway serves it, instead of our dashboard.

What OpenClaw's Gateway does with the build, and we do alike (recorded from 2026.9.6 with curl):
* `index.html` for `/` and for any path without a file (the UI's own routes), rewritten: the
  `<html>` element gets `data-openclaw-control-ui-base-path=""`, and `./x` references become `/x`
  (so a deep route loads the same assets);
* the build's files as they are, with a content type by suffix; `..` and links out of DIR are 404;
* `/control-ui-config.json`: the UI's runtime settings, 401 without the Gateway's shared secret as
  `Authorization: Bearer …` (ours: the settings a Gateway without agents, terminals or plugins has);
* every answer with OpenClaw's Control UI Content-Security-Policy (the build needs its inline styles
  and `ws:` connections) and its other security headers.
"""

from __future__ import annotations

import hmac
import json
import mimetypes
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from openclaw_cli.errors import UsageError

# OpenClaw 2026.9.6's header for its Control UI (recorded), unchanged: it is that build's policy.
CSP = (
    "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; frame-src 'self' http: https:; "
    "script-src 'self'; style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; img-src 'self' data: blob: https:; "
    "media-src 'self' data: blob:; font-src 'self' https://fonts.gstatic.com; worker-src 'self'; "
    "connect-src 'self' ws: wss: data: https://api.openai.com https://tweakcn.com"
)
HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", CSP),
)
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".webmanifest": "application/manifest+json",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".wasm": "application/wasm",
}
_RELATIVE_REF = re.compile(r'((?:src|href)=")\./')


class ControlUi:
    def __init__(self, root: Path, *, version: str, secret: str | None) -> None:
        root = Path(root).expanduser()
        index = root / "index.html"
        if not index.is_file():
            raise UsageError(
                f"--control-ui {root}: no index.html there. Pass the `dist/control-ui` directory of an "
                "installed openclaw package (npm root -g, then openclaw/dist/control-ui)."
            )
        self.root = Path(os.path.realpath(root))
        self.version = version
        self.secret = secret  # the shared token or password (None: auth none)
        html = index.read_text(encoding="utf-8")
        html = _RELATIVE_REF.sub(r"\1/", html)
        html = html.replace("<html ", '<html data-openclaw-control-ui-base-path="" ', 1)
        self.index = html.encode("utf-8")

    def response(self, request: Request) -> Response:
        path = unquote(urlsplit(request.path).path or "/")
        if path == "/control-ui-config.json":
            return self._config(request)
        found = self._file(path)
        if found is not None:
            suffix = found.suffix.lower()
            kind = _TYPES.get(suffix) or mimetypes.guess_type(found.name)[0] or "application/octet-stream"
            return _response(200, "OK", found.read_bytes(), kind)
        last = path.rsplit("/", 1)[-1]
        if "." in last:  # a missing asset, not a route of the UI
            return _response(404, "Not Found", b"Not Found\n", "text/plain; charset=utf-8")
        return _response(200, "OK", self.index, "text/html; charset=utf-8")

    def _file(self, path: str) -> Path | None:
        if path in ("/", "/index.html") or "\0" in path:
            return None
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            return None
        candidate = os.path.realpath(self.root.joinpath(*parts))
        if not candidate.startswith(str(self.root) + os.sep) or not os.path.isfile(candidate):
            return None
        return Path(candidate)

    def _config(self, request: Request) -> Response:
        if self.secret is not None:
            given = request.headers.get("Authorization", "")
            token = given[7:].strip() if given.lower().startswith("bearer ") else ""
            if not token or not hmac.compare_digest(token.encode(), self.secret.encode()):
                return _response(401, "Unauthorized", b"Unauthorized\n", "text/plain; charset=utf-8")
        return _response(200, "OK", json.dumps(self.settings()).encode(), "application/json; charset=utf-8")

    def settings(self) -> dict[str, Any]:
        """OpenClaw's runtime settings for its UI, as a Gateway without agents, terminals, CLI
        agents or plugins has them."""
        return {
            "basePath": "",
            "assistantName": "Assistant",
            "assistantAvatar": "A",
            "assistantAvatarSource": None,
            "assistantAvatarStatus": None,
            "assistantAvatarReason": None,
            "assistantAgentId": "main",
            "serverVersion": self.version,
            "serverBuildId": self.version,
            "embedSandbox": "scripts",
            "allowExternalEmbedUrls": False,
            "automaticallyFetchFavicons": False,
            "communityInvite": False,
            "terminalEnabled": False,
            "cliAgentsEnabled": False,
            "pluginAssetsRequireAuth": True,
            "pluginFrameGrants": [],
        }


def _response(status: int, reason: str, body: bytes, content_type: str) -> Response:
    headers = Headers()
    for name, value in HEADERS:
        headers[name] = value
    headers["Content-Type"] = content_type
    headers["Content-Length"] = str(len(body))
    headers["Cache-Control"] = "no-cache"
    headers["Connection"] = "close"
    return Response(status, reason, headers, body)
