"""Helpers of the hardening tests (issue 13): real states made by the shared generator, the CLI as a
real subprocess, a checksum of a whole directory tree, line multisets of every place a transcript
line can live (legacy files, the SQLite store, verified archives), and small tmpfs mounts."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import NOW_MS, generate_legacy_state

SESSIONS = Path("agents") / "main" / "sessions"
DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
ARCHIVE_DIR = Path("agents") / "main" / "session-sqlite-import-archive"


def env_for(state: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("OPENCLAW_MIGRATION_CRASH", "OPENCLAW_CLEANUP_CRASH", "OPENCLAW_COMPACT_CRASH")):
            env.pop(name)
    env.update(
        {
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
            "HOME": str(state.parent),
            "OPENCLAW_HOME": str(state.parent),
            "NO_COLOR": "1",
            "OPENCLAW_GATEWAY_PORT": "1",
            "XDG_CACHE_HOME": str(state.parent / ".cache"),
        }
    )
    env.pop("TIKTOKEN_CACHE_DIR", None)
    env.update(extra)
    return env


def cli(state: Path, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args],
        env=env_for(state, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def doctor(state: Path, mode: str, *more: str, **extra: str) -> subprocess.CompletedProcess:
    return cli(state, "doctor", "--session-sqlite", mode, "--session-sqlite-all-agents", *more, **extra)


def make_state(root: Path, sessions: int = 12, mb: float = 0.05, seed: int = 7, *extra: str) -> Path:
    """A legacy state at root/state (root plays $HOME)."""
    state = root / "state"
    generate_legacy_state(state, sessions, mb, seed, "--cron-key-style", "canonical", *extra)
    return state


def store_json(state: Path) -> dict[str, Any]:
    return json.loads((state / SESSIONS / "sessions.json").read_text())


def transcripts(state: Path) -> list[Path]:
    return sorted((state / SESSIONS).glob("*.jsonl"))


def tree_digest(root: Path) -> dict[str, tuple]:
    """Every entry under root: kind, mode, size, mtime and content hash (symlinks by target)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            st = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            elif not stat.S_ISREG(st.st_mode):  # a FIFO or socket: never opened (it would block)
                out[rel] = ("special", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            else:
                out[rel] = (
                    "file",
                    stat.S_IMODE(st.st_mode),
                    st.st_size,
                    st.st_mtime_ns,
                    hashlib.sha256(path.read_bytes()).hexdigest(),
                )
    return out


def file_lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


def _original_bytes():
    try:
        from openclaw_cli.store.quarantine import original_bytes
    except ImportError:  # a revision without quarantined lines (checking that a test fails there)
        return lambda text: text
    return original_bytes


def db_lines(db: Path) -> Counter:
    """Every transcript line the SQLite store holds (quarantined ones as their original bytes)."""
    original_bytes = _original_bytes()
    out: Counter = Counter()
    if not db.exists():
        return out
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    conn.text_factory = bytes
    try:
        for (text,) in conn.execute("SELECT event_json FROM transcript_events"):
            out[original_bytes(text)] += 1
    finally:
        conn.close()
    return out


def db_session_lines(db: Path) -> dict[str, list[bytes]]:
    original_bytes = _original_bytes()
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    conn.text_factory = bytes
    out: dict[str, list[bytes]] = {}
    try:
        for sid, text in conn.execute(
            "SELECT session_id, event_json FROM transcript_events ORDER BY session_id, seq"
        ):
            out.setdefault(sid.decode(), []).append(original_bytes(text))
    finally:
        conn.close()
    return out


def integrity_ok(db: Path) -> bool:
    if not db.exists():
        return True
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def archive_lines(state: Path) -> Counter:
    """Lines in verified archives: import-archive originals (plain) and zstd archives (cleanup/compact)."""
    from openclaw_cli.store.archives import read_archive_bytes

    out: Counter = Counter()
    import_dir = state / ARCHIVE_DIR
    if import_dir.exists():
        for path in import_dir.iterdir():
            if ".jsonl" in path.name and "trajectory" not in path.name:
                out.update(file_lines(path.read_bytes()))
    for path in (state / SESSIONS).glob("*.zst"):
        out.update(file_lines(read_archive_bytes(path)))
    return out


def live_lines(state: Path) -> Counter:
    out: Counter = Counter()
    for path in transcripts(state):
        if not path.name.endswith(".trajectory.jsonl"):
            out.update(file_lines(path.read_bytes()))
    return out


def leftovers(state: Path) -> list[str]:
    """Temp files, builds, locks and SQLite sidecars nothing should leave behind after a run."""
    bad = []
    for path in state.rglob("*"):
        name = path.name
        if (
            name.endswith((".tmp", ".lock", "-journal"))
            or ".import-session-sqlite-" in name
            or ".cleanup-" in name
        ):
            bad.append(str(path.relative_to(state)))
    return sorted(bad)


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    """A private tmpfs of the given size (`mount` needs root); raises PermissionError otherwise."""
    mnt = Path(tempfile.mkdtemp(prefix="openclaw-tmpfs-"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        mnt.rmdir()
        raise PermissionError(proc.stderr.strip() or "mount failed")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(mnt, ignore_errors=True)


def can_mount() -> str | None:
    """None when a tmpfs can be mounted here, else the reason."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount(8) on this machine"
    try:
        with tmpfs("64k"):
            return None
    except PermissionError as exc:
        return f"cannot mount a tmpfs here: {exc}"


__all__ = ["NOW_MS"]
