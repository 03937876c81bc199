"""Where the disk went (issue 27 §1): one streaming pass over a state directory that accounts for
every byte `du` counts, and one pass over each store's transcripts that says what the bytes hold.

Two kinds of figures, kept apart because only the first adds up to `du`:

* **disk figures** (`byAgent`, `byContainer`, `total`): every inode under the walked root counted
  once (hard links once, symlinks never followed), as apparent `bytes` and allocated `diskBytes`
  (`st_blocks * 512`, what `du` sums). A SQLite main file is split into its used pages and its
  free pages (the header's freelist count: what a vacuum would give back).
* **logical figures** (`byKind`, `byPayload`, `topSessions`, `topEvents`): UTF-8 bytes of the stored
  event text per session, as every store kind hands it out (a compressed database row counts its
  decoded size), classified line by line without parsing most of them.

Nothing is written; unreadable files and directories are counted and named, never fatal.
"""

from __future__ import annotations

import heapq
import os
import stat
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.keys import _split_agent_key, session_kind
from openclaw_cli.store.archives import parse_archive_name
from openclaw_cli.store.names import is_primary_transcript_name

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

# containers, in the order the report lists them
CONTAINERS = (
    "sqliteMain",
    "sqliteFreePages",
    "sqliteWal",
    "sqliteShm",
    "storeIndex",
    "transcripts",
    "orphans",
    "unimportedTranscripts",
    "tombstones",
    "archives",
    "backups",
    "importArchive",
    "migrationLeftovers",
    "migrationRuns",
    "ledger",
    "other",
    "directories",
)
PAYLOAD_CLASSES = ("text", "toolResults", "media", "compactionSummaries", "snapshots")
SNAPSHOT_FIELDS = ("systemPromptReport", "skillsSnapshot", "sessionDiffBaseline")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEAD = 400  # how far into a line its type and role are looked for
# every inline media shape carries one of these: `"data":"<base64>"` (pi's image blocks with a
# mimeType, Anthropic's `{"type":"base64","data":…}` sources) or a `data:<mime>;base64,` URL;
# two scans of each long line are most of `storage`'s time
_MEDIA_MARKERS = (b'"data":"', b";base64,")


@dataclass
class Bucket:
    bytes: int = 0
    disk_bytes: int = 0
    files: int = 0

    def add(self, size: int, disk: int, files: int = 1) -> None:
        self.bytes += size
        self.disk_bytes += disk
        self.files += files

    def doc(self) -> dict[str, int]:
        return {"bytes": self.bytes, "diskBytes": self.disk_bytes, "files": self.files}


@dataclass
class StoreView:
    """What the walk needs to know of one agent's store: its kind, the transcript files its rows
    reference (file stores), and a way to read each session's event text."""

    agent_id: str
    kind: str
    path: Path
    sessions_dir: Path
    transcripts_in_files: bool
    referenced: set[str] = field(default_factory=set)  # absolute paths of referenced transcript files
    # or, when every one is in the sessions dir as `listing` listed it: their names there
    referenced_names: set[str] | None = None
    listing: Any = None

    def referenced_paths(self) -> set[str]:
        """`referenced`, made from `referenced_names` when only those are known."""
        if self.referenced_names is not None and not self.referenced:
            prefix = str(self.sessions_dir).rstrip("/") + "/"
            self.referenced.update([prefix + name for name in self.referenced_names])
        return self.referenced


@dataclass
class StorageReport:
    root: Path
    total: Bucket = field(default_factory=Bucket)
    by_agent: dict[str, Bucket] = field(default_factory=dict)
    by_container: dict[str, Bucket] = field(default_factory=dict)
    archives_by_reason: dict[str, Bucket] = field(default_factory=dict)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    orphan_files: list[tuple[str, str, int]] = field(default_factory=list)  # (agent, path, bytes)
    tombstone_files: list[tuple[str, str, str, int | None, int]] = field(default_factory=list)
    sqlite_files: list[tuple[str, str, int, int, int]] = field(
        default_factory=list
    )  # agent, path, size, free, wal

    def bucket(self, table: dict[str, Bucket], name: str) -> Bucket:
        found = table.get(name)
        if found is None:
            found = table[name] = Bucket()
        return found


# ---- the disk walk ------------------------------------------------------------------------------


def _agent_of(rel: tuple[str, ...]) -> str:
    return rel[1] if len(rel) >= 2 and rel[0] == "agents" else "(state)"


def sqlite_free_bytes(path: str) -> int:
    """Free pages of a SQLite file per its header (page size at 16, freelist count at 36): what a
    VACUUM would return, as of the last checkpoint. 0 for anything that is not a SQLite file."""
    try:
        with open(path, "rb", buffering=0) as fh:
            head = fh.read(100)
    except OSError:
        return 0
    if len(head) < 100 or head[:16] != _SQLITE_MAGIC:
        return 0
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return page * int.from_bytes(head[36:40], "big")


