"""`openclaw dashboard`: the URL of the web dashboard the Gateway serves at `/` (issue 28), printed
and opened in a browser, with OpenClaw's JSON (`{ok, url, httpUrl, wsUrl, port, tokenIncluded}`;
`{ok: false, reason: "Gateway is not running."}` and exit 1 when none answers).

The token travels only in the URL's fragment (`#token=…`), which a browser never sends to a
server; the page reads it and removes it from the address bar. `--local` serves the dashboard
from a read-only server of its own instead (loopback, a fresh random token, every write refused)
until Ctrl-C, for a state directory no Gateway runs for.
"""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.common import command_exit, echo_json, run

NOT_RUNNING = "Gateway is not running."


def dashboard_urls(host: str, port: int, token: str | None, *, secure: bool = False) -> dict[str, Any]:
    """OpenClaw's document for a Gateway at host:port (a wildcard bind is reached on loopback)."""
    from urllib.parse import quote

    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    http_url = f"{'https' if secure else 'http'}://{shown}:{port}/"
    return {
        "ok": True,
        "url": f"{http_url}#token={quote(token, safe='')}" if token else http_url,
        "httpUrl": http_url,
        "wsUrl": f"{'wss' if secure else 'ws'}://{shown}:{port}",
        "port": port,
        "tokenIncluded": bool(token),
    }


def find_gateway(cx: Any) -> dict[str, Any]:
    """Where this state directory's Gateway answers: the running Gateway's marker first (it may
    listen on a `--port` the config does not name), else the configured port, probed."""
    from urllib.parse import urlsplit

    from openclaw_cli.cli.gateway_server import _probe
    from openclaw_cli.gateway.discovery import discover
    from openclaw_cli.gateway.ownership import gateway_state

    target = discover(paths=cx.paths, config=cx.config)
    token = target.token
    state = gateway_state(cx.paths.state_dir)
    url = state.get("url") if state.get("running") else None
    if url:
        parts = urlsplit(url)
        if parts.hostname and parts.port:
            return dashboard_urls(parts.hostname, parts.port, token, secure=parts.scheme == "wss")
    probe = _probe(target.url)
    if probe.get("reachable") or (target.secure and probe.get("reachable") is None):
        return dashboard_urls(target.host, target.port, token, secure=target.secure)
    return {"ok": False, "reason": NOT_RUNNING}


def _open(url: str) -> bool:
    import os
    import sys
    import webbrowser

    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False  # no desktop: Python would start a text browser in this terminal
    try:
        return webbrowser.open(url)
    except Exception:  # no browser here: the URL is printed either way
        return False


def dashboard(
    ctx: typer.Context,
    no_open: bool = typer.Option(False, "--no-open", help="Print the URL but do not launch a browser."),
    json_mode: bool = typer.Option(
        False, "--json", help="Print the connection details as one JSON document."
    ),
    local: bool = typer.Option(
        False,
        "--local",
        help="Serve the dashboard from a read-only server of its own (loopback, writes refused) until Ctrl-C.",
    ),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, metavar="<port>", help="With --local: the port (0: any free port)."
    ),
) -> None:
    """Open the web dashboard (sessions, search, cleanup preview, storage) with your current token."""

    def body() -> None:
        from openclaw_cli.cli.common import load_context

        cx = load_context(ctx)
        if local:
            serve_local(cx, port=port, no_open=no_open, json_mode=json_mode)
            return
        document = find_gateway(cx)
        if not document["ok"]:
            if json_mode:
                echo_json(document)
            else:
                from openclaw_cli.cli.common import say_error

                say_error(
                    f"{NOT_RUNNING} Start it with `openclaw gateway run`, or use `openclaw dashboard --local`."
                )
            raise command_exit(1)
        _announce(document, no_open=no_open, json_mode=json_mode)

    run(body, json_mode=json_mode)


def _announce(document: dict[str, Any], *, no_open: bool, json_mode: bool) -> None:
    from openclaw_cli.output import err, out

    if json_mode:
        echo_json(document)
    else:
        out(f"Dashboard URL: {document['httpUrl']}")
        if document["tokenIncluded"] and no_open:
            out(f"With the token (keep it private): {document['url']}")
        elif not document["tokenIncluded"]:
            err(
                "No token configured: type the Gateway's token or password into the page "
                "(or append #token=<token> to the URL)."
            )
    if not no_open and not _open(document["url"]):
        err("Could not launch a browser here: open the URL above yourself.")


def serve_local(cx: Any, *, port: int, no_open: bool, json_mode: bool) -> None:
    """The read-only local server: this state dir's dashboard on loopback until SIGINT/SIGTERM."""
    import asyncio
    import secrets
    import signal
    import sys

    from openclaw_cli.gateway.auth import AuthPolicy
    from openclaw_cli.gateway.server import GatewayServer, ServerOptions
    from openclaw_cli.output import err

    token = secrets.token_urlsafe(24)
    options = ServerOptions(
        host="127.0.0.1", port=port, auth=AuthPolicy("token", token), read_only=True, log=err
    )

    async def main() -> None:
        server = GatewayServer(cx.paths, options)
        host, bound = await server.start()
        document = {**dashboard_urls(host, bound, token), "readOnly": True}
        _announce(document, no_open=no_open, json_mode=json_mode)
        sys.stdout.flush()
        err(
            f"[dashboard] read-only server for {cx.paths.state_dir} on http://{host}:{bound}/ (Ctrl-C stops it)"
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)
