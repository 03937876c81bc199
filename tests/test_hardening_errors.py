"""Issue 13 case 5: faults surface as typed errors that name the path and carry a documented exit
code — a full disk (ENOSPC on a small tmpfs), a directory we may not write (EACCES on
`sessions.json.lock`, with root's override capability dropped), a read-only filesystem (EROFS), too
many open files (EMFILE), a symbolic-link loop (ELOOP), a number beyond float range. Each is
produced for real: mounts, capability sets, rlimits and links, in a subprocess."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.errors import EXIT_CODE_DOCS, ExitCode
from tests.hardening_support import SESSIONS, can_mount, env_for, make_state, tmpfs, tree_digest


def _cli(
    state: Path, *args: str, preexec=None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "openclaw_cli", *args],
        env=env_for(state),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
    )


def _error(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr and "internal_error" not in proc.stdout, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["error"]


@pytest.fixture
def mounted() -> Path:
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    with tmpfs("4m") as mnt:
        yield mnt


def test_every_fault_has_a_documented_exit_code() -> None:
    for code in (ExitCode.NO_SPACE, ExitCode.PERMISSION, ExitCode.RESOURCE, ExitCode.INTERRUPTED):
        assert EXIT_CODE_DOCS[code]
    table = Path(__file__).resolve().parent.parent.joinpath("docs", "exit-codes.md").read_text()
    for name in ("ENOSPC", "EACCES", "EROFS", "EMFILE", "ELOOP", "out_of_range"):
        assert name in table


def test_enospc_during_a_cleanup_archive_is_typed_and_changes_nothing(mounted: Path) -> None:
    state = make_state(mounted, 30, 1.5, 9)
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
    filler = mounted / "filler"
    free = shutil.disk_usage(mounted).free
    with open(filler, "wb") as fh:  # leave a few KB: the archives cannot be written
        fh.write(b"\0" * max(0, free - 8192))
    before = _files(state)
    proc = _cli(state, "sessions", "cleanup", "--enforce", "--json")
    assert proc.returncode == ExitCode.NO_SPACE, proc.stdout + proc.stderr
    error = _error(proc)
    assert error["type"] == "no_space" and str(state / SESSIONS) in error["message"]
    assert "need" in error["message"] and "have" in error["message"]
    assert _files(state) == before  # nothing archived, nothing removed (the store lock came and went)
    os.unlink(filler)
    again = _cli(state, "sessions", "cleanup", "--enforce", "--json")
    assert again.returncode == 0, again.stdout


def _files(root: Path) -> dict:
    return {k: v for k, v in tree_digest(root).items() if v[0] != "dir"}


def _drop_dac() -> list[str] | None:
    """A prefix that runs a command as root without the override of file permissions."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    probe = subprocess.run(
        ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "true"], capture_output=True
    )
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if probe.returncode == 0 else None


def test_eacces_on_the_sessions_json_lock_is_typed(tmp_path: Path) -> None:
    prefix = _drop_dac()
    if prefix is None:
        pytest.skip("needs root and setpriv(1) to take away the permission override")
    state = make_state(tmp_path)
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
    for path in [tmp_path, *tmp_path.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(state / SESSIONS, 0o555)  # readable, not writable: the lock file cannot be created
    try:
        proc = _cli(state, "sessions", "cleanup", "--enforce", "--json", prefix=prefix)
    finally:
        os.chmod(state / SESSIONS, 0o700)
    assert proc.returncode == ExitCode.PERMISSION, proc.stdout + proc.stderr
    error = _error(proc)
    assert error["type"] == "permission_denied" and "(EACCES)" in error["message"]
    assert str(state / SESSIONS) in error["message"]


def test_erofs_is_typed_and_reads_still_work(mounted: Path) -> None:
    state = make_state(mounted)
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    try:
        listing = _cli(state, "sessions", "--json")
        assert listing.returncode == 0 and json.loads(listing.stdout)["count"] == 12
        proc = _cli(state, "sessions", "cleanup", "--enforce", "--json")
        imported = _cli(state, "doctor", "--session-sqlite", "import", "--json")
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mounted)], check=True)
    for run in (proc, imported):
        assert run.returncode == ExitCode.PERMISSION, run.stdout + run.stderr
        error = _error(run)
        assert error["type"] == "read_only_filesystem" and "(EROFS)" in error["message"], error


def _few_files(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


def test_emfile_is_typed_and_the_import_rolls_back(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    sessions_before = tree_digest(state / SESSIONS)
    for limit in (6, 7):  # the database, then a transcript, cannot be opened
        proc = _cli(state, "doctor", "--session-sqlite", "import", "--json", preexec=_few_files(limit))
        assert proc.returncode == ExitCode.RESOURCE, (limit, proc.stdout + proc.stderr)
        error = _error(proc)
        assert (
            error["type"] == "resource_limit"
            and "(EMFILE)" in error["message"]
            and "ulimit -n" in error["message"]
        )
        assert "rolled back" in error["message"]
        assert tree_digest(state / SESSIONS) == sessions_before
        assert not (state / "agents" / "main" / "agent" / "openclaw-agent.sqlite").exists()
    assert _cli(state, "doctor", "--session-sqlite", "import", "--json").returncode == 0


def test_eloop_is_typed_for_every_command(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    sessions = state / SESSIONS
    shutil.rmtree(sessions)
    sessions.symlink_to(sessions)
    for args in (
        ["sessions", "--json"],
        ["status", "--json", "--no-probe"],
        ["sessions", "cleanup", "--enforce", "--json"],
        ["doctor", "--session-sqlite", "import", "--json"],
    ):
        proc = _cli(state, *args)
        assert proc.returncode == ExitCode.REFUSED, (args, proc.stdout + proc.stderr)
        error = _error(proc)
        assert "symbolic link" in error["message"] and str(sessions) in error["message"], (args, error)


def test_numbers_beyond_float_range_read_and_compute_without_error(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    path = state / SESSIONS / "sessions.json"
    data = json.loads(path.read_text())
    key = next(iter(data))
    path.write_text(
        path.read_text().replace(f'"updatedAt": {data[key]["updatedAt"]}', '"updatedAt": 1' + "0" * 400, 1)
    )
    for args in (
        ["sessions", "--json"],
        ["status", "--json", "--no-probe"],
        ["sessions", "cleanup", "--dry-run", "--json"],
        ["sessions"],
        ["status", "--no-probe"],
    ):
        proc = _cli(state, *args)
        assert proc.returncode == 0, (args, proc.stdout[-500:] + proc.stderr[-500:])
        assert "OverflowError" not in proc.stdout + proc.stderr


def test_an_unexplained_overflow_is_still_typed() -> None:
    from openclaw_cli.errors import typed_error

    typed = typed_error(OverflowError("int too large to convert to float"))
    assert typed is not None and typed.type == "out_of_range" and typed.exit_code == ExitCode.INVALID_DATA
