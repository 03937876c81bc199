"""`openclaw sessions` (alias `sessions list`) and `sessions tail`."""

from __future__ import annotations

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths

sessions_app = typer.Typer(
    help="List sessions (default), tail a transcript, clean up or compact stores.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)

AGENT = typer.Option(None, "--agent", help="One agent's store (default: the default agent).")
ALL_AGENTS = typer.Option(False, "--all-agents", help="Every configured agent plus agent dirs found on disk.")
STORE = typer.Option(None, "--store", help="An explicit store: a legacy sessions.json or an agent .sqlite.")
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
ARCHIVED = typer.Option(False, "--archived", help="Only archived sessions (hidden by default).")
ALL_ROWS = typer.Option(False, "--all", help="Archived sessions too.")


def _list(agent, all_agents, store, active, limit, json_mode, archived=False, all_rows=False) -> None:
    def body() -> None:
        from openclaw_cli.cli.options import parse_active, parse_limit
        from openclaw_cli.ops.context import Context
        from openclaw_cli.ops.sessions import list_sessions

        if archived and all_rows:
            from openclaw_cli.errors import UsageError

            raise UsageError("--archived and --all cannot be used together.")
        limit_value = parse_limit(limit)
        active_value = parse_active(active)
        ctx = Context.load(state_paths())
        result = list_sessions(
            ctx, agent=agent, all_agents=all_agents, store=store, active_minutes=active_value, limit=limit_value,
            archived="all" if all_rows else bool(archived),
        )
        if json_mode:
            echo_json(result)
        else:
            from openclaw_cli.cli.render import render_sessions

            render_sessions(result)
            for hint in ctx.hints:
                from openclaw_cli.output import err

                err(f"Hint: {hint}")

    run(body, json_mode=json_mode)


@sessions_app.callback()
def sessions_root(
    ctx: typer.Context,
    agent: str = AGENT,
    all_agents: bool = ALL_AGENTS,
    store: str = STORE,
    active: str = typer.Option(None, "--active", help="Only sessions updated within N minutes."),
    limit: str = typer.Option(None, "--limit", help='Maximum rows (default 100), or "all".'),
    json_mode: bool = JSON,
    verbose: bool = typer.Option(False, "--verbose", help="Verbose logging."),
    archived: bool = ARCHIVED,
    all_rows: bool = ALL_ROWS,
) -> None:
    ctx.obj = {
        **(ctx.obj or {}),
        "agent": agent,
        "all_agents": all_agents,
        "store": store,
        "active": active,
        "limit": limit,
        "json": json_mode,
        "verbose": verbose,
        "archived": archived,
        "all_rows": all_rows,
    }
    if ctx.invoked_subcommand is None:
        _list(agent, all_agents, store, active, limit, json_mode, archived, all_rows)


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    agent: str = AGENT,
    all_agents: bool = ALL_AGENTS,
    store: str = STORE,
    active: str = typer.Option(None, "--active", help="Only sessions updated within N minutes."),
    limit: str = typer.Option(None, "--limit", help='Maximum rows (default 100), or "all".'),
    json_mode: bool = JSON,
    archived: bool = ARCHIVED,
    all_rows: bool = ALL_ROWS,
) -> None:
    """List sessions, newest first (same as `openclaw sessions`)."""
    parent = ctx.parent.obj if ctx.parent and isinstance(ctx.parent.obj, dict) else {}
    _list(
        agent or parent.get("agent"),
        all_agents or bool(parent.get("all_agents")),
        store or parent.get("store"),
        active or parent.get("active"),
        limit or parent.get("limit"),
        json_mode or bool(parent.get("json")),
        archived or bool(parent.get("archived")),
        all_rows or bool(parent.get("all_rows")),
    )


@sessions_app.command("tail")
def sessions_tail(
    ctx: typer.Context,
    session_key: str = typer.Option(..., "--session-key", help="The session key to show."),
    tail: int = typer.Option(80, "--tail", help="How many entries (default 80)."),
    agent: str = AGENT,
    store: str = STORE,
    context: bool = typer.Option(False, "--context", help="Show the context a model would see (after compaction)."),
    json_mode: bool = JSON,
) -> None:
    """Print the last N entries of a session's active branch."""
    parent = ctx.parent.obj if ctx.parent and isinstance(ctx.parent.obj, dict) else {}
    json_mode = json_mode or bool(parent.get("json"))

    def body() -> None:
        from openclaw_cli.ops.context import Context
        from openclaw_cli.ops.sessions import tail_session

        cx = Context.load(state_paths())
        result = tail_session(
            cx, session_key, n=tail, agent=agent or parent.get("agent"), store=store or parent.get("store"),
            context=context,
        )
        if json_mode:
            echo_json(result)
        else:
            from openclaw_cli.cli.render import render_tail

            render_tail(result)

    run(body, json_mode=json_mode)


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli import lifecycle

    lifecycle.register(sessions_app)
    app.add_typer(sessions_app, name="sessions")
