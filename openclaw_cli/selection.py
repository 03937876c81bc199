"""Target selection shared by every command: which agent stores a command acts on (spec D2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openclaw_cli.errors import NotFoundError, SelectionError
from openclaw_cli.ids import normalize_agent_id
from openclaw_cli.paths import StatePaths


@dataclass(frozen=True)
class Target:
    agent_id: str
    store_path: Path | None  # explicit --store path, or None for the agent's own store


def validate_selectors(agent: str | None, all_agents: bool, store: str | None) -> None:
    if agent is not None and not agent.strip():
        raise SelectionError("--agent must not be blank")
    if store is not None and not store.strip():
        raise SelectionError("--store must not be blank")
    if agent is not None and all_agents:
        raise SelectionError("--agent and --all-agents cannot be used together")
    if store is not None and all_agents:
        raise SelectionError("--store cannot be combined with --all-agents")


def known_agent_ids(paths: StatePaths, config) -> list[str]:
    """Configured agents plus agent directories found on disk (the real CLI hides the latter,
    observed §12.8; an operator expects to see every store)."""
    from openclaw_cli.config import configured_agent_ids

    ids = list(configured_agent_ids(config))
    for agent_id in paths.discovered_agent_ids():
        if agent_id not in ids:
            ids.append(agent_id)
    return ids


def select_targets(
    paths: StatePaths, config, *, agent: str | None, all_agents: bool, store: str | None
) -> list[Target]:
    validate_selectors(agent, all_agents, store)
    from openclaw_cli.config import default_agent_id

    if store is not None:
        from openclaw_cli.paths import expand_user

        store_path = expand_user(store.strip(), paths.home).absolute()
        agent_id = normalize_agent_id(agent) if agent else _agent_from_store_path(store_path)
        return [Target(agent_id=agent_id, store_path=store_path)]
    if all_agents:
        return [Target(agent_id=a, store_path=None) for a in known_agent_ids(paths, config)]
    if agent is not None:
        agent_id = normalize_agent_id(agent)
        if agent_id not in known_agent_ids(paths, config):
            raise NotFoundError(
                f'Unknown agent id "{agent.strip()}". Run openclaw agents list to see configured agents.'
            )
        return [Target(agent_id=agent_id, store_path=None)]
    from openclaw_cli.config import configured_agent_ids

    if len(configured_agent_ids(config)) > 1:
        # OpenClaw refuses to guess an owner when several agents are configured (maintenance §10.2).
        raise SelectionError(
            "Multiple agents are configured, but session-store selection has no explicit owner. "
            "Pass --agent <id> to select one agent, or --all-agents to include every configured agent."
        )
    return [Target(agent_id=default_agent_id(config), store_path=None)]


def _agent_from_store_path(path: Path) -> str:
    from openclaw_cli.store.detect import derive_agent_id_from_store_path

    return derive_agent_id_from_store_path(path) or "main"
