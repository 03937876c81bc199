"""The search index of one agent store: a disposable SQLite FTS5 database in the cache directory,
rebuilt from the stores and never read as data.

Layout: `sources` (one row per transcript, archive or blob, with its change token and where
reading resumes), `rows` (one per indexed line: where it is, messageId, role, timestamp) and
`fts`, a contentless FTS5 table (`unicode61 remove_diacritics 2`, as OpenClaw's) whose rowids are
`rows` ids. Contentless keeps the index small and the first build fast; snippets come from the
line read back from its store. A source that changed other than by appending is retired (its
rows stay in `fts`, filtered out through `sources.live`) and read again; once retired rows
outweigh a quarter of the index, it is rebuilt from scratch.

`update` is incremental: per source a token (file size/mtime/inode, event count/bytes, blob
sha256) decides whether anything changed; a live transcript that grew is read from where the
last update stopped, after checking that the bytes before that point are unchanged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from openclaw_cli.paths import cache_root
from openclaw_cli.store.base import ReadIssue

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    import sqlite3
    from typing import Any
else:
    import _sqlite3 as sqlite3

SCHEMA_VERSION = "openclaw-cli search 5"
RANKED_KEEP = 256  # rankings kept per shard (the newest)
LINES_KEEP = 4096  # archive lines read back kept per shard (the newest)
LINE_KEPT_CHARS = 256 << 10  # a longer archive line is not kept
# an archive line read by a build or update keeps its text in `built_lines` up to this length: on
# big, 81 % of the archived lines (user and assistant lines, short tool results) are 4.4 MB of
# text; the other 19 % are 62 MB of long tool results, read back (and kept in `lines`) when hit
BUILT_LINE_CHARS = 4096
BATCH = 2048
REBUILD_DEAD_FRACTION = 0.25
REBUILD_DEAD_MIN = 2000
LIVE = ("legacy", "sqlite", "schema23", "schema24")

_FTS_DDL = "CREATE VIRTUAL TABLE fts USING fts5(text, content='', tokenize='unicode61 remove_diacritics 2')"
# FTS5 holds up to this much new index data in memory before writing it out as a segment (its
# default is 1 MB): a first build of big's 100 MB shard is then written as one segment, not ~15
# that its automerge merges again level by level (~2-4 % of the insert work; +13 MB peak RSS)
FTS_HASHSIZE = 16 << 20
_FTS_CONFIG = f"INSERT INTO fts(fts, rank) VALUES ('hashsize', {FTS_HASHSIZE})"
_DDL = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID",
    "CREATE TABLE sources (id INTEGER PRIMARY KEY, locator TEXT NOT NULL UNIQUE, source TEXT NOT NULL,"
    " session_id TEXT, session_key TEXT, token TEXT NOT NULL, pos INTEGER, nlines INTEGER NOT NULL DEFAULT 0,"
    " sig BLOB, theirs INTEGER NOT NULL DEFAULT 0, live INTEGER NOT NULL DEFAULT 1, nrows INTEGER NOT NULL DEFAULT 0,"
    " issues TEXT)",
    "CREATE TABLE rows (id INTEGER PRIMARY KEY, src INTEGER NOT NULL, pos INTEGER NOT NULL,"
    " line INTEGER NOT NULL, message_id TEXT NOT NULL, role TEXT NOT NULL, ts INTEGER NOT NULL)",
    "CREATE TABLE ranked (key TEXT PRIMARY KEY, gen INTEGER NOT NULL, ranked BLOB NOT NULL)",
    # the text of archive lines a search read back (`keep_lines`), by "<locator>\0<position>":
    # an archive never changes under its identity (`ident`: its file's size, mtime and inode, a
    # blob's sha256), so a later hit on the line takes it from here instead of decompressing the
    # archive up to it; dropped with the archive's source (retired) and by a reset
    "CREATE TABLE lines (key TEXT PRIMARY KEY, src INTEGER NOT NULL, ident TEXT NOT NULL,"
    " message_id TEXT NOT NULL, text TEXT NOT NULL)",
    "CREATE INDEX lines_src ON lines (src)",
    # the same for an archive's short lines, written by the build that reads the archive (by its
    # row's source and position; the identity is the archive's as the build found it before
    # reading): a first search that hits one needs no decompression either
    "CREATE TABLE built_lines (src INTEGER NOT NULL, pos INTEGER NOT NULL, ident TEXT NOT NULL,"
    " message_id TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (src, pos))",
    _FTS_DDL,
    _FTS_CONFIG,
)
# the shard's content generation: every write that changes rows or sources bumps it (and drops
# the kept rankings, which only a generation equal to theirs may serve)
_BUMP = (
    "INSERT OR REPLACE INTO meta VALUES ('generation',"
    " coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0) + 1)"
)
_SOURCE_COLS = "id, locator, token, pos, nlines, sig, theirs, nrows, session_key"
# a hit's source row, read with the hit (`Hit.source_row`)
_HIT_SOURCE_COLS = "s.locator, s.source, s.session_id, s.session_key"


class UpdateStats:
    """What one update read (pickled back from a forked child)."""

    def __init__(self, sources_unchanged: int = 0) -> None:
        self.sources_read = 0
        self.sources_unchanged = sources_unchanged
        self.bytes_read = 0
        self.lines_indexed = 0
        self.rebuilt = False
        self.seconds = 0.0
        self.skipped: list[ReadIssue] = []
        # the shard's content generation this update left it at (or found it at, unchanged): the
        # fingerprint of the sources it was compared with may be recorded only under it
        self.generation: int | None = None


class Hit:
    """One matching line, with its source's row (`source_row`: locator, source, session_id,
    session_key) read by the same statement: no lookup per hit afterwards."""

    __slots__ = ("row_id", "src", "pos", "line", "message_id", "role", "ts", "rank", "shard", "source_row")

    def __init__(
        self,
        row_id: int,
        src: int,
        pos: int,
        line: int,
        message_id: str,
        role: str,
        ts: int,
        rank: float,
        locator: str,
        source: str,
        session_id: str | None,
        session_key: str | None,
    ):
        self.row_id = row_id
        self.src = src
        self.pos = pos
        self.line = line
        self.message_id = message_id
        self.role = role
        self.ts = ts
        self.rank = rank
        self.shard = 0
        self.source_row = (locator, source, session_id, session_key)


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data`, by CPython's own module when it has one: hashlib loads the OpenSSL
    library first, a measurable part of a warm search's start."""
    import importlib

    try:
        module: Any = importlib.import_module("_sha256")
    except ImportError:
        module = importlib.import_module("hashlib")
    return str(module.sha256(data).hexdigest())


