"""`sessions.fork` and `sessions.branches.switch` through a real Gateway socket on every store kind
(legacy, our SQLite, OpenClaw schema 23 and 24), as OpenClaw 2026.9.6 answers them (recorded in
tests/fixtures/gateway-2026.9.6-issue25/writes-5.jsonl; the side-by-side run is
test_gateway_clients_peer.py). A fork or a switch never changes a line of the transcript it
reads (D6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config
from tests.storage_support import STORE_KINDS, make_state

GROUP = "agent:main:telegram:group:123"
CONFIG = {"gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}}}
# the fixture's telegram group: its transcript, root first (ids from the checked-in state)
FIRST_USER, SECOND_USER, LAST = "e18b691e", "1cc25a03", "69e2b3de"
ASSISTANT = "f54b7027"


def _open(state: Path, read_only: bool = True) -> Any:
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    return open_agent_store(resolve_paths(), "main", read_only=read_only)


def transcript(state: Path, key: str) -> tuple[str, list[str]]:
    """(sessionId, raw lines) of `key`'s current transcript, read through its store."""
    with _open(state) as store:
        entry = store.get_entry(key)
        assert entry is not None, key
        return entry["sessionId"], [
            line.raw for line in store.iter_transcript(entry["sessionId"], entry=entry)
        ]


def every_window(state: Path, session_id: str) -> list[str]:
    with _open(state) as store:
        return [line.raw for line in store.iter_transcript(session_id)]


def add_branch(state: Path, kind: str) -> None:
    """A second answer to the first user message: a tip `b2` beside the active one (appended as
    OpenClaw appends, through each store's own write path)."""
    line = json.dumps(
        {
            "type": "message",
            "id": "b2",
            "parentId": FIRST_USER,
            "timestamp": "2026-12-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "another answer"}]},
        },
        separators=(",", ":"),
    )
    with _open(state, read_only=False) as store:
        entry = store.get_entry(GROUP)
        sid = entry["sessionId"]
        if kind == "legacy":
            store.append_transcript(sid, [line], entry=entry)
        elif kind == "sqlite":
            store.append_events(sid, [line], session_key=GROUP)
        else:
            from openclaw_cli.store.openclaw.rows import append_events
            from openclaw_cli.store.openclaw.writes import transaction

            with transaction(store) as conn:
                append_events(conn, sid, [line], now_ms=1, tables=store._tables, store=store)


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest, state_dir: Path) -> str:
    make_state(request.param, state_dir)
    write_config(state_dir, CONFIG)
    return str(request.param)


def test_fork_at_a_user_message(kind: str, state_dir: Path) -> None:
    parent_sid, before = transcript(state_dir, GROUP)
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        assert client.request("sessions.subscribe", {})["ok"]
        done = client.request("sessions.fork", {"sessionKey": GROUP, "entryId": SECOND_USER})
        assert done["ok"], done
        child = done["payload"]["sessionKey"]
        assert child.startswith("agent:main:dashboard:") and len(child) == len("agent:main:dashboard:") + 36
        assert set(done["payload"]) == {"sessionKey", "editorText"}
        assert done["payload"]["editorText"].startswith("turn 2:")
        client.drain_events(1.0)
        changed = [e["payload"] for e in client.events if e["event"] == "sessions.changed"]
        assert [(c["sessionKey"], c["reason"]) for c in changed] == [(child, "fork")]
        row = changed[0]["session"]
        assert row["parentSessionKey"] == GROUP and row["createdVia"] == "operator"
        assert row["forkSource"] == {"sessionKey": GROUP, "sessionId": parent_sid, "entryId": SECOND_USER}
        history = client.request("chat.history", {"sessionKey": child})["payload"]["messages"]
        # the child holds the path before that message: the first turn's four messages
        assert [m["__openclaw"]["id"] for m in history] == [FIRST_USER, ASSISTANT, "3a5675b6", "e2d8bf33"]
        # errors, as the real Gateway words them
        for params, message in (
            ({"sessionKey": GROUP, "entryId": "nope"}, "message entry not found: nope"),
            ({"sessionKey": GROUP, "entryId": ASSISTANT}, f"entry is not a user message: {ASSISTANT}"),
            ({"sessionKey": "agent:main:nope", "entryId": "x"}, "session not found: agent:main:nope"),
            ({"sessionKey": GROUP}, "invalid sessions.fork params: must have required property 'entryId'"),
            (
                {"sessionKey": GROUP, "entryId": ""},
                "invalid sessions.fork params: at /entryId: must not have fewer than 1 characters",
            ),
        ):
            refused = client.request("sessions.fork", params)
            assert refused["error"] == {"code": "INVALID_REQUEST", "message": message}, params
        # least scope: write (admin not needed)
        with Client(gw.url) as writer:
            assert writer.hello(scopes=["operator.read"])["ok"]
            denied = writer.request("sessions.fork", {"sessionKey": GROUP, "entryId": SECOND_USER})
            assert denied["error"]["message"] == "missing scope: operator.write"
    child_sid, lines = transcript(state_dir, child)
    header = json.loads(lines[0])
    assert header["type"] == "session" and header["id"] == child_sid and "parentSession" not in header
    assert lines[1:] == before[1:7]  # byte-exact copies of the parent's lines before the message
    assert transcript(state_dir, GROUP) == (parent_sid, before)  # D6: the parent is untouched


