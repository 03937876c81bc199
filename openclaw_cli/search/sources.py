"""Everything of one agent that holds transcript lines, each as a `Source` with a cheap change
token: the live transcripts (legacy JSONL files, our SQLite, OpenClaw schema 23/24 databases),
the archives beside them (`*.jsonl.{deleted,reset,bak}.<ts>[.zst]`, cold `sessions/cold/*.zst`),
the archive blobs inside OpenClaw databases (`session_transcript_archives`,
`session_transcript_cold_archives` with sqlite storage) and the migration's import archive
(`session-sqlite-import-archive/`). Everything here only reads.

`source` (the JSON field) names where a line came from: `legacy`, `sqlite`, `schema23`,
`schema24`, `archive:deleted`, `archive:reset`, `archive:bak`, `archive-blob:deleted`,
`archive-blob:reset`, `cold-archive`, `import-archive`.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from openclaw_cli.store.base import ReadIssue

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.store.base import SessionStore
    from openclaw_cli.store.detect import LegacyLocation

LIVE_SOURCES = ("legacy", "sqlite", "schema23", "schema24")
# (position: byte offset or seq, where reading resumes after it, 1-based line number, raw JSON bytes)
Line = tuple[int, int, int, bytes]


class Source:
    """One transcript, archive or blob of an agent, with the token that changes with its content."""

    __slots__ = (
        "locator",
        "source",
        "session_id",
        "session_key",
        "token",
        "size",
        "reader",
        "append_only",
        "mtime_ms",
        "their_fts",
    )

    def __init__(
        self,
        locator: str,  # unique within one agent's index
        source: str,  # the JSON `source` value
        session_id: str | None,
        session_key: str | None,
        token: str,  # changes whenever the content may have changed
        size: int,  # bytes (for throughput figures)
        reader: Reader,
        append_only: bool = False,  # a live transcript: growth is new lines after the indexed ones
        mtime_ms: int = 0,  # fallback timestamp of lines without one
        their_fts: bool = False,  # OpenClaw's own FTS holds its user/assistant lines (complete)
    ):
        self.locator = locator
        self.source = source
        self.session_id = session_id
        self.session_key = session_key
        self.token = token
        self.size = size
        self.reader = reader
        self.append_only = append_only
        self.mtime_ms = mtime_ms
        self.their_fts = their_fts

    def fallback_ms(self) -> int:
        """The timestamp of lines that carry none: the file's mtime, or an archive name's time."""
        if self.mtime_ms >= 0:
            return self.mtime_ms
        from openclaw_cli.store.archives import parse_archive_name

        parsed = parse_archive_name(self.locator.split(":", 1)[-1])
        return parsed[2] or 0 if parsed else 0

    @property
    def label(self) -> str:
        """Where it is, for skipped-line reports."""
        return self.reader.describe(self.locator)

    def line_identity(self) -> str | None:
        """What identifies the content of an archive whose lines cost more than a read to get
        back (a compressed file: its size, mtime and inode; a blob: its sha256): under it, the
        line at a position never changes. None for the rest (a live transcript grows; a plain
        file's line is one `pread`)."""
        reader = self.reader
        if isinstance(reader, FileReader):
            return reader.identity()
        if isinstance(reader, BlobReader):
            return self.token
        return None


class Reader:
    """Reads a source's lines; `position` is what `read_at` takes back."""

    __slots__ = ()

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        """Lines after the resume point `after` (None: all), numbered from `first_line`."""
        raise NotImplementedError

    def read_at(self, position: int) -> bytes | None:
        raise NotImplementedError

    def tail_signature(self, position: int) -> bytes | None:
        """A few bytes ending at `position`, to tell an append from a rewrite."""
        return None

    def describe(self, locator: str) -> str:
        """Where the source is, for skipped-line reports."""
        return locator

    def line_complete(self, end: int) -> bool:
        """Whether the line that ends at `end` was whole when read (False: the last line of a
        growing file, its newline not written yet)."""
        return True


CACHE_ARCHIVE_BYTES = 32 << 20  # a decompressed archive kept for the snippets of one search
# an archive is decompressed for a snippet up to its line's end, this much at a time
ARCHIVE_READ_STEP = 64 << 10


def _line_at(lines: Iterator[bytes], position: int) -> bytes | None:
    pos = 0
    for line in lines:
        if pos == position:
            return line.strip() or None
        pos += len(line)
        if pos > position:
            return None
    return None


class _Prefixed:
    """A stream whose first bytes were already read."""

    def __init__(self, head: bytes, rest: Any):
        self.head, self.rest = head, rest

    def read(self, size: int) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            return out
        data: bytes = self.rest.read(size)
        return data


class FileReader(Reader):
    __slots__ = ("path", "compressed", "_data", "_whole", "_tail")

    def __init__(self, path: Path | str, compressed: bool = False):
        self.path = path
        self.compressed = compressed
        # a decompressed archive's first bytes (all of it when `_whole`), kept for one search's snippets
        self._data: bytes | None = None
        self._whole = False
        # (offset, bytes) around the last line `lines` gave of a plain file: what the signature
        # taken right after reading asks for, without opening the file again
        self._tail: tuple[int, bytes] | None = None

    def describe(self, locator: str) -> str:
        return f"{self.path}"

    def identity(self) -> str | None:
        """A compressed archive's size, mtime and inode (None: a plain file, or not a regular one)."""
        if not self.compressed:
            return None
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return _file_token(st) if stat.S_ISREG(st.st_mode) else None

    def _open(self) -> Any:
        from openclaw_cli.store.archives import open_archive

        return open_archive(Path(self.path), compressed=self.compressed)

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        self._tail = None
        with self._open() as raw:
            pos = 0
            if after and not self.compressed:
                raw.seek(after)
                pos = after
            window: list[Any] = [pos, b""]  # the chunk being cut: (its offset, its bytes)
            last: Line | None = None
            try:
                for line in _numbered_lines(raw, pos, first_line - 1, window=window):
                    if after and line[0] < after:  # a stream that cannot seek: skipped up to `after`
                        continue
                    last = line
                    yield line
            finally:
                if last is not None and not self.compressed:
                    # the bytes from 64 before the last line's start to its end (and its newline):
                    # a signature at its start or its end comes from them
                    base, data = window
                    lo = max(base, last[0] - 64)
                    if lo <= last[1] <= base + len(data):  # else cut from an earlier chunk
                        self._tail = (lo, data[lo - base : last[1] - base])

    def _tail_bytes(self, start: int, end: int) -> bytes | None:
        """File bytes [start, end) as `lines` read them, when they are in its tail (else None)."""
        tail = self._tail
        if tail is None:
            return None
        lo, data = tail
        if lo <= start and end <= lo + len(data):
            return data[start - lo : end - lo]
        return None

    def _held(self, position: int) -> bool:
        """Whether the kept bytes hold the whole line at `position`."""
        data = self._data
        return data is not None and (self._whole or data.find(b"\n", position) >= 0)

    def read_at(self, position: int) -> bytes | None:
        if self._held(position):
            return self._slice(position)
        if not self.compressed:
            return _plain_line_at(self.path, position)
        with self._open() as raw:
            # decompressed up to the end of the line only (a hit need not pay for the archive's
            # rest), and kept for the search's other hits in it
            chunks: list[bytes] = []
            size = 0
            while size < CACHE_ARCHIVE_BYTES:
                chunk = raw.read(ARCHIVE_READ_STEP)
                if not chunk:
                    self._whole = True
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > position and chunk.find(b"\n", max(0, position - (size - len(chunk)))) >= 0:
                    break
            if size >= CACHE_ARCHIVE_BYTES:  # too big to keep: read up to the line
                return _line_at(_chunked_lines(_Prefixed(b"".join(chunks), raw)), position)
            self._data = b"".join(chunks)
        return self._slice(position)

    def _slice(self, position: int) -> bytes | None:
        data = self._data or b""
        end = data.find(b"\n", position)
        return data[position : end if end >= 0 else len(data)].strip() or None

    def line_complete(self, end: int) -> bool:
        if self.compressed or end <= 0:
            return True
        try:
            with open(self.path, "rb") as fh:
                fh.seek(end - 1)
                return fh.read(1) == b"\n"
        except OSError:
            return True

    def tail_signature(self, position: int) -> bytes | None:
        if self.compressed or position <= 0:
            return None
        # right after reading: the bytes read, which are what was indexed (used once: a later
        # check of the same reader must see the file as it is then)
        known, self._tail = self._tail_bytes(max(0, position - 64), position), None
        if known is not None:
            return known
        try:
            with open(self.path, "rb") as fh:
                fh.seek(max(0, position - 64))
                return fh.read(min(64, position))
        except OSError:
            return None


PLAIN_READ_FIRST = 16 << 10  # a plain transcript's line is read this much first (most lines are shorter)
PLAIN_READ_STEP = 64 << 10  # then this much at a time


def _plain_line_at(path: Path | str, position: int) -> bytes | None:
    """The stripped line of a plain file that starts at byte `position` (None: blank or past the
    end), opened as `open_archive` opens it (no symbolic link followed, a regular file only, the
    same errors) and read with `pread` up to its newline on the bare descriptor: a snippet's one
    line needs neither a file object nor the buffered `readline` (8 KiB at a time for lines of
    tens of KB), and mostly one read of PLAIN_READ_FIRST bytes, not a step's 64 KiB copied."""
    from openclaw_cli.store.archives import not_regular, open_archive_fd

    fd = open_archive_fd(path)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):  # what open_archive's file object says of a directory
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            raise not_regular(path)
        chunk = os.pread(fd, PLAIN_READ_FIRST, position)
        end = chunk.find(b"\n")
        if end >= 0 or not chunk:
            line = chunk[:end] if end >= 0 else chunk
        else:
            chunks = [chunk]
            at = position + len(chunk)
            while True:
                chunk = os.pread(fd, PLAIN_READ_STEP, at)
                if not chunk:
                    break
                end = chunk.find(b"\n")
                if end >= 0:
                    chunks.append(chunk[:end])
                    break
                chunks.append(chunk)
                at += len(chunk)
            line = b"".join(chunks)
    finally:
        os.close(fd)
    return line.strip() or None


