"""Issue 30's memory regression guard: `status --json` and `sessions cleanup --dry-run --json` over a
20,000-row database store grow their peak RSS by at most 1,100 bytes per row over the same command
on a one-row store (the same interpreter, imports and code paths, so new imports do not count).
Planning over per-session facts grows ~650 B per row; over whole entries (before issue 30) ~1,950 B,
and a key-parse cache as large as the store added ~300 B. Peak RSS does not depend on the machine's
load; no time is measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROWS = 20_000
BYTES_PER_ROW = 1_100  # the ceiling; measured: facts ~650, whole entries ~1,950
DAY = 86_400_000

# A tiny launcher times nothing and reports the command's peak RSS with wait4: a child forked
# straight from pytest would be charged at least pytest's own size.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvpe(sys.argv[1], sys.argv[1:], os.environ)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""
OPENCLAW = str(Path(sys.executable).with_name("openclaw"))


def _entry(n: int, now: int) -> dict[str, Any]:
    """A row like the bench's generated ones (~500 bytes of JSON, ~16 fields)."""
    sid = f"{n:08x}-0000-4000-8000-{n:012x}"
    updated = now - (n * 7919 % 90) * DAY - n
    return {
        "sessionId": sid,
        "updatedAt": updated,
        "sessionStartedAt": updated - 3_600_000,
        "lastInteractionAt": updated,
        "chatType": "group" if n % 9 == 0 else "direct",
        "modelProvider": "openai",
        "model": "gpt-5.4",
        "inputTokens": 10_000 + n,
        "outputTokens": 1_000 + n,
        "totalTokens": 11_000 + 2 * n,
        "contextTokens": 400_000,
        "compactionCount": n % 3,
        "systemSent": True,
        "sessionFile": f"/state/agents/main/sessions/{sid}.jsonl",
        "channel": "telegram",
        "lastChannel": "telegram",
    }


def _state(root: Path, rows: int) -> dict[str, str]:
    from openclaw_cli.store.sqlite.store import SqliteStore

    state = root / ".openclaw"
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir()
    config = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 5000}}}
    (state / "openclaw.json").write_text(json.dumps(config))
    now = int(time.time() * 1000)
    store = SqliteStore(db, agent_id="main", create=True)
    try:
        keys = ("telegram:direct", "cron", "hook", "dashboard", "telegram:group")
        store.upsert_entries({f"agent:main:{keys[n % 5]}:{n}": _entry(n, now) for n in range(rows)})
    finally:
        store.close()
    env = dict(os.environ)
    env.update(
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_HOME=str(root),
        HOME=str(root),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
    )
    return env


def _peak_kib(argv: list[str], env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-S", "-c", _LAUNCHER, OPENCLAW, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rss, code = done.stdout.split()[-2:]
    assert code == "0", done.stderr[-2000:]
    return int(rss)


@pytest.mark.slow  # ~3 s of CPU per command: 20,000 rows written, four CLI runs
@pytest.mark.parametrize(
    "argv", [["status", "--json", "--no-probe"], ["sessions", "cleanup", "--dry-run", "--json"]]
)
def test_peak_memory_grows_by_facts_not_whole_entries(tmp_path: Path, argv: list[str]) -> None:
    small = _state(tmp_path / "small", 1)
    large = _state(tmp_path / "large", ROWS)
    base, peak = _peak_kib(argv, small), _peak_kib(argv, large)
    per_row = (peak - base) * 1024 / ROWS
    assert per_row <= BYTES_PER_ROW, f"{' '.join(argv)}: {base} KiB -> {peak} KiB ({per_row:.0f} B per row)"
