"""The rows of a transcript's lines in our SQLite store (spec D4, D22): each raw line checked and
parsed once into its `transcript_events` row, its `transcript_event_identities` row and the window's
totals. A base for the store (`store/sqlite/store.py`) and for the import's parser process
(`migration/parser_process.py`), which computes the same rows in a second process: kept light
(orjson and the store's base modules) so that process starts fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from openclaw_cli import jsonutil
from openclaw_cli.errors import InvalidDataError
from openclaw_cli.store.base import ReadIssue
from openclaw_cli.store.quarantine import QUARANTINE_TYPE, is_wrapped, original_bytes
from openclaw_cli.store.quarantine import wrap as quarantine_wrap
from openclaw_cli.store.sqlite_common import (
    ESTIMATED_KINDS,
    event_token_estimate,
    finite_number,
    message_token_estimate,
    ms_int,
    timestamp_ms,
)

GATHER_BYTES = 4 * 1024 * 1024  # gathered transcript bytes written per executemany (bounds memory)
MalformedPolicy = Literal["quarantine", "stop", "skip", "raise"]
Item = tuple[str, int, Any]  # (text, utf8 bytes, parsed)

QUARANTINED: dict[str, Any] = {"type": QUARANTINE_TYPE}  # the parsed stand-in of a wrapper (read-only)

# what `gather_lines` hands over per chunk: events, identities, next seq, newest time, bytes,
# tokens, compactions (the chunk's totals)
Chunk = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int, int, int, int, int]


class LineCounts(Protocol):
    """What reading a record's lines reports (`ImportRecordResult` has these)."""

    lines_read: int
    quarantined: int
    issue: ReadIssue | None


@dataclass(slots=True)
class PreparedLines:
    """A transcript's rows computed ahead by the import's parser process: the chunks
    `gather_lines` handed over and its counts, replayed by the store as if it had read the lines,
    and the rows of its entry."""

    chunks: list[Chunk]
    lines_read: int
    quarantined: int
    issue: ReadIssue | None
    # the record's `session_nodes` row (None: no entry) and `session_windows` row (`node_row`,
    # `window_row`), computed ahead too; window None: the store computes both from the entry
    node: tuple[Any, ...] | None = None
    window: tuple[Any, ...] | None = None
    # the rows not handed over but written by the parser into a rows file (`chunks` is then empty):
    # (file number or -1, first event's time, newest, events, bytes, tokens, compactions); and a
    # closed rows file the store copies in before this record (`SqliteStore.bulk_import`)
    rows: tuple[int, int | None, int, int, int, int, int] | None = None
    copy_first: str | None = None
    # the entry's rows written by the parser into that rows file too, at the record's rowid
    # (`node` and `window` are then None): -1 not written; 0 the window row only (no entry); else
    # the node's entry bytes (its `session_nodes` row and its window row are both there)
    written: int = -1


def bind_none_as_null() -> None:
    """Register an adapter for `None` (process-wide, idempotent) before binding many rows: Python
    3.11's sqlite3 adapts each None it binds by looking `__adapt__` up on its PrepareProtocol type,
    which raises and formats an AttributeError every time (~1,000 instructions a None; an entry's
    row binds ~9, a window's ~4). A registered adapter is found first; it returns None, bound as
    NULL exactly as before (issue 30)."""
    import sqlite3

    sqlite3.register_adapter(type(None), _NO_KEYS.get)


_NO_KEYS: dict[Any, Any] = {}  # `.get(value)` is None for any value: the adapter above


def prepare_line(raw: str | bytes, *, internal: bool = True) -> Item | None:
    """(text, utf8 bytes, parsed) for one raw line; None for a blank line. Raises ValueError
    (with a reason) for lines that are not one JSON object. `internal`: the line comes from one of
    our stores (a quarantine wrapper passes through); lines read from files are not internal."""
    if isinstance(raw, bytes):
        data = raw[:-1] if raw.endswith(b"\n") else raw
        if not data or data.isspace():
            return None
        if 10 in data:  # b"\n", as an int: no TypeError made and dropped (see `gather_lines`)
            raise ValueError("line contains a newline")
        obj = orjson.loads(data)  # also rejects invalid UTF-8
        text = data.decode("utf-8")
        nbytes = len(data)
    elif isinstance(raw, str):
        text = raw[:-1] if raw.endswith("\n") else raw
        if not text or text.isspace():
            return None
        if "\n" in text:
            raise ValueError("line contains a newline")
        data = text.encode("utf-8")
        obj = orjson.loads(data)
        nbytes = len(data)
    else:
        raise ValueError(f"line is {type(raw).__name__}, not text")
    if not isinstance(obj, dict):
        raise ValueError("line is not a JSON object")
    if obj.get("type") == QUARANTINE_TYPE:
        # our own wrapper copied between windows (compaction) stays a quarantined line; one
        # arriving from a file is quarantined itself (see store/quarantine.py)
        if not internal or not is_wrapped(text):
            raise ValueError("line uses the reserved quarantine type")
        return text, len(original_bytes(text)), QUARANTINED
    return text, nbytes, obj


