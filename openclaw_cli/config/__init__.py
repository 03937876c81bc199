"""Config: JSON5 loading, strict validation (spec D10), units, effective settings, legacy keys.

`import openclaw_cli.config` stays cheap (every command loads the config): the validation model,
the units parser, the legacy-key tools, json5 and the less used settings (compaction, cron,
reset, gateway) load only when they are used; all their names are importable from here, lazily.
"""

from __future__ import annotations

from openclaw_cli.config.loader import LoadedConfig, load_config, validate_config
from openclaw_cli.config.resolve import LAZY_NAMES as _LAZY_SETTINGS
from openclaw_cli.config.resolve import (
    WriteLockSettings,
    agent_roster,
    agents_ownership,
    configured_agent_ids,
    context_tokens_default,
    default_agent_id,
    default_model,
    dm_scope,
    high_water_entries,
    maintenance_settings,
    max_hold_from_timeout,
    session_store_template,
    sqlite_busy_timeout_ms,
    write_lock_settings,
)

TYPE_CHECKING = False  # `typing` costs start-up time; only type checkers need it here
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.config.resolve_maintenance import MaintenanceSettings

_LAZY_NAMES = {
    "OpenClawConfig": "model",
    "SessionConfig": "model",
    "MaintenanceConfig": "model",
    "CompactionConfig": "model",
    "FIX_HEADER": "legacy_keys",
    "fix_legacy_config": "legacy_keys",
    "legacy_key_findings": "legacy_keys",
    "format_byte_size": "units",
    "format_duration_ms": "units",
    "parse_byte_size": "units",
    "parse_duration_ms": "units",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY_NAMES.get(name) or _LAZY_SETTINGS.get(name)
    if module_name is not None:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
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
    "agent_roster",
    "agents_ownership",
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
    "session_store_template",
    "sqlite_busy_timeout_ms",
    "validate_config",
    "workspace_dir",
    "write_lock_settings",
]
