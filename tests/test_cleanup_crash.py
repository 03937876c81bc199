"""Crash safety of `cleanup --enforce` (D6.4, D15): a real subprocess is SIGKILLed at random points
— at numbered checkpoints between its effects (the `OPENCLAW_CLEANUP_CRASH_AT` hook kills the
process with SIGKILL, as `kill -9` would) and at random wall-clock instants — then re-run.
At every kill point no removed row lacks both its original transcript and a verified archive;
after the re-run the state equals the uninterrupted run's (archive names carry timestamps, so
archives are compared by the file they archive and their decompressed content)."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    entry,
    make_legacy,
    make_sqlite,
    now_ms,
    release_2026_7,  # noqa: F401 - the fixture, used by pytestmark
    sha,
    transcript_lines,
)

from openclaw_cli.store.archives import read_archive_bytes
from openclaw_cli.store.legacy.store import LegacyStore
from openclaw_cli.store.sqlite.store import SqliteStore

pytestmark = pytest.mark.usefixtures("release_2026_7")  # G1 rules: written against 2026.7 (D23)

SEED = 20261130
# `scripts/soak --full` sets this: every checkpoint and more timed kills (minutes of CPU); the suite
# runs a deterministic spread of them (the first, the last, evenly between), issue 24
FULL = os.environ.get("OPENCLAW_TEST_FULL_KILLS") == "1"


def spread(total: int, count: int) -> list[int]:
    """`count` checkpoints of 1..total, evenly spaced, the first and the last included (every one
    when `count` >= total)."""
    if count >= total:
        return list(range(1, total + 1))
    return sorted({1 + round(i * (total - 1) / (count - 1)) for i in range(count)})


def _env(state: Path, **extra: str) -> dict[str, str]:
    return dict(
        os.environ, OPENCLAW_STATE_DIR=str(state), OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"), **extra
    )


def _run(state: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", "sessions", "cleanup", "--enforce", "--json"],
        env=_env(state, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _sessions(state: Path) -> Path:
    return state / "agents" / "main" / "sessions"


def _build(state: Path, kind: str) -> dict[str, dict]:
    """Rows far from every cutoff (the real clock moves between runs): 70 stale, 50 fresh, a
    stale row sharing a fresh row's session, trajectory sidecars, an old orphan transcript."""
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "30d"}}}))
    now = now_ms()
    entries = {f"agent:main:stale{i}": entry(f"stale{i}", now - (60 + i % 20) * DAY) for i in range(70)}
    entries.update({f"agent:main:fresh{i}": entry(f"fresh{i}", now - (i + 1) * 3_600_000) for i in range(50)})
    entries["agent:main:stale-shared"] = entry("fresh0", now - 90 * DAY)
    if kind == "legacy":
        root = make_legacy(state, entries, turns=3)
        for i in range(0, 70, 7):
            (root / f"stale{i}.trajectory.jsonl").write_text('{"t":1}\n')
        orphan = root / "orphan.jsonl"
        orphan.write_text("\n".join(transcript_lines("orphan")) + "\n")
        os.utime(orphan, (now / 1000 - 90 * 86400,) * 2)
    else:
        make_sqlite(state, entries, turns=3)
    return entries


def _originals(state: Path, kind: str, entries: dict) -> dict[str, bytes]:
    if kind == "legacy":
        return {p.name: p.read_bytes() for p in _sessions(state).iterdir() if p.name != "sessions.json"}
    out = {}
    with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
        for e in entries.values():
            buf = io.BytesIO()
            store.export_transcript(e["sessionId"], buf)
            out[f"{e['sessionId']}.jsonl"] = buf.getvalue()
    return out


def _archives(state: Path) -> Counter:
    found = Counter()
    root = _sessions(state)
    if root.exists():
        for p in root.iterdir():
            if ".deleted." in p.name and not p.name.endswith(".tmp"):
                found[(p.name.split(".deleted.", 1)[0], sha(read_archive_bytes(p)))] += 1
    return found


def _rows(state: Path, kind: str) -> dict:
    if kind == "legacy":
        return LegacyStore(_sessions(state) / "sessions.json", "main").load_rows()
    with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
        return store.load_entries()


