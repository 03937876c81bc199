"""The session rows an operator reset writes, and the key text every lifecycle command accepts
(compaction-lifecycle.md §3, spec D1), as pure functions.

* `reset_entry` — the row an operator reset (`sessions.reset`) writes: a new session id and
  lifecycle revision, counters zeroed, the conversation's description kept.
* `check_session_key` — the key text every lifecycle command accepts.

Nothing here does I/O; times are epoch milliseconds. OpenClaw's turn-by-turn rules (freshness,
`initSessionState`, rollover) are a reference model in the tests (`tests/lifecycle_reference.py`):
openclaw-cli runs no agents.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from openclaw_cli.errors import UsageError
from openclaw_cli.keys import parse_agent_key

__all__ = ["MAX_KEY_LENGTH", "PARENT_FORK_MAX_TOKENS", "RESET_CLEARED", "check_session_key", "reset_entry"]

PARENT_FORK_MAX_TOKENS = 100_000  # fixed (R3.7.2; `session.parentForkMaxTokens` is retired)
MAX_KEY_LENGTH = 1024

_MODEL_OVERRIDE = (
    "providerOverride",
    "modelOverride",
    "modelOverrideSource",
    "modelOverrideRouteResolution",
    "agentRuntimeOverride",
)
_AUTH_OVERRIDE = ("authProfileOverride", "authProfileOverrideSource", "authProfileOverrideCompactionCount")
# Cleared by a new session (step 16) — the runtime state of the old one, and what points at its
# transcript (the new session starts its own).
RESET_CLEARED = (
    "memoryFlushAt",
    "memoryFlushCompactionCount",
    "memoryFlushContextHash",
    "memoryFlush",
    "modelProvider",
    "model",
    "fallbackNotice",
    "fallbackNoticeAt",
    "fallbackNotices",
    "systemPromptReport",
    "startedAt",
    "endedAt",
    "runtimeMs",
    "status",
    "estimatedCostUsd",
    "cacheRead",
    "cacheWrite",
    "contextTokens",
    "contextBudgetStatus",
    "goal",
    "skillsSnapshot",
    "totalTokensVersion",
    "lastInteractionAt",
    "sessionFile",
    "compactionCheckpoints",
    "cliSessionIds",
    "cliSessionBindings",
    "claudeCliSessionId",
)


def _user_model_override(entry: Mapping[str, Any]) -> bool:
    """User/explicit model selections survive a rollover; automatic fallback ones do not."""
    source = entry.get("modelOverrideSource")
    return not (isinstance(source, str) and source.strip().lower() in ("auto", "fallback", "auto-fallback"))


def _user_auth_override(entry: Mapping[str, Any]) -> bool:
    source = entry.get("authProfileOverrideSource")
    return source is None or source == "user"


def _usage_family(old: Mapping[str, Any], key: str, new_id: str) -> dict[str, Any]:
    family = old.get("usageFamilyKey")
    ids: list[str] = []
    previous = old.get("usageFamilySessionIds")
    for sid in [*(previous if isinstance(previous, list) else []), old.get("sessionId"), new_id]:
        if isinstance(sid, str) and sid and sid not in ids:
            ids.append(sid)
    return {
        "usageFamilyKey": family if isinstance(family, str) and family else key,
        "usageFamilySessionIds": ids,
    }


def _new_session_fields(now_ms: int, new_id: str, lifecycle_revision: str | None) -> dict[str, Any]:
    return {
        "sessionId": new_id,
        "lifecycleRevision": lifecycle_revision or str(uuid.uuid4()),
        "updatedAt": now_ms,
        "sessionStartedAt": now_ms,
        "systemSent": False,
        "abortedLastRun": False,
        "compactionCount": 0,
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
        "totalTokensFresh": True,
    }


def reset_entry(
    old: Mapping[str, Any],
    *,
    session_key: str,
    new_session_id: str,
    now_ms: int,
    lifecycle_revision: str | None = None,
) -> dict[str, Any]:
    """The row after an operator reset (`sessions.reset`, `openclaw sessions reset`): an explicit
    rollover that keeps what describes the conversation (route, chat metadata, label, pin,
    archive state, unknown fields) and clears what belonged to the old session's run (step 16),
    including the pointer to its transcript. Automatic fallback model/auth overrides are dropped."""
    out = {k: v for k, v in old.items() if k not in RESET_CLEARED}
    if not _user_model_override(old):
        for name in _MODEL_OVERRIDE:
            out.pop(name, None)
    if not _user_auth_override(old):
        for name in _AUTH_OVERRIDE:
            out.pop(name, None)
    out.update(_new_session_fields(now_ms, new_session_id, lifecycle_revision))
    out.update(_usage_family(old, session_key, new_session_id))
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_session_key(key: Any, *, what: str = "session key", new: bool = False) -> str:
    """The trimmed key, or a UsageError for blank keys, control characters and over-long text.
    A key that names a new session (`new`) must also be a well-formed agent key (or a bare key)
    without path-like segments: keys never become paths here, but a `../x` key is never what an
    operator means."""
    if not isinstance(key, str) or not key.strip():
        raise UsageError(
            f"The {what} must not be blank. Run openclaw sessions list --json to choose a valid key."
        )
    value = key.strip()
    if _CONTROL.search(value):
        raise UsageError(
            f"Invalid {what} {value.encode('unicode_escape').decode('ascii')!r}: control characters "
            "are not allowed."
        )
    if len(value) > MAX_KEY_LENGTH:
        raise UsageError(f"Invalid {what}: longer than {MAX_KEY_LENGTH} characters.")
    if new:
        parts = value.split(":")
        if (
            value.lower().startswith("agent:")
            and parse_agent_key(value) is None
            or "" in parts[1:]
            or any(p.strip() in (".", "..") or "/" in p or "\\" in p for p in parts)
        ):
            raise UsageError(
                f"Invalid {what} {value!r}: use an agent key such as agent:main:dashboard:notes "
                "(no empty, '.', '..' or path segments)."
            )
    return value
