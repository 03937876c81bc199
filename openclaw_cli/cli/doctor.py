"""`openclaw doctor`: the session SQLite migration modes (`--session-sqlite <mode>`), plus the plain
`doctor` (read-only preview of the migration) and `doctor --fix` (runs the import)."""

from __future__ import annotations

import typer

MUTUALLY_EXCLUSIVE = (
    "doctor operations are mutually exclusive: choose one of --lint, --fix/--repair, --post-upgrade, "
    "--state-sqlite, or --session-sqlite."
)
LINT_WITH_SQLITE = "doctor --lint runs read-only lint checks and cannot be combined with --session-sqlite <mode>."


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(
        ctx: typer.Context,
        session_sqlite: str = typer.Option(
            None, "--session-sqlite", metavar="MODE",
            help="Session SQLite migration: dry-run, import, validate, inspect, compact, restore or recover."),
        session_sqlite_agent: str = typer.Option(None, "--session-sqlite-agent", metavar="ID",
                                                 help="One agent (with --session-sqlite-store: its expected owner)."),
        session_sqlite_all_agents: bool = typer.Option(
            False, "--session-sqlite-all-agents", help="Configured agents plus every agents/* store on disk."),
        session_sqlite_store: str = typer.Option(None, "--session-sqlite-store", metavar="PATH",
                                                 help="One sessions.json or .sqlite file."),
        github_issue: bool = typer.Option(False, "--github-issue",
                                          help="With recover: point at the sanitised report (no issue is created)."),
        fix: bool = typer.Option(False, "--fix", "--repair", help="Apply repairs: import legacy sessions into SQLite."),
        lint: bool = typer.Option(False, "--lint", hidden=True),
        post_upgrade: bool = typer.Option(False, "--post-upgrade", hidden=True),
        state_sqlite: str = typer.Option(None, "--state-sqlite", hidden=True),
        non_interactive: bool = typer.Option(False, "--non-interactive", help="No prompts."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Accept defaults."),
        json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Check and migrate session state (legacy sessions.json + JSONL -> SQLite)."""
        from openclaw_cli.cli.common import run

        def body() -> None:
            from openclaw_cli.errors import UsageError
            from openclaw_cli.migration.targets import GITHUB_ISSUE_ERROR, OPTIONS_WITHOUT_MODE

            operations = [lint, fix, post_upgrade, state_sqlite is not None, session_sqlite is not None]
            if lint and session_sqlite is not None:
                raise UsageError(LINT_WITH_SQLITE)
            if sum(bool(x) for x in operations) > 1:
                raise UsageError(MUTUALLY_EXCLUSIVE)
            selectors = [session_sqlite_agent is not None, session_sqlite_all_agents, session_sqlite_store is not None]
            if session_sqlite is None:
                if github_issue:
                    raise UsageError(GITHUB_ISSUE_ERROR)
                if any(selectors):
                    raise UsageError(OPTIONS_WITHOUT_MODE)
                if lint or post_upgrade or state_sqlite is not None:
                    raise UsageError("This doctor operation is not implemented by openclaw-cli; use OpenClaw's doctor.")
                _plain_doctor(ctx, fix=fix, json_out=json_out)
                return
            _session_sqlite(ctx, session_sqlite, agent=session_sqlite_agent, all_agents=session_sqlite_all_agents,
                            store=session_sqlite_store, json_out=json_out, yes=yes, github_issue=github_issue)

        run(body, json_mode=json_out)


def _progress(json_out: bool):
    from openclaw_cli.migration.context import Progress, RichProgress
    from openclaw_cli.output import stderr_console

    if json_out or not stderr_console().is_interactive:
        return Progress()
    return RichProgress()


def _paths(ctx: typer.Context):
    from openclaw_cli.cli.common import state_paths

    return state_paths(ctx)


def _session_sqlite(ctx: typer.Context, mode: str, *, agent: str | None, all_agents: bool, store: str | None,
                    json_out: bool, yes: bool, github_issue: bool) -> None:
    from openclaw_cli.migration.context import Options
    from openclaw_cli.migration.engine import run as run_engine
    from openclaw_cli.output import emit_json, err

    options = Options(mode=mode, agent=agent, all_agents=all_agents, store=store, json=json_out, yes=yes,
                      github_issue=github_issue)
    report = run_engine(options, paths=_paths(ctx), progress=_progress(json_out))
    if json_out:
        emit_json(report.to_json())
    else:
        for line in report.render_text():
            err(line)
    if github_issue:
        if report.support_issue is None:
            err("session-sqlite recover: no support issue payload was generated")
        else:
            err("GitHub issue creation is not available in openclaw-cli; share the sanitised report instead: "
                f"{report.support_issue.get('bodyPath')}")
    raise typer.Exit(report.exit_code)


def _plain_doctor(ctx: typer.Context, *, fix: bool, json_out: bool) -> None:
    """§6.17: plain `doctor` previews the migration (dry-run, all agents); `--fix` runs the import."""
    from openclaw_cli.doctor_checks import render_checks, run_checks
    from openclaw_cli.migration.context import Options
    from openclaw_cli.migration.engine import run as run_engine
    from openclaw_cli.output import emit_json, err, sanitize_text

    checks = run_checks(_paths(ctx), fix=fix)
    if not json_out:
        for line in render_checks(checks):
            err(line)
    mode = "import" if fix else "dry-run"
    options = Options(mode=mode, all_agents=True, json=json_out)
    try:
        report = run_engine(options, paths=_paths(ctx), progress=_progress(json_out))
    except Exception as exc:
        from openclaw_cli.errors import StateOwnedError

        if isinstance(exc, StateOwnedError):
            err("Session SQLite")
            err('- Skipped: Gateway or another SQLite maintenance command owns the state directory. Stop the Gateway, '
                'then run "openclaw doctor --fix" for session-store maintenance.')
            raise typer.Exit(int(exc.exit_code)) from None
        raise
    if json_out:
        emit_json({**report.to_json(), **checks})
        raise typer.Exit(report.exit_code)
    totals = report.totals()
    issues = [(t, i) for t in report.targets for i in t.issues]
    if not totals["legacyEntries"] and not totals["unreferencedJsonlFiles"] and not issues:
        err("No legacy session state to migrate.")
        raise typer.Exit(0)
    events = totals["importedTranscriptEvents"] if fix else 0
    err("Session SQLite")
    err(f"- Legacy entries: {totals['legacyEntries']}; SQLite entries: {totals['sqliteEntries']}.")
    err(f"- Transcript events: imported={events}; validated={totals['validatedTranscriptEvents']}.")
    if fix:
        err(f"- Archived {totals['archivedTranscriptFiles']} legacy transcript artifact(s).")
        err(f"- Archived {totals['archivedUnreferencedJsonlFiles']} unreferenced JSONL artifact(s).")
    for target, issue in issues[:20]:
        err(f"{sanitize_text(target.store_path)}: [{issue.code}] {sanitize_text(issue.message)}")
    if issues:
        err(f'- Found {len(issues)} session SQLite issue(s). Inspect with "openclaw doctor --session-sqlite dry-run '
            '--session-sqlite-all-agents".')
    if not fix:
        err('- Run "openclaw doctor --fix" to migrate legacy session metadata/transcripts to SQLite.')
    raise typer.Exit(report.exit_code)
