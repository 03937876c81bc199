"""The store interface every command uses (spec D2): legacy `sessions.json` + JSONL, our SQLite DB,
and real OpenClaw agent databases (schemas 23/24 read and written behind the guard rails of D21;
25/26 read only).

Entries are plain dicts exactly as stored (unknown fields kept, spec D14); transcript lines carry
their raw JSON text byte-exact (spec D4) plus the parsed object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from openclaw_cli.errors import RefusedError
from openclaw_cli.records import FrozenRecord, Record

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

KIND_LEGACY = "legacy"
KIND_SQLITE = "sqlite"  # our own schema
KIND_OPENCLAW_SQLITE = "openclaw-sqlite"  # a real OpenClaw agent DB (schema 23: verified writes, D21)


class ChangeProbe(ABC):
    """A cheap check of a store's (or a file's) state, safe from any thread and never blocking:
    `read()` returns a value that differs whenever what it watches may have changed, or None when
    it cannot tell now (then nothing may be reused). Probes compare equal when they watch the same
    thing, so a value read by one may be compared with a value read by another."""

    @abstractmethod
    def read(self) -> Any: ...


class FileProbe(ChangeProbe, FrozenRecord):
    """A file's identity, size and mtime (a rewrite by rename is a new inode, an append a new
    size), or "missing"."""

    __slots__ = ("path",)
    _fields = ("path",)
    path: str

    def __init__(self, path: str) -> None:
        self._assign(path)

    def read(self) -> Any:
        import os

        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return "missing"
        except OSError:
            return None
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class Probes(ChangeProbe, FrozenRecord):
    """Several probes read as one (None when any of them cannot tell)."""

    __slots__ = ("parts",)
    _fields = ("parts",)
    parts: tuple[ChangeProbe, ...]

    def __init__(self, parts: tuple[ChangeProbe, ...]) -> None:
        self._assign(parts)

    def read(self) -> Any:
        values = []
        for part in self.parts:
            value = part.read()
            if value is None:
                return None
            values.append(value)
        return tuple(values)


class TranscriptLine(Record):
    __slots__ = _fields = ("seq", "raw", "obj", "line_no")  # tens of thousands per transcript
    seq: int  # 0-based position: file line index among non-blank lines, or SQLite seq
    raw: str  # exact JSON text of the line, without the newline (None in a snapshot read without it)
    obj: dict[str, Any] | None  # parsed JSON object (None when the line is not an object)
    line_no: int | None  # 1-based line number in a JSONL file

    def __init__(self, seq: int, raw: str, obj: dict[str, Any] | None, line_no: int | None = None) -> None:
        self.seq = seq
        self.raw = raw
        self.obj = obj
        self.line_no = line_no


class ReadIssue(Record):
    """A malformed/truncated line or unreadable file, reported and skipped (never a crash)."""

    _fields = ("path", "line", "message")
    path: str
    line: int | None
    message: str

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


class SessionTotals(Record):
    _fields = ("events", "bytes", "token_estimate", "cold")
    events: int
    bytes: int  # UTF-8 bytes of the raw event JSON (no newlines)
    token_estimate: int | None  # chars/4 estimate kept at write time (None when unknown)
    cold: bool  # events moved to OpenClaw cold storage: counts come from the archive row

    def __init__(
        self, events: int, bytes: int, token_estimate: int | None = None, cold: bool = False
    ) -> None:
        self.events = events
        self.bytes = bytes
        self.token_estimate = token_estimate
        self.cold = cold


SORT_UPDATED = "updatedAt"  # the default: pinned rows first (newest pin first), then updatedAt
SORT_LAST_INTERACTION = "lastInteractionAt"
SORT_ACTIVITY = "activity"
LISTING_SORTS = (SORT_UPDATED, SORT_LAST_INTERACTION, SORT_ACTIVITY)


class ListingQuery(FrozenRecord):
    """A Gateway listing (`sessions.list`) in `sort_by`'s order (`listing_sort_key`; ties by key).
    `archived`: False lists active rows, True archived rows, None both. `active_since_ms` keeps
    rows whose updatedAt — the activity timestamp with sort_by "activity", as OpenClaw's
    activeMinutes — is at least that. `match` is any further filter on the full entry (search,
    kinds, …); stores that can answer the rest from their own columns do so when `match` is None."""

    __slots__ = _fields = (
        "archived",
        "active_since_ms",
        "label",
        "pinned",
        "offset",
        "limit",
        "match",
        "sort_by",
    )
    archived: bool | None
    active_since_ms: float | None
    label: str | None
    pinned: bool | None
    offset: int
    limit: int | None
    match: Callable[[str, dict[str, Any]], bool] | None
    sort_by: str

    def __init__(
        self,
        archived: bool | None = False,
        active_since_ms: float | None = None,
        label: str | None = None,
        pinned: bool | None = None,
        offset: int = 0,
        limit: int | None = None,
        match: Callable[[str, dict[str, Any]], bool] | None = None,
        sort_by: str = SORT_UPDATED,
    ) -> None:
        self._assign(archived, active_since_ms, label, pinned, offset, limit, match, sort_by)


class ArchiveFile(Record):
    _fields = ("path", "session_id", "reason", "timestamp_ms", "compressed", "size")
    path: Path
    session_id: str | None
    reason: str  # deleted | reset | bak | imported | ...
    timestamp_ms: int | None
    compressed: bool
    size: int

    def __init__(
        self,
        path: Path,
        session_id: str | None,
        reason: str,
        timestamp_ms: int | None,
        compressed: bool,
        size: int,
    ) -> None:
        self.path = path
        self.session_id = session_id
        self.reason = reason
        self.timestamp_ms = timestamp_ms
        self.compressed = compressed
        self.size = size


class WriteOptions(Record):
    """How one run writes, set by the operations layer (`SessionStore.configure_writes`): whether
    stores that take a backup before their first write (a real OpenClaw database, D21) do so
    (`--no-backup` turns it off), and the state directory whose Gateway could own a store that
    lives outside the `agents/<id>/` layout."""

    _fields = ("backup", "state_dir")
    backup: bool
    state_dir: Path | None

    def __init__(self, backup: bool = True, state_dir: Path | None = None) -> None:
        self.backup = backup
        self.state_dir = state_dir


class StoreStats(Record):
    _fields = (
        "sessions",
        "transcript_bytes",
        "transcript_events",
        "archives_count",
        "archives_bytes",
        "compactions",
        "extra",
    )
    sessions: int
    transcript_bytes: int
    transcript_events: int | None
    archives_count: int
    archives_bytes: int
    compactions: int
    extra: dict[str, Any]

    def __init__(
        self,
        sessions: int,
        transcript_bytes: int,
        transcript_events: int | None,
        archives_count: int,
        archives_bytes: int,
        compactions: int,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.sessions = sessions
        self.transcript_bytes = transcript_bytes
        self.transcript_events = transcript_events
        self.archives_count = archives_count
        self.archives_bytes = archives_bytes
        self.compactions = compactions
        self.extra = {} if extra is None else extra


class DeleteOutcome(Record):
    """What `delete_session` did: the row is gone (`deleted`), the verified archives it left,
    and the keys kept because they changed meanwhile."""

    _fields = ("deleted", "archived", "kept")
    deleted: bool
    archived: list[Path]
    kept: list[str]

    def __init__(
        self, deleted: bool, archived: list[Path] | None = None, kept: list[str] | None = None
    ) -> None:
        self.deleted = deleted
        self.archived = [] if archived is None else archived
        self.kept = [] if kept is None else kept


class RestoreOutcome(Record):
    """What `restore_session` wrote: the new row and where its transcript now lives."""

    _fields = ("key", "session_id", "entry", "location", "events")
    key: str
    session_id: str
    entry: dict[str, Any]
    location: str  # the transcript file, or `sqlite:<db>#<sid>`
    events: int

    def __init__(self, key: str, session_id: str, entry: dict[str, Any], location: str, events: int) -> None:
        self.key = key
        self.session_id = session_id
        self.entry = entry
        self.location = location
        self.events = events


class LeavingHook(ABC):
    """The caller's part in a `retire` (issue 27 §6, the usage ledger). The store hands it each
    leaving session's transcript content as its archive is written from it (`exported`: the
    archive's own export, so the content is read once), then calls `before_leaving` once, after
    every archive is verified and durable and before anything leaves the store (no DELETE, no
    unlink yet). A store whose archives are copies of files (legacy) hands no content: the hook
    reads what it needs in `before_leaving`, while every original is still in place. A failure of
    `before_leaving` removes the archives the run created, like any failure before the removals."""

    def exported(self, session_id: str, content: bytes) -> None:  # noqa: B027 - optional part
        """One leaving session's content as its archive holds it (empty: nothing was archived)."""

    @abstractmethod
    def before_leaving(self) -> None:
        """Every archive is verified and durable; nothing has left yet."""

    def may_fork(self) -> bool:
        """Whether a later `exported` may still fork a process (then the store starts no thread
        of its own before it says no: a fork copies no other thread)."""
        return False


