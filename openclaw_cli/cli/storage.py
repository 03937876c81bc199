"""`openclaw storage`: where the state directory's disk went (issue 27 §1). Results on stdout;
unreadable files are named on stderr with a warning, and the command still exits 0."""

from __future__ import annotations

import typer

from openclaw_cli.cli.common import run


def register(app: typer.Typer) -> None:
    app.command("storage")(storage)


def storage(
    ctx: typer.Context,
    agent: str = typer.Option(
        None, "--agent", metavar="<id>", help="Only this agent's directory (default: the whole state dir)."
    ),
    all_agents: bool = typer.Option(
        False, "--all-agents", help="The whole state directory, every agent (the default)."
    ),
    json_mode: bool = typer.Option(
        False, "--json", help="Print one JSON document on stdout (docs/storage.md)."
    ),
    top: int = typer.Option(
        10, "--top", metavar="<n>", min=0, help="How many biggest sessions and events to list."
    ),
    plan: bool = typer.Option(
        None,
        "--plan/--no-plan",
        help="Plan what `sessions cleanup --enforce` would reclaim per setting (default: planned).",
    ),
) -> None:
    """Bytes by agent, container, session kind and payload; the biggest sessions and events; what
    cleanup settings would reclaim. Figures add up to `du` of the state dir."""

    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_hints, say_warning
        from openclaw_cli.errors import SelectionError
        from openclaw_cli.ops.storage import storage_report

        if agent is not None and all_agents:
            raise SelectionError("--agent and --all-agents cannot be used together")
        cx = load_context(ctx)
        doc = storage_report(cx, {"agent": agent, "allAgents": all_agents, "top": top, "plan": plan})
        if json_mode:
            echo_json(doc)
        else:
            from openclaw_cli.cli.term import color_enabled

            if color_enabled():
                from openclaw_cli.cli.render_storage import print_rich

                print_rich(doc)
            else:
                from openclaw_cli.cli.render_storage import storage_lines

                print_lines(storage_lines(doc))
        say_hints(cx.hints)
        if doc["unreadable"]:
            names = ", ".join(item["path"] for item in doc["unreadable"][:5])
            more = len(doc["unreadable"]) - 5
            say_warning(
                f"{len(doc['unreadable'])} unreadable file(s) or director(ies) not measured: {names}"
                + (f" and {more} more" if more > 0 else "")
            )

    run(body, json_mode=json_mode)
