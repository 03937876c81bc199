"""JSON helpers: orjson on hot paths (spec D18), stdlib fallback for what orjson rejects."""

from __future__ import annotations

import json
from typing import Any

import orjson


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson rejects integers beyond 64 bits; the stdlib accepts them (but not NaN/Infinity,
        # which are not JSON either). Any other error is real.
        return json.loads(data, parse_constant=_reject_constant)


def dumps_compact(obj: Any) -> str:
    """Compact JSON like JS `JSON.stringify(obj)`."""
    try:
        return orjson.dumps(obj).decode()
    except TypeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def dumps_pretty(obj: Any) -> str:
    """2-space indented JSON like JS `JSON.stringify(obj, null, 2)` (no trailing newline)."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return json.dumps(obj, indent=2, ensure_ascii=False)


JSONDecodeError = (orjson.JSONDecodeError, json.JSONDecodeError, ValueError)
