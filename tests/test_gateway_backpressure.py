"""Issue 29, finding 2: a client that stops reading must not wedge the Gateway.

The reproduction: a client with a 4 KiB receive buffer subscribes and sends 40 x
`sessions.list {limit:1000, includeLastMessage:true}` without reading. Before, the Gateway's sends
to it blocked; the broadcast after every patch waited for it, so another client's patches stopped
being answered once its 32 request slots were taken, ticks stopped for everyone, and websockets'
keepalive ping queued behind the blocked send, so the stuck socket was never closed. Now writes
never wait: a connection whose unread output passes `maxBufferedBytes` is closed 1008 "slow
consumer", and one that stops answering pings is cut by the Gateway's own keepalive timer.

Bounded time: the cap and the keepalive interval are set small here (the defaults are OpenClaw's
52,428,800 bytes and 25 s), and every wait has a deadline."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from openclaw_cli.gateway.limits import Limits
from openclaw_cli.gateway.wsconn import ClientWebSocket
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN, GatewayThread, connect_params, connected

DEADLINE_S = 60.0


class StuckClient:
    """A client that reads only when told to: a 4 KiB receive buffer, our single-threaded
    WebSocket (it reads the socket only inside `recv`, so it answers no ping while it does not)."""

    def __init__(self, url: str, source_ip: str = "127.0.0.1") -> None:
        host, port = url.removeprefix("ws://").rsplit(":", 1)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.bind((source_ip, 0))
        sock.connect((host, int(port)))
        self.sock = sock
        self.ws = ClientWebSocket(sock, url, user_agent="stuck-test", max_size=None)
        self.ws.handshake(time.monotonic() + 10)
        self._n = 0

    def recv(self) -> dict:
        return json.loads(self.ws.recv(time.monotonic() + 10))

    def send(self, method: str, params: dict) -> None:
        self._n += 1
        frame = {"type": "req", "id": f"s-{self._n}", "method": method, "params": params}
        self.ws.send_text(json.dumps(frame).encode(), time.monotonic() + 10)

    def hello(self) -> None:
        assert self.recv()["event"] == "connect.challenge"
        self.send("connect", connect_params(TOKEN))
        assert self.recv()["ok"] is True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def big_state(state_dir: Path) -> Path:
    """Big enough that 40 unread lists pass the kernel's socket buffers: on the code before this
    fix, the other client's 33rd patch was never answered here (checked: 32 answered, then a timeout)."""
    generate_legacy_state(state_dir, 400, 2, 4242, "--cron-key-style", "canonical")
    return state_dir


def _wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S:.0f} s: {what}"
        time.sleep(0.05)


def _keys(client) -> list[str]:
    res = client.request("sessions.list", {"limit": 50})
    assert res["ok"], res
    return [row["key"] for row in res["payload"]["sessions"]]


def _others_keep_being_served(gw: GatewayThread, patches: int) -> tuple[int, list[dict]]:
    """Another subscribed client: `patches` sessions.patch all answered, ticks keep coming."""
    with connected(gw.url) as other:
        assert other.request("sessions.subscribe")["ok"]
        keys = _keys(other)
        for n in range(patches):
            res = other.request(
                "sessions.patch", {"key": keys[n % len(keys)], "label": f"label {n}"}, timeout=20
            )
            assert res["ok"] is True, res
        events = other.drain_events(1.0)
        ticks = [e for e in events if e["event"] == "tick"]
        return len(ticks), events


def test_a_slow_subscriber_is_closed_and_others_keep_being_served(big_state: Path) -> None:
    logs: list[str] = []
    limits = Limits(max_buffered_bytes=256 * 1024, keepalive_interval_s=30.0)
    with GatewayThread(tick_interval_ms=100, limits=limits, log=logs.append) as gw:
        stuck = StuckClient(gw.url)
        try:
            stuck.hello()
            stuck.send("sessions.subscribe", {})
            for _ in range(40):
                stuck.send("sessions.list", {"limit": 1000, "includeLastMessage": True})
            ticks, events = _others_keep_being_served(gw, 40)  # more than the old 32 request slots
            assert ticks >= 3, events
            assert any(e["event"] == "sessions.changed" for e in events)
            # the stuck socket is gone from the Gateway's side (1008 and the socket cut)
            _wait_until(lambda: len(gw.server.connections) == 0, "the slow consumer is closed")
            assert any("slow consumer (1008)" in line for line in logs), logs
            # and the client, reading at last, finds the end of the stream (no close frame can pass the backlog)
            with pytest.raises(Exception):  # noqa: B017 - Closed, a reset or EOF: the connection is over
                deadline = time.monotonic() + DEADLINE_S
                while time.monotonic() < deadline:
                    stuck.ws.recv(deadline)
        finally:
            stuck.close()
        assert len(gw.server.book.open) == 0


