"""Operator scopes: the three levels, and every rule that says which one a call needs (the one policy
the method table, our Gateway and our Gateway client all use; OpenClaw 2026.9.6's, as recorded in
fixtures/gateway-2026.9.6: error-missing-scope, error-missing-scope-admin, the `cli-*` files).

* `sessions.patch`: organisation fields and the model/runtime/thinking/fast-mode/permission-mode
  choices are writes, every other override admin (`verboseLevel` to `[read, write]` was refused);
* `sessions.delete`: admin, except an `archivedOnly: true` archive-then-delete, which write may do;
* `sessions.cleanup`: admin, a dry run read (ours, issue 28: the dashboard's preview);
* `sessions.create`: write, unless it asks for what only an admin may (incognito, execNode,
  toolOverrides, `permissionMode: "full"`).
Implication: `operator.admin` satisfies every operator scope; `operator.write` also satisfies
`operator.read`. Methods we do not serve get OpenClaw's scope (`OPENCLAW_SCOPES`) when the client
calls a real Gateway, else the CLI's default set (OpenClaw does the same).
"""

from __future__ import annotations

import re
from typing import Any

READ = "operator.read"
WRITE = "operator.write"
ADMIN = "operator.admin"
RANK = {READ: 0, WRITE: 1, ADMIN: 2}

# Params a local call may add to a method's wire params (offline repair, preview); never a scope's concern.
LOCAL_PARAMS = frozenset({"store", "dryRun"})

# sessions.patch fields a write-scoped operator may change (everything else needs admin).
PATCH_WRITE_FIELDS = frozenset(
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
DELETE_WRITE_FIELDS = frozenset({"key", "agentId", "deleteTranscript", "expectedSessionId", "archivedOnly"})
_INCOGNITO_KEY = re.compile(r"agent:[^:]+:(?:dashboard|subagent|internal-session-effects):incognito-[^:]+")


def _wire(params: dict[str, Any]) -> set[str]:
    return {name for name in params if name not in LOCAL_PARAMS}


def patch_scope(params: dict[str, Any]) -> str:
    """The least scope a `sessions.patch` needs."""
    if params.get("permissionMode") == "full" or "sandboxMode" in params:
        return ADMIN
    return WRITE if _wire(params) <= PATCH_WRITE_FIELDS else ADMIN


def patch_many_scope(params: dict[str, Any]) -> str:
    """`sessions.patchMany`: its one `patch` judged as a `sessions.patch`'s mutations are."""
    patch = params.get("patch")
    if not isinstance(patch, dict):
        return WRITE
    if patch.get("permissionMode") == "full" or "sandboxMode" in patch or "nativeRuntimeConsent" in patch:
        return ADMIN
    return WRITE if set(patch) <= PATCH_WRITE_FIELDS else ADMIN


def delete_scope(params: dict[str, Any]) -> str:
    """`sessions.delete` needs admin, except `archivedOnly: true` (an archived row), which write may do."""
    return WRITE if params.get("archivedOnly") is True and _wire(params) <= DELETE_WRITE_FIELDS else ADMIN


def create_scope(params: dict[str, Any]) -> str:
    """`sessions.create` is a write unless it asks for what only an admin may."""

    def incognito(value: Any) -> bool:
        return isinstance(value, str) and _INCOGNITO_KEY.fullmatch(value.strip().lower()) is not None

    if (
        params.get("incognito") is True
        or incognito(params.get("key"))
        or incognito(params.get("parentSessionKey"))
        or "execNode" in params
        or "toolOverrides" in params
        or params.get("permissionMode") == "full"
    ):
        return ADMIN
    return WRITE


def cleanup_scope(params: dict[str, Any]) -> str:
    """`sessions.cleanup` is admin; a dry run (the dashboard's cleanup preview) only reads."""
    return READ if params.get("dryRun") is True else ADMIN


def satisfied(required: str, granted: list[str] | tuple[str, ...] | frozenset[str]) -> bool:
    if required in granted or ADMIN in granted:
        return True
    return required == READ and WRITE in granted


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
# OpenClaw's scope of session/agent methods we do not serve (what our client asks a real Gateway for).
OPENCLAW_SCOPES: dict[str, str] = {
    "agents.create": ADMIN,
    "agents.update": ADMIN,
    "sessions.get": READ,
    "sessions.resolve": READ,
    "sessions.usage": READ,
    "sessions.fork": WRITE,
    "sessions.recover": WRITE,
    "sessions.send": WRITE,
    "sessions.abort": WRITE,
    "sessions.rewind": ADMIN,
    "sessions.storage.status": ADMIN,
    "sessions.storage.run": ADMIN,
}


def least_privilege_scopes(method: str, params: Any = None) -> list[str]:
    """The scopes our client asks for to call `method` with `params` (the `cli-*` fixtures:
    `sessions.cleanup` and `sessions.compact` connect with `operator.admin` only, `health` with
    `operator.read`)."""
    from openclaw_cli.ops.methods import METHODS

    known = METHODS.get(method)
    if known is not None:
        return [known.required_scope(params if isinstance(params, dict) else None)]
    if method in OPENCLAW_SCOPES:
        return [OPENCLAW_SCOPES[method]]
    return list(DEFAULT_SCOPES)
