"""Pydantic models for the parts of `openclaw.json` this tool uses (spec D10).

Only the keys we act on are modelled; everything else in OpenClaw's large config is ignored.
Every modelled leaf is checked by a strict validator of our own, so a bad value becomes one
issue naming the key path, the value and an example, instead of OpenClaw's silent fallback.
Durations and byte sizes are stored already parsed (ms / bytes, with the key's default unit);
`False` is kept where it means "disabled"; `None` means "not set" (defaults are applied in
`resolve.py`, not here, so a model says exactly what the user wrote).

Import this module lazily: pydantic costs start-up time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from openclaw_cli.config.units import MAX_SAFE_INTEGER, js_string, parse_byte_size, parse_duration_ms

# --------------------------------------------------------------------------------------------
# Leaf validators. Each returns the normalised value or raises a `config_value` error whose
# `reason` says what is wrong; the loader adds the path, the value and an example.


def _fail(reason: str) -> PydanticCustomError:
    return PydanticCustomError("config_value", "{reason}", {"reason": reason})


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _integer(value: Any, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"expected an integer, got {_type_name(value)}")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise _fail("expected an integer")
        value = int(value)
    if abs(value) > MAX_SAFE_INTEGER:
        raise _fail("integer is too large")
    if value < minimum:
        raise _fail("must be positive" if minimum == 1 else f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise _fail(f"must be at most {maximum}")
    return value


def int_field(minimum: int, maximum: int | None = None) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if value is None:
            return None
        return _integer(value, minimum=minimum, maximum=maximum)

    return check


def positive_ms_or_infinity(value: Any) -> float | None:
    """`session.writeLock.acquireTimeoutMs`: a positive safe integer, or Infinity (JSON5 literal
    or the string "Infinity", since plain JSON cannot spell it)."""
    if value is None:
        return None
    if value == "Infinity" or (isinstance(value, float) and value == math.inf):
        return math.inf
    return _integer(value, minimum=1)


def number_field(minimum: float, maximum: float) -> Callable[[Any], float | None]:
    def check(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _fail(f"expected a number, got {_type_name(value)}")
        if not math.isfinite(value) or not minimum <= value <= maximum:
            raise _fail(f"must be between {js_string(minimum)} and {js_string(maximum)}")
        return float(value)

    return check


def duration_field(default_unit: str, *, allow_false: bool = False) -> Callable[[Any], Any]:
    """A duration string or number (bare numbers in `default_unit`) -> ms. Blank = not set."""

    def check(value: Any) -> int | Literal[False] | None:
        if value is None:
            return None
        if value is False and allow_false:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            allowed = "a duration or false" if allow_false else "a duration"
            raise _fail(f"expected {allowed}, got {_type_name(value)}")
        if isinstance(value, str) and not value.strip():
            return None
        try:
            return parse_duration_ms(value, default_unit)
        except ValueError as error:
            raise _fail(str(error)) from None

    return check


def byte_size_field(*, allow_false: bool = False) -> Callable[[Any], Any]:
    """A byte size string or number (bare numbers are bytes) -> bytes. Blank = not set."""

    def check(value: Any) -> int | Literal[False] | None:
        if value is None:
            return None
        if value is False and allow_false:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            allowed = "a byte size or false" if allow_false else "a byte size"
            raise _fail(f"expected {allowed}, got {_type_name(value)}")
        if isinstance(value, str) and not value.strip():
            return None
        try:
            return parse_byte_size(value, "b")
        except ValueError as error:
            raise _fail(str(error)) from None

    return check


def enum_field(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or value not in choices:
            listed = ", ".join(f'"{c}"' for c in choices)
            raise _fail(f"expected one of {listed}")
        return value

    return check


def bool_field(value: Any) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _fail(f"expected true or false, got {_type_name(value)}")
    return value


def str_field(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(f"expected a string, got {_type_name(value)}")
    return value


def str_list_field(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _fail("expected an array of strings")
    return list(value)


def model_ref_field(value: Any) -> str | dict | None:
    """`agents.defaults.model`: "provider/model" or `{primary, fallbacks}`."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        primary = value.get("primary")
        fallbacks = value.get("fallbacks")
        if primary is not None and not isinstance(primary, str):
            raise _fail("model.primary must be a string")
        if fallbacks is not None and (
            not isinstance(fallbacks, list) or not all(isinstance(f, str) for f in fallbacks)
        ):
            raise _fail("model.fallbacks must be an array of strings")
        return value
    raise _fail(f"expected a model name or {{primary, fallbacks}}, got {_type_name(value)}")


