"""Effective settings: defaults (spec D1: G1 maintenance, profile-L compaction) applied to a
validated config, as frozen dataclasses of plain numbers.

Every function takes `cfg` = a LoadedConfig, an OpenClawConfig model, a raw dict (validated on
the spot, strictly) or None (all defaults).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openclaw_cli.ids import DEFAULT_AGENT_ID, normalize_agent_id

if TYPE_CHECKING:
    from openclaw_cli.config.model import OpenClawConfig, ResetConfig

DAY_MS = 86_400_000
HOUR_MS = 3_600_000

# session.maintenance (G1, maintenance.md §2.1)
DEFAULT_MAINTENANCE_MODE = "enforce"
DEFAULT_PRUNE_AFTER_MS = 30 * DAY_MS
DEFAULT_MAX_ENTRIES = 500
DEFAULT_MAX_DISK_BYTES = 2 * 1024**3
HIGH_WATER_RATIO = 0.8
MODEL_RUN_PRUNE_AFTER_MS = DAY_MS

# session.writeLock (maintenance.md §2.2)
DEFAULT_LOCK_ACQUIRE_TIMEOUT_MS = 60_000
DEFAULT_LOCK_STALE_MS = 1_800_000
DEFAULT_LOCK_MAX_HOLD_MS = 300_000
MAX_HOLD_CEILING_MS = 2_147_000_000
MAX_HOLD_GRACE_MS = 120_000
ENV_LOCK_ACQUIRE_TIMEOUT = "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS"
ENV_LOCK_STALE = "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS"
ENV_LOCK_MAX_HOLD = "OPENCLAW_SESSION_WRITE_LOCK_MAX_HOLD_MS"

# cron (maintenance.md §2.3)
DEFAULT_CRON_SESSION_RETENTION_MS = 24 * HOUR_MS
DEFAULT_RUN_LOG_KEEP_LINES = 2000
DEFAULT_RUN_LOG_MAX_BYTES = 2_000_000  # decimal, as OpenClaw's constant

# compaction (compaction-lifecycle.md §0.3, §4.1, §5.1; profile L)
DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_RESERVE_TOKENS_FLOOR = 20_000
DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_MAX_HISTORY_SHARE = 0.5
DEFAULT_RECENT_TURNS_PRESERVE = 3
DEFAULT_QUALITY_GUARD_MAX_RETRIES = 1
DEFAULT_COMPACTION_TIMEOUT_SECONDS = 180
DEFAULT_SOFT_THRESHOLD_TOKENS = 4000
DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES = 2 * 1024**2

# reset (compaction-lifecycle.md §3.4, profile L)
DEFAULT_RESET_MODE = "daily"
DEFAULT_RESET_AT_HOUR = 4

# gateway
DEFAULT_GATEWAY_PORT = 18789
DEFAULT_GATEWAY_BIND = "loopback"
DEFAULT_GATEWAY_MODE = "local"
ENV_GATEWAY_PORT = "OPENCLAW_GATEWAY_PORT"
ENV_GATEWAY_TOKEN = "OPENCLAW_GATEWAY_TOKEN"
ENV_GATEWAY_PASSWORD = "OPENCLAW_GATEWAY_PASSWORD"

DEFAULT_DM_SCOPE = "main"
_SAFE_MAX = 2**53 - 1


def _model(cfg: Any) -> OpenClawConfig:
    from openclaw_cli.config.model import OpenClawConfig

    if cfg is None:
        return OpenClawConfig()
    if isinstance(cfg, OpenClawConfig):
        return cfg
    model = getattr(cfg, "model", None)
    if isinstance(model, OpenClawConfig):
        return model
    if isinstance(cfg, dict):
        from pathlib import Path

        from openclaw_cli.config.loader import validate_config

        return validate_config(cfg, Path("<config>")).model
    raise TypeError(f"expected a LoadedConfig, OpenClawConfig, dict or None, got {type(cfg).__name__}")


# --------------------------------------------------------------------------------------------
# session.maintenance


@dataclass(frozen=True)
class MaintenanceSettings:
    """Effective `session.maintenance`.

    `prune_after_ms == 0` means age pruning is disabled: a configured zero duration would
    otherwise delete every unprotected row at once (later OpenClaw calls it a hazard too).
    `reset_archive_retention_ms is None` keeps archives forever; `max_disk_bytes is None`
    disables the disk budget (then `high_water_bytes` is None too).
    """

    mode: str = DEFAULT_MAINTENANCE_MODE
    prune_after_ms: int = DEFAULT_PRUNE_AFTER_MS
    max_entries: int = DEFAULT_MAX_ENTRIES
    reset_archive_retention_ms: int | None = None
    max_disk_bytes: int | None = DEFAULT_MAX_DISK_BYTES
    high_water_bytes: int | None = math.floor(DEFAULT_MAX_DISK_BYTES * HIGH_WATER_RATIO)
    model_run_prune_after_ms: int = MODEL_RUN_PRUNE_AFTER_MS

    @property
    def prune_enabled(self) -> bool:
        return self.prune_after_ms > 0


def default_high_water_bytes(max_disk_bytes: int) -> int:
    return max(1, min(max_disk_bytes, math.floor(max_disk_bytes * HIGH_WATER_RATIO)))


def maintenance_settings(cfg: Any = None) -> MaintenanceSettings:
    m = _model(cfg).session.maintenance
    if m.prune_after is not None:
        prune_after = m.prune_after
    elif m.prune_days is not None:  # G1 reads the legacy key when pruneAfter is absent
        prune_after = m.prune_days
    else:
        prune_after = DEFAULT_PRUNE_AFTER_MS
    retention = m.reset_archive_retention
    # false / unset -> keep; a zero duration also keeps ([R]-style: later OpenClaw removes it
    # so that keep-by-default applies, rather than deleting every archive at once).
    retention_ms = retention if isinstance(retention, int) and retention is not False and retention > 0 else None
    if m.max_disk_bytes is False:
        max_disk: int | None = None
    elif m.max_disk_bytes is None:
        max_disk = DEFAULT_MAX_DISK_BYTES
    else:
        max_disk = m.max_disk_bytes if m.max_disk_bytes > 0 else None  # [R] <= 0 disables
    if max_disk is None:
        high_water = None
    elif m.high_water_bytes is not None and m.high_water_bytes > 0:
        high_water = min(m.high_water_bytes, max_disk)
    else:
        high_water = default_high_water_bytes(max_disk)  # [R] explicit <= 0 -> default
    return MaintenanceSettings(
        mode=m.mode or DEFAULT_MAINTENANCE_MODE,
        prune_after_ms=max(0, prune_after),
        max_entries=m.max_entries if m.max_entries is not None else DEFAULT_MAX_ENTRIES,
        reset_archive_retention_ms=retention_ms,
        max_disk_bytes=max_disk,
        high_water_bytes=high_water,
    )


def high_water_entries(max_entries: Any) -> int:
    """Row count at which entry maintenance runs (maintenance.md §5.1): batched above the cap."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or not 0 < max_entries <= _SAFE_MAX:
        return 1
    if max_entries <= 49:
        return max_entries + 1
    return max_entries + max(25, math.ceil(max_entries * 0.1))


