"""Fault injection and soak (issue 13): every multi-step operation is run as a real subprocess on a
real state and interrupted — SIGKILL at its numbered crash points and at random instants, SIGINT /
SIGTERM at crash points (stop at the next safe point, exit 130) — then recovered the way an
operator would (re-run the command; for the migration sometimes `recover` first). After each
recovery the state is checked:

- no transcript line lost and none duplicated: the original lines are accounted for exactly once
  across the SQLite store, the live files and the verified archives (each operation says which
  copies it makes on purpose: a compaction archive, a successor transcript);
- `PRAGMA integrity_check` is clean, no temp file, lock, unpublished build or SQLite journal is left;
- every command still reads the agent (`sessions --json`, `status --json`).

Gateway-served writes (`gateway-*`): the command is delegated to an `openclaw gateway run` process
and the kills hit the Gateway; the re-run goes through a fresh Gateway or runs locally.

`tests/test_soak.py` runs the short profile inside the suite; `scripts/soak` runs the profiles
(`--full`: at least 1,000 kills) and prints the figures.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT.parent / "shared" / "tools" / "gen_legacy_store.py"
NOW_MS = "1796000000000"
SESSIONS = Path("agents") / "main" / "sessions"
DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
IMPORT_ARCHIVE = Path("agents") / "main" / "session-sqlite-import-archive"
COMPACT_KEY = "agent:main:main"
RUN_TIMEOUT = 180.0
NO_SPACE = (
    11  # openclaw_cli.errors.ExitCode.NO_SPACE (kept literal: this module runs without importing the CLI)
)


# ---- running the CLI ---------------------------------------------------------------------------------


def env_for(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "_CRASH_" not in k}
    env.update(
        {
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
            "HOME": str(state.parent),
            "OPENCLAW_HOME": str(state.parent),
            "NO_COLOR": "1",
            "OPENCLAW_GATEWAY_PORT": "1",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(extra)
    return env


def run(
    state: Path, args: list[str], *, timeout: float = RUN_TIMEOUT, **extra: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args],
        env=env_for(state, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_killed_at(state: Path, args: list[str], delay: float, sig: int) -> tuple[int, str]:
    """Start the command and send `sig` after `delay` seconds (if it still runs)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "openclaw_cli", *args],
        env=env_for(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    timer = threading.Timer(delay, lambda: _signal(proc, sig))
    timer.start()
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        timer.cancel()
    return proc.returncode, err


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


# ---- accounting ----------------------------------------------------------------------------------------


def lines_of(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


def _original_bytes() -> Callable[[bytes], bytes]:
    from openclaw_cli.store.quarantine import original_bytes

    return original_bytes


def db_sessions(db: Path) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    if not db.exists():
        return out
    decode = _original_bytes()
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    conn.text_factory = bytes
    try:
        for sid, text in conn.execute(
            "SELECT session_id, event_json FROM transcript_events ORDER BY session_id, seq"
        ):
            out.setdefault(sid.decode(), []).append(decode(text))
    finally:
        conn.close()
    return out


def integrity_problem(db: Path) -> str | None:
    if not db.exists():
        return None
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    return None if result == "ok" else f"integrity_check: {result}"


def zst_archives(directory: Path) -> list[Path]:
    from openclaw_cli.store.archives import list_archives

    try:
        return [a.path for a in list_archives(directory)]
    except OSError:
        return []


def archive_data(path: Path) -> bytes:
    from openclaw_cli.store.archives import read_archive_bytes

    return read_archive_bytes(path)


_GATEWAY_LOCK = re.compile(r"gateway\.(?:state|[0-9a-f]{8})\.lock")


def leftovers(state: Path) -> list[str]:
    from openclaw_cli.store.owner_file import live_owner

    bad = []
    for path in state.rglob("*"):
        name = path.name
        if (
            name.startswith("state.")
            and name.endswith(".lock")
            and path.parent.parent.name == "tmp"
            and live_owner(path) is None
        ):
            continue  # a 9.8+ owner file of a killed process: stale by design, reclaimed by the next owner
        if _GATEWAY_LOCK.fullmatch(name) and path.parent.parent.name == "tmp" and live_owner(path) is None:
            # a killed Gateway's lock files (2026.9.6's `gateway.state.lock` and the per-config
            # `gateway.<hash>.lock`): stale by design, as OpenClaw's own, replaced by the next Gateway
            continue
        if (
            name.endswith((".tmp", ".lock", "-journal"))
            or ".import-session-sqlite-" in name
            or ".cleanup-" in name
        ):
            bad.append(str(path.relative_to(state)))
    return sorted(bad)


def count_diff(want: Counter, have: Counter) -> tuple[int, int]:
    """(lost, duplicated) line counts of `have` against `want`."""
    lost = sum(max(0, n - have.get(k, 0)) for k, n in want.items())
    dup = sum(max(0, n - want.get(k, 0)) for k, n in have.items())
    return lost, dup


# ---- operations ----------------------------------------------------------------------------------------


@dataclass
class Op:
    """One multi-step operation: its command, crash-hook prefix, the template it starts from, how an
    operator recovers after a kill, and how its result is accounted."""

    name: str
    prefix: str  # OPENCLAW_<prefix>_CRASH_AT
    template: str
    args: list[str]
    recover: Callable[[Path, random.Random], list[list[str]]]
    account: Callable[[Path, dict[str, Any]], tuple[int, int, list[str]]]
    ok_codes: tuple[int, ...] = (0,)
    count_env: str = ""
    gateway: bool = False  # served by a Gateway process (which is what the kills hit)

    def crash_env(self) -> str:
        return f"OPENCLAW_{self.prefix}_CRASH_AT"

    def counter_env(self) -> str:
        return self.count_env or f"OPENCLAW_{self.prefix}_CRASH_COUNT"


def _import_recover(state: Path, rng: random.Random) -> list[list[str]]:
    doctor = ["doctor", "--session-sqlite"]
    tail = ["--session-sqlite-all-agents", "--json"]
    if rng.random() < 0.3:  # sometimes undo first, as an operator unsure of the state would
        return [[*doctor, "recover", *tail], [*doctor, "import", *tail]]
    return [[*doctor, "import", *tail]]


def _account_import(state: Path, base: dict[str, Any]) -> tuple[int, int, list[str]]:
    lost = dup = 0
    problems: list[str] = []
    stored = db_sessions(state / DB)
    for name, data in base["files"].items():
        want = lines_of(data)
        have = stored.get(name[: -len(".jsonl")], [])
        a, b = count_diff(Counter(want), Counter(have))
        lost, dup = lost + a, dup + b
        if not a and not b and have != want:
            problems.append(f"{name}: lines out of order")
    originals = {data for data in base["files"].values()} | {base["index"]}
    archived = (
        {p.read_bytes() for p in (state / IMPORT_ARCHIVE).iterdir()}
        if (state / IMPORT_ARCHIVE).exists()
        else set()
    )
    live = {p.read_bytes() for p in (state / SESSIONS).iterdir() if p.is_file()}
    missing = [d for d in originals if d not in archived and d not in live]
    if missing:
        problems.append(f"{len(missing)} original file(s) neither in place nor archived")
    return lost, dup, problems


def _account_restore(state: Path, base: dict[str, Any]) -> tuple[int, int, list[str]]:
    """After restore: every original file is back in place, byte-identical, exactly once."""
    problems: list[str] = []
    live = Counter(p.read_bytes() for p in (state / SESSIONS).iterdir() if p.is_file())
    archived = (
        Counter(p.read_bytes() for p in (state / IMPORT_ARCHIVE).iterdir())
        if (state / IMPORT_ARCHIVE).exists()
        else Counter()
    )
    want = Counter(base["files"].values())
    want[base["index"]] += 1
    have = live + archived
    lost = sum(len(lines_of(d)) * max(0, n - have.get(d, 0)) for d, n in want.items())
    dup = sum(len(lines_of(d)) * max(0, n - want.get(d, 0)) for d, n in have.items())
    if any(live.get(d, 0) != n for d, n in want.items()):
        problems.append("an original is not back in place")
    a, b, more = _account_import(state, base)  # the database keeps what was imported
    return lost + a, dup + b, problems + more


def _cleanup_have(state: Path, kind: str) -> Counter:
    have: Counter = Counter()
    if kind == "legacy":
        for path in (state / SESSIONS).glob("*.jsonl"):
            have.update(lines_of(path.read_bytes()))
    else:
        for lines in db_sessions(state / DB).values():
            have.update(lines)
    for archive in zst_archives(state / SESSIONS):
        have.update(lines_of(archive_data(archive)))
    return have


def _account_cleanup(kind: str) -> Callable[[Path, dict[str, Any]], tuple[int, int, list[str]]]:
    def account(state: Path, base: dict[str, Any]) -> tuple[int, int, list[str]]:
        lost, dup = count_diff(base["lines"], _cleanup_have(state, kind))
        return lost, dup, []

    return account


def _compact_lines(state: Path, kind: str, sid: str) -> list[bytes]:
    if kind == "legacy":
        path = state / SESSIONS / f"{sid}.jsonl"
        return lines_of(path.read_bytes()) if path.exists() else []
    return db_sessions(state / DB).get(sid, [])


def _row(state: Path, kind: str) -> dict[str, Any]:
    if kind == "legacy":
        return json.loads((state / SESSIONS / "sessions.json").read_text())[COMPACT_KEY]
    conn = sqlite3.connect(f"{(state / DB).as_uri()}?mode=ro", uri=True)
    try:
        (text,) = conn.execute(
            "SELECT entry_json FROM session_nodes WHERE session_key = ?", (COMPACT_KEY,)
        ).fetchone()
    finally:
        conn.close()
    return json.loads(text)


def _account_compact(kind: str, mode: str) -> Callable[[Path, dict[str, Any]], tuple[int, int, list[str]]]:
    def account(state: Path, base: dict[str, Any]) -> tuple[int, int, list[str]]:
        original: list[bytes] = base["compact"]
        sid = base["sid"]
        problems: list[str] = []
        old = _compact_lines(state, kind, sid)
        row = _row(state, kind)
        archived = [lines_of(archive_data(p)) for p in zst_archives(state / SESSIONS)]
        if mode == "max-lines":
            # the dropped prefix leaves only through a verified archive holding the full original
            current = old if row["sessionId"] == sid else _compact_lines(state, kind, row["sessionId"])
            have = Counter(current)
            for lines in archived:
                have = have | Counter(lines)  # archives are full copies: union, not sum
            lost, _ = count_diff(Counter(original), have)
            dup = len(current) - len(set(current))  # transcript lines are unique (ids, timestamps)
            if current != original and len(current) != 7:
                problems.append(f"max-lines left {len(current)} lines")
            return lost, dup, problems
        lost, extra = count_diff(Counter(original), Counter(old))
        compactions = sum(1 for line in old[len(original) :] if b'"type":"compaction"' in line)
        dup = max(0, extra - 1)  # the one compaction entry is the only line a compaction adds
        if compactions != 1 or old[: len(original)] != original:
            problems.append(
                f"{compactions} compaction entries appended (original prefix kept: "
                f"{old[: len(original)] == original})"
            )
        if mode == "rotate":
            successors = sorted(set(_successor_ids(state, kind, sid)))
            if row["sessionId"] == sid:
                problems.append("the session was not rotated")
            orphans = [s for s in successors if s != row["sessionId"]]
            for orphan in orphans:
                dup += len(
                    _compact_lines(state, kind, orphan)
                    or lines_of(next((state / SESSIONS).glob(f"*_{orphan}.jsonl")).read_bytes())
                )
            if orphans:
                problems.append(f"{len(orphans)} orphaned successor(s)")
        for lines in archived:
            if lines[: len(original)] != original:
                problems.append("an archive does not hold the full original")
        return lost, dup, problems

    return account


def _successor_ids(state: Path, kind: str, sid: str) -> list[str]:
    if kind == "legacy":
        return [p.name.split("_", 1)[1][: -len(".jsonl")] for p in (state / SESSIONS).glob("*_*.jsonl")]
    conn = sqlite3.connect(f"{(state / DB).as_uri()}?mode=ro", uri=True)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM session_windows WHERE previous_session_id = ?", (sid,)
            )
        ]
    finally:
        conn.close()


