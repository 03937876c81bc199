"""The `openclaw` command. Command modules import only typer at load time (fast --help);
heavy modules are imported inside command bodies."""

from __future__ import annotations

import sys

import typer
from typer.core import TyperGroup

from openclaw_cli import __version__


class JsonErrorsGroup(TyperGroup):
    """Under `--json`, a usage error click itself raises (an unknown flag, a bad value) is the JSON
    envelope on stdout too (D5/D19: one document, failures included), exit 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or "--json" not in argv:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=standalone_mode, **extra)
        from typer import core as typer_core  # typer 0.26+ vendors click as typer._click

        click = typer_core._click
        try:
            rv = super().main(args=argv, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              **extra)
        except click.exceptions.UsageError as exc:
            from openclaw_cli.output import emit_json, err

            emit_json({"ok": False, "error": {"type": "cli_error", "message": exc.format_message()}})
            err(f"Error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        except click.exceptions.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except (click.exceptions.Abort, typer_core.Abort):
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=JsonErrorsGroup,
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
