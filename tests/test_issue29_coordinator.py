"""Issue 29 finding 7: the coordinator lock directory under the shared temp dir is created 0700 and
verified (a real directory, ours, private) before any lock is taken through it; a planted symbolic
link or another user's directory is refused clearly and nothing is created through it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode, UnsafeLockDirError
from openclaw_cli.store import state_owner


@pytest.fixture
def base(tmp_path: Path, monkeypatch) -> Path:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(state_owner, "_lock_base", lambda: shared)
    return shared


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return state


def test_the_directory_is_created_private(tmp_path: Path, base: Path) -> None:
    state = _state(tmp_path)
    with state_owner.state_held(state, "refused"):
        directory = state_owner.coordinator_path(state).parent
        st = os.lstat(directory)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()


def test_a_planted_symlink_is_refused_and_nothing_is_created_at_its_target(
    tmp_path: Path, base: Path
) -> None:
    state = _state(tmp_path)
    victim = tmp_path / "victim-dir"
    victim.mkdir()
    directory = state_owner.coordinator_path(state).parent
    directory.symlink_to(victim)
    with pytest.raises(UnsafeLockDirError) as info, state_owner.state_held(state, "refused"):
        pass
    assert info.value.exit_code == ExitCode.REFUSED
    assert "symbolic link" in info.value.message and str(directory) in info.value.message
    assert list(victim.iterdir()) == []
    with pytest.raises(UnsafeLockDirError):
        state_owner.hold_coordinator(state)  # the Gateway's way in
    assert list(victim.iterdir()) == []


def test_a_dangling_planted_symlink_is_refused(tmp_path: Path, base: Path) -> None:
    state = _state(tmp_path)
    directory = state_owner.coordinator_path(state).parent
    directory.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(UnsafeLockDirError):
        state_owner.hold_coordinator(state)
    assert not (tmp_path / "would-be-created").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory owned by another user needs root")
def test_another_users_directory_is_refused(tmp_path: Path, base: Path) -> None:
    state = _state(tmp_path)
    directory = state_owner.coordinator_path(state).parent
    directory.mkdir(mode=0o700)
    os.chown(directory, 54321, 54321)
    with pytest.raises(UnsafeLockDirError) as info, state_owner.state_held(state, "refused"):
        pass
    assert "another user" in info.value.message and "54321" in info.value.message
    assert list(directory.iterdir()) == []


def test_our_directory_with_a_wide_mode_is_narrowed(tmp_path: Path, base: Path) -> None:
    state = _state(tmp_path)
    directory = state_owner.coordinator_path(state).parent
    directory.mkdir()
    directory.chmod(0o777)
    with state_owner.state_held(state, "refused"):
        pass
    assert stat.S_IMODE(os.lstat(directory).st_mode) == 0o700


def test_a_planted_lock_file_symlink_is_refused(tmp_path: Path, base: Path) -> None:
    state = _state(tmp_path)
    path = state_owner.coordinator_path(state)
    path.parent.mkdir(mode=0o700)
    path.symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(UnsafeLockDirError):
        state_owner.hold_coordinator(state)
    assert not (tmp_path / "elsewhere.sqlite").exists()
    with pytest.raises(UnsafeLockDirError):
        state_owner.coordinator_held(state)


def test_gateway_take_ownership_refuses_a_planted_symlink(tmp_path: Path, base: Path) -> None:
    from openclaw_cli.gateway.ownership import take_ownership

    state = _state(tmp_path)
    victim = tmp_path / "victim-dir"
    victim.mkdir()
    state_owner.coordinator_path(state).parent.symlink_to(victim)
    with pytest.raises(UnsafeLockDirError):
        take_ownership(state)
    assert list(victim.iterdir()) == []
