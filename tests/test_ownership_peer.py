"""Issue 23 parts 3 and 4 judged by the real OpenClaw 2026.9.6 (/tmp/peer; skipped without it):
(a) after our offline writes (pin, archive, reset, fork, compact, `--max-lines`, delete, cleanup)
the real Gateway's start on that state logs no transcript reconcile and no projection rebuild, and
its `sessions.search` finds the written sessions; (b) the real CLI, pointed at OUR Gateway serving
a schema-23 state the real OpenClaw migrated, pins, archives, resets, deletes and cleans up — and
while ours runs, the real CLI's own maintenance sees it as the state's owner."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cleanup_support import cli_json, write_config

from tests.gateway_server_support import TOKEN, GatewayProcess
from tests.openclaw_db_support import (
    DB_REL,
    NO_PEER,
    PEER,
    checks,
    connect,
    decoded_jsonl,
    gateway_calls,
    have_peer,
    nodes,
    peer,
    peer_gateway,
    unsettled,
)

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]
MAIN, GROUP = "agent:main:main", "agent:main:telegram:group:123"
RECONCILE_LOG = ("transcript reconcile failed", "transcript projection(s)")


def _picked(db: Path) -> list[str]:
    return sorted(k for k in nodes(db) if k not in (MAIN, GROUP) and "model-run" not in k)[:5]


def _a_word(db: Path, sid: str) -> str | None:
    """A searchable word of the session's own full-text rows."""
    conn = connect(db)
    try:
        row = conn.execute(
            "SELECT f.text FROM session_transcript_fts_rows AS r JOIN session_transcript_fts AS f"
            " ON f.rowid = r.id WHERE r.session_id = ? ORDER BY r.id LIMIT 1",
            (sid,),
        ).fetchone()
    finally:
        conn.close()
    words = [w for w in (row[0] if row else "").split() if w.isalpha() and len(w) > 3]
    return words[0] if words else None


def test_the_real_gateway_finds_nothing_to_reconcile_after_our_writes(real_state: Path, tmp_path: Path):
    db = real_state / DB_REL
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    pinned, archived, reset, deleted, _ = _picked(db)
    before = nodes(db)
    for args in (
        ("sessions", "pin", pinned),
        ("sessions", "archive", archived),
        ("sessions", "reset", reset),
        ("sessions", "fork", MAIN, "--to", "agent:main:forked"),
        ("compact", MAIN),
        ("compact", GROUP, "--max-lines", "5"),
        ("sessions", "delete", deleted, "--yes"),
        ("sessions", "cleanup", "--enforce"),
    ):
        code, doc, err = cli_json(*args, "--store", str(db), "--json")
        assert code == 0, (args, err, doc)
    left = unsettled(db)
    assert left["reconcile"] == [] and left["orphans"] == [] and left["unmapped"] == []
    ours = nodes(db)
    assert deleted not in ours and "agent:main:forked" in ours
    _reset_kept_its_session(db, ours, before, reset)
    written = [k for k in (pinned, archived, "agent:main:forked", MAIN, GROUP) if k in ours]
    queries = {key: _a_word(db, ours[key][0]) for key in written}
    assert all(queries.values()), queries
    log = real_state / "logs" / "openclaw.log"
    with peer_gateway(tmp_path) as port:
        found = gateway_calls(
            port,
            [
                ("sessions.search", {"query": word, "limit": 25, "sessionKeys": [key]})
                for key, word in queries.items()
            ],
        )
    text = log.read_text(errors="replace")
    assert not [phrase for phrase in RECONCILE_LOG if phrase in text], [
        line[:300] for line in text.splitlines() if any(p in line for p in RECONCILE_LOG)
    ]
    for (key, word), res in zip(queries.items(), found, strict=True):
        assert res["ok"], res
        keys = {hit["sessionKey"] for hit in res["payload"]["results"]}
        assert keys == {key}, (key, word, res["payload"])
    assert checks(db) == ("ok", [])


def _reset_kept_its_session(db: Path, ours: dict, before: dict, key: str) -> None:
    """A reset as 2026.9.6 does it (the release of a schema-23 store, D23; the real Gateway keeps
    the sessionId): same sessionId, the transcript ends in a `reset` entry."""
    assert ours[key][0] == before[key][0], key
    last = decoded_jsonl(db, ours[key][0]).rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert json.loads(last)["type"] == "reset", last[:300]


def _peer_at(root: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OC_PEER_ROOT=str(root), OPENCLAW_GATEWAY_PORT=str(port), OPENCLAW_GATEWAY_TOKEN=TOKEN
    )
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME"):
        env.pop(name, None)
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=240)


def _ok(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return json.loads(proc.stdout)


def test_the_real_cli_writes_a_state_it_migrated_through_our_gateway(real_state: Path, tmp_path: Path):
    db = real_state / DB_REL
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    pinned, archived, reset, deleted, _ = _picked(db)
    before = nodes(db)
    with GatewayProcess() as gw:
        port = int(gw.url.rsplit(":", 1)[1])
        root = tmp_path / "peer-cli"
        (root / "home" / ".openclaw").mkdir(parents=True)
        (root / "home" / ".openclaw" / "openclaw.json").write_text(
            json.dumps(
                {"gateway": {"mode": "local", "port": port, "auth": {"mode": "token", "token": TOKEN}}}
            )
        )
        _ok(
            _peer_at(
                root,
                port,
                "gateway",
                "call",
                "sessions.patch",
                "--params",
                json.dumps({"key": pinned, "pinned": True}),
                "--json",
            )
        )
        done = _ok(_peer_at(root, port, "sessions", "archive", archived, "--json"))
        assert done["ok"] is True and done["results"][0]["status"] == "archived"
        _ok(
            _peer_at(
                root,
                port,
                "gateway",
                "call",
                "sessions.reset",
                "--params",
                json.dumps({"key": reset}),
                "--json",
            )
        )
        done = _ok(_peer_at(root, port, "sessions", "delete", deleted, "--yes", "--json"))
        assert done["ok"] is True and done["results"][0]["status"] == "deleted"
        cleaned = _ok(_peer_at(root, port, "sessions", "cleanup", "--enforce", "--json"))
        assert cleaned["applied"] is True
        # the real CLI's own maintenance on the state our Gateway serves: refused, ours is the owner
        refused = peer(real_state.parent.parent, "doctor", "--session-sqlite", "compact", "--json")
        assert refused.returncode != 0 and "owns this OpenClaw state directory" in refused.stdout, (
            refused.stdout[-800:]
        )
        served = "".join(gw.lines)
    for method in ("sessions.patch", "sessions.reset", "sessions.delete", "sessions.cleanup"):
        assert f"res ✓ {method} " in served, method  # went through our Gateway (no UNAVAILABLE state_owned)
    ours = nodes(db)
    assert json.loads(ours[pinned][1]).get("pinnedAt") is not None
    assert archived not in ours or json.loads(ours[archived][1]).get("archivedAt") is not None
    assert deleted not in ours
    _reset_kept_its_session(db, ours, before, reset)
    left = unsettled(db)
    assert left["reconcile"] == [] and left["orphans"] == [] and left["unmapped"] == []
    assert not {pinned, archived, reset} & set(left["pending"])
    assert checks(db) == ("ok", [])
