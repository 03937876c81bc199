"""Listing rows with OpenClaw's field names and order (observed §7, compaction-lifecycle R6.4.6),
plus the derived `archived` / `pinned` / `unread` flags (spec D1)."""

from __future__ import annotations

from typing import Any

# Entry fields copied into a row, in OpenClaw's order, when present in the entry.
_COPIED_BEFORE_TOKENS = (
    "spawnedBy",
    "spawnedWorkspaceDir",
    "spawnedCwd",
    "parentSessionKey",
    "forkedFromParent",
    "spawnDepth",
    "subagentRole",
    "subagentControlScope",
    "sessionStartedAt",
    "lastInteractionAt",
    "label",
    "color",
    "status",
)
_COPIED_AFTER_VISIBILITY = (
    "createdActor",
    "owner",
    "participants",
    "participantCount",
    "systemSent",
    "abortedLastRun",
    "thinkingLevel",
    "verboseLevel",
    "traceLevel",
    "reasoningLevel",
    "elevatedLevel",
    "responseUsage",
    "groupActivation",
    "inputTokens",
    "outputTokens",
)


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def session_row(
    key: str,
    entry: dict[str, Any],
    *,
    agent_id: str,
    now_ms: int,
    default_model: str | None = None,
    default_context_tokens: int | None = None,
) -> dict[str, Any]:
    from openclaw_cli.keys import derive_row_flags, session_kind

    row: dict[str, Any] = {"key": key}
    updated = _number(entry.get("updatedAt"))
    row["updatedAt"] = updated
    row["ageMs"] = max(0, int(now_ms - updated)) if updated is not None else None
    row["sessionId"] = entry.get("sessionId")
    for name in _COPIED_BEFORE_TOKENS:
        if name == "forkedFromParent":
            if entry.get(name) is True:
                row[name] = True
            continue
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    row["visibility"] = entry.get("visibility") if isinstance(entry.get("visibility"), str) else "shared"
    for name in _COPIED_AFTER_VISIBILITY:
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    total = _number(entry.get("totalTokens"))
    row["totalTokens"] = total if total is not None and total >= 0 else None
    row["totalTokensFresh"] = entry.get("totalTokensFresh") is True
    for name in ("totalTokensVersion", "providerOverride", "modelOverride"):
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    model = entry.get("modelOverride") or entry.get("model")
    provider = entry.get("providerOverride") or entry.get("modelProvider")
    if not model and default_model:
        provider_default, _, model_default = default_model.rpartition("/")
        model = model_default
        provider = provider or (provider_default or None)
    row["model"] = model if isinstance(model, str) and model else None
    row["modelProvider"] = provider if isinstance(provider, str) and provider else None
    ctx = _number(entry.get("contextTokens"))
    row["contextTokens"] = ctx if ctx is not None else default_context_tokens
    row["agentId"] = agent_id
    row["acpRuntime"] = isinstance(entry.get("acp"), dict)
    harness = entry.get("agentRuntimeOverride") or entry.get("agentHarnessId")
    if isinstance(harness, str) and harness:
        row["agentRuntime"] = {"id": harness, "source": "session"}
    row["kind"] = session_kind(key, entry)
    row.update(derive_row_flags(entry, key))
    return row


def row_flags_text(row: dict[str, Any]) -> str:
    """Flags cell (R6.4.4 order, the subset we can fill)."""
    flags: list[str] = []
    for name, label in (
        ("thinkingLevel", "think"),
        ("verboseLevel", "verbose"),
        ("traceLevel", "trace"),
        ("reasoningLevel", "reasoning"),
        ("elevatedLevel", "elev"),
        ("responseUsage", "usage"),
        ("groupActivation", "activation"),
    ):
        if row.get(name):
            flags.append(f"{label}:{row[name]}")
    if row.get("systemSent"):
        flags.append("system")
    if row.get("abortedLastRun"):
        flags.append("aborted")
    if row.get("archived"):
        flags.append("archived")
    if row.get("pinned"):
        flags.append("pinned")
    if row.get("unread"):
        flags.append("unread")
    flags.append(f"visibility:{row.get('visibility', 'shared')}")
    if row.get("sessionId"):
        flags.append(f"id:{row['sessionId']}")
    return " ".join(flags)


def format_token_count(value: float | int | None) -> str:
    """R6.1.1 formatTokenCount."""
    if value is None or not isinstance(value, int | float) or value != value or value in (float("inf"),):
        return "0"
    v = max(0.0, float(value))
    if v < 1000:
        return str(int(round(v)))
    if v < 1_000_000:
        scaled = v / 1000
        text = f"{scaled:.1f}" if v < 10_000 else f"{scaled:.0f}"
        if float(text) < 1000:
            return f"{text}k"
    return f"{v / 1_000_000:.1f}m"


def tokens_cell(row: dict[str, Any]) -> str:
    total = row.get("totalTokens")
    ctx = row.get("contextTokens")
    ctx_text = format_token_count(ctx) if ctx else "?"
    if total is None:
        return f"unknown/{ctx_text} (?%)"
    if ctx and row.get("totalTokensFresh"):
        pct = f"{min(999, round(total / ctx * 100))}%"
    else:
        pct = "?%"
    return f"{format_token_count(total)}/{ctx_text} ({pct})"


# One implementation of the shared cells (the cleanup report uses the same ones).
from openclaw_cli.maintenance.report import format_time_ago, truncate_key  # noqa: E402,F401
