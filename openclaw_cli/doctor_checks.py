"""Plain `openclaw doctor` checks beyond the migration preview (issue 3 item 6): legacy config
keys, the schema of each agent database, stale transcript lock files. Read-only unless `fix`
(D6.1: a plain `doctor` writes nothing)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.errors import OpenClawError
from openclaw_cli.paths import StatePaths


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
                item.update(kind=store.kind, schema=store.schema, readOnly=store.read_only)
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
    from openclaw_cli.selection import known_agent_ids

    loaded = load_config(paths, strict=False)
    config = config_check(paths, loaded, fix=fix)
    if config["fixed"]:
        loaded = load_config(paths, strict=False)  # the file was rewritten
    agent_ids = known_agent_ids(paths, loaded)
    return {
        "config": config,
        "databases": database_check(paths, agent_ids),
        "staleLocks": lock_check(paths, agent_ids, loaded, fix=fix),
    }


def render_checks(checks: dict[str, Any]) -> list[str]:
    from openclaw_cli.config.legacy_keys import FIX_HEADER
    from openclaw_cli.output import sanitize_text

    lines: list[str] = []
    config = checks["config"]
    if config["fixed"]:
        lines.append(FIX_HEADER)
        lines.extend(f"- {sanitize_text(m)}" for m in config["fixed"])
        lines.append(f"- Backup of the previous config kept beside {sanitize_text(config['path'])} (.bak)")
    elif config["findings"]:
        lines.append("Config problems detected:")
        lines.extend(f"- {sanitize_text(m)}" for m in config["findings"])
    if checks["databases"]:
        lines.append("Agent databases:")
        for db in checks["databases"]:
            state = db.get("error") or f"{db['kind']} ({db['schema']})" + (", read-only" if db.get("readOnly") else "")
            lines.append(f"- {sanitize_text(db['agentId'])}: {sanitize_text(state)} {sanitize_text(db['path'])}")
    for lock in checks["staleLocks"]:
        verb = "removed" if lock.get("removed") else "stale"
        reasons = ", ".join(lock.get("staleReasons") or []) or "unknown"
        lines.append(f"- {verb} session lock: {sanitize_text(lock['lockPath'])} ({reasons})")
    if checks["staleLocks"] and not any(lock.get("removed") for lock in checks["staleLocks"]):
        lines.append('- Run "openclaw doctor --fix" to remove stale session locks whose owner is gone.')
    return lines
