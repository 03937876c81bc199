"""`sessions.search`: full-text search over every store and archive of the selected agents.

Params are OpenClaw's (`query` 1–4096 chars, `limit` 1–25, `agentId` + `sessionKeys`, or `scope`:
a `sessions.list` filter whose visible rows are searched) plus openclaw-cli extensions: `agent`,
`allAgents`, `store` (local only), `roles`, `since`/`until` (epoch ms), `archived` (search
archives too; OpenClaw's method never does, so it defaults to false here and the CLI turns it
on), `fixed` (literal text), `redact`, `reindex`. The result is OpenClaw's `{results, sessions?,
truncated?, archivedTranscriptsExcluded?}`, every hit carrying `source` (which store or archive)
and `agentId`, plus `skipped` (unreadable lines and archives) when there were any.
"""

from __future__ import annotations

import os

from openclaw_cli.errors import UsageError
from openclaw_cli.ops.context import Context

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

DEFAULT_LIMIT = 10
MAX_LIMIT = 1000  # the Gateway's schema caps remote callers at 25


def _agent_of_key(key: str) -> str | None:
    from openclaw_cli.keys import parse_agent_key

    parsed = parse_agent_key(key)
    return parsed[0] if parsed else None


def _targets(ctx: Context, params: dict[str, Any], session_keys: list[str] | None) -> list[Any]:
    from openclaw_cli.ops.targets import select_targets

    agent = params.get("agent") or params.get("agentId")
    if agent is None and not params.get("allAgents") and not params.get("store") and session_keys:
        owners = {a for a in (_agent_of_key(k) for k in session_keys) if a}
        if len(owners) > 1:
            raise UsageError(
                "sessions.search supports one agent per call: the session keys name agents "
                f"{', '.join(sorted(owners))}; pass --all-agents to search them all."
            )
        agent = next(iter(owners), None)
    return select_targets(
        ctx.paths,
        ctx.config,
        agent=agent,
        all_agents=bool(params.get("allAgents")),
        store=params.get("store"),
    )


def _scope_keys(ctx: Context, scope: dict[str, Any]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The keys of the rows `sessions.list` shows for `scope` (all of them), and the rows."""
    from openclaw_cli.ops.session_views import list_gateway_sessions

    page = list_gateway_sessions(ctx, {**scope, "limit": 10_000_000})
    rows = {row["key"]: row for row in page.get("sessions", []) if isinstance(row, dict) and "key" in row}
    return list(rows), rows


def _int_param(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of epoch milliseconds.")
    return int(value)


def sessions_search(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.targets import open_target
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.search.query import parse
    from openclaw_cli.search.text import ROLES

    query = parse(params.get("query", ""), fixed=params.get("fixed") is True)
    limit = params.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    roles = params.get("roles")
    if roles is not None:
        if not isinstance(roles, list) or not roles or any(r not in ROLES for r in roles):
            raise UsageError(f"roles must name {', '.join(ROLES)}.")
        roles = tuple(dict.fromkeys(roles))
    scope = params.get("scope")
    if scope is not None and (params.get("agentId") is not None or params.get("sessionKeys") is not None):
        raise UsageError("scope cannot be combined with agentId or sessionKeys.")
    if params.get("agentId") is not None and params.get("sessionKeys") is None and scope is None:
        raise UsageError("agentId requires sessionKeys")  # OpenClaw's rule; `agent` (ours) searches it all
    keys: list[str] | None = list(params["sessionKeys"]) if params.get("sessionKeys") else None
    scope_rows: dict[str, dict[str, Any]] = {}
    if isinstance(scope, dict):
        keys, scope_rows = _scope_keys(ctx, scope)
        if not keys:
            return {"results": [], "sessions": []}
        params = {**params, "agentId": scope.get("agentId")}
    targets = _targets(ctx, params, keys)
    if keys is not None and not scope_rows:
        from openclaw_cli.keys import to_agent_store_key

        owner = targets[0].agent_id if len(targets) == 1 else None
        keys = [to_agent_store_key(owner, k) if owner and k not in ("global", "unknown") else k for k in keys]
    opts = Options(
        workers=min(2, os.cpu_count() or 1),
        roles=roles,
        since=_int_param(params, "since"),
        until=_int_param(params, "until"),
        session_keys=tuple(keys) if keys is not None else None,
        archived=params.get("archived") is True,
        limit=limit,
        reindex=params.get("reindex") is True,
        redact=params.get("redact") is True,
    )
    stores: list[StoreTarget] = []
    try:
        for target in targets:
            store = open_target(ctx, target, read_only=True, locate_legacy=True)
            stores.append(StoreTarget(store, target.archive_dir))
        outcome = search(stores, query, opts)
    finally:
        for item in stores:
            item.store.close()
    doc: dict[str, Any] = {"results": outcome.results}
    if scope_rows:
        seen = dict.fromkeys(r["sessionKey"] for r in outcome.results)
        doc["sessions"] = [scope_rows[k] for k in seen if k in scope_rows][:25]
    if outcome.archived_excluded:
        doc["archivedTranscriptsExcluded"] = outcome.archived_excluded
    if outcome.truncated:
        doc["truncated"] = True
    if outcome.skipped:
        doc["skipped"] = outcome.skipped
    if params.get("verbose") is True:
        doc["index"] = [
            {
                "sourcesRead": u.sources_read,
                "sourcesUnchanged": u.sources_unchanged,
                "bytesRead": u.bytes_read,
                "rowsIndexed": u.lines_indexed,
                "rebuilt": u.rebuilt,
                "seconds": round(u.seconds, 4),
            }
            for u in outcome.updates
        ]
    return doc
