"""The atheris harnesses (tests/fuzz_targets.py) run a few hundred inputs each, seeded with
tests/corpus/fuzz/: the harness itself works, and the seeds hold its invariants. `scripts/soak`
fuzzes for a bounded time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import fuzz_targets

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("target", sorted(fuzz_targets.TARGETS))
def test_seed_inputs_hold_the_invariants(target: str) -> None:
    seeds = sorted((HERE / "corpus" / "fuzz" / target).iterdir())
    assert seeds
    for seed in seeds:
        fuzz_targets.TARGETS[target](seed.read_bytes())


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(fuzz_targets.TARGETS))
def test_the_fuzzer_runs_a_bounded_number_of_inputs(target: str) -> None:
    pytest.importorskip("atheris", reason="atheris is not installed (fuzzing runs only where it is)")
    proc = subprocess.run(
        [sys.executable, str(HERE / "fuzz_targets.py"), target, "-runs=400", "-seed=1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 400 runs" in proc.stderr or "DONE" in proc.stderr
