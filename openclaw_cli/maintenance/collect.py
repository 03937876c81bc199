"""Orphan and tombstone collection (issue 27 §2): `sessions cleanup --orphans | --tombstones`.

* **orphans**: primary transcripts of a file store's sessions dir that no row references (all rows,
  unusable ones included), whatever their age — archived through verified archives, then removed
  (the store's `retire`, D6.2/D15). Only regular files directly in the agent's sessions dir: a
  symbolic link, a subdirectory or anything outside is never looked at. A database store keeps
  its transcripts inside: its orphans are the transcripts no row references (windows whose key has
  no row, events with no window: `store.orphan_sessions`), archived and dropped by `retire` too.
* **tombstones**: `.deleted` / `.reset` archives past `session.maintenance.resetArchiveRetention`
  (`plan_archive_retention`, the release's rule); unset retention keeps them forever (D15).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openclaw_cli.maintenance.artifacts import plan_retention_sweep, referenced_names
from openclaw_cli.store.files import scan_sessions_dir
from openclaw_cli.store.retire import FileAction, Retirement

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


@dataclass
class ReclaimPlan:
    orphans: list[FileAction] = field(default_factory=list)
    tombstones: list[FileAction] = field(default_factory=list)
    retention_ms: int | None = None
    # a database store: (session id, events, bytes) of the transcripts it keeps that no row references
    orphan_sessions: list[tuple[str, int, int]] = field(default_factory=list)

    def retirement(self) -> Retirement:
        return Retirement(
            [],
            archive_actions=list(self.orphans),
            unlink_actions=list(self.tombstones),
            session_ids=[sid for sid, _, _ in self.orphan_sessions],
            sweep_locks=False,
        )


def plan_reclaim(
    store: SessionStore, *, orphans: bool, tombstones: bool, retention_ms: int | None, now_ms: float
) -> ReclaimPlan:
    from openclaw_cli.ids import is_valid_legacy_session_id

    plan = ReclaimPlan(retention_ms=retention_ms)
    root = Path(store.sessions_dir)
    snapshot = scan_sessions_dir(root)
    if orphans and store.transcripts_in_files:
        rows = store.load_rows() if Path(store.path).exists() else {}
        entries = {**rows, **store.load_entries()}
        referenced = referenced_names(entries.values(), root, snapshot)
        for name, f in sorted(snapshot.files.items()):
            if "/" in name or name in referenced or snapshot.kind(name) != "transcript":
                continue
            stem = name[: -len(".jsonl")]
            sid = stem if is_valid_legacy_session_id(stem) else None
            plan.orphans.append(FileAction(f.name, f.size, f.mtime_ms, "transcript", True, "sweep", sid))
    elif orphans and Path(store.path).exists():
        plan.orphan_sessions = store.orphan_sessions()
    if tombstones:
        retention = plan_retention_sweep(snapshot, retention_ms, now_ms)
        for action in retention.removals if retention is not None else ():
            if ".deleted." in action.name or ".reset." in action.name:
                plan.tombstones.append(action)
    return plan
