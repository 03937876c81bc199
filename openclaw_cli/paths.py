"""The one path resolver: state dir, config path, per-agent dirs, transcript locations.

Mirrors OpenClaw: OPENCLAW_STATE_DIR (default ~/.openclaw, legacy ~/.clawdbot), OPENCLAW_HOME,
OPENCLAW_CONFIG_PATH (default <state>/openclaw.json), --profile NAME (~/.openclaw-<name>).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.records import FrozenRecord

AGENT_DB_NAME = "openclaw-agent.sqlite"
LEGACY_STORE_NAME = "sessions.json"
IMPORT_ARCHIVE_DIR = "session-sqlite-import-archive"
MIGRATION_RUNS_DIR = "session-sqlite-migration-runs"
EXPORTS_DIR = "exports"


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/openclaw-cli` (platformdirs' user cache dir elsewhere): indexes and
    summaries rebuilt from the state (search, the usage ledger), never read as data."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        return Path(xdg) / "openclaw-cli"
    import sys

    if sys.platform.startswith("linux"):  # platformdirs' rule there, without importing it (~tempfile, shutil)
        return Path(os.path.expanduser("~")) / ".cache" / "openclaw-cli"
    import platformdirs

    return Path(platformdirs.user_cache_dir("openclaw-cli", appauthor=False))


class Target(FrozenRecord):
    """One agent store an operation acts on (selected by `ops.targets`)."""

    __slots__ = _fields = ("agent_id", "store_path", "sqlite_path", "explicit", "shared")
    agent_id: str
    store_path: Path  # the legacy store (sessions.json), or an explicit .sqlite no legacy store belongs to
    sqlite_path: Path  # the agent database
    explicit: Path | None  # the path given with --store / --session-sqlite-store
    shared: bool  # a legacy store several agents import from (records filtered by key owner)

    def __init__(
        self,
        agent_id: str,
        store_path: Path,
        sqlite_path: Path,
        explicit: Path | None = None,
        shared: bool = False,
    ) -> None:
        self._assign(agent_id, store_path, sqlite_path, explicit, shared)

    @property
    def sessions_dir(self) -> Path:
        return self.store_path.parent

    @property
    def archive_dir(self) -> Path:
        return self.store_path.parent.parent / IMPORT_ARCHIVE_DIR

    @property
    def is_sqlite_selector(self) -> bool:
        return self.store_path.suffix == ".sqlite"


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None  # blank counts as unset


def resolve_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = _env_value(env, "OPENCLAW_HOME") or _env_value(env, "HOME") or _env_value(env, "USERPROFILE")
    return Path(raw).expanduser() if raw else Path.home()


def expand_user(raw: str, home: Path) -> Path:
    if raw == "~":
        return home
    if raw.startswith("~/") or raw.startswith("~\\"):
        return home / raw[2:]
    return Path(raw)


class StatePaths(FrozenRecord):
    __slots__ = _fields = ("home", "state_dir", "config_path", "profile", "session_store")
    home: Path
    state_dir: Path
    config_path: Path
    profile: str | None
    session_store: str | None  # `session.store` template from the config (None: the default layout)

    def __init__(
        self,
        home: Path,
        state_dir: Path,
        config_path: Path,
        profile: str | None = None,
        session_store: str | None = None,
    ) -> None:
        self._assign(home, state_dir, config_path, profile, session_store)

    def with_session_store(self, template: str | None) -> StatePaths:
        """These paths with the config's `session.store` template applied (every command then
        finds the store the migration imported into)."""
        if template == self.session_store:
            return self
        return StatePaths(self.home, self.state_dir, self.config_path, self.profile, template)

    def with_state_dir(self, state_dir: Path) -> StatePaths:
        """These paths with another state dir (the same one with its symlinks resolved)."""
        return StatePaths(self.home, state_dir, self.config_path, self.profile, self.session_store)

    def agents_root(self) -> Path:
        return self.state_dir / "agents"

    def agent_dir(self, agent_id: str) -> Path:
        return self.agents_root() / normalize_agent_id(agent_id)

    def sessions_dir(self, agent_id: str) -> Path:
        return self.legacy_store_path(agent_id).parent

    def default_legacy_store_path(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / "sessions" / LEGACY_STORE_NAME

    def legacy_store_path(self, agent_id: str) -> Path:
        """`session.store` (with `{agentId}` and `~`; relative to the state dir) when configured,
        else `agents/<id>/sessions/sessions.json`."""
        if self.session_store:
            text = self.session_store.replace("{agentId}", normalize_agent_id(agent_id))
            path = expand_user(text, self.home)
            if not path.is_absolute():
                path = self.state_dir / path
            return Path(os.path.normpath(path))
        return self.default_legacy_store_path(agent_id)

    def agent_db_path(self, agent_id: str) -> Path:
        if self.session_store:
            return sqlite_for_store(self.legacy_store_path(agent_id), normalize_agent_id(agent_id))
        return self.agent_dir(agent_id) / "agent" / AGENT_DB_NAME

    def target(self, agent_id: str) -> Target:
        """The agent's own store (no explicit path)."""
        agent = normalize_agent_id(agent_id)
        return Target(agent, self.legacy_store_path(agent), self.agent_db_path(agent))

    def explicit_target(self, path: Path, agent_id: str) -> Target:
        """A store named by path (`--store`): a .sqlite selects that database, anything else a
        legacy store and the database that receives it."""
        if path.suffix == ".sqlite":
            return Target(agent_id, store_for_sqlite(path), path, explicit=path)
        return Target(agent_id, path, sqlite_for_store(path, agent_id), explicit=path)

    def import_archive_dir(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / IMPORT_ARCHIVE_DIR

    def exports_dir(self) -> Path:
        """The one folder inside the state directory `sessions export --output` may write to."""
        return self.state_dir / EXPORTS_DIR

    def migration_runs_dir(self) -> Path:
        return self.state_dir / MIGRATION_RUNS_DIR

    def discovered_agent_ids(self) -> list[str]:
        """Agent directories present on disk (symlinked dirs are not followed out of the state dir)."""
        root = self.agents_root()
        found: list[str] = []
        try:
            children = sorted(root.iterdir())
        except OSError:
            return []
        for child in children:
            try:
                if child.is_symlink() or not child.is_dir():
                    continue
            except OSError:
                continue
            agent_id = normalize_agent_id(child.name)
            if agent_id == child.name and agent_id not in found:
                found.append(agent_id)
        return found


def resolve_paths(env: Mapping[str, str] | None = None, profile: str | None = None) -> StatePaths:
    env = os.environ if env is None else env
    home = resolve_home(env)
    profile = profile or _env_value(env, "OPENCLAW_PROFILE")
    explicit = _env_value(env, "OPENCLAW_STATE_DIR")
    if explicit:
        state_dir = expand_user(explicit, home)
    elif profile:
        state_dir = home / f".openclaw-{profile}"
    else:
        state_dir = home / ".openclaw"
        legacy = home / ".clawdbot"
        if not state_dir.exists() and legacy.exists():
            state_dir = legacy
    config_raw = _env_value(env, "OPENCLAW_CONFIG_PATH")
    if config_raw:
        config_path = expand_user(config_raw, home)
    else:
        config_path = state_dir / "openclaw.json"
        legacy_config = state_dir / "clawdbot.json"
        if not config_path.exists() and legacy_config.exists():
            config_path = legacy_config
    return StatePaths(
        home=home, state_dir=state_dir.absolute(), config_path=config_path.absolute(), profile=profile
    )


def owner_from_path(path: Path) -> str | None:
    """`…/agents/<id>/sessions/<file>` or `…/agents/<id>/agent/<file>` -> normalised <id>."""
    parts = path.parts
    if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] in ("sessions", "agent"):
        return normalize_agent_id(parts[-3])
    return None


