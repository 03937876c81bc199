"""Session titles as OpenClaw 2026.9.6's Gateway derives them (issue 22 §5; read from its
`derive-goal-session-title` and `session-utils-core`, facts only): a row that nothing names
(label, group title, stored display name, origin label) is shown under a title taken from its
transcript's first user message; `derivedTitle` (when a listing asks `includeDerivedTitles`) is
label, else display name, else subject, else that title.

The title: whitespace collapsed; nothing for a host envelope (`<environment_context>`, an
AGENTS.md preamble, …) or a slash command; the first sentence that starts with a task verb
("fix …", "write …"), else the whole text; its first letter upper-cased; at most 60 characters
(cut at the last space when that keeps more than 60 % of them, then "…"). Not done: OpenClaw also
strips inbound channel metadata blocks before this; our transcripts' user text is taken as written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

MAX_LEN = 60
_ENVELOPES = (
    "# agents.md instructions for ",
    "<environment_context>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<plugins_instructions>",
    "<recommended_plugins>",
    "<external_openclaw_",
    "openclaw runtime context",
)
_TASK_VERBS = frozenset(
    [
        "add",
        "analyze",
        "build",
        "check",
        "compare",
        "create",
        "debug",
        "design",
        "draft",
        "explain",
        "find",
        "fix",
        "give",
        "help",
        "implement",
        "investigate",
        "list",
        "make",
        "plan",
        "prepare",
        "recommend",
        "recover",
        "rename",
        "resume",
        "review",
        "summarize",
        "test",
        "update",
        "write",
    ]
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LEADING_QUOTES = re.compile(r"^[\"'`(\[{]+")
_FIRST_USER_SCAN = 200  # lines read at most to find the first user message


def goal_title(first_user_message: str | None, max_len: int = MAX_LEN) -> str | None:
    if not first_user_message:
        return None
    text = " ".join(first_user_message.split())
    if not text or text.lower().startswith(_ENVELOPES) or text.startswith("/"):
        return None
    goal = text
    for sentence in _SENTENCE_END.split(text):
        words = _LEADING_QUOTES.sub("", sentence).split()
        if words and words[0].lower() in _TASK_VERBS:
            goal = sentence.strip()
            break
    if not goal:
        return None
    if goal[0] != goal[0].upper() and goal[0] == goal[0].lower():
        goal = goal[0].upper() + goal[1:]
    return _truncate(goal, max_len)


def _truncate(text: str, max_len: int) -> str:
    if len(text) <= max_len:
        return text
    cut = text[: max_len - 1]
    space = cut.rfind(" ")
    if space > max_len * 0.6:
        return f"{cut[:space]}…"
    return f"{cut}…"


def first_user_text(store: SessionStore, entry: dict[str, Any]) -> str | None:
    """The text of the first user message of the session's transcript (None: none found early)."""
    session_id = entry.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None
    try:
        for count, line in enumerate(store.iter_transcript(session_id, entry=entry, issues=[])):
            if count >= _FIRST_USER_SCAN:
                return None
            text = _user_text(line.obj)
            if text is not None:
                return text
    except Exception:  # a transcript we cannot read names no row
        return None
    return None


def _user_text(obj: Any) -> str | None:
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def derived_title(entry: dict[str, Any], display_name: str | None, first_user: str | None) -> str | None:
    """OpenClaw's `derivedTitle`: label, display name, subject, else the first message's title."""
    for value in (entry.get("label"), display_name, entry.get("displayName"), entry.get("subject")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return goal_title(first_user)
