"""`sessions cleanup --orphans | --tombstones` and `sessions cleanup --explain KEY` (issue 27 §2, §7).

Collection runs offline on each selected store (OpenClaw's `sessions.cleanup` has no such params);
a dry run plans only. `--explain` runs the cleanup planner as a dry run of `--enforce` and says what
it decides for one key, and why, under the release the store follows (D23)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.ops.context import Context
from openclaw_cli.ops.targets import open_target, select_targets


def collect(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `orphans`, `tombstones`, `dryRun`, `agent`, `allAgents`, `store`."""
    from openclaw_cli.maintenance.collect import plan_reclaim
    from openclaw_cli.ops.restore import _retention_ms
    from openclaw_cli.store.retire import Checkpoints
    from openclaw_cli.store.usage_ledger import RetirementLedger, ledgered
    from openclaw_cli.store.writer import store_writer

    dry_run = bool(params.get("dryRun"))
    targets = select_targets(
        ctx.paths,
        ctx.config,
        agent=params.get("agent"),
        all_agents=bool(params.get("allAgents")),
        store=params.get("store"),
    )
    now = ctx.now_ms()
    stores: list[dict[str, Any]] = []
    checkpoint = Checkpoints()
    for target in targets:
        with open_target(ctx, target, read_only=dry_run) as store:
            retention = _retention_ms(ctx, store)
            plan = plan_reclaim(
                store,
                orphans=bool(params.get("orphans")),
                tombstones=bool(params.get("tombstones")),
                retention_ms=retention,
                now_ms=now,
            )
            doc: dict[str, Any] = {
                "agentId": target.agent_id,
                "path": str(store.path),
                "orphans": _files(plan.orphans) if params.get("orphans") else None,
                "tombstones": {**_files(plan.tombstones), "retentionMs": retention}
                if params.get("tombstones")
                else None,
                "reclaimedBytes": 0,
                "archives": [],
            }
            if not store.transcripts_in_files and params.get("orphans"):
                doc["orphans"] = {
                    "files": 0,
                    "bytes": sum(size for _, _, size in plan.orphan_sessions),
                    "names": [],
                    "sessions": [
                        {"sessionId": sid, "events": n, "bytes": size}
                        for sid, n, size in plan.orphan_sessions
                    ],
                    "note": "transcripts inside the database that no row references",
                }
            work = plan.retirement()
            if not dry_run and (work.archive_actions or work.unlink_actions or work.session_ids):
                store.ensure_writable("collect orphans and tombstones")
                ledger = RetirementLedger(store, work, reason="orphan", now_ms=now)
                with store_writer(store, ctx.lock_settings()), ledgered(ledger.appended):
                    outcome = store.retire(
                        work,
                        lock_settings=ctx.lock_settings(),
                        now_ms=now,
                        checkpoint=checkpoint,
                        leaving=ledger,
                    )
                ctx.note_writes(store)
                doc["archives"] = list(outcome.archives)
                doc["reclaimedBytes"] = (
                    sum(a.size for a in plan.orphans)
                    + sum(a.size for a in plan.tombstones)
                    + sum(size for sid, _, size in plan.orphan_sessions if sid not in outcome.kept)
                )
            stores.append(doc)
    checkpoint.finish()
    result: dict[str, Any] = {
        "ok": True,
        "dryRun": dry_run,
        "stores": stores,
        "reclaimedBytes": sum(s["reclaimedBytes"] for s in stores),
        "reclaimableBytes": sum(
            (s["orphans"] or {}).get("bytes", 0) + (s["tombstones"] or {}).get("bytes", 0) for s in stores
        ),
    }
    if ctx.hints:
        result["hint"] = " ".join(ctx.hints)
    return result


def _files(actions: list[Any]) -> dict[str, Any]:
    return {"files": len(actions), "bytes": sum(a.size for a in actions), "names": [a.name for a in actions]}