def index_path(store_path: Path, root: Path | None = None) -> Path:
    """One index file per store (an agent's database or sessions.json), named by its real path."""
    real = os.path.realpath(store_path)
    digest = sha256_hex(real.encode("utf-8", "surrogatepass"))[:24]
    return (root or cache_root()) / "search" / f"{digest}.sqlite"


def _connect(target: str) -> sqlite3.Connection:
    conn = sqlite3.connect(target, isolation_level=None, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA cache_size = -32768")
    return conn


class _Batch:
    """Rows and texts waiting to be inserted, across sources: one executemany per BATCH rows (a
    build reads ~2,000 sources of a few dozen message lines each); and the `sources` rows of the
    sources read from their start, each inserted whole once read (not inserted, then updated)."""

    __slots__ = ("conn", "rows", "texts", "sources", "built")

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.rows: list[tuple[Any, ...]] = []
        self.texts: list[tuple[int, str]] = []
        self.sources: list[tuple[Any, ...]] = []
        self.built: list[tuple[int, int, str, str, str]] = []  # `built_lines` rows

    def flush(self) -> None:
        if self.rows:
            self.conn.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)", self.rows)
            self.conn.executemany("INSERT INTO fts (rowid, text) VALUES (?, ?)", self.texts)
            self.rows.clear()
            self.texts.clear()
        if self.built:
            self.conn.executemany("INSERT OR REPLACE INTO built_lines VALUES (?, ?, ?, ?, ?)", self.built)
            self.built.clear()
        if self.sources:
            self.conn.executemany(
                "INSERT INTO sources (id, locator, source, session_id, session_key, token, pos, nlines, sig,"
                " theirs, nrows, issues) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.sources,
            )
            self.sources.clear()


