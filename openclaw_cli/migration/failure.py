"""Failure reports next to a failed run's manifest (§6.11): `<manifest>.failure.json` and
`<manifest>.failure.md`, sanitised (home directory, e-mail addresses, secrets, session keys) so they
can be shared. openclaw-cli never creates GitHub issues; `--github-issue` only points at the report."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from openclaw_cli.fsio import atomic_write_bytes
from openclaw_cli.jsonutil import dumps_pretty
from openclaw_cli.migration.manifest import APP_VERSION, iso_now

RECOVERY_COMMAND = "openclaw doctor --session-sqlite recover --github-issue"
MAX_TEXT = 500
MAX_BODY = 20000
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_SECRET = re.compile(r"(?i)\b(api[_-]?key|token|secret|password)([=-])[^\s&/\"',;]+")
_KEY = re.compile(r"\b(?:agent:[A-Za-z0-9_-]+:[^\s\"',;]+|(?:cron|hook):[^\s\"',;]+)")


class Sanitizer:
    def __init__(self, session_keys: set[str] | None = None):
        home = os.environ.get("HOME") or str(Path.home())
        self.home = home.rstrip("/") + "/" if home else None
        self.keys = sorted(session_keys or set(), key=len, reverse=True)

    @staticmethod
    def key_token(key: str) -> str:
        return f"[redacted-session-key:{hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}]"

    def text(self, value: Any, limit: int = MAX_TEXT) -> str:
        out = value if isinstance(value, str) else str(value)
        for key in self.keys:
            if key:
                out = out.replace(key, self.key_token(key))
        out = _KEY.sub(lambda m: self.key_token(m.group(0)), out)
        if self.home:
            out = out.replace(self.home, "~/")
        out = _EMAIL.sub("[redacted-email]", out)
        out = _SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", out)
        return _truncate_utf16(out, limit)

    def issue(self, issue: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.text(issue.get("code", "")),
            "message": self.text(issue.get("message", "")),
        }
        key = issue.get("sessionKey")
        if isinstance(key, str):
            out["sessionKey"] = self.key_token(key)
        return out


def _truncate_utf16(text: str, limit: int) -> str:
    units = 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > limit:
            return text[:i].rstrip() + "…"
    return text


def failure_payload(
    manifest_path: Path,
    manifest: dict[str, Any],
    reason: str,
    recovery_issues: dict[int, list[dict[str, Any]]] | None = None,
    only_targets: set[int] | None = None,
) -> tuple[dict[str, Any], Sanitizer]:
    keys: set[str] = set()
    for target in manifest.get("targets", []):
        for issue in target.get("issues", []) or []:
            if isinstance(issue, dict) and isinstance(issue.get("sessionKey"), str):
                keys.add(issue["sessionKey"])
        for move in target.get("plannedMoves", []) or []:
            if isinstance(move, dict) and isinstance(move.get("sessionKey"), str):
                keys.add(move["sessionKey"])
    for issues in (recovery_issues or {}).values():
        for issue in issues:
            if isinstance(issue.get("sessionKey"), str):
                keys.add(issue["sessionKey"])
    san = Sanitizer(keys)
    restore = manifest.get("restore")
    targets = []
    for i, target in enumerate(manifest.get("targets", [])):
        if only_targets is not None and i not in only_targets:
            continue
        entry: dict[str, Any] = {
            "agentId": san.text(target.get("agentId", "")),
            "storePath": san.text(target.get("storePath", "")),
            "sqlitePath": san.text(target.get("sqlitePath", "")),
            "plannedMoves": len(target.get("plannedMoves", []) or []),
            "completedMoves": len(target.get("completedMoves", []) or []),
            "validationBeforeArchive": target.get("validationBeforeArchive", "not_run"),
            "issues": [san.issue(x) for x in target.get("issues", []) or [] if isinstance(x, dict)],
        }
        if recovery_issues is not None and i in recovery_issues:
            entry["recoveryIssues"] = [san.issue(x) for x in recovery_issues[i]]
        targets.append(entry)
    payload = {
        "generatedAt": iso_now(),
        "manifestPath": san.text(str(manifest_path)),
        "reason": reason,
        "recoveryCommand": RECOVERY_COMMAND,
        "restoreStatus": restore.get("status", "not_attempted")
        if isinstance(restore, dict)
        else "not_attempted",
        "runId": manifest.get("runId", ""),
        "targets": targets,
        "version": APP_VERSION,
    }
    return payload, san


def render_markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Session SQLite Migration Failure",
        "",
        f"- Run: {payload['runId']}",
        f"- Generated: {payload['generatedAt']}",
        f"- OpenClaw version: {payload['version']}",
        f"- Reason: {payload['reason']}",
        f"- Restore status: {payload['restoreStatus']}",
        f"- Recovery command: `{payload['recoveryCommand']}`",
        "",
        "openclaw-cli does not create GitHub issues; share this sanitised file if you ask for help.",
    ]
    for target in payload["targets"]:
        lines += [
            "",
            f"## Target {target['agentId']}",
            "",
            f"- Store: {target['storePath']}",
            f"- SQLite: {target['sqlitePath']}",
            f"- Planned moves: {target['plannedMoves']}",
            f"- Completed moves: {target['completedMoves']}",
            f"- Validation before archive: {target['validationBeforeArchive']}",
            "",
        ]
        if "recoveryIssues" in target:
            lines.append("### Current recovery issues")
            lines.append("")
            lines += [f"- [{i['code']}] {i['message']}" for i in target["recoveryIssues"]] or ["- none"]
            lines.append("")
        else:
            lines += ["Current recovery: not assessed", ""]
        lines.append("### Recorded migration and recovery evidence")
        lines.append("")
        lines += [f"- [{i['code']}] {i['message']}" for i in target["issues"]] or ["- none"]
    text = "\n".join(lines) + "\n"
    return _truncate_utf16(text, MAX_BODY)


def write_failure_reports(
    ctx: Any,
    manifest_path: Path,
    manifest: dict[str, Any],
    *,
    reason: str,
    recovery_issues: dict[int, list[dict[str, Any]]] | None = None,
    only_targets: set[int] | None = None,
) -> tuple[Path, Path]:
    payload, _ = failure_payload(manifest_path, manifest, reason, recovery_issues, only_targets)
    json_path = manifest_path.with_name(manifest_path.name[: -len(".json")] + ".failure.json")
    md_path = manifest_path.with_name(manifest_path.name[: -len(".json")] + ".failure.md")
    atomic_write_bytes(json_path, (dumps_pretty(payload) + "\n").encode("utf-8"))
    atomic_write_bytes(md_path, render_markdown(payload).encode("utf-8"))
    return json_path, md_path
