"""`openclaw gateway run` and `openclaw gateway status` (registered on `cli.gateway.gateway_app`).

`run` serves this state directory until SIGTERM/SIGINT (spec D9; `gateway.server`). Loopback by
default; binding beyond loopback needs token or password auth. The effective settings come from
the flags, then `gateway.*` in the config (and OPENCLAW_GATEWAY_PORT/TOKEN/PASSWORD), as OpenClaw
resolves them. Start-up refuses while another Gateway or an SQLite maintenance command owns the
state directory (`gateway.ownership`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import command_exit, echo_json, run, state_paths

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

    from openclaw_cli.config.loader import LoadedConfig
    from openclaw_cli.gateway.logfile import LogFile
    from openclaw_cli.gateway.server import ServerOptions
    from openclaw_cli.paths import StatePaths

BINDS = ("loopback", "lan", "custom")
LOOPBACK_HOST = "127.0.0.1"
LAN_HOST = "0.0.0.0"
SWITCH_INTERVAL_S = 0.0005  # the GIL's hand-back interval in `gateway run` (Python's default: 5 ms)


def _read_secret_file(flag: str, path: str) -> str:
    """The first line of a secret file (`--token-file`, `--password-file`), trimmed; read with a
    size cap so a wrong path (a device, a huge log) fails fast."""
    from pathlib import Path

    from openclaw_cli.errors import UsageError

    try:
        with Path(path).expanduser().open("rb") as fh:
            data = fh.read(65_536)
        text = data.decode("utf-8")
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{flag} {path} is not UTF-8 text") from None
    secret = text.splitlines()[0].strip() if text.strip() else ""
    if not secret:
        raise UsageError(f"{flag} {path} is empty")
    return secret


# OpenClaw refuses these at start-up whatever the bind (known-weak-gateway-secrets): blank input,
# JavaScript's coercions of a missing value, and the placeholders its examples shipped.
_NON_SECRETS = ("", "undefined", "null")
_PLACEHOLDERS = {
    "token": ("change-me-to-a-long-random-token", "change-me-now"),
    "password": ("change-me-to-a-strong-password",),
}
# Beyond loopback a secret shorter than this is refused: the length below which OpenClaw's own
# security audit reports a gateway token or password as short (`gateway.token_too_short`).
MIN_REMOTE_SECRET_CHARS = 24


def check_secret(mode: str, secret: str | None, *, loopback: bool, bind: str) -> None:
    """Refuse a blank or placeholder secret anywhere, and a short one beyond loopback."""
    from openclaw_cli.errors import ConfigError, UsageError

    if mode not in ("token", "password") or secret is None:
        return
    value = secret.strip()
    if value in _NON_SECRETS or value in _PLACEHOLDERS[mode]:
        raise ConfigError(
            f"Invalid gateway auth {mode}: it is blank, a published example placeholder or the literal "
            f"string undefined/null. Generate a real secret (for example `openssl rand -hex 32`) and "
            f"pass it with --{mode}-file, OPENCLAW_GATEWAY_{mode.upper()} or gateway.auth.{mode}."
        )
    if not loopback and len(value) < MIN_REMOTE_SECRET_CHARS:
        raise UsageError(
            f"Refusing to bind gateway to {bind} with a {len(value)}-character {mode}: beyond loopback "
            f"the {mode} must be at least {MIN_REMOTE_SECRET_CHARS} characters. Generate one with "
            f"`openssl rand -hex 32` and pass it with --{mode}-file or OPENCLAW_GATEWAY_{mode.upper()}."
        )


def resolve_run_settings(
    config: LoadedConfig,
    *,
    port: int | None,
    bind: str | None,
    auth: str | None,
    token: str | None,
    password: str | None,
    password_file: str | None,
    allow_unconfigured: bool,
    token_file: str | None = None,
) -> dict[str, Any]:
    """Flags over `gateway.*` over the defaults; every refusal OpenClaw makes at start-up."""
    from openclaw_cli.config import gateway_settings
    from openclaw_cli.errors import ConfigError, UsageError
    from openclaw_cli.gateway.auth import MODES, AuthPolicy

    settings = gateway_settings(config)
    raw_mode = (
        (config.raw.get("gateway") or {}).get("mode")
        if isinstance(config.raw, dict) and isinstance(config.raw.get("gateway"), dict)
        else None
    )
    if not allow_unconfigured and raw_mode != "local":
        if not config.exists:
            raise ConfigError("Missing config. Set gateway.mode=local (or pass --allow-unconfigured).")
        if raw_mode is None:
            raise ConfigError(
                "Gateway start blocked: existing config is missing gateway.mode. Set gateway.mode=local "
                "manually, or pass --allow-unconfigured."
            )
        raise ConfigError(
            f"Gateway start blocked: set gateway.mode=local (current: {raw_mode}) or pass "
            "--allow-unconfigured."
        )
    bind = (bind or settings.bind or "loopback").strip().lower()
    if bind not in BINDS:
        raise UsageError(f"--bind must be one of {', '.join(BINDS)}, got {bind!r}")
    if bind == "custom":
        host = settings.custom_bind_host
        if not host:
            raise UsageError(
                "--bind custom needs gateway.customBindHost in the config (an IP address to listen on)."
            )
    else:
        host = LOOPBACK_HOST if bind == "loopback" else LAN_HOST
    if password_file is not None:
        if password is not None:
            raise UsageError("--password and --password-file cannot be used together")
        password = _read_secret_file("--password-file", password_file)
    if token_file is not None:
        if token is not None:
            raise UsageError("--token and --token-file cannot be used together")
        token = _read_secret_file("--token-file", token_file)
    token = token if token is not None else settings.token
    password = password if password is not None else settings.password
    mode = (auth or settings.auth_mode or ("password" if password and not token else "token")).strip().lower()
    if mode not in MODES:
        raise UsageError(f"--auth must be one of {', '.join(MODES)}, got {mode!r}")
    loopback = host in (LOOPBACK_HOST, "::1", "localhost")
    if mode == "none" and not loopback:
        raise UsageError(
            f"Refusing to bind gateway to {bind} without auth. Set gateway.auth.token/password (or "
            "OPENCLAW_GATEWAY_TOKEN/OPENCLAW_GATEWAY_PASSWORD) or pass --token/--password."
        )
    if mode == "token" and not token:
        raise ConfigError(
            "Gateway auth is set to token, but no token is configured. Set gateway.auth.token (or "
            "OPENCLAW_GATEWAY_TOKEN), or pass --token; on loopback, --auth none runs without auth."
        )
    if mode == "password" and not password:
        raise ConfigError(
            "Gateway auth is set to password, but no password is configured. Set gateway.auth.password "
            "(or OPENCLAW_GATEWAY_PASSWORD), or pass --password."
        )
    secret = token if mode == "token" else password if mode == "password" else None
    check_secret(mode, secret, loopback=loopback, bind=bind)
    ssl_context = None
    if settings.tls_enabled:
        ssl_context = _tls_context(settings.tls_cert_path, settings.tls_key_path)
    return {
        "host": host,
        "port": settings.port if port is None else port,
        "bind": bind,
        "auth": AuthPolicy(mode, secret),
        "ssl": ssl_context,
    }


def _tls_context(cert: str | None, key: str | None) -> ssl.SSLContext:
    import ssl

    from openclaw_cli.errors import ConfigError

    if not cert or not key:
        raise ConfigError("gateway.tls.enabled needs gateway.tls.certPath and gateway.tls.keyPath")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"gateway.tls: cannot load {cert} / {key}: {exc}") from None
    return context


def gateway_run(
    ctx: typer.Context,
    port: int = typer.Option(
        None, "--port", min=0, max=65535, metavar="<port>", help="Port to listen on (0: any free port)."
    ),
    bind: str = typer.Option(
        None, "--bind", metavar="<loopback|lan|custom>", help="Where to listen (default loopback)."
    ),
    auth: str = typer.Option(
        None, "--auth", metavar="<token|password|none>", help="How clients authenticate."
    ),
    token: str = typer.Option(
        None,
        "--token",
        metavar="<token>",
        help="The shared token (visible to local users until the process renames itself: prefer --token-file or OPENCLAW_GATEWAY_TOKEN).",
    ),
    token_file: str = typer.Option(
        None, "--token-file", metavar="<path>", help="Read the token from this file (its first line)."
    ),
    password: str = typer.Option(
        None,
        "--password",
        metavar="<password>",
        help="The shared password (prefer --password-file or OPENCLAW_GATEWAY_PASSWORD).",
    ),
    password_file: str = typer.Option(
        None, "--password-file", metavar="<path>", help="Read the password from this file (its first line)."
    ),
    allow_unconfigured: bool = typer.Option(
        False, "--allow-unconfigured", help="Start without gateway.mode=local."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="Log every connection and request on stderr."),
    control_ui: str = typer.Option(
        None,
        "--control-ui",
        metavar="<dir>",
        help="Serve this build of OpenClaw's Control UI (the dist/control-ui of an installed openclaw package) at / instead of our dashboard.",
    ),
) -> None:
    """Serve this state directory to OpenClaw clients until SIGTERM/SIGINT (one writer per store)."""

    def body() -> None:
        from openclaw_cli.cli.common import warn_config
        from openclaw_cli.ops.context import Context

        paths = state_paths(ctx)
        cx = Context.load(paths)
        warn_config(cx.config.warnings)
        resolved = resolve_run_settings(
            cx.config,
            port=port,
            bind=bind,
            auth=auth,
            token=token,
            password=password,
            password_file=password_file,
            allow_unconfigured=allow_unconfigured,
            token_file=token_file,
        )
        if token is not None or password is not None:
            from openclaw_cli.cli.common import say_warning

            flag = "--token" if token is not None else "--password"
            say_warning(
                f"{flag} on the command line can be read by other local users until the Gateway renames its "
                f"process; prefer {flag}-file or OPENCLAW_GATEWAY_{flag[2:].upper()}"
            )
        if control_ui is not None:
            from pathlib import Path

            from openclaw_cli.errors import UsageError

            ui = Path(control_ui).expanduser()
            if not (ui / "index.html").is_file():
                raise UsageError(
                    f"--control-ui {ui}: no index.html there. Pass the dist/control-ui directory of an "
                    "installed openclaw package (its folder under `npm root -g`)."
                )
            resolved["control_ui"] = ui.absolute()
        serve_forever(cx.paths, resolved, verbose=verbose)

    run(body)


def _log_file(paths: StatePaths) -> LogFile:
    """The file `logs.tail` serves (`logging.file`, else `<state dir>/logs/gateway.log`)."""
    from openclaw_cli.gateway.logfile import LogFile
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.gateway_reads import log_file

    return LogFile(log_file(Context.load(paths, strict=False)))


def run_options(resolved: dict[str, Any], *, verbose: bool, log: Callable[[str], None]) -> ServerOptions:
    """`gateway run`'s server options."""
    from openclaw_cli.gateway.server import ServerOptions

    return ServerOptions(
        host=resolved["host"],
        port=resolved["port"],
        auth=resolved["auth"],
        ssl=resolved["ssl"],
        verbose=verbose,
        log=log,
        control_ui=resolved.get("control_ui"),
        # this process is the Gateway: its reader child from the start, its full garbage
        # collections between requests (issue 30)
        reader_at_start=True,
        scheduled_gc=True,
    )


