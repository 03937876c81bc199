"""Helpers for the dashboard's browser tests (issue 28): Debian's Chromium driven by Playwright's
Python package (never a downloaded browser), one browser per module, and a state holding the
hostile rows the page must render inert."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

CHROMIUM = Path(os.environ.get("OPENCLAW_TEST_CHROMIUM", "/usr/bin/chromium"))
# Chromium's own network chatter off, a fresh profile per launch (Playwright's user_data_dir)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(os.environ.get("OPENCLAW_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts") / "dashboard"

XSS_KEY = "agent:main:telegram:direct:<script>window.__xss=1</script>"
XSS_LABEL = '<img src=x onerror="window.__xss=2">xss-label'
XSS_HTML = '<img src=x onerror="window.__xss=3"><b>bold?</b><script>window.__xss=4</script>'
XSS_SUMMARY = "Summary with a [bad link](javascript:window.__xss=5) and a [good one](https://example.org/x)\n\n- **bold** item"


def why_no_browser() -> str | None:
    """None when the browser tests can run, else the reason they are skipped."""
    if not CHROMIUM.exists():
        return (
            f"no Chromium at {CHROMIUM} (Debian: `apt-get install chromium chromium-driver`; "
            "or set OPENCLAW_TEST_CHROMIUM); the dashboard's browser tests need a real browser"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[test]')"
    return None


@contextmanager
def chromium(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A headless Chromium context with a fresh profile directory, closed afterwards."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="oc-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=viewport or {"width": 1280, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()


def add_hostile_session(state: Path) -> None:
    """A legacy row whose key and label carry markup, and its transcript: HTML in a message, a
    compaction summary with a `javascript:` Markdown link."""
    sessions = state / "agents" / "main" / "sessions"
    store = sessions / "sessions.json"
    rows = json.loads(store.read_text())
    sid = "0badc0de-0000-4000-8000-00000000xss1"
    transcript = sessions / f"{sid}.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": "2026-11-30T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": XSS_HTML}]},
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "m1",
            "timestamp": "2026-11-30T10:00:02.000Z",
            "summary": XSS_SUMMARY,
            "firstKeptEntryId": "m2",
            "tokensBefore": 1234,
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "c1",
            "timestamp": "2026-11-30T10:00:03.000Z",
            "message": {
                "role": "assistant",
                "model": "gpt-5.4",
                "content": [{"type": "text", "text": "reply </article><script>window.__xss=6</script>"}],
            },
        },
        {
            "type": "reset",
            "id": "r1",
            "parentId": "m2",
            "timestamp": "2026-11-30T10:00:04.000Z",
            "reason": "reset <i>by</i> operator",
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows[XSS_KEY] = {
        "sessionId": sid,
        "updatedAt": 1796000000000,
        "label": XSS_LABEL,
        "chatType": "direct",
        "sessionFile": str(transcript),
        "inputTokens": 10,
        "outputTokens": 5,
        "totalTokens": 15,
    }
    store.write_text(json.dumps(rows, indent=2))


def shot(page: Any, name: str) -> Path:
    """A screenshot kept as a test artefact (looked at, never compared pixel by pixel)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
