"""A session's transcript as one consistent snapshot (compaction-lifecycle.md §4.8; spec D12,
D16): read without a lock; the write phase (`<kind>/compaction.py`) re-checks it under the lock or
inside the transaction and raises `SnapshotChanged` when the transcript or the row moved, so the
caller re-plans. No lock is held while a summary provider is called."""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from openclaw_cli.errors import NotFoundError, RefusedError, SessionBusyError
from openclaw_cli.fsio import O_CLOEXEC, O_NOFOLLOW
from openclaw_cli.store.base import ReadIssue, SessionStore, TranscriptLine
from openclaw_cli.store.rewrite import linear_branch, parse_transcript_bytes, share_names

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore
    from openclaw_cli.store.sqlite.store import SqliteStore

CHANGED_CODE = "OPENCLAW_SESSION_CHANGED"
_BLOCK = 1 << 20


class SnapshotChanged(SessionBusyError):
    """The transcript or the row changed between the snapshot and the write: nothing was written."""

    def __init__(self, key: str):
        super().__init__(
            f"Session {key} changed while it was being compacted; nothing was written. Retry.",
            code=CHANGED_CODE,
        )


# ---- snapshots -------------------------------------------------------------------------------------


@dataclass
class TranscriptSnapshot:
    """One session's transcript as read at one instant."""

    store: SessionStore
    key: str
    entry: dict[str, Any]
    session_id: str
    raw_data: bytes | None  # the exact transcript bytes; None: read again from the store when needed
    lines: list[TranscriptLine]  # readable lines in order, header included (clean ones may lack `raw`)
    issues: list[ReadIssue] = field(default_factory=list)
    path: Path | None = None  # legacy transcript file
    signature: tuple[int, ...] | None = None  # legacy (dev, ino, size, mtime_ns); SQLite (events, bytes)

    @property
    def data(self) -> bytes:
        """The exact transcript bytes (legacy file, or SQLite events as JSONL), read on demand when
        the snapshot was taken without them, and only if the session still matches the snapshot.
        An archive streams instead (`write_transcript`); this is for max-lines splits and tests."""
        if self.raw_data is None:
            buffer = io.BytesIO()
            self.write_transcript(buffer)
            self.raw_data = buffer.getvalue()
        return self.raw_data

    def write_transcript(self, sink: Any) -> int:
        """Write the exact transcript bytes of this snapshot to `sink` (`.write(bytes)`) block by
        block and return how many: the archive source (compressed while it is read). Raises
        `SnapshotChanged` when the transcript no longer matches the snapshot (the legacy file's
        signature before and after the copy, our SQLite window's event and byte counts)."""
        if self.raw_data is not None:
            view = memoryview(self.raw_data)
            for start in range(0, len(view), _BLOCK):
                sink.write(view[start : start + _BLOCK])
            return len(view)
        if self.path is not None:
            return _copy_legacy(self.path, self.signature, sink, self.key)
        counter = _CountingSink(sink)
        totals = self.store.export_transcript(self.session_id, counter)
        if (totals.events, totals.bytes) != self.signature:
            raise SnapshotChanged(self.key)
        return counter.size

    @property
    def transcript_size(self) -> int | None:
        """How many bytes `write_transcript` writes (None when unknown)."""
        if self.raw_data is not None:
            return len(self.raw_data)
        if self.signature is None:
            return None
        if self.path is not None:
            return self.signature[2]  # the legacy file's size
        events, size = self.signature
        return size + events  # our SQLite rows, one newline each

    def restore_raw(self, lines: Any = None) -> None:
        """Give the lines read without their text (`raw` None; all of them, or those of `lines`)
        their exact text again, from the same transcript (checked against the snapshot): what a
        successor transcript copies."""
        missing = {
            line.line_no: line for line in (self.lines if lines is None else lines) if line.raw is None
        }
        if not missing:
            return
        found = self.read_lines(missing)
        for line_no, line in missing.items():
            line.raw = found.get(line_no)
        if any(line.raw is None for line in missing.values()):
            raise SnapshotChanged(self.key)

    def read_lines(self, line_nos: Any) -> dict[int, str]:
        """The exact text of the physical lines numbered `line_nos` (1-based, `TranscriptLine.line_no`),
        read again from the same transcript (checked against the snapshot, `SnapshotChanged`
        otherwise): what a reader that slimmed the objects it kept (`read_snapshot(on_entry=...)`)
        gets back for the few it needs whole."""
        sink = _LineSink(set(line_nos))
        self.write_transcript(sink)
        sink.close()
        return sink.found

    @cached_property
    def header(self) -> dict[str, Any] | None:
        for line in self.lines[:16]:
            if line.obj is not None and line.obj.get("type") == "session":
                return line.obj
        return None

    @cached_property
    def branch(self) -> list[TranscriptLine]:
        linear = linear_branch(self.lines)
        if linear is not None:
            return linear
        from openclaw_cli.store.tree import active_branch

        return active_branch(self.lines)

    @property
    def branch_entries(self) -> list[dict[str, Any]]:
        return [line.obj for line in self.branch if line.obj is not None]

    def entry_ids(self) -> set[str]:
        return {
            line.obj["id"]
            for line in self.lines
            if line.obj is not None and isinstance(line.obj.get("id"), str)
        }


