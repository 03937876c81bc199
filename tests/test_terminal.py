"""The text outputs in a real 80x24 pseudo-terminal, rendered by a terminal emulator (pyte): tables
fit (no line wider than 80, nothing wraps, no column collapses), colour appears only on a terminal
and never under NO_COLOR or --no-color, and outside a terminal rows are never cut."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest

from openclaw_cli.cli.cells import display_width
from tests.conftest import generate_legacy_state, run_cli

COLS, ROWS = 80, 24
COMMANDS = [("sessions",), ("status", "--no-probe"), ("sessions", "cleanup", "--dry-run")]
LONG_KEY = "agent:main:telegram:group:-1009876543210:topic:4242"


def run_in_pty(*args: str, env: dict[str, str] | None = None, timeout: float = 60, code: int = 0) -> bytes:
    """Run the CLI with stdin/stdout/stderr on a pseudo-terminal of COLS x ROWS; its raw output
    (the exit code must be `code`)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    full_env["TERM"] = "xterm-256color"
    full_env.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "openclaw_cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=full_env,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert rc == code, b"".join(chunks).decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return b"".join(chunks)


def screen_lines(raw: bytes) -> tuple[list[str], list[str]]:
    """(the lines the program wrote, the lines an 80-column terminal shows): equal when nothing
    wrapped. A tall emulator screen keeps every line (the real terminal scrolls)."""
    text = raw.decode()
    written = text.replace("\r\n", "\n").rstrip("\n").split("\n")
    screen = pyte.Screen(COLS, len(written) + 5)
    stream = pyte.Stream(screen)
    stream.feed(text)
    shown = [line.rstrip() for line in screen.display]
    while shown and not shown[-1]:
        shown.pop()
    return written, shown


@pytest.fixture(params=["legacy", "sqlite"])
def state(request, state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 40, 0.2, 11, "--cron-key-style", "canonical")
    sessions = state_dir / "agents/main/sessions/sessions.json"
    import json

    data = json.loads(sessions.read_text())
    first = next(iter(data.values()))
    data[LONG_KEY] = dict(first, updatedAt=first["updatedAt"] + 1000)
    sessions.write_text(json.dumps(data))
    if request.param == "sqlite":
        assert run_cli("doctor", "--session-sqlite", "import").returncode == 0
    return state_dir


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("no_color", ["env", "flag"])
def test_tables_fit_80_columns_without_escapes_under_no_color(state: Path, command: tuple, no_color: str):
    args = ("--no-color", *command) if no_color == "flag" else command
    raw = run_in_pty(*args, env={"NO_COLOR": "1"} if no_color == "env" else None)
    assert b"\x1b" not in raw  # no colour, no bold: no escape sequence at all
    written, shown = screen_lines(raw)
    assert max(display_width(line) for line in written) <= COLS
    assert (
        written == [line.rstrip() for line in shown] or [w.rstrip() for w in written] == shown
    )  # nothing wrapped
    table = [line for line in written if line.startswith("│")]
    assert table, written
    # no column collapsed: every column keeps at least 3 visible characters, every header a name
    header = table[0]
    assert all(len(cell) >= 5 and cell.strip() for cell in header.strip("│").split("│")), header


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_colour_on_a_terminal_does_not_change_the_layout(state: Path, command: tuple):
    raw = run_in_pty(*command)
    assert b"\x1b[" in raw  # the same run on a terminal without NO_COLOR is coloured...
    _, shown = screen_lines(raw)
    assert max(len(line) for line in shown) <= COLS  # ...and escape codes never count as width
    plain, _ = screen_lines(run_in_pty(*command, env={"NO_COLOR": "1"}))
    assert len(shown) == len(plain)


def test_long_keys_are_cut_in_the_middle_on_a_terminal_and_whole_elsewhere(state: Path):
    written, _ = screen_lines(run_in_pty("sessions", env={"NO_COLOR": "1"}))
    assert LONG_KEY not in "\n".join(written)
    assert any("agent:main:teleg" in line and "..." in line for line in written)
    wide, _ = screen_lines(run_in_pty("sessions", "--wide", env={"NO_COLOR": "1"}))
    assert any(LONG_KEY in line for line in wide)  # --wide: full keys on a terminal
    piped = run_cli("sessions")  # not a terminal: never cut, one row per line, no colour
    assert piped.returncode == 0 and "\x1b" not in piped.stdout
    rows = [line for line in piped.stdout.splitlines() if LONG_KEY in line]
    assert len(rows) == 1 and "..." not in rows[0]
    assert "\x1b" not in run_cli("sessions", "cleanup", "--dry-run").stdout


def test_errors_are_red_on_a_terminal_only(state: Path):
    assert b"\x1b[31mError:\x1b[0m Unknown agent id" in run_in_pty("sessions", "--agent", "ghost", code=4)
    assert b"\x1b" not in run_in_pty("sessions", "--agent", "ghost", code=4, env={"NO_COLOR": "1"})
    piped = run_cli("sessions", "--agent", "ghost")
    assert piped.returncode == 4 and piped.stderr.startswith("Error: Unknown agent id")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_not_a_terminal_means_no_escapes_and_whole_rows(state: Path, command: tuple):
    # pipes: neither stdout nor stderr is a terminal; NO_COLOR unset, so only that keeps colour off
    env_free = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *command],
        capture_output=True,
        text=True,
        env=env_free,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr
    assert LONG_KEY in proc.stdout  # never cut when piped
