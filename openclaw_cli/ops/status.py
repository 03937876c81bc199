"""`openclaw status --json` (spec D17): OpenClaw's top-level keys where we can fill them truthfully
(`sessions`, `gateway`, `agents`), ours under new keys (`stateDir`, `configPath`, `config`,
`stores`, `maintenance`). Read-only: nothing on disk is modified."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openclaw_cli.clock import now_ms
from openclaw_cli.errors import ConfigError, OpenClawError
from openclaw_cli.gcpause import gc_paused
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.targets import open_target
from openclaw_cli.paths import StatePaths

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

RECENT_LIMIT = 10


def _updated(entry: dict[str, Any]) -> float:
    value = entry.get("updatedAt")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else float("-inf")


def _newest(entries: dict[str, Any], n: int) -> list[tuple[str, dict[str, Any]]]:
    """The `n` rows with the largest `updatedAt` (missing or not a number: oldest), ties in store
    order (`heapq.nlargest` is stable). Scores are read with C-level calls when every row has an
    integer `updatedAt`, the usual store."""
    keys, rows = list(entries), list(entries.values())
    scores: list[Any] = [e.get("updatedAt") if type(e) is dict else None for e in rows]
    if not all(type(score) is int for score in scores):
        items = [(k, e) for k, e in entries.items() if isinstance(e, dict)]
        return heapq.nlargest(n, items, key=lambda item: _updated(item[1]))
    return [(keys[i], rows[i]) for i in heapq.nlargest(n, range(len(rows)), key=scores.__getitem__)]


def status_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `sessions.recent[]` row (R6.3.3) from a listing row; fields we cannot fill are omitted."""
    total = row.get("totalTokens")
    ctx = row.get("contextTokens")
    fresh = row.get("totalTokensFresh") is True or (
        total is not None and row.get("totalTokensFresh") is not False
    )
    out: dict[str, Any] = {
        "agentId": row["agentId"],
        "key": row["key"],
        "kind": row["kind"],
        "sessionId": row.get("sessionId"),
        "updatedAt": row.get("updatedAt"),
        "age": row.get("ageMs"),
    }
    for name in (
        "thinkingLevel",
        "verboseLevel",
        "reasoningLevel",
        "elevatedLevel",
        "systemSent",
        "abortedLastRun",
        "inputTokens",
        "outputTokens",
    ):
        if name in row:
            out[name] = row[name]
    out["totalTokens"] = total
    out["totalTokensFresh"] = bool(row.get("totalTokensFresh"))
    if total is not None and ctx and fresh:
        out["remainingTokens"] = max(0, ctx - total)
        out["percentUsed"] = min(999, round(total / ctx * 100))
    else:
        out["remainingTokens"] = None
        out["percentUsed"] = None
    out["model"] = row.get("model")
    out["contextTokens"] = ctx
    flags = []
    for name, label in (
        ("thinkingLevel", "think"),
        ("verboseLevel", "verbose"),
        ("reasoningLevel", "reasoning"),
        ("elevatedLevel", "elevated"),
    ):
        if row.get(name):
            flags.append(f"{label}:{row[name]}")
    if row.get("systemSent"):
        flags.append("system")
    if row.get("abortedLastRun"):
        flags.append("aborted")
    if row.get("sessionId"):
        flags.append(f"id:{row['sessionId']}")
    out["flags"] = flags
    return out


