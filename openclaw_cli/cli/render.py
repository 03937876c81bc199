"""Text of `sessions`, `sessions tail` and `status`: result lines for stdout (spec D19), built from
the operations' JSON documents. Every stored string passes through `sanitize_text` (D6.8); hints,
warnings and errors are the caller's to print on stderr."""

from __future__ import annotations

import re
from typing import Any

from openclaw_cli.cli.cells import (
    format_time_ago,
    format_time_until,
    plural,
    row_flags_text,
    tokens_cell,
    truncate_key,
)
from openclaw_cli.cli.table import Column, render_table
from openclaw_cli.cli.term import Printer
from openclaw_cli.output import sanitize_text

_PERCENT = re.compile(r"\((\d+)%\)")


def token_style(cell: str) -> str | None:
    """R6.4.4: ≥ 95 % error, ≥ 80 % warning, ≥ 60 % success (only a known, fresh percentage)."""
    match = _PERCENT.search(cell)
    if not match:
        return None
    pct = int(match.group(1))
    return "error" if pct >= 95 else "warning" if pct >= 80 else "success" if pct >= 60 else None


def _kind_style(_cell: str) -> str | None:
    return "kind"


def key_cell(key: str, printer: Printer) -> str:
    """A key as its cell shows it: OpenClaw's 26-grapheme cut on a terminal, whole otherwise."""
    return sanitize_text(key) if printer.full_cells else truncate_key(key)


def sessions_lines(result: dict[str, Any], printer: Printer) -> list[str]:
    lines: list[str] = []
    stores = result.get("stores")
    if stores:
        ids = ", ".join(sanitize_text(s["agentId"]) for s in stores)
        lines.append(f"Session stores: {len(stores)} ({ids})")
    else:
        lines.append(f"Session store: {sanitize_text(result.get('path') or '')}")
    sessions = result["sessions"]
    if result.get("activeMinutes"):
        lines.append(f"Filtered to last {result['activeMinutes']} minute(s)")
    if not sessions:
        lines.append("No sessions found.")
        return lines
    archived = sum(1 for row in sessions if row.get("archived"))
    marked = f" ({archived} archived)" if archived and archived < len(sessions) else ""
    if result.get("hasMore") or (result.get("limitApplied") and result["totalCount"] > len(sessions)):
        lines.append(
            f"Sessions listed: {len(sessions)} of {result['totalCount']} (limit {result['limitApplied']})"
            f"{marked}"
        )
    else:
        lines.append(f"Sessions listed: {len(sessions)}{marked}")
    columns = [
        Column("Kind", min_width=5, shrink_order=45, style=_kind_style),
        Column("Key", min_width=12, shrink_order=20),
        Column("Age", min_width=7, shrink_order=60),
        Column("Model", min_width=6, shrink_order=30),
        Column("Tokens (ctx %)", min_width=9, shrink_order=40, style=token_style),
        Column("Flags", min_width=6, shrink_order=10, drop_below=16),
    ]
    multi = bool(stores)  # aggregated listings name the agent (R6.4.3)
    if multi:
        columns.insert(0, Column("Agent", min_width=5, shrink_order=35))
    rows = []
    for row in sessions:
        cells = [
            sanitize_text(row["kind"]),
            key_cell(row["key"], printer),
            format_time_ago(row.get("ageMs")),
            sanitize_text(row.get("model") or "unknown"),
            tokens_cell(row),
            sanitize_text(row_flags_text(row)),
        ]
        if multi:
            cells.insert(0, sanitize_text(row["agentId"]))
        rows.append(cells)
    lines += render_table(columns, rows, width=printer.width, color=printer.color)
    return lines


def _entry_summary(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict):
        return "?", sanitize_text(str(obj))[:200]
    kind = str(obj.get("type") or obj.get("role") or "?")
    message = obj.get("message") if isinstance(obj.get("message"), dict) else obj
    role = message.get("role") if isinstance(message, dict) else None
    label = f"{kind}:{role}" if role and kind == "message" else (role or kind)
    text = ""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "toolCall":
                    parts.append(f"[tool call {block.get('name')}]")
                else:
                    parts.append(f"[{block.get('type')}]")
        text = " ".join(parts)
    elif kind == "compaction":
        text = str(obj.get("summary", ""))
    elif kind == "model_change":
        text = f"{obj.get('provider')}/{obj.get('modelId')}"
    elif kind == "thinking_level_change":
        text = str(obj.get("thinkingLevel"))
    return sanitize_text(label), sanitize_text(text)


