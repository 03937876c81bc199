"""`sessions cleanup --enforce --json`'s path before its first archive and after its COMMIT (issue
30, stop 45): what the JSON does not show is not measured, and the executable's exit skips the
interpreter's teardown once the threads are joined and the `atexit` functions ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.ops import cleanup as ops_cleanup
from tests.conftest import copy_tree, ours_and_a_legacy_agent

NOW = 1796000000000
CONFIG = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 2}}}


def _clean(state: Path, **options: Any) -> Any:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    return ops_cleanup.cleanup_stores(
        Context.load(resolve_paths()), ops_cleanup.CleanupOptions(enforce=True, **options), now_ms=NOW
    )


@pytest.mark.parametrize("asked", [False, True])
def test_an_apply_measures_the_reasons_only_when_asked(
    legacy_fixture_state: Path, monkeypatch: pytest.MonkeyPatch, asked: bool
) -> None:
    """The text report prints what each reason removed (`reason_bytes`); the JSON (the Gateway's
    document) never shows it: a JSON apply does not measure it (~8 ms of *many*'s path)."""
    calls: list[int] = []
    measure = ops_cleanup.reason_bytes

    def counting(*args: Any) -> Any:
        calls.append(1)
        return measure(*args)

    monkeypatch.setattr(ops_cleanup, "reason_bytes", counting)
    (result,) = _clean(legacy_fixture_state, reason_bytes=asked)
    assert result.outcome is not None and result.plan.removed  # (rows left: the apply ran)
    assert len(calls) == int(asked)
    assert bool(result.reason_bytes) == asked


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("cleanup-head-tail") / "state"
    ours_and_a_legacy_agent(state, "work")
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    return state


def _env(state: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_HOME": str(state.parent),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "OPENCLAW_GATEWAY_PORT": "1",
    }


def test_the_text_apply_still_reports_each_reason(template: Path, tmp_path: Path) -> None:
    state = copy_tree(template, tmp_path / "state")
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_cli", "sessions", "cleanup", "--enforce"],
        capture_output=True,
        text=True,
        env=_env(state),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Removed, by reason" in done.stdout


_EXITING = """
import atexit, gc, sys
def seen():
    sys.stderr.write(f"FROZEN {gc.get_freeze_count()}\\n")
atexit.register(seen)
sys.argv = ["openclaw", "sessions", "cleanup", "--enforce", "--json", *sys.argv[1:]]
from openclaw_cli.cli.entry import main
main()
"""


@pytest.mark.parametrize("args", [(), ("--agent", "nobody")])
def test_the_executable_leaves_its_objects_to_the_exit_not_to_the_collector(
    template: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Once a served cleanup is done (an apply, or a failure with its exit code), the objects alive
    are frozen: the interpreter's exit does not walk them again; what it prints and returns is the
    Typer command's."""
    done = subprocess.run(
        [sys.executable, "-c", _EXITING, *args],
        capture_output=True,
        text=True,
        env=_env(copy_tree(template, tmp_path / "state")),
        timeout=120,
    )
    plain = subprocess.run(
        [sys.executable, "-m", "openclaw_cli", "sessions", "cleanup", "--enforce", "--json", *args],
        capture_output=True,
        text=True,
        env={**_env(copy_tree(template, tmp_path / "plain")), "OPENCLAW_FAST_PATH": "0"},
        timeout=120,
    )
    assert done.returncode == plain.returncode, (done.stderr, plain.stderr)
    assert json.loads(done.stdout).keys() == json.loads(plain.stdout).keys()
    assert int(done.stderr.rsplit("FROZEN ", 1)[1].split()[0]) > 10_000


def test_a_library_caller_keeps_its_collector(
    legacy_fixture_state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    from openclaw_cli.cli import fast

    (legacy_fixture_state / "openclaw.json").write_text(json.dumps(CONFIG))
    assert fast.dispatch(["sessions", "cleanup", "--enforce", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["appliedCount"] >= 0
    assert gc.get_freeze_count() == 0


def test_the_removals_thread_is_left_no_planned_rows_once_the_apply_returns(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's removals thread outlives the apply (its deferred checkpoint): the rows it was
    handed are let go when the apply returns, so the caller frees them, not that thread after
    its checkpoint."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.sqlite.store import SqliteStore

    state = copy_tree(template, tmp_path / "state")
    for name, value in _env(state).items():
        monkeypatch.setenv(name, value)
    handed: list[Any] = []
    retire = SqliteStore.retire

    def spy(self: SqliteStore, plan: Any, **kwargs: Any) -> Any:
        handed.append((plan, len(plan.entries)))
        return retire(self, plan, **kwargs)

    monkeypatch.setattr(SqliteStore, "retire", spy)
    (result,) = ops_cleanup.cleanup_stores(
        Context.load(resolve_paths()), ops_cleanup.CleanupOptions(enforce=True), now_ms=NOW
    )
    [(plan, planned)] = handed
    assert planned == len(result.entries) > 0 and result.plan.removed
    assert plan.entries == {}
