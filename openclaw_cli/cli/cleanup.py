"""`openclaw sessions cleanup` and its top-level alias `openclaw cleanup` (maintenance.md §10).

Both run the `sessions.cleanup` operation (`ops.cleanup`). An apply (no `--dry-run`, no `--store`)
is first sent to the Gateway (`cli.delegation.delegate`) with the real CLI's params `{agent,
allAgents, enforce, activeKey, fixMissing, fixDmScope}`; it runs locally only when nothing listens.
Output: `--json` prints OpenClaw's document on stdout (the Gateway's, when it served the run);
the text report and planned-actions table go to stdout too (spec D19), progress, hints and
errors to stderr.
"""

from __future__ import annotations

import typer

from openclaw_cli.cli.cleanup_body import cleanup_command
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL
from openclaw_cli.cli.sessions import complete_agent, complete_key
from openclaw_cli.cli.store_options import NO_BACKUP

__all__ = ["cleanup_command", "register"]

DRY_RUN = typer.Option(False, "--dry-run", help="Preview only; never writes.")
ENFORCE = typer.Option(False, "--enforce", help='Apply even when session.maintenance.mode is "warn".')
FIX_MISSING = typer.Option(
    False, "--fix-missing", help="Also remove rows whose transcript is missing or has no message records."
)
FIX_DM_SCOPE = typer.Option(
    False, "--fix-dm-scope", help="With session.dmScope=main, retire peer-keyed direct-DM rows."
)
ACTIVE_KEY = typer.Option(
    None,
    "--active-key",
    metavar="<key>",
    autocompletion=complete_key,
    help="Protect this key (it still counts toward maxEntries).",
)
AGENT = typer.Option(
    None,
    "--agent",
    metavar="<id>",
    autocompletion=complete_agent,
    help="One agent's store (default: the default agent).",
)
ALL_AGENTS = typer.Option(
    False, "--all-agents", help="Every configured agent (with no agents configured: every agent dir on disk)."
)
STORE = typer.Option(
    None,
    "--store",
    metavar="<path>",
    help="An explicit store: a legacy sessions.json or an agent .sqlite (offline repair).",
)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
WIDE = typer.Option(False, "--wide", help="Full keys in the planned-actions table on a terminal too.")
ORPHANS = typer.Option(
    False,
    "--orphans",
    help="Only collect unreferenced transcripts: archived (verified), then removed (preview with --dry-run).",
)
TOMBSTONES = typer.Option(
    False,
    "--tombstones",
    help="Only remove .deleted/.reset archives past resetArchiveRetention (preview with --dry-run).",
)
EXPLAIN = typer.Option(
    None,
    "--explain",
    metavar="<key>",
    autocompletion=complete_key,
    help="Say why this session is kept or removed by cleanup --enforce (changes nothing).",
)


def _options_doc() -> str:
    return "Prune, cap and archive session entries and their transcripts (preview with --dry-run)."


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli.sessions import sessions_app

    @sessions_app.command("cleanup", help=_options_doc())
    def sessions_cleanup(
        ctx: typer.Context,
        dry_run: bool = DRY_RUN,
        enforce: bool = ENFORCE,
        fix_missing: bool = FIX_MISSING,
        fix_dm_scope: bool = FIX_DM_SCOPE,
        active_key: str = ACTIVE_KEY,
        agent: str = AGENT,
        all_agents: bool = ALL_AGENTS,
        store: str = STORE,
        json_mode: bool = JSON,
        wide: bool = WIDE,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
        orphans: bool = ORPHANS,
        tombstones: bool = TOMBSTONES,
        explain: str = EXPLAIN,
    ) -> None:
        parent = ctx.parent.obj if ctx.parent is not None and isinstance(ctx.parent.obj, dict) else {}
        cleanup_command(
            ctx,
            dry_run=dry_run,
            enforce=enforce,
            fix_missing=fix_missing,
            fix_dm_scope=fix_dm_scope,
            active_key=active_key,
            agent=agent,
            all_agents=all_agents,
            store=store,
            json_mode=json_mode,
            parent=parent,
            wide=wide,
            gateway={"url": url, "token": token, "password": password, "timeout": timeout},
            no_backup=no_backup,
            orphans=orphans,
            tombstones=tombstones,
            explain=explain,
        )

    @app.command("cleanup", help=_options_doc() + " Same as `openclaw sessions cleanup`.")
    def top_cleanup(
        ctx: typer.Context,
        dry_run: bool = DRY_RUN,
        enforce: bool = ENFORCE,
        fix_missing: bool = FIX_MISSING,
        fix_dm_scope: bool = FIX_DM_SCOPE,
        active_key: str = ACTIVE_KEY,
        agent: str = AGENT,
        all_agents: bool = ALL_AGENTS,
        store: str = STORE,
        json_mode: bool = JSON,
        wide: bool = WIDE,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
        orphans: bool = ORPHANS,
        tombstones: bool = TOMBSTONES,
        explain: str = EXPLAIN,
    ) -> None:
        cleanup_command(
            ctx,
            dry_run=dry_run,
            enforce=enforce,
            fix_missing=fix_missing,
            fix_dm_scope=fix_dm_scope,
            active_key=active_key,
            agent=agent,
            all_agents=all_agents,
            store=store,
            json_mode=json_mode,
            wide=wide,
            gateway={"url": url, "token": token, "password": password, "timeout": timeout},
            no_backup=no_backup,
            orphans=orphans,
            tombstones=tombstones,
            explain=explain,
        )
