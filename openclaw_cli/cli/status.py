"""`openclaw status`."""

from __future__ import annotations

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths


def status(
    json_mode: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not probe the Gateway port."),
) -> None:
    """State dir, config validity, stores, sessions, retention settings and the Gateway."""

    def body() -> None:
        from openclaw_cli.ops.status import build_status

        probe = None
        if not no_probe:
            from openclaw_cli.gateway.probe import status_probe as probe
        result = build_status(state_paths(), probe=probe)
        if json_mode:
            echo_json(result)
        else:
            from openclaw_cli.cli.render import render_status

            render_status(result)

    run(body, json_mode=json_mode)


def register(app: typer.Typer) -> None:
    app.command("status")(status)
