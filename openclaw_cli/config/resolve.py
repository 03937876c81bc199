"""Effective settings: defaults (spec D1: G1 maintenance, profile-L compaction) applied to a
validated config, as frozen dataclasses of plain numbers.

Every function takes `cfg` = a LoadedConfig, an OpenClawConfig model, a raw dict (validated on
the spot, strictly) or None (all defaults).

This module holds the defaults, `session.maintenance`, `session.writeLock` and the agent roster,
which nearly every command needs. Compaction, cron, reset and gateway settings live in
`resolve_<area>.py` and load on first use (creating a dataclass costs start-up time); their
names are still importable from here and from `openclaw_cli.config`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from openclaw_cli.ids import DEFAULT_AGENT_ID, normalize_agent_id
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import FrozenRecord

TYPE_CHECKING = False  # `typing` costs start-up time; only type checkers need it here
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.config.model import OpenClawConfig
    from openclaw_cli.config.resolve_maintenance import MaintenanceSettings

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


_INFINITY = float("inf")  # math.inf: `math` (a shared library to load) is not on a read's path


def _finite(value: float) -> bool:
    """`math.isfinite(value)` for a float or an int within the float range: inf - inf and nan are nan."""
    return value - value == 0


def _defaults_only(cfg: Any) -> bool:
    """Whether `cfg` sets nothing: None, or a LoadedConfig of no file whose model is not built
    (`LoadedConfig.defaults_only`). The settings a read asks for (the store path template, the
    agent roster, the write lock) are then the defaults, answered without building the model."""
    return cfg is None or getattr(cfg, "defaults_only", False) is True


# --------------------------------------------------------------------------------------------
# session.maintenance


def default_high_water_bytes(max_disk_bytes: int) -> int:
    import math

    return max(1, min(max_disk_bytes, math.floor(max_disk_bytes * HIGH_WATER_RATIO)))


def maintenance_settings(cfg: Any = None, behavior: Any = None) -> MaintenanceSettings:
    """Effective `session.maintenance` under `behavior`'s defaults (`openclaw_cli.behavior.Behavior`;
    None: the 2026.7 baseline, D1)."""
    m = _model(cfg).session.maintenance
    rules = getattr(behavior, "maintenance", None)
    default_entries = rules.default_max_entries if rules is not None else DEFAULT_MAX_ENTRIES
    default_disk = rules.default_max_disk_bytes if rules is not None else DEFAULT_MAX_DISK_BYTES
    if m.prune_after is not None:
        prune_after = m.prune_after
    elif m.prune_days is not None:  # G1 reads the legacy key when pruneAfter is absent
        prune_after = m.prune_days
    else:
        prune_after = DEFAULT_PRUNE_AFTER_MS
    retention = m.reset_archive_retention
    # false / unset -> keep; a zero duration also keeps ([R]-style: later OpenClaw removes it
    # so that keep-by-default applies, rather than deleting every archive at once).
    retention_ms = (
        retention if isinstance(retention, int) and retention is not False and retention > 0 else None
    )
    if m.max_disk_bytes is False:
        max_disk: int | None = None
    elif m.max_disk_bytes is None:
        max_disk = default_disk
    else:
        max_disk = m.max_disk_bytes if m.max_disk_bytes > 0 else None  # [R] <= 0 disables
    if max_disk is None:
        high_water = None
    elif m.high_water_bytes is not None and m.high_water_bytes > 0:
        high_water = min(m.high_water_bytes, max_disk)
    else:
        high_water = default_high_water_bytes(max_disk)  # [R] explicit <= 0 -> default
    dashboard_ms = preserve_ms = None
    if rules is not None and rules.archive_dashboard_after_ms is not None:
        raw_dashboard = m.archive_dashboard_after
        if raw_dashboard is None:
            dashboard_ms = rules.archive_dashboard_after_ms
        elif raw_dashboard is not False and raw_dashboard > 0:
            dashboard_ms = raw_dashboard  # false or 0 disables the stage
    if rules is not None and rules.honours_preserve_recent:
        raw_recent = m.preserve_recent
        preserve_ms = raw_recent if raw_recent is not None and raw_recent is not False else None
    from openclaw_cli.config.resolve_maintenance import MaintenanceSettings

    return MaintenanceSettings(
        archive_dashboard_after_ms=dashboard_ms,
        preserve_recent_ms=preserve_ms,
        max_disk_bytes_explicit=m.max_disk_bytes is not None and m.max_disk_bytes is not False,
        mode=m.mode or DEFAULT_MAINTENANCE_MODE,
        prune_after_ms=max(0, prune_after),
        max_entries=m.max_entries if m.max_entries is not None else default_entries,
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
    import math

    return max_entries + max(25, math.ceil(max_entries * 0.1))


# --------------------------------------------------------------------------------------------
# session.writeLock


class WriteLockSettings(FrozenRecord):
    __slots__ = _fields = ("acquire_timeout_ms", "stale_ms", "max_hold_ms")
    acquire_timeout_ms: float  # may be math.inf
    stale_ms: int
    max_hold_ms: int

    def __init__(
        self,
        acquire_timeout_ms: float = DEFAULT_LOCK_ACQUIRE_TIMEOUT_MS,
        stale_ms: int = DEFAULT_LOCK_STALE_MS,
        max_hold_ms: int = DEFAULT_LOCK_MAX_HOLD_MS,
    ) -> None:
        self._assign(acquire_timeout_ms, stale_ms, max_hold_ms)


_DIGITS = lazy_pattern(globals(), "_DIGITS", r"[0-9]+")


def _env_ms(env: Mapping[str, str], name: str, *, allow_infinity: bool) -> float | None:
    """An env override: all digits and a positive safe integer, or `Infinity` where allowed;
    anything else is ignored (falls through to config, then default)."""
    raw = env.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if allow_infinity and value == "Infinity":
        return _INFINITY
    if not _DIGITS.fullmatch(value):
        return None
    number = int(value)
    return number if 0 < number <= _SAFE_MAX else None


def write_lock_settings(cfg: Any = None, env: Mapping[str, str] | None = None) -> WriteLockSettings:
    """Per key: env -> config -> default (maintenance.md §2.2)."""
    env = os.environ if env is None else env
    if _defaults_only(cfg):
        configured: tuple[float | None, int | None, int | None] = (None, None, None)
    else:
        w = _model(cfg).session.write_lock
        configured = (w.acquire_timeout_ms, w.stale_ms, w.max_hold_ms)

    def pick(name: str, configured: float | None, default: int, *, allow_infinity: bool = False) -> float:
        from_env = _env_ms(env, name, allow_infinity=allow_infinity)
        if from_env is not None:
            return from_env
        return configured if configured is not None else default

    return WriteLockSettings(
        acquire_timeout_ms=pick(
            ENV_LOCK_ACQUIRE_TIMEOUT, configured[0], DEFAULT_LOCK_ACQUIRE_TIMEOUT_MS, allow_infinity=True
        ),
        stale_ms=int(pick(ENV_LOCK_STALE, configured[1], DEFAULT_LOCK_STALE_MS)),
        max_hold_ms=int(pick(ENV_LOCK_MAX_HOLD, configured[2], DEFAULT_LOCK_MAX_HOLD_MS)),
    )


def max_hold_from_timeout(timeout_ms: float, minimum_ms: int = DEFAULT_LOCK_MAX_HOLD_MS) -> int:
    """`min(2 147 000 000, max(minimum, timeout + 120 000))`; an infinite timeout -> the ceiling."""
    if not _finite(timeout_ms):
        return MAX_HOLD_CEILING_MS
    return int(min(MAX_HOLD_CEILING_MS, max(minimum_ms, timeout_ms + MAX_HOLD_GRACE_MS)))


def sqlite_busy_timeout_ms(settings: WriteLockSettings) -> int:
    """D12: the SQLite busy timeout is the lock acquire timeout (capped to what SQLite accepts)."""
    return (
        MAX_HOLD_CEILING_MS
        if not _finite(settings.acquire_timeout_ms)
        else int(min(settings.acquire_timeout_ms, MAX_HOLD_CEILING_MS))
    )


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def context_tokens_default(cfg: Any = None) -> int | None:
    tokens: int | None = _model(cfg).agents.defaults.context_tokens
    return tokens


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


def dm_scope(cfg: Any = None) -> str:
    return _model(cfg).session.dm_scope or DEFAULT_DM_SCOPE


def session_store_template(cfg: Any = None) -> str | None:
    """`session.store`: a custom legacy store path (`{agentId}` and `~` expanded by `paths`)."""
    if _defaults_only(cfg):
        return None
    try:
        raw = _model(cfg).session.store
    except AttributeError:
        return None
    return raw.strip() if isinstance(raw, str) and raw.strip() else None


# --------------------------------------------------------------------------------------------
# agent roster


def _roster(cfg: Any) -> list[tuple[str, bool]]:
    """(normalised id, marked default) in file order: `agents.entries` first, then `agents.list`."""
    if _defaults_only(cfg):
        return []
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


def agent_roster(cfg: Any = None) -> list[tuple[str, bool]]:
    """The configured agents as (normalised id, marked `default: true`), in file order; empty
    when the config lists none (then `main` is the only configured agent)."""
    return _roster(cfg)


def agents_ownership(cfg: Any = None) -> str | None:
    """`agents.ownership` as written (OpenClaw: `"explicit"` makes every command name its agent)."""
    if _defaults_only(cfg):
        return None
    value = _model(cfg).agents.ownership
    return value.strip() if isinstance(value, str) and value.strip() else None


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


# --------------------------------------------------------------------------------------------
# Settings that load on first use


LAZY_NAMES: dict[str, str] = {
    "MaintenanceSettings": "resolve_maintenance",
    "CompactionSettings": "resolve_compaction",
    "MemoryFlushSettings": "resolve_compaction",
    "compaction_settings": "resolve_compaction",
    "workspace_dir": "resolve_compaction",
    "CronSettings": "resolve_cron",
    "cron_settings": "resolve_cron",
    "ResetSettings": "resolve_reset",
    "reset_settings": "resolve_reset",
    "GatewaySettings": "resolve_gateway",
    "gateway_settings": "resolve_gateway",
}


def __getattr__(name: str) -> object:
    module_name = LAZY_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"openclaw_cli.config.{module_name}"), name)
