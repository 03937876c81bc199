"""Benchmarks with the issues' speed targets, side by side with the real OpenClaw (/tmp/peer) and
with a floor (the least work the same result needs, measured in the same run) where a case has one.

Usage: scripts/bench [--runs N] [--only NAME ...] [--data DIR] [--no-peer] [--json [FILE]] [--ours OPENCLAW]
       scripts/bench --scale [--runs N] [--json [FILE]]   (the 2k / 20k / 100k table of every command)
       scripts/bench --compare A.json B.json
Every case prints ours / peer / floor (median, min-max, peak RSS) with the ratios; `--json FILE`
writes every figure (medians, samples, RSS, Gateway percentiles) so two commits can be compared
with `--compare` (`--json` alone prints them on stdout). Datasets are generated once under --data
(default /tmp/openclaw-bench) with the shared generator; the peer's imported copies are cached there
too. A new case is a function `case_x(b: Bench)` in CASES that calls `b.compare(...)` (or
`b.record_figures(...)` for figures that are not process runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT.parent / "shared" / "tools" / "gen_legacy_store.py"
PEER = Path("/tmp/peer/openclaw")
OURS = [str(ROOT / ".venv" / "bin" / "openclaw")]
NOW_MS = "1796000000000"
DATASETS = {
    "many": ["20000", "0", "2027", "--min-turns", "1"],
    "big": ["2000", "200", "2026"],
    # the listing scaling table (2k / 20k = many / 100k sessions, minimal transcripts)
    "scale2k": ["2000", "0", "2029", "--min-turns", "1"],
    "scale100k": ["100000", "0", "2030", "--min-turns", "1"],
}
CLEANUP_CONFIG = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 5000}}}


@dataclass
class Run:
    seconds: float
    max_rss_mb: float
    code: int
    cpu_seconds: float | None = None  # user + system: steadier than wall time on a shared machine


# The measured command is started by a tiny launcher (python -S) that times it and reads its peak
# RSS with wait4: Linux charges a child the peak RSS of the process it was forked from, so a
# command started by this bench directly would report at least the bench's own size (after
# copying a 100,000-file dataset, ~120 MB), whatever the command used.
_LAUNCHER = """
import os, sys, time
fd = int(sys.argv[1])
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvpe(sys.argv[2], sys.argv[2:], os.environ)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, f"{time.perf_counter() - start} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} "
             f"{usage.ru_utime + usage.ru_stime}".encode())
