"""The usage ledger (issue 27 §6): what a session cost, kept after its transcript leaves a store.

Before any transcript leaves a store (cleanup, delete, reset, agent delete, a max-lines compaction),
its usage totals are appended to a per-agent ledger that nothing prunes:

    <state>/openclaw-cli-usage/<agentId>.ledger.jsonl     one usage record per line
    <state>/openclaw-cli-usage/<agentId>.removed.jsonl    the removed row itself (what a restore
                                                          puts back: label, channel, …)

A directory of ours beside the state that the real OpenClaw never reads (it is not in an agent's
sessions dir, so no tool takes a ledger for a transcript). Appends are whole lines written with one
`write` on an `O_APPEND` descriptor and fsynced; a torn last line (a crash mid-append) is closed
with a newline before the next record, so it stays one unreadable line that readers count and
skip. Nothing here ever rewrites or truncates a ledger.

Usage of a transcript: every line carrying a `"usage":{…}` object (an assistant message) adds its
input / output / cacheRead / cacheWrite / totalTokens and `cost.total`, under the line's model and
the UTC day of its timestamp. Lines are not parsed whole: the usage object, model, provider and
timestamp are cut out of the raw text (a line whose pieces do not parse is parsed whole).
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import Record
from openclaw_cli.store.base import LeavingHook

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

LEDGER_DIR = "openclaw-cli-usage"
LEDGER_SUFFIX = ".ledger.jsonl"
REMOVED_SUFFIX = ".removed.jsonl"
RECORD_VERSION = 1
FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_USAGE = b'"usage":{'
_MODEL = lazy_pattern(globals(), "_MODEL", rb'"model":"([^"\\]{1,200})"')
_PROVIDER = lazy_pattern(globals(), "_PROVIDER", rb'"provider":"([^"\\]{1,200})"')
_STAMP = lazy_pattern(globals(), "_STAMP", rb'"timestamp":"(\d{4}-\d{2}-\d{2})T([0-9:.]+)Z?"')
_STAMP_KEY = b'"timestamp":"'  # `_STAMP`'s literal start


def ledger_dir(state_dir: Path) -> Path:
    return Path(state_dir) / LEDGER_DIR


def ledger_path(state_dir: Path, agent_id: str) -> Path:
    return ledger_dir(state_dir) / f"{agent_id}{LEDGER_SUFFIX}"


def removed_path(state_dir: Path, agent_id: str) -> Path:
    return ledger_dir(state_dir) / f"{agent_id}{REMOVED_SUFFIX}"


def state_dir_of(store: SessionStore) -> Path | None:
    """The state dir a store belongs to: the run's (`WriteOptions.state_dir`), else the parent of
    the `agents/` directory its path lies in; None for a store outside any state dir."""
    options = store.write_options
    if options is not None and options.state_dir is not None:
        return Path(options.state_dir)
    path = Path(store.path).absolute()
    for parent in path.parents:
        if parent.name == "agents":
            return parent.parent
    return None


# ---- usage of a transcript -----------------------------------------------------------------------


def _slot() -> list[float]:
    return [0, 0, 0, 0, 0, 0.0, 0]  # input, output, cacheRead, cacheWrite, totalTokens, cost, messages


class Usage(Record):
    """Usage totals of one session (or of many: `add`), also per (UTC day, provider/model)."""

    _fields = ("totals", "slices", "first_ms", "last_ms", "model", "provider", "events")
    totals: list[float]
    slices: dict[tuple[str, str], list[float]]
    first_ms: int | None
    last_ms: int | None
    model: str | None  # the last model seen
    provider: str | None
    events: int

    def __init__(
        self,
        totals: list[float] | None = None,
        slices: dict[tuple[str, str], list[float]] | None = None,
        first_ms: int | None = None,
        last_ms: int | None = None,
        model: str | None = None,
        provider: str | None = None,
        events: int = 0,
    ) -> None:
        self.totals = _slot() if totals is None else totals
        self.slices = {} if slices is None else slices
        self.first_ms = first_ms
        self.last_ms = last_ms
        self.model = model
        self.provider = provider
        self.events = events

    def add_message(
        self, usage: dict[str, Any], model: str | None, provider: str | None, day: str | None
    ) -> None:
        get = usage.get
        # (FIELDS, in order; a plain int taken as it is, anything else through `_int`)
        a = get("input")
        if type(a) is not int:
            a = _int(a)
        b = get("output")
        if type(b) is not int:
            b = _int(b)
        c = get("cacheRead")
        if type(c) is not int:
            c = _int(c)
        d = get("cacheWrite")
        if type(d) is not int:
            d = _int(d)
        e = get("totalTokens")
        if type(e) is not int:
            e = _int(e)
        if not e:
            e = a + b + c + d
        cost = get("cost")
        total_cost = _float(cost.get("total")) if isinstance(cost, dict) else _float(cost)
        name = f"{provider}/{model}" if provider and model else (model or provider or "unknown")
        named = (day or "unknown", name)
        other = self.slices.get(named)
        if other is None:
            other = self.slices[named] = _slot()
        slot = self.totals  # (then the slice's: the same additions, in the same order)
        slot[0] += a
        slot[1] += b
        slot[2] += c
        slot[3] += d
        slot[4] += e
        slot[5] += total_cost
        slot[6] += 1
        other[0] += a
        other[1] += b
        other[2] += c
        other[3] += d
        other[4] += e
        other[5] += total_cost
        other[6] += 1
        if model:
            self.model = model
        if provider:
            self.provider = provider

    def see_time(self, ms: int | None) -> None:
        if ms is None:
            return
        if self.first_ms is None or ms < self.first_ms:
            self.first_ms = ms
        if self.last_ms is None or ms > self.last_ms:
            self.last_ms = ms

    def add(self, other: Usage, sign: int = 1) -> None:
        _merge(self.totals, other.totals, sign)
        for name, slot in other.slices.items():
            _merge(self.slices.setdefault(name, _slot()), slot, sign)
        self.see_time(other.first_ms)
        self.see_time(other.last_ms)
        self.events += sign * other.events

    def doc(self) -> dict[str, Any]:
        return slot_doc(self.totals)


def _merge(into: list[float], other: list[float], sign: int = 1) -> None:
    for i, value in enumerate(other):
        into[i] += sign * value


def slot_values(slot: list[float]) -> list[Any]:
    """`slot_doc`'s values, in its order (a ledger record's slice; issue 30: no dict made first)."""
    return [
        int(slot[0]),
        int(slot[1]),
        int(slot[2]),
        int(slot[3]),
        int(slot[4]),
        round(slot[5], 10),
        int(slot[6]),
    ]


def slot_doc(slot: list[float]) -> dict[str, Any]:
    return {
        "input": int(slot[0]),
        "output": int(slot[1]),
        "cacheRead": int(slot[2]),
        "cacheWrite": int(slot[3]),
        "totalTokens": int(slot[4]),
        "cost": round(slot[5], 10),
        "messages": int(slot[6]),
    }


def slot_of(doc: Any) -> list[float]:
    if not isinstance(doc, dict):
        return _slot()
    return [
        _int(doc.get("input")),
        _int(doc.get("output")),
        _int(doc.get("cacheRead")),
        _int(doc.get("cacheWrite")),
        _int(doc.get("totalTokens")),
        _float(doc.get("cost")),
        _int(doc.get("messages")),
    ]


def _int(value: Any) -> int:
    if type(value) is int:  # the usual value (bool is not `int` by type)
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value != value
        or value in (float("inf"), float("-inf"))
    ):
        return 0
    return int(value)


def _float(value: Any) -> float:
    if type(value) is float and value - value == 0.0:  # finite (NaN and infinities are not)
        return value
    if type(value) is int:  # (a plain int, e.g. a cost of 0: what the checks below make of it)
        return float(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value != value
        or value in (float("inf"), float("-inf"))
    ):
        return 0.0
    return float(value)


_MIDNIGHT: dict[bytes, int | None] = {}  # "YYYY-MM-DD" -> its UTC midnight in ms (or None: no date)
_CLOCK_MS = lazy_pattern(globals(), "_CLOCK_MS", rb"([01]\d|2[0-3]):([0-5]\d):([0-5]\d)\.(\d{3})")


def _iso_ms(day: bytes, clock: bytes) -> int | None:
    """Epoch ms of `<day>T<clock>` UTC (`datetime.fromisoformat`'s reading). The usual
    `HH:MM:SS.mmm` is added to the day's cached midnight (one per day, not a datetime per line)."""
    hit = _CLOCK_MS.fullmatch(clock)
    if hit is not None:
        midnight = _MIDNIGHT.get(day, -1)
        if midnight == -1:
            midnight = _MIDNIGHT[day] = _slow_iso_ms(day, b"00:00:00")
        if midnight is not None:
            h, m, sec, ms = hit.groups()
            exact = midnight + ((int(h) * 60 + int(m)) * 60 + int(sec)) * 1000 + int(ms)
            # as `int(datetime.timestamp() * 1000)` rounds it (microseconds / 10**6, then * 1000)
            return int(exact * 1000 / 10**6 * 1000)
    return _slow_iso_ms(day, clock)


def _slow_iso_ms(day: bytes, clock: bytes) -> int | None:
    try:
        moment = datetime.fromisoformat(f"{day.decode()}T{clock.decode()}").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(moment.timestamp() * 1000)


def _balanced(line: bytes, start: int) -> bytes | None:
    """The `{…}` object starting at `start` (usage objects hold numbers and one nested object)."""
    depth = 0
    for i in range(start, min(len(line), start + 4096)):
        char = line[i]
        if char == 0x7B:
            depth += 1
        elif char == 0x7D:
            depth -= 1
            if depth == 0:
                return line[start : i + 1]
        elif char == 0x22:  # a string inside: leave it to the full parse
            return None
    return None


def add_line(usage: Usage, line: bytes) -> None:
    """One raw transcript line into `usage`."""
    usage.events += 1
    stamp = _STAMP.search(line, 0, 400)
    day = None
    if stamp is not None:
        day = stamp.group(1)
        usage.see_time(_iso_ms(day, stamp.group(2)))
    at = line.rfind(_USAGE)
    if at >= 0:
        _add_usage(usage, line, at, day)


def _add_usage(usage: Usage, line: bytes, at: int, day: bytes | None) -> None:
    """The usage object of a line holding `"usage":{` (its last one at `at`) into `usage`, under
    the UTC `day` of the line's timestamp."""
    import orjson

    piece = _balanced(line, at + len(_USAGE) - 1)
    model = provider = None
    try:
        found = orjson.loads(piece) if piece is not None else None
    except ValueError:
        found = None
    if isinstance(found, dict):
        models = _MODEL.findall(line, 0, at)
        providers = _PROVIDER.findall(line, 0, at)
        model = models[-1].decode() if models else None
        provider = providers[-1].decode() if providers else None
    else:  # an unusual line: parse it whole
        _add_whole_line(usage, line, day, orjson.loads)
        return
    usage.add_message(found, model, provider, day.decode() if day is not None else None)


def _add_whole_line(usage: Usage, line: bytes, day: bytes | None, loads: Callable[[bytes], Any]) -> None:
    """`_add_usage` of a line whose usage object is not cut out alone: the line parsed whole, its
    `message.usage` (if any) added under its `message.model` / `message.provider`."""
    try:
        obj = loads(line)
    except ValueError:
        return
    # (`type(...) is`: what the parsers give are plain dicts and strs; a subclass is tested as before)
    message = obj.get("message") if type(obj) is dict or isinstance(obj, dict) else None
    if type(message) is not dict and not isinstance(message, dict):
        return
    found = message.get("usage")
    if type(found) is not dict and not isinstance(found, dict):
        return
    model = message.get("model")
    if type(model) is not str and not isinstance(model, str):
        model = None
    provider = message.get("provider")
    if type(provider) is not str and not isinstance(provider, str):
        provider = None
    usage.add_message(found, model, provider, day.decode() if day is not None else None)


def content_usage(content: bytes) -> Usage:
    """Usage of a transcript's JSONL content: `add_line` of each non-blank line, with the times
    compared as text. A timestamp of the usual shape (`YYYY-MM-DD` of a real date, then
    `HH:MM:SS.mmm`) orders as its instant does and its epoch ms never decrease with it, so only
    the earliest and the latest of them are converted (once each, not once per line); another
    shape is converted on its line, as `add_line` does."""
    import orjson

    usage = Usage()
    search, canonical, usage_at, loads = _STAMP.search, _CLOCK_MS.fullmatch, _USAGE, orjson.loads
    key = _STAMP_KEY
    quote = len(_USAGE)  # where the usage object's first key starts
    low = high = b""
    events = 0
    # the previous stamp read (its whole match) and its day: a line with the same stamp (most of a
    # transcript's lines, issue 30: 73 % of *many*'s) changes neither time, whatever its shape
    last: bytes = b"\n"  # (no line holds a newline: nothing starts with it)
    last_day: bytes | None = None
    for line in content.split(b"\n"):
        if not line or line.isspace():  # (`not line.strip()` without a copy)
            continue
        events += 1
        day = None
        # the stamp's key (the pattern's literal start: no match without it within 400 bytes)
        place = line.find(key, 0, 400)
        if place < 0:
            stamp = None
        elif line.startswith(last, place, 400):
            # the previous line's whole match at the key's first place: the search would find it
            # there (the clock's run ends where it ended), the same stamp — read by `find` alone
            day = last_day
            stamp = None
        else:
            stamp = search(line, place, 400)  # (nothing can match before the key's first place)
        if stamp is not None:
            whole = stamp.group(0)
            if whole == last:
                day = last_day
            else:
                day, clock = stamp.group(1, 2)
                last, last_day = whole, day
                midnight = _MIDNIGHT.get(day, -1)
                if midnight == -1:
                    midnight = _MIDNIGHT[day] = _slow_iso_ms(day, b"00:00:00")
                if midnight is not None and canonical(clock) is not None:
                    moment = day + clock  # 22 bytes of fixed width: text order is time order
                    if not low or moment < low:
                        low = moment
                    if moment > high:
                        high = moment
                else:
                    usage.see_time(_iso_ms(day, clock))
        at = line.rfind(usage_at)
        if at >= 0:
            if line.startswith(b'"', at + quote):
                # a quoted key first (every real line): `_balanced` gives up at once, the line is
                # parsed whole — straight to that parse
                _add_whole_line(usage, line, day, loads)
            else:
                _add_usage(usage, line, at, day)
    if low:
        usage.see_time(_iso_ms(low[:10], low[10:]))
        usage.see_time(_iso_ms(high[:10], high[10:]))
    usage.events += events
    return usage


class UsageSink:
    """A binary writer taking a store's `export_transcript` output and adding up its usage."""

    def __init__(self) -> None:
        self.usage = Usage()
        self._rest = b""
        self.bytes = 0

    def write(self, data: bytes) -> int:
        buf = self._rest + bytes(data) if self._rest else bytes(data)
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            if end > start:
                self._line(buf[start:end])
            start = end + 1
        self._rest = buf[start:]
        return len(data)

    def _line(self, line: bytes) -> None:
        if line.strip():
            self.bytes += len(line)
            add_line(self.usage, line)

    def close(self) -> Usage:
        if self._rest:
            self._line(self._rest)
            self._rest = b""
        return self.usage


def transcript_usage(store: SessionStore, session_id: str, entry: dict[str, Any] | None = None) -> Usage:
    sink = UsageSink()
    store.export_transcript(session_id, sink, entry=entry)
    return sink.close()


def lines_usage(lines: Iterable[bytes | str]) -> Usage:
    usage = Usage()
    for line in lines:
        raw = line.encode("utf-8") if isinstance(line, str) else line
        if raw.strip():
            add_line(usage, raw)
    return usage


# ---- records ---------------------------------------------------------------------------------------


def usage_record(
    *,
    agent_id: str,
    key: str | None,
    session_id: str,
    kind: str | None,
    reason: str,
    usage: Usage,
    now_ms: int,
    delta: bool = False,
) -> dict[str, Any]:
    """One ledger line. `delta`: usage of lines that left a session still in the store (a
    max-lines compaction) — counted whatever the session's state; otherwise the record stands for
    the whole session and counts only while that session is not in its store."""
    totals = usage.totals
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "at": now_ms,
        "agentId": agent_id,
        "key": key,
        "sessionId": session_id,
        "kind": kind,
        "reason": reason,
        # `usage.doc()`, spelled out (issue 30: a cleanup's ledger worker makes thousands of these)
        "input": int(totals[0]),
        "output": int(totals[1]),
        "cacheRead": int(totals[2]),
        "cacheWrite": int(totals[3]),
        "totalTokens": int(totals[4]),
        "cost": round(totals[5], 10),
        "messages": int(totals[6]),
        "model": usage.model,
        "provider": usage.provider,
        "firstActivityAt": usage.first_ms,
        "lastActivityAt": usage.last_ms,
        "events": usage.events,
        # [day, provider/model, input, output, cacheRead, cacheWrite, totalTokens, cost, messages]
        "slices": [[day, name, *slot_values(slot)] for (day, name), slot in sorted(usage.slices.items())],
    }
    if delta:
        record["delta"] = True
    return record


