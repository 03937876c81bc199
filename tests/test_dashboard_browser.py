"""The web dashboard in a real browser (issue 28): Debian's Chromium, headless, driven by
Playwright's Python package, against our Gateway on loopback. One browser for the module; each
test gets its own page and Gateway. Screenshots of each view are kept under tests/artifacts/
(ignored by git), never compared pixel by pixel. Skipped with the reason when no Chromium exists.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard_support import (
    XSS_HTML,
    XSS_KEY,
    XSS_LABEL,
    add_hostile_session,
    chromium,
    shot,
    why_no_browser,
)
from tests.gateway_server_support import TOKEN, GatewayProcess, GatewayThread, write_config

REASON = why_no_browser()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

WAIT_MS = 20_000


@pytest.fixture(scope="module")
def browser():
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser):
    """A fresh tab; a script error or a CSP violation fails the test."""
    tab = browser.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    tab.on(
        "console",
        lambda msg: (
            problems.append(f"console: {msg.text}")
            if msg.type == "error" and "Content Security Policy" in msg.text
            else None
        ),
    )
    yield tab
    tab.close()
    assert not problems, problems


def http_of(ws_url: str) -> str:
    return "http://" + ws_url.removeprefix("ws://") + "/"


def open_dashboard(page: Any, ws_url: str, token: str = TOKEN) -> None:
    page.goto(f"{http_of(ws_url)}#token={token}")
    page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)


def wait_count(page: Any, text: str) -> None:
    page.wait_for_function(
        "t => document.getElementById('count').textContent === t", arg=text, timeout=WAIT_MS
    )


@pytest.fixture
def hostile_state(state_dir: Path) -> Path:
    from tests.conftest import generate_legacy_state

    generate_legacy_state(state_dir, 30, 0, 2828, "--cron-key-style", "canonical")
    add_hostile_session(state_dir)
    return state_dir


def test_load_authenticate_filter_open_search_and_every_view(page: Any, hostile_state: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000) as gw:
        open_dashboard(page, gw.url)
        # the token left the address bar at once and lives in this tab's sessionStorage only
        assert "token" not in page.url and page.evaluate("location.hash") == "#/sessions"
        assert page.evaluate("sessionStorage.getItem('openclaw.dashboard.token')") == TOKEN
        assert page.evaluate("localStorage.length") == 0
        wait_count(page, "31 sessions")
        assert "read-only" in page.inner_text("#status")
        shot(page, "sessions")

        page.fill("#filter", "telegram:group:123")
        wait_count(page, "1 sessions")
        row = page.locator(".grid-row:not(.loading)").first
        assert row.locator(".c-key").inner_text() == "agent:main:telegram:group:123"

        row.click()
        page.wait_for_selector("#transcript article", timeout=WAIT_MS)
        assert page.inner_text("#session-title") == "agent:main:telegram:group:123"
        # describe and chat.history are two requests; either may answer first
        page.wait_for_selector("#session-meta dt", timeout=WAIT_MS)
        assert "Session id" in page.inner_text("#session-meta")
        assert page.is_hidden("#session-actions")  # read scope: no write buttons
        count = page.inner_text("#transcript-count")
        shown, total = (
            int(n.replace(",", "")) for n in count.strip("()").split(" messages")[0].split(" of ")
        )
        assert 0 < shown <= total
        shot(page, "session")

        page.click("#nav a[data-view=search]")
        page.fill("#search-q", "compaction")
        page.press("#search-q", "Enter")
        page.wait_for_selector("#search-results li", timeout=WAIT_MS)
        marks = page.locator("#search-results mark").all_inner_texts()
        assert marks and all(m.lower() == "compaction" for m in marks)
        shot(page, "search")

        page.click("#nav a[data-view=cleanup]")
        page.wait_for_selector("#cleanup-out .card", timeout=WAIT_MS)
        assert "rules of OpenClaw" in page.inner_text("#cleanup-out")
        shot(page, "cleanup")

        page.click("#nav a[data-view=storage]")
        page.wait_for_selector("#storage-out .card", timeout=WAIT_MS)
        assert "Disk by container" in page.inner_text("#storage-out")
        shot(page, "storage")


def test_markup_in_keys_labels_transcripts_and_summaries_is_inert(page: Any, hostile_state: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000) as gw:
        open_dashboard(page, gw.url)
        page.fill("#filter", "script")
        wait_count(page, "1 sessions")
        row = page.locator(".grid-row:not(.loading)").first
        assert row.locator(".c-key").inner_text() == XSS_KEY  # shown as text
        assert row.locator(".c-name").inner_text() == XSS_LABEL
        row.click()
        page.wait_for_selector("#transcript article.compaction", timeout=WAIT_MS)
        transcript = page.locator("#transcript")
        assert XSS_HTML in transcript.inner_text()
        assert transcript.locator("img, script, b").count() == 0
        # the javascript: link is text; the https one is a link that leaves no referrer
        inert = transcript.locator(".md .inert")
        assert inert.inner_text() == "bad link"
        assert page.locator("a[href^='javascript']").count() == 0
        good = transcript.locator(".md a")
        assert good.get_attribute("href") == "https://example.org/x"
        assert "noreferrer" in good.get_attribute("rel")
        assert transcript.locator(".md strong").inner_text() == "bold"  # Markdown rendered
        # compaction and reset rows are shown where they happened
        titles = transcript.locator("article h4").all_inner_texts()
        assert [t.split(" · ")[0] for t in titles] == ["User", "Compaction summary", "Assistant", "Reset"]
        assert "reset <i>by</i> operator" in transcript.locator("article.compaction").nth(1).inner_text()
        inert.click()
        shot(page, "xss-session")
        assert page.evaluate("window.__xss") is None
        assert page.evaluate("document.querySelectorAll('script').length") == 1  # app.js only


def test_wrong_token_shows_only_an_error(page: Any, hostile_state: Path) -> None:
    with GatewayThread(tick_interval_ms=60_000, exempt_loopback=False) as gw:
        page.goto(f"{http_of(gw.url)}#token=not-the-token")
        page.wait_for_selector("#login-error:not(:empty)", timeout=WAIT_MS)
        assert "refused the token" in page.inner_text("#login-error")
        assert "token" not in page.url
        assert page.is_hidden("#nav")
        assert page.evaluate("[...document.querySelectorAll('.view')].every(v => v.hidden)")
        assert page.locator(".grid-row").count() == 0
        assert page.evaluate("sessionStorage.getItem('openclaw.dashboard.token')") is None
        shot(page, "wrong-token")
        # typed once, the right token connects
        page.fill("#login-token", TOKEN)
        page.click("#login-form button")
        page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)
        # no token at all: the page says the Gateway needs one, and shows nothing else
        page.evaluate("sessionStorage.clear()")
        page.goto(http_of(gw.url))
        page.reload()
        page.wait_for_selector("#login-error:not(:empty)", timeout=WAIT_MS)
        assert "needs its token" in page.inner_text("#login-error")
        assert page.locator(".grid-row").count() == 0 and page.is_hidden("#nav")


def test_a_gateway_without_auth_needs_no_token(page: Any, hostile_state: Path) -> None:
    from openclaw_cli.gateway.auth import AuthPolicy

    with GatewayThread(tick_interval_ms=60_000, auth=AuthPolicy("none")) as gw:
        page.goto(http_of(gw.url))
        page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)
        wait_count(page, "31 sessions")


def list_requests(frames: list[str]) -> int:
    return sum(1 for f in frames if '"sessions.list"' in f)


def row_flags(page: Any, key: str) -> str:
    return page.evaluate(
        """key => {
            const row = [...document.querySelectorAll('.grid-row')].find(r => r.dataset.key === key && !r.hidden);
            return row ? row.querySelector('.c-flags').textContent : null;
        }""",
        key,
    )


def test_live_update_after_cli_pin_writes_and_gateway_restart(page: Any, hostile_state: Path) -> None:
    from tests.conftest import run_cli

    write_config(hostile_state, {"gateway": {"mode": "local", "auth": {"mode": "token", "token": TOKEN}}})
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(str(payload))))
    key = "agent:main:telegram:group:123"
    gw = GatewayProcess().start()
    try:
        port = gw.url.rsplit(":", 1)[1]
        cli_env = {"OPENCLAW_GATEWAY_PORT": port, "OPENCLAW_GATEWAY_TOKEN": TOKEN}
        open_dashboard(page, gw.url)
        page.wait_for_function(
            f"() => {json.dumps(key)} && document.querySelector('.grid-row')", timeout=WAIT_MS
        )
        assert row_flags(page, key) == ""
        before = list_requests(sent)
        done = run_cli("sessions", "pin", key, env=cli_env)
        assert done.returncode == 0, done.stderr
        page.wait_for_function(
            """key => [...document.querySelectorAll('.grid-row')].some(
                r => r.dataset.key === key && r.querySelector('.c-flags').textContent === 'pinned')""",
            arg=key,
            timeout=WAIT_MS,
        )
        assert list_requests(sent) == before  # the event's row replaced the row: no re-fetch
        size = page.evaluate(
            """key => [...document.querySelectorAll('.grid-row')].find(r => r.dataset.key === key)
                .querySelector('.c-size').textContent""",
            key,
        )
        assert size.endswith("KiB")  # the size shown before the event stays
        shot(page, "live-pinned")

        # a write-scoped connection shows the buttons and writes through sessions.patch
        page.check("#write-mode")
        page.wait_for_function(
            "() => document.getElementById('status').textContent.includes('changes allowed')", timeout=WAIT_MS
        )
        page.goto(f"{http_of(gw.url)}#/session/{key.replace(':', '%3A')}")
        page.wait_for_selector("#session-actions:not([hidden])", timeout=WAIT_MS)
        page.wait_for_function(
            "() => document.getElementById('act-pin').textContent === 'Unpin'", timeout=WAIT_MS
        )
        page.click("#act-pin")
        page.wait_for_function(
            "() => document.getElementById('act-pin').textContent === 'Pin'", timeout=WAIT_MS
        )
        listed = json.loads(run_cli("sessions", "--json", env=cli_env).stdout)
        assert not next(r for r in listed["sessions"] if r["key"] == key).get("pinned")
        page.goto(f"{http_of(gw.url)}#/sessions")
        page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)

        # the Gateway restarts on the same port: the page reconnects, subscribes again, and resumes
        gw.stop()
        page.wait_for_function(
            "() => document.getElementById('status').textContent.includes('reconnecting')", timeout=WAIT_MS
        )
        deadline = time.monotonic() + 30
        while True:  # the port may take a moment to be free again (bounded)
            try:
                gw = GatewayProcess("--port", port).start()
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        page.wait_for_function(
            "() => document.getElementById('status').textContent.startsWith('connected')", timeout=WAIT_MS
        )
        done = run_cli("sessions", "pin", key, env=cli_env)
        assert done.returncode == 0, done.stderr
        page.wait_for_function(
            """key => [...document.querySelectorAll('.grid-row')].some(
                r => r.dataset.key === key && r.querySelector('.c-flags').textContent === 'pinned')""",
            arg=key,
            timeout=WAIT_MS,
        )
        shot(page, "after-restart")
    finally:
        gw.stop()


@pytest.mark.parametrize("kind", ["legacy", "sqlite", "schema23", "schema24"])
def test_views_on_every_store_kind(page: Any, state_dir: Path, kind: str) -> None:
    from tests.storage_support import make_state

    make_state(kind, state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        page.goto(f"{http_of(gw.url)}#token={TOKEN}")
        page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)
        page.wait_for_function(
            "() => /^[1-9][\\d,]* sessions$/.test(document.getElementById('count').textContent)",
            timeout=WAIT_MS,
        )
        # the session with the longest transcript the list shows opens with its messages
        page.locator(".grid-row:not(.loading)").first.click()
        page.wait_for_selector("#transcript-count:not(:empty)", timeout=WAIT_MS)
        # describe and chat.history are two requests; either may answer first
        page.wait_for_selector("#session-meta dt", timeout=WAIT_MS)
        assert page.inner_text("#session-meta")
        page.click("#nav a[data-view=cleanup]")
        page.wait_for_selector("#cleanup-out .card", timeout=WAIT_MS)
        page.click("#nav a[data-view=storage]")
        page.wait_for_selector("#storage-out .card", timeout=WAIT_MS)
        shot(page, f"storage-{kind}")


def test_the_list_loads_only_the_pages_it_shows(page: Any, state_dir: Path) -> None:
    """1,500 sessions, pages of 200: opening and jumping to the end asks for the first and the last
    pages only, never the ones scrolled past (the same holds for 100k rows)."""
    from tests.conftest import generate_legacy_state

    generate_legacy_state(state_dir, 1500, 0, 2929, "--min-turns", "1")
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(str(payload))))
    with GatewayThread(tick_interval_ms=60_000) as gw:
        open_dashboard(page, gw.url)
        wait_count(page, "1,500 sessions")
        page.evaluate(
            "() => { const b = document.getElementById('grid-scroll'); b.scrollTop = b.scrollHeight; }"
        )
        page.wait_for_function(
            """() => [...document.querySelectorAll('.grid-row')].some(
                r => !r.hidden && !r.classList.contains('loading') && r._i === 1499)""",
            timeout=WAIT_MS,
        )
        offsets = sorted(json.loads(f)["params"].get("offset", 0) for f in sent if '"sessions.list"' in f)
        assert offsets[0] == 0 and offsets[-1] == 1400
        assert set(offsets) <= {0, 1200, 1400}, offsets  # nothing in between was fetched
        shot(page, "sessions-end")


def test_a_token_with_url_characters_is_read_as_written(page: Any, hostile_state: Path) -> None:
    from openclaw_cli.gateway.auth import AuthPolicy

    secret = "tok+en/with=chars%2"
    with GatewayThread(tick_interval_ms=60_000, auth=AuthPolicy("token", secret)) as gw:
        page.goto(f"{http_of(gw.url)}#token=tok+en/with=chars%252")  # "+" raw, "%" encoded
        page.wait_for_selector(".grid-row:not(.loading)", timeout=WAIT_MS)
        assert page.evaluate("sessionStorage.getItem('openclaw.dashboard.token')") == secret
