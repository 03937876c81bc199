"""Pi-format JSONL transcripts (spec storage-migration.md §3.2–§3.3): streaming reads, bounded
tail reads, and locked, durable appends.

Reading rules (OpenClaw's): UTF-8 decoded strictly, one JSON value per `\\n`-separated line,
blank lines ignored, a line whose JSON is falsy (`null`, `false`, `0`, `""`) skipped. A line that
does not decode or parse (a truncated last line included) is reported as a `ReadIssue`
(`<path>:<line>: …`) and skipped — never an exception, and never a reason to stop reading.

A line holding valid JSON that is not an object (an array, a number, a string) is yielded with
`obj = None`: OpenClaw treats it as an opaque line, and keeping it means an import or an archive
never silently loses a line. Tree and context code ignore such lines.

`TranscriptLine.raw` is the line's exact text without its `\\n` (and one trailing `\\r`), so
writing `raw + "\\n"` back reproduces the file byte for byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from openclaw_cli import jsonutil
from openclaw_cli.errors import InvalidDataError, RefusedError
from openclaw_cli.fsio import FILE_MODE, O_CLOEXEC, O_NOFOLLOW, ensure_dir, fsync_dir
from openclaw_cli.records import Record
from openclaw_cli.store.base import ReadIssue, TranscriptLine

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    # imported by the writes: read-only commands never need the lock module
    from openclaw_cli.store.lock import LockSettingsLike

READ_BLOCK = 1 << 20  # forward streaming block
FIRST_BLOCK = 16 * 1024  # the first block of a forward stream (then doubling up to READ_BLOCK)
TAIL_BLOCK = 64 * 1024  # backward block for tail reads
CURRENT_SESSION_VERSION = 4
_BOM = b"\xef\xbb\xbf"


def _report(issues: list[ReadIssue] | None, path: str, line: int | None, message: str) -> None:
    issue = ReadIssue(path, line, message)
    if issues is not None:
        issues.append(issue)
    else:
        import logging  # lazy: only issues nobody collects are logged

        logging.getLogger(__name__).debug("%s", issue)


def _is_js_falsy(value: Any) -> bool:
    if value is None or value is False or value == "":
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _open_rb(path: Path) -> int:
    """Open for reading without following a final symlink (tests may wrap this)."""
    return os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)


def _pread(fd: int, length: int, offset: int) -> bytes:
    """Positional read (tests wrap this to count the bytes a tail read touches)."""
    return os.pread(fd, length, offset)


def _split_lines(stream: BinaryIO, block: int = READ_BLOCK) -> Iterator[tuple[bytes, bool]]:
    """(line without `\\n`, had_newline) from a binary stream, in blocks growing from
    FIRST_BLOCK to `block`: a reader after the first lines (a title, a header) stops long before
    a whole block of a large transcript was copied and split (a Gateway's `chat.history` and
    `sessions.list` read titles per request)."""
    carry: list[bytes] = []
    size = min(FIRST_BLOCK, block)
    while True:
        chunk = stream.read(size)
        size = min(size * 2, block)
        if not chunk:
            break
        parts = chunk.split(b"\n")
        last = parts.pop()
        if parts:
            if carry:
                carry.append(parts[0])
                parts[0] = b"".join(carry)
                carry = []
            for part in parts:
                yield part, True
        if last:
            carry.append(last)
    if carry:
        yield b"".join(carry), False


def parse_line(
    data: bytes,
    *,
    seq: int,
    line_no: int | None,
    path: str,
    issues: list[ReadIssue] | None,
    truncated: bool = False,
    where: str | None = None,
) -> TranscriptLine | None:
    """One non-blank line (without `\\n`) → TranscriptLine, or None (skipped, reported when bad)."""
    if data.endswith(b"\r"):
        data = data[:-1]
    label = where or ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _report(issues, path, line_no, f"{label}invalid UTF-8 ({exc.reason} at byte {exc.start})")
        return None
    try:
        value = jsonutil.loads(data[3:] if data.startswith(_BOM) else data)
    except jsonutil.JSONDecodeError as exc:
        what = "truncated last line (no trailing newline)" if truncated else "malformed JSON"
        _report(issues, path, line_no, f"{label}{what}: {exc}")
        return None
    except RecursionError:
        _report(issues, path, line_no, f"{label}JSON nested too deeply")
        return None
    if _is_js_falsy(value):
        return None
    return TranscriptLine(seq=seq, raw=text, obj=value if isinstance(value, dict) else None, line_no=line_no)


def iter_jsonl_stream(
    stream: BinaryIO, path: str, *, issues: list[ReadIssue] | None = None
) -> Iterator[TranscriptLine]:
    """Stream transcript lines from any binary stream (a file, a zstd reader)."""
    seq = 0
    line_no = 0
    for data, had_newline in _split_lines(stream):
        line_no += 1
        if not data.strip():
            continue
        line = parse_line(data, seq=seq, line_no=line_no, path=path, issues=issues, truncated=not had_newline)
        seq += 1
        if line is not None:
            yield line


def iter_jsonl(path: Path, *, issues: list[ReadIssue] | None = None) -> Iterator[TranscriptLine]:
    """Every usable line of a JSONL file, in order; `seq` counts non-blank lines from 0.

    A missing or unreadable file (or a symlink: never followed) yields nothing and is reported."""
    path_s = str(path)
    try:
        fd = _open_rb(Path(path))
    except FileNotFoundError:
        _report(issues, path_s, None, "transcript file not found")
        return
    except OSError as exc:
        _report(issues, path_s, None, f"cannot open transcript: {exc.strerror or exc}")
        return
    with os.fdopen(fd, "rb", buffering=0) as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            _report(issues, path_s, None, "not a regular file")
            return
        yield from iter_jsonl_stream(fh, path_s, issues=issues)


def count_lines(path: Path) -> tuple[int, int]:
    """(non-blank lines, bytes of those lines without newlines) — a fast physical count that
    does not parse JSON. Missing files count (0, 0)."""
    try:
        fd = _open_rb(Path(path))
    except OSError:
        return 0, 0
    lines = 0
    size = 0
    with os.fdopen(fd, "rb", buffering=0) as fh:
        for data, _ in _split_lines(fh):
            if data.strip():
                lines += 1
                size += len(data) - (1 if data.endswith(b"\r") else 0)
    return lines, size


def tail_jsonl(path: Path, n: int, issues: list[ReadIssue] | None = None) -> list[TranscriptLine]:
    """The last `n` usable lines, read backwards in 64 KiB blocks (never the whole file).

    Absolute line numbers are unknown without reading everything, so `line_no` is None and
    `seq` counts non-blank lines from the end: -1 is the last line, -2 the one before, …"""
    if n <= 0:
        return []
    path_s = str(path)
    try:
        fd = _open_rb(Path(path))
    except FileNotFoundError:
        _report(issues, path_s, None, "transcript file not found")
        return []
    except OSError as exc:
        _report(issues, path_s, None, f"cannot open transcript: {exc.strerror or exc}")
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _report(issues, path_s, None, "not a regular file")
            return []
        found: list[TranscriptLine] = []
        from_end = 0
        for data, had_newline in _reverse_lines(fd, st.st_size):
            if not data.strip():
                continue
            from_end += 1
            line = parse_line(
                data,
                seq=-from_end,
                line_no=None,
                path=path_s,
                issues=issues,
                truncated=not had_newline,
                where=f"line {from_end} from the end: ",
            )
            if line is not None:
                found.append(line)
                if len(found) >= n:
                    break
        found.reverse()
        return found
    finally:
        os.close(fd)


def _reverse_lines(fd: int, size: int) -> Iterator[tuple[bytes, bool]]:
    """Lines from the end of the file backwards: (line without `\\n`, had_newline)."""
    pos = size
    pending: list[bytes] = []  # pieces of the current (leftmost, incomplete) line, in reverse order
    first = True
    while pos > 0:
        start = max(0, pos - TAIL_BLOCK)
        chunk = _pread(fd, pos - start, start)
        if not chunk:
            break
        pos = start
        parts = chunk.split(b"\n")
        # parts[-1] continues the line collected so far; parts[0] may continue further left.
        pending.append(parts[-1])
        for part in reversed(parts[:-1]):
            line = b"".join(reversed(pending))
            if first:
                first = False
                if line:  # the file does not end with "\n": a truncated last line
                    yield line, False
            else:
                yield line, True
            pending = [part]
        # after the loop `pending` holds parts[0] (or the continued piece when no "\n" was seen)
    if pending:
        line = b"".join(reversed(pending))
        if line:
            yield line, not first


# ---- header ---------------------------------------------------------------------------------------


class TranscriptHeader(Record):
    _fields = ("id", "version", "timestamp", "cwd", "parent_session", "obj", "line")
    id: str | None  # `id`, or the older `sessionId` alias
    version: int  # 1 when the header has no version
    timestamp: str | None
    cwd: str | None
    parent_session: str | None
    obj: dict[str, Any]
    line: TranscriptLine

    def __init__(
        self,
        id: str | None,
        version: int,
        timestamp: str | None,
        cwd: str | None,
        parent_session: str | None,
        obj: dict[str, Any],
        line: TranscriptLine,
    ) -> None:
        self.id = id
        self.version = version
        self.timestamp = timestamp
        self.cwd = cwd
        self.parent_session = parent_session
        self.obj = obj
        self.line = line

    @property
    def is_legacy(self) -> bool:
        """Versions below 3 need `doctor --session-sqlite import` before runtime use."""
        return self.version < 3


HEADER_LOOKAHEAD = 16  # object lines scanned for the header (it is line 1 in every writer)


def header_from_line(line: TranscriptLine) -> TranscriptHeader | None:
    obj = line.obj
    if obj is None or obj.get("type") != "session":
        return None
    ident = obj.get("id") if isinstance(obj.get("id"), str) else None
    if ident is None and isinstance(obj.get("sessionId"), str):
        ident = obj["sessionId"]
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int | float):
        version = 1
    return TranscriptHeader(
        id=ident,
        version=int(version),
        timestamp=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None,
        cwd=obj.get("cwd") if isinstance(obj.get("cwd"), str) else None,
        parent_session=obj.get("parentSession") if isinstance(obj.get("parentSession"), str) else None,
        obj=obj,
        line=line,
    )


def read_header(path: Path, issues: list[ReadIssue] | None = None) -> TranscriptHeader | None:
    """The first `type:"session"` line among the leading lines; None for a header-less (v1)
    or missing file."""
    seen = 0
    for line in iter_jsonl(path, issues=issues):
        if line.obj is None:
            continue
        header = header_from_line(line)
        if header is not None:
            return header
        seen += 1
        if seen >= HEADER_LOOKAHEAD:
            break
    return None


def header_line(
    session_id: str,
    *,
    timestamp: str,
    cwd: str,
    version: int = CURRENT_SESSION_VERSION,
    parent_session: str | None = None,
) -> str:
    """A new transcript's first line, key order as OpenClaw writes it."""
    obj: dict[str, Any] = {
        "type": "session",
        "version": version,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_session:
        obj["parentSession"] = parent_session
    return jsonutil.dumps_compact(obj)


# ---- append ---------------------------------------------------------------------------------------


def _check_raw_line(raw: str | bytes) -> bytes:
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if b"\n" in data or b"\r" in data:
        raise InvalidDataError("A transcript line must not contain a line break.")
    if not data.strip():
        raise InvalidDataError("A transcript line must not be blank.")
    try:
        jsonutil.loads(data)
    except jsonutil.JSONDecodeError as exc:
        raise InvalidDataError(f"Refusing to append a line that is not JSON: {exc}") from exc
    return data


def append_jsonl(
    path: Path,
    raw_lines: Iterable[str | bytes],
    *,
    lock_settings: LockSettingsLike | None = None,
    header: str | bytes | None = None,
) -> int:
    """Append lines under OpenClaw's transcript write lock; fsync; returns the lines written.

    Creates the file (0600) when missing, writing `header` first when the file is empty. A file
    whose last line lacks its `\\n` (a crash mid-write) gets one first, so the truncated line is
    never merged with the new one. The final path component is never followed if it is a symlink."""
    path = Path(os.path.abspath(path))
    lines = [_check_raw_line(raw) for raw in raw_lines]
    head = _check_raw_line(header) if header is not None else None
    if not lines and head is None:
        return 0
    ensure_dir(path.parent)
    from openclaw_cli.store.lock import transcript_lock

    with transcript_lock(path, lock_settings, allow_reentrant=True):
        existed = os.path.lexists(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
        except OSError as exc:
            raise RefusedError(f"Cannot append to transcript {path}: {exc.strerror or exc}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise RefusedError(f"Cannot append to transcript {path}: not a regular file")
            prefix = b""
            if st.st_size > 0:
                if os.pread(fd, 1, st.st_size - 1) != b"\n":
                    prefix = b"\n"
            elif head is not None:
                prefix = head + b"\n"
            data = prefix + b"\n".join(lines) + (b"\n" if lines else b"")
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if not existed:
            fsync_dir(path.parent)
    return len(lines)