_ACTION_TEXT = {
    "keep": "kept",
    "prune-missing": "removed: its transcript is missing (--fix-missing)",
    "retire-dm-scope": "removed: a peer-keyed DM row under session.dmScope=main (--fix-dm-scope)",
    "prune-model-run": "removed: a model-run probe older than 24 h, under entry pressure",
    "prune-stale": "removed: not updated within pruneAfter",
    "cap-overflow": "removed: beyond maxEntries (the oldest unprotected rows go first)",
    "prune-cron-retention": "removed: a cron run older than cron.sessionRetention",
    "evict-budget": "removed: the disk budget (maxDiskBytes) evicts the oldest sessions first",
}


def explain(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `key`, `agent`, `store`. What `cleanup --enforce` would do to `key`, and why."""
    from openclaw_cli.config import maintenance_settings
    from openclaw_cli.keys import derive_row_flags
    from openclaw_cli.maintenance.service import CleanupOptions, plan_store
    from openclaw_cli.ops.behavior import behavior_for
    from openclaw_cli.ops.sessions import resolve_session

    target, store, key, entry = resolve_session(
        ctx, params.get("key"), agent=params.get("agent"), store=params.get("store"), read_only=True
    )
    with store:
        behavior = behavior_for(ctx, store)
        now = ctx.now_ms()
        options = CleanupOptions(agent=target.agent_id, dry_run=True, enforce=True, store=params.get("store"))
        result = plan_store(ctx, store, options=options, now_ms=now, behavior=behavior.behavior)
        plan = result.plan
        settings = maintenance_settings(ctx.config, behavior.behavior)
    action = plan.actions.get(key, "keep")
    archived = plan.archived.get(key)
    protected = key in plan.preserved_keys
    updated = entry.get("updatedAt") if isinstance(entry.get("updatedAt"), int | float) else None
    age = None if updated is None else max(0, now - int(updated))
    reasons: list[str] = []
    if archived:
        decision = f"archived in place (archiveReason {archived}); the row and its transcript stay"
    else:
        decision = _ACTION_TEXT.get(action, action)
    flags = derive_row_flags(entry, key)
    if protected:
        reasons.append(
            "protected: the release never removes it (main session, pinned, running, delivery route, …)"
        )
    if flags.get("pinned"):
        reasons.append("pinned")
    if entry.get("archivedAt") is not None:
        reasons.append("already archived")
    if settings.prune_after_ms and age is not None:
        stale = age > settings.prune_after_ms
        reasons.append(
            f"last updated {age // 86_400_000} day(s) ago; pruneAfter is {settings.prune_after_ms // 86_400_000} day(s)"
            + (" (stale)" if stale else " (fresh)")
        )
    stale = bool(settings.prune_after_ms and age is not None and age > settings.prune_after_ms)
    if action == "keep" and not archived and not protected and stale:
        reasons.append("stale, yet this release's rules spare it (a conversation with people or a group)")
    ranked = sorted(
        (k for k in plan.actions if k not in plan.preserved_keys),
        key=lambda k: -(result.entries.get(k, {}).get("updatedAt") or 0),
    )
    if key in ranked and settings.max_entries:
        position = ranked.index(key) + 1
        reasons.append(
            f"newest-first rank {position} of {len(ranked)} unprotected rows; maxEntries is {settings.max_entries}"
        )
    return {
        "key": key,
        "agentId": target.agent_id,
        "release": behavior.behavior.release,
        "mode": settings.mode,
        "action": "archive" if archived else action,
        "decision": decision,
        "removed": key in plan.removed,
        "protected": protected,
        "reasons": reasons,
        "settings": {
            "pruneAfterMs": settings.prune_after_ms or None,
            "maxEntries": settings.max_entries,
            "resetArchiveRetentionMs": settings.reset_archive_retention_ms,
            "maxDiskBytes": settings.max_disk_bytes,
        },
    }
