"""What a served mutation tells subscribed connections (`sessions.changed`, with the reasons
recorded in fixtures/gateway-2026.9.6), plus the periodic `tick` and `health` payloads.

* keyed changes (`patch`, `reset` / `new`, `create`, `compact`, `fork` (the new session),
  `branch-switch`): `{sessionKey, agentId, reason,
  ts, session: <sessions.list row>, …the row's fields}`; `compact` also carries `compacted: true`;
* `delete`: `{sessionKey, sessionId, agentId, reason: "delete", ts}` then a rowless
  `{reason: "delete", ts}`; nothing when nothing was deleted;
* `cleanup`: a rowless `{reason: "cleanup", ts}` per cleaned store;
* `groups` (`sessions.groups.*`): a rowless `{reason: "groups", ts}`; a `patch` whose category was
  new to the group catalog is followed by one too (as recorded);
* `agents.delete`: none (OpenClaw's events there are cron re-bindings and config reloads, which
  have no counterpart here);
* `activity-summary` (a `sessions.patch` that archives): OpenClaw starts its activity summariser on
  an archived session; without a model (as here, by design: we run none) it goes `updating` then
  `unavailable`, each a keyed `{sessionKey, agentId, reason: "activity-summary", session, …}`
  without `ts`, sent to every connection that may read, subscribed or not (recorded:
  sessions-patch-archive, events-idle-unsubscribed). Ours sends the same pair around its `patch`
  change, after the answer (OpenClaw's first one precedes its answer).

`session.operation` (`operation_start`/`operation_end`): the start and end of a compaction that runs
the summariser, to subscribed connections, before the answer (as recorded).

`before(...)` runs inside the writer, ahead of the mutation, to remember what the mutation will
remove (the sessionId of a deleted session); `after(...)` builds the payloads once the mutation
committed and the writer is free again — from the result's stored `entry` when it has one, else by
reading the row. Both may block and run in the Gateway's thread pool.
"""

from __future__ import annotations

from typing import Any

from openclaw_cli.errors import OpenClawError
from openclaw_cli.gateway import change_fields
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.methods import Method


def _agent_of(ctx: Context, params: dict[str, Any], key: Any) -> str:
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.keys import parse_agent_key

    parsed = parse_agent_key(key) if isinstance(key, str) else None
    if parsed:
        return parsed[0]
    agent = params.get("agentId")
    return (
        normalize_agent_id(agent)
        if isinstance(agent, str) and agent.strip()
        else default_agent_id(ctx.config)
    )


def before(ctx: Context, method: Method, params: dict[str, Any]) -> dict[str, Any]:
    """Facts the change events need that the mutation destroys."""
    if method.event != "delete" or not isinstance(params.get("key"), str):
        return {}
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.ops.session_keys import find_session

    try:
        found = find_session(ctx, params["key"], params.get("agentId"))
    except OpenClawError:  # the mutation itself refuses the key (owner rule), with its own error
        return {}
    if found is None:
        return {}
    agent_id, store, key, entry = found
    store.close()
    return {"agentId": agent_id, "key": key, "sessionId": entry.get("sessionId")}


def _keyed(
    ctx: Context,
    reason: str,
    key: str,
    params: dict[str, Any],
    now: int,
    extra: dict[str, Any] | None = None,
    entry: Any = None,
) -> dict[str, Any] | None:
    from openclaw_cli.ops.session_views import add_last_message_preview, describe, gateway_row, row_defaults

    if isinstance(entry, dict):  # the result carries the stored entry: no second read
        row = gateway_row(
            ctx, key, entry, agent_id=_agent_of(ctx, params, key), now=now, defaults=row_defaults(ctx)
        )
    else:
        scope = {"agentId": params["agentId"]} if params.get("agentId") else {}
        row = describe(ctx, {"key": key, "runState": True, **scope})[
            "session"
        ]  # the row as sessions.list has it
    if row is None:
        return None
    # OpenClaw's change rows carry the last message's preview (recorded: sessions-patch-pin)
    add_last_message_preview(ctx, row, entry if isinstance(entry, dict) else None)
    payload: dict[str, Any] = {"sessionKey": row["key"], "agentId": row["agentId"], "reason": reason}
    payload.update(extra or {})
    payload["ts"] = now
    payload["session"] = row
    stored = entry if isinstance(entry, dict) else None
    payload.update(change_fields.fields(row, stored, _ancestors(ctx, row, params)))
    return payload


