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


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, normalised text) of every heading outside fenced code blocks."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None
    for index, line in enumerate(lines):
        marker = _FENCE.match(line)
        if marker:
            token = marker.group(1)
            if fence is None:
                fence = token[0] * 3
            elif token.startswith(fence):
                fence = None
            continue
        if fence is None:
            heading = _HEADING.match(line)
            if heading:
                out.append((index, len(heading.group(1)), _norm(heading.group(2))))
    return out


def extract_sections(markdown: str, names: Sequence[str]) -> list[str]:
    """The text (heading line included) of the first H2/H3 section of `markdown` for each name in
    `names`, in the order of `names` (a section nested in another one is found too); a name without
    a section is skipped."""
    wanted = list(dict.fromkeys(_norm(n) for n in names if isinstance(n, str) and n.strip()))
    if not wanted:
        return []
    lines = markdown.splitlines()
    headings = _headings(lines)
    out: list[str] = []
    for name in wanted:
        for k, (start, level, text) in enumerate(headings):
            if level in (2, 3) and text == name:
                end = next((i for i, lv, _ in headings[k + 1 :] if lv <= level), len(lines))
                section = "\n".join(lines[start:end]).strip()
                if section:
                    out.append(section)
                break
    return out


def critical_rules_section(markdown: str, names: Sequence[str]) -> str:
    """`\\n\\n<workspace-critical-rules>\\n…\\n</workspace-critical-rules>` or "" (nothing matched)."""
    sections = extract_sections(markdown, names)
    if not sections and [_norm(n) for n in names] == [_norm(n) for n in DEFAULT_SECTIONS]:
        sections = extract_sections(markdown, LEGACY_SECTIONS)
    if not sections:
        return ""
    text = "\n\n".join(sections)
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - len(TRUNCATED_MARKER)].rstrip() + TRUNCATED_MARKER
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
