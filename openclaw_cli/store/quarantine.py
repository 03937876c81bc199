"""Quarantined transcript lines (spec D22): a line that is not one JSON object our store can hold
(invalid UTF-8, a NUL byte, truncated JSON, an array, a number beyond float range, ...) is still
stored, in its place, as a wrapper event that keeps the original bytes:

    {"type":"openclaw-cli.quarantined-line","reason":"...","raw":"<the line as text>"}
    {"type":"openclaw-cli.quarantined-line","reason":"...","rawBase64":"..."}   (not UTF-8)

Every reader treats the wrapper as an opaque line (no tree node, no tokens); exports, archives and
the import's validation use the original bytes, so a transcript read back from SQLite equals the
file it was imported from. A line arriving from a file that itself claims the wrapper type is
quarantined too (wrapped), so a wrapper in the database is always one we wrote.
"""

from __future__ import annotations

import base64
from typing import Any, cast

import orjson

QUARANTINE_TYPE = "openclaw-cli.quarantined-line"
PREFIX = '{"type":"openclaw-cli.quarantined-line",'
PREFIX_BYTES = PREFIX.encode()


def reason_for(data: bytes, error: BaseException | None = None) -> str:
    """Why a line could not be stored as an event (stable for the same bytes: used for dedupe)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    if "\x00" in text:
        return "contains a NUL byte"
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        message = str(exc)
        if "infinity" in message or "number" in message.lower() and "range" in message:
            return "holds a number beyond the range of a double"
        return "not valid JSON (truncated or malformed)"
    if not isinstance(obj, dict):
        return f"valid JSON but not an object ({type(obj).__name__})"
    if obj.get("type") == QUARANTINE_TYPE:
        return "uses the reserved quarantine type"
    return str(error) if error is not None else "not storable as an event"


def wrap(data: bytes, reason: str | None = None) -> str:
    """The wrapper event text for the raw line `data` (without its newline)."""
    why = reason or reason_for(data)
    try:
        body: dict[str, Any] = {"type": QUARANTINE_TYPE, "reason": why, "raw": data.decode("utf-8")}
    except UnicodeDecodeError:
        body = {"type": QUARANTINE_TYPE, "reason": why, "rawBase64": base64.b64encode(data).decode("ascii")}
    return orjson.dumps(body).decode("utf-8")


def is_wrapped(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        return text.startswith(PREFIX_BYTES)
    return text.startswith(PREFIX)


def original_bytes(text: str | bytes) -> bytes:
    """The original line of a wrapper (the text itself, encoded, when it is not a wrapper)."""
    if not is_wrapped(text):
        return text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text if isinstance(text, bytes) else text.encode("utf-8")
    if isinstance(obj.get("raw"), str):
        return cast(str, obj["raw"]).encode("utf-8")
    if isinstance(obj.get("rawBase64"), str):
        return base64.b64decode(obj["rawBase64"])
    return text if isinstance(text, bytes) else text.encode("utf-8")


def display_text(text: str) -> str:
    """The original line for display (invalid UTF-8 shown with replacement characters)."""
    return original_bytes(text).decode("utf-8", errors="replace")