def _ancestors(ctx: Context, row: dict[str, Any], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the session's parents, nearest first (OpenClaw's `ancestorSessions`; recorded
    for a fork: `[<the parent's sessions.list row>]`), at most 8 deep and never round a loop."""
    from openclaw_cli.ops.session_views import describe

    out: list[dict[str, Any]] = []
    seen = {row.get("key")}
    parent = row.get("parentSessionKey")
    scope = {"agentId": params["agentId"]} if params.get("agentId") else {}
    while isinstance(parent, str) and parent not in seen and len(out) < 8:
        seen.add(parent)
        try:
            found = describe(ctx, {"key": parent, "runState": True, **scope}).get("session")
        except OpenClawError:
            break
        if not isinstance(found, dict):
            break
        out.append(found)
        parent = found.get("parentSessionKey")
    return out


def after(
    ctx: Context, method: Method, params: dict[str, Any], result: Any, prior: dict[str, Any]
) -> list[dict[str, Any]]:
    """The `sessions.changed` payloads of a committed mutation (its row's `event`), in the order
    they are sent: `cleanup` and `delete` have their own shapes, every other reason is keyed."""
    now = ctx.now_ms()
    reason = method.event
    if not isinstance(result, dict) or reason is None:
        return []
    if reason == "cleanup":
        stores = result.get("stores")
        count = len(stores) if isinstance(stores, list) else 1
        return [{"reason": "cleanup", "ts": now} for _ in range(count)]
    if reason == "groups":  # the catalog changed: clients reload it (`sessions.groups.list`)
        return [{"reason": "groups", "ts": now}]
    if reason == "delete":
        if result.get("deleted") is not True:
            return []
        key = result.get("key") or prior.get("key") or params.get("key")
        return [
            {
                "sessionKey": key,
                "sessionId": prior.get("sessionId"),
                "agentId": prior.get("agentId") or _agent_of(ctx, params, key),
                "reason": "delete",
                "ts": now,
            },
            {"reason": "delete", "ts": now},
        ]
    if reason == "patchMany":  # a keyed `patch` change per target that was patched
        changed = []
        for outcome in result.get("outcomes") or []:
            if outcome.get("ok") is True:
                scope = {"agentId": outcome["agentId"]} if outcome.get("agentId") else {}
                payload = _keyed(ctx, "patch", outcome["key"], scope, now)
                if payload is not None:
                    changed.append(payload)
        return changed
    if reason == "reset" and params.get("reason") == "new":
        reason = "new"
    extra = None
    if reason == "compact":
        if result.get("compacted") is not True:
            return []
        extra = {"compacted": True}
    # `sessions.fork` names its new session `sessionKey`; `sessions.branches.switch` answers `{}`
    key = result.get("key") or result.get("sessionKey") or params.get("key") or params.get("sessionKey")
    if not isinstance(key, str):
        return []
    payload = _keyed(ctx, reason, key, params, now, extra, entry=result.get("entry"))
    changes = [payload] if payload is not None else []
    if payload is not None and reason == "patch" and params.get("archived") is True:
        changes = [_summary(payload, "updating"), payload, _summary(payload, "unavailable")]
    if reason == "patch" and "category" in params:
        from openclaw_cli.ops.session_groups import take_registered

        if take_registered(ctx, params["category"]):  # the patch added its category to the catalog
            changes.append({"reason": "groups", "ts": now})
    return changes


ACTIVITY_SUMMARY = "activity-summary"  # the one reason every reading connection is sent
# fields of the keyed change OpenClaw's activity-summary change leaves out (recorded)
_NOT_IN_SUMMARY = frozenset({"ts", "hasActiveRun", "activeRunIds", "placement", "placementMove"})


def _summary(change: dict[str, Any], state: str) -> dict[str, Any]:
    """The `activity-summary` change of an archived session's row in the summariser's `state`."""
    summary = {"state": state, "canEnsure": False}  # `sessions.activitySummary.ensure` is refused
    out = {k: v for k, v in change.items() if k not in _NOT_IN_SUMMARY}
    out["reason"] = ACTIVITY_SUMMARY
    out["session"] = {**change["session"], "activitySummary": summary}
    out["activitySummary"] = summary
    return out


def after_refusal(method: str, now: int) -> list[dict[str, Any]]:
    """Changes a refused call still announces: OpenClaw's group rename and delete emit theirs
    whatever the outcome (a refusal may follow a partial change; recorded: groups-1 rec-20)."""
    if method in ("sessions.groups.rename", "sessions.groups.delete"):
        return [{"reason": "groups", "ts": now}]
    return []


def tick(now: int) -> dict[str, Any]:
    return {"ts": now}


def operation_start(ctx: Context, name: str, params: dict[str, Any], now: int) -> dict[str, Any] | None:
    """OpenClaw's `session.operation` start for a served call it runs as an operation, else None.

    Recorded (sessions-compact-no-max-lines): `sessions.compact` without `maxLines` — the model
    compaction, ours the summariser (D8) — is announced `{operationId, operation: "compact", phase:
    "start", sessionKey, agentId, ts}` before its answer, then `phase: "end"` with `completed` (and
    `reason` when it did not compact); a `maxLines` trim sends none (sessions-compact). Our dry run
    (an extension) changes nothing and sends none either."""
    if name != "sessions.compact" or params.get("maxLines") is not None or params.get("dryRun"):
        return None
    key = params.get("key")
    if not isinstance(key, str) or not key.strip():
        return None
    import uuid

    from openclaw_cli.keys import to_agent_store_key

    agent = _agent_of(ctx, params, key)
    return {
        "operationId": str(uuid.uuid4()),
        "operation": "compact",
        "phase": "start",
        "sessionKey": to_agent_store_key(agent, key.strip()),
        "agentId": agent,
        "ts": now,
    }


def operation_end(start: dict[str, Any], result: Any, failure: str | None, now: int) -> dict[str, Any]:
    """The `phase: "end"` frame of `operation_start`'s operation: `completed` when it compacted;
    otherwise the reason (the skip's, or the refusal's message)."""
    end: dict[str, Any] = {
        "operationId": start["operationId"],
        "operation": start["operation"],
        "phase": "end",
    }
    end.update(sessionKey=start["sessionKey"], agentId=start["agentId"])
    completed = failure is None and isinstance(result, dict) and bool(result.get("compacted"))
    end["completed"] = completed
    reason = failure if failure is not None else (result.get("reason") if isinstance(result, dict) else None)
    if not completed and isinstance(reason, str) and reason:
        end["reason"] = reason
    end["ts"] = now
    return end
