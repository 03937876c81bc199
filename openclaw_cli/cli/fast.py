"""The fast path: `openclaw sessions [list] … --json`, `sessions search QUERY …`, `status
[--json] [--no-probe] [--wide] [--verbose]`, `[sessions] cleanup … --json` and `doctor
--session-sqlite <mode> … --json` run without importing Typer/click (~30 ms of a ~75 ms command;
status, cleanup and doctor since issue 30), for scripts and the clients that poll them.

It serves only argument lists it understands completely, and runs the very body the Typer
command runs (`cli/listing.list_command`, `cli/search_body.search_command`,
`cli/status_body.status_command`, through the same `cli/common.run`), so the output, the
exit code and every error are the same bytes. What the Typer app parses is mirrored here for
that subset: root options first (`--profile V`, `--profile=V`, `--no-color`, also after the
subcommand: `rootopts.hoist_root_options`), then `sessions`, its options, optionally `list` and its
options (a `list` option wins over the same `sessions` option, as `cli/sessions.sessions_list`
merges them). Anything else returns None and the Typer app runs: no `--json`, help (`-h`,
`--help`), `--version`, shell completion, an unknown, repeated or value-less option, a flag given
a value, an option value that starts with `-`, `--`, another subcommand or an extra argument, an
invalid profile. `OPENCLAW_FAST_PATH=0` turns the fast path off (tests compare both)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from openclaw_cli.cli.rootopts import (
    ROOT_FLAGS,
    ROOT_VALUE_PARAMS,
    hoist_root_options,
    invalid_behavior,
    invalid_profile,
)

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

# `openclaw sessions` / `sessions list` options (cli/sessions.py): option -> parameter
_VALUE_OPTIONS = {"--agent": "agent", "--store": "store", "--active": "active", "--limit": "limit"}
_FLAG_OPTIONS = {
    "--all-agents": "all_agents",
    "--json": "json_mode",
    "--verbose": "verbose",
    "--archived": "archived",
    "--all": "all_rows",
    "--wide": "wide",
}
# declared by `sessions` / `sessions list` but served by the Typer app only: the listing filters
# (issue 27) read every row and sort it, so the fast path's start-up saving does not matter there
LEFT_TO_TYPER = frozenset({"--kind", "--label", "--match", "--pinned", "--unread", "--channel", "--sort"})
# `openclaw sessions search QUERY` (cli/search.py): the options without Gateway flags
_SEARCH_VALUES = {
    "--agent": "agent",
    "--store": "store",
    "--since": "since",
    "--until": "until",
    "--limit": "limit",
}
_SEARCH_LISTS = {"--session": "sessions", "--role": "roles"}
_SEARCH_FLAGS = {
    "--all-agents": "all_agents",
    "--json": "json_mode",
    "--fixed": "fixed",
    "--redact": "redact",
    "--reindex": "reindex",
    "--verbose": "verbose",
    "--archived": "archived",
    "--no-archived": "archived",
}
# `openclaw status` (cli/status.py): flags only
_STATUS_FLAGS = {"--json": "json_mode", "--no-probe": "no_probe", "--wide": "wide", "--verbose": "verbose"}
# environment variables that put click into shell-completion mode
_COMPLETION_VARS = ("_OPENCLAW_COMPLETE", "_TYPER_COMPLETE_ARGS")


def _options(
    args: list[str], i: int, values: dict[str, str], flags: dict[str, str]
) -> tuple[dict[str, Any], int] | None:
    """Options from `args[i]` up to the first argument that is not one: (parameters, where it
    stopped); None for anything the Typer parser might read differently."""
    got: dict[str, Any] = {}
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        name, eq, explicit = arg.partition("=")
        value: str | bool
        if name in flags and not eq:
            param, value = flags[name], True
            i += 1
        elif name in values:
            if eq:
                value = explicit
                i += 1
            elif i + 1 < len(args) and not args[i + 1].startswith("-"):
                value = args[i + 1]
                i += 2
            else:
                return None
            param = values[name]
        else:
            return None
        if param in got:
            return None  # repeated: left to the Typer parser
        got[param] = value
    return got, i


def _search(args: list[str], i: int) -> dict[str, Any] | None:
    """`sessions search` options and its one QUERY from `args[i]` on (search_command's
    parameters), or None for anything the Typer parser might read differently."""
    got: dict[str, Any] = {"sessions": [], "roles": []}
    query: str | None = None
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            if query is not None:
                return None
            query, i = arg, i + 1
            continue
        name, eq, explicit = arg.partition("=")
        if name in _SEARCH_FLAGS and not eq:
            param = _SEARCH_FLAGS[name]
            if param in got:
                return None
            got[param] = name != "--no-archived"
            i += 1
            continue
        if name not in _SEARCH_VALUES and name not in _SEARCH_LISTS:
            return None
        if eq:
            value, i = explicit, i + 1
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            value, i = args[i + 1], i + 2
        else:
            return None
        if name in _SEARCH_LISTS:
            got[_SEARCH_LISTS[name]].append(value)
            continue
        param = _SEARCH_VALUES[name]
        if param in got:
            return None
        got[param] = value
    if query is None:
        return None
    limit = got.get("limit", "10")
    if not limit.isdigit() or not limit.isascii():
        return None  # Typer says what is wrong with it
    return {
        "query": query,
        "agent": got.get("agent"),
        "all_agents": got.get("all_agents", False),
        "store": got.get("store"),
        "sessions": got["sessions"],
        "roles": got["roles"],
        "since": got.get("since"),
        "until": got.get("until"),
        "archived": got.get("archived", True),
        "limit": int(limit),
        "json_mode": got.get("json_mode", False),
        "fixed": got.get("fixed", False),
        "redact": got.get("redact", False),
        "reindex": got.get("reindex", False),
        "verbose": got.get("verbose", False),
        "gw": None,
    }


def _cleanup(root_call: dict[str, Any], args: list[str], i: int) -> dict[str, Any] | None:
    """`[sessions] cleanup` with its options from `args[i]` on (`cli/cleanup_body.py` says which it
    serves), or None for anything else."""
    from openclaw_cli.cli.cleanup_body import FAST_FLAGS, FAST_VALUES, fast_call

    got = _options(args, i, FAST_VALUES, FAST_FLAGS)
    if got is None or got[1] != len(args):
        return None
    call = fast_call(got[0])
    return None if call is None else {"root": root_call, "cleanup": call}


def _doctor(root_call: dict[str, Any], args: list[str], i: int) -> dict[str, Any] | None:
    """`doctor --session-sqlite <mode> … --json` with its options from `args[i]` on
    (`cli/doctor_body.py` says which it serves), or None for anything else."""
    from openclaw_cli.cli.doctor_body import FAST_FLAGS, FAST_VALUES, fast_call

    got = _options(args, i, FAST_VALUES, FAST_FLAGS)
    if got is None or got[1] != len(args):
        return None
    call = fast_call(got[0])
    return None if call is None else {"root": root_call, "doctor": call}


def parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """The call (`root`: `profile`, `behavior`, `no_color`; then `listing`, `search`, `status`,
    `cleanup` or `doctor`: the body's parameters) for an argument list this path serves, else None."""
    args = hoist_root_options(argv)
    root = _options(args, 0, ROOT_VALUE_PARAMS, dict.fromkeys(ROOT_FLAGS, "no_color"))
    if root is None:
        return None
    root_opts, i = root
    root_call: dict[str, Any] = {
        "profile": root_opts.get("profile"),
        "behavior": root_opts.get("behavior"),
        "no_color": bool(root_opts.get("no_color")),
    }
    if invalid_profile(root_call["profile"]) is not None or invalid_behavior(root_call["behavior"]):
        return None  # the root callback's usage error, from the Typer app
    if i < len(args) and args[i] == "status":
        flags = _options(args, i + 1, {}, _STATUS_FLAGS)
        if flags is None or flags[1] != len(args):
            return None
        return {"root": root_call, "status": {p: flags[0].get(p, False) for p in _STATUS_FLAGS.values()}}
    if i < len(args) and args[i] == "cleanup":
        return _cleanup(root_call, args, i + 1)
    if i < len(args) and args[i] == "doctor":
        return _doctor(root_call, args, i + 1)
    if i >= len(args) or args[i] != "sessions":
        return None
    group = _options(args, i + 1, _VALUE_OPTIONS, _FLAG_OPTIONS)
    if group is None:
        return None
    group_opts, i = group
    sub_opts: dict[str, Any] = {}
    if i < len(args) and args[i] == "search":
        if group_opts:
            return None  # `sessions --json search …`: the group's options are merged by the Typer app
        searching = _search(args, i + 1)
        return None if searching is None else {"root": root_call, "search": searching}
    if i < len(args) and args[i] == "cleanup":
        # (`sessions --json cleanup …`: the group's options are merged by the Typer app)
        return None if group_opts else _cleanup(root_call, args, i + 1)
    if i < len(args):
        if args[i] != "list":
            return None
        sub = _options(args, i + 1, _VALUE_OPTIONS, _FLAG_OPTIONS)
        if sub is None or sub[1] != len(args):
            return None
        sub_opts = sub[0]
    listing: dict[str, Any] = {}
    for param in (*_VALUE_OPTIONS.values(), *_FLAG_OPTIONS.values()):
        default = None if param in _VALUE_OPTIONS.values() else False
        # `sessions list` takes its own value first, else the group's (`x or parent.get(x)`)
        listing[param] = sub_opts.get(param, default) or group_opts.get(param, default)
    if not listing["json_mode"]:
        return None
    return {"root": root_call, "listing": listing}


def dispatch(argv: Sequence[str]) -> int | None:
    """Run a served command and return its exit code; None: not served (run the Typer app)."""
    if os.environ.get("OPENCLAW_FAST_PATH", "").strip() == "0" or any(
        v in os.environ for v in _COMPLETION_VARS
    ):
        return None
    call = parse(argv)
    if call is None:
        return None
    try:
        # the root callback's effects (cli/main.root), in its order
        if call["root"]["no_color"]:
            os.environ["NO_COLOR"] = "1"
        from openclaw_cli.cli.rootopts import apply_behavior, apply_profile

        apply_profile(call["root"]["profile"])
        apply_behavior(call["root"]["behavior"])
        from openclaw_cli.cli.common import exit_code_of

        try:
            if "status" in call:
                from openclaw_cli.cli.status_body import status_command

                status_command(**call["status"])
            elif "search" in call:
                # the process ends with this command: no cyclic collection from here on, neither
                # the young-generation passes its imports set off nor the full one the interpreter
                # runs over every loaded module when it exits (~1.5 % of a warm search's
                # instructions). What a search builds makes no cycles worth collecting first (a
                # first build pauses the collector while it writes anyway; reference counting
                # frees the rest) and its index connections are closed by reference counting too.
                import gc

                gc.disable()
                from openclaw_cli.cli.search_body import search_command

                search_command(**call["search"])
            elif "cleanup" in call:
                from openclaw_cli.cli.cleanup_body import cleanup_command

                try:
                    cleanup_command(None, **call["cleanup"])
                finally:
                    _frozen_for_exit()
            elif "doctor" in call:
                from openclaw_cli.cli.common import run
                from openclaw_cli.cli.doctor_body import session_sqlite_command

                doctor = call["doctor"]
                run(lambda: session_sqlite_command(None, **doctor), json_mode=doctor["json_out"])
            else:
                from openclaw_cli.cli.listing import list_command

                list_command(**call["listing"])
        except Exception as error:
            code = exit_code_of(error)
            if code is None:
                raise
            return code
        return 0
    except KeyboardInterrupt:  # outside the command body: as click reports it (a newline, "Aborted.")
        sys.stderr.write("\nAborted.\n")
        return 1


def _frozen_for_exit() -> None:
    """A served cleanup's process ends with it (in the `openclaw` executable: a library caller's
    process goes on, `openclaw_cli.EXECUTABLE`): every object still alive goes to the cyclic
    collector's permanent generation, so the interpreter's exit — whose teardown collects every
    generation after joining the threads (the removals' deferred WAL checkpoint), on the command's
    path — does not walk them all again (issue 30, *many*: the teardown's 34.1 M instructions ->
    8.6 M). Nothing is collected less: the process ends."""
    import openclaw_cli

    if openclaw_cli.EXECUTABLE:
        import gc

        gc.freeze()
