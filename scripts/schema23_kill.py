"""SIGKILL a schema-23 `sessions cleanup --enforce` at random instants (issue 12).

Usage: scripts/schema23-kill [--kills N] [--sessions N] [--mb MB] [--seed S] [--work DIR]
                             [--peer-check every|final|none] [--no-peer]

A real OpenClaw schema-23 database (imported by the real OpenClaw from a generated legacy state
when /tmp/peer exists, else the checked-in fixture DB) is cleaned by `openclaw sessions cleanup
--enforce --store DB`, killed with SIGKILL either at one of its numbered checkpoints
(OPENCLAW_CLEANUP_CRASH_AT) or after a random delay. After every kill the database must be
exactly as before or exactly as after an uninterrupted run (rows, events, archives), with clean
`PRAGMA integrity_check` / `foreign_key_check` (and the real OpenClaw's inspect clean); then a
re-run must reach the uninterrupted result. Exits non-zero on the first violation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT.parent / "shared" / "tools" / "gen_legacy_store.py"
FIXTURE = ROOT / "tests" / "fixtures" / "openclaw-2026.9.6" / "imported-state"
PEER = Path("/tmp/peer/openclaw")
DB_REL = Path("agents/main/agent/openclaw-agent.sqlite")
# the cap alone decides (oldest first): the same rows leave whatever the clock says between runs
CONFIG = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "3650d", "maxEntries": 10}}}


def _peer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OC_PEER_ROOT=str(root))
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME"):
        env.pop(name, None)
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=600)


def build_template(root: Path, *, sessions: int, mb: float, seed: int, use_peer: bool) -> Path:
    """`root/home/.openclaw` holding a real schema-23 database; returns that state dir."""
    state = root / "home" / ".openclaw"
    if use_peer:
        subprocess.run(
            [
                sys.executable,
                str(GEN),
                str(state),
                str(sessions),
                str(mb),
                str(seed),
                "--cron-key-style",
                "canonical",
                "--now-ms",
                str(int(time.time() * 1000)),
            ],
            check=True,
            capture_output=True,
        )
        result = _peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
        if result.returncode != 0:
            raise SystemExit(f"real OpenClaw import failed: {result.stderr[-2000:]}")
    else:
        shutil.copytree(FIXTURE, state)
    (state / "openclaw.json").write_text(json.dumps(CONFIG))
    return state


def _connect(db: Path) -> sqlite3.Connection:
    sys.path.insert(0, str(ROOT))
    from openclaw_cli.store.openclaw.schema import add_schema_functions

    conn = sqlite3.connect(str(db))
    add_schema_functions(conn)
    return conn


# A release that archives in place (2026.9.6+, D23) stamps `archivedAt` with the run's clock: two
# uninterrupted runs differ there and nowhere else, so a row's stamp is compared by presence.
_ARCHIVED_AT = (
    "CASE WHEN json_type(entry_json, '$.archivedAt') IN ('integer', 'real')"
    " THEN json_set(entry_json, '$.archivedAt', 'run') ELSE entry_json END"
)


def logical_state(db: Path) -> tuple[Any, ...]:
    """Rows a cleanup touches (archive rows by content: names carry the run's timestamp; so does
    an in-place archive's `archivedAt`)."""
    conn = _connect(db)
    try:
        return tuple(
            tuple(conn.execute(sql).fetchall())
            for sql in (
                f"SELECT session_key, current_session_id, {_ARCHIVED_AT}, entry_valid FROM session_nodes"
                " ORDER BY session_key",
                "SELECT session_id, session_key FROM session_windows ORDER BY session_id",
                "SELECT session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json FROM transcript_events"
                " ORDER BY session_id, seq",
                "SELECT session_id, event_id, seq FROM transcript_event_identities ORDER BY session_id, event_id",
                "SELECT session_id, generation, session_key, archive_sha256 FROM session_transcript_archives"
                " ORDER BY session_id",
                "SELECT id, session_id, message_id FROM session_transcript_fts_rows ORDER BY id",
                "SELECT session_id, active_position, event_seq FROM session_transcript_active_events"
                " ORDER BY session_id, active_position",
                "SELECT session_id, indexed_seq FROM session_transcript_index_state ORDER BY session_id",
            )
        )
    finally:
        conn.close()


def db_checks(db: Path) -> tuple[str, list[Any]]:
    conn = _connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0], conn.execute(
            "PRAGMA foreign_key_check"
        ).fetchall()
    finally:
        conn.close()


def peer_inspect_clean(state: Path) -> bool:
    result = _peer(state.parent.parent, "doctor", "--session-sqlite", "inspect", "--json")
    if result.returncode != 0:
        return False
    target = json.loads(result.stdout)["targets"][0]
    return target["issues"] == [] and target["dbStats"]["integrityCheck"] == "ok"


def _env(state: Path, **extra: str) -> dict[str, str]:
    env = dict(
        os.environ,
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_HOME=str(state.parent),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        NO_COLOR="1",
        **extra,
    )
    env.pop("OPENCLAW_CLEANUP_CRASH_AT", None)
    env.update(extra)
    return env


def _cmd(state: Path, backup: bool = False) -> list[str]:
    return [
        sys.executable,
        "-m",
        "openclaw_cli",
        "sessions",
        "cleanup",
        "--enforce",
        "--json",
        *(() if backup else ("--no-backup",)),
        "--store",
        str(state / DB_REL),
    ]


