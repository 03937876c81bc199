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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FACTS_VERSION = 2
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


@dataclass
class RowFacts:
    """What `storage` reads of a file store's rows, from one parse of its sessions.json:
    `facts` (`load_file_facts()`, store order), key -> snapshot bytes of the rows that have some,
    and per row in the facts' order its storage kind (an index into `kind_names`) and its key's
    shape (`archiving.key_shape`), one byte each."""

    facts: dict[str, Any]
    snaps: dict[str, int] = field(default_factory=dict)
    kind_names: list[str] = field(default_factory=list)
    kinds: bytearray = field(default_factory=bytearray)
    shapes: bytearray = field(default_factory=bytearray)
    _kind_index: dict[str, int] = field(default_factory=dict, repr=False)

    def add_row(self, key: str, entry: Any) -> None:
        """One whole usable row, as `load_file_facts(on_row)` passes it (its facts made there)."""
        from openclaw_cli.maintenance.archiving import key_shape
        from openclaw_cli.maintenance.storage import snapshot_bytes_of, storage_kind

        size = snapshot_bytes_of(entry)
        if size:
            self.snaps[key] = size
        kind = storage_kind(key, entry)
        index = self._kind_index.get(kind)
        if index is None:
            index = self._kind_index[kind] = len(self.kind_names)
            self.kind_names.append(kind)
        self.kinds.append(index)
        self.shapes.append(key_shape(key))

    def whole(self) -> bool:
        """Every row of `facts` has its kind and shape."""
        return len(self.kinds) == len(self.facts) == len(self.shapes)

    def key_shapes(self) -> dict[str, int]:
        return dict(zip(self.facts, self.shapes, strict=True))

    def row_kinds(self) -> Iterator[str]:
        """The storage kind of every row of `facts`, in order."""
        return map(self.kind_names.__getitem__, self.kinds)


def _code_digest() -> str:
    """What the facts depend on besides the file: the modules that make them."""
    import hashlib

    from openclaw_cli import keys
    from openclaw_cli.maintenance import archiving, storage
    from openclaw_cli.store import facts
    from openclaw_cli.store.legacy import store as legacy

    digest = hashlib.sha256()
    for module in (facts, legacy, keys, archiving, storage):
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

    def load(self) -> RowFacts | None:
        """What was kept for this very file, or None."""
        if self.path is None or not self._code:
            return None
        from openclaw_cli.fsio import read_cache_value

        data = read_cache_value(self.path)
        if (
            isinstance(data, tuple)
            and len(data) == 9
            and data[0] == FACTS_VERSION
            and data[1] == self._code
            and data[2] == self.store_path
            and data[3] == self.signature
            and type(data[4]) is dict
            and type(data[5]) is dict
            and type(data[6]) is list
            and type(data[7]) is bytes
            and type(data[8]) is bytes
        ):
            rows = RowFacts(data[4], data[5], data[6], bytearray(data[7]), bytearray(data[8]))
            if rows.whole() and max(rows.kinds, default=0) < max(len(rows.kind_names), 1):
                return rows
        return None

    def keep(self, rows: RowFacts) -> None:
        """Keep what was made from the file, when the file is still the one signed before it was
        read and was not written in the last seconds."""
        if self.path is None or not self._code or self.signature is None or not rows.whole():
            return
        if self.signature[3] >= time.time_ns() - _SETTLE_NS:
            return  # racily clean: read again next time
        if file_signature(self.store_path) != self.signature:
            return  # written meanwhile: what was read may be either version
        from openclaw_cli.fsio import write_cache_value

        write_cache_value(
            self.path,
            (
                FACTS_VERSION,
                self._code,
                self.store_path,
                self.signature,
                rows.facts,
                rows.snaps,
                rows.kind_names,
                bytes(rows.kinds),
                bytes(rows.shapes),
            ),
        )