_BLANK = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() removes


def _numbered_lines(
    stream: Any, pos: int, number: int, size: int = 1 << 20, window: list[Any] | None = None
) -> Iterator[Line]:
    """The non-blank lines of a stream read from byte `pos` on, stripped, numbered after `number`:
    (start, end after its newline, number, bytes). Read in chunks and cut with `find`: one copy
    of each line (a line-by-line read copies it twice, the strip a third time). `window` is kept
    at [offset, bytes] of the chunk the lines last given were cut from."""
    rest = b""
    while True:
        chunk = stream.read(size)
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        if window is not None:
            window[0], window[1] = pos, data
        find = data.find
        start = 0
        while True:
            end = find(b"\n", start)
            if end < 0:
                break
            line = data[start:end]
            if line and (line[0] in _BLANK or line[-1] in _BLANK):
                line = line.strip()
            if line:
                number += 1
                yield pos + start, pos + end + 1, number, line
            start = end + 1
        pos += start
        rest = data[start:]
    if rest:
        line = rest.strip()
        if line:
            yield pos, pos + len(rest), number + 1, line


def _chunked_lines(stream: Any, size: int = 1 << 20) -> Iterator[bytes]:
    """Lines (with their newline) of a stream that only offers read()."""
    rest = b""
    while True:
        chunk = stream.read(size)
        if not chunk:
            break
        data = rest + chunk
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            yield data[start : end + 1]
            start = end + 1
        rest = data[start:]
    if rest:
        yield rest


