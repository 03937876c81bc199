"""One output module: JSON documents and results on stdout (`emit_json`, `out`), messages on stderr
(`err`), sanitising of stored text, and the Rich console the progress bars draw on (stderr, lazily).
The text renderers' view of the streams (colour, widths) is `cli/term.py`."""

from __future__ import annotations

import os
import sys

from openclaw_cli.lazyre import lazy_pattern

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console

# compiled on first use: a printable text (most) needs neither
_ANSI = lazy_pattern(
    globals(), "_ANSI", r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
_CONTROL = lazy_pattern(globals(), "_CONTROL", r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def sanitize_text(value: Any) -> str:
    """Never pass control characters from stored data to a terminal (D6.8): ANSI sequences are
    removed, newline/CR/tab shown as the two-character escapes, other control characters dropped."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():  # no control character (C0, DEL, C1): nothing below would change it
        return text
    text = _ANSI.sub("", text)
    text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return _CONTROL.sub("", text)


def emit_json(obj: Any) -> None:
    """Print exactly one JSON document (2-space indent, like OpenClaw) on stdout; a document with a
    streamed array (`jsonutil.StreamedArray`) is written as its items are produced."""
    from openclaw_cli.jsonutil import dumps_pretty, is_streamed, write_pretty, write_pretty_bytes

    if is_streamed(obj):
        buffer = _utf8_buffer(sys.stdout)
        if buffer is not None:
            sys.stdout.flush()  # what the text layer holds goes first
            write_pretty_bytes(obj, buffer.write)
        else:
            write_pretty(obj, sys.stdout.write)
    else:
        sys.stdout.write(dumps_pretty(obj) + "\n")
    sys.stdout.flush()


def _utf8_buffer(stream: Any) -> Any:
    """The binary layer of a UTF-8 text stream that writes "\n" as is (POSIX), where bytes from
    orjson are exactly what writing their text would produce; None elsewhere."""
    buffer = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None)
    if buffer is None or not isinstance(encoding, str) or os.name != "posix":
        return None
    import codecs

    try:
        return buffer if codecs.lookup(encoding).name == "utf-8" else None
    except LookupError:
        return None


def err(line: str = "") -> None:
    sys.stderr.write(line + "\n")


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


_console = None


def stderr_console() -> Console:
    """Rich console on stderr; colour off under NO_COLOR or when not a terminal."""
    global _console
    if _console is None:
        from rich.console import Console

        # Not a terminal (pipes, logs, CI): render tables 120 columns wide like OpenClaw's, not 80.
        width = None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 120
        _console = Console(stderr=True, no_color=no_color(), highlight=False, soft_wrap=True, width=width)
    return _console
