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
    # a value beyond the double range (kept as written, D22) has no age
    row["ageMs"] = max(0, int(now_ms - updated)) if updated is not None and abs(updated) < 1e300 else None
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
