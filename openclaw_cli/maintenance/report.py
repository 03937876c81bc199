"""Rendering of `openclaw sessions cleanup` results (pure: strings and dicts, no printing).

JSON: OpenClaw's per-store summary, keys in OpenClaw's order (`maintenance.md` §10.8, fixture
`cleanup-dry-run.json`), and the multi-store wrapper. Text: the dry-run report (header lines,
planned-actions table, summary by label), the apply report and the parent-option rejection.
The table is plain data (`ActionRow`) plus a plain renderer; the CLI may draw it with Rich.
Every string that comes from stored data goes through `output.sanitize_text` (D6.8).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openclaw_cli.maintenance.plan import ACTION_KEEP, CleanupPlan
from openclaw_cli.output import sanitize_text

KEY_CELL_MAX = 26  # graphemes; longer keys become first 16 + "..." + last 6
TABLE_HEADERS = ("Action", "Key", "Age", "Model", "Flags")
UNLABELED = "(unlabeled)"
CLEANUP_PARENT_UNSUPPORTED = ("--active", "--limit", "--verbose")
CLEANUP_PARENT_REASON = "session-list filters cannot scope session maintenance"


# ---- cells --------------------------------------------------------------------------------------


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)  # JS Math.round


def format_time_ago(duration_ms: float | None) -> str:
    """R6.1.2: `just now` (< 1 min), `<m>m ago`, `<h>h ago` (< 48 h), `<d>d ago`; each unit rounded
    from the previous one; invalid or negative -> `unknown`."""
    if duration_ms is None or isinstance(duration_ms, bool) or not isinstance(duration_ms, int | float):
        return "unknown"
    if not math.isfinite(duration_ms) or duration_ms < 0:
        return "unknown"
    minutes = _round_half_up(_round_half_up(duration_ms / 1000) / 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes}m ago"
    hours = _round_half_up(minutes / 60)
    if hours < 48:
        return f"{hours}h ago"
    return f"{_round_half_up(hours / 24)}d ago"


def _is_extender(ch: str) -> bool:
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
        or 0xE0100 <= code <= 0xE01EF
    )


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def split_graphemes(text: str) -> list[str]:
    """Approximate extended grapheme clusters: combining marks, variation selectors, emoji
    modifiers and tags extend the previous cluster, ZWJ joins the next character, regional
    indicators pair up, CR LF stays together."""
    if text.isascii() and "\r\n" not in text:
        return list(text)  # fast path: every ASCII character is its own cluster
    clusters: list[str] = []
    for ch in text:
        if clusters:
            prev = clusters[-1]
            joins = (
                _is_extender(ch)
                or prev.endswith("\u200d")
                or (prev == "\r" and ch == "\n")
                or (_is_regional_indicator(ch) and len(prev) == 1 and _is_regional_indicator(prev))
            )
            if joins:
                clusters[-1] = prev + ch
                continue
        clusters.append(ch)
    return clusters


def display_width(text: str) -> int:
    """Terminal columns: wide/fullwidth characters take 2, combining marks 0."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or _is_extender(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def truncate_key(key: str) -> str:
    """Key cell: sanitised; longer than 26 graphemes -> first 16 + `...` + last 6 (EX6.4.a)."""
    clean = sanitize_text(key)
    if len(clean) <= KEY_CELL_MAX:
        return clean  # never more graphemes than code points
    graphemes = split_graphemes(clean)
    if len(graphemes) <= KEY_CELL_MAX:
        return clean
    return "".join(graphemes[:16]) + "..." + "".join(graphemes[-6:])


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def display_model(entry: Mapping[str, Any] | Any) -> str:
    """The model cell: the session's model, else its override, else `unknown`."""
    if isinstance(entry, Mapping):
        for name in ("model", "modelOverride"):
            if _str(entry.get(name)):
                return sanitize_text(_str(entry.get(name)))
    return "unknown"


def _actor(value: Any) -> str:
    if not isinstance(value, Mapping):
        return ""
    return _str(value.get("label")) or _str(value.get("id")) or _str(value.get("type"))


