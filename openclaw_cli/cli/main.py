"""The `openclaw` command. Command modules import only typer at load time (fast --help);
heavy modules are imported inside command bodies.

The root group (`RootGroup`) runs the parser itself so that what Typer/click raise before a
command body runs is reported like every other failure: a usage error under `--json` prints the
`{"ok":false,"error":{…}}` envelope on stdout (the usual usage text still goes to stderr), exit 2.
Root options (`--profile`, `--no-color`) are accepted after the subcommand too, as OpenClaw's."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from openclaw_cli import __version__
from openclaw_cli.cli.rootopts import (
    PROFILE_ERROR,
    PROG,
    ROOT_FLAGS,
    ROOT_VALUE_OPTIONS,
    apply_behavior,
    apply_profile,
    hoist_root_options,
    invalid_behavior,
    invalid_profile,
    json_requested,
)


def _value_hint(error: Exception) -> str | None:
    """Extra text for an option given without its value (`doctor --session-sqlite` lists its modes)."""
    name = getattr(error, "option_name", None) or ""
    if name == "--session-sqlite":
        from openclaw_cli.migration.scope import MODES

        return f"Modes: {', '.join(MODES)} (for example --session-sqlite dry-run)."
    ctx = getattr(error, "ctx", None)
    if (
        type(error).__name__ == "NoSuchOption"
        and not name.startswith("--")
        and ctx is not None
        and ctx.command_path.endswith("sessions search")
    ):
        # `sessions search -word`: the shell gives us an option, not a query (issue 26)
        return (
            'A search query that starts with "-" goes after "--", e.g. openclaw sessions search -- '
            '"-word other" (an exclusion needs a word to look for) or, for the text itself, '
            'openclaw sessions search --fixed -- "-word".'
        )
    return None


class RootGroup(TyperGroup):
    """`openclaw`'s root command: usage errors become the JSON envelope under `--json`."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        from typer._click import exceptions as click_exc

        argv = hoist_root_options(sys.argv[1:] if args is None else args)
        try:
            result = super().main(
                argv,
                prog_name or PROG,
                complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
            code = result if isinstance(result, int) and not isinstance(result, bool) else 0
        except click_exc.UsageError as error:
            hint = _value_hint(error)
            if hint:
                error.message = f"{error.message.rstrip('.')}. {hint}"
            if json_requested(argv):
                from openclaw_cli.output import emit_json

                where = error.ctx.command_path if error.ctx is not None else PROG
                emit_json(
                    {
                        "ok": False,
                        "error": {
                            "type": "cli_error",
                            "message": f"{error.format_message()}\nTry: {where} --help",
                        },
                    }
                )
            error.show()
            code = error.exit_code
        except click_exc.ClickException as error:
            error.show()
            code = error.exit_code
        except typer.Abort:
            sys.stderr.write("Aborted.\n")
            code = 1
        except typer.Exit as exit_:
            code = exit_.exit_code
        except KeyboardInterrupt:
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code)


