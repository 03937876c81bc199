"""The method table: every operation both front ends run, keyed by its Gateway method name, one row
holding its whole contract.

The CLI builds a method's params once and either calls `call(ctx, name, params)` locally or sends
the same params to a Gateway (spec D9/D20); both validate them against the row's closed schema
(`ops/params.py`: OpenClaw 2026.9.6's keys and error texts) before the handler runs. Handlers take
the Gateway's params plus the row's local-only extensions a remote caller cannot send (`dryRun`,
`store`: offline repair) and return OpenClaw's JSON document, in the Gateway's shape (the CLI's
own listings, `sessions --json`, `agents list --json` and `status --json`, call their `ops`
functions directly).

A row: `handler` (a lazy `"module:function"` reference: nothing heavy is imported to read the
table), `params` (the schema; a row without one cannot be built: validation fails closed),
`scope` (the least operator scope; `scope_for` names the params-aware rule, `ops/scopes.py`),
`mutates` (the Gateway serialises writes per store), `event` (the `sessions.changed` reason a
committed call emits, `gateway/events.py`), `batch` (a handler for several requests at once: the
Gateway's group commit). The table is kept in OpenClaw's hello-ok `features.methods` order
(`ops/openclaw_features.py`, recorded), whatever the rows' order here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openclaw_cli.errors import UsageError
from openclaw_cli.ops import params as p
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.scopes import ADMIN, LOCAL_PARAMS, READ, WRITE

__all__ = ["ADMIN", "METHODS", "READ", "WRITE", "Method", "call", "check_params", "method", "parse_params"]

Handler = Callable[[Context, dict[str, Any]], dict[str, Any]]


def resolve(reference: str) -> Any:
    """The function a `"module:function"` reference names (imported on first use). Looked up on
    every call, not cached: the module import is cached by Python already, and a cached function
    would outlive a rebinding of the module's attribute (a test's wrapper, a reload)."""
    module, _, name = reference.partition(":")
    loaded = sys.modules.get(module)  # imported already: its attribute now, without import_module's
    return getattr(loaded if loaded is not None else importlib.import_module(module), name)


@dataclass(frozen=True)
class Method:
    name: str
    handler: str  # "module:function", (ctx, params) -> the result document
    params: p.Schema
    scope: str
    mutates: bool = False
    scope_for: str | None = None  # "module:function", (params) -> the least scope for these params
    # Several requests at once (outcome i: request i's result, or the error that refused it),
    # as if run one after another: what lets the Gateway commit concurrent requests together.
    batch: str | None = None
    event: str | None = None  # the `sessions.changed` reason a committed call emits
    local: frozenset[str] = frozenset()  # params only a local call may add (never on the wire)
    scope_free: bool = False  # served on a connection with no scope (clients still ask for `scope`)
    # `dryRun: true` (a local-only extension the Gateway also takes here) plans without writing
    dry_run: bool = False
    # listed in hello-ok's `features.methods` (False: ours only, served but not announced, so the
    # list stays a subset of OpenClaw's)
    advertised: bool = True
    # a read long enough (a plan over every row) that the Gateway runs it in its reader process,
    # where it cannot hold up the server's writes (`gateway/readers.py`); for a mutating method,
    # its dry run
    long_read: bool = False
    # a read whose handler may mark its answer reusable (`Context.reuse`): the Gateway then sends
    # it again without running the handler while its sources read unchanged (`gateway/answers.py`)
    reusable: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.params, p.Schema):  # fail closed: no row without its schema
            raise TypeError(f"method {self.name}: params must be a schema")

    def run(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        function: Handler = resolve(self.handler)
        return function(ctx, params)

    def run_batch(self, ctx: Context, batch: list[dict[str, Any]]) -> list[Any]:
        assert self.batch is not None
        function: Callable[[Context, list[dict[str, Any]]], list[Any]] = resolve(self.batch)
        return function(ctx, batch)

    def writes(self, params: dict[str, Any] | None = None) -> bool:
        """Does this call write (a dry run of a mutating method does not)?"""
        if not self.mutates:
            return False
        return not (self.dry_run and isinstance(params, dict) and params.get("dryRun") is True)

    def required_scope(self, params: dict[str, Any] | None = None) -> str:
        """The least scope this call needs (`scope`, or what `scope_for` says for these params)."""
        if self.scope_for is not None and isinstance(params, dict):
            rule: Callable[[dict[str, Any]], str] = resolve(self.scope_for)
            return rule(params)
        return self.scope


_VIEWS = "openclaw_cli.ops.session_views"
_LIFECYCLE = "openclaw_cli.ops.lifecycle"
_SCOPES = "openclaw_cli.ops.scopes"
_READS = "openclaw_cli.ops.gateway_reads"
_BRANCHES = "openclaw_cli.ops.branches"
_GROUPS = "openclaw_cli.ops.session_groups"
_STARTUP = "openclaw_cli.ops.chat_startup"

_ROWS = (
    Method("health", f"{_VIEWS}:health", p.HEALTH, READ, scope_free=True),
    Method("status", f"{_VIEWS}:gateway_status", p.STATUS, READ),
    Method("agents.list", f"{_VIEWS}:gateway_agents", p.AGENTS_LIST, READ),
    Method("agents.delete", "openclaw_cli.ops.agents:agents_delete", p.AGENTS_DELETE, ADMIN, mutates=True),
    Method("sessions.list", f"{_VIEWS}:list_gateway_sessions", p.SESSIONS_LIST, READ),
    Method("sessions.subscribe", f"{_VIEWS}:subscribe", p.SESSIONS_LIST, READ),
    Method("sessions.preview", f"{_VIEWS}:preview", p.SESSIONS_PREVIEW, READ),
    Method("sessions.describe", f"{_VIEWS}:describe", p.SESSIONS_DESCRIBE, READ),
    Method(
        "sessions.create",
        f"{_LIFECYCLE}:sessions_create",
        p.SESSIONS_CREATE,
        WRITE,
        mutates=True,
        scope_for=f"{_SCOPES}:create_scope",
        event="create",
        local=LOCAL_PARAMS,
    ),
    Method(
        "sessions.patch",
        f"{_LIFECYCLE}:sessions_patch",
        p.SESSIONS_PATCH,
        WRITE,
        mutates=True,
        scope_for=f"{_SCOPES}:patch_scope",
        batch=f"{_LIFECYCLE}:sessions_patch_many",
        event="patch",
        local=LOCAL_PARAMS,
    ),
    Method(
        "sessions.cleanup",
        "openclaw_cli.ops.cleanup:sessions_cleanup",
        p.SESSIONS_CLEANUP,
        ADMIN,
        mutates=True,
        scope_for=f"{_SCOPES}:cleanup_scope",
        event="cleanup",
        local=frozenset({"store"}),
        dry_run=True,
        long_read=True,
    ),
    Method(
        "sessions.reset",
        f"{_LIFECYCLE}:sessions_reset",
        p.SESSIONS_RESET,
        ADMIN,
        mutates=True,
        event="reset",
        local=LOCAL_PARAMS,
    ),
    Method(
        "sessions.delete",
        f"{_LIFECYCLE}:sessions_delete",
        p.SESSIONS_DELETE,
        ADMIN,
        mutates=True,
        scope_for=f"{_SCOPES}:delete_scope",
        event="delete",
        local=LOCAL_PARAMS,
    ),
    Method(
        "sessions.compact",
        "openclaw_cli.ops.compact:sessions_compact",
        p.SESSIONS_COMPACT,
        ADMIN,
        mutates=True,
        event="compact",
        local=LOCAL_PARAMS,
    ),
    Method("chat.history", "openclaw_cli.ops.history:chat_history", p.CHAT_HISTORY, READ, reusable=True),
    # what the Control UI asks before it renders a session (`ops/chat_startup.py`)
    Method("chat.startup", f"{_STARTUP}:chat_startup", p.CHAT_STARTUP, READ),
    Method(
        "sessions.messages.subscribe", f"{_STARTUP}:messages_subscribe", p.SESSIONS_MESSAGES_SUBSCRIBE, READ
    ),
    Method(
        "sessions.messages.unsubscribe",
        f"{_STARTUP}:messages_unsubscribe",
        p.SESSIONS_MESSAGES_UNSUBSCRIBE,
        READ,
    ),
    Method(
        "sessions.branches.list",
        "openclaw_cli.ops.history:sessions_branches_list",
        p.SESSIONS_BRANCHES_LIST,
        READ,
    ),
    Method("chat.message.get", "openclaw_cli.ops.history:chat_message_get", p.CHAT_MESSAGE_GET, READ),
    Method("chat.metadata", f"{_READS}:chat_metadata", p.CHAT_METADATA, READ),
    Method(
        "sessions.search",
        "openclaw_cli.ops.search:sessions_search",
        p.SESSIONS_SEARCH,
        READ,
        local=frozenset({"store", "verbose"}),
    ),
    # issue 25: what OpenClaw's clients ask of a session Gateway (`ops/gateway_reads.py`)
    Method("logs.tail", f"{_READS}:logs_tail", p.LOGS_TAIL, READ),
    Method("config.get", f"{_READS}:config_get", p.CONFIG_GET, READ),
    Method("system-presence", f"{_READS}:system_presence", p.SYSTEM_PRESENCE, READ),
    Method(
        "sessions.patchMany",
        f"{_LIFECYCLE}:sessions_patch_many_method",
        p.SESSIONS_PATCH_MANY,
        WRITE,
        mutates=True,
        scope_for=f"{_SCOPES}:patch_many_scope",
        event="patchMany",
    ),
    Method("sessions.storage.status", f"{_READS}:sessions_storage_status", p.SESSIONS_STORAGE, ADMIN),
    Method(
        "sessions.fork",
        f"{_BRANCHES}:sessions_fork",
        p.SESSIONS_FORK,
        WRITE,
        mutates=True,
        event="fork",
        local=frozenset({"store"}),
    ),
    Method(
        "sessions.branches.switch",
        f"{_BRANCHES}:sessions_branches_switch",
        p.SESSIONS_BRANCHES_SWITCH,
        ADMIN,
        mutates=True,
        event="branch-switch",
        local=frozenset({"store"}),
    ),
    # the custom session group catalog (`ops/session_groups.py`); membership is each row's category
    Method("sessions.groups.list", f"{_GROUPS}:groups_list", p.SESSIONS_GROUPS_LIST, READ),
    Method("sessions.groups.defaults", f"{_GROUPS}:groups_defaults", p.SESSIONS_GROUPS_DEFAULTS, WRITE),
    Method(
        "sessions.groups.put",
        f"{_GROUPS}:groups_put",
        p.SESSIONS_GROUPS_PUT,
        WRITE,
        mutates=True,
        event="groups",
    ),
    Method(
        "sessions.groups.rename",
        f"{_GROUPS}:groups_rename",
        p.SESSIONS_GROUPS_RENAME,
        WRITE,
        mutates=True,
        event="groups",
    ),
    Method(
        "sessions.groups.update",
        f"{_GROUPS}:groups_update",
        p.SESSIONS_GROUPS_UPDATE,
        WRITE,
        mutates=True,
        event="groups",
    ),
    Method(
        "sessions.groups.delete",
        f"{_GROUPS}:groups_delete",
        p.SESSIONS_GROUPS_DELETE,
        WRITE,
        mutates=True,
        event="groups",
    ),
    # served by the real Gateway without being listed in its hello-ok
    Method("sessions.resolve", f"{_READS}:sessions_resolve", p.SESSIONS_RESOLVE, READ, advertised=False),
    Method("sessions.get", f"{_READS}:sessions_get", p.SESSIONS_GET, READ, advertised=False),
    Method(
        "sessions.usage",
        "openclaw_cli.ops.session_usage:sessions_usage",
        p.SESSIONS_USAGE,
        READ,
        advertised=False,
    ),
    # ours (issue 28): `openclaw storage --json` for the dashboard; OpenClaw's Gateway has none
    Method(
        "storage.report",
        "openclaw_cli.ops.storage:storage_report",
        p.STORAGE_REPORT,
        READ,
        advertised=False,
    ),
)


def _openclaw_order(row: Method) -> int:
    """OpenClaw's hello-ok position (rows it does not list last, in table order)."""
    from openclaw_cli.ops.openclaw_features import OPENCLAW_METHODS

    return OPENCLAW_METHODS.index(row.name) if row.advertised else len(OPENCLAW_METHODS)


