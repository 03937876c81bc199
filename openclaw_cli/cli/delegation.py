"""Gateway delegation for mutating commands (spec D9, D20): a mutation without `--store` (and not a
dry run) first asks the Gateway that owns the state dir; only when nothing listens does it run
locally, and says so. Every mutating command goes through `delegate` and declares the shared
Gateway flags below.

Contract: `delegate(method, params, options, paths=…)` returns the Gateway's result document for
`method` (an `ops.methods` name, same params as the local call), or None when no Gateway listens
(connection refused / unreachable before a WebSocket opened) — then the caller runs the same
method locally and prints `LOCAL_FALLBACK_HINT`. Any other failure (auth, protocol, timeout, a
request error) raises a typed error: never answered by a local write.

Details of that contract:
- Local-only requests never touch the network: params with `dryRun: true` or a `store` path
  return None at once (no hint: running locally is what was asked).
- What is sent: the params without the local-only keys (`dryRun`, `store`), everything else as
  the local call gets it — an explicit `null` included (`label --clear` sends `"label": null`).
  Callers leave unset options out of the params (`given(...)`), as the real CLI does (Gateway
  param schemas are closed and typed), so what a Gateway applies is what a local run applies.
- Nothing listens -> None, and the hint "No Gateway is listening at <url>; ran locally." is said
  on stderr once the command has run (`cli.common.run` says the pending notes; a command that
  fails with an error says only the error: nothing ran locally to speak of), or handed to
  `hint(text)` when a caller passes one. No credentials configured is fine then (unlike OpenClaw).
- Something listens but we hold no credentials -> `GatewayCredentialsRequiredError` (we cannot
  ask it, and must not write under its feet). A `--url` / `OPENCLAW_GATEWAY_URL` override without
  explicit credentials is refused before any connection, as OpenClaw does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openclaw_cli.records import Record

# The shared Gateway flags (`GATEWAY_URL`, `GATEWAY_TOKEN`, `GATEWAY_PASSWORD`, `GATEWAY_TIMEOUT`):
# Typer options made when a command module first asks for them (`__getattr__`), so the fast
# path's cleanup body (`cli/cleanup_body.py`) delegates without importing Typer.
_GATEWAY_FLAGS = {
    "GATEWAY_URL": ("--url", "<url>", "Gateway WebSocket URL (default: from config/env)."),
    "GATEWAY_TOKEN": ("--token", "<token>", "Gateway token (default: from config/env)."),
    "GATEWAY_PASSWORD": ("--password", "<password>", "Gateway password (default: from config/env)."),
    "GATEWAY_TIMEOUT": ("--timeout", "<ms>", "Gateway request timeout in milliseconds."),
}


def __getattr__(name: str) -> Any:
    flag = _GATEWAY_FLAGS.get(name)
    if flag is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import typer

    option = typer.Option(None, flag[0], metavar=flag[1], help=flag[2])
    globals()[name] = option  # (made once: every command declares the same object, as before)
    return option


LOCAL_FALLBACK_HINT = "No Gateway is listening at {url}; ran locally."
LOCAL_ONLY_KEYS = ("dryRun", "store")
# How long the "is anything there?" check may take before the real exchange (loopback answers in
# well under a millisecond; a remote host gets the rest of the timeout in `client.call`).
LISTEN_CHECK_MS = 1000


class GatewayOptions(Record):
    _fields = ("url", "token", "password", "timeout_ms")
    url: str | None
    token: str | None
    password: str | None
    timeout_ms: int | None

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        password: str | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        self.url = url
        self.token = token
        self.password = password
        self.timeout_ms = timeout_ms


def gateway_options(
    url: str | None = None, token: str | None = None, password: str | None = None, timeout: Any = None
) -> GatewayOptions:
    """The shared flags as options; `--timeout` must be a positive integer (milliseconds)."""
    from openclaw_cli.errors import UsageError

    timeout_ms = None
    if timeout is not None:
        text = str(timeout).strip()
        if not text.isdigit() or not text.isascii() or int(text) <= 0:
            raise UsageError(
                f"--timeout must be a positive number of milliseconds, for example --timeout 30000 "
                f"(got {text!r})."
            )
        timeout_ms = int(text)
    return GatewayOptions(url=url, token=token, password=password, timeout_ms=timeout_ms)


def given(**options: Any) -> dict[str, Any]:
    """Request params from command options: the ones the user gave (unset options, None, are left
    out, as the real CLI leaves them out)."""
    return {name: value for name, value in options.items() if value is not None}


def wire_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params as sent: the local call's, without the local-only keys (explicit nulls kept)."""
    return {k: v for k, v in params.items() if k not in LOCAL_ONLY_KEYS}


# Notes said when the command has run (`cli.common.run`), dropped when it fails with an error.
PENDING_NOTES: list[str] = []


def is_local_only(params: dict[str, Any]) -> bool:
    return params.get("dryRun") is True or bool(params.get("store"))