class _Shard:
    def __init__(self, path: Path | None):
        """`path` None (or a cache dir we cannot write): an in-memory index for this process."""
        self.path = path
        self.conn = self._open(path)
        # skipped() by live_only: (the generation row it was read under, its lines)
        self._skipped: dict[bool, tuple[Any, tuple[str, ...]]] = {}

    def _open(self, path: Path | None) -> sqlite3.Connection:
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                for _ in range(2):
                    conn = _connect(str(path))
                    _wal(conn)
                    conn.execute("PRAGMA synchronous = OFF")  # disposable: a crash costs a rebuild, not data
                    if _ensure_schema(conn):
                        return conn
                    conn.close()
                    _discard(path)  # another version, or not a database: it is only a cache
            except (OSError, sqlite3.Error):
                pass
            self.path = None  # a read-only or broken cache dir: index in memory for this run
        conn = _connect(":memory:")
        _ensure_schema(conn)
        return conn

    def close(self) -> None:
        self.conn.close()

    def reset(self) -> None:
        """Drop everything (`--reindex`, or too many retired rows)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM sources")
        conn.execute("DELETE FROM rows")
        conn.execute("DELETE FROM meta WHERE key = 'fingerprint'")
        conn.execute("DELETE FROM ranked")
        conn.execute("DELETE FROM lines")
        conn.execute("DELETE FROM built_lines")
        conn.execute(_BUMP)
        conn.execute("DROP TABLE fts")
        conn.execute(_FTS_DDL)
        conn.execute(_FTS_CONFIG)
        conn.execute("COMMIT")

    # ---- updating ------------------------------------------------------------------------------------
    def _live_sources(self) -> dict[str, tuple[Any, ...]]:
        return {
            row[1]: row for row in self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources WHERE live = 1")
        }

    def update(
        self,
        agent: Any,
        *,
        progress: Callable[[int], None] | None = None,
        their_rows: Callable[[str], dict[str, str]] | None = None,
    ) -> UpdateStats:
        """Bring the index up to date with `agent` (`sources.AgentSources`). `their_rows(session_id)`
        gives {messageId: text} of what OpenClaw's own FTS holds for a session; those lines are
        searched there and not indexed again here."""
        start = time.perf_counter()
        stats = UpdateStats()
        current = {s.locator: s for s in agent.sources}
        conn = self.conn
        conn.execute("BEGIN")  # one snapshot: the sources compared are the generation's
        try:
            existing = self._live_sources()
            generation = self._generation()
        finally:
            conn.execute("COMMIT")
        if len(existing) == len(current) and all(
            loc in existing and existing[loc][2] == s.token and existing[loc][8] == s.session_key
            for loc, s in current.items()
        ):
            stats.sources_unchanged = len(current)
            stats.generation = generation
            stats.seconds = time.perf_counter() - start
            return stats
        if self._too_many_dead(existing, current):
            self.reset()
            stats.rebuilt = True
            existing = {}
        from openclaw_cli.gcpause import gc_paused

        # a first build (nothing indexed yet) is written under a rollback journal when no other
        # connection has the file open: each page goes once into the file, not into the WAL and
        # again by the commit's checkpoint; WAL again right after (a reader met meanwhile: the next
        # open sets it)
        rollback = not existing and self.path is not None and _set_journal(conn, "delete")
        try:
            with gc_paused():  # a build's parsed lines make no cycles: no collector passes over them
                self._write(current, stats, progress, their_rows)
        finally:
            if rollback:
                _set_journal(conn, "wal")
        stats.seconds = time.perf_counter() - start
        return stats

    def _write(
        self,
        current: dict[str, Any],
        stats: UpdateStats,
        progress: Callable[[int], None] | None,
        their_rows: Callable[[str], dict[str, str]] | None,
    ) -> None:
        """The update's write transaction: retire what is gone, read what is new."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM ranked")
            conn.execute(_BUMP)
            stats.generation = self._generation()
            existing = self._live_sources()  # again under the write lock: another search may have updated
            for locator, row in existing.items():
                if locator not in current:
                    self._retire(row[0])
            next_id = (conn.execute("SELECT max(id) FROM rows").fetchone()[0] or 0) + 1
            # the ids the sources read from their start get, in order (as SQLite would give them)
            next_src = (conn.execute("SELECT max(id) FROM sources").fetchone()[0] or 0) + 1
            batch = _Batch(conn)
            for locator, source in current.items():
                old = existing.get(locator)
                if old is not None and old[2] == source.token:
                    stats.sources_unchanged += 1
                    if old[8] != source.session_key:  # sessions.json names it otherwise now
                        conn.execute(
                            "UPDATE sources SET session_key = ? WHERE id = ?", (source.session_key, old[0])
                        )
                    continue
                theirs = (
                    their_rows(source.session_id) if (their_rows is not None and source.their_fts) else None
                )
                after: int | None = None
                resumed = (
                    old is not None
                    and source.append_only
                    and not old[6]
                    and old[3] is not None
                    and old[5] is not None
                    and source.reader.tail_signature(old[3]) == old[5]
                )
                if resumed:
                    assert old is not None
                    src_id, after, first_line = old[0], old[3], old[4] + 1
                else:
                    if old is not None:
                        self._retire(old[0])
                    first_line = 1
                    src_id, next_src = next_src, next_src + 1
                issues: list[ReadIssue] = []
                next_id, last_pos, nlines, nrows, nbytes = self._index_source(
                    source, src_id, next_id, after, first_line, theirs, issues, batch
                )
                stats.skipped.extend(issues)
                stats.sources_read += 1
                stats.bytes_read += nbytes
                stats.lines_indexed += nrows
                if progress is not None:
                    progress(nbytes)
                if last_pos is None:
                    last_pos = after  # nothing new after all (a touched file)
                sig = (
                    source.reader.tail_signature(last_pos)
                    if (source.append_only and last_pos is not None)
                    else None
                )
                noted = "\n".join(str(issue) for issue in issues) or None
                if not resumed:
                    batch.sources.append(
                        (
                            src_id,
                            locator,
                            source.source,
                            source.session_id,
                            source.session_key,
                            source.token,
                            last_pos,
                            nlines,
                            sig,
                            1 if theirs is not None else 0,
                            nrows,
                            noted,
                        )
                    )
                    if len(batch.sources) >= BATCH:
                        batch.flush()
                    continue
                conn.execute(
                    "UPDATE sources SET token = ?, pos = ?, nlines = nlines + ?, sig = ?, nrows = nrows + ?,"
                    " session_key = ?, issues = CASE WHEN ? IS NULL THEN issues"
                    " ELSE coalesce(issues || char(10), '') || ? END WHERE id = ?",
                    (source.token, last_pos, nlines, sig, nrows, source.session_key, noted, noted, src_id),
                )
            batch.flush()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _generation(self) -> int:
        row = self.conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _too_many_dead(self, existing: dict[str, tuple[Any, ...]], current: dict[str, Any]) -> bool:
        dead, total = self.conn.execute(
            "SELECT coalesce(sum(nrows * (live = 0)), 0), coalesce(sum(nrows), 0) FROM sources"
        ).fetchone()
        for locator, row in existing.items():
            source = current.get(locator)
            if source is None or (source.token != row[2] and not source.append_only):
                dead += row[7]
        return bool(dead >= REBUILD_DEAD_MIN and dead > total * REBUILD_DEAD_FRACTION)

    def _retire(self, src_id: int) -> None:
        self.conn.execute(
            "UPDATE sources SET live = 0, locator = locator || '#retired-' || id WHERE id = ?", (src_id,)
        )
        self.conn.execute("DELETE FROM lines WHERE src = ?", (src_id,))
        self.conn.execute("DELETE FROM built_lines WHERE src = ?", (src_id,))

    def _index_source(
        self,
        source: Any,
        src_id: int,
        next_id: int,
        after: int | None,
        first_line: int,
        theirs: dict[str, str] | None,
        issues: list[ReadIssue],
        batch: _Batch,
    ) -> tuple[int, int | None, int, int, int]:
        """Index the source's lines after `after` into `batch` (written out by the caller's last
        flush or a full batch): (next row id, resume point, lines, rows, bytes)."""
        import orjson

        from openclaw_cli.search.text import extract

        loads = orjson.loads
        rows, texts = batch.rows, batch.texts
        first_id = next_id
        last_pos: int | None = None
        nlines = nbytes = 0
        fallback = source.fallback_ms()
        # an archive whose lines cost a decompression to get back: its short lines' texts are kept
        # under its identity, taken before reading it (a file replaced meanwhile then differs)
        ident = source.line_identity()
        built = batch.built if ident is not None else None
        try:
            for pos, end, line_no, raw in source.reader.lines(after, first_line):
                nlines += 1
                nbytes += len(raw)
                last_pos = end
                try:
                    obj = loads(raw)
                except orjson.JSONDecodeError:
                    if source.append_only and not source.reader.line_complete(end):
                        # the last line, still being written (no newline yet): not a bad line;
                        # reading resumes at its start once it is whole
                        nlines -= 1
                        nbytes -= len(raw)
                        last_pos = pos if pos > (after or 0) else None
                        break
                    issues.append(ReadIssue(source.label, line_no, "not a JSON line; skipped"))
                    continue
                found = extract(obj, line_no, fallback)
                if found is None:
                    continue
                message_id, role, ts, text = found
                if theirs is not None and role != "tool" and theirs.get(message_id) == text:
                    continue  # OpenClaw's own FTS holds this line as is
                rows.append((next_id, src_id, pos, line_no, message_id, role, ts))
                texts.append((next_id, text))
                if built is not None and len(text) <= BUILT_LINE_CHARS:
                    built.append((src_id, pos, ident, message_id, text))
                next_id += 1
                if len(rows) >= BATCH:
                    batch.flush()
        except Exception as exc:  # a corrupt archive, an unreadable file: skipped and named
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            issues.append(ReadIssue(source.label, None, f"cannot read ({message}); skipped the rest"))
        return next_id, last_pos, nlines, next_id - first_id, nbytes + nlines

    # ---- querying ------------------------------------------------------------------------------------
    def query(
        self,
        match: str,
        *,
        roles: tuple[str, ...] | None = None,
        since: int | None = None,
        until: int | None = None,
        session_keys: tuple[str, ...] | None = None,
        live_only: bool = False,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Hit]:
        where = ["fts MATCH ?", "s.live = 1"]
        params: list[Any] = [match]
        if roles:
            where.append(f"r.role IN ({','.join('?' * len(roles))})")
            params.extend(roles)
        if since is not None:
            where.append("r.ts >= ?")
            params.append(since)
        if until is not None:
            where.append("r.ts <= ?")
            params.append(until)
        if session_keys:
            where.append(f"s.session_key IN ({','.join('?' * len(session_keys))})")
            params.extend(session_keys)
        if live_only:
            where.append(f"s.source IN ({','.join('?' * len(LIVE))})")
            params.extend(LIVE)
        if len(where) == 2:  # no filter but liveness: rank in FTS5 alone, then look the few rows up
            hits = self._top(match, limit + offset)
            if hits is not None:
                return hits[offset:]
        sql = (
            "SELECT r.id, r.src, r.pos, r.line, r.message_id, r.role, r.ts, bm25(fts) AS rank,"
            f" {_HIT_SOURCE_COLS} FROM fts JOIN rows r ON r.id = fts.rowid JOIN sources s ON s.id = r.src"
            f" WHERE {' AND '.join(where)} ORDER BY rank, r.ts DESC, r.message_id LIMIT ? OFFSET ?"
        )
        params.extend((limit, offset))
        return [Hit(*row) for row in self.conn.execute(sql, params)]

    def _top(self, match: str, want: int) -> list[Hit] | None:
        """The best `want` live hits by ranking in FTS5 first (joining every match to its row costs
        more than ranking); None when retired rows crowd the top (then the joined query runs)."""
        fetch = want + 8
        for _ in range(3):
            ranked = self._ranked(match, fetch)
            if not ranked:
                return []
            complete = len(ranked) < fetch  # every match was ranked
            found = self._top_prefix(ranked, want, complete)
            if found is not None:
                return found
            hits = self._live_hits(ranked)
            if len(hits) >= want + 1 or complete:
                # the last ranked score may tie with unfetched ones: keep only hits strictly better
                # than it unless everything was fetched
                if not complete:
                    cutoff = ranked[-1][1]
                    hits = [h for h in hits if h.rank < cutoff] or hits
                if len(hits) >= want or complete:
                    return hits[:want]
            fetch *= 4
        return None

    def _live_hits(self, ranked: list[tuple[int, float]]) -> list[Hit]:
        """The live rows of `ranked` (rowid, bm25) as hits, sorted as results are."""
        ids = [rowid for rowid, _ in ranked]
        rank_of = dict(ranked)
        rows: list[tuple[Any, ...]] = self.conn.execute(
            f"SELECT r.id, r.src, r.pos, r.line, r.message_id, r.role, r.ts, {_HIT_SOURCE_COLS} FROM rows r"
            f" JOIN sources s ON s.id = r.src WHERE s.live = 1 AND r.id IN ({','.join('?' * len(ids))})",
            ids,
        ).fetchall()
        return sorted(
            (
                Hit(i, src, pos, line, mid, role, ts, rank_of[i], *where)
                for i, src, pos, line, mid, role, ts, *where in rows
            ),
            key=lambda h: (h.rank, -h.ts, h.message_id),
        )

    def _top_prefix(self, ranked: list[tuple[int, float]], want: int, complete: bool) -> list[Hit] | None:
        """`_top`'s answer from the rows of the ranking's first entries only: those scoring at most
        the `want`-th's (the answer is among them), and, unless every match was ranked, the one
        after them (so `_top`'s "one more live hit than wanted" is known to hold). None when one of
        them is retired, or ties reach the last entry ranked: `_top`'s whole rule then decides. The
        same hits in the same order: the ranking is ascending, the others score worse than every
        one looked up, and the rows come back in rowid order either way."""
        if len(ranked) < want or want <= 0:
            return None
        worst = ranked[want - 1][1]
        if not complete and worst >= ranked[-1][1]:
            return None
        k = want
        while k < len(ranked) and ranked[k][1] <= worst:
            k += 1
        hits = self._live_hits(ranked[: k if complete else k + 1])
        return hits[:want] if len(hits) == (k if complete else k + 1) else None

    def _ranked(self, match: str, fetch: int) -> list[tuple[int, float]]:
        """The best `fetch` (rowid, bm25) of `match`, OpenClaw's rank. bm25 costs in proportion to
        the query's occurrences in every matching line (a common word: hundreds of thousands), so
        the result is kept in the shard for its content generation: the same query against an
        unchanged index reads it back. Any write to the shard changes the generation."""
        import marshal

        conn = self.conn
        key = f"{fetch}\0{match}"
        # kept for the current generation: one statement (its own snapshot), not a transaction of four
        row = conn.execute(
            "SELECT ranked FROM ranked WHERE key = ? AND gen ="
            " coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0)",
            (key,),
        ).fetchone()
        if row is not None:
            try:
                return [(int(r), float(s)) for r, s in marshal.loads(row[0])]
            except (ValueError, TypeError, EOFError):
                pass
        conn.execute("BEGIN")  # one snapshot: the generation read is the ranking's
        try:
            gen_row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            gen = int(gen_row[0]) if gen_row else 0
            kept = conn.execute("SELECT ranked FROM ranked WHERE key = ? AND gen = ?", (key, gen)).fetchone()
            found: list[tuple[int, float]] | None = None
            if kept is not None:
                try:
                    found = [(int(r), float(s)) for r, s in marshal.loads(kept[0])]
                except (ValueError, TypeError, EOFError):
                    found = None
            if found is None:
                found = conn.execute(
                    "SELECT rowid, bm25(fts) AS rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?",
                    (match, fetch),
                ).fetchall()
        finally:
            conn.execute("COMMIT")
        if kept is None:
            self._keep(key, gen, found)
        return found

    def _keep(self, key: str, gen: int, ranked: list[tuple[int, float]]) -> None:
        """Keep a ranking unless another process is writing the shard (never wait for it)."""
        import marshal

        self._write_now(
            (
                "INSERT OR REPLACE INTO ranked SELECT ?, ?, ? WHERE"
                " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation') IS ?",
                [(key, gen, marshal.dumps([tuple(r) for r in ranked]), gen if gen else None)],
            ),
            ("DELETE FROM ranked WHERE rowid <= (SELECT max(rowid) FROM ranked) - ?", [(RANKED_KEEP,)]),
        )

    def _write_now(self, *statements: tuple[str, list[tuple[Any, ...]]]) -> None:
        """Run `statements` (each with its parameter rows) in one transaction unless another
        process is writing the shard (never wait for it): what a search keeps for later searches,
        never content (no generation bump)."""
        conn = self.conn
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    conn.executemany(sql, params)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            pass  # busy, or a read-only file: only not kept
        finally:
            conn.execute("PRAGMA busy_timeout = 30000")

    def kept_line(
        self, key: str, src: int | None = None, pos: int | None = None
    ) -> tuple[str, str, str] | None:
        """(ident, message_id, text) of the archive line kept under `key` by a search that read it
        back (`keep_lines`), else as the build that read it kept it (`built_lines`, at `pos` of
        source `src`), or None. A search's is the later reading: after the archive was replaced,
        the build's identity differs, the line is read back and kept under the new one."""
        conn = self.conn
        row: tuple[str, str, str] | None = conn.execute(
            "SELECT ident, message_id, text FROM lines WHERE key = ?", (key,)
        ).fetchone()
        if row is None and src is not None:
            row = conn.execute(
                "SELECT ident, message_id, text FROM built_lines WHERE src = ? AND pos = ?", (src, pos)
            ).fetchone()
        return row

    def keep_lines(self, lines: list[tuple[str, int, str, str, str]]) -> None:
        """Keep archive lines read back: (key, source id, ident, message_id, text) each; the
        oldest beyond LINES_KEEP go."""
        self._write_now(
            ("INSERT OR REPLACE INTO lines VALUES (?, ?, ?, ?, ?)", lines),
            ("DELETE FROM lines WHERE rowid <= (SELECT max(rowid) FROM lines) - ?", [(LINES_KEEP,)]),
        )

    def terms_containing(self, piece: str, limit: int) -> list[str]:
        """Indexed words containing `piece` (folded), at most `limit` + 1 (to tell "too many")."""
        return terms_containing(self.conn, "main", "fts", piece, limit)

    def skipped(self, live_only: bool = False) -> list[str]:
        """What reading the indexed sources skipped (unreadable lines and archives), as text. A
        function of the shard's content: kept for its generation (one key lookup, not a scan of
        every source, when nothing was written since)."""
        sql = "SELECT issues FROM sources WHERE live = 1 AND issues IS NOT NULL"
        params: tuple[str, ...] = ()
        if live_only:
            sql += f" AND source IN ({','.join('?' * len(LIVE))})"
            params = LIVE
        conn = self.conn
        gen_sql = "SELECT value FROM meta WHERE key = 'generation'"
        kept = self._skipped.get(live_only)
        if kept is not None and conn.execute(gen_sql).fetchone() == kept[0]:
            return list(kept[1])

        def read() -> list[str]:
            return [
                line for (text,) in conn.execute(sql + " ORDER BY id", params) for line in text.split("\n")
            ]

        if conn.in_transaction:  # inside a caller's transaction: its snapshot, nothing kept
            return read()
        conn.execute("BEGIN")  # one snapshot: the generation read is the issues'
        try:
            generation = conn.execute(gen_sql).fetchone()
            found = read()
        finally:
            conn.execute("COMMIT")
        if generation is not None:
            self._skipped[live_only] = (generation, tuple(found))
        return found

    def theirs_sessions(self) -> dict[str, str | None]:
        """Live sessions whose user/assistant lines are searched in OpenClaw's own FTS: id -> key."""
        return dict(
            self.conn.execute("SELECT session_id, session_key FROM sources WHERE live = 1 AND theirs = 1")
        )


