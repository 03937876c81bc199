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

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.store.base import ReadIssue

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

LIVE_SOURCES = ("legacy", "sqlite", "schema23", "schema24")
# (position: byte offset or seq, where reading resumes after it, 1-based line number, raw JSON bytes)
Line = tuple[int, int, int, bytes]


@dataclass
class Source:
    locator: str  # unique within one agent's index
    source: str  # the JSON `source` value
    session_id: str | None
    session_key: str | None
    token: str  # changes whenever the content may have changed
    size: int  # bytes (for throughput figures)
    reader: Reader
    append_only: bool = False  # a live transcript: growth is new lines after the indexed ones
    mtime_ms: int = 0  # fallback timestamp of lines without one
    their_fts: bool = False  # OpenClaw's own FTS holds this session's user/assistant lines (complete)

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
        path = getattr(self.reader, "path", None) or getattr(self.reader, "db_path", None)
        if path is not None:
            return f"{path}" if isinstance(self.reader, FileReader) else f"{path}#{self.locator}"
        return self.locator


class Reader:
    """Reads a source's lines; `position` is what `read_at` takes back."""

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        """Lines after the resume point `after` (None: all), numbered from `first_line`."""
        raise NotImplementedError

    def read_at(self, position: int) -> bytes | None:
        raise NotImplementedError

    def tail_signature(self, position: int) -> bytes | None:
        """A few bytes ending at `position`, to tell an append from a rewrite."""
        return None


CACHE_ARCHIVE_BYTES = 32 << 20  # a decompressed archive kept for the snippets of one search


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
        return self.rest.read(size)


