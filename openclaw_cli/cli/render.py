"""Human output (stderr, Rich). Every stored string passes through `sanitize_text` (D6.8)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.output import sanitize_text


def _console():
    from openclaw_cli.output import stderr_console

    return stderr_console()


def render_sessions(result: dict[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    from openclaw_cli.cli.cells import format_time_ago, row_flags_text, tokens_cell, truncate_key

    console = _console()
    stores = result.get("stores")
    if stores:
        ids = ", ".join(sanitize_text(s["agentId"]) for s in stores)
        console.print(f"Session stores: {len(stores)} ({ids})", markup=False)
    else:
        console.print(f"Session store: {sanitize_text(result.get('path') or '')}", markup=False)
    sessions = result["sessions"]
    if result.get("activeMinutes"):
        console.print(f"Filtered to last {result['activeMinutes']} minute(s)", markup=False)
    if not sessions:
        console.print("No sessions found.", markup=False)
        return
    if result.get("hasMore") or (result.get("limitApplied") and result["totalCount"] > len(sessions)):
        console.print(
            f"Sessions listed: {len(sessions)} of {result['totalCount']} (limit {result['limitApplied']})",
            markup=False,
        )
    else:
        console.print(f"Sessions listed: {len(sessions)}", markup=False)
    table = Table(box=box.SQUARE, show_lines=False)
    if stores:
        table.add_column("Agent", no_wrap=True)
    for name in ("Kind", "Key", "Age", "Model", "Tokens (ctx %)"):
        table.add_column(name, no_wrap=True)  # keys are truncated to 26 cells already
    table.add_column("Flags", overflow="fold", min_width=16)
    for row in sessions:
        cells = [
            sanitize_text(row["kind"]),
            sanitize_text(truncate_key(row["key"])),
            format_time_ago(row.get("ageMs")),
            sanitize_text(row.get("model") or "unknown"),
            tokens_cell(row),
            sanitize_text(row_flags_text(row)),
        ]
        if stores:
            cells.insert(0, sanitize_text(row["agentId"]))
        table.add_row(*cells)
    console.print(table)


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


def render_tail(result: dict[str, Any]) -> None:
    console = _console()
    console.print(
        f"Session: {sanitize_text(result['key'])} ({sanitize_text(result['sessionId'])}) — "
        f"{result['count']} {'context message(s)' if result['mode'] == 'context' else 'entries'}",
        markup=False,
    )
    for obj in result["entries"]:
        ts = obj.get("timestamp", "") if isinstance(obj, dict) else ""
        if isinstance(ts, int | float) and not isinstance(ts, bool):  # message timestamps are epoch ms
            import datetime

            ts = datetime.datetime.fromtimestamp(ts / 1000, datetime.UTC).isoformat(timespec="milliseconds")
            ts = ts.replace("+00:00", "Z")
        label, text = _entry_summary(obj)
        if len(text) > 300:
            text = text[:297] + "..."
        console.print(f"{sanitize_text(str(ts))} {label}: {text}", markup=False)
    for issue in result.get("issues", []):
        console.print(f"Skipped: {sanitize_text(issue)}", markup=False)
    if result.get("hint"):
        console.print(f"Hint: {sanitize_text(result['hint'])}", markup=False)


def render_status(result: dict[str, Any]) -> None:
    from rich import box
    from rich.table import Table

    from openclaw_cli.cli.cells import format_time_ago, truncate_key

    console = _console()
    cfg = result["config"]
    console.print(f"State dir: {sanitize_text(result['stateDir'])}", markup=False)
    console.print(
        f"Config: {sanitize_text(result['configPath'])} ({'valid' if cfg['valid'] else 'INVALID'})", markup=False
    )
    for issue in cfg.get("errors", []):
        console.print(f"  error: {sanitize_text(issue.get('path', ''))}: {sanitize_text(issue.get('message', ''))}",
                      markup=False)
    for warning in cfg.get("warnings", []):
        console.print(f"  warning: {sanitize_text(warning)}", markup=False)
    gw = result["gateway"]
    state = "reachable" if gw["reachable"] else f"not reachable ({sanitize_text(gw.get('error') or '')})"
    console.print(f"Gateway: {gw['url']} {state}", markup=False)
    console.print("Stores:", markup=False)
    for store in result["stores"]:
        name = sanitize_text(store["agent"])
        if store.get("error"):
            console.print(f"  {name}: error: {sanitize_text(store['error'])}", markup=False)
            continue
        archives = store["archives"]
        kind = store["kind"] + (f" ({store['schema']})" if store.get("schema") else "")
        kind += ", read-only" if store.get("readOnly") else ""
        console.print(
            f"  {name}: {kind}: {store['sessions']} sessions, transcripts {_bytes(store['transcriptBytes'])}, "
            f"archives {archives['count']} ({_bytes(archives['bytes'])}), compactions {store['compactions']}",
            markup=False,
        )
        console.print(f"    {sanitize_text(store['path'])}", markup=False)
    m = result["maintenance"]
    console.print("Maintenance (what `openclaw sessions cleanup --enforce` applies):", markup=False)
    for line in m.get("lines", []):
        console.print(f"  {sanitize_text(line)}", markup=False)
    for preview in m.get("wouldRemoveNow", []):
        next_at = preview.get("nextPruneAt")
        when = f"; next stale prune in {format_time_ago(next_at - _now()).replace(' ago', '')}" if next_at else ""
        console.print(
            f"  {sanitize_text(preview['agentId'])}: would remove now {preview['beforeCount'] - preview['afterCount']}"
            f" of {preview['beforeCount']} (stale {preview['pruned']}, cap {preview['capped']}, "
            f"model-run {preview['modelRunPruned']}){when}",
            markup=False,
        )
    recent = result["sessions"]["recent"]
    if recent:
        t = Table(box=box.SQUARE, title="Recent sessions")
        for name in ("Key", "Kind", "Age", "Model", "Tokens"):
            t.add_column(name, no_wrap=True)
        for row in recent:
            t.add_row(truncate_key(row["key"]), sanitize_text(row["kind"]), format_time_ago(row.get("age")),
                      sanitize_text(row.get("model") or "unknown"), _tokens(row))
        console.print(t)
    else:
        console.print("No sessions", markup=False)
    if result.get("hint"):
        console.print(f"Hint: {sanitize_text(result['hint'])}", markup=False)


def _now() -> int:

    from openclaw_cli.clock import now_ms

    return now_ms()


def _tokens(row: dict[str, Any]) -> str:
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


def _bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
