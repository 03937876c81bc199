"""Delegation of mutating commands to a Gateway (spec D9/D20), end to end: the real CLI as a
subprocess against the in-process fake Gateway (tests/gateway_support.py), and `delegate()` itself.

The two rules that matter most: nothing listens -> the command runs locally and says so; a Gateway
listens but refuses us (or fails) -> a typed error and nothing written locally."""

from __future__ import annotations

import json

import pytest
from cleanup_support import (
    DAY,
    cli,
    cli_json,
    entry,
    load_store,
    make_legacy,
    now_ms,
    tree_digest,
    write_config,
)
from gateway_support import FakeGateway, free_port

from openclaw_cli.cli.delegation import GatewayOptions, delegate, given, wire_params
from openclaw_cli.errors import ExitCode, GatewayCredentialsRequiredError, GatewayRequestError
from openclaw_cli.paths import resolve_paths

TOKEN = "secret-token"
SERVED_CLEANUP = {
    "agentId": "main",
    "storePath": "/gateway/agents/main/agent/openclaw-agent.sqlite",
    "mode": "enforce",
    "dryRun": False,
    "beforeCount": 3,
    "afterCount": 2,
    "applied": True,
    "appliedCount": 2,
    "unreferencedArtifacts": {"removedFiles": 1},
}


@pytest.fixture(autouse=True)
def config_port_decides(monkeypatch):
    """conftest pins OPENCLAW_GATEWAY_PORT=1 (nothing listens); here each test's config names the port."""
    monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)


@pytest.fixture
def stale_store(state_dir):
    """A legacy store with one stale cron row a local enforce would prune."""
    now = now_ms()
    entries = {"agent:main:main": entry("m", now), "agent:main:cron:old": entry("o", now - 40 * DAY)}
    make_legacy(state_dir, entries)
    return entries


def configure(state_dir, port: int, token: str | None = TOKEN, **gateway) -> dict[str, str]:
    gw = {"port": port, **gateway}
    if token is not None:
        gw["auth"] = {"mode": "token", "token": token}
    write_config(state_dir, {"gateway": gw, "session": {"maintenance": {"pruneAfter": "30d"}}})
    return {"OPENCLAW_GATEWAY_PORT": ""}  # the config's port decides


def cleanup_responder(document):
    def respond(method, params, send_event):
        if method == "sessions.cleanup":
            send_event("sessions.changed", {"reason": "cleanup", "ts": 1})
            return ("ok", document)
        return ("error", {"code": "INVALID_REQUEST", "message": f"unknown method: {method}"})

    return respond


# ---- the contract of delegate() -----------------------------------------------------------------


def test_nothing_listens_returns_none_and_says_so(state_dir, stale_store):
    port = free_port()
    configure(state_dir, port)
    hints: list[str] = []
    result = delegate(
        "sessions.cleanup", {"enforce": True, "agent": None}, None, paths=resolve_paths(), hint=hints.append
    )
    assert result is None
    assert hints == [f"No Gateway is listening at ws://127.0.0.1:{port}; ran locally."]


def test_nothing_listens_without_credentials_is_not_an_error(state_dir):
    configure(state_dir, free_port(), token=None)
    assert (
        delegate("sessions.cleanup", {"enforce": True}, None, paths=resolve_paths(), hint=lambda _: None)
        is None
    )


def test_local_only_requests_never_touch_the_network(state_dir):
    with FakeGateway() as fake:
        configure(state_dir, fake.port)
        for params in ({"dryRun": True}, {"store": "/x/sessions.json"}):
            assert delegate("sessions.cleanup", params, None, paths=resolve_paths()) is None
    assert fake.connections == 0


def test_gateway_result_is_returned_with_wire_params(state_dir):
    with FakeGateway(respond=cleanup_responder(SERVED_CLEANUP)) as fake:
        configure(state_dir, fake.port)
        params = given(
            agent=None,
            allAgents=False,
            enforce=True,
            activeKey=None,
            fixMissing=False,
            fixDmScope=False,
            dryRun=False,
            store=None,
        )
        assert delegate("sessions.cleanup", params, None, paths=resolve_paths()) == SERVED_CLEANUP
    assert (
        fake.requests("sessions.cleanup")[0]["params"]
        == wire_params(params)
        == {"allAgents": False, "enforce": True, "fixMissing": False, "fixDmScope": False}
    )


