"""`openclaw sessions` (alias `sessions list`) and `sessions tail`. Results on stdout (spec D19: the
listing too, unlike 2026.9.6), hints and per-store errors on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import echo_json, load_context, print_lines, run, say_hints
from openclaw_cli.cli.listing import list_command as _list

if TYPE_CHECKING:
    from openclaw_cli.ops.context import Context

sessions_app = typer.Typer(
    help="List sessions (default), tail a transcript, clean up or compact stores.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)


def complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import agent_ids

    return agent_ids(ctx, incomplete)


def complete_key(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import session_keys

    return session_keys(ctx, incomplete)


AGENT = typer.Option(
    None,
    "--agent",
    metavar="<id>",
    autocompletion=complete_agent,
    help="One agent's store (default: the default agent, or the agent a KEY names).",
)
ALL_AGENTS = typer.Option(
    False, "--all-agents", help="Every configured agent (with no agents configured: every agent dir on disk)."
)
STORE = typer.Option(
    None, "--store", metavar="<path>", help="An explicit store: a legacy sessions.json or an agent .sqlite."
)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
ARCHIVED = typer.Option(False, "--archived", help="Only archived sessions (listed and marked by default).")
ALL_ROWS = typer.Option(False, "--all", help="Archived sessions too (the default, as OpenClaw lists them).")
ACTIVE = typer.Option(
    None, "--active", metavar="<minutes>", help="Only sessions updated within the last N minutes."
)
LIMIT = typer.Option(None, "--limit", metavar="<n|all>", help='Maximum rows, or "all"; default 100.')
VERBOSE = typer.Option(False, "--verbose", help="Log which stores are read and how long it takes (stderr).")
KIND = typer.Option(
    None,
    "--kind",
    metavar="<kind>",
    help="Only sessions of this kind (main, direct, group, cron, hook, subagent, dashboard, thread, …); "
    "repeat or comma-separate for several.",
)
LABEL = typer.Option(None, "--label", metavar="<label>", help="Only the session with exactly this label.")
MATCH = typer.Option(
    None, "--match", metavar="<glob>", help="Only keys matching this glob (e.g. 'agent:*:cron:*')."
)
PINNED = typer.Option(False, "--pinned", help="Only pinned sessions.")
UNREAD = typer.Option(False, "--unread", help="Only sessions marked unread.")
CHANNEL = typer.Option(
    None, "--channel", metavar="<channel>", help="Only sessions on this channel (telegram, slack, …)."
)
SORT = typer.Option(
    None,
    "--sort",
    metavar="<order>",
    help="updated (default), created, size (transcript bytes) or tokens; largest first.",
)
WIDE = typer.Option(
    False, "--wide", help="Full keys and cells on a terminal too (lines may exceed its width)."
)


@sessions_app.callback()
def sessions_root(
    ctx: typer.Context,
    agent: str = AGENT,
    all_agents: bool = ALL_AGENTS,
    store: str = STORE,
    active: str = ACTIVE,
    limit: str = LIMIT,
    json_mode: bool = JSON,
    verbose: bool = VERBOSE,
    archived: bool = ARCHIVED,
    all_rows: bool = ALL_ROWS,
    wide: bool = WIDE,
    kind: list[str] = KIND,
    label: str = LABEL,
    match: str = MATCH,
    pinned: bool = PINNED,
    unread: bool = UNREAD,
    channel: str = CHANNEL,
    sort: str = SORT,
) -> None:
    filters = _filters(kind, label, match, pinned, unread, channel, sort)
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
        "wide": wide,
        "filters": filters,
    }
    if ctx.invoked_subcommand is None:
        _list(
            agent,
            all_agents,
            store,
            active,
            limit,
            json_mode,
            archived,
            all_rows,
            verbose=verbose,
            wide=wide,
            filters=filters,
        )


def _filters(
    kind: list[str] | None,
    label: str | None,
    match: str | None,
    pinned: bool,
    unread: bool,
    channel: str | None,
    sort: str | None,
) -> dict[str, Any] | None:
    """The listing filters given (issue 27), or None (the plain listing, which can stream)."""
    given = {
        "kinds": list(kind or []),
        "label": label,
        "match": match,
        "pinned": pinned,
        "unread": unread,
        "channel": channel,
        "sort": sort,
    }
    return given if any(given.values()) else None


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    agent: str = AGENT,
    all_agents: bool = ALL_AGENTS,
    store: str = STORE,
    active: str = ACTIVE,
    limit: str = LIMIT,
    json_mode: bool = JSON,
    verbose: bool = VERBOSE,
    archived: bool = ARCHIVED,
    all_rows: bool = ALL_ROWS,
    wide: bool = WIDE,
    kind: list[str] = KIND,
    label: str = LABEL,
    match: str = MATCH,
    pinned: bool = PINNED,
    unread: bool = UNREAD,
    channel: str = CHANNEL,
    sort: str = SORT,
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
        verbose=verbose or bool(parent.get("verbose")),
        wide=wide or bool(parent.get("wide")),
        filters=_filters(kind, label, match, pinned, unread, channel, sort) or parent.get("filters"),
    )


@sessions_app.command("tail")
def sessions_tail(
    ctx: typer.Context,
    session_key: str = typer.Option(
        None,
        "--session-key",
        metavar="<key>",
        autocompletion=complete_key,
        help="The session to show (default: the agent's main session).",
    ),
    tail: int = typer.Option(80, "--tail", metavar="<count>", help="How many entries to show first."),
    follow: bool = typer.Option(
        False, "--follow", "-f", help="Keep printing entries as they are appended (Ctrl-C to stop)."
    ),
    interval: float = typer.Option(
        0.5, "--interval", metavar="<seconds>", help="With --follow: how often to look."
    ),
    agent: str = AGENT,
    store: str = STORE,
    context: bool = typer.Option(
        False, "--context", help="Show the context a model would see (after compaction)."
    ),
    json_mode: bool = typer.Option(
        False, "--json", help="One JSON document on stdout (with --follow: JSON Lines, one per entry)."
    ),
) -> None:
    """Print the last N entries of a session's active branch, and with --follow what is appended."""
    parent = ctx.parent.obj if ctx.parent and isinstance(ctx.parent.obj, dict) else {}
    json_mode = json_mode or bool(parent.get("json"))

    def body() -> None:
        from openclaw_cli.errors import UsageError
        from openclaw_cli.ops.sessions import tail_session

        if follow and context:
            raise UsageError("--follow streams appended entries; it cannot be combined with --context.")
        if not (interval > 0):
            raise UsageError("--interval must be a positive number of seconds, for example --interval 0.5.")
        cx = load_context()
        chosen_agent, chosen_store = agent or parent.get("agent"), store or parent.get("store")
        cursor: list[str | None] = []
        result = tail_session(
            cx, session_key, n=tail, agent=chosen_agent, store=chosen_store, context=context, cursor=cursor
        )
        if json_mode and not follow:
            echo_json(result)
            return
        if json_mode:
            from openclaw_cli.jsonutil import dumps_compact as dumps

            print_lines([dumps(result)])
        else:
            from openclaw_cli.cli.render import tail_lines

            print_lines(tail_lines(result))
            say_hints(cx.hints)
            for issue in result.get("issues", []):
                from openclaw_cli.output import err, sanitize_text

                err(f"Skipped: {sanitize_text(issue)}")
        if follow:
            _follow(
                cx,
                result["key"],
                agent=chosen_agent,
                store=chosen_store,
                interval=interval,
                json_mode=json_mode,
                after=cursor[0] if cursor else None,
                session_id=result["sessionId"],
            )

    run(body, json_mode=json_mode)