app = typer.Typer(
    name=PROG,
    cls=RootGroup,
    help="OpenClaw session management: stores, maintenance, SQLite migration, compaction, status.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish)
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
    profile: str = typer.Option(
        None,
        "--profile",
        metavar="<name>",
        help="Use ~/.openclaw-<name> as the state directory (letters, digits, _ and -).",
    ),
    behavior: str = typer.Option(
        None,
        "--behavior",
        metavar="<release>",
        help="Follow this OpenClaw release's rules (2026.7, 2026.9.6, 2026.9.9) instead of the one chosen per "
        "store (OPENCLAW_CLI_BEHAVIOR does the same).",
    ),
    no_color: bool = typer.Option(False, "--no-color", help="Disable colours (NO_COLOR is honoured too)."),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    import os

    if no_color:
        os.environ["NO_COLOR"] = "1"
    bad = invalid_profile(profile)
    if bad is not None:
        from typer._click.exceptions import UsageError

        raise UsageError(f"{PROFILE_ERROR}: {bad!r}", ctx=ctx)
    apply_profile(profile)
    if invalid_behavior(behavior) is not None:
        from typer._click.exceptions import UsageError

        from openclaw_cli.behavior import ACCEPTED

        raise UsageError(f"Unknown --behavior {behavior!r}; use one of: {ACCEPTED}.", ctx=ctx)
    apply_behavior(behavior)
    ctx.obj = {"profile": profile.strip() if profile else None, "behavior": behavior}


def _register() -> None:
    from openclaw_cli.cli import commands

    commands.register(app)


_register()


def invoked_command(argv: Sequence[str]) -> str | None:
    """The top-level command `argv` runs, when nothing before it needs the other commands (root
    help, --version, completion: those get the whole app); None otherwise."""
    import os

    if os.environ.get("OPENCLAW_FAST_PATH", "").strip() == "0" or any(
        var in os.environ for var in ("_OPENCLAW_COMPLETE", "_TYPER_COMPLETE_ARGS")
    ):
        return None  # OPENCLAW_FAST_PATH=0: the whole app, as before any start-up work
    args = hoist_root_options(argv)
    i = _command_at(args)
    return None if i is None else args[i]


def _command_at(args: list[str]) -> int | None:
    """Where the top-level command is in hoisted `args` (after the root options), or None."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ROOT_VALUE_OPTIONS:
            i += 2  # click takes the next argument as the value, whatever it looks like
        elif arg in ROOT_FLAGS or arg.startswith(tuple(f"{o}=" for o in ROOT_VALUE_OPTIONS)):
            i += 1
        else:
            break
    if i >= len(args) or args[i].startswith("-"):
        return None
    return i


def app_for(argv: Sequence[str]) -> typer.Typer:
    """The app that runs `argv`: the root with only the command it invokes, else the whole app.

    Typer turns every registered command's signature into click parameters before it parses
    anything (~180 M instructions for the 37 commands, most of a command's start-up); a command
    never sees its siblings, so building only the invoked one changes no output. An unknown name
    (click lists and suggests the commands), the root's help, --version and completion get the
    whole app, and so does everything with OPENCLAW_FAST_PATH=0 (docs/decisions.md, issue 30,
    helper startup30)."""
    name = invoked_command(argv)
    commands = [c for c in app.registered_commands if name is not None and c.name == name]
    groups = [g for g in app.registered_groups if name is not None and g.name == name]
    if not commands and not groups:
        return app
    import copy

    pruned = copy.copy(app)  # the same info, callback and settings
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    if groups:
        pruned.registered_groups = [_group_for(pruned, groups[0], hoist_root_options(argv))]
    return pruned


def _group_for(pruned: typer.Typer, group: Any, args: list[str]) -> Any:
    """`group`'s registration with only the subcommand `args` invoke after the group's name and
    options (found by click's own parser over the group's options, no callback run), or none for
    a group that runs without one (`openclaw sessions`, not its help); the whole group when the
    subcommand is missing or unknown or the options do not parse (click reports it)."""
    import copy

    import typer.main

    inner = group.typer_instance
    bare = copy.copy(inner)
    bare.registered_commands, bare.registered_groups = [], []
    probe = copy.copy(group)
    probe.typer_instance = bare
    pruned.registered_groups = [probe]
    try:
        click_group = typer.main.get_command(pruned).commands[group.name]  # type: ignore[attr-defined]
        rest = args[(_command_at(args) or 0) + 1 :]
        ctx = click_group.context_class(click_group, info_name=group.name)
        _, remaining, _ = click_group.make_parser(ctx).parse_args(args=list(rest))  # it pops
    except Exception:
        return group
    sub = remaining[0] if remaining else None
    commands = [c for c in inner.registered_commands if sub is not None and c.name == sub]
    groups = [g for g in inner.registered_groups if sub is not None and g.name == sub]
    if sub is None and click_group.invoke_without_command and not {"--help", "-h"} & set(rest):
        pass  # `openclaw sessions [options]`: the group's own callback runs, no subcommand needed
    elif not commands and not groups:
        return group
    only = copy.copy(inner)
    only.registered_commands, only.registered_groups = commands, groups
    result = copy.copy(group)
    result.typer_instance = only
    return result


def main() -> None:
    if any(arg.startswith(("--show-completion", "--install-completion")) for arg in sys.argv[1:]):
        from openclaw_cli.cli.completion import use_colon_safe_bash_script

        use_colon_safe_bash_script()  # session keys hold ':' (issue 29)
    app_for(sys.argv[1:])(prog_name=PROG)


if __name__ == "__main__":
    main()
