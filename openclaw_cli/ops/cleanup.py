"""`sessions.cleanup` (`openclaw sessions cleanup`, `openclaw cleanup`; maintenance.md §10): select
the stores, hold each store's writer while its plan is made and applied, and return OpenClaw's
document. A dry run plans only: no store rewrite, no database created, no lock file (D6.1).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import OpenClawError
from openclaw_cli.gcpause import gc_paused
from openclaw_cli.maintenance.service import (
    CleanupOptions,
    PartialCleanupError,
    StoreCleanup,
    apply_store,
    check_archive_dir,
    plan_store,
)
from openclaw_cli.ops.behavior import behavior_for
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.targets import open_target, select_targets

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

__all__ = [
    "CleanupOptions",
    "PartialCleanupError",
    "StoreCleanup",
    "cleanup_document",
    "cleanup_stores",
    "options_from_params",
    "sessions_cleanup",
    "store_views",
]


def options_from_params(params: dict[str, Any]) -> CleanupOptions:
    """The Gateway's `sessions.cleanup` params (`agent, allAgents, enforce, activeKey, fixMissing,
    fixDmScope`) plus what only a local run has (`dryRun`, `store`)."""
    return CleanupOptions(
        agent=params.get("agent"),
        all_agents=bool(params.get("allAgents")),
        store=params.get("store"),
        dry_run=bool(params.get("dryRun")),
        enforce=bool(params.get("enforce")),
        active_key=params.get("activeKey"),
        fix_missing=bool(params.get("fixMissing")),
        fix_dm_scope=bool(params.get("fixDmScope")),
    )


def cleanup_stores(ctx: Context, options: CleanupOptions, *, now_ms: int | None = None) -> list[StoreCleanup]:
    """Clean every selected store (sequentially); one StoreCleanup per physical store."""
    from openclaw_cli.store.retire import Checkpoints

    if options.active_key is not None and not options.active_key.strip():
        options.active_key = None
    targets = select_targets(
        ctx.paths, ctx.config, agent=options.agent, all_agents=options.all_agents, store=options.store
    )
    lock_settings = ctx.lock_settings()
    checkpoint = Checkpoints()
    results: list[StoreCleanup] = []
    seen: set[str] = set()
    for target in targets:
        try:
            with open_target(ctx, target, read_only=options.dry_run) as store:
                physical = os.path.realpath(store.path)
                if physical in seen:
                    continue  # --all-agents: deduplicated by physical target (§10.1)
                seen.add(physical)
                behavior = behavior_for(ctx, store)
                if options.dry_run:
                    now = now_ms if now_ms is not None else ctx.now_ms()
                    with gc_paused():
                        result = plan_store(
                            ctx, store, options=options, now_ms=now, behavior=behavior.behavior
                        )
                    if options.text_report or options.reason_bytes:  # (the text report, `storage`)
                        result.reason_bytes = reason_bytes(store, result)
                else:
                    store.ensure_writable("clean up sessions")
                    check_archive_dir(ctx, store)
                    from openclaw_cli.store.writer import store_writer  # (a dry run takes no lock)

                    # the collector paused over the plan and the apply too: the apply's exports,
                    # archives and removals make no cycles, yet its allocations set off ~150 young
                    # passes and a full one over the plan's rows (many: ~65 of ~80 ms of GC CPU)
                    with store_writer(store, lock_settings), gc_paused():
                        now = now_ms if now_ms is not None else ctx.now_ms()
                        result = plan_store(
                            ctx, store, options=options, now_ms=now, behavior=behavior.behavior
                        )
                        if options.reason_bytes:  # (measured before removal: the text report's)
                            result.reason_bytes = reason_bytes(store, result)
                        result.outcome = apply_store(
                            store,
                            result,
                            lock_settings=lock_settings,
                            checkpoint=checkpoint,
                            progress=ctx.progress,
                        )
                    ctx.note_writes(store)
                if not (options.figures_only and options.dry_run):
                    result.summarize(dry_run=options.dry_run)
                    linked = _linked_transcript_warnings(store, result, dry_run=options.dry_run)
                    if linked:
                        result.summary["warnings"] = linked
                results.append(result)
        except OpenClawError as exc:
            if not results:
                raise
            raise _partial(results, target, exc, options) from exc
    checkpoint.finish()
    return results


def reason_bytes(store: SessionStore, result: StoreCleanup) -> dict[str, list[int]]:
    """What the plan removes, per reason: [sessions or files, bytes] (issue 27 §7, for the text
    report; the JSON keeps OpenClaw's shape). Transcript bytes as the store keeps them; rows
    archived in place free nothing."""
    plan = result.plan
    if store.transcripts_in_files:
        # (a figures-only plan summed its removed rows' files already: `entry_sid_bytes`)
        sizes: dict[str, int] = dict(result.entry_sid_bytes or {})
        for action in result.archive_actions:
            if action.session_id:
                sizes[action.session_id] = sizes.get(action.session_id, 0) + action.size
    else:
        sizes = result.sizes_of_sessions(store) if plan.removed else {}
    out: dict[str, list[int]] = {}
    entries, actions = result.entries, plan.actions
    for key in plan.removed:  # (100,000 rows at issue 27's scale: no list made per row)
        entry = entries.get(key)
        sid = entry.get("sessionId") if isinstance(entry, dict) else None
        reason = actions.get(key, "remove")
        slot = out.get(reason)
        if slot is None:
            slot = out[reason] = [0, 0]
        slot[0] += 1
        slot[1] += sizes.get(sid, 0) if isinstance(sid, str) else 0
    for reason in plan.archived.values():
        out.setdefault(f"archive ({reason})", [0, 0])[0] += 1
    groups: tuple[tuple[str, Any], ...] = (
        ("unreferenced artifacts", result.sweep.removals if result.sweep else ()),
        ("tombstones (retention)", result.retention.removals if result.retention else ()),
        ("disk budget files", plan.budget_file_removals),
    )
    for name, actions in groups:
        for action in actions:
            slot = out.setdefault(name, [0, 0])
            slot[0] += 1
            slot[1] += int(getattr(action, "size", 0) or 0)
    return out


def _linked_transcript_warnings(store: SessionStore, result: StoreCleanup, *, dry_run: bool) -> list[str]:
    """Rows the cleanup removes whose transcript is a symbolic link: links are never followed, so
    such a transcript is neither archived nor removed — said, not passed over (issue 29 #9)."""
    if not store.transcripts_in_files or not result.plan.removed:
        return []
    from openclaw_cli.ops.lifecycle import linked_transcripts  # (~22 modules' worth: only when asked)

    out: list[str] = []
    for key in result.plan.removed:
        entry = result.entries.get(key)
        if not isinstance(entry, dict):
            continue
        for path in linked_transcripts(store, entry):
            verb = "would be" if dry_run else "was"
            out.append(
                f"Transcript {path} of {key} is a symbolic link: links are not followed, so it "
                f"{verb} neither archived nor removed (the row {verb} removed). Archive or remove its "
                "target yourself if it should go."
            )
    return out


def _partial(
    results: list[StoreCleanup], target: Any, exc: OpenClawError, options: CleanupOptions
) -> PartialCleanupError:
    message = f"Session cleanup failed for agent '{target.agent_id}': {exc.message}"
    document = cleanup_document(results, options)
    if "stores" not in document:
        document = {
            "allAgents": True,
            "mode": results[0].plan.mode,
            "dryRun": options.dry_run,
            "stores": [r.summary for r in results],
        }
    document["partialError"] = {
        "failingAgentId": target.agent_id,
        "failingStorePath": str(target.explicit) if target.explicit else None,
        "message": message,
        "lifecycleCommitted": not options.dry_run,
    }
    return PartialCleanupError(message, document)  # exit 1 (§10.9)


def cleanup_document(results: list[StoreCleanup], options: CleanupOptions) -> dict[str, Any]:
    """Exactly one summary is printed bare; any other number (even with `--all-agents`) is wrapped."""
    from openclaw_cli.maintenance.report import cleanup_json

    mode = results[0].plan.mode if results else "enforce"
    document: dict[str, Any] = cleanup_json([r.summary for r in results], mode=mode, dry_run=options.dry_run)
    return document


def store_views(results: list[StoreCleanup]) -> list[dict[str, Any]]:
    """What a text report shows per store, as plain data: the summary, every row's planned action
    (in store order, with its entry) and, in warn mode, what `--enforce` would also remove."""
    views = []
    for r in results:
        other = r.plan.would_enforce
        would_enforce = None
        if r.plan.mode != "enforce" and other is not None:
            would_enforce = {
                "modelRunPruned": other.model_run_pruned,
                "pruned": other.pruned,
                "capped": other.capped,
                "evicted": other.evicted,
            }
        preview_is_enforce = (
            r.plan.mode != "enforce" and r.plan.behavior.maintenance.warn_dry_run_shows_enforce
        )
        views.append(
            {
                "summary": r.summary,
                "nowMs": r.now_ms,
                "wouldEnforce": would_enforce,
                "previewIsEnforce": preview_is_enforce,
                "actions": [(action, key, r.entries.get(key)) for key, action in r.plan.actions.items()],
            }
        )
    return views


# The Gateway's wording when a request names no store while several agents are configured.
OWNERLESS_OPERATION = (
    "Multiple agents are configured, but this operation has no explicit owner. Select an agent "
    "explicitly; CLI callers can pass --agent <id>, channels can add a binding, and ambient "
    "services can set their agentId target."
)


def sessions_cleanup(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The `sessions.cleanup` method: OpenClaw's document (one summary bare, else the wrapper)."""
    from openclaw_cli.config import configured_agent_ids
    from openclaw_cli.errors import SelectionError

    options = options_from_params(params)
    if (
        options.agent is None
        and not options.all_agents
        and options.store is None
        and len(configured_agent_ids(ctx.config)) > 1
    ):
        raise SelectionError(OWNERLESS_OPERATION)
    results = cleanup_stores(ctx, options)
    document = cleanup_document(results, options)
    if options.dry_run and params.get("includeActions") is True:
        _add_planned_actions(document, results)
    return document


def _add_planned_actions(document: dict[str, Any], results: list[StoreCleanup]) -> None:
    """The dashboard's cleanup preview (issue 28): per store, the rows each rule would touch
    (`keep` left out), what `--enforce` would add in warn mode, and the release whose rules
    planned it."""
    summaries: list[Any] = document["stores"] if isinstance(document.get("stores"), list) else [document]
    for summary, result, view in zip(summaries, results, store_views(results), strict=False):
        summary["plannedActions"] = [
            {"key": key, "action": action} for action, key, _ in view["actions"] if action != "keep"
        ]
        summary["wouldEnforce"] = view["wouldEnforce"]
        summary["previewIsEnforce"] = view["previewIsEnforce"]
        summary["release"] = result.plan.behavior.release
