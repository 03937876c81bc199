"""`openclaw [COMMAND...] --help` without Typer: the help texts the Typer app prints, generated
into `cli/help_texts.py` by `python scripts/gen_docs.py` and served here byte for byte.

Building the click tree for `--help` costs ~370 M instructions of ~460 M (Typer's import, then
every command's signature evaluated three times); printing a stored text costs none of it
(docs/decisions.md, issue 30, helper startup30). Served only when the Typer app would print
exactly the stored text: the argument list is a known command path and then `--help` or `-h`
(nothing else: an option, `--`, a root option go to the Typer app); the help width is the one the
texts were made at (click: `min(columns, 80) - 2` with columns from COLUMNS, else the terminal on
stdout, else 80); stdout is UTF-8 (click re-encodes otherwise); a subcommand's help runs the root
callback first, so an invalid OPENCLAW_PROFILE (a usage error there) is left to the Typer app.
`openclaw --version` (or `-V`) alone is served the same way. `OPENCLAW_FAST_PATH=0` and
shell-completion mode turn it off, as for `cli/fast.py`.
`tests/test_help_fast.py` compares every path both ways."""

from __future__ import annotations

import os
import sys

HELP_FLAGS = ("--help", "-h")
VERSION_FLAGS = ("--version", "-V")
# the width the stored texts were rendered at: click's max_width 80 minus its 2-column margin
COLUMNS = 80
_COMPLETION_VARS = ("_OPENCLAW_COMPLETE", "_TYPER_COMPLETE_ARGS")


def _columns() -> int:
    """The terminal width as shutil.get_terminal_size (which click's help formatter calls) finds it,
    without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        stdout = sys.__stdout__
        columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80


def help_text(argv: list[str]) -> str | None:
    """The stored help text the Typer app would print for `argv` (or the version line for
    `--version`/`-V` alone, an eager root option: no callback runs), or None when it might print
    something else (then the Typer app runs)."""
    if not argv or argv[-1] not in (*HELP_FLAGS, *VERSION_FLAGS):
        return None
    if os.environ.get("OPENCLAW_FAST_PATH", "").strip() == "0" or any(
        v in os.environ for v in _COMPLETION_VARS
    ):
        return None
    if argv[-1] in VERSION_FLAGS:
        if len(argv) != 1:
            return None
        from openclaw_cli import __version__

        return f"openclaw-cli {__version__}\n"  # cli/main._version
    from openclaw_cli.cli.help_texts import TEXTS

    path = tuple(argv[:-1])
    text = TEXTS.get(path)
    if text is None or _columns() < COLUMNS:
        return None
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if encoding != "utf8" and not text.isascii():
        return None
    if path and "OPENCLAW_PROFILE" in os.environ:
        from openclaw_cli.cli.rootopts import invalid_profile

        if invalid_profile(None) is not None:
            return None  # the root callback's usage error, from the Typer app
    return text


def serve(argv: list[str]) -> int | None:
    """Print the help for `argv` and return the exit code; None: not served."""
    text = help_text(argv)
    if text is None:
        return None
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # as click ends a command whose stdout is gone: exit 1, nothing more said at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
