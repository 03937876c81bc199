"""The import-vs-writer race (issue 29 #4) for `scripts/soak` and `tests/test_soak.py`: a
`doctor --session-sqlite import` of a legacy store runs while real CLI writers hit the same agent
at a random instant — `sessions delete`, `sessions label`, `sessions compact --max-lines 3` and
`sessions cleanup --enforce` — each as its own process. Afterwards (and after a second import, the
"suggested rerun") every write a writer acknowledged (exit 0, its key `ok`) must be in the live
store, and every write it did not acknowledge must not be: a deleted row never comes back, a label
is never lost, a compaction is never undone; a cleanup never exits 6 (a race is not corrupt data).
Each race starts from a fresh copy of a small generated legacy state.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.faults import IMPORT, NOW_MS, env_for, run

DELETE_KEY = "agent:main:cron:job1"
LABEL_KEY = "agent:main:main"
COMPACT_KEY = "agent:main:telegram:group:123"
MAX_LINES = 3
INVALID_DATA = 6  # openclaw_cli.errors.ExitCode.INVALID_DATA
BUSY = 5


@dataclass
class Race:
    index: int
    delay: float
    codes: dict[str, int] = field(default_factory=dict)
    acknowledged: list[str] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)  # acknowledged, then missing
    phantom: list[str] = field(default_factory=list)  # not acknowledged, yet applied
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # refusals other than busy (not failures)
    cleanup_after: int | None = None  # the row count an acknowledged cleanup left

    @property
    def failed(self) -> bool:
        return bool(self.undone or self.phantom or self.problems)


@dataclass
class RaceFigures:
    races: list[Race] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Race]:
        return [r for r in self.races if r.failed]

    def table(self) -> str:
        writes = sum(len(r.codes) - 1 for r in self.races)
        acked = sum(len(r.acknowledged) for r in self.races)
        busy = sum(
            1 for r in self.races for name, code in r.codes.items() if name != "import" and code == BUSY
        )
        imports_ok = sum(1 for r in self.races if r.codes.get("import") == 0)
        return "\n".join(
            [
                f"{len(self.races)} races, {writes} concurrent writes: {acked} acknowledged, {busy} refused busy (exit 5); "
                f"{imports_ok} imports finished first time",
                f"acknowledged writes undone: {sum(len(r.undone) for r in self.races)}; refused writes applied: "
                f"{sum(len(r.phantom) for r in self.races)}; other problems: {sum(len(r.problems) for r in self.races)}; "
                f"wall time {self.seconds:.0f} s",
            ]
        )


def build_template(root: Path, sessions: int = 24) -> Path:
    state = root / "race-template" / "state"
    state.parent.mkdir(parents=True)
    gen = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "gen_legacy_store.py"
    subprocess.run(
        [
            sys.executable,
            str(gen),
            str(state),
            str(sessions),
            "0.3",
            "2929",
            "--now-ms",
            NOW_MS,
            "--cron-key-style",
            "canonical",
        ],
        check=True,
        capture_output=True,
    )
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "30d"}}}))
    return state


def _popen(state: Path, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "openclaw_cli", *args],
        env=env_for(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _doc(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _message(out: str) -> str:
    error = _doc(out).get("error")
    return str(error.get("message"))[:300] if isinstance(error, dict) else out[-300:]


def _batch_ok(code: int, out: str) -> bool:
    results = _doc(out).get("results") or []
    return code == 0 and bool(results) and all(r.get("ok") for r in results)


def _rows(state: Path) -> dict[str, dict]:
    listing = run(state, ["sessions", "list", "--json", "--all"])
    if listing.returncode != 0:
        raise RuntimeError(f"sessions list exited {listing.returncode}: {listing.stdout[-300:]}")
    return {row["key"]: row for row in _doc(listing.stdout).get("sessions", [])}


def _transcript_lines(state: Path, key: str) -> int | None:
    proc = run(state, ["sessions", "export", key, "--branch", "all"])
    if proc.returncode != 0:
        return None
    return sum(1 for line in proc.stdout.splitlines() if line.strip())


def _check(state: Path, race: Race, original_lines: int, when: str) -> None:
    rows = _rows(state)
    if "cleanup" in race.acknowledged and race.cleanup_after is not None and len(rows) > race.cleanup_after:
        race.undone.append(f"cleanup ({when}: {len(rows)} rows, it left {race.cleanup_after})")
    deleted = DELETE_KEY not in rows
    if "delete" in race.acknowledged and not deleted:
        race.undone.append(f"delete ({when}: the row is back)")
    if "delete" not in race.acknowledged and deleted and "cleanup" not in race.acknowledged:
        race.phantom.append(f"delete ({when})")
    label = (rows.get(LABEL_KEY) or {}).get("label")
    want = f"race-{race.index}"
    if "label" in race.acknowledged and label != want:
        race.undone.append(f"label ({when}: {label!r})")
    if "label" not in race.acknowledged and label == want:
        race.phantom.append(f"label ({when})")
    if COMPACT_KEY in rows:
        lines = _transcript_lines(state, COMPACT_KEY)
        if lines is None:
            race.problems.append(f"{when}: the compacted session cannot be exported")
        elif "compact" in race.acknowledged and lines > MAX_LINES + 1:
            race.undone.append(f"compact ({when}: {lines} lines)")
        elif "compact" not in race.acknowledged and lines != original_lines:
            race.phantom.append(f"compact ({when}: {lines} lines, was {original_lines})")


def one_race(
    template: Path, work: Path, index: int, delay: float, original_lines: int, *, with_cleanup: bool
) -> Race:
    race = Race(index, delay)
    state = work / "state"
    shutil.copytree(template, state, symlinks=True)
    try:
        importer = _popen(state, IMPORT)
        time.sleep(delay)
        writers = {
            "delete": _popen(state, ["sessions", "delete", DELETE_KEY, "--yes", "--json"]),
            "label": _popen(state, ["sessions", "label", LABEL_KEY, f"race-{index}", "--json"]),
            "compact": _popen(
                state, ["sessions", "compact", COMPACT_KEY, "--max-lines", str(MAX_LINES), "--json"]
            ),
        }
        if with_cleanup:
            writers["cleanup"] = _popen(state, ["sessions", "cleanup", "--enforce", "--json"])
        out, err = importer.communicate(timeout=300)
        race.codes["import"] = importer.returncode
        if importer.returncode not in (0, BUSY):
            race.problems.append(f"import exited {importer.returncode}: {err[-300:]}")
        for name, proc in writers.items():
            w_out, w_err = proc.communicate(timeout=300)
            race.codes[name] = proc.returncode
            if "Traceback" in w_err:
                race.problems.append(f"{name}: a traceback")
            ok = _batch_ok(proc.returncode, w_out) if name in ("delete", "label") else proc.returncode == 0
            if ok:
                race.acknowledged.append(name)
                if name == "cleanup":
                    race.cleanup_after = _doc(w_out).get("afterCount")
            elif name == "cleanup" and proc.returncode == INVALID_DATA:
                race.problems.append(f"cleanup exited 6 (corrupt) in a race: {w_out[-300:]}")
            elif proc.returncode != BUSY:
                failed = [
                    str(r.get("error"))[:200] for r in _doc(w_out).get("results") or [] if not r.get("ok")
                ]
                race.notes.append(f"{name} exited {proc.returncode}: {failed or _message(w_out)}")
        _check(state, race, original_lines, "after the race")
        again = run(state, IMPORT)  # the suggested rerun (a no-op when the first one finished)
        if again.returncode != 0:
            race.problems.append(f"the rerun import exited {again.returncode}: {again.stdout[-300:]}")
        _check(state, race, original_lines, "after the rerun")
    except Exception as exc:  # noqa: BLE001 - a race that cannot be checked is a failure, not a crash
        race.problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return race


def probe_import_seconds(template: Path, work: Path) -> float:
    state = work / "state"
    shutil.copytree(template, state, symlinks=True)
    try:
        started = time.perf_counter()
        done = run(state, IMPORT)
        if done.returncode != 0:
            raise RuntimeError(f"the probe import failed: {done.stdout[-500:]}")
        return time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)


def race_soak(
    *,
    races: int,
    seed: int = 20261201,
    workers: int = 2,
    log: Callable[[str], None] | None = None,
    template: Path | None = None,
) -> RaceFigures:
    """`races` import-vs-writer races over `workers` parallel slots; writers start at a random
    instant between the import's start and its typical end (the probe's duration)."""
    started = time.perf_counter()
    figures = RaceFigures()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="openclaw-race-") as tmp:
        root = Path(tmp)
        template = template or build_template(root)
        duration = probe_import_seconds(template, root / "probe")
        original_lines = _transcript_lines(template, COMPACT_KEY) or 0
        plan = [(i, rng.uniform(0.0, duration), i % 4 == 3) for i in range(races)]

        def one(item: tuple[int, float, bool]) -> Race:
            index, delay, with_cleanup = item
            race = one_race(
                template, root / f"race-{index}", index, delay, original_lines, with_cleanup=with_cleanup
            )
            if log is not None and race.failed:
                log(
                    f"FAIL race {index} (writers at +{delay:.2f} s): codes={race.codes} undone={race.undone} "
                    f"phantom={race.phantom} {race.problems}"
                )
            return race

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for done, race in enumerate(pool.map(one, plan), start=1):
                figures.races.append(race)
                if log is not None and done % 25 == 0:
                    log(f"... {done}/{races} races, {len(figures.failures)} failed")
    figures.seconds = time.perf_counter() - started
    return figures
