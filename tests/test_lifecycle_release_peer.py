"""The real OpenClaw 2026.9.6 Gateway on a state its own import wrote, after ours wrote to it; one
real Gateway for the module (a start costs ~17 s of CPU, issue 24), the reading test first.
Skipped without /tmp/peer.

- Session groups (issue 25): our Gateway creates, renames and configures groups and files a session
  in one (the real OpenClaw's state database holds the catalog, its schema-23 database the rows);
  the real Gateway, started on that state, lists the same catalog, defaults, sidebar order and
  membership.
- Lifecycle as 2026.9.6 does it (issue 22 §4, §6): reset (a known key and an unknown one),
  `compact --max-lines` and `label` / `label --clear`, sent by our CLI through the real Gateway,
  and run by our CLI offline on a twin copy of the state, leave the same rows and transcripts."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.gateway_server_support import GatewayThread, connected, write_config
from tests.openclaw_db_support import (
    DB_REL,
    NO_PEER,
    TOKEN,
    build_real_state,
    gateway_calls,
    have_peer,
    nodes,
    peer_gateway,
)

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]

KNOWN = "agent:main:telegram:direct:100001"
COMPACTED = "agent:main:telegram:group:123"
LABELLED = "agent:main:telegram:direct:100004"
UNKNOWN = "agent:main:telegram:direct:no-such-peer"
GROUPS_CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
GROUP_CHAT = COMPACTED  # filed in a group by ours, compacted later through the real Gateway


def _write_groups(state: Path) -> dict[str, Any]:
    """Our Gateway (in this process) on `state`: groups created, renamed, configured, a session
    filed; returns its `sessions.groups.list`."""
    with pytest.MonkeyPatch.context() as env:
        for name in ("OPENCLAW_HOME", "HOME"):
            env.setenv(name, str(state.parent))
        env.setenv("OPENCLAW_STATE_DIR", str(state))
        env.setenv("OPENCLAW_CONFIG_PATH", str(state / "openclaw.json"))
        with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
            put = {"names": ["Work", "Play"], "sectionOrder": ["category:Work", "ungrouped", "category:Play"]}
            assert c.request("sessions.groups.put", put)["ok"]
            assert c.request("sessions.patch", {"key": GROUP_CHAT, "category": "Work"})["ok"]
            renamed = c.request("sessions.groups.rename", {"name": "Work", "to": "Job"})
            assert renamed["payload"]["updatedSessions"] == 1
            update = {"name": "Play", "cwd": "/srv/play", "worktree": True}
            assert c.request("sessions.groups.update", update)["ok"]
            return c.request("sessions.groups.list", {})["payload"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """A state the real OpenClaw imported (its state database holds the groups catalog), groups
    written by ours, a twin copy for the offline runs, and the real Gateway on the first copy."""
    base = tmp_path_factory.mktemp("release-served")
    root = base / "peer"
    state = build_real_state(root, sessions=12, total_mb=0.2)
    assert (state / "state" / "openclaw.sqlite").is_file()
    write_config(state, GROUPS_CONFIG)
    groups = _write_groups(state)
    twin = base / "twin" / ".openclaw"
    shutil.copytree(state, twin)
    before = nodes(state / DB_REL)
    with peer_gateway(root) as port:
        yield SimpleNamespace(root=root, state=state, twin=twin, before=before, port=port, groups=groups)


def _calls_when_ready(port: int, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """`gateway_calls`, retried while the real Gateway still closes connections as starting (1013)."""
    from websockets.exceptions import ConnectionClosed

    deadline = time.monotonic() + 180
    while True:
        try:
            return gateway_calls(port, calls)
        except ConnectionClosed:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def test_real_gateway_reads_the_groups_ours_wrote(served: SimpleNamespace) -> None:
    assert served.groups == {
        "groups": [{"name": "Job", "position": 0}, {"name": "Play", "position": 1}],
        "sectionOrder": ["category:Job", "ungrouped", "category:Play"],
    }
    listed, defaults, rows = _calls_when_ready(
        served.port,
        [
            ("sessions.groups.list", {}),
            ("sessions.groups.defaults", {}),
            ("sessions.list", {"agentId": "main", "limit": 50}),
        ],
    )
    assert listed["ok"] and listed["payload"] == served.groups
    assert defaults["payload"] == {
        "defaults": [{"name": "Job"}, {"name": "Play", "cwd": "/srv/play", "worktree": True}]
    }
    categories = {r["key"]: r.get("category") for r in rows["payload"]["sessions"]}
    assert categories[GROUP_CHAT] == "Job"
    assert [k for k, v in categories.items() if v] == [GROUP_CHAT]


def _ours(state: Path, *args: str, port: int | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    env.update(
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        HOME=str(state.parent),
        OPENCLAW_HOME=str(state.parent),
    )
    if port is not None:
        env.update(OPENCLAW_GATEWAY_PORT=str(port), OPENCLAW_GATEWAY_TOKEN=TOKEN)
    else:
        env["OPENCLAW_GATEWAY_PORT"] = "1"  # nothing listens: offline
    proc = subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    doc = json.loads(proc.stdout)
    assert ("ran locally" in proc.stderr) is (port is None), proc.stderr  # served, or run here
    return doc


def _events(db: Path, sid: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        texts = [
            r[0]
            for r in conn.execute(
                "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (sid,)
            )
        ]
    finally:
        conn.close()
    return [json.loads(t) for t in texts if t is not None]


def _entry(db: Path, key: str) -> dict[str, Any]:
    return json.loads(nodes(db)[key][1])


def test_reset_compact_and_label_through_the_real_gateway_and_offline_agree(served: SimpleNamespace):
    state, twin, before, port = served.state, served.twin, served.before, served.port
    assert {KNOWN, COMPACTED, LABELLED} <= set(before) and UNKNOWN not in before

    steps = [
        ("sessions", "reset", KNOWN),
        ("sessions", "reset", UNKNOWN),
        ("sessions", "compact", COMPACTED, "--max-lines", "3"),
        ("sessions", "label", LABELLED, "Quarterly planning"),
        ("sessions", "label", LABELLED, "--clear"),
    ]
    gateway_calls(port, [("health", {})])  # ready: its sidecars started (it answers "starting" until then)
    served_docs = [_ours(state, *step, port=port) for step in steps]
    offline = [_ours(twin, *step, "--no-backup") for step in steps]

    real_db, our_db = state / DB_REL, twin / DB_REL
    for db in (real_db, our_db):
        after = nodes(db)
        # the session ids OpenClaw 2026.9.6 keeps: reset and compact --max-lines
        assert after[KNOWN][0] == before[KNOWN][0] and after[COMPACTED][0] == before[COMPACTED][0], db
        assert UNKNOWN in after, db  # its reset created the row
        created = _entry(db, UNKNOWN)
        assert created["createdVia"] == "operator" and created["totalTokens"] == 0, db
        reset = _entry(db, KNOWN)
        assert (reset["inputTokens"], reset["outputTokens"], reset["totalTokensFresh"]) == (0, 0, True), db
        assert "label" not in _entry(db, LABELLED), db
    assert served_docs[0]["entry"]["sessionId"] == offline[0]["entry"]["sessionId"] == before[KNOWN][0]
    assert served_docs[2]["kept"] == offline[2]["kept"] == 3

    for key, sid in ((KNOWN, before[KNOWN][0]), (COMPACTED, before[COMPACTED][0])):
        theirs, mine = _events(real_db, sid), _events(our_db, sid)
        assert len(theirs) == len(mine), key
        assert [e.get("type") for e in theirs] == [e.get("type") for e in mine], key
    theirs, mine = _events(real_db, before[KNOWN][0])[-1], _events(our_db, before[KNOWN][0])[-1]
    assert theirs["type"] == mine["type"] == "reset" and theirs["reason"] == mine["reason"] == "reset"
    assert theirs["parentId"] == mine["parentId"]
    assert [e.get("id") for e in _events(real_db, before[COMPACTED][0])] == [
        e.get("id") for e in _events(our_db, before[COMPACTED][0])
    ]
    for key in (KNOWN, COMPACTED, LABELLED):
        real_entry, our_entry = _entry(real_db, key), _entry(our_db, key)
        for name in (
            "sessionId",
            "label",
            "inputTokens",
            "outputTokens",
            "totalTokens",
            "compactionCount",
            "model",
            "modelProvider",
            "systemSent",
            "abortedLastRun",
        ):
            assert our_entry.get(name) == real_entry.get(name), (key, name)