class Appended(Record):
    """What one append added, so that an operation refused before it changed anything (busy,
    changed meanwhile, refused) leaves the state dir as it found it: `undo` cuts the file back
    when nothing was appended after us (else our records stay: a record of a session still in its
    store is never counted)."""

    _fields = ("parts", "created_dir", "failed")
    parts: list[tuple[Path, bool, int, int]]  # path, existed, before, after
    created_dir: Path | None
    failed: str | None  # why nothing could be appended

    def __init__(
        self,
        parts: list[tuple[Path, bool, int, int]] | None = None,
        created_dir: Path | None = None,
        failed: str | None = None,
    ) -> None:
        self.parts = [] if parts is None else parts
        self.created_dir = created_dir
        self.failed = failed

    def undo(self) -> None:
        for path, existed, before, after in reversed(self.parts):
            try:
                if after >= 0 and os.lstat(path).st_size != after:
                    continue
                if existed:
                    os.truncate(path, before)
                else:
                    os.unlink(path)
            except OSError:
                continue
        if self.created_dir is not None:
            try:
                os.rmdir(self.created_dir)
            except OSError:
                pass


def append_lines(
    path: Path, records: list[dict[str, Any]] | list[dict[str, Any] | bytes], appended: Appended | None = None
) -> None:
    """Append whole JSON lines (one write, fsync): records, or lines already serialised (bytes).
    A torn last line is closed first."""
    if not records:
        return
    from openclaw_cli.jsonutil import dumps_bytes

    # a removed row holds the entry as read: raw numbers, schema-24 snapshot texts (JsonObjectText)
    # (joined once with their newlines: no copy of each line with its newline first)
    lines = [r if isinstance(r, bytes) else dumps_bytes(r) for r in records]
    lines.append(b"")
    append_data(path, b"\n".join(lines), appended)


