"""What OpenClaw's Control UI asks before it renders a session (issue 25): `chat.startup` (the
first history page; OpenClaw 2026.9.6 answers it with exactly `chat.history`'s document, recorded:
tests/fixtures/gateway-2026.9.6-control-ui/startup-1.jsonl) and the live message stream of a
session (`sessions.messages.subscribe` / `unsubscribe`). Our Gateway runs no agent, so a stream
carries no live messages and no approvals: the subscription is acknowledged as OpenClaw does,
and the session's changes still reach the client as `sessions.changed`."""

from __future__ import annotations

from typing import Any

from openclaw_cli.errors import NotFoundError
from openclaw_cli.ops.context import Context


def chat_startup(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`chat.startup`: a session's first history page (`chat.history`'s answer). A short chat link
    (`shortId`) names a link OpenClaw's chat sharing made; we keep none."""
    if "shortId" in params:
        raise NotFoundError(f"chat link not found: {params['shortId']}")
    from openclaw_cli.ops.history import chat_history

    return chat_history(ctx, params)


def messages_subscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"subscribed": True, "key": params["key"]}
    if params.get("includeApprovals") is True:
        out["approvalReplay"] = {
            "sessionKey": params["key"],
            "updatedAtMs": ctx.now_ms(),
            "approvals": [],
            "truncated": False,
        }
    return out


def messages_unsubscribe(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    return {"subscribed": False, "key": params["key"]}