class BlobReader(Reader):
    """An archive held as a blob in an OpenClaw database (identity or zstd)."""

    __slots__ = ("db_path", "sql", "key", "compressed")

    def __init__(self, db_path: Path, sql: str, key: tuple[Any, ...], compressed: bool):
        self.db_path = db_path
        self.sql = sql
        self.key = key
        self.compressed = compressed

    def describe(self, locator: str) -> str:
        return f"{self.db_path}#{locator}"

    def _data(self) -> bytes:
        from openclaw_cli.store.sqlite_common import open_readonly

        ro = open_readonly(self.db_path)
        try:
            row = ro.conn.execute(self.sql, self.key).fetchone()
        finally:
            ro.close()
        blob = bytes(row[0]) if row and row[0] is not None else b""
        if self.compressed and blob:
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob)) as reader:
                blob = reader.read()
        return blob

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        data = self._data()
        pos, number = 0, first_line - 1
        for line in io.BytesIO(data):
            start = pos
            pos += len(line)
            stripped = line.strip()
            if stripped:
                number += 1
                yield start, pos, number, stripped

    def read_at(self, position: int) -> bytes | None:
        data = self._data()
        end = data.find(b"\n", position)
        return data[position : end if end >= 0 else len(data)].strip() or None


class EventsReader(Reader):
    """One session's events in a SQLite store (ours, or OpenClaw's with zstd payloads)."""

    __slots__ = ("conn", "session_id", "compressed_column")

    def __init__(self, conn: Any, session_id: str, compressed_column: bool):
        self.conn = conn  # a shared read-only connection of the store
        self.session_id = session_id
        self.compressed_column = compressed_column

    def _decode(self, text: Any, blob: Any, size: Any) -> bytes | None:
        if text is not None:
            return text.encode("utf-8") if isinstance(text, str) else bytes(text)
        if blob is None:
            return None
        import zstandard

        try:
            return zstandard.ZstdDecompressor().decompress(
                bytes(blob), max_output_size=max(int(size or 0), 1) + 1
            )
        except zstandard.ZstdError:
            return None

    def _select(self) -> str:
        cols = (
            "seq, event_json, event_zstd, event_utf8_bytes"
            if self.compressed_column
            else "seq, event_json, NULL, NULL"
        )
        return f"SELECT {cols} FROM transcript_events WHERE session_id = ?"

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        sql = self._select() + (" AND seq > ?" if after is not None else "") + " ORDER BY seq"
        params = (self.session_id, after) if after is not None else (self.session_id,)
        for seq, text, blob, size in self.conn.execute(sql, params):
            data = self._decode(text, blob, size)
            if data is not None:
                yield seq, seq, seq + 1, data

    def read_at(self, position: int) -> bytes | None:
        row = self.conn.execute(self._select() + " AND seq = ?", (self.session_id, position)).fetchone()
        return self._decode(*row[1:]) if row else None

    def tail_signature(self, position: int) -> bytes | None:
        data = self.read_at(position)
        return data[-64:] if data else None


