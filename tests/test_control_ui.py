"""`gateway run --control-ui DIR` (issue 25): our Gateway serves an operator's build of OpenClaw's
Control UI as OpenClaw's Gateway does, and the real UI's sessions views work against it.

The HTTP tests use a small build of our own (real files, real sockets); the browser test drives
Debian's Chromium (never a downloaded browser) through the peer install's real build
(`/tmp/peer`, 2026.9.6): the sidebar lists our rows, one session's history renders, the search
palette finds our messages, and a pin, an archive and a new group made in the page land in the
store. Screenshots are kept under tests/artifacts/control-ui/."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import generate_legacy_state, run_cli
from tests.dashboard_support import ARTIFACTS, chromium, why_no_browser
from tests.gateway_server_support import TOKEN, GatewayThread, write_config

PEER_UI = Path("/tmp/peer/oc/node_modules/openclaw/dist/control-ui")
SHOTS = ARTIFACTS.parent / "control-ui"
CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as res:
            return res.status, dict(res.headers), res.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture
def build(tmp_path: Path) -> Path:
    """A Control UI build's shape: index.html with `./` references, assets, a link out of it."""
    root = tmp_path / "control-ui"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text(
        '<!doctype html>\n<html data-build="x" lang="en"><head>'
        '<link rel="icon" href="./favicon.svg" /><script type="module" src="./assets/app-1.js"></script>'
        "</head><body></body></html>\n"
    )
    (root / "assets" / "app-1.js").write_text("console.log('ui');\n")
    (root / "favicon.svg").write_text("<svg/>")
    (tmp_path / "secret.txt").write_text("not for the browser")
    (root / "assets" / "escape.js").symlink_to(tmp_path / "secret.txt")
    return root


