"""The Gateway's custom session group catalog (`sessions.groups.*`): which groups exist, their
display order, their New Session defaults, and the sidebar's section order. Membership is not
here: it stays on each session row's `category` field, in whatever store kind holds the row.

Where the catalog lives (docs/decisions.md, "Issue 25: session groups"):
* a real OpenClaw state database (`<state>/state/openclaw.sqlite`, made by its import or Gateway)
  keeps it where OpenClaw 2026.9.6 does — table `session_groups (name, position, created_at, cwd,
  worktree)` and the `config_machine_state` row `sidebar.sectionOrder` — so either Gateway serving
  the state sees the same groups;
* otherwise our own file `<state>/state/openclaw-cli-session-groups.json`, written atomically (we
  never create OpenClaw's state database: a partial one would be OpenClaw's to reconcile).

`edit()` is one read-modify-write: a `Catalog` snapshot the caller changes, committed in one
SQLite transaction (BEGIN IMMEDIATE) or one atomic file replace; the Gateway serialises the group
methods with every store's writer, so two edits never interleave within a process.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.errors import InvalidDataError, OpenClawError, StoreBusyError, typed_error

FILE_NAME = "openclaw-cli-session-groups.json"
SIDEBAR_ORDER = "sidebar.sectionOrder"
_GROUP_COLUMNS = ("name", "position", "created_at", "cwd", "worktree")


@dataclass
class Group:
    name: str
    position: int
    created_at: int
    cwd: str | None = None
    worktree: bool | None = None


@dataclass
class Catalog:
    groups: list[Group] = field(default_factory=list)  # in (position, name) order
    section_order: list[str] = field(default_factory=list)
    order_changed: bool = False  # set by a caller that replaced `section_order`

    def find(self, name: str) -> Group | None:
        return next((g for g in self.groups if g.name == name), None)

    def sort(self) -> None:
        self.groups.sort(key=lambda g: (g.position, g.name))

    def listing(self) -> list[dict[str, Any]]:
        """`sessions.groups.list`'s `groups`: name and position only (path-free, read scope)."""
        return [{"name": g.name, "position": g.position} for g in self.groups]

    def defaults(self) -> list[dict[str, Any]]:
        """`sessions.groups.defaults`: each group's name, its `cwd` when set, `worktree` when known."""
        out = []
        for g in self.groups:
            record: dict[str, Any] = {"name": g.name}
            if g.cwd:
                record["cwd"] = g.cwd
            if g.worktree is not None:
                record["worktree"] = g.worktree
            out.append(record)
        return out


def state_database(state_dir: Path) -> Path:
    return Path(state_dir) / "state" / "openclaw.sqlite"


def catalog_file(state_dir: Path) -> Path:
    return Path(state_dir) / "state" / FILE_NAME


def location(state_dir: Path) -> Path:
    """Where this state's catalog is kept (see the module docstring)."""
    db = state_database(state_dir)
    return db if db.is_file() else catalog_file(state_dir)


def read(state_dir: Path) -> Catalog:
    where = location(state_dir)
    if where.suffix == ".sqlite":
        conn = _connect(where, read_only=True)
        try:
            return _read_db(conn)
        finally:
            conn.close()
    return _read_file(where)


@contextmanager
def edit(state_dir: Path) -> Iterator[Catalog]:
    """The catalog to change in place; committed when the block ends without an exception."""
    where = location(state_dir)
    if where.suffix != ".sqlite":
        catalog = _read_file(where)
        yield catalog
        _write_file(where, catalog)
        return
    conn = _connect(where, read_only=False)
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _sqlite_error(exc, where, "cannot write the session group catalog") from exc
        before = _read_db(conn)
        catalog = _read_db(conn)
        yield catalog
        _write_db(conn, before, catalog)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


# ---- OpenClaw's state database -------------------------------------------------------------------------------


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    try:
        if read_only:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0, isolation_level=None)
        else:
            conn = sqlite3.connect(str(path), timeout=5.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, path, "cannot open the OpenClaw state database") from exc