# --------------------------------------------------------------------------------------------
# session.writeLock


@dataclass(frozen=True)
class WriteLockSettings:
    acquire_timeout_ms: float = DEFAULT_LOCK_ACQUIRE_TIMEOUT_MS  # may be math.inf
    stale_ms: int = DEFAULT_LOCK_STALE_MS
    max_hold_ms: int = DEFAULT_LOCK_MAX_HOLD_MS


_DIGITS = re.compile(r"[0-9]+")


def _env_ms(env: Mapping[str, str], name: str, *, allow_infinity: bool) -> float | None:
    """An env override: all digits and a positive safe integer, or `Infinity` where allowed;
    anything else is ignored (falls through to config, then default)."""
    raw = env.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if allow_infinity and value == "Infinity":
        return math.inf
    if not _DIGITS.fullmatch(value):
        return None
    number = int(value)
    return number if 0 < number <= _SAFE_MAX else None


def write_lock_settings(cfg: Any = None, env: Mapping[str, str] | None = None) -> WriteLockSettings:
    """Per key: env -> config -> default (maintenance.md §2.2)."""
    env = os.environ if env is None else env
    w = _model(cfg).session.write_lock

    def pick(name: str, configured: float | None, default: int, *, allow_infinity: bool = False) -> float:
        from_env = _env_ms(env, name, allow_infinity=allow_infinity)
        if from_env is not None:
            return from_env
        return configured if configured is not None else default

    return WriteLockSettings(
        acquire_timeout_ms=pick(ENV_LOCK_ACQUIRE_TIMEOUT, w.acquire_timeout_ms, DEFAULT_LOCK_ACQUIRE_TIMEOUT_MS,
                                allow_infinity=True),
        stale_ms=int(pick(ENV_LOCK_STALE, w.stale_ms, DEFAULT_LOCK_STALE_MS)),
        max_hold_ms=int(pick(ENV_LOCK_MAX_HOLD, w.max_hold_ms, DEFAULT_LOCK_MAX_HOLD_MS)),
    )


