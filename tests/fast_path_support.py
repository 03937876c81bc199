"""The fast path's equivalence tests: one argument list run on a fresh copy of a state with the
fast path on, then off (`OPENCLAW_FAST_PATH=0`: the Typer command), each run's exit code, output
and the state it left, for the tests to compare."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import copy_tree, run_cli


def run_both(
    template: Path,
    state: Path,
    args: tuple[str, ...],
    tree: Callable[[Path], Any],
    same: Callable[[str], str] = lambda text: text,
) -> list[tuple]:
    """[(exit code, stdout, stderr, tree(state))] with the fast path on, then off; `{state}` in
    `args` is the copy's path, `same` evens out what differs between any two runs."""
    results = []
    for fast in (True, False):
        if state.exists():
            shutil.rmtree(state)
        copy_tree(template, state)
        env = {
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_HOME": str(state.parent),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        }
        if not fast:
            env["OPENCLAW_FAST_PATH"] = "0"
        done = run_cli(*(arg.replace("{state}", str(state)) for arg in args), env=env)
        results.append((done.returncode, same(done.stdout), same(done.stderr), tree(state)))
    return results


def assert_same_outcome(results: list[tuple]) -> None:
    """`run_both`'s two runs: the same exit code, stdout, stderr and state left; stdout, when
    there is one, a single JSON document (failures included)."""
    fast, typer_app = results
    assert fast[0] == typer_app[0], (fast[2], typer_app[2])
    assert fast[1] == typer_app[1]
    assert fast[2] == typer_app[2]
    assert fast[3] == typer_app[3]
    if fast[1]:
        json.loads(fast[1])
