"""Dashboard bench case for scripts/bench (issue 28): the web dashboard served by our Gateway on
*many* (20,000 sessions; the legacy store and our SQLite import), loaded in headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright's Python package; never a downloaded browser):

- first paint (`first-contentful-paint`), target < 1 s;
- the sessions view interactive (the page's `sessions-interactive` mark: the first rows on screen,
  after connect, hello and the first `sessions.list` page), target < 2 s;
- scrolling the list top to bottom: frame intervals from requestAnimationFrame and the longest
  renderer main-thread task in Chromium's performance trace (`RunTask`), target under 16 ms;
- the page's own assets, target < 300 KB.

Each run loads the page in a fresh browser context (no cache, no storage). Skipped with the reason
when Chromium or Playwright is absent.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOKEN = "bench-dashboard-token"
CHROMIUM = os.environ.get("OPENCLAW_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# scroll the whole list in steps, one per animation frame, recording each frame's interval
SCROLL_JS = """async () => {
  const box = document.getElementById('grid-scroll');
  const deltas = [];
  let last = performance.now();
  const step = Math.max(600, Math.ceil(box.scrollHeight / 240));
  await new Promise(done => {
    function frame(now) {
      deltas.push(now - last); last = now;
      if (box.scrollTop + box.clientHeight >= box.scrollHeight - 1) { done(); return; }
      box.scrollTop += step;
      requestAnimationFrame(frame);
    }
    requestAnimationFrame(t => { last = t; requestAnimationFrame(frame); });
  });
  return deltas.slice(1);
}"""


class _Gateway:
    def __init__(self, ours: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [
                *ours,
                "gateway",
                "run",
                "--port",
                "0",
                "--auth",
                "token",
                "--token",
                TOKEN,
                "--allow-unconfigured",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].split()[0]
            if "[gateway] ready" in line:
                break
        if not self.url:
            raise SystemExit(f"bench: the Gateway did not start ({self.proc.wait()})")

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=120)


def _main_thread_tasks(trace: bytes) -> list[float]:
    """Durations (ms) of the renderer main thread's `RunTask` events in a Chromium trace."""
    events = json.loads(trace)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    main = {
        (e.get("pid"), e.get("tid"))
        for e in events
        if e.get("name") == "thread_name" and (e.get("args") or {}).get("name") == "CrRendererMain"
    }
    return [
        e["dur"] / 1000
        for e in events
        if e.get("name") == "RunTask" and e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in main
    ]


def _measure(url: str, runs: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    paint, interactive, p95, worst_frame, worst_task, over = [], [], [], [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                page.goto(f"{url}#token={TOKEN}")
                page.wait_for_function(
                    "() => performance.getEntriesByName('sessions-interactive').length", timeout=60_000
                )
                paint.append(
                    page.evaluate(
                        "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
                    )
                    / 1000
                )
                interactive.append(
                    page.evaluate("() => performance.getEntriesByName('sessions-interactive')[0].startTime")
                    / 1000
                )
                browser.start_tracing(page=page, categories=["toplevel", "devtools.timeline"])
                deltas = page.evaluate(SCROLL_JS)
                tasks = _main_thread_tasks(browser.stop_tracing())
                deltas.sort()
                p95.append(deltas[int(0.95 * (len(deltas) - 1))])
                worst_frame.append(deltas[-1])
                over.append(sum(1 for d in deltas if d > 16.7 * 1.5) / max(1, len(deltas)))
                worst_task.append(max(tasks, default=0.0))
                context.close()
        finally:
            browser.close()
    med = statistics.median
    return {
        "firstPaintS": round(med(paint), 3),
        "interactiveS": round(med(interactive), 3),
        "scrollFrameP95Ms": round(med(p95), 1),
        "scrollFrameMaxMs": round(med(worst_frame), 1),
        "scrollDroppedShare": round(med(over), 3),
        "scrollLongestMainThreadTaskMs": round(med(worst_task), 1),
        "runs": runs,
        "samples": {"firstPaintS": paint, "interactiveS": interactive, "longestTaskMs": worst_task},
    }


def case_dashboard_many(b: Any, ours: list[str]) -> None:
    if not Path(CHROMIUM).exists():
        print(f"\ndashboard-many: skipped (no Chromium at {CHROMIUM})", file=sys.stderr)
        return
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("\ndashboard-many: skipped (the playwright Python package is not installed)", file=sys.stderr)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from openclaw_cli.gateway.http import total_asset_bytes

    assets = total_asset_bytes()
    for label, state in (("legacy", b.legacy("many")), ("sqlite", b.ours_imported("many"))):
        with tempfile.TemporaryDirectory() as _:
            gw = _Gateway(ours, b.env_ours(state))
            try:
                http = "http://" + gw.url.removeprefix("ws://") + "/"
                figures = _measure(http, b.runs)
            finally:
                gw.stop()
        figures["assetBytes"] = assets
        b.record_figures(
            f"dashboard-many-{label}",
            figures,
            "first paint < 1 s, sessions interactive < 2 s, scroll frames < 16 ms, assets < 300 KB",
            {
                "paint": figures["firstPaintS"] < 1.0,
                "interactive": figures["interactiveS"] < 2.0,
                "scroll": figures["scrollLongestMainThreadTaskMs"] < 16.0,
                "assets": assets < 300_000,
            },
        )


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    return {"dashboard-many": lambda b: case_dashboard_many(b, ours)}
