"""`openclaw gateway` server commands (registered on `cli.gateway.gateway_app`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Adds this module's commands to the `gateway` sub-app."""
