"""The Typer app built for one command (`cli/main.app_for`: the root with only the top-level command
an argument list invokes) behaves as the whole app: every command's help, usage errors, unknown
names, root options, and real reads on an imported state give the same stdout, stderr and exit
code both ways; what needs the whole app (root help, --version, completion, OPENCLAW_FAST_PATH=0)
gets it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openclaw_cli.cli.main import app, app_for, invoked_command
from openclaw_cli.cli.reference import command_paths, typer_outputs
from tests.conftest import OPENCLAW_FIXTURE, copy_tree, run_cli


@pytest.fixture(autouse=True)
def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENCLAW_FAST_PATH", raising=False)


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["status", "--json"], "status"),
        (["--profile", "work", "sessions", "show", "k"], "sessions"),
        (["--profile=work", "--no-color", "gateway", "call"], "gateway"),
        (["status", "--profile", "work"], "status"),  # a root option after the command
        (["--profile", "--help", "status"], "status"),  # click takes `--help` as the value
        (["--help", "status"], None),  # the root's help: every command's summary
        (["--version"], None),
        (["-V", "status"], None),
        (["--install-completion"], None),
        ([], None),
        (["--profile"], None),
    ],
)
def test_the_invoked_command_is_found_before_parsing(argv: list[str], name: str | None) -> None:
    assert invoked_command(argv) == name


def test_only_the_invoked_command_is_built_and_the_rest_gets_the_whole_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pruned = app_for(["sessions", "show", "k"])
    assert [g.name for g in pruned.registered_groups] == ["sessions"] and not pruned.registered_commands
    assert [c.name for c in app_for(["status"]).registered_commands] == ["status"]
    assert app.registered_commands and len(app.registered_groups) >= 3  # the app itself untouched

    # a group: only the subcommand its own options leave (click's parser), none for the group's
    # own listing, all of them when the subcommand is missing, unknown, or the options do not parse
    def subcommands(argv: list[str]) -> list[str]:
        (group,) = app_for(argv).registered_groups
        return [c.name for c in group.typer_instance.registered_commands]

    assert subcommands(["sessions", "--agent", "main", "--kind", "a", "--kind", "b", "tail", "k"]) == ["tail"]
    # `--profile sessions`: a value, then the group
    assert subcommands(["--profile", "sessions", "sessions", "show", "k"]) == ["show"]
    assert subcommands(["sessions", "--agent", "-h", "list"]) == ["list"]  # click takes `-h` as the value
    assert subcommands(["sessions", "--limit", "2"]) == []
    for argv in (
        ["sessions", "--help"],
        ["sessions", "--bogus", "show"],
        ["sessions", "nosuch"],
        ["gateway"],
    ):
        assert len(subcommands(argv)) > 1, argv
    assert app_for(["stauts"]) is app  # unknown: click names and suggests the commands
    assert app_for(["--version"]) is app
    monkeypatch.setenv("OPENCLAW_FAST_PATH", "0")
    assert app_for(["status"]) is app
    monkeypatch.delenv("OPENCLAW_FAST_PATH")
    monkeypatch.setenv("_OPENCLAW_COMPLETE", "bash_complete")
    assert app_for(["status"]) is app


def _both(argvs: list[list[str]]) -> None:
    whole = typer_outputs(argvs)
    pruned = typer_outputs(argvs, pruned=True)
    for argv, a, b in zip(argvs, whole, pruned, strict=True):
        assert _normalised(a) == _normalised(b), argv


def _normalised(result: tuple[str, str, int]) -> tuple[str, str, int]:
    """Times and ages move between the two runs."""
    out, err, code = result
    out = re.sub(r'"(\w*(?:[aA]t|[aA]ge|Ms|now))": \d+', r'"\1": N', out)
    out = re.sub(r"\b\d+(?:\.\d+)?\s?(?:ms|s|m|h|d)\b( ago)?", r"N\1", out)
    return out, err, code


def test_every_commands_help_is_the_same_built_alone() -> None:
    """Help shows every parameter of a command (names, metavars, defaults, help): the same text
    from the command built alone means the same click command."""
    _both([[*path, "--help"] for path in command_paths() if path])


def test_usage_errors_and_root_options_end_the_same() -> None:
    _both(
        [
            ["status", "--bogus"],
            ["status", "extra"],
            ["sessions", "--bogus"],
            ["sessions", "nosuch"],
            ["sessions", "show"],
            ["sessions", "search"],
            ["sessions", "--limit"],
            ["sessions", "label", "--json"],
            ["gateway"],
            ["gateway", "nosuch"],
            ["gateway", "call"],
            ["agents", "delete"],
            ["compact", "--tokenizer", "nope", "k"],
            ["storage", "--top", "-1"],
            ["doctor", "--session-sqlite"],
            ["cleanup", "--json", "--bogus"],
            ["--profile", "bad name", "status"],
            ["--behavior", "1999", "status", "--json"],
            ["status", "--json", "--profile", "bad!"],
            ["stauts"],
            ["--version"],
            ["sessions", "--agent"],
            ["sessions", "--agent", "main"],
            ["sessions", "--agent", "main", "nosuch"],
            ["sessions", "--bogus", "show"],
            ["sessions", "show", "--bogus"],
            ["sessions", "tail"],
            ["agents"],
            ["agents", "nosuch"],
        ]
    )


def test_reads_on_a_state_print_the_same(state_dir: Path) -> None:
    copy_tree(OPENCLAW_FIXTURE / "legacy-state", state_dir)
    done = run_cli("doctor", "--session-sqlite", "import", "--json")
    assert done.returncode == 0, done.stderr
    _both(
        [
            ["status", "--json", "--no-probe"],
            ["sessions", "--limit", "2"],
            ["sessions", "list", "--json", "--sort", "created"],
            ["sessions", "show", "agent:main:main", "--json"],
            ["sessions", "show", "agent:main:nosuch"],
            ["sessions", "--agent", "main", "show", "agent:main:main"],
            ["sessions", "--limit", "3", "list", "--json", "--limit", "1"],
            ["sessions", "--kind", "main", "--json"],
            ["sessions", "tail", "agent:main:main", "--json"],
            ["agents", "list", "--json"],
            ["cleanup", "--dry-run", "--json"],
            ["storage", "--json", "--no-plan"],
        ]
    )
