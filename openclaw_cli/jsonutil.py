"""JSON helpers: orjson on hot paths (spec D18), stdlib fallback for what orjson rejects.

What orjson cannot hold exactly is kept as written (D22): a number whose text a float would change
(`1e400`, `10**400`, `-0`, `1.50`) parses as a `RawNumber` — a float that compares as its value
(±inf beyond the double range) and serialises as its original text — and a lone surrogate is
written back as the `\\uXXXX` escape JSON.stringify writes. Such documents only take the slow path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

from openclaw_cli.lazyre import lazy_module, lazy_pattern

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    import orjson
else:
    orjson = lazy_module(globals(), "orjson")  # imported on first use: a search's output needs none


class RawNumber(float):
    """A number whose JSON text a float would not reproduce: compares as its value (±inf when it
    is beyond the double range), serialises as its original text."""

    __slots__ = ("raw",)
    raw: str

    def __new__(cls, value: float, raw: str) -> RawNumber:
        obj = float.__new__(cls, value)
        obj.raw = raw
        return obj


class RawJson:
    """A JSON value kept as its text because it nests deeper than our parsers go (orjson stops at
    1,024 levels, the stdlib at the interpreter's recursion limit; OpenClaw's JSON.parse goes on):
    compared by its text, written back as that text (an `orjson.Fragment`), never re-encoded."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawJson) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawJson({len(self.text)} chars)"


class JsonObjectText(Mapping[str, "Any"]):  # "Any": no `typing` at run time
    """A JSON object held as its text (already checked to parse to an object) and parsed again on
    each read, not kept parsed: a bulk read of 20,000 entries holds their large, rarely read
    values (OpenClaw's schema-24 snapshots) at the size of their text, not of their objects.
    Read-only; equal to any mapping with the same items; serialised as the object it holds."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def value(self) -> dict[str, Any]:
        value: dict[str, Any] = loads(self.text)
        return value

    def __getitem__(self, key: str) -> Any:
        return self.value()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.value().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.value())

    def __len__(self) -> int:
        return len(self.value())

    def __contains__(self, key: object) -> bool:
        return key in self.value()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonObjectText):
            return other.text == self.text or other.value() == self.value()
        if isinstance(other, Mapping):
            return self.value() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable like dict

    def __repr__(self) -> str:
        return f"JsonObjectText({len(self.text)} chars)"


_TOKEN = lazy_pattern(
    globals(),
    "_TOKEN",
    r'[ \t\n\r]*(?:([{}\[\]:,])|("(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null))",
)


def is_json_text(text: str) -> bool:
    """Whether `text` is one JSON value, checked without recursion (any nesting depth)."""
    stack: list[str] = []
    expect = "value"  # value | value_or_close | key | key_or_close | colon | next | end
    pos = 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            return expect == "end" and not text[pos:].strip(" \t\n\r")
        pos = match.end()
        punct, string = match.group(1), match.group(2)
        if expect in ("value_or_close", "key_or_close") and punct == (
            "]" if expect == "value_or_close" else "}"
        ):
            stack.pop()
        elif expect in ("value", "value_or_close"):
            if punct in ("{", "["):
                stack.append(punct)
                expect = "key_or_close" if punct == "{" else "value_or_close"
                continue
            if punct is not None:
                return False
        elif expect in ("key", "key_or_close"):
            if string is None:
                return False
            expect = "colon"
            continue
        elif expect == "colon":
            if punct != ":":
                return False
            expect = "value"
            continue
        elif expect == "next" and punct == ",":
            expect = "key" if stack[-1] == "{" else "value"
            continue
        elif (
            expect == "next" and punct is not None and punct in "]}" and "[{"["]}".index(punct)] == stack[-1]
        ):
            stack.pop()
        else:
            return False
        expect = "next" if stack else "end"


def loads_or_raw(text: str) -> Any:
    """`loads`, or a `RawJson` for a valid JSON text that only nests too deep for our parsers
    (invalid text raises as `loads` does)."""
    try:
        return loads(text)
    except RecursionError:
        if is_json_text(text):
            return RawJson(text)
        raise ValueError("invalid JSON (nested too deep to say where)") from None


INT_MIN, UINT_MAX = -(2**63), 2**64 - 1  # what orjson reads and writes as an integer


def _float_value(text: str) -> float:
    try:
        return float(text)
    except OverflowError:  # pragma: no cover - float() returns inf instead of raising
        return float("-inf") if text.startswith("-") else float("inf")


def exact_float(text: str) -> float:
    """A float token as parsed by the lossless path (RawNumber when orjson would rewrite it)."""
    value = _float_value(text)
    if orjson.dumps(value).decode() != text:
        return RawNumber(value, text)
    return value


def exact_int(text: str) -> int | float:
    """An integer token as parsed by the lossless path (RawNumber beyond 64 bits or for `-0`)."""
    if text == "-0":
        return RawNumber(-0.0, text)
    value = int(text)
    if not INT_MIN <= value <= UINT_MAX:
        try:
            as_float = float(value)
        except OverflowError:  # beyond the double range (e.g. 10**400)
            as_float = float("-inf") if value < 0 else float("inf")
        return RawNumber(as_float, text)
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class DocumentError(ValueError):
    """The bytes are not a UTF-8 JSON text at all (invalid UTF-8, a byte order mark)."""


BOM_MESSAGE = (
    "starts with a UTF-8 byte order mark (BOM), which JSON (and OpenClaw) does not accept; "
    "remove the first 3 bytes and retry"
)


def decode_document(data: bytes | str) -> str:
    """The text of a JSON document; DocumentError for a BOM or invalid UTF-8 (naming the byte)."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise DocumentError(BOM_MESSAGE)
        return data
    raw = bytes(data)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise DocumentError(BOM_MESSAGE)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"not valid UTF-8: byte {exc.start} ({raw[exc.start : exc.start + 1]!r}) cannot "
            "start or continue a UTF-8 character"
        ) from None


