"""What every command shares: error handling, the exit-code mapping, JSON vs text output, the
streams (spec D19: results on stdout; hints, warnings and errors on stderr) and the config
warnings said once per process.

No Typer at import time: the fast path (`cli/fast.py`) runs `sessions --json` through `run` without
it. A command ends with an exit code by raising `typer.Exit` (`command_exit`), which imports Typer
only then (an error or a partial failure)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from openclaw_cli.errors import ExitCode, OpenClawError

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any, TypeVar

    import typer

    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import StatePaths

    T = TypeVar("T")


def command_exit(code: int) -> BaseException:
    """The exception that ends a command with `code` (`typer.Exit`, as every command raises)."""
    import typer

    return typer.Exit(code)


def exit_code_of(error: BaseException) -> int | None:
    """The code of a `typer.Exit`, None for any other exception (no Typer loaded: none can be one)."""
    typer = sys.modules.get("typer")
    if typer is not None and isinstance(error, typer.Exit):
        return int(error.exit_code)
    return None


def debug_enabled() -> bool:
    return os.environ.get("OPENCLAW_DEBUG", "").strip() not in ("", "0", "false")


def fail(error: OpenClawError, *, json_mode: bool) -> None:
    """Report an expected error: the JSON envelope on stdout under --json, text on stderr always."""
    if json_mode:
        from openclaw_cli.output import emit_json

        emit_json(error.to_json())
    from openclaw_cli.output import sanitize_text

    message = "\n".join(sanitize_text(line) for line in error.message.splitlines()) or error.message
    _say_painted("Error:", "error", message)
    raise command_exit(int(error.exit_code))


def _say_painted(label: str, style: str, text: str) -> None:
    """`label text` on stderr: wrapped first (plain text), then the label painted."""
    from openclaw_cli.cli.term import fit_lines, table_width
    from openclaw_cli.output import err

    lines = fit_lines([f"{label} {text}"], table_width(sys.stderr))
    for i, line in enumerate(lines):
        err(_paint_stderr(label, style) + line[len(label) :] if i == 0 else line)


def _paint_stderr(text: str, style: str) -> str:
    from openclaw_cli.cli.term import color_enabled, paint

    return paint(text, style, enabled=color_enabled(sys.stderr))


def say_hints(hints: list[str] | tuple[str, ...]) -> None:
    """Hints (D2's migration hint, the local-fallback note, …) on stderr, one line each."""
    from openclaw_cli.output import sanitize_text

    for hint in hints:
        _say_painted("Hint:", "hint", sanitize_text(hint))


def say_warning(text: str) -> None:
    from openclaw_cli.output import sanitize_text

    _say_painted("Warning:", "warning", sanitize_text(text))


def print_lines(lines: list[str] | tuple[str, ...]) -> None:
    """Result lines on stdout (prose wrapped to the terminal's width on a terminal)."""
    from openclaw_cli.cli.term import fit_lines, table_width

    lines = fit_lines(lines, table_width(sys.stdout))
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def say_error(text: str) -> None:
    """An error line on stderr (red on a terminal), for failures a command reports and goes past."""
    from openclaw_cli.output import sanitize_text

    _say_painted("Error:", "error", sanitize_text(text))


_WARNED: set[str] = set()


def warn_config(warnings: list[str] | tuple[str, ...]) -> None:
    """Config warnings (unknown keys inside the sections we model, legacy keys, …) on stderr, each
    once per process, whichever command loaded the config (spec D10)."""
    from openclaw_cli.output import sanitize_text

    for warning in warnings or []:
        if warning in _WARNED:
            continue
        _WARNED.add(warning)
        _say_painted("Config warning:", "warning", sanitize_text(warning))


def load_context(typer_ctx: typer.Context | None = None, **kwargs: Any) -> Context:
    """`ops.context.Context.load` for this invocation's state dir (`--profile`), with the config's
    warnings said on stderr."""
    from openclaw_cli.ops.context import Context

    cx = Context.load(state_paths(typer_ctx), **kwargs)
    warn_config(cx.config.warnings)
    return cx


def run(fn: Callable[[], T], *, json_mode: bool = False) -> T:
    """Run a command body; map typed errors to exit codes; never show a traceback unless
    OPENCLAW_DEBUG=1."""
    from openclaw_cli import interrupts

    _pending_notes(say=False)
    try:
        with interrupts.handled():
            result = fn()
        _pending_notes(say=True)
        return result
    except interrupts.InterruptRequested:
        # an operation without its own account of the state: every step it took is crash-safe
        from openclaw_cli.errors import Interrupted

        fail(
            Interrupted(
                f"Interrupted at a safe point; nothing is half-written. Run `{interrupts.rerun_command()}` "
                "again to finish."
            ),
            json_mode=json_mode,
        )
    except OpenClawError as error:
        if debug_enabled():
            import traceback

            traceback.print_exc()
        fail(error, json_mode=json_mode)
    except KeyboardInterrupt:
        raise command_exit(int(ExitCode.INTERRUPTED)) from None
    except BrokenPipeError:
        raise command_exit(int(ExitCode.ERROR)) from None
    except Exception as error:  # unexpected: still no traceback by default
        if exit_code_of(error) is not None:  # a command's own exit (typer.Exit): not an error
            _pending_notes(say=True)
            raise
        if debug_enabled():
            import traceback

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


def _pending_notes(*, say: bool) -> None:
    """The delegation notes of this command ("ran locally"): said once it has run, dropped when it
    failed with an error or before a new command (the module is loaded only by commands that can
    delegate: the fast path never imports it)."""
    delegation = sys.modules.get("openclaw_cli.cli.delegation")
    notes = getattr(delegation, "PENDING_NOTES", None)
    if not notes:
        return
    if say:
        say_hints(list(notes))
    notes.clear()


def state_paths(ctx: typer.Context | None = None) -> StatePaths:
    from openclaw_cli.paths import resolve_paths

    profile = None
    root = ctx.find_root() if ctx is not None else None
    if root is not None and isinstance(root.obj, dict):
        profile = root.obj.get("profile")
    return resolve_paths(profile=profile)


def echo_json(obj: Any) -> None:
    from openclaw_cli.output import emit_json

    emit_json(obj)


def enable_verbose() -> None:
    """`--verbose`: the `openclaw` logger's records (which stores are opened, their kind, how long
    reading took) on stderr."""
    import logging

    logger = logging.getLogger("openclaw")
    if not any(getattr(h, "_openclaw_verbose", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[openclaw] %(message)s"))
        handler._openclaw_verbose = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
