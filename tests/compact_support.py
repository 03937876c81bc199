"""Shared helpers for the `openclaw compact` tests: generated legacy states, their SQLite imports
(our `doctor --session-sqlite import`), reading transcripts back from either store."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import copy_tree, run_cli
from tests.session_generator import GeneratedSession, generate_session

AGENT_DIR = Path("agents") / "main"
SESSIONS = AGENT_DIR / "sessions"
DB = AGENT_DIR / "agent" / "openclaw-agent.sqlite"
NOW_MS = 1796000000000


def env_for(state: Path) -> dict[str, str]:
    return {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "HOME": str(state.parent),
        "OPENCLAW_HOME": str(state.parent),
        "NO_COLOR": "1",
    }


def write_legacy_state(
    state: Path,
    sessions: dict[str, GeneratedSession | None],
    *,
    entry_extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, str]:
    """`sessions.json` + one transcript per generated session (None: a row without transcript).
    Returns key -> sessionId."""
    directory = state / SESSIONS
    directory.mkdir(parents=True, exist_ok=True)
    rows: dict[str, Any] = {}
    ids: dict[str, str] = {}
    for index, (key, session) in enumerate(sessions.items()):
        if session is None:
            sid = f"00000000-0000-4000-8000-{index:012d}"
        else:
            sid = session.header["id"]
            (directory / f"{sid}.jsonl").write_text(session.jsonl())
        ids[key] = sid
        row = {
            "sessionId": sid,
            "updatedAt": NOW_MS - index * 1000,
            "chatType": "direct",
            "modelProvider": "openai",
            "model": "gpt-5.4",
            "contextTokens": 200000,
            "compactionCount": 0,
            "sessionFile": f"{sid}.jsonl",
        }
        row.update((entry_extra or {}).get(key, {}))
        rows[key] = row
    (directory / "sessions.json").write_text(json.dumps(rows, indent=2))
    return ids


def header_only(seed: int) -> GeneratedSession:
    session = generate_session(seed, turns=1)
    session.entries = []
    return session


def import_sqlite(state: Path) -> None:
    """Our own `openclaw doctor --session-sqlite import` (in-process, for speed) on `state`."""
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    result = CliRunner().invoke(app, ["doctor", "--session-sqlite", "import", "--json"], env=env_for(state))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (state / DB).exists()


def use_template(template: Path, state: Path) -> Path:
    """Copy a prepared state into the test's isolated state dir."""
    for child in state.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()
    return copy_tree(template, state)


def write_config(state: Path, compaction: dict[str, Any]) -> None:
    (state / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"compaction": compaction}}}))


def cli_json(*args: str, env: dict[str, str] | None = None, ok: bool = True) -> dict[str, Any]:
    proc = run_cli(*args, "--json", env=env)
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        return json.loads(proc.stdout) | {"_rc": proc.returncode, "_stderr": proc.stderr}
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not JSON (rc {proc.returncode}): {proc.stdout!r} {proc.stderr!r}") from exc


def invoke(*args: str) -> tuple[int, dict[str, Any], str]:
    """Run the command in-process (Typer's runner): (exit code, the --json document, stderr)."""
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    result = CliRunner().invoke(app, [*args, "--json"])
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"not JSON (rc {result.exit_code}): {result.stdout!r} {result.stderr!r}"
        ) from exc
    return result.exit_code, doc, result.stderr


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file; a SQLite database by its logical content (its -wal is part of it; the
    -wal/-shm files themselves appear whenever a WAL database is opened, even read-only)."""
    import hashlib

    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.endswith(("-wal", "-shm")):
            continue
        if path.suffix == ".sqlite":
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                data = "\n".join(conn.iterdump()).encode()
            conn.close()
        else:
            data = path.read_bytes()
        out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def rows(state: Path) -> dict[str, dict[str, Any]]:
    """The session rows of whichever store the agent uses."""
    if (state / DB).exists():
        with sqlite3.connect(state / DB) as conn:
            return {
                k: json.loads(v) for k, v in conn.execute("SELECT session_key, entry_json FROM session_nodes")
            }
    return json.loads((state / SESSIONS / "sessions.json").read_text())


def transcript_lines(state: Path, session_id: str, entry: dict[str, Any] | None = None) -> list[str]:
    """Raw lines of a session's transcript (SQLite events in seq order, or the legacy file)."""
    if (state / DB).exists():
        with sqlite3.connect(state / DB) as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                )
            ]
    session_file = (entry or {}).get("sessionFile")
    path = (
        Path(session_file)
        if isinstance(session_file, str) and os.path.isabs(session_file)
        else state / SESSIONS / (session_file or f"{session_id}.jsonl")
    )
    return path.read_text().splitlines()


def transcript_objects(
    state: Path, session_id: str, entry: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [json.loads(line) for line in transcript_lines(state, session_id, entry)]


def patch_read_snapshot(monkeypatch: Any, wrapper: Any) -> None:
    """Route every store's `read_snapshot` through `wrapper(real, store, key, entry, **kwargs)`
    (the write protocol's snapshot read, for tests that count or race it)."""
    from openclaw_cli.store.legacy.store import LegacyStore
    from openclaw_cli.store.sqlite.store import SqliteStore

    for cls in (LegacyStore, SqliteStore):
        real = cls.read_snapshot

        def patched(self: Any, key: str, entry: Any, _real: Any = real, **kwargs: Any) -> Any:
            return wrapper(_real, self, key, entry, **kwargs)

        monkeypatch.setattr(cls, "read_snapshot", patched)
