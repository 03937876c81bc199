"""OpenClaw's session lifecycle rules as a reference model (compaction-lifecycle.md §3, profile L;
spec D1): what `initSessionState` decides for one inbound turn, the freshness it judges by and the
row a rollover writes. openclaw-cli runs no agents, so nothing in the package decides turns; the
tests hold these rules (and the reset row the package does write, `openclaw_cli.lifecycle`) to the
spec. Moved here from `openclaw_cli/lifecycle.py` (issue 24: test-only code leaves the package).

* `evaluate_freshness(entry, policy, now_ms)` — §3.5: daily reset at `atHour` (local time) and
  idle expiry, whichever boundary comes first; daily freshness reads `sessionStartedAt`, idle
  freshness `lastInteractionAt`, so heartbeat/cron/exec writes never extend a session.
* `resolve_session(key, now_ms, entry=…, turn=…, policy=…)` — §3.2: reuse the stored session or
  roll over (reset triggers, soft reset, system events, resume, terminal recovery, deferred
  rollover), and the row to write.
* `rollover_entry` — the row a rollover writes (§3.2 steps 14–16).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import Any

from openclaw_cli.keys import parse_agent_key, reset_type
from openclaw_cli.lifecycle import (
    _AUTH_OVERRIDE,
    _MODEL_OVERRIDE,
    _new_session_fields,
    _usage_family,
    _user_auth_override,
    _user_model_override,
)

DEFAULT_RESET_TRIGGERS = ("/new", "/reset")
SYSTEM_EVENT_PROVIDERS = frozenset({"heartbeat", "cron-event", "exec-event"})
TERMINAL_STATUSES = frozenset({"failed", "timeout", "killed"})

# ---- freshness (§3.5) ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Freshness:
    fresh: bool
    stale_reason: str | None = None  # "daily" | "idle"
    daily_reset_at: int | None = None  # ms of the last daily boundary (mode daily)
    idle_expires_at: int | None = None  # ms after which the session is idle-stale


def _policy_value(policy: Any, *names: str) -> Any:
    for name in names:
        if isinstance(policy, Mapping):
            if name in policy:
                return policy[name]
        elif hasattr(policy, name):
            return getattr(policy, name)
    return None


def _timestamp(value: Any, now_ms: int) -> float | None:
    """A usable epoch-ms timestamp: finite, not negative, not in the future (step 2)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")) or value < 0 or value > now_ms:
        return None
    return float(value)


def daily_boundary(now_ms: int, at_hour: int, tz: tzinfo | None = None) -> int:
    """Today at `at_hour`:00:00.000 in `tz` (local time by default); the same hour yesterday when
    `now` is before it. DST-safe: the calendar day moves, not 24 hours."""
    now = (
        datetime.fromtimestamp(now_ms / 1000, tz=tz)
        if tz is not None
        else datetime.fromtimestamp(now_ms / 1000)
    )
    boundary = now.replace(hour=at_hour, minute=0, second=0, microsecond=0)
    if boundary > now:
        day = boundary.date() - timedelta(days=1)
        boundary = boundary.replace(year=day.year, month=day.month, day=day.day)
    return int(round(boundary.timestamp() * 1000))


