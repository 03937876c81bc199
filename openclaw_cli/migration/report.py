"""The `doctor --session-sqlite` report: per-target counters, issues and the JSON (field names and
order as the real OpenClaw 2026.9.6 outputs). The text of §6.5 is the CLI's (`cli/render_migration.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# storage-migration.md §7.1: warnings never make the run fail. We add `entry_alias_merged`
# (a bare `cron:`/`hook:` row merged into its canonical key, D14).
WARNING_CODES = frozenset(
    {
        "active_sqlite_transcript_jsonl",
        "entry_invalid",
        "entry_alias_merged",
        "entry_key_invalid",  # D22: stored under a substitute key, the original kept in the archived index
        "entry_value_unrepresentable",  # D22: stored with its original text
        "import_pending",  # dry-run: an earlier import of this agent did not complete
        "historical_transcript_deferred",
        "historical_duplicate_settled",
        "legacy_index_informational",
        "plugin_migration_source_retained",
        "retained_plugin_source_index_rebuilt",
        "sqlite_snapshot_deep_json",  # issue 23: valid, read by us, beyond SQLite's json_* depth
        "transcript_archive_failed",
        "transcript_malformed",
        "transcript_missing",
        "unreferenced_jsonl_archive_failed",
    }
)


def is_blocking(code: str) -> bool:
    return code not in WARNING_CODES


@dataclass
class Issue:
    code: str
    message: str
    session_key: str | None = None

    @property
    def blocking(self) -> bool:
        return is_blocking(self.code)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.session_key is not None:
            out["sessionKey"] = self.session_key
        return out

    @classmethod
    def from_json(cls, data: Any) -> Issue | None:
        if not isinstance(data, dict) or not isinstance(data.get("code"), str):
            return None
        key = data.get("sessionKey")
        return cls(data["code"], str(data.get("message", "")), key if isinstance(key, str) else None)


@dataclass
class TargetReport:
    agent_id: str
    store_path: str
    sqlite_path: str
    legacy_entries: int = 0
    sqlite_entries: int = 0
    referenced_transcript_files: int = 0
    imported_entries: int = 0
    imported_transcript_events: int = 0
    validated_entries: int = 0
    validated_transcript_events: int = 0
    archived_transcript_files: list[str] = field(default_factory=list)
    archived_unreferenced_jsonl_files: list[str] = field(default_factory=list)
    archived_legacy_store_files: list[str] = field(default_factory=list)
    unreferenced_jsonl_files: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    db_stats: dict[str, Any] | None = None
    compact: dict[str, Any] | None = None
    restore: dict[str, Any] | None = None
    corrupt_recovery: dict[str, Any] | None = None
    discarded_builds: list[str] = field(default_factory=list)  # unpublished import databases removed (D22)

    def add(self, code: str, message: str, session_key: str | None = None) -> Issue:
        issue = Issue(code, message, session_key)
        self.issues.append(issue)
        return issue

    @property
    def has_blocking(self) -> bool:
        return any(i.blocking for i in self.issues)

    def to_json(self, mode: str) -> dict[str, Any]:
        # Key order copied from the real outputs (tests/fixtures/openclaw-2026.9.6/outputs).
        out: dict[str, Any] = {
            "archivedTranscriptFiles": list(self.archived_transcript_files),
            "archivedUnreferencedJsonlFiles": list(self.archived_unreferenced_jsonl_files),
            "importedEntries": self.imported_entries,
            "importedTranscriptEvents": self.imported_transcript_events,
            "issues": [i.to_json() for i in self.issues],
            "legacyEntries": self.legacy_entries,
            "referencedTranscriptFiles": self.referenced_transcript_files,
            "sqliteEntries": self.sqlite_entries,
            "unreferencedJsonlFiles": list(self.unreferenced_jsonl_files),
            "validatedEntries": self.validated_entries,
            "validatedTranscriptEvents": self.validated_transcript_events,
            "agentId": self.agent_id,
        }
        if mode != "recover":
            out["archivedLegacyStoreFiles"] = list(self.archived_legacy_store_files)
        out["sqlitePath"] = self.sqlite_path
        out["storePath"] = self.store_path
        if self.db_stats is not None:
            out["dbStats"] = self.db_stats
        if self.compact is not None:
            out["compact"] = self.compact
        if self.restore is not None:
            out["restore"] = self.restore
        if self.corrupt_recovery is not None:
            out["corruptRecovery"] = self.corrupt_recovery
        if self.discarded_builds:
            out["discardedImportBuilds"] = list(self.discarded_builds)
        return out


# a target's path lists and their names in its `to_json` document (`Report.totals`)
_RENDERED = {
    "archived_transcript_files": "archivedTranscriptFiles",
    "archived_unreferenced_jsonl_files": "archivedUnreferencedJsonlFiles",
    "archived_legacy_store_files": "archivedLegacyStoreFiles",
    "unreferenced_jsonl_files": "unreferencedJsonlFiles",
}


@dataclass
class MigrationRun:
    run_id: str
    manifest_path: str
    failure_report_json_path: str | None = None
    failure_report_markdown_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.failure_report_json_path:
            out["failureReportJsonPath"] = self.failure_report_json_path
        if self.failure_report_markdown_path:
            out["failureReportMarkdownPath"] = self.failure_report_markdown_path
        out["manifestPath"] = self.manifest_path
        out["runId"] = self.run_id
        return out


@dataclass
class Report:
    mode: str
    targets: list[TargetReport] = field(default_factory=list)
    migration_run: MigrationRun | None = None
    support_issue: dict[str, Any] | None = None

    @property
    def has_blocking(self) -> bool:
        return any(t.has_blocking for t in self.targets)

    @property
    def exit_code(self) -> int:
        return 1 if self.has_blocking else 0

    def totals(self, rendered: list[dict[str, Any]] | None = None) -> dict[str, int]:
        """Sums; `sqliteEntries` = the max per distinct DB summed; archive totals count distinct paths.
        `rendered`: the targets' `to_json` documents, whose path lists are counted instead of the
        targets' own (an import's archived paths are read back from its MoveLog: 20,000 of them
        read once for the document, not twice)."""
        per_db: dict[str, int] = {}
        for t in self.targets:
            per_db[t.sqlite_path] = max(per_db.get(t.sqlite_path, 0), t.sqlite_entries)

        def distinct(attr: str) -> int:
            seen: set[str] = set()
            if rendered is not None:
                for doc in rendered:
                    seen.update(doc.get(_RENDERED[attr], ()))
                return len(seen)
            for t in self.targets:
                seen.update(getattr(t, attr))
            return len(seen)

        totals: dict[str, int] = {}
        if self.mode != "recover":
            totals["archivedLegacyStoreFiles"] = distinct("archived_legacy_store_files")
        totals["archivedTranscriptFiles"] = distinct("archived_transcript_files")
        totals["archivedUnreferencedJsonlFiles"] = distinct("archived_unreferenced_jsonl_files")
        totals["importedEntries"] = sum(t.imported_entries for t in self.targets)
        totals["importedTranscriptEvents"] = sum(t.imported_transcript_events for t in self.targets)
        totals["issues"] = sum(len(t.issues) for t in self.targets)
        totals["legacyEntries"] = sum(t.legacy_entries for t in self.targets)
        if self.mode != "recover":
            totals["reclaimedBytes"] = sum(
                int((t.compact or {}).get("reclaimedBytes", 0) or 0) for t in self.targets
            )
        totals["sqliteEntries"] = sum(per_db.values())
        totals["targets"] = len(self.targets)
        totals["unreferencedJsonlFiles"] = distinct("unreferenced_jsonl_files")
        totals["validatedEntries"] = sum(t.validated_entries for t in self.targets)
        totals["validatedTranscriptEvents"] = sum(t.validated_transcript_events for t in self.targets)
        return totals

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.migration_run is not None:
            out["migrationRun"] = self.migration_run.to_json()
        out["mode"] = self.mode
        if self.support_issue is not None:
            out["supportIssue"] = self.support_issue
        out["targets"] = [t.to_json(self.mode) for t in self.targets]
        out["totals"] = self.totals(out["targets"])
        return out
