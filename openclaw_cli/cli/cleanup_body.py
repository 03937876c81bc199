"""The body of `openclaw sessions cleanup` / `openclaw cleanup` (`cli/cleanup.py` declares their
options), without Typer: the fast path (`cli/fast.py`) runs it for the argument lists `parse_fast`
understands completely, the Typer commands for every other, so both print the same bytes. See
`cli/cleanup.py` for what the command does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openclaw_cli.cli.common import command_exit, echo_json, run

if TYPE_CHECKING:
    from openclaw_cli.cli.delegation import GatewayOptions
    from openclaw_cli.maintenance.service import CleanupOptions, PartialCleanupError, StoreCleanup
    from openclaw_cli.ops.context import Context

# `sessions cleanup` / `cleanup` options the fast path serves (all of `cli/cleanup.py`'s but the
# three that run the collection instead: `--orphans`, `--tombstones`, `--explain`)
FAST_FLAGS = {
    "--dry-run": "dry_run",
    "--enforce": "enforce",
    "--fix-missing": "fix_missing",
    "--fix-dm-scope": "fix_dm_scope",
    "--all-agents": "all_agents",
    "--json": "json_mode",
    "--wide": "wide",
    "--no-backup": "no_backup",
}
FAST_VALUES = {
    "--active-key": "active_key",
    "--agent": "agent",
    "--store": "store",
    "--url": "url",
    "--token": "token",
    "--password": "password",
    "--timeout": "timeout",
}
LEFT_TO_TYPER = frozenset({"--orphans", "--tombstones", "--explain"})
_GATEWAY = ("url", "token", "password", "timeout")


def fast_call(got: dict[str, Any]) -> dict[str, Any] | None:
    """`cleanup_command`'s keyword arguments from the options the fast path read (`cli/fast.py`
    `_options` over `FAST_VALUES` / `FAST_FLAGS`), or None when it leaves the call to the Typer
    app: the text report (its terminal table) is the Typer command's."""
    if not got.get("json_mode"):
        return None
    call: dict[str, Any] = {param: got.get(param, False) for param in FAST_FLAGS.values()}
    call.update((param, got.get(param)) for param in FAST_VALUES.values() if param not in _GATEWAY)
    call["gateway"] = {name: got.get(name) for name in _GATEWAY}
    return call


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
    typer_ctx: Any,
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
        options.reason_bytes = not json_mode  # the text report's lines by reason (`_reason_lines`)
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
            raise command_exit(int(exc.exit_code)) from None
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
        raise command_exit(1)


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
