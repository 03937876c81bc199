"""Reproduction harness for the TLS 1.3 session-ticket race (docs/decisions.md, "Gateway client:
TLS 1.3 tickets").

Right after a TLS 1.3 handshake the server sends its session tickets. A client that reads the socket
in one thread while another thread writes the WebSocket upgrade request on the same `SSLSocket`
(websockets' sync client) runs OpenSSL's SSL_read and SSL_write on one SSL object at once, which
OpenSSL does not support; now and then the upgrade never completes and the call times out.

Two modes, both under CPU load from `--load` busy-loop subprocesses (each bounded by `--seconds`
and stopped by pid at the end):

  calls  (default) `--runs` Gateway calls in this process against the in-test TLS fake Gateway
         (`tests/gateway_support.FakeGateway`; its server context sends `--tickets` session
         tickets per connection), each with a `--timeout-ms` deadline; counts the calls that fail.
  file   runs `tests/test_gateway_client_tls.py` `--runs` times with pytest (one process each,
         bounded by `--file-timeout` s); counts the runs that fail.
  peer   `--runs` calls against the real OpenClaw Gateway (/tmp/peer, Node.js) started with
         `gateway.tls.enabled` (TLS 1.3 only, its self-signed certificate, our pin to it) in its
         own process group by ../shared/tools/peer-gateway.sh, stopped by that group at the end;
         counted from its first answer to `health` (it says "gateway starting" before).

Prints one JSON line: {mode, runs, failures, kinds, tickets, load, seconds}. Exit 0 whatever the
count (this measures; it does not judge). Example:

    .venv/bin/python scripts/tls_ticket_race.py --runs 400 --load 2
    .venv/bin/python scripts/tls_ticket_race.py --mode file --runs 60 --load 2
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
BUSY = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def cpu_load(workers: int, seconds: float) -> Iterator[None]:
    """`workers` busy loops, each ending by itself after `seconds`; stopped by pid on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY, str(seconds)]) for _ in range(workers)]
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


def run_calls(
    runs: int, timeout_ms: int, tickets: int, deadline: float
) -> tuple[int, int, collections.Counter]:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this tree's package, not another install's
    import ssl

    import trustme
    from gateway_support import FakeGateway

    from openclaw_cli.gateway.client import call
    from openclaw_cli.gateway.discovery import discover

    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.num_tickets = tickets
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    with tempfile.TemporaryDirectory() as tmp, FakeGateway(ssl_context=context) as fake:
        bundle = Path(tmp) / "ca.pem"
        ca.cert_pem.write_to_path(str(bundle))
        paths = SimpleNamespace(config_path=Path(tmp) / "openclaw.json", state_dir=Path(tmp), profile=None)
        config = {
            "gateway": {
                "mode": "remote",
                "remote": {"url": f"wss://localhost:{fake.port}", "token": "secret-token"},
            }
        }
        target = discover(paths=paths, config=config, env={"NODE_EXTRA_CA_CERTS": str(bundle)})
        return _count(call, target, runs, timeout_ms, deadline)


def _count(call, target, runs: int, timeout_ms: int, deadline: float) -> tuple[int, int, collections.Counter]:
    from openclaw_cli.errors import GatewayRequestError, GatewayTransportError

    kinds: collections.Counter = collections.Counter()
    done = failures = 0
    while done < runs and time.monotonic() < deadline:
        done += 1
        try:
            result = call(target, "health", timeout_ms=timeout_ms)
            if not isinstance(result.payload, dict) or result.payload.get("ok") is not True:
                raise RuntimeError("unexpected payload")
        except GatewayTransportError as exc:
            failures += 1
            kinds[exc.kind] += 1
        except GatewayRequestError as exc:  # the Gateway answered, with an error
            failures += 1
            kinds[f"request {exc.code}: {exc.message}"[:120]] += 1
        except Exception as exc:  # anything else is a failure too, counted by type
            failures += 1
            kinds[type(exc).__name__] += 1
    return done, failures, kinds


