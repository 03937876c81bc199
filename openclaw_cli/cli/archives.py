"""`openclaw sessions show KEY`, `sessions archives` and `sessions restore` (issue 27 §3, §4).
Results on stdout; hints on stderr. Restores run offline (OpenClaw's Gateway has no such method)."""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.common import run

JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
AGENT = typer.Option(
    None, "--agent", metavar="<id>", help="The agent whose store to use (default: the key's agent)."
)
STORE = typer.Option(
    None,
    "--store",
    metavar="<path>",
    help="An explicit store (offline repair): a legacy sessions.json or an agent .sqlite.",
)


def register(sessions_app: typer.Typer) -> None:
    sessions_app.command("show")(show)
    sessions_app.command("archives")(archives)
    sessions_app.command("restore")(restore)


def show(
    ctx: typer.Context,
    key: str = typer.Argument(..., metavar="KEY", help="The session key (see openclaw sessions list)."),
    agent: str = AGENT,
    store: str = STORE,
    json_mode: bool = JSON,
) -> None:
    """One session whole: its stored entry, flags, transcript location and sizes, windows, archives."""

    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_hints
        from openclaw_cli.ops.session_show import show_session

        cx = load_context(ctx)
        doc = show_session(cx, {"key": key, "agent": agent, "store": store})
        if json_mode:
            echo_json(doc)
            return
        print_lines(show_lines(doc))
        say_hints(cx.hints)

    run(body, json_mode=json_mode)


def archives(
    ctx: typer.Context,
    agent: str = typer.Option(
        None, "--agent", metavar="<id>", help="One agent's archives (default: the default agent)."
    ),
    all_agents: bool = typer.Option(False, "--all-agents", help="Every agent's archives."),
    store: str = STORE,
    key: str = typer.Option(None, "--key", metavar="<key>", help="Only the archives of this session key."),
    json_mode: bool = JSON,
) -> None:
    """What can be restored: key, reason, date, size and expiry under the current retention."""

    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_hints
        from openclaw_cli.ops.restore import sessions_archives

        cx = load_context(ctx)
        doc = sessions_archives(cx, {"agent": agent, "allAgents": all_agents, "store": store, "key": key})
        if json_mode:
            echo_json(doc)
            return
        print_lines(archive_lines(doc))
        say_hints(cx.hints)

    run(body, json_mode=json_mode)


def restore(
    ctx: typer.Context,
    target: str = typer.Argument(
        ...,
        metavar="KEY|ARCHIVE",
        help="A session key or id (its newest archive), or an archive name or path.",
    ),
    as_key: str = typer.Option(
        None, "--as", metavar="<new-key>", help="Restore under this key (needed when the old key is taken)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Verify the archive and show what would be restored."
    ),
    agent: str = AGENT,
    store: str = STORE,
    json_mode: bool = JSON,
) -> None:
    """Bring a deleted, pruned, capped or reset session back from its verified archive."""

    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_hints
        from openclaw_cli.ops.restore import sessions_restore

        cx = load_context(ctx)
        cx.backup = True
        doc = sessions_restore(
            cx, {"target": target, "as": as_key, "dryRun": dry_run, "agent": agent, "store": store}
        )
        if json_mode:
            echo_json(doc)
            return
        from openclaw_cli.cli.render_storage import human
        from openclaw_cli.output import sanitize_text as s

        verb = "Would restore" if doc["dryRun"] else "Restored"
        lines = [
            f"{verb} {s(doc['key'])} (session {doc['sessionId']}, {doc['events']} events, {human(doc['bytes'])})",
            f"  from {s(doc['archive']['name'])} ({doc['archive']['reason']}); verified: {doc['verified']}",
        ]
        if doc.get("location"):
            lines.append(f"  transcript: {s(doc['location'])}")
        print_lines(lines)
        say_hints(cx.hints)

    run(body, json_mode=json_mode)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")


def archive_lines(doc: dict[str, Any]) -> list[str]:
    from openclaw_cli.cli.render_storage import human
    from openclaw_cli.cli.table import Column, render_table
    from openclaw_cli.cli.term import stdout_printer
    from openclaw_cli.output import sanitize_text as s

    if not doc["archives"]:
        return ["No restorable archives."]
    rows = [
        [
            s(a["key"] or "?"),
            a["reason"],
            _when(a["archivedAt"]),
            human(a["bytes"]),
            _when(a["expiresAt"]) if a["expiresAt"] else "never",
            s(a["name"]),
        ]
        for a in doc["archives"]
    ]
    columns = [
        Column("Key", min_width=12, shrink_order=40),
        Column("Reason", min_width=6),
        Column("Archived", min_width=10),
        Column("Size", min_width=6, align="right"),
        Column("Expires", min_width=6),
        Column("Archive", min_width=12, shrink_order=10),
    ]
    printer = stdout_printer()
    return [
        f"Restorable archives: {doc['count']}",
        *render_table(columns, rows, width=printer.width, color=printer.color),
    ]


def show_lines(doc: dict[str, Any]) -> list[str]:
    import orjson

    from openclaw_cli.cli.render_storage import human
    from openclaw_cli.output import sanitize_text as s

    t = doc["transcript"]
    flags = ", ".join(name for name, on in doc["flags"].items() if on) or "none"
    lines = [
        f"Session: {s(doc['key'])}",
        f"  agent: {doc['agentId']}   store: {s(doc['store']['path'])} ({doc['store']['kind']})",
        f"  kind: {doc['derived']['storageKind']} ({doc['derived']['kind']})   channel: {doc['derived']['channel'] or '-'}",
        f"  flags: {flags}",
        f"  session id: {t.get('sessionId')}",
        f"  transcript: {s(str(t.get('location')))}",
    ]
    if "bytes" in t:
        usage = t.get("usage") or {}
        lines.append(
            f"  size: {human(t['bytes'])} in {t.get('events', 0)} events; usage: {usage.get('totalTokens', 0):,} tokens, "
            f"${usage.get('cost', 0):.4f}"
        )
    if doc["windows"]:
        lines.append(f"  windows: {len(doc['windows'])}")
        for w in doc["windows"]:
            lines.append(
                f"    {w['sessionId']}  {w.get('reason') or '-'}  created {_when(w.get('createdAt'))}"
            )
    if doc["archives"]:
        lines.append(f"  archives: {len(doc['archives'])}")
        for a in doc["archives"]:
            lines.append(f"    {s(a['name'])}  {a['reason']}  {human(a['bytes'])}")
    lines.append("  entry:")
    text = orjson.dumps(doc["entry"], option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    lines += ["    " + s(line) for line in text.splitlines()]
    return lines
