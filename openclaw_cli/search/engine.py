"""One search over one or more opened stores: bring each store's index up to date, ask it (and
OpenClaw's own FTS where it holds a session's messages completely), read the matched lines back
from their stores for snippets, and merge the hits (score descending, then newest, then
messageId, as OpenClaw orders them)."""

from __future__ import annotations

import _thread
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from openclaw_cli.search.index import LINE_KEPT_CHARS, LIVE, SHARDS, AgentIndex, UpdateStats, index_path
from openclaw_cli.search.query import Query, literal_in
from openclaw_cli.search.snippet import make_snippet
from openclaw_cli.search.sources import AgentSources, Source, agent_sources

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.store.base import SessionStore
    from openclaw_cli.store.detect import LegacyLocation

MAX_LITERAL_CANDIDATES = 20000  # --fixed: candidate lines checked before the search gives up
MAX_INFIX_TERMS = 2000  # --fixed, a piece of a word: indexed words containing it, at most


def _infix_query(query: Query, terms: list[str]) -> Query | None:
    """The query with its FTS expression replaced by every indexed word containing its piece (None:
    no word holds it); a UsageError when the piece is in too many different words to look up."""
    if not terms:
        return None
    if len(terms) > MAX_INFIX_TERMS:
        from openclaw_cli.errors import UsageError

        raise UsageError(
            f"--fixed {query.literal!r} is part of more than {MAX_INFIX_TERMS} different words in the "
            "index: give a longer piece of the text (or the word's start, which the index finds directly)."
        )
    fts = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return query.with_fts(fts)


class Options:
    """What one search asks for (plain classes here: no dataclass built at import)."""

    def __init__(
        self,
        *,
        roles: tuple[str, ...] | None = None,
        since: int | None = None,
        until: int | None = None,
        session_keys: tuple[str, ...] | None = None,
        archived: bool = True,
        limit: int = 10,
        reindex: bool = False,
        redact: bool = False,
        index_root: Path | None = None,  # the cache root (None: $XDG_CACHE_HOME/openclaw-cli)
        in_memory: bool = False,
        workers: int = 1,  # processes a big (re)build may use (forks only from a single-threaded process)
    ):
        self.roles = roles
        self.since = since
        self.until = until
        self.session_keys = session_keys
        self.archived = archived
        self.limit = limit
        self.reindex = reindex
        self.redact = redact
        self.index_root = index_root
        self.in_memory = in_memory
        self.workers = workers


class StoreTarget:
    __slots__ = ("store", "import_archive_dir")

    def __init__(self, store: SessionStore | LegacyLocation, import_archive_dir: Path | None = None):
        self.store = store  # an opened store.base.SessionStore, or a located legacy store
        self.import_archive_dir = import_archive_dir


class Outcome:
    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []
        self.truncated = False
        self.skipped: list[str] = []
        self.updates: list[UpdateStats] = []
        self.archived_excluded = 0


def _their_rows(agent: AgentSources) -> Callable[[str], dict[str, str]] | None:
    """{messageId: text} of OpenClaw's FTS rows for one session (read-only); None without them."""
    if agent.openclaw_fts is None or agent.db_conn is None:
        return None
    conn = agent.db_conn.conn

    def rows(session_id: str) -> dict[str, str]:
        return dict(
            conn.execute(
                "SELECT message_id, text FROM session_transcript_fts WHERE rowid IN"
                " (SELECT id FROM session_transcript_fts_rows WHERE session_id = ?)",
                (session_id,),
            )
        )

    return rows


def _line_text(source: Source, position: int, line_no: int) -> tuple[str, str, int, str] | None:
    from openclaw_cli.search.plainjson import loads
    from openclaw_cli.search.text import extract

    raw = source.reader.read_at(position)
    if raw is None:
        return None
    try:
        obj = loads(raw)  # orjson's reading (without importing it in a one-shot command)
    except ValueError:  # orjson.JSONDecodeError
        return None
    # the hit's row has the line's time: not parsed again (nor an archive name's for a fallback)
    return extract(obj, line_no, timestamp=False)


def _result(
    agent_id: str,
    source: Source | None,
    label: str,
    session_id: str | None,
    session_key: str | None,
    message_id: str,
    role: str,
    ts: int,
    text: str,
    rank: float,
) -> dict[str, Any]:
    """A hit whose `snippet` still holds the whole line's text: `_snip` makes the snippet once
    the hit is known to be on the page (a page's extra hit, or another agent's that ranks
    below it, needs none)."""
    return {
        "sessionKey": session_key,
        "sessionId": session_id,
        "messageId": message_id,
        "role": role,
        "timestamp": ts,
        "snippet": text,
        "score": round(-rank, 6) + 0.0,
        "source": label,
        "agentId": agent_id,
    }


