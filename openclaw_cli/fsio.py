"""Atomic, durable file writes (D6.6): temp file, fsync, rename, fsync directory; 0600 files, 0700 dirs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_dir(path: Path, mode: int = DIR_MODE) -> None:
    """Create a directory (and parents) with 0700; existing directories keep their mode."""
    if path.is_dir():
        return
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            continue
        fsync_dir(directory.parent)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = FILE_MODE, tmp_name: str | None = None) -> None:
    """Write `data` to `path` atomically and durably."""
    ensure_dir(path.parent)
    tmp = path.with_name(tmp_name or f"{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)
