"""The import's parser process (issue 30): a second process reads, hashes and parses the
transcripts of a fresh store's import into rows while the importing process inserts them.

One core spends an import of *many* mostly in Python per line (checks, `orjson`, the rows) and an
import of *big* in reading, sha256 and parsing; SQLite's inserts can take the other core's time
only if that work moves out of the inserting process (a thread would wait for the GIL on every row
it binds). The importing process stays the only writer and keeps everything that decides: it sends
`(path, session id)` jobs in record order, a bounded window ahead, and takes the results in the same
order as it imports each record, so the crash checkpoints, Ctrl-C's safe points, the progress and
the per-record bookkeeping run exactly where and when they ran before. A file is read whole once:
its sha256 (D6's identity), the fingerprint checks before/after and the rows of its lines
(`store.sqlite.lines.gather_lines`, the same code the store runs in-process) come from one read.

What the parser does not take (a file over `PARSER_FILE_LIMIT`, a record the store must merge) the
importing process reads itself, as before. Memory stays bounded: the parser holds one file and its
rows, the pipes at most `PIPE_BYTES` of results and `WINDOW_JOBS` jobs. The parser ignores SIGINT
(the importing process decides, at its next safe point, and then stops it); it exits when its
input ends or its output is gone (a killed importer: nothing is left running).

Messages are `marshal`led (lists, tuples, str, int: faster than pickle both ways), each preceded
by its length (8 bytes, little-endian).
"""

from __future__ import annotations

import errno
import hashlib
import marshal
import os
import select
import signal
import struct
import subprocess
import sys
from collections import deque
from typing import IO, Any

from openclaw_cli.migration.publish import ArtifactError, fingerprint, open_regular_nofollow

READ_CHUNK = 8 * 1024 * 1024
PARSER_FILE_LIMIT = 16 * 1024 * 1024  # larger transcripts are read by the importing process itself
WINDOW_JOBS = 256  # jobs sent ahead of the record being imported
# ... and their bytes: half the jobs' pipe (32 KiB of the default 64 KiB), so that sending never
# blocks (a job is at most ENTRY_SEND_MAX plus a path and a key beyond the window)
WINDOW_JOB_BYTES = 32 * 1024
ENTRY_SEND_MAX = 16 * 1024  # a larger entry's rows are computed by the importing process
PIPE_BYTES = 1024 * 1024  # both pipes (F_SETPIPE_SZ when allowed): how far the parser runs ahead
_LENGTH = struct.Struct("<Q")
_READ_BYTES = 256 * 1024  # the answers read from the pipe at once
# a file's identity as the importing process keeps it (`importer.RecState.packed_identity`): dev,
# ino, mtime (ns), size and the raw sha256, packed here so that it crosses the pipe as one bytes
IDENTITY = struct.Struct("<QQqQ32s")
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032  # Linux fcntl

