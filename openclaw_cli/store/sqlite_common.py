"""Helpers shared by our SQLite store and the read-only OpenClaw-DB reader.

- reading a database's header without opening it (detection writes nothing),
- opening a WAL database read-only without creating `-wal`/`-shm` files (spec README note),
- mapping SQLite's busy/corrupt errors to our typed errors (spec D12),
- cheap per-event facts used at write time (timestamp, chars/4 token estimate),
- the archive listing fallback used until/unless `store/archives.py` provides one.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from openclaw_cli import clock
from openclaw_cli.errors import InvalidDataError, OpenClawError, RefusedError, StoreBusyError
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import FrozenRecord
from openclaw_cli.store.base import ArchiveFile
from openclaw_cli.textweight import weighted_chars

if TYPE_CHECKING:
    from typing import Protocol

    class TransactionalDb(Protocol):
        """What `write_transaction` needs of a database store (ours or a real OpenClaw one)."""

        path: Path
        busy_timeout_ms: int
        _depth: int

        def _db(self) -> sqlite3.Connection: ...


SQLITE_MAGIC = b"SQLite format 3\x00"
OUR_APPLICATION_ID = 0x4F43434C  # "OCCL"
OPENCLAW_SCHEMA_VERSION = 23
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


class DbHeader(FrozenRecord):
    """The fields of the 100-byte SQLite header we need for detection."""

    __slots__ = _fields = ("page_size", "wal", "user_version", "application_id")
    page_size: int
    wal: bool  # file format read/write versions == 2
    user_version: int
    application_id: int

    def __init__(self, page_size: int, wal: bool, user_version: int, application_id: int) -> None:
        self._assign(page_size, wal, user_version, application_id)


def read_header(path: Path) -> DbHeader | None:
    """Header of a SQLite file, or None for an empty file. Raises InvalidDataError when the file
    exists but is not a SQLite database. Reading 100 bytes never creates sidecar files.

    Note: a value changed by a transaction still in the WAL is not visible here; callers that
    need certainty re-check through a connection."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except IsADirectoryError:
        raise InvalidDataError(f"{path} is a directory, not a SQLite database") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise InvalidDataError(f"Cannot read {path}: {exc.strerror or exc}") from None
    if not head:
        return None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        raise InvalidDataError(f"{path} is not a SQLite database (file header does not match)")
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    user_version = struct.unpack(">i", head[60:64])[0]
    application_id = struct.unpack(">i", head[68:72])[0]
    return DbHeader(page_size, head[18] == 2 and head[19] == 2, user_version, application_id)


def is_busy_error(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def busy_error(path: Path, timeout_ms: int) -> StoreBusyError:
    """OpenClaw's lock-timeout wording (maintenance.md §12.5) for a SQLite busy timeout (D12)."""
    return StoreBusyError(path, timeout_ms)


FULL_DISK_BYTES = 1024 * 1024  # a write failing on a filesystem this close to full ran out of space


def translate_error(exc: sqlite3.Error, path: Path, timeout_ms: int, *, writing: bool = False) -> Exception:
    """Our typed error for a sqlite3 error; unknown errors become InvalidDataError naming the file.
    `writing`: the error came from a write — SQLite reports a full disk during a WAL write or a
    checkpoint as an I/O error or even as a malformed image; with (almost) no space left it is
    the no-space error, and the transaction was rolled back."""
    if is_busy_error(exc):
        return busy_error(path, timeout_ms)
    text = str(exc)
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    # an I/O error is checked even outside a write: opening a WAL database on a full disk (its -shm
    # and -wal files) fails as "disk I/O error" before any write starts (issue 29 #8: exit 11)
    if (
        writing and code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_CANTOPEN)
    ) or code == sqlite3.SQLITE_IOERR:
        from openclaw_cli.fsio import free_bytes

        free = free_bytes(Path(path).parent)
        if free is not None and free < FULL_DISK_BYTES:
            from openclaw_cli.errors import NoSpaceError

            return NoSpaceError(
                f"{path}: no space left on the device ({free} bytes free; SQLite: {text}); "
                "the write was rolled back.",
                path=path,
            )
    if code == sqlite3.SQLITE_READONLY:
        return RefusedError(f"Cannot write to {path}: the database or its directory is read-only ({text})")
    if code == sqlite3.SQLITE_CANTOPEN:
        return _cantopen_cause(path) or InvalidDataError(f"Cannot open SQLite database {path}: {text}")
    if code == sqlite3.SQLITE_FULL:
        from openclaw_cli.errors import NoSpaceError

        return NoSpaceError(
            f"{path}: no space left on the device (SQLite: {text}); the write was rolled back.", path=path
        )
    if code == sqlite3.SQLITE_IOERR:
        return OpenClawError(f"I/O error on {path}: {text}", type="io_error")
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return InvalidDataError(f"{path} is not a usable SQLite database: {text}")
    return InvalidDataError(f"SQLite error on {path}: {text}")


