"""`sessions.list` `sortBy` against the real OpenClaw 2026.9.6 Gateway: one generated state with
pins against the updatedAt order, a pinned sub-agent run, ties and missing timestamps, imported
by the real OpenClaw and served by its Gateway; our listing of the same state — the legacy
sessions.json, our SQLite import of it, and the real schema-23 database — gives the same keys in
the same order, the same counts and pages, for all three orders. Skipped without /tmp/peer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GEN_LEGACY_STORE, run_cli
from tests.openclaw_db_support import NO_PEER, gateway_calls, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]

SORTS = (None, "updatedAt", "lastInteractionAt", "activity")
MINUTE = 60_000


def _craft(state: Path) -> dict[str, dict[str, Any]]:
    """Pins whose order contradicts updatedAt (the oldest row pinned last), a pinned sub-agent
    run, updatedAt and lastInteractionAt ties, rows without lastInteractionAt, lastActivityAt
    newer and older than it, and an archived row."""
    path = state / "agents/main/sessions/sessions.json"
    entries = json.loads(path.read_text())
    plain = sorted((e["updatedAt"], k) for k, e in entries.items() if ":direct:" in k or ":group:" in k)
    sub = sorted(k for k in entries if ":subagent:" in k)
    base = max(e["updatedAt"] for e in entries.values())
    for rank, (_, key) in enumerate(plain[:3]):  # the three oldest: the oldest gets the newest pin
        entries[key]["pinnedAt"] = base - rank * MINUTE
    entries[sub[0]]["pinnedAt"] = base + MINUTE  # not pinnable
    tie_u = [k for _, k in plain[4:6]]
    for key in tie_u:
        entries[key]["updatedAt"] = plain[5][0]
    tie_i = [k for _, k in plain[6:8]]
    for key in tie_i:
        entries[key]["lastInteractionAt"] = base - 30 * MINUTE
    for _, key in plain[8:10]:
        entries[key].pop("lastInteractionAt", None)
    entries[plain[10][1]]["lastActivityAt"] = base + 5 * MINUTE  # newer than any interaction
    entries[plain[11][1]]["lastActivityAt"] = 1  # positive but older: the interaction wins
    entries[plain[9][1]]["lastActivityAt"] = base - 90 * MINUTE  # activity without an interaction
    entries[plain[12][1]]["archivedAt"] = base
    path.write_text(json.dumps(entries, indent=2))
    return entries


def _ours(state: Path, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    paths = resolve_paths(
        {
            "HOME": str(state.parent),
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        }
    )
    return call(Context.load(paths), "sessions.list", params)


def _safe_minutes(entries: dict[str, dict[str, Any]], now: int) -> int:
    """An activeMinutes whose cutoff is at least 20 minutes from every row's updatedAt and
    activity time (both clocks move while the test runs) and keeps some rows out."""
    from openclaw_cli.store.base import activity_timestamp

    stamps = [s for e in entries.values() for s in (e.get("updatedAt") or 0, activity_timestamp(e))]
    for minutes in range(24 * 60, 90 * 24 * 60, 30):
        cutoff = now - minutes * MINUTE
        if all(abs(s - cutoff) > 20 * MINUTE for s in stamps) and any(s < cutoff for s in stamps):
            return minutes
    raise AssertionError("no activeMinutes away from every timestamp")


def _shape(page: dict[str, Any]) -> tuple[Any, ...]:
    return (
        [r["key"] for r in page["sessions"]],
        [r["pinned"] for r in page["sessions"]],
        page["count"],
        page["totalCount"],
        page.get("offset"),
        page["nextOffset"],
        page["hasMore"],
    )


def test_sort_orders_match_the_real_gateway(tmp_path: Path) -> None:
    root = tmp_path / "peer"
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            "30",
            "0",
            "4242",
            "--cron-key-style",
            "canonical",
            "--now-ms",
            str(int(time.time() * 1000)),
        ],
        check=True,
        capture_output=True,
    )
    _craft(state)
    legacy = shutil.copytree(state, tmp_path / "ours-legacy" / ".openclaw")
    ours_sqlite = shutil.copytree(state, tmp_path / "ours-sqlite" / ".openclaw")
    done = run_cli(
        "doctor", "--session-sqlite", "import", "--json", env={"OPENCLAW_STATE_DIR": str(ours_sqlite)}
    )
    assert done.returncode == 0, done.stderr
    imported = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert imported.returncode == 0, imported.stderr[-2000:]
    legacy_entries = json.loads((legacy / "agents/main/sessions/sessions.json").read_text())
    minutes = _safe_minutes(legacy_entries, int(time.time() * 1000))

    requests: list[dict[str, Any]] = []
    for sort_by in SORTS:
        order = {} if sort_by is None else {"sortBy": sort_by}
        requests += [
            {**order, "limit": 100},
            {**order, "limit": 7},
            {**order, "limit": 7, "offset": 7},
            {**order, "limit": 5, "offset": 25},
            {**order, "archived": "all", "limit": 9},
            {**order, "activeMinutes": minutes},
        ]
    with peer_gateway(root) as port:
        answers = gateway_calls(
            port,
            [
                *[("sessions.list", params) for params in requests],
                ("sessions.subscribe", {"sortBy": "activity", "limit": 4}),
                ("sessions.list", {"sortBy": None}),
            ],
        )
    *listed, subscribed, refused = answers
    assert all(a["ok"] for a in listed), [a for a in listed if not a["ok"]][:1]

    from openclaw_cli.ops.methods import check_params

    assert refused["ok"] is False and refused["error"]["message"] == check_params(
        "sessions.list", {"sortBy": None}
    )
    theirs_first = [r["key"] for r in listed[0]["payload"]["sessions"]]
    assert len(theirs_first) > 20
    by_sort = {sort_by: listed[i * 6]["payload"] for i, sort_by in enumerate(SORTS)}
    assert [r["key"] for r in subscribed["payload"]["list"]["sessions"]] == [
        r["key"] for r in by_sort["activity"]["sessions"][:4]
    ]
    # the three orders differ on this state (the comparison below could not pass by accident)
    orders = {s: [r["key"] for r in page["sessions"]] for s, page in by_sort.items()}
    assert orders[None] == orders["updatedAt"] and len({tuple(o) for o in orders.values()}) == 3
    assert [r["pinned"] for r in by_sort["updatedAt"]["sessions"][:4]] == [True, True, True, False]

    for name, where in (("legacy", legacy), ("sqlite", ours_sqlite), ("schema23", state)):
        for params, answer in zip(requests, listed, strict=True):
            assert _shape(_ours(where, params)) == _shape(answer["payload"]), (name, params)