def _container(
    name: str, rel: tuple[str, ...], path: str, views: dict[str, StoreView], named: bool | None = None
) -> tuple[str, str | None]:
    """(container, archive reason or None) of one regular file. `named`: whether the rows
    reference it, when known (else looked up in its agent's view)."""
    if ".openclaw-cli-backup-" in name:
        return "backups", None
    if "session-sqlite-import-archive" in rel[:-1]:
        return "importArchive", None
    if rel and rel[0] == "session-sqlite-migration-runs":
        return "migrationRuns", None
    if name.endswith("-wal"):
        return "sqliteWal", None
    if name.endswith("-shm"):
        return "sqliteShm", None
    if rel and rel[0] == "openclaw-cli-usage":
        return "ledger", None
    if name == "sessions.json":
        return "storeIndex", None
    parsed = (
        parse_archive_name(name) if (".deleted." in name or ".reset." in name or ".bak." in name) else None
    )
    if parsed is not None:
        reason = parsed[1]
        return ("tombstones" if reason in ("deleted", "reset") else "archives"), reason
    if ".migrated" in name or ".pre-doctor-" in name:
        return "migrationLeftovers", None
    if name.endswith(".jsonl") and is_primary_transcript_name(name):
        view = views.get(_agent_of(rel))
        if view is None or not view.transcripts_in_files:
            return "unimportedTranscripts" if view is not None else "other", None
        referenced = named if named is not None else path in view.referenced_paths()
        return ("transcripts" if referenced else "orphans"), None
    if name.endswith((".sqlite", ".sqlite3", ".db")):
        return "sqliteMain", None
    return "other", None


def walk_disk(
    root: Path,
    views: dict[str, StoreView],
    report: StorageReport,
    listings: Mapping[tuple[int, int], Any] | None = None,
) -> None:
    """Account for every inode under `root` (iterative scandir, no symlink followed).
    `listings`: (device, inode) of a directory -> its entries as already listed and stat'ed this
    run (`storage_memo.Listing`: a sessions dir), not listed again."""
    seen_links: set[tuple[int, int]] = set()
    root_s = str(root)
    try:
        st = os.lstat(root_s)
    except OSError as exc:
        report.unreadable.append({"path": root_s, "error": exc.strerror or str(exc)})
        return
    report.total.add(st.st_size, st.st_blocks * 512, 0)
    report.bucket(report.by_container, "directories").add(st.st_size, st.st_blocks * 512, 0)
    report.bucket(report.by_agent, "(state)").add(st.st_size, st.st_blocks * 512, 0)
    stack: list[tuple[str, tuple[str, ...], tuple[int, int]]] = [(root_s, (), (st.st_dev, st.st_ino))]
    while stack:
        directory, rel_dir, ident = stack.pop()
        listing = listings.get(ident) if listings else None
        if listing is not None:
            for name, error in listing.failed:
                report.unreadable.append({"path": os.path.join(directory, name), "error": error})
            _walk_entries(listing.entries(), directory, rel_dir, views, report, seen_links, stack, listing)
            continue
        try:
            it = os.scandir(directory)
        except OSError as exc:
            report.unreadable.append({"path": directory, "error": exc.strerror or str(exc)})
            continue
        with it:  # (iterated, not listed: a sessions dir may hold 100,000 files)
            _walk_entries(_stat_entries(it, report), directory, rel_dir, views, report, seen_links, stack)


def _stat_entries(it: Any, report: StorageReport) -> Iterator[tuple[Any, ...]]:
    """(name, mode, nlink, dev, ino, size, blocks) of every entry of a scandir iterator (an entry
    whose lstat fails is named unreadable)."""
    for item in it:
        try:
            st = item.stat(follow_symlinks=False)
        except OSError as exc:
            report.unreadable.append({"path": item.path, "error": exc.strerror or str(exc)})
            continue
        yield item.name, st.st_mode, st.st_nlink, st.st_dev, st.st_ino, st.st_size, st.st_blocks


def _walk_entries(
    entries: Iterable[tuple[Any, ...]],
    directory: str,
    rel_dir: tuple[str, ...],
    views: dict[str, StoreView],
    report: StorageReport,
    seen_links: set[tuple[int, int]],
    stack: list[tuple[str, tuple[str, ...], tuple[int, int]]],
    listing: Any = None,
) -> None:
    """One directory's entries into the report (subdirectories onto `stack`)."""
    per_item_agent = rel_dir == ("agents",)  # agents/<id> itself belongs to <id>
    agent = _agent_of((*rel_dir, "")) if rel_dir[:1] == ("agents",) and len(rel_dir) >= 2 else "(state)"
    view = views.get(agent)
    # the usual file of a big sessions dir: a transcript a row names, recognised at once (the
    # classification chain below gives the same answer, 100,000 times slower in total)
    in_files = view is not None and view.transcripts_in_files and not per_item_agent
    # the names of the referenced transcripts when they are all in this listed directory (the
    # view's sessions dir; its tally kept by `storage_memo`): no path made per entry
    names = (
        view.referenced_names
        if in_files and view is not None and listing is not None and view.listing is listing
        else None
    )
    referenced = view.referenced_paths() if in_files and view is not None and names is None else None
    prefix = os.path.join(directory, "")
    transcripts = report.bucket(report.by_container, "transcripts")
    agent_bucket = report.bucket(report.by_agent, agent)
    total = report.total
    # the referenced transcripts (most of a big sessions dir) summed here, added to their three
    # buckets once at the end (not three `Bucket.add` calls per file)
    t_size = t_disk = t_files = 0
    for name, mode, nlink, dev, ino, size, blocks in entries:
        if nlink > 1 and not stat.S_ISDIR(mode):
            ident = (dev, ino)
            if ident in seen_links:
                continue
            seen_links.add(ident)
        disk = blocks * 512
        if (
            (referenced or names)  # (never per item's agent)
            and mode & 0o170000 == stat.S_IFREG
            and name.count(".") == 1
            and name[0] != "."
            and name.endswith(".jsonl")
            and (name in names if names is not None else prefix + name in referenced)  # type: ignore[operator]
        ):
            t_size += size
            t_disk += disk
            t_files += 1
            continue
        if per_item_agent:
            agent_bucket = report.bucket(report.by_agent, name)
        is_dir = stat.S_ISDIR(mode)
        total.add(size, disk, 0 if is_dir else 1)
        agent_bucket.add(size, disk, 0 if is_dir else 1)
        if is_dir:
            report.bucket(report.by_container, "directories").add(size, disk, 0)
            stack.append((prefix + name, (*rel_dir, name), (dev, ino)))
            continue
        if not stat.S_ISREG(mode):
            report.bucket(report.by_container, "other").add(size, disk)
            continue
        # (a referenced transcript was counted above: `<id>.jsonl`, one dot, not hidden, is always
        # a primary transcript name; trajectories, checkpoints, archives, backups and leftovers all
        # have more dots)
        _file(
            report,
            name,
            (*rel_dir, name),
            prefix + name,
            views,
            size,
            disk,
            None if names is None else name in names,
        )
    if t_files:
        total.add(t_size, t_disk, t_files)
        agent_bucket.add(t_size, t_disk, t_files)
        transcripts.add(t_size, t_disk, t_files)


