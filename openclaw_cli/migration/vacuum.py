"""`doctor --session-sqlite compact` (§6.16): checkpoint + VACUUM of our own agent databases.
A real OpenClaw database is never written (spec D4): compacting one is refused as an issue."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from openclaw_cli.fsio import FILE_MODE
from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.dbinfo import classify_db, size_of
from openclaw_cli.migration.report import Report, TargetReport
from openclaw_cli.paths import Target


def db_sizes(db: Path) -> tuple[int, int]:
    return size_of(db), size_of(Path(f"{db}-wal"))


def _skipped() -> dict[str, Any]:
    return {
        "dbSizeAfterBytes": 0,
        "dbSizeBeforeBytes": 0,
        "freelistAfterPages": 0,
        "freelistBeforePages": 0,
        "pageSizeBytes": 0,
        "reclaimedBytes": 0,
        "skipped": True,
        "walSizeAfterBytes": 0,
        "walSizeBeforeBytes": 0,
    }


def compact_db(db: Path, agent_id: str, busy_timeout_ms: int) -> dict[str, Any]:
    """Integrity check, checkpoint(TRUNCATE), VACUUM, checkpoint, re-check, 0600. Raises
    RuntimeError with the reason on any failure (the caller reports `sqlite_compact_failed`)."""
    from openclaw_cli.store.sqlite import schema as schema_mod

    conn = sqlite3.connect(str(db), isolation_level=None, timeout=busy_timeout_ms / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        schema_mod.check_ours(conn, db, allow_fresh=False)
        meta = schema_mod.read_meta(conn)
        if meta is None or meta.get("role") != "agent":
            raise RuntimeError(
                f"Session database {db} has schema role {None if meta is None else meta.get('role')}; "
                "expected agent."
            )
        owner = meta.get("agent_id")
        if isinstance(owner, str) and owner and owner != agent_id:
            raise RuntimeError(f"Session database {db} belongs to agent {owner}; requested agent {agent_id}.")
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise RuntimeError(f"integrity_check failed: {check}")
        db_before, wal_before = db_sizes(db)
        freelist_before = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise RuntimeError(f"quick_check after VACUUM failed: {check}")
        freelist_after = conn.execute("PRAGMA freelist_count").fetchone()[0]
    except sqlite3.Error as exc:
        raise RuntimeError(str(exc)) from None
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc)
        raise RuntimeError(message) from None
    finally:
        conn.close()
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        try:
            os.chmod(path, FILE_MODE)
        except OSError:
            pass
    db_after, wal_after = db_sizes(db)
    return {
        "dbSizeAfterBytes": db_after,
        "dbSizeBeforeBytes": db_before,
        "freelistAfterPages": freelist_after,
        "freelistBeforePages": freelist_before,
        "pageSizeBytes": page_size,
        "reclaimedBytes": max(0, db_before + wal_before - db_after - wal_after),
        "skipped": False,
        "walSizeAfterBytes": wal_after,
        "walSizeBeforeBytes": wal_before,
    }


def run_compact(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("compact")
    for target in targets:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        report.targets.append(tr)
        info = classify_db(target.sqlite_path)
        if info.kind == "missing":
            tr.compact = _skipped()
            continue
        if info.kind == "openclaw":
            tr.compact = _skipped()
            tr.add(
                "sqlite_compact_failed",
                f"SQLite database compact failed: refusing to write to {target.sqlite_path}: it is a real OpenClaw "
                f"agent database ({info.detail}); openclaw-cli never writes to OpenClaw databases. Compact it "
                "with OpenClaw's own `openclaw doctor --session-sqlite compact`.",
            )
            continue
        if info.kind != "ours" or info.error:
            tr.compact = _skipped()
            tr.add("sqlite_compact_failed", f"SQLite database compact failed: {info.error or info.detail}")
            continue
        try:
            tr.compact = compact_db(target.sqlite_path, target.agent_id, ctx.busy_timeout_ms)
        except RuntimeError as exc:
            tr.compact = _skipped()
            tr.add("sqlite_compact_failed", f"SQLite database compact failed: {exc}")
            continue
        tr.sqlite_entries = _entries(target.sqlite_path)
    return report


def _entries(db: Path) -> int:
    from openclaw_cli.migration.verify import connect_ro

    try:
        conn = connect_ro(db)
        try:
            return int(conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
