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
from typing import TYPE_CHECKING, Any

from openclaw_cli.config import configured_agent_ids
from openclaw_cli.errors import NotFoundError, OpenClawError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.ops.context import Context

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


def _stores_of(ctx: Context, agent: str, *, read_only: bool) -> list[Any]:
    """The agent's stores that exist: its SQLite database and/or its legacy sessions.json."""
    from openclaw_cli.store.detect import open_store_at
    from openclaw_cli.store.legacy.store import LegacyStore

    stores: list[SessionStore] = []
    db = ctx.paths.agent_db_path(agent)
    if db.exists():
        store = open_store_at(db, agent_id=agent, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only)
        if not read_only:
            store.configure_writes(ctx.write_options())
        stores.append(store)
    legacy = LegacyStore(ctx.paths.legacy_store_path(agent), agent)
    if legacy.legacy_data_present():
        stores.append(legacy)
    return stores


def _entry(config: Any, agent_id: str) -> Any:
    """The agent's roster entry (`agents.entries.<id>` first, then `agents.list`), or None."""
    from openclaw_cli.config.resolve import _model

    agents = _model(config).agents
    for key, entry in (agents.entries or {}).items():
        if normalize_agent_id(key) == agent_id:
            return entry
    for entry in agents.agent_list or []:
        if entry.id and normalize_agent_id(entry.id) == agent_id:
            return entry
    return None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def default_agent(ctx: Context) -> str | None:
    """The default agent as OpenClaw reports it: None under `agents.ownership: "explicit"`."""
    from openclaw_cli.config import agents_ownership, default_agent_id

    return None if agents_ownership(ctx.config) == "explicit" else default_agent_id(ctx.config)


def workspace_dir(ctx: Context, agent_id: str) -> Path:
    """The agent's workspace (`config.workspace_dir`: the one rule compaction reads AGENTS.md by)."""
    from openclaw_cli.config import workspace_dir as resolve

    found: Path = resolve(ctx.config, agent_id, ctx.paths)
    return found


def agent_dir(ctx: Context, agent_id: str) -> Path:
    from openclaw_cli.paths import expand_user

    own = _text(getattr(_entry(ctx.config, agent_id), "agent_dir", None))
    return expand_user(own, ctx.paths.home) if own else ctx.paths.agent_dir(agent_id) / "agent"


def _binding_rules(ctx: Context, agent_id: str) -> list[str]:
    """`bindings[]` of the raw config that route to this agent, described as OpenClaw does
    (`telegram accountId=bot1`, `discord peer=group:42`)."""
    raw = getattr(ctx.config, "raw", None)
    bindings = raw.get("bindings") if isinstance(raw, dict) else None
    rules = []
    for item in bindings if isinstance(bindings, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("agentId"), str):
            continue
        if normalize_agent_id(item["agentId"]) != agent_id:
            continue
        match: dict[str, Any] = item["match"] if isinstance(item.get("match"), dict) else {}
        parts = [str(match["channel"])] if isinstance(match.get("channel"), str) else []
        if isinstance(match.get("accountId"), str):
            parts.append(f"accountId={match['accountId']}")
        peer = match.get("peer")
        if isinstance(peer, dict) and peer.get("id") is not None:
            parts.append(
                f"peer={peer.get('kind')}:{peer.get('id')}" if peer.get("kind") else f"peer={peer['id']}"
            )
        rules.append(" ".join(parts) or "any")
    return rules


def list_agents(ctx: Context, *, bindings: bool = False) -> list[dict[str, Any]]:
    """`openclaw agents list --json`: OpenClaw's array `[{id, name?, workspace, agentDir, model?,
    bindings, isDefault, routes?|bindingDetails?}]` (with `bindings`: the routing rules), each
    item extended with the store the agent uses (D2): `configured`, `storeKind`, `sessionsPath`,
    `sessionsCount` (`error` when it cannot be read). The agents are those `--all-agents` covers:
    the configured ones (with none configured: also the agent dirs found on disk)."""
    from openclaw_cli.config import default_model
    from openclaw_cli.ops.targets import session_agent_ids
    from openclaw_cli.store.detect import open_agent_store

    configured = set(configured_agent_ids(ctx.config))
    default = default_agent(ctx)
    items: list[dict[str, Any]] = []
    for agent in session_agent_ids(ctx.paths, ctx.config):
        entry = _entry(ctx.config, agent)
        is_default = agent == default
        item: dict[str, Any] = {"id": agent}
        name = _text(getattr(entry, "name", None))
        if name:
            item["name"] = name
        item["workspace"] = str(workspace_dir(ctx, agent))
        item["agentDir"] = str(agent_dir(ctx, agent))
        model = default_model(ctx.config, agent)
        if model:
            item["model"] = model
        rules = _binding_rules(ctx, agent)
        item["bindings"] = len(rules)
        item["isDefault"] = is_default
        if bindings:
            if rules:
                item["bindingDetails"] = rules
            elif is_default:
                item["routes"] = ["default (no explicit rules)"]
        item["configured"] = agent in configured
        try:
            with open_agent_store(
                ctx.paths, agent, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=True
            ) as store:
                exists = store.path.exists()
                item["storeKind"] = store.kind
                item["sessionsPath"] = str(store.path)
                item["sessionsCount"] = store.count_entries() if exists else 0
        except OpenClawError as exc:
            item["storeKind"] = None
            item["sessionsPath"] = None
            item["sessionsCount"] = None
            item["error"] = exc.message
            ctx.failures.append(exc)
        items.append(item)
    return items


def check_deletable(ctx: Context, raw_id: Any) -> str:
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


def agents_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`agents.delete` as the method table runs it."""
    return delete_agent(ctx, params.get("agentId"))


def delete_agent(ctx: Context, agent_id: Any, *, now_ms: int | None = None) -> dict[str, Any]:
    """`agents.delete {agentId, deleteFiles: true}`: archive every transcript of the agent (verified),
    remove its store rows, drop it from the config roster. Refuses the only configured agent."""
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
                from openclaw_cli.store.usage_ledger import ledgered, record_leaving

                _count, rows = store.iter_listing(archived=None)
                appended = record_leaving(  # issue 27: the agent's usage outlives its transcripts
                    store, ((k, e, e.get("sessionId")) for k, e in rows), reason="agent-deleted", now_ms=now
                )
                with ledgered(appended):
                    outcome, count, left = store.retire_all(
                        lock_settings=lock_settings, now_ms=now, checkpoint=checkpoint
                    )
            ctx.note_writes(store)
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
        info["hint"] = (
            f'Remove agent "{agent}" from agents.list / agents.entries in {path} (not rewritten: JSON5).'
        )
        return info
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict):
        return info
    changed = False
    items = agents.get("list")
    if isinstance(items, list):
        kept = [
            a
            for a in items
            if not (
                isinstance(a, dict) and isinstance(a.get("id"), str) and normalize_agent_id(a["id"]) == agent
            )
        ]
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