def test_explicit_nulls_are_sent(state_dir):
    """`label --clear` asks for `"label": null`: the Gateway must get it (issue 22 §6), while the
    local-only keys stay home."""

    def respond(method, params, send_event):
        return ("ok", {"ok": True, "key": params["key"], "entry": {}})

    with FakeGateway(respond=respond) as fake:
        configure(state_dir, fake.port)
        params = {"key": "agent:main:main", "label": None, "dryRun": False, "store": None}
        delegate("sessions.patch", params, None, paths=resolve_paths())
    assert fake.requests("sessions.patch")[0]["params"] == {"key": "agent:main:main", "label": None}


def test_listening_gateway_without_credentials_is_refused(state_dir):
    with FakeGateway() as fake:
        configure(state_dir, fake.port, token=None)
        with pytest.raises(GatewayCredentialsRequiredError, match="requires credentials before opening"):
            delegate("sessions.cleanup", {"enforce": True}, None, paths=resolve_paths())
    assert fake.requests() == []


def test_url_override_without_credentials_is_refused_before_connecting(state_dir):
    configure(state_dir, free_port())
    with pytest.raises(GatewayCredentialsRequiredError, match="url override requires explicit credentials"):
        delegate(
            "sessions.cleanup",
            {"enforce": True},
            GatewayOptions(url=f"ws://127.0.0.1:{free_port()}"),
            paths=resolve_paths(),
        )


def test_refusing_gateway_raises(state_dir):
    with FakeGateway(token="other") as fake:
        configure(state_dir, fake.port)
        with pytest.raises(GatewayRequestError) as info:
            delegate("sessions.cleanup", {"enforce": True}, None, paths=resolve_paths())
    assert info.value.details["code"] == "AUTH_TOKEN_MISMATCH"


# ---- sessions cleanup ---------------------------------------------------------------------------


def test_no_ran_locally_before_an_error_that_wrote_nothing(state_dir, stale_store):
    """Issue 22 §7: a local run that fails says the error only (it ran nothing to speak of)."""
    port = free_port()
    env = configure(state_dir, port)
    before = tree_digest(state_dir)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--agent", "nope!", "--json", env=env)
    assert code != 0 and doc["ok"] is False
    assert "ran locally" not in err and "Invalid agent id" in err
    assert tree_digest(state_dir) == before
    code, doc, err = cli_json("sessions", "compact", "agent:main:nope", "--max-lines", "3", "--json", env=env)
    assert code == int(ExitCode.NOT_FOUND) and "ran locally" not in err


def test_cleanup_runs_locally_when_nothing_listens_and_says_so(state_dir, stale_store):
    port = free_port()
    env = configure(state_dir, port)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json", env=env)
    assert code == 0, err
    assert doc["applied"] is True and doc["pruned"] == 1  # our local run
    assert err.count(f"No Gateway is listening at ws://127.0.0.1:{port}; ran locally.") == 1
    assert set(load_store(state_dir)) == {"agent:main:main"}
    proc = cli("cleanup", "--enforce", env=env)
    assert proc.returncode == 0 and "ran locally" in proc.stderr


def test_cleanup_is_served_by_the_gateway(state_dir, stale_store):
    with FakeGateway(respond=cleanup_responder(SERVED_CLEANUP)) as fake:
        env = configure(state_dir, fake.port)
        before = tree_digest(state_dir)
        code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--agent", "main", "--json", env=env)
        proc = cli("sessions", "cleanup", "--enforce", env=env)
    assert code == 0, err
    assert doc == SERVED_CLEANUP  # the Gateway's document, as received
    assert "ran locally" not in err
    assert tree_digest(state_dir) == before  # nothing written locally
    sent = fake.requests("sessions.cleanup")
    assert sent[0]["params"] == {
        "agent": "main",
        "allAgents": False,
        "enforce": True,
        "fixMissing": False,
        "fixDmScope": False,
    }  # the real CLI's params; never dryRun/store
    assert fake.requests("connect")[0]["params"]["scopes"] == ["operator.admin"]
    assert proc.returncode == 0
    text = proc.stdout  # D19: the served result is printed like a local one, on stdout
    assert "Session store: /gateway/agents/main/agent/openclaw-agent.sqlite" in text
    assert "Applied maintenance. Current entries: 2" in text and "Pruned unreferenced artifacts: 1" in text