@dataclass
class FileReader(Reader):
    path: Path | str
    compressed: bool = False
    _data: bytes | None = field(default=None, repr=False, compare=False)

    def _open(self) -> Any:
        from openclaw_cli.store.archives import open_archive

        return open_archive(Path(self.path), compressed=self.compressed)

    def lines(self, after: int | None = None, first_line: int = 1) -> Iterator[Line]:
        with self._open() as raw:
            pos = 0
            if after and not self.compressed:
                raw.seek(after)
                pos = after
            number = first_line - 1
            for line in raw if not self.compressed else _chunked_lines(raw):
                start = pos
                pos += len(line)
                if after and start < after:
                    continue
                stripped = line.strip()
                if not stripped:
                    continue
                number += 1
                yield start, pos, number, stripped

    def read_at(self, position: int) -> bytes | None:
        if self._data is not None:
            return self._slice(position)
        with self._open() as raw:
            if not self.compressed:
                raw.seek(position)
                return raw.readline().strip() or None
            if self._data is None:  # several hits in one archive: decompress it once per search
                chunks, size = [], 0
                while size < CACHE_ARCHIVE_BYTES:
                    chunk = raw.read(1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                if size >= CACHE_ARCHIVE_BYTES:  # too big to keep: read up to the line
                    return _line_at(_chunked_lines(_Prefixed(b"".join(chunks), raw)), position)
                self._data = b"".join(chunks)
        return self._slice(position)

    def _slice(self, position: int) -> bytes | None:
        data = self._data or b""
        end = data.find(b"\n", position)
        return data[position : end if end >= 0 else len(data)].strip() or None

    def tail_signature(self, position: int) -> bytes | None:
        if self.compressed or position <= 0:
            return None
        try:
            with open(self.path, "rb") as fh:
                fh.seek(max(0, position - 64))
                return fh.read(min(64, position))
        except OSError:
            return None


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


@dataclass
class BlobReader(Reader):
    """An archive held as a blob in an OpenClaw database (identity or zstd)."""

    db_path: Path
    sql: str
    key: tuple[Any, ...]
    compressed: bool

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


@dataclass
class EventsReader(Reader):
    """One session's events in a SQLite store (ours, or OpenClaw's with zstd payloads)."""

    conn: Any  # a shared read-only connection of the store
    session_id: str
    compressed_column: bool

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


@dataclass
class AgentSources:
    agent_id: str
    sources: list[Source] = field(default_factory=list)
    issues: list[ReadIssue] = field(default_factory=list)
    db_conn: Any = None  # the read-only connection EventsReaders share (closed by `close`)
    openclaw_fts: Any = None  # (db path, schema label) when the store has OpenClaw's own FTS tables

    def close(self) -> None:
        if self.db_conn is not None:
            self.db_conn.close()
            self.db_conn = None


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
        out.sources.append(
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
                out.sources.append(
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
                out.sources.append(
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
    for reason in ("deleted", "reset", "bak"):
        at = name.find(f".jsonl.{reason}.")
        if at > 0:
            return name[: at + 6], reason, name.endswith(".zst")
    return None


def _dir_sources(out: AgentSources, sessions_dir: Path, keys: dict[str, str], *, live_files: bool) -> None:
    from openclaw_cli.store.archives import ZST_SUFFIX
    from openclaw_cli.store.names import is_primary_transcript_name

    try:
        with os.scandir(sessions_dir) as it:
            entries = sorted(((e.name, e) for e in it), key=lambda item: item[0])
    except OSError:
        entries = []
    for name, entry in entries:
        path = entry.path  # strings: a Path per file costs more than its lstat
        # `<id>.jsonl` (one dot, not hidden) is always primary: trajectories, checkpoints and
        # archives have more dots (is_primary_transcript_name decides the rest)
        if name.endswith(".jsonl") and (
            (name.count(".") == 1 and name[0] != ".") or is_primary_transcript_name(name)
        ):
            if not live_files:
                continue
            try:  # a live transcript grows: its size and mtime are its token
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            sid = name[: -len(".jsonl")]
            out.sources.append(
                Source(
                    f"file:{name}",
                    "legacy",
                    sid,
                    keys.get(sid),
                    _file_token(st),
                    st.st_size,
                    FileReader(path),
                    append_only=True,
                    mtime_ms=st.st_mtime_ns // 1_000_000,
                )
            )
            continue
        parsed = _archive_parts(name)
        if parsed is None:
            continue
        base, reason, compressed = parsed
        stamp = -1  # from the name, when a line needs it (`Source.fallback_ms`)
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        sid = base[: -len(".jsonl")]
        # an archive is written once under a unique name: the name is its token (no stat per archive)
        out.sources.append(
            Source(
                f"file:{name}",
                f"archive:{reason}",
                sid,
                keys.get(sid),
                f"name:{name}",
                0,
                FileReader(path, compressed),
                mtime_ms=stamp or 0,
            )
        )
    cold = sessions_dir / "cold"
    try:
        cold_names = sorted(os.listdir(cold))
    except OSError:
        cold_names = []
    for name in cold_names:
        st = _regular(cold / name)
        if st is None or ".jsonl" not in name:
            continue
        out.sources.append(
            Source(
                f"cold:{name}",
                "cold-archive",
                None,
                None,
                _file_token(st),
                st.st_size,
                FileReader(cold / name, name.endswith(ZST_SUFFIX)),
                mtime_ms=st.st_mtime_ns // 1_000_000,
            )
        )


def _import_archive_sources(out: AgentSources, archive_dir: Path, keys: dict[str, str]) -> None:
    """The originals `doctor --session-sqlite import` moved aside: `<sid>.jsonl[…]` (plain or
    .zst) next to the `sessions.json` they belonged to."""
    try:
        names = sorted(os.listdir(archive_dir))
    except OSError:
        return
    archived_keys = dict(keys)
    for name in names:
        if name.startswith("sessions.json"):
            archived_keys.update(
                {
                    sid: key
                    for sid, key in _legacy_keys(archive_dir / name).items()
                    if sid not in archived_keys
                }
            )
    for name in names:
        if ".jsonl" not in name or name.startswith("."):
            continue
        st = _regular(archive_dir / name)
        if st is None:
            continue
        sid = name.split(".jsonl", 1)[0].rsplit(".", 1)[
            -1
        ]  # `<sid>.jsonl…` or `<key>.<sid>.jsonl.imported-<ms>`
        out.sources.append(
            Source(
                f"import:{name}",
                "import-archive",
                sid,
                archived_keys.get(sid),
                _file_token(st),
                st.st_size,
                FileReader(archive_dir / name, name.endswith(".zst")),
                mtime_ms=st.st_mtime_ns // 1_000_000,
            )
        )


def agent_sources(
    store: SessionStore, *, import_archive_dir: Path | None, archives: bool = True
) -> AgentSources:
    """Every source of one opened store (`store.base.SessionStore`); `archives=False` keeps the
    live transcripts only."""
    out = AgentSources(store.agent_id)
    sessions_dir = Path(store.sessions_dir)
    keys = _legacy_keys(sessions_dir / "sessions.json")
    if not store.transcripts_in_files:  # transcripts live in the database
        _db_sources(out, Path(store.path), _schema_label(store.schema), keys)
        if not archives:
            out.sources = [s for s in out.sources if s.source in LIVE_SOURCES]
    _dir_sources(out, sessions_dir, keys, live_files=True)
    if not archives:
        out.sources = [s for s in out.sources if s.source in LIVE_SOURCES]
        return out
    if import_archive_dir is not None:
        _import_archive_sources(out, import_archive_dir, keys)
    return out
