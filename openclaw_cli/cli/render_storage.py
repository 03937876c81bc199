"""Text of `openclaw storage`: bar charts of the report's figures. On a colour terminal the bars
are drawn by Rich; piped or under NO_COLOR they are plain `#` bars (the same lines, no escapes)."""

from __future__ import annotations

from typing import Any

BAR = 28


def human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _bar(part: int, whole: int) -> str:
    filled = 0 if whole <= 0 else round(BAR * part / whole)
    return "#" * filled + "." * (BAR - filled)


def _section(title: str, rows: list[tuple[str, int]], whole: int) -> list[str]:
    if not rows:
        return []
    width = max(len(label) for label, _ in rows)
    out = [title]
    for label, value in rows:
        share = 0 if whole <= 0 else 100 * value / whole
        out.append(f"  {label:<{width}}  {_bar(value, whole)}  {human(value):>10}  {share:5.1f}%")
    return out


def storage_lines(doc: dict[str, Any]) -> list[str]:
    """Plain lines (the piped and NO_COLOR output; Rich draws the same sections on a terminal)."""
    from openclaw_cli.output import sanitize_text as s

    total = doc["total"]["diskBytes"]
    lines = [f"State: {s(doc['root'])} — {human(total)} on disk ({doc['total']['files']} files)"]
    for title, rows, whole in _sections(doc):
        lines += ["", *_section(title, [(s(label), v) for label, v in rows], whole)]
    if doc["topSessions"]:
        lines += ["", "Biggest sessions (event text)"]
        for item in doc["topSessions"]:
            lines.append(
                f"  {human(item['bytes']):>10}  {s(item['key'])}  [{item['kind']}, {item['events']} events, {item['agentId']}]"
            )
    if doc["topEvents"]:
        lines += ["", "Biggest single events"]
        for item in doc["topEvents"]:
            lines.append(
                f"  {human(item['bytes']):>10}  {s(item['key'])} line {item['line']} ({item['class']})"
            )
    lines += ["", "Reclaimable"]
    for item in doc["reclaimable"]:
        lines.append(
            f"  {human(item['bytes']):>10}  {item['setting']}: {item['what']}"
            f" ({item['files']} {'files' if item.get('reason', 'files') in _FILE_REASONS else 'sessions'})"
        )
    return lines


_FILE_REASONS = frozenset(
    {"files", "unreferenced artifacts", "tombstones (retention)", "disk budget files", "disk budget"}
)


def _sections(doc: dict[str, Any]) -> list[tuple[str, list[tuple[str, int]], int]]:
    total = doc["total"]["diskBytes"]
    containers = [(c["container"], c["diskBytes"]) for c in doc["byContainer"] if c["diskBytes"]]
    containers.sort(key=lambda r: -r[1])
    agents = sorted(((a["agentId"], a["diskBytes"]) for a in doc["byAgent"]), key=lambda r: -r[1])
    kinds = [(k["kind"], k["bytes"]) for k in doc["byKind"] if k["bytes"]]
    payload = [(p["class"], p["bytes"]) for p in doc["byPayload"] if p["bytes"]]
    payload += [(f"  media {m['mimeType']}", m["bytes"]) for m in doc["media"]]
    logical = sum(v for _, v in kinds)
    return [
        ("By container (disk)", containers, total),
        ("By agent (disk)", agents, total),
        ("By session kind (event text)", kinds, logical),
        ("By payload (event text)", payload, sum(p["bytes"] for p in doc["byPayload"])),
    ]


def print_rich(doc: dict[str, Any]) -> None:
    """The sections as Rich bar charts on stdout (a colour terminal only)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from openclaw_cli.output import sanitize_text as s

    console = Console(highlight=False)
    console.print(
        Text.assemble(("State ", "bold"), s(doc["root"]), f" — {human(doc['total']['diskBytes'])} on disk")
    )
    for title, rows, whole in _sections(doc):
        if not rows:
            continue
        table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
        table.add_column("what", style="bold")
        table.add_column("bar")
        table.add_column("size", justify="right")
        table.add_column("share", justify="right", style="dim")
        for label, value in rows:
            filled = 0 if whole <= 0 else round(BAR * value / whole)
            bar = Text("█" * filled, style="cyan") + Text("░" * (BAR - filled), style="dim")
            share = 0 if whole <= 0 else 100 * value / whole
            table.add_row(s(label), bar, human(value), f"{share:.1f}%")
        console.print(table)
    rest = storage_lines(doc)
    start = next(
        (
            i
            for i, line in enumerate(rest)
            if line in ("Biggest sessions (event text)", "Biggest single events", "Reclaimable")
        ),
        len(rest),
    )
    for line in rest[start:]:
        console.print(Text(line))
