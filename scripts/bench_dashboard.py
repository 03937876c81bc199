"""Dashboard bench case for scripts/bench (issue 28): the web dashboard served by our Gateway on
*many* (20,000 sessions; the legacy store and our SQLite import), loaded in headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright's Python package; never a downloaded browser):

- first paint (`first-contentful-paint`), target < 1 s;
- the sessions view interactive (the page's `sessions-interactive` mark: the first rows on screen,
  after connect, hello and the first `sessions.list` page), target < 2 s;
- scrolling 2,000 rows at 200 px a frame: frame intervals from requestAnimationFrame and the renderer
  main thread's tasks in Chromium's performance trace (wall and CPU time, p95 and max), target
  under 16 ms (judged on CPU time: on a shared machine wall time mostly measures the wait for a core);
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
# scroll the list as a fast wheel would, 200 px (about 7 rows) per animation frame for 300 frames
# (2,000 rows, ten pages fetched on the way), recording each frame's interval
SCROLL_JS = """async () => {
  const box = document.getElementById('grid-scroll');
  const deltas = [];
  let last = performance.now();
  let frames = 0;
  await new Promise(done => {
    function frame(now) {
      deltas.push(now - last); last = now;
      if (++frames > 300 || box.scrollTop + box.clientHeight >= box.scrollHeight - 1) { done(); return; }
      box.scrollTop += 200;
      requestAnimationFrame(frame);
    }
    requestAnimationFrame(t => { last = t; requestAnimationFrame(frame); });
  });
  return deltas.slice(1);
}"""


# jump to the last row (the scrollbar dragged to the bottom) and wait until it shows its data
JUMP_JS = """async () => {
  const box = document.getElementById('grid-scroll');
  const start = performance.now();
  box.scrollTop = box.scrollHeight;
  const last = Math.round(box.scrollHeight / 30) - 1;  // the row index (the page's ROW_H is 30 px)
  while (performance.now() - start < 60000) {
    const shown = [...document.querySelectorAll('.grid-row')].some(
      r => !r.hidden && !r.classList.contains('loading') && r._i === last);
    if (shown) return performance.now() - start;
    await new Promise(r => setTimeout(r, 10));
  }
  return NaN;
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


def _main_thread_tasks(trace: bytes) -> tuple[list[float], list[float]]:
    """(wall, CPU) durations in ms of the renderer main thread's tasks (`ThreadControllerImpl::RunTask`,
    `RunTask` in older releases) in a Chromium trace. CPU time (`tdur`) leaves out the time the
    thread waited for a core, which on a shared machine is most of the wall time."""
    events = json.loads(trace)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    main = {
        (e.get("pid"), e.get("tid"))
        for e in events
        if e.get("name") == "thread_name" and (e.get("args") or {}).get("name") == "CrRendererMain"
    }
    tasks = [
        e
        for e in events
        if e.get("name") in ("RunTask", "ThreadControllerImpl::RunTask")
        and e.get("ph") == "X"
        and (e.get("pid"), e.get("tid")) in main
    ]
    return [e["dur"] / 1000 for e in tasks], [e.get("tdur", e["dur"]) / 1000 for e in tasks]


def _p95(values: list[float]) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[int(0.95 * (len(ordered) - 1))]


def _measure(url: str, runs: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    paint, interactive, frame_p95, task_p95, task_max, cpu_p95, cpu_max, jump = ([] for _ in range(8))
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
                wall, cpu = _main_thread_tasks(browser.stop_tracing())
                frame_p95.append(_p95(deltas))
                task_p95.append(_p95(wall))
                task_max.append(max(wall, default=0.0))
                cpu_p95.append(_p95(cpu))
                cpu_max.append(max(cpu, default=0.0))
                jump.append(page.evaluate(JUMP_JS) / 1000)
                context.close()
        finally:
            browser.close()
    med = statistics.median
    return {
        "firstPaintS": round(med(paint), 3),
        "interactiveS": round(med(interactive), 3),
        "scrollFrameIntervalP95Ms": round(med(frame_p95), 1),
        "scrollMainThreadTaskP95Ms": round(med(task_p95), 1),
        "scrollMainThreadTaskMaxMs": round(med(task_max), 1),
        "scrollMainThreadTaskCpuP95Ms": round(med(cpu_p95), 1),
        "scrollMainThreadTaskCpuMaxMs": round(med(cpu_max), 1),
        "jumpToLastRowS": round(med(jump), 3),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
        "samples": {"firstPaintS": paint, "interactiveS": interactive, "taskCpuMaxMs": cpu_max},
    }


def case_dashboard_many(b: Any, ours: list[str]) -> None:
    _case(
        b, ours, "many", (("legacy", lambda: b.legacy("many")), ("sqlite", lambda: b.ours_imported("many")))
    )


def case_dashboard_100k(b: Any, ours: list[str]) -> None:
    """The same figures on 100,000 sessions (our SQLite import of *scale100k*): the list pages, so
    the page's work does not grow with the store."""
    _case(b, ours, "scale100k", (("sqlite", lambda: b.ours_imported("scale100k")),))


def _case(
    b: Any, ours: list[str], dataset: str, variants: tuple[tuple[str, Callable[[], Path]], ...]
) -> None:
    if not Path(CHROMIUM).exists():
        print(f"\ndashboard-{dataset}: skipped (no Chromium at {CHROMIUM})", file=sys.stderr)
        return
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(
            f"\ndashboard-{dataset}: skipped (the playwright Python package is not installed)",
            file=sys.stderr,
        )
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from openclaw_cli.gateway.http import total_asset_bytes

    assets = total_asset_bytes()
    for label, make in variants:
        gw = _Gateway(ours, b.env_ours(make()))
        try:
            figures = _measure("http://" + gw.url.removeprefix("ws://") + "/", b.runs)
        finally:
            gw.stop()
        figures["assetBytes"] = assets
        b.record_figures(
            f"dashboard-{dataset}-{label}",
            figures,
            "first paint < 1 s, sessions interactive < 2 s, scroll frames < 16 ms, assets < 300 KB",
            {
                "paint": figures["firstPaintS"] < 1.0,
                "interactive": figures["interactiveS"] < 2.0,
                # per-task CPU time: on a loaded machine wall time mostly measures the wait for a core
                "scroll": figures["scrollMainThreadTaskCpuP95Ms"] < 16.0,
                "assets": assets < 300_000,
            },
        )


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    return {
        "dashboard-many": lambda b: case_dashboard_many(b, ours),
        "dashboard-100k": lambda b: case_dashboard_100k(b, ours),
    }
