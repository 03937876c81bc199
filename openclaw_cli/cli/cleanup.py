"""`openclaw sessions cleanup` and its top-level alias `openclaw cleanup` (maintenance.md §10).

Both run the `sessions.cleanup` operation (`ops.cleanup`). An apply (no `--dry-run`, no `--store`)
is first sent to the Gateway (`cli.delegation.delegate`) with the real CLI's params `{agent,
allAgents, enforce, activeKey, fixMissing, fixDmScope}`; it runs locally only when nothing listens.
Output: `--json` prints OpenClaw's document on stdout (the Gateway's, when it served the run);
text (report, planned-actions table, progress) goes to stderr.
"""

from __future__ import annotations

from typing import Any

import typer

from openclaw_cli.cli.common import echo_json, run, state_paths
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL

DRY_RUN = typer.Option(False, "--dry-run", help="Preview only; never writes.")
ENFORCE = typer.Option(False, "--enforce", help='Apply even when session.maintenance.mode is "warn".')
FIX_MISSING = typer.Option(False, "--fix-missing",
                           help="Also remove rows whose transcript is missing or has no message records.")
FIX_DM_SCOPE = typer.Option(False, "--fix-dm-scope",
                            help="With session.dmScope=main, retire peer-keyed direct-DM rows.")
ACTIVE_KEY = typer.Option(None, "--active-key", help="Protect this key (it still counts toward maxEntries).")
AGENT = typer.Option(None, "--agent", help="One agent's store (default: the default agent).")
ALL_AGENTS = typer.Option(False, "--all-agents", help="Every configured agent plus agent dirs found on disk.")
STORE = typer.Option(None, "--store", help="An explicit store: a legacy sessions.json or an agent .sqlite.")
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
RICH_TABLE_MAX_ROWS = 2000  # beyond this the plain renderer draws the table (Rich is slow on 20k rows)


def _parent_flags(parent: dict[str, Any]) -> list[str]:
    flags = []
    if parent.get("active") is not None:
        flags.append("--active")
    if parent.get("limit") is not None:
        flags.append("--limit")
    if parent.get("verbose"):
        flags.append("--verbose")
    return flags


