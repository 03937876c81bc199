"""`chat.history`: one session's transcript as OpenClaw's Gateway pages it (observed from 2026.9.6):
the messages of the active branch, newest last, `limit` of them ending `offset` messages before
the newest; `nextOffset` pages further back. The dashboard's session view reads it (issue 28).

A message is a transcript `message` entry's `message` object; compaction and reset entries become
`{role: "system", content: [{type: "text", text: "Compaction" | "Reset"}]}` rows marked
`__openclaw.kind`, as OpenClaw sends them. Ours adds the entry's `summary` under `__openclaw`
(OpenClaw's page fetches it separately), so a summary is shown where it happened. Other entries
(model or thinking-level changes, labels, custom entries) are not messages and are not counted.

One streamed pass: only the last `offset + limit` messages are held, whatever the transcript's
size. A text longer than `maxChars` (8,000 by default) is cut with OpenClaw's marker (a tool's
output without it). A message still over 128 KiB of JSON is replaced by OpenClaw's placeholder.
The page's messages are held to `maxBytes` of JSON (and to OpenClaw's own 6 MiB): the oldest go
first, the newest always stays, and `nextOffset` continues from the oldest kept. `messageId` pages
around that message instead (`limit` of them, about half older), grown around it within
`maxBytes`, with no offsets (all recorded from 2026.9.6: reads-6, reads-7).

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

from openclaw_cli import clock
from openclaw_cli.errors import NotFoundError, UsageError
from openclaw_cli.jsonutil import dumps_bytes
from openclaw_cli.ops.context import Context, Reuse

DEFAULT_LIMIT = 200
DEFAULT_MAX_CHARS = 8_000  # OpenClaw's DEFAULT_CHAT_HISTORY_TEXT_MAX_CHARS (recorded: reads-7 rec-1)
MAX_HISTORY_BYTES = 6_291_456  # OpenClaw's cap on one page's messages (JSON bytes)
MAX_MESSAGE_BYTES = 131_072  # OpenClaw's cap on one message's JSON: larger ones are replaced
OVERSIZED_TEXT = "[chat.history omitted: message too large]"
UNAVAILABLE_TEXT = (
    "[chat.history unavailable: transcript too large to display; the full history is preserved on disk]"
)
_TOOL_IDENTITY = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "toolName", "tool_name", "name")
PAGE_CACHE_BYTES = 16 << 20  # the pages kept (`_PageCache`), as their messages' JSON bytes
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


def _cut(text: Any, max_chars: int, meta: dict[str, Any], exact: bool = False) -> Any:
    """`text` cut to `max_chars` with OpenClaw's marker; `exact`: a tool's output, cut without
    the marker (OpenClaw keeps a tool payload's exact prefix; recorded: reads-7 rec-1)."""
    if isinstance(text, str) and len(text) > max_chars:
        meta["truncated"] = True
        meta["reason"] = "display-cap"
        return text[:max_chars] if exact else text[:max_chars] + TRUNCATED_MARK
    return text


_TOOL_ROLES = ("toolresult", "tool_result", "tool", "function")


def _capped(message: dict[str, Any], max_chars: int, meta: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    exact = (isinstance(role, str) and role.lower() in _TOOL_ROLES) or any(
        isinstance(message.get(name), str) for name in ("toolName", "tool_name", "toolCallId", "tool_call_id")
    )
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": _cut(content, max_chars, meta, exact)}
    if not isinstance(content, list):
        return message
    blocks = []
    for block in content:
        if isinstance(block, dict):
            block = dict(block)
            for field in ("text", "thinking"):
                if field in block:
                    block[field] = _cut(block[field], max_chars, meta, exact and field == "text")
        blocks.append(block)
    return {**message, "content": blocks}


def message_of(obj: dict[str, Any], seq: int, max_chars: int) -> dict[str, Any] | None:
    """The chat.history message of one transcript entry, or None when it is not one.

    A message is the entry's `message` as written, with OpenClaw's metadata merged into its own
    `__openclaw`: the entry's id, its `idempotencyKey`, when the entry was recorded
    (`recordTimestampMs`; OpenClaw's position in its own event log, `transcriptPosition`, has no
    counterpart in a transcript file: not sent) and `seq`. A message without a `timestamp` of its
    own gets none (2026.9.6 adds none: the entry's time is `recordTimestampMs`). A compaction or
    reset row carries the entry's time as `timestamp` and no `recordTimestampMs` (recorded)."""
    kind = obj.get("type")
    entry_id = obj["id"] if isinstance(obj.get("id"), str) else None
    recorded = _ms(obj.get("timestamp"))
    if kind == "message" and isinstance(obj.get("message"), dict):
        message = obj["message"]
        own = message.get("__openclaw")
        meta: dict[str, Any] = dict(own) if isinstance(own, dict) else {}
        if entry_id is not None:
            meta["id"] = entry_id
        idempotency = message.get("idempotencyKey")
        if isinstance(idempotency, str) and idempotency.strip():
            meta["idempotencyKey"] = idempotency
        if recorded is not None:
            meta["recordTimestampMs"] = recorded
        meta["seq"] = seq
        out = _capped(message, max_chars, meta)
        return {**out, "__openclaw": meta}
    if kind in _SYSTEM_KINDS:
        meta = {"kind": kind}
        if entry_id is not None:
            meta["id"] = entry_id
        if kind == "compaction":
            for field in ("tokensBefore", "tokensAfter"):
                if obj.get(field) is not None:
                    meta[field] = obj.get(field)
        summary = obj.get("summary") if kind != "reset" else (obj.get("summary") or obj.get("reason"))
        if isinstance(summary, str) and summary:
            meta["summary"] = _cut(summary, max_chars, meta)
        meta["seq"] = seq
        out = {"role": "system", "content": [{"type": "text", "text": _SYSTEM_KINDS[kind]}]}
        if recorded is not None:
            out["timestamp"] = recorded
        return {**out, "__openclaw": meta}
    return None


def _oversized(message: dict[str, Any], now: int) -> tuple[dict[str, Any], bool]:
    """OpenClaw's stand-in for a message over `MAX_MESSAGE_BYTES` of JSON (recorded from 2026.9.6):
    its role, timestamp (the clock's when it has no number: then True), tool identity and error
    flag, and the metadata that places it, with `truncated` and `reason: "oversized"`; a
    stand-in that is itself too large becomes the page's "unavailable" message."""
    role = message.get("role") if isinstance(message.get("role"), str) else "assistant"
    stamp = message.get("timestamp")
    clocked = not (isinstance(stamp, int | float) and not isinstance(stamp, bool))
    out: dict[str, Any] = {
        "role": role,
        "timestamp": now if clocked else stamp,
        "content": [{"type": "text", "text": OVERSIZED_TEXT}],
    }
    for name in _TOOL_IDENTITY:
        if isinstance(message.get(name), str):
            out[name] = message[name]
    error = message.get("isError", message.get("is_error"))
    if isinstance(error, bool):
        out["isError"] = error
    own = message.get("__openclaw")
    meta = own if isinstance(own, dict) else {}
    kept: dict[str, Any] = {}
    if meta.get("toolOutput"):
        kept["toolOutput"] = meta["toolOutput"]
    if isinstance(meta.get("id"), str) and meta["id"]:
        kept["id"] = meta["id"]
    if isinstance(meta.get("seq"), int):
        kept["seq"] = meta["seq"]
    if isinstance(meta.get("idempotencyKey"), str) and meta["idempotencyKey"]:
        kept["idempotencyKey"] = meta["idempotencyKey"]
    if meta.get("turnBoundary") is True:
        kept["turnBoundary"] = True
    kept.update(truncated=True, reason="oversized")
    out["__openclaw"] = kept
    if len(dumps_bytes(out)) > MAX_MESSAGE_BYTES:
        return {
            "role": "assistant",
            "timestamp": now,
            "content": [{"type": "text", "text": UNAVAILABLE_TEXT}],
        }, True
    return out, clocked


def _replace_oversized(
    messages: list[dict[str, Any]], sizes: list[int], now: int
) -> tuple[list[dict[str, Any]], list[int], bool]:
    """The page with every message over `MAX_MESSAGE_BYTES` replaced (`_oversized`), the new
    sizes, and whether a stand-in took the clock's time."""
    if all(size <= MAX_MESSAGE_BYTES for size in sizes):
        return messages, sizes, False
    out, out_sizes, clocked = list(messages), list(sizes), False
    for i, size in enumerate(sizes):
        if size > MAX_MESSAGE_BYTES:
            out[i], used_clock = _oversized(messages[i], now)
            out_sizes[i] = len(dumps_bytes(out[i]))
            clocked = clocked or used_clock
    return out, out_sizes, clocked


class _PageCache:
    """The last pages read, keyed by the transcript's version and the page's params: 20 clients
    opening one large session read it once (a transcript that changed has another version). Held
    to `budget` bytes of the pages' message JSON (a page larger than that is not kept), not to a
    count: one page may be 200 short messages or 1,000 of 128 KiB."""

    def __init__(self, budget: int = PAGE_CACHE_BYTES) -> None:
        self._pages: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._budget = budget
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            found = self._pages.get(key)
            if found is None:
                return None
            self._pages.move_to_end(key)
            return found[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        with self._lock:
            old = self._pages.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self._budget:
                return
            self._pages[key] = (value, size)
            self._bytes += size
            while self._bytes > self._budget:
                _, (_, dropped) = self._pages.popitem(last=False)
                self._bytes -= dropped

    @property
    def held_bytes(self) -> int:
        return self._bytes


_PAGES = _PageCache()


def _visible(source: Any) -> Any:
    """(seq, entry) of every entry chat.history shows (messages, compaction and reset rows), in
    order, seq counted from 1."""
    total = 0
    for line in source.lines():
        obj = line.obj
        if obj is None or obj.get("type") not in ("message", *_SYSTEM_KINDS):
            continue
        total += 1
        yield total, obj


def _read_page(
    source: Any, limit: int, offset: int, max_chars: int
) -> tuple[list[dict[str, Any]], int, int, list[int]]:
    """(messages, entries on the page, messages in the transcript, each message's JSON bytes): one
    streamed pass holding only the last `offset + limit` entries."""
    held: deque[tuple[int, dict[str, Any]]] = deque(maxlen=offset + limit)
    total = 0
    for total, obj in _visible(source):
        held.append((total, obj))
    page = list(held)[: max(0, len(held) - offset)]
    messages = [m for seq, obj in page if (m := message_of(obj, seq, max_chars)) is not None]
    return messages, len(page), total, [len(dumps_bytes(m)) for m in messages]


def _read_around(
    source: Any, message_id: str, limit: int, max_chars: int
) -> tuple[list[dict[str, Any]], int, int, list[int]] | None:
    """The page around the message with entry id `message_id` (OpenClaw's `messageId` read, 2026.9.6):
    `limit` messages, the anchor with `limit - limit // 2 - 1` older ones before it, moved back so
    the page never runs past the newest message; None when no shown entry has that id. (messages,
    the anchor's index among them, messages in the transcript, sizes). One streamed pass holding
    at most `2 * limit` entries."""
    older = limit - limit // 2 - 1
    before: deque[tuple[int, dict[str, Any]]] = deque(maxlen=max(1, older))
    tail: deque[tuple[int, dict[str, Any]]] = deque(maxlen=limit)
    after: list[tuple[int, dict[str, Any]]] = []
    anchor: int | None = None  # the anchor's seq
    total = 0
    for total, obj in _visible(source):
        tail.append((total, obj))
        if anchor is None:
            if obj.get("id") == message_id:
                anchor = total
                after.append((total, obj))
            elif older:
                before.append((total, obj))
        elif len(after) < limit:
            after.append((total, obj))
    if anchor is None:
        return None
    start = min(max(0, anchor - 1 - older), max(0, total - limit))  # 0-based, as OpenClaw's range
    if start < max(0, anchor - 1 - older):
        page = list(tail)  # the page ends at the newest message: the last `limit`
    else:
        held = list(before) if older else []
        page = [item for item in held if item[0] > start] + after
        page = page[:limit]
    messages = [m for seq, obj in page if (m := message_of(obj, seq, max_chars)) is not None]
    index = next((i for i, m in enumerate(messages) if m["__openclaw"]["seq"] == anchor), None)
    if index is None:
        return None  # the entry is a `message` without a message object: nothing shown
    return messages, index, total, [len(dumps_bytes(m)) for m in messages]


def _around_bytes(sizes: list[int], anchor: int, budget: int) -> tuple[int, int]:
    """The messages kept around the anchor within `budget` bytes (each costs its JSON and a comma),
    as OpenClaw caps a `messageId` page: the anchor alone when it does not fit, else it grows an
    older and then a newer message at a time, each side until the next does not fit."""
    cost = sizes[anchor] + 1
    if cost > budget:
        return anchor, anchor + 1
    start, end = anchor, anchor + 1
    grow_older, grow_newer = start > 0, end < len(sizes)
    while grow_older or grow_newer:
        if grow_older:
            if cost + sizes[start - 1] + 1 <= budget:
                start -= 1
                cost += sizes[start] + 1
            else:
                grow_older = False
        grow_older = grow_older and start > 0
        if grow_newer:
            if cost + sizes[end] + 1 <= budget:
                cost += sizes[end] + 1
                end += 1
            else:
                grow_newer = False
        grow_newer = grow_newer and end < len(sizes)
    return start, end


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


def chat_history(
    ctx: Context, params: dict[str, Any], *, with_session: bool = True, cap_messages: bool = True
) -> dict[str, Any]:
    """`chat.history`'s answer; `with_session=False` leaves out `defaults` and `sessionInfo`,
    `cap_messages=False` keeps messages over OpenClaw's single-message cap as they are
    (`sessions.get`, which has no such cap)."""
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
    message_id = params.get("messageId")
    max_chars = params.get("maxChars", DEFAULT_MAX_CHARS)
    budget = min(params.get("maxBytes", MAX_HISTORY_BYTES), MAX_HISTORY_BYTES)
    total = 0
    session_id = None
    messages: list[dict[str, Any]] = []
    sizes: list[int] = []
    page_len = 0
    anchor: int | None = None
    probe = None
    try:
        with open_export(ctx, key, agent=agent, store=None, branch="active") as source:
            session_id = source.session_id
            if "sessionId" in params and params["sessionId"] != session_id:
                # OpenClaw reads an earlier window of the key by its id; we keep no such read
                raise UsageError("sessionId does not belong to sessionKey")
            probe = source.probe
            cache_key = (source.store_path, source.key, source.version, limit, offset, max_chars, message_id)
            cached = _PAGES.get(cache_key) if source.version is not None else None
            if cached is None:
                if message_id is None:
                    cached = _read_page(source, limit, offset, max_chars)
                else:
                    cached = _read_around(source, message_id, limit, max_chars) or ([], -1, 0, [])
                if source.version is not None:
                    _PAGES.put(cache_key, cached, sum(cached[3]))
            if message_id is None:
                messages, page_len, total, sizes = cached
            else:
                messages, anchor, total, sizes = cached
    except NotFoundError:
        pass
    # a message over OpenClaw's single-message cap is replaced (the cached page stays as read)
    clocked = False
    if cap_messages:
        messages, sizes, clocked = _replace_oversized(messages, sizes, ctx.now_ms())
    out: dict[str, Any] = {"sessionKey": key}
    if session_id:
        out["sessionId"] = session_id
    if message_id is not None:  # around the message, held to the budget; no offsets (as OpenClaw)
        if anchor is not None and anchor >= 0 and messages:
            first, last = _around_bytes(sizes, anchor, budget - 1)
            out["messages"] = [dict(m) for m in messages[first:last]]
        else:
            out["messages"] = []
        out["pendingInputs"] = {"items": [], "total": 0}
    else:
        dropped = _within_bytes(sizes, budget)
        messages = [dict(m) for m in messages[dropped:]]
        if dropped:  # continued from the oldest message kept (OpenClaw: total - its seq + 1)
            next_offset = max(offset + 1, total - messages[0]["__openclaw"]["seq"] + 1)
            has_more = next_offset < total
        else:
            next_offset = offset + page_len
            has_more = total - offset - page_len > 0
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
    if session is None:
        out["sessionInfo"] = _unstored_row(ctx, key, agent)
    else:
        out["sessionInfo"] = session
        if probe is not None and session.get("sessionId") == session_id and not clocked:
            # the same answer while the row and transcript are unchanged; `snapshotAt` is the clock's
            now_fields = (("sessionInfo", "snapshotAt"),) if "snapshotAt" in session else ()
            ctx.reuse = Reuse(probe, now_fields)
    return out


def _unstored_row(ctx: Context, key: str, agent: str | None) -> dict[str, Any]:
    """The row OpenClaw 2026.9.6 makes up for a key nothing stores (recorded: `chat.history` of
    `agent:main:nope`): the listing's row of an empty entry, without `visibility` or `sessionId`,
    `updatedAt` null. Clients render the empty chat with it instead of special-casing a miss."""
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.ops.session_keys import owner_agent
    from openclaw_cli.ops.session_views import _defaults, gateway_row

    agent_id = owner_agent(ctx, key, agent, None) or default_agent_id(ctx.config)
    row = gateway_row(ctx, key, {}, agent_id=agent_id, now=ctx.now_ms(), defaults=_defaults(ctx, agent_id))
    row.pop("visibility", None)
    if row.get("sessionId") is None:
        row.pop("sessionId", None)
    return row


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
        updated_ms = _ms((node.line.obj or {}).get("timestamp"))
        updated = None if updated_ms is None else clock.iso_ms(updated_ms)
        if updated:
            branch["updatedAt"] = updated
        branch["active"] = node.id == tree.leaf_id
        branches.append(branch)
    return {"branches": branches}