# A file found by the directory scans, made a `Source` only when needed (a search whose index is
# up to date builds the few its hits name): (locator, source, session_id, path, token, size,
# compressed, append_only, mtime_ms, key set: 0 the store's keys, 1 the import archive's).
Spec = tuple[str, str, str | None, str, str, int, bool, bool, int, int]


class AgentSources:
    """Everything of one agent that holds transcript lines. Database sources are built at once
    (their tokens come from queries); files are scanned into `Spec`s, built on demand, and their
    session keys (from `sessions.json`) read only then. `fingerprint()` sums up every token and
    what the keys come from, so an index built from the same fingerprint needs no update."""

    def __init__(self, agent_id: str, sources: list[Source] | None = None):
        self.agent_id = agent_id
        self.issues: list[ReadIssue] = []
        self.db_conn: Any = None  # the read-only connection EventsReaders share (closed by `close`)
        self.openclaw_fts: Any = None  # (db path, schema label) when the store has OpenClaw's own FTS
        self.eager: list[Source] = list(sources or [])
        self._specs: list[Spec] = []
        self._makers: list[Callable[[], list[Spec]]] = []  # scans whose specs are built on demand
        # one spec by locator from a scan whose specs were not built (None: not one of its own)
        self._finders: list[Callable[[str], Spec | None]] = []
        self.fp_parts: list[str] = []  # "<locator>\0<token>" of every spec, cheaper than the specs
        # (a sessions directory's: one part, the digest of its files' parts, `dir_sources` more)
        self.dir_sources = 0
        self.stamps: list[str] = []  # tokens of what the keys are read from
        self.db_keys: dict[str, str] = {}
        self.key_files: tuple[list[Path], list[Path]] = ([], [])  # sessions.json files per key set
        self._keys: list[dict[str, str]] | None = None
        self._sources: list[Source] | None = None
        self._specs_by_locator: dict[str, Spec] | None = None
        self._built_by_locator: tuple[list[Source], dict[str, Source]] | None = None

    @property
    def specs(self) -> list[Spec]:
        while self._makers:
            self._specs.extend(self._makers.pop(0)())
        self._finders.clear()
        return self._specs

    def add_specs(self, specs: list[Spec]) -> None:
        self._makers.append(lambda: specs)
        self.fp_parts.extend(f"{spec[0]}\0{spec[4]}" for spec in specs)

    def subset(self, sources: list[Source]) -> AgentSources:
        """The same agent with only `sources` (one shard's part), sharing its connection."""
        part = AgentSources(self.agent_id, sources)
        part.issues, part.db_conn, part.openclaw_fts = self.issues, self.db_conn, self.openclaw_fts
        part._sources = part.eager
        return part

    def keys(self, which: int) -> dict[str, str]:
        """sessionId -> key: the store's (0) or the import archive's (1)."""
        if self._keys is None:
            main: dict[str, str] = {}
            for path in self.key_files[0]:
                main.update(_legacy_keys(path))
            for sid, key in self.db_keys.items():
                main.setdefault(sid, key)
            archived = dict(main)
            for path in self.key_files[1]:
                for sid, key in _legacy_keys(path).items():
                    archived.setdefault(sid, key)
            self._keys = [main, archived]
        return self._keys[which]

    def _build(self, spec: Spec, keyed: bool = True) -> Source:
        """`keyed` False: no session key unless the keys were read already (a search whose index is
        up to date takes the key the index holds)."""
        locator, kind, sid, path, token, size, compressed, append_only, mtime_ms, which = spec
        key = None
        if sid is not None and (keyed or self._keys is not None):
            key = self.keys(which).get(sid)
        return Source(
            locator,
            kind,
            sid,
            key,
            token,
            size,
            FileReader(path, compressed),
            append_only=append_only,
            mtime_ms=mtime_ms,
        )

    @property
    def sources(self) -> list[Source]:
        if self._sources is None:
            self._sources = self.eager + [self._build(spec) for spec in self.specs]
        return self._sources

    def source(self, locator: str) -> Source | None:
        """One source by locator, built alone when the others were not needed (then without its
        session key: the index's, kept up to date by `update`, serves)."""
        if self._sources is not None:
            # one dict per built list (a hit each: a scan per hit is O(sources x hits))
            if self._built_by_locator is None or self._built_by_locator[0] is not self._sources:
                self._built_by_locator = (self._sources, {s.locator: s for s in self._sources})
            return self._built_by_locator[1].get(locator)
        for source in self.eager:
            if source.locator == locator:
                return source
        for find in self._finders:  # the one spec, without building the scan's thousands
            found = find(locator)
            if found is not None:
                return self._build(found, keyed=False)
        if self._specs_by_locator is None:
            self._specs_by_locator = {spec[0]: spec for spec in self.specs}
        spec = self._specs_by_locator.get(locator)
        return self._build(spec, keyed=False) if spec is not None else None

    def __len__(self) -> int:
        return len(self.eager) + len(self.fp_parts) + self.dir_sources

    def archived_count(self) -> int:
        """How many sources are archives (not live transcripts)."""
        return sum(1 for s in self.eager if s.source not in LIVE_SOURCES) + sum(
            1 for spec in self.specs if spec[1] not in LIVE_SOURCES
        )

    def live_only(self) -> None:
        """Keep the live transcripts only."""
        self.eager = [s for s in self.eager if s.source in LIVE_SOURCES]
        self._specs = [spec for spec in self.specs if spec[1] in LIVE_SOURCES]
        self.fp_parts = [f"{spec[0]}\0{spec[4]}" for spec in self._specs]
        self.dir_sources = 0
        self._sources = self._specs_by_locator = None

    def fingerprint(self) -> str:
        """A digest of every source's locator and token, the keys of the database sources, and the
        files the other keys come from: equal fingerprints, equal index."""
        parts = list(self.fp_parts)
        parts.extend(f"{s.locator}\0{s.token}\0{s.session_key}\0{s.their_fts:d}" for s in self.eager)
        parts.extend(self.stamps)
        if self.db_keys:
            parts.extend(f"{sid}\0{key}" for sid, key in sorted(self.db_keys.items()))
        return _digest("\n".join(parts).encode("utf-8", "surrogatepass"))

    def close(self) -> None:
        if self.db_conn is not None:
            self.db_conn.close()
            self.db_conn = None


