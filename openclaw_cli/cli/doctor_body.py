"""The body of `openclaw doctor --session-sqlite <mode>` without Typer: the fast path
(`cli/fast.py`) runs it for the `--json` argument lists `fast_call` takes (a mode, the agent
selectors, `--yes`, `--non-interactive`: issue 30, the import's serial head does not import
Typer/click), the Typer command (`cli/doctor.py`) for every other, so both print the same bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openclaw_cli.progress import ProgressFactory

# the `doctor` options the fast path serves; anything else (`--fix`, `--github-issue`, `--lint`,
# ...) is the Typer command's, whose checks of their combinations then run
FAST_VALUES = {
    "--session-sqlite": "mode",
    "--session-sqlite-agent": "agent",
    "--session-sqlite-store": "store",
}
FAST_FLAGS = {
    "--session-sqlite-all-agents": "all_agents",
    "--json": "json_out",
    "--yes": "yes",
    "--non-interactive": "non_interactive",
}


def fast_call(got: dict[str, Any]) -> dict[str, Any] | None:
    """`session_sqlite_command`'s keyword arguments from the options the fast path read, or None
    when it leaves the call to the Typer app (no mode, or the text report)."""
    if not got.get("json_out") or "mode" not in got:
        return None
    return {
        "mode": got["mode"],
        "agent": got.get("agent"),
        "all_agents": got.get("all_agents", False),
        "store": got.get("store"),
        "json_out": True,
        "yes": got.get("yes", False),
        "github_issue": False,
    }


def _progress(json_out: bool) -> ProgressFactory | None:
    from openclaw_cli.cli.progress import progress_factory

    return progress_factory(json_out)


def session_sqlite_command(
    typer_ctx: Any,
    mode: str,
    *,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    json_out: bool,
    yes: bool,
    github_issue: bool,
) -> None:
    """Run the mode and print its report; a report's non-zero exit code ends the command with it."""
    from openclaw_cli.cli.common import command_exit, print_lines, state_paths
    from openclaw_cli.ops.doctor import Options, session_sqlite
    from openclaw_cli.output import emit_json, err

    options = Options(
        mode=mode,
        agent=agent,
        all_agents=all_agents,
        store=store,
        json=json_out,
        yes=yes,
        github_issue=github_issue,
    )
    report = session_sqlite(state_paths(typer_ctx), options, progress=_progress(json_out))
    doc = report.to_json()
    if json_out:
        emit_json(doc)
    else:
        from openclaw_cli.cli.render_migration import migration_text

        print_lines(migration_text(doc))
    if github_issue:
        if report.support_issue is None:
            err("session-sqlite recover: no support issue payload was generated")
        else:
            err(
                "GitHub issue creation is not available in openclaw-cli; share the sanitised report instead: "
                f"{report.support_issue.get('bodyPath')}"
            )
    if report.exit_code:
        raise command_exit(report.exit_code)  # (0: the command returns, as `typer.Exit(0)` ended it)
