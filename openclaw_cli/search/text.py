"""What a transcript line contributes to the search index, and the tokenizer rules shared by the
query parser and the snippet highlighter.

`extract(obj)` gives (messageId, role, timestamp ms, text) for a message line. For user and
assistant messages the text is exactly what OpenClaw 2026.9.6 puts in `session_transcript_fts`
(string content or `text`, trimmed; else the non-blank text/input_text/output_text blocks joined
by newlines); we add, on their own lines, tool calls (name and arguments, where paths and ids
live) and tool results (role `tool`), which OpenClaw does not index.
"""

from __future__ import annotations

import re
import unicodedata

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

ROLES = ("user", "assistant", "tool")
_TEXT_BLOCKS = ("text", "input_text", "output_text")
_CALL_BLOCKS = ("toolCall", "tool_use", "function_call", "toolUse")

# SQLite's unicode61 tokenizer: token characters are letters, numbers (and private-use code
# points); everything else separates tokens. `remove_diacritics 2` folds accents, then lowercase.
TOKEN_RE = re.compile(r"[^\W_]+|[\ue000-\uf8ff]+", re.UNICODE)
ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")  # the same rule over ASCII text, a cheaper scan


def fold(text: str) -> str:
    """Case and diacritics folded as unicode61 with remove_diacritics 2 (close enough for
    highlighting; the index itself is SQLite's)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(fold(text))


_orjson_dumps: Any = None  # orjson.dumps, bound on first use (an import statement per call costs)


def _call_piece(block: dict[str, Any]) -> str:
    """A tool call's name and arguments (JSON when structured), space-joined; "" when neither."""
    global _orjson_dumps
    name = block.get("name")
    args = block.get("arguments", block.get("input"))
    if isinstance(args, dict | list):
        if _orjson_dumps is None:
            import orjson

            _orjson_dumps = orjson.dumps
        try:
            args = _orjson_dumps(args).decode("utf-8")
        except TypeError:
            args = None
    if not isinstance(args, str):
        args = ""
    if isinstance(name, str) and name:
        return f"{name} {args}" if args else name
    return args


def _blocks_text(content: list[Any], calls: list[str] | None) -> str | None:
    """The non-blank text/input_text/output_text blocks joined by newlines (None: none), one pass
    over `content`; with `calls` (an assistant's), its tool calls' pieces appended to it too."""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in _TEXT_BLOCKS:
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                parts.append(text)
        elif calls is not None and kind in _CALL_BLOCKS:
            piece = _call_piece(block)
            if piece:
                calls.append(piece)
    return "\n".join(parts) if parts else None


def _message_text(message: dict[str, Any], calls: list[str] | None = None) -> str | None:
    """OpenClaw's text of a user/assistant message; an assistant's tool calls (when its content is
    a list of blocks) are gathered into `calls` in the same pass."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    text = message.get("text")
    if isinstance(text, str):
        if calls is not None and isinstance(content, list):
            _blocks_text(content, calls)
        return text.strip() or None
    if not isinstance(content, list):
        return None
    return _blocks_text(content, calls)


def _tool_result_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        body = content.strip()
    elif isinstance(content, list):
        if len(content) == 1:  # the usual one text block: no generator and join for it
            block = content[0]
            only = block.get("text") if isinstance(block, dict) else None
            body = only if isinstance(only, str) and only.strip() else ""
        else:
            body = "\n".join(
                block["text"]
                for block in content
                if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].strip()
            )
    else:
        body = ""
    name = message.get("toolName")
    head = name if isinstance(name, str) and name else ""
    text = f"{head}\n{body}" if head and body else (body or head)
    return text or None


# datetime.fromisoformat, bound on first use: an import statement per call costs more than the parse
_fromisoformat: Any = None
# the last string timestamp parsed and its value: a turn's lines (the assistant's, its tool
# results) mostly carry the same one, one after another
_last_stamp: tuple[str, int | None] = ("", None)


def parse_timestamp(value: Any) -> int | None:
    if value.__class__ is not str:  # a string first: what transcripts mostly carry
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return int(value) if value == value and abs(value) < 1e16 else None
        if not isinstance(value, str):
            return None
    if value:
        global _fromisoformat, _last_stamp
        last = _last_stamp
        if value == last[0]:
            return last[1]
        if _fromisoformat is None:  # datetime only once a string timestamp is met (not at import)
            from datetime import datetime

            _fromisoformat = datetime.fromisoformat
        try:
            found: int | None = int(_fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            found = None
        _last_stamp = (value, found)
        return found
    return None


def extract(
    obj: Any, line_no: int, fallback_ts: int = 0, *, timestamp: bool = True
) -> tuple[str, str, int, str] | None:
    """(messageId, role, timestamp, text) of a message line worth indexing, else None. Lines
    without an id (pre-v3 transcripts) get `#<line number>`. `timestamp=False`: the line's time
    is not parsed (`fallback_ts` stands for it), for a caller that has it already (a hit read
    back: parsing an ISO string imports datetime, ~5 M instructions of a search command)."""
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role == "assistant":
        calls: list[str] = []
        text = _message_text(message, calls)
        if calls:
            text = "\n".join([text, *calls]) if text else "\n".join(calls)
        role_out = role
    elif role == "user":
        text = _message_text(message)
        role_out = role
    elif role in ("toolResult", "tool"):
        text = _tool_result_text(message)
        role_out = "tool"
    else:
        return None
    if not text:
        return None
    raw_id = obj.get("id")
    message_id = (raw_id.strip() if isinstance(raw_id, str) else "") or f"#{line_no}"
    if not timestamp:
        return message_id, role_out, fallback_ts, text
    ts = parse_timestamp(obj.get("timestamp"))
    if ts is None:
        ts = parse_timestamp(message.get("timestamp"))
    return message_id, role_out, ts if ts is not None else fallback_ts, text