def _account_agents_delete(state: Path, base: dict[str, Any]) -> tuple[int, int, list[str]]:
    work = state / "agents" / "work" / "sessions"
    have: Counter = Counter()
    for path in work.glob("*.jsonl"):
        have.update(lines_of(path.read_bytes()))
    for archive in zst_archives(work):
        have.update(lines_of(archive_data(archive)))
    lost, dup = count_diff(base["work_lines"], have)
    return lost, dup, []


def _rerun(args: list[str]) -> Callable[[Path, random.Random], list[list[str]]]:
    return lambda state, rng: [args]


IMPORT = ["doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"]
COMPACT = ["compact", COMPACT_KEY, "--json", "--keep-recent-tokens", "3000", "--tokenizer", "estimate"]
CLEANUP = ["sessions", "cleanup", "--enforce", "--json"]

OPS: dict[str, Op] = {
    op.name: op
    for op in [
        Op(
            "import",
            "MIGRATION",
            "legacy",
            IMPORT,
            _import_recover,
            _account_import,
            count_env="OPENCLAW_MIGRATION_CRASH_COUNT_FILE",
        ),
        Op(
            "restore",
            "MIGRATION",
            "imported",
            ["doctor", "--session-sqlite", "restore", "--session-sqlite-all-agents", "--json"],
            _rerun(["doctor", "--session-sqlite", "restore", "--session-sqlite-all-agents", "--json"]),
            _account_restore,
            count_env="OPENCLAW_MIGRATION_CRASH_COUNT_FILE",
        ),
        Op(
            "recover",
            "MIGRATION",
            "half-imported",
            ["doctor", "--session-sqlite", "recover", "--session-sqlite-all-agents", "--json"],
            _rerun(["doctor", "--session-sqlite", "recover", "--session-sqlite-all-agents", "--json"]),
            _account_restore,
            ok_codes=(0, 1),
            count_env="OPENCLAW_MIGRATION_CRASH_COUNT_FILE",
        ),
        Op("cleanup-legacy", "CLEANUP", "legacy", CLEANUP, _rerun(CLEANUP), _account_cleanup("legacy")),
        Op("cleanup-sqlite", "CLEANUP", "imported", CLEANUP, _rerun(CLEANUP), _account_cleanup("sqlite")),
        Op(
            "compact-append",
            "COMPACT",
            "compact-legacy",
            COMPACT,
            _rerun(COMPACT),
            _account_compact("legacy", "append"),
            ok_codes=(0, 1),
        ),
        Op(
            "compact-rotate-legacy",
            "COMPACT",
            "compact-legacy-rotate",
            COMPACT,
            _rerun(COMPACT),
            _account_compact("legacy", "rotate"),
            ok_codes=(0, 1),
        ),
        Op(
            "compact-rotate-sqlite",
            "COMPACT",
            "compact-sqlite-rotate",
            COMPACT,
            _rerun(COMPACT),
            _account_compact("sqlite", "rotate"),
            ok_codes=(0, 1),
        ),
        Op(
            "compact-max-lines",
            "COMPACT",
            "compact-legacy",
            ["compact", COMPACT_KEY, "--json", "--max-lines", "7"],
            _rerun(["compact", COMPACT_KEY, "--json", "--max-lines", "7"]),
            _account_compact("legacy", "max-lines"),
            ok_codes=(0, 1),
        ),
        Op(
            "agents-delete",
            "CLEANUP",
            "two-agents",
            ["agents", "delete", "work", "--force", "--json"],
            _rerun(["agents", "delete", "work", "--force", "--json"]),
            _account_agents_delete,
            ok_codes=(0, 4),
        ),
    ]
}
OPS["gateway-cleanup"] = Op(
    "gateway-cleanup", "CLEANUP", "legacy", CLEANUP, _rerun(CLEANUP), _account_cleanup("legacy"), gateway=True
)
# the Gateway's sessions.compact takes OpenClaw's params (maxLines, ...), not our --keep-recent-tokens
OPS["gateway-compact-max-lines"] = Op(
    "gateway-compact-max-lines",
    "COMPACT",
    "compact-legacy",
    ["compact", COMPACT_KEY, "--json", "--max-lines", "7"],
    _rerun(["compact", COMPACT_KEY, "--json", "--max-lines", "7"]),
    _account_compact("legacy", "max-lines"),
    ok_codes=(0, 1),
    gateway=True,
)
NOT_BUILT: dict[str, str] = {}


