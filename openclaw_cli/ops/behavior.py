"""Which behaviour release a store follows (spec D23), from what this run knows: the operator's
`--behavior` / `OPENCLAW_CLI_BEHAVIOR`, the Gateway that owns the state (`Context.owning_gateway`,
filled by the front end from its `hello-ok`), the store's OpenClaw schema, the config's
`meta.lastTouchedVersion`. The rules themselves are `openclaw_cli.behavior`'s."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from openclaw_cli.behavior import Behavior, ResolvedBehavior, requested, resolve_behavior

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

_OPENCLAW_SCHEMA = re.compile(r"openclaw (\d+)")


def openclaw_schema_of(store: SessionStore) -> int | None:
    """The OpenClaw schema version of a real OpenClaw database (`store.schema` "openclaw 23");
    None for legacy stores and openclaw-cli's own databases."""
    match = _OPENCLAW_SCHEMA.fullmatch(store.schema or "")
    return int(match[1]) if match else None


def last_touched_version(config: Any) -> object:
    """`meta.lastTouchedVersion` as written in the config (None when absent)."""
    raw = getattr(config, "raw", None)
    meta = raw.get("meta") if isinstance(raw, dict) else None
    return meta.get("lastTouchedVersion") if isinstance(meta, dict) else None


def behavior_for(ctx: Any, store: SessionStore | None = None) -> ResolvedBehavior:
    """The release `store` follows in this run, and why (D23). Without a store (nothing on disk
    yet) the database step is skipped."""
    gateway = getattr(ctx, "owning_gateway", None)
    config = getattr(ctx, "config", None)
    return resolve_behavior(
        explicit=requested(),
        gateway_version=gateway[0] if gateway else None,
        gateway_url=gateway[1] if gateway else None,
        openclaw_schema=openclaw_schema_of(store) if store is not None else None,
        last_touched_version=last_touched_version(config),
        config_path=str(getattr(config, "path", "") or "") or None,
    )


def behavior_of(ctx: Any, store: SessionStore | None = None) -> Behavior:
    return behavior_for(ctx, store).behavior
