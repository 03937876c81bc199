"""A file store's rows' facts kept between `openclaw storage` runs (issue 27, 100,000 sessions).

`storage` makes each file store's `load_file_facts()` (what the cleanup plan reads of every row)
with each row's snapshot bytes (what its tally reads of a whole row besides them) from one parse
of `sessions.json`: at 100,000 rows a second of cutting and parsing, for the same answer every run
while the file is unchanged. Kept here, in the cache dir
(`<cache>/storage/<sha256 of the store's real path>.facts`, marshal), keyed by the file's
signature (device, inode, size, mtime, ctime) and by the code that makes the facts (the source of
`store/facts.py` and of the legacy store's row cutter): a file whose signature matches is not read.

As `FileFigures`: never the source of truth (a missing, damaged or foreign cache is made again),
nothing under the state dir is written, an unwritable cache dir only costs the speed, and a file
written in the last two seconds is not kept (it could be written again within the clock's
resolution with the same size, mtime and ctime: git's "racily clean")."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

FACTS_VERSION = 1
_SETTLE_NS = 2_000_000_000

Signature = tuple[int, int, int, int, int]


def file_signature(path: str) -> Signature | None:
    """(device, inode, size, mtime_ns, ctime_ns) of a regular file, None otherwise."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if st.st_mode & 0o170000 != 0o100000:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _code_digest() -> str:
    """What the facts depend on besides the file: the modules that make them."""
    import hashlib

    from openclaw_cli.store import facts
    from openclaw_cli.store.legacy import store as legacy

    digest = hashlib.sha256()
    for module in (facts, legacy):
        try:
            digest.update(Path(module.__file__ or "").read_bytes())
        except OSError:
            return ""  # (unknown code: never matches, never kept)
    return digest.hexdigest()[:32]


class StoreFacts:
    """The facts and snapshot bytes of one file store's rows, from the cache when its
    `sessions.json` is unchanged (`load`), else made by the caller and kept (`keep`)."""

    def __init__(self, store_path: str, cache_root: Path | None):
        self.store_path = store_path
        self.path: Path | None = None
        self.signature = file_signature(store_path)
        self._code = ""
        if cache_root is not None and self.signature is not None:
            import hashlib

            real = os.path.realpath(store_path)
            name = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]
            self.path = cache_root / "storage" / f"{name}.facts"
            self._code = _code_digest()

    def load(self) -> tuple[dict[str, Any], dict[str, int]] | None:
        """(facts, key -> snapshot bytes) as kept for this very file, or None."""
        if self.path is None or not self._code:
            return None
        import marshal

        try:
            data = marshal.loads(self.path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if (
            isinstance(data, tuple)
            and len(data) == 6
            and data[0] == FACTS_VERSION
            and data[1] == self._code
            and data[2] == self.store_path
            and data[3] == self.signature
            and type(data[4]) is dict
            and type(data[5]) is dict
        ):
            return data[4], data[5]
        return None

    def keep(self, facts: dict[str, Any], snaps: dict[str, int]) -> None:
        """Keep what was made from the file, when the file is still the one signed before it was
        read and was not written in the last seconds."""
        if self.path is None or not self._code or self.signature is None:
            return
        if self.signature[3] >= time.time_ns() - _SETTLE_NS:
            return  # racily clean: read again next time
        if file_signature(self.store_path) != self.signature:
            return  # written meanwhile: what was read may be either version
        import marshal

        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            blob = marshal.dumps((FACTS_VERSION, self._code, self.store_path, self.signature, facts, snaps))
            tmp.write_bytes(blob)
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            try:
                tmp.unlink()
            except OSError:
                pass