def loads_exact(data: bytes | str) -> Any:
    """The stdlib parser with numbers kept as written (RawNumber); NaN/Infinity literals rejected."""
    return json.loads(
        decode_document(data), parse_float=exact_float, parse_int=exact_int, parse_constant=_reject_constant
    )


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson rejects numbers beyond 64 bits / the double range and lone surrogates, which
        # JSON.parse accepts; NaN/Infinity literals are not JSON for either. Any other error is real.
        return loads_exact(data)


_SURROGATE = lazy_pattern(globals(), "_SURROGATE", "[\ud800-\udfff]")


def _fragment_default(obj: Any) -> Any:
    # a number's own text, short: longer ones go through `_Splicer` (see there why)
    if isinstance(obj, RawNumber) and len(obj.raw) <= 64:
        return orjson.Fragment(obj.raw.encode())
    if isinstance(obj, RawJson) and len(obj.text) <= 64:  # longer (deep) ones: `_Splicer`
        return orjson.Fragment(obj.text.encode())
    if isinstance(obj, JsonObjectText):
        return obj.value()  # orjson writes it as an object (indented like its neighbours)
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def _surrogate_text(value: str) -> bytes:
    """A string with lone surrogates as JSON.stringify writes it (`\\udXXX` escapes)."""
    text = json.dumps(value, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8", "surrogatepass")


def _safe_key(key: Any) -> Any:
    if isinstance(key, str) and _SURROGATE.search(key):
        return key.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return key


def patch_unencodable(obj: Any) -> Any:
    """Replace what orjson refuses (lone surrogates, > 64-bit ints) with JSON fragments written
    the way JSON.stringify writes them. Prefer `dumps_bytes`, which splices such values in
    without fragments (orjson 3.13 corrupts its heap on a large fragment inside a container)."""
    if isinstance(obj, str):
        if _SURROGATE.search(obj):
            return orjson.Fragment(_surrogate_text(obj))
        return obj
    if isinstance(obj, bool | RawNumber):
        return obj
    if isinstance(obj, int) and not INT_MIN <= obj <= UINT_MAX:
        return orjson.Fragment(str(obj).encode())
    if isinstance(obj, dict):
        return {_safe_key(k): patch_unencodable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [patch_unencodable(v) for v in obj]
    return obj


def dumps_bytes(obj: Any, *, option: int = 0) -> bytes:
    """orjson output for anything our parsers produce: RawNumber, > 64-bit ints, lone surrogates,
    and values nested deeper than orjson writes in one call (issue 29 #8) — see `_Splicer`."""
    try:
        return orjson.dumps(obj, default=_fragment_default, option=option)
    except TypeError:
        pass
    return _Splicer(option).dumps(obj)


# orjson writes at most 254 nested containers in one call ("Recursion limit reached") while it reads
# 1,024 (and the stdlib parser, our fallback, about 990): a transcript line or a sessions.json row
# nested 255-1,024 deep was read but could not be written. Containers that deep are written by their
# own call. Every value orjson cannot write itself (those subtrees, raw numbers, big ints, strings
# with lone surrogates) is written as a unique placeholder string and its own bytes are put in its
# place afterwards — not as `orjson.Fragment`: orjson 3.13 overruns its output buffer (heap
# corruption, "double free or corruption") when a fragment of a few KB sits inside a container.
_SPLICE_DEPTH = 200


class _Splicer:
    def __init__(self, option: int) -> None:
        import uuid

        self.option = option
        self.inner = option & ~orjson.OPT_APPEND_NEWLINE
        self.indent = bool(option & orjson.OPT_INDENT_2)
        self.token = uuid.uuid4().hex
        self.pieces: list[bytes] = []

    def _place(self, data: bytes) -> str:
        self.pieces.append(data)
        return f"__openclaw_splice_{self.token}_{len(self.pieces) - 1}__"

    def dumps(self, obj: Any) -> bytes:
        import sys

        limit = sys.getrecursionlimit()
        if limit < 10_000:  # the walk recurses once per level (Python frames, not the C stack)
            sys.setrecursionlimit(10_000)
        try:
            walked = self._walk(obj, 0)
        finally:
            if limit < 10_000:
                sys.setrecursionlimit(limit)
        out = orjson.dumps(walked, option=self.option)
        if not self.pieces:
            return out
        pattern = re.compile(b'"__openclaw_splice_' + self.token.encode() + rb'_(\d+)__"')
        return pattern.sub(lambda m: self.pieces[int(m.group(1))], out)

    def _walk(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self._place(_surrogate_text(value)) if _SURROGATE.search(value) else value
        if isinstance(value, RawNumber):
            return self._place(value.raw.encode())
        if isinstance(value, RawJson):  # a value kept as its text: written back as that text
            return self._place(value.text.encode())
        if isinstance(value, JsonObjectText):
            value = value.value()
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            return value if INT_MIN <= value <= UINT_MAX else self._place(str(value).encode())
        if isinstance(value, dict | list | tuple):
            if depth >= _SPLICE_DEPTH:
                data = dumps_bytes(value, option=self.inner)
                # a pretty subtree is laid out from column 0: shift its lines to where it sits (a
                # JSON string holds no raw newline, so every newline is layout)
                return self._place(data.replace(b"\n", b"\n" + b"  " * depth) if self.indent else data)
            if isinstance(value, dict):
                return {_safe_key(k): self._walk(v, depth + 1) for k, v in value.items()}
            return [self._walk(v, depth + 1) for v in value]
        return value


def dumps_compact(obj: Any) -> str:
    """Compact JSON like JS `JSON.stringify(obj)`."""
    return dumps_bytes(obj).decode()


def dumps_pretty(obj: Any) -> str:
    """2-space indented JSON like JS `JSON.stringify(obj, null, 2)` (no trailing newline)."""
    return dumps_bytes(obj, option=orjson.OPT_INDENT_2).decode()


JSONDecodeError = (json.JSONDecodeError, ValueError)  # orjson.JSONDecodeError is a json.JSONDecodeError


# ---- documents written in pieces (`sessions --json --limit all` on 100,000 rows) -------------------


class StreamedArray:
    """A JSON array whose items are produced while the document is written (`write_pretty`), so
    a listing of every row never holds all of them, nor their text, in memory."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


class Deferred:
    """A document value computed once the streamed array has been written (hints the rows raised);
    None leaves the key out."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], Any]) -> None:
        self.compute = compute


_MARK = "__openclaw_cli_streamed_array__"
_BATCH_HEAD = len(b'{\n  "s": [\n')
_BATCH_TAIL = len(b"\n  ]\n}")
_MARK_BYTES = b'"' + _MARK.encode() + b'"'


def is_streamed(doc: Any) -> bool:
    return isinstance(doc, dict) and any(isinstance(value, StreamedArray) for value in doc.values())


def write_pretty(doc: dict[str, Any], write: Callable[[str], Any], *, batch: int = 256) -> None:
    """Write `dumps_pretty(doc)` and a newline, byte for byte, in pieces: the top-level
    `StreamedArray` value item by item (`batch` items per write), the `Deferred` values after it."""
    write_pretty_bytes(doc, lambda chunk: write(chunk.decode()), batch=batch)


def write_pretty_bytes(doc: dict[str, Any], write: Callable[[bytes], Any], *, batch: int = 256) -> None:
    """`write_pretty` as UTF-8 bytes (every piece ends between two characters): 100,000 rows are
    ~70 MB of text, which a str writer would decode and encode again."""
    keys = list(doc)
    at = next(i for i, key in enumerate(keys) if isinstance(doc[key], StreamedArray))
    name = keys[at]
    head = dumps_bytes({**{key: doc[key] for key in keys[:at]}, name: _MARK}, option=orjson.OPT_INDENT_2)
    write(head[: head.rindex(_MARK_BYTES)])
    # each batch is dumped as the value of a one-key object, which indents its items exactly as
    # they sit in the document (one orjson call per batch, not per item); the wrapper is cut off
    pending: list[Any] = []
    first = True
    for item in doc[name].items:
        pending.append(item)
        if len(pending) >= batch:
            write(b"[\n" if first else b",\n")
            write(dumps_bytes({"s": pending}, option=orjson.OPT_INDENT_2)[_BATCH_HEAD:-_BATCH_TAIL])
            first = False
            pending.clear()
    if pending:
        write(b"[\n" if first else b",\n")
        write(dumps_bytes({"s": pending}, option=orjson.OPT_INDENT_2)[_BATCH_HEAD:-_BATCH_TAIL])
        first = False
    write(b"[]" if first else b"\n  ]")
    rest: dict[str, Any] = {name: _MARK}
    for key in keys[at + 1 :]:
        value = doc[key]
        if isinstance(value, Deferred):
            value = value.compute()
            if value is None:
                continue
        rest[key] = value
    tail = dumps_bytes(rest, option=orjson.OPT_INDENT_2)
    write(tail[tail.index(_MARK_BYTES) + len(_MARK_BYTES) :] + b"\n")
