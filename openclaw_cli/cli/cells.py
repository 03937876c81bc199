"""Table cells shared by the text renderers (OpenClaw's formats, compaction-lifecycle.md §6.1,
R6.4.4): ages, token counts, keys elided to a width, terminal widths of text."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from openclaw_cli.output import sanitize_text

KEY_CELL_MAX = 26  # graphemes; longer keys become first 16 + "..." + last 6


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)  # JS Math.round


def format_time_ago(duration_ms: float | None) -> str:
    """R6.1.2: `just now` (< 1 min), `<m>m ago`, `<h>h ago` (< 48 h), `<d>d ago`; each unit rounded
    from the previous one; invalid or negative -> `unknown`."""
    if duration_ms is None or isinstance(duration_ms, bool) or not isinstance(duration_ms, int | float):
        return "unknown"
    if not math.isfinite(duration_ms) or duration_ms < 0:
        return "unknown"
    minutes = _round_half_up(_round_half_up(duration_ms / 1000) / 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes}m ago"
    hours = _round_half_up(minutes / 60)
    if hours < 48:
        return f"{hours}h ago"
    return f"{_round_half_up(hours / 24)}d ago"


def format_time_until(duration_ms: float | None) -> str:
    """The forward counterpart of `format_time_ago` for times ahead: `in 5m`, `in 3h`, `in 2d`;
    `in under a minute` when less than one remains, `now` when it is due or past."""
    if duration_ms is None or isinstance(duration_ms, bool) or not isinstance(duration_ms, int | float):
        return "unknown"
    if not math.isfinite(duration_ms):
        return "unknown"
    if duration_ms <= 0:
        return "now"
    ago = format_time_ago(duration_ms)
    return "in under a minute" if ago == "just now" else "in " + ago.removesuffix(" ago")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 entry`, `2 entries`: the count with the noun in the matching number."""
    if count == 1:
        return f"{count} {noun}"
    if plural_form is None:
        plural_form = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{count} {plural_form}"


def _is_extender(ch: str) -> bool:
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
        or 0xE0100 <= code <= 0xE01EF
    )


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def split_graphemes(text: str) -> list[str]:
    """Approximate extended grapheme clusters: combining marks, variation selectors, emoji
    modifiers and tags extend the previous cluster, ZWJ joins the next character, regional
    indicators pair up, CR LF stays together."""
    if text.isascii() and "\r\n" not in text:
        return list(text)  # fast path: every ASCII character is its own cluster
    clusters: list[str] = []
    for ch in text:
        if clusters:
            prev = clusters[-1]
            joins = (
                _is_extender(ch)
                or prev.endswith("\u200d")
                or (prev == "\r" and ch == "\n")
                or (_is_regional_indicator(ch) and len(prev) == 1 and _is_regional_indicator(prev))
            )
            if joins:
                clusters[-1] = prev + ch
                continue
        clusters.append(ch)
    return clusters


def display_width(text: str) -> int:
    """Terminal columns: wide/fullwidth characters take 2, combining marks 0."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or _is_extender(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def truncate_key(key: str) -> str:
    """Key cell: sanitised; longer than 26 graphemes -> first 16 + `...` + last 6 (EX6.4.a)."""
    clean = sanitize_text(key)
    if len(clean) <= KEY_CELL_MAX:
        return clean  # never more graphemes than code points
    graphemes = split_graphemes(clean)
    if len(graphemes) <= KEY_CELL_MAX:
        return clean
    return "".join(graphemes[:16]) + "..." + "".join(graphemes[-6:])


def row_flags_text(row: dict[str, Any]) -> str:
    """Flags cell (R6.4.4 order, the subset we can fill)."""
    flags: list[str] = []
    for name, label in (
        ("thinkingLevel", "think"),
        ("verboseLevel", "verbose"),
        ("traceLevel", "trace"),
        ("reasoningLevel", "reasoning"),
        ("elevatedLevel", "elev"),
        ("responseUsage", "usage"),
        ("groupActivation", "activation"),
    ):
        if row.get(name):
            flags.append(f"{label}:{row[name]}")
    if row.get("systemSent"):
        flags.append("system")
    if row.get("abortedLastRun"):
        flags.append("aborted")
    if row.get("archived"):
        flags.append("archived")
    if row.get("pinned"):
        flags.append("pinned")
    if row.get("unread"):
        flags.append("unread")
    flags.append(f"visibility:{row.get('visibility', 'shared')}")
    if row.get("sessionId"):
        flags.append(f"id:{row['sessionId']}")
    return " ".join(flags)


def format_token_count(value: float | int | None) -> str:
    """R6.1.1 formatTokenCount."""
    if value is None or not isinstance(value, int | float) or value != value or value in (float("inf"),):
        return "0"
    v = max(0.0, float(value))
    if v < 1000:
        return str(int(round(v)))
    if v < 1_000_000:
        scaled = v / 1000
        text = f"{scaled:.1f}" if v < 10_000 else f"{scaled:.0f}"
        if float(text) < 1000:
            return f"{text}k"
    return f"{v / 1_000_000:.1f}m"


def tokens_cell(row: dict[str, Any]) -> str:
    total = row.get("totalTokens")
    ctx = row.get("contextTokens")
    ctx_text = format_token_count(ctx) if ctx else "?"
    if total is None:
        return f"unknown/{ctx_text} (?%)"
    if ctx and row.get("totalTokensFresh"):
        pct = f"{min(999, round(total / ctx * 100))}%"
    else:
        pct = "?%"
    return f"{format_token_count(total)}/{ctx_text} ({pct})"
