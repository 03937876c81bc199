"""`agents.list` and `agents.delete` (`openclaw agents list|delete`).

Deleting an agent never deletes a transcript (D6.2, D15): every transcript of the agent — its
SQLite sessions and its legacy `*.jsonl` files, orphans included — leaves through a verified
zstd archive in the agent's sessions dir (the same archive-then-remove code as cleanup), then the
store rows go. The agent directory stays with those archives. A strict-JSON config file loses
the agent's roster entry (a backup `<config>.bak` is written first); a JSON5 file with comments
is not rewritten and the result says what to remove by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openclaw_cli.errors import NotFoundError, OpenClawError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.ops.context import Context


def _stores_of(ctx: Context, agent: str, *, read_only: bool) -> list[Any]:
    """The agent's stores that exist: its SQLite database and/or its legacy sessions.json."""
    from openclaw_cli.store.detect import open_store_at
    from openclaw_cli.store.legacy import LegacyStore

    stores: list[Any] = []
    db = ctx.paths.agent_db_path(agent)
    if db.exists():
        stores.append(open_store_at(db, agent_id=agent, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only))
    legacy = LegacyStore(ctx.paths.legacy_store_path(agent), agent)
    if legacy.legacy_data_present():
        stores.append(legacy)
    return stores


def list_agents(ctx: Context) -> dict[str, Any]:
    """Configured agents plus agent directories found on disk, with the store each one uses (D2)
    and its session count."""
    from openclaw_cli.config import configured_agent_ids, default_agent_id
    from openclaw_cli.ops.targets import known_agent_ids
    from openclaw_cli.store.detect import open_agent_store

    configured = configured_agent_ids(ctx.config)
    default = default_agent_id(ctx.config)
    agents = []
    for agent in known_agent_ids(ctx.paths, ctx.config):
        row: dict[str, Any] = {"id": agent, "default": agent == default, "configured": agent in configured}
        try:
            with open_agent_store(ctx.paths, agent, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=True) as store:
                exists = store.path.exists()
                row["store"] = {"kind": store.kind, "path": str(store.path), "exists": exists}
                row["sessions"] = store.count_entries() if exists else 0
        except OpenClawError as exc:
            row["store"] = None
            row["sessions"] = None
            row["error"] = exc.message
        agents.append(row)
    return {"defaultId": default, "agents": agents,
            "totalSessions": sum(a["sessions"] or 0 for a in agents)}


def check_deletable(ctx: Context, raw_id: str) -> str:
    """The normalised id of an agent that may be deleted (it exists and is not the only one)."""
    from openclaw_cli.config import configured_agent_ids
    from openclaw_cli.ops.targets import known_agent_ids

    if not isinstance(raw_id, str) or not raw_id.strip():
        raise OpenClawError("agent id must not be blank")
    from openclaw_cli.ids import parse_agent_arg

    agent = parse_agent_arg(raw_id, "agents delete")  # `../x` is refused, never slugged into another agent
    if agent not in known_agent_ids(ctx.paths, ctx.config):
        raise NotFoundError(f'agent "{raw_id.strip()}" not found')
    configured = configured_agent_ids(ctx.config)
    if configured == [agent]:
        raise OpenClawError(f'Agent "{agent}" is the only configured agent and cannot be deleted.')
    return agent


def delete_agent(ctx: Context, agent_id: str, *, now_ms: int | None = None) -> dict[str, Any]:
    """`agents.delete {agentId, deleteFiles: true}`: archive every transcript of the agent (verified),
    remove its store rows, drop it from the config roster. Refuses the only configured agent and
    real OpenClaw databases (read-only, D4)."""
    from openclaw_cli.store.retire import Checkpoints
    from openclaw_cli.store.writer import store_writer

    agent = check_deletable(ctx, agent_id)
    lock_settings = ctx.lock_settings()
    from openclaw_cli.store.leftovers import sweep_crash_leftovers

    for directory in (ctx.paths.sessions_dir(agent), ctx.paths.config_path.parent):
        sweep_crash_leftovers(directory, lock_settings)  # a killed delete's partial archive or config copy
    now = ctx.now_ms() if now_ms is None else int(now_ms)
    checkpoint = Checkpoints()
    stores = _stores_of(ctx, agent, read_only=False)
    removed: list[dict[str, Any]] = []
    archives: list[str] = []
    entries_removed = 0
    kept_rows = 0
    try:
        for store in stores:
            store.ensure_writable(f'delete agent "{agent}"')
        for store in stores:
            with store_writer(store, lock_settings):
                outcome, count, left = store.retire_all(lock_settings=lock_settings, now_ms=now, checkpoint=checkpoint)
            kept_rows += left
            entries_removed += count
            archives.extend(outcome.archives)
            removed.append({"path": str(store.path), "method": "emptied"})
    finally:
        for store in stores:
            store.close()
    config = _remove_from_config(ctx, agent)
    checkpoint.finish()
    sessions_dir = ctx.paths.sessions_dir(agent)
    return {
        "ok": True,
        "agentId": agent,
        "removedBindings": 0,
        "removed": removed,
        "failed": [],
        "removedEntries": entries_removed,
        "keptRows": kept_rows,
        "archivedTranscripts": len(archives),
        "archiveDir": str(sessions_dir),
        "archives": archives,
        "config": config,
    }


def _remove_from_config(ctx: Context, agent: str) -> dict[str, Any]:
    """Drop the agent from `agents.list` / `agents.entries` of a strict-JSON config (comments and
    JSON5 syntax would be lost by a rewrite: those files are left for the operator)."""
    import orjson

    from openclaw_cli.fsio import atomic_write_bytes

    path = Path(ctx.paths.config_path)
    info: dict[str, Any] = {"path": str(path), "updated": False}
    if not path.exists():
        return info
    raw = path.read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        info["hint"] = f'Remove agent "{agent}" from agents.list / agents.entries in {path} (not rewritten: JSON5).'
        return info
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return info
    changed = False
    items = agents.get("list")
    if isinstance(items, list):
        kept = [a for a in items if not (isinstance(a, dict) and isinstance(a.get("id"), str)
                                         and normalize_agent_id(a["id"]) == agent)]
        if len(kept) != len(items):
            agents["list"] = kept
            changed = True
    entries = agents.get("entries")
    if isinstance(entries, dict):
        for key in [k for k in entries if normalize_agent_id(k) == agent]:
            del entries[key]
            changed = True
    if changed:
        atomic_write_bytes(path.with_name(path.name + ".bak"), raw)
        atomic_write_bytes(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
        info["updated"] = True
        info["backup"] = str(path.with_name(path.name + ".bak"))
    return info
