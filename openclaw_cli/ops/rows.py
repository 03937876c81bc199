"""Listing rows with OpenClaw's field names and order (observed §7, compaction-lifecycle R6.4.6),
plus the derived `archived` / `pinned` / `unread` flags (spec D1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Entry fields copied into a row, in OpenClaw's order, when present in the entry (not null);
# `forkedFromParent` sits between the two first groups and is copied only when it is `true`.
_COPIED_BEFORE_FORK = ("spawnedBy", "spawnedWorkspaceDir", "spawnedCwd", "parentSessionKey")
_COPIED_BEFORE_VISIBILITY = (
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
_COPIED_AFTER_TOKENS = ("totalTokensVersion", "providerOverride", "modelOverride")

# OpenClaw 2026.9.6's built-in model defaults (`src/agents/defaults.ts`: DEFAULT_PROVIDER,
# DEFAULT_MODEL, DEFAULT_CONTEXT_TOKENS): what its rows show when the config names no model
# (observed: `gpt-6-astra` on a row with no stored model; `contextTokens` 200000 on every row).
BUILTIN_MODEL = "openai/gpt-6-astra"
BUILTIN_CONTEXT_TOKENS = 200_000
# The runtime OpenClaw projects for an openai model when nothing is stored (observed on every row).
_OPENAI_IMPLICIT_RUNTIME = {"id": "codex", "source": "implicit"}


def model_defaults(config: Any, agent_id: str | None = None) -> tuple[str, int]:
    """(`provider/model`, context tokens) a listing row falls back to: the agent's configured
    model, else `agents.defaults.model`, else OpenClaw's built-in one; `agents.defaults.contextTokens`,
    else the built-in 200000 (the real CLI projects this, not the stored value: stored 400000 is
    listed as 200000)."""
    from openclaw_cli.config import context_tokens_default, default_model

    return (
        default_model(config, agent_id) or BUILTIN_MODEL,
        context_tokens_default(config) or BUILTIN_CONTEXT_TOKENS,
    )


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def row_shaper(
    *,
    agent_id: str,
    now_ms: int,
    default_model: str | None = None,
    default_context_tokens: int | None = None,
    projected: bool = False,
) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """`session_row` with one listing's arguments bound: a streamed listing shapes up to every
    row of a store (100,000 rows: every lookup per row counts). `projected`: the row as the real
    `openclaw sessions --json` projects it — `contextTokens` is the default's (the stored value is
    not shown) and an openai model without a stored runtime runs on the implicit `codex` runtime."""
    from openclaw_cli.keys import derive_row_flags, session_kind

    model_default = provider_default = None
    if default_model:
        provider_part, _, model_default = default_model.rpartition("/")
        provider_default = provider_part or None

    def shape(key: str, entry: dict[str, Any]) -> dict[str, Any]:
        get = entry.get
        updated = get("updatedAt")
        kind = type(updated)
        if kind is not int and kind is not float:
            updated = _number(updated)
        row: dict[str, Any] = {
            "key": key,
            "updatedAt": updated,
            # a value beyond the double range (kept as written, D22) has no age
            "ageMs": max(0, int(now_ms - updated)) if updated is not None and abs(updated) < 1e300 else None,
            "sessionId": get("sessionId"),
        }
        for name in _COPIED_BEFORE_FORK:
            value = get(name)
            if value is not None:
                row[name] = value
        if get("forkedFromParent") is True:
            row["forkedFromParent"] = True
        for name in _COPIED_BEFORE_VISIBILITY:
            value = get(name)
            if value is not None:
                row[name] = value
        visibility = get("visibility")
        row["visibility"] = visibility if isinstance(visibility, str) else "shared"
        for name in _COPIED_AFTER_VISIBILITY:
            value = get(name)
            if value is not None:
                row[name] = value
        total = get("totalTokens")
        kind = type(total)
        if kind is not int and kind is not float:
            total = _number(total)
        row["totalTokens"] = total if total is not None and total >= 0 else None
        row["totalTokensFresh"] = get("totalTokensFresh") is True
        for name in _COPIED_AFTER_TOKENS:
            value = get(name)
            if value is not None:
                row[name] = value
        model = get("modelOverride") or get("model")
        provider = get("providerOverride") or get("modelProvider")
        if not model and default_model:
            model = model_default
            provider = provider or provider_default
        row["model"] = model if isinstance(model, str) and model else None
        row["modelProvider"] = provider if isinstance(provider, str) and provider else None
        ctx = get("contextTokens")
        kind = type(ctx)
        if kind is not int and kind is not float:
            ctx = _number(ctx)
        row["contextTokens"] = default_context_tokens if projected or ctx is None else ctx
        row["agentId"] = agent_id
        row["acpRuntime"] = isinstance(get("acp"), dict)
        harness = get("agentRuntimeOverride") or get("agentHarnessId")
        if isinstance(harness, str) and harness:
            row["agentRuntime"] = {"id": harness, "source": "session"}
        elif projected and row["modelProvider"] == "openai":
            row["agentRuntime"] = dict(_OPENAI_IMPLICIT_RUNTIME)
        row["kind"] = session_kind(key, entry)
        row.update(derive_row_flags(entry, key))
        return row

    return shape


def session_row(
    key: str,
    entry: dict[str, Any],
    *,
    agent_id: str,
    now_ms: int,
    default_model: str | None = None,
    default_context_tokens: int | None = None,
) -> dict[str, Any]:
    """One listing row (OpenClaw's field names and order) of a stored entry."""
    return row_shaper(
        agent_id=agent_id,
        now_ms=now_ms,
        default_model=default_model,
        default_context_tokens=default_context_tokens,
    )(key, entry)