def check_backups(db: Path, before: tuple[Any, ...]) -> int:
    """Every backup published under its final name is a whole, clean copy of the state before
    (a kill while it is written leaves at most a hidden temp file). Returns how many there are."""
    found = [
        p for p in db.parent.iterdir() if ".openclaw-cli-backup-" in p.name and not p.name.startswith(".")
    ]
    for path in found:
        if db_checks(path) != ("ok", []) or logical_state(path) != before:
            raise SystemExit(f"backup {path.name} is not a clean copy of the database before the run")
    return len(found)


def _copy(template: Path, dest_root: Path) -> Path:
    if dest_root.exists():
        shutil.rmtree(dest_root)
    state = dest_root / "home" / ".openclaw"
    shutil.copytree(template, state)
    return state


def reference(template: Path, work: Path) -> tuple[tuple[Any, ...], tuple[Any, ...], int, float]:
    """(state before, state after an uninterrupted run, checkpoints it passes, its seconds)."""
    state = _copy(template, work / "reference")
    before = logical_state(state / DB_REL)
    count_file = work / "checkpoints"
    start = time.perf_counter()
    proc = subprocess.run(
        _cmd(state),
        env=_env(state, OPENCLAW_CLEANUP_CRASH_COUNT=str(count_file)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"uninterrupted cleanup failed: {proc.stderr[-2000:]}")
    after = logical_state(state / DB_REL)
    if after == before:
        raise SystemExit("the cleanup removed nothing: choose a config that removes rows")
    return before, after, int(count_file.read_text()), seconds


def campaign(
    template: Path, work: Path, *, kills: int, seed: int, peer_check: str = "final", log: Any = print
) -> dict[str, Any]:
    """Kill cleanups until `kills` runs died by SIGKILL; every check must pass."""
    rng = random.Random(seed)
    before, after, checkpoints, seconds = reference(template, work)
    outcome = {
        "kills": 0,
        "asBefore": 0,
        "asAfter": 0,
        "finished": 0,
        "checkpoints": checkpoints,
        "uninterruptedSeconds": round(seconds, 3),
        "peerChecks": 0,
        "withBackup": 0,
        "backupsChecked": 0,
    }
    attempt = 0
    while outcome["kills"] < kills:
        attempt += 1
        if attempt > kills * 20:
            raise SystemExit("too many runs finished before their kill: lengthen the cleanup")
        state = _copy(template, work / "run")
        db = state / DB_REL
        by_checkpoint = attempt % 2 == 1
        backup = attempt % 3 == 0  # a third of the runs back the database up first (the default)
        # half the kills anywhere, half near the end (the transaction, its commit, the sweep after it)
        late = rng.random() < 0.5
        point = rng.randint(max(1, checkpoints - 4), checkpoints) if late else rng.randint(1, checkpoints)
        extra = {"OPENCLAW_CLEANUP_CRASH_AT": str(point)} if by_checkpoint else {}
        proc = subprocess.Popen(
            _cmd(state, backup),
            env=_env(state, **extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        if not by_checkpoint:
            time.sleep(rng.uniform(seconds * 0.6, seconds * 1.05) if late else rng.uniform(0, seconds * 1.05))
            proc.send_signal(signal.SIGKILL)
        code = proc.wait(timeout=600)
        if code != -signal.SIGKILL:
            outcome["finished"] += 1
            continue
        outcome["kills"] += 1
        outcome["withBackup"] += backup
        outcome["backupsChecked"] += check_backups(db, before)
        now = logical_state(db)
        where = "asBefore" if now == before else "asAfter" if now == after else None
        if where is None:
            raise SystemExit(
                f"kill {outcome['kills']} ({'checkpoint ' + extra.get('OPENCLAW_CLEANUP_CRASH_AT', '') if by_checkpoint else 'timer'}):"
                " the database is neither as before nor as after"
            )
        outcome[where] += 1
        integrity, fk = db_checks(db)
        if integrity != "ok" or fk:
            raise SystemExit(f"kill {outcome['kills']}: integrity {integrity}, foreign keys {fk[:3]}")
        if peer_check == "every" and PEER.exists():
            if not peer_inspect_clean(state):
                raise SystemExit(f"kill {outcome['kills']}: the real OpenClaw's inspect is not clean")
            outcome["peerChecks"] += 1
        rerun = subprocess.run(
            _cmd(state), env=_env(state), capture_output=True, text=True, timeout=600, cwd=ROOT
        )
        if rerun.returncode != 0 or logical_state(db) != after:
            raise SystemExit(
                f"kill {outcome['kills']}: the re-run did not reach the uninterrupted result"
                f" ({rerun.stderr[-500:]})"
            )
        log(
            f"kill {outcome['kills']:3d}: {'checkpoint' if by_checkpoint else 'timer':10s}"
            f"{' +backup' if backup else '        '} -> {where}"
        )
    if peer_check in ("every", "final") and PEER.exists():
        if not peer_inspect_clean(work / "run" / "home" / ".openclaw"):
            raise SystemExit("final state: the real OpenClaw's inspect is not clean")
        outcome["peerChecks"] += 1
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=400)
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--work", type=Path, default=Path("/tmp/openclaw-schema23-kill"))
    parser.add_argument("--peer-check", choices=("every", "final", "none"), default="every")
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    use_peer = PEER.exists() and not args.no_peer
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    template = build_template(
        args.work / "template", sessions=args.sessions, mb=args.mb, seed=args.seed, use_peer=use_peer
    )
    outcome = campaign(
        template,
        args.work,
        kills=args.kills,
        seed=args.seed,
        peer_check=args.peer_check if use_peer else "none",
    )
    outcome["database"] = "imported by the real OpenClaw" if use_peer else "fixture"
    print(json.dumps(outcome, indent=2))


if __name__ == "__main__":
    main()