def session_flags(entry: Mapping[str, Any] | Any) -> str:
    """R6.4.4 flags cell (space-joined, in order), e.g. `system visibility:shared id:<sid>`."""
    if not isinstance(entry, Mapping):
        entry = {}

    def level(field: str, prefix: str) -> str | None:
        value = entry.get(field)
        return f"{prefix}:{value}" if isinstance(value, str | int) and not isinstance(value, bool) and value else None

    owner_info = entry.get("owner")
    owner = _actor(owner_info.get("actor")) if isinstance(owner_info, Mapping) else ""
    owner = owner or _actor(entry.get("createdActor"))
    participants = entry.get("participants") if isinstance(entry.get("participants"), list) else []
    names = []
    for item in participants[:4]:
        if not isinstance(item, Mapping):
            continue
        identity = item.get("identity") if isinstance(item.get("identity"), Mapping) else {}
        names.append(_str(item.get("label")) or f"{identity.get('type')}:{identity.get('id')}")
    count = entry.get("participantCount")
    total = count if isinstance(count, int) and not isinstance(count, bool) else len(names)
    extra = max(0, total - len(names))
    visibility = entry.get("visibility") if isinstance(entry.get("visibility"), str) else "shared"
    flags = [
        level("thinkingLevel", "think"),
        level("verboseLevel", "verbose"),
        level("traceLevel", "trace"),
        level("reasoningLevel", "reasoning"),
        level("elevatedLevel", "elev"),
        level("responseUsage", "usage"),
        level("groupActivation", "activation"),
        "system" if entry.get("systemSent") is True else None,
        "aborted" if entry.get("abortedLastRun") is True else None,
        f"visibility:{visibility}" if visibility else None,
        f"owner:{owner}" if owner else None,
        f"participants:{','.join(names)}{f',+{extra}' if extra else ''}" if names else None,
        level("runtimePolicySessionKey", "policy"),
        level("sessionId", "id"),
    ]
    return sanitize_text(" ".join(f for f in flags if f))


# ---- planned-actions table ----------------------------------------------------------------------


@dataclass(frozen=True)
class ActionRow:
    action: str
    key: str  # raw store key
    updated_at: float | None
    age: str
    model: str
    flags: str
    label: Any  # raw entry label (summaries sanitise it)

    @property
    def key_cell(self) -> str:
        return truncate_key(self.key)

    def cells(self) -> tuple[str, str, str, str, str]:
        return (self.action, self.key_cell, self.age, self.model, self.flags)


def _updated(entry: Any) -> float | None:
    value = entry.get("updatedAt") if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def action_rows(plan: CleanupPlan, entries: Mapping[str, Any], now_ms: float) -> list[ActionRow]:
    """One row per key of the store before cleanup, newest `updatedAt` first (missing as 0;
    stable over store order)."""
    rows = []
    for key, action in plan.actions.items():
        entry = entries.get(key)
        updated = _updated(entry)
        age = format_time_ago(now_ms - updated) if updated else "unknown"
        label = entry.get("label") if isinstance(entry, Mapping) else None
        rows.append(ActionRow(action, key, updated, age, display_model(entry), session_flags(entry), label))
    return sorted(rows, key=lambda r: -(r.updated_at or 0.0))


def _collation_key(label: str) -> tuple:
    """Close to JS `localeCompare`: case- and accent-insensitive first, punctuation < digits <
    letters, lower case before upper case on ties."""
    base = "".join(c for c in unicodedata.normalize("NFKD", label) if not unicodedata.combining(c)).casefold()

    def rank(ch: str) -> tuple[int, str]:
        if ch.isdigit():
            return (1, ch)
        if ch.isalpha():
            return (2, ch)
        return (0, ch)

    return (tuple(rank(c) for c in base), label.swapcase())