def _file(
    report: StorageReport,
    name: str,
    rel: tuple[str, ...],
    path: str,
    views: dict[str, StoreView],
    size: int,
    disk: int,
    named: bool | None = None,
) -> None:
    """`named`: whether the rows reference the file, when known (`_container`)."""
    agent = _agent_of(rel)
    container, reason = _container(name, rel, path, views, named)
    if container == "sqliteMain":
        free = min(sqlite_free_bytes(path), size)
        free_disk = min(free, disk)
        report.bucket(report.by_container, "sqliteMain").add(size - free, disk - free_disk)
        report.bucket(report.by_container, "sqliteFreePages").add(free, free_disk, 0)
        wal = 0
        try:
            wal = os.lstat(path + "-wal").st_size
        except OSError:
            pass
        report.sqlite_files.append((agent, path, size, free, wal))
        return
    report.bucket(report.by_container, container).add(size, disk)
    if reason is not None:
        report.bucket(report.archives_by_reason, reason).add(size, disk)
    if container == "orphans":
        report.orphan_files.append((agent, path, size))
    elif container == "tombstones":
        parsed = parse_archive_name(name)
        stamp = parsed[2] if parsed else None
        report.tombstone_files.append((agent, path, reason or "", stamp, size))


# ---- payload classes ----------------------------------------------------------------------------


def storage_kind(key: str, entry: dict[str, Any] | None) -> str:
    """The session kind `storage` groups by: main, direct, group, cron, hook, subagent, dashboard,
    thread, global/unknown, other."""
    # (not the planners' cached parse: 100,000 keys asked once would only fill its cache)
    parsed = _split_agent_key(key) if isinstance(key, str) else None
    rest = (parsed[1] if parsed else key or "").lower()
    if rest == "main" or key == "main":
        return "main"
    for prefix, kind in (
        ("cron:", "cron"),
        ("hook:", "hook"),
        ("subagent:", "subagent"),
        ("dashboard", "dashboard"),
    ):
        if rest.startswith(prefix):
            return kind
    if ":thread:" in rest or ":topic:" in rest:
        return "thread"
    base = session_kind(key, entry)
    if base == "spawn-child":
        return "subagent"
    return base if base in ("direct", "group", "global", "unknown") else "other"


def _media_parts(obj: Any, out: dict[str, int], depth: int = 0) -> None:
    """Inline base64 media of one parsed event: MIME type -> characters of encoded data."""
    if depth > 40:
        return
    if isinstance(obj, dict):
        data = obj.get("data")
        mime = obj.get("mimeType") or obj.get("media_type") or obj.get("mime_type")
        if isinstance(data, str) and isinstance(mime, str) and len(data) >= 64:
            out[mime] = out.get(mime, 0) + len(data)
        source = obj.get("source")
        if (
            isinstance(source, dict)
            and isinstance(source.get("data"), str)
            and source.get("type") == "base64"
        ):
            mime = source.get("media_type") or "application/octet-stream"
            out[str(mime)] = out.get(str(mime), 0) + len(source["data"])
            source = None
        for name, value in obj.items():
            if name == "source" and source is None:
                continue
            if isinstance(value, str):
                if value.startswith("data:") and ";base64," in value[:100]:
                    mime = value[5 : value.index(";")] or "application/octet-stream"
                    out[mime] = out.get(mime, 0) + len(value)
            elif isinstance(value, dict | list):
                _media_parts(value, out, depth + 1)
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, str):
                if value.startswith("data:") and ";base64," in value[:100]:
                    mime = value[5 : value.index(";")] or "application/octet-stream"
                    out[mime] = out.get(mime, 0) + len(value)
            elif isinstance(value, dict | list):
                _media_parts(value, out, depth + 1)


