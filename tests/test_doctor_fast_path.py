"""`doctor --session-sqlite <mode> … --json` on the fast path (`cli/fast.py` ->
`cli/doctor_body.py`, no Typer: issue 30, the import's serial head) behaves exactly as the Typer
command: for every argument list below, the same stdout, stderr, exit code and state left behind
with the fast path on and off (`OPENCLAW_FAST_PATH=0`), each side on its own copy of the same
state at the same path (the run's ids and clock aside). Argument lists it does not serve go to the
Typer app."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openclaw_cli.cli.fast import parse
from tests.conftest import copy_tree, modules_imported
from tests.fast_path_support import assert_same_outcome, run_both
from tests.hardening_support import make_state


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: a legacy store; zbroken: a corrupt legacy store (listed last)."""
    state = make_state(tmp_path_factory.mktemp("doctor-fast"), sessions=6, mb=0.02, seed=44)
    broken = state / "agents" / "zbroken" / "sessions"
    broken.mkdir(parents=True)
    (broken / "sessions.json").write_text('{"agent:zbroken:main": {')
    return state


def _same_run(data: bytes) -> bytes:
    """The run's names made by its clock and randomness (run ids, archive stamps, times) and the
    copies' inode numbers (in the manifest's identities)."""
    data = re.sub(rb'"ino": "?\d+"?', b'"ino": N', data)
    data = re.sub(rb"session-sqlite-\d+-[0-9a-f]+", b"RUN", data)
    data = re.sub(rb"\d{4}-\d\d-\d\dT\d\d[:-]\d\d[:-]\d\d(\.\d+)?Z?", b"TIME", data)
    return re.sub(rb"\b1\d{12}\b", b"MS", data)


def _tree(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = _same_run(str(path.relative_to(root)).encode()).decode()
        if not path.is_file() or name.endswith(("-wal", "-shm")) or ".lock" in name:
            continue
        out[name] = None if name.endswith(".sqlite") else _same_run(path.read_bytes())
    return out


def _run_both(template: Path, state: Path, args: tuple[str, ...]) -> list[tuple]:
    return run_both(template, state, args, _tree, lambda text: _same_run(text.encode()).decode())


SERVED = [
    ("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"),  # zbroken fails
    ("doctor", "--session-sqlite", "import", "--session-sqlite-agent", "main", "--json", "--yes"),
    ("doctor", "--json", "--session-sqlite=dry-run", "--session-sqlite-all-agents", "--non-interactive"),
    ("doctor", "--session-sqlite", "inspect", "--json"),
    ("doctor", "--session-sqlite", "validate", "--session-sqlite-agent", "nope", "--json"),
    (
        "doctor",
        "--session-sqlite",
        "import",
        "--json",
        "--session-sqlite-store",
        "{state}/agents/main/sessions/sessions.json",
    ),
    ("doctor", "--session-sqlite", "bogus", "--json"),
    ("doctor", "--session-sqlite", "import", "--json", "--session-sqlite-agent", "main", "--no-color"),
]
NOT_SERVED = [
    ("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents"),  # the text report
    ("doctor", "--json"),
    ("doctor", "--session-sqlite-all-agents", "--json"),  # no mode: the Typer command's error
    ("doctor", "--session-sqlite", "recover", "--github-issue", "--json"),
    ("doctor", "--session-sqlite", "import", "--fix", "--json"),
    ("doctor", "--session-sqlite", "import", "-y", "--json"),
    ("doctor", "--session-sqlite", "import", "--lint", "--json"),
    ("doctor", "--session-sqlite", "import", "--json", "--json"),
    ("doctor", "--session-sqlite", "--json"),
    ("doctor", "--session-sqlite", "import", "--json", "extra"),
    ("doctor", "--session-sqlite", "import", "--json", "--help"),
]


@pytest.mark.parametrize("args", SERVED, ids=" ".join)
def test_served_doctor_modes_print_and_leave_what_the_typer_command_does(
    args: tuple[str, ...], template: Path, tmp_path: Path
) -> None:
    assert parse(tuple(a.replace("{state}", "/x") for a in args)) is not None
    assert_same_outcome(_run_both(template, tmp_path / "run" / "state", args))


def test_the_served_cases_cover_an_import_a_failure_and_errors(template: Path, tmp_path: Path) -> None:
    """The equality above is not vacuous: the import publishes, a broken store fails, errors exit non-zero."""
    state = tmp_path / "run" / "state"
    (code, out, _, after), _ = _run_both(template, state, SERVED[1])
    assert code == 0 and json.loads(out)["targets"][0]["importedEntries"] > 0
    assert "agents/main/agent/openclaw-agent.sqlite" in after
    (code, out, _, _), _ = _run_both(template, state, SERVED[0])
    assert code != 0 and json.loads(out)
    (code, _, err, _), _ = _run_both(template, state, SERVED[6])
    assert code != 0 and err


@pytest.mark.parametrize("args", NOT_SERVED, ids=" ".join)
def test_what_the_doctor_fast_path_does_not_serve_goes_to_the_typer_app(args: tuple[str, ...]) -> None:
    assert parse(args) is None


def test_a_served_import_never_imports_typer(template: Path, tmp_path: Path) -> None:
    state = copy_tree(template, tmp_path / "state")
    env = {"OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json")}
    code, served = modules_imported(
        ["doctor", "--session-sqlite", "import", "--session-sqlite-agent", "main", "--json"], **env
    )
    assert code == 0 and "openclaw_cli.migration.importer" in served
    assert not any(name.split(".")[0] in ("typer", "click", "rich") for name in served)


def test_the_fast_path_knows_exactly_the_options_doctor_declares() -> None:
    """A drift guard: an option added to `doctor` (or one that changes parsing: an environment
    variable, a callback, a repeatable option) must be listed here."""
    import typer.main

    from openclaw_cli.cli import doctor_body
    from openclaw_cli.cli.main import app

    command = typer.main.get_command(app).commands["doctor"]  # type: ignore[attr-defined]
    served = {**dict.fromkeys(doctor_body.FAST_VALUES, False), **dict.fromkeys(doctor_body.FAST_FLAGS, True)}
    left = {"--github-issue", "--fix", "--lint", "--post-upgrade", "--state-sqlite"}
    declared = {}
    for param in command.params:
        if param.opts[0] in left:
            continue
        assert param.opts[0] == "--yes" or len(param.opts) == 1, param.opts  # (`-y`: left to Typer)
        assert not param.secondary_opts and param.envvar is None and not param.multiple and param.nargs == 1
        assert param.callback is None and not param.required, param.opts
        declared[param.opts[0]] = bool(param.is_flag)
    assert declared == served
    assert {p.opts[0] for p in command.params} >= left
    for setting in ("auto_envvar_prefix", "ignore_unknown_options", "allow_extra_args", "default_map"):
        assert setting not in command.context_settings, setting