def terms_containing(conn: sqlite3.Connection, schema: str, table: str, piece: str, limit: int) -> list[str]:
    """The vocabulary of FTS5 table `schema.table` (`fts5vocab`, a temp table: nothing written to
    the database) filtered to the words containing `piece`."""
    vocab = f"{table}_vocab_{schema}"
    conn.execute(
        f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."{vocab}" USING fts5vocab("{schema}", "{table}", row)'
    )
    rows = conn.execute(
        f'SELECT term FROM temp."{vocab}" WHERE instr(term, ?) > 0 LIMIT ?', (piece, limit + 1)
    )
    return [row[0] for row in rows]


def _wal(conn: sqlite3.Connection) -> None:
    """WAL mode, unless another process is writing its first build under a rollback journal right
    now (busy): then the connection reads and waits as a rollback-journal one until that build sets
    WAL again, which it then follows (a database's mode is in its header)."""
    try:
        conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            raise


def _set_journal(conn: sqlite3.Connection, mode: str) -> bool:
    """Switch the journal mode without waiting (another connection to the file, or a transaction
    of its, makes it fail: then it stays as it was); whether it is now `mode`."""
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        row = conn.execute(f"PRAGMA journal_mode = {mode}").fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.execute("PRAGMA busy_timeout = 30000")
    return bool(row) and str(row[0]).lower() == mode


