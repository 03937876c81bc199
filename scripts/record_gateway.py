"""Record exchanges with a running Gateway (OpenClaw's or ours) as fixture lines
(`{"dir":"out"|"in","frame":…}`, the format of tests/fixtures/gateway-2026.9.6, README there).

    record_gateway.py PORT TOKEN OUT.jsonl REQUESTS.json [--wait S] [--state-dir DIR]

REQUESTS.json: a list of `[method, params]`; each is sent on one connection (scopes admin, read,
write, after `sessions.subscribe {}` when the list starts with it) and every frame received until
its response and `--wait` seconds after (events included) is written. `--state-dir` is replaced by
`$OPENCLAW_STATE_DIR` and the token by `<token>` in what is written.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from websockets.sync.client import connect

SCOPES = ["operator.admin", "operator.read", "operator.write"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("token")
    parser.add_argument("out")
    parser.add_argument("requests")
    parser.add_argument("--wait", type=float, default=0.5)
    parser.add_argument("--state-dir")
    args = parser.parse_args()
    requests = json.loads(Path(args.requests).read_text())
    lines: list[str] = []

    def record(direction: str, frame: dict) -> None:
        text = json.dumps({"dir": direction, "frame": frame}, ensure_ascii=False)
        text = text.replace(args.token, "<token>")
        if args.state_dir:
            text = text.replace(args.state_dir, "$OPENCLAW_STATE_DIR")
        lines.append(text)

    with connect(f"ws://127.0.0.1:{args.port}", max_size=None, open_timeout=30) as ws:
        record("in", json.loads(ws.recv(timeout=30)))
        hello = {
            "type": "req",
            "id": "rec-0",
            "method": "connect",
            "params": {
                "minProtocol": 4,
                "maxProtocol": 4,
                "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
                "role": "operator",
                "scopes": SCOPES,
                "caps": [],
                "auth": {"token": args.token},
            },
        }
        ws.send(json.dumps(hello))
        record("out", hello)
        while True:  # until hello-ok (events may come first)
            got = json.loads(ws.recv(timeout=60))
            record("in", got)
            if got.get("type") == "res" and got.get("id") == "rec-0":
                break
        for index, (name, params) in enumerate(requests, start=1):
            frame = {"type": "req", "id": f"rec-{index}", "method": name, "params": params}
            ws.send(json.dumps(frame))
            record("out", frame)
            answered_at = None
            while True:
                timeout = (
                    60.0 if answered_at is None else max(0.0, answered_at + args.wait - time.monotonic())
                )
                try:
                    got = json.loads(ws.recv(timeout=timeout))
                except TimeoutError:
                    break
                record("in", got)
                if got.get("type") == "res" and got.get("id") == frame["id"]:
                    answered_at = time.monotonic()
            if answered_at is None:
                break
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
