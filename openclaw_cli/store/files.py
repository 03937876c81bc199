"""An agent's sessions dir as one snapshot (regular files only, never through a symlink) and the
kind of each name in it (transcript, checkpoint, trajectory, archive, temps, prompt blobs)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import Record
from openclaw_cli.store.names import (
    is_archive_artifact_name,
    is_primary_transcript_name,
    is_store_temp_name,
    is_trajectory_name,
)

PROMPT_DIR = "skills-prompts"
_PROMPT_BLOB = lazy_pattern(
    globals(), "_PROMPT_BLOB", r"^skills-prompts/sha256/[0-9a-f]{2}/([0-9a-f]{64})\.txt$"
)
_PROMPT_BLOB_TEMP = lazy_pattern(
    globals(), "_PROMPT_BLOB_TEMP", r"^skills-prompts/sha256/[0-9a-f]{2}/[0-9a-f]{64}\.txt\..+\.tmp$"
)
_MIGRATED = lazy_pattern(
    globals(), "_MIGRATED", r"\.migrated(?:\.\d+)?$|\.pre-doctor-(?:branch|openai-codex)-repair-.+\.bak$"
)
TRANSCRIPT_KINDS = ("transcript", "checkpoint", "trajectory")


class DirFile(Record):  # not frozen: a 20,000-file snapshot builds one per file (frozen init is 3x slower)
    """A snapshot of one regular file of the sessions dir (`name` relative, `/`-separated).
    Treated as immutable."""

    __slots__ = _fields = ("name", "size", "mtime_ms")
    name: str
    size: int
    mtime_ms: float

    def __init__(self, name: str, size: int, mtime_ms: float) -> None:
        self.name = name
        self.size = size
        self.mtime_ms = mtime_ms


class DirSnapshot(Record):
    """Regular files directly in the sessions dir plus prompt blobs (never through a symlink)."""

    _fields = ("root", "files", "_kinds", "_has_trajectory")  # (compared; `repr` shows the first two)
    root: Path
    files: dict[str, DirFile]
    _kinds: dict[str, str | None]
    _has_trajectory: bool | None

    def __init__(
        self,
        root: Path,
        files: dict[str, DirFile] | None = None,
        _kinds: dict[str, str | None] | None = None,
        _has_trajectory: bool | None = None,
    ) -> None:
        self.root = root
        self.files = {} if files is None else files
        self._kinds = {} if _kinds is None else _kinds
        self._has_trajectory = _has_trajectory

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(root={self.root!r}, files={self.files!r})"

    def has_trajectory(self) -> bool:
        """Whether any file is a trajectory sidecar (asked by every names pass: memoised)."""
        if self._has_trajectory is None:
            # (every trajectory name holds ".trajectory": a C-level test first, 100,000 names a run)
            self._has_trajectory = any(
                is_trajectory_name(n) and self.kind(n) == "trajectory"
                for n in self.files
                if ".trajectory" in n
            )
        return self._has_trajectory

    def kind(self, name: str) -> str | None:
        """`classify(name)` of a snapshot name, memoised (a 20,000-file directory is classified
        by several passes)."""
        try:
            return self._kinds[name]
        except KeyError:
            kind = self._kinds[name] = classify(name)
            return kind


def scan_sessions_dir(root: Path, listed: Iterable[tuple[str, int, int]] | None = None) -> DirSnapshot:
    """`listed`: (name, size, mtime_ns) of the regular files directly in `root`, in listing order,
    as the caller listed them this run (`openclaw storage`): not listed again."""
    snap = DirSnapshot(Path(root))
    if listed is None:
        _scan_into(snap, Path(root), "")
    else:
        files = snap.files
        for name, size, mtime_ns in listed:
            files[name] = DirFile(name, size, mtime_ns / 1e6)
    blobs = Path(root) / PROMPT_DIR / "sha256"
    try:
        if stat.S_ISDIR(os.lstat(Path(root) / PROMPT_DIR).st_mode) and stat.S_ISDIR(os.lstat(blobs).st_mode):
            with os.scandir(blobs) as it:
                subdirs = [d.name for d in it if d.is_dir(follow_symlinks=False)]
            for sub in sorted(subdirs):
                _scan_into(snap, blobs / sub, f"{PROMPT_DIR}/sha256/{sub}/")
    except OSError:
        pass
    return snap


def _scan_into(snap: DirSnapshot, directory: Path, prefix: str) -> None:
    # Listing through a directory descriptor makes each entry's stat relative to it (fstatat):
    # measurably cheaper over 20,000 files than resolving the full path each time.
    fd = None
    if os.scandir in os.supports_fd:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
    try:
        it = os.scandir(directory if fd is None else fd)
    except OSError:
        if fd is not None:
            os.close(fd)
        return
    files, type_mask, regular = snap.files, 0o170000, stat.S_IFREG
    try:
        with it:
            for item in it:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_mode & type_mask != regular:
                    continue  # symlinks, directories, sockets: never touched
                name = prefix + item.name
                files[name] = DirFile(name, st.st_size, st.st_mtime_ns / 1e6)
    finally:
        if fd is not None:
            os.close(fd)


# ---- names --------------------------------------------------------------------------------------


def archive_temp_pid(name: str) -> int | None:
    from openclaw_cli.store.archives import archive_temp_pid as parse

    return parse(name)


def classify(name: str, store_name: str = "sessions.json") -> str | None:
    """The kind of a snapshot name, or None for files cleanup never touches (notes, locks,
    migration leftovers, unknown names)."""
    if name.endswith(".jsonl") and "." not in name[:-6] and "/" not in name:
        return "transcript"  # fast path: `<sessionId>.jsonl` (no marker can hide without a dot)
    if name.startswith(PROMPT_DIR + "/"):
        if _PROMPT_BLOB.match(name):
            return "prompt-blob"
        return "prompt-blob-temp" if _PROMPT_BLOB_TEMP.match(name) else None
    if name == store_name or name.endswith(".lock") or _MIGRATED.search(name):
        return None
    if is_archive_artifact_name(name):
        return "archive"
    if name.endswith(".tmp"):
        if is_store_temp_name(name, store_name):
            return "store-temp"
        return "archive-temp" if archive_temp_pid(name) is not None else None
    if is_checkpoint_name(name):
        return "checkpoint"
    if is_trajectory_name(name):
        return "trajectory"
    return "transcript" if is_primary_transcript_name(name) else None


def has_transcript_files(directory: Path) -> bool:
    """Whether `directory` holds a transcript, checkpoint or trajectory file (regular files only)."""
    try:
        with os.scandir(directory) as it:
            return any(
                classify(item.name) in TRANSCRIPT_KINDS and item.is_file(follow_symlinks=False) for item in it
            )
    except OSError:
        return False
