"""The soak runner behind `scripts/soak` (see tests/faults.py for what is injected and checked).

Usage: scripts/soak [--full] [--per-op N] [--only OP ...] [--workers N] [--seed N]
                    [--fuzz-seconds S] [--no-enospc] [--no-fuzz] [--races N] [--no-races]
                    [--no-checkpoints]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import faults, import_race  # noqa: E402

FULL_PER_OP = 110  # x 10 operations: more than 1,000 kills
SHORT_PER_OP = 1
FULL_SPARES = [0, 4096, 16384, 65536, 262144, 1048576]
SHORT_SPARES = [16384]
FULL_RACES = 200  # import-vs-writer races (issue 29 #4)
SHORT_RACES = 4


def fuzz(seconds: int) -> list[tuple[str, int, str]]:
    out = []
    for target in ("transcript", "config"):
        started = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "fuzz_targets.py"),
                target,
                f"-max_total_time={seconds}",
                "-rss_limit_mb=2048",
                "-print_final_stats=1",
            ],
            capture_output=True,
            text=True,
            timeout=seconds * 4 + 120,
        )
        runs = next((line.split()[1] for line in proc.stderr.splitlines() if line.startswith("Done ")), "?")
        note = f"{runs} inputs in {time.perf_counter() - started:.0f} s"
        if "atheris is not installed" in proc.stderr:
            note = "skipped: atheris is not installed"
        elif proc.returncode != 0:
            tail = "\n".join(proc.stderr.splitlines()[-25:])
            note = f"FAILED (exit {proc.returncode}):\n{tail}"
        out.append((target, proc.returncode, note))
    return out


# The suite's SIGKILL cycles kill at a deterministic spread of their checkpoints (issue 24: the
# suite's time); `--full` runs them at every checkpoint (OPENCLAW_TEST_FULL_KILLS=1).
EVERY_CHECKPOINT = ("tests/test_cleanup_crash.py", "tests/test_cron_sweep_crash.py")


def every_checkpoint() -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-p",
            "no:randomly",
            "-q",
            "-o",
            "timeout=3600",
            *EVERY_CHECKPOINT,
        ],
        cwd=ROOT,
        env={**os.environ, "OPENCLAW_TEST_FULL_KILLS": "1"},
        capture_output=True,
        text=True,
    )
    return proc.returncode, "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--full", action="store_true", help="the long profile: >= 1,000 kills, every full-disk size"
    )
    parser.add_argument("--per-op", type=int, help="kills per operation (default: 1, --full: 110)")
    parser.add_argument("--only", nargs="*", choices=sorted(faults.OPS), help="only these operations")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--sessions", type=int, default=16, help="sessions in the generated legacy state")
    parser.add_argument("--fuzz-seconds", type=int, help="per fuzz target (default: 5, --full: 120)")
    parser.add_argument("--no-enospc", action="store_true")
    parser.add_argument("--no-fuzz", action="store_true")
    parser.add_argument("--races", type=int, help="import-vs-writer races (default: 4, --full: 200)")
    parser.add_argument("--no-races", action="store_true")
    parser.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="--full without the suite's kill cycles at every checkpoint",
    )
    args = parser.parse_args()
    per_op = args.per_op or (FULL_PER_OP if args.full else SHORT_PER_OP)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    log(f"soak: {per_op} kill(s) per operation, {args.workers} worker(s), seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="openclaw-soak-templates-") as tmp:
        templates = faults.build_templates(Path(tmp), sessions=args.sessions)
        kills = faults.soak(
            per_op=per_op, ops=args.only, seed=args.seed, workers=args.workers, log=log, templates=templates
        )
        disks = None
        if not args.no_enospc:
            log("soak: full disks")
            wanted = [o for o in faults.ENOSPC_OPS if not args.only or o in args.only]
            if not args.full:
                wanted = wanted[:3]
            disks = faults.enospc_soak(
                spares=FULL_SPARES if args.full else SHORT_SPARES, log=log, ops=wanted, templates=templates
            )
    races = None
    if not args.no_races:
        count = args.races or (FULL_RACES if args.full else SHORT_RACES)
        log(f"soak: {count} import-vs-writer races")
        races = import_race.race_soak(races=count, seed=args.seed, workers=args.workers, log=log)
    fuzzed = [] if args.no_fuzz else fuzz(args.fuzz_seconds or (120 if args.full else 5))
    every = None
    if args.full and not args.no_checkpoints:
        log(f"soak: every checkpoint of the suite's kill cycles ({', '.join(EVERY_CHECKPOINT)})")
        every = every_checkpoint()

    print("\n== kills (SIGKILL at crash points and random instants, SIGINT/SIGTERM at safe points) ==")
    print(kills.table())
    failed = len(kills.failures)
    if disks is not None:
        print(
            "\n== full disks (tmpfs; each size with and without the space pre-check, then the disk grows) =="
        )
        print(disks.disk_table())
        failed += len(disks.failures)
    if races is not None:
        print("\n== import vs writers (delete, label, compact --max-lines, cleanup at random instants) ==")
        print(races.table())
        failed += len(races.failures)
    if fuzzed:
        print("\n== fuzzing (atheris) ==")
        for target, code, note in fuzzed:
            print(f"{target:<12} {note}")
            failed += code != 0
    if every is not None:
        print("\n== the suite's kill cycles at every checkpoint (the suite runs a spread of them) ==")
        print(every[1])
        failed += every[0] != 0
    total_kills = kills.kills
    print(
        f"\n{total_kills} kills, {sum(o.lost for o in kills.outcomes)} lines lost, "
        f"{sum(o.duplicated for o in kills.outcomes)} duplicated, "
        f"{sum(o.recovery_runs for o in kills.outcomes)} recovery runs, max recovery "
        f"{max((o.recovery_seconds for o in kills.outcomes), default=0):.2f} s; {failed} failure(s); "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    for outcome in kills.failures + (disks.failures if disks else []):
        print(f"FAILED {outcome}")
    for race in races.failures if races else []:
        print(
            f"FAILED race {race.index}: codes={race.codes} undone={race.undone} phantom={race.phantom} "
            f"{race.problems}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
