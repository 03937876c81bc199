"""Transcript entries -> model messages, and the predicates the cut point needs (spec §4.5, §4.8).

Inputs are transcript *entry* dicts exactly as parsed from a pi-format JSONL line
(`{"type": "message", "id", "parentId", "timestamp", "message": {"role", ...}}`, `compaction`,
`custom_message`, `branch_summary`, `model_change`, ...). Nothing here mutates its input.

Projection (R4.8.2 step 4): only `message`, `custom_message`, `branch_summary` and (as the synthetic
summary message) `compaction` entries produce messages; messages flagged `excludeFromContext` do
not. Projected roles: `user`, `assistant`, `toolResult`, `bashExecution`, `custom`,
`branchSummary`, `compactionSummary` (pi's vocabulary).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

# One definition of the summary wrapping: the rebuilt context (store/tree.py) and token counts here
# must agree byte for byte.
from openclaw_cli.store.tree import (  # noqa: F401 - re-exported
    BRANCH_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_PREFIX,
    SUMMARY_SUFFIX,
    branch_summary_text,
    compaction_summary_text,
)

BOUNDARY_TYPES = frozenset({"compaction", "reset"})
CONTEXT_ENTRY_TYPES = frozenset({"message", "custom_message", "branch_summary"})
CUT_POINT_ROLES = frozenset(
    {"user", "assistant", "custom", "bashExecution", "branchSummary", "compactionSummary"}
)
TURN_START_ROLES = frozenset({"user", "custom", "bashExecution", "branchSummary", "compactionSummary"})
ABORTED_STOP_REASONS = frozenset({"aborted", "error"})
# How a runtime-context carrier (C: injected system/runtime context, never summarised) is marked.
# OpenClaw's exact marker is not in the spec; we recognise these custom types and the flag.
RUNTIME_CONTEXT_TYPES = frozenset(
    {
        "runtime-context",
        "runtime_context",
        "openclaw.runtime-context",
        "openclaw:runtime-context",
        "openclaw.runtimeContext",
    }
)


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)` with a fast path for dicts: the ABC check costs ~5x more and
    planning a 50 MB transcript makes hundreds of thousands of these checks."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def project_entry(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The model message an entry contributes to context, or None (metadata, excluded, malformed)."""
    if type(entry) is not dict and not isinstance(entry, Mapping):
        return None
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if type(message) is not dict and not isinstance(message, Mapping):
            return None
        role = message.get("role")
        if type(role) is not str or message.get("excludeFromContext") is True:
            return None
        if role == "hookMessage":  # legacy v<3 name of custom/hook
            out = dict(message)
            out["role"] = "custom"
            out.setdefault("customType", "hook")
            return out
        return message  # type: ignore[return-value]
    if kind == "custom_message":
        if entry.get("excludeFromContext") is True:
            return None
        return {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content", ""),
            "display": entry.get("display", True),
            "timestamp": entry.get("timestamp"),
        }
    if kind == "branch_summary":
        summary = entry.get("summary")
        return {
            "role": "branchSummary",
            "summary": summary if isinstance(summary, str) else "",
            "fromId": entry.get("fromId"),
            "timestamp": entry.get("timestamp"),
        }
    if kind == "compaction":
        summary = entry.get("summary")
        return {
            "role": "compactionSummary",
            "summary": summary if isinstance(summary, str) else "",
            "tokensBefore": entry.get("tokensBefore"),
            "timestamp": entry.get("timestamp"),
        }
    return None


