"""Forking a session at one of its user messages and switching its active branch (OpenClaw
2026.9.6's `sessions.fork` and `sessions.branches.switch`, observed against the real Gateway and
recorded in tests/fixtures/gateway-2026.9.6-issue25). Pure: the stores' `fork_session(at_entry=…)`
and `switch_branch` read the transcript and write what these plan.

* **fork at a message**: the entry must exist (`message entry not found: <id>`), be a user
  message (`entry is not a user message: <id>`) and lie on the active path (`message entry is not
  on the active path: <id>`). The child transcript is a new header (the parent header's version,
  else 3, and its `cwd`; no `parentSession`) and the active path *before* that message, every line
  byte-exact unless its written `parentId` is not its logical parent, which it then gets. The
  message's text (its text blocks joined) is handed back as `editorText`: what the client puts in
  its composer. The parent transcript is only read.
* **switch**: the target must exist (`branch entry not found: <id>`), be a tip of the tree and
  not a leaf control (`entry is not a branch tip: <id>`) and not be the active tip already
  (`branch is already active: <id>`). The session continues under a new sessionId whose transcript
  is a new header, every other line of the old transcript byte-exact, and one `leaf` control
  (a fresh 8-hex id, hung from the last entry) moving the leaf to the target. The old transcript
  stays as it was.
* **rows**: the fork child and the switched row are the current row with the run/usage state
  cleared (OpenClaw's list, `CLEARED`): a fork keeps only the user's model/runtime selection and
  gets a new `lifecycleRevision`, `forkSource {sessionKey, sessionId, entryId}`,
  `parentSessionKey` and an operator creation stamp; a switch keeps the rest of the row and names
  the old session in `previousSessionId`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.base import TranscriptLine

# Row fields a message cut clears (run, usage and cached runtime state of the old transcript).
CLEARED = (
    "lifecycleRunId",
    "lastRunId",
    "startedAt",
    "endedAt",
    "runtimeMs",
    "status",
    "inputTokens",
    "outputTokens",
    "cacheRead",
    "cacheWrite",
    "estimatedCostUsd",
    "totalTokens",
    "totalTokensFresh",
    "totalTokensVersion",
    "contextTokens",
    "contextTokensSource",
    "contextBudgetStatus",
    "compactionCount",
    "transcriptByteCompactionLatch",
    "memoryFlush",
    "cliSessionBindings",
    "cliSessionIds",
    "claudeCliSessionId",
    "agentHarnessId",
    "modelSelectionLocked",
    "skillsSnapshot",
    "systemPromptReport",
    "restartRecoveryRuns",
    "restartRecoveryForceSafeTools",
    "abortCutoffMessageSid",
    "abortCutoffTimestamp",
)
# What a fork inherits of its parent's row: the user's selections, nothing of its state.
_MODEL_SELECTION = (
    "providerOverride",
    "modelOverride",
    "modelOverrideSource",
    "modelOverrideRouteResolution",
    "agentRuntimeOverride",
)
_SETTINGS = (
    "contextWindow",
    "thinkingLevel",
    "toolOverrides",
    "verboseLevel",
    "traceLevel",
    "reasoningLevel",
    "elevatedLevel",
)


@dataclass
class Cut:
    lines: list[str]  # the child transcript, header first
    editor_text: str | None
    copied_entries: int


def _header(lines: Iterable[TranscriptLine]) -> dict[str, Any] | None:
    for line in lines:
        if line.obj is not None and line.obj.get("type") == "session":
            return line.obj
    return None


def new_header(old: Mapping[str, Any] | None, session_id: str, timestamp: str, cwd: str) -> str:
    """OpenClaw's header of a message-cut transcript: the old header's version (else 3) and cwd."""
    version = old.get("version") if isinstance(old, Mapping) else None
    old_cwd = old.get("cwd") if isinstance(old, Mapping) else None
    return dumps_compact(
        {
            "type": "session",
            "version": version if isinstance(version, int) and not isinstance(version, bool) else 3,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": old_cwd if isinstance(old_cwd, str) and old_cwd.strip() else cwd,
        }
    )


def editor_text(message: Mapping[str, Any]) -> str | None:
    """The text a client puts back in its composer: the work-context text when the message carries
    one, else its text blocks joined (a plain string content as it is)."""
    meta = message.get("__openclaw")
    work = meta.get("workContext") if isinstance(meta, Mapping) else None
    if (
        isinstance(work, Mapping)
        and isinstance(work.get("snapshot"), Mapping)
        and isinstance(work.get("text"), str)
    ):
        return str(work["text"])
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    text = "".join(
        block["text"]
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )
    return text or None


def plan_cut(
    lines: list[TranscriptLine], entry_id: str, *, child_session_id: str, timestamp: str, cwd: str
) -> Cut:
    """The child transcript of forking `lines` (a whole transcript) at the user message `entry_id`."""
    from openclaw_cli.store.tree import scan_tree

    tree = scan_tree(lines)
    target = tree.by_id.get(entry_id)
    if target is None:
        raise PreconditionError(f"message entry not found: {entry_id}")
    obj = target.line.obj or {}
    message = obj.get("message")
    if obj.get("type") != "message" or not isinstance(message, Mapping) or message.get("role") != "user":
        raise PreconditionError(f"entry is not a user message: {entry_id}")
    path = tree.path_to(tree.leaf_id) or []
    ids = [node.id for node in path]
    if entry_id not in ids:
        raise PreconditionError(f"message entry is not on the active path: {entry_id}")
    out = [new_header(_header(lines), child_session_id, timestamp, cwd)]
    for node in path[: ids.index(entry_id)]:
        entry = node.line.obj or {}
        if entry.get("parentId") != node.parent_id or node.line.raw is None:
            out.append(dumps_compact({**entry, "parentId": node.parent_id}))
        else:
            out.append(node.line.raw)
    return Cut(out, editor_text(message), len(out) - 1)


def plan_switch(
    lines: list[TranscriptLine], leaf_id: str, *, session_id: str, timestamp: str, cwd: str
) -> list[str]:
    """The new transcript of switching `lines` (a whole transcript) to the tip `leaf_id`: a new
    header, every other line as it is (malformed ones too), then the `leaf` control."""
    from openclaw_cli.store.tree import scan_tree

    tree = scan_tree(lines)
    target = tree.by_id.get(leaf_id)
    if target is None:
        raise PreconditionError(f"branch entry not found: {leaf_id}")
    continued = {node.parent_id for node in tree.nodes if not node.leaf_control}
    if target.leaf_control or leaf_id in continued:
        raise PreconditionError(f"entry is not a branch tip: {leaf_id}")
    if tree.leaf_id == leaf_id:
        raise PreconditionError(f"branch is already active: {leaf_id}")
    body = [line for line in lines if not (line.obj is not None and line.obj.get("type") == "session")]
    used = {line.obj.get("id") for line in lines if line.obj is not None}
    last = next((line.obj.get("id") for line in reversed(body) if line.obj is not None), None)
    control = {
        "type": "leaf",
        "id": _unique_id(used),
        "parentId": last if isinstance(last, str) and last.strip() else None,
        "timestamp": timestamp,
        "targetId": leaf_id,
    }
    out = [new_header(_header(lines), session_id, timestamp, cwd)]
    for line in body:
        if line.raw is None:
            raise PreconditionError("transcript line unavailable; retry")  # a snapshot read without text
        out.append(line.raw)
    out.append(dumps_compact(control))
    return out


def _unique_id(used: set[Any]) -> str:
    while True:
        candidate = uuid.uuid4().hex[:8]
        if candidate not in used:
            return candidate


def _cleared(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in CLEARED}


def forked_entry(
    parent: Mapping[str, Any],
    *,
    parent_key: str,
    child_session_id: str,
    entry_id: str,
    now_ms: int,
) -> dict[str, Any]:
    """The fork child's row: the parent's selections, a new lifecycle, where it came from."""
    inherited: dict[str, Any] = {}
    if not parent.get("modelOverrideFallbackOriginProvider"):  # no automatic fallback active
        inherited.update({k: parent[k] for k in _MODEL_SELECTION if parent.get(k)})
    inherited.update({k: parent[k] for k in _SETTINGS if parent.get(k)})
    if "fastMode" in parent and parent["fastMode"] is not None:
        inherited["fastMode"] = parent["fastMode"]
    return {
        **inherited,
        "sessionId": child_session_id,
        "lifecycleRevision": str(uuid.uuid4()),
        "updatedAt": now_ms,
        "systemSent": False,
        "abortedLastRun": False,
        "forkSource": {"sessionKey": parent_key, "sessionId": parent.get("sessionId"), "entryId": entry_id},
        "parentSessionKey": parent_key,
        "createdVia": "operator",
        "createdAt": now_ms,
        "delivery": {"kind": "none"},
    }


def switched_entry(current: Mapping[str, Any], *, session_id: str, now_ms: int) -> dict[str, Any]:
    """The row after a branch switch: the same session under a new transcript."""
    out = _cleared(current)
    out.pop("sessionFile", None)  # the store names the new transcript
    out.update(
        {
            "sessionId": session_id,
            "updatedAt": now_ms,
            "systemSent": False,
            "abortedLastRun": False,
            "previousSessionId": current.get("sessionId"),
        }
    )
    return out
