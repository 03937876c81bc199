"""Session reads: `sessions.list` as `openclaw sessions --json` prints it (observed §7), the
transcript tail (`sessions tail`) and the one key resolution every keyed operation uses."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import NotFoundError, OpenClawError, UsageError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.session_keys import find_entry, main_key_name, resolve_target
from openclaw_cli.ops.targets import open_target, select_targets

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


def _debug(message: str, *args: Any) -> None:
    """A `--verbose` record (the `openclaw` logger). Without the logging module loaded no handler
    exists (`--verbose` loads it), so a listing does not pay for importing it."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger("openclaw").debug(message, *args)


def _shaper(ctx: Context, agent_id: str, now: int) -> Any:
    """The row shaper of one agent's store: rows as the real `openclaw sessions --json` projects
    them (its model defaults, its context window, the implicit runtime)."""
    from openclaw_cli.ops.rows import model_defaults, row_shaper

    model, context_tokens = model_defaults(ctx.config, agent_id)
    return row_shaper(
        agent_id=agent_id,
        now_ms=now,
        default_model=model,
        default_context_tokens=context_tokens,
        projected=True,
    )


def list_sessions(
    ctx: Context,
    *,
    agent: str | None = None,
    all_agents: bool = False,
    store: str | None = None,
    active_minutes: int | None = None,
    limit: int | None = 100,
    now: int | None = None,
    archived: bool | str = "all",
    stream: bool = False,
    filters: Any = None,
) -> dict[str, Any]:
    """`openclaw sessions --json` (observed §7): newest first, limited, with OpenClaw's fields.
    Archived rows (`archivedAt` set) are listed as the real CLI lists them (`archived` "all");
    `archived` True lists only them, False hides them.
    `stream` with no limit: `sessions` is a `jsonutil.StreamedArray` read from the stores while it
    is written (`output.emit_json`), so `--limit all` on 100,000 rows holds one batch at a time.
    `filters` (`listing_filters.ListingFilters`, issue 27): rows are read whole, filtered, then
    ordered (`--sort`) and limited."""
    now = ctx.now_ms() if now is None else now
    targets = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=all_agents, store=store)
    since = now - active_minutes * 60_000 if active_minutes else None
    filtering = filters is not None and filters.active
    if stream and limit is None and not filtering:
        return _streamed_listing(
            ctx,
            targets,
            all_agents=all_agents,
            since=since,
            now=now,
            active_minutes=active_minutes,
            archived=archived,
        )
    collected: list[tuple[float, dict[str, Any]]] = []
    stores_out: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    total = 0
    for target in targets:
        started = time.perf_counter()
        try:
            with open_target(ctx, target, read_only=True) as st:
                rows, matched = _visible_entries(st, None if filtering else limit, since, archived)
                path = str(st.path)
                _note_skipped_rows(ctx, st)
                sizes = st.session_bytes() if filtering and filters.sort == "size" else None
            _debug(
                "agent %s: %d of %d row(s) read in %.1f ms",
                target.agent_id,
                len(rows),
                matched,
                (time.perf_counter() - started) * 1000,
            )
        except OpenClawError as exc:
            if not all_agents:
                raise
            # one broken store must not hide the others: report it, list the rest (exit: its code)
            ctx.failures.append(exc)
            errors.append(store_error(target.agent_id, target_path(target), exc))
            continue
        stores_out.append({"agentId": target.agent_id, "path": path})
        shape = _shaper(ctx, target.agent_id, now)
        if filtering:
            from openclaw_cli.ops.listing_filters import predicate, sort_key

            keep = predicate(filters)
            shaped = [(key, entry, shape(key, entry)) for key, entry in rows]
            shaped = [item for item in shaped if keep(*item)]
            total += len(shaped)
            order = sort_key(filters, sizes)
            collected.extend((order(item), item[2]) for item in shaped)
            continue
        total += matched
        for key, entry in rows:
            row = shape(key, entry)
            updated = row["updatedAt"]
            collected.append((updated if updated is not None else float("-inf"), row))
    if filtering:
        collected.sort(key=lambda item: item[0])
    else:
        collected.sort(key=lambda item: -item[0] if item[0] != float("-inf") else float("inf"))
    sessions = [row for _, row in collected]
    if limit is not None:
        sessions = sessions[:limit]
    aggregate = all_agents
    result: dict[str, Any] = {"path": None if aggregate else stores_out[0]["path"] if stores_out else None}
    if aggregate:
        result["stores"] = stores_out
        result["allAgents"] = True
    result.update(
        {
            "count": len(sessions),
            "totalCount": total,
            "limitApplied": limit,
            "hasMore": total > len(sessions),
            "activeMinutes": active_minutes,
            "sessions": sessions,
        }
    )
    if errors:
        result["errors"] = errors
    if ctx.hints:
        result["hint"] = " ".join(ctx.hints)
    return result


