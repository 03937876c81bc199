"""`sessions cleanup --orphans | --tombstones | --explain KEY` (issue 27 §2, §7): collection and the
one-key explanation, run offline (OpenClaw's `sessions.cleanup` has no such params)."""

from __future__ import annotations

from typing import Any

from openclaw_cli.cli.common import run


def reclaim_command(
    typer_ctx: Any,
    *,
    orphans: bool,
    tombstones: bool,
    explain: str | None,
    dry_run: bool,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    json_mode: bool,
    no_backup: bool,
) -> None:
    def body() -> None:
        from openclaw_cli.cli.common import echo_json, load_context, print_lines, say_hints
        from openclaw_cli.errors import UsageError

        cx = load_context(typer_ctx, backup=not no_backup)
        if explain is not None:
            if orphans or tombstones:
                raise UsageError("--explain cannot be combined with --orphans or --tombstones")
            from openclaw_cli.ops.collection import explain as explain_key

            doc = explain_key(cx, {"key": explain, "agent": agent, "store": store})
            if json_mode:
                echo_json(doc)
            else:
                print_lines(explain_lines(doc))
                say_hints(cx.hints)
            return
        from openclaw_cli.ops.collection import collect

        doc = collect(
            cx,
            {
                "orphans": orphans,
                "tombstones": tombstones,
                "dryRun": dry_run,
                "agent": agent,
                "allAgents": all_agents,
                "store": store,
            },
        )
        if json_mode:
            echo_json(doc)
        else:
            print_lines(collect_lines(doc))
            say_hints(cx.hints)

    run(body, json_mode=json_mode)


def collect_lines(doc: dict[str, Any]) -> list[str]:
    from openclaw_cli.cli.render_storage import human
    from openclaw_cli.output import sanitize_text as s

    lines = []
    verb = "Would reclaim" if doc["dryRun"] else "Reclaimed"
    for store in doc["stores"]:
        lines.append(f"Agent {store['agentId']}: {s(store['path'])}")
        for name in ("orphans", "tombstones"):
            part = store.get(name)
            if part is None:
                continue
            what = (
                "orphan transcripts (archived, then removed)"
                if name == "orphans"
                else "tombstones past retention"
            )
            lines.append(f"  {name}: {part['files']} file(s), {human(part['bytes'])} — {what}")
            if name == "tombstones" and part.get("retentionMs") is None:
                lines.append("    resetArchiveRetention is unset: archives are kept forever")
            if part.get("note"):
                lines.append(f"    {part['note']}")
    amount = doc["reclaimableBytes"] if doc["dryRun"] else doc["reclaimedBytes"]
    lines.append(f"{verb}: {human(amount)}")
    return lines


def explain_lines(doc: dict[str, Any]) -> list[str]:
    from openclaw_cli.output import sanitize_text as s

    lines = [
        f"{s(doc['key'])}: {doc['decision']}",
        f"  under OpenClaw {doc['release']}'s rules (cleanup --enforce; mode {doc['mode']})",
    ]
    lines += [f"  - {s(reason)}" for reason in doc["reasons"]]
    return lines