def test_serves_the_build_as_openclaw_does(build: Path, state_dir: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000, control_ui=build) as gw:
        base = "http://" + gw.url.removeprefix("ws://")
        status, headers, body = get(base + "/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        html = body.decode()
        assert '<html data-openclaw-control-ui-base-path="" data-build="x"' in html
        assert 'src="/assets/app-1.js"' in html and 'href="/favicon.svg"' in html and "./" not in html
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
        assert get(base + "/chat/main")[2] == body  # a route of the UI: its index
        status, headers, body = get(base + "/assets/app-1.js")
        assert (status, headers["Content-Type"], body) == (
            200,
            "text/javascript; charset=utf-8",
            b"console.log('ui');\n",
        )
        for path in (
            "/assets/missing.js",
            "/assets/escape.js",
            "/../secret.txt",
            "/assets/%2e%2e/%2e%2e/secret.txt",
        ):
            status, _, body = get(base + path)
            assert status == 404 and b"not for the browser" not in body, path
        assert get(base + "/control-ui-config.json")[0] == 401
        assert get(base + "/control-ui-config.json", {"Authorization": "Bearer wrong"})[0] == 401
        status, _, body = get(base + "/control-ui-config.json", {"Authorization": f"Bearer {TOKEN}"})
        settings = json.loads(body)
        assert status == 200 and settings["basePath"] == "" and settings["terminalEnabled"] is False


def test_cli_refuses_a_directory_without_a_build(tmp_path: Path, state_dir: Path) -> None:
    done = run_cli("gateway", "run", "--allow-unconfigured", "--auth", "none", "--control-ui", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "no index.html" in done.stderr and "dist/control-ui" in done.stderr


def why_no_real_ui() -> str | None:
    if not (PEER_UI / "index.html").is_file():
        return (
            f"no real Control UI build at {PEER_UI} (the peer install of OpenClaw 2026.9.6 under /tmp/peer)"
        )
    return why_no_browser()


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.skipif(why_no_real_ui() is not None, reason=why_no_real_ui() or "")
def test_real_control_ui_sessions_views_against_our_gateway(state_dir: Path) -> None:
    from openclaw_cli.store.detect import open_store_at

    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    store = state_dir / "agents" / "main" / "sessions" / "sessions.json"
    SHOTS.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    with GatewayThread(tick_interval_ms=60_000, control_ui=PEER_UI) as gw, chromium() as browser:
        page = browser.new_page()
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
        page.goto("http://" + gw.url.removeprefix("ws://") + "/#token=" + TOKEN)
        # the sidebar lists our rows (a group chat's subject from our store)
        page.get_by_text("Team chat").first.wait_for(timeout=30_000)
        # the main session's history renders: its first user message and the compaction marker
        page.get_by_text("turn 1: cleanup token budget cron archive").first.wait_for(timeout=30_000)
        page.get_by_text("Context compacted").first.wait_for(timeout=30_000)
        page.screenshot(path=str(SHOTS / "history.png"))
        # search (the command palette): matching sessions, and message hits from our sessions.search
        page.keyboard.press("Control+k")
        page.keyboard.type("compaction")
        page.get_by_text(re.compile("agent gateway legacy import")).first.wait_for(timeout=30_000)
        page.screenshot(path=str(SHOTS / "search.png"))
        page.keyboard.press("Escape")
        # a pin made in the page lands in the store
        page.get_by_text("Team chat").first.click(button="right")
        page.get_by_role("menuitem", name="Pin session").first.click()
        key = "agent:main:telegram:group:123"
        for _ in range(100):  # bounded: the patch's round trip
            with open_store_at(store, agent_id="main", read_only=True) as st:
                if (st.get_entry(key) or {}).get("pinnedAt"):
                    break
            page.wait_for_timeout(100)
        page.screenshot(path=str(SHOTS / "pinned.png"))
        # an archive and a new group made in the page (sessions.patch, sessions.groups.put)
        page.get_by_text("Group 6").first.click(button="right")
        page.get_by_role("menuitem", name="Archive session").first.click()
        page.get_by_text("Team chat").first.click(button="right")
        page.get_by_role("menuitem", name="Move to group").first.hover()
        page.get_by_role("menuitem", name="New group").first.click()
        page.locator("input:visible").first.wait_for(timeout=10_000)
        page.keyboard.type("Ops team")
        page.keyboard.press("Enter")
        for _ in range(100):  # bounded: the group's and the patch's round trips
            with open_store_at(store, agent_id="main", read_only=True) as st:
                if (st.get_entry(key) or {}).get("category") == "Ops team":
                    break
            page.wait_for_timeout(100)
        page.screenshot(path=str(SHOTS / "grouped.png"))
    with open_store_at(store, agent_id="main", read_only=True) as st:
        assert isinstance(st.get_entry(key)["pinnedAt"], int)
        assert st.get_entry(key)["category"] == "Ops team"
        assert isinstance(st.get_entry("agent:main:telegram:group:-1006")["archivedAt"], int)
    catalog = json.loads((state_dir / "state" / "openclaw-cli-session-groups.json").read_text())
    assert [g["name"] for g in catalog["groups"]] == ["Ops team"]
    assert not failed, failed


RECORDED = Path(__file__).parent / "fixtures" / "gateway-2026.9.6-control-ui" / "startup-1.jsonl"


def test_startup_and_message_streams_answer_as_recorded(state_dir: Path) -> None:
    """`chat.startup` is `chat.history`'s answer (recorded: identical documents); the message
    stream subscription is acknowledged as recorded, with nothing to replay."""
    from tests.gateway_server_support import connected

    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    frames = [json.loads(line)["frame"] for line in RECORDED.read_text().splitlines()]
    requests = [f for f in frames if f.get("type") == "req" and f["method"] != "connect"]
    recorded = {f["id"]: f for f in frames if f.get("type") == "res"}
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        for request in requests:
            got = c.request(request["method"], request["params"])
            want = recorded[request["id"]]
            assert got["ok"] is want["ok"] is True, (request, got)
            if request["method"] == "chat.startup":
                history = c.request("chat.history", request["params"])

                def stable(doc: dict) -> dict:  # the row's snapshot time is the read's
                    info = {k: v for k, v in doc.get("sessionInfo", {}).items() if k != "snapshotAt"}
                    return {**doc, "sessionInfo": info}

                assert stable(got["payload"]) == stable(history["payload"]), request
                assert got["payload"]["sessionKey"] == want["payload"]["sessionKey"]
                assert len(got["payload"]["messages"]) == len(want["payload"]["messages"]), request
            elif request["method"].startswith("sessions.messages."):
                payload = dict(got["payload"])
                expected = dict(want["payload"])
                if "approvalReplay" in expected:
                    payload["approvalReplay"] = {**payload["approvalReplay"], "updatedAtMs": 0}
                    expected["approvalReplay"] = {**expected["approvalReplay"], "updatedAtMs": 0}
                assert payload == expected
