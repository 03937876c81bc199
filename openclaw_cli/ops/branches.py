"""`sessions.fork` and `sessions.branches.switch` (issue 25), as OpenClaw 2026.9.6's Gateway answers
them (recorded: tests/fixtures/gateway-2026.9.6-issue25/writes-5.jsonl and the peer test):

* `sessions.fork {sessionKey, entryId, agentId?}`: a new `agent:<id>:dashboard:<uuid>` session
  holding the parent's active path before that user message; `{sessionKey, editorText?}`;
* `sessions.branches.switch {sessionKey, leafEntryId, agentId?}`: the session continues on the
  branch ending at that tip, under a new sessionId; `{}`.

The planning (which lines, which row) is `store.message_cut`; the stores write it
(`fork_session(at_entry=…)`, `switch_branch`). Neither ever changes a line of the session it reads.
"""

from __future__ import annotations

import uuid
from typing import Any

from openclaw_cli.errors import PreconditionError, SessionBusyError
from openclaw_cli.ops.context import Context

_BUSY = "{} is unavailable while the agent is working."


def _located(ctx: Context, params: dict[str, Any]) -> Any:
    from openclaw_cli.ops.session_keys import locate

    key = params["sessionKey"].strip()
    agent = params.get("agentId")
    loc = locate(ctx, key, agent=agent, store=params.get("store"), read_only=False)
    if loc.entry is None or not loc.entry.get("sessionId"):
        loc.store.close()
        raise PreconditionError(f"session not found: {key}")
    return loc


def sessions_fork(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.lifecycle import PARENT_FORK_MAX_TOKENS
    from openclaw_cli.ops.lifecycle import _writer
    from openclaw_cli.store.message_cut import forked_entry

    entry_id = params["entryId"].strip()
    now = ctx.now_ms()
    loc = _located(ctx, params)
    with loc.store as st:
        child_key = f"agent:{loc.agent_id}:dashboard:{uuid.uuid4()}"

        def build(seed: dict[str, Any], plan: Any) -> dict[str, Any]:
            return forked_entry(
                loc.entry,
                parent_key=loc.key,
                child_session_id=seed["sessionId"],
                entry_id=entry_id,
                now_ms=now,
            )

        try:
            with _writer(ctx, st):
                outcome = st.fork_session(
                    loc.key,
                    child_key,
                    build,
                    lock_settings=ctx.lock_settings(),
                    now_ms=now,
                    max_tokens=PARENT_FORK_MAX_TOKENS,
                    at_entry=entry_id,
                )
        except SessionBusyError as busy:
            if busy.code == "OPENCLAW_SESSION_ACTIVE":  # the parent's transcript is being written
                raise SessionBusyError(_BUSY.format("Fork"), code=busy.code) from None
            raise
    out: dict[str, Any] = {"sessionKey": child_key}
    if outcome.plan.editor_text:
        out["editorText"] = outcome.plan.editor_text
    return out


def sessions_branches_switch(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.lifecycle import _writer
    from openclaw_cli.store.message_cut import switched_entry

    leaf_id = params["leafEntryId"].strip()
    now = ctx.now_ms()
    loc = _located(ctx, params)
    with loc.store as st:
        if loc.entry.get("archivedAt") is not None:
            raise PreconditionError("Branch switch is unavailable for archived sessions.")

        def build(current: dict[str, Any], session_id: str) -> dict[str, Any]:
            if current.get("archivedAt") is not None:  # archived since it was read
                raise PreconditionError("Branch switch is unavailable for archived sessions.")
            return switched_entry(current, session_id=session_id, now_ms=now)

        with _writer(ctx, st):
            st.switch_branch(loc.key, leaf_id, build, lock_settings=ctx.lock_settings(), now_ms=now)
    return {}
