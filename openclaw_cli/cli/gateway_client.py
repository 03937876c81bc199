"""`openclaw gateway call|probe|health`: the client commands (registered on
`cli.gateway.gateway_app`). Each opens one WebSocket to the discovered Gateway (see
`gateway.discovery`), authenticates with least-privilege scopes and prints the result.

- `call METHOD --params JSON`: the method's payload as one JSON document on stdout (with a
  `Gateway call: METHOD` line on stderr in text mode, as OpenClaw prints it).
- `health`: the `health` payload (`--json`) or a short summary.
- `probe`: `{ok, gateway:{mode, url, urlSource, misconfigured, reachable, connectLatencyMs, error,
  authWarning, server?, auth?}}`; exits 0 only when an authenticated `health` call succeeded.
Errors are OpenClaw's `gateway_transport_error` / `gateway_request_error` /
`gateway_credentials_required` documents with their exit codes (docs/exit-codes.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL

if TYPE_CHECKING:
    from openclaw_cli.gateway.discovery import GatewayTarget

JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
PARAMS = typer.Option("{}", "--params", metavar="<json>", help="The method's params as a JSON value.")
METHOD = typer.Argument(
    ..., metavar="METHOD", help="Gateway method, e.g. health, sessions.list, sessions.cleanup."
)
_METHOD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")


def _target(
    ctx: typer.Context | None, url: str | None, token: str | None, password: str | None
) -> GatewayTarget:
    from openclaw_cli.config import load_config
    from openclaw_cli.gateway.discovery import discover

    paths = state_paths(ctx)
    config = load_config(paths)
    return discover(paths=paths, config=config, url=url, token=token, password=password)


def _call(target: Any, method: str, params: Any, timeout_ms: int | None) -> Any:
    """One RPC; with no credentials, "nothing listens" is reported before "credentials required"."""
    from openclaw_cli.gateway.client import OMIT, call

    if not target.has_credentials:
        problem = target.credentials_error(method)
        if problem is not None:
            if not target.url_override:
                _raise_if_nothing_listens(target, timeout_ms)
            raise problem
    return call(target, method, params if params is not None else OMIT, timeout_ms=timeout_ms)


def _raise_if_nothing_listens(target: Any, timeout_ms: int | None) -> None:
    from openclaw_cli.errors import GatewayTransportError
    from openclaw_cli.gateway.probe import nothing_listens

    reason = nothing_listens(target, min(timeout_ms or 1000, 1000))
    if reason is None:
        return
    code = reason.split()[1] if reason.startswith(("connect ", "getaddrinfo ")) else None
    suffix = f" ({code})" if code else ""
    raise GatewayTransportError(
        "closed",
        "\n".join(
            [
                f"Gateway not reachable at {target.url}{suffix}.",
                "Start it with `openclaw gateway run` or check `openclaw gateway status`.",
                target.details_message(),
            ]
        ),
        gateway=target.gateway_block(),
        reason=reason,
        unreachable=True,
    )


def gateway_call(
    ctx: typer.Context,
    method: str = METHOD,
    params: str = PARAMS,
    json_mode: bool = JSON,
    timeout: str = GATEWAY_TIMEOUT,
    url: str = GATEWAY_URL,
    token: str = GATEWAY_TOKEN,
    password: str = GATEWAY_PASSWORD,
) -> None:
    """Call a Gateway method and print its result."""

    def body() -> None:
        import orjson

        from openclaw_cli.cli.delegation import gateway_options
        from openclaw_cli.errors import UsageError
        from openclaw_cli.output import err, sanitize_text

        name = (method or "").strip()
        if not _METHOD_NAME.fullmatch(name):
            raise UsageError(
                f"Invalid Gateway method name {method!r}; for example: openclaw gateway call health"
            )
        try:
            value = orjson.loads((params if params is not None else "{}").encode())
        except orjson.JSONDecodeError as exc:
            raise UsageError(
                f"--params must be valid JSON ({exc}); for example --params '{{\"limit\":3}}'"
            ) from None
        options = gateway_options(url, token, password, timeout)
        target = _target(ctx, options.url, options.token, options.password)
        result = _call(target, name, value, options.timeout_ms)
        if not json_mode:
            err(f"Gateway call: {sanitize_text(name)}")
        echo_json(result.payload)

    run(body, json_mode=json_mode)


def gateway_health(
    ctx: typer.Context,
    json_mode: bool = JSON,
    timeout: str = GATEWAY_TIMEOUT,
    url: str = GATEWAY_URL,
    token: str = GATEWAY_TOKEN,
    password: str = GATEWAY_PASSWORD,
) -> None:
    """Fetch the Gateway's health."""

    def body() -> None:
        from openclaw_cli.cli.delegation import gateway_options

        options = gateway_options(url, token, password, timeout)
        target = _target(ctx, options.url, options.token, options.password)
        result = _call(target, "health", None, options.timeout_ms)
        if json_mode:
            echo_json(result.payload)
            return
        _render_health(result.payload if isinstance(result.payload, dict) else {})

    run(body, json_mode=json_mode)


