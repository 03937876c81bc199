"""The body of `openclaw sessions` / `sessions list` (the listing), shared by the Typer command
(`cli/sessions.py`) and the Typer-free fast path (`cli/fast.py`): one implementation, so both
print the same bytes and exit with the same codes. No Typer here."""

from __future__ import annotations

from typing import Any

from openclaw_cli.cli.common import command_exit, echo_json, load_context, print_lines, run, say_hints


def list_command(
    agent: str | None,
    all_agents: bool,
    store: str | None,
    active: str | None,
    limit: str | None,
    json_mode: bool,
    archived: bool = False,
    all_rows: bool = False,
    *,
    verbose: bool = False,
    wide: bool = False,
    filters: dict[str, Any] | None = None,
) -> None:
    def body() -> None:
        from openclaw_cli.cli.options import parse_active, parse_limit
        from openclaw_cli.ops.sessions import list_sessions

        if archived and all_rows:
            from openclaw_cli.errors import UsageError

            raise UsageError("--archived and --all cannot be used together.")
        limit_value = parse_limit(limit)
        chosen = None
        if filters:
            from openclaw_cli.ops.listing_filters import parse_filters

            chosen = parse_filters(**filters)
        active_value = parse_active(active)
        if verbose:
            from openclaw_cli.cli.common import enable_verbose

            enable_verbose()
        cx = load_context()
        result = list_sessions(
            cx,
            agent=agent,
            all_agents=all_agents,
            store=store,
            active_minutes=active_value,
            limit=limit_value,
            # archived rows are listed as the real CLI lists them (marked); --archived: only them
            archived=True if archived else "all",
            stream=json_mode,
            filters=chosen,
        )
        if json_mode:
            echo_json(result)
        else:
            from openclaw_cli.cli.render import sessions_lines
            from openclaw_cli.cli.term import stdout_printer

            print_lines(sessions_lines(result, stdout_printer(wide=wide)))
            say_hints(cx.hints)
        _report_store_errors(cx, result)

    run(body, json_mode=json_mode)


def _report_store_errors(cx: Any, result: dict[str, Any]) -> None:
    """Stores that could not be read (the others were listed): each on stderr, exit with the
    first one's code (e.g. 6 for a corrupt store)."""
    if not cx.failures:
        return
    from openclaw_cli.cli.common import say_error

    for item in result.get("errors") or []:
        say_error(f"agent {item['agentId']}: {item['error']['message']}")
    raise command_exit(int(cx.failures[0].exit_code))
