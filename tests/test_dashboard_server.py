"""The dashboard's server side (issue 28), without a browser: the static page beside the WebSocket
upgrade (headers, CSP, no inline script, 404s), the Origin rule, `chat.history` paging, the
cleanup preview (a dry run with read scope), the read-only local server and `openclaw dashboard`'s
JSON, against real servers on loopback."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openclaw_cli.gateway import http as gw_http
from tests.conftest import generate_legacy_state, run_cli
from tests.gateway_server_support import TOKEN, Client, GatewayThread, connected


def http_get(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("ws://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


@pytest.fixture
def state(state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    return state_dir


@pytest.fixture
def gateway(state: Path):
    with GatewayThread(tick_interval_ms=60_000) as gw:
        yield gw


def test_page_and_assets_are_served_beside_the_websocket(gateway: GatewayThread) -> None:
    status, headers, body = http_get(gateway.url, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    csp = headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "script-src 'self'",
    ):
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "http" not in csp
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    page = body.decode()
    # no inline script or style: every <script> has a src, no on*= handlers, no style attributes
    assert all("src=" in tag for tag in re.findall(r"<script\b[^>]*>", page))
    assert all(not body.strip() for body in re.findall(r"<script\b[^>]*>(.*?)</script>", page, re.S))
    assert not re.search(r"\son[a-z]+\s*=", page) and "style=" not in page and "<style" not in page
    assert "http://" not in page and "https://" not in page  # no CDN, nothing fetched elsewhere
    for path, kind in (
        ("/app.js", "text/javascript"),
        ("/app.css", "text/css"),
        ("/favicon.svg", "image/svg"),
    ):
        status, headers, body = http_get(gateway.url, path)
        assert status == 200 and headers["content-type"].startswith(kind) and body
        assert "content-security-policy" in headers
    for path in ("/nope", "/../pyproject.toml", "/app.js/x", "/%2e%2e/openclaw.json"):
        assert http_get(gateway.url, path)[0] == 404
    # the WebSocket on the same port still works after plain HTTP
    with connected(gateway.url) as c:
        assert c.request("sessions.list", {"limit": 1})["ok"]


def test_assets_are_package_data_under_300_kb() -> None:
    assert 0 < gw_http.total_asset_bytes() < 300_000
    script = gw_http.asset("app.js").decode()
    assert ".innerHTML" not in script and "outerHTML" not in script and "insertAdjacentHTML" not in script
    assert "eval(" not in script and "new Function" not in script
    assert "fetch(" not in script and "XMLHttpRequest" not in script  # the WebSocket is its only channel


@pytest.mark.parametrize(
    ("origin", "host", "ok"),
    [
        (None, "127.0.0.1:1", True),
        ("http://127.0.0.1:8080", "127.0.0.1:8080", True),
        ("http://LOCALHOST:8080", "localhost:8080", True),
        ("http://evil.example", "127.0.0.1:8080", False),
        ("http://127.0.0.1:8081", "127.0.0.1:8080", False),
        ("null", "127.0.0.1:8080", False),
        ("https://127.0.0.1", "127.0.0.1:443", True),
    ],
)
def test_origin_rule(origin: str | None, host: str, ok: bool) -> None:
    assert gw_http.origin_allowed(origin, host) is ok


def test_a_foreign_origin_is_refused_at_connect(gateway: GatewayThread) -> None:
    port = gateway.url.rsplit(":", 1)[1]
    with Client(gateway.url, origin="http://evil.example") as c:
        res = c.hello()
        assert not res["ok"]
        assert res["error"]["details"]["code"] == "CONTROL_UI_ORIGIN_NOT_ALLOWED"
    with Client(gateway.url, origin=f"http://127.0.0.1:{port}") as c:
        assert c.hello()["ok"]


def test_chat_history_pages_from_the_newest(gateway: GatewayThread) -> None:
    with connected(gateway.url, scopes=["operator.read"]) as c:
        whole = c.request("chat.history", {"sessionKey": "agent:main:main", "limit": 1000})["payload"]
        total = whole["totalMessages"]
        assert total == len(whole["messages"]) > 4 and whole["hasMore"] is False
        assert whole["sessionInfo"]["key"] == "agent:main:main"
        last = c.request("chat.history", {"sessionKey": "agent:main:main", "limit": 2})["payload"]
        assert last["messages"] == whole["messages"][-2:] and last["nextOffset"] == 2 and last["hasMore"]
        page = c.request("chat.history", {"sessionKey": "agent:main:main", "limit": 2, "offset": 2})[
            "payload"
        ]
        assert page["messages"] == whole["messages"][-4:-2] and page["offset"] == 2
        kinds = {m.get("__openclaw", {}).get("kind") for m in whole["messages"]}
        roles = {m["role"] for m in whole["messages"]}
        assert "user" in roles and "assistant" in roles
        if "compaction" in kinds:
            comp = next(m for m in whole["messages"] if m["__openclaw"].get("kind") == "compaction")
            assert comp["role"] == "system" and comp["content"][0]["text"] == "Compaction"
        unknown = c.request("chat.history", {"sessionKey": "agent:main:nope"})["payload"]
        assert unknown["messages"] == [] and unknown["totalMessages"] == 0
        cut = c.request("chat.history", {"sessionKey": "agent:main:main", "limit": 1, "maxChars": 3})[
            "payload"
        ]
        text = cut["messages"][0]["content"][0]["text"]
        assert text.endswith("...(truncated)...") and cut["messages"][0]["__openclaw"]["truncated"]
        for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"bogus": 1}):
            res = c.request("chat.history", {"sessionKey": "agent:main:main", **bad})
            assert not res["ok"] and res["error"]["message"].startswith("invalid chat.history params")


def test_cleanup_preview_is_a_read_that_changes_nothing(gateway: GatewayThread, state: Path) -> None:
    store = state / "agents" / "main" / "sessions" / "sessions.json"
    before = store.read_bytes()
    with connected(gateway.url, scopes=["operator.read"]) as c:
        res = c.request(
            "sessions.cleanup", {"allAgents": True, "dryRun": True, "enforce": True, "includeActions": True}
        )
        assert res["ok"], res
        doc = res["payload"]
        stores = doc.get("stores") or [doc]
        assert stores[0]["dryRun"] is True and "plannedActions" in stores[0] and stores[0]["release"]
        removed = stores[0]["pruned"] + stores[0]["capped"] + stores[0]["archived"] + stores[0]["capArchived"]
        assert len([a for a in stores[0]["plannedActions"] if a["action"] != "keep"]) >= removed
        # without dryRun it is still the admin-only write it always was
        res = c.request("sessions.cleanup", {"allAgents": True})
        assert not res["ok"] and res["error"]["code"] == "FORBIDDEN"
    assert store.read_bytes() == before


def test_read_only_server_refuses_writes_and_grants_reading_only(state: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000, read_only=True) as gw, Client(gw.url) as c:
        hello = c.hello()["payload"]
        assert hello["auth"]["scopes"] == ["operator.read"]
        assert c.request("sessions.list", {"limit": 1})["ok"]
        res = c.request("sessions.patch", {"key": "agent:main:main", "pinned": True})
        assert not res["ok"] and res["error"]["code"] == "FORBIDDEN"
        assert c.request("sessions.cleanup", {"allAgents": True, "dryRun": True})["ok"]


def test_dashboard_json_when_no_gateway_runs(state: Path) -> None:
    done = run_cli("dashboard", "--no-open", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"ok": False, "reason": "Gateway is not running."}


def test_dashboard_json_points_at_the_running_gateway(state: Path) -> None:
    from tests.gateway_server_support import GatewayProcess, write_config

    write_config(state, {"gateway": {"mode": "local", "auth": {"mode": "token", "token": TOKEN}}})
    with GatewayProcess() as gw:
        port = int(gw.url.rsplit(":", 1)[1])
        done = run_cli("dashboard", "--no-open", "--json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert list(doc) == ["ok", "url", "httpUrl", "wsUrl", "port", "tokenIncluded"]
        assert doc["port"] == port and doc["httpUrl"] == f"http://127.0.0.1:{port}/"
        assert doc["url"] == f"http://127.0.0.1:{port}/#token={TOKEN}" and "?" not in doc["url"]
        assert doc["wsUrl"] == f"ws://127.0.0.1:{port}" and doc["tokenIncluded"] is True
        text = run_cli("dashboard", "--no-open")
        assert text.returncode == 0 and f"Dashboard URL: http://127.0.0.1:{port}/" in text.stdout


def test_dashboard_local_serves_read_only_until_stopped(state: Path) -> None:
    import os
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "openclaw_cli", "dashboard", "--local", "--no-open", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline()]
        while lines[-1] and lines[-1] != "}\n":  # one (indented) JSON document, printed once listening
            lines.append(proc.stdout.readline())
        doc = json.loads("".join(lines))
        assert doc["ok"] and doc["readOnly"] and doc["tokenIncluded"]
        token = doc["url"].split("#token=", 1)[1]
        assert http_get(doc["wsUrl"], "/")[0] == 200
        with Client(doc["wsUrl"]) as c:
            assert c.hello(token=token)["payload"]["auth"]["scopes"] == ["operator.read"]
            assert c.request("sessions.list", {"limit": 1})["ok"]
        with Client(doc["wsUrl"]) as c:
            assert not c.hello(token="wrong-token")["ok"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_storage_report_is_served_for_the_dashboard(gateway: GatewayThread, state: Path) -> None:
    """`openclaw storage --json`'s document over the Gateway (read scope), what the storage view draws."""
    with connected(gateway.url, scopes=["operator.read"]) as c:
        doc = c.request("storage.report", {"top": 3})["payload"]
        assert doc["root"] == str(state) and doc["total"]["files"] > 12
        containers = {x["container"] for x in doc["byContainer"]}
        assert {"transcripts", "storeIndex"} <= containers
        assert sum(x["diskBytes"] for x in doc["byContainer"]) == doc["total"]["diskBytes"]
        assert len(doc["topSessions"]) == 3
        res = c.request("storage.report", {"top": 101})
        assert not res["ok"] and res["error"]["message"].startswith("invalid storage.report params")


