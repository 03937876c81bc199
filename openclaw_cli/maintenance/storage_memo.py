"""A file store's whole tally kept between `openclaw storage` runs (issue 27, 100,000 sessions).

With its rows' facts kept (`storage_facts`) and every transcript's figures kept (`FileFigures`),
a warm run still walked 100,000 rows and 100,000 files in Python to add the same figures up
again: resolving each row's file, an lstat and a record comparison per file, the kinds, the
heaps. When neither the store file nor any entry of its sessions dir changed, the tally's answer
is the one the last run gave, so it is kept here: the state of the tally after this store (its
classes, media, biggest events and sessions, kinds, ordinal, sessions read and the names its rows
reference), in the cache dir (`<cache>/storage/<sha256 of the store's real path>.tally`,
marshal), under a key made of

* the code that tallies (the modules of `_code_digest`),
* the store (path, sessions dir, agent) and its file's signature (device, inode, size, mtime,
  ctime),
* one listing of the sessions dir (`Listing`: every entry's name and lstat, in listing order: a
  file written, added, removed or renamed changes it; a listing in another order only misses),
* `--top`, and the tally's state before this store (a state of several stores is the same chain
  of states run after run).

A run whose key matches takes the state and reads no row and no file; any other run tallies as
before and keeps its state when it is safe to: no unreadable file met, every transcript named is a
regular file directly in the sessions dir, no symbolic link or special file there (resolution
would note it), and nothing written in the last two seconds (git's "racily clean": written again
within the clock's resolution, a file could keep its size, mtime and ctime). As the other caches:
never the source of truth, a missing, damaged or foreign memo is made again, an unwritable cache
dir only costs the speed, and nothing under the state dir is written."""

from __future__ import annotations

import os
import stat
import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

MEMO_VERSION = 1
_SETTLE_NS = 2_000_000_000


@dataclass
class Listing:
    """One pass over a directory: every entry's name and lstat fields, in listing order, one
    compact array per field (a sessions dir of 100,000 files is held through the cleanup plan,
    whose peak is `storage`'s). Entries whose lstat failed (gone meanwhile, or not allowed) are in
    `failed` and nowhere else. Every field is also folded into `digest` as the listing is taken
    (the memo's key). mtimes and ctimes are kept (1.6 MB at 100,000 files): the plan's snapshot
    and `FileFigures.check_listing` read them."""

    path: str
    ident: tuple[int, int] = (0, 0)  # the directory's (device, inode)
    taken_ns: int = 0  # when the listing began (wall clock)
    names: list[str] = field(default_factory=list)
    modes: array[int] = field(default_factory=lambda: array("I"))
    nlinks: array[int] = field(default_factory=lambda: array("Q"))
    inos: array[int] = field(default_factory=lambda: array("Q"))
    sizes: array[int] = field(default_factory=lambda: array("q"))
    blocks: array[int] = field(default_factory=lambda: array("q"))
    mtimes: array[int] = field(default_factory=lambda: array("q"))
    ctimes: array[int] = field(default_factory=lambda: array("q"))
    other_devs: dict[int, int] = field(default_factory=dict)  # entry -> device, when not the dir's
    failed: list[tuple[str, str]] = field(default_factory=list)  # (name, error)
    digest: bytes = b""  # of the path and every entry's name and fields, ctime included
    newest_mtime_ns: int = 0
    given: bool = False  # `regular_files` taken (the plan's snapshot)

    def entries(self) -> Iterator[tuple[Any, ...]]:
        """(name, mode, nlink, dev, ino, size, blocks) of every entry, in listing order."""
        dev = self.ident[0]
        devs: Iterable[int] = (
            repeat(dev, len(self.names))
            if not self.other_devs
            else [self.other_devs.get(i, dev) for i in range(len(self.names))]
        )
        return zip(self.names, self.modes, self.nlinks, devs, self.inos, self.sizes, self.blocks, strict=True)

    def regular_files(self) -> Iterator[tuple[str, int, int]] | None:
        """(name, size, mtime_ns) of the regular files, in listing order; once (None after that:
        a second plan of the directory lists it itself)."""
        if self.given:
            return None
        self.given = True
        regular = stat.S_IFREG
        return (
            (name, size, mtime)
            for name, mode, size, mtime in zip(self.names, self.modes, self.sizes, self.mtimes, strict=True)
            if mode & 0o170000 == regular
        )

    def index(self) -> dict[str, str]:
        """name -> "file" | "link" | "other" of every entry (the legacy store's directory index,
        `LegacyStore._dir_index`, without listing the directory again)."""
        if self._all_regular():  # (the usual sessions dir: no per-entry Python)
            return dict.fromkeys(self.names, "file")
        kinds = {stat.S_IFREG: "file", stat.S_IFLNK: "link"}
        return dict(
            zip(self.names, [kinds.get(mode & 0o170000, "other") for mode in self.modes], strict=True)
        )

    def _all_regular(self) -> bool:
        """Every entry a regular file: its mode's type bits are S_IFREG (0o100000) exactly when the
        mode is in [0o100000, 0o110000), so the least and the greatest mode (C-level) tell."""
        modes = self.modes
        return not modes or (min(modes) >= stat.S_IFREG and max(modes) < stat.S_IFREG + 0o10000)

    def plain(self) -> bool:
        """Every entry a regular file or a directory, each one's lstat taken."""
        if self.failed:
            return False
        if self._all_regular():
            return True
        for mode in self.modes:
            kind = mode & 0o170000
            if kind != stat.S_IFREG and kind != stat.S_IFDIR:
                return False
        return True


