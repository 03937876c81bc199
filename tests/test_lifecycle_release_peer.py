"""Lifecycle as OpenClaw 2026.9.6 does it (issue 22 §4, §6), side by side with the real Gateway:
reset (a known key and an unknown one), `compact --max-lines` and `label` / `label --clear`, sent by
our CLI through the real Gateway on one copy of a state its import wrote, and run by our CLI offline
on a twin copy, leave the same rows and transcripts. Skipped without /tmp/peer."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


def test_reset_compact_and_label_through_the_real_gateway_and_offline_agree(tmp_path: Path):
    root = tmp_path / "peer"
    state = build_real_state(root, sessions=12, total_mb=0.2)
    twin = tmp_path / "twin" / ".openclaw"
    shutil.copytree(state, twin)
    before = nodes(state / DB_REL)
    assert {KNOWN, COMPACTED, LABELLED} <= set(before) and UNKNOWN not in before

    steps = [
        ("sessions", "reset", KNOWN),
        ("sessions", "reset", UNKNOWN),
        ("sessions", "compact", COMPACTED, "--max-lines", "3"),
        ("sessions", "label", LABELLED, "Quarterly planning"),
        ("sessions", "label", LABELLED, "--clear"),
    ]
    with peer_gateway(root) as port:
        gateway_calls(
            port, [("health", {})]
        )  # ready: its sidecars started (it answers "starting" until then)
        served = [_ours(state, *step, port=port) for step in steps]
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
    assert served[0]["entry"]["sessionId"] == offline[0]["entry"]["sessionId"] == before[KNOWN][0]
    assert served[2]["kept"] == offline[2]["kept"] == 3

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
