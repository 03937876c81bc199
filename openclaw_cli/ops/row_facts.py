"""Facts a Gateway `sessions.list` row derives from its key and entry, as OpenClaw 2026.9.6's
Gateway derives them (observed side by side; docs/decisions.md, "Issue 22: listings"): the
delivery route a key names, the row's classification, its display name and its channels."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_LEGACY_DIRECT = re.compile(r"^(?:direct|dm):.+$", re.IGNORECASE | re.DOTALL)
_PEER_KINDS = frozenset({"channel", "direct", "dm", "group"})
_BACKGROUND = frozenset({"acp", "cron", "dreaming", "harness", "heartbeat", "hook", "subagent", "system"})
# key rests without a delivery route, by prefix (checked in this order); anything else is "custom"
_REST_CLASSES = (
    ("dashboard:", "dashboard"),
    ("tui-", "tui"),
    ("explicit:", "explicit"),
    ("hook:", "hook"),
    ("node-", "node"),
    ("node:", "node"),
    ("harness:", "harness"),
    ("voice:", "voice"),
    ("dreaming-narrative-", "dreaming"),
    ("boot:", "system"),
    ("internal-session-effects:", "system"),
)


@dataclass(frozen=True)
class Route:
    """`<channel>:<peerKind>:<peer…>` or `<channel>:<account>:direct|dm:<peer…>` after `agent:<id>:`."""

    channel: str
    peer_kind: str
    account_id: str | None = None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def delivery_route(key: str) -> Route | None:
    """The external conversation a key names (its thread suffix ignored), or None."""
    from openclaw_cli.keys import parse_agent_key, parse_thread

    thread = parse_thread(key)
    parsed = parse_agent_key(thread[0] if thread else key)
    if parsed is None:
        return None
    parts = parsed[1].split(":")
    if parts[0] == "agent" or len(parts) < 3:
        return None
    channel = parts[0].strip().lower()
    if not channel:
        return None
    if len(parts) >= 4 and parts[2] in ("direct", "dm"):
        if not parts[1].strip() or not parts[3].strip():
            return None
        return Route(channel, parts[2], parts[1].strip())
    if parts[1] not in _PEER_KINDS or not parts[2].strip():
        return None
    return Route(channel, parts[1])


def _rest_class(rest: str) -> str:
    lowered = rest.strip().lower()
    if lowered == "boot":
        return "system"
    return next((name for prefix, name in _REST_CLASSES if lowered.startswith(prefix)), "custom")


def classify(key: str, entry: dict[str, Any], *, is_main: bool) -> dict[str, Any]:
    """`{classification, agentId?, accountId?, peerKind?, isMain, isBackground}` in OpenClaw's
    order: main, subagent, acp, cron, thread, the route's group/channel/direct, the stored
    `chatType`, else the key's prefix (`dashboard`, `hook`, …; `custom` for anything else, e.g.
    the `recovered:` rows an import creates)."""
    from openclaw_cli.keys import is_cron_key, is_subagent_key, parse_agent_key, parse_thread

    parsed = parse_agent_key(key)
    rest = parsed[1] if parsed else key
    thread = parse_thread(key)
    route = delivery_route(key)
    base_rest = (parse_agent_key(thread[0]) or ("", ""))[1] if thread else rest
    legacy_direct = _LEGACY_DIRECT.match(base_rest) is not None
    chat_type = entry.get("chatType")
    direct_peer = (
        (route is not None and route.peer_kind in ("direct", "dm")) or legacy_direct or chat_type == "direct"
    )
    if key == "global":
        classification = "global"
    elif key == "unknown":
        classification = "unknown"
    elif entry.get("heartbeatIsolatedBaseSessionKey"):
        classification = "heartbeat"
    elif is_main:
        classification = "main"
    elif is_subagent_key(key):
        classification = "subagent"
    elif rest.lower().startswith("acp:"):
        classification = "acp"
    elif is_cron_key(key):
        classification = "cron"
    elif thread is not None:
        classification = "thread"
    elif route is not None and route.peer_kind in ("group", "channel"):
        classification = route.peer_kind
    elif direct_peer:
        classification = "direct"
    elif chat_type in ("group", "channel"):
        classification = chat_type
    else:
        classification = _rest_class(rest)
    out: dict[str, Any] = {"classification": classification}
    if parsed:
        out["agentId"] = parsed[0]
    if route is not None and route.account_id:
        out["accountId"] = route.account_id
    peer_kind = (
        "direct"
        if (route is not None and route.peer_kind == "dm") or legacy_direct
        else (route.peer_kind if route is not None else None)
    )
    if peer_kind:
        out["peerKind"] = peer_kind
    out["isMain"] = is_main
    out["isBackground"] = classification in _BACKGROUND
    return out


def _group_key(key: str) -> tuple[str, str, str] | None:
    from openclaw_cli.keys import parse_agent_key

    parsed = parse_agent_key(key)
    parts = [part for part in (parsed[1] if parsed else key).split(":") if part]
    if len(parts) >= 3 and parts[1] in ("group", "channel"):
        return parts[0], parts[1], ":".join(parts[2:])
    return None


def group_title(entry: dict[str, Any]) -> str | None:
    """A group's human title: its native channel name (`#general`, after the space when there is
    one), else its subject (and topic)."""
    group_channel = _text(entry.get("groupChannel"))
    space = _text(entry.get("space"))
    if group_channel:
        label = group_channel if group_channel.startswith("#") else f"#{group_channel}"
        return f"{space} {label}" if space else label
    return (
        " / ".join(
            part for part in (_text(entry.get("subject")) or space, _text(entry.get("topicName"))) if part
        )
        or None
    )


def display_name(key: str, entry: dict[str, Any]) -> str | None:
    """The row's `displayName`: the label, else a group's title, else the stored display name
    (or auto label), else none for `dashboard:` keys, else the delivery origin's label. (OpenClaw
    then derives a title from the transcript's first user message; that read is not made here.)"""
    from openclaw_cli.keys import parse_agent_key

    label = _text(entry.get("label"))
    if label:
        return label
    is_group = entry.get("chatType") in ("group", "channel") or _group_key(key) is not None
    if is_group:
        title = group_title(entry)
        if title:
            return title
    stored = _text(entry.get("displayName")) or _text(entry.get("autoLabel"))
    if stored:
        return stored
    parsed = parse_agent_key(key)
    if parsed and parsed[1].startswith("dashboard:"):
        return None
    origin = delivery_part(entry, "origin")
    return _text(origin.get("label")) if origin else None


def delivery_part(entry: dict[str, Any], name: str) -> dict[str, Any] | None:
    """`origin` / `deliveryContext` as stored flat (legacy rows) or inside `delivery` (rows an
    OpenClaw import or doctor canonicalised: `delivery.{route, context, origin}`)."""
    flat = {"origin": "origin", "context": "deliveryContext", "route": None}[name]
    value = entry.get(flat) if flat else None
    if isinstance(value, dict):
        return value
    delivery = entry.get("delivery")
    nested = delivery.get(name) if isinstance(delivery, dict) else None
    return nested if isinstance(nested, dict) else None


def last_channel(entry: dict[str, Any]) -> str | None:
    """The channel the conversation last used: `lastChannel`, else the delivery context's channel."""
    context = delivery_part(entry, "context") or {}
    return _text(entry.get("lastChannel")) or _text(context.get("channel"))
