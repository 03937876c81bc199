"""Shell completion values (`openclaw --install-completion` / `--show-completion`, Typer's, for
bash, zsh and fish): agent ids from the config and the state dir, session keys from the selected
agent's local store. Loaded only when the shell asks (never by `openclaw --help`); a completion
never fails loudly: any problem completes nothing."""

from __future__ import annotations

from typing import Any

MAX_KEYS = 200


def _params(ctx: Any) -> dict[str, Any]:
    """Options given so far, this command's first, then its parents'."""
    merged: dict[str, Any] = {}
    while ctx is not None:
        for name, value in (getattr(ctx, "params", None) or {}).items():
            if merged.get(name) is None and value not in (None, False, ()):
                merged[name] = value
        ctx = ctx.parent
    return merged


def _context():
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    return Context.load(resolve_paths(), strict=False)


def agent_ids(ctx: Any, incomplete: str) -> list[str]:
    try:
        from openclaw_cli.ops.targets import known_agent_ids

        cx = _context()
        return [a for a in known_agent_ids(cx.paths, cx.config) if a.startswith(incomplete.strip().lower())]
    except Exception:  # completion must never print a traceback into the shell
        return []


def session_keys(ctx: Any, incomplete: str) -> list[str]:
    try:
        from openclaw_cli.keys import parse_agent_key
        from openclaw_cli.ops.targets import open_target, select_targets

        params = _params(ctx)
        cx = _context()
        agent = params.get("agent")
        parsed = parse_agent_key(incomplete + "x")  # `agent:work:` names its agent already
        if agent is None and params.get("store") is None and parsed:
            agent = parsed[0]
        target = select_targets(cx.paths, cx.config, agent=agent, all_agents=False, store=params.get("store"))[0]
        with open_target(cx, target, read_only=True) as st:
            rows, _ = st.list_entries(limit=None)
        keys = [key for key, _ in rows if key.startswith(incomplete)]
        return keys[:MAX_KEYS]
    except Exception:
        return []
