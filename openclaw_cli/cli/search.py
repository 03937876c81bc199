"""`openclaw sessions search QUERY` (the Typer command; its body is `cli/search_body.py`)."""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL


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
        from openclaw_cli.cli.search_body import search_command

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
