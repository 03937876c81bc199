"""Entry maintenance that archives in place (releases 2026.9.6 and 2026.9.9; `maintenance.md`
Appendix A G3, `observed-openclaw-2026.9.6.md` §7, confirmed against the installed 2026.9.6).

Stages, forced (a cleanup), on the store left after the explicit repairs:
1. model-run probes older than 24 h are deleted, only when the *unarchived* rows exceed maxEntries;
2. `dashboard:` rows inactive for `archiveDashboardAfter` are archived (`stale-dashboard`);
3. rows older than `pruneAfter` (by `updatedAt`): synthetic ones deleted (`prune-stale`), the others
   archived (`age-retention`);
4. the cap: unarchived rows beyond maxEntries, oldest activity first among the unprotected ones;
   synthetic ones deleted (`cap-overflow`), the others archived (`active-session-cap`). No floor:
   protected rows alone may keep the store above the cap.

A row is left alone by every stage when it is archived already, pinned (and pinnable), locked to
its model, running, named by `--active-key` or live work, active within `preserveRecent`, or
protected: a non-synthetic primary key, thread, external delivery route (DMs included), `direct:`
peer, external group/channel, Telegram topic, `delivery.kind: external`, or a group/channel/thread
chat. Activity is the newest of lastInteractionAt, lastActivityAt, sessionStartedAt, updatedAt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.keys import is_model_run_probe_key, is_synthetic_key, parse_agent_key, parse_thread

REASON_DASHBOARD = "stale-dashboard"
REASON_AGE = "age-retention"
REASON_CAP = "active-session-cap"
ACTION_ARCHIVE_DASHBOARD = "archive-dashboard"
ACTION_ARCHIVE_AGE = "archive-age"
ACTION_ARCHIVE_CAP = "archive-cap"
ARCHIVE_ACTIONS = {
    REASON_DASHBOARD: ACTION_ARCHIVE_DASHBOARD,
    REASON_AGE: ACTION_ARCHIVE_AGE,
    REASON_CAP: ACTION_ARCHIVE_CAP,
}

_DELIVERY_PEER_KINDS = frozenset({"channel", "direct", "dm", "group"})
_DIRECT_PEER = re.compile(r"^direct:.+$")
_EXTERNAL_GROUP = re.compile(r"^[^:]+:(?:group|channel):.+$")
_TELEGRAM_DM_TOPIC = re.compile(r"^telegram:(?:direct|dm):.+:topic:[^:]+$")


def _rest(key: str) -> str | None:
    parsed = parse_agent_key(key)
    return parsed[1].lower() if parsed else None


def is_disposable(key: str) -> bool:
    """Synthetic runtime rows (deleted, never archived): §3.2 keys and model-run probes."""
    return is_synthetic_key(key) or is_model_run_probe_key(key)


def is_delivery_route(key: str) -> bool:
    """A complete external delivery shape: `<channel>:<account>:direct|dm:<peer>` or
    `<channel>:channel|direct|dm|group:<peer>` (a thread suffix set aside)."""
    thread = parse_thread(key)
    rest = _rest(thread[0] if thread else key)
    if rest is None:
        return False
    parts = rest.split(":")
    if parts[0] == "agent" or len(parts) < 3 or not parts[0].strip():
        return False
    if len(parts) >= 4 and parts[2] in ("direct", "dm"):
        return bool(parts[1].strip() and parts[3].strip() and ":".join(parts[3:]).strip())
    return parts[1] in _DELIVERY_PEER_KINDS and bool(parts[2].strip() and ":".join(parts[2:]).strip())


def _chat_type(entry: Mapping[str, Any]) -> str:
    chat = entry.get("chatType")
    if chat is None:
        origin = entry.get("origin")
        chat = origin.get("chatType") if isinstance(origin, Mapping) else None
    return chat.strip().lower() if isinstance(chat, str) else ""


def is_protected(key: str, entry: Mapping[str, Any]) -> bool:
    """The observed 9.6 protected set (never a synthetic key)."""
    if is_disposable(key):
        return False
    lowered = key.strip().lower()
    rest = _rest(key)
    if lowered == "global" or rest == "main":
        return True
    if parse_thread(key):
        return True
    delivery = entry.get("delivery")
    if isinstance(delivery, Mapping) and delivery.get("kind") == "external":
        return True
    shape = rest if rest is not None else lowered
    if (
        is_delivery_route(key)
        or _DIRECT_PEER.match(shape)
        or _EXTERNAL_GROUP.match(shape)
        or _TELEGRAM_DM_TOPIC.match(shape)
    ):
        return True
    return _chat_type(entry) in ("group", "channel", "thread")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0.0
    return float(value)


def activity_at(entry: Mapping[str, Any]) -> float:
    return max(
        0.0,
        *(
            _number(entry.get(name))
            for name in ("lastInteractionAt", "lastActivityAt", "sessionStartedAt", "updatedAt")
        ),
    )


def is_pinnable(key: str, entry: Mapping[str, Any]) -> bool:
    """9.6: not a sub-agent run (key or `spawnedBy`), and no parent or the agent's main key as parent."""
    rest = _rest(key)
    if key.strip().lower().startswith("subagent:") or (rest or "").startswith("subagent:"):
        return False
    spawned = entry.get("spawnedBy")
    if isinstance(spawned, str) and spawned.strip():
        return False
    parent = entry.get("parentSessionKey")
    if not isinstance(parent, str) or not parent.strip():
        return True
    parsed = parse_agent_key(key)
    return parsed is not None and parent.strip() == f"agent:{parsed[0]}:main"


