"""`doctor --session-sqlite restore` (§6.9, spec D13): put archived originals back, never touching
SQLite and never overwriting anything.

Manifests are matched to the selected (trusted) targets by agent id, store path and database path
after mapping their paths into the current state dir (ours are relative to it; OpenClaw's absolute
paths are re-rooted by their `agents/<id>/…` suffix). An archive is accepted when its sha256 and
size match the recorded identity — inode numbers are not required, so a state dir that was copied
or moved restores fine. Files go back with the same no-copy hard-link protocol as the import.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.fsio import DIR_MODE, fsync_dir
from openclaw_cli.jsonutil import JSONDecodeError, loads
from openclaw_cli.migration import manifest as mf
from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.publish import (
    ArtifactError,
    Identity,
    Move,
    hash_file,
    publish_batch,
    symlink_component,
)
from openclaw_cli.migration.report import Report, TargetReport
from openclaw_cli.paths import Target

BATCH = 512


def _norm(path: Path) -> str:
    return os.path.normpath(str(path))


def trusted_keys(targets: list[Target]) -> dict[tuple[str, str, str], Target]:
    return {(t.agent_id, _norm(t.store_path), _norm(t.sqlite_path)): t for t in targets}


def matching_targets(
    loaded: mf.LoadedManifest, trusted: dict[tuple[str, str, str], Target]
) -> list[tuple[int, Target]]:
    out = []
    for i, target in enumerate(loaded.data.get("targets", [])):
        from openclaw_cli.ids import normalize_agent_id

        key = (
            normalize_agent_id(str(target.get("agentId", ""))),
            _norm(loaded.mapper.to_real(target["storePath"])),
            _norm(loaded.mapper.to_real(target["sqlitePath"])),
        )
        if key in trusted:
            out.append((i, trusted[key]))
    return out


@dataclass
class Candidate:
    loaded: mf.LoadedManifest
    target_index: int
    target: Target
    move: dict[str, Any]
    source: Path
    archive: Path

    @property
    def kind(self) -> str:
        return str(self.move.get("kind"))

    @property
    def identity(self) -> Identity | None:
        artifact = self.move.get("artifact")
        return Identity.from_json(artifact.get("identity")) if isinstance(artifact, dict) else None

    def consumed(self) -> bool:
        restore = self.loaded.data.get("restore")
        if not isinstance(restore, dict):
            return False
        return self.move["archivePath"] in (restore.get("consumedArchives") or [])


@dataclass
class RestoreOutcome:
    restored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    per_target: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # store path -> conflicts

    def conflict(self, c: Candidate, reason: str) -> None:
        item = {"archivePath": str(c.archive), "reason": reason, "sourcePath": str(c.source)}
        self.conflicts.append(item)
        self.per_target.setdefault(_norm(c.target.store_path), []).append(item)


def restore_manifests(
    ctx: MigrationContext, manifests: list[mf.LoadedManifest], targets: list[Target]
) -> RestoreOutcome:
    """Restore every retained artifact the given manifests recorded for the trusted targets."""
    from openclaw_cli.migration.importer import reconcile_interrupted

    reconcile_interrupted(ctx)
    trusted = trusted_keys(targets)
    outcome = RestoreOutcome()
    by_source: dict[str, list[Candidate]] = {}
    for loaded in manifests:
        matches = matching_targets(loaded, trusted)
        if not matches:
            continue
        outcome.manifests.append(str(loaded.path))
        for index, target in matches:
            for move in loaded.data["targets"][index].get("plannedMoves", []):
                src = loaded.mapper.to_real(move["sourcePath"])
                dst = loaded.mapper.to_real(move["archivePath"])
                by_source.setdefault(_norm(src), []).append(Candidate(loaded, index, target, move, src, dst))

    chosen: list[Candidate] = []
    for candidates in by_source.values():
        source = candidates[0].source
        if os.path.lexists(source) or len(candidates) == 1:
            chosen.extend(candidates)
            continue
        pick = _select(candidates, outcome)
        if pick is not None:
            chosen.append(pick)

    moves: list[Move] = []
    for c in chosen:
        move = _plan_one(c, outcome)
        if move is not None:
            moves.append(move)
    ctx.progress.start("Restoring", len(moves))
    for start in range(0, len(moves), BATCH):
        batch = moves[start : start + BATCH]
        result = publish_batch(batch, checkpoint=ctx.checkpoint)
        touched: dict[int, mf.LoadedManifest] = {}
        for move in result.done:
            c = move.payload  # a Candidate, as `c` is above
            outcome.restored.append(str(c.source))
            _note_restore(c, consumed=True)
            touched[id(c.loaded)] = c.loaded
        for move in result.failed:
            c = move.payload
            outcome.conflict(c, _failure_reason(move.error))
        for loaded in touched.values():
            _save(loaded)
        ctx.progress.advance(len(batch))
    # final status per manifest that had something to do
    seen: dict[int, mf.LoadedManifest] = {}
    for candidates in by_source.values():
        for c in candidates:
            seen[id(c.loaded)] = c.loaded
    for loaded in seen.values():
        _finish_status(loaded, outcome)
        _save(loaded)
    return outcome


def _failure_reason(error: str | None) -> str:
    if error and "changed" in error:
        return "archive changed after restore planning; refusing restore"
    if error and "already exists" in error:
        return "source and archive both exist; refusing to overwrite source"
    return f"restore failed: {error}" if error else "restore failed"


def _select(candidates: list[Candidate], outcome: RestoreOutcome) -> Candidate | None:
    """Several manifests recorded archives for one missing source (§6.9 step 3)."""
    available: list[tuple[Candidate, Identity]] = []
    missing_without_evidence = False
    for c in candidates:
        if not os.path.lexists(c.archive):
            if c.consumed():
                if str(c.source) not in outcome.skipped:
                    outcome.skipped.append(str(c.source))
                continue
            missing_without_evidence = True
            outcome.conflict(
                c, "archive is missing without a recorded prior restore; refusing another candidate"
            )
            continue
        try:
            available.append((c, hash_file(c.archive)))
        except (OSError, ArtifactError):
            outcome.conflict(c, "archive could not be read safely; refusing restore")
            return None
    if missing_without_evidence:
        for c, _ in available:
            outcome.conflict(
                c,
                "another archive for this source is unavailable without prior restore evidence; "
                "refusing automatic selection",
            )
        return None
    if not available:
        return None
    if len({c.kind for c, _ in available}) > 1:
        for c, _ in available:
            outcome.conflict(c, "recorded archives disagree on artifact kind; refusing automatic selection")
        return None
    if len({ident.sha256 for _, ident in available}) == 1:
        for c, _ in available[1:]:
            _note_restore(c, consumed=False)
        return available[0][0]
    if available[0][0].kind == "legacy-store":
        nonempty = []
        for c, ident in available:
            try:
                data = loads(Path(c.archive).read_bytes())
            except (OSError, *JSONDecodeError):
                outcome.conflict(c, "session index archive is not valid JSON; refusing automatic selection")
                return None
            if not isinstance(data, dict):
                outcome.conflict(
                    c, "session index archive is not a JSON object; refusing automatic selection"
                )
                return None
            if data:
                nonempty.append((c, ident.sha256))
        if len({sha for _, sha in nonempty}) == 1:
            return nonempty[0][0]
        for c, _ in available:
            outcome.conflict(
                c, "multiple distinct nonempty session indexes require explicit archive selection"
            )
        return None
    for c, _ in available:
        outcome.conflict(c, "multiple distinct archives require explicit archive selection")
    return None


def _plan_one(c: Candidate, outcome: RestoreOutcome) -> Move | None:
    artifact = c.move.get("artifact")
    disposal = artifact.get("disposal") if isinstance(artifact, dict) else None
    state = disposal.get("state") if isinstance(disposal, dict) else "retained"
    if state == "disposed":
        outcome.conflict(c, "rollback original was intentionally disposed by update cleanup")
        return None
    if state == "pending-disposal":
        outcome.conflict(c, "rollback original has pending cleanup; finish cleanup before restore")
        return None
    state_dir = c.loaded.mapper.state_dir
    for path in (c.source.parent, c.archive.parent):
        if symlink_component(path, state_dir) is not None:
            outcome.conflict(c, "source or archive parent is a symbolic link; refusing restore")
            return None
    source_exists = os.path.lexists(c.source)
    archive_exists = os.path.lexists(c.archive)
    if source_exists and not archive_exists:
        if str(c.source) not in outcome.skipped:
            outcome.skipped.append(str(c.source))
        return None
    if source_exists and archive_exists:
        outcome.conflict(c, "source and archive both exist; refusing to overwrite source")
        return None
    if not archive_exists:
        outcome.conflict(c, "source and archive are both missing")
        return None
    try:
        st = os.lstat(c.archive)
    except OSError:
        outcome.conflict(c, "archive could not be read safely; refusing restore")
        return None
    if not stat.S_ISREG(st.st_mode):
        outcome.conflict(c, "archive is not a regular file; refusing restore")
        return None
    try:
        now = hash_file(c.archive)
    except ArtifactError as exc:
        reason = (
            "archive changed while it was inspected; refusing restore"
            if "changed" in str(exc)
            else ("archive is not a regular file; refusing restore")
        )
        outcome.conflict(c, reason)
        return None
    except OSError:
        outcome.conflict(c, "archive could not be read safely; refusing restore")
        return None
    recorded = c.identity
    if recorded is not None and not recorded.same_content(now):
        outcome.conflict(c, "archive content does not match the recorded sha256; refusing restore")
        return None
    if not c.source.parent.is_dir():
        try:
            os.makedirs(c.source.parent, DIR_MODE, exist_ok=True)
            fsync_dir(c.source.parent.parent)
        except OSError:
            outcome.conflict(c, "source directory could not be recreated; refusing restore")
            return None
    return Move(c.archive, c.source, now, payload=c)


def _restore_block(loaded: mf.LoadedManifest) -> dict[str, Any]:
    block = loaded.data.get("restore")
    if not isinstance(block, dict):
        block = {}
        loaded.data["restore"] = block
    block["attemptedAt"] = mf.iso_now()
    block.setdefault("consumedArchives", [])
    block.setdefault("conflicts", [])
    block.setdefault("restoredFiles", [])
    block.setdefault("skippedFiles", [])
    block.setdefault("status", "noop")
    return block


def _note_restore(c: Candidate, *, consumed: bool) -> None:
    block = _restore_block(c.loaded)
    if consumed:
        if c.move["archivePath"] not in block["consumedArchives"]:
            block["consumedArchives"].append(c.move["archivePath"])
        if c.move["sourcePath"] not in block["restoredFiles"]:
            block["restoredFiles"].append(c.move["sourcePath"])
        block["status"] = "restored"
    elif c.move["sourcePath"] not in block["skippedFiles"]:
        block["skippedFiles"].append(c.move["sourcePath"])


def _finish_status(loaded: mf.LoadedManifest, outcome: RestoreOutcome) -> None:
    block = _restore_block(loaded)
    mine = {m["sourcePath"] for t in loaded.data["targets"] for m in t.get("plannedMoves", [])}
    real = {str(loaded.mapper.to_real(s)): s for s in mine}
    conflicts = [c for c in outcome.conflicts if c["sourcePath"] in real]
    block["conflicts"] = [
        {
            "sourcePath": real[c["sourcePath"]],
            "archivePath": loaded.mapper.to_manifest(Path(c["archivePath"])),
            "reason": c["reason"],
        }
        for c in conflicts
    ]
    for s in outcome.skipped:
        if s in real and real[s] not in block["skippedFiles"]:
            block["skippedFiles"].append(real[s])
    restored_now = any(r in real for r in outcome.restored)
    if conflicts and (restored_now or block["restoredFiles"]):
        block["status"] = "partial"
    elif conflicts:
        block["status"] = "conflicts"
    elif restored_now or block["restoredFiles"]:
        block["status"] = "restored"
    else:
        block["status"] = "noop"


def _save(loaded: mf.LoadedManifest) -> None:
    if loaded.frozen():
        return
    loaded.save()


def run_restore(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("restore")
    manifests, _bad = mf.load_all(ctx.paths.migration_runs_dir(), ctx.state_dir)
    outcome = restore_manifests(ctx, manifests, targets)
    reports = [TargetReport(t.agent_id, str(t.store_path), str(t.sqlite_path)) for t in targets]
    if not reports:
        reports = [TargetReport("restore", "", "")]
    for tr in reports:
        for item in outcome.per_target.get(_norm(Path(tr.store_path)), []) if tr.store_path else []:
            tr.add("restore_conflict", f"{item['sourcePath']}: {item['reason']}")
    if not targets:
        for item in outcome.conflicts:
            reports[0].add("restore_conflict", f"{item['sourcePath']}: {item['reason']}")
    reports[0].restore = {
        "conflicts": outcome.conflicts,
        "manifestPaths": outcome.manifests,
        "restoredFiles": outcome.restored,
        "skippedFiles": outcome.skipped,
    }
    report.targets = reports
    return report
