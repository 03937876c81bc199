"""What the text renderers need to know about the streams they write to (spec D19): results go to
stdout, progress, hints, warnings and errors to stderr; colour only on a terminal and never with
`NO_COLOR` (root `--no-color` sets it); tables fit a terminal's width and are never cut when the
stream is a pipe or a file. Plain ANSI SGR codes: no Rich import on the result path."""

from __future__ import annotations

import os
import sys

from openclaw_cli.lazyre import lazy_pattern

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import TextIO

# SGR codes of the few styles the renderers use (named by meaning, not by colour)
STYLES: dict[str, str] = {
    "error": "31",  # red
    "warning": "33",  # yellow
    "success": "32",  # green
    "hint": "36",  # cyan
    "dim": "2",
    "bold": "1",
    "remove": "31",  # cleanup actions that delete a row
    "archive": "33",  # cleanup actions that archive a row
    "keep": "32",
    "kind": "35",  # session kinds
    "header": "1",
}


def is_terminal(stream: TextIO | None = None) -> bool:
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def color_enabled(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, never with NO_COLOR (any value, as no-color.org says) or TERM=dumb."""
    if os.environ.get("NO_COLOR") is not None and os.environ.get("NO_COLOR") != "":
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def table_width(stream: TextIO | None = None, *, wide: bool = False) -> int | None:
    """The width tables must fit: the terminal's (COLUMNS wins, as in every Unix tool), or None
    (no limit) when the stream is not a terminal or `--wide` asked for full cells."""
    stream = sys.stdout if stream is None else stream
    if wide or not is_terminal(stream):
        return None
    import shutil

    columns = shutil.get_terminal_size((80, 24)).columns
    return max(40, columns)


def paint(text: str, style: str | None, *, enabled: bool) -> str:
    """`text` wrapped in the style's SGR codes when colour is enabled (else unchanged)."""
    if not enabled or not style or not text:
        return text
    codes = ";".join(STYLES[name] for name in style.split() if name in STYLES)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


class Printer:
    """What a renderer needs to know about the stream its lines go to: colour, table width, and
    whether cells are shown whole."""

    def __init__(self, stream: TextIO | None = None, *, wide: bool = False):
        self.stream = stream
        self.wide = wide

    @property
    def _stream(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stdout

    @property
    def color(self) -> bool:
        return color_enabled(self._stream)

    @property
    def width(self) -> int | None:
        return table_width(self._stream, wide=self.wide)

    @property
    def full_cells(self) -> bool:
        """Full keys (no eliding) when not on a terminal, or with `--wide`."""
        return self.width is None

    def paint(self, text: str, style: str | None) -> str:
        return paint(text, style, enabled=self.color)


def stdout_printer(*, wide: bool = False) -> Printer:
    return Printer(None, wide=wide)


BOX_CHARS = "┌├│└"
_SGR = lazy_pattern(globals(), "_SGR", r"\x1b\[[0-9;]*m")  # the colour codes `paint` writes


def fit_lines(lines: list[str] | tuple[str, ...], width: int | None) -> list[str]:
    """Prose lines wrapped at word boundaries to `width` (continuations indented two more than
    the line), so a terminal never wraps them mid-word; table lines (already fitted) and all
    lines without a width (pipes, files: one message per line for grep) are kept as they are."""
    if width is None:
        return list(lines)
    import textwrap

    from openclaw_cli.cli.cells import display_width

    out: list[str] = []
    for text in lines:
        for line in text.split("\n"):
            # measured without our colour codes: colour never changes where a line wraps
            visible = _SGR.sub("", line) if "\x1b" in line else line
            if (
                display_width(visible) <= width
                or line[:1] in BOX_CHARS
                or display_width(visible) != len(visible)
            ):
                out.append(line)  # fits, a table line, or wide characters textwrap cannot measure
                continue
            line = visible  # a wrapped line loses its colour, never its layout
            indent = line[: len(line) - len(line.lstrip(" "))]
            out.extend(
                textwrap.wrap(
                    line,
                    width,
                    initial_indent="",
                    subsequent_indent=indent + "  ",
                    break_long_words=True,
                    break_on_hyphens=False,
                )
                or [line]
            )
    return out
