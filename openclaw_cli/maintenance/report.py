"""The JSON of `openclaw sessions cleanup` (`maintenance.md` §10.8, fixture `cleanup-dry-run.json`):
OpenClaw's per-store summary, keys in OpenClaw's order, and the multi-store wrapper. (The text
report is the CLI's: `cli/render_cleanup.py`.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openclaw_cli.maintenance.plan import CleanupPlan

# ---- JSON ---------------------------------------------------------------------------------------


def empty_unreferenced_artifacts(plan: CleanupPlan) -> dict[str, int]:
    """The sweep result when it did not run (warn mode, or no sessions dir)."""
    return {"scannedFiles": 0, "removedFiles": 0, "freedBytes": 0, "olderThanMs": plan.prune_after_ms}


def cleanup_summary(
    plan: CleanupPlan,
    *,
    agent_id: str,
    store_path: str,
    dry_run: bool,
    unreferenced_artifacts: Mapping[str, int] | None = None,
    applied_count: int | None = None,
    archive_cleanup: Mapping[str, int] | None = None,
    after_count: int | None = None,
    tombstones: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """OpenClaw's per-store summary, keys in OpenClaw's order. `archived` (dashboard and age
    archives) and `capArchived` (cap archives, also counted in `capped`) are 0 under 2026.7, which
    archives nothing (D23). Apply adds `applied`/`appliedCount`
    (`applied_count` = entries in the store after apply; the plan's `afterCount` when omitted).
    `tombstones`: 2026.9.9's cron-run placeholder sweep on a real OpenClaw database (our name for
    the field: `cronRunTombstones`, after `unreferencedArtifacts`).
    `after_count`: the store's count after an apply (2026.9.6+ report what the store holds once
    the budget's tiers ran); the plan's count when omitted.

    Added keys (D5 allows additions): `cronPruned` after `capped` when the `cron.sessionRetention`
    stage ran (the store had cron run rows), and G2's `archiveCleanup` `{scannedFiles,
    removedFiles}` (the `resetArchiveRetention` sweep) before `unreferencedArtifacts` when given."""
    artifacts = (
        dict(unreferenced_artifacts)
        if unreferenced_artifacts is not None
        else empty_unreferenced_artifacts(plan)
    )
    summary: dict[str, Any] = {
        "agentId": agent_id,
        "storePath": store_path,
        "mode": plan.mode,
        "dryRun": dry_run,
        "beforeCount": plan.before_count,
        "afterCount": plan.after_count if after_count is None else after_count,
        "missing": plan.missing,
        "dmScopeRetired": plan.dm_scope_retired,
        "modelRunPruned": plan.model_run_pruned,
        "archived": getattr(plan, "archived_count", 0),
        "capArchived": getattr(plan, "cap_archived", 0),
        "pruned": plan.pruned,
        "capped": plan.capped,
    }
    if getattr(plan, "cron_retention_ran", False):
        summary["cronPruned"] = plan.cron_pruned
    if archive_cleanup is not None:
        summary["archiveCleanup"] = dict(archive_cleanup)
    summary["unreferencedArtifacts"] = artifacts
    if tombstones is not None:
        summary["cronRunTombstones"] = dict(tombstones)
    summary["diskBudget"] = plan.disk_budget.to_json() if plan.disk_budget else None
    summary["wouldMutate"] = (
        plan.would_mutate
        or int(artifacts.get("removedFiles", 0) or 0) > 0
        or int((archive_cleanup or {}).get("removedFiles", 0) or 0) > 0
        or int((tombstones or {}).get("candidates", 0) or 0) > 0
    )
    if not dry_run:
        summary["applied"] = True
        summary["appliedCount"] = plan.after_count if applied_count is None else applied_count
    return summary


def cleanup_json(summaries: Sequence[Mapping[str, Any]], *, mode: str, dry_run: bool) -> Any:
    """Exactly one summary is printed bare; any other number (even with `--all-agents`) is wrapped."""
    if len(summaries) == 1:
        return summaries[0]
    return {"allAgents": True, "mode": mode, "dryRun": dry_run, "stores": list(summaries)}