# Snippets made lately, by (line text, query): make_snippet is a function of the two, and a page
# served again (`_pages`) holds the very same text objects, whose hashes Python keeps
SNIPPETS_KEPT = 64
SNIPPET_TEXT_KEPT = 64 << 10  # longer lines are not kept (bounded memory)
_snippets: dict[tuple[str, Query], str] = {}


def _snip(hit: dict[str, Any], query: Query, redact: bool) -> dict[str, Any]:
    text = hit["snippet"]
    key = (text, query)
    snippet = _snippets.get(key)
    if snippet is None:
        snippet = make_snippet(text, query)
        if len(text) <= SNIPPET_TEXT_KEPT:
            if len(_snippets) >= SNIPPETS_KEPT:
                _snippets.clear()
            _snippets[key] = snippet
    if redact:
        from openclaw_cli.redact import redact as mask

        snippet = mask(snippet)
    hit["snippet"] = snippet
    return hit


LINES_KEPT_PER_SEARCH = 64  # archive lines read back that one search keeps in the index, at most


def _our_hits(
    index: AgentIndex,
    agent: AgentSources,
    query: Query,
    opts: Options,
    want: int,
    read: list[tuple[int, tuple[str, int, str, str, str]]],
) -> Iterator[dict[str, Any]]:
    """Our index's hits, best first; the archive lines read back on the way are added to `read`
    (for `AgentIndex.keep_lines`)."""
    offset = 0
    page = max(want, 10)
    checked = 0
    while True:
        hits = index.query(
            query.fts,
            roles=opts.roles,
            since=opts.since,
            until=opts.until,
            session_keys=opts.session_keys,
            live_only=not opts.archived,
            limit=page,
            offset=offset,
        )
        for hit in hits:
            checked += 1
            row = hit.source_row
            source = agent.source(row[0])
            if source is None:
                continue
            # an archive's line kept in the index under the archive's identity (taken before
            # reading: a file replaced meanwhile is never kept under the old one's)
            ident = source.line_identity()
            text: str | None = None
            if ident is not None:
                key = f"{row[0]}\0{hit.pos}"
                kept = index.kept_line(hit, key)
                if kept is not None and kept[0] == ident and kept[1] == hit.message_id:
                    text = kept[2]
            if text is None:
                found = _line_text(source, hit.pos, hit.line)
                if found is None or found[0] != hit.message_id:
                    continue  # changed since it was indexed; the next update re-reads it
                text = found[3]
                if ident is not None and len(read) < LINES_KEPT_PER_SEARCH and len(text) <= LINE_KEPT_CHARS:
                    read.append((hit.shard, (key, hit.src, ident, hit.message_id, text)))
            if query.literal is not None and not literal_in(text, query.literal):
                continue
            yield _result(
                agent.agent_id,
                source,
                row[1],
                row[2],
                source.session_key or row[3],
                hit.message_id,
                hit.role,
                hit.ts,
                text,
                hit.rank,
            )
        if len(hits) < page or query.literal is None or checked >= MAX_LITERAL_CANDIDATES:
            return
        offset += page
        page = min(page * 4, 2000)


def _their_hits(
    index: AgentIndex, agent: AgentSources, query: Query, opts: Options, want: int
) -> Iterator[dict[str, Any]]:
    """Hits in OpenClaw's own FTS for the sessions whose messages it holds (roles user/assistant)."""
    if agent.openclaw_fts is None or agent.db_conn is None:
        return
    sessions = index.theirs_sessions()
    if not sessions:
        return
    if opts.roles and not set(opts.roles) & {"user", "assistant"}:
        return
    if opts.session_keys:
        sessions = {sid: key for sid, key in sessions.items() if key in opts.session_keys}
    label = agent.openclaw_fts[1]
    where = ["session_transcript_fts MATCH ?"]
    params: list[Any] = [query.fts]
    if opts.roles:
        roles = [r for r in opts.roles if r in ("user", "assistant")]
        where.append(f"role IN ({','.join('?' * len(roles))})")
        params.extend(roles)
    if opts.since is not None:
        where.append("timestamp >= ?")
        params.append(opts.since)
    if opts.until is not None:
        where.append("timestamp <= ?")
        params.append(opts.until)
    conn = agent.db_conn.conn
    sql = (
        f"SELECT session_id, message_id, role, timestamp, text, bm25(session_transcript_fts) AS rank"
        f" FROM session_transcript_fts WHERE {' AND '.join(where)} ORDER BY rank"
    )
    accepted = 0
    for sid, mid, role, ts, text, rank in conn.execute(sql, params):
        if sid not in sessions or not isinstance(text, str):
            continue  # a session this index reads itself (OpenClaw's rows for it are incomplete)
        if query.literal is not None and not literal_in(text, query.literal):
            continue
        accepted += 1
        if accepted > want:
            return
        try:
            stamp = int(ts)
        except (TypeError, ValueError):
            stamp = 0
        yield _result(
            agent.agent_id,
            None,
            label,
            sid,
            sessions.get(sid),
            str(mid),
            str(role),
            stamp,
            text,
            float(rank),
        )