def _maintenance_view(
    settings: Any, previews: list[dict[str, Any]], archives: bool = False
) -> dict[str, Any]:
    """The effective retention policy, so users see it before it bites (D15: archives are removed
    only by the policy shown here)."""
    from openclaw_cli.config import format_byte_size, format_duration_ms

    def duration(ms: int | None) -> str | None:
        return format_duration_ms(ms) if ms else None

    prune = duration(settings.prune_after_ms)
    retention = duration(settings.reset_archive_retention_ms)
    budget = format_byte_size(settings.max_disk_bytes) if settings.max_disk_bytes else None
    if archives:
        dashboard = duration(getattr(settings, "archive_dashboard_after_ms", None))
        recent = duration(getattr(settings, "preserve_recent_ms", None))
        rules = [
            f"stale sessions after: {prune or 'never (pruneAfter disabled)'} (by updatedAt): synthetic ones (cron, "
            "hook, sub-agent, …) are deleted, the others archived in place; conversations with people and groups "
            "(DMs, groups, channels, threads), the main session, pinned, running and locked sessions are never touched",
            f"inactive dashboard sessions archived after: {dashboard or 'never (archiveDashboardAfter disabled)'}",
            f"entry cap: {settings.max_entries} unarchived sessions (the oldest unprotected beyond it are archived; "
            "synthetic ones deleted)",
            *([f"sessions active within {recent} are never touched (preserveRecent)"] if recent else []),
        ]
    else:
        rules = [
            f"stale sessions pruned after: {prune or 'never (pruneAfter disabled)'} (by updatedAt; groups, channels, "
            "threads, the main session and locked sessions are never age-pruned)",
            f"entry cap: {settings.max_entries} (oldest unprotected sessions beyond it are removed)",
        ]
    lines = [
        f"mode: {settings.mode}",
        *rules,
        f"model-run probe sessions pruned after: {format_duration_ms(settings.model_run_prune_after_ms)} "
        "(only under entry pressure)",
        f"deleted/reset transcript archives kept: {retention or 'forever (resetArchiveRetention unset)'}",
        f"disk budget: {budget + _high_water(settings) if budget else 'disabled'}",
        "removed transcripts are archived (zstd, verified) in the agent's sessions dir before anything is deleted",
    ]
    return {
        "mode": settings.mode,
        "pruneAfterMs": settings.prune_after_ms or None,
        "maxEntries": settings.max_entries,
        "modelRunPruneAfterMs": settings.model_run_prune_after_ms,
        "resetArchiveRetentionMs": settings.reset_archive_retention_ms,
        "maxDiskBytes": settings.max_disk_bytes,
        "highWaterBytes": settings.high_water_bytes,
        "lines": lines,
        "wouldRemoveNow": previews,
    }


def _high_water(settings: Any) -> str:
    from openclaw_cli.config import format_byte_size

    high, top = settings.high_water_bytes, settings.max_disk_bytes
    if not high or not top:
        return ""
    pct = high * 100 / top
    if abs(pct - round(pct)) < 0.01:
        return f" (cleanup brings it down to {round(pct)}%)"
    return f" (cleanup brings it down to {format_byte_size(high)})"


# (config, paths) -> status's `gateway` block; the front end supplies it (the Gateway client lives above ops)
GatewayProbe = Callable[[Any, StatePaths], dict[str, Any]]

GATEWAY_KEYS = (
    "mode",
    "url",
    "urlSource",
    "misconfigured",
    "reachable",
    "connectLatencyMs",
    "self",
    "error",
    "authWarning",
)


def gateway_block(block: dict[str, Any]) -> dict[str, Any]:
    """The `gateway` block in OpenClaw's key order (observed §7), `self` null unless the probe
    filled it; keys only ours (e.g. `probed`) follow."""
    out = {key: block.get(key) for key in GATEWAY_KEYS}
    out.update({k: v for k, v in block.items() if k not in out})
    return out


def _ownership(config: Any) -> str:
    """OpenClaw's `agents.ownership` in status: `explicit` (several agents, `agents.ownership:
    "explicit"`), `legacy` (several agents, one marked `default: true`), `sole` (one agent)."""
    from openclaw_cli.config import agent_roster, agents_ownership

    roster = agent_roster(config)
    if len(roster) <= 1:
        return "sole"
    if agents_ownership(config) == "explicit" or not any(marked for _, marked in roster):
        return "explicit"
    return "legacy"


def _can_write(store: SessionStore) -> bool:
    """Whether the store can be written: a kind we write (every kind since issue 12: a real OpenClaw
    schema-23 agent DB too, D21; other schemas never open) in a file (and directory) we may write."""
    import os

    if not store.accepts_writes:
        return False
    path = store.path
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    return os.access(path.parent, os.W_OK) if path.parent.exists() else True


