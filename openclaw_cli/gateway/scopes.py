"""Which operator scope a request needs, and whether a connection's scopes satisfy it.

The method table holds the policy (`ops.methods.Method.required_scope`: the least scope, or the
params-aware rule of `sessions.patch` and `sessions.delete` — organisation fields and the
model/runtime/thinking/fast-mode/permission-mode choices are writes, every other override admin;
archiving is a write, as the real CLI sends it; a delete is admin except an `archivedOnly`
archive-then-delete). The server adds what the table does not say:
* `health` needs no scope at all (OpenClaw answers it on a connection with none:
  connect-empty-scopes.jsonl); clients still ask for the table's scope (the real CLI: read);
* `sessions.create` is a write unless it asks for what only an admin may (incognito, execNode,
  toolOverrides, `permissionMode: "full"`), as OpenClaw's policy says.
Scope implication: `operator.admin` satisfies every operator scope; `operator.write` also
satisfies `operator.read`.
"""

from __future__ import annotations

import re
from typing import Any

from openclaw_cli.ops.methods import ADMIN, READ, WRITE, Method

SCOPE_FREE = frozenset({"health"})
_INCOGNITO_KEY = re.compile(r"agent:[^:]+:(?:dashboard|subagent|internal-session-effects):incognito-[^:]+")


def _create_scope(params: dict[str, Any]) -> str:
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


def required_scope(method: Method, params: Any) -> str | None:
    """The scope this request needs (None: none)."""
    if method.name in SCOPE_FREE:
        return None
    record = params if isinstance(params, dict) else None
    if method.name == "sessions.create" and record is not None:
        return max(_create_scope(record), method.required_scope(record), key=_RANK.__getitem__)
    return method.required_scope(record)


_RANK = {READ: 0, WRITE: 1, ADMIN: 2}


def satisfied(required: str, granted: list[str] | tuple[str, ...] | frozenset[str]) -> bool:
    if required in granted or ADMIN in granted:
        return True
    return required == READ and WRITE in granted
