"""Moving originals without ever copying them (storage-migration.md §6.7 A-1…A-4).

A move is an exclusive hard link at the destination, a directory fsync, a check that both names are
the same inode (nlink 2) with the identity recorded when the file was hashed, then the unlink of the
old name, a directory fsync and a final check. At every instant the bytes exist under at least one
name; a crash leaves either the old name, both names (one inode, nlink 2: `reconcile_pair` settles
it) or the new name. Moves are batched: one fsync per directory per batch instead of two per file,
which is what keeps 20,000 moves fast.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.errors import RefusedError
from openclaw_cli.fsio import DIR_MODE, O_CLOEXEC, O_NOFOLLOW, fsync_dir

READ_CHUNK = 4 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
# every ASCII character `_SLUG` replaces, marked as NUL (itself one of them) for `slug`'s fast path
_SLUG_MARKS = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "_.-") else 0 for c in range(256)
)
HARD_LINK_DOCS = "https://docs.openclaw.ai/cli/doctor/sqlite-maintenance#hard-linked-legacy-artifacts"


@dataclass(frozen=True, slots=True)
class Identity:
    """What identifies an artifact: sha256 + size (portable), dev/ino/mtime (this filesystem only)."""

    dev: int
    ino: int
    mtime_ns: int
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "dev": str(self.dev),
            "ino": str(self.ino),
            "mtimeNs": str(self.mtime_ns),
            "size": self.size,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, data: Any) -> Identity | None:
        if not isinstance(data, dict):
            return None
        sha = data.get("sha256")
        size = data.get("size")
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            return None
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            return None
        try:
            return cls(
                int(data.get("dev", 0)), int(data.get("ino", 0)), int(data.get("mtimeNs", 0)), size, sha
            )
        except (TypeError, ValueError):
            return None

    def same_content(self, other: Identity) -> bool:
        return self.sha256 == other.sha256 and self.size == other.size

    def same_object(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (
            self.dev,
            self.ino,
            self.size,
            self.mtime_ns,
        )


class ArtifactError(Exception):
    """An artifact cannot be moved safely; the message is the user-facing reason."""


class ChangedError(ArtifactError):
    pass


def fingerprint(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """dev/ino/size/mtime/ctime: what must not change while a file is read (§6.6 step 5)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def open_regular_nofollow(path: Path) -> tuple[int, os.stat_result]:
    """Open without following a final symlink; refuse anything that is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ArtifactError(f"Migration source is not a regular file: {path}") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ArtifactError(f"Migration source is not a regular file: {path}")
    return fd, st


def hash_file(path: Path) -> Identity:
    """sha256 of a regular file read through a no-follow descriptor, stable across the read."""
    fd, before = open_regular_nofollow(path)
    digest = hashlib.sha256()
    try:
        while True:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                break
            digest.update(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if fingerprint(before) != fingerprint(after):
        raise ChangedError(f"{path} changed while it was read")
    return Identity(before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, digest.hexdigest())


def hardlink_message(path: Path | str, st: os.stat_result) -> str:
    return (
        f"Artifact {path} is not an unaliased regular file (nlink={st.st_nlink}, dev={st.st_dev}, "
        f"inode={st.st_ino}): another hard link references this inode; remove the additional hard link "
        f"and retry. See {HARD_LINK_DOCS}"
    )


def check_unaliased(path: Path | str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ArtifactError(f"Migration source is not a regular file: {path}")
    if st.st_nlink != 1:
        raise ArtifactError(hardlink_message(path, st))


# ---- names (A-1) -------------------------------------------------------------------------------


def slug(value: str, limit: int, empty: str) -> str:
    """`value` with each run of characters outside `[A-Za-z0-9_.-]` made one `_`, cut to `limit`
    (`empty` when nothing is left). An ASCII value with no two such characters in a row (a key
    like `agent:main:telegram:direct:u-1`, a transcript's `<uuid>.jsonl`) is made by one
    `bytes.translate` instead of the regex (~1 us less; an import names two a move, issue 30)."""
    if value.isascii():
        marked = value.encode("ascii").translate(_SLUG_MARKS)
        if b"\x00\x00" not in marked:
            out = marked.replace(b"\x00", b"_")[:limit].decode("ascii")
            return out or empty
    out = _SLUG.sub("_", value)[:limit]
    return out or empty


def archive_name(key_slug_source: str, base_name: str, stamp_ms: int, n: int = 0) -> str:
    name = f"{slug(key_slug_source, 120, 'session')}.{slug(base_name, 160, 'artifact')}.imported-{stamp_ms}"
    return f"{name}.{n}" if n else name


class NameReserver:
    """Hands out archive names unique against the directory and against names already reserved.
    Reserved names are remembered by a 128-bit digest (an import of 100,000 sessions reserves
    100,000 names of ~130 characters: ~22 MB as strings, ~9 MB as digests; two names sharing a
    digest are as unlikely as two transcripts sharing a sha256)."""

    def __init__(self, archive_dir: Path):
        self.archive_dir = archive_dir
        self.prefix = f"{archive_dir}{os.sep}"
        self.reserved: set[bytes] = set()
        self.counter = 0  # the last name's `n` (`archive_name`): the name can be made again from it
        try:
            self.existing = {p.name for p in archive_dir.iterdir()}
        except OSError:
            self.existing = set()

    def reserve(self, key: str, base_name: str, stamp_ms: int) -> str:
        # the listing taken at construction plus our reservations decide; a name created by someone
        # else meanwhile makes the exclusive link() fail, which leaves the source untouched
        for n in range(0, 100):
            name = archive_name(key, base_name, stamp_ms, n)
            digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            if digest not in self.reserved and name not in self.existing:
                self.reserved.add(digest)
                self.counter = n
                return f"{self.prefix}{name}"
        raise ArtifactError(f"Could not archive {base_name} for {key}")


# ---- path safety (A-2) -----------------------------------------------------------------------------


def symlink_component(path: Path, root: Path) -> Path | None:
    """The first existing component of `path` below `root` (root included) that is a symlink."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = None
    current = root if rel is not None else Path(path.anchor)
    parts = rel.parts if rel is not None else path.parts[1:]
    if rel is not None and current.is_symlink():
        return current
    for part in parts:
        current = current / part
        try:
            if current.is_symlink():
                return current
        except OSError:
            return current
        if not current.exists():
            break
    return None


def refuse_symlinks(paths: Iterable[Path], root: Path) -> None:
    for path in paths:
        bad = symlink_component(path, root)
        if bad is not None:
            raise RefusedError(f"Refusing session SQLite migration through symbolic link: {bad}")


def ensure_private_dir(path: Path) -> None:
    if path.is_symlink():
        raise RefusedError(f"Refusing session SQLite migration through symbolic link: {path}")
    if not path.is_dir():
        os.makedirs(path, DIR_MODE, exist_ok=True)
        fsync_dir(path.parent)


# ---- publication (A-4) -----------------------------------------------------------------------------


@dataclass(slots=True)
class Move:
    """Move `source` to `dest` (archive or restore). `expected` is the identity recorded when the file
    was hashed; the file must still be that object when it is linked."""

    source: Path | str
    dest: Path | str
    expected: Identity
    payload: Any = None  # caller's bookkeeping (e.g. the manifest move)
    error: str | None = None
    done: bool = False


@dataclass
class BatchResult:
    done: list[Move] = field(default_factory=list)
    failed: list[Move] = field(default_factory=list)


def _safe_unlink(path: Path | str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fchmod_nofollow(path: Path | str, mode: int) -> None:
    fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _parent(path: Path | str) -> str:
    """`os.path.dirname` of the absolute paths a batch moves, without its per-call work (a batch
    of 20,000 moves asks it 40,000 times)."""
    text = os.fspath(path)
    cut = text.rfind(os.sep)
    return os.path.dirname(text) if cut <= 0 or text.endswith(os.sep) else text[:cut]


def publish_batch(moves: list[Move], *, checkpoint: Any = None, mode: int | None = None) -> BatchResult:
    """Publish every move of the batch; failures leave their source untouched and are reported in
    `move.error`. `checkpoint(label)` is called after each link and each unlink (the crash tests
    kill the process there). `mode`: the permission bits the published file gets (D6.6: archives
    are 0600), set on the inode before it gains its second name."""
    result = BatchResult()
    _unlink_half(_link_half(moves, result, checkpoint, mode), result, checkpoint)
    return result


def publish_batches(
    batches: Iterable[list[Move]],
    *,
    checkpoint: Any = None,
    mode: int | None = None,
    two_threads: bool = True,
) -> Generator[tuple[list[Move], BatchResult], None, None]:
    """`publish_batch` over successive batches, yielding each batch with its result, in order.
    `two_threads`: two batches in flight — while this thread links batch k+1 (checks, link,
    directory fsync, check), a worker thread removes batch k's original names (unlink, directory
    fsync, final check). Per file the steps and checks of A-4 are those of `publish_batch`, in the
    same order; the halves work on different files and directories and release the GIL in their
    system calls, so a second core can take part of the kernel's work (issue 30). Checkpoints are
    taken one at a time (the crash tests count them); what the worker raises (Ctrl-C at its
    checkpoint: `InterruptRequested`) is raised here, at this thread's next checkpoint or when the
    worker is joined; no worker outlives the generator (close it: `contextlib.closing`)."""
    if not two_threads:
        for batch in batches:
            yield batch, publish_batch(batch, checkpoint=checkpoint, mode=mode)
        return
    import threading

    lock = threading.Lock()
    failure: list[BaseException] = []
    main = threading.current_thread()

    def taken(label: str) -> None:
        if failure and threading.current_thread() is main:
            raise failure[0]
        with lock:
            checkpoint(label)

    step = taken if checkpoint is not None else None

    def unlink(verified: list[Move], result: BatchResult) -> None:
        try:
            _unlink_half(verified, result, step)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failure.append(exc)

    pending: tuple[list[Move], BatchResult, threading.Thread] | None = None
    try:
        for batch in batches:
            result = BatchResult()
            verified = _link_half(batch, result, step, mode)
            done, pending = pending, None
            if done is not None:
                done[2].join()
                if failure:
                    raise failure[0]
            worker = threading.Thread(target=unlink, args=(verified, result), daemon=True)
            worker.start()
            pending = (batch, result, worker)
            if done is not None:
                yield done[0], done[1]
        if pending is not None:
            done, pending = pending, None
            done[2].join()
            if failure:
                raise failure[0]
            yield done[0], done[1]
    finally:
        if pending is not None:
            pending[2].join()  # never leave a thread removing names behind an exception


def _link_half(moves: list[Move], result: BatchResult, checkpoint: Any, mode: int | None) -> list[Move]:
    """Link each move's new name, sync the new names' directories, check each new name is the
    hashed inode with two names: those moves are returned (the others are in `result.failed`)."""
    linked: list[Move] = []
    dest_dirs: set[str] = set()
    for move in moves:
        try:
            st = os.lstat(move.source)
            check_unaliased(move.source, st)
            if not move.expected.same_object(st):
                raise ChangedError("artifact changed before publication")
            if mode is not None and stat.S_IMODE(st.st_mode) != mode:
                _fchmod_nofollow(move.source, mode)
            os.link(move.source, move.dest, follow_symlinks=False)
        except ArtifactError as exc:
            move.error = str(exc)
            result.failed.append(move)
            continue
        except FileExistsError:
            move.error = f"archive path already exists: {move.dest}"
            result.failed.append(move)
            continue
        except FileNotFoundError:
            move.error = f"source is missing: {move.source}"
            result.failed.append(move)
            continue
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                move.error = (
                    f"cannot hard-link {move.source} into {os.path.dirname(move.dest)} ({exc.strerror}); "
                    "source left in place"
                )
            else:
                move.error = f"cannot publish {move.source} at {move.dest}: {exc.strerror or exc}"
            result.failed.append(move)
            continue
        linked.append(move)
        dest_dirs.add(_parent(move.dest))
        if checkpoint is not None:
            checkpoint("linked")
    for directory in dest_dirs:
        fsync_dir(Path(directory))

    verified: list[Move] = []
    for move in linked:
        try:
            # link() made dest a second name of whatever inode source named at that instant: it
            # must be the hashed object, now with exactly two names
            s_dst = os.lstat(move.dest)
            if (
                s_dst.st_nlink != 2
                or not move.expected.same_object(s_dst)
                or s_dst.st_dev != move.expected.dev
            ):
                raise ChangedError("artifact changed during publication")
        except (OSError, ArtifactError) as exc:
            # undo only our own extra name: the destination is ours iff it is the source's inode
            try:
                s_src, s_dst = os.lstat(move.source), os.lstat(move.dest)
                if (s_src.st_ino, s_src.st_dev) == (s_dst.st_ino, s_dst.st_dev):
                    _safe_unlink(move.dest)
            except OSError:
                pass
            move.error = str(exc) if isinstance(exc, ArtifactError) else f"verification failed: {exc}"
            result.failed.append(move)
            continue
        verified.append(move)

    return verified


def _unlink_half(verified: list[Move], result: BatchResult, checkpoint: Any) -> None:
    """Remove the linked and checked moves' original names, sync their directories, check each
    published name is the hashed inode with one name: those are `result.done`."""
    source_dirs: set[str] = set()
    for move in verified:
        try:
            os.unlink(move.source)
        except OSError as exc:
            move.error = f"cannot remove the original name {move.source}: {exc.strerror or exc}"
            _safe_unlink(move.dest)  # both names were the same inode: undo leaves the source intact
            result.failed.append(move)
            continue
        source_dirs.add(_parent(move.source))
        move.done = True
        if checkpoint is not None:
            checkpoint("unlinked")
    for directory in source_dirs:
        fsync_dir(Path(directory))
    for move in verified:
        if not move.done:
            continue
        try:
            st = os.lstat(move.dest)
            if st.st_nlink != 1 or not move.expected.same_object(st):
                raise ChangedError("archive changed after publication")
        except (OSError, ArtifactError) as exc:
            move.done = False
            move.error = f"published file could not be re-verified: {exc}"
            result.failed.append(move)
            continue
        result.done.append(move)


def reconcile_pair(source: Path, dest: Path) -> str:
    """Settle a publication interrupted between link and unlink: when both names are one inode with
    nlink 2, drop the *destination* name (the source keeps the bytes, so this is always safe; the
    move is simply redone later). Returns 'source', 'dest', 'both', 'none' or 'settled'."""
    try:
        s_src = os.lstat(source)
    except FileNotFoundError:
        s_src = None
    try:
        s_dst = os.lstat(dest)
    except FileNotFoundError:
        s_dst = None
    if s_src is not None and s_dst is not None:
        same = (s_src.st_dev, s_src.st_ino) == (s_dst.st_dev, s_dst.st_ino)
        if same and stat.S_ISREG(s_src.st_mode) and s_src.st_nlink == 2:
            os.unlink(dest)
            fsync_dir(dest.parent)
            return "settled"
        return "both"
    if s_src is not None:
        return "source"
    if s_dst is not None:
        return "dest"
    return "none"
