"""`openclaw doctor`: the `--session-sqlite <mode>` migration entry (mode checks, target selection,
the run) and the plain doctor's checks beyond the migration preview — legacy config keys, the
schema of each agent database, stale transcript lock files. Read-only unless `fix` or a
destructive mode (D6.1: a plain `doctor` writes nothing)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.errors import OpenClawError
from openclaw_cli.migration.context import Options
from openclaw_cli.migration.scope import GITHUB_ISSUE_ERROR, OPTIONS_WITHOUT_MODE
from openclaw_cli.paths import StatePaths
from openclaw_cli.progress import ProgressFactory


def config_check(paths: StatePaths, loaded: Any, *, fix: bool) -> dict[str, Any]:
    """Problems of the config (unreadable, invalid values, legacy keys); with `fix`, legacy keys
    are removed — never from a config that has other errors."""
    from openclaw_cli.config.legacy_keys import fix_legacy_config, legacy_key_findings

    errors = [f"{e.get('path') or paths.config_path}: {e.get('message')}" for e in loaded.errors]
    legacy = legacy_key_findings(loaded.raw) if loaded.exists else []
    fixed = fix_legacy_config(paths.config_path) if fix and legacy and not errors else []
    return {"path": str(paths.config_path), "findings": errors + legacy, "fixed": fixed}


def database_check(paths: StatePaths, agent_ids: list[str]) -> list[dict[str, Any]]:
    """Each agent DB's kind and schema, opened read-only (nothing created or migrated)."""
    from openclaw_cli.store.detect import open_store_at

    out: list[dict[str, Any]] = []
    for agent_id in agent_ids:
        db = paths.agent_db_path(agent_id)
        if not db.exists():
            continue
        item: dict[str, Any] = {"agentId": agent_id, "path": str(db)}
        try:
            with open_store_at(db, agent_id=agent_id, read_only=True) as store:
                item.update(kind=store.kind, schema=store.schema, readOnly=not store.accepts_writes)
        except OpenClawError as exc:
            item.update(kind=None, schema=None, error=exc.message)
        out.append(item)
    return out


def lock_check(paths: StatePaths, agent_ids: list[str], config: Any, *, fix: bool) -> list[dict[str, Any]]:
    from openclaw_cli.config import write_lock_settings
    from openclaw_cli.store.lock import sweep_stale_locks

    settings = write_lock_settings(config)
    items: list[dict[str, Any]] = []
    for agent_id in agent_ids:
        for item in sweep_stale_locks(paths.sessions_dir(agent_id), settings, remove=fix):
            if item.get("stale"):
                items.append({"agentId": agent_id, **item})
    return items


def run_checks(paths: StatePaths, *, fix: bool) -> dict[str, Any]:
    from openclaw_cli.config import load_config
    from openclaw_cli.ops.targets import known_agent_ids, unconfigured_agent_ids

    loaded = load_config(paths, strict=False)
    config = config_check(paths, loaded, fix=fix)
    if config["fixed"]:
        loaded = load_config(paths, strict=False)  # the file was rewritten
    agent_ids = known_agent_ids(paths, loaded)
    checks: dict[str, Any] = {
        "config": config,
        "databases": database_check(paths, agent_ids),
        "staleLocks": lock_check(paths, agent_ids, loaded, fix=fix),
    }
    unconfigured = unconfigured_agent_ids(paths, loaded)
    if unconfigured:
        checks["unconfiguredAgents"] = unconfigured  # on disk, outside the roster: --all-agents skips them
    warnings = [w for w in loaded.warnings if w not in config["findings"]]  # findings are listed already
    if warnings:
        checks["configWarnings"] = warnings
    return checks


def session_sqlite(paths: StatePaths, options: Options, *, progress: ProgressFactory | None = None) -> Any:
    """`doctor --session-sqlite <mode>`: the migration report (`migration.report.Report`; the
    CLI prints its `to_json()` or renders it, and exits with its `exit_code`)."""
    from openclaw_cli.errors import UsageError
    from openclaw_cli.migration.context import Progress
    from openclaw_cli.migration.engine import make_context, run
    from openclaw_cli.migration.scope import validate_mode
    from openclaw_cli.ops.targets import select_migration_targets

    options.mode = validate_mode(options.mode)
    if options.github_issue and options.mode != "recover":
        raise UsageError(GITHUB_ISSUE_ERROR)
    ctx = make_context(options, paths=paths, progress=Progress(progress))
    targets = select_migration_targets(
        options.mode,
        ctx.paths,
        ctx.config,
        agent=options.agent,
        all_agents=options.all_agents,
        store=options.store,
    )
    return run(ctx, targets)


__all__ = ["GITHUB_ISSUE_ERROR", "OPTIONS_WITHOUT_MODE", "Options", "run_checks", "session_sqlite"]
