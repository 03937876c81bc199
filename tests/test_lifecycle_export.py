"""`openclaw sessions export`: the active branch vs the whole tree, Markdown and HTML that keep
stored text inert, streaming (bounded memory), and the HTML page of a real fixture session opened
in headless Chromium with no console errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.lifecycle_support import DB, SESSIONS, cli, rows, transcript_bytes

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = "<script>alert(1)</script> \x1b[31mred\x1b[0m & </details>"


def _branched_state(state: Path, *, sqlite: bool = False) -> tuple[str, list[dict]]:
    """A transcript with two branches (a `leaf` control moves back) and hostile text."""
    from tests.compact_support import import_sqlite

    sid = "11111111-2222-4333-8444-555555555555"
    objs = [
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-11-01T00:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": HOSTILE}]},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-11-01T00:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "first answer"},
                    {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "```x```"}},
                ],
            },
        },
        {
            "type": "message",
            "id": "r1",
            "parentId": "a1",
            "timestamp": "2026-11-01T00:00:03.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "t1",
                "toolName": "read",
                "content": [{"type": "text", "text": "file body"}],
            },
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "r1",
            "timestamp": "2026-11-01T00:00:04.000Z",
            "summary": "Summary of the first branch",
            "firstKeptEntryId": "r1",
            "tokensBefore": 1234,
        },
        {"type": "leaf", "id": "l1", "parentId": "c1", "targetId": "u1"},
        {
            "type": "message",
            "id": "a2",
            "parentId": "u1",
            "timestamp": "2026-11-01T00:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "second answer"}]},
        },
    ]
    directory = state / SESSIONS
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{sid}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objs))
    (directory / "sessions.json").write_text(
        json.dumps(
            {"agent:main:main": {"sessionId": sid, "updatedAt": 1796000000000, "sessionFile": f"{sid}.jsonl"}}
        )
    )
    if sqlite:
        import_sqlite(state)
    return sid, objs


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_active_branch_and_whole_tree(state_dir: Path, kind: str):
    sid, objs = _branched_state(state_dir, sqlite=kind == "sqlite")
    rc, out, err = cli("sessions", "export", "agent:main:main")
    assert rc == 0, err
    ids = [json.loads(line).get("id") for line in out.splitlines()]
    assert ids == [sid, "u1", "a2"]  # header + the active branch after the leaf move
    lines = transcript_bytes(state_dir, sid).decode().splitlines()
    assert out.splitlines() == [lines[0], lines[1], lines[6]]  # byte-exact lines
    rc, everything, _ = cli("sessions", "export", "agent:main:main", "--branch", "all")
    assert rc == 0 and everything.encode() == transcript_bytes(state_dir, sid)


def test_markdown_and_html_keep_stored_text_inert(state_dir: Path, tmp_path: Path):
    _branched_state(state_dir)
    rc, md, _ = cli("sessions", "export", "agent:main:main", "--format", "md", "--branch", "all")
    assert rc == 0 and "\x1b" not in md
    assert "> **Compaction summary" in md and "> Summary of the first branch" in md
    assert "````json" in md  # a fence longer than the backticks inside the arguments
    page = tmp_path / "p.html"
    assert (
        cli("sessions", "export", "agent:main:main", "--format", "html", "--branch", "all", "-o", str(page))[
            0
        ]
        == 0
    )
    text = page.read_text()
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "\x1b" not in text
    assert text.count("<article") == 6 and 'class="compaction"' in text  # leaf controls are notes
    assert "<details><summary>Tool call · read</summary>" in text


@pytest.mark.slow
def test_export_streams_with_flat_memory(state_dir: Path, tmp_path: Path):
    """The export's peak Python memory does not grow with the transcript: a 12 MB session needs no
    more than a 3 MB one (plus slack), far below its size."""
    import tracemalloc

    from openclaw_cli.cli.export import export_session
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths
    from tests.compact_support import write_legacy_state
    from tests.session_generator import generate_session

    sizes = {"agent:main:small": 3_000_000, "agent:main:big": 12_000_000}
    sessions = {key: generate_session(5 + i, target_bytes=n) for i, (key, n) in enumerate(sizes.items())}
    write_legacy_state(state_dir, sessions)
    del sessions
    cx = Context.load(resolve_paths())
    for fmt in ("jsonl", "html"):
        peaks = {}
        for key, size in sizes.items():
            out = tmp_path / f"{key[-5:]}.{fmt}"
            tracemalloc.start()
            doc = export_session(
                cx, key, fmt=fmt, output=str(out), branch="active", agent=None, store=None, json_mode=True
            )
            peaks[key] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert doc["entries"] > 50 and out.stat().st_size > size / 2
        assert peaks["agent:main:big"] < peaks["agent:main:small"] + 2_000_000, (fmt, peaks)
        assert peaks["agent:main:big"] < sizes["agent:main:big"] / 2, (fmt, peaks)


def _chromium_console(page: Path, tmp_path: Path) -> tuple[str, str]:
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    shutil.rmtree(profile, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = "\n".join(line for line in proc.stderr.splitlines() if ":CONSOLE" in line)
    return proc.stdout, console


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="headless Chromium not installed (Debian: apt-get install -y chromium)"
)
def test_html_export_of_a_fixture_session_opens_in_chromium(legacy_fixture_state: Path, tmp_path: Path):
    key = "agent:main:main"
    page = tmp_path / "main.html"
    rc, _, err = cli("sessions", "export", key, "--format", "html", "--branch", "all", "-o", str(page))
    assert rc == 0, err
    dom, console = _chromium_console(page, tmp_path)
    assert console == ""  # no console errors (nor any console output)
    entries = [
        ln
        for ln in (legacy_fixture_state / SESSIONS / f"{rows(legacy_fixture_state)[key]['sessionId']}.jsonl")
        .read_text()
        .splitlines()[1:]
        if ln.strip()
    ]
    assert dom.count("<article") == len(entries) and "Compaction summary" in dom
    # the check can fail: a page with a script error is reported
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>throw new Error('x')</script></body></html>")
    assert "Uncaught Error: x" in _chromium_console(broken, tmp_path)[1]
    assert not (legacy_fixture_state / DB).exists()
