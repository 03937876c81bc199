"""`openclaw gateway …`: the server (`run`, `status`: `cli/gateway_server.py`) and the client
commands (`call`, `probe`, `health`: `cli/gateway_client.py`) on one sub-app."""

from __future__ import annotations

import typer

gateway_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Run a Gateway for this state dir, or talk to a running one.",
)


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli import gateway_client, gateway_server

    gateway_server.register(gateway_app)
    gateway_client.register(gateway_app)
    app.add_typer(gateway_app, name="gateway")