def build_status(
    paths: StatePaths,
    *,
    probe: GatewayProbe | None = None,
    clock: Callable[[], int] = now_ms,
    failures: list[Any] | None = None,
    hints: list[str] | None = None,
) -> dict[str, Any]:
    """`openclaw status --json`. The config is loaded here, leniently: an invalid config is
    reported (and defaults used) instead of failing the command. A store that cannot be read is
    reported with its error (and appended to `failures`) while the others are still shown; the
    hints said (also joined in `hint`) are appended to `hints`.
    Without `probe` the Gateway block says "not probed"."""
    from openclaw_cli.config import (
        context_tokens_default,
        default_agent_id,
        default_model,
        gateway_settings,
        load_config,
        maintenance_settings,
        session_store_template,
    )
    from openclaw_cli.ops.agents import workspace_dir
    from openclaw_cli.ops.rows import session_row
    from openclaw_cli.ops.sessions import store_error, target_path
    from openclaw_cli.ops.targets import session_agent_ids, unconfigured_agent_ids

    now = clock()
    config_block: dict[str, Any] = {"valid": True, "exists": True, "errors": [], "warnings": []}
    try:
        loaded = load_config(paths)
        config_block["warnings"] = list(loaded.warnings)
        config_block["exists"] = bool(loaded.exists)
    except ConfigError as exc:
        # status must still report; fall back to defaults and show the problem.
        config_block = {
            "valid": False,
            "exists": True,
            "errors": exc.issues or [{"path": "", "message": exc.message}],
            "warnings": [],
        }
        loaded = load_config(paths, ignore_errors=True)
    paths = paths.with_session_store(session_store_template(loaded))
    ctx = Context(paths=paths, config=loaded, clock=clock)
    gw = gateway_settings(loaded)
    gateway = (
        probe(loaded, paths)
        if probe is not None
        else {
            "mode": "local",
            "url": f"ws://127.0.0.1:{gw.port}",
            "urlSource": "local loopback",
            "misconfigured": False,
            "reachable": False,
            "connectLatencyMs": None,
            "error": "not probed",
            "probed": False,
        }
    )
    ctx.owning_gateway = owning_gateway(gateway)
    # the policy shown is the default agent's store's (the first listed), else D23's without a store
    view_behavior: dict[str, Any] | None = None
    model_ref, ctx_default = default_model(loaded), context_tokens_default(loaded)
    model_default = model_ref.rpartition("/")[2] if model_ref else None  # OpenClaw shows the model id
    ownership = _ownership(loaded)
    default_id = None if ownership == "explicit" else default_agent_id(loaded)

    by_agent: list[dict[str, Any]] = []
    stores: list[dict[str, Any]] = []
    agents: list[dict[str, Any]] = []
    previews: list[dict[str, Any]] = []
    all_rows: list[dict[str, Any]] = []
    session_paths: list[str] = []
    errors: list[dict[str, Any]] = []
    total_sessions = 0
    agent_ids = session_agent_ids(paths, loaded)
    if default_id in agent_ids:  # OpenClaw lists the default agent first
        agent_ids = [default_id] + [a for a in agent_ids if a != default_id]
    for agent_id in agent_ids:
        target = paths.target(agent_id)
        try:
            store = open_target(ctx, target, read_only=True)
            with store, gc_paused():  # a 20k-row store: see gcpause
                followed = _store_behavior(ctx, store)
                view_behavior = view_behavior or followed
                store_settings = maintenance_settings(loaded, followed["resolved"])
                # issue 30: the rows' facts, not whole entries (a 100k-row database: ~35 MB, not ~190)
                sizes: dict[str, int] | None = (
                    {} if _budget_counts_entries(store_settings, followed["resolved"]) else None
                )
                entries = store.load_facts(entry_bytes=sizes)
                # the per-field problem count is not shown here: skip that scan of every row
                stats = store.stats(count_issues=False)
                # Only the newest rows are shown: pick them by their facts, then read them whole.
                newest = _newest(entries, RECENT_LIMIT)
                rows = [
                    session_row(
                        k,
                        store.get_entry(k) or e,  # (or its facts, should a writer have removed it since)
                        agent_id=agent_id,
                        now_ms=now,
                        default_model=model_ref,
                        default_context_tokens=ctx_default,
                    )
                    for k, e in newest
                ]
                preview = _preview(
                    agent_id, store, entries, store_settings, now, followed["resolved"], sizes or None
                )
                store_path, kind, schema, writable = (
                    str(store.path),
                    store.kind,
                    store.schema,
                    _can_write(store),
                )
        except OpenClawError as exc:
            # one broken store must not hide the others: show it with its error (exit: its code)
            if failures is not None:
                failures.append(exc)
            item = store_error(agent_id, target_path(target), exc)
            errors.append(item)
            stores.append(
                {
                    "agent": agent_id,
                    "kind": None,
                    "path": item["path"],
                    "error": exc.message,
                    "errorType": exc.type,
                }
            )
            continue
        recent = [status_row(r) for r in rows[:RECENT_LIMIT]]
        all_rows.extend(rows[:RECENT_LIMIT])
        session_paths.append(store_path)
        total_sessions += len(entries)
        by_agent.append({"agentId": agent_id, "path": store_path, "count": len(entries), "recent": recent})
        last_updated = rows[0]["updatedAt"] if rows else None
        agents.append(
            {
                "id": agent_id,
                "workspaceDir": str(workspace_dir(ctx, agent_id)),
                "sessionsPath": store_path,
                "sessionsCount": len(entries),
                "lastUpdatedAt": last_updated,
                "lastActiveAgeMs": (now - last_updated) if last_updated is not None else None,
            }
        )
        stores.append(
            {
                "agent": agent_id,
                "kind": kind,
                "path": store_path,
                "schema": schema,
                "readOnly": not writable,
                "sessions": stats.sessions,
                # issue 22 §7: archived rows counted apart (`openclaw sessions` lists them too)
                "archivedSessions": sum(
                    1 for e in entries.values() if isinstance(e, dict) and "archivedAt" in e
                ),
                "transcriptBytes": stats.transcript_bytes,
                "transcriptEvents": stats.transcript_events,
                "archives": {"count": stats.archives_count, "bytes": stats.archives_bytes},
                **({"backups": stats.extra["backups"]} if "backups" in stats.extra else {}),
                "compactions": stats.compactions,
                "behavior": followed["json"],
            }
        )
        previews.append(preview)
    all_rows.sort(key=lambda r: -(r["updatedAt"] or 0))
    view_behavior = view_behavior or _store_behavior(ctx, None)
    settings = maintenance_settings(loaded, view_behavior["resolved"])
    unconfigured = [
        {"agent": a, "path": target_path(paths.target(a))} for a in unconfigured_agent_ids(paths, loaded)
    ]
    if unconfigured:
        ctx.hint(
            f"Agent store(s) on disk but not in the config: {', '.join(u['agent'] for u in unconfigured)}. "
            "status and --all-agents leave them out; reach one with --store PATH, or add it to agents.list."
        )
    result: dict[str, Any] = {
        "sessions": {
            "paths": session_paths,
            "count": total_sessions,
            "defaults": {"model": model_default, "contextTokens": ctx_default},
            "recent": [status_row(r) for r in all_rows[:RECENT_LIMIT]],
            "byAgent": by_agent,
        },
        "gateway": gateway_block(gateway),
        "agents": {
            "defaultId": default_id,
            "ownership": ownership,
            "selectionRequired": ownership == "explicit",
            "agents": agents,
            "totalSessions": total_sessions,
        },
        "stateDir": str(paths.state_dir),
        "stateDirExists": paths.state_dir.is_dir(),
        "configPath": str(paths.config_path),
        "config": config_block,
        "stores": stores,
        "maintenance": {
            **_maintenance_view(settings, previews, view_behavior["resolved"].maintenance.archive_in_place),
            "behavior": view_behavior["json"],
        },
    }
    if unconfigured:
        result["unconfiguredStores"] = unconfigured
    if errors:
        result["errors"] = errors
    if ctx.hints:
        result["hint"] = " ".join(ctx.hints)
        if hints is not None:
            hints.extend(ctx.hints)
    return result


