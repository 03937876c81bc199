"""The Gateway's answer cache (`gateway/answers.py`, issue 25's chat.history speed): a kept
chat.history answer is sent again without running the handler, byte for byte what the handler
would answer (its request id and `snapshotAt` spliced in), and never once the session's row or
transcript changed — on a legacy store and on our SQLite store."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.gateway.answers import AnswerCache, template
from openclaw_cli.ops import history
from openclaw_cli.ops.context import Reuse
from openclaw_cli.store.base import FileProbe
from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config

CONFIG = {"gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}}}
KEY = "agent:main:main"


@pytest.fixture(params=["legacy", "sqlite"])
def state(request: pytest.FixtureRequest, state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 6, 0, 4242)
    write_config(state_dir, CONFIG)
    if request.param == "sqlite":
        done = run_cli("doctor", "--session-sqlite", "import", "--json")
        assert done.returncode == 0, done.stderr
    return state_dir


@pytest.fixture
def handler_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """chat.history's handler, counted (the method table resolves it per call)."""
    calls: list[dict[str, Any]] = []
    real = history.chat_history

    def counted(ctx: Any, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        calls.append(params)
        return real(ctx, params, **kwargs)

    monkeypatch.setattr(history, "chat_history", counted)
    return calls


def _raw(client: Client, req_id: Any, params: dict[str, Any]) -> str:
    """The response frame's text as sent."""
    client.ws.send(json.dumps({"type": "req", "id": req_id, "method": "chat.history", "params": params}))
    while True:
        text = client.ws.recv(timeout=30)
        frame = json.loads(text)
        if frame.get("type") == "res":
            assert frame["id"] == req_id
            return text if isinstance(text, str) else text.decode()


def test_kept_answer_is_the_handlers_answer(state: Path, handler_calls: list[dict[str, Any]]) -> None:
    params = {"sessionKey": KEY, "limit": 3}
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        gw.server.clock = lambda: 1_800_000_000_000
        first = _raw(client, "a", params)
        for n in range(5):
            gw.server.clock = lambda n=n: 1_800_000_000_000 + n
            again = json.loads(_raw(client, n, params))  # an int id too
            assert again["id"] == n
            want = json.loads(first)
            want["id"] = n
            want["payload"]["sessionInfo"]["snapshotAt"] = 1_800_000_000_000 + n
            assert again == want
        # two reads (the second one, unchanged around it, is kept), then none
        assert len(handler_calls) == 2
        # the kept frame is the encoder's own text with the id and clock in place
        gw.server.clock = lambda: 1_800_000_000_000
        assert _raw(client, "a", params) == first
        assert len(handler_calls) == 2


def test_a_changed_row_or_transcript_is_read_again(
    state: Path, handler_calls: list[dict[str, Any]], request: pytest.FixtureRequest
) -> None:
    params = {"sessionKey": KEY, "limit": 2}
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        for _ in range(3):
            before = client.request("chat.history", params)["payload"]
        assert len(handler_calls) == 2
        assert client.request("sessions.patch", {"key": KEY, "label": "renamed"})["ok"]
        after = client.request("chat.history", params)["payload"]
        assert after["sessionInfo"]["label"] == "renamed" and len(handler_calls) == 3
        assert after["messages"] == before["messages"]
        # a reset appends its marker to the transcript (a "Reset" row on the page)
        assert client.request("sessions.reset", {"key": KEY})["ok"]
        reset = client.request("chat.history", params)["payload"]
        assert reset != after and len(handler_calls) == 4
        for _ in range(3):
            again = client.request("chat.history", params)["payload"]
            assert again["messages"] == reset["messages"] and again["sessionInfo"]["label"] == "renamed"
        calls = len(handler_calls)
        assert calls <= 5  # the reset's page read again once, then kept
        if request.node.callspec.params["state"] == "legacy":
            # legacy: a line appended to the transcript file (by anyone) is a new version
            sid = reset["sessionId"]
            transcript = state / "agents" / "main" / "sessions" / f"{sid}.jsonl"
            line = {
                "type": "message",
                "id": "appended1",
                "timestamp": "2026-12-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "appended"}]},
            }
            last = json.loads(transcript.read_text().splitlines()[-1])
            line["parentId"] = last["id"]
            with transcript.open("a") as out:
                out.write(json.dumps(line) + "\n")
            appended = client.request("chat.history", params)["payload"]
            assert appended["messages"][-1]["content"] == [{"type": "text", "text": "appended"}]
            assert len(handler_calls) == calls + 1


def test_other_params_and_keys_are_other_answers(state: Path, handler_calls: list[dict[str, Any]]) -> None:
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        small = [client.request("chat.history", {"sessionKey": KEY, "limit": 1})["payload"] for _ in range(3)]
        large = [client.request("chat.history", {"sessionKey": KEY, "limit": 4})["payload"] for _ in range(3)]
        assert len(small[-1]["messages"]) == 1 and len(large[-1]["messages"]) == 4
        missing = client.request("chat.history", {"sessionKey": "agent:main:nope"})["payload"]
        assert (
            missing["messages"] == [] and missing["sessionInfo"]["updatedAt"] is None
        )  # made up, as OpenClaw
        assert len(handler_calls) == 5  # 2 + 2 kept, and the unknown key every time it is asked
        client.request("chat.history", {"sessionKey": "agent:main:nope"})
        assert len(handler_calls) == 6


def test_template_splices_ids_and_clock() -> None:
    result = {"a": [1, "x"], "info": {"snapshotAt": 5, "label": "__openclaw_answer_id_x__"}}
    frame = template(result, (("info", "snapshotAt"),))
    assert frame is not None
    for req_id in ("r1", 7, 'quote"d', None):
        got = json.loads(frame.render(req_id, 99))
        assert got == {
            "type": "res",
            "id": req_id,
            "ok": True,
            "payload": {**result, "info": {**result["info"], "snapshotAt": 99}},
        }
    assert result["info"]["snapshotAt"] == 5  # the handler's answer is not changed
    assert template(result, (("info", "missing"),)) is None
    assert template(result, (("nope", "snapshotAt"),)) is None


def test_cache_keeps_only_a_read_the_probe_brackets(tmp_path: Path) -> None:
    watched = tmp_path / "f"
    watched.write_text("1")
    probe = FileProbe(str(watched))
    cache, config = AnswerCache(), object()
    key = cache.key("chat.history", {"sessionKey": "k"})
    reuse = Reuse(probe)
    assert cache.before(key, config) == (None, None)
    cache.after(key, config, reuse, None, {"n": 1})  # the first read: a candidate only
    frame, value = cache.before(key, config)
    assert frame is None and value is not None
    watched.write_text("22")  # changed during the read: not kept
    cache.after(key, config, reuse, value, {"n": 2})
    frame, value = cache.before(key, config)
    assert frame is None
    cache.after(key, config, reuse, value, {"n": 3})  # unchanged around it: kept
    frame, _ = cache.before(key, config)
    assert frame is not None and json.loads(frame.render("i", 0))["payload"] == {"n": 3}
    assert cache.before(key, object())[0] is None  # another config
    watched.write_text("333")
    assert cache.before(key, config)[0] is None
    cache.after(key, config, None, None, {"n": 4})  # a read that says nothing of reuse: dropped
    assert cache.before(key, config) == (None, None)


def test_keeper_probe_never_waits(tmp_path: Path) -> None:
    from openclaw_cli.store import sqlite_common
    from openclaw_cli.store.sqlite.store import KeeperProbe

    db = tmp_path / "x.sqlite"
    import sqlite3

    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    sqlite_common.enable_live_reads()
    try:
        probe = KeeperProbe(str(db))
        assert probe.read() is None  # no keeper yet: nothing opened from here
        keep = sqlite_common.keeper(db)
        assert keep is not None
        first = probe.read()
        assert first is not None
        other = sqlite3.connect(db)
        other.execute("INSERT INTO t VALUES (1)")
        other.commit()
        other.close()
        assert probe.read() not in (None, first)
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with keep.lock:
                held.set()
                release.wait(10)

        worker = threading.Thread(target=hold)
        worker.start()
        held.wait(10)
        assert probe.read() is None  # the keeper is busy: cannot tell now, no wait
        release.set()
        worker.join()
        assert probe.read() is not None
    finally:
        sqlite_common.disable_live_reads()


def test_no_permessage_deflate_as_the_real_gateway(state_dir: Path) -> None:
    """The real 2026.9.6 Gateway answers a permessage-deflate offer without the extension (its 101
    has no Sec-WebSocket-Extensions; checked against the peer install): ours neither compresses."""
    import base64
    import os
    import socket

    write_config(state_dir, CONFIG)
    with GatewayThread() as gw:
        host, port = gw.url.removeprefix("ws://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall(
                (
                    f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                    "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
                ).encode()
            )
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(4096)
                assert chunk
                head += chunk
    lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 101 Switching Protocols"
    assert not [line for line in lines if line.lower().startswith("sec-websocket-extensions")]


class _HeldCalls(list[dict[str, Any]]):
    """The handler's calls; `gate` cleared holds every answer after its read until it is set again
    (at most 10 s), so a test can place a write inside a read in flight whatever the machine's load."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()


@pytest.fixture
def slow_handler(monkeypatch: pytest.MonkeyPatch) -> _HeldCalls:
    """chat.history's handler, counted, holding its answer 1 s after reading it (and while its
    `gate` is cleared)."""
    import time

    calls = _HeldCalls()
    real = history.chat_history

    def slow(ctx: Any, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        calls.append(params)
        answer = real(ctx, params, **kwargs)
        time.sleep(1.0)
        calls.gate.wait(10)
        return answer

    monkeypatch.setattr(history, "chat_history", slow)
    return calls


def test_identical_requests_join_the_read_in_flight(state_dir: Path, slow_handler: _HeldCalls) -> None:
    generate_legacy_state(state_dir, 6, 0, 4242)
    write_config(state_dir, CONFIG)
    params = {"sessionKey": KEY, "limit": 2}
    with GatewayThread() as gw:
        clients = [Client(gw.url) for _ in range(6)]
        try:
            for client in clients:
                assert client.hello()["ok"]
            first = clients[0].request("chat.history", params)["payload"]  # the candidate
            for n, client in enumerate(clients):
                client.send({"type": "req", "id": f"j{n}", "method": "chat.history", "params": params})
            answers = [client.response(f"j{n}")["payload"] for n, client in enumerate(clients)]
            assert all(a["messages"] == first["messages"] for a in answers)
            assert len(slow_handler) == 2  # one read for the six
            # a write while a read is in flight: who joined it reads again and sees the write
            clients[0].send(
                {"type": "req", "id": "a", "method": "chat.history", "params": {**params, "limit": 3}}
            )
            clients[0].response("a")  # {limit: 3}'s candidate
            slow_handler.gate.clear()  # b's read stays in flight until the write is acknowledged
            clients[0].send(
                {"type": "req", "id": "b", "method": "chat.history", "params": {**params, "limit": 3}}
            )
            clients[1].send(
                {"type": "req", "id": "c", "method": "chat.history", "params": {**params, "limit": 3}}
            )
            import time

            deadline = time.monotonic() + 10
            while len(slow_handler) < 4 and time.monotonic() < deadline:  # b's read began
                time.sleep(0.01)
            time.sleep(0.3)  # c joins it
            assert clients[2].request("sessions.patch", {"key": KEY, "label": "during"})["ok"]
            slow_handler.gate.set()
            clients[0].response("b")
            joined = clients[1].response("c")["payload"]
            assert joined["sessionInfo"]["label"] == "during"
            assert len(slow_handler) == 2 + 3
        finally:
            for client in clients:
                client.close()
