"""Which store is at a path, and which store an agent uses (spec D2).

Detection reads at most the 100-byte SQLite header (nothing is opened for writing, no sidecar is
created): our databases carry `application_id = 0x4F43434C`; any other SQLite file is handed to
the OpenClaw reader, which names its schema version or role when it cannot read it. Everything
that is not a SQLite file is a legacy `sessions.json`-style store.
"""

from __future__ import annotations

import os
from pathlib import Path

from openclaw_cli.errors import InvalidDataError, NotFoundError, RefusedError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.paths import LEGACY_STORE_NAME, StatePaths, safe_regular_file
from openclaw_cli.store.base import KIND_LEGACY, SessionStore

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def derive_agent_id_from_store_path(path: Path) -> str | None:
    """storage-migration.md §1.4: `…/agents/<id>/sessions/sessions.json` and
    `…/agents/<id>/agent/openclaw-agent.sqlite` belong to agent `<id>` (normalised)."""
    path = Path(path)
    parent = path.parent
    owner = parent.parent
    if owner.parent.name != "agents" or not owner.name:
        return None
    if parent.name == "sessions" and path.name == LEGACY_STORE_NAME:
        return normalize_agent_id(owner.name)
    if parent.name == "agent" and path.name.endswith(".sqlite"):
        return normalize_agent_id(owner.name)
    return None


# The SQLite file header (`sqlite_common.SQLITE_MAGIC`), here so that opening a legacy store does
# not import the SQLite modules.
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _legacy_store(path: Path, agent_id: str, *, database_absent: bool = False) -> SessionStore:
    from openclaw_cli.store.legacy.store import LegacyStore

    return LegacyStore(path, agent_id, database_absent=database_absent)