OK, MISSING, UNREADABLE, CHANGED, INLINE, OS_ERROR, INVALID, FAILED, SEALED = range(9)
FINISH = "finish"  # the importing process's last message: seal the rows file being written
# After the last record, verification's read-back scan of the private build (`verify.scan_wanted`)
# runs here while the importing process plans the archive: `(SCAN, part, None)` messages carry the
# sessions wanted, `(SCAN, part, (db, full_scan_min))` the last part; answered by
# `(SCANNED, settlements, unsettled)`.
SCAN = "scan"
SCANNED = 9
# Then the archive's publication: `(MOVE, moves, (mode, parent))` asks the parser to publish a part
# of a batch (`publish.publish_batch`: every check of A-4, the links, unlinks and directory syncs)
# while the importing process publishes the rest; answered by `(MOVED, done, failed)` (positions in
# the part; failed with their errors). The moves are planned and durable in the manifest before
# the parser never outlives the importing process mid-part (`_publish_part`).
MOVE = "move"
MOVED = 10
# test hook: the whole import killed at the parser's k-th point in its parts (`_MovePoints`)
MOVE_CRASH_ENV = "OPENCLAW_IMPORT_PARSER_CRASH_AT"
# Before its setup, the parser may be asked to read `sessions.json` (`(INDEX, path)`, issue 30: the
# import's serial head): it is started before the space check, and reads the index member by member
# (`index_stream.index_parts`) while the importing process lists the sessions directory and builds
# the records from the parts as they come, each answered as `(INDEXED, *part)`. Whatever is not the
# plain case is answered `(INDEXED, "fallback", why)`: the importing process then reads it itself.
INDEX = "index"
INDEXED = 11
# The rows of the transcripts the parser reads go into files of their own (`RowsFiles`), each
# closed once it holds this many bytes of lines: the importing process copies a closed file into
# its build with one `INSERT ... SELECT` per table instead of binding every row itself. A file
# closed before the last record is copied beside the records that follow (`_BulkState.copy_rows`);
# the last one after them, alone: 16 MiB rather than 32 halves that serial copy (issue 30, *many*,
# 5 alternating pairs: the last copy to the bulk's end 0.48 -> 0.34 s CPU, medians).
ROWS_FILE_BYTES = 16 * 1024 * 1024
ROWS_PAGE_SIZE = 65536  # the rows files' page size (SQLite's largest)
ENTRY_ROWS_BATCH = 256  # entries' rows held by the parser per executemany into its rows file
_NODE_BYTES = 14  # entry_bytes in a `node_row`
ENTRY_ROWS_ALLOWANCE = 256  # bytes counted per record's entry rows beyond the entry's JSON


# ---- reading one transcript (shared with the importing process's own reads) -----------------------


def open_transcript(path: str) -> tuple[int, os.stat_result] | str | None:
    """An open no-follow descriptor of a regular file and its stat; None when it is missing; the
    reason (str) when it cannot be read. A process limit (EMFILE, ENFILE, ENOMEM) raises: every
    later open fails too."""
    try:
        return open_regular_nofollow(path)  # type: ignore[arg-type]  # os.open takes str too
    except ArtifactError as exc:
        return str(exc)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
            raise
        return f"{path}: {exc.strerror or exc}"