def evaluate_freshness(
    entry: Mapping[str, Any] | None, policy: Any, now_ms: int, *, tz: tzinfo | None = None
) -> Freshness:
    """Is the stored session still fresh under `policy` at `now_ms` (§3.5, profile L)?

    `policy` has `mode` (`daily` | `idle`; `manual`/`none` never expire), `at_hour` / `atHour`
    (0–23) and `idle_minutes` / `idleMinutes` (None or 0: no idle expiry) — a
    `config.ResetSettings` or a plain mapping. Idle expiry applies in any time-based mode, so
    daily + idle combine; when both boundaries passed, the earlier one is the reason."""
    entry = entry if isinstance(entry, Mapping) else {}
    mode = _policy_value(policy, "mode") or "daily"
    if mode in ("manual", "none"):
        return Freshness(True)
    updated = _timestamp(entry.get("updatedAt"), now_ms) or 0.0
    started = _timestamp(entry.get("sessionStartedAt"), now_ms)
    started = started if started is not None else updated
    last = _timestamp(entry.get("lastInteractionAt"), now_ms)
    last = last if last is not None else started
    daily_at = None
    if mode == "daily":
        raw_hour = _policy_value(policy, "at_hour", "atHour")
        hour = int(raw_hour) if isinstance(raw_hour, int | float) and not isinstance(raw_hour, bool) else 4
        daily_at = daily_boundary(now_ms, min(23, max(0, hour)), tz)
    idle_minutes = _policy_value(policy, "idle_minutes", "idleMinutes")
    idle_at = None
    if isinstance(idle_minutes, int | float) and not isinstance(idle_minutes, bool) and idle_minutes > 0:
        idle_at = int(last + int(idle_minutes) * 60_000)
    stale_daily = daily_at is not None and started < daily_at
    stale_idle = idle_at is not None and now_ms > idle_at
    reason = None
    if stale_daily and stale_idle:
        reason = "daily" if daily_at <= idle_at else "idle"  # type: ignore[operator]
    elif stale_daily:
        reason = "daily"
    elif stale_idle:
        reason = "idle"
    return Freshness(reason is None, reason, daily_at, idle_at)


# ---- rows after a rollover or reset (§3.2 steps 14–16) ----------------------------------------------------

# Carried over on every rollover (explicit or daily/idle): user choices.
CARRY_ALWAYS = ("thinkingLevel", "verboseLevel", "traceLevel", "reasoningLevel", "ttsAuto", "responseUsage")
# Carried over only on an explicit `/new` / `/reset`.
CARRY_EXPLICIT = (
    "label",
    "spawnedBy",
    "spawnedWorkspaceDir",
    "spawnedCwd",
    "parentSessionKey",
    "forkedFromParent",
    "spawnDepth",
    "subagentRole",
    "subagentControlScope",
    "displayName",
)


def rollover_entry(
    old: Mapping[str, Any] | None,
    *,
    session_key: str,
    new_session_id: str,
    now_ms: int,
    explicit: bool,
    system_event: bool = False,
    lifecycle_revision: str | None = None,
) -> dict[str, Any]:
    """The row of a new session replacing `old` during an inbound turn (§3.2 steps 14–16): the
    user's choices carried over (plus label, spawn lineage and display name on an explicit
    `/new` / `/reset`), counters zeroed, `lastInteractionAt = now` unless a system event."""
    old = old if isinstance(old, Mapping) else {}
    out: dict[str, Any] = {}
    for name in (*CARRY_ALWAYS, *(CARRY_EXPLICIT if explicit else ())):
        if old.get(name) is not None:
            out[name] = old[name]
    if _user_model_override(old):
        out.update({k: old[k] for k in _MODEL_OVERRIDE if old.get(k) is not None})
    if _user_auth_override(old):
        out.update({k: old[k] for k in _AUTH_OVERRIDE if old.get(k) is not None})
    out.update(_new_session_fields(now_ms, new_session_id, lifecycle_revision))
    if not system_event:
        out["lastInteractionAt"] = now_ms
    out["chatType"] = old.get("chatType") if isinstance(old.get("chatType"), str) else "direct"
    if old:
        out.update(_usage_family(old, session_key, new_session_id))
    return out