def append_data(path: Path, data: bytes | memoryview, appended: Appended | None = None) -> None:
    """`append_lines` of lines already joined, each with its newline (nothing when empty)."""
    if not data:
        return
    from openclaw_cli.fsio import O_CLOEXEC, O_NOFOLLOW, ensure_dir

    if appended is not None and appended.created_dir is None and not path.parent.exists():
        appended.created_dir = path.parent
    ensure_dir(path.parent)
    existed = os.path.lexists(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    size = 0
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    data = b"\n" + data  # a torn record stays one unreadable line, never glued to ours
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        if appended is not None:
            appended.parts.append((path, existed, size, size + len(data)))
    except BaseException:
        if appended is not None:
            appended.parts.append((path, existed, size, -1))  # cut back whatever was written
        raise
    finally:
        os.close(fd)


class LedgerRead(Record):
    _fields = ("records", "unreadable", "unreadable_lines", "error", "count")
    records: list[dict[str, Any]]
    unreadable: int  # lines that are not a record (a torn tail, damage)
    unreadable_lines: list[int]  # their 1-based line numbers (first 20)
    error: str | None  # the file could not be read at all
    count: int  # readable records seen

    def __init__(
        self,
        records: list[dict[str, Any]] | None = None,
        unreadable: int = 0,
        unreadable_lines: list[int] | None = None,
        error: str | None = None,
        count: int = 0,
    ) -> None:
        self.records = [] if records is None else records
        self.unreadable = unreadable
        self.unreadable_lines = [] if unreadable_lines is None else unreadable_lines
        self.error = error
        self.count = count


def iter_records(path: Path, read: LedgerRead) -> Iterator[dict[str, Any]]:
    """Every readable record, streamed (flat memory over a large ledger); what is unreadable is
    counted in `read`, never an exception."""
    import orjson

    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the last record
    except FileNotFoundError:
        return
    except OSError as exc:
        read.error = exc.strerror or str(exc)
        return
    loads = orjson.loads
    with fh:
        number = 0
        try:
            for line in fh:
                number += 1
                try:
                    record = loads(line)
                except ValueError:
                    record = None
                if type(record) is not dict or type(record.get("sessionId")) is not str:
                    if line.strip():
                        read.unreadable += 1
                        if len(read.unreadable_lines) < 20:
                            read.unreadable_lines.append(number)
                    continue
                read.count += 1
                yield record
        except OSError as exc:
            read.error = exc.strerror or str(exc)


def read_records(path: Path) -> LedgerRead:
    """Every readable record; the rest counted, never an exception."""
    out = LedgerRead()
    out.records = list(iter_records(path, out))
    return out


def record_leaving(
    store: SessionStore,
    items: Iterable[tuple[str | None, dict[str, Any] | None, object]],
    *,
    reason: str,
    now_ms: int,
    known: Mapping[str, bytes] | None = None,
    appended: Appended | None = None,
    known_rows: Mapping[str, bytes] | None = None,
) -> Appended:
    """Before `items` (key, entry, sessionId) leave `store`: their usage into the agent's ledger
    and their rows into the removed-rows file (nothing when the store lies outside a state dir).
    A sessionId that is not a non-empty string is skipped. `known`: ledger lines already made
    from the sessions' content (the archive's export, `RetirementLedger`); the other transcripts
    are read here. `known_rows`: removed-rows lines already made (`removed_row` of the same first
    key and entry, serialised), by sessionId. What is appended is added to `appended` (a new one by
    default) and returned."""
    appended = Appended() if appended is None else appended
    state = state_dir_of(store)
    if state is None:
        return appended
    records: list[dict[str, Any] | bytes] = []
    rows: list[dict[str, Any] | bytes] = []
    seen: set[str] = set()
    for key, entry, sid in items:
        if not isinstance(sid, str) or not sid or sid in seen:
            continue
        seen.add(sid)
        line = known.get(sid) if known is not None else None
        if line is not None:
            records.append(line)
        else:
            usage = transcript_usage(store, sid, entry)
            records.append(leaving_record(store, key, entry, sid, reason=reason, usage=usage, now_ms=now_ms))
        if key is not None and isinstance(entry, dict):
            row = known_rows.get(sid) if known_rows is not None else None
            rows.append(
                row if row is not None else removed_row(key, entry, sid, reason=reason, now_ms=now_ms)
            )
    _append_both(state, store.agent_id, records, rows, appended)
    return appended


def _append_both(
    state: Path,
    agent_id: str,
    records: list[dict[str, Any] | bytes] | bytes | memoryview,
    rows: list[dict[str, Any] | bytes] | bytes | memoryview,
    appended: Appended,
) -> None:
    """The ledger's records, then the removed rows (lists of records, or their lines joined)."""
    try:
        for path, data in ((ledger_path(state, agent_id), records), (removed_path(state, agent_id), rows)):
            if isinstance(data, list):
                append_lines(path, data, appended)
            else:
                append_data(path, data, appended)
    except OSError as exc:
        # a disk too full (or a state dir too locked) for a few hundred bytes: the removal's own
        # free-space and permission checks refuse it next with the precise error; the state dir
        # is left as found (decisions: issue 27, ledger)
        appended.undo()
        appended.parts.clear()
        appended.failed = exc.strerror or str(exc)


def removed_row(
    key: str, entry: dict[str, Any], session_id: str, *, reason: str, now_ms: int
) -> dict[str, Any]:
    """The removed-rows file's record of `key` (its `entry` as read) leaving with `session_id`."""
    return {
        "v": RECORD_VERSION,
        "at": now_ms,
        "key": key,
        "sessionId": session_id,
        "reason": reason,
        "entry": entry,
    }


def leaving_record(
    store: SessionStore,
    key: str | None,
    entry: dict[str, Any] | None,
    session_id: str,
    *,
    reason: str,
    usage: Usage,
    now_ms: int,
) -> dict[str, Any]:
    """The ledger record of one session leaving `store` (`usage_record` with its agent and kind)."""
    from openclaw_cli.keys import session_kind

    return usage_record(
        agent_id=store.agent_id,
        key=key,
        session_id=session_id,
        kind=session_kind(key, entry) if key else None,
        reason=reason,
        usage=usage,
        now_ms=now_ms,
    )


def record_retirement(store: SessionStore, plan: Any, *, reason: str, now_ms: int) -> Appended:
    """`record_leaving` for a `retire.Retirement`: the removed rows' sessions, and the sessions or
    transcript files it archives without a row (orphans, earlier windows)."""
    return record_leaving(store, retirement_items(plan), reason=reason, now_ms=now_ms)


def retirement_items(plan: Any) -> list[tuple[str | None, dict[str, Any] | None, str]]:
    """(key, entry, sessionId) of what a `retire.Retirement` takes out of its store: the removed
    rows' sessions, then the sessions or transcript files it archives without a row."""
    entries = plan.entries or {}
    items: list[tuple[str | None, dict[str, Any] | None, str]] = []
    for key in plan.removed_keys:
        entry = entries.get(key)
        sid = entry.get("sessionId") if isinstance(entry, dict) else None
        if isinstance(sid, str):
            items.append((key, entry, sid))
    for sid in plan.session_ids:
        key = plan.session_keys.get(sid)
        items.append((key, entries.get(key) if key else None, sid))
    for action in plan.archive_actions:
        if action.session_id and action.kind == "transcript":
            items.append((None, None, action.session_id))
    return items


# fewer leaving sessions: their lines are made in-process (no fork); the kill and soak runs set
# `OPENCLAW_CLEANUP_WORKER_MIN` to put their few sessions through the worker (whatever their size)
WORKER_MIN_SESSIONS = 256


def _worker_min() -> int:
    raw = os.environ.get("OPENCLAW_CLEANUP_WORKER_MIN", "").strip()
    return int(raw) if raw.isdigit() else WORKER_MIN_SESSIONS


class RetirementLedger(LeavingHook):
    """`record_retirement` as the `retire` hook: each leaving session's usage is read from the
    content its archive is written from (the store's one export; it was exported a second time
    beforehand, issue 30), and the records are appended in `before_leaving` — between the verified,
    durable archives and the first removal, so the ledger still holds a session's usage before its
    transcript leaves. Use `appended` with `ledgered` around the `retire`."""

    def __init__(
        self, store: SessionStore, plan: Any, *, reason: str, now_ms: int, worker: bool = False
    ) -> None:
        """`worker`: the lines may be made by a forked process (`usage_worker`) when many sessions
        leave; the caller then calls `close` when the removal ends, whatever its outcome."""
        from openclaw_cli.jsonutil import dumps_bytes
        from openclaw_cli.keys import session_kind

        self.store = store
        self.items = retirement_items(plan)
        self._dumps, self._kind = dumps_bytes, session_kind  # (per session: `line`, `worker_lines`)
        self.reason = reason
        self.now_ms = now_ms
        self.appended = Appended()
        # each leaving session's ledger line, made as its export passes, kept in one buffer (not
        # a usage object or a bytes object per session: thousands of small objects made between
        # the exports' churn held ~45 MB more at the peak on *many*, 6,736 sessions)
        self._lines = bytearray()
        self._at: dict[
            str, int
        ] = {}  # sessionId -> where its line ends in `_lines` (in order; -1: the worker's)
        # a process of its own making the lines from the exports while this one archives (issue
        # 30: the usage parse on the second core); None: not started yet, False: in-process
        self._worker: Any = None if worker else False
        # sessionId -> its first (key, entry), as `record_leaving` takes them; none for a store
        # outside any state dir (nothing is appended there, nothing to read)
        self.first: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
        # the worker's lines in their places of `first`: (place by sessionId, ledger lines, rows)
        self._slots: tuple[dict[str, int], list[bytes], list[bytes]] | None = None
        if state_dir_of(store) is not None:
            for key, entry, sid in self.items:
                if sid:
                    self.first.setdefault(sid, (key, entry))

    @property
    def records(self) -> dict[str, bytes]:
        """sessionId -> its ledger line made in this process from the export (without the newline)."""
        return self.records_at({sid: end for sid, end in self._at.items() if end >= 0})

    def records_at(self, at: Mapping[str, int]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        start = 0
        for sid, end in at.items():
            out[sid] = bytes(self._lines[start:end])
            start = end
        return out

    def line(self, session_id: str, content: bytes) -> bytes:
        """The ledger line (no newline) of `session_id` leaving with `content`: `leaving_record`'s,
        with the functions it imports bound once (issue 30: an import statement run per session
        in the ledger's worker, ~1 us each)."""
        key, entry = self.first[session_id]
        usage = content_usage(content)
        return self._dumps(
            usage_record(
                agent_id=self.store.agent_id,
                key=key,
                session_id=session_id,
                kind=self._kind(key, entry) if key else None,
                reason=self.reason,
                usage=usage,
                now_ms=self.now_ms,
            )
        )

    def worker_lines(self, session_id: str, content: bytes) -> int:
        """What the worker makes of one export: its ledger line and its removed-rows line (none
        when the session leaves without a row), kept in the session's place of `first` (returned)
        for `worker_answer` — issue 30: both were made on the main thread after the last archive,
        between the archives and the COMMIT."""
        key, entry = self.first[session_id]
        row = b""
        if key is not None and isinstance(entry, dict):
            row = self._dumps(removed_row(key, entry, session_id, reason=self.reason, now_ms=self.now_ms))
        line = self.line(session_id, content)
        if self._slots is None:  # (in the worker, at its first export)
            self._slots = (
                {sid: i for i, sid in enumerate(self.first)},
                [b""] * len(self.first),
                [b""] * len(self.first),
            )
        place, lines, rows = self._slots
        at = place[session_id]
        # (each with its newline: the answer is written part by part, never joined)
        lines[at], rows[at] = line + b"\n", row + b"\n" if row else b""
        return at

    def worker_answer(self, made: Mapping[str, object]) -> list[bytes]:
        """The worker's answer, made there (issue 30: the main thread framed, looked up and joined
        the ~8 MB of lines session by session between the last archive and the COMMIT): what
        `record_leaving` appends — the ledger's lines, then the removed rows, each with its
        newline, in its order (each leaving session's first row: `first`) — then the two lines'
        lengths per session of `first` (0: not made), as the parts written one after the other.
        The parent appends the two parts as they are when every line was made here, else it
        takes them session by session (`_answer_lines`). JSON lines hold no newline."""
        _, lines, rows = self._slots or ({}, [b""] * len(self.first), [b""] * len(self.first))
        ledger = [line for line in lines if line] if len(made) < len(lines) else lines
        removed = [row for row in rows if row]
        lengths = array("Q", map(len, lines))
        lengths.extend(map(len, rows))
        size = _ANSWER.pack(len(made), sum(lengths[: len(lines)]), sum(lengths[len(lines) :]), len(lines))
        return [size, *ledger, *removed, lengths.tobytes()]

    def exported(self, session_id: str, content: bytes) -> None:
        if session_id in self.first and session_id not in self._at:
            if self._worker is None:
                self._probe()
            if self._worker and self._worker.send(session_id, content):
                self._at[session_id] = -1  # made by the worker
                if len(self._at) == len(self.first):
                    # the last one (issue 30): the child answers while the archives are made
                    # durable, not after
                    self._worker.close_input()
                return
            self._lines += self.line(session_id, content)
            self._at[session_id] = len(self._lines)

    def _probe(self) -> None:
        """Start the worker at the first export when enough sessions leave, whatever their size
        (issue 30, stop 40: with the pipe wide enough for the parent not to wait on the child's
        parse, *big*'s large transcripts gain too — the parent's own CPU 1.41-2.07 -> 1.14-1.16 s,
        the process's with the child's unchanged — where a mean size above 16 KB kept them
        in-process before)."""
        if len(self.first) < _worker_min():
            self._worker = False
            return
        from openclaw_cli.store.usage_worker import UsageWorker

        # (False: not here — threads, no fork)
        self._worker = UsageWorker.start(self.worker_lines, self.worker_answer)

    def may_fork(self) -> bool:
        return self._worker is None and bool(self.first)  # undecided: `_probe` may still start it

    def close(self) -> None:
        """Stop the worker process if one still runs (a failure before `before_leaving`)."""
        if self._worker:
            self._worker.abort()
        self._worker = False

    def before_leaving(self) -> None:
        rows: dict[str, bytes] | None = None
        known = self.records
        if self._worker:
            worker, self._worker = self._worker, None
            answer = worker.answer()
            made = _answer_head(answer, len(self.first))
            state = state_dir_of(self.store)
            if (
                answer is not None
                and made is not None
                and made[0] == len(self.first)
                and not known
                and state is not None
            ):
                # every line made there, in this order: appended as they came (`worker_answer`)
                view = memoryview(answer)
                at = _ANSWER.size
                ledger, removed = view[at : at + made[1]], view[at + made[1] : at + made[1] + made[2]]
                self._lines = bytearray()
                _append_both(state, self.store.agent_id, ledger, removed, self.appended)
                return
            rows = {}
            # lines it could not make are read (rows made) again below, as without it
            for sid, (line, row) in _answer_lines(answer, self.first).items():
                known[sid] = line
                if row:
                    rows[sid] = row
        self._lines = bytearray()
        record_leaving(
            self.store,
            self.items,
            reason=self.reason,
            now_ms=self.now_ms,
            known=known,
            appended=self.appended,
            known_rows=rows,
        )


_ANSWER = struct.Struct("<QQQQ")  # sessions made, ledger bytes, removed-rows bytes, places


def _answer_head(answer: bytes | None, places: int) -> tuple[int, int, int] | None:
    """`worker_answer`'s (sessions made, ledger bytes, removed-rows bytes) when the answer is whole
    and made for `places` sessions; None otherwise."""
    if answer is None or len(answer) < _ANSWER.size:
        return None
    made, ledger, removed, count = _ANSWER.unpack_from(answer)
    if count != places or len(answer) != _ANSWER.size + ledger + removed + 16 * count:
        return None
    return made, ledger, removed


def _answer_lines(answer: bytes | None, order: Iterable[str]) -> dict[str, tuple[bytes, bytes]]:
    """`worker_answer` for the sessions `order` (`first`) read back session by session: sessionId
    -> (ledger line, removed row) of those made; {} when it is damaged."""
    sids = list(order)
    head = _answer_head(answer, len(sids))
    if head is None or answer is None:
        return {}
    made, n_ledger, n_removed = head
    lengths = array("Q")
    lengths.frombytes(answer[_ANSWER.size + n_ledger + n_removed :])
    out: dict[str, tuple[bytes, bytes]] = {}
    line_at = _ANSWER.size
    row_at = row_start = line_at + n_ledger
    for sid, n_line, n_row in zip(sids, lengths[: len(sids)], lengths[len(sids) :], strict=True):
        if not n_line:
            continue
        # (each length counts its newline)
        out[sid] = answer[line_at : line_at + n_line - 1], answer[row_at : row_at + max(n_row - 1, 0)]
        line_at += n_line
        row_at += n_row
    if len(out) != made or (line_at, row_at) != (row_start, row_start + n_removed):
        return {}
    return out


@contextmanager
def ledgered(appended: Appended) -> Iterator[None]:
    """Around the removal the records were appended for: an `OpenClawError` (refused, busy,
    changed meanwhile: nothing removed) takes them back; an interruption keeps them (some
    sessions may have left)."""
    from openclaw_cli.errors import Interrupted, OpenClawError

    try:
        yield
    except OpenClawError as exc:
        if not isinstance(exc, Interrupted):
            appended.undo()
        raise