# ---- indexes kept open in one process ------------------------------------------------------------
# A process that searches again (a long-lived embedder of `openclaw_cli.search.search`, the
# Gateway's `sessions.search`) keeps each index's shard connections: opening a shard (connect,
# pragmas, the schema check) and closing it (the last connection to a WAL database checkpoints it
# and removes its -wal/-shm files, which the next open creates again) cost more than a warm query.
# Nothing about freshness is kept: every search still compares the state's fingerprint with the
# index's. An index is used by one search at a time (taken out, put back); one whose files were
# replaced or removed since it was opened (the cache dir deleted, another process's rebuild) is
# closed and opened anew; a forked child leaves its parent's connections alone.
KEEP_INDEXES = 8  # indexes kept open per process (the least recently used is closed)
_kept: dict[str, list[tuple[AgentIndex, tuple[tuple[int, int], ...] | None]]] = {}
_kept_pid = os.getpid()
_kept_lock = _thread.allocate_lock()
_orphaned: list[object] = []  # a parent's kept indexes, in a forked child: never used nor closed


def _shard_files(path: Path) -> list[Path]:
    return [path.with_name(f"{path.stem}.{i}{path.suffix}") for i in range(SHARDS)]


def _file_ids(files: list[Path]) -> tuple[tuple[int, int], ...] | None:
    ids = []
    for file in files:
        try:
            st = os.stat(file)
        except OSError:
            return None
        ids.append((st.st_dev, st.st_ino))
    return tuple(ids)


def _take_index(path: Path) -> tuple[AgentIndex, tuple[tuple[int, int], ...] | None]:
    """The index at `path`: one this process kept open if its files are still the ones it opened,
    else opened now (with the identity of the files as they were just before: a file replaced
    in between is seen as changed next time, never the other way round)."""
    global _kept, _kept_pid
    files = _shard_files(path)
    while True:
        with _kept_lock:
            if _kept_pid != os.getpid():
                _orphaned.append(_kept)
                _kept, _kept_pid = {}, os.getpid()
                _pages.clear()
            free = _kept.get(str(path))
            if not free:
                break
            index, ids = free.pop()
        if ids is not None and _file_ids(files) == ids:
            return index, ids
        index.close()
    ids = _file_ids(files)
    index = AgentIndex(path)
    return index, (ids if index.paths == files else None)


def _put_back(path: Path, index: AgentIndex, ids: tuple[tuple[int, int], ...] | None) -> None:
    stale: list[AgentIndex] = [index]
    if ids is not None and not any(shard.conn.in_transaction for shard in index.shards):
        with _kept_lock:
            if _kept_pid == os.getpid():
                stale.clear()
                free = _kept.pop(str(path), None) or []  # re-inserted: the most recently used last
                free.append((index, ids))
                _kept[str(path)] = free
                while len(_kept) > KEEP_INDEXES:
                    stale.extend(kept for kept, _ in _kept.pop(next(iter(_kept))))
    for each in stale:
        each.close()


# The last page each kept index answered, before its snippets were made: served again to the same
# question while the sources' fingerprint and every shard's content generation are the ones it was
# made from (the index's own rule for "nothing changed", so the answer is the one a search would
# make again). File stores only (a database's lines are read back through its own connection).
_pages: dict[str, tuple[tuple[Any, ...], tuple[list[dict[str, Any]], list[str], int]]] = {}


def _page_key(index: AgentIndex, agent: AgentSources, query: Query, opts: Options) -> tuple[Any, ...] | None:
    if agent.db_conn is not None or opts.reindex:
        return None
    generations = []
    for shard in index.shards:
        row = shard.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        generations.append(row[0] if row else None)
    return (
        agent.fingerprint(),
        tuple(generations),
        query,
        opts.roles,
        opts.since,
        opts.until,
        opts.session_keys,
        opts.archived,
        opts.limit,
    )


def _kept_page(
    path: Path | None, key: tuple[Any, ...] | None
) -> tuple[list[dict[str, Any]], list[str], int] | None:
    if key is None or path is None:
        return None
    with _kept_lock:
        if _kept_pid != os.getpid():
            return None
        kept = _pages.get(str(path))
    return kept[1] if kept is not None and kept[0] == key else None


def _keep_page(path: Path, key: tuple[Any, ...], page: tuple[list[dict[str, Any]], list[str], int]) -> None:
    with _kept_lock:
        if _kept_pid != os.getpid():
            return
        _pages.pop(str(path), None)
        _pages[str(path)] = (key, page)
        while len(_pages) > KEEP_INDEXES:
            _pages.pop(next(iter(_pages)))