def _streamed_listing(
    ctx: Context,
    targets: list[Any],
    *,
    all_agents: bool,
    since: int | None,
    now: int,
    active_minutes: int | None,
    archived: bool | str,
) -> dict[str, Any]:
    """`list_sessions` without a limit, streamed: every store is opened (and counted) first, so
    errors and counts are known before the first row; the rows of several stores are merged in
    the listing order (newest first; a tie keeps store order, as the sort of the full list does)."""
    import heapq

    from openclaw_cli.jsonutil import Deferred, StreamedArray

    only = None if archived == "all" else archived is True
    opened: list[tuple[Any, Any, Any]] = []
    stores_out: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    total = 0
    try:
        for target in targets:
            try:
                st = open_target(ctx, target, read_only=True)
                try:
                    count, rows = st.iter_listing(updated_since_ms=since, archived=only)
                    _note_skipped_rows(ctx, st)
                except BaseException:
                    st.close()
                    raise
            except OpenClawError as exc:
                if not all_agents:
                    raise
                ctx.failures.append(exc)  # one broken store must not hide the others
                errors.append(store_error(target.agent_id, target_path(target), exc))
                continue
            opened.append((target, st, rows))
            total += count
            stores_out.append({"agentId": target.agent_id, "path": str(st.path)})
    except BaseException:
        for _, st, rows in opened:
            rows.close()
            st.close()
        raise

    def shaped(agent_id: str, rows: Any) -> Any:
        shape = _shaper(ctx, agent_id, now)
        for key, entry in rows:
            yield shape(key, entry)

    def newest_first(row: dict[str, Any]) -> float:
        updated = row["updatedAt"]
        return -updated if updated is not None else float("inf")

    def sessions() -> Any:
        try:
            streams = [shaped(target.agent_id, rows) for target, _, rows in opened]
            yield from streams[0] if len(streams) == 1 else heapq.merge(*streams, key=newest_first)
        finally:
            for _, st, rows in opened:
                rows.close()
                st.close()

    aggregate = all_agents
    result: dict[str, Any] = {"path": None if aggregate else stores_out[0]["path"] if stores_out else None}
    if aggregate:
        result["stores"] = stores_out
        result["allAgents"] = True
    result.update(
        {
            "count": total,
            "totalCount": total,
            "limitApplied": None,
            "hasMore": False,
            "activeMinutes": active_minutes,
            "sessions": StreamedArray(sessions() if opened else iter(())),
        }
    )
    if errors:
        result["errors"] = errors
    result["hint"] = Deferred(lambda: " ".join(ctx.hints) if ctx.hints else None)
    return result


def store_error(agent_id: str, path: str | None, exc: Any) -> dict[str, Any]:
    """One unreadable store in an aggregate result: `{agentId, path, error: {type, message}}`."""
    return {"agentId": agent_id, "path": path, "error": exc.to_json()["error"]}


def target_path(target: Any) -> str:
    """The store file a target names (without opening it): explicit, else the agent's database
    when it exists, else its legacy store."""
    if target.explicit is not None:
        return str(target.explicit)
    return str(target.sqlite_path if target.sqlite_path.exists() else target.store_path)