def serve_forever(paths: StatePaths, resolved: dict[str, Any], *, verbose: bool) -> None:
    """Own the state dir, listen, serve until a signal, then shut down gracefully."""
    import asyncio
    import os
    import signal

    from openclaw_cli import __version__
    from openclaw_cli.clock import now_ms
    from openclaw_cli.gateway.ownership import take_ownership
    from openclaw_cli.gateway.server import GatewayServer
    from openclaw_cli.output import err

    hide_secrets_from_argv()
    ownership = take_ownership(paths.state_dir, paths.config_path)
    log_file = _log_file(paths)

    def log(text: str) -> None:
        err(text)
        log_file.write(text)

    try:
        options = run_options(resolved, verbose=verbose, log=log)

        async def main() -> None:
            # this process is the Gateway: a thread back from SQLite (a write between its
            # statements, the event loop) waits at most this long for the GIL while a read builds
            # its rows in Python, not the default 5 ms per hand-back (issue 30)
            sys.setswitchinterval(SWITCH_INTERVAL_S)
            server = GatewayServer(paths, options)
            host, bound = await server.start()
            scheme = "wss" if resolved["ssl"] is not None else "ws"
            url = f"{scheme}://{host}:{bound}"
            ownership.announce(bound, paths.config_path)
            ownership.write_marker(
                {
                    "url": url,
                    "host": host,
                    "port": bound,
                    "bind": resolved["bind"],
                    "authMode": resolved["auth"].mode,
                    "startedAt": now_ms(),
                    "stateDir": str(paths.state_dir),
                    "version": __version__,
                }
            )
            log(
                f"[gateway] listening on {url} (pid {os.getpid()}, state dir {paths.state_dir}, "
                f"auth {resolved['auth'].mode})"
            )
            log("[gateway] ready")
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
            log("[gateway] stopping: finishing in-flight writes")
            await server.stop()
            log("[shutdown] completed cleanly")

        asyncio.run(main())
    finally:
        ownership.release()