def _sqlite_error(exc: sqlite3.Error, path: Path | None, what: str) -> OpenClawError:
    """Busy as the typed busy error (the Gateway answers it retryable), a full disk as itself."""
    if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED
        return StoreBusyError(path or "state database", 5000)
    return typed_error(exc) or OpenClawError(f"{what}{f' {path}' if path else ''}: {exc}")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def _read_db(conn: sqlite3.Connection) -> Catalog:
    catalog = Catalog()
    try:
        if _has_table(conn, "session_groups"):
            have = _columns(conn, "session_groups")
            names = [c if c in have else f"NULL AS {c}" for c in _GROUP_COLUMNS]
            query = f"SELECT {', '.join(names)} FROM session_groups ORDER BY position, name"
            for name, position, created_at, cwd, worktree in conn.execute(query):
                catalog.groups.append(
                    Group(
                        str(name),
                        int(position),
                        int(created_at),
                        cwd or None,
                        None if worktree is None else worktree == 1,
                    )
                )
        if _has_table(conn, "config_machine_state"):
            row = conn.execute(
                "SELECT value_json FROM config_machine_state WHERE state_key = ?", (SIDEBAR_ORDER,)
            ).fetchone()
            if row is not None:
                order = json.loads(row[0])
                catalog.section_order = (
                    [s for s in order if isinstance(s, str)] if isinstance(order, list) else []
                )
    except (sqlite3.Error, ValueError, TypeError) as exc:
        raise InvalidDataError(f"cannot read the session group catalog: {exc}") from exc
    return catalog


def _write_db(conn: sqlite3.Connection, before: Catalog, after: Catalog) -> None:
    """The changed rows only (a group's created_at, cwd and worktree kept as stored)."""
    import time

    try:
        if not _has_table(conn, "session_groups"):  # OpenClaw's own DDL (its schema creates it alike)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS session_groups (name TEXT NOT NULL PRIMARY KEY, position INTEGER "
                "NOT NULL, created_at INTEGER NOT NULL, cwd TEXT, worktree INTEGER) STRICT"
            )
        have = _columns(conn, "session_groups")
        if any(g.cwd is not None or g.worktree is not None for g in after.groups):
            for column, kind in (("cwd", "TEXT"), ("worktree", "INTEGER")):
                if column not in have:  # OpenClaw adds them on first use alike (ensureColumn)
                    conn.execute(f"ALTER TABLE session_groups ADD COLUMN {column} {kind}")
            have = _columns(conn, "session_groups")
        old = {g.name: g for g in before.groups}
        new = {g.name: g for g in after.groups}
        for name in old.keys() - new.keys():
            conn.execute("DELETE FROM session_groups WHERE name = ?", (name,))
        for name, g in new.items():
            if old.get(name) == g:
                continue
            values = {
                "name": g.name,
                "position": g.position,
                "created_at": g.created_at,
                "cwd": g.cwd,
                "worktree": None if g.worktree is None else int(g.worktree),
            }
            cols = [c for c in _GROUP_COLUMNS if c in have]
            conn.execute(
                f"INSERT OR REPLACE INTO session_groups ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                [values[c] for c in cols],
            )
        if after.order_changed or after.section_order != before.section_order:
            if not _has_table(conn, "config_machine_state"):
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS config_machine_state (state_key TEXT NOT NULL PRIMARY KEY, "
                    "value_json TEXT NOT NULL, updated_at_ms INTEGER NOT NULL) STRICT"
                )
            conn.execute(
                "INSERT INTO config_machine_state (state_key, value_json, updated_at_ms) VALUES (?, ?, ?) "
                "ON CONFLICT(state_key) DO UPDATE SET value_json = excluded.value_json, "
                "updated_at_ms = excluded.updated_at_ms",
                (
                    SIDEBAR_ORDER,
                    json.dumps(after.section_order, separators=(",", ":")),
                    int(time.time() * 1000),
                ),
            )
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, None, "cannot write the session group catalog") from exc


# ---- our own file ----------------------------------------------------------------------------------------


def _read_file(path: Path) -> Catalog:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Catalog()
    except OSError as exc:
        raise OpenClawError(f"cannot read the session group catalog {path}: {exc}") from exc
    try:
        doc = json.loads(raw)
        catalog = Catalog(
            groups=[
                Group(
                    str(g["name"]),
                    int(g["position"]),
                    int(g.get("createdAt", 0)),
                    g.get("cwd") or None,
                    g.get("worktree") if isinstance(g.get("worktree"), bool) else None,
                )
                for g in doc.get("groups", [])
            ],
            section_order=[s for s in doc.get("sectionOrder", []) if isinstance(s, str)],
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidDataError(f"session group catalog {path} is not readable: {exc}") from exc
    catalog.sort()
    return catalog


def _write_file(path: Path, catalog: Catalog) -> None:
    from openclaw_cli.fsio import atomic_write_text

    groups = []
    for g in catalog.groups:
        record: dict[str, Any] = {"name": g.name, "position": g.position, "createdAt": g.created_at}
        if g.cwd is not None:
            record["cwd"] = g.cwd
        if g.worktree is not None:
            record["worktree"] = g.worktree
        groups.append(record)
    doc = {"version": 1, "groups": groups, "sectionOrder": catalog.section_order}
    try:
        atomic_write_text(path, json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    except OSError as exc:
        raise OpenClawError(f"cannot write the session group catalog {path}: {exc}") from exc