# ---- one inbound turn (§3.2) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class InboundTurn:
    """What `initSessionState` reads from one inbound message (only what the decision uses)."""

    body: str = ""  # BodyForCommands ?? CommandBody ?? RawBody ?? Body
    provider: str | None = None  # `heartbeat` / `cron-event` / `exec-event` mark system events
    chat_type: str | None = None  # direct | group | channel | room
    channel: str | None = None  # for `session.resetByChannel`
    thread_context: bool = False  # thread id / label / starter body / parent key present
    thread_label: str | None = None
    parent_session_key: str | None = None
    authorized: bool = True  # sender may use reset triggers
    requested_session_id: str | None = None
    resume_requested: bool = False
    active_run_session_id: str | None = None  # a reply run for this key is active on this id


@dataclass
class Resolution:
    session_key: str
    session_id: str
    entry: dict[str, Any]  # the row to store
    previous_entry: dict[str, Any] | None
    is_new_session: bool
    reset_triggered: bool
    system_event: bool
    body_stripped: str | None
    end_reason: str | None  # reset | new | daily | idle (when a previous session ends)
    freshness: Freshness | None
    soft_reset: bool = False
    reused_because: str | None = (
        None  # fresh | system-event | resume | soft-reset | terminal-recovery | active-run
    )
    fork_from_parent: str | None = None  # parent key to fork from (step 17; the caller performs it)
    notes: list[str] = field(default_factory=list)


_STRUCTURAL_PREFIX = re.compile(r"^(?:\[[^\]\n]{1,64}\]\s*)+")
_SOFT_RESET = re.compile(r"^/reset\s+soft(?:\s|$)", re.IGNORECASE)


def _command_text(body: str) -> str:
    return _STRUCTURAL_PREFIX.sub("", body or "").strip()


def match_reset_trigger(
    body: str, triggers: tuple[str, ...] = DEFAULT_RESET_TRIGGERS
) -> tuple[str | None, str | None, bool]:
    """(trigger, bodyStripped, soft) of a message text (steps 3–4). Triggers compare
    case-insensitively; the payload keeps its case; `/reset soft …` is a soft reset (no trigger)."""
    text = _command_text(body)
    if _SOFT_RESET.match(text):
        return None, None, True
    lowered = text.lower()
    for trigger in triggers:
        t = trigger.strip().lower()
        if not t:
            continue
        if lowered == t:
            return trigger, "", False
        if lowered.startswith(t + " "):
            return trigger, text[len(t) + 1 :].lstrip(), False
    return None, None, False


def _reusable(entry: Mapping[str, Any] | None) -> bool:
    if not isinstance(entry, Mapping):
        return False
    sid, updated = entry.get("sessionId"), entry.get("updatedAt")
    return (
        isinstance(sid, str)
        and bool(sid.strip())
        and isinstance(updated, int | float)
        and not isinstance(updated, bool)
        and updated == updated
        and abs(updated) != float("inf")
    )


def _provider_cli_binding(entry: Mapping[str, Any]) -> bool:
    provider = entry.get("providerOverride") or entry.get("modelProvider")
    bindings = entry.get("cliSessionBindings")
    if not isinstance(bindings, Mapping):
        bindings = entry.get("cliSessionIds")
    return isinstance(provider, str) and isinstance(bindings, Mapping) and bindings.get(provider) is not None


