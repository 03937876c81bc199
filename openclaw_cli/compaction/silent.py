"""Silent-reply tokens (§5.6): `NO_REPLY` and the heartbeat ack `HEARTBEAT_OK`.

Detection is case-insensitive. Exact silent payloads (R5.6.1-2), streaming prefixes that must be
held back (R5.6.3), a glued leading token (R5.6.4) and trailing tokens in mixed content (R5.6.5).
"""

from __future__ import annotations

import json
import re

SILENT_REPLY_TOKEN = "NO_REPLY"
HEARTBEAT_TOKEN = "HEARTBEAT_OK"

_REASONING_BLOCK = re.compile(
    r"^\s*<\s*(?:(?:antml|mm):)?(think|thinking|thought|antthinking)\b[^>]*>.*?<\s*/\s*(?:(?:antml|mm):)?\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
_BARE_REASONING_HEAD = re.compile(r"^\s*(?:think|thinking|thought|analysis|reasoning)\s*\n", re.IGNORECASE)
_QUIET_INTENT = re.compile(
    r"^(?:i(?:'ll| will| am going to|'m going to) (?:stay (?:quiet|silent)|not (?:reply|respond))|"
    r"i won't (?:reply|respond)|no reply (?:is )?needed|staying (?:quiet|silent))[.!]?\s*",
    re.IGNORECASE,
)


def _token_run(token: str) -> str:
    t = re.escape(token)
    return rf"{t}(?:\s+{t})*"


def _is_token_only(text: str, token: str) -> bool:
    return re.fullmatch(rf"\s*{_token_run(token)}\s*", text, re.IGNORECASE) is not None


def is_silent_reply(text: str | None, token: str = SILENT_REPLY_TOKEN) -> bool:
    """The whole payload is the silent token (R5.6.1-2): one or more tokens with whitespace, a JSON
    string literal or `{"action": token}`, or reasoning blocks followed only by the token (or a short
    "I'll stay quiet" line glued to it)."""
    if not text or not text.strip():
        return False
    if _is_token_only(text, token):
        return True
    stripped = text.strip()
    if stripped[:1] in ('"', "{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, str) and value.strip().upper() == token.upper():
            return True
        if (
            isinstance(value, dict)
            and list(value) == ["action"]
            and isinstance(value["action"], str)
            and value["action"].strip().upper() == token.upper()
        ):
            return True
    rest = stripped
    matched_block = False
    while True:
        block = _REASONING_BLOCK.match(rest)
        if not block:
            break
        matched_block = True
        rest = rest[block.end() :]
    if not matched_block:
        head = _BARE_REASONING_HEAD.match(stripped)
        if not head:
            return False
        # bare "thinking" line: reasoning lines, then a final line that is only the token
        lines = [ln for ln in stripped[head.end() :].splitlines() if ln.strip()]
        return bool(lines) and _is_token_only(lines[-1], token)
    if _is_token_only(rest, token):
        return True
    intent = _QUIET_INTENT.match(rest.strip())
    return intent is not None and _is_token_only(rest.strip()[intent.end() :], token)


def should_hold_stream_prefix(partial: str | None, token: str = SILENT_REPLY_TOKEN) -> bool:
    """R5.6.3: hold a streamed chunk back while it could still become the token."""
    if not partial:
        return False
    text = partial.lstrip()
    if not (2 <= len(text) <= len(token)) or text != text.upper() or not token.startswith(text):
        return False
    return "_" in text or text == token or (token == SILENT_REPLY_TOKEN and text == "NO")


def strip_leading_silent_token(text: str | None, token: str = SILENT_REPLY_TOKEN) -> str | None:
    """R5.6.4: `NO_REPLYThe user…` or `NO_REPLY\\nmore` -> the rest to deliver; None when the text
    does not start with a glued token (including the plain silent payload)."""
    if not text:
        return None
    run = _token_run(token)
    glued = re.match(rf"\s*(?:{re.escape(token)})+(?=[^\W_])", text, re.IGNORECASE)
    if glued:
        return text[glued.end() :]
    newline = re.match(rf"\s*{run}[ \t]*\r?\n\s*(?=\S)", text, re.IGNORECASE)
    if newline:
        return text[newline.end() :]
    return None


def strip_trailing_silent_tokens(text: str | None, token: str = SILENT_REPLY_TOKEN) -> str:
    """R5.6.5: remove a trailing run of tokens preceded by start, whitespace or `*`."""
    if not text:
        return text or ""
    t = re.escape(token)
    pattern = re.compile(rf"(?:(?<=\s)|^|(?<=\*))\**{t}(?:[\s*]+{t})*[\s*]*$", re.IGNORECASE)
    match = pattern.search(text)
    if not match:
        return text
    prefix = text[: match.start()]
    if prefix.endswith("*"):  # `text**NO_REPLY`: the emphasis run belongs to the token
        prefix = prefix.rstrip("*")
    return prefix.rstrip()
