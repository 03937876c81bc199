"""A usage ledger summed once (issue 27 §6, `usage` < 300 ms over 100,000 records): the ledger's
figures per (day, model, kind), kept in the cache dir and brought up to date by reading only what
was appended since — a ledger is append-only (`usage_ledger.append_lines`).

What `openclaw usage` needs of a ledger is the sum of its records' slices, less the records that do
not count: a whole-session record whose session is in its store again (restored, or a removal that
failed after its record). Those are few; the summary keeps, per session id, where its records
start, so they are read again and taken back out. Everything else is answered from the sums.

The summary is never the source of truth: a missing, unreadable or stale one (the ledger replaced,
shrunk, or changed before the summed end) is rebuilt from the ledger; a cache dir we cannot write
only costs the speed. Nothing under the state dir is written.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUMMARY_VERSION = 2
_TAIL = 64  # bytes before the summed end that must be unchanged for an append
_NUMBER_TYPES = frozenset({int, float})
# (day is a string, day label, model label, kind label) -> [input, output, cacheRead, cacheWrite,
# totalTokens, cost, messages]
GroupKey = tuple[bool, str, str, str]


@dataclass
class LedgerSummary:
    ident: tuple[int, int] = (0, 0)  # st_dev, st_ino of the ledger summed
    end: int = 0  # bytes summed: whole lines only
    tail: bytes = b""
    lines: int = 0  # lines summed (for the unreadable line numbers)
    count: int = 0  # readable records
    unreadable: int = 0
    unreadable_lines: list[int] = field(default_factory=list)
    groups: dict[GroupKey, list[float]] = field(default_factory=dict)
    # `sessions` as the cache keeps it (marshal), read only when asked: a usage run over a state
    # with no live session never needs the 100,000 ids of a big ledger (~0.1 s to load)
    sessions_blob: bytes | None = None
    _sessions: dict[str, list[int]] | None = None

    @property
    def sessions(self) -> dict[str, list[int]]:
        """Session id of a whole-session record -> byte offsets of its records."""
        if self._sessions is None:
            try:  # (written with the rest by one atomic replace: a damaged blob fails the whole load)
                loaded = marshal.loads(self.sessions_blob) if self.sessions_blob else {}
            except (EOFError, ValueError, TypeError):
                loaded = {}
            self._sessions = loaded if isinstance(loaded, dict) else {}
            self.sessions_blob = None
        return self._sessions

    def dump(self) -> bytes:
        sessions = self.sessions_blob if self._sessions is None else None
        return marshal.dumps(
            (
                SUMMARY_VERSION,
                self.ident,
                self.end,
                self.tail,
                self.lines,
                self.count,
                self.unreadable,
                self.unreadable_lines,
                self.groups,
                sessions if sessions is not None else marshal.dumps(self.sessions),
            )
        )

    @classmethod
    def load(cls, raw: bytes) -> LedgerSummary | None:
        try:
            data = marshal.loads(raw)
        except (EOFError, ValueError, TypeError):
            return None
        if (
            not isinstance(data, tuple)
            or len(data) != 10
            or data[0] != SUMMARY_VERSION
            or not isinstance(data[9], bytes)
        ):
            return None
        _, ident, end, tail, lines, count, unreadable, unreadable_lines, groups, blob = data
        return cls(ident, end, tail, lines, count, unreadable, unreadable_lines, groups, sessions_blob=blob)


def record_groups(record: dict[str, Any]) -> list[tuple[GroupKey, list[float]]]:
    """A record's slices as (group, 7 figures); damaged figures count 0 (`clean_figures`)."""
    stored = record.get("slices")
    if type(stored) is not list:
        return []
    kind = str(record.get("kind") or "unknown")
    out = []
    for item in stored:
        if type(item) is not list or len(item) < 9:
            continue
        vals = item[2:9]
        if not _NUMBER_TYPES.issuperset(map(type, vals)):
            vals = clean_figures(vals)
        day = item[0]
        out.append(((isinstance(day, str), str(day), str(item[1]), kind), vals))
    return out


def clean_figures(values: Any) -> list[float]:
    """A damaged slice's figures: numbers kept, anything else 0."""
    out: list[float] = []
    for i in range(7):
        value = values[i] if i < len(values) else 0
        ok = (type(value) is int or type(value) is float) and value == value and abs(value) != float("inf")
        out.append(value if ok else 0)
    return out


