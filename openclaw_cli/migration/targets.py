"""Which stores a `doctor --session-sqlite` run acts on (storage-migration.md §1.4, §6.2) and the
path guards for destructive explicit stores (§6.3)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_cli.errors import NotFoundError, RefusedError, SelectionError, UsageError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.paths import AGENT_DB_NAME, IMPORT_ARCHIVE_DIR, LEGACY_STORE_NAME, StatePaths, expand_user

MODES = ("dry-run", "import", "validate", "inspect", "compact", "restore", "recover")
DISCOVERY_MODES = frozenset({"dry-run", "import", "validate"})
DESTRUCTIVE_MODES = frozenset({"import", "compact", "restore", "recover"})
MODE_ERROR = "Invalid --session-sqlite mode. Use dry-run, import, validate, inspect, compact, restore, or recover."
OPTIONS_WITHOUT_MODE = (
    "doctor session SQLite options require --session-sqlite. Use `openclaw doctor --session-sqlite dry-run ...`."
)
GITHUB_ISSUE_ERROR = "--github-issue requires --session-sqlite recover."


@dataclass(frozen=True)
class Target:
    agent_id: str
    store_path: Path  # sessions.json (or the explicit .sqlite when no store belongs to it)
    sqlite_path: Path
    explicit: bool = False
    shared: bool = False  # a store several agents import from (records filtered by key owner)

    @property
    def sessions_dir(self) -> Path:
        return self.store_path.parent

    @property
    def archive_dir(self) -> Path:
        return self.store_path.parent.parent / IMPORT_ARCHIVE_DIR

    @property
    def is_sqlite_selector(self) -> bool:
        return self.store_path.suffix == ".sqlite"


def validate_mode(mode: str) -> str:
    value = (mode or "").strip()
    if value not in MODES:
        raise UsageError(MODE_ERROR)
    return value


def owner_from_path(path: Path) -> str | None:
    """`…/agents/<id>/sessions/<file>` or `…/agents/<id>/agent/<file>` -> normalised <id>."""
    parts = path.parts
    if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] in ("sessions", "agent"):
        return normalize_agent_id(parts[-3])
    return None


def sqlite_for_store(store: Path, agent_id: str, *, shared: bool = False) -> Path:
    """§1.4: the database that receives a legacy store's sessions."""
    if store.suffix == ".sqlite":
        return store
    if store.name != LEGACY_STORE_NAME:
        return store.with_suffix(".sqlite")
    parts = store.parts
    if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] == "sessions":
        return store.parent.parent / "agent" / AGENT_DB_NAME
    if shared:
        return store.parent / f"openclaw-agent.{agent_id}.sqlite"
    return store.parent / AGENT_DB_NAME


def store_for_sqlite(db: Path) -> Path:
    """The legacy store belonging to an explicit agent DB (standard layout), else the DB itself."""
    parts = db.parts
    if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] == "agent":
        return db.parent.parent / "sessions" / LEGACY_STORE_NAME
    return db


def configured_store_path(paths: StatePaths, cfg: Any, agent_id: str) -> Path:
    """`session.store` (with `{agentId}` and `~`) when configured, else the agent's default store."""
    raw = None
    try:
        model = getattr(cfg, "model", None)
        raw = model.session.store if model is not None else None
    except AttributeError:
        raw = None
    if isinstance(raw, str) and raw.strip():
        text = raw.strip().replace("{agentId}", agent_id)
        path = expand_user(text, paths.home)
        if not path.is_absolute():
            path = paths.state_dir / path
        return Path(os.path.normpath(path))
    return paths.legacy_store_path(agent_id)


def _is_primary_transcript(name: str) -> bool:
    from openclaw_cli.migration.legacy_reader import is_primary_transcript_name

    return is_primary_transcript_name(name)


def has_legacy_source(target: Target) -> bool:
    if target.is_sqlite_selector:
        return False
    try:
        if os.path.lexists(target.store_path):
            return True
        with os.scandir(target.sessions_dir) as it:
            for entry in it:
                if _is_primary_transcript(entry.name) and entry.is_file(follow_symlinks=False):
                    return True
    except OSError:
        return False
    return False