def _visible_entries(
    st: SessionStore, limit: int | None, since: int | None, archived: bool | str
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """A listing page without (or with only) archived rows. A store without archived rows takes
    the plain path; otherwise pages grow until `limit` visible rows are found."""
    rows, matched = st.list_entries(limit=limit, updated_since_ms=since)
    if archived == "all":
        return rows, matched
    hidden = st.count_archived(updated_since_ms=since)
    if not hidden and archived is not True:
        return rows, matched
    only = archived is True

    def keep(entry: dict[str, Any]) -> bool:
        return (entry.get("archivedAt") is not None) == only

    while True:
        kept = [(key, entry) for key, entry in rows if keep(entry)]
        if limit is None or len(kept) >= limit or len(rows) >= matched:
            break
        rows, matched = st.list_entries(limit=min(matched, len(rows) * 2 + 16), updated_since_ms=since)
    total = hidden if only else matched - hidden
    return (kept[:limit] if limit is not None else kept), total


def _note_skipped_rows(ctx: Context, store: SessionStore) -> None:
    """Rows a listing cannot show are said, not silently dropped (issue 13 case 6)."""
    skipped = store.skipped_rows()
    if skipped:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        ctx.hint(
            f"{len(skipped)} row(s) of {store.path} are not listed: {skipped[0].message}{more} "
            "`openclaw doctor --session-sqlite dry-run` reports each of them."
        )


def resolve_session(
    ctx: Context, key: str | None, *, agent: str | None, store: str | None, read_only: bool = False
) -> Any:
    """Find a session by key in the selected store; returns (target, store, stored key, entry).
    No key means the agent's main session (`agent:<id>:main`)."""
    from openclaw_cli.keys import main_key

    if key is not None and not key.strip():
        raise UsageError("--session-key must not be blank")
    wanted = key.strip() if key is not None else None
    if wanted is not None:
        _, target = resolve_target(ctx, wanted, agent=agent, store=store)  # the one owner rule
    else:
        target = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=False, store=store)[0]
    if wanted is None:
        wanted = main_key(target.agent_id, main_key_name(ctx))
    st = open_target(ctx, target, read_only=read_only)
    try:
        stored_key, entry = find_entry(st, target.agent_id, wanted, main_key_name(ctx))
    except BaseException:
        st.close()
        raise
    if entry is None:
        st.close()
        raise NotFoundError(
            f"Session not found: {wanted}. Run openclaw sessions list --json to choose a valid key."
        )
    return target, st, stored_key, entry


def tail_session(
    ctx: Context,
    key: str | None,
    *,
    n: int = 80,
    agent: str | None = None,
    store: str | None = None,
    context: bool = False,
    cursor: list[str | None] | None = None,
) -> dict[str, Any]:
    """Last `n` entries of the session's active branch (or, with `context`, the model context).
    `cursor` receives the exact text of the transcript's last line as read for this tail: where
    `follow_session(after=…)` starts, so no line between the two is lost or shown twice."""
    from openclaw_cli.store.base import ReadIssue
    from openclaw_cli.store.tree import active_branch, build_context

    if n < 1:
        raise UsageError("--tail must be a positive integer, for example --tail 20.")
    target, st, resolved_key, entry = resolve_session(ctx, key, agent=agent, store=store, read_only=True)
    issues: list[ReadIssue] = []
    with st:
        session_id = entry.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise NotFoundError(f"Session {resolved_key} has no sessionId; nothing to tail.")
        if context:
            branch = active_branch(list(st.iter_transcript(session_id, entry=entry, issues=issues)))
            items: list[Any] = build_context(branch)[-n:]
        else:
            items = [line.obj for line in _active_tail(st, session_id, entry, n, issues, cursor)]
        result: dict[str, Any] = {
            "key": resolved_key,
            "sessionId": session_id,
            "agentId": target.agent_id,
            "path": str(st.path),
            "mode": "context" if context else "entries",
            "count": len(items),
            "entries": items,
        }
        if issues:
            result["issues"] = [str(i) for i in issues]
        if ctx.hints:
            result["hint"] = " ".join(ctx.hints)
        return result


def _active_tail(
    st: SessionStore,
    session_id: str,
    entry: dict[str, Any],
    n: int,
    issues: list[Any],
    cursor: list[Any] | None = None,
) -> list[Any]:
    """The last `n` active-branch lines, reading only a bounded tail when the branch is linear
    within it; otherwise (branches, leaf controls, resets) fall back to the full tree walk."""
    from openclaw_cli.store.tree import active_branch

    window = max(4 * n, 64)
    tail = st.tail_transcript(session_id, window, entry=entry, issues=issues)
    if cursor is not None:
        cursor.append(tail[-1].raw if tail else None)
    if len(tail) < window:  # the whole transcript fit in the window
        return active_branch(tail)[-n:]
    chain = _linear_chain(tail, n)
    if chain is not None:
        return chain
    full = list(st.iter_transcript(session_id, entry=entry, issues=issues))
    if cursor is not None:
        cursor[-1] = full[-1].raw if full else None
    return active_branch(full)[-n:]


