"""`openclaw sessions search QUERY`: full-text search over every store and archive (ops/search.py).

Runs locally from the index in the cache dir, or — when a Gateway owns the state dir and the query
needs nothing it lacks — through its `sessions.search` (ours takes every option; OpenClaw's own
only plain words over live transcripts of one agent)."""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL

_ROLES = ("user", "assistant", "tool")


def _time_ms(value: str | None, flag: str, now_ms: int) -> int | None:
    """An ISO date/time (UTC unless it says otherwise), epoch milliseconds, or a duration ago
    (`90m`, `7d`)."""
    if value is None:
        return None
    from datetime import UTC, datetime

    from openclaw_cli.errors import UsageError

    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return int(parsed.timestamp() * 1000)
    except ValueError:
        pass
    from openclaw_cli.config.units import parse_duration_ms

    try:
        return now_ms - parse_duration_ms(text, "d")
    except ValueError:
        raise UsageError(
            f"{flag} takes an ISO date or time (2026-11-02, 2026-11-02T10:00Z), epoch milliseconds, "
            f"or a duration ago such as 7d or 90m (got {value!r})."
        ) from None


def _real_gateway_can_serve(params: dict[str, Any], query: Any) -> bool:
    """OpenClaw's own method: plain words, live transcripts, one agent named with its keys, ≤ 25."""
    return (
        query.plain_words()
        and not params.get("archived")
        and not params.get("roles")
        and params.get("since") is None
        and params.get("until") is None
        and not params.get("allAgents")
        and not params.get("reindex")
        and (not params.get("agent") or bool(params.get("sessionKeys")))
        and params.get("limit", 10) <= 25
    )


def _delegated(cx: Any, params: dict[str, Any], gw: Any) -> dict[str, Any] | None:
    """The owning Gateway's answer, or None to search locally (no Gateway, or one that cannot
    answer this query the same way)."""
    from openclaw_cli.gateway.ownership import pid_alive, read_marker
    from openclaw_cli.search.query import parse
    from openclaw_cli.store.state_owner import coordinator_held

    if params.get("store"):
        return None
    marker = read_marker(cx.paths.state_dir)
    ours = bool(marker and pid_alive(marker.get("pid")))
    if not ours and not coordinator_held(cx.paths.state_dir):
        return None  # nobody owns the state: reading it directly is what the Gateway would do
    query = parse(params["query"], fixed=params.get("fixed") is True)
    if params.get("limit", 10) > 25 or (not ours and not _real_gateway_can_serve(params, query)):
        return None
    from openclaw_cli.cli.delegation import delegate

    wire = {k: v for k, v in params.items() if k not in ("verbose", "redact") and v not in (None, False)}
    if not ours:
        wire = {k: v for k, v in wire.items() if k in ("query", "limit", "sessionKeys")}
        if params.get("agent"):
            wire["agentId"] = params["agent"]
    doc = delegate("sessions.search", wire, gw, paths=cx.paths, config=cx.config, hint=cx.hint)
    if doc is None:
        return None
    if not ours:  # OpenClaw's hits: its live database, snippets masked here
        from openclaw_cli.redact import redact

        for hit in doc.get("results", []):
            if isinstance(hit, dict):
                hit.setdefault("source", "gateway")
                if params.get("redact") and isinstance(hit.get("snippet"), str):
                    hit["snippet"] = redact(hit["snippet"])
    elif params.get("redact"):
        from openclaw_cli.redact import redact

        for hit in doc.get("results", []):
            if isinstance(hit, dict) and isinstance(hit.get("snippet"), str):
                hit["snippet"] = redact(hit["snippet"])
    return doc