def open_store_at(
    path: Path,
    *,
    agent_id: str | None = None,
    create: bool = False,
    busy_timeout_ms: int = 60000,
    read_only: bool = False,
) -> SessionStore:
    """Open the store at an explicit path (`--store PATH`, offline repair).

    - a SQLite file: ours (by application_id) → `SqliteStore`; anything else → `OpenClawDbStore`,
      which reads schema 23 and names any other version/role in a typed error;
    - a missing `*.sqlite` path with `create` → a new database of ours;
    - anything else (e.g. `sessions.json`) → the legacy store.
    `read_only` opens a database without write access (read commands; read-only state dirs); an
    OpenClaw database opened with `read_only=False` gets its writer (`openclaw_writes`).
    """
    path = Path(path)
    if path.is_dir():
        raise InvalidDataError(
            f"{path} is a directory; pass the store file (sessions.json or a .sqlite database)"
        )
    exists = path.exists()
    looks_sqlite = path.suffix.lower() in _SQLITE_SUFFIXES
    if exists and (looks_sqlite or _is_sqlite_file(path)):
        from openclaw_cli.store.sqlite_common import OUR_APPLICATION_ID, read_header

        header = read_header(path)  # InvalidDataError when a .sqlite file is not a database
        owner = agent_id or derive_agent_id_from_store_path(path)
        if header is None or header.application_id == OUR_APPLICATION_ID:
            if header is None and not create:
                raise InvalidDataError(f"{path} is an empty file, not a session database")
            from openclaw_cli.store.sqlite.store import SqliteStore

            return SqliteStore(
                path,
                owner or _owner_from_db(path) or "main",
                create=create and not read_only,
                busy_timeout_ms=busy_timeout_ms,
                read_only=read_only and header is not None,
            )
        if header.application_id != 0:
            raise InvalidDataError(
                f"{path} is a SQLite database of another application (application_id {header.application_id:#x}),"
                " not an OpenClaw session store"
            )
        from openclaw_cli.store.openclaw.store import OpenClawDbStore

        return OpenClawDbStore(path, owner, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
    if looks_sqlite:
        if not create or read_only:
            raise NotFoundError(f"Session database not found: {path}")
        from openclaw_cli.store.sqlite.store import SqliteStore

        owner = agent_id or derive_agent_id_from_store_path(path) or "main"
        return SqliteStore(path, owner, create=True, busy_timeout_ms=busy_timeout_ms)
    return _legacy_store(path, agent_id or derive_agent_id_from_store_path(path) or "main")


def _owner_from_db(path: Path) -> str | None:
    """schema_meta.agent_id of one of our databases, read without writing anything."""
    from openclaw_cli.store.sqlite_common import open_readonly

    try:
        handle = open_readonly(path)
    except Exception:
        return None
    try:
        row = handle.conn.execute("SELECT agent_id FROM schema_meta WHERE meta_key = 'primary'").fetchone()
        return row[0] if row and isinstance(row[0], str) else None
    except Exception:
        return None
    finally:
        handle.close()


def _check_inside_state(path: Path, paths: StatePaths) -> None:
    """D6.7: an agent's store must be reached without symlinks out of the state dir. A store the
    config places elsewhere (`session.store`) must itself be a regular file, not a link."""
    if not path.is_relative_to(paths.state_dir):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise RefusedError(
                f"Refusing to open {path}: it is not a regular file (symbolic links are not followed)"
            )
        return
    if path.exists() and not safe_regular_file(path, paths.state_dir):
        raise RefusedError(
            f"Refusing to open {path}: it is not a regular file inside {paths.state_dir} "
            "(symbolic links are not followed)"
        )


def _empty_placeholder(path: Path) -> bool:
    """A 0-byte regular file at the database path holds no database: the agent is read from its
    legacy store, as the import (which replaces such a file) sees it (issue 13 case 6)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat as stat_mod

    return stat_mod.S_ISREG(st.st_mode) and st.st_size == 0


def _agent_database(paths: StatePaths, agent: str) -> Path | None:
    """Spec D2's choice for a normalised agent id: its SQLite database when it exists (None: the
    legacy store is the agent's); either path is checked to stay inside the state dir (D6.7)."""
    db_path = paths.agent_db_path(agent)
    if (db_path.exists() or db_path.is_symlink()) and not _empty_placeholder(db_path):
        _check_inside_state(db_path, paths)
        return db_path
    legacy = paths.legacy_store_path(agent)
    if legacy.exists() or legacy.is_symlink():
        _check_inside_state(legacy, paths)
    return None


def open_agent_store(
    paths: StatePaths, agent_id: str, *, busy_timeout_ms: int = 60000, read_only: bool = False
) -> SessionStore:
    """Spec D2: the agent's SQLite database when it exists, else its legacy store (an empty one
    when `sessions.json` is missing). `read_only` is passed to our SQLite store."""
    agent = normalize_agent_id(agent_id)
    db_path = _agent_database(paths, agent)
    if db_path is not None:
        return open_store_at(db_path, agent_id=agent, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
    return _legacy_store(paths.legacy_store_path(agent), agent, database_absent=True)


class LegacyLocation:
    """An agent's legacy store located, not opened: what a search of its files asks of a store
    (`kind`, `path`, `agent_id`, `sessions_dir`, `transcripts_in_files`, `schema`, `read_only`,
    `legacy_data_present()`, `close()`), with the values `LegacyStore` gives them. The index
    reads `sessions.json` and the transcripts itself, so a warm search does not import the legacy
    store (json, the archive writer, the transcript helpers: ~9 M instructions of ~240 M)."""

    __slots__ = ("agent_id", "path", "sessions_dir")
    kind = KIND_LEGACY
    schema = None
    transcripts_in_files = True
    read_only = False  # as LegacyStore: `read_only` is our SQLite store's

    def __init__(self, store_path: Path, agent_id: str):
        self.path = Path(os.path.abspath(store_path))
        self.agent_id = normalize_agent_id(agent_id)
        self.sessions_dir = self.path.parent

    def legacy_data_present(self) -> bool:
        if self.path.exists():
            return True
        from openclaw_cli.store.files import has_transcript_files

        return has_transcript_files(self.sessions_dir)

    def close(self) -> None:
        pass


def locate_agent_store(
    paths: StatePaths, agent_id: str, *, busy_timeout_ms: int = 60000, read_only: bool = False
) -> SessionStore | LegacyLocation:
    """`open_agent_store` for a reader of the store's files only (a search): the same choice and
    checks, the database opened, a legacy store only located."""
    agent = normalize_agent_id(agent_id)
    db_path = _agent_database(paths, agent)
    if db_path is not None:
        return open_store_at(db_path, agent_id=agent, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
    return LegacyLocation(paths.legacy_store_path(agent), agent)


def _primary_transcript_stems(sessions_dir: Path) -> list[str]:
    """`<stem>.jsonl` files that are primary transcripts (not checkpoints/trajectories/archives)."""
    from openclaw_cli.store.names import is_primary_transcript_name

    stems: list[str] = []
    try:
        entries = list(os.scandir(sessions_dir))
    except OSError:
        return stems
    for item in entries:
        name = item.name
        if not name.endswith(".jsonl") or not is_primary_transcript_name(name):
            continue
        try:
            if not item.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        stems.append(name[: -len(".jsonl")])
    return stems


def legacy_store_pending(paths: StatePaths, agent_id: str) -> bool:
    """True when a legacy `sessions.json` or primary transcripts exist that the agent's SQLite
    database does not cover (used for the D2 hint that `doctor --session-sqlite import` would
    migrate them)."""
    agent = normalize_agent_id(agent_id)
    legacy = paths.legacy_store_path(agent)
    has_legacy_store = legacy.is_file()
    stems = _primary_transcript_stems(paths.sessions_dir(agent))
    if not has_legacy_store and not stems:
        return False
    db_path = paths.agent_db_path(agent)
    if not db_path.exists():
        return True
    try:
        store = open_store_at(db_path, agent_id=agent, read_only=True)
    except Exception:
        return True
    try:
        return _uncovered(store, legacy if has_legacy_store else None, stems, agent)
    finally:
        store.close()


def _uncovered(store: SessionStore, legacy: Path | None, stems: list[str], agent: str) -> bool:
    """Point lookups only (no full GROUP BY over a large OpenClaw database)."""
    from openclaw_cli import jsonutil

    if legacy is not None:
        try:
            data = jsonutil.loads(legacy.read_bytes())
        except (OSError, *jsonutil.JSONDecodeError):
            return True
        if not isinstance(data, dict):
            return True
        stored = store.entry_keys()
        for key in data:
            # D14: bare cron:/hook: keys are canonicalised to agent:<id>:… on import
            if key not in stored and f"agent:{agent}:{key}" not in stored:
                return True
    for stem in stems:
        base = stem.split("-topic-", 1)[0]
        if not store.has_transcript(stem) and not store.has_transcript(base):
            return True
    return False


__all__ = [
    "derive_agent_id_from_store_path",
    "legacy_store_pending",
    "open_agent_store",
    "open_store_at",
]