def max_hold_from_timeout(timeout_ms: float, minimum_ms: int = DEFAULT_LOCK_MAX_HOLD_MS) -> int:
    """`min(2 147 000 000, max(minimum, timeout + 120 000))`; an infinite timeout -> the ceiling."""
    if not math.isfinite(timeout_ms):
        return MAX_HOLD_CEILING_MS
    return int(min(MAX_HOLD_CEILING_MS, max(minimum_ms, timeout_ms + MAX_HOLD_GRACE_MS)))


def sqlite_busy_timeout_ms(settings: WriteLockSettings) -> int:
    """D12: the SQLite busy timeout is the lock acquire timeout (capped to what SQLite accepts)."""
    return MAX_HOLD_CEILING_MS if not math.isfinite(settings.acquire_timeout_ms) else int(
        min(settings.acquire_timeout_ms, MAX_HOLD_CEILING_MS)
    )


# --------------------------------------------------------------------------------------------
# agents.defaults.compaction


@dataclass(frozen=True)
class MemoryFlushSettings:
    enabled: bool = True
    model: str | None = None
    soft_threshold_tokens: int = DEFAULT_SOFT_THRESHOLD_TOKENS
    force_flush_transcript_bytes: int = DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES  # 0 = disabled
    prompt: str | None = None
    system_prompt: str | None = None


@dataclass(frozen=True)
class CompactionSettings:
    enabled: bool = True
    mode: str = "default"  # "safeguard" whenever a provider is configured
    provider: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    reserve_tokens_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR  # 0 disables the floor
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    keep_recent_tokens_explicit: bool = False  # D16: manual compact is a hard checkpoint without it
    max_history_share: float = DEFAULT_MAX_HISTORY_SHARE
    recent_turns_preserve: int = DEFAULT_RECENT_TURNS_PRESERVE
    identifier_policy: str = "strict"
    identifier_instructions: str | None = None
    quality_guard_enabled: bool = True
    quality_guard_max_retries: int = DEFAULT_QUALITY_GUARD_MAX_RETRIES
    truncate_after_compaction: bool = False
    max_active_transcript_bytes: int | None = None  # None = no pre-flight guard
    mid_turn_precheck_enabled: bool = False
    post_compaction_sections: tuple[str, ...] | None = None
    notify_user: bool = False
    timeout_seconds: int = DEFAULT_COMPACTION_TIMEOUT_SECONDS
    memory_flush: MemoryFlushSettings = field(default_factory=MemoryFlushSettings)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def compaction_settings(cfg: Any = None) -> CompactionSettings:
    c = _model(cfg).agents.defaults.compaction
    provider = c.provider.strip() if isinstance(c.provider, str) and c.provider.strip() else None
    mode = "safeguard" if provider else (c.mode or "default")
    mf = c.memory_flush
    return CompactionSettings(
        enabled=_or(c.enabled, True),
        mode=mode,
        provider=provider,
        model=c.model or None,
        thinking_level=c.thinking_level or None,
        reserve_tokens=_or(c.reserve_tokens, DEFAULT_RESERVE_TOKENS),
        reserve_tokens_floor=_or(c.reserve_tokens_floor, DEFAULT_RESERVE_TOKENS_FLOOR),
        keep_recent_tokens=_or(c.keep_recent_tokens, DEFAULT_KEEP_RECENT_TOKENS),
        keep_recent_tokens_explicit=c.keep_recent_tokens is not None,
        max_history_share=_or(c.max_history_share, DEFAULT_MAX_HISTORY_SHARE),
        recent_turns_preserve=_or(c.recent_turns_preserve, DEFAULT_RECENT_TURNS_PRESERVE),
        identifier_policy=c.identifier_policy or "strict",
        identifier_instructions=c.identifier_instructions,
        quality_guard_enabled=_or(c.quality_guard.enabled, True),
        quality_guard_max_retries=_or(c.quality_guard.max_retries, DEFAULT_QUALITY_GUARD_MAX_RETRIES),
        truncate_after_compaction=_or(c.truncate_after_compaction, False),
        max_active_transcript_bytes=c.max_active_transcript_bytes or None,  # 0 disables
        mid_turn_precheck_enabled=_or(c.mid_turn_precheck.enabled, False),
        post_compaction_sections=tuple(c.post_compaction_sections) if c.post_compaction_sections is not None else None,
        notify_user=_or(c.notify_user, False),
        timeout_seconds=_or(c.timeout_seconds, DEFAULT_COMPACTION_TIMEOUT_SECONDS),
        memory_flush=MemoryFlushSettings(
            enabled=_or(mf.enabled, True),
            model=mf.model or None,
            soft_threshold_tokens=_or(mf.soft_threshold_tokens, DEFAULT_SOFT_THRESHOLD_TOKENS),
            force_flush_transcript_bytes=_or(mf.force_flush_transcript_bytes, DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES),
            prompt=mf.prompt,
            system_prompt=mf.system_prompt,
        ),
    )