def _discard(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def _ensure_schema(conn: sqlite3.Connection) -> bool:
    """Create the tables in an empty file; False when it holds another version (or not ours)."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            return bool(row and row[0] == SCHEMA_VERSION)
        if tables:
            return False
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():  # created meanwhile
            conn.execute("COMMIT")
            return _ensure_schema(conn)
        for ddl in _DDL:
            conn.execute(ddl)
        conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
        return True
    except sqlite3.DatabaseError:
        return False


SHARDS = 2  # fixed: the layout must not depend on the machine the index was built on
PARALLEL_MIN_SOURCES = 64  # a first build or a big catch-up is read by one process per shard
PARALLEL_MIN_BYTES = 32 << 20


def _shard_of(locator: str, shards: int) -> int:
    import zlib

    return zlib.crc32(locator.encode("utf-8", "surrogatepass")) % shards


class AgentIndex:
    """One store's index as SHARDS files (sources assigned by a hash of their locator), so a first
    build is tokenized by one process per shard; queries ask every shard and merge by rank."""

    def __init__(self, path: Path | None, shards: int = SHARDS):
        self.paths: list[Path | None] = (
            [None] * shards
            if path is None
            else [path.with_name(f"{path.stem}.{i}{path.suffix}") for i in range(shards)]
        )
        self.shards = [_Shard(p) for p in self.paths]
        if any(shard.path is None for shard in self.shards):  # a cache dir we cannot write: all in memory
            self.paths = [None] * shards
            for shard in self.shards:
                shard.close()
            self.shards = [_Shard(None) for _ in range(shards)]

    @property
    def in_memory(self) -> bool:
        return self.paths[0] is None

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def reset(self) -> None:
        for shard in self.shards:
            shard.reset()

    def _split(self, agent: Any) -> list[Any]:
        parts: list[list[Any]] = [[] for _ in self.shards]
        for source in agent.sources:
            parts[_shard_of(source.locator, len(self.shards))].append(source)
        return [agent.subset(part) for part in parts]

    def fingerprint(self) -> str | None:
        """The fingerprint of the sources every shard was last brought up to date with (None: not
        the same in every shard, or never recorded)."""
        found = {
            row[0] if row else None
            for row in (
                shard.conn.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
                for shard in self.shards
            )
        }
        return found.pop() if len(found) == 1 else None

    def _record(self, fingerprint: str, generations: list[int | None]) -> None:
        """Record `fingerprint` in each shard whose content generation is still the one this
        update left it at (`generations`, per shard): another process's update or `--reindex` in
        between changed the content, and its own fingerprint (or none) then stands — recording
        ours over it would let the next search skip an index that no longer matches it.
        Bookkeeping only: a shard another process holds keeps its old fingerprint (the next
        search compares, differs and updates again) instead of failing this search."""
        for shard, generation in zip(self.shards, generations, strict=True):
            if generation is None:
                continue
            try:
                shard.conn.execute(
                    "INSERT OR REPLACE INTO meta SELECT 'fingerprint', ? WHERE"
                    " coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0) = ?",
                    (fingerprint, generation),
                )
            except sqlite3.Error:
                continue

    def _pending(self, part: Any, shard: _Shard) -> tuple[int, int, int]:
        """(sources, bytes) the next update of `shard` would read, and how many indexed sources are gone."""
        live = dict(shard.conn.execute("SELECT locator, token FROM sources WHERE live = 1"))
        changed = [s for s in part.sources if live.get(s.locator) != s.token]
        gone = len(live) - (len(part.sources) - sum(1 for s in changed if s.locator not in live))
        return len(changed), sum(s.size for s in changed), gone

    def update(
        self,
        agent: Any,
        *,
        their_rows: Callable[[Any], Any] | None = None,
        refresh: Callable[[], Any] | None = None,
        workers: int = 1,
    ) -> UpdateStats:
        """Update every shard. `their_rows(agent)` makes the per-session lookup of OpenClaw's FTS
        rows (or None). With `workers` > 1, a `refresh()` that opens the sources again, a file
        index and enough to read, shards other than the first are updated in forked children
        (each with its own connections), the first here."""
        fingerprint = agent.fingerprint()
        if fingerprint == self.fingerprint():  # the common case: nothing changed since the last update
            return UpdateStats(sources_unchanged=len(agent))
        stats, generations = self._update(agent, their_rows=their_rows, refresh=refresh, workers=workers)
        self._record(fingerprint, generations)
        return stats

    def _update(
        self,
        agent: Any,
        *,
        their_rows: Callable[[Any], Any] | None,
        refresh: Callable[[], Any] | None,
        workers: int,
    ) -> tuple[UpdateStats, list[int | None]]:
        """The update's figures, and the content generation it left each shard at."""
        parts = self._split(agent)
        pending = [self._pending(part, shard) for part, shard in zip(parts, self.shards, strict=True)]
        if not any(n or gone for n, _, gone in pending):
            generations = [  # only keys may have changed
                shard.update(part).generation for part, shard in zip(parts, self.shards, strict=True)
            ]
            return UpdateStats(sources_unchanged=len(agent.sources)), generations
        big = (
            sum(n for n, _, _ in pending) >= PARALLEL_MIN_SOURCES
            or sum(b for _, b, _ in pending) >= PARALLEL_MIN_BYTES
        )
        parallel = (
            big
            and workers > 1
            and refresh is not None
            and not self.in_memory
            and hasattr(os, "fork")
            and _single_threaded()
        )
        started = time.perf_counter()
        total = UpdateStats()
        generations = []
        if not parallel or refresh is None:  # `parallel` holds only with a refresh
            for part, shard in zip(parts, self.shards, strict=True):
                stats = shard.update(part, their_rows=their_rows(part) if their_rows else None)
                _merge(total, stats)
                generations.append(stats.generation)
            return total, generations
        # the children's shards closed here while they write them (reopened once each is done):
        # an open connection would keep a child's first build from its rollback journal
        for shard in self.shards[1:]:
            shard.close()
        children = [
            self._fork_update(i, agent, parts, refresh, their_rows) for i in range(1, len(self.shards))
        ]
        first = self.shards[0].update(parts[0], their_rows=their_rows(parts[0]) if their_rows else None)
        _merge(total, first)
        generations.append(first.generation)
        for i, child in enumerate(children, 1):
            collected = _collect(child)
            self.shards[i] = _Shard(self.paths[i])
            if collected is None:  # the child failed: do its shard here
                collected = self.shards[i].update(
                    parts[i], their_rows=their_rows(parts[i]) if their_rows else None
                )
            _merge(total, collected)
            generations.append(collected.generation)
        total.seconds = time.perf_counter() - started
        return total, generations

    def _fork_update(
        self,
        i: int,
        agent: Any,
        parts: list[Any],
        refresh: Callable[[], Any],
        their_rows: Callable[[Any], Any] | None,
    ) -> Any:
        import pickle

        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its own connections only, then _exit (no inherited finalizers)
            code = 1
            try:
                os.close(read_end)
                # the parent's sources serve as they are when they share no connection (files and
                # blobs open their own): no second scan and sessions.json parse before this shard
                fresh = refresh() if agent.db_conn is not None else None
                part = self._split(fresh)[i] if fresh is not None else parts[i]
                shard = _Shard(self.paths[i])
                stats = shard.update(part, their_rows=their_rows(part) if their_rows else None)
                shard.close()
                if fresh is not None:
                    fresh.close()
                data = pickle.dumps(stats)
                with os.fdopen(write_end, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        return pid, read_end

    def query(self, match: str, *, limit: int = 10, offset: int = 0, **filters: Any) -> list[Hit]:
        hits: list[Hit] = []
        for i, shard in enumerate(self.shards):
            for hit in shard.query(match, limit=offset + limit, offset=0, **filters):
                hit.shard = i
                hits.append(hit)
        hits.sort(key=lambda h: (h.rank, -h.ts, h.message_id))
        return hits[offset : offset + limit]

    def kept_line(self, hit: Hit, key: str) -> tuple[str, str, str] | None:
        return self.shards[hit.shard].kept_line(key, hit.src, hit.pos)

    def keep_lines(self, lines: list[tuple[int, tuple[str, int, str, str, str]]]) -> None:
        """Keep archive lines read back: (shard, the line's row for `_Shard.keep_lines`) each."""
        for i, shard in enumerate(self.shards):
            mine = [line for at, line in lines if at == i]
            if mine:
                shard.keep_lines(mine)

    def terms_containing(self, piece: str, limit: int) -> list[str]:
        found: set[str] = set()
        for shard in self.shards:
            found.update(shard.terms_containing(piece, limit))
        return sorted(found)

    def skipped(self, live_only: bool = False) -> list[str]:
        return [line for shard in self.shards for line in shard.skipped(live_only)]

    def theirs_sessions(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for shard in self.shards:
            out.update(shard.theirs_sessions())
        return out


def _single_threaded() -> bool:
    import threading

    return threading.active_count() == 1


def _collect(child: tuple[int, int]) -> UpdateStats | None:
    import pickle

    pid, read_end = child
    with os.fdopen(read_end, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not data:
        return None
    try:
        stats = pickle.loads(data)
    except Exception:
        return None
    return stats if isinstance(stats, UpdateStats) else None


def _merge(total: UpdateStats, stats: UpdateStats) -> None:
    total.sources_read += stats.sources_read
    total.sources_unchanged += stats.sources_unchanged
    total.bytes_read += stats.bytes_read
    total.lines_indexed += stats.lines_indexed
    total.rebuilt = total.rebuilt or stats.rebuilt
    total.seconds = max(total.seconds, stats.seconds)
    total.skipped.extend(stats.skipped)
