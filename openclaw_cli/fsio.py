"""Atomic, durable file writes (D6.6): temp file, fsync, rename, fsync directory; 0600 files, 0700 dirs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any, BinaryIO

# Flags not every platform has (0 where absent): named once, used by every careful open.
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
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


@contextmanager
def atomic_file(
    path: Path,
    *,
    mode: int = FILE_MODE,
    tmp_name: str | None = None,
    replace: bool = True,
    before_publish: Callable[[], None] | None = None,
) -> Iterator[BinaryIO]:
    """The one fsync-replace writer: the block writes into an exclusive temp file beside `path`
    (`tmp_name`, default `.<name>.<pid>.<hex32>.tmp`, which `store.leftovers` recognises); when it
    ends the file is fsynced, given `mode`, renamed over `path` and the directory fsynced. Without
    `replace` an existing `path` is refused (`RefusedError`) at the rename. `before_publish` runs
    between the fsync and the rename (crash points). Any error removes the temp file: `path` is
    either as before or the whole new content."""
    if not tmp_name:
        import uuid  # here, not at the top: uuid imports platform (~11 M instructions of a search)

        tmp_name = f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    tmp = path.with_name(tmp_name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if before_publish is not None:
            before_publish()
        if not replace and os.path.lexists(path):
            from openclaw_cli.errors import RefusedError

            raise RefusedError(f"Refusing to overwrite {path}")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(
    path: Path, data: bytes | Iterable[bytes], *, mode: int = FILE_MODE, tmp_name: str | None = None
) -> None:
    """Write `data` (bytes, or pieces written one after another) to `path` atomically and durably."""
    ensure_dir(path.parent)
    if not tmp_name:
        import uuid

        tmp_name = f"{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    with atomic_file(path, mode=mode, tmp_name=tmp_name) as fh:
        for piece in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
            fh.write(piece)


def replace_cache_file(path: Path, blob: bytes) -> None:
    """Put a cache file in place whole (temp + rename, no fsync: a crash may lose it, never leave
    half of it); any failure leaves no temp behind and is ignored, the cache being optional."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(blob)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def read_cache_value(path: Path) -> Any:
    """The value a cache file of ours keeps (marshal), or None when it is missing or unreadable:
    the caller checks its shape and key, a cache being never the source of truth."""
    import marshal

    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def write_cache_value(path: Path, value: Any) -> None:
    """`value` kept in a cache file (marshal, put in place whole); nothing kept when it cannot be."""
    import marshal

    try:
        blob = marshal.dumps(value)
    except ValueError:  # not marshallable
        return
    replace_cache_file(path, blob)


def atomic_write_text(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


SPACE_CHECK_ENV = "OPENCLAW_SPACE_CHECK"  # "0" skips the pre-checks (the ENOSPC rollback tests)


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem holding `path` (or its
    nearest existing parent); None when it cannot be asked."""
    current = Path(path)
    while not current.exists() and current != current.parent:
        current = current.parent
    try:
        st = os.statvfs(current)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def check_space(path: Path, need: int, what: str, *, consequence: str = "nothing was written") -> None:
    """Refuse before writing when the filesystem of `path` has less than `need` bytes free."""
    if os.environ.get(SPACE_CHECK_ENV, "").strip() == "0":
        return
    have = free_bytes(path)
    if have is None or have >= need:
        return
    from openclaw_cli.errors import NoSpaceError

    raise NoSpaceError(
        f"not enough space (need {need}, have {have}) on the filesystem of {path} for {what} "
        f"(need {human_bytes(need)}, have {human_bytes(have)}); {consequence}. Free some space and retry.",
        path=path,
        need=need,
        have=have,
    )


def file_kind(mode: int) -> str:
    """What a non-regular file is, for refusals ("… is a FIFO"): one wording for every reader and
    writer that meets one (`--output` targets, lock files, the config file)."""
    import stat

    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def check_output_target(
    raw: str | os.PathLike[str], *, state_dir: Path, allowed_dir: Path | None = None, option: str = "--output"
) -> Path:
    """The one safety rule for every file a command writes where the user says (`--output`; issue
    29 #1): a regular file we create, or a regular file the user owns, replaced whole — never
    through a symbolic link, never onto a device, FIFO or socket, never inside the state directory
    except `allowed_dir` (the export folder). The absolute path, or `UsageError` (exit 2) with the
    reason; the write then goes through a temp file renamed into place (`O_NOFOLLOW`), so a path
    swapped after this check is replaced, never written through."""
    import stat

    from openclaw_cli.errors import UsageError

    path = Path(os.path.abspath(os.path.expanduser(os.fspath(raw))))
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot be checked ({exc.strerror or exc}).") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{option} {path} is a directory; give a file name.")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(
                f"{option} {path} is {file_kind(st.st_mode)}; refusing to write through or over it. Give "
                "the path of a regular file."
            )
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise UsageError(
                f"{option} {path} belongs to another user (uid {st.st_uid}); refusing to replace it. "
                "Give a path you own."
            )
    parent = path.parent
    try:
        parent_st = os.stat(parent)
    except OSError:
        parent_st = None
    if parent_st is None or not stat.S_ISDIR(parent_st.st_mode):
        raise UsageError(f"{option} {path}: the directory {parent} does not exist.")
    real = os.path.join(os.path.realpath(parent), path.name)
    state = os.path.realpath(state_dir)
    if real == state or real.startswith(state + os.sep):
        allowed = os.path.realpath(allowed_dir) if allowed_dir is not None else None
        if allowed is None or not real.startswith(allowed + os.sep):
            where = (
                f"; {allowed_dir} is the one folder inside it for exports" if allowed_dir is not None else ""
            )
            raise UsageError(
                f"{option} {path} is inside the state directory {state_dir}, where it could replace the "
                f"config, a session store or a transcript{where}. Choose a path outside it."
            )
    return path


def refuse_symlinked_dirs(directory: Path, root: Path, what: str) -> None:
    """Refuse (`RefusedError`, exit 7) when a directory between `root` (itself allowed to be a
    link: a state dir often is) and `directory` is a symbolic link: `what` would be written
    wherever it points (issue 29 #9: the import manifest, the Gateway marker)."""
    from openclaw_cli.errors import RefusedError

    try:
        parts = Path(directory).relative_to(root).parts
    except ValueError:
        return
    current = Path(root)
    for part in parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return
        except OSError:
            return
        import stat

        if stat.S_ISLNK(st.st_mode):
            raise RefusedError(
                f"Refusing to write {what} through the symbolic link {current} (it points to "
                f"{os.readlink(current)}); replace the link by a directory."
            )
