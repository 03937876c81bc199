"""Agent-id normalisation and session-id validation (no id may produce a path outside its dir)."""

from __future__ import annotations

import re
import unicodedata

from openclaw_cli.errors import InvalidIdError
from openclaw_cli.lazyre import lazy_pattern

DEFAULT_AGENT_ID = "main"
# `^[a-z0-9][a-z0-9_-]{0,63}$` under re.IGNORECASE, as sets: its classes hold the ASCII letters and
# digits (and `_`, `-`) plus the four code points that case-fold onto ASCII letters (İ ı ſ K);
# compiling the pattern cost ~2.7 M instructions of every command's start
_ID_FIRST = frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\u0130\u0131\u017f\u212a"
)
_ID_REST = _ID_FIRST | frozenset("_-")


def _valid_agent_id(value: str) -> bool:
    """Whether `value` is a valid agent id as `^[a-z0-9][a-z0-9_-]{0,63}$` (re.IGNORECASE) matches
    it: `$` also matches before a final newline."""
    if value.endswith("\n"):
        value = value[:-1]
    return 0 < len(value) <= 64 and value[0] in _ID_FIRST and _ID_REST.issuperset(value)


_AGENT_ID_BAD_RUN = lazy_pattern(globals(), "_AGENT_ID_BAD_RUN", r"[^a-z0-9_-]+")
_CHECKPOINT_NAME = lazy_pattern(
    globals(),
    "_CHECKPOINT_NAME",
    r"^(.+)\.checkpoint\.([0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.jsonl$",
    re.IGNORECASE,
)


def normalize_agent_id(raw: str | None, *, strict: bool = False) -> str:
    """OpenClaw's normalizeAgentId: valid ids are lower-cased, others slugged; empty -> main."""
    value = (raw or "").strip()
    if _valid_agent_id(value):
        return value.lower()
    slug = _AGENT_ID_BAD_RUN.sub("-", value.lower()).strip("-")[:64]
    if not slug:
        if strict:
            raise InvalidIdError(f"Invalid agent id: {raw!r}")
        return DEFAULT_AGENT_ID
    return slug


def parse_agent_arg(raw: str, flag: str = "--agent") -> str:
    """An agent id typed on the command line: valid ids are lower-cased; anything else is refused
    (never slugged into another agent's id: `main/../..` is not `main`). The value is shown
    JSON-escaped, so control characters in it are visible instead of being stripped."""
    import json

    value = raw.strip()
    if _valid_agent_id(value):
        return value.lower()
    from openclaw_cli.errors import UsageError

    slug = _AGENT_ID_BAD_RUN.sub("-", value.lower()).strip("-")[:64]
    plain = not any(c in value for c in "/\\.") and value.isprintable()  # no path or control characters
    hint = f' (did you mean "{slug}"?)' if plain and slug and _valid_agent_id(slug) else ""
    raise UsageError(
        f"Invalid agent id {json.dumps(raw)} for {flag}: an agent id is 1-64 letters, digits, "
        f'"_" or "-", starting with a letter or digit{hint}.'
    )


def _is_letter_or_number(ch: str) -> bool:
    return unicodedata.category(ch)[0] in ("L", "N")


def _is_id_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in ("L", "N", "M") or ch in "._-"


def is_valid_session_id(raw: str) -> bool:
    """Current OpenClaw rule: `^[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}._-]{0,127}$`, NFC, `<id>.jsonl` <= 255 bytes,
    not a checkpoint name."""
    if not isinstance(raw, str):
        return False
    value = raw.strip()
    if _ASCII_ID.fullmatch(value):
        return not _CHECKPOINT_NAME.match(f"{value}.jsonl")
    if not value or len(value) > 128 or value != unicodedata.normalize("NFC", value):
        return False
    if not _is_letter_or_number(value[0]) or not all(_is_id_char(c) for c in value[1:]):
        return False
    if len(f"{value}.jsonl".encode()) > 255:
        return False
    return not _CHECKPOINT_NAME.match(f"{value}.jsonl")


_ASCII_LEGACY_ID = lazy_pattern(globals(), "_ASCII_LEGACY_ID", r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}")
_ASCII_ID = lazy_pattern(globals(), "_ASCII_ID", r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_plain_session_id(value: str) -> bool:
    """An ASCII legacy id as it is (no space to strip): `<id>.jsonl` is a plain file name that
    needs no normalising (the transcript-name fast paths' rule, `maintenance.budget._PLAIN_SID`)."""
    return _ASCII_LEGACY_ID.fullmatch(value) is not None


def is_valid_legacy_session_id(raw: str) -> bool:
    """Looser rule used for legacy rows: `^[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}._:@-]*$`, <= 255 chars,
    never `/`, `\\`, `.` or `..`."""
    if not isinstance(raw, str):
        return False
    value = raw.strip()
    if _ASCII_LEGACY_ID.fullmatch(value):  # fast path: almost every real id is ASCII
        return True
    if not value or len(value) > 255 or value in (".", "..") or "/" in value or "\\" in value:
        return False
    if "\x00" in value or not _is_letter_or_number(value[0]):
        return False
    return all(_is_id_char(c) or c in ":@" for c in value[1:])


def validate_session_id(raw: str) -> str:
    if not is_valid_session_id(raw):
        raise InvalidIdError(f"Invalid session ID: {raw}")
    return raw.strip()


def is_checkpoint_name(name: str) -> bool:
    return bool(_CHECKPOINT_NAME.match(name))