def list_dir(directory: str) -> Listing | None:
    """The listing of `directory`, through a directory descriptor (each lstat relative to it);
    None when it cannot be listed."""
    out = Listing(directory, taken_ns=time.time_ns())
    fd = None
    if os.scandir in os.supports_fd:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
    try:
        own = os.fstat(fd) if fd is not None else os.stat(directory)
        out.ident = (own.st_dev, own.st_ino)
        it = os.scandir(directory if fd is None else fd)
    except OSError:
        if fd is not None:
            os.close(fd)
        return None
    dev = own.st_dev
    names, failed, other_devs = out.names, out.failed, out.other_devs
    mtimes, ctimes = out.mtimes, out.ctimes
    add_name, add_mode, add_nlink, add_ino = (
        names.append,
        out.modes.append,
        out.nlinks.append,
        out.inos.append,
    )
    add_size, add_blocks, add_mtime, add_ctime = (
        out.sizes.append,
        out.blocks.append,
        mtimes.append,
        ctimes.append,
    )
    try:
        with it:
            for item in it:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError as exc:
                    failed.append((item.name, exc.strerror or str(exc)))
                    continue
                if st.st_dev != dev:
                    other_devs[len(names)] = st.st_dev
                add_name(item.name)
                add_mode(st.st_mode)
                add_nlink(st.st_nlink)
                add_ino(st.st_ino)
                add_size(st.st_size)
                add_blocks(st.st_blocks)
                add_mtime(st.st_mtime_ns)
                add_ctime(st.st_ctime_ns)
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    import hashlib

    h = hashlib.sha256(os.fsencode(directory))
    h.update(repr((out.ident, len(names), sorted(other_devs.items()))).encode())
    h.update("\0".join(names).encode("utf-8", "surrogateescape"))
    for column in (out.modes, out.nlinks, out.inos, out.sizes, out.blocks, mtimes, ctimes):
        h.update(column.tobytes())
    out.digest = h.digest()
    out.newest_mtime_ns = max(mtimes, default=0)
    return out


def _code_digest() -> str:
    """What a kept tally depends on besides the files: the modules that make it."""
    import hashlib

    from openclaw_cli import keys
    from openclaw_cli.maintenance import storage, storage_facts
    from openclaw_cli.store import facts
    from openclaw_cli.store.legacy import store as legacy

    digest = hashlib.sha256()
    here = Path(__file__)
    # (the operation that drives the tally named by its file: this layer does not import it)
    files = [Path(m.__file__ or "") for m in (facts, legacy, keys, storage, storage_facts)]
    for path in (*files, here.parent.parent / "ops" / "storage.py", here):
        try:
            digest.update(path.read_bytes())
        except OSError:
            return ""  # (unknown code: never matches, never kept)
    return digest.hexdigest()[:32]


class RowWatch:
    """Whether every row of a file store whose transcript was not found would be looked for in the
    listed sessions dir only (`_inside`): a file appearing elsewhere could be found by a later run
    with the same listing."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.inside = True

    def rows(self, rows: Iterable[tuple[str, Any, str | None]]) -> Iterator[tuple[str, Any, str | None]]:
        prefix, cut = self.prefix, len(self.prefix)
        for row in rows:
            if row[2] is None:
                entry = row[1]
                ref = entry.get("sessionFile") if isinstance(entry, dict) else None
                if ref and not _inside(ref, prefix, cut):
                    self.inside = False
            yield row


def _inside(ref: Any, prefix: str, cut: int) -> bool:
    """Whether a row's `sessionFile` names a file of the sessions dir only (a plain name there, a
    database reference, `<sessions dir>/<name>`), as the legacy store's resolution reads it."""
    if type(ref) is not str:
        return False
    if ref.startswith("sqlite:"):
        return True
    if ref.startswith(prefix):
        return "/" not in ref[cut:] and "\\" not in ref
    return "/" not in ref and "\\" not in ref and ref not in (".", "..")