def _digest(data: bytes) -> str:
    """BLAKE2b-256 of `data` (CPython's built-in module: 3x the speed of its own SHA-256 on the
    ~100 KB a big directory's fingerprint hashes, and no OpenSSL to load); a `b2:` prefix keeps it
    apart from the SHA-256 fingerprints indexes recorded before (never equal: one update then)."""
    import importlib

    try:
        module: Any = importlib.import_module("_blake2")
    except ImportError:
        module = importlib.import_module("hashlib")
    return "b2:" + str(module.blake2b(data, digest_size=32).hexdigest())


def _file_token(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def _regular(path: Path | str) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _legacy_keys(store_path: Path) -> dict[str, str]:
    """sessionId -> key of a legacy `sessions.json` (empty when missing or unreadable)."""
    from openclaw_cli import jsonutil

    try:
        data = jsonutil.loads(store_path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        entry["sessionId"]: key
        for key, entry in data.items()
        if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str)
    }


def _schema_label(schema: str | None) -> str:
    """`openclaw 23` -> schema23; our own schema -> sqlite."""
    if schema and schema.startswith("openclaw ") and schema.split()[-1].isdigit():
        return f"schema{schema.split()[-1]}"
    return "sqlite"


def _db_sources(out: AgentSources, db_path: Path, label: str, keys: dict[str, str]) -> None:
    from openclaw_cli.store.sqlite_common import open_readonly, table_names

    ro = open_readonly(db_path)
    out.db_conn = ro
    conn = ro.conn
    tables = table_names(conn)
    if "transcript_events" not in tables:
        return
    event_cols = {row[1] for row in conn.execute("PRAGMA table_info(transcript_events)")}
    compressed = "event_zstd" in event_cols
    window_cols = {row[1] for row in conn.execute("PRAGMA table_info(session_windows)")}
    if "event_count" in window_cols:  # ours keeps per-session totals at write time
        rows = conn.execute(
            "SELECT session_id, session_key, event_count, event_bytes FROM session_windows"
            " WHERE event_count > 0"
        ).fetchall()
        counts = {sid: (n, b) for sid, _, n, b in rows}
        window_keys = {sid: key for sid, key, _, _ in rows}
    else:  # OpenClaw keeps none: one pass over the primary key index
        counts = {
            sid: (n, last)
            for sid, n, last in conn.execute(
                "SELECT session_id, count(*), max(seq) FROM transcript_events GROUP BY session_id"
            )
        }
        window_keys = (
            dict(conn.execute("SELECT session_id, session_key FROM session_windows"))
            if "session_windows" in tables
            else {}
        )
    if "session_transcript_archives" in tables:  # keys of archived sessions, for their archive files
        for sid, key in conn.execute("SELECT session_id, session_key FROM session_transcript_archives"):
            if isinstance(sid, str) and isinstance(key, str) and key:
                keys.setdefault(sid, key)
    theirs: dict[str, tuple[int, int]] = {}
    if label != "sqlite" and {"session_transcript_fts", "session_transcript_fts_rows"} <= tables:
        rebuild = (
            dict(conn.execute("SELECT session_id, needs_rebuild FROM session_transcript_index_state"))
            if "session_transcript_index_state" in tables
            else {}
        )
        for sid, n in conn.execute(
            "SELECT session_id, count(*) FROM session_transcript_fts_rows GROUP BY session_id"
        ):
            theirs[sid] = (n, int(rebuild.get(sid) or 0))
        out.openclaw_fts = (db_path, label)
    for sid, (n, extra) in counts.items():
        key = window_keys.get(sid) or keys.get(sid)
        fts_state = theirs.get(sid)
        token = f"{n}:{extra}" + (f":fts{fts_state[0]}:{fts_state[1]}" if fts_state else "")
        out.eager.append(
            Source(
                f"db:{sid}",
                label,
                sid,
                key,
                token,
                0,
                EventsReader(conn, sid, compressed),
                append_only=fts_state is None,
                their_fts=fts_state is not None and fts_state[0] > 0 and not fts_state[1],
            )
        )
        if key:
            keys.setdefault(sid, key)
    if "session_transcript_archives" in tables:
        cols = {row[1] for row in conn.execute("PRAGMA table_info(session_transcript_archives)")}
        if "archive_blob" in cols:
            on_disk = sessions_dir_of(db_path)
            for sid, key, reason, encoding, name, sha, size in conn.execute(
                "SELECT session_id, session_key, reason, encoding, archive_name, archive_sha256,"
                " length(archive_blob) FROM session_transcript_archives"
            ):
                if _regular(on_disk / name) is not None:
                    continue  # published as a file: indexed from there
                reader = BlobReader(
                    db_path,
                    "SELECT archive_blob FROM session_transcript_archives WHERE archive_name = ?",
                    (name,),
                    encoding == "zstd",
                )
                out.eager.append(
                    Source(
                        f"blob:{name}",
                        f"archive-blob:{reason}",
                        sid,
                        key or keys.get(sid),
                        f"sha:{sha}",
                        int(size or 0),
                        reader,
                    )
                )
    if "session_transcript_cold_archives" in tables:
        cols = {row[1] for row in conn.execute("PRAGMA table_info(session_transcript_cold_archives)")}
        if "archive_blob" in cols:
            for sid, name, sha, size in conn.execute(
                "SELECT session_id, archive_name, archive_sha256, length(archive_blob)"
                " FROM session_transcript_cold_archives WHERE storage = 'sqlite' AND archive_blob IS NOT NULL"
            ):
                reader = BlobReader(
                    db_path,
                    "SELECT archive_blob FROM session_transcript_cold_archives WHERE archive_name = ?",
                    (name,),
                    True,
                )
                out.eager.append(
                    Source(
                        f"coldblob:{name}",
                        "cold-archive",
                        sid,
                        window_keys.get(sid) or keys.get(sid),
                        f"sha:{sha}",
                        int(size or 0),
                        reader,
                    )
                )


