"""Effective `session.reset*` policies (compaction-lifecycle.md §3.4, profile L).

Its own module so that commands which never evaluate resets do not pay for the dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

from openclaw_cli.config.resolve import DEFAULT_RESET_AT_HOUR, DEFAULT_RESET_MODE, _model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.config.model import ResetConfig


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
    found: ResetConfig | None = by_type.get(reset_type)
    if found is None and reset_type == "direct":
        found = by_type.get("dm")  # legacy key
    return found


def reset_settings(
    cfg: Any = None, reset_type: str | None = None, channel: str | None = None
) -> ResetSettings:
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
        (
            v
            for v in ((type_reset.at_hour if type_reset else None), (base.at_hour if base else None))
            if v is not None
        ),
        DEFAULT_RESET_AT_HOUR,
    )
    idle_candidates = (
        (type_reset.idle_minutes if type_reset else None),
        (base.idle_minutes if base else None),
        legacy_idle,
    )
    idle = next((v for v in idle_candidates if v is not None), None)
    return ResetSettings(
        mode=mode,
        at_hour=min(23, max(0, at_hour)),
        idle_minutes=max(0, idle) if idle is not None else None,
        configured=base is not None or type_reset is not None or legacy_idle is not None,
    )
