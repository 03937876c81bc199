"""The one target selection: which agent stores an operation acts on (spec D2; migration
storage-migration.md §1.4, §6.2), and opening a target's store.

Two entry points over the same rules — `select_targets` for the session commands (`--agent`,
`--all-agents`, `--store`) and `select_migration_targets` for `doctor --session-sqlite`
(`--session-sqlite-agent|-all-agents|-store`, whose discovery modes only keep stores with legacy
data) — and one `Target` type (`paths.Target`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from openclaw_cli.errors import NotFoundError, OpenClawError, SelectionError, UsageError
from openclaw_cli.ids import normalize_agent_id, parse_agent_arg
from openclaw_cli.paths import (
    LEGACY_STORE_NAME,
    StatePaths,
    Target,
    expand_user,
    owner_from_path,
)

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.ops.context import Context
    from openclaw_cli.store.base import SessionStore
    from openclaw_cli.store.detect import LegacyLocation

__all__ = [
    "Target",
    "known_agent_ids",
    "open_existing",
    "open_target",
    "select_migration_targets",
    "select_targets",
    "session_agent_ids",
    "unconfigured_agent_ids",
]

MIGRATE_HINT = (
    "Legacy session store in use for agent {agent}: {path}. "
    "`openclaw doctor --session-sqlite import --session-sqlite-agent {agent}` would migrate it to SQLite "
    "(`--session-sqlite-all-agents` migrates every agent)."
)


def validate_selectors(
    agent: str | None,
    all_agents: bool,
    store: str | None,
    *,
    flags: tuple[str, str, str] = ("--agent", "--all-agents", "--store"),
    error: type[Exception] = SelectionError,
) -> None:
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
    """Configured agents plus agent directories on disk that hold a store: every store an
    operator may name (`--agent`, `agents delete`, `doctor`'s checks)."""
    from openclaw_cli.config import configured_agent_ids

    ids = list(configured_agent_ids(config))
    for agent_id in paths.discovered_agent_ids():
        if agent_id not in ids and has_session_store(paths, agent_id):
            ids.append(agent_id)
    return ids


def session_agent_ids(paths: StatePaths, config: Any) -> list[str]:
    """The agents `--all-agents` and `status` aggregate: the configured ones when the config lists
    agents (as OpenClaw, observed §12.8); with no agents configured, the default agent plus every
    agent directory on disk that holds a store."""
    from openclaw_cli.config import agent_roster, configured_agent_ids

    if agent_roster(config):
        return list(configured_agent_ids(config))
    return known_agent_ids(paths, config)


def unconfigured_agent_ids(paths: StatePaths, config: Any) -> list[str]:
    """Agent stores on disk that a config listing agents does not name (status and doctor say so;
    `--store` reaches them)."""
    covered = set(session_agent_ids(paths, config))
    return [a for a in known_agent_ids(paths, config) if a not in covered]


def has_session_store(paths: StatePaths, agent_id: str) -> bool:
    """Whether a discovered agent directory holds sessions: a database or a `sessions.json` with
    rows (or one that cannot be read: its error must be seen), or transcript files. What `agents
    delete` leaves (archives, an emptied index or database) is not a store worth listing."""
    from openclaw_cli.store.files import has_transcript_files

    if has_transcript_files(paths.sessions_dir(agent_id)):
        return True
    db = paths.agent_db_path(agent_id)
    if os.path.lexists(db):
        from openclaw_cli.errors import OpenClawError
        from openclaw_cli.store.detect import open_store_at

        try:
            with open_store_at(db, agent_id=agent_id, read_only=True) as store:
                if store.count_entries() > 0:
                    return True
        except OpenClawError:
            return True
    legacy = paths.legacy_store_path(agent_id)
    try:
        size = legacy.stat().st_size
    except OSError:
        return False
    if size > 64:
        return True
    try:
        import orjson

        return bool(orjson.loads(legacy.read_bytes() or b"{}") != {})
    except (OSError, ValueError):
        return True


def selection_required(config: Any) -> bool:
    """OpenClaw's `agents.selectionRequired`: several agents configured and none is the default —
    `agents.ownership: "explicit"`, or no `default: true` marker — so a command must name one."""
    from openclaw_cli.config import agent_roster, agents_ownership

    roster = agent_roster(config)
    if len(roster) <= 1:
        return False
    return agents_ownership(config) == "explicit" or not any(marked for _, marked in roster)


def _unknown_agent(raw: str, paths: StatePaths | None = None) -> NotFoundError:
    message = f'Unknown agent id "{raw.strip()}". Run openclaw agents list to see configured agents.'
    if paths is not None:
        agent_id = normalize_agent_id(raw)
        if agent_id in paths.discovered_agent_ids() and has_session_store(paths, agent_id):
            db = paths.agent_db_path(agent_id)
            where = db if db.exists() else paths.legacy_store_path(agent_id)
            message += (
                f" Its store is on disk but not in the config: pass --store {where} to use it, or add "
                f'"{agent_id}" to agents.list.'
            )
    return NotFoundError(message)


def select_targets(
    paths: StatePaths, config: Any, *, agent: str | None, all_agents: bool, store: str | None
) -> list[Target]:
    """The session commands' selection: `--store PATH` (offline repair), `--all-agents`, `--agent`,
    else the default agent — refusing to guess when several agents are configured (§10.2)."""
    validate_selectors(agent, all_agents, store)
    from openclaw_cli.config import default_agent_id

    if store is not None:
        path = expand_user(store.strip(), paths.home).absolute()
        agent_id = parse_agent_arg(agent) if agent else _agent_from_store_path(path)
        return [paths.explicit_target(path, agent_id)]
    if all_agents:
        return [paths.target(a) for a in session_agent_ids(paths, config)]
    if agent is not None:
        agent_id = parse_agent_arg(agent)
        if agent_id not in session_agent_ids(paths, config):
            raise _unknown_agent(agent, paths)
        return [paths.target(agent_id)]
    if selection_required(config):
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


def select_migration_targets(
    mode: str, paths: StatePaths, config: Any, *, agent: str | None, all_agents: bool, store: str | None
) -> list[Target]:
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
        targets.append(
            Target(agent_id, store_path, sqlite_for_store(store_path, agent_id, shared=shared), shared=shared)
        )
    if all_agents and mode in DISCOVERY_MODES:
        root_store = paths.state_dir / "sessions" / LEGACY_STORE_NAME
        if os.path.lexists(root_store):
            # the very old single-store layout: every configured agent imports its own keys from it
            for agent_id in configured:
                targets.append(Target(agent_id, root_store, paths.agent_db_path(agent_id), shared=True))
    if mode in DISCOVERY_MODES:
        targets = [t for t in targets if has_legacy_source(t) or _database_findings(mode, t)]
    return targets


def _database_findings(mode: str, target: Target) -> bool:
    """Issue 23: `validate` also takes an agent whose legacy data is gone when its OpenClaw
    schema-24+ database holds snapshot rows its writers would not leave (listed as issues)."""
    if mode != "validate":
        return False
    from openclaw_cli.migration.validate import database_findings

    return bool(database_findings(target.sqlite_path))


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
    if (
        mode in DISCOVERY_MODES
        and (path.suffix == ".sqlite" or not has_legacy_source(target))
        and not _database_findings(mode, target)
    ):
        return []
    return [target]


# ---- opening --------------------------------------------------------------------------------------------------


def open_target(ctx: Any, target: Target, *, read_only: bool = False, locate_legacy: bool = False) -> Any:
    """Open the store a target names (spec D2): the explicit path, else the agent's SQLite DB when
    it exists, else its legacy store (with the migration hint). `read_only` opens our SQLite
    databases without write access (dry runs must not even apply a schema migration). A store
    busy while being opened for writing (a schema step) is the typed busy error (D12).
    `locate_legacy` (with `read_only`; a search, which reads the files itself): an agent's legacy
    store is a `detect.LegacyLocation`, not opened."""
    from openclaw_cli.store.detect import locate_agent_store, open_agent_store, open_store_at

    if target.explicit is not None:
        path = target.explicit
        # "store not found" (exit 4) for a legacy path as for a database path: a script that
        # names a store gets the same answer whichever kind it expected
        if not path.exists():
            raise NotFoundError(
                f"Session store not found: {path} does not exist. Pass an agent's sessions.json or "
                "openclaw-agent.sqlite (openclaw status lists each store's path)."
            )
        if not path.is_file():
            raise NotFoundError(
                f"Session store not found: {path} is {'a directory' if path.is_dir() else 'not a regular file'}, "
                "not a store file. Pass an agent's sessions.json or openclaw-agent.sqlite (openclaw status lists "
                "each store's path)."
            )
        store = open_store_at(
            path, agent_id=target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only
        )
        if not read_only:
            store.configure_writes(ctx.write_options())
        _log_open(store, target)
        return store
    found: SessionStore | LegacyLocation
    if locate_legacy and read_only:
        found = locate_agent_store(
            ctx.paths, target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=True
        )
    else:
        found = open_agent_store(
            ctx.paths, target.agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=read_only
        )
        if not read_only:
            found.configure_writes(ctx.write_options())
    _log_open(found, target)
    if found.legacy_data_present():
        # D22: an import that did not complete is named, with the commands that finish or undo it
        # (no runs directory, no run: its module is not imported for nothing)
        runs_dir = ctx.paths.migration_runs_dir()
        pending = None
        if os.path.isdir(runs_dir):
            from openclaw_cli.migration.staging import pending_import

            pending = pending_import(runs_dir, ctx.paths.state_dir, target.agent_id)
        ctx.hint(pending.notice() if pending else MIGRATE_HINT.format(agent=target.agent_id, path=found.path))
    return found


def _log_open(store: SessionStore | LegacyLocation, target: Target) -> None:
    """`--verbose`: which store an agent resolved to (the `openclaw` logger; silent by default).
    Without the logging module loaded no handler exists (`--verbose` loads it): nothing to say, and
    a listing does not pay for importing it."""
    logging = sys.modules.get("logging")
    if logging is None:
        return
    log = logging.getLogger("openclaw")
    if log.isEnabledFor(logging.INFO):
        log.info(
            "agent %s: %s store %s%s",
            target.agent_id,
            store.kind,
            store.path,
            " (read-only)" if store.read_only else "",
        )


def open_existing(ctx: Context, agent_id: str) -> SessionStore | None:
    """The agent's store opened read-only, or None when it has none yet."""
    from openclaw_cli.store.detect import open_agent_store

    try:
        store = open_agent_store(ctx.paths, agent_id, busy_timeout_ms=ctx.busy_timeout_ms(), read_only=True)
    except OpenClawError:
        return None
    if not os.path.exists(store.path):
        store.close()
        return None
    return store
