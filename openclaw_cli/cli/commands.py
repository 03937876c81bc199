"""Registers every command group on the root app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli import (
        agents,
        cleanup,
        compact,
        dashboard,
        doctor,
        gateway,
        sessions,
        status,
        storage,
        usage,
    )

    sessions.register(app)
    status.register(app)
    doctor.register(app)
    cleanup.register(app)
    agents.register(app)
    compact.register(app)
    gateway.register(app)
    storage.register(app)
    usage.register(app)
    dashboard.register(app)