def context_tokens_default(cfg: Any = None) -> int | None:
    return _model(cfg).agents.defaults.context_tokens


def _model_name(ref: Any) -> str | None:
    if isinstance(ref, str):
        return ref.strip() or None
    if isinstance(ref, dict) and isinstance(ref.get("primary"), str):
        return ref["primary"].strip() or None
    return None


def default_model(cfg: Any = None, agent_id: str | None = None) -> str | None:
    """The configured model (`provider/model`): the agent's roster entry, else
    `agents.defaults.model` (a string or its `primary`), else None."""
    agents = _model(cfg).agents
    if agent_id is not None:
        wanted = normalize_agent_id(agent_id)
        for key, entry in (agents.entries or {}).items():
            if normalize_agent_id(key) == wanted and _model_name(entry.model):
                return _model_name(entry.model)
        for entry in agents.agent_list or []:
            if entry.id and normalize_agent_id(entry.id) == wanted and _model_name(entry.model):
                return _model_name(entry.model)
    return _model_name(agents.defaults.model)


# --------------------------------------------------------------------------------------------
# cron


@dataclass(frozen=True)
class CronSettings:
    session_retention_ms: int | None = DEFAULT_CRON_SESSION_RETENTION_MS  # None = reaper disabled
    run_log_keep_lines: int = DEFAULT_RUN_LOG_KEEP_LINES
    run_log_max_bytes: int = DEFAULT_RUN_LOG_MAX_BYTES  # accepted, no effect (maintenance.md §9.2)


def cron_settings(cfg: Any = None) -> CronSettings:
    c = _model(cfg).cron
    retention = c.session_retention
    if retention is False:
        retention_ms: int | None = None
    elif retention is None:
        retention_ms = DEFAULT_CRON_SESSION_RETENTION_MS
    else:
        retention_ms = retention if retention > 0 else None  # "0h" disables
    return CronSettings(
        session_retention_ms=retention_ms,
        run_log_keep_lines=_or(c.run_log.keep_lines, DEFAULT_RUN_LOG_KEEP_LINES),
        run_log_max_bytes=_or(c.run_log.max_bytes, DEFAULT_RUN_LOG_MAX_BYTES),
    )


# --------------------------------------------------------------------------------------------
# session.reset


@dataclass(frozen=True)
class ResetSettings:
    """A resolved reset policy (compaction-lifecycle.md R3.4). `idle_minutes` None = no idle
    expiry; mode "manual"/"none" = no time-based reset at all."""

    mode: str = DEFAULT_RESET_MODE
    at_hour: int = DEFAULT_RESET_AT_HOUR
    idle_minutes: int | None = None
    configured: bool = False


def _type_reset(session: Any, reset_type: str | None) -> ResetConfig | None:
    if not reset_type or not session.reset_by_type:
        return None
    by_type = session.reset_by_type
    found = by_type.get(reset_type)
    if found is None and reset_type == "direct":
        found = by_type.get("dm")  # legacy key
    return found


def reset_settings(cfg: Any = None, reset_type: str | None = None, channel: str | None = None) -> ResetSettings:
    """Base policy (daily at 4:00 by default), optionally for a session type
    (`direct`/`group`/`thread`) and a channel (`resetByChannel` overrides both)."""
    session = _model(cfg).session
    override = None
    if channel and session.reset_by_channel:
        override = session.reset_by_channel.get(channel) or session.reset_by_channel.get(channel.lower())
    base = override if override is not None else session.reset
    type_reset = None if override is not None else _type_reset(session, reset_type)
    legacy_idle = None if override is not None else session.idle_minutes
    mode = (type_reset.mode if type_reset else None) or (base.mode if base else None)
    if mode is None:
        has_by_type = bool(session.reset_by_type)
        mode = "idle" if base is None and not has_by_type and legacy_idle is not None else DEFAULT_RESET_MODE
    at_hour = next(
        (v for v in ((type_reset.at_hour if type_reset else None), (base.at_hour if base else None)) if v is not None),
        DEFAULT_RESET_AT_HOUR,
    )
    idle_candidates = ((type_reset.idle_minutes if type_reset else None), (base.idle_minutes if base else None),
                       legacy_idle)
    idle = next((v for v in idle_candidates if v is not None), None)
    return ResetSettings(
        mode=mode,
        at_hour=min(23, max(0, at_hour)),
        idle_minutes=max(0, idle) if idle is not None else None,
        configured=base is not None or type_reset is not None or legacy_idle is not None,
    )