def entry_line(obj: Any) -> str:
    """One transcript entry as `sessions tail` prints it: time, kind (role), text (≤ 300 chars)."""
    ts = obj.get("timestamp", "") if isinstance(obj, dict) else ""
    if isinstance(ts, int | float) and not isinstance(ts, bool):  # message timestamps are epoch ms
        import datetime

        try:
            ts = datetime.datetime.fromtimestamp(ts / 1000, datetime.UTC).isoformat(timespec="milliseconds")
            ts = ts.replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            ts = str(ts)
    label, text = _entry_summary(obj)
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{sanitize_text(str(ts))} {label}: {text}"


def tail_lines(result: dict[str, Any]) -> list[str]:
    noun = "context message" if result["mode"] == "context" else "entry"
    lines = [
        f"Session: {sanitize_text(result['key'])} ({sanitize_text(result['sessionId'])}) — "
        f"{plural(result['count'], noun)}"
    ]
    lines += [entry_line(obj) for obj in result["entries"]]
    return lines


def _store_line(store: dict[str, Any]) -> list[str]:
    name = sanitize_text(store["agent"])
    if store.get("error"):
        return [f"  {name}: error: {sanitize_text(store['error'])}"]
    archives = store["archives"]
    kind = store["kind"] + (f" ({store['schema']})" if store.get("schema") else "")
    kind += ", read-only" if store.get("readOnly") else ""
    backups = store.get("backups")
    return [
        f"  {name}: {kind}: {plural(store['sessions'], 'session')}{_archived_note(store)}, "
        f"transcripts {format_bytes(store['transcriptBytes'])}, "
        f"archives {archives['count']} ({format_bytes(archives['bytes'])}), "
        f"{plural(store['compactions'], 'compaction')}",
        f"    {sanitize_text(store['path'])}",
        *(
            [
                f"    backups {backups['count']} ({format_bytes(backups['bytes'])}; kept {backups['keepDays']} days, "
                f"at most {backups['keepCount']})"
            ]
            if backups
            else []
        ),
        *_behavior_line(store.get("behavior")),
    ]


def _archived_note(store: dict[str, Any]) -> str:
    archived = store.get("archivedSessions") or 0
    return f" ({archived} archived)" if archived else ""


def _behavior_line(behavior: dict[str, Any] | None) -> list[str]:
    """Which release's rules the store follows, and why (spec D23)."""
    if not behavior:
        return []
    reason = sanitize_text(behavior.get("reason") or "")
    if behavior.get("release") is None:
        return [f"    rules: unknown: {reason}"]
    return [f"    rules: OpenClaw {sanitize_text(behavior['release'])} ({reason})"]


def _issue_line(issue: dict[str, Any]) -> str:
    where = sanitize_text(issue.get("path") or "")
    message = sanitize_text(issue.get("message") or "")
    return f"  error: {where}: {message}" if where else f"  error: {message}"


def gateway_state(gw: dict[str, Any]) -> str:
    if gw.get("probed") is False:
        return "not probed (--no-probe)"
    if gw.get("reachable"):
        return "reachable" + (f" ({sanitize_text(gw['error'])})" if gw.get("error") else "")
    reason = sanitize_text(gw.get("error") or "")
    return f"not reachable ({reason})" if reason else "not reachable"


