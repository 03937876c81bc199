"""The `openclaw` executable (and `python -m openclaw_cli`): the fast path for the commands it
serves (`cli/fast.py`, no Typer import), else the Typer app (`cli/main.py`)."""

from __future__ import annotations

import sys


def main() -> None:
    from openclaw_cli.cli.fast import dispatch

    code = dispatch(sys.argv[1:])
    if code is None:
        from openclaw_cli.cli.main import main as typer_main

        typer_main()
        return
    sys.exit(code)