def refused_line(
    out: LineCounts, policy: MalformedPolicy, raw: str | bytes, line_no: int, source: str, exc: BaseException
) -> Item | None | Literal[False]:
    """A line `prepare_line` refused, under the record's policy: the item to store (its
    quarantine wrapper), None to skip it, False to stop the record here."""
    if policy == "quarantine":
        return _quarantined(out, raw, line_no, source)
    message = f"malformed transcript line: {exc}"
    if policy == "raise":
        raise InvalidDataError(f"{source}:{line_no}: {message}") from None
    if out.issue is None:
        out.issue = ReadIssue(source, line_no, message)
    return False if policy == "stop" else None


def _quarantined(out: LineCounts, raw: str | bytes, line_no: int, source: str) -> Item | None:
    """D22: the line is kept, in place, as a wrapper holding its bytes; the first one of a
    record is its issue (with the count of all of them)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", errors="surrogateescape")
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data or data.isspace():
        return None
    text = quarantine_wrap(data)
    out.quarantined += 1
    if out.issue is None:
        reason = orjson.loads(text)["reason"]
        out.issue = ReadIssue(source, line_no, f"malformed transcript line: {reason}")
    return text, len(data), QUARANTINED


def gather_lines(
    out: LineCounts,
    sid: str,
    lines: Iterable[str | bytes],
    *,
    source: str,
    policy: MalformedPolicy,
    seq: int,
    newest: int,
    limit_rows: int,
    hand_over: Callable[[list[tuple[Any, ...]], list[tuple[Any, ...]], int, int, int, int, int], None],
    merged: bool = False,
) -> None:
    """The rows of one session of a fresh store (nothing stored to compare with, no merge), handed
    over every `limit_rows` rows or `GATHER_BYTES` bytes and once at the end (see `Chunk`). The
    per-line work of the common line (bytes, one JSON object) is inline — it is most of an
    import's Python time — with `prepare_line`'s checks in the same order; every other line (str,
    a trailing newline) goes through `prepare_line`, refused ones through `refused_line`.
    `merged` (the import's parser process, whose rows files hold both in one table): each line's
    identity goes into its event row — `(session_id, seq, created_at, bytes, type, event_id or None,
    parent_id, text)` — and the identities handed over stay empty."""
    loads = orjson.loads
    estimate = event_token_estimate
    estimate_message = message_token_estimate
    quarantined = QUARANTINED
    limit_bytes = GATHER_BYTES
    estimated = ESTIMATED_KINDS
    kind: Any = None
    events: list[tuple[Any, ...]] = []
    identities: list[tuple[Any, ...]] = []
    add_event = events.append
    add_identity = identities.append
    created: int | None
    nbytes = tokens = compactions = 0
    last_stamp: Any = None  # consecutive lines often share a timestamp: parsed once
    last_ms: int | None = None
    lines_read = 0
    for line_no, raw in enumerate(lines, start=1):
        item: Item | Literal[False] | None
        try:
            if raw.__class__ is bytes and not raw.endswith(b"\n"):
                # prepare_line's bytes case, inline (same checks, same order)
                if not raw or raw.isspace():
                    continue
                if 10 in raw:  # b"\n" (an int: `bytes in bytes` first tries the operand as an
                    # int and formats a TypeError, ~1,800 instructions a line; issue 30)
                    raise ValueError("line contains a newline")
                obj = loads(raw)
                text = raw.decode("utf-8")
                if not isinstance(obj, dict):
                    raise ValueError("line is not a JSON object")
                kind = obj.get("type")
                if kind == QUARANTINE_TYPE:
                    raise ValueError("line uses the reserved quarantine type")
                size = len(raw)
            else:
                item = prepare_line(raw, internal=False)
                if item is None:
                    continue
                text, size, obj = item
                kind = obj.get("type")
        except (ValueError, orjson.JSONDecodeError) as exc:
            item = refused_line(out, policy, raw, line_no, source, exc)
            if item is False:
                break
            if item is None:
                continue
            text, size, obj = item
        lines_read += 1
        if obj is quarantined:
            kind = QUARANTINE_TYPE
            event_id = None
            created = newest
        else:
            if kind.__class__ is not str:
                kind = kind if isinstance(kind, str) else None
            event_id = obj.get("id")
            if event_id is not None and not (isinstance(event_id, str) and event_id.strip()):
                event_id = None
            stamp = obj.get("timestamp")
            if stamp.__class__ is str and stamp == last_stamp:
                created = last_ms
            else:
                created = timestamp_ms(stamp)
                if stamp.__class__ is str:
                    last_stamp, last_ms = stamp, created
            if created is None:
                created = newest
            elif created > newest:
                newest = created
            if kind == "message":
                tokens += estimate_message(obj)
            elif kind in estimated:  # every other kind estimates 0
                tokens += estimate(obj)
                if kind == "compaction":
                    compactions += 1
        if event_id is not None:
            parent = obj.get("parentId")
            if parent.__class__ is not str:
                parent = parent if isinstance(parent, str) else None
            if merged:
                add_event((sid, seq, created, size, kind, event_id, parent, text))
            else:
                add_event((sid, seq, created, size, kind, text))
                add_identity((sid, event_id, seq, kind, parent, created))
        elif merged:
            add_event((sid, seq, created, size, kind, None, None, text))
        else:
            add_event((sid, seq, created, size, kind, text))
        seq += 1
        nbytes += size
        if len(events) >= limit_rows or nbytes >= limit_bytes:
            hand_over(events, identities, seq, newest, nbytes, tokens, compactions)
            events, identities = [], []
            add_event, add_identity = events.append, identities.append
            nbytes = tokens = compactions = 0
    out.lines_read += lines_read
    hand_over(events, identities, seq, newest, nbytes, tokens, compactions)


# ---- an entry's rows (`session_nodes`, `session_windows`): the store's and the parser process's ----


def text_value(value: Any) -> str | None:
    """A string projection; a lone surrogate (not encodable as UTF-8, D22) projects as NULL — the
    entry's JSON text keeps it as written."""
    if not isinstance(value, str):
        return None
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def first_number(entry: Mapping[str, Any], *keys: str) -> int | float | None:
    for key in keys:
        value = finite_number(entry.get(key))
        if value is not None:
            return value
    return None


def encode_entry(entry: dict[str, Any]) -> bytes:
    # numbers kept as written (RawNumber), >64-bit integers and lone surrogates as JSON.stringify
    # writes them (D22): never `Infinity`, never a silent null
    return jsonutil.dumps_bytes(entry)


def node_row(key: str, entry: dict[str, Any], data: bytes) -> tuple[Any, ...]:
    """The projections of an entry (OpenClaw S-1 names); entry_json stays the source of truth."""
    parent = text_value(entry.get("parentSessionKey")) or text_value(entry.get("spawnedBy"))
    return (
        key,
        text_value(entry.get("sessionId")),
        finite_number(entry.get("updatedAt")),
        finite_number(entry.get("createdAt")),
        text_value(entry.get("status")),
        parent,
        text_value(entry.get("spawnedBy")),
        text_value(entry.get("label")),
        text_value(entry.get("displayName")),
        finite_number(entry.get("pinnedAt")),
        finite_number(entry.get("archivedAt")),
        finite_number(entry.get("lastReadAt")),
        finite_number(entry.get("lastInteractionAt")),
        finite_number(entry.get("lastActivityAt")),
        len(data),
        data.decode("utf-8"),
    )


def window_with_totals(
    window: tuple[Any, ...],
    watermark: int,
    first_created: int | None,
    newest: int,
    totals: tuple[int, int, int, int],
) -> tuple[Any, ...]:
    """A record's `window_row` with what its lines added: (events, bytes, tokens, compactions), its
    first event's time, the newest, and the watermark (the record's creation time)."""
    if not totals[0]:
        return (*window, None, 0, 0, 0, 0)
    return (*window[:4], first_created, max(window[5], newest), *window[6:], watermark, *totals)


def window_row(
    session_id: str,
    key: str,
    entry: Mapping[str, Any] | None,
    *,
    fallback_ms: int,
    previous: str | None = None,
    reason: str | None = None,
) -> tuple[Any, ...]:
    entry = entry or {}
    created = ms_int(first_number(entry, "sessionStartedAt", "startedAt", "updatedAt"))
    updated = ms_int(first_number(entry, "updatedAt"))
    created_ms = created if created is not None else fallback_ms
    updated_ms = updated if updated is not None else created_ms
    origin: dict[str, Any] = entry["origin"] if isinstance(entry.get("origin"), dict) else {}
    chat_type = text_value(entry.get("chatType")) or text_value(origin.get("chatType"))
    return (
        session_id,
        key,
        previous,
        reason,
        created_ms,
        updated_ms,
        chat_type,
        text_value(entry.get("channel")) or text_value(origin.get("provider")),
        text_value(entry.get("modelProvider")),
        text_value(entry.get("model")),
    )
