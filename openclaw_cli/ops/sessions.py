"""Session reads: `sessions.list` as `openclaw sessions --json` prints it (observed §7), the
transcript tail (`sessions tail`) and the one key resolution every keyed operation uses."""

from __future__ import annotations

from typing import Any

from openclaw_cli.errors import NotFoundError, UsageError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.targets import open_target, select_targets


def _defaults(ctx: Context) -> tuple[str | None, int | None]:
    from openclaw_cli.config import context_tokens_default, default_model

    return default_model(ctx.config), context_tokens_default(ctx.config)


def list_sessions(
    ctx: Context,
    *,
    agent: str | None = None,
    all_agents: bool = False,
    store: str | None = None,
    active_minutes: int | None = None,
    limit: int | None = 100,
    now: int | None = None,
    archived: bool | str = False,
) -> dict[str, Any]:
    """`openclaw sessions --json` (observed §7): newest first, limited, with OpenClaw's fields.
    Archived rows (`archivedAt` set) are hidden unless `archived` is True (only them) or "all"."""
    from openclaw_cli.ops.rows import session_row

    now = ctx.now_ms() if now is None else now
    targets = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=all_agents, store=store)
    since = now - active_minutes * 60_000 if active_minutes else None
    default_model, default_ctx = _defaults(ctx)
    collected: list[tuple[float, dict[str, Any]]] = []
    stores_out: list[dict[str, Any]] = []
    total = 0
    for target in targets:
        with open_target(ctx, target, read_only=True) as st:
            rows, matched = _visible_entries(st, limit, since, archived)
            total += matched
            stores_out.append({"agentId": target.agent_id, "path": str(st.path)})
            _note_skipped_rows(ctx, st)
            for key, entry in rows:
                row = session_row(
                    key, entry, agent_id=target.agent_id, now_ms=now,
                    default_model=default_model, default_context_tokens=default_ctx,
                )
                updated = row["updatedAt"]
                collected.append((updated if updated is not None else float("-inf"), row))
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
    if ctx.hints:
        result["hint"] = " ".join(ctx.hints)
    return result


def _visible_entries(st: Any, limit: int | None, since: int | None, archived: bool | str
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


def _note_skipped_rows(ctx: Context, store: Any) -> None:
    """Rows a listing cannot show are said, not silently dropped (issue 13 case 6)."""
    skipped = store.skipped_rows() if hasattr(store, "skipped_rows") else []
    if skipped:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        ctx.hint(f"{len(skipped)} row(s) of {store.path} are not listed: {skipped[0].message}{more} "
                 "`openclaw doctor --session-sqlite dry-run` reports each of them.")


def resolve_session(ctx: Context, key: str, *, agent: str | None, store: str | None, read_only: bool = False):
    """Find a session by key in the selected store; returns (target, store, entry)."""
    from openclaw_cli.keys import normalize_key

    if not key or not key.strip():
        raise UsageError("--session-key must not be blank")
    targets = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=False, store=store)
    target = targets[0]
    st = open_target(ctx, target, read_only=read_only)
    entries = st.load_entries()
    wanted = key.strip()
    entry = entries.get(wanted)
    if entry is None:
        norm = normalize_key(wanted)
        for candidate, value in entries.items():
            if normalize_key(candidate) == norm:
                wanted, entry = candidate, value
                break
    if entry is None:
        st.close()
        raise NotFoundError(f"Session not found: {key}. Run openclaw sessions list --json to choose a valid key.")
    return target, st, wanted, entry


def tail_session(
    ctx: Context, key: str, *, n: int = 80, agent: str | None = None, store: str | None = None,
    context: bool = False,
) -> dict[str, Any]:
    """Last `n` entries of the session's active branch (or, with `context`, the model context)."""
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
            items = [line.obj for line in _active_tail(st, session_id, entry, n, issues)]
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


def _active_tail(st, session_id: str, entry: dict, n: int, issues: list) -> list:
    """The last `n` active-branch lines, reading only a bounded tail when the branch is linear
    within it; otherwise (branches, leaf controls, resets) fall back to the full tree walk."""
    from openclaw_cli.store.tree import active_branch

    window = max(4 * n, 64)
    tail = st.tail_transcript(session_id, window, entry=entry, issues=issues)
    if len(tail) < window:  # the whole transcript fit in the window
        return active_branch(tail)[-n:]
    chain = _linear_chain(tail, n)
    if chain is not None:
        return chain
    full = list(st.iter_transcript(session_id, entry=entry, issues=issues))
    return active_branch(full)[-n:]


def _linear_chain(lines: list, n: int) -> list | None:
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
