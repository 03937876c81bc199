"""Config: JSON5 loading, strict validation (spec D10), units, effective settings, legacy keys.

`import openclaw_cli.config` stays cheap: pydantic and json5 load only when a config is
validated; the model classes are importable from here lazily.
"""

from __future__ import annotations

from typing import Any

from openclaw_cli.config.legacy_keys import FIX_HEADER, fix_legacy_config, legacy_key_findings
from openclaw_cli.config.loader import LoadedConfig, load_config, validate_config
from openclaw_cli.config.resolve import (
    CompactionSettings,
    CronSettings,
    GatewaySettings,
    MaintenanceSettings,
    MemoryFlushSettings,
    ResetSettings,
    WriteLockSettings,
    compaction_settings,
    configured_agent_ids,
    context_tokens_default,
    cron_settings,
    default_agent_id,
    default_model,
    dm_scope,
    gateway_settings,
    high_water_entries,
    maintenance_settings,
    max_hold_from_timeout,
    reset_settings,
    sqlite_busy_timeout_ms,
    write_lock_settings,
)
from openclaw_cli.config.units import format_byte_size, format_duration_ms, parse_byte_size, parse_duration_ms

_LAZY_MODEL_NAMES = frozenset({"OpenClawConfig", "SessionConfig", "MaintenanceConfig", "CompactionConfig"})


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODEL_NAMES:
        from openclaw_cli.config import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FIX_HEADER",
    "CompactionConfig",
    "CompactionSettings",
    "CronSettings",
    "GatewaySettings",
    "LoadedConfig",
    "MaintenanceConfig",
    "MaintenanceSettings",
    "MemoryFlushSettings",
    "OpenClawConfig",
    "ResetSettings",
    "SessionConfig",
    "WriteLockSettings",
    "compaction_settings",
    "configured_agent_ids",
    "context_tokens_default",
    "cron_settings",
    "default_agent_id",
    "default_model",
    "dm_scope",
    "fix_legacy_config",
    "format_byte_size",
    "format_duration_ms",
    "gateway_settings",
    "high_water_entries",
    "legacy_key_findings",
    "load_config",
    "maintenance_settings",
    "max_hold_from_timeout",
    "parse_byte_size",
    "parse_duration_ms",
    "reset_settings",
    "sqlite_busy_timeout_ms",
    "validate_config",
    "write_lock_settings",
]
