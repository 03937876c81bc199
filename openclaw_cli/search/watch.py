"""A process's last listing of a sessions directory, reused while nothing in the directory changed
(Linux inotify), so a process that searches again (a long-lived embedder of the library, the
Gateway) does not list the directory and stat every live transcript on each search.

The answer must stay as fresh as a listing's: a watch reports every change a listing would see
— a write or truncation (IN_MODIFY), a touch or chmod (IN_ATTRIB), a file created, removed or
renamed in or out (IN_CREATE, IN_DELETE, IN_MOVED_*), the directory itself removed or moved
(IN_DELETE_SELF, IN_MOVE_SELF), and a full queue (IN_Q_OVERFLOW: everything is listed again). It
is only trusted where that holds:
- the watch is set up before the listing it guards (a change during the listing is seen next time);
- each use stats the directory: another directory at the path (a state moved and replaced) is
  listed again;
- local filesystems only (ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs): a network or FUSE filesystem
  does not report other hosts' writes, so it is listed every time, as before;
- no live transcript with a second link (a write through a link in another directory is
  reported there, not here): such a directory is listed every time;
- one process: a forked child sets up its own watches (it never reads its parent's queue).
A process's first listing of a directory sets up no watch (`sources` lists it without this
module: a one-shot command never pays for one); the second does, and the third is the first
that may be skipped. Anything unexpected
(no inotify, out of watches) falls back to listing every time."""

from __future__ import annotations

import _thread
import os
import struct
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
)
# statfs f_type of the filesystems whose every change to a directory's files goes through this
# kernel: ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs
LOCAL_FILESYSTEMS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010, 0x2FC12FC1})
_EVENT = struct.Struct("iIII")
KEEP_DIRECTORIES = 64  # directories (and their last listings) kept per process


class _Dir:
    __slots__ = ("ident", "wd", "dirty", "value")

    def __init__(self) -> None:
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the directory watched
        self.wd: int | None = None  # None: not watchable (listed every time)
        self.dirty = True
        self.value: Any = None


_lock = _thread.allocate_lock()
_pid = os.getpid()
_fd: int | None = None  # this process's inotify instance (None: not made yet, -1: unavailable)
_dirs: dict[tuple[str, Any], _Dir] = {}
_by_wd: dict[int, list[_Dir]] = {}
_libc: Any = None


def _reset_after_fork() -> None:
    global _pid, _fd, _dirs, _by_wd
    if _fd is not None and _fd >= 0:
        try:
            os.close(_fd)  # the parent's instance: this copy of its descriptor only
        except OSError:
            pass
    _pid, _fd, _dirs, _by_wd = os.getpid(), None, {}, {}


def _instance() -> int:
    global _fd, _libc
    if _fd is None:
        _fd = -1
        try:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
            fd = int(_libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
            if fd >= 0:
                _fd = fd
        except (OSError, AttributeError, ImportError):
            _fd = -1
    return _fd


def _local(directory: str) -> bool:
    import ctypes

    buf = ctypes.create_string_buffer(256)  # struct statfs; f_type is its first field, a long
    if _libc.statfs(os.fsencode(directory), buf) != 0:
        return False
    return ctypes.c_long.from_buffer(buf).value in LOCAL_FILESYSTEMS


def _drain() -> None:
    """Read every queued event and mark the directories they name as changed."""
    fd = _fd
    if fd is None or fd < 0:
        return
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # cannot read the queue: nothing watched can be trusted
            for entry in _dirs.values():
                entry.dirty = True
            return
        at = 0
        while at + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
            at += _EVENT.size + size
            if mask & IN_Q_OVERFLOW or wd < 0:
                for entry in _dirs.values():
                    entry.dirty = True
                continue
            for entry in _by_wd.get(wd, ()):
                entry.dirty = True
                if mask & IN_IGNORED:  # the watch is gone (directory removed): set up again next time
                    entry.wd = entry.ident = None
            if mask & IN_IGNORED:
                _by_wd.pop(wd, None)


def _unwatch(entry: _Dir) -> None:
    if entry.wd is not None:
        users = _by_wd.get(entry.wd, [])
        if entry in users:
            users.remove(entry)
        if not users:
            _by_wd.pop(entry.wd, None)
            if _fd is not None and _fd >= 0:
                _libc.inotify_rm_watch(_fd, entry.wd)
    entry.wd, entry.value = None, None


def _watch(entry: _Dir, directory: str, ident: tuple[int, int]) -> None:
    """Point `entry`'s watch at the directory now at `directory` (`ident`, stat'ed before: if
    another directory takes the path in between, the next use sees a different one and comes
    back here)."""
    _unwatch(entry)
    entry.ident = ident
    fd = _instance()
    if fd < 0 or not _local(directory):
        return  # listed every time
    wd = int(_libc.inotify_add_watch(fd, os.fsencode(directory), WATCH_MASK))
    if wd < 0:
        return
    entry.wd = wd
    users = _by_wd.setdefault(wd, [])  # one wd per inode: the keys of one directory share it
    if entry not in users:
        users.append(entry)


def listing(directory: str, key: Any, make: Callable[[], tuple[T, bool]]) -> T:
    """`make()`'s value for `directory` — (value, whether a watch may vouch for it) — or the one
    it gave last time in this process when the directory's watch has seen no change since (a
    first call here sets the watch up before listing)."""
    with _lock:
        if _pid != os.getpid():
            _reset_after_fork()
        try:
            st = os.stat(directory)
        except OSError:
            return make()[0]
        ident = (st.st_dev, st.st_ino)
        entry = _dirs.get((directory, key))
        if entry is None:
            while len(_dirs) >= KEEP_DIRECTORIES:  # the oldest let go (its watch removed)
                _unwatch(_dirs.pop(next(iter(_dirs))))
            entry = _dirs[(directory, key)] = _Dir()
        _drain()
        if entry.wd is not None and not entry.dirty and entry.ident == ident and entry.value is not None:
            return entry.value  # type: ignore[no-any-return]
        if entry.ident != ident:
            _watch(entry, directory, ident)
        entry.dirty = False  # from here on a change marks it again (the watch is already set)
        value, trusted = make()
        entry.value = value if trusted and entry.wd is not None else None
        return value


def forget() -> None:
    """Drop every listing kept and watch set up (tests)."""
    global _fd
    with _lock:
        if _fd is not None and _fd >= 0:
            os.close(_fd)
        _fd = None
        _dirs.clear()
        _by_wd.clear()