def secret_field(value: Any) -> str | dict | None:
    """A secret: a string, or OpenClaw's reference object `{source, provider, id}`."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("source"), str) and isinstance(value.get("id"), str):
        return value
    raise _fail("expected a string or a secret reference {source, provider, id}")


def _v(fn: Callable[[Any], Any]) -> BeforeValidator:
    return BeforeValidator(fn)


PositiveInt = Annotated[int | None, _v(int_field(1))]
NonNegativeInt = Annotated[int | None, _v(int_field(0))]
OptBool = Annotated[bool | None, _v(bool_field)]
OptStr = Annotated[str | None, _v(str_field)]
ByteSize = Annotated[int | None, _v(byte_size_field())]


class _Section(BaseModel):
    """camelCase keys in the file, snake_case in Python; unknown keys are ignored here (the
    loader reports the ones that deserve a warning)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_unset(cls, data: Any) -> Any:
        # `"maintenance": null` reads as "not set", like a null leaf, rather than as a type error.
        if isinstance(data, dict) and any(value is None for value in data.values()):
            return {key: value for key, value in data.items() if value is not None}
        return data


# --------------------------------------------------------------------------------------------
# session.*


class MaintenanceConfig(_Section):
    mode: Annotated[str | None, _v(enum_field("enforce", "warn"))] = None
    prune_after: Annotated[int | None, _v(duration_field("d"))] = None
    prune_days: Annotated[int | None, _v(duration_field("d"))] = None  # legacy alias of pruneAfter
    max_entries: PositiveInt = None
    reset_archive_retention: Annotated[int | Literal[False] | None, _v(duration_field("d", allow_false=True))] = None
    max_disk_bytes: Annotated[int | Literal[False] | None, _v(byte_size_field(allow_false=True))] = None
    high_water_bytes: ByteSize = None
    rotate_bytes: Any = None  # legacy: ignored, reported as a warning


class WriteLockConfig(_Section):
    acquire_timeout_ms: Annotated[float | int | None, _v(positive_ms_or_infinity)] = None
    stale_ms: PositiveInt = None
    max_hold_ms: PositiveInt = None


class ResetConfig(_Section):
    # L modes daily/idle; `manual` (older L) and `none` (current OpenClaw) mean "no time-based reset".
    mode: Annotated[str | None, _v(enum_field("daily", "idle", "manual", "none"))] = None
    at_hour: Annotated[int | None, _v(int_field(0, 23))] = None
    idle_minutes: NonNegativeInt = None


class SessionConfig(_Section):
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    write_lock: WriteLockConfig = Field(default_factory=WriteLockConfig)
    reset: ResetConfig | None = None
    reset_by_type: dict[str, ResetConfig] | None = None
    reset_by_channel: dict[str, ResetConfig] | None = None
    idle_minutes: NonNegativeInt = None  # legacy, honoured by profile L
    dm_scope: Annotated[
        str | None, _v(enum_field("main", "per-peer", "per-channel-peer", "per-account-channel-peer"))
    ] = None
    scope: Annotated[str | None, _v(enum_field("per-sender", "global"))] = None
    main_key: OptStr = None
    store: OptStr = None
    parent_fork_max_tokens: Any = None  # legacy: ignored, reported as a warning


# --------------------------------------------------------------------------------------------
# agents.*


class QualityGuardConfig(_Section):
    enabled: OptBool = None
    max_retries: Annotated[int | None, _v(int_field(0, 3))] = None


class MidTurnPrecheckConfig(_Section):
    enabled: OptBool = None


class MemoryFlushConfig(_Section):
    enabled: OptBool = None
    model: OptStr = None
    soft_threshold_tokens: NonNegativeInt = None
    force_flush_transcript_bytes: ByteSize = None
    prompt: OptStr = None
    system_prompt: OptStr = None