def run_peer(
    runs: int, timeout_ms: int, deadline: float, script: Path
) -> tuple[int, int, collections.Counter]:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from gateway_support import free_port

    from openclaw_cli.gateway.client import call
    from openclaw_cli.gateway.discovery import discover

    if not Path("/tmp/peer/openclaw").exists() or not script.exists():
        raise SystemExit("the real OpenClaw (/tmp/peer) or peer-gateway.sh is missing")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state = root / "home" / ".openclaw"
        state.mkdir(parents=True)
        (state / "openclaw.json").write_text(json.dumps({"gateway": {"tls": {"enabled": True}}}))
        port = free_port()
        started = subprocess.run(
            ["bash", str(script), "start", str(root), str(port), "peer-token-0123456789"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if started.returncode != 0:
            raise SystemExit(started.stderr + (root / "gateway.out").read_text(errors="replace"))
        try:
            paths = SimpleNamespace(config_path=state / "openclaw.json", state_dir=state, profile=None)
            target = discover(paths=paths, config=json.loads((state / "openclaw.json").read_text()), env={})
            assert target.secure and target.tls is not None and target.tls.fingerprint
            ready = time.monotonic() + 60  # it answers "gateway starting; retry shortly" at first
            while _count(call, target, 1, timeout_ms, deadline)[1] and time.monotonic() < ready:
                time.sleep(0.5)
            return _count(call, target, runs, timeout_ms, deadline)
        finally:
            subprocess.run(
                ["bash", str(script), "stop", started.stdout.strip()], capture_output=True, timeout=30
            )


def run_file(runs: int, per_run_timeout: float, deadline: float) -> tuple[int, int, collections.Counter]:
    kinds: collections.Counter = collections.Counter()
    done = failures = 0
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="")
    while done < runs and time.monotonic() < deadline:
        done += 1
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-x",
                    "-p",
                    "no:cacheprovider",
                    "tests/test_gateway_client_tls.py",
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=per_run_timeout,
            )
        except subprocess.TimeoutExpired:
            failures += 1
            kinds["run timeout"] += 1
            continue
        if proc.returncode != 0:
            failures += 1
            errors = [line[1:].strip() for line in proc.stdout.splitlines() if line.startswith("E ")]
            kinds[errors[0][:120] if errors else f"exit {proc.returncode}"] += 1
    return done, failures, kinds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("calls", "file", "peer"), default="calls")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--load", type=int, default=2, help="busy-loop subprocesses")
    parser.add_argument(
        "--seconds", type=float, default=600, help="bound on the whole measurement (and the load)"
    )
    parser.add_argument("--timeout-ms", type=int, default=3000, help="calls/peer: each call's deadline")
    parser.add_argument("--file-timeout", type=float, default=120, help="file mode: bound on one pytest run")
    parser.add_argument(
        "--peer-gateway", type=Path, default=ROOT.parent / "shared" / "tools" / "peer-gateway.sh"
    )
    parser.add_argument(
        "--tickets",
        type=int,
        default=2,
        help="calls mode: session tickets the fake sends per connection (OpenSSL's default 2; 0: none)",
    )
    args = parser.parse_args()
    started = time.monotonic()
    deadline = started + args.seconds
    with cpu_load(args.load, args.seconds + 5):
        if args.mode == "calls":
            done, failures, kinds = run_calls(args.runs, args.timeout_ms, args.tickets, deadline)
        elif args.mode == "peer":
            done, failures, kinds = run_peer(args.runs, args.timeout_ms, deadline, args.peer_gateway)
        else:
            done, failures, kinds = run_file(args.runs, args.file_timeout, deadline)
    print(
        json.dumps(
            {
                "mode": args.mode,
                "runs": done,
                "failures": failures,
                "kinds": dict(kinds),
                "tickets": {"calls": args.tickets, "file": "the file's", "peer": "Node's"}[args.mode],
                "load": args.load,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