def sqlite_for_store(store: Path, agent_id: str, *, shared: bool = False) -> Path:
    """storage-migration.md §1.4: the database that receives a legacy store's sessions."""
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


def _is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def transcript_candidates(sessions_dir: Path, session_id: str, session_file: str | None) -> list[Path]:
    """Where a legacy entry's transcript may be, in OpenClaw's order, never outside `sessions_dir`.

    1. `sessionFile` resolved inside the sessions dir (relative name, or an absolute path that lies in it);
    2. `<sessionsDir>/<basename(sessionFile)>` (absolute paths from another machine are re-rooted);
    3. `<sessionsDir>/<sessionId>.jsonl`.
    A `sqlite:` marker means the transcript lives in SQLite: no file candidate from it.
    """
    out: list[Path] = []
    root = sessions_dir
    if isinstance(session_file, str) and session_file and not session_file.startswith("sqlite:"):
        raw = (
            session_file.replace("\\", "/")
            if "\\" in session_file and "/" not in session_file
            else session_file
        )
        candidate = Path(raw)
        if not candidate.is_absolute():
            joined = Path(os.path.normpath(root / candidate))
            if _is_within(joined, root) and joined != root:
                out.append(joined)
        else:
            normalized = Path(os.path.normpath(candidate))
            if _is_within(normalized, root) and normalized != root:
                out.append(normalized)
        base = Path(raw).name
        if base and base not in (".", "..") and (root / base) not in out:
            out.append(root / base)
    if isinstance(session_id, str) and session_id:
        from openclaw_cli.ids import is_valid_legacy_session_id

        if is_valid_legacy_session_id(session_id):
            default = root / f"{session_id.strip()}.jsonl"
            if default not in out:
                out.append(default)
    return out


def safe_regular_file(path: Path, root: Path) -> bool:
    """True when `path` is a regular file inside `root` reached without symlinks (D6.7)."""
    try:
        if not _is_within(path, root):
            return False
        current = root
        for part in path.relative_to(root).parts:
            current = current / part
            if current.is_symlink():
                return False
        return path.is_file()
    except OSError:
        return False


def resolve_transcript_path(sessions_dir: Path, session_id: str, session_file: str | None) -> Path | None:
    """First existing safe candidate, or None."""
    for candidate in transcript_candidates(sessions_dir, session_id, session_file):
        if safe_regular_file(candidate, sessions_dir):
            return candidate
    return None