def _cantopen_cause(path: Path) -> Exception | None:
    """SQLite says only "unable to open database file": find the system reason (a process limit,
    a read-only filesystem, a directory we may not write) so the error is typed (issue 13)."""
    import errno

    from openclaw_cli.errors import os_error

    fds: list[int] = []
    try:
        for _ in range(4):  # a database needs up to 3 descriptors (file, WAL, shared memory)
            fds.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return os_error(exc, path, action="opening the database")
    finally:
        for fd in fds:
            os.close(fd)
    parent = Path(path).parent
    try:
        if os.statvfs(parent).f_flag & os.ST_RDONLY:
            return os_error(OSError(errno.EROFS, "read-only"), parent, action="opening the database")
    except OSError:
        pass
    if parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        return os_error(OSError(errno.EACCES, "denied"), parent, action="opening the database")
    return None


# ---- read-only opening ---------------------------------------------------------------------------


class ReadOnlyConnection:
    """A read-only connection plus the private snapshot directory it may own (removed on close).
    In a live process a WAL reader belongs to its database's keeper, whose pool takes it back on
    close (opening and checking a connection cost ~1 ms of every Gateway read)."""

    def __init__(
        self, conn: sqlite3.Connection, snapshot_dir: Path | None, mode: str, pool: _Keeper | None = None
    ):
        self.conn = conn
        self.snapshot_dir = snapshot_dir
        self.mode = mode  # "immutable" | "ro" | "snapshot"
        self.pool = pool
        self.verified: Any = None  # what the store checked on this connection (kept while pooled)

    def close(self) -> None:
        if self.pool is not None and self.pool.give_back(self):
            return
        try:
            self.conn.close()
        finally:
            if self.snapshot_dir is not None:
                import shutil

                shutil.rmtree(self.snapshot_dir, ignore_errors=True)
                self.snapshot_dir = None


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{path.absolute().as_uri()}?{query}"