def sessions_dir_of(db_path: Path) -> Path:
    from openclaw_cli.store.sqlite_common import sessions_dir_for

    return sessions_dir_for(db_path)


def _archive_parts(name: str) -> tuple[str, str, bool] | None:
    """(base, reason, compressed) of `<sid>.jsonl.<reason>.<ts>[.<nonce>][.zst]` — a string test per
    name, not `archives.parse_archive_name`'s full check (its date parsing costs ~50 µs a name on
    every search of 1,500 archives)."""
    for reason, marker in _ARCHIVE_MARKERS:
        at = name.find(marker)
        if at > 0:
            return name[: at + 6], reason, name.endswith(".zst")
    return None


_ARCHIVE_MARKERS = tuple((reason, f".jsonl.{reason}.") for reason in ("deleted", "reset", "bak"))


def _live_spec(base: str, name: str, st: os.stat_result, token: str) -> Spec:
    # paths as strings: a Path per file costs more than its lstat
    return (f"file:{name}", "legacy", name[:-6], f"{base}/{name}", token, st.st_size, False, True,
            st.st_mtime_ns // 1_000_000, 0)  # fmt: skip


def _archive_spec(base: str, name: str, parsed: tuple[str, str, bool]) -> Spec:
    # the name is its token; its lines' fallback time comes from the name when needed
    stem, reason, compressed = parsed
    return (f"file:{name}", f"archive:{reason}", stem[:-6], f"{base}/{name}", f"name:{name}", 0, compressed,
            False, -1, 0)  # fmt: skip


def _scan(directory: str) -> tuple[dict[str, os.DirEntry[str]], int | None]:
    """The entries of `directory`, listed through a descriptor where the platform allows it (each
    entry's stat is then an fstatat relative to it: no path walk per file); the descriptor, which
    the caller closes, or None."""
    if os.scandir in os.supports_fd:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return {}, None
        try:
            with os.scandir(fd) as it:
                return {e.name: e for e in it}, fd
        except OSError:
            os.close(fd)
            return {}, None
    try:
        with os.scandir(directory) as it:
            return {e.name: e for e in it}, None
    except OSError:
        return {}, None


_listed: set[tuple[str, bool, int]] = set()  # directories this process listed (the pid: a forked child's own)


class _Listing:
    """What one listing of a sessions directory found: the live transcripts' stats, the archives
    by name, how many sources that is, and the digest of their "<locator>\0<token>" parts."""

    __slots__ = ("stats", "archived", "count", "digest")

    def __init__(
        self, stats: dict[str, os.stat_result], archived: dict[str, tuple[str, str, bool]], digest: str
    ):
        self.stats = stats
        self.archived = archived
        self.count = len(stats) + len(archived)
        self.digest = digest


def _list_dir(base: str, live_files: bool) -> tuple[_Listing, bool]:
    """The listing of `base`, and whether a watch on the directory sees every change to what it
    holds (no live transcript with another link: a write through that link would not be seen)."""
    entries, fd = _scan(base)
    try:
        names = sorted(entries)
        # `<id>.jsonl` (one dot, not hidden) is always primary: trajectories, checkpoints and archives
        # have more dots (is_primary_transcript_name decides those)
        live = [n for n in names if n.endswith(".jsonl")] if live_files else []
        if any(n.count(".") != 1 or n[0] == "." for n in live):
            from openclaw_cli.store.names import is_primary_transcript_name

            live = [n for n in live if (n.count(".") == 1 and n[0] != ".") or is_primary_transcript_name(n)]
        stats: dict[str, os.stat_result] = {}
        linked = False
        for name in live:
            try:  # a live transcript grows: its size, mtime and inode are its token
                st = entries[name].stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                stats[name] = st
                linked = linked or st.st_nlink != 1
        archived: dict[str, tuple[str, str, bool]] = {}
        for name in names:
            if ".jsonl." not in name or name in stats:
                continue
            parsed = _archive_parts(name)
            try:
                if parsed is not None and entries[name].is_file(follow_symlinks=False):
                    archived[name] = parsed
            except OSError:
                continue
    finally:
        if fd is not None:
            os.close(fd)
    # "<locator>\0<token>", the token `_file_token`'s (written out: one f-string per file)
    parts = [f"file:{n}\0{st.st_size}:{st.st_mtime_ns}:{st.st_ino}" for n, st in stats.items()]
    parts.extend(f"file:{name}\0name:{name}" for name in archived)
    digest = _digest("\n".join(parts).encode("utf-8", "surrogatepass"))
    return _Listing(stats, archived, digest), not linked


def _dir_sources(out: AgentSources, sessions_dir: Path, *, live_files: bool) -> None:
    """Live transcripts (stat'ed: they grow) and archives (by name: written once) of a sessions
    directory. The fingerprint part comes straight from the listing; the specs only when asked
    (all of them, or the one a hit names). A process that lists the same directory again reuses
    its last listing while a watch on the directory saw no change (`search.watch`)."""
    base = os.fspath(sessions_dir)
    if (base, live_files, os.getpid()) in _listed:
        from openclaw_cli.search import watch

        listing = watch.listing(base, live_files, lambda: _list_dir(base, live_files))
    else:  # the first listing in this process: no watch (a one-shot command never pays for one)
        _listed.add((base, live_files, os.getpid()))
        listing = _list_dir(base, live_files)[0]
    stats, archived = listing.stats, listing.archived
    out.fp_parts.append(f"dir:{base}\0{listing.digest}")
    out.dir_sources += listing.count - 1

    def specs() -> list[Spec]:
        found = [_live_spec(base, name, st, _file_token(st)) for name, st in stats.items()]
        found.extend(_archive_spec(base, name, parsed) for name, parsed in archived.items())
        found.sort(key=lambda spec: spec[0])  # the directory's order, live and archived together
        return found

    def find(locator: str) -> Spec | None:
        name = locator[5:] if locator.startswith("file:") else ""
        st = stats.get(name)
        if st is not None:
            return _live_spec(base, name, st, _file_token(st))
        parsed = archived.get(name)
        return _archive_spec(base, name, parsed) if parsed is not None else None

    out._makers.append(specs)
    out._finders.append(find)
    _cold_sources(out, sessions_dir)


def _cold_sources(out: AgentSources, sessions_dir: Path) -> None:
    cold = sessions_dir / "cold"
    try:
        cold_names = sorted(os.listdir(cold))
    except OSError:
        cold_names = []
    specs: list[Spec] = []
    for name in cold_names:
        st = _regular(cold / name)
        if st is None or ".jsonl" not in name:
            continue
        specs.append(
            (
                f"cold:{name}",
                "cold-archive",
                None,
                str(cold / name),
                _file_token(st),
                st.st_size,
                name.endswith(".zst"),
                False,
                st.st_mtime_ns // 1_000_000,
                0,
            )
        )
    out.add_specs(specs)


def _import_archive_sources(out: AgentSources, archive_dir: Path) -> None:
    """The originals `doctor --session-sqlite import` moved aside: `<sid>.jsonl[…]` (plain or
    .zst) next to the `sessions.json` they belonged to (whose keys name them)."""
    try:
        names = sorted(os.listdir(archive_dir))
    except OSError:
        return
    for name in names:
        if name.startswith("sessions.json"):
            st = _regular(archive_dir / name)
            if st is not None:
                out.key_files[1].append(archive_dir / name)
                out.stamps.append(f"import-keys:{name}:{_file_token(st)}")
    specs: list[Spec] = []
    for name in names:
        if ".jsonl" not in name or name.startswith("."):
            continue
        st = _regular(archive_dir / name)
        if st is None:
            continue
        # `<sid>.jsonl…` or `<key>.<sid>.jsonl.imported-<ms>`
        sid = name.split(".jsonl", 1)[0].rsplit(".", 1)[-1]
        specs.append(
            (
                f"import:{name}",
                "import-archive",
                sid,
                str(archive_dir / name),
                _file_token(st),
                st.st_size,
                name.endswith(".zst"),
                False,
                st.st_mtime_ns // 1_000_000,
                1,
            )
        )
    out.add_specs(specs)


def agent_sources(
    store: SessionStore | LegacyLocation, *, import_archive_dir: Path | None, archives: bool = True
) -> AgentSources:
    """Every source of one opened store (`store.base.SessionStore`); `archives=False` keeps the
    live transcripts only."""
    out = AgentSources(store.agent_id)
    sessions_dir = Path(store.sessions_dir)
    index_file = sessions_dir / "sessions.json"
    if not store.transcripts_in_files:  # transcripts live in the database: its keys, read now
        keys = _legacy_keys(index_file)
        _db_sources(out, Path(store.path), _schema_label(store.schema), keys)
        out.db_keys = keys
    else:  # the keys of files: read from sessions.json only when a source is built
        try:
            st: os.stat_result | None = os.stat(index_file)
        except OSError:
            st = None
        if st is not None:
            out.key_files[0].append(index_file)
            out.stamps.append(f"keys:{_file_token(st)}")
    _dir_sources(out, sessions_dir, live_files=True)
    if not archives:
        out.live_only()
        return out
    if import_archive_dir is not None:
        _import_archive_sources(out, import_archive_dir)
    return out
