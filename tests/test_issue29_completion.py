"""Issue 29 (first run): bash completion of session keys, which hold ':' — with bash's
COMP_WORDBREAKS as shipped (':' included) `openclaw sessions archive agent:main:tel<Tab>` completed
nothing. Tested in a real interactive bash on a pseudo-terminal: the script from
`openclaw --show-completion bash` is sourced and <Tab> is pressed."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hardening_support import SESSIONS, env_for, make_state


def _read_until(fd: int, wanted: bytes | Callable[[bytes], bool], timeout: float) -> bytes:
    """What the terminal shows until `wanted` (bytes in it, or a predicate on it) or `timeout`."""
    done = wanted if callable(wanted) else (lambda out: wanted in out)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done(out):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def _interactive_bash(
    env: dict[str, str], steps: list[tuple[bytes, bytes | Callable[[bytes], bool]]], timeout: float = 60
) -> list[bytes]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: a plain interactive bash (no rc files), as a user's terminal runs it
        os.execve(shutil.which("bash"), ["bash", "--norc", "--noprofile", "-i"], env)
    outputs = []
    try:
        for send, wanted in steps:
            os.write(fd, send)
            outputs.append(_read_until(fd, wanted, timeout))
    finally:
        try:
            os.write(fd, b"\x15exit\n")
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        os.close(fd)
    return outputs


def _redrawn_after_the_listing(out: bytes) -> bool:
    listed = out.find(b"stale-1")
    return listed >= 0 and b"archive agent:main:telegram:" in out[listed:]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_tab_completes_a_session_key_past_its_colons_in_a_real_bash(tmp_path: Path) -> None:
    state = make_state(tmp_path, 5)
    keys = list(json.loads((state / SESSIONS / "sessions.json").read_text()))
    assert "agent:main:telegram:group:123" in keys and sum(k.startswith("agent:main:tel") for k in keys) >= 2
    env = env_for(state)
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        PS1="PROMPT$ ",
        TERM="dumb",
        INPUTRC="/dev/null",
    )
    outputs = _interactive_bash(
        env,
        [
            (b'echo "WB[$COMP_WORDBREAKS]END"\n', b"]END\r\n"),
            (b"source <(openclaw --show-completion bash) && echo SOURCED\n", b"SOURCED\r\n"),
            # one match: <Tab> completes the whole key in place (then the line is dropped: Ctrl-U)
            (b"openclaw sessions archive agent:main:telegram:g\t", b"123 "),
            (b"\x15\n", b"PROMPT$ "),
            # several matches: <Tab><Tab> lists them (the part after the last ':', as bash shows it)
            (b"openclaw sessions archive agent:main:tel\t", b"egram:"),  # the common part first
            # ...and redraws the line after the listing: waited for, not raced
            (b"\t\t", _redrawn_after_the_listing),
        ],
    )
    assert b":" in outputs[0].rsplit(b"WB[", 1)[1]  # the shipped COMP_WORDBREAKS splits at ':'
    assert b"agent:main:telegram:group:123 " in outputs[2], outputs[2]
    listing = outputs[5]
    assert b"direct:stale-1" in listing and b"group:123" in listing, listing  # bash shows the last word
    assert b"archive agent:main:telegram:" in listing  # the common part stayed on the line
