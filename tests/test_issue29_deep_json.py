"""Issue 29 finding 8 (deep JSON): values nested deeper than orjson writes in one call (254) are
written losslessly — a transcript line nested 300 deep (`sessions tail --json` exited 1
internal_error), a `sessions.json` row nested 300 deep (every write to that store failed) — and a
line deeper than the parsers read (~990) is an issue naming the line. Also: no `orjson.Fragment`
of a few KB inside a container (orjson 3.13 corrupts its heap on one: a 16 KB string with a lone
surrogate nested 50 deep aborted the process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from openclaw_cli import jsonutil
from tests.hardening_support import SESSIONS, cli, make_state


def _nest(depth: int, leaf: object, kind: str = "dict") -> object:
    value = leaf
    for i in range(depth):
        value = {"a": value, "n": i} if kind == "dict" else [value, i]
    return value


def _reference(value: object, option: int) -> bytes:
    """What one unlimited JSON.stringify call writes (the stdlib, lone surrogates escaped)."""
    indent = 2 if option & orjson.OPT_INDENT_2 else None
    text = json.dumps(
        value, ensure_ascii=False, indent=indent, separators=(",", ": ") if indent else (",", ":")
    )
    return text.replace("\ud800", "\\ud800").encode()


@pytest.mark.parametrize("depth", [0, 199, 200, 254, 255, 300, 700, 1000])
@pytest.mark.parametrize("kind", ["dict", "list"])
@pytest.mark.parametrize("option", [0, orjson.OPT_INDENT_2])
def test_dumps_writes_any_depth_byte_for_byte(depth: int, kind: str, option: int) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))  # for the reference encoder only
    try:
        leaf = {
            "big": 12345678901234567890123,
            "s": "a\ud800b",
            "f": 2.5,
            "e": "é\n",
            "raw": jsonutil.RawNumber(1e16, "10000000000000000"),
        }
        value = _nest(depth, leaf, kind)
        want = _reference({**{"v": value}}, option).replace(b"1e+16", b"10000000000000000")
        assert jsonutil.dumps_bytes({"v": value}, option=option) == want
    finally:
        sys.setrecursionlimit(limit)


def test_a_large_unencodable_string_inside_containers_does_not_corrupt_the_heap() -> None:
    code = (
        "from openclaw_cli import jsonutil\n"
        "v = 'a\\ud800' + 'x' * 16000\n"
        "for i in range(50): v = [v, i]\n"
        "for _ in range(5): out = jsonutil.dumps_bytes(v)\n"
        "print(len(out))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-500:]  # before: "double free or corruption", SIGABRT


def _deep_state(tmp_path: Path) -> tuple[Path, str, Path]:
    state = make_state(tmp_path, 5)
    store = json.loads((state / SESSIONS / "sessions.json").read_text())
    key = "agent:main:main"
    return state, key, state / SESSIONS / f"{store[key]['sessionId']}.jsonl"


def _append(transcript: Path, depth: int) -> dict:
    line = {
        "type": "message",
        "id": "deep1",
        "parentId": None,
        "timestamp": "2026-11-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "deep"}]},
    }
    text = json.dumps(line)[:-2] + ', "x": ' + '{"a":' * depth + "1" + "}" * depth + "}}"
    with open(transcript, "a") as fh:
        fh.write(text + "\n")
    return line


def test_tail_json_of_a_line_nested_300_deep(tmp_path: Path) -> None:
    state, _, transcript = _deep_state(tmp_path)
    _append(transcript, 300)
    proc = cli(state, "sessions", "tail", "--json")
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr[-500:]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        doc = json.loads(proc.stdout)
        last = doc["entries"][-1]
        shown = json.dumps(last, separators=(",", ":"))
    finally:
        sys.setrecursionlimit(limit)
    assert '{"a":' * 300 + "1" + "}" * 300 in shown


def test_a_line_deeper_than_the_parsers_is_an_issue_naming_the_line(tmp_path: Path) -> None:
    state, _, transcript = _deep_state(tmp_path)
    _append(transcript, 1100)
    proc = cli(state, "sessions", "tail", "--json")
    assert proc.returncode == 0, proc.stdout[-500:]
    issues = json.loads(proc.stdout)["issues"]
    assert any(
        str(transcript) in issue and "line" in issue and "nested too deeply" in issue for issue in issues
    )


def test_writes_to_a_store_with_a_row_nested_300_deep_keep_it_byte_for_byte(tmp_path: Path) -> None:
    state, key, _ = _deep_state(tmp_path)
    path = state / SESSIONS / "sessions.json"
    store = json.loads(path.read_text())
    other = next(k for k in store if k != key)
    deep_text = '{"a":' * 300 + '"bottom"' + "}" * 300
    raw = path.read_text()
    marker = f'"{key}": {{'
    path.write_text(raw.replace(marker, marker + f'\n    "x-deep": {deep_text},', 1))
    proc = cli(state, "sessions", "label", other, "after deep", "--json")
    assert proc.returncode == 0, proc.stdout[-800:] + proc.stderr[-500:]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        after = json.loads(path.read_text())
        assert json.dumps(after[key]["x-deep"], separators=(",", ":")) == deep_text
    finally:
        sys.setrecursionlimit(limit)
    assert after[other]["label"] == "after deep"
