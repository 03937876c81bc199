"""`sessions.usage` (issue 25): tokens, costs and activity of one session or of an agent's sessions
over a date range, in OpenClaw 2026.9.6's params, owner rules, errors and result shape (recorded
against the real Gateway; `usage_summary` computes the figures from the transcripts).

Rows: with `key`, that session (none when unknown); else every session of the agent (or of all
agents, `agentScope: "all"`) that was active in the range, newest first, `limit` (50) of them
listed while `totals` and `aggregates` count all. `groupBy: "family"` (or `includeHistorical`)
adds the session's earlier generations (its older windows) to its row.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.ops.context import Context

DEFAULT_LIMIT = 50
_RANGE_DAYS = {"7d": 7, "30d": 30, "90d": 90, "1y": 365}


def _zone(params: dict[str, Any]) -> tzinfo:
    mode = params.get("mode", "utc")
    if mode == "gateway":
        return datetime.now().astimezone().tzinfo or UTC
    if mode == "specific":
        name = params.get("timeZone")
        if isinstance(name, str):
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                return ZoneInfo(name.strip())
            except (ZoneInfoNotFoundError, ValueError):
                raise PreconditionError(f"invalid timeZone: {name}") from None
        offset = params.get("utcOffset")
        if isinstance(offset, str):
            sign = -1 if offset[3] == "-" else 1
            hours, _, minutes = offset[4:].partition(":")
            return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes or 0)))
    return UTC


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise PreconditionError(f"invalid {name}: expected a valid YYYY-MM-DD calendar date") from None


def date_range(params: dict[str, Any], now_ms: int) -> tuple[tzinfo, int, int, bool]:
    """(zone, start ms, end ms, whether untimestamped messages count) as OpenClaw resolves them."""
    zone = _zone(params)
    start = _day(params["startDate"], "startDate") if "startDate" in params else None
    end = _day(params["endDate"], "endDate") if "endDate" in params else None
    if (start is None) != (end is None):
        raise PreconditionError("startDate and endDate must be provided together")
    today = datetime.fromtimestamp(now_ms / 1000, zone).date()

    def bound(day: date, last: bool) -> int:
        moment = datetime.combine(day, time.max if last else time.min, zone)
        return int(moment.timestamp() * 1000) - (0 if not last else 0)

    if start is not None and end is not None:
        if start > end:
            raise PreconditionError("startDate must not be after endDate")
        return zone, bound(start, False), bound(end, True), False
    if params.get("range") == "all":
        return zone, 0, bound(today, True), True
    days = _RANGE_DAYS.get(params.get("range", ""), 30)
    return zone, bound(today - timedelta(days=days - 1), False), bound(today, True), False


def _channel(entry: dict[str, Any]) -> str | None:
    delivery = entry.get("delivery")
    route = delivery.get("route") if isinstance(delivery, dict) else None
    for value in (
        entry.get("channel"),
        route.get("channel") if isinstance(route, dict) else None,
    ):
        if isinstance(value, str) and value and value != "webchat":  # the Control UI's own: no delivery
            return value
    return None


def _owner(ctx: Context, params: dict[str, Any]) -> list[str]:
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.ops.session_keys import owner_agent
    from openclaw_cli.ops.targets import known_agent_ids

    key, agent_id = params.get("key"), params.get("agentId")
    if params.get("agentScope") == "all":
        if key or agent_id:
            raise PreconditionError("agentScope=all cannot be combined with key or agentId")
        return known_agent_ids(ctx.paths, ctx.config)
    if key:
        return [owner_agent(ctx, key, agent_id, None) or default_agent_id(ctx.config)]  # the one owner rule
    if agent_id:
        return [normalize_agent_id(agent_id)]
    owner_agent(ctx, "main", None, None)
    return [default_agent_id(ctx.config)]


def sessions_usage(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.agents import agent_dir
    from openclaw_cli.ops.session_views import describe
    from openclaw_cli.ops.targets import open_existing
    from openclaw_cli.store.tree import active_branch
    from openclaw_cli.usage_prices import load_prices
    from openclaw_cli.usage_summary import UNKNOWN_CREATOR, Aggregates, SessionUsage

    now = ctx.now_ms()
    zone, start_ms, end_ms, untimestamped = date_range(params, now)
    agents = _owner(ctx, params)
    wanted = params.get("key")
    family = params.get("groupBy") == "family" or params.get("includeHistorical") is True
    limit = params.get("limit", DEFAULT_LIMIT)
    matched: list[dict[str, Any]] = []
    for agent in agents:
        store = open_existing(ctx, agent)
        if store is None:
            continue
        prices = load_prices(getattr(ctx.config, "raw", None), agent_dir(ctx, agent))
        with store:
            if wanted:
                from openclaw_cli.ops.session_keys import find_entry, main_key_name

                stored_key, entry = find_entry(store, agent, wanted, main_key_name(ctx))
                rows = [(stored_key, entry)] if entry is not None else []
            else:
                rows = store.list_entries()[0]
            for key, entry in rows:
                sid = entry.get("sessionId")
                if not isinstance(sid, str) or not sid:
                    continue
                sids = [sid] + ([s for s in store.window_session_ids(key) if s != sid] if family else [])
                usage = SessionUsage(start_ms, end_ms, zone, untimestamped=untimestamped, prices=prices)
                for one in sids:
                    lines = store.iter_transcript(one, entry=entry if one == sid else None, issues=[])
                    for line in active_branch(lines):  # as OpenClaw counts: the active branch only
                        if line.obj is not None:
                            usage.add_entry(line.obj)
                raw_updated = entry.get("updatedAt")
                updated = raw_updated if isinstance(raw_updated, int | float) else 0
                if not wanted and not usage.seen and not start_ms <= updated <= end_ms:
                    continue
                named = entry.get("sessionFile")  # a transcript file, else OpenClaw's database marker
                where = named if isinstance(named, str) and named else f"sqlite:{agent}:{sid}:{store.path}"
                matched.append(
                    {
                        "key": key,
                        "agent": agent,
                        "entry": entry,
                        "sids": sids,
                        "updated": updated,
                        "usage": usage.doc(sid, where),
                    }
                )
    matched.sort(key=lambda row: -row["updated"])
    creator = params.get("creatorKey")
    if creator is not None and creator != UNKNOWN_CREATOR:
        matched = []  # we record no creators: every session's is OpenClaw's "unknown"
    aggregates = Aggregates()
    sessions = []
    for index, row in enumerate(matched):
        entry = row["entry"]
        aggregates.add(row["usage"], agent_id=row["agent"], channel=_channel(entry), creator=UNKNOWN_CREATOR)
        if index >= limit:
            continue
        view = (
            describe(ctx, {"key": row["key"], "agentId": row["agent"], "includeDerivedTitles": True})[
                "session"
            ]
            or {}
        )
        out: dict[str, Any] = {"key": row["key"]}
        title = view.get("displayName") or view.get("derivedTitle")
        if title:
            out["label"] = title
        out["sessionId"] = entry["sessionId"]
        out["scope"] = "family" if family else "instance"
        if family:
            out.update(
                {
                    "sessionFamilyKey": row["key"],
                    "currentSessionId": entry["sessionId"],
                    "includedSessionIds": row["sids"],
                    "historicalInstanceCount": len(row["sids"]),
                }
            )
        out.update({"updatedAt": row["updated"], "agentId": row["agent"], "creatorKey": UNKNOWN_CREATOR})
        channel = _channel(entry)  # the delivery channel, as OpenClaw's usage rows name it
        if channel:
            out["channel"] = channel
        for name in ("chatType", "origin"):
            if view.get(name) is not None:
                out[name] = view[name]
        for name in ("modelOverride", "providerOverride", "modelProvider", "model"):
            if entry.get(name) is not None:
                out[name] = entry[name]
        out["usage"] = row["usage"]
        out["hasContextWeight"] = bool(entry.get("systemPromptReport"))
        if params.get("includeContextWeight") is True:
            out["contextWeight"] = entry.get("systemPromptReport")
        sessions.append(out)

    def label(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, zone).strftime("%Y-%m-%d")

    return {
        "updatedAt": now,
        "startDate": label(start_ms) if start_ms else "1970-01-01",
        "endDate": label(end_ms),
        "sessions": sessions,
        "totals": aggregates.totals,
        "aggregates": aggregates.doc(),
        "creatorOptions": [{"key": UNKNOWN_CREATOR}] if matched else [],
    }