def project_entries(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        message = project_entry(entry)
        if message is not None:
            out.append(message)
    return out


def role_of(message: Mapping[str, Any] | None) -> str | None:
    if type(message) is not dict and (message is None or not isinstance(message, Mapping)):
        return None
    role = message.get("role")
    return role if type(role) is str else None


def entry_role(entry: Mapping[str, Any]) -> str | None:
    """Role of the message an entry projects to (None for metadata/boundaries)."""
    kind = entry.get("type") if is_mapping(entry) else None
    if kind == "message":
        message = entry.get("message")
        role = role_of(message)
        return "custom" if role == "hookMessage" else role
    if kind == "custom_message":
        return "custom"
    if kind == "branch_summary":
        return "branchSummary"
    return None


def is_runtime_context(message: Mapping[str, Any] | None) -> bool:
    if not is_mapping(message) or message.get("role") != "custom":
        return False
    if message.get("runtimeContext") is True:
        return True
    custom_type = message.get("customType")
    return isinstance(custom_type, str) and custom_type in RUNTIME_CONTEXT_TYPES


def _entry_message(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if entry.get("type") == "message":
        message = entry.get("message")
        return message if is_mapping(message) else None
    if entry.get("type") == "custom_message":
        return {
            "role": "custom",
            "customType": entry.get("customType"),
            "runtimeContext": entry.get("runtimeContext"),
        }
    return None


def is_cut_point_entry(entry: Mapping[str, Any]) -> bool:
    """A valid first-kept entry (§4.5): never a toolResult, never a runtime-context carrier."""
    role = entry_role(entry)
    if role is None or role not in CUT_POINT_ROLES:
        return False
    if role == "custom" and is_runtime_context(_entry_message(entry)):
        return False
    return not (entry.get("type") == "message" and entry["message"].get("excludeFromContext") is True)


def is_turn_start_entry(entry: Mapping[str, Any]) -> bool:
    """user, custom, bashExecution, branchSummary, compactionSummary start a turn (not assistant)."""
    role = entry_role(entry)
    if role is None or role not in TURN_START_ROLES:
        return False
    return not (role == "custom" and is_runtime_context(_entry_message(entry)))


def _entry_type(entry: Any) -> str | None:
    kind = entry.get("type") if is_mapping(entry) else None
    return kind if isinstance(kind, str) else None


def is_boundary_entry(entry: Mapping[str, Any]) -> bool:
    if type(entry) is dict:  # the usual case, without two calls
        kind = entry.get("type")
        return type(kind) is str and kind in BOUNDARY_TYPES
    return _entry_type(entry) in BOUNDARY_TYPES


def is_context_entry(entry: Mapping[str, Any]) -> bool:
    """Entries that carry (or may carry) a context message; the rest is metadata."""
    return _entry_type(entry) in CONTEXT_ENTRY_TYPES


def is_aborted(message: Mapping[str, Any] | None) -> bool:
    if not is_mapping(message):
        return False
    reason = message.get("stopReason")
    return isinstance(reason, str) and reason in ABORTED_STOP_REASONS


def content_blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    if is_mapping(content):
        return [content]
    return []


def tool_calls(message: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The `toolCall` blocks of an assistant message (pi format)."""
    if message is None or role_of(message) != "assistant":
        return []
    return [b for b in content_blocks(message) if is_mapping(b) and b.get("type") == "toolCall"]


def tool_call_ids(message: Mapping[str, Any] | None) -> list[str]:
    return [b["id"] for b in tool_calls(message) if isinstance(b.get("id"), str) and b.get("id")]


def tool_result_id(message: Mapping[str, Any] | None) -> str | None:
    if role_of(message) != "toolResult":
        return None
    value = message.get("toolCallId")  # type: ignore[union-attr]
    return value if isinstance(value, str) and value else None


def text_of(message: Mapping[str, Any] | None, *, include_thinking: bool = False) -> str:
    """The plain text of a message (text blocks joined by newlines; summaries; bash command+output)."""
    if not is_mapping(message):
        return ""
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    if role == "bashExecution":
        parts = [message.get("command"), message.get("output")]
        return "\n".join(p for p in parts if isinstance(p, str))
    content = message.get("content")
    if type(content) is str:
        return content
    blocks = content if type(content) is list else content_blocks(message)
    out: list[str] = []
    for block in blocks:
        if not is_mapping(block):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if type(text) is str:
                out.append(text)
        elif include_thinking and kind == "thinking" and isinstance(block.get("thinking"), str):
            out.append(block["thinking"])
    return out[0] if len(out) == 1 else "\n".join(out)


def entry_id(entry: Mapping[str, Any]) -> str | None:
    value = entry.get("id") if is_mapping(entry) else None
    return value if isinstance(value, str) and value.strip() else None


def usage_total(message: Mapping[str, Any] | None) -> int:
    """Provider usage total of an assistant message: `totalTokens`, else input+output+cache (R4.4.5)."""
    if not is_mapping(message):
        return 0
    usage = message.get("usage")
    if not is_mapping(usage):
        return 0
    total = usage.get("totalTokens")
    if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
        return int(total)
    out = 0
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            out += int(value)
    return out
