"""Issue 27 bench cases for scripts/bench (where the disk went, getting it back):

- `storage-big`: `openclaw storage --json` on *big* (2,000 sessions, 211 MB, legacy), warm: < 1 s
  (the runs after the first, which reads every transcript and keeps each file's figures in the
  cache dir; its time is shown beside);
- `storage-100k`: the same on 100,000 sessions (scale100k, legacy): < 3 s and < 150 MB peak RSS;
- `restore-50mb`: `sessions restore KEY` of a deleted 50 MB session (legacy): < 1 s;
- `usage-100k-ledger`: `openclaw usage --json` over 100,000 ledger records: < 300 ms (the runs
  after the first, which sums the ledger into its cached summary; its time is shown beside).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

KEY = "agent:main:telegram:direct:big-one"


def case_storage(b: Any, ours: list[str], name: str, limit: float, rss: float | None) -> None:
    import bench

    state = b.legacy(name)
    env = b.env_ours(state)
    # the figures of transcript files kept between runs (maintenance/storage.FileFigures)
    env["XDG_CACHE_HOME"] = str(b.data / f"storage-cache-{name}")
    shutil.rmtree(b.data / f"storage-cache-{name}", ignore_errors=True)
    cold = bench.timed([*ours, "storage", "--json"], env)  # warms the page cache, reads every file
    runs = b.repeat([*ours, "storage", "--json"], env)
    b.compare(
        f"storage --json, {name} (legacy), warm",
        runs,
        None,
        f"< {limit:g} s",
        absolute_max=limit,
        rss_max_mb=rss,
        extra={
            "firstRunSeconds": round(cold.seconds, 3),
            "firstRunCpu": cold.cpu_seconds,
            "firstRunRssMB": round(cold.max_rss_mb, 1),
        },
    )

    # The runs above find the whole tally kept (maintenance/storage_memo.py): nothing changed
    # between them. On a live install something usually has (a Gateway appends every turn), so
    # the same command is timed again with that memo dropped before each run: the rows' facts and
    # the files' figures stay cached, the tally is made again, as after a change.
    def drop_memo() -> None:
        for path in b.data.joinpath(f"storage-cache-{name}").rglob("*.tally"):
            path.unlink()

    changed = b.repeat([*ours, "storage", "--json"], env, setup=drop_memo)
    b.compare(
        f"storage --json, {name} (legacy), warm after a change (kept tally dropped, facts kept)",
        changed,
        None,
        f"< {limit:g} s",
        absolute_max=limit,
        rss_max_mb=rss,
    )


def _big_session(path: Path, sid: str, size_mb: int) -> None:
    lines = [
        json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-01T00:00:00.000Z"})
    ]
    parent = None
    body = "x" * 4000
    i = 0
    total = 0
    while total < size_mb * 1_000_000:
        i += 1
        event = {
            "type": "message",
            "id": f"{i:08x}",
            "parentId": parent,
            "timestamp": "2026-11-01T00:00:00.000Z",
            "message": {
                "role": "user" if i % 2 else "assistant",
                "content": [{"type": "text", "text": body}],
            },
        }
        if i % 2 == 0:
            event["message"]["usage"] = {
                "input": 100,
                "output": 10,
                "totalTokens": 110,
                "cost": {"total": 0.001},
            }
        line = json.dumps(event, separators=(",", ":"))
        lines.append(line)
        parent = event["id"]
        total += len(line) + 1
    path.write_text("\n".join(lines) + "\n")


def case_restore(b: Any, ours: list[str]) -> None:
    template = b.data / "restore-50mb-template"
    if not (template / ".ready").exists():
        if template.exists():
            shutil.rmtree(template)
        sessions = template / "agents" / "main" / "sessions"
        sessions.mkdir(parents=True)
        sid = str(uuid.uuid4())
        _big_session(sessions / f"{sid}.jsonl", sid, 50)
        (sessions / "sessions.json").write_text(
            json.dumps(
                {
                    KEY: {
                        "sessionId": sid,
                        "updatedAt": 1796000000000,
                        "sessionFile": str(sessions / f"{sid}.jsonl"),
                    }
                }
            )
        )
        subprocess.run(
            [*ours, "sessions", "delete", KEY, "--yes"],
            env=b.env_ours(template),
            check=True,
            capture_output=True,
        )
        (template / ".ready").write_text("ok")
    state = b.data / "restore-50mb"

    def setup() -> None:
        if state.exists():
            shutil.rmtree(state)
        shutil.copytree(template, state)

    runs = b.repeat([*ours, "sessions", "restore", KEY], b.env_ours(state), setup=setup)
    b.compare("sessions restore of a deleted 50 MB session (legacy)", runs, None, "< 1 s", absolute_max=1.0)


def case_usage(b: Any, ours: list[str]) -> None:
    state = b.data / "usage-100k-ledger"
    ledger = state / "openclaw-cli-usage" / "main.ledger.jsonl"
    if not ledger.exists():
        ledger.parent.mkdir(parents=True, exist_ok=True)
        (state / "agents" / "main" / "sessions").mkdir(parents=True, exist_ok=True)
        with ledger.open("w") as fh:
            for i in range(100_000):
                day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
                model = f"openai/gpt-5.{i % 4}"
                record = {
                    "v": 1,
                    "at": 1796000000000 + i,
                    "agentId": "main",
                    "key": f"agent:main:cron:job{i}",
                    "sessionId": str(uuid.UUID(int=i)),
                    "kind": "cron",
                    "reason": "cleanup",
                    "input": 1000,
                    "output": 100,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 1100,
                    "cost": 0.01,
                    "messages": 10,
                    "model": model.split("/")[1],
                    "provider": "openai",
                    "firstActivityAt": 1795000000000,
                    "lastActivityAt": 1795000100000,
                    "events": 21,
                    "slices": [[day, model, 1000, 100, 0, 0, 1100, 0.01, 10]],
                }
                fh.write(json.dumps(record, separators=(",", ":")) + "\n")
    import bench

    env = b.env_ours(state)
    env["XDG_CACHE_HOME"] = str(b.data / "usage-cache")  # the ledger's summary (store/usage_summary.py)
    shutil.rmtree(b.data / "usage-cache", ignore_errors=True)
    cold = bench.timed([*ours, "usage", "--json"], env)  # sums the whole ledger, writes the summary
    runs = b.repeat([*ours, "usage", "--json"], env)
    b.compare(
        "usage --json over 100,000 ledger records (summary cached)",
        runs,
        None,
        "< 300 ms",
        absolute_max=0.300,
        extra={"firstRunSeconds": round(cold.seconds, 3), "firstRunCpu": cold.cpu_seconds},
    )


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    return {
        "storage-big": lambda b: case_storage(b, ours, "big", 1.0, None),
        "storage-100k": lambda b: case_storage(b, ours, "scale100k", 3.0, 150),
        "restore-50mb": lambda b: case_restore(b, ours),
        "usage-100k-ledger": lambda b: case_usage(b, ours),
    }