def test_cleanup_all_agents_text_from_the_gateway_wrapper(state_dir, stale_store):
    wrapper = {
        "allAgents": True,
        "mode": "enforce",
        "dryRun": False,
        "stores": [dict(SERVED_CLEANUP), dict(SERVED_CLEANUP, agentId="ops", storePath="/g/ops.sqlite")],
    }
    with FakeGateway(respond=cleanup_responder(wrapper)) as fake:
        env = configure(state_dir, fake.port)
        proc = cli("sessions", "cleanup", "--enforce", "--all-agents", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Agent: ops" in proc.stdout and "Session store: /g/ops.sqlite" in proc.stdout
    assert fake.requests("sessions.cleanup")[0]["params"]["allAgents"] is True


@pytest.mark.parametrize("flag", ["--dry-run", "--store"])
def test_dry_run_and_store_stay_local_with_a_gateway_up(state_dir, stale_store, flag):
    with FakeGateway(respond=cleanup_responder(SERVED_CLEANUP)) as fake:
        env = configure(state_dir, fake.port)
        args = (
            ["--dry-run"]
            if flag == "--dry-run"
            else ["--enforce", "--store", str(state_dir / "agents/main/sessions/sessions.json")]
        )
        code, doc, err = cli_json("sessions", "cleanup", *args, "--json", env=env)
    assert code == 0, err
    assert doc["pruned"] == 1 and "ran locally" not in err
    assert fake.requests("sessions.cleanup") == []  # computed here, never sent
    # a dry run asks the Gateway that would apply it which release it runs (its hello-ok, D23);
    # an explicit --store is offline repair: no connection at all
    assert fake.connections == (1 if flag == "--dry-run" else 0)


def test_a_dry_run_follows_the_release_the_gateway_announces(state_dir, stale_store):
    """The fake Gateway announces 2026.9.6: the preview archives the stale human row it would
    archive; without the Gateway, `meta.lastTouchedVersion` 2026.7.1 chooses the 2026.7 rules."""
    stale_store = {**stale_store, "agent:main:custom": entry("c", now_ms() - 40 * DAY)}
    make_legacy(state_dir, stale_store)
    with FakeGateway(respond=cleanup_responder(SERVED_CLEANUP)) as fake:
        env = configure(state_dir, fake.port)
        config = json.loads((state_dir / "openclaw.json").read_text())
        (state_dir / "openclaw.json").write_text(
            json.dumps({**config, "meta": {"lastTouchedVersion": "2026.7.1"}})
        )
        code, doc, err = cli_json("sessions", "cleanup", "--dry-run", "--json", env=env)
    assert code == 0, err
    assert (doc["archived"], doc["pruned"], doc["afterCount"]) == (1, 1, 2)
    code, doc, err = cli_json("sessions", "cleanup", "--dry-run", "--json", env=env)  # nothing listens now
    assert code == 0, err
    assert (doc["archived"], doc["pruned"], doc["afterCount"]) == (0, 2, 1)


def test_wrong_token_exits_non_zero_and_writes_nothing(state_dir, stale_store):
    with FakeGateway(token="the-real-one", respond=cleanup_responder(SERVED_CLEANUP)) as fake:
        env = configure(state_dir, fake.port, token="wrong")
        before = tree_digest(state_dir)
        code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json", env=env)
        proc = cli("sessions", "cleanup", "--enforce", env=env)
    assert code == ExitCode.GATEWAY_AUTH
    assert doc["ok"] is False and doc["error"]["type"] == "gateway_request_error"
    assert doc["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    assert tree_digest(state_dir) == before
    assert proc.returncode == ExitCode.GATEWAY_AUTH and "gateway token mismatch" in proc.stderr
    assert fake.requests("sessions.cleanup") == []


def test_listening_gateway_without_credentials_writes_nothing(state_dir, stale_store):
    with FakeGateway() as fake:
        env = configure(state_dir, fake.port, token=None)
        before = tree_digest(state_dir)
        code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--json", env=env)
    assert code == ExitCode.GATEWAY_AUTH and doc["error"]["type"] == "gateway_credentials_required"
    assert tree_digest(state_dir) == before


def test_timeout_is_reported_not_answered_locally(state_dir, stale_store):
    with FakeGateway(respond=lambda m, p, e: ("hang",)) as fake:
        env = configure(state_dir, fake.port)
        before = tree_digest(state_dir)
        code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json", "--timeout", "300", env=env)
    assert code == ExitCode.GATEWAY_UNAVAILABLE, err
    assert doc["error"] == {
        "type": "gateway_transport_error",
        "kind": "timeout",
        "message": "gateway timeout after 300ms",
        "timeoutMs": 300,
    }
    assert doc["gateway"]["urlSource"] == "local loopback"
    assert tree_digest(state_dir) == before


def test_gateway_request_error_is_reported(state_dir, stale_store):
    error = {
        "code": "INVALID_REQUEST",
        "message": "Multiple agents are configured, but this operation has no "
        "explicit owner. Select an agent explicitly; CLI callers can pass --agent <id>, …",
    }
    with FakeGateway(respond=lambda m, p, e: ("error", error)) as fake:
        env = configure(state_dir, fake.port)
        before = tree_digest(state_dir)
        code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--json", env=env)
    assert code == ExitCode.GATEWAY
    assert doc == {"ok": False, "error": {"type": "gateway_request_error", **error, "retryable": False}}
    assert tree_digest(state_dir) == before


def test_partial_cleanup_from_the_gateway_is_printed_and_exits_1(state_dir, stale_store):
    partial = {
        "allAgents": True,
        "mode": "enforce",
        "dryRun": False,
        "stores": [SERVED_CLEANUP],
        "partialError": {"agentId": "ops", "message": "session store locked"},
    }
    error = {"code": "UNAVAILABLE", "message": "session store locked", "details": partial}
    with FakeGateway(respond=lambda m, p, e: ("error", error)) as fake:
        env = configure(state_dir, fake.port)
        code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--all-agents", "--json", env=env)
        proc = cli("sessions", "cleanup", "--enforce", "--all-agents", env=env)
    assert code == 1 and doc == partial
    assert proc.returncode == 1 and "[error] session store locked" in proc.stderr


def test_bad_timeout_is_a_usage_error(state_dir):
    code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--json", "--timeout", "soon")
    assert code == ExitCode.USAGE and "--timeout must be a positive number" in doc["error"]["message"]


# ---- compact ------------------------------------------------------------------------------------


def compact_responder(result):
    return lambda m, p, e: (
        ("ok", result) if m == "sessions.compact" else ("error", {"code": "X", "message": m})
    )


def test_compact_max_lines_is_served_by_the_gateway(state_dir, stale_store):
    result = {"ok": True, "key": "agent:main:main", "compacted": True, "kept": 3}
    with FakeGateway(respond=compact_responder(result)) as fake:
        env = configure(state_dir, fake.port)
        before = tree_digest(state_dir)
        code, doc, err = cli_json("compact", "agent:main:main", "--max-lines", "3", "--json", env=env)
        proc = cli("sessions", "compact", "agent:main:main", "--max-lines", "3", env=env)
    assert code == 0, err
    assert doc == result
    assert fake.requests("sessions.compact")[0]["params"] == {"key": "agent:main:main", "maxLines": 3}
    assert proc.returncode == 0 and "agent:main:main: kept 3 lines (compacted by the Gateway)." in proc.stdout
    assert tree_digest(state_dir) == before


def test_compact_not_compacted_by_the_gateway_exits_1(state_dir, stale_store):
    result = {
        "ok": False,
        "key": "agent:main:main",
        "compacted": False,
        "reason": "No route-compatible authentication source is configured for openai.",
    }
    with FakeGateway(respond=compact_responder(result)) as fake:
        env = configure(state_dir, fake.port)
        code, doc, _ = cli_json("compact", "agent:main:main", "--json", env=env)
        proc = cli("compact", "agent:main:main", env=env)
    assert code == 1 and doc == result
    assert fake.requests("sessions.compact")[0]["params"] == {"key": "agent:main:main"}
    assert proc.returncode == 1 and "not compacted (No route-compatible" in proc.stderr


def test_compact_runs_locally_when_nothing_listens(state_dir, stale_store):
    env = configure(state_dir, free_port())
    code, doc, err = cli_json("compact", "agent:main:main", "--max-lines", "2", "--json", env=env)
    assert code == 0, err
    assert doc["ok"] is True and "ran locally" not in doc.get("hint", "")  # said on stderr, once
    assert err.count("ran locally") == 1


def test_compact_over_threshold_refuses_while_a_gateway_listens(state_dir, stale_store):
    with FakeGateway() as fake:
        env = configure(state_dir, fake.port)
        before = tree_digest(state_dir)
        code, doc, _ = cli_json("compact", "--over-threshold", "--json", env=env)
        dry, _, _ = cli_json("compact", "--over-threshold", "--dry-run", "--json", env=env)
    assert code == ExitCode.BUSY and "A Gateway is listening" in doc["error"]["message"]
    assert dry == 0
    assert tree_digest(state_dir) == before


# ---- agents delete ------------------------------------------------------------------------------


def test_agents_delete_is_served_by_the_gateway(state_dir, stale_store):
    result = {
        "ok": True,
        "agentId": "ops",
        "removedBindings": 0,
        "removed": [
            {"path": "/g/agents/ops/agent", "method": "trash"},
            {"path": "/g/workspace-ops", "method": "missing"},
        ],
        "failed": [],
    }
    with FakeGateway(respond=lambda m, p, e: ("ok", result)) as fake:
        write_config(
            state_dir,
            {
                "gateway": {"port": fake.port, "auth": {"token": TOKEN}},
                "agents": {"list": [{"id": "main"}, {"id": "ops"}]},
            },
        )
        before = tree_digest(state_dir)
        env = {"OPENCLAW_GATEWAY_PORT": ""}
        code, doc, err = cli_json("agents", "delete", "ops", "--force", "--json", env=env)
        proc = cli("agents", "delete", "ops", "--force", env=env)
    assert code == 0, err
    assert doc == result
    assert fake.requests("agents.delete")[0]["params"] == {"agentId": "ops", "deleteFiles": True}
    assert proc.returncode == 0 and "trash: /g/agents/ops/agent" in proc.stdout
    assert tree_digest(state_dir) == before


def test_agents_delete_local_roster_checks_still_come_first(state_dir, stale_store):
    with FakeGateway() as fake:
        env = configure(state_dir, fake.port)
        code, doc, _ = cli_json("agents", "delete", "nope", "--force", "--json", env=env)
    assert code == ExitCode.NOT_FOUND and doc["error"]["message"].startswith(
        'agent "nope" not found. Run openclaw agents list'
    )
    assert fake.requests("agents.delete") == []


def test_agents_delete_runs_locally_when_nothing_listens(state_dir):
    write_config(
        state_dir,
        {
            "gateway": {"port": free_port(), "auth": {"token": TOKEN}},
            "agents": {"list": [{"id": "main"}, {"id": "ops"}]},
        },
    )
    make_legacy(state_dir, {"agent:ops:x": entry("x", now_ms())}, agent="ops")
    code, doc, err = cli_json(
        "agents", "delete", "ops", "--force", "--json", env={"OPENCLAW_GATEWAY_PORT": ""}
    )
    assert code == 0, err
    assert doc["removedEntries"] == 1 and "ran locally" in err
    assert json.loads((state_dir / "openclaw.json").read_text())["agents"]["list"] == [{"id": "main"}]


def test_compact_text_from_our_gateways_richer_document(state_dir, stale_store):
    result = {
        "ok": True,
        "key": "agent:main:main",
        "compacted": True,
        "kept": 2,
        "maxLines": 2,
        "lines": 5,
        "dropped": 3,
        "archive": {"path": "/g/m.jsonl.bak.zst"},
    }
    with FakeGateway(respond=compact_responder(result)) as fake:
        env = configure(state_dir, fake.port)
        proc = cli("compact", "agent:main:main", "--max-lines", "2", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "agent:main:main: Kept 2 of 5 lines (3 dropped)." in proc.stdout
    assert "archive of the full transcript: /g/m.jsonl.bak.zst" in proc.stdout
