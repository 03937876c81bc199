"""The `openclaw` command. Command modules import only typer at load time (fast --help);
heavy modules are imported inside command bodies."""

from __future__ import annotations

import typer

from openclaw_cli import __version__

app = typer.Typer(
    name="openclaw",
    help="OpenClaw session management: stores, maintenance, SQLite migration, compaction, status.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rendering it through Rich costs ~40 ms of imports
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openclaw-cli {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    profile: str = typer.Option(None, "--profile", help="Use ~/.openclaw-<name> as the state directory."),
    no_color: bool = typer.Option(False, "--no-color", help="Disable colours (NO_COLOR is honoured too)."),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    import os

    if no_color:
        os.environ["NO_COLOR"] = "1"
    if profile:
        # The one path resolver reads OPENCLAW_PROFILE, so every command sees the flag.
        os.environ["OPENCLAW_PROFILE"] = profile
    ctx.obj = {"profile": profile}


def _register() -> None:
    from openclaw_cli.cli import commands

    commands.register(app)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
