"""The fast path's equivalence tests: one argument list run on a fresh copy of a state with the
fast path on, then off (`OPENCLAW_FAST_PATH=0`: the Typer command), each run's exit code, output
and the state it left, for the tests to compare."""

from __future__ import annotations

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
