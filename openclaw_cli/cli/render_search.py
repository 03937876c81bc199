"""Text output of `sessions search` (as upstream's proposed CLI): per hit
`<key>  <role>  <ISO time>  score <n>` (plus `[source]` for an archive), then the snippet
indented, matches highlighted on a terminal; then `N match(es).` or
`No matching sessions found for "<q>".`"""

from __future__ import annotations

from openclaw_cli.cli.term import stdout_printer
from openclaw_cli.clock import iso_ms
from openclaw_cli.output import sanitize_text

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

_LIVE = ("legacy", "sqlite", "schema23", "schema24", "gateway")


def _iso(ms: Any) -> str:
    try:
        return iso_ms(int(ms))
    except (TypeError, ValueError, OverflowError, OSError):
        return "-"


def _highlighted(text: str, query: Any, printer: Any) -> str:
    if not printer.color or query is None:
        return text
    from openclaw_cli.search.snippet import highlights

    out, at = [], 0
    for start, end in highlights(text, query):
        if start < at:
            continue
        out.append(text[at:start])
        out.append(printer.paint(text[start:end], "bold archive"))
        at = end
    out.append(text[at:])
    return "".join(out)


def search_lines(doc: dict[str, Any], query_text: str, *, fixed: bool = False) -> list[str]:
    from openclaw_cli.errors import UsageError
    from openclaw_cli.search.query import parse

    results = [r for r in doc.get("results", []) if isinstance(r, dict)]
    if not results:
        return [f'No matching sessions found for "{sanitize_text(query_text)}".']
    printer = stdout_printer()
    try:
        query = parse(query_text, fixed=fixed)
    except UsageError:
        query = None
    lines: list[str] = []
    for hit in results:
        key = hit.get("sessionKey") or f"(session {hit.get('sessionId')})"
        score = hit.get("score")
        head = (
            f"{sanitize_text(key)}  {sanitize_text(hit.get('role'))}  {_iso(hit.get('timestamp'))}  "
            f"score {score:.2f}"
            if isinstance(score, int | float)
            else f"{sanitize_text(key)}"
        )
        source = hit.get("source")
        if source and source not in _LIVE:
            head += f"  [{sanitize_text(source)}]"
        lines.append(printer.paint(head, "bold") if printer.color else head)
        snippet = sanitize_text(hit.get("snippet") or "").replace("\n", " ")
        lines.append("  " + _highlighted(snippet, query, printer))
    count = len(results)
    lines.append(
        f"{count} match{'es' if count != 1 else ''}."
        + (" (more not shown; raise --limit)" if doc.get("truncated") else "")
    )
    return lines
