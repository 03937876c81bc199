"""Effective `agents.defaults.compaction` (profile L; compaction-lifecycle.md §0.3, §4.1, §5.1).

Its own module so that commands which never compact do not pay for creating these dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openclaw_cli.config.resolve import (
    DEFAULT_COMPACTION_TIMEOUT_SECONDS,
    DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES,
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_MAX_HISTORY_SHARE,
    DEFAULT_QUALITY_GUARD_MAX_RETRIES,
    DEFAULT_RECENT_TURNS_PRESERVE,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_RESERVE_TOKENS_FLOOR,
    DEFAULT_SOFT_THRESHOLD_TOKENS,
    _model,
    _or,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from openclaw_cli.paths import StatePaths


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
        post_compaction_sections=tuple(c.post_compaction_sections)
        if c.post_compaction_sections is not None
        else None,
        notify_user=_or(c.notify_user, False),
        timeout_seconds=_or(c.timeout_seconds, DEFAULT_COMPACTION_TIMEOUT_SECONDS),
        memory_flush=MemoryFlushSettings(
            enabled=_or(mf.enabled, True),
            model=mf.model or None,
            soft_threshold_tokens=_or(mf.soft_threshold_tokens, DEFAULT_SOFT_THRESHOLD_TOKENS),
            force_flush_transcript_bytes=_or(
                mf.force_flush_transcript_bytes, DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES
            ),
            prompt=mf.prompt,
            system_prompt=mf.system_prompt,
        ),
    )


def workspace_dir(cfg: Any, agent_id: str, paths: StatePaths) -> Path:
    """An agent's workspace (where its `AGENTS.md` lives), as OpenClaw 2026.9.6 reports it (`agents
    list`, `status`): its roster entry's `workspace`; else, for the default agent,
    `agents.defaults.workspace` or `<stateDir>/workspace`; for any other agent
    `<agents.defaults.workspace>/<agentId>` or `<stateDir>/workspace-<agentId>`. Under
    `agents.ownership: "explicit"` no agent is the default."""
    from openclaw_cli.config.resolve import agents_ownership, default_agent_id
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.paths import expand_user

    agents = _model(cfg).agents
    wanted = normalize_agent_id(agent_id)
    for key, entry in (agents.entries or {}).items():
        if normalize_agent_id(key) == wanted and entry.workspace and entry.workspace.strip():
            return expand_user(entry.workspace.strip(), paths.home)
    for entry in agents.agent_list or []:
        if (
            entry.id
            and normalize_agent_id(entry.id) == wanted
            and entry.workspace
            and entry.workspace.strip()
        ):
            return expand_user(entry.workspace.strip(), paths.home)
    is_default = agents_ownership(cfg) != "explicit" and wanted == normalize_agent_id(default_agent_id(cfg))
    configured = agents.defaults.workspace.strip() if agents.defaults.workspace else ""
    if configured:
        base = expand_user(configured, paths.home)
        return base if is_default else base / wanted
    return paths.state_dir / ("workspace" if is_default else f"workspace-{wanted}")