def select_targets(mode: str, paths: StatePaths, cfg: Any, *, agent: str | None, all_agents: bool,
                   store: str | None) -> list[Target]:
    from openclaw_cli.config import configured_agent_ids, default_agent_id

    if agent is not None and not agent.strip():
        raise UsageError("--session-sqlite-agent must not be blank")
    if store is not None and not store.strip():
        raise UsageError("--session-sqlite-store must not be blank")
    if store is not None and all_agents:
        raise UsageError("--session-sqlite-store cannot be combined with --session-sqlite-all-agents")

    if store is not None:
        return _explicit_target(mode, paths, store, agent)

    configured = list(configured_agent_ids(cfg))
    discovered = paths.discovered_agent_ids()
    known = configured + [a for a in discovered if a not in configured]
    if all_agents or (agent is not None and mode in DISCOVERY_MODES | {"restore", "recover"}):
        ids = known
        if agent is not None:
            wanted = normalize_agent_id(agent)
            ids = [a for a in known if a == wanted]
    elif agent is not None:
        wanted = normalize_agent_id(agent)
        if wanted not in known:
            raise NotFoundError(
                f'Unknown agent id "{agent.strip()}". Run openclaw agents list to see configured agents.'
            )
        ids = [wanted]
    else:
        ids = [default_agent_id(cfg)]

    # a store several known agents point at is shared: each imports only its own keys from it
    stores = {a: configured_store_path(paths, cfg, a) for a in dict.fromkeys([*known, *ids])}
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


def _explicit_target(mode: str, paths: StatePaths, raw: str, agent: str | None) -> list[Target]:
    path = expand_user(raw.strip(), paths.home)
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    owner = owner_from_path(path)
    requested = normalize_agent_id(agent) if agent is not None else None
    if owner is not None and requested is not None and owner != requested:
        raise SelectionError(f'Session store belongs to agent "{owner}", not requested agent "{requested}".')
    agent_id = owner or requested or "main"
    if path.suffix == ".sqlite":
        target = Target(agent_id, store_for_sqlite(path), path, explicit=True)
    else:
        target = Target(agent_id, path, sqlite_for_store(path, agent_id), explicit=True)
    if mode in DISCOVERY_MODES and (path.suffix == ".sqlite" or not has_legacy_source(target)):
        return []
    return [target]


def guard_explicit_store(mode: str, target: Target, state_dir: Path) -> None:
    """§6.3 guards for a destructive mode on an explicit store path."""
    op = f"session SQLite {mode}"
    path = target.sqlite_path if target.is_sqlite_selector else target.store_path
    root = Path(os.path.realpath(state_dir))
    candidate = Path(os.path.normpath(path))
    try:
        rel = candidate.relative_to(root)
    except ValueError:
        try:
            rel = candidate.relative_to(state_dir)
            candidate = root / rel
        except ValueError:
            raise RefusedError(
                f"Cannot run {op} for a path outside the active OpenClaw state directory: {path}. "
                "Set OPENCLAW_STATE_DIR to the owning state directory and retry."
            ) from None
    current = root
    for i, part in enumerate(rel.parts):
        current = current / part
        if current.is_symlink():
            if i == len(rel.parts) - 1:
                raise RefusedError(
                    f"Cannot run {op} for a symbolic-link path: {path}. "
                    "Point --session-sqlite-store at the real file inside the state directory and retry."
                )
            raise RefusedError(
                f"Cannot run {op} through a symbolic-link path component: {path}. "
                "Point --session-sqlite-store at the real file inside the state directory and retry."
            )
    try:
        st = os.lstat(candidate)
    except FileNotFoundError:
        return
    if st.st_nlink > 1 and not os.path.isdir(candidate):
        raise RefusedError(f"Cannot run {op} for a hard-linked path: {path}. Remove the additional hard link and retry.")
