"""`openclaw agents list` and `openclaw agents delete <id>`."""

from __future__ import annotations

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths

agents_app = typer.Typer(rich_markup_mode=None, help="List agents, delete an agent (its transcripts are archived first).",
                         no_args_is_help=True)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")


@agents_app.command("list")
def agents_list(ctx: typer.Context, json_mode: bool = JSON) -> None:
    """Configured agents plus agent directories on disk, their store and session count."""

    def body() -> None:
        from openclaw_cli.ops.agents import list_agents
        from openclaw_cli.ops.context import Context

        result = list_agents(Context.load(state_paths(ctx)))
        if json_mode:
            echo_json(result)
            return
        from rich import box
        from rich.table import Table

        from openclaw_cli.output import sanitize_text, stderr_console

        table = Table(box=box.SQUARE)
        for name in ("Agent", "Default", "Configured", "Store", "Sessions", "Path"):
            table.add_column(name, overflow="fold")
        for row in result["agents"]:
            store = row.get("store") or {}
            table.add_row(sanitize_text(row["id"]), "yes" if row["default"] else "", "yes" if row["configured"] else "no",
                          sanitize_text(store.get("kind") or "error"),
                          str(row["sessions"]) if row["sessions"] is not None else "?",
                          sanitize_text(store.get("path") or row.get("error") or ""))
        stderr_console().print(table)

    run(body, json_mode=json_mode)


@agents_app.command("delete")
def agents_delete(
    ctx: typer.Context,
    agent_id: str = typer.Argument(..., metavar="ID", help="The agent to delete."),
    force: bool = typer.Option(False, "--force", help="Skip the confirmation."),
    json_mode: bool = JSON,
) -> None:
    """Archive every transcript of an agent (verified zstd archives), remove its session rows and
    drop it from the config roster."""

    def body() -> None:
        from openclaw_cli.errors import UsageError
        from openclaw_cli.ops.agents import check_deletable, delete_agent
        from openclaw_cli.ops.context import Context

        cx = Context.load(state_paths(ctx))
        agent = check_deletable(cx, agent_id)
        if not force:
            import sys

            if json_mode or not sys.stdin.isatty():
                raise UsageError(f'Refusing to delete agent "{agent}" without confirmation; pass --force.')
            if not typer.confirm(f'Delete agent "{agent}"? Its transcripts are archived, its sessions removed.'):
                raise typer.Exit(1)
        result = delete_agent(cx, agent_id)
        if json_mode:
            echo_json(result)
            return
        from openclaw_cli.output import err, sanitize_text

        err(f"Deleted agent {sanitize_text(result['agentId'])}: {result['removedEntries']} session(s) removed, "
            f"{result['archivedTranscripts']} transcript archive(s) in {sanitize_text(result['archiveDir'])}")
        config = result["config"]
        if config.get("updated"):
            err(f"Removed it from {sanitize_text(config['path'])} (backup: {sanitize_text(config['backup'])})")
        elif config.get("hint"):
            err(sanitize_text(config["hint"]))

    run(body, json_mode=json_mode)


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")
