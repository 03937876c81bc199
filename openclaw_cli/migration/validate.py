"""`dry-run` (§6.13) and `validate` (§6.14): read-only, lock-free, never create a database and never
move a file (spec D6.1)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.dbinfo import classify_db
from openclaw_cli.migration.legacy_reader import (
    Record,
    build_records,
    discover_orphans,
    malformed_message,
    read_index,
    scan_transcript,
    unreferenced_jsonl,
)
from openclaw_cli.migration.report import Report, TargetReport
from openclaw_cli.paths import Target
from openclaw_cli.store.quarantine import PREFIX_BYTES, original_bytes


def plan_target(
    ctx: MigrationContext, target: Target, report: TargetReport, *, orphans: bool
) -> list[Any] | None:
    """Read the legacy index and resolve its records (as the import will); None when unreadable."""
    from openclaw_cli.migration.importer import _merge_aliases, _owner_filter

    index = read_index(target.store_path)
    report.issues.extend(index.issues)
    if index.exists and not index.readable:
        return None
    owner_filter = _owner_filter(target, ctx) if target.shared else None
    records, issues = build_records(
        index, target.sessions_dir, agent_id=target.agent_id, owner_filter=owner_filter
    )
    report.issues.extend(issues)
    if orphans and not target.shared:
        records += discover_orphans(target.sessions_dir, records, agent_id=target.agent_id)
    states = _merge_aliases(records, report)
    report.legacy_entries = sum(1 for s in states if s.alias_of is None)
    report.referenced_transcript_files = sum(
        1 for s in states if s.alias_of is None and not s.rec.sqlite_marker
    )
    return states


def _transcript_issue(report: TargetReport, rec: Record, scan: Any) -> bool:
    """Report what stops a transcript from being read; True when lines were counted."""
    if rec.problem is not None:
        report.add("transcript_archive_failed", rec.problem, rec.source_key)
        return False
    if rec.transcript is None or scan is None or scan.missing:
        report.add("transcript_missing", f"Transcript file is missing: {rec.expected}", rec.source_key)
        return False
    if scan.unreadable is not None:
        report.add("transcript_unreadable", scan.unreadable, rec.source_key)
        return False
    if scan.error is not None:
        report.add("transcript_malformed", malformed_message(scan.error, scan.malformed), rec.source_key)
    return True


def run_dry_run(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("dry-run")
    for target in targets:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        report.targets.append(tr)
        states = plan_target(ctx, target, tr, orphans=True)
        tr.sqlite_entries = _existing_entries(target.sqlite_path)
        _preview_database(ctx, target, tr)
        if states is None:
            continue
        ctx.progress.start(f"Reading {target.agent_id}", len(states))
        for state in states:
            rec = state.rec
            ctx.progress.advance(1)
            if rec.sqlite_marker:
                tr.validated_entries += 1
                continue
            scan = (
                scan_transcript(rec.transcript, want_digest=False)
                if rec.transcript and not rec.problem
                else None
            )
            if _transcript_issue(tr, rec, scan) and scan is not None:
                tr.validated_entries += 1
                tr.validated_transcript_events += scan.lines
        tr.unreferenced_jsonl_files = [
            str(p) for p in unreferenced_jsonl(target.sessions_dir, [s.rec for s in states])
        ]
    return report


def _preview_database(ctx: MigrationContext, target: Target, tr: TargetReport) -> None:
    """What the import would say about the target's database, said now (issue 13 case 6): a file
    it would refuse, or an earlier import of this agent that did not complete (D22)."""
    from openclaw_cli.migration.dbinfo import db_refusal
    from openclaw_cli.migration.staging import pending_import

    info = classify_db(target.sqlite_path, target.agent_id)
    refusal = db_refusal(target.sqlite_path, info)
    if refusal is not None:
        code = "sqlite_import_refused" if info.kind in ("openclaw", "invalid") else "sqlite_corrupt"
        tr.add(
            code, refusal.message.replace(" Nothing was changed.", "").replace("; nothing was changed.", ".")
        )
    if info.kind == "missing":
        pending = pending_import(ctx.paths.migration_runs_dir(), ctx.state_dir, target.agent_id)
        if pending is not None:
            tr.add("import_pending", pending.notice())


class DbView:
    """Read-only view of the target database: entries (key -> sessionId) and per-session events."""

    def __init__(self, path: Path):
        self.path = path
        self.kind = "missing"
        self.keys: dict[str, str | None] = {}
        self.error: str | None = None
        self._conn: sqlite3.Connection | None = None
        self._store: Any = None
        self._handle: Any = None
        info = classify_db(path)
        self.kind = info.kind
        if info.kind in ("missing", "empty"):
            return
        if info.kind == "ours" and not info.error:
            from openclaw_cli.store.sqlite_common import open_readonly

            self._handle = open_readonly(path)
            self._conn = self._handle.conn
            self.keys = dict(self._conn.execute("SELECT session_key, current_session_id FROM session_nodes"))
            return
        if info.kind == "openclaw":
            from openclaw_cli.errors import OpenClawError
            from openclaw_cli.store.openclaw.store import OpenClawDbStore

            try:
                self._store = OpenClawDbStore(path)
            except OpenClawError as exc:
                self.error = exc.message
                return
            self.keys = {
                k: (v.get("sessionId") if isinstance(v, dict) else None)
                for k, v in self._store.load_entries().items()
            }
            return
        self.error = info.error or info.detail

    def events(self, session_id: str, limit: int) -> tuple[int, str | None]:
        """(stored event count, sha256 over the first `limit` events) — digest only for our DBs,
        where events are stored byte-exact."""
        if self._conn is not None:
            conn = self._conn
            count = conn.execute(
                "SELECT count(*) FROM transcript_events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            conn.text_factory = bytes
            try:
                h = hashlib.sha256()
                for (text,) in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT ?",
                    (session_id, limit),
                ):
                    h.update(original_bytes(text) if text.startswith(PREFIX_BYTES) else text)
                    h.update(b"\n")
            finally:
                conn.text_factory = str
            return count, h.hexdigest()
        if self._store is not None:
            totals = self._store.session_totals().get(session_id)
            return (totals.events if totals else 0), None
        return 0, None

    def snapshot_issues(self) -> list[tuple[str, str, str | None]]:
        """Snapshot rows of a schema-24+ OpenClaw database that are not as its writers leave them."""
        return self._store.snapshot_issues() if self._store is not None else []

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        if self._store is not None:
            self._store.close()


def database_findings(path: Path) -> list[tuple[str, str, str | None]]:
    """The snapshot-row findings of an OpenClaw schema-24+ database at `path` (none for anything
    else, or when it cannot be read: the run reports that itself)."""
    if not path.exists():
        return []
    view = None
    try:
        view = DbView(path)
        return view.snapshot_issues()
    except Exception:  # noqa: BLE001 - selection only; the run reads (and reports) the database again
        return []
    finally:
        if view is not None:
            view.close()


def _existing_entries(path: Path) -> int:
    view = None
    try:
        view = DbView(path)
        return len(view.keys)
    except Exception:
        return 0
    finally:
        if view is not None:
            view.close()


def run_validate(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("validate")
    for target in targets:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        report.targets.append(tr)
        states = plan_target(ctx, target, tr, orphans=True)
        view = DbView(target.sqlite_path)
        try:
            if view.error is not None:
                tr.add("sqlite_read_failed", f"SQLite database could not be read: {view.error}")
                continue
            tr.sqlite_entries = len(view.keys)
            for code, message, key in view.snapshot_issues():
                tr.add(code, message, key)
            if states is None:
                continue
            ctx.progress.start(f"Validating {target.agent_id}", len(states))
            for state in states:
                ctx.progress.advance(1)
                _validate_one(tr, view, state)
        finally:
            view.close()
    return report


def _validate_one(tr: TargetReport, view: DbView, state: Any) -> None:
    rec = state.rec
    entry_ok = True
    if state.alias_of is None:
        stored = view.keys.get(rec.key)
        if rec.key not in view.keys:
            tr.add("sqlite_entry_missing", f"SQLite entry is missing for {rec.key}.", rec.source_key)
            return
        if stored != rec.session_id:
            tr.add(
                "sqlite_entry_mismatch",
                f"SQLite sessionId {stored} does not match {rec.session_id}.",
                rec.source_key,
            )
            return
    if rec.sqlite_marker or rec.transcript is None:
        # no legacy file: what SQLite holds counts as validated (§6.14)
        if entry_ok:
            tr.validated_entries += 1
            tr.validated_transcript_events += view.events(rec.session_id, 0)[0]
        return
    scan = scan_transcript(rec.transcript) if rec.problem is None else None
    if not _transcript_issue(tr, rec, scan) or scan is None:
        return
    have, digest = view.events(rec.session_id, scan.lines)
    if have != scan.lines:
        tr.add(
            "sqlite_transcript_count_mismatch",
            f"SQLite transcript has {have} events; source has {scan.lines}.",
            rec.source_key,
        )
        return
    if digest is not None and digest != scan.digest:
        tr.add(
            "sqlite_transcript_mismatch",
            f"SQLite transcript of session {rec.session_id} differs from {rec.transcript} (sha256 of the lines).",
            rec.source_key,
        )
        return
    if entry_ok:
        tr.validated_entries += 1
    tr.validated_transcript_events += scan.lines
