"""`openclaw agents list` and `openclaw agents delete <id>`. `agents delete` is first sent to the
Gateway as `agents.delete {agentId, deleteFiles:true}` (what the real CLI sends); it runs locally
only when nothing listens (spec D9/D20)."""

from __future__ import annotations

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL

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
    url: str = GATEWAY_URL, token: str = GATEWAY_TOKEN, password: str = GATEWAY_PASSWORD,
    timeout: str = GATEWAY_TIMEOUT,
) -> None:
    """Archive every transcript of an agent (verified zstd archives), remove its session rows and
    drop it from the config roster."""

    def body() -> None:
        from openclaw_cli.cli.delegation import delegate, gateway_options, targets_local_state
        from openclaw_cli.errors import OpenClawError, UsageError
        from openclaw_cli.ids import normalize_agent_id
        from openclaw_cli.ops.agents import check_deletable, delete_agent
        from openclaw_cli.ops.context import Context

        gw_options = gateway_options(url, token, password, timeout)
        cx = Context.load(state_paths(ctx))
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise OpenClawError("agent id must not be blank")
        # This state dir's roster decides before the prompt, unless the Gateway asked is elsewhere.
        local_state = targets_local_state(gw_options, paths=cx.paths, config=cx.config)
        agent = check_deletable(cx, agent_id) if local_state else normalize_agent_id(agent_id)
        if not force:
            import sys

            if json_mode or not sys.stdin.isatty():
                raise UsageError(f'Refusing to delete agent "{agent}" without confirmation; pass --force.')
            if not typer.confirm(f'Delete agent "{agent}"? Its transcripts are archived, its sessions removed.'):
                raise typer.Exit(1)
        # The Gateway judges its own roster; the local checks apply to a local run only.
        served = delegate("agents.delete", {"agentId": agent_id.strip(), "deleteFiles": True}, gw_options,
                          paths=cx.paths, config=cx.config)
        if served is None:
            result = delete_agent(cx, agent_id)
        else:
            result = served
        if json_mode:
            echo_json(result)
            _hints(cx)
            return
        _render_delete(result)
        _hints(cx)

    run(body, json_mode=json_mode)


def _hints(cx) -> None:
    from openclaw_cli.output import err, sanitize_text

    for hint in cx.hints:
        err(f"Hint: {sanitize_text(hint)}")


def _render_delete(result: dict) -> None:
    """Text for both shapes: ours (archives, config) and the Gateway's `{removed[], failed[]}`."""
    from openclaw_cli.output import err, sanitize_text

    if "removedEntries" not in result:  # served by a Gateway
        removed = [r for r in result.get("removed") or [] if isinstance(r, dict)]
        moved = [r for r in removed if r.get("method") not in ("missing", None)]
        err(f"Deleted agent {sanitize_text(result.get('agentId'))} (by the Gateway): {len(moved)} path(s) removed"
            + "".join(f"\n  {sanitize_text(r.get('method'))}: {sanitize_text(r.get('path'))}" for r in moved))
        for failed in result.get("failed") or []:
            err(f"  failed: {sanitize_text(failed.get('path') if isinstance(failed, dict) else failed)}")
        return
    err(f"Deleted agent {sanitize_text(result['agentId'])}: {result['removedEntries']} session(s) removed, "
        f"{result['archivedTranscripts']} transcript archive(s) in {sanitize_text(result['archiveDir'])}")
    config = result["config"]
    if config.get("updated"):
        err(f"Removed it from {sanitize_text(config['path'])} (backup: {sanitize_text(config['backup'])})")
    elif config.get("hint"):
        err(sanitize_text(config["hint"]))


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")