SECRET_FLAGS = ("--token", "--password")


def redacted_argv(argv: list[str]) -> list[str]:
    """argv with the value of every secret flag (`--token x`, `--token=x`) replaced by `***`."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
        elif arg in SECRET_FLAGS:
            out.append(arg)
            hide_next = True
        elif arg.startswith(tuple(f"{flag}=" for flag in SECRET_FLAGS)):
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
    return out


def hide_secrets_from_argv() -> None:
    """Rename the process (`ps`, /proc/<pid>/cmdline, OpenClaw's `gateway status`) to
    `openclaw-gateway <args>` with secrets masked, as OpenClaw renames its Gateway. setproctitle
    rewrites the argv memory the kernel reports; docs/decisions.md says why that library."""
    import sys

    try:
        from setproctitle import setproctitle
    except ImportError:  # pragma: no cover - a declared dependency
        from openclaw_cli.output import err

        err(
            "[gateway] setproctitle is not installed: the command line (and any --token in it) stays visible in ps"
        )
        return
    args = sys.argv[1:]
    if "run" in args:  # what follows `gateway run`: the options that say which Gateway this is
        args = args[args.index("run") + 1 :]
    setproctitle(" ".join(["openclaw-gateway", *redacted_argv(args)]))


def gateway_status(
    ctx: typer.Context,
    json_mode: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Is a Gateway running for this state directory: pid, url, reachable."""

    def body() -> None:
        from openclaw_cli.gateway.ownership import gateway_state

        paths = state_paths(ctx)
        result = gateway_state(paths.state_dir)
        if result["running"]:
            result["probe"] = _probe(result["url"])
        # nothing runs: exit 1, so `openclaw gateway status && …` and service checks can tell (issue 22 §7;
        # OpenClaw's own `gateway status` exits 0 either way, so it has no code to follow)
        code = 0 if result["running"] or result["ownedByOther"] else 1
        if json_mode:
            echo_json(result)
            if code:
                raise command_exit(code)
            return
        from openclaw_cli.output import out, sanitize_text

        if result["running"]:
            probe = result["probe"]
            reach = (
                f"reachable ({probe['connectLatencyMs']} ms)"
                if probe.get("reachable")
                else f"not reachable: {probe.get('error')}"
            )
            out(f"Gateway running: pid {result['pid']}, {sanitize_text(result['url'])}, {reach}")
        elif result["ownedByOther"]:
            out(
                "No openclaw-cli Gateway runs here, but another process (OpenClaw's Gateway or a maintenance "
                "command) owns this state directory."
            )
        else:
            out("No Gateway is running for this state directory.")
        if result["staleMarker"]:
            out(
                f"Stale Gateway marker (pid {result.get('stalePid')} is not running): "
                f"{sanitize_text(result.get('markerPath'))}; the next `openclaw gateway run` replaces it."
            )
        if code:
            raise command_exit(code)

    run(body, json_mode=json_mode)


def _probe(url: str, timeout_s: float = 2.0) -> dict[str, Any]:
    """Does the marker's URL answer with OpenClaw's `connect.challenge`? (No credentials needed:
    the challenge comes before any auth.) Latency is from TCP connect to the challenge."""
    import time
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "ws" or parts.hostname is None or parts.port is None:
        return {"reachable": None, "connectLatencyMs": None, "error": f"not probed ({parts.scheme})"}
    host = "127.0.0.1" if parts.hostname in ("0.0.0.0", "::") else parts.hostname
    start = time.monotonic()
    try:
        import orjson
        from websockets.sync.client import connect

        with connect(
            f"ws://{host}:{parts.port}", open_timeout=timeout_s, close_timeout=0.5, proxy=None
        ) as ws:
            frame = orjson.loads(ws.recv(timeout=timeout_s))
    except Exception as exc:  # refused, reset, timeout, not a WebSocket: all mean "not reachable"
        return {"reachable": False, "connectLatencyMs": None, "error": f"{type(exc).__name__}: {exc}"}
    if not (isinstance(frame, dict) and frame.get("event") == "connect.challenge"):
        return {"reachable": False, "connectLatencyMs": None, "error": "no connect.challenge"}
    return {"reachable": True, "connectLatencyMs": int((time.monotonic() - start) * 1000), "error": None}


def register(app: typer.Typer) -> None:
    """Adds this module's commands to the `gateway` sub-app."""
    app.command("run")(gateway_run)
    app.command("status")(gateway_status)
