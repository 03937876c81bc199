"""Streaming JSONL reader, bounded tail, header, locked appends (storage-migration §3.2–§3.3)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import OPENCLAW_FIXTURE, generate_legacy_state

from openclaw_cli.errors import InvalidDataError, RefusedError
from openclaw_cli.store import transcript as tr
from openclaw_cli.store.base import ReadIssue
from openclaw_cli.store.lock import lock_path_for

FIXTURE_SESSIONS = OPENCLAW_FIXTURE / "legacy-state" / "agents" / "main" / "sessions"


def _fixture_transcripts() -> list[Path]:
    return sorted(FIXTURE_SESSIONS.glob("*.jsonl"))


def test_fixture_transcripts_stream_byte_identical():
    files = _fixture_transcripts()
    assert len(files) == 12
    total = 0
    for path in files:
        issues: list[ReadIssue] = []
        lines = list(tr.iter_jsonl(path, issues=issues))
        assert issues == []
        assert "".join(line.raw + "\n" for line in lines).encode() == path.read_bytes()
        assert [line.seq for line in lines] == list(range(len(lines)))
        assert [line.line_no for line in lines] == list(range(1, len(lines) + 1))
        assert all(line.obj == json.loads(line.raw) for line in lines)
        total += len(lines)
    assert total == 335  # the fixture README: 335 legacy lines


def _write(tmp_path: Path, data: bytes, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_malformed_middle_and_truncated_last_line_are_reported_and_skipped(tmp_path):
    data = (
        b'{"type":"session","version":3,"id":"s"}\n'
        b'{"type":"message","id":"a","parentId":null}\n'
        b'{"type":"message","id":"b",BROKEN\n'
        b'{"type":"message","id":"c","parentId":"a"}\n'
        b'{"type":"message","id":"d","parentId":"c","message":{"role":"us'
    )
    path = _write(tmp_path, data)
    issues: list[ReadIssue] = []
    lines = list(tr.iter_jsonl(path, issues=issues))
    assert [line.obj.get("id") for line in lines[1:]] == ["a", "c"]
    assert [line.line_no for line in lines] == [1, 2, 4]
    assert [line.seq for line in lines] == [0, 1, 3]  # the bad line keeps its position
    assert [(i.path, i.line) for i in issues] == [(str(path), 3), (str(path), 5)]
    assert str(issues[0]).startswith(f"{path}:3: malformed JSON")
    assert str(issues[1]).startswith(f"{path}:5: truncated last line (no trailing newline)")
    assert path.read_bytes() == data


def test_blank_falsy_non_object_and_crlf_lines(tmp_path):
    data = b'\n   \n{"a":1}\r\nnull\nfalse\n0\n""\n[1,2]\n"text"\n\t\n{"b":2}'
    path = _write(tmp_path, data)
    issues: list[ReadIssue] = []
    lines = list(tr.iter_jsonl(path, issues=issues))
    assert issues == []
    assert [line.raw for line in lines] == ['{"a":1}', "[1,2]", '"text"', '{"b":2}']
    assert [line.obj for line in lines] == [{"a": 1}, None, None, {"b": 2}]
    assert [line.line_no for line in lines] == [3, 8, 9, 11]


def test_invalid_utf8_is_reported_with_its_line(tmp_path):
    path = _write(tmp_path, b'{"a":1}\n{"b":"\xff\xfe"}\n{"c":3}\n')
    issues: list[ReadIssue] = []
    lines = list(tr.iter_jsonl(path, issues=issues))
    assert [line.obj for line in lines] == [{"a": 1}, {"c": 3}]
    assert len(issues) == 1 and issues[0].line == 2 and "invalid UTF-8" in issues[0].message


def test_lines_longer_than_a_read_block(tmp_path, monkeypatch):
    monkeypatch.setattr(tr, "READ_BLOCK", 7)
    rows = [json.dumps({"i": i, "pad": "é" * (i * 5)}, ensure_ascii=False) for i in range(20)]
    path = _write(tmp_path, ("\n".join(rows) + "\n").encode())
    assert [line.raw for line in tr.iter_jsonl(path)] == rows


def test_missing_and_symlinked_files_yield_nothing_and_are_reported(tmp_path):
    outside = _write(tmp_path, b'{"secret":1}\n', "outside.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(outside)
    issues: list[ReadIssue] = []
    assert list(tr.iter_jsonl(link, issues=issues)) == []
    assert list(tr.iter_jsonl(tmp_path / "nope.jsonl", issues=issues)) == []
    assert [i.path for i in issues] == [str(link), str(tmp_path / "nope.jsonl")]
    assert tr.tail_jsonl(link, 3, issues=issues) == []


def test_count_lines(tmp_path):
    path = _write(tmp_path, b'{"a":1}\n\n{"bb":2}\r\n  \n{"c"')
    assert tr.count_lines(path) == (3, 7 + 8 + 4)
    assert tr.count_lines(tmp_path / "missing.jsonl") == (0, 0)


# ---- tail -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [1, 7, 4096, 64 * 1024])
def test_tail_matches_forward_read(tmp_path, monkeypatch, block):
    monkeypatch.setattr(tr, "TAIL_BLOCK", block)
    smallest = sorted(_fixture_transcripts(), key=lambda p: p.stat().st_size)
    for path in smallest[:1] if block < 64 else smallest[:4]:
        forward = [line.raw for line in tr.iter_jsonl(path)]
        for n in (1, 2, 5, len(forward), len(forward) + 10):
            tail = tr.tail_jsonl(path, n)
            assert [line.raw for line in tail] == forward[-n:]
            assert [line.seq for line in tail] == list(range(-len(tail), 0))
            assert all(line.line_no is None for line in tail)


def test_tail_skips_truncated_last_line_and_malformed_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(tr, "TAIL_BLOCK", 5)
    path = _write(tmp_path, b'{"a":1}\n\n{"b":2}\n{bad}\n{"c":3}\n{"d":')
    issues: list[ReadIssue] = []
    tail = tr.tail_jsonl(path, 3, issues=issues)
    assert [line.obj for line in tail] == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert [line.seq for line in tail] == [-5, -4, -2]
    assert [i.message.split(":")[0] for i in issues] == ["line 1 from the end", "line 3 from the end"]
    assert "truncated last line" in issues[0].message


def test_tail_without_trailing_newline_and_edge_cases(tmp_path):
    path = _write(tmp_path, b'{"a":1}\n{"b":2}')
    assert [line.obj for line in tr.tail_jsonl(path, 1)] == [{"b": 2}]
    assert tr.tail_jsonl(path, 0) == []
    assert tr.tail_jsonl(_write(tmp_path, b"", "empty.jsonl"), 5) == []
    assert [line.obj for line in tr.tail_jsonl(_write(tmp_path, b'{"x":1}', "one.jsonl"), 5)] == [{"x": 1}]


def test_tail_reads_a_bounded_amount_of_a_large_file(tmp_path, monkeypatch):
    line = json.dumps({"type": "message", "pad": "x" * 900}).encode() + b"\n"
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fh:
        for _ in range(12_000):  # ~11 MB
            fh.write(line)
    size = path.stat().st_size
    read = {"bytes": 0, "calls": 0}
    real_pread = tr._pread

    def counting_pread(fd, length, offset):
        read["bytes"] += length
        read["calls"] += 1
        return real_pread(fd, length, offset)

    monkeypatch.setattr(tr, "_pread", counting_pread)
    tail = tr.tail_jsonl(path, 10)
    assert len(tail) == 10 and all(t.raw.encode() + b"\n" == line for t in tail)
    assert read["bytes"] <= 2 * tr.TAIL_BLOCK < size / 50
    read["bytes"] = 0
    tail = tr.tail_jsonl(path, 200)  # ~180 KB of lines: a few blocks, never the file
    assert len(tail) == 200
    assert read["bytes"] <= 200 * len(line) + 2 * tr.TAIL_BLOCK


# ---- header ---------------------------------------------------------------------------------------


def test_read_header_versions_alias_and_headerless(tmp_path):
    header = tr.read_header(_fixture_transcripts()[0])
    assert header is not None and header.version == 3 and not header.is_legacy
    assert header.id == _fixture_transcripts()[0].name[: -len(".jsonl")]
    assert header.cwd == "/home/user/.openclaw/workspace" and header.line.line_no == 1

    alias = _write(
        tmp_path, b'{"type":"session","sessionId":"old-1","timestamp":"t"}\n{"type":"message"}\n', "a.jsonl"
    )
    header = tr.read_header(alias)
    assert header is not None and header.id == "old-1" and header.version == 1 and header.is_legacy

    headerless = _write(tmp_path, b'{"type":"message","message":{"role":"user","content":"hi"}}\n', "b.jsonl")
    assert tr.read_header(headerless) is None
    assert tr.read_header(tmp_path / "missing.jsonl") is None

    broken_first = _write(tmp_path, b'{oops\n{"type":"session","version":4,"id":"x"}\n', "c.jsonl")
    issues: list[ReadIssue] = []
    header = tr.read_header(broken_first, issues)
    assert header is not None and header.version == 4 and header.line.line_no == 2 and len(issues) == 1


def test_read_header_of_generated_v4_state(tmp_path):
    state = generate_legacy_state(tmp_path / "state", 6, 0, 11, "--header-version", "4")
    files = sorted((state / "agents" / "main" / "sessions").glob("*.jsonl"))
    assert files
    for path in files:
        header = tr.read_header(path)
        assert header is not None and header.version == 4 and header.id == path.name[:-6]


# ---- append ---------------------------------------------------------------------------------------


def test_append_creates_file_with_header_0600_and_appends(tmp_path):
    path = tmp_path / "sessions" / "new.jsonl"
    head = tr.header_line("new", timestamp="2026-01-01T00:00:00.000Z", cwd="/w")
    assert (
        head == '{"type":"session","version":4,"id":"new","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
    )
    assert tr.append_jsonl(path, ['{"n":1}', b'{"n":2}'], header=head) == 2
    assert path.read_bytes() == (head + '\n{"n":1}\n{"n":2}\n').encode()
    assert (path.stat().st_mode & 0o777) == 0o600
    tr.append_jsonl(path, ['{"n":3}'], header=head)  # the header is only written to an empty file
    assert path.read_bytes().count(b'"type":"session"') == 1
    assert not lock_path_for(path).exists()


def test_append_after_truncated_last_line_starts_a_new_line(tmp_path):
    path = _write(tmp_path, b'{"a":1}\n{"b":')
    tr.append_jsonl(path, ['{"c":3}'])
    assert path.read_bytes() == b'{"a":1}\n{"b":\n{"c":3}\n'
    issues: list[ReadIssue] = []
    assert [line.obj for line in tr.iter_jsonl(path, issues=issues)] == [{"a": 1}, {"c": 3}]
    assert len(issues) == 1 and issues[0].line == 2


@pytest.mark.parametrize("bad", ['{"a":\n1}', "not json", "", '{"a":1}\r'])
def test_append_refuses_bad_lines_and_writes_nothing(tmp_path, bad):
    path = _write(tmp_path, b'{"a":1}\n')
    with pytest.raises(InvalidDataError):
        tr.append_jsonl(path, ['{"ok":1}', bad])
    assert path.read_bytes() == b'{"a":1}\n'


def test_append_never_writes_through_a_symlink(tmp_path):
    outside = _write(tmp_path, b'{"outside":1}\n', "outside.jsonl")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "s.jsonl").symlink_to(outside)
    with pytest.raises(RefusedError):
        tr.append_jsonl(sessions / "s.jsonl", ['{"x":1}'])
    assert outside.read_bytes() == b'{"outside":1}\n'
    assert not lock_path_for(sessions / "s.jsonl").exists()


def test_append_round_trips_raw_text_exactly(tmp_path):
    raws = ['{"b":1,"a":2}', '{ "spaced" : [1, 2.50, 1e+21] }', '{"u":"é\\u00e9"}']
    path = tmp_path / "r.jsonl"
    tr.append_jsonl(path, raws)
    assert [line.raw for line in tr.iter_jsonl(path)] == raws
    assert os.path.getsize(path) == sum(len(r.encode()) + 1 for r in raws)


def test_concurrent_appenders_never_interleave(tmp_path):
    """Two OpenClaw-looking processes append at once: every line arrives whole, none lost."""
    import subprocess
    import sys

    path = tmp_path / "sessions" / "c.jsonl"
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from openclaw_cli.store.transcript import append_jsonl\n"
        "tag = sys.argv[1]\n"
        "for i in range(60):\n"
        '    append_jsonl(Path(os.environ[\'T_PATH\']), [\'{"w":"%s","i":%d,"pad":"%s"}\' % (tag, i, \'x\' * 3000)])\n'
    )
    env = dict(os.environ, T_PATH=str(path), PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    procs = [
        subprocess.Popen([sys.executable, "-c", code, tag, "/usr/local/bin/openclaw"], env=env)
        for tag in ("a", "b")
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    issues: list[ReadIssue] = []
    lines = list(tr.iter_jsonl(path, issues=issues))
    assert issues == []
    for tag in ("a", "b"):
        assert [line.obj["i"] for line in lines if line.obj["w"] == tag] == list(range(60))
    assert not lock_path_for(path).exists()
