"""Schema-24 bench cases for scripts/bench (issue 23): the same 20,000 entries as a real OpenClaw
schema-23 database (snapshot fields inline) and as that database migrated to schema 24 by the
documented migration (`tests/schema24_support.migrate_to_24`: snapshot rows, the revision column
appended last), measured side by side in one run:

- `schema24-listing`: `sessions --json` and `sessions --json --limit all`, schema 24 within 1.2x of
  schema 23;
- `schema24-cleanup`: `sessions cleanup --dry-run` and `--enforce` (maxEntries 5000: 15,000 rows
  archived and removed), schema 24 within 1.2x of schema 23;
- `schema24-full-read`: a full read of the 20,000 entries with their snapshots (`load_entries`,
  what status and cleanup planning do) under 150 MB peak RSS.

The databases are built from the real 2026.9.6 catalogue (`tests/fixtures/openclaw-2026.9.6`): its
rows are kept and 20,000 generated sessions added (node, window, header and message events, identity
rows), so every table, trigger and index is OpenClaw's. Variants run interleaved, one of each per
round, so a shared machine loads them alike.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = 20_000
NOW_MS = 1796000000000
CLEANUP = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "3650d", "maxEntries": 5000}}}
RSS_MAX_MB = 150
RATIO_MAX = 1.2
_FULL_READ = """
import sys
from openclaw_cli.store.openclaw.store import OpenClawDbStore
with OpenClawDbStore(sys.argv[1]) as store:
    entries = store.load_entries()
    fields = sum(1 for e in entries.values() if "skillsSnapshot" in e)
    assert len(entries) >= 20000 and fields >= 20000, (len(entries), fields)