def forget_answers() -> None:
    """Forget the pages and snippets kept (the open indexes stay): the next question, even one
    asked before, is answered from the index (the bench's "a question not asked before")."""
    with _kept_lock:
        _pages.clear()
        _snippets.clear()


def close_kept() -> None:
    """Close every index this process keeps open and forget the pages and snippets kept (tests; an
    embedder that wants its files back)."""
    with _kept_lock:
        stale = [index for free in _kept.values() for index, _ in free]
        _kept.clear()
        _pages.clear()
        _snippets.clear()
    for index in stale:
        index.close()


def search(targets: list[StoreTarget], query: Query, opts: Options) -> Outcome:
    """Search every target store; at most `opts.limit` results, `truncated` when there were more."""
    outcome = Outcome()
    collected: list[dict[str, Any]] = []
    want = opts.limit + 1
    for target in targets:
        store = target.store
        agent = agent_sources(store, import_archive_dir=target.import_archive_dir)
        try:
            path = None if opts.in_memory else index_path(Path(store.path), opts.index_root)
            ids: tuple[tuple[int, int], ...] | None = None
            if path is None:
                index = AgentIndex(None)
            else:
                index, ids = _take_index(path)
            done = False
            try:
                if opts.reindex:
                    index.reset()
                stats = index.update(
                    agent,
                    their_rows=_their_rows,
                    workers=opts.workers,
                    refresh=functools.partial(
                        agent_sources, store, import_archive_dir=target.import_archive_dir
                    ),
                )
                outcome.updates.append(stats)
                page_key = _page_key(index, agent, query, opts) if ids is not None else None
                page = _kept_page(path, page_key)
                if page is not None:  # the same question of the same sources and index as last time
                    hits, skipped, excluded = page
                    outcome.skipped.extend(skipped)
                    outcome.archived_excluded += excluded
                    collected.extend(dict(hit) for hit in hits)
                    done = True
                    continue
                first_hit, first_skipped = len(collected), len(outcome.skipped)
                outcome.skipped.extend(str(issue) for issue in agent.issues)
                outcome.skipped.extend(index.skipped(live_only=not opts.archived))
                excluded = 0
                if not opts.archived:
                    excluded = agent.archived_count()
                    outcome.archived_excluded += excluded
                ours: Query | None = query
                theirs: Query | None = query
                if query.infix is not None:  # a piece of a word: the words holding it, per index
                    from openclaw_cli.search.index import terms_containing

                    ours = _infix_query(query, index.terms_containing(query.infix, MAX_INFIX_TERMS))
                    theirs = None
                    if agent.openclaw_fts is not None and agent.db_conn is not None:
                        import sqlite3

                        try:
                            found = terms_containing(
                                agent.db_conn.conn,
                                "main",
                                "session_transcript_fts",
                                query.infix,
                                MAX_INFIX_TERMS,
                            )
                            theirs = _infix_query(query, found)
                        except sqlite3.Error:  # no temp table on this connection: word starts only
                            theirs = query
                gens = []
                read: list[tuple[int, tuple[str, int, str, str, str]]] = []
                if ours is not None:
                    gens.append(_our_hits(index, agent, ours, opts, want, read))
                if theirs is not None:
                    gens.append(_their_hits(index, agent, theirs, opts, want))
                for gen in gens:
                    for n, hit in enumerate(gen):
                        collected.append(hit)
                        if n + 1 >= want:
                            break
                if read:
                    index.keep_lines(read)
                if page_key is not None and path is not None:
                    _keep_page(
                        path,
                        page_key,
                        (
                            [dict(hit) for hit in collected[first_hit:]],
                            outcome.skipped[first_skipped:],
                            excluded,
                        ),
                    )
                done = True
            finally:
                if done and path is not None and not index.in_memory:
                    _put_back(path, index, ids)
                else:
                    index.close()
        finally:
            agent.close()
    collected.sort(key=lambda r: (-r["score"], -r["timestamp"], r["messageId"]))
    seen: dict[tuple[Any, ...], int] = {}
    merged: list[dict[str, Any]] = []
    for hit in collected:
        ident = (hit["agentId"], hit["sessionId"], hit["messageId"])
        at = seen.get(ident)
        if at is None:
            seen[ident] = len(merged)
            merged.append(hit)
        elif merged[at]["source"] not in LIVE and hit["source"] in LIVE:
            merged[at] = (
                hit  # the same line live and archived (an import's originals): say where it lives now
            )
    outcome.results = [_snip(hit, query, opts.redact) for hit in merged[: opts.limit]]
    outcome.truncated = len(merged) > opts.limit
    return outcome