def _render_health(health: dict[str, Any]) -> None:
    from openclaw_cli.output import out, sanitize_text

    duration = health.get("durationMs")
    state = "OK" if health.get("ok", True) is not False else "NOT OK"
    out("Gateway Health")
    out(f"{state}{f' ({duration}ms)' if isinstance(duration, int | float) else ''}")
    for agent in health.get("agents") or []:
        if not isinstance(agent, dict):
            continue
        raw_sessions = agent.get("sessions")
        sessions = raw_sessions if isinstance(raw_sessions, dict) else {}
        out(
            f"Agent {sanitize_text(agent.get('agentId'))}: {sessions.get('count', '?')} sessions "
            f"({sanitize_text(sessions.get('path') or '')})"
        )
    raw_plugins = health.get("plugins")
    plugins = raw_plugins if isinstance(raw_plugins, dict) else {}
    errors = plugins.get("errors") or []
    if errors:
        out(f"Plugin errors: {len(errors)}")


def gateway_probe(
    ctx: typer.Context,
    json_mode: bool = JSON,
    timeout: str = GATEWAY_TIMEOUT,
    url: str = GATEWAY_URL,
    token: str = GATEWAY_TOKEN,
    password: str = GATEWAY_PASSWORD,
) -> None:
    """Check that a Gateway answers and accepts our credentials (an authenticated health call)."""

    def body() -> None:
        from openclaw_cli.cli.delegation import gateway_options
        from openclaw_cli.config import load_config
        from openclaw_cli.errors import ExitCode
        from openclaw_cli.gateway.probe import probe_report

        options = gateway_options(url, token, password, timeout)
        paths = state_paths(ctx)
        report, error = probe_report(
            paths,
            load_config(paths),
            timeout_ms=options.timeout_ms or 10_000,
            url=options.url,
            token=options.token,
            password=options.password,
        )
        document: dict[str, Any] = {"ok": error is None}
        if error is not None:
            document["error"] = error.to_json()["error"]
        document["gateway"] = report
        if json_mode:
            echo_json(document)
        else:
            _render_probe(report)
        if error is not None:
            raise typer.Exit(int(getattr(error, "exit_code", ExitCode.GATEWAY_UNAVAILABLE)))

    run(body, json_mode=json_mode)


def _render_probe(report: dict[str, Any]) -> None:
    from openclaw_cli.output import out, sanitize_text

    out(f"Gateway: {sanitize_text(report.get('url'))} ({sanitize_text(report.get('urlSource'))})")
    if report.get("error") is None and report.get("reachable"):
        server = report.get("server") or {}
        auth = report.get("auth") or {}
        out(
            f"OK: connected in {report.get('connectLatencyMs')}ms; server {sanitize_text(server.get('version'))}; "
            f"scopes {', '.join(sanitize_text(s) for s in auth.get('scopes') or []) or '(none)'}"
        )
    else:
        state = "reachable" if report.get("reachable") else "not reachable"
        out(f"{state}: {sanitize_text(report.get('error'))}")
    if report.get("authWarning"):
        out(f"Auth: {sanitize_text(report['authWarning'])}")


def register(app: typer.Typer) -> None:
    """Adds this module's commands to the `gateway` sub-app."""
    app.command("call")(gateway_call)
    app.command("health")(gateway_health)
    app.command("probe")(gateway_probe)