def file_signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _open_transcript(path: Path) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except OSError as exc:
        raise RefusedError(
            f"Cannot read transcript {path}: {exc.strerror or exc} (symbolic links are not followed)"
        ) from exc
    fh = os.fdopen(fd, "rb", buffering=0)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        raise RefusedError(f"Cannot read transcript {path}: not a regular file")
    return fh


class _CountingReader:
    """A raw file read through, counting its bytes (the signature check compares them with the size)."""

    def __init__(self, fh: Any):
        self._fh = fh
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self._fh.read(size)
        self.size += len(chunk)
        return chunk


class _CountingSink:
    def __init__(self, sink: Any):
        self._sink = sink
        self.size = 0

    def write(self, data: Any) -> int:
        self._sink.write(data)
        self.size += len(data)
        return len(data)


class _LineSink:
    """Receives a transcript's bytes and keeps the text of the physical lines named in `wanted`
    (1-based line numbers) in `found`: the same split the streamed parse made."""

    def __init__(self, wanted: Any):
        self._wanted = wanted
        self.found: dict[int, str] = {}
        self._line_no = 0
        self._carry = b""

    def write(self, data: Any) -> int:
        parts = (self._carry + bytes(data)).split(b"\n")
        self._carry = parts.pop()
        for part in parts:
            self._take(part)
        return len(data)

    def _take(self, part: bytes) -> None:
        self._line_no += 1
        if self._line_no in self._wanted:
            self.found[self._line_no] = part.decode("utf-8")

    def close(self) -> None:
        if self._carry:
            self._take(self._carry)
            self._carry = b""


def _read_legacy(path: Path) -> tuple[bytes, tuple[int, int, int, int]]:
    """The whole file and its signature, read through one descriptor (never through a symlink)."""
    for _ in range(5):
        with _open_transcript(path) as fh:
            before = os.fstat(fh.fileno())
            data = fh.readall()
            after = os.fstat(fh.fileno())
        if file_signature(before) == file_signature(after) and after.st_size == len(data):
            return data, file_signature(after)
    raise SessionBusyError(f"Transcript {path} keeps changing while it is read; retry later.")


def _stream_legacy(
    path: Path, label: str, issues: list[ReadIssue], on_entry: Any = None
) -> tuple[list[TranscriptLine], tuple[int, int, int, int]]:
    """The file's lines (clean lines without their text: `raw` None) and its signature, parsed
    while it is read through one descriptor (never through a symlink): the bytes are never held
    whole. A file that changes while it is read is read again."""
    from openclaw_cli.store.rewrite import parse_transcript_stream

    for _ in range(5):
        with _open_transcript(path) as fh:
            before = os.fstat(fh.fileno())
            reader = _CountingReader(fh)
            found: list[ReadIssue] = []
            lines = parse_transcript_stream(
                cast(BinaryIO, reader), label, found, keep_raw=False, on_entry=on_entry
            )
            after = os.fstat(fh.fileno())
        if file_signature(before) == file_signature(after) and after.st_size == reader.size:
            issues.extend(found)
            return lines, file_signature(after)
    raise SessionBusyError(f"Transcript {path} keeps changing while it is read; retry later.")


def _copy_legacy(path: Path, signature: tuple[int, ...] | None, sink: Any, key: str) -> int:
    """Copy the transcript file to `sink` if it is still the file of the snapshot (same signature
    before and after, every byte of it)."""
    with _open_transcript(path) as fh:
        if file_signature(os.fstat(fh.fileno())) != signature:
            raise SnapshotChanged(key)
        size = 0
        while True:
            chunk = fh.read(_BLOCK)
            if not chunk:
                break
            sink.write(chunk)
            size += len(chunk)
        if file_signature(os.fstat(fh.fileno())) != signature or signature is None or size != signature[2]:
            raise SnapshotChanged(key)
    return size


