"""Entry point of `doctor --session-sqlite <mode>`: resolve the state, select targets, take the
state-ownership lock for destructive modes, run the mode, return the report."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from openclaw_cli.errors import UsageError
from openclaw_cli.migration.context import Context, Options, Progress
from openclaw_cli.migration.report import Report
from openclaw_cli.migration.targets import (
    DESTRUCTIVE_MODES,
    GITHUB_ISSUE_ERROR,
    guard_explicit_store,
    select_targets,
    validate_mode,
)
from openclaw_cli.paths import StatePaths, resolve_paths


def make_context(options: Options, *, paths: StatePaths | None = None, progress: Progress | None = None) -> Context:
    paths = paths or resolve_paths()
    # symlinks above the state dir are resolved once; below it every path is checked (D6.7)
    paths = dataclasses.replace(paths, state_dir=Path(os.path.realpath(paths.state_dir)))
    config = None
    if options.store is None:
        from openclaw_cli.config import load_config

        config = load_config(paths)
    busy = 60000
    try:
        from openclaw_cli.config import sqlite_busy_timeout_ms, write_lock_settings

        busy = sqlite_busy_timeout_ms(write_lock_settings(config))
    except Exception:  # pragma: no cover - defaults are always valid
        pass
    return Context(paths, config, options, progress or Progress(), busy_timeout_ms=busy)


def run(options: Options, *, paths: StatePaths | None = None, progress: Progress | None = None) -> Report:
    options.mode = validate_mode(options.mode)
    if options.github_issue and options.mode != "recover":
        raise UsageError(GITHUB_ISSUE_ERROR)
    ctx = make_context(options, paths=paths, progress=progress)
    targets = select_targets(options.mode, ctx.paths, ctx.config, agent=options.agent,
                             all_agents=options.all_agents, store=options.store)
    try:
        if options.mode in DESTRUCTIVE_MODES:
            for target in targets:
                if target.explicit:
                    guard_explicit_store(options.mode, target, ctx.state_dir)
            from openclaw_cli.migration.ownership import state_ownership

            with state_ownership(ctx.state_dir, options.mode):
                return _dispatch(ctx, targets)
        return _dispatch(ctx, targets)
    finally:
        ctx.progress.stop()
        ctx.finish()


def _dispatch(ctx: Context, targets: list) -> Report:
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
        from openclaw_cli.migration.compact import run_compact

        return run_compact(ctx, targets)
    if mode == "restore":
        from openclaw_cli.migration.restore import run_restore

        return run_restore(ctx, targets)
    from openclaw_cli.migration.recover import run_recover

    return run_recover(ctx, targets)