def label_summaries(rows: Iterable[ActionRow]) -> list[tuple[str, int, int]]:
    """(label, kept, pruned) per sanitised trimmed label (`(unlabeled)` when empty or not a
    string), sorted by label; `keep` counts as kept, every other action as pruned."""
    groups: dict[str, list[int]] = {}
    for row in rows:
        raw = row.label.strip() if isinstance(row.label, str) else ""
        label = sanitize_text(raw) or UNLABELED
        counts = groups.setdefault(label, [0, 0])
        counts[0 if row.action == ACTION_KEEP else 1] += 1
    return [(label, kept, pruned) for label, (kept, pruned) in
            sorted(groups.items(), key=lambda item: _collation_key(item[0]))]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain box-drawn table (no wrapping), padded by terminal width."""
    widths = [display_width(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], display_width(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [c + " " * (w - display_width(c)) for c, w in zip(cells, widths, strict=True)]
        return "│ " + " │ ".join(padded) + " │"

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right

    out = [rule("┌", "┬", "┐"), line(headers), rule("├", "┼", "┤")]
    out += [line(r) for r in rows]
    out.append(rule("└", "┴", "┘"))
    return "\n".join(out)


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
) -> dict[str, Any]:
    """OpenClaw's per-store summary, keys in OpenClaw's order. `archived`/`capArchived` are 2026.9.6
    keys that are always 0 under our rules (D11). Apply adds `applied`/`appliedCount`
    (`applied_count` = entries in the store after apply; the plan's `afterCount` when omitted).

    Added keys (D5 allows additions): `cronPruned` after `capped` when the `cron.sessionRetention`
    stage ran (the store had cron run rows), and G2's `archiveCleanup` `{scannedFiles,
    removedFiles}` (the `resetArchiveRetention` sweep) before `unreferencedArtifacts` when given."""
    artifacts = dict(unreferenced_artifacts) if unreferenced_artifacts is not None else empty_unreferenced_artifacts(plan)
    summary: dict[str, Any] = {
        "agentId": agent_id,
        "storePath": store_path,
        "mode": plan.mode,
        "dryRun": dry_run,
        "beforeCount": plan.before_count,
        "afterCount": plan.after_count,
        "missing": plan.missing,
        "dmScopeRetired": plan.dm_scope_retired,
        "modelRunPruned": plan.model_run_pruned,
        "archived": 0,
        "capArchived": 0,
        "pruned": plan.pruned,
        "capped": plan.capped,
    }
    if getattr(plan, "cron_retention_ran", False):
        summary["cronPruned"] = plan.cron_pruned
    if archive_cleanup is not None:
        summary["archiveCleanup"] = dict(archive_cleanup)
    summary["unreferencedArtifacts"] = artifacts
    summary["diskBudget"] = plan.disk_budget.to_json() if plan.disk_budget else None
    summary["wouldMutate"] = (plan.would_mutate or int(artifacts.get("removedFiles", 0) or 0) > 0
                              or int((archive_cleanup or {}).get("removedFiles", 0) or 0) > 0)
    if not dry_run:
        summary["applied"] = True
        summary["appliedCount"] = plan.after_count if applied_count is None else applied_count
    return summary


def cleanup_json(summaries: Sequence[Mapping[str, Any]], *, mode: str, dry_run: bool) -> Any:
    """Exactly one summary is printed bare; any other number (even with `--all-agents`) is wrapped."""
    if len(summaries) == 1:
        return summaries[0]
    return {"allAgents": True, "mode": mode, "dryRun": dry_run, "stores": list(summaries)}


# ---- text ---------------------------------------------------------------------------------------


def warn_mode_hint(plan: CleanupPlan) -> str | None:
    """In warn mode: what `--enforce` would additionally remove (None when nothing)."""
    other = plan.would_enforce
    if plan.mode == "enforce" or other is None:
        return None
    extra = other.model_run_pruned + other.pruned + other.capped + other.evicted
    if extra == 0:
        return None
    return (f"Warn mode: automatic maintenance removes nothing; --enforce would also remove {extra} "
            f"(model-run probes {other.model_run_pruned}, stale {other.pruned}, cap overflow {other.capped}, "
            f"disk budget {other.evicted})")


def render_dry_run_text(
    summary: Mapping[str, Any],
    rows: Sequence[ActionRow],
    *,
    show_agent_header: bool = False,
    hint: str | None = None,
    table_renderer: Callable[[Sequence[str], Sequence[Sequence[str]]], str] = render_table,
) -> str:
    """The per-store dry-run report (§10.8, fixture `cleanup-dry-run.txt`)."""
    lines: list[str] = []
    if show_agent_header:
        lines.append(f"Agent: {sanitize_text(summary['agentId'])}")
    before, after = summary["beforeCount"], summary["afterCount"]
    lines += [
        f"Session store: {sanitize_text(summary['storePath'])}",
        f"Maintenance mode: {summary['mode']}",
        f"Entries: {before} -> {after} (remove {before - after})",
        f"Would prune missing transcripts: {summary['missing']}",
        f"Would retire stale direct DM sessions: {summary['dmScopeRetired']}",
        f"Would prune stale model-run probes: {summary['modelRunPruned']}",
        f"Would archive inactive sessions: {summary.get('archived') or 0}",
        f"Would archive cap overflow: {summary.get('capArchived') or 0}",
        f"Would prune stale: {summary['pruned']}",
        f"Would cap overflow: {summary['capped']}",
    ]
    if "cronPruned" in summary:
        lines.append(f"Would prune expired cron runs: {summary['cronPruned']}")
    if summary.get("archiveCleanup"):
        lines.append(f"Would remove expired archives: {summary['archiveCleanup'].get('removedFiles', 0)}")
    artifacts = summary.get("unreferencedArtifacts") or {}
    if artifacts.get("scannedFiles"):
        lines.append(f"Would prune unreferenced artifacts: {artifacts.get('removedFiles', 0)}")
    budget = summary.get("diskBudget")
    if budget:
        lines.append(f"Would enforce disk budget: {budget['totalBytesBefore']} -> {budget['totalBytesAfter']} "
                     f"bytes (files {budget['removedFiles']}, entries {budget['removedEntries']})")
    if hint:
        lines.append(hint)
    if not rows:
        return "\n".join(lines)
    lines += ["", "Planned session actions:", table_renderer(TABLE_HEADERS, [r.cells() for r in rows])]
    summaries = label_summaries(rows)
    pad = max(display_width(label) for label, _, _ in summaries)
    lines += ["", "Summary by Label:"]
    for label, kept, pruned in summaries:
        lines.append(f"{label}{' ' * (pad - display_width(label))}  {kept} kept, {pruned} pruned")
    lines.append(f"Total: {sum(k for _, k, _ in summaries)} kept, {sum(p for _, _, p in summaries)} pruned")
    return "\n".join(lines)


def render_dry_run_texts(reports: Sequence[tuple[Mapping[str, Any], Sequence[ActionRow], str | None]],
                         **kwargs: Any) -> str:
    """Several stores: a blank line between them and `Agent: <id>` first when more than one."""
    many = len(reports) > 1
    return "\n\n".join(render_dry_run_text(s, rows, show_agent_header=many, hint=hint, **kwargs)
                       for s, rows, hint in reports)


def render_apply_text(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Per store: `[Agent: <id>]`, `Session store: <path>`, `Applied maintenance. Current entries: N`,
    and `Pruned unreferenced artifacts: N` when non-zero; a blank line between stores."""
    blocks = []
    for summary in summaries:
        lines = []
        if len(summaries) > 1:
            lines.append(f"Agent: {sanitize_text(summary['agentId'])}")
        lines.append(f"Session store: {sanitize_text(summary['storePath'])}")
        lines.append(f"Applied maintenance. Current entries: {summary.get('appliedCount') or 0}")
        removed = (summary.get("unreferencedArtifacts") or {}).get("removedFiles")
        if removed:
            lines.append(f"Pruned unreferenced artifacts: {removed}")
        expired = (summary.get("archiveCleanup") or {}).get("removedFiles")
        if expired:
            lines.append(f"Removed expired archives: {expired}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def parent_option_rejection(given_flags: Iterable[str], subcommand: str = "cleanup",
                            unsupported: Sequence[str] = CLEANUP_PARENT_UNSUPPORTED,
                            reason: str = CLEANUP_PARENT_REASON) -> str | None:
    """§10.1: the message for parent `sessions` options a subcommand does not support (None when
    none was given); flags in the canonical order, `option`/`options` by count."""
    given = set(given_flags)
    flags = [f for f in unsupported if f in given]
    if not flags:
        return None
    noun = "options" if len(flags) > 1 else "option"
    return f"`sessions {subcommand}` does not support the parent `sessions` {noun} {', '.join(flags)}; {reason}."