METHODS: dict[str, Method] = {m.name: m for m in sorted(_ROWS, key=_openclaw_order)}


def method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise UsageError(f"unknown method: {name}")
    return found


def parse_params(name: str, params: Any, *, local: bool = False) -> tuple[str | None, Any]:
    """(`invalid <method> params: …`, None) when `params` fails the method's schema, else (None,
    params with every integer an int: a handler never sees `3.0` or `1e2` as a float). `local`:
    the row's local-only extensions are accepted beside the wire params (and kept as given)."""
    row = method(name)
    if not isinstance(params, dict) or not local:
        error = p.validate(row.params, params)
        return (f"invalid {name} params: {error}", None) if error else (None, row.params.normalize(params))
    wire = {k: v for k, v in params.items() if k not in row.local}
    error = p.validate(row.params, wire)
    if error:
        return f"invalid {name} params: {error}", None
    return None, {**row.params.normalize(wire), **{k: v for k, v in params.items() if k in row.local}}


def check_params(name: str, params: Any) -> str | None:
    """`invalid <method> params: …` when `params` fails the method's schema, else None."""
    return parse_params(name, params)[0]


def call(ctx: Context, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one method locally, its params checked against the same schema the Gateway checks."""
    row = method(name)
    error, checked = parse_params(name, dict(params or {}), local=True)
    if error:
        raise UsageError(error)
    return row.run(ctx, checked)