def test_fork_off_the_active_path_is_refused(kind: str, state_dir: Path) -> None:
    add_branch(state_dir, kind)  # the active path is now FIRST_USER -> b2
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        refused = client.request("sessions.fork", {"sessionKey": GROUP, "entryId": SECOND_USER})
        assert refused["error"]["message"] == f"message entry is not on the active path: {SECOND_USER}"
        done = client.request("sessions.fork", {"sessionKey": GROUP, "entryId": FIRST_USER})
        assert done["ok"], done
        _sid, lines = transcript(state_dir, done["payload"]["sessionKey"])
        assert [json.loads(line)["type"] for line in lines] == [
            "session",
            "model_change",
            "thinking_level_change",
        ]


def test_branch_switch(kind: str, state_dir: Path) -> None:
    add_branch(state_dir, kind)
    old_sid, before = transcript(state_dir, GROUP)
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        assert client.request("sessions.subscribe", {})["ok"]
        for leaf, message in (
            ("b2", "branch is already active: b2"),
            (SECOND_USER, f"entry is not a branch tip: {SECOND_USER}"),
            ("nope", "branch entry not found: nope"),
        ):
            refused = client.request("sessions.branches.switch", {"sessionKey": GROUP, "leafEntryId": leaf})
            assert refused["error"] == {"code": "INVALID_REQUEST", "message": message}
        with Client(gw.url) as writer:
            assert writer.hello(scopes=["operator.read", "operator.write"])["ok"]
            denied = writer.request("sessions.branches.switch", {"sessionKey": GROUP, "leafEntryId": LAST})
            assert denied["error"]["message"] == "missing scope: operator.admin"
        done = client.request("sessions.branches.switch", {"sessionKey": GROUP, "leafEntryId": LAST})
        assert done == {"type": "res", "id": done["id"], "ok": True, "payload": {}}
        client.drain_events(1.0)
        changed = [e["payload"] for e in client.events if e["event"] == "sessions.changed"]
        assert [(c["sessionKey"], c["reason"]) for c in changed] == [(GROUP, "branch-switch")]
        branches = client.request("sessions.branches.list", {"sessionKey": GROUP})["payload"]["branches"]
        assert {b["leafEntryId"]: b["active"] for b in branches} == {LAST: True, "b2": False}
        history = client.request("chat.history", {"sessionKey": GROUP, "limit": 1})["payload"]["messages"]
        assert history[0]["__openclaw"]["id"] == LAST
        row = client.request("sessions.describe", {"key": GROUP})["payload"]["session"]
        assert row["previousSessionId"] == old_sid and row["sessionId"] != old_sid
    new_sid, lines = transcript(state_dir, GROUP)
    assert new_sid != old_sid
    with _open(state_dir) as store:
        row = store.get_entry(GROUP)
    assert row["previousSessionId"] == old_sid and "totalTokens" not in row
    # every old line as it was, then the leaf control; the old transcript itself untouched (D6)
    assert json.loads(lines[0])["id"] == new_sid
    assert lines[1:-1] == before[1:]
    control = json.loads(lines[-1])
    assert control["type"] == "leaf" and control["targetId"] == LAST and control["parentId"] == "b2"
    assert every_window(state_dir, old_sid) == before


def test_a_transcript_being_written_refuses_at_once(state_dir: Path, tmp_path: Path) -> None:
    """Legacy: a writer holding the session's transcript lock (a turn in progress) makes a fork
    and a switch answer OpenClaw's UNAVAILABLE text at once; nothing is written."""
    import subprocess
    import sys

    make_state("legacy", state_dir)
    write_config(state_dir, CONFIG)
    add_branch(state_dir, "legacy")
    sid, before = transcript(state_dir, GROUP)
    files_before = sorted(p.name for p in (state_dir / "agents" / "main" / "sessions").iterdir())
    rows_before = (state_dir / "agents" / "main" / "sessions" / "sessions.json").read_bytes()
    holder_script = tmp_path / "openclaw-holder.py"  # a live OpenClaw-looking owner (never reclaimed)
    holder_script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from openclaw_cli.store.lock import acquire_transcript_lock\n"
        "acquire_transcript_lock(Path(sys.argv[1]))\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    path = state_dir / "agents" / "main" / "sessions" / f"{sid}.jsonl"
    holder = subprocess.Popen(
        [sys.executable, str(holder_script), str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with GatewayThread() as gw, Client(gw.url) as client:
            assert client.hello()["ok"]
            fork = client.request("sessions.fork", {"sessionKey": GROUP, "entryId": FIRST_USER})
            switch = client.request("sessions.branches.switch", {"sessionKey": GROUP, "leafEntryId": LAST})
    finally:
        holder.kill()
        holder.wait()
    assert fork["error"]["code"] == switch["error"]["code"] == "UNAVAILABLE"
    assert fork["error"]["message"] == "Fork is unavailable while the agent is working."
    assert switch["error"]["message"] == "Branch switch is unavailable while the agent is working."
    assert transcript(state_dir, GROUP) == (sid, before)
    assert (state_dir / "agents" / "main" / "sessions" / "sessions.json").read_bytes() == rows_before
    after = sorted(
        p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")
    )  # the killed holder's
    assert after == files_before  # no new transcript
