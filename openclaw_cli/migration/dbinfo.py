"""What kind of database sits at a target's `sqlitePath`, decided without writing anything."""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from openclaw_cli.errors import InvalidDataError, OpenClawError, RefusedError
from openclaw_cli.store.sqlite_common import OUR_APPLICATION_ID, open_readonly, read_header

SIDECARS = ("-wal", "-shm", "-journal")


@dataclass
class DbInfo:
    kind: str  # missing | empty | ours | openclaw | foreign | corrupt | invalid
    detail: str = ""
    error: str | None = None  # set when the file is ours but cannot be used as it is
    user_version: int | None = None


def classify_db(path: Path, agent_id: str | None = None) -> DbInfo:
    """Kind of the file at `path`; for our databases `error` also names an owner other than
    `agent_id` (when given)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return DbInfo("missing", "no database yet")
    except OSError as exc:
        return DbInfo("invalid", f"{path}: {exc.strerror or exc}")
    if stat.S_ISLNK(st.st_mode):
        return DbInfo("invalid", f"{path} is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        return DbInfo("invalid", f"{path} is not a regular file")
    try:
        header = read_header(path)
    except OpenClawError as exc:
        return DbInfo("corrupt", exc.message)
    except OSError as exc:
        return DbInfo("invalid", f"{path}: {exc.strerror or exc}")
    if header is None:
        return DbInfo("empty", "empty file")
    if header.application_id == OUR_APPLICATION_ID:
        return DbInfo("ours", "openclaw-cli database", _check_ours(path, agent_id), header.user_version)
    if header.application_id != 0:
        return DbInfo(
            "foreign",
            f"a SQLite database of another application (application_id {header.application_id:#x})",
            user_version=header.user_version,
        )
    if header.user_version == 0 and _table_count(path) == 0:
        return DbInfo("empty", "empty SQLite database", user_version=0)
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

    try:
        store = OpenClawDbStore(path)
    except OpenClawError as exc:
        if "is not an OpenClaw agent database" in exc.message or "an empty SQLite database" in exc.message:
            # some other application's SQLite file: not ours and not OpenClaw's (issue 13 case 6)
            return DbInfo(
                "foreign", exc.message.replace(f"{path} is ", "", 1), user_version=header.user_version
            )
        return DbInfo("openclaw", exc.message, exc.message, user_version=header.user_version)
    except sqlite3.Error as exc:
        return DbInfo("corrupt", f"{path}: {exc}", user_version=header.user_version)
    store.close()
    return DbInfo(
        "openclaw", f"OpenClaw agent schema {header.user_version}", user_version=header.user_version
    )


def _table_count(path: Path) -> int:
    try:
        handle = open_readonly(path)
    except Exception:
        return -1
    try:
        return int(handle.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
    except sqlite3.Error:
        return -1
    finally:
        handle.close()


def _check_ours(path: Path, agent_id: str | None = None) -> str | None:
    from openclaw_cli.store.sqlite import schema as schema_mod

    try:
        handle = open_readonly(path)
    except OpenClawError as exc:
        return exc.message
    except sqlite3.Error as exc:
        return f"{path} is not a usable SQLite database: {exc}"
    try:
        handle.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        schema_mod.check_ours(handle.conn, path, allow_fresh=True)
        if agent_id is not None:
            meta = schema_mod.read_meta(handle.conn)
            owner = meta.get("agent_id") if meta else None
            if isinstance(owner, str) and owner and owner != agent_id:
                return f"Session database {path} belongs to agent {owner}; requested agent {agent_id}."
        return None
    except OpenClawError as exc:
        return exc.message
    except sqlite3.Error as exc:
        return f"{path} is not a usable SQLite database: {exc}"
    finally:
        handle.close()


def file_set(path: Path) -> list[Path]:
    return [path, *(Path(f"{path}{suffix}") for suffix in SIDECARS)]


def size_of(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def db_refusal(db: Path, info: DbInfo) -> OpenClawError | None:
    """Why the import must not write the database at `db` (dry-run reports the same), or None."""
    if info.kind in ("missing", "empty", "ours"):
        if info.kind == "ours" and info.error:
            hint = (
                ""
                if "belongs to agent" in info.error
                else (" Run `openclaw doctor --session-sqlite recover` to move a corrupt database aside.")
            )
            return InvalidDataError(f"{info.error}{hint} Nothing was changed.")
        return None
    if info.kind == "invalid":  # a symbolic link, a directory, ...: refused as every reader refuses it
        return RefusedError(f"Refusing to import into {db}: {info.detail}; nothing was changed.")
    if info.kind == "openclaw":
        return RefusedError(
            f"Refusing to import into {db}: it is a real OpenClaw agent database "
            f"({info.detail}). openclaw-cli reads OpenClaw databases but never writes to them; "
            "nothing was changed."
        )
    return InvalidDataError(
        f"Cannot import into {db}: {info.detail}. Run `openclaw doctor --session-sqlite recover` "
        "to move it aside; nothing was changed."
    )
