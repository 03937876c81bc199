"""Durations and byte sizes as OpenClaw parses them (`maintenance.md` §1).

Error texts are OpenClaw's, word for word, so users can search for them. Numbers are turned into
text the way JavaScript's `String(n)` does before parsing (`30` -> "30", `1.5` -> "1.5").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

MAX_SAFE_INTEGER = 2**53 - 1

DURATION_UNITS_MS: dict[str, int] = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
}

# [0-9], not \d: Python's \d also matches non-ASCII digits, JavaScript's does not.
# Kept as strings: `re` compiles (and caches) them on first use, so importing this module on
# every command costs nothing for configs without durations or sizes.
_DURATION_SINGLE = r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?"
_DURATION_SEGMENT = r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)"
_BARE_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_BYTE_SIZE = r"([0-9]+(?:\.[0-9]+)?)([a-z]+)?"
# The `ms` package OpenClaw delegates each token to refuses inputs longer than 100 characters.
_MS_PACKAGE_MAX_LEN = 100

DURATION_HINT = "Use values like 500ms, 30s, 5m, 2h, or 1h30m."
BYTE_SIZE_HINT = "Use values like 512kb, 10mb, 1gb, or 500."


def js_string(value: object) -> str:
    """`String(value)` as JavaScript would print a JSON value (enough for config scalars)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        # Python writes 1e-07 / 1e+21; JavaScript writes 1e-7 / 1e+21.
        return re.sub(r"e([+-])0*(\d)", r"e\1\2", text)
    return str(value)


def _js_trim(text: str) -> str:
    """`String.prototype.trim` also strips U+FEFF, which Python's str.strip() keeps."""
    return text.strip().strip("\ufeff").strip()


def js_round(value: float) -> float:
    """`Math.round`: halves round towards +infinity (Python's round() rounds halves to even).
    Not `floor(x + 0.5)`: from 2**52 on that sum rounds up an odd integer (found by a property test)."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


def _is_safe_integer(value: float) -> bool:
    return math.isfinite(value) and float(value).is_integer() and abs(value) <= MAX_SAFE_INTEGER


def _invalid_duration(raw: str, reason: str | None = None) -> ValueError:
    shown = f'"{raw}"' if _js_trim(raw) else "empty value"
    prefix = f"Invalid duration ({reason}): {shown}." if reason else f"Invalid duration: {shown}."
    return ValueError(f"{prefix} {DURATION_HINT}")


def _invalid_byte_size(raw: str, reason: str | None = None) -> ValueError:
    shown = f'"{raw}"' if _js_trim(raw) else "empty value"
    prefix = f"Invalid byte size ({reason}): {shown}." if reason else f"Invalid byte size: {shown}."
    return ValueError(f"{prefix} {BYTE_SIZE_HINT}")


def _duration_token_ms(raw: str, number: str, unit: str) -> float:
    if len(number) + len(unit) > _MS_PACKAGE_MAX_LEN:
        raise _invalid_duration(raw)
    value = float(number) * DURATION_UNITS_MS[unit]
    if not math.isfinite(value) or value < 0:
        raise _invalid_duration(raw)
    return value


def _round_safe(raw: str, value: float, error: Callable[[str], Exception]) -> int:
    if not math.isfinite(value):
        raise error(raw)
    rounded = js_round(value)
    if not _is_safe_integer(rounded):
        raise error(raw)
    return int(rounded)


def parse_duration_ms(value: object, default_unit: str = "ms") -> int:
    """Parse `"30d"`, `"1h30m"`, `"2h0.5m"`, `30` (in `default_unit`) into milliseconds.

    Raises ValueError with OpenClaw's message for empty, malformed, negative or unsafe values.
    """
    if default_unit not in DURATION_UNITS_MS:
        raise ValueError(f"unknown default duration unit {default_unit!r}")
    raw = js_string(value)
    text = _js_trim(raw).lower()
    if not text:
        raise _invalid_duration(raw, "empty")
    single = re.fullmatch(_DURATION_SINGLE, text)
    if single:
        unit = single.group(2) or default_unit
        return _round_safe(raw, _duration_token_ms(raw, single.group(1), unit), _invalid_duration)
    total = 0.0
    consumed = 0
    for match in re.finditer(_DURATION_SEGMENT, text):
        if match.start() != consumed:
            raise _invalid_duration(raw, "each composite segment needs a unit")
        total += _duration_token_ms(raw, match.group(1), match.group(2))
        consumed = match.end()
    if consumed == 0 or consumed != len(text):
        # maintenance.md §1.1 pins `"1h30"` to the "needs a unit" message (OpenClaw's own code
        # gives the plain one there); a unitless number after valid segments is exactly that case.
        if consumed and re.fullmatch(_BARE_NUMBER, text[consumed:]):
            raise _invalid_duration(raw, "each composite segment needs a unit")
        raise _invalid_duration(raw)
    return _round_safe(raw, total, _invalid_duration)


def parse_byte_size(value: object, default_unit: str = "b") -> int:
    """Parse `"2gb"`, `"1.5gb"`, `"20mb"`, `1048576` into bytes (binary multiples)."""
    raw = js_string(value)
    text = _js_trim(raw).lower()
    if not text:
        raise _invalid_byte_size(raw, "empty")
    match = re.fullmatch(_BYTE_SIZE, text)
    if not match:
        raise _invalid_byte_size(raw)
    number = float(match.group(1))
    if not math.isfinite(number) or number < 0:
        raise _invalid_byte_size(raw)
    unit = (match.group(2) or default_unit).lower()
    multiplier = BYTE_UNITS.get(unit)
    if multiplier is None:
        raise _invalid_byte_size(raw, f'unknown unit "{unit}"')
    return _round_safe(raw, number * multiplier, _invalid_byte_size)


def format_duration_ms(ms: int) -> str:
    """Shortest exact `<n><unit>` spelling of a millisecond count (for status and examples)."""
    if ms == 0:
        return "0ms"
    for unit in ("d", "h", "m", "s"):
        size = DURATION_UNITS_MS[unit]
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def format_byte_size(n: int) -> str:
    """Shortest exact binary spelling of a byte count (`2147483648` -> `2gb`)."""
    if n == 0:
        return "0b"
    for unit in ("tb", "gb", "mb", "kb"):
        size = BYTE_UNITS[unit]
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}b"