def tally_state(tally: Any, by_kind: dict[str, list[int]], top_sessions: list[Any]) -> tuple[Any, ...]:
    """Everything `tally_sessions` changes besides its store's own results."""
    return (tally.classes, tally.media, tally.top_events, tally.ordinal, by_kind, top_sessions)


class TallyMemo:
    """The tally of one file store, from the cache when nothing it reads changed (`load`), else
    made by the caller and kept (`keep`)."""

    def __init__(
        self,
        store_path: str,
        sessions_dir: str,
        agent_id: str,
        cache_root: Path,
        top_n: int,
        state: tuple[Any, ...],
        listing: Listing | None = None,
    ):
        from openclaw_cli.maintenance.storage_facts import file_signature

        self.store_path = store_path
        self.prefix = sessions_dir.rstrip("/") + "/"
        self.path: Path | None = None
        self.key = ""
        self.signature = file_signature(store_path)
        self.listing = listing if listing is not None else list_dir(sessions_dir)
        # what `keep` asks of the listing, taken now: the listing itself may be let go before
        # (`release`) while the store is tallied
        self._plain = self.listing is not None and self.listing.plain()
        self._newest_ns = self.listing.newest_mtime_ns if self.listing is not None else 0
        self._taken_ns = self.listing.taken_ns if self.listing is not None else 0
        if self.signature is None or self.listing is None:
            return
        code = _code_digest()
        if not code:
            return
        import hashlib

        real = os.path.realpath(store_path)
        name = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        self.path = cache_root / "storage" / f"{name}.tally"
        h = hashlib.sha256()
        # (repr: the same values give the same text; marshal's bytes depend on reference counts)
        h.update(
            repr((MEMO_VERSION, code, store_path, sessions_dir, agent_id, self.signature, top_n)).encode()
        )
        h.update(self.listing.digest)
        h.update(repr(state).encode("utf-8", "surrogatepass"))
        self.key = h.hexdigest()

    def load(self) -> tuple[int, list[str], tuple[Any, ...]] | None:
        """(sessions read, names the rows reference, the tally's state after the store) kept under
        this very key, or None."""
        if self.path is None:
            return None
        from openclaw_cli.fsio import read_cache_value

        data = read_cache_value(self.path)
        if (
            isinstance(data, tuple)
            and len(data) == 5
            and data[0] == MEMO_VERSION
            and data[1] == self.key
            and type(data[2]) is int
            and type(data[3]) is list
            and isinstance(data[4], tuple)
            and len(data[4]) == 6
        ):
            return data[2], data[3], data[4]
        return None

    def release(self) -> None:
        """Let the listing go (a store tallied by reading: its figures cache and referenced paths
        are built meanwhile, and the walk lists the directory itself)."""
        self.listing = None

    def keep(self, sessions: int, referenced: set[str], state: tuple[Any, ...]) -> None:
        """Keep the state the tally reached, when what it read is what the key names."""
        from openclaw_cli.maintenance.storage_facts import file_signature

        if self.path is None or not self._plain:
            return
        settled = self._taken_ns - _SETTLE_NS
        if self._newest_ns >= settled or self.signature is None or self.signature[3] >= settled:
            return  # racily clean: tallied again next time
        if file_signature(self.store_path) != self.signature:
            return  # the store written meanwhile: what was tallied may be either version
        prefix, cut = self.prefix, len(self.prefix)
        names = [path[cut:] for path in referenced if path.startswith(prefix)]
        # a transcript outside the listing (another dir, a subdirectory, the dir itself): its
        # changes would not change the key (a name with a "/" puts one in the names joined)
        if len(names) != len(referenced) or prefix in referenced or "/" in "".join(names):
            return
        from openclaw_cli.fsio import write_cache_value

        write_cache_value(self.path, (MEMO_VERSION, self.key, sessions, names, state))


def restore_state(
    state: tuple[Any, ...], tally: Any, by_kind: dict[str, list[int]], top_sessions: list[Any]
) -> None:
    """Put a kept state in place (the same objects the caller holds, their contents replaced)."""
    classes, media, top_events, ordinal, kinds, tops = state
    tally.classes.clear()
    tally.classes.update(classes)
    tally.media.clear()
    tally.media.update(media)
    tally.top_events[:] = top_events
    tally.ordinal = ordinal
    by_kind.clear()
    by_kind.update(kinds)
    top_sessions[:] = tops
