"""Record OpenClaw's presence traffic (tests/fixtures/gateway-2026.9.6-presence): a `cli` watcher
connects and asks `system-presence`; a second client in `test` mode (one OpenClaw tracks) connects
and leaves; every frame both see is written, `conn` naming which connection saw it.

    record_presence.py PORT TOKEN OUT.jsonl
"""

import json
import sys
import time
from pathlib import Path

from websockets.sync.client import connect

PORT, TOKEN, OUT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = []


def rec(tag, d, frame):
    t = json.dumps({"conn": tag, "dir": d, "frame": frame}).replace(TOKEN, "<token>")
    lines.append(t)


def hello(ws, tag, client, scopes):
    rec(tag, "in", json.loads(ws.recv(timeout=30)))
    req = {
        "type": "req",
        "id": f"{tag}-0",
        "method": "connect",
        "params": {
            "minProtocol": 4,
            "maxProtocol": 4,
            "client": client,
            "role": "operator",
            "scopes": scopes,
            "caps": [],
            "auth": {"token": TOKEN},
        },
    }
    ws.send(json.dumps(req))
    rec(tag, "out", req)
    while True:
        f = json.loads(ws.recv(timeout=30))
        if f.get("type") == "res":
            p = f.get("payload") or {}
            if isinstance(p, dict) and "features" in p:
                p["features"] = "<cut>"
            rec(tag, "in", f)
            return f
        rec(tag, "in", f)


def drain(ws, tag, secs):
    end = time.time() + secs
    while time.time() < end:
        try:
            f = json.loads(ws.recv(timeout=max(0.01, end - time.time())))
        except TimeoutError:
            return
        if f.get("event") not in ("tick",):
            rec(tag, "in", f)


SC = ["operator.admin", "operator.read", "operator.write"]
with connect(f"ws://127.0.0.1:{PORT}", max_size=None) as w:
    h = hello(w, "watcher", {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"}, SC)
    req = {"type": "req", "id": "watcher-1", "method": "system-presence", "params": {}}
    w.send(json.dumps(req))
    rec("watcher", "out", req)
    drain(w, "watcher", 1.0)
    with connect(f"ws://127.0.0.1:{PORT}", max_size=None) as u:
        hello(
            u,
            "ui",
            {
                "id": "test",
                "version": "2026.9.6",
                "platform": "linux",
                "mode": "test",
                "displayName": "tui-test",
                "instanceId": "inst-1",
            },
            ["operator.read"],
        )
        drain(w, "watcher", 1.5)
        drain(u, "ui", 0.5)
        req = {"type": "req", "id": "ui-1", "method": "system-presence", "params": {}}
        u.send(json.dumps(req))
        rec("ui", "out", req)
        drain(u, "ui", 1.0)
    drain(w, "watcher", 2.0)
    req = {"type": "req", "id": "watcher-2", "method": "system-presence", "params": {}}
    w.send(json.dumps(req))
    rec("watcher", "out", req)
    drain(w, "watcher", 1.0)
Path(OUT).write_text("\n".join(lines) + "\n")
