"""`doctor --session-sqlite inspect` (§6.15): counts, `dbStats` (sizes, `quick_check`, the largest
sessions) for our databases and real OpenClaw schema-23 ones, legacy counts when a store exists, and
legacy JSONL still lying beside SQLite-backed sessions. Read-only: never creates a database."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from openclaw_cli.errors import OpenClawError
from openclaw_cli.jsonutil import JSONDecodeError, loads
from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.dbinfo import classify_db, size_of
from openclaw_cli.migration.legacy_reader import Record, build_records, read_index, unreferenced_jsonl
from openclaw_cli.migration.report import Report, TargetReport
from openclaw_cli.paths import Target, transcript_candidates

ACTIVE_JSONL = (
    "SQLite-backed session has a legacy JSONL transcript awaiting verification: {path}. Run openclaw doctor --fix "
    "or openclaw doctor --session-sqlite recover with the Gateway stopped to verify, import any missing events, "
    "and archive the original."
)


def run_inspect(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("inspect")
    for target in targets:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        report.targets.append(tr)
        if not target.is_sqlite_selector:
            _legacy_counts(target, tr)
        inspect_db(target, tr)
    return report


def _legacy_counts(target: Target, tr: TargetReport) -> None:
    index = read_index(target.store_path)
    tr.issues.extend(index.issues)
    records: list[Record] = []
    if index.readable:
        records, _issues = build_records(index, target.sessions_dir, agent_id=target.agent_id)
        tr.legacy_entries = len(records)
        tr.referenced_transcript_files = sum(1 for r in records if not r.sqlite_marker)
    if os.path.isdir(target.sessions_dir):
        tr.unreferenced_jsonl_files = [str(p) for p in unreferenced_jsonl(target.sessions_dir, records)]


def inspect_db(target: Target, tr: TargetReport) -> None:
    db = target.sqlite_path
    stats: dict[str, Any] = {
        "dbSizeBytes": size_of(db),
        "largestSessions": [],
        "totalTranscriptRowBytes": 0,
        "walSizeBytes": size_of(Path(f"{db}-wal")),
    }
    tr.db_stats = stats
    info = classify_db(db)
    if info.kind == "missing":
        return
    if info.kind in ("corrupt", "invalid", "foreign", "empty"):
        if info.kind != "empty":
            tr.add("sqlite_corrupt", f"SQLite database could not be inspected: {info.detail}")
            tr.add(
                "sqlite_active_transcript_scan_failed",
                f"{db}: the active transcript scan failed: the database could not be read.",
            )
        return
    from openclaw_cli.store.sqlite_common import open_readonly

    try:
        handle = open_readonly(db)
    except (OpenClawError, sqlite3.Error) as exc:
        message = exc.message if isinstance(exc, OpenClawError) else str(exc)
        tr.add("sqlite_corrupt", f"SQLite database could not be inspected: {message}")
        tr.add("sqlite_active_transcript_scan_failed", f"{db}: the active transcript scan failed: {message}")
        return
    try:
        conn = handle.conn
        check = _quick_check(conn)
        stats_out = {
            "dbSizeBytes": stats["dbSizeBytes"],
            "integrityCheck": check,
            "largestSessions": [],
            "totalTranscriptRowBytes": 0,
            "walSizeBytes": stats["walSizeBytes"],
        }
        tr.db_stats = stats_out
        if check != "ok":
            tr.add("sqlite_integrity_check_failed", f"SQLite quick_check reported: {check}")
        if info.error:
            tr.add("sqlite_read_failed", info.error)
            return
        try:
            valid = " WHERE entry_valid = 1" if info.kind == "openclaw" else ""
            tr.sqlite_entries = conn.execute(f"SELECT count(*) FROM session_nodes{valid}").fetchone()[0]
            rows = conn.execute(
                "SELECT session_id, count(*), sum(coalesce(event_utf8_bytes, length(CAST(event_json AS BLOB))))"
                " FROM transcript_events GROUP BY session_id"
            ).fetchall()
            stats_out["totalTranscriptRowBytes"] = sum(int(r[2] or 0) for r in rows)
            rows.sort(key=lambda r: (-int(r[2] or 0), r[0]))
            stats_out["largestSessions"] = [
                {"events": n, "rowBytes": int(b or 0), "sessionId": sid} for sid, n, b in rows[:5]
            ]
            entries = conn.execute(f"SELECT session_key, entry_json FROM session_nodes{valid}").fetchall()
        except sqlite3.Error as exc:
            tr.add("sqlite_corrupt", f"SQLite database could not be inspected: {exc}")
            tr.add("sqlite_active_transcript_scan_failed", f"{db}: the active transcript scan failed: {exc}")
            return
        _active_jsonl(target, tr, entries)
    finally:
        handle.close()


def _quick_check(conn: sqlite3.Connection) -> str:
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return str(exc)
    return "; ".join(str(r[0]) for r in rows) or "ok"


def _active_jsonl(target: Target, tr: TargetReport, entries: list[tuple[str, str]]) -> None:
    sessions_dir = (
        target.sessions_dir
        if not target.is_sqlite_selector
        else target.sqlite_path.parent.parent / "sessions"
    )
    if not os.path.isdir(sessions_dir):
        return
    try:
        names = set(os.listdir(sessions_dir))
    except OSError as exc:
        tr.add("sqlite_active_transcript_scan_failed", f"{sessions_dir}: {exc.strerror or exc}")
        return
    if not any(n.endswith(".jsonl") for n in names):
        return
    for key, text in entries:
        try:
            entry = loads(text)
        except JSONDecodeError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
            continue
        session_file = entry.get("sessionFile") if isinstance(entry.get("sessionFile"), str) else None
        for candidate in transcript_candidates(sessions_dir, entry["sessionId"], session_file):
            if candidate.parent == sessions_dir and candidate.name in names:
                tr.add("active_sqlite_transcript_jsonl", ACTIVE_JSONL.format(path=candidate), key)
                break