def _connect_uri(uri: str, timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(
        uri, uri=True, isolation_level=None, timeout=timeout_ms / 1000, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
    return conn


# ---- live reads (a long-running process that also writes: the Gateway) -----------------------------


class _Keeper:
    """One plain connection a live process keeps open on a WAL database: the `-wal`/`-shm` files
    stay in place, so every read-only connection is a proper WAL reader (`mode=ro`), never an
    `immutable=1` one that a concurrent write could invalidate; and its `PRAGMA data_version`
    (which changes whenever another connection commits) tells cached listing facts apart."""

    def __init__(
        self, conn: sqlite3.Connection, inode: tuple[int, int] | None = None, path: str = ""
    ) -> None:
        self.conn = conn
        self.inode = inode
        self.conn_path = path
        self.lock = threading.Lock()
        self.cache: dict[Any, tuple[int, Any]] = {}
        self.pool: list[ReadOnlyConnection] = []  # idle WAL readers of this database
        self.closed = False
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        # one idle write connection of this database (its store's agent id and busy timeout, the
        # schema cookie and user_version it was given back with): a write batch opens none
        self._writer: tuple[sqlite3.Connection, Any, tuple[int, int]] | None = None

    def checkpoint(self) -> None:
        """A PASSIVE checkpoint on a connection of its own (never the keeper's, which listings
        ask for data_version): copies what it can of the WAL into the database without waiting for,
        or blocking, readers and writers."""
        with self._checkpoint_lock:
            if self.closed:
                return
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    self.conn_path, isolation_level=None, check_same_thread=False
                )
                self._checkpointer.execute("PRAGMA busy_timeout = 0")
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def take(self) -> ReadOnlyConnection | None:
        with self.lock:
            return self.pool.pop() if self.pool else None

    def give_back(self, reader: ReadOnlyConnection) -> bool:
        """Keep an idle reader for the next read-only open (False: close it)."""
        try:
            if reader.conn.in_transaction:
                reader.conn.execute("ROLLBACK")
        except sqlite3.Error:
            return False
        with self.lock:
            if self.closed or len(self.pool) >= READER_POOL_MAX:
                return False
            self.pool.append(reader)
            return True

    def take_writer(self, tag: Any) -> sqlite3.Connection | None:
        """The idle write connection opened for `tag` (agent id, busy timeout), if the database's
        schema is still the one it was given back with (no migration or other schema change by
        anyone meanwhile); None: open one."""
        with self.lock:
            kept, self._writer = self._writer, None
        if kept is None:
            return None
        conn, kept_tag, schema = kept
        try:
            if kept_tag == tag and not self.closed and _schema_stamp(conn) == schema:
                return conn
        except sqlite3.Error:
            pass
        conn.close()
        return None

    def give_writer(self, conn: sqlite3.Connection, tag: Any) -> bool:
        """Keep an idle write connection for the next writable open of this database (False:
        close it). Never one inside a transaction."""
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            schema = _schema_stamp(conn)
        except sqlite3.Error:
            return False
        with self.lock:
            if self.closed or self._writer is not None:
                return False
            self._writer = (conn, tag, schema)
            return True

    def shut(self) -> None:
        with self.lock:
            self.closed = True
            readers, self.pool = self.pool, []
            for reader in readers:
                reader.conn.close()
            if self._writer is not None:
                self._writer[0].close()
                self._writer = None
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
        with self._checkpoint_lock:
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None

    def version(self) -> int:
        with self.lock:
            return cast(int, self.conn.execute("PRAGMA data_version").fetchone()[0])


def _schema_stamp(conn: sqlite3.Connection) -> tuple[int, int]:
    """(schema cookie, user_version): both change when anyone migrates the database."""
    row = conn.execute("SELECT * FROM pragma_schema_version, pragma_user_version").fetchone()
    return int(row[0]), int(row[1])


_LIVE = {"enabled": 0}  # how many live servers run in this process
READER_POOL_MAX = 8  # idle read-only connections kept per database in a live process
# A live process's write connections checkpoint the WAL only past this many pages (a safety net:
# the process checkpoints in the background, `checkpoint_live_databases`).
LIVE_WAL_AUTOCHECKPOINT = 16000
_REALPATHS: dict[str, str] = {}  # keeper lookups: a path as given -> its real path (live mode)
_KEEPERS: dict[str, _Keeper] = {}
_KEEPERS_LOCK = threading.Lock()


def enable_live_reads() -> None:
    """For a process that writes while it serves reads (the Gateway): read-only opens of WAL
    databases keep a connection open per database (see `_Keeper`) instead of reading immutably.
    Pair with `disable_live_reads()` when the server stops."""
    with _KEEPERS_LOCK:
        _LIVE["enabled"] += 1


def disable_live_reads() -> None:
    """The last live server stopped: close the keepers (their databases checkpoint as usual)."""
    with _KEEPERS_LOCK:
        _LIVE["enabled"] = max(0, _LIVE["enabled"] - 1)
        if _LIVE["enabled"]:
            return
        keepers = list(_KEEPERS.values())
        _KEEPERS.clear()
    for keep in keepers:
        keep.shut()


def keeper(path: Path, timeout_ms: int = 60000) -> _Keeper | None:
    """The live process's keeper of `path` (opened on first use); None outside live mode."""
    if not _LIVE["enabled"]:
        return None
    key = _REALPATHS.get(str(path))
    if key is None:  # realpath is one lstat per path component: once per path, not per open
        key = os.path.realpath(path)
        if len(_REALPATHS) > 4096:
            _REALPATHS.clear()
        _REALPATHS[str(path)] = key
    inode = _inode(key)
    if inode is None:
        return None  # gone: never create a file by opening it
    found = _KEEPERS.get(key)
    if found is None or found.inode != inode:
        with _KEEPERS_LOCK:
            found = _KEEPERS.get(key)
            if found is not None and found.inode != inode:
                # the file was replaced (an agent deleted and created again): the old keeper
                # watches a dead inode; its cached facts and data_version say nothing now (dropped,
                # not closed: a thread may still hold it; its connection closes when released)
                del _KEEPERS[key]
                found.closed = True  # its pooled readers are closed as they come back
                found = None
            if found is None:
                conn = sqlite3.connect(
                    key, isolation_level=None, timeout=timeout_ms / 1000, check_same_thread=False
                )
                conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # maps the WAL index
                found = _KEEPERS[key] = _Keeper(conn, inode, key)
    return found


def checkpoint_live_databases() -> None:
    """Checkpoint every database a live process keeps (the Gateway, between requests): its write
    connections checkpoint only past LIVE_WAL_AUTOCHECKPOINT, so a commit never pays for copying
    the WAL and its fsync (~1 % of patches did, the p99 of sessions.patch). A database that is
    busy or gone is skipped until the next round."""
    with _KEEPERS_LOCK:
        keepers = list(_KEEPERS.values())
    for keep in keepers:
        try:
            keep.checkpoint()
        except sqlite3.Error:
            pass


def peek_version(path: str) -> tuple[Any, int] | None:
    """(inode, `PRAGMA data_version`) of the keeper a live process already has for `path`, read
    without opening anything and without waiting (None when there is no keeper, the file was
    replaced, or another thread is using the keeper now): what an event loop may call."""
    if not _LIVE["enabled"]:
        return None
    key = _REALPATHS.get(path)
    found = _KEEPERS.get(key) if key is not None else None
    if found is None or found.closed or _inode(found.conn_path) != found.inode:
        return None
    if not found.lock.acquire(blocking=False):
        return None
    try:
        return (found.inode, cast(int, found.conn.execute("PRAGMA data_version").fetchone()[0]))
    except sqlite3.Error:
        return None
    finally:
        found.lock.release()


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def cached_fact(path: Path, key: Any, compute: Any) -> Any:
    """`compute()` remembered per database until another connection commits (live mode only).
    Call it inside a read transaction that has already read (its snapshot is then at least as new
    as the version checked). The version is read before and after computing; a commit in between
    is not cached."""
    keep = keeper(path)
    if keep is None:
        return compute()
    before = keep.version()
    hit = keep.cache.get(key)
    if hit is not None and hit[0] == before:
        return hit[1]
    value = compute()
    if keep.version() == before:
        if len(keep.cache) > 64:
            keep.cache.clear()
        keep.cache[key] = (before, value)
    return value


def open_readonly(path: Path, *, timeout_ms: int = 60000) -> ReadOnlyConnection:
    """Open a database for reading without ever creating or modifying a file next to it.

    SQLite opens a WAL database read-only only where it can use (or create) the `-shm` file. So:
    - no WAL content (no `-wal`, or an empty one without `-shm`): `immutable=1` — the main file
      is the whole truth and nothing is created;
    - `-wal` and `-shm` both present (a live OpenClaw process, or an unclean stop): `mode=ro`,
      which joins the existing shared-memory index and creates nothing;
    - `-wal` with data but no `-shm` (crashed writer), or `mode=ro` failing because the directory
      is read-only: copy the database and its WAL into a private temp dir and read the copy.
    Caveat of `immutable=1`: a writer that starts while we read is not seen; reads are short.
    """
    header = read_header(path)
    keep = keeper(path, timeout_ms) if header is not None and header.wal else None
    if keep is not None:
        pooled = keep.take()
        if pooled is not None:
            return pooled
        conn = _connect_uri(_uri(path, mode="ro"), timeout_ms)  # a WAL reader beside the keeper
        return ReadOnlyConnection(_checked(conn, path), None, "ro", pool=keep)
    wal = Path(f"{path}-wal")
    shm = Path(f"{path}-shm")
    if header is None or not header.wal:
        # rollback-journal (or empty) database: without a hot journal the file is the whole truth
        if Path(f"{path}-journal").exists():
            return ReadOnlyConnection(
                _checked(_connect_uri(_uri(path, mode="ro"), timeout_ms), path), None, "ro"
            )
        return _immutable(path, timeout_ms)
    wal_size = wal.stat().st_size if wal.exists() else None
    has_shm = shm.exists()
    if wal_size is None or (wal_size == 0 and not has_shm):
        return _immutable(path, timeout_ms)
    if has_shm:
        conn = _connect_uri(_uri(path, mode="ro"), timeout_ms)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return ReadOnlyConnection(conn, None, "ro")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if is_busy_error(exc):
                raise busy_error(path, timeout_ms) from None
            # e.g. a read-only directory with no live writer (SQLITE_READONLY_CANTINIT):
            # fall through to a private snapshot
    return _snapshot(path, wal, timeout_ms)


def _immutable(path: Path, timeout_ms: int) -> ReadOnlyConnection:
    conn = _connect_uri(_uri(path, mode="ro", immutable="1"), timeout_ms)
    return ReadOnlyConnection(_checked(conn, path), None, "immutable")


def _checked(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """Touch the schema so a corrupt/non-database file fails now, with a typed error."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise translate_error(exc, path, 0) from None
    return conn


def _snapshot(path: Path, wal: Path, timeout_ms: int) -> ReadOnlyConnection:
    import shutil  # lazy, as tempfile: only read-only snapshots need them
    import tempfile  # (it imports random)

    tmp = Path(tempfile.mkdtemp(prefix="openclaw-cli-ro-"))
    try:
        os.chmod(tmp, 0o700)
        copy = tmp / path.name
        shutil.copyfile(path, copy)
        if wal.exists():
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        conn = _connect_uri(_uri(copy, mode="ro"), timeout_ms)
        return ReadOnlyConnection(_checked(conn, path), tmp, "snapshot")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def reclaim_free_pages(conn: sqlite3.Connection) -> bool:
    """The 2026.9.6+ disk budget's page reclamation: checkpoint the WAL into the main file
    (TRUNCATE without waiting for readers; else a PASSIVE one that must copy every frame), then
    return free pages to the file system where the database allows it (`auto_vacuum =
    INCREMENTAL`, as OpenClaw creates its databases) and checkpoint that too. False when a
    checkpoint left frames behind (a reader holds them): the caller defers, as OpenClaw does."""
    previous = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:

        def checkpoint() -> bool:
            busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return bool(log < 0 or done >= log)  # (-1: not in WAL mode, nothing to copy)

        if not checkpoint():
            return False
        if (
            conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
            and conn.execute("PRAGMA freelist_count").fetchone()[0]
        ):
            # (executescript steps the statement to the end; one execute frees a single page)
            conn.executescript("PRAGMA incremental_vacuum;")
            return checkpoint()
        return True
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(previous)}")


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


# ---- per-event facts computed at write time ------------------------------------------------------


def now_ms() -> int:
    return clock.now_ms()


_INT64_MAX = 2**63 - 1


def finite_number(value: Any) -> int | float | None:
    """A JSON number usable as an SQLite projection (bools, NaN/inf and >64-bit ints excluded)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -_INT64_MAX <= value <= _INT64_MAX else None
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    return None


def ms_int(value: Any) -> int | None:
    """A number usable as an INTEGER column (epoch ms): finite and within 64 bits, else None."""
    number = finite_number(value)
    if number is None or not -_INT64_MAX <= number <= _INT64_MAX:
        return None
    return int(number)


def timestamp_ms(value: Any) -> int | None:
    """An event `timestamp`: epoch ms number or a parseable ISO string (OpenClaw S-4)."""
    number = finite_number(value)
    if number is not None:
        return ms_int(number)
    if isinstance(value, str) and value:
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    return None


_IMAGE_CHARS = 4800  # profile L: 1200 tokens per image (compaction-lifecycle.md R4.4.3)


def _content_chars(content: Any) -> int:
    """Weighted chars (`textweight`) of message content: the figure compaction's estimate counts."""
    if isinstance(content, str):
        return weighted_chars(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            total += weighted_chars(text) if isinstance(text, str) else 0
        elif kind == "thinking":
            text = block.get("thinking")
            total += weighted_chars(text) if isinstance(text, str) else 0
        elif kind == "toolCall":
            name = block.get("name")
            total += weighted_chars(name) if isinstance(name, str) else 0
            try:
                total += weighted_chars(orjson.dumps(block.get("arguments", {})).decode())
            except TypeError:
                pass
        elif kind == "image":
            total += _IMAGE_CHARS
    return total


# the event types whose estimate can be non-zero (every other type counts 0): callers may skip the rest
ESTIMATED_KINDS = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def event_token_estimate(obj: Any) -> int:
    """The labelled token estimate of one transcript event (compaction-lifecycle.md R4.4.1–R4.4.4,
    profile L; the figure `compaction.tokens` estimates): `ceil(weighted chars / 4)` per message,
    chars counted from message content (text, thinking, tool-call name + JSON arguments, 4800 per
    image), summaries for compaction/branch summaries, non-Latin scripts weighted as tokenizers
    count them (`textweight`). Header and bookkeeping entries count 0. Kept per session at write
    time so thresholds never rescan (figures written by older versions stay chars/4)."""
    if not isinstance(obj, dict):
        return 0
    kind = obj.get("type")
    if kind == "message":
        message = obj.get("message")
        if not isinstance(message, dict) or message.get("excludeFromContext") is True:
            return 0
        role = message.get("role")
        if role == "bashExecution":
            chars = sum(
                weighted_chars(message[k]) for k in ("command", "output") if isinstance(message.get(k), str)
            )
        elif role in ("branchSummary", "compactionSummary"):
            summary = message.get("summary")
            chars = weighted_chars(summary) if isinstance(summary, str) else 0
        else:
            chars = _content_chars(message.get("content"))
    elif kind in ("compaction", "branch_summary"):
        summary = obj.get("summary")
        chars = weighted_chars(summary) if isinstance(summary, str) else 0
    elif kind == "custom_message":
        chars = _content_chars(obj.get("content"))
    else:
        return 0
    return (chars + 3) // 4


def message_token_estimate(obj: dict[str, Any]) -> int:
    """`event_token_estimate(obj)` of an event of type "message" (the caller checked the type): the
    common message — a plain dict of text blocks — counted inline, anything else as there."""
    message = obj.get("message")
    if message.__class__ is not dict or message.get("role") in _OTHER_ROLES:
        return event_token_estimate(obj)
    if message.get("excludeFromContext") is True:
        return 0
    content = message.get("content")
    if content.__class__ is not list:
        return (_content_chars(content) + 3) // 4
    chars = 0
    for block in content:
        if block.__class__ is dict and block.get("type") == "text":
            text = block.get("text")
            if text.__class__ is str and text.isascii():
                chars += len(text)
                continue
        chars += _content_chars([block])
    return (chars + 3) // 4


_OTHER_ROLES = ("bashExecution", "branchSummary", "compactionSummary")  # estimated otherwise


# ---- archive files -------------------------------------------------------------------------------

_ARCHIVE_NAME = lazy_pattern(
    globals(),
    "_ARCHIVE_NAME",
    r"^(?P<stem>.+?)\.(?P<reason>deleted|reset|bak)\."
    r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{1,3})?Z)(?:\.[0-9a-f]{32})?(?P<zst>\.zst)?$",
)
_STORE_BACKUP = lazy_pattern(globals(), "_STORE_BACKUP", r"^sessions\.json\.bak\.(?P<n>\d+)$")


def _archive_ts(stamp: str) -> int | None:
    date, _, time_part = stamp.partition("T")
    try:
        dt = datetime.fromisoformat(f"{date}T{time_part[:-1].replace('-', ':')}+00:00")
    except ValueError:
        return None
    return int(dt.timestamp() * 1000)


def list_archive_files(directory: Path) -> list[ArchiveFile]:
    """Archive artifacts in a sessions dir (maintenance.md §7.2). Prefers `store/archives.py`
    (another module owns the naming rules); this fallback keeps listing usable without it."""
    if not directory.is_dir():
        return []
    archives_mod: Any
    try:
        from openclaw_cli.store import archives as archives_mod
    except ImportError:
        archives_mod = None
    lister = getattr(archives_mod, "list_archives", None) if archives_mod is not None else None
    if callable(lister):
        return list(lister(directory))
    return _fallback_list_archives(directory)


def _fallback_list_archives(directory: Path) -> list[ArchiveFile]:
    out: list[ArchiveFile] = []
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return out
    for child in children:
        name = child.name
        try:
            if child.is_symlink() or not child.is_file():
                continue
            size = child.stat().st_size
        except OSError:
            continue
        backup = _STORE_BACKUP.match(name)
        if backup:
            out.append(ArchiveFile(child, None, "bak", None, False, size))
            continue
        match = _ARCHIVE_NAME.match(name)
        if not match:
            continue
        stem = match.group("stem")
        session_id = stem[: -len(".jsonl")] if stem.endswith(".jsonl") else None
        out.append(
            ArchiveFile(
                child,
                session_id,
                match.group("reason"),
                _archive_ts(match.group("ts")),
                bool(match.group("zst")),
                size,
            )
        )
    return out


def sessions_dir_for(db_path: Path) -> Path:
    """maintenance.md §0: the store's directory, or its sibling `sessions` when it is named `agent`."""
    parent = db_path.parent
    return parent.parent / "sessions" if parent.name == "agent" else parent


@contextmanager
def write_transaction(
    store: TransactionalDb,
    *,
    begin_error_writing: bool = True,
    before: Callable[[], None] | None = None,
    after: Callable[[], None] | None = None,
    aborted: Callable[[], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` on `store._db()` (nested uses join the outer one, counted in
    `store._depth`), COMMIT when the body ends, ROLLBACK when it raises; SQLite's errors become
    typed ones. The one write transaction of both SQLite stores: `before` runs first inside it,
    `after` last, `aborted` when it rolls back (the real OpenClaw database's backup, projections
    and validation queue)."""
    conn = store._db()
    if store._depth:
        store._depth += 1
        try:
            yield conn
        finally:
            store._depth -= 1
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise translate_error(exc, store.path, store.busy_timeout_ms, writing=begin_error_writing) from None
    store._depth = 1
    try:
        if before is not None:
            before()
        yield conn
        if after is not None:
            after()
    except BaseException as exc:
        store._depth = 0
        if aborted is not None:
            aborted()
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise translate_error(exc, store.path, store.busy_timeout_ms, writing=True) from None
        raise
    store._depth = 0
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise translate_error(exc, store.path, store.busy_timeout_ms, writing=True) from None