@dataclass
class Guard:
    """Who no stage touches (see the module docstring). `preserve_keys` are compared as given and
    trimmed/lower-cased; `preserve_session_ids` are sessions held by live work."""

    preserve_keys: frozenset[str]
    preserve_session_ids: frozenset[str]
    preserve_recent_ms: int | None
    now_ms: float

    def preserved(self, key: str, entry: Mapping[str, Any], archived: bool) -> bool:
        if archived:
            return True
        if "pinnedAt" in entry and entry.get("pinnedAt") is not None and is_pinnable(key, entry):
            return True
        if entry.get("modelSelectionLocked") is True or entry.get("status") == "running":
            return True
        if key in self.preserve_keys or key.strip().lower() in self.preserve_keys:
            return True
        sid = entry.get("sessionId")
        if isinstance(sid, str) and sid in self.preserve_session_ids:
            return True
        if self.preserve_recent_ms is not None and not is_disposable(key):
            activity = activity_at(entry)
            if activity > 0 and self.now_ms - activity <= self.preserve_recent_ms:
                return True
        return is_protected(key, entry)


@dataclass
class ArchivingResult:
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (key, action) in stage order
    archived: dict[str, str] = field(default_factory=dict)  # key -> archiveReason, in stage order
    model_run_pruned: int = 0
    archived_count: int = 0  # dashboard + age archives (the JSON's `archived`)
    cap_archived: int = 0
    pruned: int = 0  # stale rows deleted
    capped: int = 0  # cap victims: archived + deleted


def plan_archiving(
    store: Mapping[str, Any],
    *,
    guard: Guard,
    prune_after_ms: int | None,
    max_entries: int | None,
    dashboard_after_ms: int | None,
    model_run_after_ms: int | None,
) -> ArchivingResult:
    """The four stages over `store` (key -> entry, store order); nothing is mutated."""
    now = guard.now_ms
    out = ArchivingResult()
    live = dict(store)
    archived = {k for k, e in live.items() if isinstance(e, Mapping) and "archivedAt" in e}

    def entry_of(key: str) -> Mapping[str, Any]:
        value = live[key]
        return value if isinstance(value, Mapping) else {}

    def free(key: str) -> bool:
        return not guard.preserved(key, entry_of(key), key in archived)

    def delete(key: str, action: str) -> None:
        del live[key]
        out.deleted.append((key, action))

    def archive(key: str, reason: str) -> None:
        archived.add(key)
        out.archived[key] = reason

    cap = (
        max_entries
        if isinstance(max_entries, int) and not isinstance(max_entries, bool) and max_entries > 0
        else None
    )
    unarchived = len(live) - len(archived)
    if cap is not None and unarchived > cap and model_run_after_ms and model_run_after_ms > 0:
        cutoff = now - model_run_after_ms
        for key in [k for k in live if is_model_run_probe_key(k) and free(k)]:
            updated = entry_of(key).get("updatedAt")
            if isinstance(updated, int | float) and not isinstance(updated, bool) and updated < cutoff:
                delete(key, "prune-model-run")
                out.model_run_pruned += 1
    if dashboard_after_ms and dashboard_after_ms > 0:
        cutoff = now - dashboard_after_ms
        for key in list(live):
            if not (_rest(key) or "").startswith("dashboard:") or not free(key):
                continue
            activity = activity_at(entry_of(key))
            if 0 < activity < cutoff:
                archive(key, REASON_DASHBOARD)
                out.archived_count += 1
    if prune_after_ms and prune_after_ms > 0:
        cutoff = now - prune_after_ms
        for key in list(live):
            if not free(key):
                continue
            updated = entry_of(key).get("updatedAt")
            if isinstance(updated, int | float) and not isinstance(updated, bool) and updated < cutoff:
                if is_disposable(key):
                    delete(key, "prune-stale")
                    out.pruned += 1
                else:
                    archive(key, REASON_AGE)
                    out.archived_count += 1
    if cap is not None:
        keys = [k for k in live if k not in archived]
        overflow = len(keys) - cap
        if overflow > 0:
            eligible = [k for k in keys if free(k)]
            # oldest activity first; equal activity: later store rows first (as OpenClaw orders them)
            ranked = sorted(reversed(eligible), key=lambda k: activity_at(entry_of(k)))
            for key in ranked[: min(overflow, len(eligible))]:
                if is_disposable(key):
                    delete(key, "cap-overflow")
                else:
                    archive(key, REASON_CAP)
                    out.cap_archived += 1
                out.capped += 1
    return out