"""


def _snapshots(i: int) -> dict[str, Any]:
    """Snapshot fields of the size OpenClaw writes for an ordinary session (~2.3 KB together)."""
    return {
        "sessionDiffBaseline": {
            "files": {f"src/module_{i % 97}.py": {"sha": f"{i:040x}", "lines": i % 400}},
            "capturedAt": NOW_MS - i,
        },
        "skillsSnapshot": {
            "version": 3,
            "skills": [{"name": f"skill-{n}", "enabled": n % 2 == 0, "source": "bundled"} for n in range(8)],
            "promptRef": {"system": f"skills-prompts/sha256/{i % 256:02x}/{i:064x}.txt"},
        },
        "systemPromptReport": {
            "chars": 18000 + i % 1000,
            "truncated": False,
            "sections": [
                {"name": name, "chars": 1000 + n * 37 + i % 50}
                for n, name in enumerate(
                    (
                        "identity",
                        "tools",
                        "skills",
                        "memory",
                        "workspace",
                        "runtime",
                        "channel",
                        "safety",
                        "style",
                        "context",
                    )
                )
            ],
        },
    }


def build_schema23(dest: Path) -> Path:
    """A state whose agent `main` has a real 2026.9.6 database plus SESSIONS generated sessions
    (snapshot fields inline, as 9.6 writers store them). Returns the database path."""
    from openclaw_cli.store.openclaw.schema import add_schema_functions

    src = ROOT / "tests" / "fixtures" / "openclaw-2026.9.6" / "imported-state"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    db = dest / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(str(db), isolation_level=None)
    add_schema_functions(conn)
    conn.execute("BEGIN IMMEDIATE")
    for i in range(SESSIONS):
        key = f"agent:main:telegram:direct:u{i:05d}"
        sid = str(uuid.UUID(int=i + 1, version=4))
        updated = NOW_MS - i * 60_000
        entry = {
            "sessionId": sid,
            "updatedAt": updated,
            "sessionStartedAt": updated - 3_600_000,
            "chatType": "direct",
            "model": "gpt-5.4",
            "modelProvider": "openai",
            "inputTokens": 1000 + i,
            "outputTokens": 200 + i % 100,
            "totalTokens": 1200 + i,
            "contextTokens": 400000,
            "systemSent": True,
            "lastInteractionAt": updated,
            **_snapshots(i),
        }
        text = json.dumps(entry, separators=(",", ":"))
        conn.execute(
            "INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at,"
            " last_interaction_at) VALUES (?,?,?,?,?)",
            (key, sid, text, updated, updated),
        )
        conn.execute(
            "INSERT INTO session_windows(session_id, session_key, created_at, updated_at, chat_type)"
            " VALUES (?,?,?,?, 'direct')",
            (sid, key, updated - 3_600_000, updated),
        )
        header = json.dumps(
            {
                "type": "session",
                "version": 4,
                "id": sid,
                "timestamp": "2026-11-29T00:00:00.000Z",
                "cwd": "/work",
            },
            separators=(",", ":"),
        )
        message = json.dumps(
            {
                "type": "message",
                "id": f"m{i:08x}",
                "parentId": None,
                "timestamp": "2026-11-29T00:00:01.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": f"hello {i}"}]},
            },
            separators=(",", ":"),
        )
        for seq, (event, kind, event_id) in enumerate(
            ((header, "session", sid), (message, "message", f"m{i:08x}"))
        ):
            conn.execute(
                "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_utf8_bytes)"
                " VALUES (?,?,?,?,?)",
                (sid, seq, event, updated, len(event.encode())),
            )
            conn.execute(
                "INSERT INTO transcript_event_identities(session_id, event_id, seq, event_type, created_at)"
                " VALUES (?,?,?,?,?)",
                (sid, event_id, seq, kind, updated),
            )
    conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE entry_valid = 0")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


def datasets(data: Path) -> tuple[Path, Path]:
    """(schema-23 state, schema-24 state) of the same entries (built once, cached)."""
    sys.path.insert(0, str(ROOT))
    from tests.schema24_support import migrate_to_24

    s23, s24 = data / "schema23-20k", data / "schema24-20k"
    if not (s23 / ".built").exists():
        print("  building the schema-23 dataset (20,000 sessions)…", file=sys.stderr)
        build_schema23(s23)
        (s23 / ".built").write_text("ok")
    if not (s24 / ".built").exists():
        print("  migrating a copy to schema 24…", file=sys.stderr)
        if s24.exists():
            shutil.rmtree(s24)
        shutil.copytree(s23, s24)
        (s24 / ".built").unlink()
        migrate_to_24(s24 / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
        (s24 / ".built").write_text("ok")
    return s23, s24


def _db(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _pair(
    b: Any, ours: list[str], name: str, argv: list[str], *, fresh: bool = False, config: dict | None = None
) -> None:
    """One command on schema 23 and on schema 24, interleaved; verdict: 24 <= 1.2x 23 (median)."""
    from bench import summary, timed

    s23, s24 = datasets(b.data)
    runs: dict[str, list] = {"23": [], "24": []}
    for _ in range(b.runs):
        for label, source in (("23", s23), ("24", s24)):
            state = source
            if fresh:  # a write: each run on its own copy
                state = b.data / f"schema{label}-work"
                if state.exists():
                    shutil.rmtree(state)
                shutil.copytree(source, state)
            env = b.env_ours(state, config)
            args = [a.replace("{db}", str(_db(state))) for a in argv]
            runs[label].append(timed([*ours, *args], env))
            if fresh:
                shutil.rmtree(state)
    ratio = statistics.median(r.seconds for r in runs["24"]) / statistics.median(
        r.seconds for r in runs["23"]
    )
    cpu = statistics.median(r.cpu_seconds or 0 for r in runs["24"]) / max(
        statistics.median(r.cpu_seconds or 0 for r in runs["23"]), 1e-9
    )
    line = {
        "case": name,
        "schema23": summary(runs["23"]),
        "schema24": summary(runs["24"]),
        "ratio": round(ratio, 3),
        "cpuRatio": round(cpu, 3),
        "target": f"schema 24 <= {RATIO_MAX}x schema 23",
        "verdict": ("OK" if ratio <= RATIO_MAX else "MISSED")
        + (" FAILED-RUNS" if any(r.code for rs in runs.values() for r in rs) else ""),
    }
    b.results.append(line)
    print(
        f"\n{name}\n  schema 23: {line['schema23']}\n  schema 24: {line['schema24']}\n"
        f"  ratio {ratio:.3f} (CPU {cpu:.3f}); target: {line['target']} {line['verdict']}",
        file=sys.stderr,
    )


def case_listing(b: Any, ours: list[str]) -> None:
    _pair(
        b,
        ours,
        "sessions --json, 20k sessions: schema 24 vs schema 23",
        ["sessions", "--json", "--store", "{db}"],
    )
    _pair(
        b,
        ours,
        "sessions --json --limit all, 20k sessions: schema 24 vs schema 23",
        ["sessions", "--json", "--limit", "all", "--store", "{db}"],
    )


def case_cleanup(b: Any, ours: list[str]) -> None:
    _pair(
        b,
        ours,
        "sessions cleanup --dry-run, 20k sessions: schema 24 vs schema 23",
        ["sessions", "cleanup", "--dry-run", "--json", "--store", "{db}"],
        config=CLEANUP,
    )
    _pair(
        b,
        ours,
        "sessions cleanup --enforce (15,000 removed), 20k sessions: schema 24 vs schema 23",
        ["sessions", "cleanup", "--enforce", "--json", "--no-backup", "--store", "{db}"],
        fresh=True,
        config=CLEANUP,
    )


def case_full_read(b: Any, ours: list[str]) -> None:
    python = str(ROOT / ".venv" / "bin" / "python")
    _, s24 = datasets(b.data)
    runs = b.repeat([python, "-c", _FULL_READ, str(_db(s24))], dict(os.environ))
    b.compare(
        "full read of 20,000 schema-24 entries with snapshots (load_entries)",
        runs,
        None,
        "(peak RSS)",
        rss_max_mb=RSS_MAX_MB,
    )


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    return {
        "schema24-listing": lambda b: case_listing(b, ours),
        "schema24-cleanup": lambda b: case_cleanup(b, ours),
        "schema24-full-read": lambda b: case_full_read(b, ours),
    }