def _check_invariant(state: Path, kind: str, entries: dict, originals: dict[str, bytes]) -> None:
    """Every row gone from the store has its transcript: the original or a verified archive."""
    rows = _rows(state, kind)
    archives = _archives(state)
    current = (
        _originals(state, kind, {k: e for k, e in entries.items() if k in rows}) if kind == "sqlite" else None
    )
    for key, e in entries.items():
        if key in rows:
            continue
        name = f"{e['sessionId']}.jsonl"
        data = originals.get(name)
        if not data:
            continue
        if kind == "legacy":
            present = (_sessions(state) / name).exists() and (_sessions(state) / name).read_bytes() == data
        else:
            present = current.get(name) == data
        assert present or archives[(name, sha(data))] >= 1, f"{key}: transcript lost"


def _fingerprint(state: Path, kind: str) -> tuple:
    root = _sessions(state)
    files = Counter()
    leftovers = []
    for p in sorted(root.iterdir()):
        if p.name.endswith((".tmp", ".lock")):
            leftovers.append(p.name)
        elif ".deleted." in p.name:
            files[("archive", p.name.split(".deleted.", 1)[0], sha(read_archive_bytes(p)))] += 1
        elif p.name != "sessions.json":
            files[("file", p.name, sha(p.read_bytes()))] += 1
    extra: tuple = ()
    if kind == "sqlite":
        with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
            sids = sorted(e["sessionId"] for e in store.load_entries().values())
            dumps = []
            for sid in sids:
                buf = io.BytesIO()
                store.export_transcript(sid, buf)
                dumps.append((sid, sha(buf.getvalue())))
            windows = sorted(w["sessionId"] for w in store.list_windows())
        extra = (tuple(dumps), tuple(windows))
    return _rows(state, kind), files, leftovers, extra


def _crash_cycle(tmp_path: Path, kind: str, kill_points: int, timer_kills: int) -> None:
    initial = tmp_path / "initial"
    entries = _build(initial, kind)
    originals = _originals(initial, kind, entries)
    ref = tmp_path / "ref"
    shutil.copytree(initial, ref)
    count_file = tmp_path / "count"
    started = time.monotonic()
    proc = _run(ref, OPENCLAW_CLEANUP_CRASH_COUNT=str(count_file))
    duration = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    total = int(count_file.read_text())
    assert total > 20
    expected = _fingerprint(ref, kind)
    assert not expected[2]  # the uninterrupted run leaves no temp or lock file
    rng = random.Random(SEED)
    points = list(range(1, total + 1)) if FULL else spread(total, kill_points)
    cases: list[tuple[str, float]] = [("checkpoint", p) for p in points]
    cases += [("timer", rng.uniform(0.35, 1.0) * duration) for _ in range(timer_kills)]
    for index, (how, where) in enumerate(cases):
        work = tmp_path / f"w{index}"
        shutil.copytree(initial, work)
        if how == "checkpoint":
            proc = _run(work, OPENCLAW_CLEANUP_CRASH_AT=str(where))
            assert proc.returncode == -signal.SIGKILL, (where, proc.stderr)
        else:
            child = subprocess.Popen(
                [sys.executable, "-m", "openclaw_cli", "sessions", "cleanup", "--enforce", "--json"],
                env=_env(work),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(where)
            child.send_signal(signal.SIGKILL)
            child.wait()
        _check_invariant(work, kind, entries, originals)
        rerun = _run(work)
        assert rerun.returncode == 0, (how, where, rerun.stderr)
        _check_invariant(work, kind, entries, originals)
        got = _fingerprint(work, kind)
        assert got[0] == expected[0], (how, where, "rows differ")
        assert got[1] == expected[1], (how, where, got[1] - expected[1], expected[1] - got[1])
        assert got[2:] == expected[2:], (how, where, got[2])
        shutil.rmtree(work)


@pytest.mark.slow
def test_legacy_cleanup_survives_sigkill_anywhere(tmp_path):
    _crash_cycle(tmp_path, "legacy", kill_points=7, timer_kills=8 if FULL else 2)


@pytest.mark.slow
def test_sqlite_cleanup_survives_sigkill_anywhere(tmp_path):
    _crash_cycle(tmp_path, "sqlite", kill_points=5, timer_kills=4 if FULL else 1)


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_the_crash_hook_is_inert_without_the_variable(kind, tmp_path):
    state = tmp_path / "s"
    _build(state, kind)
    proc = _run(state)
    assert proc.returncode == 0 and json.loads(proc.stdout)["pruned"] == 71