def resolve_session(
    key: str,
    now_ms: int,
    *,
    entry: Mapping[str, Any] | None,
    turn: InboundTurn | None = None,
    policy: Any = None,
    triggers: tuple[str, ...] = DEFAULT_RESET_TRIGGERS,
    new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    tz: tzinfo | None = None,
) -> Resolution:
    """Decide one inbound turn of session `key` against its stored `entry` (OpenClaw's
    `initSessionState`, §3.2, profile L): reuse it or roll over to a new session id.

    `policy` is a reset policy (`config.ResetSettings` or mapping, see `evaluate_freshness`) or a
    callable `(reset_type, channel) -> policy` (`config.reset_settings` bound to a config); None
    means the default (daily at 4:00). Pure: the caller loads `entry`, stores `Resolution.entry`,
    archives the previous transcript on a rollover and performs the parent fork it names."""
    turn = turn or InboundTurn()
    key = key.strip()
    system_event = (turn.provider or "").strip().lower() in SYSTEM_EVENT_PROVIDERS
    trigger = stripped = None
    soft = False
    if turn.authorized and not system_event:
        trigger, stripped, soft = match_reset_trigger(turn.body, triggers)
    reset_triggered = trigger is not None
    kind = reset_type(key, chat_type=turn.chat_type, thread_context=turn.thread_context)
    resolved_policy = policy(kind, turn.channel) if callable(policy) else policy
    if resolved_policy is None:
        resolved_policy = {"mode": "daily", "atHour": 4}
    reusable = _reusable(entry)
    current: dict[str, Any] = dict(entry) if isinstance(entry, Mapping) else {}
    freshness: Freshness | None = None
    fresh = False
    if reusable:
        configured = bool(_policy_value(resolved_policy, "configured"))
        if _provider_cli_binding(current) and not configured:
            fresh = True  # a provider-owned CLI session decides its own lifetime
        else:
            freshness = evaluate_freshness(current, resolved_policy, now_ms, tz=tz)
            fresh = freshness.fresh
    acp = (parse_agent_key(key) or ("", key))[1].lower().startswith("acp:")
    soft = soft and not acp
    reason: str | None = None
    if reusable and system_event:
        reason = "system-event"
    elif reusable and turn.resume_requested and turn.requested_session_id == current.get("sessionId"):
        reason = "resume"
    elif reusable and not reset_triggered and fresh:
        reason = "terminal-recovery" if current.get("status") in TERMINAL_STATUSES else "fresh"
    elif reusable and soft:
        reason = "soft-reset"
    elif (
        reusable
        and not reset_triggered
        and freshness is not None
        and not freshness.fresh
        and turn.active_run_session_id is not None
        and turn.active_run_session_id == current.get("sessionId")
    ):
        reason = "active-run"  # never roll a transcript over under an active writer (step 10)
    if reason is not None:
        out = current
        out["updatedAt"] = (
            max(now_ms, out.get("updatedAt") or 0)
            if isinstance(out.get("updatedAt"), int | float)
            else now_ms
        )
        if not system_event:
            out["lastInteractionAt"] = now_ms
        if reason == "terminal-recovery":
            for name in ("status", "startedAt", "endedAt", "runtimeMs", "abortedLastRun"):
                out.pop(name, None)
        if not isinstance(out.get("chatType"), str):
            out["chatType"] = "direct"
        if turn.thread_label:
            out["displayName"] = turn.thread_label
        result = Resolution(
            key,
            out["sessionId"],
            out,
            None,
            False,
            False,
            system_event,
            stripped if reset_triggered else turn.body,
            None,
            freshness,
            soft,
            reason,
        )
    else:
        previous = dict(current) if current else None
        if reset_triggered:
            end_reason = "reset" if trigger.strip().lower() == "/reset" else "new"  # type: ignore[union-attr]
        else:
            end_reason = freshness.stale_reason if freshness is not None else None
        new_session_id = new_id()
        out = rollover_entry(
            current or None,
            session_key=key,
            new_session_id=new_session_id,
            now_ms=now_ms,
            explicit=reset_triggered,
            system_event=system_event,
        )
        if turn.chat_type:
            out["chatType"] = turn.chat_type
        if turn.thread_label:
            out["displayName"] = turn.thread_label
        result = Resolution(
            key,
            new_session_id,
            out,
            previous,
            True,
            reset_triggered,
            system_event,
            stripped if reset_triggered else turn.body,
            end_reason if previous else None,
            freshness,
            soft,
        )
    parent = turn.parent_session_key.strip() if isinstance(turn.parent_session_key, str) else ""
    if parent and parent != key and result.entry.get("forkedFromParent") is not True:
        result.fork_from_parent = parent
    return result


# ---- keys the lifecycle commands accept ------------------------------------------------------------------
