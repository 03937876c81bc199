"""The method table: every operation both front ends run, keyed by its Gateway method name.

The CLI builds a method's params once and either calls `call(ctx, name, params)` locally or sends
the same params to a Gateway (spec D9/D20); our Gateway validates a request's params against the
method's closed schema and then calls the same handler. Handlers take the Gateway's params plus
local-only extensions a remote caller cannot send (`dryRun`, `store`: offline repair) and return
OpenClaw's JSON document, in the Gateway's shape (the CLI's own listings, `sessions --json`,
`agents list --json` and `status --json`, call their `ops` functions directly). `scope` is the
least operator scope the method needs (the client asks for it, the server enforces it); where it
depends on the params (`sessions.patch`: organisation fields need write, overrides admin;
`sessions.delete {archivedOnly: true}`: write), `scope_for` decides and `required_scope(params)`
is what to ask and enforce. `mutates` marks methods that write (the Gateway serialises them
per store).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openclaw_cli.errors import UsageError
from openclaw_cli.ops.context import Context

READ = "operator.read"
WRITE = "operator.write"
ADMIN = "operator.admin"

Handler = Callable[[Context, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Method:
    name: str
    handler: Handler
    scope: str
    mutates: bool = False
    scope_for: Callable[[dict[str, Any]], str] | None = None
    # Several requests at once (outcome i: request i's result, or the error that refused it),
    # as if run one after another: what lets the Gateway commit concurrent requests together.
    batch: Callable[[Context, list[dict[str, Any]]], list[Any]] | None = None

    # `dryRun: true` (a local-only extension the Gateway also takes here) plans without writing
    dry_run: bool = False

    def writes(self, params: dict[str, Any] | None = None) -> bool:
        """Does this call write (a dry run of a mutating method does not)?"""
        if not self.mutates:
            return False
        return not (self.dry_run and isinstance(params, dict) and params.get("dryRun") is True)

    def required_scope(self, params: dict[str, Any] | None = None) -> str:
        """The least scope this call needs (`scope`, or what `scope_for` says for these params)."""
        if self.scope_for is not None and isinstance(params, dict):
            return self.scope_for(params)
        return self.scope


def _sessions_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import list_gateway_sessions

    return list_gateway_sessions(ctx, params)


def _sessions_subscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import subscribe

    return subscribe(ctx, params)


def _sessions_describe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import describe

    return describe(ctx, params)


def _sessions_preview(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import preview

    return preview(ctx, params)


def _sessions_search(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.search import sessions_search

    return sessions_search(ctx, params)


def _health(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import health

    return health(ctx, params)


def _sessions_cleanup(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.cleanup import sessions_cleanup

    return sessions_cleanup(ctx, params)


def _sessions_compact(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.compact import sessions_compact

    return sessions_compact(ctx, params)


def _sessions_patch_many(ctx: Context, batch: list[dict[str, Any]]) -> list[Any]:
    from openclaw_cli.ops.lifecycle import sessions_patch_many

    return sessions_patch_many(ctx, batch)


def _sessions_patch(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.lifecycle import sessions_patch

    return sessions_patch(ctx, params)


def _sessions_reset(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.lifecycle import sessions_reset

    return sessions_reset(ctx, params)


def _sessions_create(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.lifecycle import sessions_create

    return sessions_create(ctx, params)


def _sessions_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.lifecycle import sessions_delete

    return sessions_delete(ctx, params)


def _patch_scope(params: dict[str, Any]) -> str:
    from openclaw_cli.ops.lifecycle import patch_scope

    return patch_scope(params)


def _delete_scope(params: dict[str, Any]) -> str:
    from openclaw_cli.ops.lifecycle import delete_scope

    return delete_scope(params)


def _cleanup_scope(params: dict[str, Any]) -> str:
    # a dry run (the dashboard's cleanup preview) only reads: read scope
    return READ if params.get("dryRun") is True else ADMIN


def _chat_history(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.history import chat_history

    return chat_history(ctx, params)


def _agents_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import gateway_agents

    return gateway_agents(ctx, params)


def _agents_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.agents import delete_agent

    return delete_agent(ctx, params.get("agentId"))


def _status(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import gateway_status

    return gateway_status(ctx, params)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("health", _health, READ),
        Method("status", _status, READ),
        Method("sessions.list", _sessions_list, READ),
        Method("sessions.subscribe", _sessions_subscribe, READ),
        Method("sessions.describe", _sessions_describe, READ),
        Method("sessions.preview", _sessions_preview, READ),
        Method("sessions.search", _sessions_search, READ),
        Method(
            "sessions.cleanup",
            _sessions_cleanup,
            ADMIN,
            mutates=True,
            scope_for=_cleanup_scope,
            dry_run=True,
        ),
        Method("chat.history", _chat_history, READ),
        Method("sessions.compact", _sessions_compact, ADMIN, mutates=True),
        Method(
            "sessions.patch",
            _sessions_patch,
            WRITE,
            mutates=True,
            scope_for=_patch_scope,
            batch=_sessions_patch_many,
        ),
        Method("sessions.reset", _sessions_reset, ADMIN, mutates=True),
        Method("sessions.create", _sessions_create, WRITE, mutates=True),
        Method("sessions.delete", _sessions_delete, ADMIN, mutates=True, scope_for=_delete_scope),
        Method("agents.list", _agents_list, READ),
        Method("agents.delete", _agents_delete, ADMIN, mutates=True),
    )
}


def method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise UsageError(f"unknown method: {name}")
    return found


def call(ctx: Context, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one method locally."""
    return method(name).handler(ctx, dict(params or {}))