def _linear_chain(lines: list[Any], n: int) -> list[Any] | None:
    """Follow parentId links back from the last line inside the window; None when the window has
    anything that needs the full tree (leaf controls, side entries, resets, missing links)."""
    by_id: dict[str, Any] = {}
    for line in lines:
        obj = line.obj
        if not isinstance(obj, dict):
            return None
        if obj.get("type") in ("leaf", "reset") or obj.get("appendMode") == "side":
            return None
        if isinstance(obj.get("id"), str):
            by_id[obj["id"]] = line
    chain: list[Any] = []
    current = lines[-1]
    while current is not None and len(chain) < n:
        obj = current.obj
        if obj.get("type") == "session":
            break
        chain.append(current)
        if "parentId" not in obj:
            return None
        parent = obj.get("parentId")
        if parent is None:
            break
        current = by_id.get(parent)
        if current is None:
            return None  # the branch continues before the window
    chain.reverse()
    return chain


FOLLOW_WINDOW = 256
FOLLOW_WINDOW_MAX = 65_536


_UNSET: Any = object()


def follow_session(
    ctx: Context,
    key: str | None,
    *,
    agent: str | None = None,
    store: str | None = None,
    interval_s: float = 0.5,
    stop: Any = None,
    sleep: Any = None,
    after: Any = _UNSET,
    session_id: str | None = None,
) -> Any:
    """`sessions tail --follow`: yield what is appended to a session's transcript after its current
    end, polling the store (both kinds, read-only): `{"type": "entry", key, sessionId, entry}` per
    new line, and `{"type": "session", key, sessionId, previousSessionId}` when the row moves to
    a new transcript (a reset, a compaction successor). New lines are found after the last line
    seen (its exact text), so no line is shown twice; a burst longer than the polled window widens
    it. `after` is the last line already shown (`tail_session(cursor=…)`; default: the current
    end) of transcript `session_id` (default: the row's current one). `stop()` (checked before each poll) ends the generator; Ctrl-C ends the CLI's loop."""
    import time

    sleep = time.sleep if sleep is None else sleep
    target, st, stored_key, entry = resolve_session(ctx, key, agent=agent, store=store, read_only=True)
    with st:
        if session_id is None or after is _UNSET:
            session_id = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None
        anchor = _last_raw(st, session_id, entry) if after is _UNSET else after
    while stop is None or not stop():
        sleep(interval_s)
        if stop is not None and stop():
            return
        # a fresh read-only open per poll: a read-only SQLite connection may be a snapshot
        # (immutable, or a private copy) that never sees later commits
        with open_target(ctx, target, read_only=True) as st:
            current = st.get_entry(stored_key)
            if current is None:
                continue  # deleted (or being rewritten): keep waiting for it
            current_id = current.get("sessionId") if isinstance(current.get("sessionId"), str) else None
            moved = current_id != session_id
            if moved:
                previous, session_id, anchor = session_id, current_id, None
            lines, anchor = _appended(st, session_id, current, anchor) if session_id else ([], anchor)
        if moved:
            yield {
                "type": "session",
                "key": stored_key,
                "sessionId": current_id,
                "previousSessionId": previous,
            }
        for line in lines:
            yield {"type": "entry", "key": stored_key, "sessionId": session_id, "entry": line.obj}


def _last_raw(st: SessionStore, session_id: str | None, entry: dict[str, Any]) -> str | None:
    if session_id is None:
        return None
    last = st.tail_transcript(session_id, 1, entry=entry, issues=[])
    return last[-1].raw if last else None


def _appended(
    st: SessionStore, session_id: str, entry: dict[str, Any], anchor: str | None
) -> tuple[list[Any], str | None]:
    """(lines after `anchor`, the new anchor). No anchor: the transcript is new, every line is."""
    window = FOLLOW_WINDOW
    while True:
        lines = st.tail_transcript(session_id, window, entry=entry, issues=[])  # a partial last line waits
        if not lines:
            return [], anchor
        if anchor is None:
            if len(lines) < window or window >= FOLLOW_WINDOW_MAX:
                return lines, lines[-1].raw
        else:
            for i in range(len(lines) - 1, -1, -1):
                if lines[i].raw == anchor:
                    return lines[i + 1 :], lines[-1].raw
            if len(lines) < window:
                return [], lines[-1].raw  # rewritten shorter (e.g. compact --max-lines): start from its end
            if window >= FOLLOW_WINDOW_MAX:
                return lines, lines[-1].raw  # more than the widest window arrived: show the newest
        window *= 4
