"""The operations layer (spec D9): what the local CLI runs and a Gateway would serve.

Every function takes resolved paths + a loaded config and returns plain data (OpenClaw's JSON
shapes); rendering lives in `openclaw_cli.cli`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.errors import NotFoundError, SelectionError, UsageError
from openclaw_cli.paths import StatePaths
from openclaw_cli.selection import Target, select_targets

MIGRATE_HINT = (
    "Legacy session store in use for agent {agent}: {path}. "
    "`openclaw doctor --session-sqlite import` would migrate it to SQLite."
)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Context:
    """Resolved paths + loaded config for one command run."""

    paths: StatePaths
    config: Any  # openclaw_cli.config.LoadedConfig
    hints: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, paths: StatePaths) -> Context:
        from openclaw_cli.config import load_config

        return cls(paths=paths, config=load_config(paths))

    def busy_timeout_ms(self) -> int:
        from openclaw_cli.config import write_lock_settings
        from openclaw_cli.config.resolve import sqlite_busy_timeout_ms

        return sqlite_busy_timeout_ms(write_lock_settings(self.config))  # capped to what SQLite accepts


def open_target(ctx: Context, target: Target, *, read_only: bool = False):
    """Open the store a target names (spec D2): --store path, else the agent's SQLite DB when it
    exists, else its legacy store (with a migration hint). `read_only` opens our SQLite databases
    without write access (dry runs must not even apply a schema migration)."""
    from openclaw_cli.store.detect import open_agent_store, open_store_at

    if target.store_path is not None:
        if not target.store_path.exists():
            raise SelectionError(
                f"Session store target does not exist: {target.store_path}. "
                "Pass a selector whose resolved SQLite target exists."
            )
        if not target.store_path.is_file():
            raise SelectionError(
                f"Session store target is not a regular file: {target.store_path}. "
                "Pass a legacy store selector or SQLite target reported by openclaw sessions or openclaw status."
            )
        return open_store_at(target.store_path, agent_id=target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(),
                             read_only=read_only)
    store = open_agent_store(ctx.paths, target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only)
    if store.kind == "legacy" and (store.path.exists() or _has_transcripts(store.sessions_dir)):
        hint = MIGRATE_HINT.format(agent=target.agent_id, path=store.path)
        if hint not in ctx.hints:
            ctx.hints.append(hint)
    return store


def _has_transcripts(sessions_dir: Path) -> bool:
    try:
        return any(p.suffix == ".jsonl" for p in sessions_dir.iterdir())
    except OSError:
        return False


def parse_limit(raw: str | None) -> int | None:
    if raw is None:
        return 100
    value = raw.strip().lower()
    if value == "all":
        return None
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError('--limit must be a positive integer or "all", for example --limit 25.')


def parse_active(raw: str | None) -> int | None:
    if raw is None:
        return None
    value = raw.strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError("--active must be a positive number of minutes, for example --active 30.")


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
) -> dict[str, Any]:
    """`openclaw sessions --json` (observed §7): newest first, limited, with OpenClaw's fields."""
    from openclaw_cli.rows import session_row

    now = now_ms() if now is None else now
    targets = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=all_agents, store=store)
    since = now - active_minutes * 60_000 if active_minutes else None
    default_model, default_ctx = _defaults(ctx)
    collected: list[tuple[float, dict[str, Any]]] = []
    stores_out: list[dict[str, Any]] = []
    total = 0
    for target in targets:
        with open_target(ctx, target, read_only=True) as st:
            rows, matched = st.list_entries(limit=limit, updated_since_ms=since)
            total += matched
            stores_out.append({"agentId": target.agent_id, "path": str(st.path)})
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