def owning_gateway(block: dict[str, Any]) -> tuple[str, str] | None:
    """(version, url) of the Gateway the probe reached and that named its version (hello-ok
    `server.version`): the one that applies this state's maintenance (D23)."""
    version = (block.get("self") or {}).get("version") if isinstance(block.get("self"), dict) else None
    if block.get("reachable") and isinstance(version, str) and version.strip():
        return version.strip(), str(block.get("url") or "")
    return None


def _store_behavior(ctx: Context, store: SessionStore | None) -> dict[str, Any]:
    """The release a store follows and why (D23), as status shows it; a config whose
    `meta.lastTouchedVersion` is not a version is shown as the error it is (the rules that need
    it refuse to run), with the newest release's defaults in the meantime."""
    from openclaw_cli.behavior import NEWEST
    from openclaw_cli.ops.behavior import behavior_for

    try:
        resolved = behavior_for(ctx, store)
    except OpenClawError as exc:
        return {"resolved": NEWEST, "json": {"release": None, "source": "error", "reason": exc.message}}
    return {"resolved": resolved.behavior, "json": resolved.to_json()}


def _budget_counts_entries(settings: Any, behavior: Any) -> bool:
    """Whether the preview's disk budget counts each row's bytes (a logical budget that is on)."""
    from openclaw_cli.maintenance.budget import budget_limits

    return not behavior.maintenance.budget_spares_live_rows and (
        budget_limits(settings.max_disk_bytes, settings.high_water_bytes) is not None
    )