@pytest.mark.parametrize("kind", ["legacy", "sqlite", "schema23", "schema24"])
def test_what_the_views_ask_works_on_every_store_kind(state_dir: Path, kind: str) -> None:
    """Every request the page makes, against our Gateway on each store kind."""
    from tests.storage_support import make_state

    make_state(kind, state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url, scopes=["operator.read"]) as c:
        listing = c.request(
            "sessions.list",
            {"limit": 200, "includeGlobal": True, "includeUnknown": True, "includeSize": True},
        )["payload"]
        rows = listing["sessions"]
        assert rows and listing["totalCount"] == len(rows)
        sizes = [r["transcriptBytes"] for r in rows]
        assert all(s is None or (isinstance(s, int) and s >= 0) for s in sizes)
        if kind == "legacy":  # files: their sizes, exactly
            sessions = state_dir / "agents" / "main" / "sessions"
            for row in rows:
                path = sessions / f"{row['sessionId']}.jsonl"
                if path.exists():
                    assert row["transcriptBytes"] == path.stat().st_size
        # every kind has the figure (null only for a row without a stored transcript)
        assert sum(isinstance(s, int) and s > 0 for s in sizes) >= len(sizes) // 2
        histories = [c.request("chat.history", {"sessionKey": r["key"], "limit": 5})["payload"] for r in rows]
        assert any(h["messages"] for h in histories)
        for h in histories:
            assert len(h["messages"]) <= 5 and h["totalMessages"] >= len(h["messages"])
        preview = c.request("sessions.cleanup", {"allAgents": True, "dryRun": True, "includeActions": True})
        assert preview["ok"], preview
        report = c.request("storage.report", {"top": 3})
        assert report["ok"] and report["payload"]["total"]["files"] > 0
        found = c.request("sessions.search", {"query": "the", "limit": 5})
        assert found["ok"], found
