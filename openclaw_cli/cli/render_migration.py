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
            lines += _after_restore(t, r)
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
        lines += issue_lines(t["issues"])
    return lines


def _after_restore(target: dict[str, Any], restore: dict[str, Any]) -> list[str]:
    """What the agent's store reads once its legacy files are back (issue 22 §7): the SQLite
    database stays and is still the store (spec D2) — the restored files serve an older,
    file-backed OpenClaw."""
    from pathlib import Path

    if not restore.get("restoredFiles"):
        return []
    db, legacy = str(target.get("sqlitePath") or ""), str(target.get("storePath") or "")
    if db and Path(db).exists():
        return [
            f"  note: openclaw (and OpenClaw 2026.9+) still read the SQLite database {s(db)}; the restored "
            f"{s(legacy)} and its transcripts are for an older, file-backed OpenClaw. Move the database "
            "aside (with its -wal and -shm) to read the restored sessions here."
        ]
    return [f"  note: the agent now reads the restored legacy store {s(legacy)}."]


def _common_affixes(messages: list[str]) -> tuple[str, str]:
    """The longest prefix and suffix all `messages` share (cut back to a word boundary)."""
    import os.path

    prefix = os.path.commonprefix(messages)
    suffix = os.path.commonprefix([m[::-1] for m in messages])[::-1]
    shortest = min(len(m) for m in messages)
    if len(prefix) + len(suffix) > shortest:
        suffix = suffix[len(prefix) + len(suffix) - shortest :]
    bounds = " /:."
    if prefix and prefix[-1] not in bounds:
        prefix = prefix[: max(prefix.rfind(c) for c in bounds) + 1]
    if suffix and suffix[0] not in bounds:
        found = [i for i in (suffix.find(c) for c in bounds) if i >= 0]
        suffix = suffix[min(found) :] if found else ""
    return prefix, suffix


def issue_lines(issues: list[dict[str, Any]], *, shown: int = 3) -> list[str]:
    """Issues grouped by code, so 300 sessions with the same problem read as one finding: a lone
    issue as `[code] key: message`; a group as `[code] N sessions: <what they share>` and its
    first `shown` sessions with what differs (`--json` lists every one)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for issue in issues:
        groups.setdefault(str(issue.get("code")), []).append(issue)
    lines: list[str] = []
    for code, items in list(groups.items())[:MAX_TEXT_ISSUES]:
        if len(items) == 1:
            issue = items[0]
            key = f" {s(issue['sessionKey'])}:" if issue.get("sessionKey") else ""
            lines.append(f"  [{s(code)}]{key} {s(issue['message'])}")
            continue
        messages = [str(i.get("message") or "") for i in items]
        prefix, suffix = _common_affixes(messages)
        shared = (prefix + "…" + suffix) if (prefix or suffix) and len(set(messages)) > 1 else messages[0]
        lines.append(f"  [{s(code)}] {len(items)} issues: {s(shared)}")
        for issue in items[:shown]:
            detail = str(issue.get("message") or "")
            detail = detail[len(prefix) : len(detail) - len(suffix)] if len(set(messages)) > 1 else ""
            key = s(issue.get("sessionKey") or "(no key)")
            lines.append(f"    {key}{': ' + s(detail) if detail else ''}")
        if len(items) > shown:
            lines.append(f"    ...and {len(items) - shown} more (--json lists every one)")
    if len(groups) > MAX_TEXT_ISSUES:
        rest = sum(len(v) for v in list(groups.values())[MAX_TEXT_ISSUES:])
        lines.append(f"  ...and {rest} more issue(s) of {len(groups) - MAX_TEXT_ISSUES} other kind(s)")
    return lines


def plain_doctor_text(doc: dict[str, Any], *, fix: bool) -> list[str]:
    """§6.17: plain `doctor`'s migration summary (a dry run of every agent; `--fix`: the import)."""
    totals = doc["totals"]
    issues = [(t, i) for t in doc["targets"] for i in t["issues"]]
    if not totals["legacyEntries"] and not totals["unreferencedJsonlFiles"] and not issues:
        return ["No legacy session state to migrate."]
    events = totals["importedTranscriptEvents"] if fix else 0
    lines = [
        "Session SQLite",
        f"- Legacy entries: {totals['legacyEntries']}; SQLite entries: {totals['sqliteEntries']}.",
        f"- Transcript events: imported={events}; validated={totals['validatedTranscriptEvents']}.",
    ]
    if fix:
        lines.append(f"- Archived {totals['archivedTranscriptFiles']} legacy transcript artifact(s).")
        lines.append(f"- Archived {totals['archivedUnreferencedJsonlFiles']} unreferenced JSONL artifact(s).")
    for target, issue in issues[:MAX_DOCTOR_ISSUES]:
        lines.append(f"{s(target['storePath'])}: [{issue['code']}] {s(issue['message'])}")
    if issues:
        lines.append(
            f'- Found {len(issues)} session SQLite issue(s). Inspect with "openclaw doctor --session-sqlite '
            'dry-run --session-sqlite-all-agents".'
        )
    if not fix:
        lines.append(
            '- Run "openclaw doctor --fix" to migrate legacy session metadata/transcripts to SQLite.'
        )
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
            state = db.get("error") or f"{db['kind']} ({db['schema']})" + (
                ", read-only" if db.get("readOnly") else ""
            )
            lines.append(f"- {s(db['agentId'])}: {s(state)} {s(db['path'])}")
    for lock in checks["staleLocks"]:
        verb = "removed" if lock.get("removed") else "stale"
        reasons = ", ".join(lock.get("staleReasons") or []) or "unknown"
        lines.append(f"- {verb} session lock: {s(lock['lockPath'])} ({reasons})")
    if checks["staleLocks"] and not any(lock.get("removed") for lock in checks["staleLocks"]):
        lines.append('- Run "openclaw doctor --fix" to remove stale session locks whose owner is gone.')
    return lines
