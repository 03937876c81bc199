"""Gateway-shaped reads (fixtures/gateway-2026.9.6 README, "Methods"): `sessions.list`,
`sessions.subscribe`, `sessions.describe`, `sessions.preview`, `health`, the Gateway `status`
and `agents.list`. The CLI's own `openclaw sessions --json` is a different document
(`ops.sessions.list_sessions`, observed §7) and stays as it is.

Rows carry the recorded Gateway fields we can fill truthfully from the stored entry (built on
`ops.rows.session_row`): identity and classification, titles, chat facts, the organisation flags
with their timestamps, token counts, the stored model, and the run state of a Gateway that runs no
agents (`hasActiveRun: false`, `activeRunIds: []`). OpenClaw's runtime projections (thinking
levels, fast mode, agent runtime, sharing role, activity summaries) are not served; the list is in
docs/decisions.md, "Gateway server".
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from openclaw_cli.ops.context import Context
from openclaw_cli.ops.session_keys import find_session
from openclaw_cli.ops.targets import open_existing

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

DEFAULT_LIST_LIMIT = 100
PREVIEW_LIMIT = 12
PREVIEW_MAX_CHARS = 240
LAST_MESSAGE_MAX_CHARS = 240
HEALTH_RECENT = 5
MULTIPLE = "(multiple)"


# ---- rows -------------------------------------------------------------------------------------------------


def _main_key(ctx: Context, agent_id: str) -> str:
    from openclaw_cli.keys import main_key

    session = getattr(getattr(ctx.config, "model", None), "session", None)
    return main_key(agent_id, getattr(session, "main_key", None))


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _selected_model(entry: dict[str, Any], default_model: str | None) -> tuple[str | None, str | None]:
    """(provider, model) a Gateway row shows: the session's override, else the agent's default
    (configured, else OpenClaw's built-in one). The model a past run stored is not it: the real
    Gateway lists `gpt-6-astra` on rows whose stored `model` is `gpt-5.4`."""
    model = _text(entry.get("modelOverride"))
    provider = _text(entry.get("providerOverride"))
    if model is None and default_model:
        default_provider, _, name = default_model.rpartition("/")
        model, provider = name or None, provider or default_provider or None
    return provider, model


def gateway_row(
    ctx: Context,
    key: str,
    entry: dict[str, Any],
    *,
    agent_id: str,
    now: int,
    defaults: tuple[str | None, int | None],
    run_state: bool = True,
    main: str | None = None,
) -> dict[str, Any]:
    """One `sessions.list` row in OpenClaw's field order, from what the entry holds (`run_state`:
    the listing's `hasActiveRun`/`activeRunIds`, which `sessions.describe` does not carry)."""
    from openclaw_cli.ops.row_facts import classify, delivery_part, delivery_route, display_name, last_channel
    from openclaw_cli.ops.rows import session_row

    base = session_row(
        key,
        entry,
        agent_id=agent_id,
        now_ms=now,
        default_model=defaults[0],
        default_context_tokens=defaults[1],
    )
    is_main = key == (main if main is not None else _main_key(ctx, agent_id))
    facts = classify(key, entry, is_main=is_main)
    route = _dict(delivery_part(entry, "route")) or {}
    key_route = delivery_route(key)
    channel = (
        _text(entry.get("channel"))
        or _text(route.get("channel"))
        or (key_route.channel if key_route else None)
    )
    origin = delivery_part(entry, "origin")
    context = delivery_part(entry, "context")
    subject = _text(entry.get("subject"))
    display = display_name(key, entry)

    row: dict[str, Any] = {"key": key, "visibility": base["visibility"]}
    for name in ("spawnedBy", "parentSessionKey", "forkedFromParent", "spawnDepth"):
        if name in base:
            row[name] = base[name]
        if name == "spawnedBy" and base.get("spawnedBy"):
            # the real Gateway's row: the sub-agent run registry's owner, else spawnedBy (we keep no
            # run registry: spawnedBy)
            row["controlOwnerSessionKey"] = base["spawnedBy"]
    for name in ("parentSessionId", "forkSource"):
        if entry.get(name) is not None:
            row[name] = entry[name]
    row["permissionModePending"] = False
    for name in ("createdVia", "createdAt", "previousSessionId"):  # previous: a branch switch's
        if entry.get(name) is not None:
            row[name] = entry[name]
    row["kind"] = base["kind"] if base["kind"] in ("group", "global", "unknown") else "direct"
    category = _text(entry.get("category"))
    if category:  # its custom group (`sessions.groups.*`), right after kind as recorded
        row["category"] = category
    if "label" in base:
        row["label"] = base["label"]
    facts.setdefault("agentId", agent_id)
    row.update(facts)
    if display:
        row["displayName"] = display
    if channel:
        row["channel"] = channel
    if subject:
        row["subject"] = subject
    for name in ("groupChannel", "space", "chatType"):
        value = _text(entry.get(name))
        if value:
            row[name] = value
    if origin:
        row["origin"] = origin
    row["updatedAt"] = base["updatedAt"]
    row["archived"] = base["archived"]
    for name in ("archivedAt", "archiveReason"):
        if base["archived"] and entry.get(name) is not None:
            row[name] = entry[name]
    row["pinned"] = base["pinned"]
    if base["pinned"]:
        row["pinnedAt"] = entry.get("pinnedAt")
    row["unread"] = base["unread"]
    for name in ("markedUnreadAt", "lastReadAt", "lastInteractionAt", "status"):
        if entry.get(name) is not None:
            row[name] = entry[name]
    row["sessionId"] = base["sessionId"]
    for name in (
        "systemSent",
        "abortedLastRun",
        "thinkingLevel",
        "verboseLevel",
        "traceLevel",
        "reasoningLevel",
        "elevatedLevel",
        "responseUsage",
        "groupActivation",
        "inputTokens",
        "outputTokens",
    ):
        if name in base:
            row[name] = base[name]
    if base["totalTokensFresh"] and base["totalTokens"] is not None:
        row["totalTokens"] = base["totalTokens"]
    row["totalTokensFresh"] = base["totalTokensFresh"]
    row["modelProvider"], row["model"] = _selected_model(entry, defaults[0])
    if context:
        row["deliveryContext"] = context
    channel_used = last_channel(entry)
    if channel_used:
        row["lastChannel"] = channel_used
    row["snapshotAt"] = now
    if run_state:
        row["hasActiveRun"] = False  # this Gateway runs no agents
        row["activeRunIds"] = []
    return row


# ---- transcript previews ----------------------------------------------------------------------------------


def _message_text(obj: Any) -> tuple[str, str] | None:
    """(role, text) of a visible user/assistant message line; None for anything else (tool calls,
    tool results, system lines, thinking, compaction entries)."""
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = _dict(obj.get("message"))
    if not message:
        return None
    role = message.get("role")
    if role not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    else:
        return None
    text = " ".join(text.split())
    return (role, text) if text else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def _recent_messages(
    store: SessionStore, entry: dict[str, Any], count: int, max_chars: int
) -> list[dict[str, str]]:
    session_id = entry.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return []
    window = max(count * 8, 64)
    lines = store.tail_transcript(session_id, window, entry=entry, issues=[])
    items = [found for line in lines if (found := _message_text(line.obj)) is not None]
    return [{"role": role, "text": _clip(text, max_chars)} for role, text in items[-count:]]


def add_last_message_preview(ctx: Context, row: dict[str, Any], entry: dict[str, Any] | None = None) -> None:
    """`lastMessagePreview` (the last visible message, 240 characters) into a row that has none,
    after `displayName` as OpenClaw places it; nothing when the session has no message."""
    if "lastMessagePreview" in row or not isinstance(row.get("agentId"), str):
        return
    store = open_existing(ctx, row["agentId"])
    if store is None:
        return
    with store:
        if entry is None:
            entry = store.get_entry(row["key"])
        if isinstance(entry, dict):
            last = _recent_messages(store, entry, 1, LAST_MESSAGE_MAX_CHARS)
            if last:
                _insert_after(row, "displayName", "lastMessagePreview", last[-1]["text"])


# ---- stores ------------------------------------------------------------------------------------------------


def _selected_agents(ctx: Context, agent_id: str | None, *, configured_only: bool = False) -> list[str]:
    from openclaw_cli.config import configured_agent_ids
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.ops.targets import known_agent_ids

    if agent_id is not None:
        return [normalize_agent_id(agent_id)]
    if configured_only:
        return list(configured_agent_ids(ctx.config))
    return known_agent_ids(ctx.paths, ctx.config)


def row_defaults(ctx: Context) -> tuple[str | None, int | None]:
    """The config's default model and context window, as rows fill them in."""
    return _defaults(ctx)


def _defaults(ctx: Context, agent_id: str | None = None) -> tuple[str | None, int | None]:
    from openclaw_cli.ops.rows import model_defaults

    return model_defaults(ctx.config, agent_id)


def _list_defaults(defaults: tuple[str | None, int | None]) -> dict[str, Any]:
    model = defaults[0]
    provider, _, name = model.rpartition("/") if model else ("", "", None)
    return {"modelProvider": provider or None, "model": name or None, "contextTokens": defaults[1]}


# ---- sessions.list / subscribe ------------------------------------------------------------------------------


def _matcher(params: dict[str, Any]) -> Any:
    """The filters only the full entry answers, or None when the request has none."""
    from openclaw_cli.keys import is_cron_key, is_subagent_key

    search = params.get("search")
    needle = search.strip().lower() if isinstance(search, str) and search.strip() else None
    spawned_by = params.get("spawnedBy")
    exclude_cron = params.get("excludeCron") is True
    exclude_sub = params.get("excludeSubagents") is True
    group = params.get("group")
    project = params.get("projectId")
    need_interaction = params.get("requireLastInteraction") is True
    include_global = params.get("includeGlobal") is True
    include_unknown = params.get("includeUnknown") is True
    if not any((needle, spawned_by, exclude_cron, exclude_sub, group is not None, project, need_interaction)):
        return None

    def match(key: str, entry: dict[str, Any]) -> bool:
        if key == "global" and not include_global or key == "unknown" and not include_unknown:
            return False
        if exclude_cron and is_cron_key(key):
            return False
        if exclude_sub and (is_subagent_key(key) or entry.get("spawnedBy")):
            return False
        if spawned_by is not None and entry.get("spawnedBy") != spawned_by:
            return False
        if project is not None and entry.get("projectId") != project:
            return False
        if group is not None and (entry.get("category") or "") != group:
            return False
        if need_interaction and entry.get("lastInteractionAt") is None:
            return False
        if needle is not None:
            fields = (
                key,
                entry.get("label"),
                entry.get("displayName"),
                entry.get("subject"),
                entry.get("sessionId"),
            )
            if not any(isinstance(f, str) and needle in f.lower() for f in fields):
                return False
        return True

    return match


# Listing pages of a live process (the Gateway), valid until a store they read changes (every
# commit changes its token); `ts`/`snapshotAt` are set per response. Bounded, oldest dropped first.
_PAGES: dict[Any, tuple[Any, dict[str, Any]]] = {}
_PAGES_MAX = 64
# built rows by (config, agent, key, the entry's JSON, defaults, main key): a list right after a
# commit rebuilds only the rows that changed (issue 30: every list in a busy Gateway follows one)
_ROWS: dict[Any, tuple[Any, dict[str, Any]]] = {}
_ROWS_MAX = 4096
# first user messages found, by (store, key, the entry's JSON): a list right after a commit reads
# only the changed rows' transcripts (issue 30: 50 transcript heads per list were ~30 % of it).
# Only found texts are kept: an append may add a first user message to a transcript that had
# none, never change one; a rewrite of the transcript (compaction, reset) changes the entry.
_TITLES: dict[tuple[str, str, bytes], str] = {}
_TITLES_MAX = 4096


def _cached_row(
    ctx: Context,
    key: str,
    entry: dict[str, Any],
    *,
    agent_id: str,
    now: int,
    defaults: tuple[str | None, int | None],
    main: str,
) -> dict[str, Any]:
    """`gateway_row` of a listing, from `_ROWS` when the same entry was shaped before under the
    same config (a fresh dict each time: callers insert titles; `snapshotAt` is this list's)."""
    from openclaw_cli.jsonutil import dumps_bytes

    try:
        text = dumps_bytes(entry)
    except (TypeError, ValueError):
        return gateway_row(ctx, key, entry, agent_id=agent_id, now=now, defaults=defaults, main=main)
    row_key = (id(ctx.config), agent_id, key, text, defaults, main)
    found = _ROWS.get(row_key)
    if found is not None and found[0] is ctx.config:
        return {**found[1], "snapshotAt": now}
    row = gateway_row(ctx, key, entry, agent_id=agent_id, now=now, defaults=defaults, main=main)
    if len(_ROWS) >= _ROWS_MAX:
        try:
            _ROWS.pop(next(iter(_ROWS)), None)
        except (RuntimeError, StopIteration):  # another thread changed it meanwhile
            pass
    _ROWS[row_key] = (ctx.config, dict(row))
    return row


def list_gateway_sessions(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.list`: `{ts, path, count, totalCount, limitApplied, offset?, nextOffset, hasMore,
    owners, defaults, sessions}` in `sortBy`'s order (`store.base.listing_sort_key`: by default
    pinned rows first, then newest first); archived rows only with `archived: true | "all"`;
    `limit` 100 by default."""
    import orjson

    from openclaw_cli.gcpause import gc_paused

    now = ctx.now_ms()
    agents = _selected_agents(
        ctx, params.get("agentId"), configured_only=params.get("configuredAgentsOnly") is True
    )
    stores: list[tuple[str, SessionStore]] = []
    try:
        for agent_id in agents:
            store = open_existing(ctx, agent_id)
            if store is not None:
                stores.append((agent_id, store))
        tokens = [store.change_token() for _, store in stores]
        cache_key = None
        if not params.get("activeMinutes") and None not in tokens:  # activeMinutes depends on the clock
            cache_key = (
                orjson.dumps(params, option=orjson.OPT_SORT_KEYS),
                tuple(tokens),
                id(ctx.config),
                str(ctx.paths.state_dir),
            )
            cached = _PAGES.get(cache_key)
            if cached is not None and cached[0] is ctx.config:  # the same config object, not a reused id
                hit = cached[1]
                return {**hit, "ts": now, "sessions": [{**row, "snapshotAt": now} for row in hit["sessions"]]}
        with gc_paused():
            result = _list_page(ctx, params, stores, now)
        if cache_key is not None and [store.change_token() for _, store in stores] == tokens:
            if len(_PAGES) >= _PAGES_MAX:
                _PAGES.pop(next(iter(_PAGES)), None)
            _PAGES[cache_key] = (ctx.config, result)
        return result
    finally:
        for _, store in stores:
            store.close()


def _list_page(
    ctx: Context, params: dict[str, Any], stores: list[tuple[str, SessionStore]], now: int
) -> dict[str, Any]:
    from openclaw_cli.store.base import SORT_UPDATED, ListingQuery, listing_sort_key

    limit = params.get("limit", DEFAULT_LIST_LIMIT)
    offset = params.get("offset", 0)
    archived = params.get("archived", False)
    active = params.get("activeMinutes")
    merged = len(stores) > 1
    query = ListingQuery(
        archived=None if archived == "all" else bool(archived),
        active_since_ms=now - active * 60_000 if active else None,
        label=params.get("label"),
        pinned=params.get("pinned"),
        match=_matcher(params),
        # one store pages itself; of several, each store's first offset+limit rows are enough
        # for the merged page
        offset=0 if merged else offset,
        limit=offset + limit if merged else limit,
        sort_by=params.get("sortBy", SORT_UPDATED),  # the schema admits only the three orders
    )
    defaults = _defaults(ctx)
    pages: list[tuple[str, str, dict[str, Any]]] = []
    total = 0
    for agent_id, store in stores:
        rows, matched = store.list_view(query)
        total += matched
        pages.extend((agent_id, key, entry) for key, entry in rows)
    if merged:
        order = listing_sort_key(query.sort_by)
        pages.sort(key=lambda item: order(item[1], item[2]))
    page = pages[offset : offset + limit] if merged else pages
    mains = {agent_id: _main_key(ctx, agent_id) for agent_id, _ in stores}
    agent_defaults = {agent_id: _defaults(ctx, agent_id) for agent_id, _ in stores}
    sessions = [
        _cached_row(
            ctx,
            key,
            entry,
            agent_id=agent_id,
            now=now,
            defaults=agent_defaults[agent_id],
            main=mains[agent_id],
        )
        for agent_id, key, entry in page
    ]
    _titles(dict(stores), page, sessions, derived=params.get("includeDerivedTitles") is True)
    if params.get("includeLastMessage") is True:
        by_agent = dict(stores)
        for (agent_id, _key, entry), row in zip(page, sessions, strict=True):
            found = _recent_messages(by_agent[agent_id], entry, 1, LAST_MESSAGE_MAX_CHARS)
            if found:
                _insert_after(row, "displayName", "lastMessagePreview", found[-1]["text"])
    if params.get("includeSize") is True:
        _add_sizes(stores, page, sessions)
    has_more = offset + len(sessions) < total
    result: dict[str, Any] = {
        "ts": now,
        "path": str(stores[0][1].path) if len(stores) == 1 else MULTIPLE,
        "count": len(sessions),
        "totalCount": total,
        "limitApplied": limit,
    }
    if "offset" in params:
        result["offset"] = offset
    result.update(
        {
            "nextOffset": offset + len(sessions) if has_more else None,
            "hasMore": has_more,
            "owners": [],
            "defaults": _list_defaults(defaults),
            "sessions": sessions,
        }
    )
    return result


def _add_sizes(
    stores: list[tuple[str, SessionStore]],
    page: list[tuple[str, str, dict[str, Any]]],
    sessions: list[dict[str, Any]],
) -> None:
    """`includeSize` (ours, the dashboard's size column): each row's `transcriptBytes`, the file's
    size where transcripts are files, else the bytes the store keeps per session at write time
    (null when it keeps none: a transcript is never read for this)."""
    by_agent = dict(stores)
    kept: dict[str, dict[str, int] | None] = {}
    for (agent_id, _key, entry), row in zip(page, sessions, strict=True):
        store = by_agent[agent_id]
        sid = entry.get("sessionId")
        size = None
        if isinstance(sid, str) and sid:
            if store.transcripts_in_files:
                size = store.transcript_file_bytes(sid, entry)
            else:
                if agent_id not in kept:
                    kept[agent_id] = store.preview_session_bytes()
                size = (kept[agent_id] or {}).get(sid)
        row["transcriptBytes"] = size


def _titles(
    stores: dict[str, SessionStore], page: list[Any], rows: list[dict[str, Any]], *, derived: bool
) -> None:
    """Rows nothing names get the title of their first user message as `displayName`, as the real
    Gateway lists them; `includeDerivedTitles` adds `derivedTitle` (`ops/titles.py`)."""
    from openclaw_cli.ops.titles import derived_title, goal_title

    for (agent_id, key, entry), row in zip(page, rows, strict=True):
        named = row.get("displayName")
        needs_text = not named and not (derived and (entry.get("label") or entry.get("subject")))
        first = _first_user_text(stores[agent_id], key, entry) if needs_text else None
        if not named:
            title = goal_title(first)
            if title:
                _insert_after(row, "isBackground", "displayName", title)
        if derived:
            title = derived_title(entry, named, first)
            if title:
                _insert_after(row, "displayName", "derivedTitle", title)


def _first_user_text(store: SessionStore, key: str, entry: dict[str, Any]) -> str | None:
    """`titles.first_user_text`, from `_TITLES` when this entry's transcript gave one before."""
    from openclaw_cli.jsonutil import dumps_bytes
    from openclaw_cli.ops.titles import first_user_text

    try:
        cache_key = (str(store.path), key, dumps_bytes(entry))
    except (TypeError, ValueError):
        return first_user_text(store, entry)
    found = _TITLES.get(cache_key)
    if found is not None:
        return found
    text = first_user_text(store, entry)
    if text is not None:
        if len(_TITLES) >= _TITLES_MAX:
            try:
                _TITLES.pop(next(iter(_TITLES)), None)
            except (RuntimeError, StopIteration):  # another thread changed it meanwhile
                pass
        _TITLES[cache_key] = text
    return text


def _insert_after(row: dict[str, Any], anchor: str, name: str, value: Any) -> None:
    items = list(row.items())
    at = next((i + 1 for i, (k, _) in enumerate(items) if k == anchor), None)
    if at is None:
        at = next((i for i, (k, _) in enumerate(items) if k in ("channel", "chatType")), len(items))
    items.insert(at, (name, value))
    row.clear()
    row.update(items)


def subscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.subscribe`: `{subscribed: true}`, plus the first page when params ask for one.
    The subscription itself is the connection's (the server starts sending `sessions.changed`)."""
    result: dict[str, Any] = {"subscribed": True}
    if params:
        result["list"] = list_gateway_sessions(ctx, params)
    return result


# ---- sessions.describe / preview ----------------------------------------------------------------------------


def describe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.describe`: `{session: <row>}`, or `{session: null}` for an unknown key."""
    found = find_session(ctx, params["key"], params.get("agentId"))
    if found is None:
        return {"session": None}
    agent_id, store, key, entry = found
    with store:
        now = ctx.now_ms()
        row = gateway_row(
            ctx,
            key,
            entry,
            agent_id=agent_id,
            now=now,
            defaults=_defaults(ctx, agent_id),
            run_state=params.get("runState") is True,
        )
        _titles(
            {agent_id: store},
            [(agent_id, key, entry)],
            [row],
            derived=params.get("includeDerivedTitles") is True,
        )
        if params.get("includeLastMessage") is True:
            last = _recent_messages(store, entry, 1, LAST_MESSAGE_MAX_CHARS)
            if last:
                _insert_after(row, "displayName", "lastMessagePreview", last[-1]["text"])
    return {"session": row}


def preview(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.preview`: the last `limit` visible messages of each key (`status: "ok"`), or
    `status: "missing"` with no items for a key that is not stored."""
    limit = params.get("limit", PREVIEW_LIMIT)
    max_chars = params.get("maxChars", PREVIEW_MAX_CHARS)
    previews = []
    for key in params["keys"]:
        found = find_session(ctx, key, None)
        if found is None:
            previews.append({"key": key, "status": "missing", "items": []})
            continue
        _agent, store, _stored, entry = found
        with store:
            if not entry.get("sessionId"):  # a row with no transcript: OpenClaw says missing
                previews.append({"key": key, "status": "missing", "items": []})
                continue
            items = _recent_messages(store, entry, limit, max_chars)
            # OpenClaw 2026.9.6: `empty` for a stored session with no message to show
            previews.append({"key": key, "status": "ok" if items else "empty", "items": items})
    return {"ts": ctx.now_ms(), "previews": previews}


# ---- health / status / agents ---------------------------------------------------------------------------------


def health(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`health`: per agent its store path, session count and newest sessions (`{key, updatedAt,
    age}`), plus the default agent's figures at the top level. This Gateway has no channels, no
    plugins and no heartbeat: those are reported empty."""
    import time

    from openclaw_cli.config import default_agent_id

    start = time.monotonic()
    now = ctx.now_ms()
    default = default_agent_id(ctx.config)
    agents = []
    for agent_id in _selected_agents(ctx, None):
        sessions: dict[str, Any] = {"path": str(ctx.paths.agent_db_path(agent_id)), "count": 0, "recent": []}
        store = open_existing(ctx, agent_id)
        if store is not None:
            with store:
                rows, total = store.list_entries(limit=HEALTH_RECENT)
                sessions = {
                    "path": str(store.path),
                    "count": total,
                    "recent": [
                        {
                            "key": key,
                            "updatedAt": entry.get("updatedAt"),
                            "age": max(0, int(now - entry["updatedAt"]))
                            if isinstance(entry.get("updatedAt"), int | float)
                            else None,
                        }
                        for key, entry in rows
                    ],
                }
        agents.append({"agentId": agent_id, "isDefault": agent_id == default, "sessions": sessions})
    top = next(
        (a["sessions"] for a in agents if a["agentId"] == default),
        agents[0]["sessions"] if agents else {"path": None, "count": 0, "recent": []},
    )
    return {
        "ok": True,
        "ts": now,
        "durationMs": int((time.monotonic() - start) * 1000),
        "plugins": {"loaded": [], "errors": [], "unavailable": []},
        "channels": {},
        "channelOrder": [],
        "channelLabels": {},
        "heartbeatSeconds": 0,
        "agents": agents,
        "sessions": top,
    }


_TASK_STATUSES = ("queued", "running", "succeeded", "failed", "timed_out", "cancelled", "lost")
_TASK_RUNTIMES = ("subagent", "acp", "cli", "cron")
_TASK_AUDIT_CODES = (
    "stale_queued",
    "stale_running",
    "lost",
    "delivery_failed",
    "missing_cleanup",
    "inconsistent_timestamps",
)


def gateway_status(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The Gateway's `status`: `{runtimeVersion, cliProjection?, sessions:{paths, count, defaults,
    recent, byAgent}, pid}` with the rows of `openclaw status --json` (ops.status)."""
    from openclaw_cli import __version__
    from openclaw_cli.config import configured_agent_ids, default_agent_id
    from openclaw_cli.ops.rows import session_row
    from openclaw_cli.ops.status import RECENT_LIMIT, status_row

    now = ctx.now_ms()
    from openclaw_cli.config import context_tokens_default, default_model

    model_default, ctx_default = default_model(ctx.config), context_tokens_default(ctx.config)
    paths: list[str] = []
    by_agent: list[dict[str, Any]] = []
    newest: list[dict[str, Any]] = []
    count = 0
    for agent_id in _selected_agents(ctx, None):
        store = open_existing(ctx, agent_id)
        if store is None:
            continue
        with store:
            entries, total = store.list_entries(limit=RECENT_LIMIT)  # the newest rows, counted in SQL
            rows = [
                session_row(
                    k,
                    e,
                    agent_id=agent_id,
                    now_ms=now,
                    default_model=model_default,
                    default_context_tokens=ctx_default,
                )
                for k, e in entries
            ]
        recent = [status_row(r) for r in rows]
        paths.append(str(store.path))
        count += total
        newest.extend(rows)
        by_agent.append({"agentId": agent_id, "path": str(store.path), "count": total, "recent": recent})
    newest.sort(key=lambda r: -(r["updatedAt"] or 0))
    agents = _selected_agents(ctx, None)
    result: dict[str, Any] = {"runtimeVersion": __version__}
    if params.get("includeCliProjection") is True:
        configured = configured_agent_ids(ctx.config)
        explicit = len(configured) > 1
        result["cliProjection"] = {
            "agents": {
                "defaultId": None if explicit else default_agent_id(ctx.config),
                "ownership": "explicit" if explicit else "sole",
                "selectionRequired": explicit,
                "rows": [{"id": agent} for agent in configured],
            },
            "updateChannel": None,
        }
    # This Gateway runs no heartbeats, channels or tasks: those summaries are truthfully empty
    # (the real CLI's `status --json` reads them).
    result["heartbeat"] = {
        "defaultAgentId": default_agent_id(ctx.config),
        "agents": [
            {
                "agentId": agent,
                "enabled": False,
                "every": "disabled",
                "everyMs": None,
                "waitingForRoute": False,
            }
            for agent in agents
        ],
    }
    result["channelSummary"] = []
    result["queuedSystemEvents"] = []
    result["degradedSecretOwners"] = []
    result["tasks"] = {
        "total": 0,
        "active": 0,
        "terminal": 0,
        "failures": 0,
        "byStatus": dict.fromkeys(_TASK_STATUSES, 0),
        "byRuntime": dict.fromkeys(_TASK_RUNTIMES, 0),
    }
    result["taskAudit"] = {
        "total": 0,
        "warnings": 0,
        "errors": 0,
        "byCode": dict.fromkeys(_TASK_AUDIT_CODES, 0),
    }
    result["sessions"] = {
        "paths": paths,
        "count": count,
        "defaults": {
            "model": _list_defaults((model_default, ctx_default))["model"],
            "contextTokens": ctx_default,
        },
        "recent": [status_row(r) for r in newest[:RECENT_LIMIT]],
        "byAgent": by_agent,
    }
    result["pid"] = os.getpid()
    return result


def gateway_agents(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The Gateway's `agents.list`: `{defaultId, ownership, selectionRequired, mainKey, scope,
    agents:[{id, workspace, model?}]}` (the CLI's `agents list --json` is `ops.agents.list_agents`)."""
    from openclaw_cli.config import configured_agent_ids, default_agent_id
    from openclaw_cli.ops.agents import workspace_dir

    configured = configured_agent_ids(ctx.config)
    explicit = len(configured) > 1
    session = getattr(getattr(ctx.config, "model", None), "session", None)
    agents = []
    for agent_id in configured:
        # the workspace as `openclaw agents list` resolves it (`<state>/workspace` for the default
        # agent of a sole-agent state, `workspace-<id>` otherwise)
        row: dict[str, Any] = {"id": agent_id, "workspace": str(workspace_dir(ctx, agent_id))}
        row["model"] = {"primary": _defaults(ctx, agent_id)[0]}
        agents.append(row)
    return {
        "defaultId": default_agent_id(ctx.config),
        "ownership": "explicit" if explicit else "sole",
        "selectionRequired": explicit,
        "mainKey": (getattr(session, "main_key", None) or "main"),
        "scope": getattr(session, "scope", None) or "per-sender",
        "agents": agents,
    }
