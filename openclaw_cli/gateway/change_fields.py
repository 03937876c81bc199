"""The top-level fields of a keyed `sessions.changed` (patch, reset/new, create, compact, fork, …):
OpenClaw 2026.9.6 repeats its change projection of the row beside `session`, always in one order
(recorded in every keyed change of fixtures/gateway-2026.9.6, -issue25 and -groups: 62–76 fields).

`ALWAYS` fields are sent on every keyed change, null (or their idle value) when the session has
none; `WHEN_SET` fields only when the row has them. The run-time fields (`hasActiveRun`,
`activeRunIds`, `lastRunId`, `lastRunError`, `endedAt`, `runtimeMs`, `activeModel…`,
`restartRecoveryStatus`, `placement…`) carry what is true of a Gateway that runs no agent: idle.
"""

from __future__ import annotations

from typing import Any

# (name, idle value): sent on every keyed change; a row's or entry's own value wins.
_IDLE_SUMMARY = {"state": "unavailable", "canEnsure": False}  # we summarise nothing (needs a model)
_RECORDED_ORDER = (
    "updatedAt sessionId createdActor owner participants participantCount kind visibility channel? "
    "subject? chatType? origin? archived archivedAt archivedBy archiveReason pinned pinnedAt unread "
    "lastReadAt? markedUnreadAt agentStatus observerDigest activitySummary controlOwnerSessionKey swarm "
    "permissionMode permissionModePending forkedFromParent? spawnDepth? createdVia? createdAt? "
    "forkSource? label autoLabel icon color channelAvatarUrl category boardPresentation displayName "
    "childSessions? parentSessionKey? deliveryContext? thinkingLevel effectiveFastMode "
    "effectiveFastModeSource fastAutoOnSeconds toolOverrides systemSent? abortedLastRun? "
    "restartRecoveryStatus inputTokens? outputTokens? lastChannel? totalTokens? totalTokensFresh goal "
    "contextBudgetStatus effectiveResponseUsage modelProvider model activeModelProvider activeModel "
    "modelOverrideSource agentRuntime runtimeSelectionLocked lastRunError providerReview lastRunId "
    "hasAutomation hasActiveRun activeRunIds endedAt runtimeMs placement placementMove "
    "ancestorSessions sharingRole"
)  # "?": only when the row has it
ORDER: tuple[tuple[str, bool], ...] = tuple(
    (name.rstrip("?"), not name.endswith("?")) for name in _RECORDED_ORDER.split()
)
IDLE: dict[str, Any] = {
    "participants": [],
    "participantCount": 0,
    "archived": False,
    "pinned": False,
    "unread": False,
    "activitySummary": _IDLE_SUMMARY,
    "permissionModePending": False,
    "effectiveFastMode": False,
    "effectiveFastModeSource": "default",
    "fastAutoOnSeconds": 60,
    "totalTokensFresh": False,
    "effectiveResponseUsage": "off",
    "runtimeSelectionLocked": False,
    "hasAutomation": False,
    "hasActiveRun": False,
    "activeRunIds": [],
    "ancestorSessions": [],
    "sharingRole": "admin",  # every operator of ours has the whole state (no per-profile sharing)
}
# entry fields named differently at the top level
_FROM_ENTRY = {"effectiveResponseUsage": "responseUsage"}


def fields(
    row: dict[str, Any], entry: dict[str, Any] | None, ancestors: list[dict[str, Any]]
) -> dict[str, Any]:
    """The projection, in OpenClaw's order: the row's value, else the stored entry's, else idle."""
    stored = entry or {}
    out: dict[str, Any] = {}
    for name, always in ORDER:
        if name == "ancestorSessions":
            out[name] = ancestors
            continue
        if name in row and row[name] is not None:
            out[name] = row[name]
            continue
        if name == "totalTokens" and out.get("totalTokensFresh") is not True:
            continue  # a stale total is not sent (recorded: only fresh totals appear)
        value = stored.get(_FROM_ENTRY.get(name, name))
        if value is not None and name not in ("hasActiveRun", "activeRunIds", "sharingRole"):
            out[name] = value
        elif always:
            out[name] = IDLE.get(name)
    return out
