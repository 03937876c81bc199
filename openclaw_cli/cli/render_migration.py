"""Text of `openclaw doctor`: the `--session-sqlite` report (storage-migration.md §6.5), the plain
doctor's migration summary and its other checks. Input is the JSON documents of `ops.doctor`;
every value from stored data is sanitised (D6.8)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.output import sanitize_text as s

MAX_TEXT_ISSUES = 10
MAX_DOCTOR_ISSUES = 20


def migration_text(doc: dict[str, Any]) -> list[str]:
    totals = doc["totals"]
    lines = [
        f"session-sqlite {doc['mode']}: {totals['targets']} target(s), {totals['legacyEntries']} legacy entries, "
        f"{totals['sqliteEntries']} sqlite entries, {totals['issues']} issue(s)"
    ]
    run = doc.get("migrationRun")
    if run is not None:
        lines.append(f"- migration-run={s(run['runId'])}")
        lines.append(f"- manifest={s(run['manifestPath'])}")
        if run.get("failureReportMarkdownPath"):
            lines.append(f"- failure-report={s(run['failureReportMarkdownPath'])}")
    if doc.get("supportIssue") is not None:
        body = doc["supportIssue"].get("bodyPath") or "inline"
        lines.append(f"- support-issue-report={s(body)}")
    for t in doc["targets"]:
        lines.append(
            f"- {s(t['agentId'])}: imported={t['importedEntries']}/{t['importedTranscriptEvents']} events, "
            f"validated={t['validatedEntries']}/{t['validatedTranscriptEvents']} events, "
            f"archived-unreferenced-jsonl={len(t['archivedUnreferencedJsonlFiles'])}, "
            f"unreferenced-jsonl={len(t['unreferencedJsonlFiles'])}"
        )
        r = t.get("restore")
        if r is not None:
            lines.append(
                f"  restored={len(r.get('restoredFiles', []))}, skipped={len(r.get('skippedFiles', []))}, "
                f"conflicts={len(r.get('conflicts', []))}, manifests={len(r.get('manifestPaths', []))}"
            )
        c = t.get("compact")
        if c is not None:
            lines.append(
                f"  compact reclaimed={c.get('reclaimedBytes', 0)} bytes, "
                f"db={c.get('dbSizeBeforeBytes', 0)}->{c.get('dbSizeAfterBytes', 0)} bytes, "
                f"wal={c.get('walSizeBeforeBytes', 0)}->{c.get('walSizeAfterBytes', 0)} bytes"
            )
        cr = t.get("corruptRecovery")
        if cr is not None:
            lines.append(
                f"  corrupt-db-recovery moved={len(cr.get('movedFiles', []))}, "
                f"skipped={len(cr.get('skippedFiles', []))}"
            )
        issues = t["issues"]
        for issue in issues[:MAX_TEXT_ISSUES]:
            key = f" {s(issue['sessionKey'])}:" if issue.get("sessionKey") else ""
            lines.append(f"  [{s(issue['code'])}]{key} {s(issue['message'])}")
        if len(issues) > MAX_TEXT_ISSUES:
            lines.append(f"  ...and {len(issues) - MAX_TEXT_ISSUES} more issue(s)")
    return lines


def plain_doctor_text(doc: dict[str, Any], *, fix: bool) -> list[str]:
    """§6.17: plain `doctor`'s migration summary (a dry run of every agent; `--fix`: the import)."""
    totals = doc["totals"]
    issues = [(t, i) for t in doc["targets"] for i in t["issues"]]
    if not totals["legacyEntries"] and not totals["unreferencedJsonlFiles"] and not issues:
        return ["No legacy session state to migrate."]
    events = totals["importedTranscriptEvents"] if fix else 0
    lines = ["Session SQLite",
             f"- Legacy entries: {totals['legacyEntries']}; SQLite entries: {totals['sqliteEntries']}.",
             f"- Transcript events: imported={events}; validated={totals['validatedTranscriptEvents']}."]
    if fix:
        lines.append(f"- Archived {totals['archivedTranscriptFiles']} legacy transcript artifact(s).")
        lines.append(f"- Archived {totals['archivedUnreferencedJsonlFiles']} unreferenced JSONL artifact(s).")
    for target, issue in issues[:MAX_DOCTOR_ISSUES]:
        lines.append(f"{s(target['storePath'])}: [{issue['code']}] {s(issue['message'])}")
    if issues:
        lines.append(f'- Found {len(issues)} session SQLite issue(s). Inspect with "openclaw doctor --session-sqlite '
                     'dry-run --session-sqlite-all-agents".')
    if not fix:
        lines.append('- Run "openclaw doctor --fix" to migrate legacy session metadata/transcripts to SQLite.')
    return lines


def checks_text(checks: dict[str, Any]) -> list[str]:
    """Config problems, agent database schemas and stale locks found by the plain doctor."""
    from openclaw_cli.config.legacy_keys import FIX_HEADER

    lines: list[str] = []
    config = checks["config"]
    if config["fixed"]:
        lines.append(FIX_HEADER)
        lines.extend(f"- {s(m)}" for m in config["fixed"])
        lines.append(f"- Backup of the previous config kept beside {s(config['path'])} (.bak)")
    elif config["findings"]:
        lines.append("Config problems detected:")
        lines.extend(f"- {s(m)}" for m in config["findings"])
    if checks["databases"]:
        lines.append("Agent databases:")
        for db in checks["databases"]:
            state = db.get("error") or f"{db['kind']} ({db['schema']})" + (", read-only" if db.get("readOnly") else "")
            lines.append(f"- {s(db['agentId'])}: {s(state)} {s(db['path'])}")
    for lock in checks["staleLocks"]:
        verb = "removed" if lock.get("removed") else "stale"
        reasons = ", ".join(lock.get("staleReasons") or []) or "unknown"
        lines.append(f"- {verb} session lock: {s(lock['lockPath'])} ({reasons})")
    if checks["staleLocks"] and not any(lock.get("removed") for lock in checks["staleLocks"]):
        lines.append('- Run "openclaw doctor --fix" to remove stale session locks whose owner is gone.')
    return lines
