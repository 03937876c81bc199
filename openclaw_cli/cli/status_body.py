"""The body of `openclaw status` without Typer: the Typer command (`cli/status.py`) and the fast
path (`cli/fast.py`) both run it. The report on stdout (spec D19), hints and store errors on
stderr; a store that cannot be read is shown with its error while the others are reported, and
the command then exits with that error's code."""

from __future__ import annotations

from typing import Any

from openclaw_cli.cli.common import command_exit, echo_json, print_lines, run, say_hints, state_paths


def unprobed_gateway(config: Any, paths: Any) -> dict[str, Any]:
    """`--no-probe`: where the Gateway would be (discovery reads config and environment only, no
    socket is opened), marked `probed: false`."""
    from openclaw_cli.gateway.discovery import discover
    from openclaw_cli.gateway.probe import NO_CREDENTIALS_WARNING

    block: dict[str, Any] = {
        "mode": "local",
        "url": None,
        "urlSource": None,
        "misconfigured": False,
        "reachable": False,
        "connectLatencyMs": None,
        "self": None,
        "error": "not probed",
        "authWarning": None,
        "probed": False,
    }
    try:
        target = discover(paths=paths, config=config)
    except Exception as exc:  # a discovery problem is the block's error, never the command's
        block["error"] = f"not probed ({getattr(exc, 'message', exc)})"
        return block
    block.update(
        mode=target.mode,
        url=target.url,
        urlSource=target.url_source,
        misconfigured=getattr(target, "remote_fallback_note", None) is not None,
    )
    if not target.has_credentials and target.auth_mode != "none":
        block["authWarning"] = NO_CREDENTIALS_WARNING
    return block


def probed_gateway(config: Any, paths: Any) -> dict[str, Any]:
    """An authenticated `health` call (OpenClaw's keys; `self` from the server's hello when it
    answered)."""
    from openclaw_cli.gateway.probe import probe_report

    block, _ = probe_report(paths, config)
    server = block.pop("server", None)
    block.pop("auth", None)
    block["self"] = (
        {"version": server.get("version")} if isinstance(server, dict) and server.get("version") else None
    )
    return block


def status_command(json_mode: bool, no_probe: bool, wide: bool, verbose: bool) -> None:
    """`openclaw status` with its four flags."""

    def body() -> None:
        from openclaw_cli.cli.common import enable_verbose, warn_config
        from openclaw_cli.ops.status import build_status

        if verbose:
            enable_verbose()
        failures: list[Any] = []
        hints: list[str] = []
        probe = unprobed_gateway if no_probe else probed_gateway
        result = build_status(state_paths(), probe=probe, failures=failures, hints=hints)
        if json_mode:
            echo_json(result)
            warn_config(result["config"].get("warnings") or [])  # text mode shows them in the report
        else:
            from openclaw_cli.cli.render import status_lines
            from openclaw_cli.cli.term import stdout_printer
            from openclaw_cli.clock import now_ms

            print_lines(status_lines(result, stdout_printer(wide=wide), now_ms=now_ms()))
        if not json_mode:
            say_hints(hints)  # under --json the document's `hint` says it (D2: once)
        if failures:
            from openclaw_cli.cli.common import say_error

            for item in result.get("errors") or []:
                say_error(f"agent {item['agentId']}: {item['error']['message']}")
            raise command_exit(int(failures[0].exit_code))

    run(body, json_mode=json_mode)