def classify_line(line: bytes) -> tuple[str, dict[str, int]]:
    """(class of the line, inline media bytes by MIME type found in it). Most lines are classified
    by a look at their first bytes; only lines that may carry media are parsed."""
    head = line[:_HEAD]
    if b'"type":"compaction"' in head or b'"type": "compaction"' in head:
        cls = "compactionSummaries"
    elif b'"role":"toolResult"' in head or b'"role": "toolResult"' in head or b'"type":"tool_result"' in head:
        cls = "toolResults"
    else:
        cls = "text"
    media: dict[str, int] = {}
    if len(line) >= 256 and any(marker in line for marker in _MEDIA_MARKERS):
        import orjson

        try:
            _media_parts(orjson.loads(line), media)
        except ValueError:
            pass
    return cls, media


_WS = frozenset(b" \t\r\n")
_BLANK = frozenset(b" \t\r\n\x0b\x0c")  # what bytes.strip() removes
_COMPACTION = (b'"type":"compaction"', b'"type": "compaction"')
_TOOL = (b'"role":"toolResult"', b'"role": "toolResult"', b'"type":"tool_result"')


def classify_span(buf: bytes, start: int, end: int) -> tuple[str, dict[str, int]]:
    """`classify_line` of `buf[start:end]` without copying the line (only a line that may carry
    media is cut out and parsed)."""
    head = min(end, start + _HEAD)
    find = buf.find
    if find(_COMPACTION[0], start, head) >= 0 or find(_COMPACTION[1], start, head) >= 0:
        cls = "compactionSummaries"
    elif any(find(marker, start, head) >= 0 for marker in _TOOL):
        cls = "toolResults"
    else:
        cls = "text"
    media: dict[str, int] = {}
    if end - start >= 256 and any(find(marker, start, end) >= 0 for marker in _MEDIA_MARKERS):
        import orjson

        try:
            _media_parts(orjson.loads(buf[start:end]), media)
        except ValueError:
            pass
    return cls, media


@dataclass
class PayloadTally:
    classes: dict[str, list[int]] = field(default_factory=lambda: {c: [0, 0] for c in PAYLOAD_CLASSES})
    media: dict[str, list[int]] = field(default_factory=dict)  # mime -> [bytes, parts]
    # the biggest lines: a min-heap of (bytes, -tick, where); the tick of a line is its place in
    # the reading order (`tick`): ties go to the line read first, in any order of merging
    top_events: list[tuple[int, int, tuple[Any, ...]]] = field(default_factory=list)
    top_n: int = 10
    ordinal: int = 0  # the session being read (its place among every store's sessions)

    def tick(self, line: int) -> int:
        """The place of line `line` of the current session in the reading order."""
        return (self.ordinal << 32) + line

    def merge_top(self, items: Iterable[tuple[int, int, tuple[Any, ...]]]) -> None:
        """Offer lines read out of order: kept when bigger than the smallest kept, or as big and
        read before it (the order `(bytes, -tick)` the heap keeps)."""
        heap, top_n = self.top_events, self.top_n
        if not top_n:
            return
        for item in items:
            if len(heap) < top_n:
                heapq.heappush(heap, item)
            elif (item[0], item[1]) > (heap[0][0], heap[0][1]):
                heapq.heapreplace(heap, item)

    def add_line(self, line: bytes, where: tuple[Any, ...]) -> int:
        return self.add_span(line, 0, len(line), where)

    def add_span(self, buf: bytes, start: int, end: int, where: tuple[Any, ...]) -> int:
        size = end - start
        cls, media = classify_span(buf, start, end)
        media_total = 0
        for mime, n in media.items():
            slot = self.media.setdefault(mime, [0, 0])
            slot[0] += n
            slot[1] += 1
            media_total += n
        media_total = min(media_total, size)
        slot = self.classes[cls]
        slot[0] += size - media_total
        slot[1] += 1
        if media_total:
            self.classes["media"][0] += media_total
            self.classes["media"][1] += 1
        if self.top_n > 0:
            item = (size, -self.tick(where[-1]), (*where, cls))
            if len(self.top_events) < self.top_n:
                heapq.heappush(self.top_events, item)
            elif size > self.top_events[0][0]:
                heapq.heapreplace(self.top_events, item)
        return size


class LineSink:
    """A binary writer that splits what it is given into lines and counts them (the target of a
    store's `export_transcript`: every store kind streams its raw JSONL through it)."""

    def __init__(
        self,
        on_line: Callable[[bytes, int], None],
        on_span: Callable[[bytes, int, int, int], None] | None = None,
    ):
        self._on_line = on_line
        self._on_span = on_span  # (buffer, start, end, line number): no copy of the line
        self._rest = b""
        self.lines = 0
        self.bytes = 0

    def write(self, data: bytes) -> int:
        buf = self._rest + bytes(data) if self._rest else bytes(data)
        start = 0
        span = self._on_span
        find = buf.find
        while True:
            end = find(b"\n", start)
            if end < 0:
                break
            if end > start:
                if span is not None and buf[start] not in _WS and buf[end - 1] not in _WS:
                    self.lines += 1
                    self.bytes += end - start
                    span(buf, start, end, self.lines)
                else:
                    self._emit(buf[start:end])
            start = end + 1
        self._rest = buf[start:]
        return len(data)

    def _emit(self, line: bytes) -> None:
        if line.strip():
            self.lines += 1
            self.bytes += len(line)
            self._on_line(line, self.lines)

    def close(self) -> None:
        if self._rest:
            self._emit(self._rest)
            self._rest = b""