# ---- a Gateway serving the writes ------------------------------------------------------------------------

GATEWAY_TOKEN = "soak-token"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gateway:
    """`openclaw gateway run` for a state, in its own process group (killed with its group)."""

    def __init__(self, state: Path, port: int, **extra: str):
        argv = [
            sys.executable,
            "-m",
            "openclaw_cli",
            "gateway",
            "run",
            "--port",
            str(port),
            "--auth",
            "token",
            "--token",
            GATEWAY_TOKEN,
            "--allow-unconfigured",
        ]
        self.proc = subprocess.Popen(
            argv,
            env=env_for(state, OPENCLAW_GATEWAY_PORT=str(port), **extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line or "[gateway] ready" in line:
                break
        if self.proc.poll() is not None:
            raise RuntimeError(f"the Gateway did not start ({self.proc.returncode})")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
        return self.proc.wait(timeout=30)


def _served(
    state: Path, op: Op, mode: str, at: float, rng: random.Random
) -> tuple[int, str, Callable[[], None]]:
    """Run the command through a Gateway that is killed (SIGKILL at a crash point or at an instant,
    SIGINT/SIGTERM at a crash point); returns the CLI's exit code, its stderr, and the recovery: a
    fresh Gateway serving the re-run, or (half of the time) the re-run locally once none listens."""
    port = _free_port()
    crash: dict[str, str] = {}
    if mode in ("point", "sigint", "sigterm"):
        crash = {op.crash_env(): str(int(at))}
        if mode != "point":
            crash[f"OPENCLAW_{op.prefix}_CRASH_SIGNAL"] = mode[3:].upper()
    gateway = Gateway(state, port, **crash)
    cli_env = {"OPENCLAW_GATEWAY_PORT": str(port), "OPENCLAW_GATEWAY_TOKEN": GATEWAY_TOKEN}
    timer = threading.Timer(at, lambda: gateway.signal(signal.SIGKILL)) if mode == "instant" else None
    if timer is not None:
        timer.start()
    try:
        proc = run(state, op.args, **cli_env)
    finally:
        if timer is not None:
            timer.cancel()
    served_code = gateway.stop()  # a Gateway that was not killed is stopped; either way it is gone now

    def recover() -> None:
        if rng.random() < 0.5:
            fresh = Gateway(state, port)
            try:
                run(state, op.args, **cli_env)
            finally:
                fresh.stop()

    code = (
        -signal.SIGKILL
        if served_code == -signal.SIGKILL
        else (130 if mode in ("sigint", "sigterm") and proc.returncode != 0 else proc.returncode)
    )
    return code, proc.stderr, recover


# ---- templates -----------------------------------------------------------------------------------------


def _generate(dest: Path, sessions: int, mb: float, seed: int, *extra: str) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(GEN),
            str(dest),
            str(sessions),
            str(mb),
            str(seed),
            "--now-ms",
            NOW_MS,
            "--cron-key-style",
            "canonical",
            *extra,
        ],
        check=True,
        capture_output=True,
    )
    return dest


