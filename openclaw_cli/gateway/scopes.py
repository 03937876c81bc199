"""Which operator scope a request needs, and whether a connection's scopes satisfy it.

The method table (`ops.methods.Method.scope`) holds each method's least scope; three methods
depend on their params, as in OpenClaw 2026.9.6 (error-missing-scope*.jsonl, cli-sessions-archive):
* `sessions.patch`: organisation fields (label, pinned, archived, unread, …) and the model /
  runtime / thinking / fast-mode / permission-mode selections need `operator.write`; every other
  override (verboseLevel, traceLevel, exec*, sandboxMode, `permissionMode: "full"`, …) needs
  `operator.admin`. Archiving is a write: the real CLI sends `sessions archive` with write scope.
* `sessions.delete`: `operator.admin`, except an archive-then-delete (`archivedOnly: true` with
  nothing beyond key/agentId/deleteTranscript/expectedSessionId), which is a write.
* `sessions.create`: a write, unless it asks for what only an admin may (incognito, execNode,
  toolOverrides, `permissionMode: "full"`).
Scope implication: `operator.admin` satisfies every operator scope; `operator.write` also
satisfies `operator.read`.
"""

from __future__ import annotations

from typing import Any

from openclaw_cli.ops.methods import ADMIN, READ, WRITE

PATCH_WRITE_MUTATIONS = frozenset({
    "label", "autoLabel", "icon", "color", "category", "boardFace", "boardPresentation", "pinned", "archived",
    "unread", "model", "agentRuntime", "thinkingLevel", "fastMode", "permissionMode",
})
PATCH_WRITE_ENVELOPE = frozenset({
    "key", "agentId", "expectedSessionId", "expectedLifecycleRevision", "expectedPermissionMode",
    "expectedMarkedUnreadAt",
})
DELETE_WRITE_FIELDS = frozenset({"key", "agentId", "deleteTranscript", "expectedSessionId", "archivedOnly"})


def _patch_scope(params: dict[str, Any]) -> str:
    if params.get("permissionMode") == "full" or "sandboxMode" in params:
        return ADMIN
    allowed = PATCH_WRITE_ENVELOPE | PATCH_WRITE_MUTATIONS
    return WRITE if all(key in allowed for key in params) else ADMIN


def _delete_scope(params: dict[str, Any]) -> str:
    if params.get("archivedOnly") is not True:
        return ADMIN
    return WRITE if all(key in DELETE_WRITE_FIELDS for key in params) else ADMIN


def _create_scope(params: dict[str, Any]) -> str:
    def incognito(value: Any) -> bool:
        return isinstance(value, str) and ":incognito:" in value.lower()

    if (params.get("incognito") is True or incognito(params.get("key")) or incognito(params.get("parentSessionKey"))
            or "execNode" in params or "toolOverrides" in params or params.get("permissionMode") == "full"):
        return ADMIN
    return WRITE


_DYNAMIC = {"sessions.patch": _patch_scope, "sessions.delete": _delete_scope, "sessions.create": _create_scope}
# Methods OpenClaw answers for any authenticated connection, even one with no scopes
# (connect-empty-scopes.jsonl); clients still ask for the table's scope (the real CLI: read).
SCOPE_FREE = frozenset({"health"})


def required_scope(method: str, least: str | None, params: Any) -> str | None:
    """The scope this request needs (None: none): the params-aware rule where one exists, else
    `least`."""
    if method in SCOPE_FREE:
        return None
    rule = _DYNAMIC.get(method)
    if rule is not None and isinstance(params, dict):
        return rule(params)
    return least


def satisfied(required: str, granted: list[str] | tuple[str, ...] | frozenset[str]) -> bool:
    if required in granted or ADMIN in granted:
        return True
    return required == READ and WRITE in granted