def status_lines(result: dict[str, Any], printer: Printer, *, now_ms: int) -> list[str]:
    cfg = result["config"]
    lines = [f"State dir: {sanitize_text(result['stateDir'])}"]
    if result.get("stateDirExists") is False:
        lines[0] += (
            " (does not exist: nothing has run here yet; set OPENCLAW_STATE_DIR or --profile if your "
            "OpenClaw state is elsewhere)"
        )
    config_path = sanitize_text(result["configPath"])
    if not cfg.get("exists", True):
        lines.append(f"Config: {config_path} (none: defaults)")
    elif cfg["valid"]:
        lines.append(f"Config: {config_path} (valid)")
    else:
        lines.append(f"Config: {config_path} ({printer.paint('INVALID', 'error')})")
    lines += [_issue_line(issue) for issue in cfg.get("errors", [])]
    lines += [f"  warning: {sanitize_text(w)}" for w in cfg.get("warnings", [])]
    gw = result["gateway"]
    lines.append(f"Gateway: {sanitize_text(gw.get('url') or '?')} {gateway_state(gw)}")
    if gw.get("authWarning"):
        lines.append(f"  auth: {sanitize_text(gw['authWarning'])}")
    agents = result["agents"]
    if agents.get("selectionRequired"):
        lines.append(
            f"Agents: {len(agents['agents'])} (ownership {sanitize_text(agents.get('ownership'))}: "
            "commands need --agent <id> or --all-agents)"
        )
    lines.append("Stores:")
    for store in result["stores"]:
        lines += _store_line(store)
    for extra in result.get("unconfiguredStores") or []:
        lines.append(f"  {sanitize_text(extra['agent'])}: not configured: {sanitize_text(extra['path'])}")
    m = result["maintenance"]
    if cfg["valid"]:
        lines.append("Maintenance (what `openclaw sessions cleanup --enforce` applies):")
        lines += [f"  {sanitize_text(line)}" for line in m.get("lines", [])]
        for preview in m.get("wouldRemoveNow", []):
            next_at = preview.get("nextPruneAt")
            when = f"; next stale prune {format_time_until(next_at - now_ms)}" if next_at else ""
            removed = preview["beforeCount"] - preview["afterCount"]
            archived = (preview.get("archived") or 0) + (preview.get("capArchived") or 0)
            also = f", archive {archived} in place" if archived else ""
            lines.append(
                f"  {sanitize_text(preview['agentId'])}: would remove now {removed} of {preview['beforeCount']}"
                f" (stale {preview['pruned']}, cap {preview['capped']}, model-run {preview['modelRunPruned']}){also}{when}"
            )
    else:
        lines.append(
            "Maintenance: not applied while the config is invalid (`openclaw sessions cleanup` refuses "
            "to run until it is fixed)."
        )
    recent = result["sessions"]["recent"]
    if recent:
        lines.append("Recent sessions:")
        several = len(result["stores"]) > 1 or len({r.get("agentId") for r in recent}) > 1
        columns = [
            *([Column("Agent", min_width=5, shrink_order=50)] if several else []),
            Column("Key", min_width=12, shrink_order=20),
            Column("Kind", min_width=5, shrink_order=45, style=_kind_style),
            Column("Age", min_width=7, shrink_order=60),
            Column("Model", min_width=6, shrink_order=30),
            Column("Tokens", min_width=9, shrink_order=40, style=token_style),
        ]
        rows = [
            [
                *([sanitize_text(r.get("agentId") or "")] if several else []),
                key_cell(r["key"], printer),
                sanitize_text(r["kind"]),
                format_time_ago(r.get("age")),
                sanitize_text(r.get("model") or "unknown"),
                status_tokens(r),
            ]
            for r in recent
        ]
        lines += render_table(columns, rows, width=printer.width, color=printer.color)
    else:
        lines.append("No sessions")
    return lines


def status_tokens(row: dict[str, Any]) -> str:
    """R6.3.1 tokens cell."""
    from openclaw_cli.cli.cells import format_token_count

    used, ctx = row.get("totalTokens"), row.get("contextTokens")
    if used is not None and ctx:
        pct = f"{row['percentUsed']}%" if row.get("percentUsed") is not None else "?%"
        return f"{format_token_count(used)}/{format_token_count(ctx)} ({pct})"
    if used is not None:
        return f"{format_token_count(used)} used"
    if ctx:
        return f"unknown/{format_token_count(ctx)} (?%)"
    return "unknown used"


def format_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