def _preview(
    agent_id: str,
    store: SessionStore,
    entries: dict[str, Any],
    settings: Any,
    now: int,
    behavior: Any,
    entry_bytes: dict[str, int] | None = None,
) -> dict[str, Any]:
    """What `sessions cleanup --enforce` would remove now, from stored figures only (no transcript
    reads), plus when the next entry reaches `pruneAfter`. `entries` are the rows' facts;
    `entry_bytes` the whole rows' sizes where the facts are not whole (`load_facts`)."""
    from openclaw_cli.maintenance.budget import SqliteMeasure
    from openclaw_cli.maintenance.plan import ACTION_KEEP, plan_cleanup, updated_at

    measure: Any = None
    if behavior.maintenance.budget_spares_live_rows:  # a physical budget that never evicts a live row
        from pathlib import Path

        from openclaw_cli.maintenance.budget import measure_physical

        database = None if store.transcripts_in_files or not Path(store.path).exists() else Path(store.path)
        measure = measure_physical(Path(store.sessions_dir), database)
    elif (session_bytes := store.preview_session_bytes()) is not None:
        measure = SqliteMeasure(session_bytes, entry_bytes)
    plan = plan_cleanup(
        entries,
        settings,
        now_ms=now,
        budget_measure=measure,
        agent_id=agent_id,
        mode_override="enforce",
        behavior=behavior,
    )
    next_prune = None
    if settings.prune_after_ms:
        preserved, actions = plan.preserved_keys, plan.actions
        kept = [
            u
            for k, e in entries.items()
            if actions.get(k) == ACTION_KEEP and k not in preserved and (u := updated_at(e)) is not None
        ]
        if kept:
            next_prune = int(min(kept) + settings.prune_after_ms)
    return {
        "agentId": agent_id,
        "beforeCount": plan.before_count,
        "afterCount": plan.after_count,
        "modelRunPruned": plan.model_run_pruned,
        "pruned": plan.pruned,
        "capped": plan.capped,
        "evicted": plan.evicted,
        "archived": plan.archived_count,  # 2026.9.6+: archived in place (dashboard, age), and by the cap
        "capArchived": plan.cap_archived,
        "nextPruneAt": next_prune,
    }
