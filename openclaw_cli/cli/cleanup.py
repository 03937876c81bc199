"""`openclaw sessions cleanup` and its top-level alias `openclaw cleanup` (maintenance.md §10).

Both run the `sessions.cleanup` operation (`ops.cleanup`). An apply (no `--dry-run`, no `--store`)
is first sent to the Gateway (`cli.delegation.delegate`) with the real CLI's params `{agent,
allAgents, enforce, activeKey, fixMissing, fixDmScope}`; it runs locally only when nothing listens.
Output: `--json` prints OpenClaw's document on stdout (the Gateway's, when it served the run);
the text report and planned-actions table go to stdout too (spec D19), progress, hints and
errors to stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import echo_json, run
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL
from openclaw_cli.cli.sessions import complete_agent, complete_key
from openclaw_cli.cli.store_options import NO_BACKUP

if TYPE_CHECKING:
    from openclaw_cli.cli.delegation import GatewayOptions
    from openclaw_cli.maintenance.service import CleanupOptions, PartialCleanupError, StoreCleanup
    from openclaw_cli.ops.context import Context

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


def _parent_flags(parent: dict[str, Any]) -> list[str]:
    flags = []
    if parent.get("active") is not None:
        flags.append("--active")
    if parent.get("limit") is not None:
        flags.append("--limit")
    if parent.get("verbose"):
        flags.append("--verbose")
    return flags


def cleanup_command(
    typer_ctx: typer.Context | None,
    *,
    dry_run: bool,
    enforce: bool,
    fix_missing: bool,
    fix_dm_scope: bool,
    active_key: str | None,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    json_mode: bool,
    parent: dict[str, Any] | None = None,
    gateway: dict[str, Any] | None = None,
    wide: bool = False,
    no_backup: bool = False,
    orphans: bool = False,
    tombstones: bool = False,
    explain: str | None = None,
) -> None:
    parent = parent or {}
    agent = agent if agent is not None else parent.get("agent")
    all_agents = all_agents or bool(parent.get("all_agents"))
    store = store if store is not None else parent.get("store")
    json_mode = json_mode or bool(parent.get("json"))
    wide = wide or bool(parent.get("wide"))

    if orphans or tombstones or explain is not None:
        from openclaw_cli.cli.collection import reclaim_command

        reclaim_command(
            typer_ctx,
            orphans=orphans,
            tombstones=tombstones,
            explain=explain,
            dry_run=dry_run,
            agent=agent,
            all_agents=all_agents,
            store=store,
            json_mode=json_mode,
            no_backup=no_backup,
        )
        return

    def body() -> None:
        from openclaw_cli.cli.common import load_context
        from openclaw_cli.cli.progress import progress_factory
        from openclaw_cli.cli.render_cleanup import parent_option_rejection
        from openclaw_cli.errors import SelectionError
        from openclaw_cli.ops.cleanup import PartialCleanupError, cleanup_stores, options_from_params

        rejection = parent_option_rejection(_parent_flags(parent))
        if rejection:
            raise SelectionError(rejection)
        from openclaw_cli.cli.delegation import delegate, gateway_options, given

        gw_options = gateway_options(**(gateway or {}))
        ctx = load_context(typer_ctx, progress=progress_factory(json_mode), backup=not no_backup)
        # what the user asked, as the real CLI sends it (unset options left out)
        params = given(
            agent=agent,
            allAgents=all_agents,
            enforce=enforce,
            activeKey=active_key if active_key and active_key.strip() else None,
            fixMissing=fix_missing,
            fixDmScope=fix_dm_scope,
            dryRun=dry_run,
            store=store,
        )
        options = options_from_params(params)
        options.text_report = dry_run and not json_mode  # its table shows whole rows (issue 30)
        # D23: the preview follows the release of the Gateway that would apply it (the real
        # sessions.cleanup has no dry run: the preview is always computed here)
        from openclaw_cli.cli.delegation import follow_owner

        follow_owner(ctx, gw_options, dry_run=dry_run, store=store)
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
        _report(results, ctx, options, json_mode, wide)

    run(body, json_mode=json_mode)


def _delegate_cleanup(
    delegate: Callable[..., dict[str, Any] | None],
    params: dict[str, Any],
    gw_options: GatewayOptions,
    ctx: Context,
) -> dict[str, Any] | None:
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


def _report_served(document: dict[str, Any], ctx: Context, json_mode: bool) -> None:
    """Print the Gateway's cleanup result in the local path's shapes (JSON as received)."""
    from openclaw_cli.cli.common import print_lines, say_hints
    from openclaw_cli.cli.render_cleanup import render_apply_text
    from openclaw_cli.output import err, sanitize_text

    partial = document.pop("__partial__", None)
    partial_error = document.get("partialError")
    if isinstance(partial_error, dict) and partial_error.get("message"):
        partial = partial_error["message"]
    if json_mode:
        echo_json(document)
    else:
        raw_stores = document.get("stores")
        stores = raw_stores if isinstance(raw_stores, list) else [document]
        summaries = [s for s in stores if isinstance(s, dict) and "storePath" in s]
        if summaries:
            print_lines([render_apply_text(summaries)])
        _say_warnings(summaries)
        if partial:
            err(f"[error] {sanitize_text(partial)}")
    say_hints(ctx.hints)
    if partial:
        raise typer.Exit(1)


def _report(
    results: list[StoreCleanup], ctx: Context, options: CleanupOptions, json_mode: bool, wide: bool = False
) -> None:
    from openclaw_cli.cli.common import print_lines, say_hints
    from openclaw_cli.ops.cleanup import cleanup_document, store_views

    if json_mode:
        echo_json(cleanup_document(results, options))
        if not options.dry_run and any(
            r.summary.get("mode") == "warn" and not r.summary.get("wouldMutate") for r in results
        ):
            from openclaw_cli.cli.render_cleanup import WARN_APPLY_NOTE

            ctx.hint(WARN_APPLY_NOTE)
        say_hints(ctx.hints)  # D2: said once, on stderr (the JSON keeps OpenClaw's shape)
        return
    if options.dry_run:
        print_lines([_dry_run_text(store_views(results), wide=wide)])
    else:
        from openclaw_cli.cli.render_cleanup import render_apply_text

        print_lines([render_apply_text([r.summary for r in results])])
    print_lines(_reason_lines(results, dry_run=options.dry_run))
    _say_warnings([r.summary for r in results])
    say_hints(ctx.hints)


def _reason_lines(results: list[Any], *, dry_run: bool) -> list[str]:
    """Issue 27 §7: per reason, how many sessions or files and how many bytes (all stores)."""
    from openclaw_cli.cli.render_storage import human

    total: dict[str, list[int]] = {}
    for result in results:
        for reason, (count, size) in (getattr(result, "reason_bytes", None) or {}).items():
            slot = total.setdefault(reason, [0, 0])
            slot[0] += count
            slot[1] += size
    if not total:
        return []
    verb = "Would remove" if dry_run else "Removed"
    lines = [f"{verb}, by reason (transcript bytes; each transcript is archived first):"]
    for reason, (count, size) in total.items():
        lines.append(f"  {reason}: {count}, {human(size)}")
    lines.append(f"  total: {human(sum(size for _, size in total.values()))}")
    return lines


def _say_warnings(summaries: list[dict[str, Any]]) -> None:
    """A store summary's `warnings` (transcripts that are symbolic links) on stderr, in text."""
    from openclaw_cli.output import err, sanitize_text

    for summary in summaries:
        for warning in summary.get("warnings") or []:
            err(f"Warning: {sanitize_text(str(warning))}")