class TallySink:
    """The payload tally of one session's transcript as a binary writer: each block is split into
    lines in C and every line classified in one tight loop (a 100,000-session state is a million
    lines). Same figures as `PayloadTally.add_line` line by line."""

    def __init__(self, tally: PayloadTally, where: tuple[Any, ...]):
        self.tally = tally
        self.where = where
        self._rest = b""
        self.lines = 0
        self.bytes = 0
        self.biggest = 0  # the biggest line's bytes

    def write(self, data: bytes) -> int:
        buf = self._rest + bytes(data) if self._rest else bytes(data)
        parts = buf.split(b"\n")
        self._rest = parts.pop()
        self._lines(parts)
        return len(data)

    def close(self) -> None:
        if self._rest:
            self._lines([self._rest])
            self._rest = b""

    def _lines(self, lines: list[bytes]) -> None:
        tally = self.tally
        classes = tally.classes
        text, tools, compactions = classes["text"], classes["toolResults"], classes["compactionSummaries"]
        heap = tally.top_events
        top_n = tally.top_n
        floor = heap[0][0] if top_n and len(heap) >= top_n else -1
        number = self.lines
        base = tally.tick(0)
        total = 0
        biggest = self.biggest
        for line in lines:
            size = len(line)
            if not size or (line[0] in _WS or line[-1] in _WS) and not line.strip():
                continue
            number += 1
            total += size
            if size > biggest:
                biggest = size
            head = line[:_HEAD]
            if b'"type":"compaction"' in head or b'"type": "compaction"' in head:
                slot = compactions
            elif (
                b'"role":"toolResult"' in head
                or b'"role": "toolResult"' in head
                or b'"type":"tool_result"' in head
            ):
                slot = tools
            else:
                slot = text
            if size >= 256 and (b'"data":"' in line or b";base64," in line):
                tally.add_line(line, (*self.where, number))  # the rare media line: the full path
                floor = heap[0][0] if top_n and len(heap) >= top_n else -1
                continue
            slot[0] += size
            slot[1] += 1
            if top_n and size > floor:
                name = (
                    "compactionSummaries"
                    if slot is compactions
                    else "toolResults"
                    if slot is tools
                    else "text"
                )
                item = (size, -(base + number), (*self.where, number, name))
                if len(heap) < top_n:
                    heapq.heappush(heap, item)
                else:
                    heapq.heapreplace(heap, item)
                floor = heap[0][0] if len(heap) >= top_n else -1
        self.lines = number
        self.bytes += total
        self.biggest = biggest


def tally_sessions(
    store: SessionStore,
    rows: Iterable[tuple[str, dict[str, Any], str | None]],
    tally: PayloadTally,
    by_kind: dict[str, list[int]],
    top_sessions: list[tuple[int, str, tuple[Any, ...]]],
    top_n: int,
    unreadable: list[dict[str, str]],
    referenced: set[str] | None = None,
    files: FileFigures | None = None,
    snapshot_bytes: Mapping[str, int] | None = None,
    kinds: Iterator[str] | None = None,
) -> int:
    """Stream every session's transcript of one store through the payload tally. Returns the
    sessions read. `rows`: (key, entry, transcript file of a file store or None), as
    `store.iter_rows_with_transcripts()` gives them; every file named goes into `referenced`.
    `files`: the figures of the store's transcript files kept from an earlier run (a file
    unchanged since is not read again); brought up to date here. `snapshot_bytes`: key -> the
    row's snapshot bytes (`snapshot_bytes`, absent when 0), when `rows` hold the rows' facts
    rather than whole entries. `kinds`: each row's `storage_kind`, one per row of `rows` in order,
    when already known."""
    from openclaw_cli.errors import OpenClawError

    seen: set[str] = set()
    count = 0
    classes = tally.classes
    agent_id = store.agent_id
    for key, entry, path in rows:
        if path is not None and referenced is not None:
            referenced.add(path)
        kind = next(kinds) if kinds is not None else storage_kind(key, entry)
        slot = by_kind.get(kind)
        if slot is None:
            slot = by_kind[kind] = [0, 0, 0]  # sessions, bytes, snapshot bytes
        slot[0] += 1
        snap = snapshot_bytes.get(key, 0) if snapshot_bytes is not None else snapshot_bytes_of(entry)
        if snap:
            slot[2] += snap
            classes["snapshots"][0] += snap
            classes["snapshots"][1] += 1
        sid = entry.get("sessionId") if isinstance(entry, dict) else None
        if not isinstance(sid, str) or not sid or sid in seen:
            continue
        seen.add(sid)
        where = (agent_id, key, sid)
        lines = size = 0
        tally.ordinal += 1
        try:
            if path is not None and files is not None:
                lines, size = files.tally(path, tally, where)
            elif path is not None:
                lines, size = _tally_file(path, tally, where)  # a file store's transcript
            else:
                sink = TallySink(tally, where)
                try:
                    store.export_transcript(sid, sink, entry=entry)
                finally:
                    sink.close()
                lines, size = sink.lines, sink.bytes
        except OpenClawError as exc:
            unreadable.append({"path": f"{store.path}#{sid}", "error": exc.message})
        except OSError as exc:
            unreadable.append({"path": f"{store.path}#{sid}", "error": exc.strerror or str(exc)})
        count += 1
        slot[1] += size
        if top_n > 0 and size:
            if len(top_sessions) < top_n:
                heapq.heappush(top_sessions, (size, key, (agent_id, key, sid, kind, lines)))
            elif size > top_sessions[0][0]:  # (the item made only when it is kept)
                heapq.heapreplace(top_sessions, (size, key, (agent_id, key, sid, kind, lines)))
    if files is not None:
        files.finish(tally)
    return count


