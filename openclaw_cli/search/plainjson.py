"""orjson's answers from the standard `json` module, for a process that has not imported orjson yet.

Importing orjson imports dataclasses (with inspect, ast, dis, tokenize), uuid, platform and json:
~63 M instructions, a fifth of a warm `sessions search` command, which parses ten hit lines and
writes one small document. Here both are done by the stdlib, **only where the result is the very
one orjson gives**; anything else returns None (`pretty`) or goes to orjson (`loads`), so the
output is the same bytes either way (tests/test_search_plainjson.py compares them with orjson's).

- `pretty(obj)`: `jsonutil.dumps_pretty`'s text (orjson's OPT_INDENT_2) for dicts with str keys,
  lists, str without lone surrogates, int, finite float, bool and None (exact types); None for
  anything else (the caller then writes it with orjson). Floats are written as orjson writes them
  (Ryu's shortest digits — the ones `repr` gives — in its layout: `2e-6`, `1e+16`, `0.0001`).
- `loads(raw)`: `orjson.loads(raw)`; in a one-shot command (`prefer_stdlib`), for its first page of
  lines while orjson is not imported, `json.loads` when the text has nothing the two read
  differently (NaN/Infinity, escaped surrogates, 19+ digit numbers, 3-digit exponents, a BOM,
  invalid UTF-8, deep nesting: orjson decides those)."""

from __future__ import annotations

import sys

from openclaw_cli.lazyre import lazy_pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# where orjson and the stdlib may read a line differently, or do: orjson refuses NaN/Infinity, lone
# surrogates, integers beyond 64 bits and numbers beyond the double range. A number token follows
# `:`, `[` or `,` (or starts the text); the same characters inside a string only send the line to
# orjson, as does an escaped surrogate pair
_DIFFERENT = lazy_pattern(
    globals(),
    "_DIFFERENT",
    r"(?:^|[:\[,])\s*(?:-?(?:NaN|Infinity)|-?[0-9][0-9.]{18}|-?[0-9][0-9.]*[eE][-+]?[0-9]{3})"
    r"|\\u[dD][89a-fA-F]",
)


def _float_text(value: float) -> str:
    """orjson's text of a finite float: Ryu's shortest digits (repr's) in its layout."""
    text = repr(value)
    if text in ("0.0", "-0.0"):
        return text
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    point = len(whole) + (int(exponent) if exponent else 0) - (len(digits) - len(significant))
    significant = significant.rstrip("0") or "0"
    count = len(significant)
    if 0 < point <= 16:
        if count <= point:
            return f"{sign}{significant}{'0' * (point - count)}.0"
        return f"{sign}{significant[:point]}.{significant[point:]}"
    if -5 < point <= 0:
        return f"{sign}0.{'0' * -point}{significant}"
    power = point - 1
    tail = f"e+{power}" if power > 0 else f"e{power}"
    if count == 1:
        return f"{sign}{significant}{tail}"
    return f"{sign}{significant[0]}.{significant[1:]}{tail}"


class _Unsupported(Exception):
    pass


