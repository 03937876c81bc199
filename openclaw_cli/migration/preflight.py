"""Import pre-flight of `sessions.json` (spec D22): values SQLite or a JSON double cannot hold
exactly are found before anything is written and reported with their key and field, and their
entries are stored with their original text, byte for byte:

- integers beyond 64 bits (`10**30`: SQLite's INTEGER is 64-bit, a double rounds it),
- numbers beyond the double range (`1e400`, `10**400`: a double would make them Infinity),
- strings holding a lone UTF-16 surrogate (`"\\ud800"`: not encodable as UTF-8),
- keys that cannot name a session: empty or blank, or holding a NUL or a lone surrogate (stored
  under a substitute key, the original stays in the archived `sessions.json`).

The fast path costs one regex scan of the file: only files where orjson failed or a suspicious
number token appears are parsed again, entry by entry, keeping every number as written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # CPython's; typeshed omits it
from typing import Any, cast

from openclaw_cli.jsonutil import INT_MIN, RawNumber, exact_float, exact_int

# number tokens of 19+ digits or with a 3+ digit exponent, in value position
_SUSPECT = re.compile(rb"[:\[,]\s*-?\d{19,}(?=\s*[,\]}.eE])|\d[eE][+-]?\d{3,}(?=\s*[,\]}])")
_WS = re.compile(r"[ \t\n\r]*")
# `_WS` matches at every index (if only ""): its match is never None
_ws = cast("Callable[[str, int], re.Match[str]]", _WS.match)
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64_MAX = 2**63 - 1


@dataclass
class Finding:
    path: str  # e.g. `updatedAt`, `origin.threadId`, `compactionCheckpoints[0].at`
    literal: str
    why: str


@dataclass
class EntryText:
    """The original text of one entry that must be stored as written, and why."""

    text: str
    findings: list[Finding] = field(default_factory=list)


# digits -> "0", e/E -> "e", +/- -> "+", the rest -> " ": candidates are found with bytes.find (C
# speed) and confirmed by the regex on a small window (a regex over a whole 12 MB file costs 0.2 s)
_CLASSES = bytes(
    ord("0")
    if chr(c).isdigit() and c < 128
    else ord("e")
    if c in b"eE"
    else ord("+")
    if c in b"+-"
    else ord(".")
    if c == ord(".")
    else ord(" ")
    for c in range(256)
)
_NEEDLES = (b"0" * 19, b"0e000", b"0e+000")
_TOKEN_CHARS = frozenset(b"0e+.")
_SPACE = frozenset(b" \t\n\r\f\v")  # what `\s` takes in a bytes pattern
_CLOSERS = frozenset(b",]}")


def exponent_may_close(raw: bytes, end: int, limit: int) -> bool:
    """Whether `_SUSPECT`'s exponent form can end a token whose run of number characters ends at
    `end` (searched up to `limit`): its lookahead wants spaces then `,`, `]` or `}` after the digits, and
    inside the run every byte is a number character, so only the run's end can be followed so.
    Most runs of an exponent needle are not numbers (a UUID's hex `1e234`), and they are passed
    over without the regex; every other token in the window has a needle and a run of its own."""
    while end < limit and raw[end] in _SPACE:
        end += 1
    return end < limit and raw[end] in _CLOSERS


# the same test fed chunk by chunk by the member-wise reader (index_stream.ExactProbe)
NEEDLE_CLASSES, NEEDLES, SUSPECT, TOKEN_CHARS = _CLASSES, _NEEDLES, _SUSPECT, _TOKEN_CHARS
DIGITS_NEEDLE = _NEEDLES[0]  # the other needles are exponents (`exponent_may_close`)


def needs_exact_pass(raw: bytes) -> bool:
    """Whether the file may hold a number token orjson cannot read exactly (whether `_SUSPECT`
    matches anywhere in it)."""
    classes = raw.translate(_CLASSES)
    for needle in _NEEDLES:
        start = 0
        while (i := classes.find(needle, start)) != -1:
            end = i + len(needle)
            while end < len(classes) and classes[end] in _TOKEN_CHARS:  # the whole number, however long
                end += 1
            if (
                needle is DIGITS_NEEDLE or exponent_may_close(raw, end, min(len(raw), end + 24))
            ) and _SUSPECT.search(raw, max(0, i - 24), end + 24):
                return True
            start = end
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def top_level_entries(text: str) -> list[tuple[str, int, int, Any]]:
    """(key, start, end, exact value) of every member of the top-level object, in file order;
    numbers kept as written. Raises ValueError when the text is not one JSON object."""
    decoder = json.JSONDecoder(parse_float=exact_float, parse_int=exact_int, parse_constant=_reject_constant)
    out: list[tuple[str, int, int, Any]] = []
    i = _ws(text, 0).end()
    if text[i : i + 1] != "{":
        raise ValueError("not a JSON object")
    i = _ws(text, i + 1).end()
    if text[i : i + 1] == "}":
        return out
    while True:
        if text[i : i + 1] != '"':
            raise ValueError(f"expected a key at character {i}")
        key, i = scanstring(text, i + 1, True)
        i = _ws(text, i).end()
        if text[i : i + 1] != ":":
            raise ValueError(f"expected ':' at character {i}")
        start = _ws(text, i + 1).end()
        value, end = decoder.raw_decode(text, start)
        out.append((key, start, end, value))
        i = _ws(text, end).end()
        if text[i : i + 1] == ",":
            i = _ws(text, i + 1).end()
            continue
        if text[i : i + 1] == "}":
            end = _ws(text, i + 1).end()
            if end != len(text):  # what JSON.parse (and every reader) refuses, the import refuses too
                raise ValueError(f"unexpected content after the document at character {end}")
            return out
        raise ValueError(f"expected ',' or '}}' at character {i}")


def _findings(value: Any, path: str, out: list[Finding]) -> None:
    if isinstance(value, RawNumber):
        literal = value.raw
        is_int = not any(c in literal for c in ".eE")
        if value in (float("inf"), float("-inf")):
            out.append(Finding(path, literal, "is beyond the range of a double (it would read as Infinity)"))
        elif is_int and literal != "-0" and not INT_MIN <= int(literal) <= _INT64_MAX:
            out.append(
                Finding(
                    path, literal, "is an integer beyond 64 bits (SQLite cannot hold it; a double rounds it)"
                )
            )
        return
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        out.append(
            Finding(
                path, str(value), "is an integer beyond 64 bits (SQLite cannot hold it; a double rounds it)"
            )
        )
        return
    if isinstance(value, str):
        if _SURROGATE.search(value):
            out.append(
                Finding(
                    path, json.dumps(value)[:60], "holds a lone UTF-16 surrogate (not encodable as UTF-8)"
                )
            )
        return
    if isinstance(value, dict):
        for k, v in value.items():
            name = k if not _SURROGATE.search(k) else json.dumps(k)
            _findings(v, f"{path}.{name}" if path else name, out)
    elif isinstance(value, list):
        for n, v in enumerate(value):
            _findings(v, f"{path}[{n}]", out)


def exact_entries(raw: bytes) -> tuple[dict[str, Any], dict[str, EntryText]]:
    """Every entry parsed with numbers as written, and the entries that must keep their text.
    Raises ValueError (DocumentError for non-UTF-8) when the file is not one JSON object."""
    from openclaw_cli.jsonutil import decode_document

    text = decode_document(raw)  # a BOM or invalid UTF-8: the same wording as every reader
    entries: dict[str, Any] = {}
    kept: dict[str, EntryText] = {}
    for key, start, end, value in top_level_entries(text):
        entries[key] = value  # a later duplicate key wins, as in JSON.parse
        found: list[Finding] = []
        _findings(value, "", found)
        if found:
            kept[key] = EntryText(text[start:end], found)
        else:
            kept.pop(key, None)
    return entries, kept


def key_problem(key: str) -> str | None:
    """Why a `sessions.json` key cannot be stored as a session key, or None."""
    if not key.strip():
        return "is empty" if not key else "is blank"
    if "\x00" in key:
        return "holds a NUL character"
    if _SURROGATE.search(key):
        return "holds a lone UTF-16 surrogate (not encodable as UTF-8)"
    return None


def substitute_key(key: str, agent_id: str) -> str:
    """A stable, valid key for a row whose own key cannot be stored (derived from its JSON text)."""
    digest = hashlib.sha256(json.dumps(key).encode("ascii")).hexdigest()[:16]
    return f"agent:{agent_id}:invalid-key:{digest}"


def shown_key(key: str) -> str:
    """The key as JSON text (ASCII-escaped: safe in reports, manifests and terminals)."""
    return json.dumps(key)