def dm_scope(cfg: Any = None) -> str:
    return _model(cfg).session.dm_scope or DEFAULT_DM_SCOPE


# --------------------------------------------------------------------------------------------
# gateway


@dataclass(frozen=True)
class GatewaySettings:
    port: int = DEFAULT_GATEWAY_PORT
    port_source: str = "default"  # "env" | "config" | "default"
    bind: str = DEFAULT_GATEWAY_BIND
    mode: str = DEFAULT_GATEWAY_MODE
    auth_mode: str | None = None  # None: no credential configured
    token: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)


_ENV_REF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def _secret(value: Any, env: Mapping[str, str]) -> str | None:
    """A configured secret: a string (with `${VAR}` substituted) or an env secret reference."""
    if isinstance(value, dict):
        if value.get("source") == "env" and isinstance(value.get("id"), str):
            found = env.get(value["id"], "").strip()
            return found or None
        return None  # file/exec/store references are resolved by OpenClaw itself, not by us
    if not isinstance(value, str):
        return None
    missing = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal missing
        found = env.get(match.group(1))
        if found is None:
            missing = True
            return ""
        return found

    text = _ENV_REF.sub(substitute, value).strip()
    return None if missing or not text else text


def gateway_settings(cfg: Any = None, env: Mapping[str, str] | None = None) -> GatewaySettings:
    """Port: OPENCLAW_GATEWAY_PORT (valid 1–65535) over config over 18789. Token/password:
    config first, then OPENCLAW_GATEWAY_TOKEN / OPENCLAW_GATEWAY_PASSWORD."""
    env = os.environ if env is None else env
    g = _model(cfg).gateway
    port, source = DEFAULT_GATEWAY_PORT, "default"
    if g.port is not None:
        port, source = g.port, "config"
    raw_port = (env.get(ENV_GATEWAY_PORT) or "").strip()
    if _DIGITS.fullmatch(raw_port) and 1 <= int(raw_port) <= 65535:
        port, source = int(raw_port), "env"
    token = _secret(g.auth.token, env) or _secret(env.get(ENV_GATEWAY_TOKEN), {})
    password = _secret(g.auth.password, env) or _secret(env.get(ENV_GATEWAY_PASSWORD), {})
    auth_mode = g.auth.mode or ("token" if token else "password" if password else None)
    return GatewaySettings(
        port=port,
        port_source=source,
        bind=g.bind or DEFAULT_GATEWAY_BIND,
        mode=g.mode or DEFAULT_GATEWAY_MODE,
        auth_mode=auth_mode,
        token=token,
        password=password,
    )


# --------------------------------------------------------------------------------------------
# agent roster


def _roster(cfg: Any) -> list[tuple[str, bool]]:
    """(normalised id, marked default) in file order: `agents.entries` first, then `agents.list`."""
    agents = _model(cfg).agents
    out: list[tuple[str, bool]] = []
    seen: dict[str, int] = {}

    def add(raw_id: str, is_default: bool) -> None:
        agent_id = normalize_agent_id(raw_id)
        if agent_id in seen:
            index = seen[agent_id]
            out[index] = (agent_id, out[index][1] or is_default)
            return
        seen[agent_id] = len(out)
        out.append((agent_id, is_default))

    for key, entry in (agents.entries or {}).items():
        add(key, bool(entry.default))  # entries are keyed by agent id
    for entry in agents.agent_list or []:
        if entry.id and entry.id.strip():
            add(entry.id, bool(entry.default))
    return out


def configured_agent_ids(cfg: Any = None) -> list[str]:
    """Configured agent ids (normalised, de-duplicated); an empty roster means `["main"]`."""
    ids = [agent_id for agent_id, _ in _roster(cfg)]
    return ids or [DEFAULT_AGENT_ID]


def default_agent_id(cfg: Any = None) -> str:
    """The entry marked `default: true`, else the first configured agent, else `main`."""
    roster = _roster(cfg)
    for agent_id, is_default in roster:
        if is_default:
            return agent_id
    return roster[0][0] if roster else DEFAULT_AGENT_ID