# one transcript file's figures as kept between runs: its signature (size, mtime, ctime, inode),
# lines, bytes, [bytes, lines] of text, tool results, compaction summaries and media, and its
# biggest line
_RECORD = struct.Struct("<qqqQ11q")
_SIGNATURE = struct.Struct("<qqqQ")  # a record's first four fields: size, mtime, ctime, inode
# what a file answered from its record adds besides the class sums: lines, bytes, biggest line
# (fields 4, 5 and 14; not the fifteen ints of the whole record per file)
_HIT = struct.Struct("<32xqq64xq")
FIGURES_VERSION = 1
_FILE_CLASSES = ("text", "toolResults", "compactionSummaries", "media")  # a record's order
_SETTLE_NS = 2_000_000_000


class FileFigures:
    """The tally of a file store's transcripts, file by file, kept in the cache dir between runs
    (`<cache>/storage/<sha256 of the sessions dir's real path>.figures`, marshal), as the search
    index keeps its sources: a file whose size, mtime, ctime and inode are those recorded is not
    read again, its recorded figures are added. The biggest events are lines, which a record does
    not keep: a file whose biggest line may be among them (`finish`) is read again at the end.
    Never the source of truth: a missing, unreadable or foreign cache is rebuilt, an unwritable
    cache dir only costs the speed, and nothing under the state dir is written."""

    def __init__(self, sessions_dir: str, cache_root: Path | None):
        self.prefix = sessions_dir.rstrip("/") + "/"
        self.path: Path | None = None
        self.old: dict[str, bytes] = {}
        self.old_media: dict[str, dict[str, list[int]]] = {}
        self.new: dict[str, bytes] = {}  # records of the files read this run
        self.new_media: dict[str, dict[str, list[int]]] = {}
        self.read = 0  # files read (not answered from the cache)
        # a file written in the last seconds may be written again within the clock's resolution
        # without a new size, mtime or ctime: its figures are not kept (git's "racily clean")
        self._settled_ns = time.time_ns() - _SETTLE_NS
        self._maxima: list[int] = []  # the top_n biggest lines of distinct files (a min-heap)
        # files answered from the cache whose biggest line may be among the biggest events
        self._candidates: list[tuple[int, int, str, tuple[Any, ...]]] = []
        self._hits: list[bytes] = []  # records of the files answered from the cache (`finish` sums them)
        self._hit_names: list[str] = []  # their names, in the same order
        # `check_listing` took this run's listing: every record left in `old` is of a file listed
        # unchanged (no lstat); records of names the listing does not hold are in `unlisted`
        self.listed = False
        self.unlisted: dict[str, bytes] = {}
        self._dropped = False  # a record the listing showed stale (the cache is written again)
        if cache_root is not None:
            import hashlib

            real = os.path.realpath(sessions_dir)
            digest = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]
            self.path = cache_root / "storage" / f"{digest}.figures"
            self._load()

    def _load(self) -> None:
        from openclaw_cli.fsio import read_cache_value

        assert self.path is not None
        data = read_cache_value(self.path)
        if (
            isinstance(data, tuple)
            and len(data) == 4
            and data[0] == FIGURES_VERSION
            and data[1] == self.prefix
            and isinstance(data[2], dict)
            and isinstance(data[3], dict)
        ):
            self.old, self.old_media = data[2], data[3]

    def check_listing(self, listing: Any, index: Mapping[str, str]) -> bool:
        """Compare the kept records with the stats of this run's listing of the sessions dir
        (`storage_memo.Listing`; `index`: its names): a record whose file is listed as a regular
        file with its size, mtime, ctime and inode stays in `old`, answered by `tally` without an
        lstat; a record the listing shows changed is dropped (its file read again); records of
        names the listing does not hold go to `unlisted` (looked at with an lstat as before).
        Checked in place (no second dict of 100,000 records). False, nothing done, when there is
        no record or the listing is of another directory."""
        if not self.old or listing.path.rstrip("/") + "/" != self.prefix:
            return False
        old, regular = self.old, stat.S_IFREG
        self.unlisted = {name: old.pop(name) for name in old.keys() - index.keys()}
        head, width, dropped = _SIGNATURE.pack, _RECORD.size, False
        columns = (listing.names, listing.modes, listing.sizes, listing.mtimes, listing.ctimes, listing.inos)
        for name, mode, size, mtime, ctime, ino in zip(*columns, strict=True):
            raw = old.get(name)
            if raw is None:
                continue
            if mode & 0o170000 != regular or len(raw) != width or raw[:32] != head(size, mtime, ctime, ino):
                del old[name]
                dropped = True
        self._dropped = self._dropped or dropped
        self.listed = True
        return True

    def tally(self, path: str, tally: PayloadTally, where: tuple[Any, ...]) -> tuple[int, int]:
        """(lines, bytes) of one transcript file, its figures added to `tally`."""
        prefix = self.prefix
        name = path[len(prefix) :] if path.startswith(prefix) else path
        raw = self.old.pop(name, None)
        if raw is not None and self.listed:  # unchanged as listed this run (`check_listing`)
            return self._hit(name, raw, _HIT.unpack(raw), path, tally, where)
        st = os.lstat(path)
        if self.listed:
            raw = self.unlisted.pop(name, None)
        if raw is not None and len(raw) == _RECORD.size:
            r = _RECORD.unpack(raw)
            if r[0] == st.st_size and r[1] == st.st_mtime_ns and r[2] == st.st_ctime_ns and r[3] == st.st_ino:
                return self._hit(name, raw, _HIT.unpack(raw), path, tally, where)
        # read: tallied straight into `tally` (its biggest lines offered in reading order, as
        # without a cache), the file's figures kept as the difference it made
        self.read += 1
        classes = tally.classes
        slots = [classes[c] for c in _FILE_CLASSES]
        before = [n for slot in slots for n in slot]
        media_before = {mime: (v[0], v[1]) for mime, v in tally.media.items()} if tally.media else {}
        lines, size, biggest = _tally_file_biggest(path, tally, where)
        if tally.top_n:
            self._offer(biggest, None, tally.top_n)
        if st.st_mtime_ns >= self._settled_ns:
            return lines, size  # read again next time
        after = [n for slot in slots for n in slot]
        self.new[name] = _RECORD.pack(
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            lines,
            size,
            *(a - b for a, b in zip(after, before, strict=True)),
            biggest,
        )
        if after[7] != before[7]:  # lines carrying media: which MIME types this file added
            added: dict[str, list[int]] = {}
            for mime, (total, parts) in tally.media.items():
                was = media_before.get(mime, (0, 0))
                if parts != was[1] or total != was[0]:
                    added[mime] = [total - was[0], parts - was[1]]
            self.new_media[name] = added
        return lines, size

    def _hit(
        self,
        name: str,
        raw: bytes,
        hit: tuple[int, int, int],
        path: str,
        tally: PayloadTally,
        where: tuple[Any, ...],
    ) -> tuple[int, int]:
        """A file answered from its record `raw` (its lines, bytes and biggest line: `hit`)."""
        # summed apart and added to the classes in `finish` (a file read meanwhile keeps the
        # difference it makes to the classes: these sums are not in them yet)
        self._hits.append(raw)
        media = self.old_media.get(name) if self.old_media else None
        if media:
            for mime, (size, parts) in media.items():
                slot = tally.media.setdefault(mime, [0, 0])
                slot[0] += size
                slot[1] += parts
            self.new_media[name] = media
        self._hit_names.append(name)
        top_n = tally.top_n
        if top_n:
            maxima = self._maxima
            biggest = hit[2]
            if len(maxima) < top_n or biggest >= maxima[0]:  # (else `_offer` does nothing)
                self._offer(biggest, (biggest, tally.ordinal, path, where), top_n)
        return hit[0], hit[1]

    def _offer(
        self, biggest: int, candidate: tuple[int, int, str, tuple[Any, ...]] | None, top_n: int
    ) -> None:
        maxima = self._maxima
        if len(maxima) < top_n:
            heapq.heappush(maxima, biggest)
        elif biggest > maxima[0]:
            heapq.heapreplace(maxima, biggest)
        if candidate is not None and (len(maxima) < top_n or biggest >= maxima[0]):
            self._candidates.append(candidate)

    def finish(self, tally: PayloadTally) -> None:
        """Read again the files answered from the cache whose biggest line may be among the
        biggest events (at least as big as the top_n-th biggest line of distinct files: no smaller
        line can be), then keep the figures for the next run."""
        if self._hits:
            _add_hits(self._hits, tally.classes)
        top_n = tally.top_n
        if top_n and self._candidates:
            floor = self._maxima[0] if len(self._maxima) >= top_n else 0
            heap = tally.top_events
            if len(heap) >= top_n:
                floor = max(floor, heap[0][0])
            for biggest, ordinal, path, where in self._candidates:
                if biggest < floor or not biggest:
                    continue
                one = PayloadTally(top_n=top_n, ordinal=ordinal)
                try:
                    _tally_file(path, one, where)
                except OSError:
                    continue  # gone since: its figures were counted, its lines cannot be named
                tally.merge_top(one.top_events)
        self._candidates = []
        if self.path is not None and (self.read or self.old or self.unlisted or self._dropped):
            self._store()
        self.old, self.old_media, self.unlisted = {}, {}, {}
        self._hits, self._hit_names = [], []

    def _store(self) -> None:
        from openclaw_cli.fsio import write_cache_value

        assert self.path is not None
        # (the files answered from their records, then the files read)
        new = dict(zip(self._hit_names, self._hits, strict=True))
        new.update(self.new)
        write_cache_value(self.path, (FIGURES_VERSION, self.prefix, new, self.new_media))


