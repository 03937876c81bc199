"""Record how a running Gateway (OpenClaw's, to make fixtures) refuses bad params of every method we
serve: tests/fixtures/gateway-2026.9.6-params (README there).

    record_params.py PORT TOKEN OUTDIR [--state-dir DIR]

Writes OUTDIR/params.requests.json (the cases, built here from our own schemas in `ops/params.py`
so every declared property is hit) and OUTDIR/params.jsonl (the exchanges, through
`scripts/record_gateway.py` on one admin/read/write connection, no subscription). Every case holds
at least one fault, so no request is ever carried out: each one only tests the param check.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from openclaw_cli.ops import params as p
from openclaw_cli.ops.methods import METHODS

# open schemas (anything is accepted: nothing to refuse) and our own methods (no real counterpart)
SKIPPED = {"system-presence", "sessions.get", "storage.report"}
# the key a valid request would name (the cases never reach a handler: each has a fault)
KEY = "agent:main:main"


def _valid(schema: p.Schema) -> Any:
    """A value `schema` accepts (for the required properties beside a fault)."""
    if isinstance(schema, p.Str):
        if schema.enum:
            return schema.enum[0]
        if schema.pattern and "\\d{4}" in schema.pattern:
            return "2026-01-01"
        if schema.pattern:
            return "a"
        return KEY
    if isinstance(schema, p.Enum):
        return schema.values[0]
    if isinstance(schema, p.Int | p.Num):
        return max(1, int(schema.minimum or 0))
    if isinstance(schema, p.Bool):
        return True
    if isinstance(schema, p.Const):
        return schema.value
    if isinstance(schema, p.Arr):
        return [_valid(schema.items)]
    if isinstance(schema, p.Obj):
        return {key: _valid(schema.props[key]) for key in schema.required} or (
            {"pinned": True} if "pinned" in schema.props else {}
        )
    if isinstance(schema, p.AnyOf):
        return _valid(schema.options[0])
    if isinstance(schema, p.NotCombined):
        return _valid(schema.inner)
    return None


def _faults(schema: p.Schema) -> list[Any]:
    """Values `schema` refuses, one per keyword it has (type first)."""
    out: list[Any] = []
    if isinstance(schema, p.Str):
        out.append(5)
        if schema.min_len:
            out.append("")
        if schema.max_len is not None:
            out.append("x" * (schema.max_len + 1))
            # graphemes, not UTF-16 units or code points: within the limit, so only the other fault shows
            out.append("e\u0301" * schema.max_len)
            out.append("\U0001f44d" * (schema.max_len + 1))
        if schema.pattern or schema.enum:
            out.append("2026-1-1\n")
    elif isinstance(schema, p.Enum):
        out += [5, "nope"]
    elif isinstance(schema, p.Int):
        out += ["1", 1.5, True]
        if schema.minimum is not None:
            out += [schema.minimum - 1, schema.minimum - 0.5]
        if schema.maximum is not None:
            out += [schema.maximum + 1, 10**12]
    elif isinstance(schema, p.Num):
        out += ["1", None]
        if schema.minimum is not None:
            out.append(schema.minimum - 1)
    elif isinstance(schema, p.Bool):
        out += ["true", 0]
    elif isinstance(schema, p.Const):
        out += [None, 7]
    elif isinstance(schema, p.Arr):
        out += ["x", [5, "", None]]
        if schema.min_items:
            out.append([])
        if schema.max_items is not None:
            out.append([_valid(schema.items)] * (schema.max_items + 1))
    elif isinstance(schema, p.Obj):
        out += [5, [], {"bogus": 1}]
        if schema.required:
            out.append({})
    elif isinstance(schema, p.Rec):
        out += [5, {"a": 5, "b/c~d": "x"}]
    elif isinstance(schema, p.AnyOf):
        out += [5, {"x": 1}, ""]
    return out


def cases() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, row in METHODS.items():
        if name in SKIPPED:
            continue
        schema = row.params
        obj = schema.inner if isinstance(schema, p.NotCombined) else schema
        out += [(name, "x"), (name, [1]), (name, None), (name, {"bogus": 1, "zzz": 2, "a/b~c": 3})]
        out.append((name, {f"extra{i}": i for i in range(9)}))
        if not isinstance(obj, p.Obj):  # chat.startup: a union of two objects
            out += [(name, {}), (name, {"sessionKey": "", "shortId": 5, "bogus": 1})]
            continue
        base = {key: _valid(obj.props[key]) for key in obj.required}
        if obj.required:
            out.append((name, {}))
            out.append((name, {"bogus": 1}))
        # every fault of every property, the required ones present and valid
        for key, prop in obj.props.items():
            for bad in _faults(prop):
                case = {**base, key: bad}
                if not p.validate(schema, case):  # a value the schema takes: add a fault elsewhere
                    case["bogus"] = 1
                out.append((name, case))
        # several faults at once: all required missing, two unknown keys, every property wrong-typed
        several: dict[str, Any] = {"zz": 1, "bogus": 2}
        typed = {key: faults[0] for key, prop in obj.props.items() if (faults := _faults(prop))}
        out.append((name, {**several, **typed}))
        out.append((name, {"bogus": 1, **dict(list(typed.items())[:3])}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("token")
    parser.add_argument("outdir")
    parser.add_argument("--state-dir")
    args = parser.parse_args()
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    requests = outdir / "params.requests.json"
    requests.write_text(json.dumps([[name, params] for name, params in cases()], ensure_ascii=False) + "\n")
    extra = ["--state-dir", args.state_dir] if args.state_dir else []
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("record_gateway.py")),
            str(args.port),
            args.token,
            str(outdir / "params.jsonl"),
            str(requests),
            "--wait",
            "0.02",
            *extra,
        ],
        check=True,
    )


if __name__ == "__main__":
    main()