def _lines_from_rows(
    store: SqliteStore, session_id: str, on_entry: Any = None
) -> tuple[list[TranscriptLine], tuple[int, int]] | None:
    """Our SQLite store's lines straight from its rows, when every row is a plain JSON-object line
    (the usual case): exactly the lines `parse_transcript_bytes` makes of the exported JSONL, without
    exporting, decoding and splitting it all again. None for anything unusual (a row that is not an
    object, has a CR or a newline, was dropped as malformed, or rows that changed meanwhile): the
    caller then takes the export path."""
    totals = store.window_totals(session_id)
    if totals is None:
        return None
    lines: list[TranscriptLine] = []
    index = 0
    previous: Any = None
    numbers: dict[int, int] = {}
    for line in store.iter_transcript(session_id):
        raw, obj = line.raw, line.obj
        if type(obj) is not dict or not obj or raw[:1] != "{" or raw[-1:] == "\r" or "\n" in raw:
            return None
        following = index + 1
        line.seq, line.line_no = index, following  # as numbered in the exported JSONL
        line.raw = None  # type: ignore[assignment]  # the row's text again only if a successor needs it
        if on_entry is not None:  # first: it may leave fields out, which then need no sharing
            on_entry(obj, following)
        previous = share_names(obj, previous, numbers)
        lines.append(line)
        index = following  # one int object for this line's number and the next one's seq
    if index != totals.events:
        return None
    return lines, (totals.events, totals.bytes)


def _session_id(key: str, entry: dict[str, Any]) -> str:
    session_id = entry.get("sessionId")
    if not isinstance(session_id, str) or not session_id.strip():
        raise NotFoundError(f"Session {key} has no sessionId; nothing to compact.")
    return session_id.strip()


def read_file_snapshot(
    store: LegacyStore,
    key: str,
    entry: dict[str, Any],
    *,
    data_on_demand: bool = False,
    on_entry: Any = None,
) -> TranscriptSnapshot:
    """A legacy store's transcript file, read once through one descriptor. `data_on_demand` (a
    summary compaction): parsed while it is read, the bytes and the clean lines' text not kept
    (read again only if an archive or a successor needs them), each parsed object shown to
    `on_entry(obj, line_no)` (which may slim it: `TranscriptSnapshot.read_lines` gives the text
    back); otherwise the bytes and every line's text are kept (forks, max-lines splits)."""
    session_id = _session_id(key, entry)
    issues: list[ReadIssue] = []
    signature: tuple[int, ...] | None = None
    path = store.resolve_transcript(session_id, entry, issues)
    label = str(path) if path is not None else f"{store.path}#{session_id}"
    if path is None:
        return TranscriptSnapshot(store, key, entry, session_id, b"", [], issues, path, signature)
    if data_on_demand:
        lines, signature = _stream_legacy(path, label, issues, on_entry)
        return TranscriptSnapshot(store, key, entry, session_id, None, lines, issues, path, signature)
    data, signature = _read_legacy(path)
    lines = parse_transcript_bytes(data, label, issues) if data else []
    return TranscriptSnapshot(store, key, entry, session_id, data, lines, issues, path, signature)


def read_database_snapshot(
    store: SqliteStore,
    key: str,
    entry: dict[str, Any],
    *,
    data_on_demand: bool = False,
    on_entry: Any = None,
) -> TranscriptSnapshot:
    """Our SQLite store's session window. `data_on_demand`: take the lines from the rows (each
    object shown to `on_entry(obj, line_no)`, as for a legacy file) and export the transcript
    bytes only if something needs them (an archive), which a summary compaction rarely does.
    The unusual windows that take the export path are parsed whole, without `on_entry`."""
    session_id = _session_id(key, entry)
    issues: list[ReadIssue] = []
    label = f"{store.path}#{session_id}"
    from_rows = _lines_from_rows(store, session_id, on_entry) if data_on_demand else None
    if from_rows is not None:
        lines, signature = from_rows
        return TranscriptSnapshot(store, key, entry, session_id, None, lines, issues, None, signature)
    buffer = io.BytesIO()
    totals = store.export_transcript(session_id, buffer)
    data = buffer.getvalue()
    lines = parse_transcript_bytes(data, label, issues) if data else []
    return TranscriptSnapshot(
        store, key, entry, session_id, data, lines, issues, None, (totals.events, totals.bytes)
    )


# ---- results -------------------------------------------------------------------------------------------


@dataclass
class PersistResult:
    session_id: str  # the session's id afterwards (the successor's when rotated)
    entry: dict[str, Any] | None  # the row as written (None when the row could not be updated)
    successor: dict[str, Any] | None = None
    archive: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
