"""The Gateway's protocol as the recordings pin it: handshake, auth, limits, close codes, schemas,
scopes and events (fixtures/gateway-2026.9.6 README), against a real server on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from openclaw_cli.gateway.schemas import check_connect
from openclaw_cli.ops import scopes
from openclaw_cli.ops.methods import check_params
from openclaw_cli.ops.scopes import ADMIN, READ, WRITE
from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_server_support import TOKEN, Client, GatewayThread, connect_params, connected


def closed_with(client: Client, timeout: float = 5.0):
    """The close frame the server sent (after reading whatever came before it)."""
    deadline = time.monotonic() + timeout
    frames = []
    with pytest.raises(ConnectionClosed) as info:
        while time.monotonic() < deadline:
            frames.append(client.recv(timeout=max(0.01, deadline - time.monotonic())))
    return info.value.rcvd, frames


@pytest.fixture
def gateway(state_dir: Path):
    with GatewayThread(tick_interval_ms=60_000) as gw:
        yield gw


@pytest.fixture
def small_state(state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    done = run_cli("doctor", "--session-sqlite", "import", "--json")
    assert done.returncode == 0, done.stderr
    return state_dir


def test_handshake_hello_ok(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        assert c.challenge["type"] == "event" and c.challenge["event"] == "connect.challenge"
        assert set(c.challenge["payload"]) == {"nonce", "ts", "capabilities"} and "seq" not in c.challenge
        res = c.hello()
        assert res["ok"] is True
        hello = res["payload"]
        assert hello["type"] == "hello-ok" and hello["protocol"] == 4
        assert hello["auth"] == {"method": "token", "role": "operator", "scopes": [ADMIN, READ, WRITE]}
        assert hello["policy"] == {
            "maxPayload": 26214400,
            "maxBufferedBytes": 52428800,
            "tickIntervalMs": 60000,
        }
        from openclaw_cli.ops.methods import METHODS

        # every method, except ours that OpenClaw has no counterpart of (served, not announced)
        assert sorted(hello["features"]["methods"]) == sorted(n for n, m in METHODS.items() if m.advertised)
        assert {"connect.challenge", "sessions.changed", "tick"} <= set(hello["features"]["events"])
        assert hello["snapshot"]["stateDir"] == str(gateway.server.paths.state_dir)
        assert hello["snapshot"]["sessionDefaults"]["mainSessionKey"] == "agent:main:main"


def test_bad_token_is_refused_and_closed_1008(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        c.send({"type": "req", "id": "x", "method": "connect", "params": connect_params("wrong")})
        close, frames = closed_with(c)
        assert frames[0]["ok"] is False
        assert frames[0]["error"]["code"] == "INVALID_REQUEST"
        assert frames[0]["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
        assert close.code == 1008 and close.reason == frames[0]["error"]["message"]
        assert frames[0]["error"]["message"].startswith("unauthorized: gateway token mismatch")


def test_no_auth_is_not_paired(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        c.send({"type": "req", "id": "x", "method": "connect", "params": connect_params(None)})
        close, frames = closed_with(c)
        assert frames[0]["error"] == {
            "code": "NOT_PAIRED",
            "message": "device identity required",
            "details": {"code": "DEVICE_IDENTITY_REQUIRED"},
        }
        assert close.code == 1008


def test_protocol_mismatch_closes_1002(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        c.send(
            {
                "type": "req",
                "id": "x",
                "method": "connect",
                "params": connect_params(minProtocol=3, maxProtocol=3),
            }
        )
        close, frames = closed_with(c)
        assert frames[0]["error"]["message"] == "protocol mismatch"
        assert frames[0]["error"]["details"]["expectedProtocol"] == 4
        assert close.code == 1002


def test_request_before_connect_closes_1008(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        c.send({"type": "req", "id": "early", "method": "sessions.list", "params": {}})
        close, frames = closed_with(c)
        assert frames == [
            {
                "type": "res",
                "id": "early",
                "ok": False,
                "error": {
                    "code": "INVALID_REQUEST",
                    "message": "invalid handshake: first request must be connect",
                },
            }
        ]
        assert close.code == 1008


def test_second_connect_fails_but_the_socket_stays(gateway: GatewayThread) -> None:
    with connected(gateway.url) as c:
        again = c.request("connect", connect_params())
        assert again["error"] == {
            "code": "INVALID_REQUEST",
            "message": "connect is only valid as the first request",
        }
        assert c.request("health", omit_params=True)["ok"] is True


def test_preauth_frame_over_64k_is_refused_before_parsing(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        c.send(
            {
                "type": "req",
                "id": "big",
                "method": "connect",
                "params": connect_params(userAgent="x" * 70_000),
            }
        )
        close, frames = closed_with(c)
        assert frames == [] and close.code == 1009 and close.reason == ""
    # after auth the cap is maxPayload: a 100 KB request is parsed (and refused by its schema)
    with connected(gateway.url) as c:
        res = c.request("sessions.list", {"search": "y" * 100_000, "bogus": 1})
        assert res["error"]["message"] == "invalid sessions.list params: at root: unexpected property 'bogus'"


def test_non_json_first_frame_closes_1000_at_once(state_dir: Path) -> None:
    """Closed for the frame, not for silence: the handshake timeout (600 s) is far beyond the wait."""
    with GatewayThread(handshake_timeout_s=600) as gw, Client(gw.url) as c:
        c.send("this is not json")
        close, frames = closed_with(c, timeout=60)
        assert frames == [] and close.code == 1000 and close.reason == ""


def test_silence_closes_1000_after_the_handshake_timeout(state_dir: Path) -> None:
    """A client that sends nothing is closed 1000 once the handshake timeout has passed, and not
    before: timed from before the connection opens, so a late reader cannot shorten it. The server's
    WebSocket opening handshake has the same bound, which a loaded machine can miss for a short one
    (the connection then fails before the challenge): tried again with a longer timeout then."""
    for timeout_s in (1.0, 4.0, 16.0):
        with GatewayThread(handshake_timeout_s=timeout_s) as gw:
            start = time.monotonic()
            try:
                client = Client(gw.url)
            except (OSError, InvalidHandshake, ConnectionClosed):
                continue
            with client:
                close, frames = closed_with(client, timeout=timeout_s + 60)
            waited = time.monotonic() - start
            assert frames == [] and close.code == 1000 and close.reason == ""
            assert waited >= timeout_s, waited
            return
    pytest.fail("no connection opened within a 16 s handshake timeout")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"client": {"id": "openclaw-cli-py", "version": "1", "platform": "linux", "mode": "cli"}},
            "invalid connect params: at /client/id: must be equal to one of the allowed values",
        ),
        ({"bogus": True}, "invalid connect params: at root: unexpected property 'bogus'"),
    ],
)
def test_invalid_connect_params(gateway: GatewayThread, params: dict, message: str) -> None:
    with Client(gateway.url) as c:
        c.send({"type": "req", "id": "x", "method": "connect", "params": connect_params(**params)})
        close, frames = closed_with(c)
        assert frames[0]["error"] == {"code": "INVALID_REQUEST", "message": message}
        assert close.code == 1008 and close.reason == message


def test_schema_errors_with_openclaw_texts(gateway: GatewayThread) -> None:
    with connected(gateway.url) as c:
        cases = [
            ("sessions.nope", {}, "unknown method: sessions.nope"),
            (
                "sessions.list",
                {"limit": 5, "bogus": 1},
                "invalid sessions.list params: at root: unexpected property 'bogus'",
            ),
            ("sessions.list", {"limit": 0}, "invalid sessions.list params: at /limit: must be >= 1"),
            ("sessions.list", ["x"], "invalid sessions.list params: must be object"),
            (
                "sessions.compact",
                {"maxLines": 3},
                "invalid sessions.compact params: must have required property 'key'",
            ),
            (
                "sessions.preview",
                {"keys": []},
                "invalid sessions.preview params: at /keys: must not have fewer than 1 items",
            ),
            (
                "sessions.list",
                {"archived": "x"},
                "invalid sessions.list params: at /archived: must be boolean; "
                "at /archived: must be equal to constant; at /archived: must match a schema in anyOf",
            ),
        ]
        for method, params, message in cases:
            res = c.request(method, params)
            assert res["ok"] is False and res["error"] == {"code": "INVALID_REQUEST", "message": message}, (
                method
            )


def test_schema_module_matches_recorded_messages() -> None:
    assert (
        check_params("sessions.patch", {"pinned": True})
        == "invalid sessions.patch params: must have required property 'key'"
    )
    assert (
        check_params("sessions.patch", {"key": "k", "ttlMinutes": 500})
        == "invalid sessions.patch params: at /ttlMinutes: must be <= 120"
    )
    assert (
        check_params("agents.delete", {"agentId": ""})
        == "invalid agents.delete params: at /agentId: must not have fewer than 1 characters"
    )
    assert check_params("sessions.list", {"limit": 2.0}) is None  # JSON 2.0 is an integer, as in JS
    assert (
        check_params("sessions.list", {"limit": True})
        == "invalid sessions.list params: at /limit: must be integer"
    )
    assert (
        check_connect({"minProtocol": 4})
        == "invalid connect params: must have required property 'maxProtocol'"
    )


def test_scope_enforcement(gateway: GatewayThread) -> None:
    with connected(gateway.url, scopes=[]) as c:
        assert c.request("health")["ok"] is True
        res = c.request("sessions.list", {"limit": 1})
        assert res["error"] == {
            "code": "FORBIDDEN",
            "message": "missing scope: operator.read",
            "details": {
                "code": "MISSING_SCOPE",
                "missingScope": "operator.read",
                "requiredScopes": ["operator.read"],
            },
        }
    with connected(gateway.url, scopes=[READ]) as c:
        assert c.request("sessions.list", {"limit": 1})["ok"] is True
        for method, params in (
            ("sessions.cleanup", {"enforce": True}),
            ("sessions.compact", {"key": "k", "maxLines": 3}),
            ("agents.delete", {"agentId": "nope"}),
        ):
            assert c.request(method, params)["error"]["message"] == "missing scope: operator.admin", method
    with connected(gateway.url, scopes=[WRITE]) as c:  # write implies read
        assert c.request("sessions.list", {"limit": 1})["ok"] is True


def test_probe_connection_without_device_gets_no_scopes(gateway: GatewayThread) -> None:
    with Client(gateway.url) as c:
        params = connect_params(scopes=[READ], minProtocol=3)
        params["client"]["mode"] = "probe"
        hello = c.request("connect", params)["payload"]
        assert hello["auth"]["scopes"] == []
        assert c.request("sessions.list")["error"]["code"] == "FORBIDDEN"


def test_patch_delete_create_scope_policy() -> None:
    from openclaw_cli.ops.methods import METHODS

    def need(method: str, params: dict) -> str | None:
        row = METHODS[method]
        return None if row.scope_free else row.required_scope(params)

    assert need("sessions.patch", {"key": "k", "pinned": True}) == WRITE
    assert need("sessions.patch", {"key": "k", "archived": True, "expectedSessionId": "s"}) == WRITE
    assert need("sessions.patch", {"key": "k", "label": None, "unread": False}) == WRITE
    assert need("sessions.patch", {"key": "k", "verboseLevel": "on"}) == ADMIN
    assert need("sessions.patch", {"key": "k", "permissionMode": "full"}) == ADMIN
    assert need("sessions.patch", {"key": "k", "sandboxMode": None}) == ADMIN
    assert need("sessions.delete", {"key": "k"}) == ADMIN
    assert need("sessions.delete", {"key": "k", "archivedOnly": True}) == WRITE
    assert need("sessions.delete", {"key": "k", "archivedOnly": True, "emitLifecycleHooks": True}) == ADMIN
    assert need("sessions.create", {"parentSessionKey": "agent:main:main", "fork": True}) == WRITE
    assert need("sessions.create", {"execNode": "n"}) == ADMIN
    assert need("sessions.reset", {"key": "k"}) == ADMIN
    assert need("health", {}) is None
    assert (
        scopes.satisfied(READ, [WRITE])
        and scopes.satisfied(WRITE, [ADMIN])
        and not scopes.satisfied(WRITE, [READ])
    )


def test_unauthenticated_connection_receives_only_the_challenge(state_dir: Path) -> None:
    # 2 s, not less: the server's opening handshake and our connect frame must fit in it at load
    with GatewayThread(tick_interval_ms=50, handshake_timeout_s=2.0) as gw:
        with Client(gw.url) as idle:  # no connect: 40 ticks of 50 ms meanwhile must not reach it
            close, frames = closed_with(idle)
            assert frames == [] and close.code == 1000
        with Client(gw.url) as c:
            c.send({"type": "req", "id": "x", "method": "connect", "params": connect_params("wrong")})
            try:  # the server may already have closed after refusing "x": then "y" cannot even be sent
                c.send({"type": "req", "id": "y", "method": "sessions.list", "params": {}})
            except ConnectionClosed:
                pass
            close, frames = closed_with(c)
            assert [f["id"] for f in frames] == ["x"] and frames[0]["ok"] is False


def test_ticks_carry_a_per_connection_seq(state_dir: Path) -> None:
    with GatewayThread(tick_interval_ms=50) as gw, connected(gw.url) as a:
        events = a.drain_events(0.4)
        ticks = [e for e in events if e["event"] == "tick"]
        assert len(ticks) >= 3
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1))
        assert all(set(t["payload"]) == {"ts"} for t in ticks)


def test_reads_are_gateway_shaped(gateway: GatewayThread, small_state: Path) -> None:
    with connected(gateway.url) as c:
        listing = c.request("sessions.list", {"limit": 3})["payload"]
        assert list(listing) == [
            "ts",
            "path",
            "count",
            "totalCount",
            "limitApplied",
            "nextOffset",
            "hasMore",
            "owners",
            "defaults",
            "sessions",
        ]
        assert listing["count"] == 3 and listing["totalCount"] == 12 and listing["nextOffset"] == 3
        page = c.request("sessions.list", {"limit": 3, "offset": 3})["payload"]
        assert page["offset"] == 3 and page["nextOffset"] == 6
        keys = [r["key"] for r in listing["sessions"]] + [r["key"] for r in page["sessions"]]
        assert len(set(keys)) == 6
        row = listing["sessions"][0]
        assert {
            "key",
            "sessionId",
            "agentId",
            "kind",
            "classification",
            "isMain",
            "archived",
            "pinned",
            "unread",
            "updatedAt",
            "hasActiveRun",
            "activeRunIds",
        } <= set(row)
        described = c.request("sessions.describe", {"key": "agent:main:telegram:group:123"})["payload"][
            "session"
        ]
        assert described["kind"] == "group" and described["displayName"] == "Team chat"
        assert c.request("sessions.describe", {"key": "agent:main:nope"})["payload"] == {"session": None}
        preview = c.request("sessions.preview", {"keys": ["agent:main:main"], "limit": 3})["payload"]
        assert preview["previews"][0]["status"] == "ok" and len(preview["previews"][0]["items"]) == 3
        assert {i["role"] for i in preview["previews"][0]["items"]} <= {"user", "assistant"}
        sub = c.request("sessions.subscribe", {"limit": 2})["payload"]
        assert sub["subscribed"] is True and sub["list"]["count"] == 2
        health = c.request("health", omit_params=True)["payload"]
        assert health["ok"] is True and health["sessions"]["count"] == 12


def test_cleanup_and_compact_notify_subscribers_only(gateway: GatewayThread, small_state: Path) -> None:
    with connected(gateway.url) as sub, connected(gateway.url) as other:
        assert sub.request("sessions.subscribe")["payload"] == {"subscribed": True}
        res = other.request("sessions.cleanup", {"agent": "main", "enforce": True})
        assert res["ok"] is True and res["payload"]["applied"] is True
        compact = other.request("sessions.compact", {"key": "agent:main:cron:job1", "maxLines": 3})["payload"]
        assert compact["ok"] is True and compact["compacted"] is True and compact["kept"] == 3
        events = [e for e in sub.drain_events(0.5) if e["event"] == "sessions.changed"]
        assert events[0]["payload"]["reason"] == "cleanup" and set(events[0]["payload"]) == {"reason", "ts"}
        keyed = events[1]["payload"]
        assert keyed["reason"] == "compact" and keyed["compacted"] is True
        assert (
            keyed["sessionKey"] == "agent:main:cron:job1" and keyed["session"]["key"] == keyed["sessionKey"]
        )
        assert [e["seq"] for e in sub.events] == list(range(1, len(sub.events) + 1))
        assert not [e for e in other.drain_events(0.2) if e["event"] == "sessions.changed"]


def test_errors_from_operations_are_invalid_request(gateway: GatewayThread, small_state: Path) -> None:
    with connected(gateway.url) as c:
        res = c.request("agents.delete", {"agentId": "nope"})
        assert res["error"] == {"code": "INVALID_REQUEST", "message": 'agent "nope" not found'}
        res = c.request("agents.delete", {"agentId": "main"})
        assert res["error"]["message"] == 'Agent "main" is the only configured agent and cannot be deleted.'


def test_default_bind_is_loopback_from_the_socket(state_dir: Path) -> None:
    from openclaw_cli.gateway.server import ServerOptions

    assert ServerOptions().host == "127.0.0.1"
    with GatewayThread(host=ServerOptions().host) as gw:
        assert {s.getsockname()[0] for s in gw.server.sockets} == {"127.0.0.1"}


def test_password_auth(state_dir: Path) -> None:
    from openclaw_cli.gateway.auth import AuthPolicy

    with GatewayThread(auth=AuthPolicy("password", "s3cret")) as gw:
        with Client(gw.url) as c:
            params = connect_params(None)
            params["auth"] = {"password": "s3cret"}
            assert c.request("connect", params)["payload"]["auth"]["method"] == "password"
        with Client(gw.url) as c:
            params = connect_params(None)
            params["auth"] = {"password": "nope"}
            c.send({"type": "req", "id": "p", "method": "connect", "params": params})
            close, frames = closed_with(c)
            assert frames[0]["error"]["details"]["code"] == "AUTH_PASSWORD_MISMATCH" and close.code == 1008


def test_secrets_compare_in_constant_time_shape() -> None:
    from openclaw_cli.gateway.auth import secrets_equal

    assert (
        secrets_equal(TOKEN, TOKEN) and not secrets_equal(TOKEN, TOKEN + "x") and not secrets_equal("", TOKEN)
    )


def test_tls_from_config(state_dir: Path, tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    import ssl

    from tests.gateway_server_support import GatewayProcess, write_config

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    cert.private_key_pem.write_to_path(str(key_path))
    write_config(
        state_dir,
        {
            "gateway": {
                "mode": "local",
                "tls": {"enabled": True, "certPath": str(cert_path), "keyPath": str(key_path)},
            }
        },
    )
    with GatewayProcess() as gw:
        assert gw.url.startswith("wss://127.0.0.1:")
        context = ssl.create_default_context()
        ca.configure_trust(context)
        with Client(gw.url, ssl=context) as c:
            assert c.hello()["ok"] is True
            assert json.loads(json.dumps(c.request("health")))["ok"] is True


def test_live_reads_last_only_while_a_server_runs(gateway: GatewayThread, small_state: Path) -> None:
    from openclaw_cli.store import sqlite_common

    with connected(gateway.url) as c:
        assert c.request("sessions.list", {"limit": 2})["ok"] is True
    assert sqlite_common._LIVE["enabled"] == 1 and sqlite_common._KEEPERS  # a WAL reader beside a keeper
    db = small_state / "agents/main/agent/openclaw-agent.sqlite"
    assert Path(f"{db}-shm").exists()  # the keeper keeps the WAL index mapped for readers
    gateway.stop()
    assert sqlite_common._LIVE["enabled"] == 0 and not sqlite_common._KEEPERS


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65_535, 65_536, 70_000])
def test_an_answer_frame_is_the_bytes_websockets_would_write(size: int) -> None:
    """`GatewayConnection.post` writes a text frame without websockets' Frame (issue 30: CPU per
    answer): its header and payload are what `send_text` serialises for a server (unmasked, no
    extension) at each of RFC 6455's three length encodings."""
    from websockets.frames import Frame, Opcode

    from openclaw_cli.gateway.server_connection import _text_header

    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert _text_header(size) + data == Frame(Opcode.TEXT, data).serialize(mask=False, extensions=[])
