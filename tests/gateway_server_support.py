"""Test helpers for the Gateway server: an in-process server on a background thread, a
`gateway run` subprocess in its own process group, and a minimal synchronous WebSocket client
(websockets' sync client; the real client lives in `openclaw_cli.gateway.client`, not used here)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect as ws_connect

TOKEN = "test-token-0123456789"
ALL_SCOPES = ["operator.admin", "operator.read", "operator.write"]
RECV_TIMEOUT = 10.0


class GatewayThread:
    """`GatewayServer` on its own event loop in a thread (port 0 on 127.0.0.1)."""

    def __init__(self, paths: Any = None, **options: Any) -> None:
        from openclaw_cli.gateway.auth import AuthPolicy
        from openclaw_cli.gateway.server import GatewayServer, ServerOptions
        from openclaw_cli.ops.context import Context
        from openclaw_cli.paths import resolve_paths

        paths = paths or Context.load(resolve_paths()).paths
        options.setdefault("auth", AuthPolicy("token", TOKEN))
        options.setdefault("host", "127.0.0.1")
        options.setdefault("port", 0)
        self.server = GatewayServer(paths, ServerOptions(**options))
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    def __enter__(self) -> GatewayThread:
        self._thread.start()
        host, port = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=30)
        self.url = f"ws://{host}:{port}"
        return self

    def stop(self) -> None:
        if not self.loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)

    def __exit__(self, *exc: object) -> None:
        self.stop()


class GatewayProcess:
    """`python -m openclaw_cli gateway run` in its own process group; `url` from its ready line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, token: str | None = TOKEN) -> None:
        argv = [
            sys.executable,
            "-m",
            "openclaw_cli",
            "gateway",
            "run",
            "--port",
            "0",
            "--allow-unconfigured",
            "--verbose",
        ]
        if token is not None:
            argv += ["--auth", "token", "--token", token]
        self.argv = argv + list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.lines: list[str] = []

    def start(self, timeout: float = 30) -> GatewayProcess:
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            start_new_session=True,
        )
        try:
            return self._await_ready(timeout)
        except BaseException:  # not ready (or interrupted): `__exit__` will not run, stop it here
            self.stop()
            raise

    def _await_ready(self, timeout: float) -> GatewayProcess:
        assert self.proc is not None and self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError(f"gateway exited ({self.proc.wait()}): {''.join(self.lines)}")
            self.lines.append(line)
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].split()[0]
            if "[gateway] ready" in line:
                threading.Thread(target=self._drain, daemon=True).start()
                return self
        raise AssertionError(f"gateway not ready within {timeout} s: {''.join(self.lines)}")

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float = 60) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
        return self.proc.wait(timeout=30)

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Client:
    """One WebSocket connection: the challenge is read on open; `request()` returns the response
    with the request's id and keeps every event that arrived meanwhile in `events`."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        kwargs.setdefault("open_timeout", 10)
        kwargs.setdefault("max_size", None)
        kwargs.setdefault("compression", None)
        self.ws = ws_connect(url, proxy=None, **kwargs).__enter__()  # closed by close()
        self.challenge = json.loads(self.ws.recv(timeout=RECV_TIMEOUT))
        self.events: list[dict[str, Any]] = []
        self._n = 0

    def send(self, frame: Any) -> None:
        self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    def recv(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        return json.loads(self.ws.recv(timeout=timeout))

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        req_id: str | None = None,
        omit_params: bool = False,
        timeout: float = RECV_TIMEOUT,
    ) -> dict[str, Any]:
        self._n += 1
        req_id = req_id or f"t-{self._n}"
        frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
        if not omit_params:
            frame["params"] = {} if params is None else params
        self.send(frame)
        return self.response(req_id, timeout=timeout)

    def response(self, req_id: str, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            frame = self.recv(max(0.01, deadline - time.monotonic()))
            if frame.get("type") == "res" and frame.get("id") == req_id:
                return frame
            if frame.get("type") == "event":
                self.events.append(frame)

    def drain_events(self, seconds: float) -> list[dict[str, Any]]:
        """Every event that arrives within `seconds` (bounded wait)."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self.events
            try:
                frame = self.recv(left)
            except TimeoutError:
                return self.events
            if frame.get("type") == "event":
                self.events.append(frame)

    def hello(
        self, token: str | None = TOKEN, scopes: list[str] | None = None, **params: Any
    ) -> dict[str, Any]:
        connect = connect_params(token, ALL_SCOPES if scopes is None else scopes, **params)
        return self.request("connect", connect)

    def close(self) -> None:
        self.ws.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_params(
    token: str | None = TOKEN, scopes: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "minProtocol": 4,
        "maxProtocol": 4,
        "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
        "role": "operator",
        "scopes": ALL_SCOPES if scopes is None else scopes,
        "caps": [],
    }
    if token is not None:
        params["auth"] = {"token": token}
    params.update(extra)
    return params


def connected(url: str, scopes: list[str] | None = None) -> Client:
    client = Client(url)
    res = client.hello(scopes=scopes)
    assert res["ok"], res
    return client


def write_config(state: Path, config: dict[str, Any]) -> None:
    (state / "openclaw.json").write_text(json.dumps(config))


RECORDED_CONFIG = {
    "gateway": {
        "mode": "local",
        "bind": "loopback",
        "port": 45488,
        "auth": {"mode": "token", "token": TOKEN},
    },
    "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}, "spare": {}}},
}
