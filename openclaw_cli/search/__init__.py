"""Full-text search over every store and archive of an OpenClaw state (issue 26).

Library entry point: `search(paths, query, …)` yields result dicts — `sessionKey`, `sessionId`,
`messageId`, `role`, `timestamp`, `snippet`, `score`, `source`, `agentId` — best first, the same
hits `openclaw sessions search --json` prints. `paths` is a state directory (or `StatePaths`):
every agent's store; or store files (`sessions.json`, `openclaw-agent.sqlite`); or a list of
either. The index lives in the cache dir (`$XDG_CACHE_HOME/openclaw-cli/search`), is brought up
to date on each call, and nothing under the state dir is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

__all__ = ["search"]


def _store_targets(paths: Any) -> list[Any]:
    from openclaw_cli.paths import IMPORT_ARCHIVE_DIR, StatePaths, resolve_paths
    from openclaw_cli.search.engine import StoreTarget
    from openclaw_cli.store.detect import locate_agent_store, open_store_at

    items = (
        list(paths)
        if isinstance(paths, Iterable) and not isinstance(paths, str | Path | StatePaths)
        else [paths]
    )
    targets: list[StoreTarget] = []
    for item in items:
        if not isinstance(item, StatePaths):
            item = Path(item).expanduser()
        if isinstance(item, StatePaths) or item.is_dir():
            state = (
                item if isinstance(item, StatePaths) else resolve_paths(env={"OPENCLAW_STATE_DIR": str(item)})
            )
            for agent_id in state.discovered_agent_ids():
                # located, not opened (as the command and the Gateway do): the index reads the files
                store = locate_agent_store(state, agent_id, read_only=True)
                targets.append(StoreTarget(store, state.import_archive_dir(agent_id)))
            continue
        path = Path(item)
        store = open_store_at(path, read_only=True)
        agent_dir = path.parent.parent  # agents/<id>/sessions/sessions.json or agents/<id>/agent/*.sqlite
        targets.append(StoreTarget(store, agent_dir / IMPORT_ARCHIVE_DIR))
    return targets


def search(
    paths: Any,
    query: str,
    *,
    fixed: bool = False,
    roles: Iterable[str] | None = None,
    since: int | None = None,
    until: int | None = None,
    session_keys: Iterable[str] | None = None,
    archived: bool = True,
    limit: int = 10,
    redact: bool = False,
    reindex: bool = False,
    index_root: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """Results for `query` (words, "phrases", -excluded, prefix*; `fixed`: literal text), best
    first, at most `limit`. A bad query raises `openclaw_cli.errors.UsageError`."""
    from openclaw_cli.search.engine import Options
    from openclaw_cli.search.engine import search as run
    from openclaw_cli.search.query import parse

    parsed = parse(query, fixed=fixed)
    opts = Options(
        workers=min(2, os.cpu_count() or 1),
        roles=tuple(roles) if roles else None,
        since=since,
        until=until,
        session_keys=tuple(session_keys) if session_keys else None,
        archived=archived,
        limit=limit,
        reindex=reindex,
        redact=redact,
        index_root=index_root,
    )
    targets = _store_targets(paths)
    try:
        outcome = run(targets, parsed, opts)
    finally:
        for target in targets:
            target.store.close()
    yield from outcome.results