def _add_hits(hits: list[bytes], classes: dict[str, list[int]]) -> None:
    """The [bytes, lines] of each class of the records `hits` added to `classes`, summed column by
    column in blocks of records (C-level sums over a view of the packed fields, not a Python loop
    per record)."""
    width = _RECORD.size // 8  # fifteen 8-byte fields, little-endian
    for start in range(0, len(hits), 4096):
        block = b"".join(hits[start : start + 4096])
        view = memoryview(block).cast("q") if sys.byteorder == "little" else None
        for i, cls in enumerate(_FILE_CLASSES):
            slot = classes[cls]
            for j in (0, 1):
                column = 6 + 2 * i + j
                if view is not None:
                    slot[j] += sum(view[column::width])
                else:
                    slot[j] += sum(r[column] for r in _RECORD.iter_unpack(block))


# a transcript under this size is read in one call and tallied as one buffer (a heap allocation:
# a larger first read would be an mmap and munmap per file)
_WHOLE = 64 << 10
# _COMPACTION and _TOOL as (word, is a compaction, what precedes it): one search per word
_CLASS_WORDS = (
    (b'"compaction"', True, (b'"type":', b'"type": ')),
    (b'"toolResult"', False, (b'"role":', b'"role": ')),
    (b'"tool_result"', False, (b'"type":',)),
)