"""


def timed(
    cmd: list[str],
    env: dict[str, str],
    *,
    setup: Callable[[], None] | None = None,
    timeout: float | None = None,
) -> Run:
    """One run of `cmd` (wall, peak RSS, exit code, CPU); `timeout`: seconds after which the run is
    killed and the bench stops with the command named (a bounded case)."""
    if setup:
        setup()
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, str(write_end), *cmd],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(write_end,),
        )
        os.close(write_end)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise SystemExit(f"bench: {' '.join(cmd[-5:])} ran over {timeout:g} s and was stopped") from None
        with os.fdopen(read_end, "rb") as fh:
            report = fh.read().decode().split()
    except BaseException:
        os.close(read_end)
        raise
    if len(report) != 4:
        raise SystemExit(f"bench: the launcher of {cmd[0]} reported nothing (exit {proc.returncode})")
    elapsed, max_rss_kb, code, cpu = float(report[0]), int(report[1]), int(report[2]), float(report[3])
    if code != 0:
        print(
            f"    ! exit {code}: {' '.join(cmd[-4:])}\n{err.decode(errors='replace')[-800:]}", file=sys.stderr
        )
    return Run(elapsed, max_rss_kb / 1024, code, cpu)


def summary(runs: list[Run]) -> str:
    secs = [r.seconds for r in runs]
    rss = max(r.max_rss_mb for r in runs)
    cpu = [r.cpu_seconds for r in runs if r.cpu_seconds is not None]
    cpu_text = f", cpu {statistics.median(cpu):.3f} s" if cpu else ""
    return (
        f"median {statistics.median(secs):.3f} s (min {min(secs):.3f}, max {max(secs):.3f}){cpu_text}, "
        f"peak RSS {rss:.0f} MB"
    )


def median(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def figures(runs: list[Run] | None) -> dict | None:
    """The JSON form of a set of runs: median, min, max, every sample, peak RSS."""
    if not runs:
        return None
    secs = [r.seconds for r in runs]
    return {
        "median": round(statistics.median(secs), 4),
        "min": round(min(secs), 4),
        "max": round(max(secs), 4),
        "samples": [round(x, 4) for x in secs],
        "rssMB": round(max(r.max_rss_mb for r in runs), 1),
        "rssSamplesMB": [round(r.max_rss_mb, 1) for r in runs],
        "failed": sum(r.code != 0 for r in runs),
        "cpuMedian": (
            round(statistics.median(cpu), 4)
            if (cpu := [r.cpu_seconds for r in runs if r.cpu_seconds is not None])
            else None
        ),
    }


class Bench:
    def __init__(self, data: Path, runs: int, use_peer: bool):
        self.data = data
        self.runs = runs
        self.use_peer = use_peer and PEER.exists()
        self.results: list[dict] = []

    # ---- datasets -------------------------------------------------------------------------
    def legacy(self, name: str) -> Path:
        """A pristine generated legacy state (never modified by benchmarks)."""
        dest = self.data / f"{name}-legacy"
        if not (dest / "agents").exists():
            print(f"  generating {name} dataset…", file=sys.stderr)
            subprocess.run(
                [
                    sys.executable,
                    str(GEN),
                    str(dest),
                    *DATASETS[name],
                    "--cron-key-style",
                    "canonical",
                    "--now-ms",
                    NOW_MS,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        return dest

    def fresh_copy(self, name: str, label: str) -> Path:
        src = self.legacy(name)
        dest = self.data / f"{name}-{label}"
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(src, dest)  # real copies: import refuses hard-linked originals (spec A-3)
        return dest

    def ours_imported(self, name: str) -> Path:
        """Our SQLite import of a dataset (cached; benchmarks that only read use it)."""
        dest = self.data / f"{name}-ours-imported"
        if not (dest / ".imported").exists() or _older_schema(_db_of(dest)):
            dest = self.fresh_copy(name, "ours-imported")
            subprocess.run(
                [*OURS, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
                env=self.env_ours(dest),
                check=True,
                stdout=subprocess.DEVNULL,
            )
            (dest / ".imported").write_text("ok")
        return dest

    def peer_import_time(self, name: str) -> list[Run] | None:
        if not self.use_peer:
            return None
        root = self.peer_root(name)
        data = json.loads((root / "import-time.json").read_text())
        return [Run(data["seconds"], data["rss"], 0)]

    def env_ours(self, state: Path, config: dict | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "OPENCLAW_STATE_DIR": str(state),
                "OPENCLAW_HOME": str(state.parent),
                "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
                "NO_COLOR": "1",
            }
        )
        if config is not None:
            (state / "openclaw.json").write_text(json.dumps(config))
        return env

    def peer_root(self, name: str) -> Path:
        """The peer's state: <root>/home/.openclaw imported by the real OpenClaw (cached)."""
        root = self.data / f"peer-{name}"
        state = root / "home" / ".openclaw"
        marker = root / ".imported"
        if not marker.exists():
            if root.exists():
                shutil.rmtree(root)
            shutil.copytree(self.legacy(name), state)
            print(f"  peer: importing {name} (slow, once)…", file=sys.stderr)
            run = timed(
                [str(PEER), "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
                self.env_peer(root),
            )
            (root / "import-time.json").write_text(
                json.dumps({"seconds": run.seconds, "rss": run.max_rss_mb})
            )
            marker.write_text("ok")
        return root

    def env_peer(self, root: Path, config: dict | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["OC_PEER_ROOT"] = str(root)
        if config is not None:
            (root / "home" / ".openclaw" / "openclaw.json").write_text(json.dumps(config))
        return env

    # ---- reporting --------------------------------------------------------------------------
    def compare(
        self,
        name: str,
        ours: list[Run],
        peer: list[Run] | None,
        target: str,
        ratio_needed: float | None = None,
        absolute_max: float | None = None,
        floor: list[Run] | None = None,
        floor_ratio_max: float | None = None,
        rss_max_mb: float | None = None,
        extra: dict | None = None,
    ) -> None:
        """One case's line: ours / peer / floor with ratios. Verdicts: `absolute_max` (seconds,
        median), `ratio_needed` (peer / ours), `floor_ratio_max` (ours / floor), `rss_max_mb`."""
        line: dict = {
            "case": name,
            "target": target,
            "ours": figures(ours),
            "peer": figures(peer),
            "floor": figures(floor),
            "oursText": summary(ours),
        }
        verdict = []
        if absolute_max is not None:
            verdict.append("OK" if median(ours) <= absolute_max else "MISSED")
        if rss_max_mb is not None:  # the highest peak of the runs, not a median
            rss = max(r.max_rss_mb for r in ours)
            line["target"] = target = f"{target}, peak RSS <= {rss_max_mb:g} MB"
            verdict.append(f"rss:{'OK' if rss <= rss_max_mb else 'MISSED'}")
        if any(r.code != 0 for r in ours):
            verdict.append("FAILED-RUNS")
        if peer:
            ratio = median(peer) / median(ours)
            line["peerText"] = summary(peer)
            line["speedup"] = round(ratio, 2)
            if ratio_needed is not None:
                verdict.append("OK" if ratio >= ratio_needed else "MISSED")
        if floor:
            over = median(ours) / median(floor)
            line["floorText"] = summary(floor)
            line["overFloor"] = round(over, 2)
            if floor_ratio_max is not None:
                verdict.append(f"floor:{'OK' if over <= floor_ratio_max else 'MISSED'}")
        if extra:
            line.update(extra)
        line["verdict"] = " ".join(verdict) or ("(no peer)" if not peer else "(reference)")
        self.results.append(line)
        print(f"\n{name}\n  ours : {line['oursText']}", file=sys.stderr)
        if peer:
            print(f"  peer : {line['peerText']}  -> ours {line['speedup']:.1f}x faster", file=sys.stderr)
        if floor:
            print(
                f"  floor: {line['floorText']}  -> ours {line['overFloor']:.2f}x the floor", file=sys.stderr
            )
        print(f"  target: {target} {line['verdict']}", file=sys.stderr)

    def record_figures(self, name: str, ours: dict, target: str, checks: dict[str, bool], **extra) -> None:
        """A case whose figures are not process runs (Gateway latencies, a scaling table)."""
        verdict = " ".join(f"{label}:{'OK' if ok else 'MISSED'}" for label, ok in checks.items())
        self.results.append({"case": name, "ours": ours, "target": target, "verdict": verdict, **extra})
        print(f"\n{name}\n  {json.dumps(ours)}\n  target: {target} {verdict}", file=sys.stderr)

    def repeat(
        self,
        cmd: list[str],
        env: dict[str, str],
        runs: int | None = None,
        setup: Callable[[], None] | None = None,
        timeout: float | None = None,
    ) -> list[Run]:
        return [timed(cmd, env, setup=setup, timeout=timeout) for _ in range(runs or self.runs)]


def case_help(b: Bench) -> None:
    env = dict(os.environ)
    ours = b.repeat([*OURS, "--help"], env, runs=max(b.runs, 10))
    peer = (
        b.repeat([str(PEER), "--help"], b.env_peer(b.data / "peer-empty"), runs=max(b.runs, 10))
        if b.use_peer
        else None
    )
    b.compare("openclaw --help", ours, peer, "<= 150 ms median", absolute_max=0.150)


def case_sessions_legacy_many(b: Bench) -> None:
    state = b.legacy("many")
    ours = b.repeat([*OURS, "sessions", "--json"], b.env_ours(state))
    peer = None
    if b.use_peer:
        root = b.peer_root("many")
        peer = b.repeat([str(PEER), "sessions", "--json"], b.env_peer(root))
    b.compare(
        "sessions --json, 20k sessions (ours: legacy store; peer: its imported SQLite)",
        ours,
        peer,
        ">= 5x faster than the real OpenClaw (1.3-1.7 s)",
        ratio_needed=5,
    )


def case_status_legacy_many(b: Bench) -> None:
    state = b.legacy("many")
    ours = b.repeat([*OURS, "status", "--json"], b.env_ours(state))
    peer = None
    if b.use_peer:
        root = b.peer_root("many")
        peer = b.repeat([str(PEER), "status", "--json"], b.env_peer(root))
    b.compare(
        "status --json, 20k sessions (ours: legacy store; peer: imported)",
        ours,
        peer,
        ">= 5x faster than the real OpenClaw (~1.2 s)",
        ratio_needed=5,
    )


def case_gateway_fallback(b: Bench) -> None:
    """What the Gateway client costs commands: `sessions --json` (never contacts a Gateway; the
    client is not even imported) and `cleanup --enforce` with nothing listening (discovery + one
    refused TCP connect, then the local run), on an empty state."""
    import socket

    state = b.data / "empty-state"
    state.mkdir(exist_ok=True)
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(b.env_ours(state, {}), OPENCLAW_GATEWAY_PORT=str(port))
    runs = max(b.runs, 10)
    listing = b.repeat([*OURS, "sessions", "--json"], env, runs=runs)
    b.compare(
        "sessions --json, empty state (no Gateway contact)",
        listing,
        None,
        "<= 150 ms median",
        absolute_max=0.150,
    )
    dry = b.repeat([*OURS, "sessions", "cleanup", "--dry-run", "--json"], env, runs=runs)
    enforce = b.repeat([*OURS, "sessions", "cleanup", "--enforce", "--json"], env, runs=runs)
    b.compare("sessions cleanup --dry-run --json, empty state (never delegated)", dry, None, "(reference)")
    b.compare(
        "sessions cleanup --enforce --json, empty state, nothing listening (delegation -> local fallback)",
        enforce,
        None,
        f"<= dry run + 30 ms (dry run median {median(dry) * 1000:.0f} ms)",
        absolute_max=median(dry) + 0.030,
    )


def _import_case(b: Bench, name: str, ratio: float, label: str) -> None:
    runs = []
    for i in range(b.runs):
        state = b.fresh_copy(name, f"import-{i}")
        runs.append(
            timed(
                [*OURS, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
                b.env_ours(state),
            )
        )
        shutil.rmtree(state)
    b.compare(
        label,
        runs,
        b.peer_import_time(name),
        f">= {ratio:g}x faster than the real import (issue 16; peer: one cached run)",
        ratio_needed=ratio,
    )
    if name == "big":
        rss = max(r.max_rss_mb for r in runs)
        print(
            f"  peak RSS {rss:.0f} MB (target < 200 MB); within 3x of the best pipeline (1.42 s): "
            f"{'OK' if median(runs) <= 4.26 else 'MISSED'}",
            file=sys.stderr,
        )


def case_import_big(b: Bench) -> None:
    _import_case(b, "big", 15, "doctor --session-sqlite import, big (2,000 sessions, 211 MB)")


def case_import_many(b: Bench) -> None:
    _import_case(b, "many", 20, "doctor --session-sqlite import, many (20,000 sessions, 76 MB)")


def case_import_100k(b: Bench) -> None:
    """Memory flat in the number of sessions (issue 16); no peer run (the real import takes minutes)."""
    runs = []
    for i in range(min(b.runs, 2)):
        state = b.fresh_copy("scale100k", f"import-{i}")
        runs.append(
            timed(
                [*OURS, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
                b.env_ours(state),
            )
        )
        shutil.rmtree(state)
    b.compare(
        "doctor --session-sqlite import, 100,000 sessions",
        runs,
        None,
        "memory flat in sessions (issue 16)",
        rss_max_mb=150,
    )


def case_sessions_sqlite_many(b: Bench) -> None:
    state = b.ours_imported("many")
    ours = b.repeat([*OURS, "sessions", "--json"], b.env_ours(state))
    peer = (
        b.repeat([str(PEER), "sessions", "--json"], b.env_peer(b.peer_root("many"))) if b.use_peer else None
    )
    b.compare(
        "sessions --json, 20k sessions, both imported",
        ours,
        peer,
        ">= 20x faster than the real one (issue 16)",
        ratio_needed=20,
    )


def _cleanup_case(b: Bench, dry_run: bool) -> None:
    if not dry_run:
        _cleanup_enforce_case(b, "many")
        return
    runs = b.runs
    state = b.ours_imported("many")
    ours = b.repeat(
        [*OURS, "sessions", "cleanup", "--dry-run", "--json"], b.env_ours(state, CLEANUP_CONFIG), runs=runs
    )
    peer = None
    if b.use_peer:
        root = b.peer_root("many")
        peer = b.repeat(
            [str(PEER), "sessions", "cleanup", "--dry-run", "--json"],
            b.env_peer(root, CLEANUP_CONFIG),
            runs=runs,
        )
    b.compare(
        "sessions cleanup --dry-run --json, 20k imported, maxEntries 5000",
        ours,
        peer,
        ">= 8x faster than the real one (4.1-4.6 s)",
        ratio_needed=8,
    )


CLEANUP_ENFORCE = {  # dataset -> (config, label, the peer's cached run)
    "many": (
        CLEANUP_CONFIG,
        "sessions cleanup --enforce --json, 20k imported, maxEntries 5000",
        "peer-cleanup-enforce.json",
    ),
    "big": (
        {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}},
        "sessions cleanup --enforce --json, big imported (2,000 sessions, 211 MB), maxEntries 500",
        "peer-cleanup-enforce-big.json",
    ),
}


def _cleanup_enforce_case(b: Bench, name: str) -> None:
    """Ours and the verified file floor (issue 30: <= 1.3x, same run), alternating, each on its own
    copy of our cached import, every copy kept until the case ends (`bench_floors.cleanup_runs`:
    same preparation for both); the peer once on a copy of its own import (cached)."""
    from bench_floors import cleanup_runs

    config, label, cache_name = CLEANUP_ENFORCE[name]
    ours, floors, _, removed = cleanup_runs(b, OURS, name, config, child=timed)
    floor = [Run(wall, 0.0, 0, cpu) for wall, cpu in floors]
    peer = None
    if b.use_peer:
        cached = b.data / cache_name
        if not cached.exists():
            root = b.peer_root(name)
            work = b.data / f"peer-{name}-cleanup"
            if work.exists():
                shutil.rmtree(work)
            shutil.copytree(root, work)
            db = work / "home/.openclaw/agents/main/agent/openclaw-agent.sqlite"
            print(f"  peer: cleanup --enforce on {name} (slow, once)…", file=sys.stderr)
            _settle()
            run = timed(
                [str(PEER), "sessions", "cleanup", "--enforce", "--json", "--store", str(db)],
                b.env_peer(work, config),
            )
            cached.write_text(
                json.dumps(
                    {
                        "seconds": run.seconds,
                        "rss": run.max_rss_mb,
                        "cpu": run.cpu_seconds,
                        "loadavg": os.getloadavg()[0],
                    }
                )
            )
            shutil.rmtree(work)
        data = json.loads(cached.read_text())
        peer = [Run(data["seconds"], data["rss"], 0, data.get("cpu"))]
    cpu_over = statistics.median(r.cpu_seconds or 0.0 for r in ours) / statistics.median(f[1] for f in floors)
    print(f"  ({removed} sessions leave per run; ours/floor cpu {cpu_over:.2f}x)", file=sys.stderr)
    b.compare(
        label,
        ours,
        peer,
        ">= 40x faster than the real one (issue 16; peer: one cached run); <= 1.3x the verified file floor",
        ratio_needed=40,
        floor=floor,
        floor_ratio_max=1.3,
        extra={"overFloorCpu": round(cpu_over, 2), "sessionsLeaving": removed},
    )


def case_cleanup_dry_run(b: Bench) -> None:
    _cleanup_case(b, True)


def case_cleanup_enforce(b: Bench) -> None:
    _cleanup_case(b, False)


def case_cleanup_enforce_big(b: Bench) -> None:
    _cleanup_enforce_case(b, "big")


# ---- listings at scale (issue 16) ---------------------------------------------------------------------
SCALE = (("scale2k", "2k"), ("many", "20k"), ("scale100k", "100k"))
SCALE_COMMANDS = {
    "sessions --json": ["sessions", "--json"],
    "sessions --json --limit all": ["sessions", "--json", "--limit", "all"],
    "status --json": ["status", "--json"],
    "sessions cleanup --dry-run --json": ["sessions", "cleanup", "--dry-run", "--json"],
}
# The floors of the two listings: the same interpreter opens the database and prints the rows it
# needs (the 100 newest along the updated_at index plus a count; or every row), nothing else.
_FLOOR_PAGE = """
import sqlite3, sys, orjson
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
rows = c.execute("SELECT session_key, entry_json FROM session_nodes ORDER BY updated_at DESC, session_key LIMIT 100")
out = [dict(orjson.loads(e), key=k) for k, e in rows]
total = c.execute("SELECT count(*) FROM session_nodes").fetchone()[0]
sys.stdout.buffer.write(orjson.dumps({"count": len(out), "totalCount": total, "sessions": out}, option=orjson.OPT_INDENT_2))
"""
_FLOOR_ALL = """
import sqlite3, sys, orjson
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
w = sys.stdout.buffer.write
w(b'{"sessions": [')
first = True
for k, e in c.execute("SELECT session_key, entry_json FROM session_nodes ORDER BY updated_at DESC, session_key"):
    w((b"" if first else b",") + orjson.dumps(dict(orjson.loads(e), key=k), option=orjson.OPT_INDENT_2))
    first = False
w(b"]}")
"""


def _db_of(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _older_schema(db: Path) -> bool:
    """A cached import made by an older build (its schema lacks indexes the listing uses: counting
    the archived rows of a schema-1 store scans it) is imported again, so the figures are those
    of the database this build writes."""
    import sqlite3

    from openclaw_cli.store.sqlite.schema import SCHEMA_VERSION, USER_VERSION_BASE

    if not db.exists():
        return False
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0] < USER_VERSION_BASE + SCHEMA_VERSION
    finally:
        conn.close()


def case_listing_scale(b: Bench) -> None:
    """`sessions --json`, `sessions --json --limit all`, `status --json` and `cleanup --dry-run
    --json` on our SQLite store of 2k / 20k / 100k sessions (and the two listings on the legacy
    store at 100k): listing flat in store size, `--limit all` streamed (<= 100 MB, <= 1.5 s)."""
    python = str(ROOT / ".venv" / "bin" / "python")
    table: dict[str, dict] = {}
    for label, argv in SCALE_COMMANDS.items():
        row: dict[str, dict] = {}
        for dataset, size in SCALE:
            state = b.ours_imported(dataset)
            runs = b.repeat([*OURS, *argv], b.env_ours(state, CLEANUP_CONFIG))
            floor = None
            if label == "sessions --json":
                floor = b.repeat([python, "-c", _FLOOR_PAGE, str(_db_of(state))], dict(os.environ))
            elif label == "sessions --json --limit all":
                floor = b.repeat([python, "-c", _FLOOR_ALL, str(_db_of(state))], dict(os.environ))
            target, checks = "(scaling table)", {}
            if label == "sessions --json" and size == "100k":
                base = row["20k"]["median"]
                target = f"<= 1.5x the 20k figure ({base:.3f} s)"
                checks = {"absolute_max": base * 1.5}
            elif label == "sessions --json --limit all" and size == "100k":
                target, checks = (
                    "<= 1.5 s, <= 100 MB RSS (streamed)",
                    {"absolute_max": 1.5, "rss_max_mb": 100},
                )
            b.compare(f"{label}, {size} sessions, SQLite", runs, None, target, floor=floor, **checks)
            row[size] = figures(runs)
        table[f"{label} (SQLite)"] = row
    legacy = b.legacy("scale100k")
    for label in ("sessions --json", "sessions --json --limit all"):
        runs = b.repeat([*OURS, *SCALE_COMMANDS[label]], b.env_ours(legacy))
        b.compare(
            f"{label}, 100k sessions, legacy store",
            runs,
            None,
            "(reference: the legacy store is one JSON file)",
        )
        table[f"{label} (legacy)"] = {"100k": figures(runs)}
    _print_table("scaling table (median s / peak RSS MB)", table)
    b.record_figures(
        "listing scaling table (2k / 20k / 100k sessions)", table, "listing flat in store size", {}
    )


def _print_table(title: str, table: dict[str, dict]) -> None:
    """command -> size -> figures, as rows of `median wall s / CPU s / peak RSS MB` cells (CPU =
    user + system: on a shared machine it compares, the wall does not), with the 100k/20k ratio of
    the CPU times."""
    print(f"\n{title}", file=sys.stderr)
    sizes = [size for _, size in SCALE]
    print(
        f"  {'':<36}" + "".join(f"{size + ' wall/cpu/RSS':>26}" for size in sizes) + f"{'100k/20k cpu':>14}",
        file=sys.stderr,
    )

    def cell(f: dict) -> str:
        cpu = f"{f['cpuMedian']:.2f}" if f.get("cpuMedian") is not None else "-"
        return f"{f['median']:>8.2f} s/{cpu:>6} s/{f['rssMB']:>4.0f} MB"

    def cpu_of(f: dict) -> float:
        return f.get("cpuMedian") or f["median"]

    for label, row in table.items():
        cells = "".join(f"{cell(row[size]):>26}" if size in row else f"{'-':>26}" for size in sizes)
        ratio = (
            f"{cpu_of(row['100k']) / cpu_of(row['20k']):>13.2f}x" if "20k" in row and "100k" in row else ""
        )
        print(f"  {label:<36}{cells}{ratio}", file=sys.stderr)


# `scripts/bench --scale` (issue 30): every command's time and peak RSS at 2k / 20k / 100k sessions,
# so the curve is seen at once. Reads run on our SQLite import of each dataset (the store the
# Gateway and every command use after `doctor --session-sqlite import`); the import on a fresh
# legacy copy each run. Memory targets (issue 30): status and cleanup --dry-run <= 100 MB at
# 100k, the import <= 150 MB, `--limit all` streamed (<= 100 MB).
SCALE_TABLE_COMMANDS = {
    "status --json": ["status", "--json"],
    "sessions --json": ["sessions", "--json"],
    "sessions --json --limit all": ["sessions", "--json", "--limit", "all"],
    "sessions cleanup --dry-run --json": ["sessions", "cleanup", "--dry-run", "--json"],
}
SCALE_RSS_MAX_MB = {
    "status --json": 100,
    "sessions cleanup --dry-run --json": 100,
    "sessions --json --limit all": 100,
    "doctor --session-sqlite import": 150,
}


# Bounds of the scale table (a loaded 2-core machine): one read command may take this long, one
# import this long (100k: ~400 s of wall at load 20), before the bench stops and names it.
SCALE_READ_TIMEOUT_S = 600
SCALE_IMPORT_TIMEOUT_S = 1800
SCALE_SIZES: list[str] = [size for _, size in SCALE]  # `--sizes` narrows it (e.g. 2k 20k)


def case_scale_table(b: Bench) -> None:
    table: dict[str, dict] = {
        label: {} for label in [*SCALE_TABLE_COMMANDS, "doctor --session-sqlite import"]
    }
    checks: dict[str, bool] = {}
    for dataset, size in SCALE:
        if size not in SCALE_SIZES:
            continue
        for label, argv in SCALE_TABLE_COMMANDS.items():
            state = b.ours_imported(dataset)
            runs = b.repeat([*OURS, *argv], b.env_ours(state, CLEANUP_CONFIG), timeout=SCALE_READ_TIMEOUT_S)
            limit = SCALE_RSS_MAX_MB.get(label) if size == "100k" else None
            b.compare(f"{label}, {size} sessions, SQLite", runs, None, "(scale table)", rss_max_mb=limit)
            table[label][size] = figures(runs)
            if limit is not None:
                checks[f"{label} rss"] = max(r.max_rss_mb for r in runs) <= limit
        imports = []
        for i in range(b.runs):
            copy = b.fresh_copy(dataset, f"scale-import-{i}")
            _settle()
            imports.append(
                timed(
                    [*OURS, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
                    b.env_ours(copy),
                    timeout=SCALE_IMPORT_TIMEOUT_S,
                )
            )
            shutil.rmtree(copy)
        label = "doctor --session-sqlite import"
        limit = SCALE_RSS_MAX_MB[label] if size == "100k" else None
        b.compare(f"{label}, {size} sessions", imports, None, "(scale table)", rss_max_mb=limit)
        table[label][size] = figures(imports)
        if limit is not None:
            checks[f"{label} rss"] = max(r.max_rss_mb for r in imports) <= limit
    _print_table(f"scale table (median of {b.runs} s / peak RSS MB; load {os.getloadavg()[0]:.1f})", table)
    b.record_figures(
        "scale table (2k / 20k / 100k sessions)",
        table,
        "status, cleanup --dry-run, --limit all <= 100 MB and import <= 150 MB peak RSS at 100k",
        checks,
    )


def _settle() -> None:
    """Let the writeback of a freshly copied dataset finish before a timed run: on this machine
    (a VM on shared disks) file creation right after copying ~0.5 GB is 5x slower for a while,
    which would measure the copy, not the command (`bench_floors.settle`)."""
    __import__("bench_floors").settle()


def case_cleanup_enforce_schema23(b: Bench) -> None:
    """Issue 12: our cleanup --enforce writing a real OpenClaw schema-23 database (imported by the
    real OpenClaw) within 2x of the same cleanup on our own schema (both: many, maxEntries 5000).
    The three variants run interleaved, one of each per round, so a machine shared with other
    work loads them alike; CPU seconds are reported beside the wall-clock medians."""
    if not b.use_peer:
        print(
            "\ncleanup --enforce on a schema-23 database: needs the real OpenClaw's import (skipped)",
            file=sys.stderr,
        )
        return
    runs = max(1, min(b.runs, 5))
    source = b.peer_root("many") / "home" / ".openclaw"
    work = b.data / "schema23-cleanup"
    variants: dict[str, list[Run]] = {"backup": [], "no-backup": [], "ours": []}
    for i in range(runs):
        for variant, extra in (("backup", []), ("no-backup", ["--no-backup"])):
            if work.exists():
                shutil.rmtree(work)
            shutil.copytree(source, work)
            env = b.env_ours(work, CLEANUP_CONFIG)
            db = work / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
            _settle()
            variants[variant].append(
                timed([*OURS, "sessions", "cleanup", "--enforce", "--json", "--store", str(db), *extra], env)
            )
        shutil.rmtree(work)
        state = b.fresh_copy("many", f"cleanup-ours-{i}")
        env = b.env_ours(state, CLEANUP_CONFIG)
        subprocess.run(
            [*OURS, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        _settle()
        variants["ours"].append(timed([*OURS, "sessions", "cleanup", "--enforce", "--json"], env))
        shutil.rmtree(state)
    ratio = median(variants["backup"]) / median(variants["ours"])

    def cpu_median(name: str) -> float:
        return statistics.median(r.cpu_seconds or 0.0 for r in variants[name])

    cpu = cpu_median("backup") / max(cpu_median("ours"), 1e-9)

    def cpu_of(name: str) -> str:
        return f"CPU median {cpu_median(name):.2f} s"

    line = {
        "case": "sessions cleanup --enforce, 20k sessions: schema-23 DB (peer-imported) vs our schema",
        "ours": summary(variants["backup"]),
        "oursNoBackup": summary(variants["no-backup"]),
        "ourSchema": summary(variants["ours"]),
        "ratio": f"{ratio:.2f}x",
        "cpuRatio": f"{cpu:.2f}x",
        "target": "<= 2x of our own schema",
        "verdict": "OK" if ratio <= 2 else "MISSED",
    }
    b.results.append(line)
    print(
        f"\n{line['case']}\n  schema 23 (backup)   : {line['ours']}; {cpu_of('backup')}\n"
        f"  schema 23 --no-backup: {line['oursNoBackup']}; {cpu_of('no-backup')}\n"
        f"  our schema           : {line['ourSchema']}; {cpu_of('ours')}\n"
        f"  ratio {line['ratio']} (CPU {line['cpuRatio']}; target: {line['target']}) {line['verdict']}",
        file=sys.stderr,
    )


# ---- openclaw compact (issue 5) -------------------------------------------------------------------
COMPACT_KEY = "agent:main:main"
COMPACT_MB = 50
COMPACT_RSS_MB = 120  # issue 15: peak RSS of compacting the 50 MB session, either store kind


def _compiled_env(env: dict[str, str]) -> dict[str, str]:
    """As users run it: bytecode compiled and written (the sandbox sets PYTHONDONTWRITEBYTECODE=1)."""
    if not getattr(_compiled_env, "done", False):
        subprocess.run(
            [str(ROOT / ".venv" / "bin" / "python"), "-m", "compileall", "-q", str(ROOT / "openclaw_cli")],
            check=True,
        )
        _compiled_env.done = True  # type: ignore[attr-defined]
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


_COMPACT_GEN = """
import json, sys
from pathlib import Path
from tests.session_generator import generate_session
dest, size, usage, key, now = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "usage", sys.argv[4], int(sys.argv[5])
session = generate_session(7, target_bytes=size, with_usage=usage)
sessions = dest / "agents" / "main" / "sessions"
sessions.mkdir(parents=True)
sid = session.header["id"]
(sessions / f"{sid}.jsonl").write_text(session.jsonl())
row = {"sessionId": sid, "updatedAt": now, "chatType": "direct", "modelProvider": "openai", "model": "gpt-5.4",
       "contextTokens": 200000, "compactionCount": 0, "sessionFile": f"{sid}.jsonl"}
(sessions / "sessions.json").write_text(json.dumps({key: row}, indent=2))
"""


def compact_dataset(b: Bench, usage: bool, kind: str) -> Path:
    """One 50 MB session (tests.session_generator, seed 7; with or without provider usage
    in its assistant messages) in a legacy state, or that state imported into our SQLite store."""
    name = f"compact{COMPACT_MB}-{'usage' if usage else 'nousage'}"
    legacy = b.data / f"{name}-legacy"
    if not (legacy / ".ready").exists():
        print(f"  generating {name} (a {COMPACT_MB} MB session)…", file=sys.stderr)
        if legacy.exists():
            shutil.rmtree(legacy)
        # in a child process: the bench's own memory would show up in the measured commands' peak RSS
        subprocess.run(
            [
                str(ROOT / ".venv" / "bin" / "python"),
                "-c",
                _COMPACT_GEN,
                str(legacy),
                str(COMPACT_MB * 1_000_000),
                "usage" if usage else "none",
                COMPACT_KEY,
                NOW_MS,
            ],
            check=True,
            cwd=ROOT,
        )  # the generator is tests/session_generator.py
        (legacy / ".ready").write_text("ok")
    if kind == "legacy":
        return legacy
    imported = b.data / f"{name}-ours-imported"
    if not (imported / ".imported").exists():
        if imported.exists():
            shutil.rmtree(imported)
        shutil.copytree(legacy, imported)
        subprocess.run(
            [*OURS, "doctor", "--session-sqlite", "import", "--json"],
            env=b.env_ours(imported),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (imported / ".imported").write_text("ok")
    return imported


def _compact_case(b: Bench, tokenizer: str, limit: float) -> None:
    for kind in ("legacy", "sqlite"):
        for usage in (True, False):
            source = compact_dataset(b, usage, kind)
            work = b.data / f"compact-work-{kind}"

            def fresh(source: Path = source, work: Path = work) -> None:  # every run compacts a pristine copy
                if work.exists():
                    shutil.rmtree(work)
                shutil.copytree(source, work)

            fresh()
            env = _compiled_env(b.env_ours(work))
            runs = b.repeat(
                [*OURS, "compact", COMPACT_KEY, "--tokenizer", tokenizer, "--json"], env, setup=fresh
            )
            shutil.rmtree(work)
            usage_label = "provider usage in the transcript" if usage else "no provider usage anywhere"
            b.compare(
                f"compact --tokenizer {tokenizer}, one {COMPACT_MB} MB session, {kind} store, {usage_label}",
                runs,
                None,
                f"< {limit:g} s median",
                absolute_max=limit,
                rss_max_mb=COMPACT_RSS_MB,
            )


def case_compact_50mb_exact(b: Bench) -> None:
    _compact_case(b, "exact", 5.0)


def case_compact_50mb_estimate(b: Bench) -> None:
    _compact_case(b, "estimate", 1.0)


def case_compact_over_threshold_big(b: Bench) -> None:
    state = b.ours_imported("big")
    env = _compiled_env(b.env_ours(state))
    ours = b.repeat([*OURS, "compact", "--over-threshold", "--dry-run", "--json"], env)
    b.compare(
        "compact --over-threshold --dry-run --json, big imported (2,000 sessions, 211 MB)",
        ours,
        None,
        "< 5 s median",
        absolute_max=5.0,
    )


def case_export_50mb(b: Bench) -> None:
    """`sessions export` of the 50 MB session (active branch), every format, both store kinds:
    streamed, so seconds and a peak RSS independent of the transcript's size."""
    for kind in ("legacy", "sqlite"):
        state = compact_dataset(b, True, kind)
        env = _compiled_env(b.env_ours(state))
        for fmt in ("jsonl", "md", "html"):
            out = b.data / f"export.{fmt}"
            runs = b.repeat(
                [*OURS, "sessions", "export", COMPACT_KEY, "--format", fmt, "--output", str(out)], env
            )
            size = out.stat().st_size / 1e6 if out.exists() else 0
            out.unlink(missing_ok=True)
            b.compare(
                f"sessions export --format {fmt}, one {COMPACT_MB} MB session, {kind} store ({size:.0f} MB out)",
                runs,
                None,
                "< 5 s median",
                absolute_max=5.0,
            )


# ---- sessions search (issue 26) ---------------------------------------------------------------------
SEARCH_RARE = '"quokka lighthouse"'  # planted in 20 sessions (and in archived ones after the cleanup)
SEARCH_COMMON = "gateway"  # in about half of big's 53,548 indexed lines: every candidate is ranked
# The library figure: new questions per query, one process. The target is judged on the median of
# all SEARCH_LIBRARY_SAMPLES; the median of the first SEARCH_LIBRARY_FIRST (the figure of stops <= 40,
# at the mercy of two slow calls) is printed beside it, as are p90, max and the CPU time per call
# (docs/decisions.md, issue 26, search41a)
SEARCH_LIBRARY_SAMPLES = 25
SEARCH_LIBRARY_FIRST = 5
_SEARCH_WARM = """
import json, sys, time
from openclaw_cli.search import search
from openclaw_cli.search.engine import forget_answers
state, queries, runs = sys.argv[1], sys.argv[2:-1], int(sys.argv[-1])
out = {}
for query in queries:
    list(search(state, query))
    samples, cpu, repeated = [], [], []
    for _ in range(runs):
        forget_answers()  # a question not asked before: answered from the index
        start, start_cpu = time.perf_counter(), time.process_time()
        hits = list(search(state, query))
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        start = time.perf_counter()  # the same question again: the page kept, once checked fresh
        list(search(state, query))
        repeated.append(time.perf_counter() - start)
    out[query] = {"samples": samples, "cpu": cpu, "repeated": repeated, "hits": len(hits)}
print(json.dumps(out))
"""


def _library_figures(found: dict[str, Any], grep_seconds: float, grep_cpu: float | None) -> dict[str, Any]:
    """One query's library figures: the median of every sample (judged) and of the first
    SEARCH_LIBRARY_FIRST, each against grep's wall median, with p90, max, the CPU median and grep's
    CPU median against it (shown: steadier than wall on a busy machine, not judged)."""
    samples = found["samples"]
    ordered = sorted(samples)
    median_all = statistics.median(samples)
    median_first = statistics.median(samples[:SEARCH_LIBRARY_FIRST])
    return {
        "samples": len(samples),
        "medianMs": round(median_all * 1000, 2),
        f"median{SEARCH_LIBRARY_FIRST}Ms": round(median_first * 1000, 2),
        "p90Ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000, 2),
        "maxMs": round(ordered[-1] * 1000, 2),
        "cpuMedianMs": round(statistics.median(found["cpu"]) * 1000, 2),
        "grepCpuOverLibraryCpu": (
            round(grep_cpu / statistics.median(found["cpu"]), 1)
            if grep_cpu and min(found["cpu"]) > 0
            else None
        ),
        "hits": found["hits"],
        "grepMs": round(grep_seconds * 1000, 1),
        "grepOverLibrary": round(grep_seconds / median_all, 1),
        f"grepOverLibrary{SEARCH_LIBRARY_FIRST}": round(grep_seconds / median_first, 1),
        # asked again unchanged: answered from the kept page (not what the target is judged on)
        "repeatedMs": round(statistics.median(found["repeated"]) * 1000, 2),
    }


def _search_state(b: Bench) -> Path:
    """big (legacy) with a phrase planted in 20 sessions, after `sessions cleanup --enforce`
    (maxEntries 500): live transcripts plus ~1,500 `.deleted` archives (cached)."""
    dest = b.data / "big-search"
    if (dest / ".ready").exists():
        return dest
    dest = b.fresh_copy("big", "search")
    sdir = dest / "agents" / "main" / "sessions"
    for n, path in enumerate(sorted(sdir.glob("*.jsonl"))[::100]):
        with open(path, "ab") as fh:
            fh.write(
                json.dumps(
                    {
                        "type": "message",
                        "id": f"bench{n:03d}",
                        "timestamp": int(NOW_MS),
                        "message": {"role": "user", "content": "the quokka lighthouse plan"},
                    }
                ).encode()
                + b"\n"
            )
    config = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    subprocess.run(
        [*OURS, "sessions", "cleanup", "--enforce", "--json"],
        env=b.env_ours(dest, config),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (dest / "openclaw.json").unlink(missing_ok=True)
    (dest / ".ready").write_text("ok")
    return dest


def case_search_big(b: Bench) -> None:
    """Issue 26 on big + its archives: first index build >= 100 MB/s of transcript text, a warm search
    < 100 ms for the first page, an incremental update after 1,000 new lines < 300 ms, peak RSS
    < 150 MB, and >= 20x faster than `grep -r` over the same files on the warm path."""
    state = _search_state(b)
    cache = b.data / "search-cache"
    env = _compiled_env(b.env_ours(state))
    env["XDG_CACHE_HOME"] = str(cache)
    runs = max(1, min(b.runs, 3))
    first = b.repeat(
        [*OURS, "sessions", "search", SEARCH_RARE, "--json"],
        env,
        runs=runs,
        setup=lambda: shutil.rmtree(cache, ignore_errors=True),
    )
    probe = subprocess.run(
        [*OURS, "sessions", "search", SEARCH_RARE, "--json", "--verbose", "--reindex"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    total = sum(stats["bytesRead"] for stats in json.loads(probe.stdout)["index"])
    rate = total / 1e6 / median(first)
    cpu_rate = total / 1e6 / statistics.median(r.cpu_seconds for r in first if r.cpu_seconds is not None)
    b.compare(
        f"sessions search, first index build, big + archives ({total / 1e6:.0f} MB of transcripts): "
        f"{rate:.0f} MB/s wall, {cpu_rate:.0f} MB/s cpu",
        first,
        None,
        ">= 100 MB/s of transcript text",
        absolute_max=total / 1e6 / 100,
        rss_max_mb=150,
    )
    # The ">= 20x faster than grep" target is judged on the warm library call (the index's own
    # work) for a question not asked before (a repeated one is answered from the page kept, shown
    # beside it as `repeatedMs`), not the whole command: grep over these files takes a few ms warm, less than the Python
    # interpreter's start-up alone (docs/decisions.md, issue 26, storage27). The whole command keeps
    # its < 100 ms target and shows grep beside it for reference.
    files = [str(state / "agents")]
    greps: dict[str, float] = {}
    grep_cpus: dict[str, float | None] = {}
    for label, query, word in (
        ("rare phrase", SEARCH_RARE, "quokka"),
        ("common word", SEARCH_COMMON, "gateway"),
    ):
        warm = b.repeat([*OURS, "sessions", "search", query, "--json"], env, runs=max(b.runs, 5))
        # grep's median is the ratio's other half: as many runs as the whole command's
        grep = b.repeat(["grep", "-r", "-l", "-F", word, *files], env, runs=max(b.runs, 5))
        greps[query] = median(grep)
        cpus = [r.cpu_seconds for r in grep if r.cpu_seconds is not None]
        grep_cpus[query] = statistics.median(cpus) if cpus else None
        b.compare(
            f"sessions search {query} --json (warm index, whole command), {label}",
            warm,
            None,
            "< 100 ms first page (grep -r -l -F over the same files shown for reference)",
            absolute_max=0.1,
            floor=grep,
            rss_max_mb=150,
            extra={"grepOverOurs": round(median(grep) / median(warm), 1)},
        )
    inproc = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "python"),
            "-c",
            _SEARCH_WARM,
            str(state),
            SEARCH_RARE,
            SEARCH_COMMON,
            str(max(b.runs, SEARCH_LIBRARY_SAMPLES)),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures_in = {
        q: _library_figures(v, greps[q], grep_cpus[q]) for q, v in json.loads(inproc.stdout).items()
    }
    checks = {f"{q}:100ms": v["medianMs"] < 100 for q, v in figures_in.items()}
    checks.update({f"{q}:20x-grep": v["grepOverLibrary"] >= 20 for q, v in figures_in.items()})
    b.record_figures(
        "sessions search, warm, in-process (library search(), first page) vs grep -r -l -F",
        figures_in,
        "< 100 ms; >= 20x faster than grep -r -l -F over the same files (warm page cache), judged on the"
        f" median of every sample (the first {SEARCH_LIBRARY_FIRST}'s median shown beside it)",
        checks,
    )
    live = sorted((state / "agents" / "main" / "sessions").glob("*.jsonl"))[:10]
    counter = [0]

    def append_1000() -> None:
        counter[0] += 1
        for n, path in enumerate(live):
            with open(path, "ab") as fh:
                for i in range(100):
                    fh.write(
                        json.dumps(
                            {
                                "type": "message",
                                "id": f"inc{counter[0]}-{n}-{i}",
                                "timestamp": int(NOW_MS),
                                "message": {"role": "assistant", "content": f"new line {i} wombat"},
                            }
                        ).encode()
                        + b"\n"
                    )

    incremental = b.repeat(
        [*OURS, "sessions", "search", "wombat", "--json"], env, runs=max(b.runs, 3), setup=append_1000
    )
    b.compare(
        "sessions search after 1,000 new lines (incremental update + search, whole command)",
        incremental,
        None,
        "< 300 ms",
        absolute_max=0.3,
        rss_max_mb=150,
    )


# ---- the Gateway (issues 10, 16) ------------------------------------------------------------------
GATEWAY_TOKEN = "bench-token"
LOAD_DATASET = ["2000", "0", "2028"]
MIXED_DRY_RUNS_MAX = 200  # the mixed case's cleanup dry runs: one after another while the clients run


class _GatewayRun:
    """`openclaw gateway run` on `state` (port 0, token auth) in its own process group."""

    def __init__(self, b: Bench, state: Path) -> None:
        import signal

        self.signal = signal
        self.proc = subprocess.Popen(
            [
                *OURS,
                "gateway",
                "run",
                "--port",
                "0",
                "--auth",
                "token",
                "--token",
                GATEWAY_TOKEN,
                "--allow-unconfigured",
            ],
            env=_compiled_env(b.env_ours(state)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].split()[0]
            if "[gateway] ready" in line:
                break
        if not self.url:
            raise SystemExit(f"bench: the Gateway did not start ({self.proc.wait()})")
        self.log: list[str] = []
        import threading

        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    def stop(self) -> None:
        os.killpg(self.proc.pid, self.signal.SIGTERM)
        self.proc.wait(timeout=120)


def _load_module():
    sys.path.insert(0, str(ROOT))
    from tests import gateway_load

    return gateway_load


def _served_methods(url: str) -> list[str]:
    import asyncio

    from websockets.asyncio.client import connect

    async def hello() -> list[str]:
        async with connect(url, proxy=None, max_size=None) as ws:
            await ws.recv()
            await ws.send(json.dumps(_load_module().connect_frame(GATEWAY_TOKEN)))
            return json.loads(await ws.recv())["payload"]["features"]["methods"]

    return asyncio.run(hello())


def _gateway_line(b: Bench, name: str, report, target: str, checks: dict[str, bool]) -> None:
    figures = report.summary()
    figures.update(getattr(report, "cpu", {}))
    b.record_figures(name, figures, target, checks)


def _group_cpu_s(pgid: int) -> float:
    """User+sys CPU seconds of every live process in the process group `pgid` (the Gateway and
    its reader child), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _own_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _with_cpu(gw: _GatewayRun, run: Callable[[], Any]) -> Any:
    """`run()`'s LoadReport with the CPU it cost: the Gateway's (its process group) and this bench
    process's own (the clients), per request, and the load average (the clients share the 2
    cores: when their CPU per request is near the Gateway's, they are a part of the latency)."""
    server, client = _group_cpu_s(gw.proc.pid), _own_cpu_s()
    report = run()
    server, client = _group_cpu_s(gw.proc.pid) - server, _own_cpu_s() - client
    client += getattr(report, "clients_cpu_s", 0.0)  # clients in processes of their own
    n = max(1, report.requests)
    report.cpu = {
        "gatewayCpuMsPerRequest": round(server * 1000 / n, 3),
        "benchClientCpuMsPerRequest": round(client * 1000 / n, 3),
        "loadAverage": os.getloadavg()[0],
    }
    return report


def _median_run(runs: list, method: str):
    """The median run by `method`'s p99."""
    return sorted(runs, key=lambda r: r.percentile(method, 0.99) or 0)[len(runs) // 2]


def case_gateway_latency(b: Bench) -> None:
    """sessions.list {limit:50} alone, sessions.patch alone, and issue 30's mix (list, patch,
    describe from 20 clients while `sessions.cleanup {dryRun: true}` runs again and again on its
    own connection) on the 20,000-session store: p50/p99 per method and requests per second (the
    median run by p99 of `--runs`).

    What a row measures (stop 41): the latencies of 4 measured clients among the 20, each in a
    process of its own (`bench_clients.py`), as an operator's CLI or app is — its own send to its
    own receipt of the answer, the events it is sent read on the way — while the other 16 make the
    same kind of requests from one load process until the measured are done (their latencies
    printed as `load <method>`, not judged). All 20 connect first and start together. The measured
    make as many requests as the 20 together did before (1,000 patches, 2,000 lists, ~600 mix
    patches), so the p99 is still the 10th / 20th / 6th worst. After each judged patch and mix run
    the old measurement runs too (20 clients in this one process, stops 35-40's way: one
    interpreter's pauses and its serial handling of a group commit's answers in every client's
    figure), printed as a reference, not judged."""
    import asyncio

    load = _load_module()
    state = b.data / "many-gateway"
    if state.exists():
        shutil.rmtree(state)
    shutil.copytree(b.ours_imported("many"), state)
    gw = _GatewayRun(b, state)
    runs = range(max(1, b.runs))
    try:
        from openclaw_cli.keys import is_pinnable
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
            keys = [k for k, e in store.list_entries(limit=2000)[0] if is_pinnable(k, e)]
        asyncio.run(
            _only(load, gw.url, "sessions.list", {"limit": 50}, 20, 10)
        )  # warm-up (page cache, pools)
        list_runs = [
            _with_cpu(gw, lambda: _only_measured(gw.url, "sessions.list", {"limit": 50}, 20, 500))
            for _ in runs
        ]
        best = _median_run(list_runs, "sessions.list")
        p99 = best.percentile("sessions.list", 0.99) or 0
        _gateway_line(
            b,
            "Gateway sessions.list {limit:50}, 4 measured clients x 500 among 20, 20k sessions",
            best,
            "p99 < 50 ms (issue 16)",
            {"p99": p99 < 0.050 and not best.failures},
        )
        if "sessions.patch" not in _served_methods(gw.url):
            print("\n  sessions.patch is not served yet (issue 11): no patch latency", file=sys.stderr)
            return
        patch_runs, shared_runs = [], []
        for run in runs:
            patch_runs.append(_with_cpu(gw, lambda run=run: _patches_measured(gw.url, keys, 20, 250, run)))
            shared_runs.append(
                _with_cpu(gw, lambda run=run: asyncio.run(_patches(load, gw.url, keys, 20, 50, 100 + run)))
            )
        best = _median_run(patch_runs, "sessions.patch")
        p99 = best.percentile("sessions.patch", 0.99) or 0
        _gateway_line(
            b,
            "Gateway sessions.patch (label / pin), 4 measured clients x 250 among 20, 20k sessions",
            best,
            "p99 < 30 ms (issue 16)",
            {"p99": p99 < 0.030 and not best.failures},
        )
        _gateway_line(
            b,
            "  reference: sessions.patch, 20 clients x 50 in the bench's one process (stops 35-40)",
            _median_run(shared_runs, "sessions.patch"),
            "not judged",
            {},
        )
        # issue 30's mix: list, patch and describe from 20 clients while a cleanup dry run
        # (a long read) runs again and again on its own connection
        mixed_runs, shared_runs = [], []
        for run in runs:
            mixed_runs.append(_with_cpu(gw, lambda run=run: _mix_measured(gw.url, keys, 20, 500, 7 + run)))
            shared_runs.append(
                _with_cpu(
                    gw,
                    lambda run=run: asyncio.run(
                        load.run_load(
                            gw.url,
                            GATEWAY_TOKEN,
                            clients=20,
                            requests=100,
                            keys=keys,
                            patch=True,
                            cleanup=None,
                            compact=None,
                            preview=False,
                            dry_runs=MIXED_DRY_RUNS_MAX,
                            seed=107 + run,
                        )
                    ),
                )
            )
        report = _median_run(mixed_runs, "sessions.patch")
        p99 = report.percentile("sessions.patch", 0.99) or 0
        overlapped = len(report.latencies.get("sessions.cleanup dryRun", []))
        _gateway_line(
            b,
            "Gateway mixed list/patch/describe + cleanup dry runs, 4 measured clients x 500 among 20, "
            "20k sessions",
            report,
            "patch p99 < 50 ms (issue 30)",
            {"patch p99": p99 < 0.050 and not report.failures and overlapped > 0},
        )
        _gateway_line(
            b,
            "  reference: the mix, 20 clients x 100 in the bench's one process (stops 35-40)",
            _median_run(shared_runs, "sessions.patch"),
            "not judged",
            {},
        )
    finally:
        gw.stop()
        shutil.rmtree(state)


def case_gateway_sort_orders(b: Bench) -> None:
    """sessions.list {limit:50} (first page and offset 10,000) in each sortBy order through the
    operations layer (the Gateway's handler without the socket or its page cache) on the
    20,000-session store, SQLite and legacy: median ms of 15 calls. The default order walks the
    updated_at index; lastInteractionAt and activity sort the whole store (< 100 ms on SQLite)."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    for label, state in (("SQLite", b.ours_imported("many")), ("legacy", b.legacy("many"))):
        paths = resolve_paths(
            {
                "HOME": str(state.parent),
                "OPENCLAW_STATE_DIR": str(state),
                "OPENCLAW_CONFIG_PATH": str(state / "no-config.json"),
            }
        )
        ctx = Context.load(paths)
        figures_ms: dict[str, float] = {}
        for sort_by in ("updatedAt", "lastInteractionAt", "activity"):
            for offset in (0, 10_000):
                params = {
                    "limit": 50,
                    "offset": offset,
                    **({} if sort_by == "updatedAt" else {"sortBy": sort_by}),
                }
                call(ctx, "sessions.list", params)  # warm (page cache, decoded store)
                samples = []
                for _ in range(15):
                    start = time.perf_counter()
                    page = call(ctx, "sessions.list", params)
                    samples.append(time.perf_counter() - start)
                assert page["count"] == 50, page["count"]
                figures_ms[f"{sort_by} offset {offset}"] = round(statistics.median(samples) * 1000, 2)
        worst = max(v for k, v in figures_ms.items() if not k.startswith("updatedAt"))
        checks = {"sorted orders": worst < 100} if label == "SQLite" else {}
        b.record_figures(
            f"sessions.list sortBy orders, 20k sessions, {label} (median ms, in process)",
            figures_ms,
            "< 100 ms for the sorted orders (SQLite)" if checks else "(reference)",
            checks,
        )


MEASURED_CLIENTS = 4  # of a case's 20 clients, the ones whose latencies are the row (a process each)
# the other 16 run until the measured are done: at most this many times as many requests each
LOAD_REQUESTS_MAX = 20


def _in_processes(url: str, specs: list[dict], background: dict | None = None):
    """A LoadReport of clients in processes of their own (`bench_clients.py`): one per spec, and
    `background` in one more, told to stop when the specs' clients are done."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_clients import run_clients

    return run_clients(url, GATEWAY_TOKEN, specs, background)


def _measured(url: str, specs: list[dict], requests: int, beside: tuple[dict, ...] = ()):
    """The first `MEASURED_CLIENTS` of `specs` (`requests` each) in a process of their own each,
    their latencies the report's; the rest in one load process (with `beside`, e.g. the dry runs),
    the same requests again and again until the measured are done, reported as `load <method>`."""
    load = [
        {**spec, "load": True, "requests": requests * LOAD_REQUESTS_MAX} for spec in specs[MEASURED_CLIENTS:]
    ]
    return _in_processes(
        url,
        [{**spec, "requests": requests} for spec in specs[:MEASURED_CLIENTS]],
        {"group": [*load, *beside]},
    )


def _only_measured(url: str, method: str, params: dict, clients: int, requests: int):
    return _measured(url, [{"role": "call", "method": method, "params": params}] * clients, requests)


def _patches_measured(url: str, keys: list[str], clients: int, requests: int, run: int):
    """`_patches`' clients (each alternating a new label and a pin on its own keys), measured."""
    specs = [
        {"role": "patch", "keys": keys[i::clients] or keys, "index": i, "run": run} for i in range(clients)
    ]
    return _measured(url, specs, requests)


def _mix_measured(url: str, keys: list[str], clients: int, requests: int, seed: int):
    """`gateway_load.run_load`'s mix (list, patch, describe; no preview: each client the sequence
    it gives that client), measured, the cleanup dry runs beside in the load process."""
    specs = [
        {"role": "mix", "index": i, "keys": keys, "own": keys[i::clients], "seed": seed}
        for i in range(clients)
    ]
    return _measured(url, specs, requests, ({"role": "dry", "requests": MIXED_DRY_RUNS_MAX},))


async def _only(load, url: str, method: str, params: dict, clients: int, requests: int):
    import asyncio

    report = load.LoadReport()

    async def one() -> None:
        conn = await load._open(url, GATEWAY_TOKEN)
        try:
            for _ in range(requests):
                await load._timed(conn, report, method, params, method)
        finally:
            await conn.ws.close()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(clients)))
    report.seconds = time.perf_counter() - start
    return report


async def _patches(load, url: str, keys: list[str], clients: int, requests: int, run: int):
    """Only sessions.patch: each client alternates a new label and a pin toggle on its own keys."""
    import asyncio

    from bench_clients import patch_params

    report = load.LoadReport()

    async def one(index: int) -> None:
        own = keys[index::clients] or keys
        conn = await load._open(url, GATEWAY_TOKEN)
        try:
            for n in range(requests):
                params = patch_params(own[n % len(own)], run, index, n)
                await load._timed(conn, report, "sessions.patch", params, "sessions.patch")
        finally:
            await conn.ws.close()

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(clients)))
    report.seconds = time.perf_counter() - start
    return report


def _cleanup_plan_keys(url: str, params: dict) -> set[str]:
    """The keys a `sessions.cleanup` with `params` would touch (archive, prune, cap, evict, ...),
    from its dry run's planned actions (`includeActions`)."""
    import asyncio

    load = _load_module()

    async def plan() -> dict:
        conn = await load._open(url, GATEWAY_TOKEN)
        try:
            return await conn.call("sessions.cleanup", {**params, "dryRun": True, "includeActions": True})
        finally:
            await conn.ws.close()

    res = asyncio.run(plan())
    if not res.get("ok"):
        raise SystemExit(f"bench: the cleanup's dry run failed: {res.get('error')}")
    payload = res["payload"]
    stores = payload["stores"] if isinstance(payload.get("stores"), list) else [payload]
    return {action["key"] for store in stores for action in store.get("plannedActions") or []}


def case_gateway_load(b: Bench) -> None:
    """50 clients x 200 mixed requests plus one cleanup and one compact, 2,000-session store: no
    failure, no lost update, no `database is locked`."""
    import asyncio

    load = _load_module()
    DATASETS.setdefault("load2k", LOAD_DATASET)
    state = b.fresh_copy("load2k", "gateway-load")
    env = b.env_ours(state, CLEANUP_CONFIG)
    subprocess.run(
        [*OURS, "doctor", "--session-sqlite", "import", "--json"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    from openclaw_cli.store.sqlite.store import SqliteStore

    db = state / "agents/main/agent/openclaw-agent.sqlite"
    from openclaw_cli.keys import is_pinnable

    with SqliteStore(db, "main", read_only=True) as store:
        rows = store.list_entries()[0]
    keys = [k for k, _ in rows]
    gw = _GatewayRun(b, state)
    try:
        patch = "sessions.patch" in _served_methods(gw.url)
        # patch only rows the concurrent cleanup keeps: its own plan (a dry run of the same
        # cleanup, on this Gateway, before the run) names every row it would touch; under
        # 2026.9.6's rules it archives dashboard rows in place, and pinning an archived row is
        # refused (rightly): a failure of the bench's choice, not of the Gateway
        touched = _cleanup_plan_keys(gw.url, {"enforce": True})
        own = [k for k, e in rows if is_pinnable(k, e) and k not in touched][:500]
        if len(own) < 100:
            raise SystemExit(f"bench: the cleanup's plan keeps only {len(own)} pinnable rows")
        report = asyncio.run(
            load.run_load(
                gw.url,
                GATEWAY_TOKEN,
                clients=50,
                requests=200,
                keys=keys,
                patch_keys=own,
                patch=patch,
                cleanup={"enforce": True},
                compact={"key": "agent:main:main", "maxLines": 3},
            )
        )
    finally:
        gw.stop()
    with SqliteStore(db, "main", read_only=True) as store:
        lost = load.lost_updates(report, store.load_entries())
    locked = sum("database is locked" in line for line in [*gw.log, *report.failures])
    _gateway_line(
        b,
        f"Gateway load: 50 clients x 200 mixed + cleanup + compact, 2,000 sessions"
        f"{'' if patch else ' (no patch: not served yet)'}",
        report,
        "no failure, no lost update, no database is locked",
        {"failures": not report.failures, "lost": not lost, "locked": locked == 0},
    )
    if report.failures or lost:
        print("  " + "\n  ".join([*report.failures[:5], *lost[:5]]), file=sys.stderr)
    shutil.rmtree(state)


CASES: dict[str, Callable[[Bench], None]] = {
    "help": case_help,
    "gateway-fallback": case_gateway_fallback,
    "sessions-legacy-many": case_sessions_legacy_many,
    "status-legacy-many": case_status_legacy_many,
    "import-big": case_import_big,
    "import-many": case_import_many,
    "import-100k": case_import_100k,
    "sessions-sqlite-many": case_sessions_sqlite_many,
    "cleanup-dry-run": case_cleanup_dry_run,
    "cleanup-enforce": case_cleanup_enforce,
    "cleanup-enforce-big": case_cleanup_enforce_big,
    "listing-scale": case_listing_scale,
    "scale-table": case_scale_table,
    "cleanup-enforce-schema23": case_cleanup_enforce_schema23,
    "compact-50mb-exact": case_compact_50mb_exact,
    "compact-50mb-estimate": case_compact_50mb_estimate,
    "compact-over-threshold-big": case_compact_over_threshold_big,
    "export-50mb": case_export_50mb,
    "search-big": case_search_big,
    "gateway-latency": case_gateway_latency,
    "gateway-sort-orders": case_gateway_sort_orders,
    "gateway-load": case_gateway_load,
}
CASES.update(
    __import__("bench_floors").cases(OURS)
)  # floors measured in the same run (scripts/bench_floors.py)
CASES.update(__import__("bench_schema24").cases(OURS))  # issue 23: schema 24 vs 23, same data, same run
CASES.update(__import__("bench_dashboard").cases(OURS))  # issue 28: the dashboard in headless Chromium
CASES.update(__import__("bench_storage").cases(OURS))  # issue 27: storage, restore, usage
CASES.update(__import__("bench_history").cases(OURS))  # issue 25: chat.history of a 50 MB transcript


def _meta(runs: int) -> dict:
    """Where and when the figures were taken (the machine is shared: the load average says how noisy)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "peer": PEER.exists(),
    }


def _comparable(line: dict) -> dict[str, float]:
    """name -> seconds (or ms for Gateway percentiles) of one result line, for --compare."""
    out: dict[str, float] = {}
    ours = line.get("ours")
    if isinstance(ours, dict) and "median" in ours:
        out["median s"] = ours["median"]
        out["peak RSS MB"] = ours["rssMB"]
    elif isinstance(ours, dict):
        for method, value in ours.items():
            if isinstance(value, dict) and "p99ms" in value:
                out[f"{method} p50 ms"] = value["p50ms"]
                out[f"{method} p99 ms"] = value["p99ms"]
            elif isinstance(value, dict) and "median" in value:  # a scaling table cell
                out[f"{method} s"] = value["median"]
                out[f"{method} RSS MB"] = value["rssMB"]
        if "reqPerSec" in ours and ours["reqPerSec"]:
            out["req/s"] = ours["reqPerSec"]
    return out


def compare_files(a_path: Path, b_path: Path) -> None:
    """Print every figure of two `--json` files side by side (B / A ratios)."""

    def load(path: Path) -> tuple[dict, dict[str, dict]]:
        doc = json.loads(path.read_text())
        lines = doc["results"] if isinstance(doc, dict) else doc
        return (doc.get("meta", {}) if isinstance(doc, dict) else {}), {line["case"]: line for line in lines}

    meta_a, a = load(a_path)
    meta_b, b = load(b_path)
    for label, meta in (("A", meta_a), ("B", meta_b)):
        print(
            f"{label}: {meta.get('commit', '?')[:12]} {meta.get('date', '')} load {meta.get('loadavg', '?')}"
        )
    for case in [*a, *(c for c in b if c not in a)]:
        fa, fb = _comparable(a.get(case, {})), _comparable(b.get(case, {}))
        if not fa and not fb:
            continue
        print(f"\n{case}")
        for name in [*fa, *(n for n in fb if n not in fa)]:
            va, vb = fa.get(name), fb.get(name)
            ratio = f"{vb / va:6.2f}x" if va and vb is not None else "      -"
            print(
                f"  {name:<28} {va if va is not None else '-':>10}  {vb if vb is not None else '-':>10}  B/A {ratio}"
            )


def main() -> None:
    __import__("bench_floors").stamp_removals()  # settle() waits out the minute after a removal
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=None, help="runs per command (default 5; --scale: 3)")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="only the 2k / 20k / 100k table: time and peak RSS of status, sessions --json, "
        "--limit all, cleanup --dry-run and the import (the case scale-table)",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        choices=[size for _, size in SCALE],
        help="the scale table's rows to run (default: all; e.g. --sizes 2k 20k where 100k cannot run)",
    )
    parser.add_argument("--only", nargs="*", choices=sorted(CASES))
    parser.add_argument("--data", type=Path, default=Path("/tmp/openclaw-bench"))
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write every figure as JSON to FILE (no FILE: on stdout)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("A.json", "B.json"),
        help="print the figures of two --json files side by side, then exit",
    )
    parser.add_argument(
        "--ours",
        metavar="OPENCLAW",
        help="the openclaw executable to measure (default: this "
        "checkout's .venv/bin/openclaw), e.g. another worktree's, to compare two commits",
    )
    args = parser.parse_args()
    if args.scale:
        args.only = [*(args.only or []), "scale-table"]
    if args.sizes:
        SCALE_SIZES[:] = args.sizes
    if args.runs is None:
        args.runs = 3 if args.scale else 5
    if args.ours:
        OURS[:] = [str(Path(args.ours).absolute())]
    if args.compare:
        compare_files(*args.compare)
        return
    if not GEN.exists():
        sys.exit(f"bench: generator not found at {GEN}")
    args.data.mkdir(parents=True, exist_ok=True)
    bench = Bench(args.data, args.runs, not args.no_peer)
    if args.no_peer:
        print("(--no-peer: printing our figures and the floors only)", file=sys.stderr)
    elif not bench.use_peer:
        print(
            "(real OpenClaw not installed at /tmp/peer: printing our figures only; "
            "install it with ../shared/tools/peer-install.sh)",
            file=sys.stderr,
        )
    meta = _meta(args.runs)
    print(f"(load average {meta['loadavg']} on {meta['cpus']} CPUs)", file=sys.stderr)
    try:
        for name in args.only or CASES:
            CASES[name](bench)
    finally:  # what was measured is kept even when a later case fails
        if args.json:
            meta["loadavgAfter"] = [round(x, 2) for x in os.getloadavg()]
            text = json.dumps({"meta": meta, "results": bench.results}, indent=2)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text + "\n")
                print(f"\nfigures written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
