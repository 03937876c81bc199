"""`doctor --session-sqlite recover` (§6.10).

With a failed run (no `completedAt`, a `failedAt`, failure reports, or a blocking issue): restore that
run's originals with the restore rules. Without one: a corrupt database file set is moved aside
(`.corrupt-<ms>`, database last, rolled back if any rename fails). Remaining issues are written to
`<manifest>.failure.json` / `.failure.md` (sanitised). openclaw-cli never opens GitHub issues.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

from openclaw_cli.migration import manifest as mf
from openclaw_cli.migration.context import MigrationContext
from openclaw_cli.migration.dbinfo import file_set
from openclaw_cli.migration.report import MigrationRun, Report, TargetReport
from openclaw_cli.migration.restore import _norm, matching_targets, restore_manifests, trusted_keys
from openclaw_cli.paths import Target

REASON = "doctor recover completed with remaining issues"


def _discard_builds(targets: list[Target]) -> dict[Path, list[str]]:
    """D22: the unpublished database of an interrupted or failed import is a copy of a legacy store
    that is still in place; undoing the import removes it."""
    from openclaw_cli.migration import staging

    out: dict[Path, list[str]] = {}
    for target in targets:
        for build in staging.builds(target.sqlite_path):
            if staging.discard(build):
                out.setdefault(target.sqlite_path, []).append(str(build))
    return out


def run_recover(ctx: MigrationContext, targets: list[Target]) -> Report:
    report = Report("recover")
    discarded = _discard_builds(targets)
    manifests, _bad = mf.load_all(ctx.paths.migration_runs_dir(), ctx.state_dir)
    trusted = trusted_keys(targets)
    failed = [m for m in manifests if m.failed and matching_targets(m, trusted)]
    failed.sort(key=lambda m: (m.sort_stamp, m.path.name))
    if failed:
        out = _recover_run(ctx, failed[-1], targets, report)
        for tr in out.targets:
            tr.discarded_builds = discarded.get(Path(tr.sqlite_path), [])
        return out
    acted = False
    for target in targets:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        tr.discarded_builds = discarded.get(target.sqlite_path, [])
        if _recover_db(ctx, target, tr) or tr.discarded_builds:
            report.targets.append(tr)
            acted = True
    if not acted:
        tr = TargetReport("recover", "", "")
        tr.add("recover_manifest_missing", "No failed session SQLite migration manifest found.")
        report.targets = [tr]
    return report


def _recover_run(
    ctx: MigrationContext, loaded: mf.LoadedManifest, targets: list[Target], report: Report
) -> Report:
    trusted = trusted_keys(targets)
    matches = matching_targets(loaded, trusted)
    selected = {i for i, _ in matches}
    outcome = restore_manifests(ctx, [loaded], [t for _, t in matches])
    _mark_undone(loaded, outcome)
    recovery: dict[int, list[dict[str, Any]]] = {}
    for index, target in matches:
        tr = TargetReport(target.agent_id, str(target.store_path), str(target.sqlite_path))
        for item in outcome.per_target.get(_norm(target.store_path), []):
            tr.add("restore_conflict", f"{item['sourcePath']}: {item['reason']}")
        _recover_db(ctx, target, tr)  # a corrupt database is moved aside here too
        tr.restore = {
            "conflicts": outcome.per_target.get(_norm(target.store_path), []),
            "manifestPaths": [str(loaded.path)],
            "restoredFiles": [
                p
                for p in outcome.restored
                if Path(p).parent in (target.sessions_dir,) or p == str(target.store_path)
            ],
            "skippedFiles": [
                p
                for p in outcome.skipped
                if Path(p).parent in (target.sessions_dir,) or p == str(target.store_path)
            ],
        }
        recovery[index] = [i.to_json() for i in tr.issues]
        report.targets.append(tr)
    run = MigrationRun(loaded.run_id, str(loaded.path))
    report.migration_run = run
    if any(t.issues for t in report.targets) and not loaded.frozen():
        from openclaw_cli.migration.failure import write_failure_reports

        json_path, md_path = write_failure_reports(
            ctx, loaded.path, loaded.data, reason=REASON, recovery_issues=recovery, only_targets=selected
        )
        run.failure_report_json_path = str(json_path)
        run.failure_report_markdown_path = str(md_path)
        report.support_issue = {
            "bodyPath": str(md_path),
            "github": {"status": "unsupported"},
            "title": f"Session SQLite migration recovery report ({loaded.run_id})",
        }
    return report


def _mark_undone(loaded: mf.LoadedManifest, outcome: Any) -> None:
    """Record the recovery attempt in the run's manifest even when it had nothing to put back (an
    import that failed before archiving): read commands then stop calling the import pending."""
    from openclaw_cli.migration.restore import _finish_status, _restore_block, _save

    if isinstance(loaded.data.get("restore"), dict):
        return
    _restore_block(loaded)
    _finish_status(loaded, outcome)
    _save(loaded)


def _inspect_copy(files: list[Path]) -> str | None:
    """Run quick_check / integrity_check / foreign_key_check on a private copy of the file set.
    Returns None when healthy, else the corruption text. Raises OSError when the set cannot be
    inspected at all (e.g. the database path is a directory)."""
    db = files[0]
    tmp = Path(tempfile.mkdtemp(prefix="openclaw-cli-recover-"))
    try:
        os.chmod(tmp, 0o700)
        copy = tmp / db.name
        for path in files:
            if os.path.lexists(path):
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):
                    raise OSError(f"{path} is not a regular file")
                shutil.copyfile(path, tmp / path.name)
        try:
            conn = sqlite3.connect(str(copy), isolation_level=None)
            try:
                for pragma in ("quick_check", "integrity_check"):
                    rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}").fetchall()]
                    if rows != ["ok"]:
                        return f"{pragma}: {'; '.join(rows[:5])}"
                bad = conn.execute("PRAGMA foreign_key_check").fetchall()
                if bad:
                    return f"foreign_key_check: {len(bad)} violation(s)"
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _recover_db(ctx: MigrationContext, target: Target, tr: TargetReport) -> bool:
    """Move a corrupt database file set aside; True when this target had something to recover."""
    files = file_set(target.sqlite_path)
    present = [p for p in files if os.path.lexists(p)]
    if not present:
        return False
    db = target.sqlite_path
    if os.path.lexists(db):
        try:
            problem = _inspect_copy(files)
        except OSError as exc:
            tr.add(
                "sqlite_recovery_inspect_failed",
                f"SQLite database {db} could not be inspected: {exc}. Files were left untouched.",
            )
            return True
        if problem is None:
            return False
    moved, skipped, error = move_aside(files, ctx.now_ms())
    tr.corrupt_recovery = {"movedFiles": moved, "skippedFiles": skipped}
    if error:
        tr.add("sqlite_corrupt_recovery_failed", error)
    return True


def move_aside(files: list[Path], stamp: int) -> tuple[list[str], list[str], str | None]:
    """Rename every existing file of the set with one `.corrupt-<ms>[.n]` suffix, the database last;
    on a failure undo the renames already made."""
    db = files[0]
    suffix = f".corrupt-{stamp}"
    n = 0
    while any(os.path.lexists(f"{p}{suffix}") for p in files):
        n += 1
        suffix = f".corrupt-{stamp}.{n}"
    order = [*files[1:], db]
    done: list[tuple[Path, Path]] = []
    skipped: list[str] = []
    for path in order:
        if not os.path.lexists(path):
            skipped.append(str(path))
            continue
        dest = Path(f"{path}{suffix}")
        try:
            _rename(path, dest)
        except OSError as exc:
            for src, dst in reversed(done):
                try:
                    os.rename(dst, src)
                except OSError:
                    pass
            return (
                [],
                [str(p) for p in files],
                f"Could not move {path} aside: {exc.strerror or exc}; earlier renames were rolled back.",
            )
        done.append((path, dest))
    from openclaw_cli.fsio import fsync_dir

    fsync_dir(db.parent)
    skipped.sort(key=lambda p: [str(f) for f in files].index(p))
    return [str(dst) for _, dst in done], skipped, None


def _rename(src: Path, dst: Path) -> None:
    if os.path.lexists(dst):
        raise FileExistsError(dst)
    os.rename(src, dst)
