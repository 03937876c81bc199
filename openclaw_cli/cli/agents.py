"""`openclaw agents list` and `openclaw agents delete <id>`. `agents delete` is first sent to the
Gateway as `agents.delete {agentId, deleteFiles:true}` (what the real CLI sends); it runs locally
only when nothing listens (spec D9/D20)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import echo_json, run
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL
from openclaw_cli.cli.store_options import NO_BACKUP

if TYPE_CHECKING:
    from openclaw_cli.ops.context import Context

agents_app = typer.Typer(
    rich_markup_mode=None,
    help="List agents, delete an agent (its transcripts are archived first).",
    no_args_is_help=True,
)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")


def _complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import agent_ids

    return agent_ids(ctx, incomplete)


@agents_app.command("list")
def agents_list(
    ctx: typer.Context,
    json_mode: bool = JSON,
    bindings: bool = typer.Option(
        False, "--bindings", help="Include the routing rules (bindings) of each agent."
    ),
    tree: bool = typer.Option(
        False,
        "--tree",
        help="Only the agents' names, as a tree (no creation hierarchy is recorded: one level).",
    ),
) -> None:
    """The configured agents (OpenClaw's array), each with the store it uses and its session count."""

    def body() -> None:
        from openclaw_cli.cli.common import load_context
        from openclaw_cli.ops.agents import list_agents
        from openclaw_cli.ops.targets import unconfigured_agent_ids

        cx = load_context(ctx)
        result = list_agents(cx, bindings=bindings)
        disk_only = unconfigured_agent_ids(cx.paths, cx.config)
        if json_mode:
            echo_json(result)
        else:
            from openclaw_cli.cli.common import print_lines

            print_lines(_agents_lines(result, tree=tree))
        if disk_only:
            from openclaw_cli.cli.common import say_hints

            say_hints([unconfigured_hint(disk_only)])
        if cx.failures:  # an unreadable store was listed with its error: exit with that error's code
            from openclaw_cli.cli.common import say_error

            for item in result:
                if item.get("error"):
                    say_error(f"agent {item['id']}: {item['error']}")
            raise typer.Exit(int(cx.failures[0].exit_code))

    run(body, json_mode=json_mode)


def unconfigured_hint(agent_ids: list[str]) -> str:
    names = ", ".join(agent_ids)
    return (
        f"Agent store(s) on disk but not in the config: {names}. --all-agents and status leave them out; "
        "reach one with --store PATH, or add it to agents.list."
    )


def _agents_lines(items: list[dict[str, Any]], *, tree: bool) -> list[str]:
    from openclaw_cli.output import sanitize_text as s

    lines = ["Agents:"]
    for item in items:
        name = f" ({s(item['name'])})" if item.get("name") else ""
        lines.append(f"- {s(item['id'])}{name}{' (default)' if item['isDefault'] else ''}")
        if tree:
            continue
        lines.append(f"  Workspace: {s(item['workspace'])}")
        lines.append(f"  Agent dir: {s(item['agentDir'])}")
        if item.get("model"):
            lines.append(f"  Model: {s(item['model'])}")
        lines.append(f"  Routing rules: {item['bindings']}")
        for rule in item.get("bindingDetails") or []:
            lines.append(f"    - {s(rule)}")
        for route in item.get("routes") or []:
            lines.append(f"  Routing: {s(route)}")
        if item.get("error"):
            lines.append(f"  Store: error: {s(item['error'])}")
        else:
            from openclaw_cli.cli.cells import plural

            lines.append(
                f"  Store: {s(item['storeKind'])}, {plural(item['sessionsCount'], 'session')}: "
                f"{s(item['sessionsPath'])}"
            )
    return lines


@agents_app.command("delete")
def agents_delete(
    ctx: typer.Context,
    agent_id: str = typer.Argument(
        ..., metavar="ID", help="The agent to delete.", autocompletion=_complete_agent
    ),
    force: bool = typer.Option(False, "--force", help="Skip the confirmation."),
    json_mode: bool = JSON,
    url: str = GATEWAY_URL,
    token: str = GATEWAY_TOKEN,
    password: str = GATEWAY_PASSWORD,
    timeout: str = GATEWAY_TIMEOUT,
    no_backup: bool = NO_BACKUP,
) -> None:
    """Archive every transcript of an agent (verified zstd archives), remove its session rows and
    drop it from the config roster."""

    def body() -> None:
        from openclaw_cli.cli.common import load_context
        from openclaw_cli.cli.delegation import delegate, gateway_options, targets_local_state
        from openclaw_cli.errors import NotFoundError, OpenClawError, UsageError
        from openclaw_cli.ids import normalize_agent_id
        from openclaw_cli.ops.agents import check_deletable, delete_agent

        gw_options = gateway_options(url, token, password, timeout)
        cx = load_context(ctx, backup=not no_backup)
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise OpenClawError("agent id must not be blank")
        # This state dir's roster decides before the prompt, unless the Gateway asked is elsewhere.
        local_state = targets_local_state(gw_options, paths=cx.paths, config=cx.config)
        try:
            agent = check_deletable(cx, agent_id) if local_state else normalize_agent_id(agent_id)
        except NotFoundError as exc:  # the Gateway's words, and how to see the agents (issue 22 §7)
            raise NotFoundError(
                f"{exc.message}. Run openclaw agents list to see the configured agents."
            ) from None
        if not force:
            import sys

            if json_mode or not sys.stdin.isatty():
                raise UsageError(f'Refusing to delete agent "{agent}" without confirmation; pass --force.')
            if not typer.confirm(
                f'Delete agent "{agent}"? Its transcripts are archived, its sessions removed.', err=True
            ):  # the question is not a result: stderr
                raise typer.Exit(1)
        # The Gateway judges its own roster; the local checks apply to a local run only.
        served = delegate(
            "agents.delete",
            {"agentId": agent_id.strip(), "deleteFiles": True},
            gw_options,
            paths=cx.paths,
            config=cx.config,
        )
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


def _hints(cx: Context) -> None:
    from openclaw_cli.cli.common import say_hints

    say_hints(cx.hints)


def _render_delete(result: dict[str, Any]) -> None:
    """Text for both shapes: ours (archives, config) and the Gateway's `{removed[], failed[]}`: the
    result on stdout, failures on stderr."""
    from openclaw_cli.output import err, out, sanitize_text

    if "removedEntries" not in result:  # served by a Gateway
        removed = [r for r in result.get("removed") or [] if isinstance(r, dict)]
        moved = [r for r in removed if r.get("method") not in ("missing", None)]
        out(
            f"Deleted agent {sanitize_text(result.get('agentId'))} (by the Gateway): {len(moved)} path(s) removed"
            + "".join(f"\n  {sanitize_text(r.get('method'))}: {sanitize_text(r.get('path'))}" for r in moved)
        )
        for failed in result.get("failed") or []:
            err(f"  failed: {sanitize_text(failed.get('path') if isinstance(failed, dict) else failed)}")
        return
    out(
        f"Deleted agent {sanitize_text(result['agentId'])}: {result['removedEntries']} session(s) removed, "
        f"{result['archivedTranscripts']} transcript archive(s) in {sanitize_text(result['archiveDir'])}"
    )
    config = result["config"]
    if config.get("updated"):
        out(f"Removed it from {sanitize_text(config['path'])} (backup: {sanitize_text(config['backup'])})")
    elif config.get("hint"):
        from openclaw_cli.cli.common import say_hints

        say_hints([config["hint"]])


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")