def _say(hint: Callable[[str], None] | None, text: str) -> None:
    if hint is not None:
        hint(text)
    elif text not in PENDING_NOTES:
        PENDING_NOTES.append(text)


def delegate(
    method: str,
    params: dict[str, Any],
    options: GatewayOptions | None,
    *,
    paths: Any,
    config: Any = None,
    hint: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """The Gateway's result, or None when the method must run locally (see the module docstring)."""
    if is_local_only(params):
        return None
    from openclaw_cli.gateway.discovery import discover
    from openclaw_cli.gateway.probe import nothing_listens

    options = options or GatewayOptions()
    if config is None:
        from openclaw_cli.config import load_config

        config = load_config(paths)
    target = discover(
        paths=paths, config=config, url=options.url, token=options.token, password=options.password
    )
    if target.url_override and not target.has_credentials:
        problem = target.credentials_error(method)
        if problem is not None:
            raise problem
    timeout_ms = options.timeout_ms
    if not target.has_credentials:
        # Without credentials we only need to know whether anyone is there: a cheap TCP check.
        if nothing_listens(target, min(timeout_ms or LISTEN_CHECK_MS, LISTEN_CHECK_MS)) is not None:
            _say(hint, LOCAL_FALLBACK_HINT.format(url=target.url))
            return None
        problem = target.credentials_error(method)
        if problem is not None:
            raise problem
    from openclaw_cli.errors import GatewayTransportError
    from openclaw_cli.gateway.client import call

    try:
        result = call(target, method, wire_params(params), timeout_ms=timeout_ms)
    except GatewayTransportError as exc:
        if exc.unreachable:
            _say(hint, LOCAL_FALLBACK_HINT.format(url=target.url))
            return None
        raise
    payload = result.payload
    return payload if isinstance(payload, dict) else {"result": payload}


def targets_local_state(options: GatewayOptions | None, *, paths: Any, config: Any) -> bool:
    """Whether the Gateway we would ask is this state dir's own (the local loopback one), so local
    pre-checks (e.g. "agent not found") hold for it too; False for `--url`, env or remote targets."""
    from openclaw_cli.gateway.discovery import SOURCE_LOCAL, discover

    options = options or GatewayOptions()
    target = discover(
        paths=paths, config=config, url=options.url, token=options.token, password=options.password
    )
    return target.url_source == SOURCE_LOCAL


def ensure_no_gateway(options: GatewayOptions | None, *, paths: Any, config: Any, what: str) -> None:
    """For a local-only mutation with no Gateway method (e.g. `compact --over-threshold`): refuse
    while a Gateway listens for this state dir, instead of writing under its feet."""
    from openclaw_cli.errors import StateOwnedError
    from openclaw_cli.gateway.discovery import discover
    from openclaw_cli.gateway.probe import nothing_listens

    options = options or GatewayOptions()
    target = discover(
        paths=paths, config=config, url=options.url, token=options.token, password=options.password
    )
    if nothing_listens(target, LISTEN_CHECK_MS) is None:
        raise StateOwnedError(
            f"A Gateway is listening at {target.url}; {what} has no Gateway method and would write "
            "under its feet. Stop the Gateway and retry, or compact the sessions one at a time "
            "(`openclaw compact KEY` is sent to the Gateway)."
        )


def follow_owner(ctx: Any, options: GatewayOptions | None, *, dry_run: bool, store: str | None) -> None:
    """Spec D23 for every preview: a dry run is computed here (no Gateway method previews), with the
    rules of the release that would apply it — the owning Gateway's, from its `hello-ok`. Asked
    once per command; `--store` is offline repair (the store's own release applies)."""
    if dry_run and not store and getattr(ctx, "owning_gateway", None) is None:
        ctx.owning_gateway = owning_gateway(options, paths=ctx.paths, config=ctx.config)


def owning_gateway(options: GatewayOptions | None, *, paths: Any, config: Any) -> tuple[str, str] | None:
    """(server.version, url) of the Gateway a mutation would be sent to, from its `hello-ok` (spec
    D23: a preview follows the rules of the release that would apply it); None when nothing
    listens, we hold no credentials for it, or it cannot be asked. Never raises: a preview then
    follows the next rule (the store's schema, the config)."""
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.gateway.discovery import discover
    from openclaw_cli.gateway.probe import nothing_listens

    options = options or GatewayOptions()
    try:
        target = discover(
            paths=paths, config=config, url=options.url, token=options.token, password=options.password
        )
        if not target.has_credentials or nothing_listens(target, LISTEN_CHECK_MS) is not None:
            return None
        from openclaw_cli.gateway.client import hello as gateway_hello

        hello = gateway_hello(target, timeout_ms=options.timeout_ms)
    except OpenClawError:
        return None
    raw_server = hello.get("server")
    server = raw_server if isinstance(raw_server, dict) else {}
    version = server.get("version")
    return (version.strip(), target.url) if isinstance(version, str) and version.strip() else None
