#!/usr/bin/env python3
"""Byte-for-byte comparison of CLI outputs between two revisions (or a revision and the working tree).

    scripts/compare_outputs.py [REV_A] [REV_B]      # default: HEAD vs the working tree
    scripts/compare_outputs.py --sessions 2000 ...  # size of the generated state (default 2000)

Each scenario is a sequence of `openclaw` commands on a fresh copy of one state (the fixture's
legacy state, its real OpenClaw schema-23 import, a generated N-session legacy state). Both
revisions run the same scenario on identical copies; stdout, stderr and the exit code of every
step are compared after normalising what legitimately differs between two runs (the temp dir,
uuids, hashes, millisecond timestamps, ISO times, ages). A refactor that claims "behaviour
unchanged" must print `0 differences`. Exit 1 when any step differs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURE = ROOT / "tests" / "fixtures" / "openclaw-2026.9.6"
GEN = SHARED / "tools" / "gen_legacy_store.py"

KEY = "agent:main:main"
SCENARIOS: dict[str, tuple[str, list[list[str]]]] = {
    "fixture-legacy-reads": (
        "legacy",
        [
            ["sessions"],
            ["sessions", "--json"],
            ["sessions", "--json", "--limit", "all", "--all-agents"],
            ["sessions", "--active", "99999999", "--json"],
            ["sessions", "--limit", "0"],
            ["sessions", "tail", "--session-key", KEY, "--tail", "5"],
            ["sessions", "tail", "--session-key", KEY, "--tail", "5", "--json"],
            ["sessions", "tail", "--session-key", KEY, "--context", "--json"],
            ["sessions", "tail", "--session-key", "nope"],
            ["status", "--no-probe"],
            ["status", "--json", "--no-probe"],
            ["agents", "list"],
            ["agents", "list", "--json"],
            ["doctor"],
            ["doctor", "--json"],
            ["doctor", "--session-sqlite", "inspect", "--json"],
            ["doctor", "--session-sqlite", "dry-run"],
            ["doctor", "--session-sqlite", "dry-run", "--json"],
            ["sessions", "cleanup", "--dry-run"],
            ["sessions", "cleanup", "--dry-run", "--json"],
            ["cleanup", "--dry-run", "--fix-missing", "--json"],
            ["compact", KEY, "--dry-run", "--json", "--tokenizer", "estimate"],
            ["compact", KEY, "--dry-run", "--max-lines", "3", "--json"],
            ["compact", "--over-threshold", "--dry-run", "--json"],
            ["sessions", "--agent", "", "--json"],
            ["sessions", "--store", "/nonexistent/x.sqlite", "--json"],
            ["compact", "--json"],
            ["agents", "delete", "main", "--force", "--json"],
        ],
    ),
    "fixture-legacy-writes": (
        "legacy",
        [
            ["sessions", "cleanup", "--enforce", "--json"],
            ["sessions", "--json"],
            ["compact", KEY, "--keep-recent-tokens", "200", "--json", "--tokenizer", "estimate"],
            ["compact", "agent:main:cron:job1", "--max-lines", "3", "--json"],
            ["sessions", "tail", "--session-key", KEY, "--context", "--json"],
            ["status", "--json", "--no-probe"],
        ],
    ),
    "fixture-import": (
        "legacy",
        [
            ["doctor", "--session-sqlite", "import", "--json"],
            ["sessions", "--json", "--limit", "all"],
            ["doctor", "--session-sqlite", "validate", "--json"],
            ["doctor", "--session-sqlite", "inspect"],
            ["sessions", "cleanup", "--dry-run"],
            ["sessions", "cleanup", "--enforce", "--json"],
            ["compact", KEY, "--keep-recent-tokens", "200", "--json", "--tokenizer", "estimate"],
            ["compact", "agent:main:cron:job1", "--max-lines", "3"],
            ["status", "--no-probe"],
            ["doctor", "--session-sqlite", "restore", "--json"],
            ["sessions", "--json"],
        ],
    ),
    "fixture-openclaw-db": (
        "imported",
        [
            ["sessions", "--json", "--limit", "all"],
            ["sessions"],
            ["status", "--json", "--no-probe"],
            ["sessions", "tail", "--session-key", KEY, "--json"],
            ["sessions", "cleanup", "--dry-run", "--json"],
            ["sessions", "cleanup", "--enforce", "--json"],
            ["compact", KEY, "--max-lines", "3", "--json"],
            ["doctor", "--session-sqlite", "inspect", "--json"],
        ],
    ),
    "generated": (
        "generated",
        [
            ["sessions", "--json"],
            ["status", "--json", "--no-probe"],
            ["sessions", "cleanup", "--dry-run", "--json"],
            ["doctor", "--session-sqlite", "import", "--json"],
            ["sessions", "--json", "--limit", "all"],
            ["sessions", "cleanup", "--dry-run"],
            ["sessions", "cleanup", "--enforce", "--json"],
            ["compact", "--over-threshold", "--dry-run", "--json"],
            ["status", "--no-probe"],
        ],
    ),
}

_NORMALISE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "<sha256>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex32>"),
    (re.compile(r"\b[0-9a-f]{8}\b"), "<id8>"),  # transcript entry ids
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}(?:[.-]\d{1,3})?Z?"), "<iso>"),
    (re.compile(r"(\"(?:ageMs|age|lastActiveAgeMs|durationMs|elapsedMs|connectLatencyMs)\": )\d+"), r"\1<n>"),
    (re.compile(r"\b1[789]\d{11}\b"), "<ms>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|s)\b"), "<dur>"),
    (re.compile(r"\b\d+[mhd] ago\b"), "<ago>"),
]


def normalise(text: str, tmp: str) -> str:
    text = text.replace(tmp, "<TMP>")
    for pattern, repl in _NORMALISE:
        text = pattern.sub(repl, text)
    return text


def checkout(rev: str | None, dest: Path) -> Path:
    """The tree of `rev` (None: the working tree) as a directory importable with PYTHONPATH."""
    if rev is None:
        return ROOT
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "openclaw_cli"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def make_states(base: Path, sessions: int) -> dict[str, Path]:
    states = {"legacy": FIXTURE / "legacy-state", "imported": FIXTURE / "imported-state"}
    gen = base / "generated-src"
    subprocess.run(
        [
            sys.executable,
            str(GEN),
            str(gen),
            str(sessions),
            "0",
            "2027",
            "--min-turns",
            "1",
            "--cron-key-style",
            "canonical",
            "--now-ms",
            "1796000000000",
        ],
        check=True,
        capture_output=True,
    )
    states["generated"] = gen
    return states


def run_scenario(
    tree: Path, state_src: Path, steps: list[list[str]], work: Path
) -> list[tuple[int, str, str]]:
    state = work / "state"
    shutil.copytree(state_src, state, symlinks=True)
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    env.update(
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_HOME=str(home),
        HOME=str(home),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        PYTHONPATH=str(tree),
        NO_COLOR="1",
        COLUMNS="120",
        OPENCLAW_GATEWAY_PORT="9",
    )  # port 9 (discard): nothing listens
    out = []
    for argv in steps:
        proc = subprocess.run(
            [sys.executable, "-m", "openclaw_cli", *argv],
            env=env,
            capture_output=True,
            text=True,
            cwd=str(work),
            timeout=600,
        )
        out.append((proc.returncode, normalise(proc.stdout, str(work)), normalise(proc.stderr, str(work))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev_a", nargs="?", default="HEAD")
    parser.add_argument("rev_b", nargs="?", default=None, help="default: the working tree")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--only", action="append", help="run only these scenarios")
    parser.add_argument("--show", action="store_true", help="print the first differing outputs in full")
    args = parser.parse_args()
    differences = 0
    steps_run = 0
    with tempfile.TemporaryDirectory(prefix="compare-outputs-") as tmp:
        base = Path(tmp)
        tree_a = checkout(args.rev_a, base / "a")
        tree_b = checkout(args.rev_b, base / "b") if args.rev_b else ROOT
        states = make_states(base, args.sessions)
        for name, (state_name, steps) in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            results = []
            for side in ("a", "b"):
                work = base / f"run-{name}-{side}"
                work.mkdir()
                results.append(
                    run_scenario(tree_a if side == "a" else tree_b, states[state_name], steps, work)
                )
                # the two sides ran in differently named dirs: make their names equal
                results[-1] = [
                    (rc, o.replace(f"run-{name}-{side}", "run"), e.replace(f"run-{name}-{side}", "run"))
                    for rc, o, e in results[-1]
                ]
            for argv, left, right in zip(steps, results[0], results[1], strict=True):
                steps_run += 1
                if left != right:
                    differences += 1
                    print(f"DIFF {name}: openclaw {' '.join(argv)}")
                    for label, i in (("exit", 0), ("stdout", 1), ("stderr", 2)):
                        if left[i] != right[i]:
                            print(f"  {label} differs" + (f": {left[i]} -> {right[i]}" if i == 0 else ""))
                            if args.show and i:
                                import difflib

                                for line in difflib.unified_diff(
                                    left[i].splitlines(),
                                    right[i].splitlines(),
                                    args.rev_a,
                                    args.rev_b or "working tree",
                                    lineterm="",
                                    n=1,
                                ):
                                    print(f"    {line[:300]}")
    print(f"{steps_run} steps compared, {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
