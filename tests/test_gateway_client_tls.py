"""`wss://` verification against a fake Gateway with a test CA (trustme): the system store (plus
NODE_EXTRA_CA_CERTS), a pinned `gateway.remote.tlsFingerprint`, the local Gateway's own
certificate (`gateway.tls.certPath`), and the failures — never a silent downgrade."""

from __future__ import annotations

import hashlib
import ssl
from types import SimpleNamespace

import pytest
from gateway_support import FakeGateway, threads_started_by_call

from openclaw_cli.errors import ConfigError, GatewayTransportError
from openclaw_cli.gateway.client import call
from openclaw_cli.gateway.discovery import discover

trustme = pytest.importorskip("trustme")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca, *names: str) -> tuple[ssl.SSLContext, bytes]:
    cert = ca.issue_cert(*(names or ("localhost", "127.0.0.1")))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # sends TLS 1.3 session tickets, as real servers do
    cert.configure_cert(context)
    return context, cert.cert_chain_pems[0].bytes()


def der_sha256(pem: bytes) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.decode())).hexdigest()


def remote_target(url: str, tmp_path, *, env: dict | None = None, remote: dict | None = None):
    paths = SimpleNamespace(config_path=tmp_path / "openclaw.json", state_dir=tmp_path, profile=None)
    config = {
        "gateway": {"mode": "remote", "remote": {"url": url, "token": "secret-token", **(remote or {})}}
    }
    return discover(paths=paths, config=config, env=env or {})


def test_trusted_by_an_extra_ca_bundle(ca, tmp_path) -> None:
    context, _ = server_context(ca)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with FakeGateway(ssl_context=context) as fake:
        target = remote_target(
            f"wss://localhost:{fake.port}", tmp_path, env={"NODE_EXTRA_CA_CERTS": str(bundle)}
        )
        assert target.tls is not None and target.tls.ca_file == str(bundle)
        result = call(target, "health")
    assert result.payload["ok"] is True
    assert fake.received[0]["params"]["auth"] == {"token": "secret-token"}


def test_untrusted_certificate_is_a_tls_error_and_no_credential_is_sent(ca, tmp_path) -> None:
    context, _ = server_context(ca)
    with FakeGateway(ssl_context=context) as fake, pytest.raises(GatewayTransportError) as info:
        call(remote_target(f"wss://localhost:{fake.port}", tmp_path), "health")
    assert info.value.kind == "tls" and not info.value.unreachable
    assert "certificate" in info.value.message
    assert fake.received == []


def test_host_name_mismatch_is_a_tls_error(ca, tmp_path) -> None:
    context, _ = server_context(ca, "gateway.example")
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with FakeGateway(ssl_context=context) as fake, pytest.raises(GatewayTransportError) as info:
        call(
            remote_target(f"wss://localhost:{fake.port}", tmp_path, env={"NODE_EXTRA_CA_CERTS": str(bundle)}),
            "health",
        )
    assert info.value.kind == "tls"
    assert fake.received == []


def test_pinned_fingerprint_accepts_that_certificate_only(ca, tmp_path) -> None:
    context, leaf = server_context(ca)
    pin = ":".join(f"{b:02X}" for b in bytes.fromhex(der_sha256(leaf)))  # colon form, upper case
    with FakeGateway(ssl_context=context) as fake:
        result = call(
            remote_target(f"wss://127.0.0.1:{fake.port}", tmp_path, remote={"tlsFingerprint": pin}), "health"
        )
        assert result.payload["ok"] is True
        wrong = "sha256:" + "0" * 64
        with pytest.raises(GatewayTransportError) as info:
            call(
                remote_target(f"wss://127.0.0.1:{fake.port}", tmp_path, remote={"tlsFingerprint": wrong}),
                "health",
            )
    assert info.value.kind == "tls" and "fingerprint mismatch" in info.value.message
    assert len(fake.requests("connect")) == 1  # the mismatching run sent nothing


def test_an_invalid_fingerprint_in_config_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="tlsFingerprint"):
        remote_target("wss://gw.example:443", tmp_path, remote={"tlsFingerprint": "not-a-fingerprint"})


def test_local_tls_gateway_is_pinned_to_its_certificate_file(ca, tmp_path) -> None:
    context, leaf = server_context(ca)
    cert_file = tmp_path / "gateway" / "tls" / "gateway-cert.pem"
    cert_file.parent.mkdir(parents=True)
    cert_file.write_bytes(leaf)  # the default certPath under the state dir
    with FakeGateway(ssl_context=context) as fake:
        paths = SimpleNamespace(config_path=tmp_path / "openclaw.json", state_dir=tmp_path, profile=None)
        config = {"gateway": {"port": fake.port, "tls": {"enabled": True}, "auth": {"token": "secret-token"}}}
        target = discover(paths=paths, config=config, env={})
        assert target.url == f"wss://127.0.0.1:{fake.port}" and target.tls.fingerprint == der_sha256(leaf)
        assert call(target, "health").payload["ok"] is True


def test_plaintext_to_a_tls_gateway_fails_without_fallback(ca, tmp_path) -> None:
    context, _ = server_context(ca)
    with FakeGateway(ssl_context=context) as fake:
        paths = SimpleNamespace(config_path=tmp_path / "openclaw.json", state_dir=tmp_path, profile=None)
        target = discover(
            paths=paths, config={"gateway": {"port": fake.port, "auth": {"token": "t"}}}, env={}
        )
        with pytest.raises(GatewayTransportError) as info:
            call(target, "health", timeout_ms=2000)
    assert not info.value.unreachable


def test_session_tickets_are_read_in_the_calling_thread(ca, tmp_path, monkeypatch) -> None:
    # A server that sends many TLS 1.3 session tickets right after the handshake: our thread reads
    # them (no second thread reads the SSLSocket while we write the upgrade request), every call
    # succeeds. The race itself is measured under load by scripts/tls_ticket_race.py.
    context, _ = server_context(ca)
    context.num_tickets = 8
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with FakeGateway(ssl_context=context) as fake:
        target = remote_target(
            f"wss://localhost:{fake.port}", tmp_path, env={"NODE_EXTRA_CA_CERTS": str(bundle)}
        )

        def run() -> None:
            for _ in range(5):
                assert call(target, "health", timeout_ms=5000).payload["ok"] is True

        assert threads_started_by_call(monkeypatch, run) == []
        fake.wait_closed(5)
    assert fake.closes == [1005] * 5
