"""`openclaw doctor`: the session SQLite migration modes (`--session-sqlite <mode>`), plus the plain
`doctor` (read-only preview of the migration) and `doctor --fix` (runs the import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from openclaw_cli.paths import StatePaths
    from openclaw_cli.progress import ProgressFactory

MUTUALLY_EXCLUSIVE = (
    "doctor operations are mutually exclusive: choose one of --lint, --fix/--repair, --post-upgrade, "
    "--state-sqlite, or --session-sqlite."
)
LINT_WITH_SQLITE = (
    "doctor --lint runs read-only lint checks and cannot be combined with --session-sqlite <mode>."
)


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(
        ctx: typer.Context,
        session_sqlite: str = typer.Option(
            None,
            "--session-sqlite",
            metavar="<mode>",
            help="Session SQLite migration: dry-run, import, validate, inspect, compact, restore or recover.",
        ),
        session_sqlite_agent: str = typer.Option(
            None,
            "--session-sqlite-agent",
            metavar="<id>",
            help="One agent (with --session-sqlite-store: its expected owner).",
        ),
        session_sqlite_all_agents: bool = typer.Option(
            False, "--session-sqlite-all-agents", help="Configured agents plus every agents/* store on disk."
        ),
        session_sqlite_store: str = typer.Option(
            None, "--session-sqlite-store", metavar="<path>", help="One sessions.json or .sqlite file."
        ),
        github_issue: bool = typer.Option(
            False, "--github-issue", help="With recover: point at the sanitised report (no issue is created)."
        ),
        fix: bool = typer.Option(
            False, "--fix", "--repair", help="Apply repairs: import legacy sessions into SQLite."
        ),
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
            from openclaw_cli.ops.doctor import GITHUB_ISSUE_ERROR, OPTIONS_WITHOUT_MODE

            operations = [lint, fix, post_upgrade, state_sqlite is not None, session_sqlite is not None]
            if lint and session_sqlite is not None:
                raise UsageError(LINT_WITH_SQLITE)
            if sum(bool(x) for x in operations) > 1:
                raise UsageError(MUTUALLY_EXCLUSIVE)
            selectors = [
                session_sqlite_agent is not None,
                session_sqlite_all_agents,
                session_sqlite_store is not None,
            ]
            if session_sqlite is None:
                if github_issue:
                    raise UsageError(GITHUB_ISSUE_ERROR)
                if any(selectors):
                    raise UsageError(OPTIONS_WITHOUT_MODE)
                if lint or post_upgrade or state_sqlite is not None:
                    raise UsageError(
                        "This doctor operation is not implemented by openclaw-cli; use OpenClaw's doctor."
                    )
                _plain_doctor(ctx, fix=fix, json_out=json_out)
                return
            _session_sqlite(
                ctx,
                session_sqlite,
                agent=session_sqlite_agent,
                all_agents=session_sqlite_all_agents,
                store=session_sqlite_store,
                json_out=json_out,
                yes=yes,
                github_issue=github_issue,
            )

        run(body, json_mode=json_out)


def _progress(json_out: bool) -> ProgressFactory | None:
    from openclaw_cli.cli.progress import progress_factory

    return progress_factory(json_out)


def _paths(ctx: typer.Context) -> StatePaths:
    from openclaw_cli.cli.common import state_paths

    return state_paths(ctx)


def _session_sqlite(
    ctx: typer.Context,
    mode: str,
    *,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    json_out: bool,
    yes: bool,
    github_issue: bool,
) -> None:
    from openclaw_cli.cli.doctor_body import session_sqlite_command  # the fast path's body too

    session_sqlite_command(
        ctx,
        mode,
        agent=agent,
        all_agents=all_agents,
        store=store,
        json_out=json_out,
        yes=yes,
        github_issue=github_issue,
    )


def _plain_doctor(ctx: typer.Context, *, fix: bool, json_out: bool) -> None:
    """§6.17: plain `doctor` previews the migration (dry-run, all agents); `--fix` runs the import."""
    from openclaw_cli.cli.common import print_lines, say_hints, warn_config
    from openclaw_cli.cli.render_migration import checks_text, plain_doctor_text
    from openclaw_cli.errors import StateOwnedError
    from openclaw_cli.ops.doctor import Options, run_checks, session_sqlite
    from openclaw_cli.output import emit_json, err

    checks = run_checks(_paths(ctx), fix=fix)
    warn_config(checks.get("configWarnings") or [])
    if not json_out:
        print_lines(checks_text(checks))
    if checks.get("unconfiguredAgents"):
        from openclaw_cli.cli.agents import unconfigured_hint

        say_hints([unconfigured_hint(checks["unconfiguredAgents"])])
    mode = "import" if fix else "dry-run"
    options = Options(mode=mode, all_agents=True, json=json_out)
    try:
        report = session_sqlite(_paths(ctx), options, progress=_progress(json_out))
    except StateOwnedError as exc:
        err("Session SQLite")
        err(
            "- Skipped: Gateway or another SQLite maintenance command owns the state directory. Stop the Gateway, "
            'then run "openclaw doctor --fix" for session-store maintenance.'
        )
        raise typer.Exit(int(exc.exit_code)) from None
    if json_out:
        emit_json({**report.to_json(), **checks})
        raise typer.Exit(report.exit_code)
    print_lines(plain_doctor_text(report.to_json(), fix=fix))
    raise typer.Exit(report.exit_code)
