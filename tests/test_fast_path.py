"""The fast path (`cli/fast.py`: `sessions [list] --json` without Typer) behaves exactly as the
Typer app: for every argument list below, the same stdout, stderr and exit code with the fast
path on and off (`OPENCLAW_FAST_PATH=0`), on our SQLite store, a legacy store, several agents
with a broken one, explicit stores, usage errors, root options and config warnings. Argument
lists it does not fully understand go to the Typer app (checked by parse() and by what a real
process imports)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.cli.fast import parse
from tests.conftest import copy_tree, fast_path_options, modules_imported, ours_and_a_legacy_agent, run_cli


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: our SQLite store (imported from the fixture); work: a legacy store with an archived
    and a pinned row; broken: a corrupt legacy store; a config with an unknown key (a warning)."""
    state = tmp_path_factory.mktemp("fast") / "state"
    work = ours_and_a_legacy_agent(state, "work")
    store = json.loads((work / "sessions.json").read_text())
    keys = sorted(store)
    store[keys[0]]["archivedAt"] = 1795000000000
    store[keys[1]]["pinnedAt"] = 1795000000001
    (work / "sessions.json").write_text(json.dumps(store))
    broken = state / "agents" / "broken" / "sessions"
    broken.mkdir(parents=True)
    (broken / "sessions.json").write_text('{"agent:broken:main": {')
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfterr": "7d"}}}))
    return state


@pytest.fixture
def state(template: Path, state_dir: Path) -> Path:
    return copy_tree(template, state_dir)


def _normalised(text: str) -> str:
    text = re.sub(r'"(\w*[aA]geMs|age)": \d+', r'"\1": N', text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:ms|s|m|h|d) ago\b", "N ago", text)  # status's text ages
    return re.sub(r"in \d+(?:\.\d+)? ms", "in N ms", text)  # --verbose timings


def _both(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, ...]:
    fast = run_cli(*args, env=env)
    typer_app = run_cli(*args, env={**(env or {}), "OPENCLAW_FAST_PATH": "0"})
    return fast, typer_app


