"""`openclaw usage`: tokens and cost of live sessions plus the usage ledger (issue 27 §6).
Results on stdout; a ledger with unreadable lines is said on stderr (the readable records count)."""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.common import run


def register(app: typer.Typer) -> None:
    app.command("usage")(usage)


def usage(
    ctx: typer.Context,
    by: str = typer.Option(
        "agent", "--by", metavar="<agent|model|day|kind>", help="How to group the totals."
    ),
    since: str = typer.Option(
        None,
        "--since",
        metavar="<when>",
        help="Only usage from this UTC day on: a date (2026-10-01) or a duration (7d).",
    ),
    agent: str = typer.Option(
        None, "--agent", metavar="<id>", help="One agent (default: every agent and ledger)."
    ),
    all_agents: bool = typer.Option(False, "--all-agents", help="Every agent (the default)."),
    json_mode: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Token and cost totals of live sessions and of those cleanup, delete or reset removed."""

    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_error, say_warning
        from openclaw_cli.errors import SelectionError
        from openclaw_cli.ops.usage import usage_report

        if agent is not None and all_agents:
            raise SelectionError("--agent and --all-agents cannot be used together")
        cx = load_context(ctx)
        doc = usage_report(cx, {"by": by, "since": since, "agent": agent, "allAgents": all_agents})
        if json_mode:
            echo_json(doc)
        else:
            print_lines(usage_lines(doc))
        for ledger in doc["ledgers"]:
            if ledger.get("error"):
                say_warning(f"usage ledger {ledger['path']} could not be read: {ledger['error']}")
            elif ledger["unreadableLines"]:
                say_warning(
                    f"usage ledger {ledger['path']}: {ledger['unreadableLines']} unreadable line(s) skipped "
                    f"(lines {', '.join(map(str, ledger['unreadableAt']))}); {ledger['records']} record(s) counted"
                )
        for failure in doc["failures"]:
            say_error(f"agent {failure['agentId']}: {failure['error']}")

    run(body, json_mode=json_mode)


def usage_lines(doc: dict[str, Any]) -> list[str]:
    from openclaw_cli.cli.table import Column, render_table
    from openclaw_cli.cli.term import stdout_printer
    from openclaw_cli.output import sanitize_text as s

    headers = [
        doc["by"].capitalize(),
        "Input",
        "Output",
        "Cache read",
        "Cache write",
        "Total",
        "Cost",
        "Msgs",
        "From ledger",
    ]
    rows = []
    for g in [*doc["groups"], {**doc["totals"], "name": "total"}]:
        rows.append(
            [
                s(str(g["name"])),
                f"{g['input']:,}",
                f"{g['output']:,}",
                f"{g['cacheRead']:,}",
                f"{g['cacheWrite']:,}",
                f"{g['totalTokens']:,}",
                f"${g['cost']:.4f}",
                f"{g['messages']:,}",
                f"{g['ledgerMessages']:,}",
            ]
        )
    head = f"Usage by {doc['by']}" + (f" since {doc['since']}" if doc["since"] else "")
    printer = stdout_printer()
    columns = [Column(headers[0], min_width=8)] + [Column(h, min_width=5, align="right") for h in headers[1:]]
    return [head, *render_table(columns, rows, width=printer.width, color=printer.color)]
