"""What every command shares: error handling, the exit-code mapping, JSON vs text output."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from openclaw_cli.errors import ExitCode, OpenClawError

T = TypeVar("T")


def debug_enabled() -> bool:
    return os.environ.get("OPENCLAW_DEBUG", "").strip() not in ("", "0", "false")


def fail(error: OpenClawError, *, json_mode: bool) -> None:
    """Report an expected error: the JSON envelope on stdout under --json, text on stderr always."""
    if json_mode:
        from openclaw_cli.output import emit_json

        emit_json(error.to_json())
    from openclaw_cli.output import err, sanitize_text

    message = "\n".join(sanitize_text(line) for line in error.message.splitlines()) or error.message
    err(f"Error: {message}")
    raise typer.Exit(int(error.exit_code))


def run(fn: Callable[[], T], *, json_mode: bool = False) -> T:
    """Run a command body; map typed errors to exit codes; never show a traceback unless
    OPENCLAW_DEBUG=1."""
    from openclaw_cli import interrupts

    try:
        with interrupts.handled():
            return fn()
    except typer.Exit:
        raise
    except interrupts.InterruptRequested:
        # an operation without its own account of the state: every step it took is crash-safe
        from openclaw_cli.errors import Interrupted

        fail(Interrupted(f"Interrupted at a safe point; nothing is half-written. Run `{interrupts.rerun_command()}` "
                         "again to finish."), json_mode=json_mode)
    except OpenClawError as error:
        if debug_enabled():
            traceback.print_exc()
        fail(error, json_mode=json_mode)
    except KeyboardInterrupt:
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except BrokenPipeError:
        raise typer.Exit(int(ExitCode.ERROR)) from None
    except Exception as error:  # unexpected: still no traceback by default
        if debug_enabled():
            traceback.print_exc()
        from openclaw_cli.errors import typed_error

        typed = typed_error(error)  # ENOSPC, EACCES, EROFS, EMFILE, ELOOP, SQLite full, overflow
        if typed is not None:
            fail(typed, json_mode=json_mode)
        wrapped = OpenClawError(
            f"{type(error).__name__}: {error}. Set OPENCLAW_DEBUG=1 to include the stack trace.",
            type="internal_error",
        )
        fail(wrapped, json_mode=json_mode)
    raise AssertionError("unreachable")


def state_paths(ctx: typer.Context | None = None):
    from openclaw_cli.paths import resolve_paths

    profile = None
    root = ctx.find_root() if ctx is not None else None
    if root is not None and isinstance(root.obj, dict):
        profile = root.obj.get("profile")
    return resolve_paths(profile=profile)


def echo_json(obj: Any) -> None:
    from openclaw_cli.output import emit_json

    emit_json(obj)


