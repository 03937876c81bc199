"""Least-privilege operator scopes for a Gateway call, as OpenClaw 2026.9.6's CLI asks for them (the
`cli-*` fixtures: `sessions.cleanup` and `sessions.compact` connect with `operator.admin` only,
`health` with `operator.read`). Methods of our own table (`ops.methods.METHODS`) use their
`Method.scope`; `sessions.patch|create|delete` depend on their params as in OpenClaw; other known
session/agent methods come from OpenClaw's table; an unclassified method gets the CLI's default
set (OpenClaw does the same)."""

from __future__ import annotations

import re
from typing import Any

READ = "operator.read"
WRITE = "operator.write"
ADMIN = "operator.admin"
# OpenClaw's CLI_DEFAULT_OPERATOR_SCOPES, for methods it has no policy for.
DEFAULT_SCOPES = (
    ADMIN,
    READ,
    WRITE,
    "operator.approvals",
    "operator.questions",
    "operator.pairing",
    "operator.talk.secrets",
)

_KNOWN: dict[str, str] = {
    "health": READ,
    "status": READ,
    "agents.list": READ,
    "agents.create": ADMIN,
    "agents.update": ADMIN,
    "agents.delete": ADMIN,
    "sessions.list": READ,
    "sessions.subscribe": READ,
    "sessions.preview": READ,
    "sessions.describe": READ,
    "sessions.get": READ,
    "sessions.resolve": READ,
    "sessions.search": READ,
    "sessions.usage": READ,
    "sessions.fork": WRITE,
    "sessions.recover": WRITE,
    "sessions.send": WRITE,
    "sessions.abort": WRITE,
    "sessions.cleanup": ADMIN,
    "sessions.reset": ADMIN,
    "sessions.compact": ADMIN,
    "sessions.rewind": ADMIN,
    "sessions.storage.status": ADMIN,
    "sessions.storage.run": ADMIN,
}
# sessions.patch fields a write-scoped operator may change (everything else needs admin).
_PATCH_WRITE_FIELDS = frozenset(
    {
        "key",
        "agentId",
        "expectedSessionId",
        "expectedLifecycleRevision",
        "expectedPermissionMode",
        "expectedMarkedUnreadAt",
        "label",
        "autoLabel",
        "icon",
        "color",
        "category",
        "boardFace",
        "boardPresentation",
        "pinned",
        "archived",
        "unread",
        "model",
        "agentRuntime",
        "thinkingLevel",
        "fastMode",
        "permissionMode",
    }
)
_DELETE_WRITE_FIELDS = frozenset({"key", "agentId", "deleteTranscript", "expectedSessionId", "archivedOnly"})
_INCOGNITO_KEY = re.compile(r"agent:[^:]+:(?:dashboard|subagent|internal-session-effects):incognito-[^:]+")


def _dynamic(method: str, params: Any) -> str | None:
    record = params if isinstance(params, dict) else None
    if method == "sessions.patch":
        if record is None:
            return WRITE
        if record.get("permissionMode") == "full" or "sandboxMode" in record:
            return ADMIN
        return WRITE if set(record) <= _PATCH_WRITE_FIELDS else ADMIN
    if method == "sessions.create":
        if record is None:
            return WRITE
        incognito = record.get("incognito") is True or any(
            isinstance(record.get(k), str) and _INCOGNITO_KEY.fullmatch(record[k].strip().lower())
            for k in ("key", "parentSessionKey")
        )
        admin = (
            incognito
            or "execNode" in record
            or "toolOverrides" in record
            or record.get("permissionMode") == "full"
        )
        return ADMIN if admin else WRITE
    if method == "sessions.delete":
        if record is None or record.get("archivedOnly") is not True:
            return ADMIN
        return WRITE if set(record) <= _DELETE_WRITE_FIELDS else ADMIN
    return None


def least_privilege_scopes(method: str, params: Any = None) -> list[str]:
    dynamic = _dynamic(method, params)
    if dynamic:
        return [dynamic]
    from openclaw_cli.ops.methods import METHODS

    known = METHODS.get(method)
    if known is not None:
        return [known.scope]
    if method in _KNOWN:
        return [_KNOWN[method]]
    return list(DEFAULT_SCOPES)