def rich_table(headers, rows) -> str:
    """The planned-actions table drawn by Rich (box lines, Flags folded to the terminal width)."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    from openclaw_cli.cli.render_cleanup import render_table
    from openclaw_cli.output import stderr_console

    if len(rows) > RICH_TABLE_MAX_ROWS:
        return render_table(headers, rows)
    width = stderr_console().width
    table = Table(box=box.SQUARE, show_lines=False, show_edge=True)
    for header in headers[:-1]:
        table.add_column(header, no_wrap=True)
    table.add_column(headers[-1], overflow="fold")
    for row in rows:
        table.add_row(*row)
    buf = io.StringIO()
    Console(file=buf, width=width, no_color=True, highlight=False, color_system=None).print(table)
    return buf.getvalue().rstrip("\n")


def cleanup_command(typer_ctx: typer.Context | None, *, dry_run: bool, enforce: bool, fix_missing: bool,
                    fix_dm_scope: bool, active_key: str | None, agent: str | None, all_agents: bool,
                    store: str | None, json_mode: bool, parent: dict[str, Any] | None = None,
                    gateway: dict[str, Any] | None = None) -> None:
    parent = parent or {}
    agent = agent if agent is not None else parent.get("agent")
    all_agents = all_agents or bool(parent.get("all_agents"))
    store = store if store is not None else parent.get("store")
    json_mode = json_mode or bool(parent.get("json"))

    def body() -> None:
        from openclaw_cli.cli.progress import progress_factory
        from openclaw_cli.cli.render_cleanup import parent_option_rejection
        from openclaw_cli.errors import SelectionError
        from openclaw_cli.ops.cleanup import PartialCleanupError, cleanup_stores, options_from_params
        from openclaw_cli.ops.context import Context

        rejection = parent_option_rejection(_parent_flags(parent))
        if rejection:
            raise SelectionError(rejection)
        from openclaw_cli.cli.delegation import delegate, gateway_options

        gw_options = gateway_options(**(gateway or {}))
        ctx = Context.load(state_paths(typer_ctx), progress=progress_factory(json_mode))
        params = {"agent": agent, "allAgents": all_agents, "enforce": enforce,
                  "activeKey": active_key if active_key and active_key.strip() else None,
                  "fixMissing": fix_missing, "fixDmScope": fix_dm_scope, "dryRun": dry_run, "store": store}
        options = options_from_params(params)
        # Spec D9/D20: an apply without --dry-run/--store is the Gateway's to run when one listens.
        served = _delegate_cleanup(delegate, params, gw_options, ctx)
        if served is not None:
            _report_served(served, ctx, json_mode)
            return
        try:
            results = cleanup_stores(ctx, options)
        except PartialCleanupError as exc:
            _report_partial(exc, json_mode, dry_run)
            raise typer.Exit(int(exc.exit_code)) from None
        _report(results, ctx, options, json_mode)

    run(body, json_mode=json_mode)


def _delegate_cleanup(delegate, params, gw_options, ctx) -> dict[str, Any] | None:
    """The Gateway's cleanup document (None: run locally). A partial failure comes back as a request
    error whose details are the partial document (as in OpenClaw): printed, then exit 1."""
    from openclaw_cli.errors import GatewayRequestError

    try:
        return delegate("sessions.cleanup", params, gw_options, paths=ctx.paths, config=ctx.config)
    except GatewayRequestError as exc:
        details = exc.details
        if isinstance(details, dict) and ("partialError" in details or "stores" in details):
            return {**details, "__partial__": exc.message}
        raise


def _report_served(document: dict[str, Any], ctx, json_mode: bool) -> None:
    """Print the Gateway's cleanup result in the local path's shapes (JSON as received)."""
    from openclaw_cli.cli.render_cleanup import render_apply_text
    from openclaw_cli.output import err, sanitize_text, stderr_console

    partial = document.pop("__partial__", None)
    partial_error = document.get("partialError")
    if isinstance(partial_error, dict) and partial_error.get("message"):
        partial = partial_error["message"]
    if json_mode:
        echo_json(document)
    else:
        stores = document.get("stores") if isinstance(document.get("stores"), list) else [document]
        summaries = [s for s in stores if isinstance(s, dict) and "storePath" in s]
        console = stderr_console()
        if summaries:
            console.print(render_apply_text(summaries), markup=False, highlight=False)
        if partial:
            console.print(f"[error] {sanitize_text(partial)}", markup=False, highlight=False)
    for hint in ctx.hints:
        err(f"Hint: {sanitize_text(hint)}")
    if partial:
        raise typer.Exit(1)


def _report(results, ctx, options, json_mode: bool) -> None:
    from openclaw_cli.ops.cleanup import cleanup_document, store_views
    from openclaw_cli.output import err, sanitize_text, stderr_console

    if json_mode:
        echo_json(cleanup_document(results, options))
        for hint in ctx.hints:  # D2: said once, on stderr (the JSON keeps OpenClaw's shape)
            err(f"Hint: {sanitize_text(hint)}")
        return
    console = stderr_console()
    if options.dry_run:
        console.print(_dry_run_text(store_views(results)), markup=False, highlight=False)
    else:
        from openclaw_cli.cli.render_cleanup import render_apply_text

        console.print(render_apply_text([r.summary for r in results]), markup=False, highlight=False)
    for hint in ctx.hints:
        console.print(f"Hint: {sanitize_text(hint)}", markup=False, highlight=False)


def _dry_run_text(views) -> str:
    from openclaw_cli.cli.render_cleanup import action_rows, render_dry_run_texts, warn_mode_hint

    reports = [(v["summary"], action_rows(v["actions"], v["nowMs"]), warn_mode_hint(v["wouldEnforce"]))
               for v in views]
    return render_dry_run_texts(reports, table_renderer=rich_table)


def _report_partial(exc, json_mode: bool, dry_run: bool) -> None:
    from openclaw_cli.output import sanitize_text, stderr_console

    if json_mode:
        echo_json(exc.document)
        return
    console = stderr_console()
    stores = exc.document.get("stores") or []
    if stores and not dry_run:
        from openclaw_cli.cli.render_cleanup import render_apply_text

        console.print(render_apply_text(stores), markup=False, highlight=False)
    console.print(f"[error] {sanitize_text(exc.message)}", markup=False, highlight=False)


def _options_doc() -> str:
    return "Prune, cap and archive session entries and their transcripts (preview with --dry-run)."


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli.sessions import sessions_app

    @sessions_app.command("cleanup", help=_options_doc())
    def sessions_cleanup(
        ctx: typer.Context,
        dry_run: bool = DRY_RUN, enforce: bool = ENFORCE, fix_missing: bool = FIX_MISSING,
        fix_dm_scope: bool = FIX_DM_SCOPE, active_key: str = ACTIVE_KEY, agent: str = AGENT,
        all_agents: bool = ALL_AGENTS, store: str = STORE, json_mode: bool = JSON,
        url: str = GATEWAY_URL, token: str = GATEWAY_TOKEN, password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
    ) -> None:
        parent = ctx.parent.obj if ctx.parent is not None and isinstance(ctx.parent.obj, dict) else {}
        cleanup_command(ctx, dry_run=dry_run, enforce=enforce, fix_missing=fix_missing, fix_dm_scope=fix_dm_scope,
                        active_key=active_key, agent=agent, all_agents=all_agents, store=store,
                        json_mode=json_mode, parent=parent,
                        gateway={"url": url, "token": token, "password": password, "timeout": timeout})

    @app.command("cleanup", help=_options_doc() + " Same as `openclaw sessions cleanup`.")
    def top_cleanup(
        ctx: typer.Context,
        dry_run: bool = DRY_RUN, enforce: bool = ENFORCE, fix_missing: bool = FIX_MISSING,
        fix_dm_scope: bool = FIX_DM_SCOPE, active_key: str = ACTIVE_KEY, agent: str = AGENT,
        all_agents: bool = ALL_AGENTS, store: str = STORE, json_mode: bool = JSON,
        url: str = GATEWAY_URL, token: str = GATEWAY_TOKEN, password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
    ) -> None:
        cleanup_command(ctx, dry_run=dry_run, enforce=enforce, fix_missing=fix_missing, fix_dm_scope=fix_dm_scope,
                        active_key=active_key, agent=agent, all_agents=all_agents, store=store,
                        json_mode=json_mode,
                        gateway={"url": url, "token": token, "password": password, "timeout": timeout})