def _add(groups: dict[GroupKey, list[float]], record: dict[str, Any], sign: int = 1) -> None:
    for key, vals in record_groups(record):
        slot = groups.get(key)
        if slot is None:
            slot = groups[key] = [0, 0, 0, 0, 0, 0.0, 0]
        for i in range(7):
            slot[i] += sign * vals[i]


def _is_record(record: Any) -> bool:
    return type(record) is dict and type(record.get("sessionId")) is str


def _sum_lines(summary: LedgerSummary, data: bytes, base: int) -> None:
    """Whole lines `data` (read at byte `base` of the ledger) into `summary`."""
    import orjson

    loads = orjson.loads
    groups, sessions = summary.groups, summary.sessions
    number, at = summary.lines, 0
    for line in data[:-1].split(b"\n"):  # (`data` ends with a newline; lines as `for line in fh`)
        number += 1
        start, at = at, at + len(line) + 1
        try:
            record = loads(line)
        except ValueError:
            record = None
        if not _is_record(record):
            if line.strip():
                summary.unreadable += 1
                if len(summary.unreadable_lines) < 20:
                    summary.unreadable_lines.append(number)
            continue
        summary.count += 1
        if not record.get("delta"):
            sessions.setdefault(record["sessionId"], []).append(base + start)
        _add(groups, record)
    summary.lines = number


def summary_path(ledger: Path, root: Path) -> Path:
    real = os.path.realpath(ledger)
    digest = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return root / "usage" / f"{digest}.summary"


def summarize(ledger: Path, root: Path | None) -> tuple[LedgerSummary, bytes, str | None]:
    """(the summary of the ledger's whole lines, the bytes after its last newline, an error that
    kept the ledger from being read). `root`: the cache root (None: no cache, sum it all)."""
    try:
        fd = os.open(ledger, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return LedgerSummary(), b"", None
    except OSError as exc:
        return LedgerSummary(), b"", exc.strerror or str(exc)
    try:
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        cached = _cached(summary_path(ledger, root), fd, ident, st.st_size) if root is not None else None
        summary = cached or LedgerSummary(ident=ident)
        new = _read_from(fd, summary.end)
        cut = new.rfind(b"\n") + 1
        if cut:
            _sum_lines(summary, new[:cut], summary.end)
            summary.end += cut
            summary.tail = _pread(fd, max(0, summary.end - _TAIL), min(_TAIL, summary.end))
            if root is not None:
                _store(summary_path(ledger, root), summary)
        return summary, new[cut:], None
    except OSError as exc:
        return LedgerSummary(), b"", exc.strerror or str(exc)
    finally:
        os.close(fd)


def _cached(path: Path, fd: int, ident: tuple[int, int], size: int) -> LedgerSummary | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    summary = LedgerSummary.load(raw)
    if summary is None or tuple(summary.ident) != ident or summary.end > size:
        return None
    summary.ident = ident
    start = max(0, summary.end - _TAIL)
    if _pread(fd, start, summary.end - start) != summary.tail:
        return None  # changed before the summed end: not an append
    return summary


def _read_from(fd: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        block = os.pread(fd, 1 << 22, offset)
        if not block:
            return b"".join(chunks)
        chunks.append(block)
        offset += len(block)


def _pread(fd: int, offset: int, size: int) -> bytes:
    return os.pread(fd, size, offset) if size > 0 else b""


def _store(path: Path, summary: LedgerSummary) -> None:
    """Write the summary (temp + rename); a cache dir we cannot write is no error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(summary.dump())
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except (OSError, UnboundLocalError):
            pass


def records_at(ledger: Path, offsets: list[int]) -> list[dict[str, Any]]:
    """The records starting at `offsets` (read again: the few that must be taken back out)."""
    import orjson

    out = []
    with open(ledger, "rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            try:
                record = orjson.loads(fh.readline())
            except ValueError:
                continue
            if _is_record(record):
                out.append(record)
    return out


def subtract(groups: dict[GroupKey, list[float]], record: dict[str, Any]) -> None:
    _add(groups, record, -1)


def add(groups: dict[GroupKey, list[float]], record: dict[str, Any]) -> None:
    _add(groups, record)


def tail_records(tail: bytes, summary: LedgerSummary) -> list[dict[str, Any]]:
    """The bytes after the last newline (a record being appended, or a torn one): a record, or
    one unreadable line."""
    import orjson

    if not tail.strip():
        return []
    try:
        record = orjson.loads(tail)
    except ValueError:
        record = None
    if _is_record(record):
        return [record]
    summary.unreadable += 1
    if len(summary.unreadable_lines) < 20:
        summary.unreadable_lines.append(summary.lines + 1)
    return []
