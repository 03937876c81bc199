"""`openclaw status` (its body: `cli/status_body.py`, which the fast path runs too)."""

from __future__ import annotations

import typer


def status(
    json_mode: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
    no_probe: bool = typer.Option(
        False, "--no-probe", help="Do not contact the Gateway (its block says not probed)."
    ),
    wide: bool = typer.Option(
        False, "--wide", help="Full keys on a terminal too (lines may exceed its width)."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="Log which stores are read (stderr)."),
) -> None:
    """State dir, config validity, stores, sessions, retention settings and the Gateway."""
    from openclaw_cli.cli.status_body import status_command

    status_command(json_mode, no_probe, wide, verbose)


def register(app: typer.Typer) -> None:
    app.command("status")(status)
