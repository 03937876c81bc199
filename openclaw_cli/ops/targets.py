"""The one target selection: which agent stores an operation acts on (spec D2; migration
storage-migration.md §1.4, §6.2), and opening a target's store.

Two entry points over the same rules — `select_targets` for the session commands (`--agent`,
`--all-agents`, `--store`) and `select_migration_targets` for `doctor --session-sqlite`
(`--session-sqlite-agent|-all-agents|-store`, whose discovery modes only keep stores with legacy
data) — and one `Target` type (`paths.Target`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from openclaw_cli.errors import NotFoundError, SelectionError, UsageError
from openclaw_cli.ids import parse_agent_arg
from openclaw_cli.paths import (
    LEGACY_STORE_NAME,
    StatePaths,
    Target,
    expand_user,
    owner_from_path,
)

__all__ = ["Target", "known_agent_ids", "open_target", "select_migration_targets", "select_targets"]

MIGRATE_HINT = (
    "Legacy session store in use for agent {agent}: {path}. "
    "`openclaw doctor --session-sqlite import` would migrate it to SQLite."
)


def validate_selectors(agent: str | None, all_agents: bool, store: str | None, *, flags: tuple[str, str, str] = (
        "--agent", "--all-agents", "--store"), error: type[Exception] = SelectionError) -> None:
    agent_flag, all_flag, store_flag = flags
    if agent is not None and not agent.strip():
        raise error(f"{agent_flag} must not be blank")
    if store is not None and not store.strip():
        raise error(f"{store_flag} must not be blank")
    if agent is not None and all_agents and agent_flag == "--agent":
        raise error(f"{agent_flag} and {all_flag} cannot be used together")
    if store is not None and all_agents:
        raise error(f"{store_flag} cannot be combined with {all_flag}")


def known_agent_ids(paths: StatePaths, config: Any) -> list[str]:
    """Configured agents plus agent directories found on disk (the real CLI hides the latter,
    observed §12.8; an operator expects to see every store)."""
    from openclaw_cli.config import configured_agent_ids

    ids = list(configured_agent_ids(config))
    for agent_id in paths.discovered_agent_ids():
        if agent_id not in ids:
            ids.append(agent_id)
    return ids


def _unknown_agent(raw: str) -> NotFoundError:
    return NotFoundError(f'Unknown agent id "{raw.strip()}". Run openclaw agents list to see configured agents.')


def select_targets(paths: StatePaths, config: Any, *, agent: str | None, all_agents: bool,
                   store: str | None) -> list[Target]:
    """The session commands' selection: `--store PATH` (offline repair), `--all-agents`, `--agent`,
    else the default agent — refusing to guess when several agents are configured (§10.2)."""
    validate_selectors(agent, all_agents, store)
    from openclaw_cli.config import configured_agent_ids, default_agent_id

    if store is not None:
        path = expand_user(store.strip(), paths.home).absolute()
        agent_id = parse_agent_arg(agent) if agent else _agent_from_store_path(path)
        return [paths.explicit_target(path, agent_id)]
    if all_agents:
        return [paths.target(a) for a in known_agent_ids(paths, config)]
    if agent is not None:
        agent_id = parse_agent_arg(agent)
        if agent_id not in known_agent_ids(paths, config):
            raise _unknown_agent(agent)
        return [paths.target(agent_id)]
    if len(configured_agent_ids(config)) > 1:
        raise SelectionError(
            "Multiple agents are configured, but session-store selection has no explicit owner. "
            "Pass --agent <id> to select one agent, or --all-agents to include every configured agent."
        )
    return [paths.target(default_agent_id(config))]


def _agent_from_store_path(path: Path) -> str:
    from openclaw_cli.store.detect import derive_agent_id_from_store_path

    return derive_agent_id_from_store_path(path) or "main"


# ---- doctor --session-sqlite -------------------------------------------------------------------------------

_MIGRATION_FLAGS = ("--session-sqlite-agent", "--session-sqlite-all-agents", "--session-sqlite-store")


def select_migration_targets(mode: str, paths: StatePaths, config: Any, *, agent: str | None, all_agents: bool,
                             store: str | None) -> list[Target]:
    """§1.4/§6.2: discovery modes (dry-run, import, validate) keep only stores with legacy data;
    with `--session-sqlite-agent` they (and restore/recover) filter the discovered agents instead
    of failing on an unknown one; a store several agents point at is shared (each imports its own
    keys from it); `--session-sqlite-all-agents` also finds the very old single-store layout."""
    from openclaw_cli.config import configured_agent_ids, default_agent_id, session_store_template
    from openclaw_cli.migration.scope import DISCOVERY_MODES, has_legacy_source

    validate_selectors(agent, all_agents, store, flags=_MIGRATION_FLAGS, error=UsageError)
    if store is not None:
        return _explicit_migration_target(mode, paths, store, agent)
    paths = paths.with_session_store(session_store_template(config))
    configured = list(configured_agent_ids(config))
    discovered = paths.discovered_agent_ids()
    known = configured + [a for a in discovered if a not in configured]
    wanted = parse_agent_arg(agent, _MIGRATION_FLAGS[0]) if agent is not None else None
    if wanted is not None and wanted not in known:
        raise _unknown_agent(agent or "")  # an agent neither configured nor on disk: never "0 targets, ok"
    if all_agents or (wanted is not None and mode in DISCOVERY_MODES | {"restore", "recover"}):
        ids = known
        if wanted is not None:
            ids = [a for a in known if a == wanted]
    elif wanted is not None:
        ids = [wanted]
    else:
        ids = [default_agent_id(config)]
    from openclaw_cli.paths import sqlite_for_store

    stores = {a: paths.legacy_store_path(a) for a in dict.fromkeys([*known, *ids])}
    counts: dict[Path, int] = {}
    for path in stores.values():
        counts[path] = counts.get(path, 0) + 1
    targets: list[Target] = []
    for agent_id in ids:
        store_path = stores[agent_id]
        shared = counts[store_path] > 1
        targets.append(Target(agent_id, store_path, sqlite_for_store(store_path, agent_id, shared=shared),
                              shared=shared))
    if all_agents and mode in DISCOVERY_MODES:
        root_store = paths.state_dir / "sessions" / LEGACY_STORE_NAME
        if os.path.lexists(root_store):
            # the very old single-store layout: every configured agent imports its own keys from it
            for agent_id in configured:
                targets.append(Target(agent_id, root_store, paths.agent_db_path(agent_id), shared=True))
    if mode in DISCOVERY_MODES:
        targets = [t for t in targets if has_legacy_source(t)]
    return targets


def _explicit_migration_target(mode: str, paths: StatePaths, raw: str, agent: str | None) -> list[Target]:
    from openclaw_cli.migration.scope import DISCOVERY_MODES, has_legacy_source

    path = expand_user(raw.strip(), paths.home)
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    owner = owner_from_path(path)
    requested = parse_agent_arg(agent, _MIGRATION_FLAGS[0]) if agent is not None else None
    if owner is not None and requested is not None and owner != requested:
        raise SelectionError(f'Session store belongs to agent "{owner}", not requested agent "{requested}".')
    target = paths.explicit_target(path, owner or requested or "main")
    if mode in DISCOVERY_MODES and (path.suffix == ".sqlite" or not has_legacy_source(target)):
        return []
    return [target]


# ---- opening --------------------------------------------------------------------------------------------------

def open_target(ctx: Any, target: Target, *, read_only: bool = False):
    """Open the store a target names (spec D2): the explicit path, else the agent's SQLite DB when
    it exists, else its legacy store (with the migration hint). `read_only` opens our SQLite
    databases without write access (dry runs must not even apply a schema migration). A store
    busy while being opened for writing (a schema step) is the typed busy error (D12)."""
    from openclaw_cli.store.detect import open_agent_store, open_store_at

    if target.explicit is not None:
        path = target.explicit
        if not path.exists():
            raise SelectionError(
                f"Session store target does not exist: {path}. "
                "Pass a selector whose resolved SQLite target exists."
            )
        if not path.is_file():
            raise SelectionError(
                f"Session store target is not a regular file: {path}. "
                "Pass a legacy store selector or SQLite target reported by openclaw sessions or openclaw status."
            )
        return open_store_at(path, agent_id=target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(),
                             read_only=read_only)
    store = open_agent_store(ctx.paths, target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only)
    if store.legacy_data_present():
        from openclaw_cli.migration.staging import pending_import

        # D22: an import that did not complete is named, with the commands that finish or undo it
        pending = pending_import(ctx.paths.migration_runs_dir(), ctx.paths.state_dir, target.agent_id)
        ctx.hint(pending.notice() if pending else MIGRATE_HINT.format(agent=target.agent_id, path=store.path))
    return store
