"""A small in-process fake of OpenClaw's Gateway (protocol 4) for client tests: a websockets asyncio
server on 127.0.0.1 port 0 in a thread. It speaks first (`connect.challenge`), checks the
`connect` frame (token, protocol), answers `hello-ok`, then hands each request to `respond`.
Every frame it receives, each upgrade request's headers, the pongs it got and the client's close code
are recorded for assertions.

`respond(method, params, send_event)` returns one of:
  ("ok", payload) | ("error", {code, message, details?, retryable?}) | ("close", code, reason)
  | ("hang",) (never answer) | ("raw", text) (a non-JSON frame)
  | ("ping", payload) (a ping, answered by a pong, before the ok) | ("fragments", payload, n) (the ok
  response in n frames)
and may call `send_event(name, payload)` first to interleave events.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

HELLO = {
    "type": "hello-ok",
    "protocol": 4,
    "server": {"version": "2026.9.6", "connId": "fake-conn"},
    "features": {"methods": ["health", "sessions.list", "sessions.cleanup"], "events": ["tick"]},
    "snapshot": {},
    "auth": {"method": "token", "role": "operator", "scopes": []},
    "policy": {"maxPayload": 26214400},
}
BAD_TOKEN = {
    "code": "INVALID_REQUEST",
    "message": "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)",
    "details": {
        "code": "AUTH_TOKEN_MISMATCH",
        "authReason": "token_mismatch",
        "canRetryWithDeviceToken": False,
        "recommendedNextStep": "update_auth_credentials",
    },
}

STARTING = {
    "code": "UNAVAILABLE",
    "message": "gateway starting; retry shortly",
    "details": {"reason": "startup-sidecars"},
    "retryable": True,
    "retryAfterMs": 50,
}


ECHO_METHODS = {"sessions.cleanup", "sessions.compact", "agents.delete", "sessions.list"}


def default_respond(method: str, params: Any, send_event: Callable[[str, Any], None]) -> tuple:
    if method == "health":
        return ("ok", {"ok": True, "ts": 1, "durationMs": 3, "agents": []})
    if method in ECHO_METHODS:
        return ("ok", {"method": method, "params": params})
    return ("error", {"code": "INVALID_REQUEST", "message": f"unknown method: {method}"})


class FakeGateway:
    def __init__(
        self,
        *,
        token: str | None = "secret-token",
        respond: Callable[..., tuple] = default_respond,
        ssl_context: ssl.SSLContext | None = None,
        challenge: bool = True,
        protocol: int = 4,
        starting: int = 0,
        silent_from: int | None = None,
    ):
        self.token = token
        self.starting = starting  # the first N connects are refused as a Gateway still starting
        self.silent_from = silent_from  # connection number N (1-based) and later never speak
        self.respond = respond
        self.ssl_context = ssl_context
        self.challenge = challenge
        self.protocol = protocol
        self.received: list[dict[str, Any]] = []
        self.closes: list[int | None] = []
        self.upgrade_headers: list[dict[str, str]] = []
        self.pongs = 0
        self.connections = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    # ---- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> FakeGateway:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake gateway did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    @property
    def url(self) -> str:
        return f"{'wss' if self.ssl_context else 'ws'}://127.0.0.1:{self.port}"

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            f
            for f in self.received
            if f.get("type") == "req" and (method is None or f.get("method") == method)
        ]

    def wait_closed(self, count: int = 1, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.closes) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    # ---- server ---------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._handler, "127.0.0.1", 0, ssl=self.ssl_context) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    async def _handler(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        self.connections += 1
        self.upgrade_headers.append(dict(ws.request.headers.raw_items()))
        try:
            silent = self.silent_from is not None and self.connections >= self.silent_from
            if not self.challenge or silent:  # a listener that never speaks
                assert self._stop is not None
                await self._stop.wait()
                return
            await ws.send(
                json.dumps(
                    {
                        "type": "event",
                        "event": "connect.challenge",
                        "payload": {"nonce": "n-1", "ts": 1, "capabilities": []},
                    }
                )
            )
            frame = json.loads(await ws.recv())
            self.received.append(frame)
            params = frame.get("params") or {}
            if params.get("minProtocol", 0) > self.protocol or params.get("maxProtocol", 0) < self.protocol:
                await self._error(
                    ws,
                    frame["id"],
                    {
                        "code": "INVALID_REQUEST",
                        "message": "protocol mismatch",
                        "details": {"code": "PROTOCOL_MISMATCH", "expectedProtocol": self.protocol},
                    },
                )
                await ws.close(1002, "protocol mismatch")
                return
            if self.starting > 0:  # as the real one during its startup sidecars
                self.starting -= 1
                await self._error(ws, frame["id"], STARTING)
                await ws.close(1013, "gateway starting")
                return
            if self.token is not None and (params.get("auth") or {}).get("token") != self.token:
                await self._error(ws, frame["id"], BAD_TOKEN)
                await ws.close(1008, BAD_TOKEN["message"])
                return
            hello = dict(
                HELLO,
                protocol=self.protocol,
                auth={"method": "token", "role": "operator", "scopes": params.get("scopes")},
            )
            await ws.send(json.dumps({"type": "res", "id": frame["id"], "ok": True, "payload": hello}))
            async for message in ws:
                request = json.loads(message)
                self.received.append(request)
                await self._answer(ws, request)
        except ConnectionClosed:
            pass
        finally:
            rcvd = ws.protocol.close_rcvd
            self.closes.append(rcvd.code if rcvd is not None else None)

    async def _error(self, ws: Any, request_id: str, error: dict[str, Any]) -> None:
        await ws.send(json.dumps({"type": "res", "id": request_id, "ok": False, "error": error}))

    async def _answer(self, ws: Any, request: dict[str, Any]) -> None:
        events: list[str] = []

        def send_event(name: str, payload: Any) -> None:
            events.append(json.dumps({"type": "event", "event": name, "payload": payload}))

        outcome = self.respond(request.get("method"), request.get("params"), send_event)
        for event in events:
            await ws.send(event)
        kind = outcome[0]
        if kind == "ok":
            await ws.send(json.dumps({"type": "res", "id": request["id"], "ok": True, "payload": outcome[1]}))
        elif kind == "error":
            await self._error(ws, request["id"], outcome[1])
        elif kind == "close":
            await ws.close(outcome[1], outcome[2])
        elif kind == "raw":
            await ws.send(outcome[1])
        elif kind == "ping":
            await asyncio.wait_for(await ws.ping(b"are-you-there"), 5)
            self.pongs += 1
            await ws.send(json.dumps({"type": "res", "id": request["id"], "ok": True, "payload": outcome[1]}))
        elif kind == "fragments":
            text = json.dumps({"type": "res", "id": request["id"], "ok": True, "payload": outcome[1]})
            step = -(-len(text) // outcome[2])
            await ws.send([text[i : i + step] for i in range(0, len(text), step)])
        elif kind == "hang":
            assert self._stop is not None
            await self._stop.wait()


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(path: Any, gateway: dict[str, Any], **extra: Any) -> None:
    path.write_text(json.dumps({"gateway": gateway, **extra}))


def threads_started_by_call(monkeypatch: Any, run: Callable[[], Any]) -> list[threading.Thread]:
    """Threads the calling thread starts while `run()` runs (the fake's own thread is not one)."""
    caller = threading.current_thread()
    started: list[threading.Thread] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if threading.current_thread() is caller:
            started.append(self)
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    run()
    return started