def _follow(
    cx: Context,
    key: str,
    *,
    agent: str | None,
    store: str | None,
    interval: float,
    json_mode: bool,
    after: str | None,
    session_id: str,
) -> None:
    from openclaw_cli.cli.render import entry_line
    from openclaw_cli.ops.sessions import follow_session
    from openclaw_cli.output import sanitize_text

    if not json_mode:
        from openclaw_cli.output import err

        err("Following; Ctrl-C to stop.")
    try:
        for event in follow_session(
            cx, key, agent=agent, store=store, interval_s=interval, after=after, session_id=session_id
        ):
            if json_mode:
                from openclaw_cli.jsonutil import dumps_compact as dumps

                print_lines([dumps(event)])
            elif event["type"] == "session":
                print_lines(
                    [
                        f"-- {sanitize_text(event['key'])} continues in session "
                        f"{sanitize_text(event['sessionId'])} (was {sanitize_text(event['previousSessionId'])})"
                    ]
                )
            else:
                print_lines([entry_line(event["entry"])])
    except KeyboardInterrupt:
        raise typer.Exit(0) from None  # the usual way to stop following


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli import archives, lifecycle, search

    lifecycle.register(sessions_app)
    search.register(sessions_app)
    archives.register(sessions_app)
    app.add_typer(sessions_app, name="sessions")