SERVED = [
    ("sessions", "--json"),
    ("sessions", "list", "--json"),
    ("sessions", "--json", "list", "--limit", "2"),
    ("sessions", "--limit", "3", "list", "--json", "--limit", "1"),  # the subcommand's value wins
    ("sessions", "--agent", "work", "list", "--json"),
    ("sessions", "--json", "--limit", "all"),
    ("sessions", "--json", "--limit=all", "--all-agents"),  # a broken store: listed rest, its exit code
    ("sessions", "--json", "--all-agents", "--limit", "2"),
    ("sessions", "--json", "--agent", "work"),
    ("sessions", "--json", "--agent=work", "--archived"),
    ("sessions", "--json", "--agent", "work", "--all", "--limit", "all"),
    ("sessions", "--json", "--agent", "broken"),
    ("sessions", "--json", "--archived", "--all"),  # usage error inside the body: exit 2
    ("sessions", "--json", "--limit", "0"),
    ("sessions", "--json", "--limit", "x"),
    ("sessions", "--json", "--limit", " 7 "),
    ("sessions", "--json", "--active", "x"),
    ("sessions", "--json", "--active", "99999999"),
    ("sessions", "--json", "--agent", "nope"),
    ("sessions", "--json", "--agent", ""),
    ("sessions", "--json", "--agent="),
    ("sessions", "--json", "--store", "/nonexistent/x.sqlite"),
    ("sessions", "--json", "--store", "{state}/agents/work/sessions/sessions.json"),
    ("sessions", "--json", "--store", "{state}/agents/main/agent/openclaw-agent.sqlite", "--limit", "all"),
    ("sessions", "--json", "--verbose"),
    ("sessions", "--json", "--wide"),
    ("--no-color", "sessions", "--json"),
    ("sessions", "--json", "--no-color"),
    ("sessions", "--json", "--profile", "p1"),
    ("--profile=p1", "sessions", "list", "--json"),
    ("--profile", "", "sessions", "--json"),
    # sessions search (issue 26), text and JSON
    ("sessions", "search", "turn", "--json"),
    ("sessions", "search", "turn", "--limit", "2", "--role", "user", "--role", "assistant"),
    ("sessions", "search", '"unbalanced', "--json"),
    ("sessions", "search", "turn", "--agent", "work", "--no-archived", "--json"),
    ("sessions", "search", "turn", "--limit", "0", "--json"),
    ("sessions", "search", "--json", "--fixed", "turn 1", "--redact", "--since", "2026-01-01"),
    # status (issue 30): a broken agent's store makes every run a partial failure (its exit code)
    ("status", "--json"),
    ("status", "--json", "--no-probe"),
    ("status",),
    ("status", "--no-probe", "--wide", "--verbose"),
    ("--profile", "p1", "status", "--json"),
    ("status", "--json", "--no-color", "--behavior", "2026.9.6"),
]
NOT_SERVED = [
    (),
    ("sessions",),  # text output
    ("sessions", "list"),
    ("sessions", "--json", "--help"),
    ("sessions", "--json", "-h"),
    ("--version", "sessions", "--json"),
    ("sessions", "--json", "--bogus"),
    ("sessions", "--json", "--agent"),
    ("sessions", "--json", "--agent", "--all"),  # a value that looks like an option
    ("sessions", "--json", "--agent", "a", "--agent", "b"),
    ("sessions", "--json", "--json"),
    ("sessions", "--json=1"),
    ("sessions", "--json", "--", "x"),
    ("sessions", "--json", "extra"),
    ("sessions", "list", "--json", "extra"),
    ("sessions", "tail", "--json"),
    ("sessions", "cleanup", "--dry-run"),  # (`cleanup … --json`: tests/test_cleanup_fast_path.py)
    ("agents", "list", "--json"),
    ("sessions", "--json", "--profile", "bad name!"),
    ("--profile", "-x", "sessions", "--json"),
    ("sessions", "--json", "-x"),
    ("sessions", "search", "--json"),
    ("sessions", "search", "a", "b"),
    ("sessions", "search", "x", "--limit", "x"),
    ("sessions", "search", "--", "-x"),
    ("sessions", "--json", "search", "x"),
    ("sessions", "search", "x", "--url", "ws://127.0.0.1:1"),
    ("status", "--json", "--json"),
    ("status", "--bogus"),
    ("status", "extra"),
    ("status", "--json=1"),
    ("status", "--", "--json"),
    ("status", "--json", "--behavior", "1999"),
]


@pytest.mark.parametrize("args", SERVED, ids=" ".join)
def test_served_argument_lists_print_what_the_typer_app_prints(args: tuple[str, ...], state: Path):
    args = tuple(arg.replace("{state}", str(state)) for arg in args)
    assert parse(args) is not None
    fast, typer_app = _both(*args)
    assert fast.returncode == typer_app.returncode, (fast.stderr, typer_app.stderr)
    assert _normalised(fast.stdout) == _normalised(typer_app.stdout)
    assert _normalised(fast.stderr) == _normalised(typer_app.stderr)
    if "--json" in args and fast.stdout:
        json.loads(fast.stdout)  # exactly one document, failures included


def test_the_listing_cases_cover_success_partial_failure_and_errors(state: Path):
    """The equality above is not vacuous: the cases include rows, a partial failure and errors."""
    ok = run_cli("sessions", "--json", "--limit", "all", "--all-agents")
    assert ok.returncode == 6 and json.loads(ok.stdout)["count"] > 10 and "agent broken" in ok.stderr
    assert run_cli("sessions", "--json", "--archived", "--all").returncode == 2
    archived = json.loads(run_cli("sessions", "--json", "--agent", "work", "--archived").stdout)
    assert archived["count"] == 1
    assert "pruneAfterr" in run_cli("sessions", "--json").stderr


@pytest.mark.parametrize("args", NOT_SERVED, ids=lambda a: " ".join(a) or "(none)")
def test_what_the_fast_path_does_not_understand_goes_to_the_typer_app(args: tuple[str, ...], state: Path):
    assert parse(args) is None
    fast, typer_app = _both(*args)
    assert fast.returncode == typer_app.returncode
    assert (_normalised(fast.stdout), _normalised(fast.stderr)) == (
        _normalised(typer_app.stdout),
        _normalised(typer_app.stderr),
    )


