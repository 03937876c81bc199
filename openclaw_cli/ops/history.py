"""`chat.history`: one session's transcript as OpenClaw's Gateway pages it (observed from 2026.9.6):
the messages of the active branch, newest last, `limit` of them ending `offset` messages before
the newest; `nextOffset` pages further back. The dashboard's session view reads it (issue 28).

A message is a transcript `message` entry's `message` object; compaction and reset entries become
`{role: "system", content: [{type: "text", text: "Compaction" | "Reset"}]}` rows marked
`__openclaw.kind`, as OpenClaw sends them. Ours adds the entry's `summary` under `__openclaw`
(OpenClaw's page fetches it separately), so a summary is shown where it happened. Other entries
(model or thinking-level changes, labels, custom entries) are not messages and are not counted.

One streamed pass: only the last `offset + limit` messages are held, whatever the transcript's
size. A text longer than `maxChars` is cut with OpenClaw's marker. The page's messages are held to
`maxBytes` of JSON (and to OpenClaw's own 6 MiB): the oldest go first, the newest always stays,
and `nextOffset` continues from the oldest kept (recorded from 2026.9.6).

`cursor` asks OpenClaw for the events after a `deltaCursor` of its own event log; ours keeps no
such log and hands out no cursor, so every cursor is one it cannot continue: `{kind: "reset"}`,
as OpenClaw answers a cursor it cannot continue (the client reloads the page). Conflicting params
are refused with OpenClaw's texts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from datetime import datetime
from typing import Any

from openclaw_cli.errors import NotFoundError, UsageError
from openclaw_cli.jsonutil import dumps_bytes
from openclaw_cli.ops.context import Context, Reuse

DEFAULT_LIMIT = 200
DEFAULT_MAX_CHARS = 20_000
MAX_HISTORY_BYTES = 6_291_456  # OpenClaw's cap on one page's messages (JSON bytes)
TRUNCATED_MARK = "\n...(truncated)..."
_SYSTEM_KINDS = {"compaction": "Compaction", "branch_summary": "Branch summary", "reset": "Reset"}


def _ms(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return None
    return None


def _cut(text: Any, max_chars: int, meta: dict[str, Any]) -> Any:
    if isinstance(text, str) and len(text) > max_chars:
        meta["truncated"] = True
        meta["reason"] = "display-cap"
        return text[:max_chars] + TRUNCATED_MARK
    return text


def _capped(message: dict[str, Any], max_chars: int, meta: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": _cut(content, max_chars, meta)}
    if not isinstance(content, list):
        return message
    blocks = []
    for block in content:
        if isinstance(block, dict):
            block = dict(block)
            for field in ("text", "thinking"):
                if field in block:
                    block[field] = _cut(block[field], max_chars, meta)
        blocks.append(block)
    return {**message, "content": blocks}


def message_of(obj: dict[str, Any], seq: int, max_chars: int) -> dict[str, Any] | None:
    """The chat.history message of one transcript entry, or None when it is not one."""
    kind = obj.get("type")
    meta: dict[str, Any] = {}
    if isinstance(obj.get("id"), str):
        meta["id"] = obj["id"]
    # OpenClaw 2026.9.6 adds when the entry was recorded (and its position in its own event log,
    # `transcriptPosition`, which has no counterpart in a transcript file: not sent)
    if _ms(obj.get("timestamp")) is not None:
        meta["recordTimestampMs"] = _ms(obj.get("timestamp"))
    if kind == "message" and isinstance(obj.get("message"), dict):
        message = obj["message"]
        out = _capped(message, max_chars, meta)
        if "timestamp" not in out and _ms(obj.get("timestamp")) is not None:
            out = {**out, "timestamp": _ms(obj.get("timestamp"))}
        meta["seq"] = seq
        return {**out, "__openclaw": meta}
    if kind in _SYSTEM_KINDS:
        meta = {"kind": kind, **meta}
        if kind == "compaction" and obj.get("tokensBefore") is not None:
            meta["tokensBefore"] = obj.get("tokensBefore")
        summary = obj.get("summary") if kind != "reset" else (obj.get("summary") or obj.get("reason"))
        if isinstance(summary, str) and summary:
            meta["summary"] = _cut(summary, max_chars, meta)
        meta["seq"] = seq
        out = {"role": "system", "content": [{"type": "text", "text": _SYSTEM_KINDS[kind]}]}
        if _ms(obj.get("timestamp")) is not None:
            out["timestamp"] = _ms(obj.get("timestamp"))
        return {**out, "__openclaw": meta}
    return None


class _PageCache:
    """The last few pages read, keyed by the transcript's version and the page's params: 20 clients
    opening one large session read it once (a transcript that changed has another version)."""

    def __init__(self, size: int = 8) -> None:
        self._pages: OrderedDict[Any, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            found = self._pages.get(key)
            if found is not None:
                self._pages.move_to_end(key)
            return found

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._pages[key] = value
            self._pages.move_to_end(key)
            while len(self._pages) > self._size:
                self._pages.popitem(last=False)


_PAGES = _PageCache()


def _read_page(
    source: Any, limit: int, offset: int, max_chars: int
) -> tuple[list[dict[str, Any]], int, int, list[int]]:
    """(messages, entries on the page, messages in the transcript, each message's JSON bytes): one
    streamed pass holding only the last `offset + limit` entries."""
    held: deque[tuple[int, dict[str, Any]]] = deque(maxlen=offset + limit)
    total = 0
    for line in source.lines():
        obj = line.obj
        if obj is None or obj.get("type") not in ("message", *_SYSTEM_KINDS):
            continue
        total += 1
        held.append((total, obj))
    page = list(held)[: max(0, len(held) - offset)]
    messages = [m for seq, obj in page if (m := message_of(obj, seq, max_chars)) is not None]
    return messages, len(page), total, [len(dumps_bytes(m)) for m in messages]


def _within_bytes(sizes: list[int], budget: int) -> int:
    """How many of the oldest messages go so that the rest, as a JSON array, fits `budget` bytes
    (the newest one always stays), as OpenClaw caps a page."""
    size = 2 + sum(sizes) + max(0, len(sizes) - 1)
    start = 0
    while size > budget and start < len(sizes) - 1:
        size -= sizes[start] + 1
        start += 1
    return start


def _conflicts(params: dict[str, Any]) -> str | None:
    if "offset" in params and "messageId" in params:
        return "offset and messageId cannot be used together"
    if "cursor" in params and ("offset" in params or "messageId" in params):
        return "cursor cannot be used with offset or messageId"
    if "sessionId" in params and "messageId" not in params:
        return "sessionId requires messageId"
    return None


def chat_history(ctx: Context, params: dict[str, Any], *, with_session: bool = True) -> dict[str, Any]:
    from openclaw_cli.ops.session_views import describe
    from openclaw_cli.ops.transcript_export import open_export

    key = params["sessionKey"]
    agent = params.get("agentId")
    conflict = _conflicts(params)
    if conflict is not None:
        raise UsageError(conflict)
    if "cursor" in params:
        from openclaw_cli.ops.session_keys import owner_agent

        owner_agent(ctx, key, agent, None)  # a key without an owner is refused first, as OpenClaw
        return {"kind": "reset"}
    limit = params.get("limit", DEFAULT_LIMIT)
    offset = params.get("offset", 0)
    max_chars = params.get("maxChars", DEFAULT_MAX_CHARS)
    budget = min(params.get("maxBytes", MAX_HISTORY_BYTES), MAX_HISTORY_BYTES)
    total = 0
    session_id = None
    messages: list[dict[str, Any]] = []
    sizes: list[int] = []
    page_len = 0
    probe = None
    try:
        with open_export(ctx, key, agent=agent, store=None, branch="active") as source:
            session_id = source.session_id
            probe = source.probe
            cache_key = (source.store_path, source.key, source.version, limit, offset, max_chars)
            cached = _PAGES.get(cache_key) if source.version is not None else None
            if cached is None:
                cached = _read_page(source, limit, offset, max_chars)
                if source.version is not None:
                    _PAGES.put(cache_key, cached)
            messages, page_len, total, sizes = cached
    except NotFoundError:
        pass
    dropped = _within_bytes(sizes, budget)
    messages = [dict(m) for m in messages[dropped:]]  # the cached page stays as read
    if dropped:  # continued from the oldest message kept (OpenClaw: total - its seq + 1)
        next_offset = max(offset + 1, total - messages[0]["__openclaw"]["seq"] + 1)
        has_more = next_offset < total
    else:
        next_offset = offset + page_len
        has_more = total - offset - page_len > 0
    out: dict[str, Any] = {"sessionKey": key}
    if session_id:
        out["sessionId"] = session_id
    out["messages"] = messages
    out["pendingInputs"] = {"items": [], "total": 0}  # inputs queued for a run: we run none
    if "offset" in params:
        out["offset"] = offset
    if has_more:
        out["nextOffset"] = next_offset
    out["hasMore"] = has_more
    out["totalMessages"] = total
    if not with_session:
        return out
    from openclaw_cli.ops.session_views import _defaults, _list_defaults

    out["defaults"] = _list_defaults(_defaults(ctx, agent))
    session = describe(ctx, {"key": key, **({"agentId": agent} if agent else {})}).get("session")
    if session is not None:
        out["sessionInfo"] = session
        if probe is not None and session.get("sessionId") == session_id:
            # the same answer while the row and transcript are unchanged; `snapshotAt` is the clock's
            now_fields = (("sessionInfo", "snapshotAt"),) if "snapshotAt" in session else ()
            ctx.reuse = Reuse(probe, now_fields)
    return out


MESSAGE_GET_MAX_CHARS = 1_000_000
MESSAGE_GET_MAX_BYTES = 26_213_376  # OpenClaw's limit on one message's JSON


def chat_message_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`chat.message.get`: one message of the session's active branch by its entry id, rendered as
    chat.history renders it (`maxChars`, default 1,000,000); `{ok: false, unavailableReason:
    "not_found"}` for an unknown session or id (`pending:` ids too: we queue no inputs),
    `"oversized"` past OpenClaw's 26,213,376 bytes."""
    import orjson

    from openclaw_cli.ops.session_keys import owner_agent
    from openclaw_cli.ops.transcript_export import open_export

    key, wanted = params["sessionKey"], params["messageId"]
    agent = params.get("agentId")
    owner_agent(ctx, key, agent, None)  # refused before anything is read
    max_chars = params.get("maxChars", MESSAGE_GET_MAX_CHARS)
    missing = {"ok": False, "unavailableReason": "not_found"}
    if wanted.startswith("pending:"):
        return missing
    seq = 0
    try:
        with open_export(ctx, key, agent=agent, store=None, branch="active") as source:
            for line in source.lines():
                obj = line.obj
                if obj is None or obj.get("type") not in ("message", *_SYSTEM_KINDS):
                    continue
                seq += 1
                if obj.get("id") == wanted:
                    message = message_of(obj, seq, max_chars)
                    if message is None:
                        return {"ok": False, "unavailableReason": "not_visible"}
                    if len(orjson.dumps(message)) > MESSAGE_GET_MAX_BYTES:
                        return {"ok": False, "unavailableReason": "oversized"}
                    return {"ok": True, "message": message}
    except NotFoundError:
        return missing
    return missing


_COUNTED_ROLES = ("user", "assistant", "toolResult")


def _first_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
    return None


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    from datetime import UTC

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sessions_branches_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.branches.list`: every tip of the session's transcript tree (an entry nothing
    continues), root path measured as OpenClaw reports it (recorded): `messageCount` the user,
    assistant and tool-result messages on the path, `headline` the last user or assistant text on
    it, `updatedAt` the tip's time (ISO), `active` the tip the session continues from."""
    from openclaw_cli.ops.session_keys import owner_agent
    from openclaw_cli.ops.transcript_export import open_export
    from openclaw_cli.store.tree import scan_tree

    key = params["sessionKey"]
    agent = params.get("agentId")
    owner_agent(ctx, key, agent, None)  # refused before anything is read
    try:
        with open_export(ctx, key, agent=agent, store=None, branch="all") as source:
            tree = scan_tree(source.lines())
    except NotFoundError:
        return {"branches": []}
    parents = {node.parent_id for node in tree.nodes if not node.leaf_control}
    branches = []
    for node in tree.nodes:
        if node.leaf_control or node.id in parents:
            continue
        path = tree.path_to(node.id) or []
        count, headline = 0, ""
        for step in path:
            obj = step.line.obj or {}
            message = obj.get("message") if obj.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") not in _COUNTED_ROLES:
                continue
            count += 1
            text = _first_text(message)
            if message.get("role") in ("user", "assistant") and text:
                headline = text
        branch: dict[str, Any] = {"leafEntryId": node.id, "headline": headline, "messageCount": count}
        updated = _iso(_ms((node.line.obj or {}).get("timestamp")))
        if updated:
            branch["updatedAt"] = updated
        branch["active"] = node.id == tree.leaf_id
        branches.append(branch)
    return {"branches": branches}