def test_a_client_that_stops_answering_pings_is_cut_by_the_keepalive(state_dir: Path) -> None:
    """Too little output to reach the cap (two small lists), but no pong: cut two rounds after a ping."""
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    logs: list[str] = []
    limits = Limits(keepalive_interval_s=0.3)
    with GatewayThread(tick_interval_ms=60_000, limits=limits, log=logs.append) as gw:
        stuck = StuckClient(gw.url)
        try:
            stuck.hello()
            _wait_until(lambda: len(gw.server.connections) == 1, "the stuck client is served")
            (stuck_conn,) = gw.server.connections
            for _ in range(2):
                stuck.send("sessions.list", {"limit": 5})
            with connected(gw.url) as other:  # a client that reads answers every ping and stays
                _wait_until(lambda: stuck_conn not in gw.server.connections, "the silent client is cut")
                assert other.request("health")["ok"] is True
                assert any("no pong within" in line for line in logs), logs
        finally:
            stuck.close()


def test_unread_pongs_are_capped_too(state_dir: Path) -> None:
    """A client that floods pings and never reads: the pongs are output like any other."""
    from websockets.client import ClientProtocol
    from websockets.uri import parse_uri

    limits = Limits(preauth_max_buffered_bytes=64 * 1024)
    with GatewayThread(tick_interval_ms=60_000, limits=limits) as gw:
        stuck = StuckClient(gw.url)
        try:
            proto = ClientProtocol(parse_uri(gw.url))
            proto.state = stuck.ws.protocol.state  # reuse the open connection's framing
            for _ in range(100):  # 10 MB of pings: more than the kernel's buffers hold
                for _ in range(1000):
                    proto.send_ping(b"p" * 100)
                try:
                    stuck.sock.sendall(b"".join(proto.data_to_send()))
                except OSError:
                    break  # cut: what we wanted
            _wait_until(lambda: len(gw.server.book.open) == 0, "the ping flooder is cut")
        finally:
            stuck.close()
        with connected(gw.url) as other:
            assert other.request("health")["ok"] is True


def test_parallel_large_reads_do_not_multiply_memory(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 9: 4 parallel 24 MB `sessions.list {search}` took the Gateway to 417 MB, each request
    building its whole response at once. Now at most `parallel_reads` (2) build at a time, so 8
    parallel requests cost about what 2 do. Measured where it is decided, not through RSS (which
    moved with the allocator between runs): the real list handler, in a real Gateway, counts the
    builds under way; each build waits until a third one starts or 1 s passes, so a missing limit
    shows as 3 at once whatever the machine's speed, and a kept one never can."""
    import dataclasses
    import sys
    import threading

    from openclaw_cli.ops import session_views
    from openclaw_cli.ops.methods import METHODS

    generate_legacy_state(state_dir, 300, 0.1, 4242, "--cron-key-style", "canonical")
    # each request its own limit: identical reads waiting for a slot would share one build
    # (`answers.WaitingReads`), and here every request must build its own
    real = session_views.list_gateway_sessions
    lock = threading.Condition()
    building = {"now": 0, "peak": 0, "calls": 0}

    def counted(ctx, request):  # the real handler, counted
        with lock:
            building["now"] += 1
            building["calls"] += 1
            building["peak"] = max(building["peak"], building["now"])
            lock.notify_all()
            lock.wait_for(lambda: building["now"] > Limits().parallel_reads, timeout=1.0)
        try:
            return real(ctx, request)
        finally:
            with lock:
                building["now"] -= 1

    # the Gateway finds a method's handler through the METHODS row's reference (resolved once
    # and cached): the row names this wrapper for the test's duration
    monkeypatch.setattr(sys.modules[__name__], "_counted_list", counted, raising=False)
    row = METHODS["sessions.list"]
    monkeypatch.setitem(
        METHODS, "sessions.list", dataclasses.replace(row, handler=f"{__name__}:_counted_list")
    )
    failures: list[BaseException] = []
    with GatewayThread() as gw:

        def one(n: int) -> None:
            try:
                with connected(gw.url) as client:
                    reply = client.request(
                        "sessions.list", {"limit": 100_000 - n, "search": "a"}, timeout=300
                    )
                    assert reply["ok"] and reply["payload"]["sessions"], reply
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    assert not failures, failures
    assert building["calls"] == 8
    assert building["peak"] == Limits().parallel_reads == 2, building  # reached, never passed


def test_a_connection_has_at_most_8_requests_in_flight(big_state: Path) -> None:
    """Finding 9: 32 requests of one connection ran at once (each large read building its response
    meanwhile). Now a connection with 8 unanswered requests is not read until one is answered, and
    reads run 2 at a time: a `health` pipelined behind 20 large lists is read only after 12 of them
    were answered (before, it ran at once and came back among the first)."""
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        for n in range(20):
            c.send(
                {
                    "type": "req",
                    "id": f"l{n}",
                    "method": "sessions.list",
                    "params": {"limit": 1000, "includeLastMessage": True},
                }
            )
        c.send({"type": "req", "id": "h", "method": "health", "params": {}})
        order = []
        while len(order) < 21:
            frame = c.recv(timeout=60)
            if frame.get("type") == "res":
                assert frame["ok"], frame
                order.append(frame["id"])
        assert order.index("h") >= 20 - 8, order