# `record_archive`'s keyword arguments in the order of a `record_archives` row
ARCHIVE_RECORD_FIELDS = (
    "archive_name",
    "session_id",
    "session_key",
    "reason",
    "encoding",
    "sha256",
    "archive_bytes",
    "event_count",
    "raw_bytes",
    "created_at_ms",
)


class SessionStore(ABC):
    """One agent's session store. Reads below; then the layout facts where store kinds differ
    (asked instead of the kind); then the write protocol: every mutation of every command goes
    through these methods, which read-only stores refuse (`ensure_writable`)."""

    kind: str
    agent_id: str
    path: Path  # sessions.json or the .sqlite file
    sessions_dir: Path  # the agent's artifact dir (legacy transcripts, archives)
    read_only: bool = False
    schema: str | None = None  # "openclaw-cli 1", "openclaw 23", None for legacy
    # Where transcripts live: files of the sessions dir (legacy) or sessions inside the database.
    # Maintenance plans file removals for the first and session removals for the second.
    transcripts_in_files: bool = False
    # Whether openclaw-cli writes this store at all (a real OpenClaw database: schemas 23/24 only,
    # D24), however this instance was opened.
    accepts_writes: bool = True
    # Whether `commit_max_lines` gives the kept lines a successor window (ours, D16) unless told to
    # keep the session's id: a dry run says which id the apply would leave.
    max_lines_opens_successor: bool = False
    # Whether the store can hold 2026.9.9's cron-run placeholders (real OpenClaw databases only).
    holds_cron_placeholders: bool = False
    write_options: WriteOptions | None = None  # set by `configure_writes` before a write

    # ---- reads -------------------------------------------------------------------------------
    @abstractmethod
    def load_entries(self) -> dict[str, dict[str, Any]]:
        """All entries, key -> raw entry dict, in store order."""

    def load_facts(self, *, entry_bytes: dict[str, int] | None = None) -> dict[str, Any]:
        """Every row's facts (`store/facts.py`: what maintenance planning and `status` read),
        key -> facts, in store order. `entry_bytes`, when given, receives key -> compact JSON bytes
        of each whole entry where the facts are not the whole entry (a database store's disk budget
        counts them). The default: the whole entries (a store that holds them anyway, legacy)."""
        return self.load_entries()

    def load_file_facts(
        self, on_row: Callable[[str, dict[str, Any]], None] | None = None
    ) -> dict[str, Any] | None:
        """A file store's rows for a dry run's planning, without holding every whole entry: key ->
        `facts.file_entry_facts` of every row, in store order, given only when every row is a
        usable entry (no unusable row to keep its files alive); None when the store cannot give
        them so (the caller plans over `load_entries()`). `on_row(key, entry)` is shown each whole
        row as its facts are made. The default: None."""
        return None

    def list_entries(
        self, *, limit: int | None = None, updated_since_ms: int | None = None
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """Entries sorted by updatedAt descending (missing last), optionally filtered and limited.
        Returns (rows, total matching before the limit)."""
        keyed = [(_updated_at(entry), key, entry) for key, entry in self.load_entries().items()]
        if updated_since_ms is not None:
            keyed = [r for r in keyed if r[0] is not None and r[0] >= updated_since_ms]
        keyed.sort(key=lambda r: (r[0] is None, -(r[0] or 0)))  # newest first, missing last; stable
        rows = [(key, entry) for _, key, entry in keyed]
        total = len(rows)
        return (rows[:limit] if limit is not None else rows), total

    def iter_listing(
        self, *, updated_since_ms: int | None = None, archived: bool | None = None
    ) -> tuple[int, Iterator[tuple[str, dict[str, Any]]]]:
        """Every row `list_entries(limit=None)` returns, in its order, as (how many, an iterator):
        `archived` None keeps all rows, True only archived ones, False none. A store that can
        stream (SQLite) never holds all rows; this default reads them all first (a legacy store
        is one JSON document anyway). The iterator must be exhausted or closed."""
        rows, _ = self.list_entries(limit=None, updated_since_ms=updated_since_ms)
        if archived is not None:
            rows = [(key, entry) for key, entry in rows if (entry.get("archivedAt") is not None) == archived]
        return len(rows), (row for row in rows)

    def get_entry(self, key: str) -> dict[str, Any] | None:
        return self.load_entries().get(key)

    def exists(self) -> bool:
        """Whether the store's file is there: a file store may have none yet (an empty store);
        an opened database is."""
        return True

    def load_rows(self) -> dict[str, Any]:
        """Every stored row, unusable ones included (a store that holds only usable rows: its
        entries)."""
        return dict(self.load_entries())

    def entry_keys(self) -> set[str]:
        """The keys of every usable row."""
        return set(self.load_entries())

    def entry_bytes(self) -> dict[str, int]:
        """key -> UTF-8 bytes of the stored entry JSON, for the disk budget of database stores
        (a file store's budget measures its files instead)."""
        from openclaw_cli import jsonutil

        return {key: len(jsonutil.dumps_bytes(entry)) for key, entry in self.load_entries().items()}

    def entry_sizes(self) -> dict[str, tuple[str | None, int]]:
        """key -> (sessionId, UTF-8 bytes of the stored entry JSON): `entry_bytes` with each row's
        session id (the database stores read both from columns without decoding any JSON)."""
        from openclaw_cli import jsonutil

        out: dict[str, tuple[str | None, int]] = {}
        for key, entry in self.load_entries().items():
            sid = entry.get("sessionId")
            out[key] = (sid if isinstance(sid, str) else None, len(jsonutil.dumps_bytes(entry)))
        return out

    def change_token(self) -> Any:
        """A value that changes whenever the store's content changes, for a live process's caches;
        None when the store cannot tell (then nothing is cached)."""
        return None

    def change_probe(self) -> ChangeProbe | None:
        """What tells, without opening the store again, whether its content (rows, and transcripts
        kept inside it) may have changed: a live process's answer cache (the Gateway's) reads it
        before and after a read and on every reuse. None when the store cannot tell."""
        return None

    def list_view(self, query: ListingQuery) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """The page `query` selects, and how many rows match it in all."""
        return listing_page(self.load_entries().items(), query)

    def count_entries(self) -> int:
        return len(self.load_entries())

    @abstractmethod
    def iter_transcript(
        self, session_id: str, *, entry: dict[str, Any] | None = None, issues: list[ReadIssue] | None = None
    ) -> Iterator[TranscriptLine]:
        """Stream every line of a session's transcript in order. Malformed lines are appended to
        `issues` and skipped. A missing transcript yields nothing."""

    @abstractmethod
    def tail_transcript(
        self,
        session_id: str,
        n: int,
        *,
        entry: dict[str, Any] | None = None,
        issues: list[ReadIssue] | None = None,
    ) -> list[TranscriptLine]:
        """The last `n` lines, without reading the whole transcript."""

    @abstractmethod
    def has_transcript(self, session_id: str, *, entry: dict[str, Any] | None = None) -> bool: ...

    @abstractmethod
    def session_totals(self) -> dict[str, SessionTotals]:
        """Per-session event count and bytes (from totals kept at write time where the store has them)."""

    def session_bytes(self) -> dict[str, int]:
        """sessionId → transcript bytes: `session_totals()` reduced to what the disk budget and
        the cleanup preview read (stores that keep the totals in a column override it)."""
        return {sid: totals.bytes for sid, totals in self.session_totals().items()}

    @abstractmethod
    def list_archives(self) -> list[ArchiveFile]: ...

    @abstractmethod
    def stats(self) -> StoreStats: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    # ---- layout facts ------------------------------------------------------------------------------
    def skipped_rows(self) -> list[ReadIssue]:
        """Stored rows a listing cannot show, each with why (they stay stored, untouched); the
        default: none."""
        return []

    def legacy_data_present(self) -> bool:
        """Legacy data this store reads that the migration would move into SQLite (the D2 hint)."""
        return False

    def preview_session_bytes(self) -> dict[str, int] | None:
        """Transcript bytes per session as kept at write time, for previews that must not read
        transcripts (`status`); None when the store keeps no such figure."""
        return self.session_bytes() or None

    def stored_session_totals(self) -> dict[str, SessionTotals]:
        """Per-session totals the store keeps at write time (empty when it keeps none)."""
        return self.session_totals()

    def transcript_file_bytes(self, session_id: str, entry: dict[str, Any]) -> int | None:
        """The size of the session's transcript file, for stores that keep files."""
        return None

    def referenced_transcripts(self) -> dict[Path, list[str]]:
        """The transcript files the rows name (the keys naming each), for stores that keep files."""
        return {}

    def iter_full_entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row, whole: a store that keeps some fields apart from its rows joins them here."""
        return self.iter_listing(archived=None)[1]

    def iter_rows_with_transcripts(
        self, rows: Iterable[tuple[str, dict[str, Any]]] | None = None, index: dict[str, str] | None = None
    ) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        """(key, full entry, transcript file) of every row, streamed where the store can: the file
        only for stores that keep transcripts in files (None: read it with `export_transcript`).
        `rows`: (key, file facts) from a file store's `load_file_facts()`, instead of reading again.
        `index`: a file store's sessions dir as the caller listed it (name -> file/link/other)."""
        for key, entry in self.iter_full_entries() if rows is None else rows:
            yield key, entry, None

    def list_windows(self, session_key: str | None = None) -> list[dict[str, Any]]:
        """The session windows (`sessionId`, `sessionKey`, …: the compaction successors of D16) a
        store keeps beside its rows; a file store keeps none."""
        return []

    def window_keys(self) -> list[tuple[str, str]]:
        """(sessionId, sessionKey) of every session window, in `list_windows`' order (newest
        first): what a cleanup needs of them, without a dict per window (20,000 on *many*)."""
        return [(window["sessionId"], window["sessionKey"]) for window in self.list_windows()]

    def windows_beside(self, keys: Collection[str], leaving: Collection[str]) -> list[tuple[str, str]]:
        """`window_keys()`' windows of `keys` whose session is not in `leaving`, in its order: a
        cleanup's earlier windows of the rows it removes (D16)."""
        return [(sid, key) for sid, key in self.window_keys() if key in keys and sid not in leaving]

    def pending_rotation(self, snapshot: Any) -> dict[str, Any] | None:
        """The compaction entry whose successor transcript a killed run did not write (a file
        store rotates in several steps); None where a rotation is one transaction."""
        return None

    def configure_writes(self, options: WriteOptions) -> None:
        """Take the run's `WriteOptions` (the state dir whose Gateway could own this store; stores
        without backups ignore the rest)."""
        self.write_options = options

    def write_notices(self) -> list[str]:
        """What the operator should be told after this store was written (e.g. where its backup is)."""
        return []

    def resolve_transcript(
        self, session_id: str, entry: dict[str, Any] | None = None, issues: list[ReadIssue] | None = None
    ) -> Path | None:
        """The session's existing transcript file, for stores that keep files (None otherwise, or
        when there is no such file)."""
        return None

    def session_id_taken(self, session_id: str) -> bool:
        """Whether `session_id` already names a transcript of this store (a row's, a window's or
        a file)."""
        if self.has_transcript(session_id):
            return True
        return any(entry.get("sessionId") == session_id for entry in self.load_entries().values())

    def ensure_not_moved(self) -> None:  # noqa: B027 - optional hook
        """`SessionBusyError` when the store moved since it was opened (an import published a
        database for a file store meanwhile); a database does not move."""

    def locate_transcript(self, session_id: str, entry: dict[str, Any], issues: list[ReadIssue]) -> bool:
        """False when the session's transcript is certainly absent (a file store found no file;
        a reason it could not look is appended to `issues`)."""
        return True

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the write protocol (read-only stores refuse) ------------------------------------------------
    def ensure_writable(self, operation: str) -> None:
        if self.read_only:
            raise RefusedError(
                f"Refusing to {operation}: {self.path} is a real OpenClaw database ({self.schema}); "
                "openclaw-cli reads it but does not write to it. Use the OpenClaw Gateway or "
                "`openclaw doctor` from OpenClaw for changes."
            )

    @abstractmethod
    def write_lock(self, lock_settings: Any) -> AbstractContextManager[None]:
        """The cross-process part of the store's writer (`store.writer.store_writer`)."""

    @abstractmethod
    def read_snapshot(
        self, key: str, entry: dict[str, Any], *, data_on_demand: bool = False, on_entry: Any = None
    ) -> Any:
        """The session's transcript as one consistent `snapshot.TranscriptSnapshot`. With
        `data_on_demand` (a summary compaction) the transcript's bytes are read again only when
        needed, and a store that parses its lines as it reads them shows each object to
        `on_entry(obj, line_no)`, which may slim it (`TranscriptSnapshot.read_lines` re-reads a
        line). A store may ignore `on_entry`: its readers must work on whole objects too."""

    @abstractmethod
    def commit_compaction(
        self,
        snapshot: Any,
        comp: dict[str, Any],
        *,
        rotate: bool,
        now_ms: int,
        lock_settings: Any,
        reason: str = "manual",
    ) -> Any:
        """Append one compaction entry (and, with `rotate`, make a successor the active
        transcript) if the snapshot still holds; `snapshot.SnapshotChanged` otherwise."""

    def finish_rotation(
        self,
        snapshot: Any,
        comp: dict[str, Any],
        *,
        now_ms: int,
        lock_settings: Any,
        reason: str = "manual",
    ) -> Any:
        """Complete the rotation `pending_rotation` found half done (write the successor a killed
        run did not write). Only a store whose rotation takes several steps has one to finish."""
        self.ensure_writable("compact a session")
        raise NotImplementedError

    @abstractmethod
    def commit_max_lines(
        self,
        snapshot: Any,
        kept: list[bytes],
        *,
        now_ms: int,
        lock_settings: Any,
        keep_session_id: bool = False,
    ) -> Any:
        """Keep only `kept` lines of the session (the full original archived first, D15). A store
        that would give the lines a successor window (ours, D16) keeps the session's id instead
        with `keep_session_id` (the behaviour release's `compact_max_lines_keeps_session_id`)."""

    @abstractmethod
    def retire(
        self,
        plan: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        checkpoint: Callable[[], None],
        progress: Callable[[int], None] | None = None,
        leaving: LeavingHook | None = None,
    ) -> Any:
        """Archive, then remove what `plan` (`retire.Retirement`) names (D6.2); `leaving` is told
        what leaves, and called between the verified archives and the first removal."""

    @abstractmethod
    def retire_all(
        self, *, lock_settings: Any, now_ms: int, checkpoint: Callable[[], None]
    ) -> tuple[Any, int, int]:
        """Archive every transcript, remove every row: (outcome, rows removed, rows left)."""

    @abstractmethod
    def restore_session(
        self, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any, now_ms: int
    ) -> RestoreOutcome:
        """A new row `key` (`entry`, whose `sessionId` names no transcript of this store) whose
        transcript is exactly `content`'s lines (an archive's, verified by the caller); refused
        with `PreconditionError` when the key exists meanwhile. All of it or nothing."""

    def current_for_writes(self) -> bool:
        """Whether a write opened now would find this store ours and current (nothing to create or
        migrate): a live process warms only such stores' write connections at start (issue 30).
        Stores without a kept write connection have nothing to warm."""
        return False

    # ---- session lifecycle (<kind>/lifecycle.py; ops.lifecycle decides what rows become) ------------------
    def label_owners(self, label: str) -> list[str]:
        """Keys of the rows whose `label` is exactly `label` (labels are unique per store)."""
        return [key for key, entry in self.load_entries().items() if entry.get("label") == label]

    def count_archived(self, *, updated_since_ms: int | None = None) -> int:
        """Rows with `archivedAt` set (optionally only those updated since): listing totals."""
        count = 0
        for entry in self.load_entries().values():
            if entry.get("archivedAt") is None:
                continue
            updated = _updated_at(entry)
            if updated_since_ms is None or (updated is not None and updated >= updated_since_ms):
                count += 1
        return count

    def window_session_ids(self, key: str) -> list[str]:
        """Session ids of the key's earlier transcript windows kept in the store (compaction
        successors, D16) — none for stores that keep transcripts in files."""
        return []

    def export_transcript(
        self, session_id: str, dest: Any, *, entry: dict[str, Any] | None = None
    ) -> SessionTotals:
        """Stream the session's transcript as JSONL (raw lines + newline) into the binary `dest`;
        returns what was written. Flat memory: lines are copied as they are read."""
        events = total = 0
        for line in self.iter_transcript(session_id, entry=entry, issues=[]):
            data = line.raw.encode("utf-8")
            dest.write(data + b"\n")
            events += 1
            total += len(data)
        return SessionTotals(events=events, bytes=total)

    def transcript_snapshot(self) -> AbstractContextManager[Any]:
        """Several `export_transcript` calls read one consistent state (database stores: one read
        transaction instead of one per export). No-op by default."""
        from contextlib import nullcontext

        return nullcontext()

    # ---- disk-budget reclamation (2026.9.6+: maintenance/reclaim.py) ------------------------------
    def reclaim_free_pages(self) -> bool:
        """Checkpoint the database's WAL and return its free pages (database stores); False when a
        checkpoint could not copy every frame. Nothing to do for a store of files."""
        return True

    def budget_archive_names(self) -> list[str]:
        """Archives the store records (database stores), oldest first: the disk budget removes
        these before any other archive file."""
        return []

    def unpublished_archive_names(self) -> set[str]:
        """Archive files the store has not published yet (never removed by the budget)."""
        return set()

    def forget_archives(self, names: list[str]) -> None:  # noqa: B027 - optional hook
        """Drop the store's records of archive files the budget removed."""

    def cron_placeholders(self, *, before_ms: float) -> list[tuple[str, list[str]]]:
        """2026.9.9's cron-run placeholders: (key, its window ids) of the agent's cron-run rows that
        are canonical retained-history placeholders last updated (row and windows) before
        `before_ms`. Only real OpenClaw databases hold such rows."""
        return []

    def orphan_sessions(self) -> list[tuple[str, int, int]]:
        """(session id, events, event bytes) of the transcripts a database keeps that no row
        references at all: windows whose key has no row, events with no window (issue 27 §2).
        Earlier windows of a row are its history, not orphans. None in a store of files (its
        orphans are files: `maintenance.collect`)."""
        return []

    def historical_session_ids(self, *, recent_since_ms: float | None) -> list[str]:
        """Sessions no row references any more (earlier windows), oldest first, except those
        updated at or after `recent_since_ms` (`preserveRecent`). None in a store of files."""
        return []

    def record_archives(self, rows: Any) -> None:
        """Many `record_archive` rows (archive_name, session_id, session_key, reason, encoding, sha256,
        archive_bytes, event_count, raw_bytes, created_at_ms) at once; one call each by default."""
        for row in rows:
            self.record_archive(**dict(zip(ARCHIVE_RECORD_FIELDS, row, strict=True)))  # type: ignore[attr-defined]

    @abstractmethod
    def patch_entry(
        self,
        key: str,
        mutate: Callable[[dict[str, Any] | None], dict[str, Any] | None],
        *,
        lock_settings: Any,
        create: bool = False,
        now_ms: int | None = None,
    ) -> dict[str, Any] | None:
        """Read-modify-write of one row under the store writer: `mutate(current)` (a copy; None
        for a missing row when `create`) returns the row to store (None or unchanged: no write)
        or raises (nothing written). Returns the stored row. A missing row without `create`
        raises NotFoundError. `now_ms`: the operation's clock, for a store that stamps what it
        writes beside the row (None: the wall clock)."""

    def patch_entries(
        self,
        items: list[tuple[str, Callable[[dict[str, Any] | None], dict[str, Any] | None]]],
        *,
        lock_settings: Any,
        create: bool = False,
        now_ms: int | None = None,
    ) -> list[Any]:
        """`patch_entry` for several rows, in order, each as if alone: the outcome of each (its
        row, or the `OpenClawError` that refused it and changed nothing). A store that can
        (SQLite) commits them together — the Gateway's group commit of concurrent patches; this
        default writes them one by one."""
        from openclaw_cli.errors import OpenClawError

        out: list[Any] = []
        for key, mutate in items:
            try:
                out.append(
                    self.patch_entry(key, mutate, lock_settings=lock_settings, create=create, now_ms=now_ms)
                )
            except OpenClawError as exc:
                out.append(exc)
        return out

    def archive_rows(
        self,
        archives: Mapping[str, str],
        *,
        archived_at: int,
        expected: Mapping[str, Any],
        lock_settings: Any,
    ) -> list[str]:
        """Archive rows in place (maintenance of the releases that archive, spec D23): each key of
        `archives` (key -> `archiveReason`) gets `archivedAt = archived_at` and that reason, and
        loses `archivedBy`, if its row is still the one the plan read (`expected[key]`: same
        `sessionId` and `updatedAt`) and is not archived already; other rows are left as they
        are. Returns the keys archived. All in one write where the store can (this default goes
        through `patch_entries`)."""
        self.ensure_writable("archive sessions")
        items = [
            (key, archive_mutation(reason, archived_at, expected.get(key)))
            for key, reason in archives.items()
        ]
        results = self.patch_entries(items, lock_settings=lock_settings)
        return [
            key
            for (key, _), row in zip(items, results, strict=True)
            if isinstance(row, dict)
            and row.get("archivedAt") == archived_at
            and row.get("archiveReason") == archives[key]
        ]

    @abstractmethod
    def reset_session(
        self,
        key: str,
        build: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        lock_settings: Any,
        now_ms: int,
        marker: dict[str, Any] | None = None,
    ) -> Any:
        """Reset `key`: `build(current)` returns the new row or raises. A row with a new
        `sessionId` starts a new session and the previous transcript leaves through a verified
        `reset` archive (D15); a row that keeps its `sessionId` (2026.9.6+) keeps its transcript,
        to which `marker` (a `reset` entry, its `parentId` set here to the transcript's leaf) is
        appended in the same write. Returns `lifecycle_common.ResetOutcome`."""

    @abstractmethod
    def fork_session(
        self,
        parent_key: str,
        child_key: str,
        build: Callable[[dict[str, Any], Any], dict[str, Any]],
        *,
        lock_settings: Any,
        now_ms: int,
        max_tokens: int,
        wait: bool = False,
        through_last_completed: bool = False,
        at_entry: str | None = None,
    ) -> Any:
        """Create `child_key` from the parent's active branch (`store.fork`): `build(seed, plan)`
        returns the child row (`seed` holds its new `sessionId`). Refuses an existing child key;
        unless `wait`, refuses while the parent's transcript write lock is held. With `at_entry`,
        the child starts before that user message instead (`message_cut`; refused, nothing
        written, when it is not a user message on the active path). Returns
        `lifecycle_common.ForkOutcome`."""

    @abstractmethod
    def switch_branch(
        self,
        key: str,
        leaf_id: str,
        build: Callable[[dict[str, Any], str], dict[str, Any]],
        *,
        lock_settings: Any,
        now_ms: int,
    ) -> Any:
        """Continue `key` on the branch ending at `leaf_id` (`message_cut.plan_switch`) under a new
        sessionId: `build(current, new_session_id)` returns the new row, whose transcript is the old
        one's lines plus a `leaf` control; the old transcript stays as it was. Refused (nothing
        written) when `leaf_id` is not an inactive tip. Returns `lifecycle_common.SwitchOutcome`."""

    def delete_session(
        self,
        key: str,
        entry: dict[str, Any],
        plan: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        checkpoint: Callable[[], None] | None = None,
    ) -> Any:
        """Remove one row and what `plan` (`retire.Retirement`) names of its transcripts: archived
        and verified first (D6.2), through `retire`. `entry` is the row as the caller read it; a
        row that changed since is kept (`SessionChangedError`). Returns
        `DeleteOutcome` with the archive paths."""
        from openclaw_cli.errors import SessionChangedError

        self.ensure_writable("delete a session")
        outcome = self.retire(
            plan, lock_settings=lock_settings, now_ms=now_ms, checkpoint=checkpoint or (lambda: None)
        )
        if key in outcome.kept:
            raise SessionChangedError(key, "deletion")
        archived = [Path(self.sessions_dir) / name for name in outcome.archives]
        return DeleteOutcome(self.get_entry(key) is None, archived, list(outcome.kept))


def archive_mutation(
    reason: str, archived_at: int, expected: Any
) -> Callable[[dict[str, Any] | None], dict[str, Any] | None]:
    """`archive_rows`' change to one row: None (no write) when the row is gone, archived already,
    or no longer the session the plan read."""

    def mutate(current: dict[str, Any] | None) -> dict[str, Any] | None:
        if current is None or "archivedAt" in current or not isinstance(expected, dict):
            return None
        if current.get("sessionId") != expected.get("sessionId") or current.get("updatedAt") != expected.get(
            "updatedAt"
        ):
            return None
        updated = dict(current)
        updated["archivedAt"] = archived_at
        updated.pop("archivedBy", None)
        updated["archiveReason"] = reason
        return updated

    return mutate


def _updated_at(entry: dict[str, Any]) -> float | None:
    value = entry.get("updatedAt") if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _finite(value: Any) -> float | None:
    """A JSON number that is finite (OpenClaw's `Number.isFinite`: no bools, no numeric strings)."""
    kind = type(value)
    if kind is int:
        number: int = value
        return number
    if kind is float:
        return value if value - value == 0 else None  # NaN and ±inf give NaN
    return None


def finite_timestamp(value: Any) -> float | None:
    """A listing timestamp as the order reads it (`listing_sort_key`): the number, else None."""
    return _finite(value)


def activity_timestamp(entry: dict[str, Any]) -> float:
    """OpenClaw's session activity time: the newest of the positive lastActivityAt /
    lastInteractionAt, else a positive updatedAt, else a positive createdAt, else 0."""
    activity = _finite(entry.get("lastActivityAt")) or 0
    interaction = _finite(entry.get("lastInteractionAt")) or 0
    if activity > 0 or interaction > 0:
        return max(activity, interaction, 0)
    for name in ("updatedAt", "createdAt"):
        value = _finite(entry.get(name))
        if value is not None and value > 0:
            return value
    return 0


def pin_timestamp(key: str, entry: dict[str, Any]) -> float:
    """The pinnedAt the default order ranks by: a pinnable row's numeric pinnedAt, else 0 (so a
    row pinned at 0 or earlier sorts among or after the unpinned ones, as OpenClaw's comparator)."""
    from openclaw_cli.keys import is_pinnable

    value = _finite(entry.get("pinnedAt"))
    return 0 if value is None or not is_pinnable(key, entry) else value


def listing_sort_key(sort_by: str = SORT_UPDATED) -> Callable[[str, dict[str, Any]], tuple[Any, ...]]:
    """The order of a `sessions.list` page (OpenClaw's session list order), as a sort key over
    (key, entry); a missing or non-numeric timestamp counts as 0, ties go by key ascending.
    "updatedAt": pinned rows first by pinnedAt descending, then updatedAt descending.
    "lastInteractionAt": lastInteractionAt descending, pinned or not. "activity": the activity
    timestamp (`activity_timestamp`) descending, pinned or not."""
    if sort_by == SORT_LAST_INTERACTION:
        return lambda key, entry: (-(_finite(entry.get("lastInteractionAt")) or 0), key)
    if sort_by == SORT_ACTIVITY:
        return lambda key, entry: (-activity_timestamp(entry), key)
    if sort_by != SORT_UPDATED:
        raise ValueError(f"unknown listing order {sort_by!r}")

    def pinned_first(key: str, entry: dict[str, Any]) -> tuple[Any, ...]:
        pinned = 0 if entry.get("pinnedAt") is None else pin_timestamp(key, entry)
        return (-pinned, -(_finite(entry.get("updatedAt")) or 0), key)

    return pinned_first


def listing_page(items: Any, query: ListingQuery) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """`ListingQuery` over (key, entry) pairs, in Python: the reference every store agrees with."""
    import heapq

    from openclaw_cli.keys import derive_row_flags

    since = query.active_since_ms
    by_activity = query.sort_by == SORT_ACTIVITY
    order = listing_sort_key(query.sort_by)
    selected: list[tuple[tuple[Any, ...], str, dict[str, Any]]] = []
    for key, entry in items:
        if not isinstance(entry, dict):
            continue
        if query.archived is not None and (entry.get("archivedAt") is not None) != query.archived:
            continue
        if query.pinned is not None and derive_row_flags(entry, key)["pinned"] != query.pinned:
            continue
        if since is not None:
            stamp = activity_timestamp(entry) if by_activity else _finite(entry.get("updatedAt"))
            if stamp is None or stamp < since:
                continue
        if query.label is not None and entry.get("label") != query.label:
            continue
        if query.match is not None and not query.match(key, entry):
            continue
        selected.append((order(key, entry), key, entry))  # sort keys end with the key: unique
    wanted = None if query.limit is None else query.offset + query.limit
    if wanted is not None and wanted * 8 < len(selected):  # a first page: a heap beats a full sort
        chosen = heapq.nsmallest(wanted, selected)[query.offset :]
    else:
        selected.sort()
        chosen = selected[query.offset : wanted]
    return [(key, entry) for _, key, entry in chosen], len(selected)
