"""Examples shown in config error messages, by key path (`*` = any agent id / channel / index).

Imported only when a config has an invalid value.
"""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "session": "{}",
    "session.maintenance": '{"mode": "enforce", "pruneAfter": "30d"}',
    "session.maintenance.mode": '"enforce"',
    "session.maintenance.pruneAfter": '"30d"',
    "session.maintenance.pruneDays": "30",
    "session.maintenance.maxEntries": "500",
    "session.maintenance.resetArchiveRetention": '"14d"',
    "session.maintenance.maxDiskBytes": '"2gb"',
    "session.maintenance.highWaterBytes": '"1600mb"',
    "session.writeLock": '{"acquireTimeoutMs": 60000}',
    "session.writeLock.acquireTimeoutMs": "60000",
    "session.writeLock.staleMs": "1800000",
    "session.writeLock.maxHoldMs": "300000",
    "session.reset": '{"mode": "daily", "atHour": 4}',
    "session.reset.mode": '"daily"',
    "session.reset.atHour": "4",
    "session.reset.idleMinutes": "120",
    "session.resetByType": '{"group": {"mode": "idle", "idleMinutes": 120}}',
    "session.resetByType.*": '{"mode": "idle", "idleMinutes": 120}',
    "session.resetByType.*.mode": '"idle"',
    "session.resetByType.*.atHour": "4",
    "session.resetByType.*.idleMinutes": "120",
    "session.resetByChannel": '{"discord": {"mode": "idle", "idleMinutes": 10080}}',
    "session.resetByChannel.*": '{"mode": "idle", "idleMinutes": 10080}',
    "session.resetByChannel.*.mode": '"idle"',
    "session.resetByChannel.*.atHour": "4",
    "session.resetByChannel.*.idleMinutes": "10080",
    "session.idleMinutes": "120",
    "session.dmScope": '"main"',
    "session.scope": '"per-sender"',
    "session.mainKey": '"main"',
    "session.store": '"~/.openclaw/agents/{agentId}/sessions/sessions.json"',
    "agents": "{}",
    "agents.defaults": "{}",
    "agents.defaults.contextTokens": "200000",
    "agents.defaults.model": '"openai/gpt-5"',
    "agents.defaults.compaction": '{"mode": "default", "keepRecentTokens": 20000}',
    "agents.defaults.compaction.enabled": "true",
    "agents.defaults.compaction.mode": '"safeguard"',
    "agents.defaults.compaction.provider": '"my-provider"',
    "agents.defaults.compaction.model": '"openai/gpt-5-mini"',
    "agents.defaults.compaction.thinkingLevel": '"low"',
    "agents.defaults.compaction.reserveTokens": "16384",
    "agents.defaults.compaction.reserveTokensFloor": "20000",
    "agents.defaults.compaction.keepRecentTokens": "20000",
    "agents.defaults.compaction.maxHistoryShare": "0.5",
    "agents.defaults.compaction.recentTurnsPreserve": "3",
    "agents.defaults.compaction.identifierPolicy": '"strict"',
    "agents.defaults.compaction.identifierInstructions": '"Keep ticket ids verbatim."',
    "agents.defaults.compaction.qualityGuard": '{"enabled": true, "maxRetries": 1}',
    "agents.defaults.compaction.qualityGuard.enabled": "true",
    "agents.defaults.compaction.qualityGuard.maxRetries": "1",
    "agents.defaults.compaction.truncateAfterCompaction": "false",
    "agents.defaults.compaction.maxActiveTranscriptBytes": '"20mb"',
    "agents.defaults.compaction.midTurnPrecheck": '{"enabled": false}',
    "agents.defaults.compaction.midTurnPrecheck.enabled": "false",
    "agents.defaults.compaction.postCompactionSections": '["Decisions", "Open TODOs"]',
    "agents.defaults.compaction.notifyUser": "false",
    "agents.defaults.compaction.timeoutSeconds": "180",
    "agents.defaults.compaction.memoryFlush": '{"enabled": true, "softThresholdTokens": 4000}',
    "agents.defaults.compaction.memoryFlush.enabled": "true",
    "agents.defaults.compaction.memoryFlush.model": '"openai/gpt-5-mini"',
    "agents.defaults.compaction.memoryFlush.softThresholdTokens": "4000",
    "agents.defaults.compaction.memoryFlush.forceFlushTranscriptBytes": '"2mb"',
    "agents.defaults.compaction.memoryFlush.prompt": '"Write durable notes to memory."',
    "agents.defaults.compaction.memoryFlush.systemPrompt": '"Write durable notes to memory."',
    "agents.entries": '{"main": {"default": true}}',
    "agents.entries.*": '{"default": true}',
    "agents.entries.*.default": "true",
    "agents.entries.*.name": '"Main agent"',
    "agents.entries.*.model": '"openai/gpt-5"',
    "agents.entries.*.contextTokens": "200000",
    "agents.entries.*.id": '"main"',
    "agents.list": '[{"id": "main", "default": true}]',
    "agents.list.*": '{"id": "main", "default": true}',
    "agents.list.*.id": '"main"',
    "agents.list.*.default": "true",
    "agents.list.*.name": '"Main agent"',
    "agents.list.*.model": '"openai/gpt-5"',
    "agents.list.*.contextTokens": "200000",
    "agents.ownership": '"explicit"',
    "cron": "{}",
    "cron.sessionRetention": '"24h"',
    "cron.runLog": '{"keepLines": 2000}',
    "cron.runLog.keepLines": "2000",
    "cron.runLog.maxBytes": '"2mb"',
    "gateway": '{"port": 18789}',
    "gateway.port": "18789",
    "gateway.bind": '"loopback"',
    "gateway.mode": '"local"',
    "gateway.auth": '{"mode": "token", "token": "…"}',
    "gateway.auth.mode": '"token"',
    "gateway.auth.token": '"a-long-random-token"',
    "gateway.auth.password": '"a-long-random-password"',
}


def example_for(path: tuple[str | int, ...]) -> str | None:
    """The example for a key path; dynamic segments (agent ids, channels, indices) match `*`."""
    key = ".".join(str(p) for p in path)
    if key in EXAMPLES:
        return EXAMPLES[key]
    parts = [str(p) for p in path]
    for pattern, example in EXAMPLES.items():
        pattern_parts = pattern.split(".")
        if len(pattern_parts) == len(parts) and all(
            pp == "*" or pp == p for pp, p in zip(pattern_parts, parts, strict=True)
        ):
            return example
    return None
