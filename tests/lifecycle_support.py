"""Shared helpers for the session lifecycle tests: one small state (legacy, and the same imported
into our SQLite store), the CLI in-process, recorded Gateway frames, archive checks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.compact_support import (
    DB,
    SESSIONS,
    import_sqlite,
    rows,
    tree_digest,
    use_template,
    write_legacy_state,
)
from tests.conftest import FIXTURES
from tests.session_generator import generate_session

__all__ = [
    "DB",
    "GATEWAY",
    "KEYS",
    "SESSIONS",
    "archive_bytes",
    "cli",
    "make_templates",
    "recorded",
    "rows",
    "transcript_bytes",
    "tree_digest",
    "use_template",
]

GATEWAY = FIXTURES / "gateway-2026.9.6"
MAIN = "agent:main:main"
GROUP = "agent:main:telegram:group:123"
DIRECT = "agent:main:telegram:direct:100004"
OTHER = "agent:main:telegram:direct:100001"
SUB = "agent:main:subagent:79f74d60-ac03-431e-835d-7d3b92e4016e"
EMPTY = "agent:main:telegram:group:-1007"
KEYS = {"main": MAIN, "group": GROUP, "direct": DIRECT, "other": OTHER, "sub": SUB, "empty": EMPTY}


def make_templates(
    factory: pytest.TempPathFactory,
    name: str,
    *,
    config: dict[str, Any] | None = None,
    kinds: tuple[str, ...] = ("legacy", "sqlite"),
) -> dict[str, Path]:
    """Six sessions (small generated transcripts; EMPTY has a header only) per store kind."""
    sessions = {
        MAIN: generate_session(11, turns=4),
        GROUP: generate_session(12, turns=3),
        DIRECT: generate_session(13, turns=3),
        OTHER: generate_session(14, turns=2),
        SUB: generate_session(15, turns=2),
        EMPTY: generate_session(16, turns=1),
    }
    sessions[EMPTY].entries = []
    extra = {
        GROUP: {"chatType": "group", "groupId": "123", "subject": "Team chat"},
        SUB: {"spawnedBy": MAIN},
        DIRECT: {"lastInteractionAt": 1795999000000},
    }
    out = {}
    for kind in kinds:
        state = factory.mktemp(f"{name}-{kind}") / "state"
        write_legacy_state(state, sessions, entry_extra=extra)
        if config is not None:
            (state / "openclaw.json").write_text(json.dumps(config))
        if kind == "sqlite":
            import_sqlite(state)
        out[kind] = state
    return out


def cli(*args: str, input: str | None = None) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    result = CliRunner().invoke(app, list(args), input=input)
    return result.exit_code, result.stdout, result.stderr


def cli_json(*args: str) -> tuple[int, dict[str, Any]]:
    rc, out, err = cli(*args, "--json")
    try:
        return rc, json.loads(out)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not one JSON document (rc {rc}): {out!r} {err!r}") from exc


def recorded(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(requests, responses) of a recorded Gateway exchange file (broadcast events left out)."""
    requests, responses = [], []
    for line in (GATEWAY / name).read_text().splitlines():
        frame = json.loads(line).get("frame") or {}
        if frame.get("type") == "req" and frame.get("method") != "connect":
            requests.append(frame)
        elif frame.get("type") == "res" and (frame.get("payload") or {}).get("type") != "hello-ok":
            responses.append(frame)
    return requests, responses


def transcript_bytes(state: Path, session_id: str) -> bytes:
    """A session's transcript as JSONL bytes (the legacy file, or our SQLite events + newlines)."""
    db = state / DB
    if db.exists():
        with sqlite3.connect(db) as conn:
            lines = [
                r[0]
                for r in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                )
            ]
        return "".join(line + "\n" for line in lines).encode()
    return (state / SESSIONS / f"{session_id}.jsonl").read_bytes()


def archive_bytes(path: str | Path) -> bytes:
    from openclaw_cli.store.archives import read_archive_bytes

    return read_archive_bytes(Path(path))