def _dry_run_text(views: list[dict[str, Any]], *, wide: bool = False) -> str:
    from openclaw_cli.cli.render_cleanup import (
        WARN_PREVIEW_NOTE,
        action_rows,
        fitted_table,
        render_dry_run_texts,
        warn_mode_hint,
    )
    from openclaw_cli.cli.term import stdout_printer

    printer = stdout_printer(wide=wide)
    reports = [
        (
            v["summary"],
            action_rows(v["actions"], v["nowMs"]),
            WARN_PREVIEW_NOTE if v.get("previewIsEnforce") else warn_mode_hint(v["wouldEnforce"]),
        )
        for v in views
    ]
    return render_dry_run_texts(
        reports, table_renderer=fitted_table(printer.width, printer.color), full_keys=printer.full_cells
    )


def _report_partial(exc: PartialCleanupError, json_mode: bool, dry_run: bool) -> None:
    from openclaw_cli.cli.common import print_lines
    from openclaw_cli.output import err, sanitize_text

    if json_mode:
        echo_json(exc.document)
        return
    stores = exc.document.get("stores") or []
    if stores and not dry_run:
        from openclaw_cli.cli.render_cleanup import render_apply_text

        print_lines([render_apply_text(stores)])
    err(f"[error] {sanitize_text(exc.message)}")


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
