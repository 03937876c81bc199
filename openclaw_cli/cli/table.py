"""Box-drawn tables that fit: at a terminal's width every row stays on one line (no wrapping) and no
column shrinks below its minimum (cells that do not fit are elided in the middle, so both the
start and the end of a key stay readable); without a width (a pipe, a file, `--wide`) cells are
never cut. Widths count terminal columns (wide characters take two); colour is applied after
layout, so escape codes never count."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from openclaw_cli.cli.cells import display_width, split_graphemes

ELLIPSIS = "..."


@dataclass(frozen=True)
class Column:
    header: str
    min_width: int = 6
    # lower shrinks first when the table is too wide (Flags before Key before Age)
    shrink_order: int = 50
    style: Callable[[str], str | None] | None = None
    align: str = "left"
    # a column that would be narrower than this is left out instead (0: never left out); the
    # table then says which columns `--wide` would show
    drop_below: int = 0


def elide_middle(text: str, width: int) -> str:
    """`text` cut to `width` columns by removing its middle (`agent:main:te...up:123`)."""
    if display_width(text) <= width:
        return text
    if width <= len(ELLIPSIS) + 1:
        return _take(split_graphemes(text), width)
    room = width - len(ELLIPSIS)
    graphemes = split_graphemes(text)
    head = _take(graphemes, (room + 1) // 2)
    tail = _take(list(reversed(graphemes)), room - display_width(head), reverse=True)
    return head + ELLIPSIS + tail


def _take(graphemes: list[str], width: int, *, reverse: bool = False) -> str:
    out: list[str] = []
    used = 0
    for g in graphemes:
        w = display_width(g)
        if used + w > width:
            break
        out.append(g)
        used += w
    if reverse:
        out.reverse()
    return "".join(out)


def fit_widths(columns: Sequence[Column], natural: list[int], width: int | None) -> list[int]:
    """Column widths: the natural ones when they fit (or no width is given), else narrowed in
    `shrink_order`, each never below its minimum (nor below what it needs)."""
    widths = list(natural)
    if width is None:
        return widths
    frame = 3 * len(columns) + 1  # "│ " + " │ " between + " │"
    excess = sum(widths) + frame - width
    order = sorted(range(len(columns)), key=lambda i: (columns[i].shrink_order, -widths[i]))
    for i in order:
        if excess <= 0:
            break
        floor = min(widths[i], max(1, columns[i].min_width))
        give = min(excess, widths[i] - floor)
        if give > 0:
            widths[i] -= give
            excess -= give
    return widths


def render_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None = None, color: bool = False
) -> list[str]:
    """The table's lines. Cells must already be sanitised (D6.8)."""
    natural = [display_width(c.header) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            w = display_width(cell)
            if w > natural[i]:
                natural[i] = w
    widths = fit_widths(columns, natural, width)
    dropped = [i for i, c in enumerate(columns) if c.drop_below and widths[i] < min(c.drop_below, natural[i])]
    if dropped:
        keep = [i for i in range(len(columns)) if i not in dropped]
        lines = render_table(
            [columns[i] for i in keep], [[row[i] for i in keep] for row in rows], width=width, color=color
        )
        names = ", ".join(columns[i].header for i in dropped)
        return [*lines, f"({names} hidden to fit; --wide shows all)"]
    return _draw(columns, rows, widths, color)


def _draw(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], widths: list[int], color: bool
) -> list[str]:
    from openclaw_cli.cli.term import paint

    def cell_text(text: str, i: int, style: str | None) -> str:
        text = elide_middle(text, widths[i])
        pad = " " * (widths[i] - display_width(text))
        body = paint(text, style, enabled=color)
        return pad + body if columns[i].align == "right" else body + pad

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right

    header = "│ " + " │ ".join(cell_text(c.header, i, "header") for i, c in enumerate(columns)) + " │"
    lines = [rule("┌", "┬", "┐"), header, rule("├", "┼", "┤")]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            style_of = columns[i].style
            cells.append(cell_text(cell, i, style_of(cell) if style_of is not None else None))
        lines.append("│ " + " │ ".join(cells) + " │")
    lines.append(rule("└", "┴", "┘"))
    return lines
