"""The `openclaw` executable (and `python -m openclaw_cli`): stored help texts for `… --help`
and the version line (`cli/helpfast.py`), the fast path for the commands it serves (`cli/fast.py`), else the Typer app
(`cli/main.py`). Nothing is imported before the argument list says which one runs."""

from __future__ import annotations

import sys


def main() -> None:
    import openclaw_cli

    openclaw_cli.EXECUTABLE = True
    argv = sys.argv[1:]
    if argv and argv[-1] in ("--help", "-h", "--version", "-V"):
        from openclaw_cli.cli.helpfast import serve

        served = serve(argv)
        if served is not None:
            sys.exit(served)
    from openclaw_cli.cli.fast import dispatch

    code = dispatch(argv)
    if code is None:
        from openclaw_cli.cli.main import main as typer_main

        typer_main()
        return
    sys.exit(code)
