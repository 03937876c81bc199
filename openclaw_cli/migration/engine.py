"""Running one `doctor --session-sqlite <mode>` over selected targets (`ops/doctor.py` selects them):
take the state-ownership lock for destructive modes, run the mode, return the report."""

from __future__ import annotations

import os
from pathlib import Path

from openclaw_cli.migration.context import MigrationContext, Options, Progress
from openclaw_cli.migration.report import Report
from openclaw_cli.migration.scope import DESTRUCTIVE_MODES, guard_explicit_store
from openclaw_cli.paths import StatePaths, Target


def make_context(
    options: Options, *, paths: StatePaths, progress: Progress | None = None
) -> MigrationContext:
    # symlinks above the state dir are resolved once; below it every path is checked (D6.7)
    paths = paths.with_state_dir(Path(os.path.realpath(paths.state_dir)))
    config = None
    if options.store is None:
        from openclaw_cli.config import load_config, session_store_template

        config = load_config(paths)
        paths = paths.with_session_store(session_store_template(config))
    busy = 60000
    try:
        from openclaw_cli.config import sqlite_busy_timeout_ms, write_lock_settings

        busy = sqlite_busy_timeout_ms(write_lock_settings(config))
    except Exception:  # pragma: no cover - defaults are always valid
        pass
    return MigrationContext(paths, config, options, progress or Progress(), busy_timeout_ms=busy)


def run(ctx: MigrationContext, targets: list[Target]) -> Report:
    options = ctx.options
    try:
        if options.mode in DESTRUCTIVE_MODES:
            for target in targets:
                if target.explicit:
                    guard_explicit_store(options.mode, target, ctx.state_dir)
            from openclaw_cli.migration.ownership import state_ownership

            # the import takes its owner file (and sweeps) after its read-only checks, so a
            # refused import creates nothing in the state dir (`ImportRun.run`)
            deferred = options.mode == "import"
            with state_ownership(ctx.state_dir, options.mode, defer_owner_file=deferred) as claim:

                def claim_state(listed: dict[Path, list[str]] | None = None) -> None:
                    claim.take_owner_file()
                    _sweep_leftovers(ctx, targets, listed or {})

                ctx.claim_state = claim_state
                if not deferred:
                    claim_state()
                if options.mode not in ("restore", "recover"):
                    return _dispatch(ctx, targets)
                from contextlib import ExitStack

                from openclaw_cli.migration.store_locks import hold_legacy_store_locks

                with ExitStack() as held:  # they move sessions.json and transcripts back
                    hold_legacy_store_locks(ctx, targets, held)
                    return _dispatch(ctx, targets)
        return _dispatch(ctx, targets)
    finally:
        ctx.progress.stop()
        ctx.finish()


def _sweep_leftovers(ctx: MigrationContext, targets: list[Target], listed: dict[Path, list[str]]) -> None:
    """A killed run's temp files (a manifest being rewritten, a database being created) go first;
    under the state ownership no live writer of ours can own them. `listed`: directories whose
    names the caller has just listed (the import's space check lists each sessions dir)."""
    from openclaw_cli.store.leftovers import sweep_crash_leftovers

    sweep_crash_leftovers(ctx.paths.migration_runs_dir())
    for directory in {t.sqlite_path.parent for t in targets}:
        sweep_crash_leftovers(directory)
    # a killed import's `sessions.json.lock` (dead pid; a live writer's lock is never touched), also
    # in the sessions dir of every agent on disk: an import killed after it archived `sessions.json`
    # left its lock where the next import, with no legacy store left there, selects no target
    directories = {t.store_path.parent for t in targets if not t.is_sqlite_selector}
    if ctx.options.store is None:
        directories |= {ctx.paths.legacy_store_path(a).parent for a in ctx.paths.discovered_agent_ids()}
    for directory in directories:
        sweep_crash_leftovers(directory, names=listed.get(directory))


def _dispatch(ctx: MigrationContext, targets: list[Target]) -> Report:
    mode = ctx.mode
    if mode == "import":
        from openclaw_cli.migration.importer import ImportRun

        return ImportRun(ctx, targets).run()
    if mode == "dry-run":
        from openclaw_cli.migration.validate import run_dry_run

        return run_dry_run(ctx, targets)
    if mode == "validate":
        from openclaw_cli.migration.validate import run_validate

        return run_validate(ctx, targets)
    if mode == "inspect":
        from openclaw_cli.migration.inspect import run_inspect

        return run_inspect(ctx, targets)
    if mode == "compact":
        from openclaw_cli.migration.vacuum import run_compact

        return run_compact(ctx, targets)
    if mode == "restore":
        from openclaw_cli.migration.restore import run_restore

        return run_restore(ctx, targets)
    from openclaw_cli.migration.recover import run_recover

    return run_recover(ctx, targets)