def search_command(
    query: str,
    *,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    sessions: list[str],
    roles: list[str],
    since: str | None,
    until: str | None,
    archived: bool,
    limit: int,
    json_mode: bool,
    fixed: bool,
    redact: bool,
    reindex: bool,
    verbose: bool,
    gw: Any,
) -> None:
    from openclaw_cli.cli.common import echo_json, load_context, print_lines, run, say_hints, say_warning

    def body() -> None:
        from openclaw_cli.errors import UsageError
        from openclaw_cli.ops.methods import call
        from openclaw_cli.ops.search import MAX_LIMIT

        bad = [r for r in roles if r not in _ROLES]
        if bad:
            raise UsageError(f"--role must be one of {', '.join(_ROLES)} (got {bad[0]!r}).")
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"--limit must be from 1 to {MAX_LIMIT} (got {limit}).")
        cx = load_context()
        now = cx.now_ms()
        params: dict[str, Any] = {
            "query": query,
            "limit": limit,
            "agent": agent,
            "allAgents": all_agents or None,
            "store": store,
            "sessionKeys": list(dict.fromkeys(sessions)) or None,
            "roles": list(dict.fromkeys(roles)) or None,
            "since": _time_ms(since, "--since", now),
            "until": _time_ms(until, "--until", now),
            "archived": archived,
            "fixed": fixed or None,
            "redact": redact or None,
            "reindex": reindex or None,
            "verbose": verbose or None,
        }
        params = {k: v for k, v in params.items() if v is not None}
        doc = None if reindex else _delegated(cx, params, gw)
        if doc is None:
            doc = call(cx, "sessions.search", params)
        doc.setdefault("skipped", [])
        if json_mode:
            echo_json({"query": query, **doc})
        else:
            from openclaw_cli.cli.render_search import search_lines

            print_lines(search_lines(doc, query, fixed=fixed))
            say_hints(cx.hints)
            skipped = doc.get("skipped") or []
            if skipped and verbose:
                for issue in skipped:
                    say_warning(f"Skipped: {issue}")
            elif skipped:
                say_warning(f"Skipped {len(skipped)} unreadable line(s) or archive(s); --verbose names them.")
            if verbose:
                from openclaw_cli.output import err

                for stats in doc.get("index", []):
                    err(
                        f"index: {stats['sourcesRead']} source(s) read ({stats['bytesRead']} bytes, "
                        f"{stats['rowsIndexed']} rows) in {stats['seconds']} s, {stats['sourcesUnchanged']} unchanged"
                        + (", rebuilt" if stats["rebuilt"] else "")
                    )

    run(body, json_mode=json_mode)


def register(sessions_app: typer.Typer) -> None:
    @sessions_app.command("search")
    def sessions_search(
        ctx: typer.Context,
        query: str = typer.Argument(
            ..., metavar="QUERY", help='Words (all required), "a phrase", -excluded, prefix*.'
        ),
        agent: str = typer.Option(
            None, "--agent", metavar="<id>", help="One agent's stores (default: the default agent)."
        ),
        all_agents: bool = typer.Option(False, "--all-agents", help="Every agent's stores."),
        store: str = typer.Option(
            None, "--store", metavar="<path>", help="An explicit store (sessions.json or .sqlite)."
        ),
        session: list[str] = typer.Option(
            [], "--session", metavar="<key>", help="Only this session key (repeatable)."
        ),
        role: list[str] = typer.Option(
            [], "--role", metavar="<user|assistant|tool>", help="Only lines of this role (repeatable)."
        ),
        since: str = typer.Option(
            None,
            "--since",
            metavar="<time>",
            help="Only lines at or after: ISO date/time, epoch ms, or a duration ago (7d).",
        ),
        until: str = typer.Option(
            None, "--until", metavar="<time>", help="Only lines at or before (as --since)."
        ),
        archived: bool = typer.Option(
            True,
            "--archived/--no-archived",
            help="Search archives too (deleted/reset/cold archives, import originals).",
        ),
        limit: int = typer.Option(10, "--limit", metavar="<n>", help="Maximum results (1-1000; default 10)."),
        json_mode: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
        fixed: bool = typer.Option(False, "--fixed", help="Search QUERY as literal text (ids, paths)."),
        redact: bool = typer.Option(False, "--redact", help="Mask what looks like a secret in snippets."),
        reindex: bool = typer.Option(
            False, "--reindex", help="Rebuild the search index from the stores first."
        ),
        verbose: bool = typer.Option(
            False, "--verbose", help="Name skipped lines and archives; index figures."
        ),
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
    ) -> None:
        """Find text in every transcript and archive (offline, from an index in the cache dir)."""
        from openclaw_cli.cli.delegation import gateway_options

        parent = ctx.parent.obj if ctx.parent and isinstance(ctx.parent.obj, dict) else {}
        json_mode = json_mode or bool(parent.get("json"))

        def options() -> Any:
            return gateway_options(url, token, password, timeout)

        from openclaw_cli.cli.common import run

        gw = run(options, json_mode=json_mode)
        search_command(
            query,
            agent=agent or parent.get("agent"),
            all_agents=all_agents or bool(parent.get("all_agents")),
            store=store or parent.get("store"),
            sessions=session,
            roles=role,
            since=since,
            until=until,
            archived=archived,
            limit=limit,
            json_mode=json_mode,
            fixed=fixed,
            redact=redact,
            reindex=reindex,
            verbose=verbose or bool(parent.get("verbose")),
            gw=gw,
        )
