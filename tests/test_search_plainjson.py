"""`search.plainjson` (issue 26, stop 39): a one-shot `sessions search` reads its hit lines and writes
its document with the stdlib instead of importing orjson (~63 M instructions: dataclasses, inspect,
uuid, platform), only where the result is orjson's own — checked here against orjson itself."""

from __future__ import annotations

import json
import math
import os
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_cli.jsonutil import RawNumber, dumps_pretty
from openclaw_cli.search.plainjson import DECLINED, pretty, stdlib_loads
from tests.conftest import generate_legacy_state, run_cli


def _floats(rng: random.Random, n: int) -> list[float]:
    out = [0.0, -0.0, 1e-5, 1e-4, 2e-6, 1e15, 1e16, 1e17, 0.1, 5e-324, 1.7976931348623157e308, -3.25e-7]
    out += [1.0 / 3, 100.0, 123456789012345.6, 9.999999999999999e15, 12345678901234567.0]
    for _ in range(n):
        out.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        out.append(round(rng.uniform(-50, 50), rng.randint(0, 8)))
        out.append(rng.random() * 10 ** rng.randint(-12, 20))
    return [f for f in out if math.isfinite(f)]


def test_floats_are_written_as_orjson_writes_them() -> None:
    for value in _floats(random.Random(26), 30_000):
        assert pretty(value) == orjson.dumps(value).decode(), repr(value)


def test_documents_are_written_as_emit_json_writes_them() -> None:
    rng = random.Random(39)
    texts = ["", "plain", 'quote " back \\ slash', "tab\tnl\ncr\r", "ctl \x00\x01\x1f\x7f", "é ü 中文 😀"]
    texts += ["\u2028\u2029", "".join(chr(c) for c in range(0, 0x80)), "\ufeffbom", "\U0010ffff"]
    ints = [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 10**30]

    def value(depth: int) -> Any:
        pick = rng.randrange(9 if depth < 4 else 6)
        if pick == 0:
            return rng.choice(texts)
        if pick == 1:
            return rng.choice(ints)
        if pick == 2:
            return rng.choice(_floats(rng, 1))
        if pick == 3:
            return rng.choice([True, False, None])
        if pick in (4, 5):
            return rng.choice([[], {}])
        if pick in (6, 7):
            return {rng.choice(texts) + str(i): value(depth + 1) for i in range(rng.randrange(4))}
        return [value(depth + 1) for _ in range(rng.randrange(4))]

    for _ in range(2000):
        doc = {"query": rng.choice(texts), "results": [value(0) for _ in range(rng.randrange(5))]}
        assert pretty(doc) == dumps_pretty(doc)


@pytest.mark.parametrize(
    "obj",
    [
        "lone \ud800 surrogate",
        {"k\udfff": 1},
        float("nan"),
        float("inf"),
        [float("-inf")],
        RawNumber(1.5, "1.50"),
        (1, 2),
        {1: "int key"},
        {"set": {1}},
        {"bytes": b"x"},
    ],
)
def test_anything_else_is_left_to_orjson(obj: Any) -> None:
    assert pretty(obj) is None


LINES = [
    b'{"type":"message","id":"a","timestamp":1796000000000,"message":{"role":"user","content":"hi"}}',
    b'{"a":[1,2.5,-0,1e5,1E-7,true,false,null,{}],"b":"\\n\\t\\u00e9\\u2028 \xc3\xa9"}',
    b'{"dup":1,"dup":2,"x":{"dup":[1],"dup":[2]}}',
    b'  {"spaced" : [ 1 , 2 ] }  ',
    b'{"a":NaN}',
    b'{"a":-Infinity}',
    b'{"a":Infinity}',
    b'{"text":"NaN and Infinity in a string"}',
    b'{"a":12345678901234567890}',
    b'{"a":123456789012345678901234567890}',
    b'{"a":-9223372036854775809}',
    b'{"a":9223372036854775807}',
    b'{"a":1e400}',
    b'{"a":-1e400}',
    b'{"a":1e-400}',
    b'{"a":0.0000000000000000000000001}',
    b'{"hex":"9dee396a7184","ids":"e4769cfe"}',
    b'{"a":"\\ud83d\\ude00"}',
    b'{"a":"\\ud800"}',
    b'{"a":"\\uDC00x"}',
    b'\xef\xbb\xbf{"bom":1}',
    b'{"bad":"\xff"}',
    b'{"surrogate bytes":"\xed\xa0\x80"}',
    b"[" * 2000 + b"]" * 2000,
    b'{"a":1',
    b'{"a":"raw \x01 control"}',
    b"",
    b"1e400",
    b'"\\ud800"',
    b"12345678901234567890123",
]


@pytest.mark.parametrize("raw", LINES, ids=range(len(LINES)))
def test_a_line_read_by_the_stdlib_is_what_orjson_reads(raw: bytes) -> None:
    got = stdlib_loads(raw)
    if got is DECLINED:
        return  # orjson reads it (or refuses it) itself
    want = orjson.loads(raw)  # must not raise: the stdlib may only answer what orjson accepts
    assert json.dumps(got, sort_keys=False) == json.dumps(want, sort_keys=False)
    assert got == want


def test_the_lines_orjson_refuses_are_declined() -> None:
    for raw in LINES:
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            assert stdlib_loads(raw) is DECLINED, raw[:60]


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    return state_dir


def test_the_command_writes_the_same_bytes_without_orjson(legacy: Path) -> None:
    """The same searches with orjson imported first and `pretty` off (every line read and the
    document written by orjson, as before): the same stdout, stderr and exit code; and a plain
    search imports neither orjson nor dataclasses."""
    shim = legacy.parent / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import orjson\nimport openclaw_cli.search.plainjson as p\np.pretty = lambda obj: None\n"
    )
    path = os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))
    for args in [
        ("session", "--json"),
        ("session", "--json", "--limit", "40", "--verbose"),
        ('"session turn"', "--json", "--role", "user"),
        ("tool*", "--json"),
        ("zzzz-nothing", "--json"),
    ]:
        lean = run_cli("sessions", "search", *args)
        with_orjson = run_cli("sessions", "search", *args, env={"PYTHONPATH": path})
        assert lean.returncode == 0, lean.stderr
        assert (lean.returncode, lean.stdout, lean.stderr) == (
            with_orjson.returncode,
            with_orjson.stdout,
            with_orjson.stderr,
        ), args
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "openclaw_cli", "sessions", "search", "session", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "openclaw_cli.search.plainjson" in imported
    assert not imported & {"orjson", "dataclasses", "inspect"}
