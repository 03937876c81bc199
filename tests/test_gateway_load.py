"""Concurrent clients against one Gateway while a cleanup and a compaction write the same store: no
request fails, no acknowledged patch is lost, no `database is locked`. The full run (50 clients ×
200 requests on 2,000 sessions) is `scripts/bench --only gateway`; this one is small and bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from openclaw_cli.ops.methods import METHODS
from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_load import lost_updates, run_load
from tests.gateway_server_support import TOKEN, GatewayProcess, write_config


def _entries(state: Path) -> dict:
    from openclaw_cli.store.sqlite.store import SqliteStore

    with SqliteStore(state / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True) as store:
        return store.load_entries()


def _planned_changes(now_ms: int) -> set[str]:
    """The keys a cleanup planned at `now_ms` removes or archives in place (a dry run)."""
    from openclaw_cli.ops.cleanup import cleanup_stores, options_from_params
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    options = options_from_params({"enforce": True, "dryRun": True})
    (result,) = cleanup_stores(Context.load(resolve_paths()), options, now_ms=now_ms)
    return set(result.plan.removed) | set(result.plan.archived)


def test_concurrent_clients_with_cleanup_and_compact(state_dir: Path) -> None:
    # ages relative to the real clock (the cleanup runs now), not to the generator's fixed date
    generate_legacy_state(state_dir, 200, 0, 31337, "--now-ms", str(int(time.time() * 1000)))
    write_config(
        state_dir, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 5000}}}
    )
    done = run_cli("doctor", "--session-sqlite", "import", "--json")
    assert done.returncode == 0, done.stderr
    before = _entries(state_dir)
    newest = sorted(before, key=lambda k: -(before[k].get("updatedAt") or 0))
    from openclaw_cli.keys import is_pinnable

    # rows the concurrent cleanup keeps as they are (the store's release decides: 2026.9.6+ also
    # archives inactive dashboard rows, D23), planned an hour ahead so none crosses a boundary
    # before the real run; and pinnable (not a sub-agent run)
    touched = _planned_changes(int(time.time() * 1000) + 3_600_000)
    fresh = [k for k in newest if is_pinnable(k, before[k]) and k not in touched][:60]
    assert len(fresh) >= 20, len(fresh)
    patch = "sessions.patch" in METHODS
    with GatewayProcess() as gw:
        report = asyncio.run(
            run_load(
                gw.url,
                TOKEN,
                clients=10,
                requests=40,
                keys=newest,
                patch_keys=fresh,
                patch=patch,
                cleanup={"enforce": True},
                compact={"key": "agent:main:main", "maxLines": 3},
            )
        )
        log = "".join(gw.lines)
    assert not report.failures, report.failures[:5]
    assert report.requests == 10 * 40 + 2
    cleanup = report.background["sessions.cleanup"]["payload"]
    assert cleanup["applied"] is True and cleanup["pruned"] > 0
    assert report.background["sessions.compact"]["payload"]["compacted"] is True
    after = _entries(state_dir)
    assert len(after) == cleanup["afterCount"]
    assert lost_updates(report, after) == []
    if patch:
        assert report.acknowledged
    assert "database is locked" not in log and "Traceback" not in log
    for method in ("sessions.list", "sessions.describe", "sessions.preview"):
        assert report.latencies[method], method
