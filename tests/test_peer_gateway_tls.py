"""Our client over wss:// to the real OpenClaw 2026.9.6 Gateway (/tmp/peer; skipped when absent),
started with `gateway.tls.enabled`: TLS 1.3 only, its self-signed certificate generated at start-up,
session tickets from Node's OpenSSL. Our local discovery pins that certificate file; every read and
write happens in the calling thread (decisions.md "Gateway client: TLS 1.3 tickets")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from gateway_support import threads_started_by_call

from openclaw_cli.errors import ExitCode, GatewayRequestError, GatewayTransportError
from openclaw_cli.gateway.client import call
from openclaw_cli.gateway.discovery import discover
from tests.openclaw_db_support import NO_PEER, have_peer, peer_gateway

pytestmark = [pytest.mark.peer, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]


def test_calls_over_tls_to_the_real_gateway(tmp_path, monkeypatch) -> None:
    root = tmp_path / "peer"  # not the isolated HOME of conftest
    state = root / "home" / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps({"gateway": {"tls": {"enabled": True}}}))
    with peer_gateway(root) as port:
        config = json.loads((state / "openclaw.json").read_text())
        paths = SimpleNamespace(config_path=state / "openclaw.json", state_dir=state, profile=None)
        target = discover(paths=paths, config=config, env={})
        assert target.url == f"wss://127.0.0.1:{port}" and target.tls is not None and target.tls.fingerprint
        ready = time.monotonic() + 60
        while True:  # it answers "gateway starting; retry shortly" (or nothing in time) for a moment
            try:
                call(target, "health", timeout_ms=5000)
                break
            except (GatewayRequestError, GatewayTransportError):
                if time.monotonic() > ready:
                    raise
                time.sleep(0.5)

        def twenty_calls() -> None:
            for _ in range(20):
                assert isinstance(call(target, "health", timeout_ms=5000).payload, dict)

        assert threads_started_by_call(monkeypatch, twenty_calls) == []

        # our CLI, discovering the same Gateway from the state dir's config
        env = dict(
            os.environ,
            OPENCLAW_STATE_DIR=str(state),
            OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
            HOME=str(root / "home"),
            OPENCLAW_HOME=str(root / "home"),
        )
        env.pop("OPENCLAW_GATEWAY_PORT", None)
        proc = subprocess.run(
            [sys.executable, "-m", "openclaw_cli", "gateway", "call", "health", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert isinstance(json.loads(proc.stdout), dict)

        # a pin to another certificate is refused before anything is sent
        assert (state / "gateway" / "tls" / "gateway-cert.pem").is_file()  # generated at start-up
        (tmp_path / "other.pem").write_bytes(_other_cert())
        other = dict(
            config,
            gateway=dict(config["gateway"], tls={"enabled": True, "certPath": str(tmp_path / "other.pem")}),
        )
        wrong = discover(paths=paths, config=other, env={})
        with pytest.raises(GatewayTransportError) as info:
            call(wrong, "health", timeout_ms=5000)
        assert info.value.kind == "tls" and "fingerprint mismatch" in info.value.message
        assert info.value.exit_code == ExitCode.GATEWAY_UNAVAILABLE


def _other_cert() -> bytes:
    trustme = pytest.importorskip("trustme")
    return trustme.CA().issue_cert("127.0.0.1").cert_chain_pems[0].bytes()
