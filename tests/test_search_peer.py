"""Peer test (issue 26): a schema-23 state imported by the real OpenClaw 2026.9.6, searched through
its own Gateway (`sessions.search`) and through ours, returns the same sessions for the same
query on live (non-archived) data."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import GEN_LEGACY_STORE, run_cli
from tests.openclaw_db_support import DB_REL, NO_PEER, TOKEN, gateway_calls, have_peer, peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.slow]

# word -> (how many sessions get it, role)
PLANTED = {
    "quokka": (3, "user"),
    "zeppelin": (2, "assistant"),
    "marmalade": (1, "user"),
    "lighthouse": (4, "user"),
}


def _plant(state: Path) -> dict[str, set[str]]:
    """Append messages holding the planted words at the end of some sessions' active branch;
    returns word -> the session keys that hold it."""
    sdir = state / "agents" / "main" / "sessions"
    store = json.loads((sdir / "sessions.json").read_text())
    keys = sorted(store)
    holders: dict[str, set[str]] = {w: set() for w in PLANTED}
    now = int(time.time() * 1000) - 60_000
    for n, (word, (count, role)) in enumerate(PLANTED.items()):
        for key in keys[n : n + count]:
            path = sdir / f"{store[key]['sessionId']}.jsonl"
            last = json.loads(path.read_bytes().rstrip().rsplit(b"\n", 1)[-1])
            event = {
                "type": "message",
                "id": f"{n:02x}{len(holders[word]):02x}beef",
                "parentId": last.get("id"),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now / 1000)),
                "message": {
                    "role": role,
                    "content": [{"type": "text", "text": f"about the {word} plan"}],
                    "timestamp": now,
                },
            }
            with open(path, "ab") as fh:
                fh.write(orjson.dumps(event) + b"\n")
            holders[word].add(key)
    return holders


@pytest.mark.skipif(not have_peer(), reason=NO_PEER)
def test_real_gateway_and_ours_return_the_same_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "peer"
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            "20",
            "0.3",
            "2626",
            "--cron-key-style",
            "canonical",
            "--now-ms",
            str(int(time.time() * 1000)),
        ],
        check=True,
        capture_output=True,
    )
    holders = _plant(state)
    imported = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert imported.returncode == 0, imported.stderr[-2000:]
    queries = [*PLANTED, "quokka plan", "lighthouse about"]
    with peer_gateway(root) as port:
        answers = gateway_calls(port, [("sessions.search", {"query": q, "limit": 25}) for q in queries])
        # our CLI on that state, the real Gateway owning it: a plain live-only query goes to it
        env = {
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_HOME": str(root / "home"),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        }
        delegated = run_cli(
            "sessions",
            "search",
            "quokka",
            "--no-archived",
            "--json",
            "--limit",
            "25",
            "--url",
            f"ws://127.0.0.1:{port}",
            "--token",
            TOKEN,
            env=env,
        )
        assert delegated.returncode == 0, delegated.stderr
        hits = json.loads(delegated.stdout)["results"]
        assert {h["source"] for h in hits} == {"gateway"} and {h["sessionKey"] for h in hits} == holders[
            "quokka"
        ]
    db = state / DB_REL
    for query, answer in zip(queries, answers, strict=True):
        assert answer["ok"], answer
        theirs = {hit["sessionKey"] for hit in answer["payload"]["results"]}
        proc = run_cli(
            "sessions", "search", query, "--store", str(db), "--no-archived", "--limit", "25", "--json"
        )
        assert proc.returncode == 0, proc.stderr
        ours = json.loads(proc.stdout)["results"]
        assert {hit["sessionKey"] for hit in ours} == theirs, query
        assert {hit["source"] for hit in ours} == {"schema23"}
        word = query.split()[0]
        assert theirs == holders[word], query  # the real one agrees with what was planted, too
