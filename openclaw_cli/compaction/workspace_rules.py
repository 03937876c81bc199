"""Workspace critical rules for a safeguard summary (§4.9 step 3, `postCompactionSections`).

The configured section names are looked up among the H2/H3 headings of the workspace `AGENTS.md`
(case-insensitive, surrounding whitespace, emphasis and a trailing colon ignored). A section runs
from its heading to the next heading of the same or a higher level. Lines inside fenced code
blocks (``` or ~~~) are never headings, but they stay in the section's text (a rule may be a
command). Sections come in the configured order, each once; the result is capped at 2000
characters and wrapped in `<workspace-critical-rules>`. If the configured names are OpenClaw's
default pair (`Session Startup`, `Red Lines`) and neither exists, the legacy pair (`Every
Session`, `Safety`) is used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

DEFAULT_SECTIONS = ("Session Startup", "Red Lines")
LEGACY_SECTIONS = ("Every Session", "Safety")
MAX_CHARS = 2000
TRUNCATED_MARKER = "\n...[truncated]..."
AGENTS_FILE = "AGENTS.md"
MAX_FILE_BYTES = 1 << 20  # a larger AGENTS.md is read up to here

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _norm(name: str) -> str:
    return " ".join(name.strip().strip("*_`").rstrip(":").split()).casefold()


def extract_sections(markdown: str, names: Sequence[str]) -> list[str]:
    """The text (heading line included) of each H2/H3 section of `markdown` named in `names`, in
    the order of `names`; a name without a section is skipped."""
    wanted = [_norm(n) for n in names if isinstance(n, str) and n.strip()]
    if not wanted:
        return []
    found: dict[str, str] = {}
    lines = markdown.splitlines()
    fence: str | None = None
    current: str | None = None
    level = 0
    body: list[str] = []

    def close() -> None:
        if current is not None and current not in found:
            found[current] = "\n".join(body).strip()

    for line in lines:
        marker = _FENCE.match(line)
        if marker:
            token = marker.group(1)
            if fence is None:
                fence = token[0] * 3
            elif token.startswith(fence):
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                depth = len(heading.group(1))
                if current is not None and depth <= level:
                    close()
                    current = None
                name = _norm(heading.group(2))
                if current is None and depth in (2, 3) and name in wanted and name not in found:
                    current, level, body = name, depth, []
        if current is not None:
            body.append(line)
    close()
    return [found[n] for n in dict.fromkeys(wanted) if found.get(n)]


def critical_rules_section(markdown: str, names: Sequence[str]) -> str:
    """`\\n\\n<workspace-critical-rules>\\n…\\n</workspace-critical-rules>` or "" (nothing matched)."""
    sections = extract_sections(markdown, names)
    if not sections and [_norm(n) for n in names] == [_norm(n) for n in DEFAULT_SECTIONS]:
        sections = extract_sections(markdown, LEGACY_SECTIONS)
    if not sections:
        return ""
    text = "\n\n".join(sections)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS - len(TRUNCATED_MARKER)].rstrip() + TRUNCATED_MARKER
    return f"\n\n<workspace-critical-rules>\n{text}\n</workspace-critical-rules>"


def read_critical_rules(workspace_dir: str | os.PathLike[str] | None, names: Sequence[str] | None) -> str:
    """The section for `<workspace_dir>/AGENTS.md`; "" when no names are configured or the file is
    missing or unreadable (compaction never fails for it)."""
    if not names or workspace_dir is None:
        return ""
    path = os.path.join(os.fspath(workspace_dir), AGENTS_FILE)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES)
    except OSError:
        return ""
    return critical_rules_section(data.decode("utf-8", "replace"), names)