class CompactionConfig(_Section):
    enabled: OptBool = None
    mode: Annotated[str | None, _v(enum_field("default", "safeguard"))] = None
    provider: OptStr = None
    model: OptStr = None
    thinking_level: OptStr = None
    reserve_tokens: NonNegativeInt = None
    reserve_tokens_floor: NonNegativeInt = None
    keep_recent_tokens: PositiveInt = None
    max_history_share: Annotated[float | None, _v(number_field(0, 1))] = None
    recent_turns_preserve: Annotated[int | None, _v(int_field(0, 12))] = None
    identifier_policy: Annotated[str | None, _v(enum_field("strict", "off", "custom"))] = None
    identifier_instructions: OptStr = None
    quality_guard: QualityGuardConfig = Field(default_factory=QualityGuardConfig)
    truncate_after_compaction: OptBool = None
    max_active_transcript_bytes: ByteSize = None
    mid_turn_precheck: MidTurnPrecheckConfig = Field(default_factory=MidTurnPrecheckConfig)
    post_compaction_sections: Annotated[list[str] | None, _v(str_list_field)] = None
    notify_user: OptBool = None
    timeout_seconds: PositiveInt = None
    memory_flush: MemoryFlushConfig = Field(default_factory=MemoryFlushConfig)


class AgentDefaultsConfig(_Section):
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    context_tokens: PositiveInt = None
    model: Annotated[str | dict | None, _v(model_ref_field)] = None


class AgentEntryConfig(_Section):
    """One roster entry (`agents.entries.<id>` or an element of `agents.list`)."""

    id: OptStr = None  # required in `agents.list`, checked by the loader
    default: OptBool = None
    name: OptStr = None
    model: Annotated[str | dict | None, _v(model_ref_field)] = None
    context_tokens: PositiveInt = None


class AgentsConfig(_Section):
    defaults: AgentDefaultsConfig = Field(default_factory=AgentDefaultsConfig)
    entries: dict[str, AgentEntryConfig] | None = None
    agent_list: list[AgentEntryConfig] | None = Field(default=None, alias="list")
    ownership: OptStr = None


# --------------------------------------------------------------------------------------------
# cron.*, gateway.*


class RunLogConfig(_Section):
    keep_lines: PositiveInt = None
    max_bytes: ByteSize = None  # accepted for compatibility, no effect (maintenance.md §9.2)


class CronConfig(_Section):
    session_retention: Annotated[int | Literal[False] | None, _v(duration_field("h", allow_false=True))] = None
    run_log: RunLogConfig = Field(default_factory=RunLogConfig)


class GatewayAuthConfig(_Section):
    mode: OptStr = None
    token: Annotated[str | dict | None, _v(secret_field)] = None
    password: Annotated[str | dict | None, _v(secret_field)] = None


class GatewayConfig(_Section):
    port: Annotated[int | None, _v(int_field(1, 65535))] = None
    bind: OptStr = None
    mode: Annotated[str | None, _v(enum_field("local", "remote"))] = None
    auth: GatewayAuthConfig = Field(default_factory=GatewayAuthConfig)


class OpenClawConfig(_Section):
    session: SessionConfig = Field(default_factory=SessionConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    cron: CronConfig = Field(default_factory=CronConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)


# --------------------------------------------------------------------------------------------
# Examples shown in error messages, by key path (`*` = any agent id / channel / index).

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

# Keys a user may legitimately write inside the two sections whose unknown keys are warned
# about (D10). Later-OpenClaw keys are listed separately: they are not errors, just unused.
MAINTENANCE_KEYS = frozenset(
    {"mode", "pruneAfter", "pruneDays", "maxEntries", "resetArchiveRetention", "maxDiskBytes",
     "highWaterBytes", "rotateBytes"}
)
COMPACTION_KEYS = frozenset(
    {"enabled", "mode", "provider", "model", "thinkingLevel", "reserveTokens", "reserveTokensFloor",
     "keepRecentTokens", "maxHistoryShare", "recentTurnsPreserve", "identifierPolicy",
     "identifierInstructions", "qualityGuard", "truncateAfterCompaction", "maxActiveTranscriptBytes",
     "midTurnPrecheck", "postCompactionSections", "notifyUser", "timeoutSeconds", "memoryFlush"}
)
COMPACTION_NESTED_KEYS: dict[str, frozenset[str]] = {
    "qualityGuard": frozenset({"enabled", "maxRetries"}),
    "midTurnPrecheck": frozenset({"enabled"}),
    "memoryFlush": frozenset(
        {"enabled", "model", "softThresholdTokens", "forceFlushTranscriptBytes", "prompt", "systemPrompt"}
    ),
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