@pytest.mark.parametrize("env", [{"OPENCLAW_PROFILE": "bad name!"}, {"_OPENCLAW_COMPLETE": "bash_complete"}])
def test_an_invalid_profile_or_completion_mode_goes_to_the_typer_app(env: dict[str, str], state: Path):
    fast, typer_app = _both("sessions", "--json", env=env)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        typer_app.returncode,
        typer_app.stdout,
        typer_app.stderr,
    )
    if "OPENCLAW_PROFILE" in env:
        assert fast.returncode == 2 and json.loads(fast.stdout)["ok"] is False


def _imported(args: list[str], **env: str) -> set[str]:
    return modules_imported(args, **env)[1]


def test_a_served_listing_never_imports_typer_and_the_others_do(state: Path):
    assert not any(
        name.split(".")[0] in ("typer", "click", "rich") for name in _imported(["sessions", "--json"])
    )
    assert "typer" in _imported(["sessions", "--json"], OPENCLAW_FAST_PATH="0")
    assert "typer" in _imported(["sessions", "tail", "--json"])
    # status with no failure (a failure ends through typer.Exit, as above): an empty state dir
    empty = state.parent / "empty-state"
    empty.mkdir()
    status = _imported(["status", "--json", "--no-probe"], OPENCLAW_STATE_DIR=str(empty))
    assert "openclaw_cli.ops.status" in status
    assert not any(name.split(".")[0] in ("typer", "click", "rich") for name in status)
    # an error ends the command through typer.Exit: Typer is imported then, not before
    assert "typer" in _imported(["sessions", "--json", "--limit", "x"])


def test_a_closed_stdout_ends_both_paths_alike(state: Path):
    """stdout a pipe nobody reads any more (`openclaw sessions --json | true`): the same exit code
    and stderr. The read end is closed before the command starts, so its first write fails."""
    results = []
    for env in ({}, {"OPENCLAW_FAST_PATH": "0"}):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "openclaw_cli",
                    "sessions",
                    "--json",
                    "--limit",
                    "all",
                    "--all-agents",
                ],
                stdout=write_end,
                stderr=subprocess.PIPE,
                env={**os.environ, **env},
                timeout=60,
            )
        finally:
            os.close(write_end)
        results.append((proc.returncode, proc.stderr))
    assert results[0] == results[1]
    assert results[0][0] != 0


def test_the_fast_path_knows_exactly_the_options_the_typer_commands_declare():
    """A drift guard: an option added to `sessions` / `sessions list` (or a root option), an
    environment variable, a callback, a repeatable option or a context setting that changes
    parsing would make the fast path read an argument list differently, so it must fail here."""
    import typer.main

    from openclaw_cli.cli import fast
    from openclaw_cli.cli.main import app

    root = typer.main.get_command(app)
    sessions = root.commands["sessions"]  # type: ignore[attr-defined]
    listing = sessions.commands["list"]
    served_root = {"--profile": False, "--behavior": False, "--no-color": True}
    left_to_typer = {"--version", "--install-completion", "--show-completion"}
    served = {**dict.fromkeys(fast._VALUE_OPTIONS, False), **dict.fromkeys(fast._FLAG_OPTIONS, True)}
    for command, expected, others in (
        (root, served_root, left_to_typer),
        (sessions, served, set(fast.LEFT_TO_TYPER)),
        (listing, served, set(fast.LEFT_TO_TYPER)),
    ):
        assert fast_path_options(command, others) == expected
        for setting in (
            "auto_envvar_prefix",
            "token_normalize_func",
            "ignore_unknown_options",
            "allow_extra_args",
            "allow_interspersed_args",
            "default_map",
        ):
            assert setting not in command.context_settings, setting
    assert set(sessions.commands) >= {"list", "tail"}
    assert sessions.invoke_without_command and not getattr(sessions, "chain", False)
