"""`[sessions] cleanup … --json` on the fast path (`cli/fast.py` -> `cli/cleanup_body.py`, no Typer,
issue 30) behaves exactly as the Typer command: for every argument list below, the same stdout,
stderr, exit code and state left behind with the fast path on and off (`OPENCLAW_FAST_PATH=0`),
each side on its own copy of the same state at the same path (an apply changes it). Argument
lists it does not serve go to the Typer app."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openclaw_cli.cli.fast import parse
from tests.conftest import copy_tree, fast_path_options, modules_imported, ours_and_a_legacy_agent
from tests.fast_path_support import assert_same_outcome, run_both

CONFIG = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 2}}}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: our SQLite store (imported from the fixture); work: a legacy store; zbroken: a corrupt
    legacy store (listed last: an --all-agents run fails part-way); a config whose cap removes rows."""
    state = tmp_path_factory.mktemp("cleanup-fast") / "state"
    ours_and_a_legacy_agent(state, "work")
    broken = state / "agents" / "zbroken" / "sessions"
    broken.mkdir(parents=True)
    (broken / "sessions.json").write_text('{"agent:zbroken:main": {')
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    return state


def _tree(root: Path) -> dict[str, bytes | None]:
    """What a run left behind: every file's bytes (archives and databases by name only: archive
    names carry the run's clock; the rows are the JSON's counts and the other files' bytes)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if not path.is_file() or name.endswith(("-wal", "-shm")) or ".lock" in name:
            continue
        if ".deleted." in name or ".reset." in name or name.endswith(".sqlite"):
            out[name.split(".deleted.")[0].split(".reset.")[0]] = None
            continue
        # (the ledger's lines and the rows archived in place say when the run made them)
        data = re.sub(rb'"(at|archivedAt)": ?\d+', rb'"\1": N', path.read_bytes())
        out[name] = data
    return out


def _run_both(template: Path, state: Path, args: tuple[str, ...]) -> list[tuple]:
    return run_both(template, state, args, _tree)


SERVED = [
    ("sessions", "cleanup", "--dry-run", "--json"),
    ("sessions", "cleanup", "--enforce", "--json"),
    ("cleanup", "--json", "--enforce", "--agent", "work"),
    ("cleanup", "--json", "--agent=work", "--enforce", "--no-backup"),
    ("sessions", "cleanup", "--json", "--all-agents", "--dry-run"),  # a partial failure: its exit code
    ("sessions", "cleanup", "--json", "--all-agents", "--enforce"),
    ("sessions", "cleanup", "--json", "--store", "{state}/agents/work/sessions/sessions.json", "--enforce"),
    ("cleanup", "--json", "--dry-run", "--fix-missing", "--fix-dm-scope", "--active-key", "agent:main:main"),
    ("sessions", "cleanup", "--json", "--agent", "nope"),
    ("sessions", "cleanup", "--json", "--agent", "zbroken", "--enforce"),
    ("sessions", "cleanup", "--json", "--enforce", "--timeout", "x"),
    ("sessions", "cleanup", "--json", "--enforce", "--url", "ws://127.0.0.1:1"),  # no credentials: refused
    ("--profile", "p1", "cleanup", "--json", "--dry-run"),
    ("sessions", "cleanup", "--json", "--wide", "--dry-run", "--no-color"),
]
NOT_SERVED = [
    ("sessions", "cleanup", "--enforce"),  # the text report
    ("cleanup", "--dry-run"),
    ("sessions", "--json", "cleanup", "--dry-run"),  # the group's options
    ("sessions", "cleanup", "--json", "--orphans", "--dry-run"),
    ("sessions", "cleanup", "--json", "--tombstones"),
    ("cleanup", "--json", "--explain", "agent:main:main"),
    ("sessions", "cleanup", "--json", "--json"),
    ("sessions", "cleanup", "--json", "extra"),
    ("sessions", "cleanup", "--json", "--agent"),
    ("sessions", "cleanup", "--json", "--agent", "--enforce"),
    ("sessions", "cleanup", "--json", "--bogus"),
    ("sessions", "cleanup", "--json", "--help"),
]


@pytest.mark.parametrize("args", SERVED, ids=" ".join)
def test_served_cleanups_print_and_leave_what_the_typer_command_does(
    args: tuple[str, ...], template: Path, tmp_path: Path
):
    assert parse(tuple(a.replace("{state}", "/x") for a in args)) is not None
    assert_same_outcome(_run_both(template, tmp_path / "run" / "state", args))


def test_the_served_cases_cover_removals_partial_failures_and_errors(template: Path, tmp_path: Path):
    """The equality above is not vacuous: rows leave, a later store fails, errors exit non-zero."""
    state = tmp_path / "run" / "state"
    (code, out, _, after), _ = _run_both(template, state, ("sessions", "cleanup", "--enforce", "--json"))
    assert code == 0 and json.loads(out)["appliedCount"] < json.loads(out)["beforeCount"]
    assert any(".deleted." in str(p) for p in state.rglob("*"))
    (code, out, _, _), _ = _run_both(template, state, ("cleanup", "--json", "--all-agents", "--dry-run"))
    assert code != 0 and "partialError" in json.loads(out)
    (code, _, err, _), _ = _run_both(template, state, ("cleanup", "--json", "--agent", "nope"))
    assert code != 0 and err


@pytest.mark.parametrize("args", NOT_SERVED, ids=" ".join)
def test_what_the_cleanup_fast_path_does_not_serve_goes_to_the_typer_app(args: tuple[str, ...]):
    assert parse(args) is None


def _imported(args: list[str], **env: str) -> set[str]:
    code, names = modules_imported(args, **env)
    assert code == 0
    return names


def test_a_served_cleanup_never_imports_typer(template: Path, tmp_path: Path):
    state = copy_tree(template, tmp_path / "state")
    (state / "agents" / "zbroken").rename(tmp_path / "zbroken")
    env = {"OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json")}
    served = _imported(["sessions", "cleanup", "--enforce", "--json"], **env)
    assert "openclaw_cli.ops.cleanup" in served
    assert not any(name.split(".")[0] in ("typer", "click", "rich") for name in served)
    assert "typer" in _imported(["sessions", "cleanup", "--dry-run", "--json"], OPENCLAW_FAST_PATH="0", **env)


def test_the_fast_path_knows_exactly_the_options_the_cleanup_commands_declare():
    """A drift guard: an option added to `sessions cleanup` / `cleanup` (or one that changes
    parsing: an environment variable, a callback, a repeatable option) must be listed here."""
    import typer.main

    from openclaw_cli.cli import cleanup_body
    from openclaw_cli.cli.main import app

    root = typer.main.get_command(app)
    served = {
        **dict.fromkeys(cleanup_body.FAST_VALUES, False),
        **dict.fromkeys(cleanup_body.FAST_FLAGS, True),
    }
    for command in (root.commands["sessions"].commands["cleanup"], root.commands["cleanup"]):  # type: ignore[attr-defined]
        assert all(len(param.opts) == 1 for param in command.params)
        assert fast_path_options(command, set(cleanup_body.LEFT_TO_TYPER)) == served
        assert {p.opts[0] for p in command.params} >= cleanup_body.LEFT_TO_TYPER
        for setting in ("auto_envvar_prefix", "ignore_unknown_options", "allow_extra_args", "default_map"):
            assert setting not in command.context_settings, setting
