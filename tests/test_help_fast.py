"""`openclaw … --help` served from stored texts (`cli/helpfast.py`, `cli/help_texts.py`) prints
exactly what the Typer app prints: every command path's `--help` and `-h`, both ways (the Typer app
in this process, the stored text), the texts current, real processes with the help path on and off
(`OPENCLAW_FAST_PATH=0`) byte for byte, the cases it leaves to the Typer app, and what a help
process imports (a deterministic start-up guard: no timing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.cli import helpfast
from openclaw_cli.cli.help_texts import TEXTS
from openclaw_cli.cli.reference import REGENERATE, command_paths, help_texts_module, typer_outputs
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The width the texts are served at, whatever terminal runs the tests."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("OPENCLAW_FAST_PATH", raising=False)
    monkeypatch.delenv("OPENCLAW_PROFILE", raising=False)


def test_help_texts_are_current() -> None:
    current = (ROOT / "openclaw_cli" / "cli" / "help_texts.py").read_text()
    assert current == help_texts_module(), (
        f"openclaw_cli/cli/help_texts.py is stale: run `{REGENERATE}` and commit the result"
    )


def test_every_command_path_is_served_with_the_typer_apps_text_both_flags() -> None:
    paths = command_paths()
    assert set(TEXTS) == set(paths) and len(paths) > 30 and ("sessions", "list") in paths
    argvs = [[*path, flag] for path in paths for flag in helpfast.HELP_FLAGS]
    for argv, (out, err, code) in zip(argvs, typer_outputs(argvs), strict=True):
        assert (code, err) == (0, ""), argv
        assert helpfast.help_text(argv) == out, argv
    # a wider terminal prints the same text (click caps help at 80 columns)
    wide = typer_outputs([["--help"], ["sessions", "--help"]], columns=200)
    assert [w[0] for w in wide] == [TEXTS[()], TEXTS[("sessions",)]]


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["sessions", "--help"],
        ["sessions", "list", "-h"],
        ["gateway", "call", "--help"],
        ["sessions", "search", "--help"],
        ["--version"],
        ["-V"],
    ],
)
def test_a_real_process_prints_the_same_with_the_help_path_on_and_off(argv: list[str]) -> None:
    served = run_cli(*argv)
    typer_app = run_cli(*argv, env={"OPENCLAW_FAST_PATH": "0"})
    assert served.returncode == typer_app.returncode == 0
    assert served.stdout == typer_app.stdout == helpfast.help_text(argv)
    if argv[-1] in helpfast.HELP_FLAGS:
        assert served.stdout == TEXTS[tuple(argv[:-1])]
    else:
        assert served.stdout.startswith("openclaw-cli ")
    assert served.stderr == typer_app.stderr == ""


@pytest.mark.parametrize(
    ("argv", "env", "served"),
    [
        (["sessions", "--help"], {"COLUMNS": "60"}, False),  # narrower help: the Typer app wraps it
        (["sessions", "--help"], {"COLUMNS": "120"}, True),
        (["sessions", "--help"], {"COLUMNS": "junk"}, True),  # not a width: the terminal's, else 80
        (["sessions", "--help"], {"OPENCLAW_PROFILE": "bad name"}, False),  # the root callback's exit 2
        (["--help"], {"OPENCLAW_PROFILE": "bad name"}, True),  # the root's help runs no callback
        (["sessions", "--help"], {"OPENCLAW_PROFILE": "work"}, True),
        (["--profile", "work", "sessions", "--help"], {}, False),
        (["sessions", "--json", "--help"], {}, False),
        (["sessions", "--help", "--help"], {}, False),
        (["sessions", "nosuch", "--help"], {}, False),  # a usage error
        (["--", "--help"], {}, False),
        (["sessions", "--help"], {"PYTHONIOENCODING": "ascii"}, None),  # served only if the text is ASCII
        (["--version", "status"], {}, False),  # eager: the version all the same, from Typer
        (["status", "--version"], {}, False),  # no such option
        (["--no-color", "--version"], {}, False),
    ],
)
def test_what_it_leaves_to_the_typer_app_ends_the_same(
    argv: list[str], env: dict[str, str], served: bool | None
) -> None:
    fast = run_cli(*argv, env=env)
    typer_app = run_cli(*argv, env={**env, "OPENCLAW_FAST_PATH": "0"})
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        typer_app.returncode,
        typer_app.stdout,
        typer_app.stderr,
    )
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        text = helpfast.help_text(argv)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if served is not None:
        assert (text is not None) is served
    if "OPENCLAW_PROFILE" in env and not served:
        assert fast.returncode == 2 and "Invalid --profile" in fast.stderr


def test_a_closed_stdout_ends_both_paths_alike() -> None:
    """`openclaw --help | true` with the reader gone before the first write: exit 1, nothing said
    (click's EPIPE handling), with the help path on and off."""
    results = []
    for env in ({}, {"OPENCLAW_FAST_PATH": "0"}):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "openclaw_cli", "sessions", "--help"],
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **env},
                timeout=120,
            )
        finally:
            os.close(write_end)
        results.append((proc.returncode, proc.stderr))
    assert results[0] == results[1] == (1, "")


# what `openclaw --help` must never load: the CLI framework, the formatter, the store and
# serialisation stacks, and the standard modules they pull in (each several ms of start-up)
HEAVY = {
    "typer",
    "click",
    "rich",
    "shellingham",
    "json",
    "json5",
    "orjson",
    "sqlite3",
    "platformdirs",
    "zstandard",
    "tiktoken",
    "websockets",
    "asyncio",
    "dataclasses",
    "inspect",
    "typing",
    "datetime",
    "logging",
    "subprocess",
    "shutil",
    "uuid",
    "tempfile",
    "textwrap",
    "difflib",
    "gettext",
}
# the only modules of ours a help process imports
HELP_MODULES = {
    "openclaw_cli",
    "openclaw_cli.cli",
    "openclaw_cli.cli.entry",
    "openclaw_cli.cli.helpfast",
    "openclaw_cli.cli.help_texts",
}


def _modules_after(argv: list[str] | None, **env: str) -> set[str]:
    """sys.modules at exit of a process that runs the `openclaw` entry point (as the installed
    script does) with `argv`; None: a bare interpreter, for the baseline."""
    run = (
        f"import sys; sys.argv = ['openclaw', *{argv!r}]\nfrom openclaw_cli.cli.entry import main\nmain()"
        if argv is not None
        else "pass"
    )
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
        + run
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80", **env},
        timeout=120,
    )
    line = [x for x in proc.stderr.splitlines() if x.startswith("MODULES ")]
    assert line, proc.stderr
    return set(line[-1].split()[1:])


def test_help_imports_nothing_heavy() -> None:
    """The start-up guard for `openclaw --help` (and a subcommand's): beyond what the interpreter
    itself loads, only the help modules. Deterministic, unlike a timed test."""
    baseline = _modules_after(None)
    for argv in (["--help"], ["sessions", "--help"], ["gateway", "call", "-h"], ["--version"]):
        extra = _modules_after(argv) - baseline
        top = {name.split(".")[0] for name in extra}
        assert not (HEAVY & (top | extra)), (argv, sorted(HEAVY & (top | extra)))
        assert extra <= HELP_MODULES, (argv, sorted(extra - HELP_MODULES))
    # the guard can fail: the Typer app's help loads them
    unserved = _modules_after(["--help"], OPENCLAW_FAST_PATH="0")
    assert {"typer", "inspect", "typing"} <= unserved