def _tally_file(path: str, tally: PayloadTally, where: tuple[Any, ...]) -> tuple[int, int]:
    """(lines, bytes) of one transcript file, tallied. Most files are read with one `read` and
    classified without a per-line loop (`_tally_whole`); others stream through a `TallySink`."""
    return _tally_file_biggest(path, tally, where)[:2]


def _tally_file_biggest(path: str, tally: PayloadTally, where: tuple[Any, ...]) -> tuple[int, int, int]:
    """`_tally_file`, and the biggest line's bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        buf = os.read(fd, _WHOLE)  # (no fstat: most transcripts are far smaller than one read)
        sink = TallySink(tally, where)
        if len(buf) < _WHOLE:  # the whole file (a regular file reads short only at its end)
            done = _tally_whole(tally, buf, where)
            if done is not None:
                return done
            sink.write(buf)
        else:
            sink.write(buf)
            while block := os.read(fd, 1 << 20):
                sink.write(block)
        sink.close()
        return sink.lines, sink.bytes, sink.biggest
    finally:
        os.close(fd)


def _tally_whole(tally: PayloadTally, buf: bytes, where: tuple[Any, ...]) -> tuple[int, int, int] | None:
    """`TallySink` over a whole file in one go, with the same figures: lines are found with C-level
    searches (the class markers, then which line each falls on) instead of a loop over lines.
    None for a file this does not cover (blank lines, possible inline media): stream it."""
    if not buf:
        return 0, 0, 0
    parts = buf.split(b"\n")  # (one-byte searches are memchr: cheap; every longer one scans)
    if not parts[-1]:
        parts.pop()
    low = min(parts) if parts else b""
    if not low or low[0] <= 0x20:  # an empty or whitespace-led line: the sink skips blank lines
        return None
    if b'"data":"' in buf or b";base64," in buf:  # _MEDIA_MARKERS: a line that may carry media
        return None
    sizes = list(map(len, parts))
    classes = tally.classes
    compactions, tools = classes["compactionSummaries"], classes["toolResults"]
    special: dict[int, list[int]] = {}
    found = []
    find = buf.find
    for word, is_compaction, heads in _CLASS_WORDS:
        at = find(word)
        while at >= 0:
            for head in heads:  # the marker is `<head><word>`
                if at >= len(head) and buf.startswith(head, at - len(head)):
                    found.append((at - len(head), is_compaction, len(head) + len(word)))
                    break
            at = find(word, at + 1)
    if found:
        found.sort()
        index, counted_to = 0, 0
        for at, is_compaction, width in found:
            start = buf.rfind(b"\n", 0, at) + 1
            if at + width > start + _HEAD:
                continue  # past the line's head: not what classifies it
            index += buf.count(b"\n", counted_to, start)
            counted_to = start
            if is_compaction:
                special[index] = compactions
            else:
                special.setdefault(index, tools)
    total = sum(sizes)
    special_bytes = 0
    for index, slot in special.items():
        slot[0] += sizes[index]
        slot[1] += 1
        special_bytes += sizes[index]
    text = classes["text"]
    text[0] += total - special_bytes
    text[1] += len(sizes) - len(special)
    top_n = tally.top_n
    heap = tally.top_events
    if top_n and sizes:
        floor = heap[0][0] if len(heap) >= top_n else -1
        if max(sizes) > floor:
            for index, size in enumerate(sizes):
                if size <= floor:
                    continue
                slot = special.get(index, text)
                name = (
                    "compactionSummaries"
                    if slot is compactions
                    else "toolResults"
                    if slot is tools
                    else "text"
                )
                item = (size, -tally.tick(index + 1), (*where, index + 1, name))
                if len(heap) < top_n:
                    heapq.heappush(heap, item)
                else:
                    heapq.heapreplace(heap, item)
                floor = heap[0][0] if len(heap) >= top_n else -1
    return len(sizes), total, max(sizes, default=0)


def snapshot_bytes_of(entry: Any) -> int:
    """Bytes of a whole entry's snapshot fields (`SNAPSHOT_FIELDS`, as stored)."""
    if not isinstance(entry, dict):
        return 0
    import orjson

    total = 0
    for name in SNAPSHOT_FIELDS:
        value = entry.get(name)
        if value is not None:
            try:
                total += len(value) if isinstance(value, str) else len(orjson.dumps(value))
            except TypeError:
                continue
    return total
