"""Text of `openclaw sessions cleanup` (maintenance.md §10.8, fixture `cleanup-dry-run.txt`): the
dry-run report (header lines, planned-actions table, summary by label), the apply report and
the parent-option rejection. Input is plain data from `ops.cleanup.store_views`. Every string
that comes from stored data goes through `output.sanitize_text` (D6.8)."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from openclaw_cli.cli.cells import display_width, format_time_ago, truncate_key
from openclaw_cli.output import sanitize_text
from openclaw_cli.records import FrozenRecord

TABLE_HEADERS = ("Action", "Key", "Age", "Model", "Flags")
UNLABELED = "(unlabeled)"
ACTION_KEEP = "keep"
# action -> style (cli.term): what removes a row red, what archives one yellow, keep green
ACTION_STYLES = {
    "keep": "keep",
    "prune-missing": "remove",
    "retire-dm-scope": "archive",
    "prune-model-run": "remove",
    "archive-dashboard": "archive",
    "archive-cap": "archive",
    "archive-age": "archive",
    "prune-stale": "remove",
    "cap-overflow": "remove",
}
_KEPT_ACTIONS = frozenset({"keep", "archive-dashboard", "archive-cap", "archive-age"})
CLEANUP_PARENT_UNSUPPORTED = ("--active", "--limit", "--verbose")
CLEANUP_PARENT_REASON = "session-list filters cannot scope session maintenance"


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
        return (
            f"{prefix}:{value}"
            if isinstance(value, str | int) and not isinstance(value, bool) and value
            else None
        )

    owner_info = entry.get("owner")
    owner = _actor(owner_info.get("actor")) if isinstance(owner_info, Mapping) else ""
    owner = owner or _actor(entry.get("createdActor"))
    raw_participants = entry.get("participants")
    participants = raw_participants if isinstance(raw_participants, list) else []
    names = []
    for item in participants[:4]:
        if not isinstance(item, Mapping):
            continue
        raw_identity = item.get("identity")
        identity = raw_identity if isinstance(raw_identity, Mapping) else {}
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


class ActionRow(FrozenRecord):
    __slots__ = _fields = ("action", "key", "updated_at", "age", "model", "flags", "label")
    action: str
    key: str  # raw store key
    updated_at: float | None
    age: str
    model: str
    flags: str
    label: Any  # raw entry label (summaries sanitise it)

    def __init__(
        self, action: str, key: str, updated_at: float | None, age: str, model: str, flags: str, label: Any
    ) -> None:
        self._assign(action, key, updated_at, age, model, flags, label)

    @property
    def key_cell(self) -> str:
        return truncate_key(self.key)

    def cells(self, *, full_keys: bool = False) -> tuple[str, str, str, str, str]:
        key = sanitize_text(self.key) if full_keys else self.key_cell
        return (self.action, key, self.age, self.model, self.flags)


def _updated(entry: Any) -> float | None:
    value = entry.get("updatedAt") if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def action_rows(actions: Iterable[tuple[str, str, Any]], now_ms: float) -> list[ActionRow]:
    """One row per `(action, key, entry)` of the store before cleanup, newest `updatedAt` first
    (missing as 0; stable over store order)."""
    rows = []
    for action, key, entry in actions:
        updated = _updated(entry)
        age = format_time_ago(now_ms - updated) if updated else "unknown"
        label = entry.get("label") if isinstance(entry, Mapping) else None
        rows.append(ActionRow(action, key, updated, age, display_model(entry), session_flags(entry), label))
    return sorted(rows, key=lambda r: -(r.updated_at or 0.0))


def _collation_key(label: str) -> tuple[tuple[tuple[int, str], ...], str]:
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
    string), sorted by label; `keep` and the archive actions (the row stays) count as kept, every
    other action as pruned."""
    groups: dict[str, list[int]] = {}
    for row in rows:
        raw = row.label.strip() if isinstance(row.label, str) else ""
        label = sanitize_text(raw) or UNLABELED
        counts = groups.setdefault(label, [0, 0])
        counts[0 if row.action in _KEPT_ACTIONS else 1] += 1
    return [
        (label, kept, pruned)
        for label, (kept, pruned) in sorted(groups.items(), key=lambda item: _collation_key(item[0]))
    ]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain box-drawn table at its natural width (no wrapping, no eliding)."""
    from openclaw_cli.cli.table import Column
    from openclaw_cli.cli.table import render_table as draw

    return "\n".join(draw([Column(h) for h in headers], rows))


def fitted_table(width: int | None, color: bool) -> Callable[[Sequence[str], Sequence[Sequence[str]]], str]:
    """The planned-actions table for a stream: fitted to `width` (Flags narrow first, then Key,
    elided in the middle; None: natural width), actions coloured when `color`."""
    from openclaw_cli.cli.table import Column
    from openclaw_cli.cli.table import render_table as draw

    columns = [
        Column("Action", min_width=6, shrink_order=60, style=lambda cell: ACTION_STYLES.get(cell)),
        Column("Key", min_width=12, shrink_order=20),
        Column("Age", min_width=7, shrink_order=70),
        Column("Model", min_width=6, shrink_order=30),
        Column("Flags", min_width=6, shrink_order=10, drop_below=16),
    ]

    def renderer(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        return "\n".join(draw(columns, rows, width=width, color=color))

    return renderer


# ---- text ---------------------------------------------------------------------------------------


def warn_mode_hint(would_enforce: Mapping[str, int] | None) -> str | None:
    """In warn mode: what `--enforce` would additionally remove (None when nothing)."""
    if not would_enforce:
        return None
    probes, stale = would_enforce["modelRunPruned"], would_enforce["pruned"]
    capped, evicted = would_enforce["capped"], would_enforce["evicted"]
    extra = probes + stale + capped + evicted
    if extra == 0:
        return None
    return (
        f"Warn mode: automatic maintenance removes nothing; --enforce would also remove {extra} "
        f"(model-run probes {probes}, stale {stale}, cap overflow {capped}, disk budget {evicted})"
    )


WARN_PREVIEW_NOTE = (
    "Warn mode: `openclaw sessions cleanup` without --enforce removes and archives nothing; "
    "this preview shows what --enforce would do."
)
WARN_APPLY_NOTE = (
    "Maintenance mode is warn: nothing was removed or archived. Run with --enforce to apply "
    "(--dry-run shows what it would do)."
)


def render_dry_run_text(
    summary: Mapping[str, Any],
    rows: Sequence[ActionRow],
    *,
    show_agent_header: bool = False,
    hint: str | None = None,
    table_renderer: Callable[[Sequence[str], Sequence[Sequence[str]]], str] = render_table,
    full_keys: bool = False,
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
        lines.append(
            f"Would enforce disk budget: {budget['totalBytesBefore']} -> {budget['totalBytesAfter']} "
            f"bytes (files {budget['removedFiles']}, entries {budget['removedEntries']})"
        )
    if hint:
        lines.append(hint)
    if not rows:
        return "\n".join(lines)
    lines += [
        "",
        "Planned session actions:",
        table_renderer(TABLE_HEADERS, [r.cells(full_keys=full_keys) for r in rows]),
    ]
    summaries = label_summaries(rows)
    pad = max(display_width(label) for label, _, _ in summaries)
    lines += ["", "Summary by Label:"]
    for label, kept, pruned in summaries:
        lines.append(f"{label}{' ' * (pad - display_width(label))}  {kept} kept, {pruned} pruned")
    lines.append(f"Total: {sum(k for _, k, _ in summaries)} kept, {sum(p for _, _, p in summaries)} pruned")
    return "\n".join(lines)


def render_dry_run_texts(
    reports: Sequence[tuple[Mapping[str, Any], Sequence[ActionRow], str | None]], **kwargs: Any
) -> str:
    """Several stores: a blank line between them and `Agent: <id>` first when more than one."""
    many = len(reports) > 1
    return "\n\n".join(
        render_dry_run_text(s, rows, show_agent_header=many, hint=hint, **kwargs) for s, rows, hint in reports
    )


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
        if summary.get("mode") == "warn" and not summary.get("wouldMutate"):
            lines.append(WARN_APPLY_NOTE)
        removed = (summary.get("unreferencedArtifacts") or {}).get("removedFiles")
        if removed:
            lines.append(f"Pruned unreferenced artifacts: {removed}")
        expired = (summary.get("archiveCleanup") or {}).get("removedFiles")
        if expired:
            lines.append(f"Removed expired archives: {expired}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def parent_option_rejection(
    given_flags: Iterable[str],
    subcommand: str = "cleanup",
    unsupported: Sequence[str] = CLEANUP_PARENT_UNSUPPORTED,
    reason: str = CLEANUP_PARENT_REASON,
) -> str | None:
    """§10.1: the message for parent `sessions` options a subcommand does not support (None when
    none was given); flags in the canonical order, `option`/`options` by count."""
    given = set(given_flags)
    flags = [f for f in unsupported if f in given]
    if not flags:
        return None
    noun = "options" if len(flags) > 1 else "option"
    return (
        f"`sessions {subcommand}` does not support the parent `sessions` {noun} {', '.join(flags)}; {reason}."
    )