def build_templates(root: Path, *, sessions: int = 24) -> dict[str, Path]:
    """Every template under root/<name>/state (root/<name> plays $HOME)."""
    out: dict[str, Path] = {}

    def fresh(name: str) -> Path:
        state = root / name / "state"
        state.parent.mkdir(parents=True)
        out[name] = state
        return state

    legacy = _generate(fresh("legacy"), sessions, 0.25, 1301, "--orphans", "1")
    (legacy / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 15}}})
    )
    imported = fresh("imported")
    shutil.copytree(legacy, imported)
    _must(run(imported, IMPORT))
    half = fresh("half-imported")
    shutil.copytree(legacy, half)
    counter = root / "half.count"
    probe = root / "probe" / "state"
    shutil.copytree(legacy, probe)
    _must(run(probe, IMPORT, OPENCLAW_MIGRATION_CRASH_COUNT_FILE=str(counter)))
    total = int(counter.read_text())
    killed = run(half, IMPORT, OPENCLAW_MIGRATION_CRASH_AT=str(total - sessions // 2))  # mid-archiving
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    shutil.rmtree(probe.parent)
    two = fresh("two-agents")
    shutil.copytree(legacy, two)
    work = root / "work-src" / "state"
    _generate(work, 10, 0.1, 1302, "--agent", "work")
    shutil.copytree(work / "agents" / "work", two / "agents" / "work")
    shutil.rmtree(work.parent)
    (two / "openclaw.json").write_text(
        json.dumps({"agents": {"list": [{"id": "main", "default": True}, {"id": "work"}]}})
    )
    from tests.session_generator import generate_session

    for name, rotate, kind in [
        ("compact-legacy", False, "legacy"),
        ("compact-legacy-rotate", True, "legacy"),
        ("compact-sqlite-rotate", True, "sqlite"),
    ]:
        state = fresh(name)
        session = generate_session(41, turns=40)
        sessions_dir = state / SESSIONS
        sessions_dir.mkdir(parents=True)
        sid = session.header["id"]
        (sessions_dir / f"{sid}.jsonl").write_text(session.jsonl())
        (sessions_dir / "sessions.json").write_text(
            json.dumps(
                {
                    COMPACT_KEY: {
                        "sessionId": sid,
                        "updatedAt": int(NOW_MS),
                        "chatType": "direct",
                        "model": "gpt-5.4",
                        "contextTokens": 200000,
                        "compactionCount": 0,
                        "sessionFile": f"{sid}.jsonl",
                    }
                },
                indent=2,
            )
        )
        (state / "openclaw.json").write_text(
            json.dumps({"agents": {"defaults": {"compaction": {"truncateAfterCompaction": rotate}}}})
        )
        if kind == "sqlite":
            _must(run(state, IMPORT))
    return out


def _must(proc: subprocess.CompletedProcess) -> None:
    if proc.returncode != 0:
        raise RuntimeError(
            f"template step failed ({proc.returncode}): {proc.stdout[-800:]} {proc.stderr[-800:]}"
        )


def _all_db_lines(db: Path) -> Counter:
    lines: Counter = Counter()
    for stored in db_sessions(db).values():
        lines.update(stored)
    return lines


def baseline(template: Path) -> dict[str, Any]:
    """What the accounting compares with, read from the untouched template."""
    sessions = template / SESSIONS
    files = {p.name: p.read_bytes() for p in sessions.glob("*.jsonl")} if sessions.exists() else {}
    base: dict[str, Any] = {
        "files": files,
        "index": (sessions / "sessions.json").read_bytes() if (sessions / "sessions.json").exists() else b"",
    }
    lines: Counter = Counter()
    for data in files.values():
        lines.update(lines_of(data))
    base["lines"] = lines
    transcript = next(iter(sorted(files.items())), (None, b""))
    base["sid"] = transcript[0][: -len(".jsonl")] if transcript[0] else None
    base["compact"] = lines_of(transcript[1])
    if (template / DB).exists():  # an imported compaction template: the session lives in SQLite
        stored = db_sessions(template / DB)
        if len(stored) == 1:
            base["sid"], base["compact"] = next(iter(stored.items()))
    work = template / "agents" / "work" / "sessions"
    base["work_lines"] = (
        Counter(line for p in work.glob("*.jsonl") for line in lines_of(p.read_bytes()))
        if work.exists()
        else Counter()
    )
    return base


# ---- one kill and its recovery -----------------------------------------------------------------------


@dataclass
class Outcome:
    op: str
    mode: str  # point | instant | sigint | sigterm
    at: str
    code: int
    recovery_runs: int = 0
    recovery_seconds: float = 0.0
    lost: int = 0
    duplicated: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.code in (-signal.SIGKILL, 130)


def _copy(template: Path, work: Path) -> Path:
    """A private copy of the template's HOME that keeps hard links (a publication killed between
    its link and its unlink leaves two names of one inode, which copytree would split)."""
    home = work / "home"
    work.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp") and subprocess.run(["cp", "-a", str(template.parent), str(home)]).returncode == 0:
        return home / "state"
    shutil.copytree(template.parent, home, symlinks=True)
    return home / "state"


def inject(
    op: Op, template: Path, base: dict[str, Any], work: Path, mode: str, at: float, rng: random.Random
) -> Outcome:
    state = _copy(template, work)
    served_recovery: Callable[[], None] | None = None
    try:
        if op.gateway:
            code, err, served_recovery = _served(state, op, mode, at, rng)
        elif mode == "point":
            proc = run(state, op.args, **{op.crash_env(): str(int(at))})
            code, err = proc.returncode, proc.stderr
        elif mode in ("sigint", "sigterm"):
            proc = run(
                state,
                op.args,
                **{op.crash_env(): str(int(at)), f"OPENCLAW_{op.prefix}_CRASH_SIGNAL": mode[3:].upper()},
            )
            code, err = proc.returncode, proc.stderr
        else:
            code, err = run_killed_at(state, op.args, at, signal.SIGKILL)
        outcome = Outcome(op.name, mode, f"{at:.3f}" if mode == "instant" else str(int(at)), code)
        if mode in ("sigint", "sigterm") and code not in (130, *op.ok_codes) and not op.gateway:
            outcome.problems.append(f"{mode} exited {code}, not 130: {err[-300:]}")
        if code == 130 and "Traceback" in err:
            outcome.problems.append("a traceback after the interrupt")
        started = time.perf_counter()
        if served_recovery is not None:
            served_recovery()  # the re-run served by a fresh Gateway (then checked by a local run below)
            outcome.recovery_runs += 1
        for _attempt in range(3):
            done = None
            for args in op.recover(state, rng):
                done = run(state, args)
                outcome.recovery_runs += 1
            if done is not None and done.returncode in op.ok_codes:
                break
        else:
            outcome.problems.append(f"recovery did not succeed: {done.stdout[-300:] if done else ''}")
        outcome.recovery_seconds = time.perf_counter() - started
        outcome.lost, outcome.duplicated, more = op.account(state, base)
        outcome.problems.extend(more)
        problem = integrity_problem(state / DB)
        if problem:
            outcome.problems.append(problem)
        left = leftovers(state)
        if left:
            outcome.problems.append(f"left behind: {left[:4]}")
        for args in (["sessions", "--json", "--all-agents"], ["status", "--json", "--no-probe"]):
            read = run(state, args)
            if read.returncode != 0:
                outcome.problems.append(f"{' '.join(args)} exited {read.returncode}: {read.stdout[-200:]}")
        return outcome
    finally:
        shutil.rmtree(work, ignore_errors=True)


def plan(op: Op, total: int, duration: float, budget: int, rng: random.Random) -> list[tuple[str, float]]:
    """Which kills to make: every crash point once (SIGKILL), then SIGINT/SIGTERM at crash points and
    SIGKILL at random instants, up to `budget` kills."""
    points = list(range(1, total + 1))
    if budget < len(points):
        keep = {1, total, max(1, total // 2)}
        points = sorted(keep | set(rng.sample(points, max(0, budget - len(keep)))))[:budget]
    kills: list[tuple[str, float]] = [("point", float(p)) for p in points]
    while len(kills) < budget:
        choice = rng.random()
        if choice < 0.25:
            kills.append(("sigint", float(rng.randint(1, total))))
        elif choice < 0.35:
            kills.append(("sigterm", float(rng.randint(1, total))))
        else:
            kills.append(("instant", rng.uniform(0.05, max(0.1, duration))))
    return kills


@dataclass
class Figures:
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    @property
    def kills(self) -> int:
        """Runs that were really stopped (a run that finished before its random instant is not)."""
        return sum(1 for o in self.outcomes if o.killed)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.lost or o.duplicated or o.problems]

    def disk_table(self) -> str:
        by_op: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            by_op.setdefault(o.op, []).append(o)
        rows = [
            f"{'operation':<24}{'runs':>6}{'refused':>9}{'ENOSPC':>8}{'fit':>5}{'lost':>6}{'dup':>5}"
            f"{'max rec s':>10}{'failed':>7}"
        ]
        for name, items in by_op.items():
            refused = sum(1 for o in items if o.code == NO_SPACE and o.mode == "enospc")
            cut = sum(1 for o in items if o.code == NO_SPACE and o.mode == "enospc-write")
            rows.append(
                f"{name:<24}{len(items):>6}{refused:>9}{cut:>8}{sum(1 for o in items if o.code != NO_SPACE):>5}"
                f"{sum(o.lost for o in items):>6}{sum(o.duplicated for o in items):>5}"
                f"{max(o.recovery_seconds for o in items):>10.2f}"
                f"{sum(1 for o in items if o.lost or o.duplicated or o.problems):>7}"
            )
        for name, why in self.skipped.items():
            rows.append(f"{name:<24} skipped: {why}")
        rows.append(
            "refused: the space pre-check said `not enough space` before writing; ENOSPC: the write ran "
            "out (pre-check off) and was rolled back; fit: it had room. Then the disk grew and the re-run "
            f"finished; wall time {self.seconds:.0f} s"
        )
        return "\n".join(rows)

    def table(self) -> str:
        by_op: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            by_op.setdefault(o.op, []).append(o)
        rows = [
            f"{'operation':<24}{'kills':>6}{'point':>7}{'instant':>8}{'int/term':>9}{'lost':>6}{'dup':>5}"
            f"{'recoveries':>11}{'max rec s':>10}{'failed':>7}"
        ]
        for name, items in by_op.items():
            killed = [o for o in items if o.killed]
            count = Counter(o.mode for o in killed)
            rows.append(
                f"{name:<24}{len(killed):>6}{count['point']:>7}{count['instant']:>8}"
                f"{count['sigint'] + count['sigterm']:>9}{sum(o.lost for o in items):>6}"
                f"{sum(o.duplicated for o in items):>5}{sum(o.recovery_runs for o in items):>11}"
                f"{max(o.recovery_seconds for o in items):>10.2f}"
                f"{sum(1 for o in items if o.lost or o.duplicated or o.problems):>7}"
            )
        all_items = self.outcomes
        rows.append(
            f"{'total':<24}{self.kills:>6}{'':>7}{'':>8}{'':>9}{sum(o.lost for o in all_items):>6}"
            f"{sum(o.duplicated for o in all_items):>5}{sum(o.recovery_runs for o in all_items):>11}"
            f"{max((o.recovery_seconds for o in all_items), default=0):>10.2f}{len(self.failures):>7}"
        )
        for name, why in self.skipped.items():
            rows.append(f"{name:<24} skipped: {why}")
        finished = len(self.outcomes) - self.kills
        rows.append(
            f"{len(self.outcomes)} runs, {self.kills} killed or interrupted ({finished} finished before their "
            f"random instant), recovered and checked; wall time {self.seconds:.0f} s"
        )
        return "\n".join(rows)


def soak(
    *,
    per_op: int,
    ops: list[str] | None = None,
    seed: int = 20261201,
    workers: int = 2,
    sessions: int = 24,
    log: Callable[[str], None] | None = None,
    deadline: float | None = None,
    templates: dict[str, Path] | None = None,
) -> Figures:
    """Run `per_op` kills of every operation (in parallel over `workers`); stop scheduling new kills
    after `deadline` (time.monotonic()) when given."""
    started = time.perf_counter()
    figures = Figures(skipped=dict(NOT_BUILT))
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="openclaw-soak-") as tmp:
        root = Path(tmp)
        templates = templates or build_templates(root / "templates", sessions=sessions)
        jobs: list[tuple[Op, Path, dict[str, Any], str, float, int]] = []
        legacy_base = baseline(templates["legacy"])
        for name in ops or list(OPS):
            op = OPS[name]
            template = templates[op.template]
            base = (
                legacy_base if op.template in ("legacy", "imported", "half-imported") else baseline(template)
            )
            if name == "cleanup-sqlite":
                base = {**legacy_base, "lines": _all_db_lines(template / DB)}
            total, duration = _probe(op, template, root / f"probe-{name}")
            for mode, at in plan(op, total, duration, per_op, random.Random(rng.random())):
                jobs.append((op, template, base, mode, at, rng.randrange(1 << 30)))
        rng.shuffle(jobs)

        def one(index: int) -> Outcome | None:
            if deadline is not None and time.monotonic() > deadline:
                return None
            op, template, base, mode, at, job_seed = jobs[index]
            out = inject(op, template, base, root / f"job-{index}", mode, at, random.Random(job_seed))
            if log is not None and (out.lost or out.duplicated or out.problems):
                log(f"FAIL {out.op} {out.mode}@{out.at}: lost={out.lost} dup={out.duplicated} {out.problems}")
            return out

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for done, outcome in enumerate(pool.map(one, range(len(jobs))), start=1):
                if outcome is not None:
                    figures.add(outcome)
                if log is not None and done % 50 == 0:
                    log(f"... {done}/{len(jobs)} kills, {len(figures.failures)} failed")
    figures.seconds = time.perf_counter() - started
    return figures


def _probe(op: Op, template: Path, work: Path) -> tuple[int, float]:
    """How many crash points an uninterrupted run passes and how long it takes."""
    state = _copy(template, work)
    counter = work / "count"
    try:
        started = time.perf_counter()
        proc = run(state, op.args, **{op.counter_env(): str(counter)})
        duration = time.perf_counter() - started
        if proc.returncode not in op.ok_codes:
            raise RuntimeError(
                f"{op.name}: an uninterrupted run failed ({proc.returncode}): {proc.stdout[-600:]}"
            )
        total = int(counter.read_text()) if counter.exists() else 0
        if total == 0:
            raise RuntimeError(f"{op.name}: no crash point passed")
        return total, duration
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- full disks ----------------------------------------------------------------------------------------

ENOSPC_OPS = (
    "import",
    "cleanup-legacy",
    "cleanup-sqlite",
    "compact-rotate-legacy",
    "compact-max-lines",
    "agents-delete",
)


def mount_reason() -> str | None:
    """None when a tmpfs can be mounted here (root, mount(8)), else why not."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting a tmpfs needs root and mount(8)"
    probe = Path(tempfile.mkdtemp(prefix="openclaw-mnt-"))
    try:
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            return f"cannot mount a tmpfs here: {proc.stderr.strip()}"
        subprocess.run(["umount", str(probe)], capture_output=True)
        return None
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def enospc_round(
    op: Op, template: Path, base: dict[str, Any], work: Path, *, spare: int, precheck: bool
) -> Outcome:
    """The operation on a filesystem with `spare` bytes left after the state: it must fail with
    the no-space exit code or succeed; either way, once the filesystem is grown, a re-run
    reaches a consistent state with no line lost or duplicated."""
    mnt = work / "mnt"
    mnt.mkdir(parents=True)
    need = _tree_bytes(template.parent) + 256 * 1024  # tmpfs counts whole pages and inodes
    size = need + spare
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    try:
        home = mnt / "home"
        subprocess.run(["cp", "-a", str(template.parent), str(home)], check=True)
        state = home / "state"
        extra = {} if precheck else {"OPENCLAW_SPACE_CHECK": "0"}
        first = run(state, op.args, **extra)
        outcome = Outcome(op.name, "enospc" + ("" if precheck else "-write"), str(spare), first.returncode)
        if first.returncode not in (NO_SPACE, *op.ok_codes):
            outcome.problems.append(
                f"full disk exited {first.returncode}, not {NO_SPACE}: {first.stdout[-400:]}"
                f"{first.stderr[-400:]}"
            )
        if "Traceback" in first.stderr:
            outcome.problems.append("a traceback on a full disk")
        if first.returncode == NO_SPACE:
            for args in (["sessions", "--json", "--all-agents"], ["status", "--json", "--no-probe"]):
                read = run(state, args)
                if read.returncode not in (0, NO_SPACE):
                    outcome.problems.append(f"{' '.join(args)} exited {read.returncode} on the full disk")
        subprocess.run(["mount", "-o", f"remount,size={size + 64 * 1024 * 1024}", str(mnt)], check=True)
        started = time.perf_counter()
        done = None
        for _attempt in range(2):
            done = run(state, op.args)
            outcome.recovery_runs += 1
            if done.returncode in op.ok_codes:
                break
        if done is None or done.returncode not in op.ok_codes:
            outcome.problems.append(f"re-run on a grown disk exited {done.returncode if done else None}")
        outcome.recovery_seconds = time.perf_counter() - started
        outcome.lost, outcome.duplicated, more = op.account(state, base)
        outcome.problems.extend(more)
        problem = integrity_problem(state / DB)
        if problem:
            outcome.problems.append(problem)
        left = leftovers(state)
        if left:
            outcome.problems.append(f"left behind: {left[:4]}")
        return outcome
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def enospc_soak(
    *,
    spares: list[int],
    ops: list[str] | None = None,
    sessions: int = 24,
    log: Callable[[str], None] | None = None,
    templates: dict[str, Path] | None = None,
) -> Figures:
    figures = Figures()
    reason = mount_reason()
    if reason:
        figures.skipped["enospc"] = reason
        return figures
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="openclaw-enospc-") as tmp:
        root = Path(tmp)
        templates = templates or build_templates(root / "templates", sessions=sessions)
        legacy_base = baseline(templates["legacy"])
        for name in ops or list(ENOSPC_OPS):
            op = OPS[name]
            template = templates[op.template]
            base = (
                legacy_base if op.template in ("legacy", "imported", "half-imported") else baseline(template)
            )
            if name == "cleanup-sqlite":
                base = {**legacy_base, "lines": _all_db_lines(template / DB)}
            for index, spare in enumerate(spares):
                for precheck in (True, False):
                    out = enospc_round(
                        op,
                        template,
                        base,
                        root / f"{name}-{index}-{precheck}",
                        spare=spare,
                        precheck=precheck,
                    )
                    figures.add(out)
                    if log is not None and (out.lost or out.duplicated or out.problems):
                        log(
                            f"FAIL {out.op} {out.mode}@{out.at}: lost={out.lost} dup={out.duplicated} {out.problems}"
                        )
    figures.seconds = time.perf_counter() - started
    return figures