def read_whole(fd: int, before: os.stat_result, path: str) -> bytes | None:
    """The whole file of `fd` (closed here), or None when it changed while it was read (its
    fingerprint moved, or the name no longer names it): never import a file that moved under us."""
    try:
        # one read of size + 1 normally ends at EOF; a short read or a file that grew meanwhile
        # is read on to its end (and a grown file is then caught by the fingerprint check)
        first = os.read(fd, before.st_size + 1)
        chunks = [first]
        if len(first) != before.st_size:
            while chunk := os.read(fd, READ_CHUNK):
                chunks.append(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    del chunks
    try:
        now = os.lstat(path)
    except OSError:
        return None
    if fingerprint(before) != fingerprint(after) or fingerprint(now) != fingerprint(before):
        return None
    return data


# ---- the parser's side -------------------------------------------------------------------------------


class _Counts:
    __slots__ = ("issue", "lines_read", "quarantined")

    def __init__(self) -> None:
        self.lines_read = 0
        self.quarantined = 0
        self.issue: Any = None


# what a job asks of the record's entry (its `session_nodes` and `session_windows` rows)
ENTRY_NONE, ENTRY_NO_ROWS, ENTRY_BYTES = range(3)  # no entry: a window only; the importer's; from bytes


_code: Any = None  # the modules of the per-record work, once loaded (`_row_code`)


def _row_code() -> Any:
    """`store.sqlite.lines` and `migration.index_stream`, imported on the first record rather than
    at start-up (the parser reads the index first) and kept: an `import` statement run per record
    cost ~20,000 instructions each time (the import system's checks, an AttributeError formatted
    for the module's missing `__path__`), 3 a record — ~7 % of the parser's work (issue 30)."""
    global _code
    if _code is None:
        from openclaw_cli.migration import index_stream
        from openclaw_cli.store.sqlite import lines

        _code = (lines, index_stream)
    return _code


def entry_rows(sid: str, key: str, how: int, entry_data: bytes | None, mtime_ns: int) -> tuple[Any, Any]:
    """(node row or None, window row) of a record as the store computes them (`lines.node_row`,
    `lines.window_row`, the file's mtime as the fallback time); (None, None) when the importing
    process computes them itself (an entry it holds, or one that does not parse as an object: the
    importing process then meets it as it did before)."""
    lines, index_stream = _code or _row_code()
    if how == ENTRY_NONE:
        return None, lines.window_row(sid, key, None, fallback_ms=mtime_ns // 1_000_000)
    if how != ENTRY_BYTES or entry_data is None:
        return None, None
    try:
        entry = index_stream.parse_entry(entry_data)
        if not isinstance(entry, dict):
            return None, None
        node = lines.node_row(key, entry, lines.encode_entry(entry))
        window = lines.window_row(sid, key, entry, fallback_ms=mtime_ns // 1_000_000)
    except Exception:  # noqa: BLE001 - whatever it is, the importing process meets it itself
        return None, None
    return node, window


def parse_one(
    path: str,
    sid: str,
    policy: Any,
    limit_rows: int,
    file_limit: int,
    key: str = "",
    how: int = ENTRY_NO_ROWS,
    entry_data: bytes | None = None,
    sink: RowsFiles | None = None,
    rowid: int | None = None,
) -> tuple[Any, ...]:
    """One job: the message the importing process turns back into the record's state and rows:
    (OK, identity, ends with a newline, pieces of the split, rows, lines read, quarantined, issue,
    node, window, written). The identity is `IDENTITY` packed (a tuple with the sha256 in hex when
    it does not pack). With a `sink` the rows go into its rows file and the message carries,
    instead of the chunks, the file's number (-1: no row) and the totals: (file, first created,
    newest, events, bytes, tokens, compactions); and with a `rowid` the entry's rows go there too
    (`node` and `window` None; `written`: the node's entry bytes, 0 for a window only, -1 when
    they are sent as `node` and `window`)."""
    lines_code = (_code or _row_code())[0]
    opened = open_transcript(path)
    if opened is None:
        return (MISSING,)
    if isinstance(opened, str):
        return (UNREADABLE, opened)
    fd, before = opened
    if before.st_size > file_limit:
        os.close(fd)
        return (INLINE,)
    data = read_whole(fd, before, path)
    if data is None:
        return (CHANGED, before.st_mtime_ns)
    sha = hashlib.sha256(data).digest()
    lines = data.split(b"\n")
    nsplit = len(lines)
    ends_nl = data.endswith(b"\n")
    del data
    chunks: list[Any] = []
    counts = _Counts()
    hand_over: Any = lambda *chunk: chunks.append(chunk)  # noqa: E731
    if sink is not None:
        totals = _RowTotals(sink)
        hand_over = totals.add
    lines_code.gather_lines(
        counts,
        sid,
        lines,
        source=path,
        policy=policy,
        seq=0,
        newest=before.st_mtime_ns // 1_000_000,  # the store's fallback: the record's created_at_ms
        limit_rows=limit_rows,
        hand_over=hand_over,
        merged=sink is not None,  # a rows file holds each line's identity in its event row
    )
    issue = counts.issue
    rows: Any = chunks
    node, window = entry_rows(sid, key, how, entry_data, before.st_mtime_ns)
    written = -1
    if sink is not None:
        if window is not None and rowid is not None:  # the record's rows all in one file
            mtime_ms = before.st_mtime_ns // 1_000_000
            window = lines_code.window_with_totals(
                window, mtime_ms, totals.first, totals.newest, totals.totals()
            )
            totals.file = sink.entry(rowid, node, window)
            written = 0 if node is None else node[_NODE_BYTES]
            node = window = None
        rows = totals.message()
        sink.record_done()
    try:
        identity: Any = IDENTITY.pack(before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, sha)
    except struct.error:  # not what a stat gives: sent as it is
        identity = (before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, sha.hex())
    return (
        OK,
        identity,
        ends_nl,
        nsplit,
        rows,
        counts.lines_read,
        counts.quarantined,
        None if issue is None else (issue.line, issue.message),
        node,
        window,
        written,
    )


class RowsFiles:
    """The parser's rows files: `<base><n>`, numbered from 0, each an SQLite file of three plain
    tables (`ev`: the columns of `transcript_events` with each line's identity, `event_id` NULL for
    a line without one; `nd`, `wn`: the rowid and the columns of `session_nodes` and
    `session_windows`; no index, no type affinity: values kept as bound). A file is closed (`record_done`) after the
    record that took it past `ROWS_FILE_BYTES`, so one record's rows are always in one file; a
    record's message names its file and the importing process copies a file once a later one is
    named (or at `FINISH`). The files belong to the private build (named after it) and go with it:
    the importing process removes each once copied, `staging.discard` whatever a stopped run left."""

    def __init__(self, base: str, file_bytes: int = ROWS_FILE_BYTES) -> None:
        self.base = base
        self.file_bytes = file_bytes
        self.number = -1
        self.conn: Any = None
        self.bytes = 0
        self.nodes: list[tuple[Any, ...]] = []  # entries' rows not inserted yet (`entry`)
        self.windows: list[tuple[Any, ...]] = []

    def open(self) -> int:
        if self.conn is None:
            import sqlite3

            from openclaw_cli.store.sqlite.lines import bind_none_as_null

            bind_none_as_null()
            self.number += 1
            path = f"{self.base}{self.number}"
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            conn = sqlite3.connect(path, isolation_level=None)
            # large pages: a transcript line (~0.2-2 KB) never spills into an overflow page, and
            # writing here and the importing process's reads of the closed file take a system
            # call per 64 KiB (the rows' inserts ~20 % cheaper; issue 30)
            conn.execute(f"PRAGMA page_size = {ROWS_PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode = OFF")  # a file nobody reads until it is closed
            conn.execute("PRAGMA synchronous = OFF")
            # a line's event row and its identity in one row (`gather_lines(merged=True)`): the
            # importing process copies `transcript_event_identities` from the rows with an
            # `event_id` — one row bound and stored here a line instead of two (issue 30)
            conn.execute(
                "CREATE TABLE ev(session_id, seq, created_at, event_utf8_bytes, event_type, event_id, "
                "parent_id, event_json)"
            )
            # the entries' rows at their records' rowids (`at`), copied with `SELECT *`: the rowid,
            # then a `node_row`'s 16 columns / a window row's 15 (`lines.window_with_totals`)
            conn.execute(f"CREATE TABLE nd(at, {', '.join(f'n{i}' for i in range(16))})")
            conn.execute(f"CREATE TABLE wn(at, {', '.join(f'w{i}' for i in range(15))})")
            conn.execute("BEGIN")
            self.conn, self.bytes = conn, 0
        return self.number

    def insert(self, events: list[tuple[Any, ...]], nbytes: int) -> None:
        """Lines' rows as `gather_lines(merged=True)` makes them."""
        self.conn.executemany("INSERT INTO ev VALUES (?,?,?,?,?,?,?,?)", events)
        self.bytes += nbytes

    def entry(self, rowid: int, node: tuple[Any, ...] | None, window: tuple[Any, ...]) -> int:
        """A record's entry rows (its node row, None: none; its window row with its totals) at its
        rowid, into the file being written (opened if none is); the file's number."""
        number = self.open()
        if node is not None:
            self.nodes.append((rowid, *node))
            self.bytes += node[_NODE_BYTES]
        self.windows.append((rowid, *window))
        self.bytes += ENTRY_ROWS_ALLOWANCE  # toward the file's size (the space pre-check's bound)
        if len(self.windows) >= ENTRY_ROWS_BATCH:
            self._insert_entries()
        return number

    def _insert_entries(self) -> None:
        if self.nodes:
            self.conn.executemany(f"INSERT INTO nd VALUES ({','.join('?' * 17)})", self.nodes)
            self.nodes = []
        if self.windows:
            self.conn.executemany(f"INSERT INTO wn VALUES ({','.join('?' * 16)})", self.windows)
            self.windows = []

    def record_done(self) -> None:
        if self.conn is not None and self.bytes >= self.file_bytes:
            self.close()

    def finish(self) -> int:
        """After the last record (`FINISH`): close the file being written, if any; the number of the
        last file opened (-1: none), which its last record named — closed already when that record
        took it past `file_bytes` (`record_done`), and not copied yet either way."""
        self.close()
        return self.number

    def close(self) -> int:
        """Close the file being written; its number (-1: none is open)."""
        if self.conn is None:
            return -1
        self._insert_entries()
        self.conn.execute("COMMIT")
        self.conn.close()
        self.conn = None
        return self.number


class _RowTotals:
    """One record's rows into the rows file, and their totals for the importing process."""

    __slots__ = ("compactions", "events", "file", "first", "nbytes", "newest", "sink", "tokens")

    def __init__(self, sink: RowsFiles) -> None:
        self.sink = sink
        self.file = -1
        self.first: int | None = None
        self.newest = 0
        self.events = self.nbytes = self.tokens = self.compactions = 0

    def add(
        self,
        events: list[tuple[Any, ...]],
        identities: list[tuple[Any, ...]],
        _seq: int,
        newest: int,
        nbytes: int,
        tokens: int,
        compactions: int,
    ) -> None:
        self.newest = newest
        if not events:
            return
        if self.first is None:
            self.first = events[0][2]
            self.file = self.sink.open()
        self.sink.insert(events, nbytes)  # (identities: empty, each in its event's row)
        self.events += len(events)
        self.nbytes += nbytes
        self.tokens += tokens
        self.compactions += compactions

    def totals(self) -> tuple[int, int, int, int]:
        return (self.events, self.nbytes, self.tokens, self.compactions)

    def message(self) -> tuple[Any, ...]:
        return (self.file, self.first, self.newest, self.events, self.nbytes, self.tokens, self.compactions)


def _read_message(stream: IO[bytes] | _ResultReader) -> Any:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return marshal.loads(body)


def _write_message(stream: IO[bytes], message: Any) -> None:
    body = marshal.dumps(message)
    stream.write(_LENGTH.pack(len(body)))
    stream.write(body)


class _MovePoints:
    """The parser's points in its part of a publication (after each link and each unlink, as the
    importing process's own): the importing process gone (killed), the parser stops at once — a
    re-run that finds the store's lock free must never race it; a kill here leaves what a kill of
    the import leaves there (a name pair `reconcile_pair` settles, or a move not yet recorded)."""

    __slots__ = ("crash_at", "parent", "passed")

    def __init__(self, parent: int) -> None:
        self.parent = parent
        raw = os.environ.get(MOVE_CRASH_ENV, "").strip()
        self.crash_at = int(raw) if raw.isdigit() else None
        self.passed = 0

    def alive(self) -> None:
        if os.getppid() != self.parent:
            os._exit(1)  # the import was killed: nothing more is moved (its re-run settles this)

    def __call__(self, _label: str | None = None) -> None:
        self.alive()
        self.passed += 1
        if self.passed == self.crash_at:  # the whole import killed at this instant
            os.kill(self.parent, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)


_move_points: _MovePoints | None = None


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when the importing process dies (PR_SET_PDEATHSIG),
    so a kill -9 of the import stops its part between two system calls; checked again at each point."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ValueError):
        pass  # elsewhere the points' parent check alone stops it


def _publish_part(moves: list[Any], mode: int | None, parent: int) -> tuple[Any, ...]:
    """A part of a publication batch: each `(source, dest, dev, ino, mtime_ns, size)` published as
    the importing process publishes its own (`publish.publish_batch`, the same code and checks);
    `(MOVED, done positions, [(position, error)] failed)`."""
    global _move_points
    from openclaw_cli.migration.publish import Identity, Move, publish_batch

    if _move_points is None:
        _die_with_parent(parent)
        _move_points = _MovePoints(parent)
    points = _move_points
    points.alive()  # the importing process already gone: nothing is linked
    part = [
        Move(source, dest, Identity(dev, ino, mtime_ns, size, ""), payload=n)
        for n, (source, dest, dev, ino, mtime_ns, size) in enumerate(moves)
    ]
    result = publish_batch(part, checkpoint=points, mode=mode)
    return (
        MOVED,
        [move.payload for move in result.done],
        [(move.payload, move.error) for move in result.failed],
    )


def _answer_index(out: IO[bytes], path: str) -> None:
    """`(INDEX, path)`: the index's parts, each flushed as soon as it is read (the importing process
    builds its records from one while the next is read); a failure is a fallback, not an error."""
    try:
        from openclaw_cli.migration.index_stream import index_parts

        for part in index_parts(path):
            _write_message(out, (INDEXED, *part))
            out.flush()
    except BrokenPipeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the importing process then reads the index itself
        _write_message(out, (INDEXED, "fallback", f"{type(exc).__name__}: {exc}"))
        out.flush()


def main() -> int:
    """The parser: jobs on stdin, results on stdout, in order, until stdin ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importing process stops at a safe point, then us
    from openclaw_cli.errors import InvalidDataError

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    if not select.select([inp], [], [], 0)[0]:
        # started early (no setup yet): idle until the import holds the store's lock and may ask
        # for the index (INDEX), whose reader's modules (~5-9 ms) are loaded now, off its path
        import openclaw_cli.migration.index_stream  # noqa: F401
    try:
        setup = _read_message(inp)
        while isinstance(setup, tuple) and len(setup) == 2 and setup[0] == INDEX:
            _answer_index(out, setup[1])
            setup = _read_message(inp)
    except BrokenPipeError:  # the importing process is gone
        os._exit(0)
    if setup is None:
        return 0
    policy, limit_rows, file_limit, rows_base, rows_file_bytes = setup
    sink = RowsFiles(rows_base, rows_file_bytes) if rows_base is not None else None
    wanted: dict[str, Any] = {}
    try:
        while (job := _read_message(inp)) is not None:
            result: tuple[Any, ...]
            if len(job) == 3 and job[0] == SCAN:
                wanted.update(job[1])
                if job[2] is None:
                    continue  # more parts follow: nothing to answer yet
                try:
                    from openclaw_cli.migration.verify import scan_wanted

                    result = (SCANNED, *scan_wanted(job[2][0], wanted, job[2][1]))
                except Exception as exc:  # noqa: BLE001 - the importing process then scans itself
                    result = (FAILED, f"{type(exc).__name__}: {exc}")
                wanted = {}
                _write_message(out, result)
                out.flush()
                continue
            if len(job) == 3 and job[0] == MOVE:
                try:
                    result = _publish_part(job[1], *job[2])
                except Exception as exc:  # noqa: BLE001 - the importing process settles the part itself
                    result = (FAILED, f"{type(exc).__name__}: {exc}")
                _write_message(out, result)
                out.flush()
                continue
            if job == FINISH:
                try:
                    result = (SEALED, sink.finish() if sink is not None else -1)
                except Exception as exc:  # noqa: BLE001 - reported to the importing process, which fails typed
                    result = (FAILED, f"{type(exc).__name__}: {exc}")
                _write_message(out, result)
                out.flush()
                continue
            path, sid, key, how, entry_data, rowid = job
            try:
                result = parse_one(
                    path, sid, policy, limit_rows, file_limit, key, how, entry_data, sink, rowid
                )
            except OSError as exc:
                result = (OS_ERROR, exc.errno, exc.strerror, exc.filename)
            except InvalidDataError as exc:  # the "raise" policy: the record's import stops
                result = (INVALID, exc.message)
            except Exception as exc:  # noqa: BLE001 - reported to the importing process, which fails typed
                result = (FAILED, f"{type(exc).__name__}: {exc}")
            _write_message(out, result)
            out.flush()
    except BrokenPipeError:  # the importing process is gone: nothing to do (no flush at exit either)
        os._exit(0)
    return 0


# ---- the importing process's side ----------------------------------------------------------------------


class _ResultReader:
    """The parser's answers, read from its stdout pipe in large reads into a buffer of our own, so
    that whether the oldest answer has arrived whole can be asked without blocking (`ready`). Reads
    like a file (`read(n)`: n bytes, fewer only at the end of the stream) for `_read_message`."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream  # the pipe's file object (closed with this reader)
        self.fd = stream.fileno()
        self.buf = bytearray()
        self.pos = 0
        self.eof = False

    def fileno(self) -> int:
        return self.fd

    def _fill(self) -> None:
        if self.pos and self.pos * 2 >= len(self.buf):
            del self.buf[: self.pos]
            self.pos = 0
        chunk = os.read(self.fd, _READ_BYTES)
        if chunk:
            self.buf += chunk
        else:
            self.eof = True

    def read(self, size: int) -> bytes:
        while len(self.buf) - self.pos < size and not self.eof:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + size])
        self.pos += len(data)
        return data

    def _whole(self) -> bool:
        have = len(self.buf) - self.pos
        if have < _LENGTH.size:
            return False
        size: int = _LENGTH.unpack_from(self.buf, self.pos)[0]
        return have >= _LENGTH.size + size

    def ready(self) -> bool:
        """Whether the next message is here whole (or the stream ended): reading it will not wait."""
        if self.eof or self._whole():
            return True
        while select.select([self.fd], [], [], 0)[0]:
            self._fill()
            if self.eof or self._whole():
                return True
        return False

    def close(self) -> None:
        self.stream.close()


class ParserProcess:
    """The importing process's handle on the parser: `submit` jobs, `take` results in order."""

    def __init__(self, policy: str, limit_rows: int, rows_base: str | None = None, configure: bool = True):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openclaw_cli.migration.parser_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin, _ResultReader(self.proc.stdout)
        self.window_bytes = WINDOW_JOB_BYTES
        try:
            import fcntl

            fcntl.fcntl(self._out.fileno(), _F_SETPIPE_SZ, PIPE_BYTES)
            fcntl.fcntl(self._in.fileno(), _F_SETPIPE_SZ, PIPE_BYTES)
            self.window_bytes = max(WINDOW_JOB_BYTES, fcntl.fcntl(self._in.fileno(), _F_GETPIPE_SZ) // 2)
        except (OSError, ImportError):
            pass  # the default 64 KiB: the parser runs less far ahead
        self.pending: deque[int] = deque()  # bytes of each job not taken yet, in order
        self.pending_bytes = 0
        self.rows_base = rows_base  # set: the rows go into files `<rows_base><n>` (`RowsFiles`)
        if configure:
            self.configure(policy, limit_rows, rows_base)

    def configure(self, policy: str, limit_rows: int, rows_base: str | None = None) -> None:
        """The setup message (sent by the constructor unless `configure=False`: a parser started
        before the run knows its build's name, which may read the index first: `read_index`)."""
        self.rows_base = rows_base
        self._send((policy, limit_rows, PARSER_FILE_LIMIT, rows_base, ROWS_FILE_BYTES))

    def read_index(self, path: str) -> None:
        """Before `configure`: read `sessions.json` at `path` (`index_stream.index_parts`); its parts
        are taken with `index_message` before anything else."""
        self._send((INDEX, path))
        try:
            self._in.flush()
        except BrokenPipeError:
            raise self._stopped() from None

    def index_message(self) -> tuple[Any, ...]:
        """The next of the index's messages (`(INDEXED, kind, ...)`)."""
        message = _read_message(self._out)
        if message is None:
            raise self._stopped()
        return message  # type: ignore[no-any-return]

    def _send(self, message: Any) -> int:
        body = marshal.dumps(message)
        try:
            self._in.write(_LENGTH.pack(len(body)))
            self._in.write(body)
        except BrokenPipeError:
            raise self._stopped() from None
        return len(body) + _LENGTH.size

    def _stopped(self) -> RuntimeError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return RuntimeError(f"the import's parser process stopped (exit {code})")

    def room(self) -> bool:
        return len(self.pending) < WINDOW_JOBS and self.pending_bytes < self.window_bytes

    def submit(
        self, path: str, sid: str, key: str, how: int, entry_data: bytes | None, rowid: int | None = None
    ) -> None:
        """A job: the transcript at `path` of session `sid`, and the rows of its entry (`how`:
        ENTRY_NONE, ENTRY_NO_ROWS or ENTRY_BYTES with the entry's bytes), written into the rows
        file at `rowid` when it has one (else sent back)."""
        if entry_data is not None and len(entry_data) > ENTRY_SEND_MAX:
            how, entry_data = ENTRY_NO_ROWS, None
        size = self._send((path, sid, key, how, entry_data, rowid))
        self.pending.append(size)
        self.pending_bytes += size

    def ready(self) -> bool:
        """Whether the oldest job's answer has arrived (`take` will not wait for the parser)."""
        try:
            self._in.flush()  # the jobs sent so far reach the parser
        except BrokenPipeError:
            return True  # `take` reports the stopped parser
        return self._out.ready()

    def take(self) -> tuple[Any, ...]:
        """The result of the oldest job not taken yet."""
        try:
            self._in.flush()
        except BrokenPipeError:
            raise self._stopped() from None
        message = _read_message(self._out)
        if message is None:
            raise self._stopped()
        self.pending_bytes -= self.pending.popleft()
        return message  # type: ignore[no-any-return]

    def finish(self) -> int:
        """After the last job's result: the parser closes its rows file; the number of its last
        rows file (-1: none), not copied yet (`RowsFiles.finish`)."""
        self._send(FINISH)
        self.pending.append(0)
        message = self.take()
        if message[0] != SEALED:
            raise RuntimeError(f"the import's parser process failed: {message[1]}")
        return int(message[1])

    def rows_file(self, number: int) -> str:
        return f"{self.rows_base}{number}"

    def scan(self, parts: Any, db: str, full_scan_min: int) -> None:
        """Verification's scan of the build `db`, run by the parser once every record was taken
        (`verify.scan_wanted` over `parts`: `verify.wanted(states)`); its answer is the next `take`."""
        for part in parts:
            self._send((SCAN, part, None))
        self._send((SCAN, {}, (db, full_scan_min)))
        self.pending.append(0)
        try:
            self._in.flush()  # the parser starts now, not when the answer is asked for
        except BrokenPipeError:
            raise self._stopped() from None

    def move(self, moves: list[tuple[str, str, int, int, int, int]], mode: int | None) -> None:
        """Publish `moves` (`(source, dest, dev, ino, mtime_ns, size)`, planned and durable in the
        manifest) in the parser (`_publish_part`) while the caller publishes others; its answer
        is the next `take`."""
        self._send((MOVE, moves, (mode, os.getpid())))
        self.pending.append(0)
        try:
            self._in.flush()  # the parser starts now
        except BrokenPipeError:
            raise self._stopped() from None

    def close(self) -> None:
        """Stop the parser (at once: what it has not sent is not needed) and reap it; again: nothing."""
        if self._in.closed:
            return
        try:
            self._in.close()
        except OSError:  # a parser that stopped: what was buffered for it is not needed
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._out.close()


if __name__ == "__main__":
    sys.exit(main())
