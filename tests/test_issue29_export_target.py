"""Issue 29 finding 1: `sessions export --output` (and every `--output`, through
`fsio.check_output_target`) writes only a regular file it creates or a regular file the user owns
— never through a symbolic link, never onto a device, FIFO or socket, never inside the state
directory except its `exports/` folder. Each refusal is exit 2 with the reason, nothing touched."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode
from tests.hardening_support import SESSIONS, cli, make_state


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return make_state(tmp_path_factory.mktemp("export-target"), 5)


@pytest.fixture
def state(template: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(template, tmp_path / "state", symlinks=True)
    return tmp_path / "state"


def _key(state: Path) -> str:
    return next(iter(json.loads((state / SESSIONS / "sessions.json").read_text())))


def _refused(state: Path, target: Path, *words: str) -> None:
    proc = cli(state, "sessions", "export", _key(state), "--output", str(target), "--json", timeout=60)
    assert proc.returncode == ExitCode.USAGE, proc.stdout + proc.stderr
    message = json.loads(proc.stdout)["error"]["message"]
    assert str(target) in message or target.name in message
    for word in words:
        assert word in message, message
    assert "Traceback" not in proc.stderr


def test_a_device_node_is_refused_and_stays_a_device(state: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    dev = tmp_path / "full"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # the system's "full" device, our own node
    before = os.lstat(dev)
    _refused(state, dev, "a device")
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode,
        before.st_ino,
        before.st_rdev,
    )


def test_a_fifo_is_refused(state: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused(state, fifo, "a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused(state: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        _refused(state, path, "a socket")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_symlink_is_refused_even_to_our_own_file(state: Path, tmp_path: Path) -> None:
    target = tmp_path / "mine.txt"
    target.write_text("keep me")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    _refused(state, link, "a symbolic link")
    assert link.is_symlink() and target.read_text() == "keep me"


def test_another_users_file_is_refused(state: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file owned by another user needs root")
    other = tmp_path / "theirs.jsonl"
    other.write_text("theirs")
    other.chmod(0o644)
    os.chown(other, 54321, 54321)
    _refused(state, other, "another user")
    st = os.lstat(other)
    assert st.st_uid == 54321 and stat.S_IMODE(st.st_mode) == 0o644 and other.read_text() == "theirs"


@pytest.mark.parametrize("where", ["openclaw.json", "agents/main/sessions/x.jsonl", "x.jsonl"])
def test_inside_the_state_dir_is_refused(state: Path, where: str) -> None:
    target = state / where
    before = target.read_bytes() if target.exists() else None
    _refused(state, target, "inside the state directory")
    assert (target.read_bytes() if target.exists() else None) == before
    assert cli(state, "sessions", "list", "--json").returncode == 0  # the config still loads


def test_the_state_dirs_export_folder_and_our_own_file_are_allowed(state: Path, tmp_path: Path) -> None:
    (state / "exports").mkdir()
    inside = state / "exports" / "s.jsonl"
    proc = cli(state, "sessions", "export", _key(state), "--output", str(inside), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert inside.stat().st_size > 0
    mine = tmp_path / "mine.md"
    mine.write_text("old")
    proc = cli(state, "sessions", "export", _key(state), "--format", "md", "--output", str(mine), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert mine.read_text().startswith("# Session ")