def _no_surrogate(text: str) -> None:
    """Raise _Unsupported for a text with a lone surrogate (orjson refuses it; jsonutil escapes it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Unsupported from None


def _write(obj: Any, indent: str, out: list[str], quote: Any) -> None:
    kind = type(obj)
    if kind is str:
        if not obj.isascii():
            _no_surrogate(obj)
        out.append(quote(obj))
    elif kind is dict:
        if not obj:
            out.append("{}")
            return
        inner = indent + "  "
        out.append("{\n")
        first = True
        for key, value in obj.items():
            if type(key) is not str:
                raise _Unsupported
            if not key.isascii():
                _no_surrogate(key)
            if not first:
                out.append(",\n")
            first = False
            out.append(inner)
            out.append(quote(key))
            out.append(": ")
            _write(value, inner, out, quote)
        out.append("\n")
        out.append(indent)
        out.append("}")
    elif kind is list:
        if not obj:
            out.append("[]")
            return
        inner = indent + "  "
        out.append("[\n")
        first = True
        for value in obj:
            if not first:
                out.append(",\n")
            first = False
            out.append(inner)
            _write(value, inner, out, quote)
        out.append("\n")
        out.append(indent)
        out.append("]")
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(obj))  # beyond 64 bits jsonutil writes the same digits
    elif kind is float:
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise _Unsupported
        out.append(_float_text(obj))
    else:
        raise _Unsupported


def _stdlib_json() -> tuple[Any, Any]:
    """(a string's JSON text, `json.loads` of a str) as the `json` package gives them, from its C
    accelerator `_json` when there is one: the very functions `json.encoder` / `json.decoder` take
    from it, without importing the package (its modules compile six patterns and build the default
    encoder and decoder: ~4.6 M instructions of a search command). Without `_json`, the package's."""
    global _STDLIB
    if _STDLIB is None:
        try:
            import _json
        except ImportError:
            import json
            from json.encoder import encode_basestring

            _STDLIB = (encode_basestring, json.loads)
        else:
            _STDLIB = (_json.encode_basestring, _decoder(_json.make_scanner))
    return _STDLIB


_STDLIB: tuple[Any, Any] | None = None
_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE's characters


class _DecoderContext:
    """The attributes `_json.make_scanner` reads from a `json.JSONDecoder()` (the defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    def __init__(self) -> None:
        self.parse_constant = {
            "-Infinity": float("-inf"),
            "Infinity": float("inf"),
            "NaN": float("nan"),
        }.__getitem__


def _decoder(make_scanner: Any) -> Any:
    scan_once = make_scanner(_DecoderContext())

    def loads(text: str) -> Any:
        """`json.loads(text)` (`JSONDecoder.decode`): whitespace, one value, whitespace; ValueError
        for anything else (its JSONDecodeError is one)."""
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan_once(text, start)
        except StopIteration:
            raise ValueError("Expecting value") from None
        if text[end:].strip(_WHITESPACE):
            raise ValueError("Extra data")
        return value

    return loads


def pretty(obj: Any) -> str | None:
    """`jsonutil.dumps_pretty(obj)` by the stdlib, or None when `obj` holds anything else than
    the plain kinds this writes exactly as orjson does."""
    encode_basestring = _stdlib_json()[0]
    out: list[str] = []
    try:
        _write(obj, "", out, encode_basestring)
    except (_Unsupported, RecursionError):
        return None
    return "".join(out)


DECLINED = object()  # `stdlib_loads`: orjson is to read it


def stdlib_loads(raw: bytes) -> Any:
    """`orjson.loads(raw)`'s value by `json.loads`, or DECLINED for a line the two might read
    differently (orjson then decides, error included)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return DECLINED
    if text.startswith("\ufeff") or _DIFFERENT.search(text):
        return DECLINED
    try:
        return _stdlib_json()[1](text)
    except (ValueError, RecursionError):
        return DECLINED


# lines `loads` may still read by the stdlib in this process (`prefer_stdlib`): 0 in a library or
# Gateway process, where orjson's import pays for itself (the stdlib reads a long tool result
# ~2x slower, and checks it first)
_stdlib_lines = 0


def prefer_stdlib(lines: int) -> None:
    """A one-shot command: read up to `lines` lines by the stdlib while orjson is not imported
    (a page of hits; beyond, importing orjson once costs less than reading them slowly)."""
    global _stdlib_lines
    _stdlib_lines = lines


def loads(raw: bytes) -> Any:
    """`orjson.loads(raw)`: by the stdlib for a line both read alike while `prefer_stdlib`'s budget
    lasts and orjson is not imported, else by orjson. Raises ValueError (orjson.JSONDecodeError is
    one) where orjson does."""
    global _stdlib_lines
    if _stdlib_lines > 0 and "orjson" not in sys.modules:
        _stdlib_lines -= 1
        value = stdlib_loads(raw)
        if value is not DECLINED:
            return value
    import orjson

    return orjson.loads(raw)
