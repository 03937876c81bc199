"""`docs/commands.md`, generated from the Typer app itself: every command (hidden ones excluded),
its arguments and options with their value, default and help. `python scripts/gen_docs.py`
rewrites the file; `tests/test_docs.py` fails (naming that command) when it is stale."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

REGENERATE = "python scripts/gen_docs.py"

HEADER = f"""# Command reference

Generated from the command-line app by `{REGENERATE}` (a test fails when this file is stale).
Options marked *root* go before or after the subcommand. Every command that takes `--json` prints
exactly one JSON document on stdout (failures too: `{{"ok":false,"error":{{…}}}}`); text results go
to stdout, progress, hints, warnings and errors to stderr. Exit codes: [exit-codes.md](exit-codes.md).
"""


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name in getattr(cmd, "commands", {}) or {}:
        sub = cmd.commands[name]
        if getattr(sub, "hidden", False):
            continue
        yield from _commands(sub, [*path, name])


def _cell(text: str) -> str:
    """One table cell: one line, `|` escaped, `<` `>` as entities (`<name>` is not an HTML tag)."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False) or param.required:
        return ""
    default = param.default
    if default is None or default == () or getattr(param, "show_default", True) is False:
        return ""
    if callable(default):
        return ""
    return f"`{default}`"


def _option_name(param: Any) -> str:
    names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    if getattr(param, "is_flag", False):
        return names
    metavar = (param.metavar or param.type.name.upper()).replace("|", "\\|")
    return f"{names} `{metavar}`"


def _argument_name(param: Any) -> str:
    name: str = param.metavar or param.name.upper()
    return name


def _usage(path: list[str], cmd: Any) -> str:
    pieces = [" ".join(path), "[OPTIONS]"]
    for param in cmd.params:
        if param.param_type_name != "argument":
            continue
        name = _argument_name(param) + ("..." if param.nargs == -1 else "")
        pieces.append(name if param.required else f"[{name}]")
    if getattr(cmd, "commands", None):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def commands_markdown(app: Any = None) -> str:
    """The Markdown reference of `app` (default: the `openclaw` app)."""
    import typer.main

    if app is None:
        from openclaw_cli.cli.main import app
    root = typer.main.get_command(app)
    out = [HEADER]
    toc = []
    sections = []
    for path, cmd in _commands(root, ["openclaw"]):
        title = " ".join(path)
        anchor = title.replace(" ", "-")
        toc.append(f"- [`{title}`](#{anchor})")
        lines = [f'<a id="{anchor}"></a>', f"## `{title}`", ""]
        text = (cmd.help or cmd.short_help or "").strip()
        if text:
            lines += [" ".join(text.split()), ""]
        lines += ["```", _usage(path, cmd), "```", ""]
        arguments = [p for p in cmd.params if p.param_type_name == "argument"]
        options = [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]
        if arguments:
            lines += ["| argument | required | help |", "|---|---|---|"]
            for p in arguments:
                help_text = getattr(p, "help", None) or ""
                lines.append(
                    f"| `{_argument_name(p)}` | {'yes' if p.required else 'no'} | {_cell(help_text)} |"
                )
            lines.append("")
        if options:
            lines += ["| option | default | help |", "|---|---|---|"]
            for p in options:
                help_text = _cell(p.help or "")
                if p.required:
                    help_text = f"**required.** {help_text}"
                if path == ["openclaw"] and p.name in ("profile", "behavior", "no_color"):
                    help_text = f"*root.* {help_text}"
                lines.append(f"| {_option_name(p)} | {_default(p)} | {help_text} |")
            lines.append("")
        subs = [
            n for n in (getattr(cmd, "commands", {}) or {}) if not getattr(cmd.commands[n], "hidden", False)
        ]
        if subs:
            lines += ["Subcommands: " + ", ".join(f"[`{n}`](#{anchor}-{n})" for n in subs), ""]
        sections.append("\n".join(lines))
    out += ["## Commands", "", *toc, ""]
    out += sections
    return "\n".join(out).rstrip("\n") + "\n"


def command_paths(app: Any = None) -> list[tuple[str, ...]]:
    """Every command path of `app` (default: the `openclaw` app), hidden commands included: `()` is
    the root."""
    import typer.main

    if app is None:
        from openclaw_cli.cli.main import app

    def walk(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        for name in getattr(cmd, "commands", {}) or {}:
            yield from walk(cmd.commands[name], (*path, name))

    return list(walk(typer.main.get_command(app), ()))


def typer_outputs(
    argvs: list[list[str]], columns: int = 80, pruned: bool = False
) -> list[tuple[str, str, int]]:
    """(stdout, stderr, exit code) of each argument list run through the Typer app (`cli/main.py`'s
    root group, as `openclaw` runs it when no fast path serves it) in this process, the terminal
    `columns` wide: what `cli/helpfast.py` must reproduce. `pruned`: the root with only the
    command the argument list invokes (`main.app_for`, what `openclaw` runs), else the whole app."""
    import io
    import os
    import sys

    import typer.main

    from openclaw_cli.cli.main import app, app_for
    from openclaw_cli.cli.rootopts import PROG

    whole = typer.main.get_command(app)
    saved = sys.stdout, sys.stderr, os.environ.get("COLUMNS"), os.environ.get("OPENCLAW_PROFILE")
    os.environ["COLUMNS"] = str(columns)
    results = []
    try:
        for argv in argvs:
            out, err = io.BytesIO(), io.BytesIO()
            sys.stdout = io.TextIOWrapper(out, encoding="utf-8")
            sys.stderr = io.TextIOWrapper(err, encoding="utf-8")
            root = typer.main.get_command(app_for(argv)) if pruned else whole
            try:
                code = root.main(argv, prog_name=PROG, standalone_mode=False)
            except SystemExit as exit_:  # pragma: no cover - the root group returns its code
                code = exit_.code
            sys.stdout.flush()
            sys.stderr.flush()
            results.append((out.getvalue().decode(), err.getvalue().decode(), int(code or 0)))
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        for name, value in (("COLUMNS", saved[2]), ("OPENCLAW_PROFILE", saved[3])):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return results


HELP_TEXTS_HEADER = f'''"""Every command's `--help` text as the Typer app prints it 80 columns wide, served by
`cli/helpfast.py` without importing Typer. Generated by `{REGENERATE}`: do not edit;
`tests/test_help_fast.py` fails when it is stale."""

# fmt: off
TEXTS = {{
'''


def help_texts_module() -> str:
    """The source of `cli/help_texts.py`: each command path's `--help` stdout (exit code 0)."""
    import json

    paths = command_paths()
    lines = [HELP_TEXTS_HEADER]
    for path, (out, err, code) in zip(paths, typer_outputs([[*p, "--help"] for p in paths]), strict=True):
        if code != 0 or err:
            raise RuntimeError(f"openclaw {' '.join(path)} --help: exit {code}, stderr {err!r}")
        # a JSON string is a valid Python literal (\\n, \\" and \\uXXXX escapes only)
        key = ", ".join(json.dumps(name) for name in path) + ("," if len(path) == 1 else "")
        lines.append(f"    ({key}): {json.dumps(out)},\n")
    lines.append("}\n# fmt: on\n")
    return "".join(lines)
