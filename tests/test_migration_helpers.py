"""Helpers shared by the migration tests (fixture F of storage-migration.md §9, snapshots, in-process
runs) plus checks of the helpers' own assumptions."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from openclaw_cli.migration.report import Report
from openclaw_cli.ops.doctor import Options, session_sqlite
from openclaw_cli.paths import resolve_paths

F_ENTRY = {
    "channel": "cli",
    "chatType": "direct",
    "sessionFile": "session-1.jsonl",
    "sessionId": "session-1",
    "sessionStartedAt": 1000,
    "updatedAt": 2000,
}
F_LINES = ['{"type":"session","sessionId":"session-1"}', '{"type":"event","id":"evt-1"}']


def doctor(
    mode: str, *, all_agents: bool = True, agent: str | None = None, store: str | None = None
) -> Report:
    """Run a mode in-process (the isolated_env fixture points OPENCLAW_STATE_DIR at a tmp dir)."""
    if store is not None or agent is not None:
        all_agents = False
    return session_sqlite(
        resolve_paths(), Options(mode=mode, agent=agent, all_agents=all_agents, store=store)
    )


def make_f(state: Path, *, agent: str = "main") -> Path:
    """Fixture F: one entry, its transcript and trajectory, and an orphan without a header."""
    sessions = state / "agents" / agent / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "sessions.json").write_text(json.dumps({f"agent:{agent}:main": F_ENTRY}, indent=2))
    (sessions / "session-1.jsonl").write_text("\n".join(F_LINES) + "\n")
    (sessions / "session-1.trajectory.jsonl").write_text('{"type":"trajectory","n":1}\n')
    (sessions / "orphan.jsonl").write_text('{"type":"event"}\n')
    return sessions


def snapshot(root: Path) -> dict[str, Any]:
    """Every path under root: file content hash + mode, symlink target, directory mode."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = (
                    "file",
                    hashlib.sha256(path.read_bytes()).hexdigest(),
                    stat.S_IMODE(st.st_mode),
                    st.st_mtime_ns,
                )
    return out


def db_events(db: Path, *, raw: bool = False) -> dict[str, list[bytes]]:
    """Each session's stored lines in order; quarantined lines as the bytes they were imported
    from (`raw=True`: the stored wrapper text)."""
    import sqlite3

    from openclaw_cli.store.quarantine import original_bytes

    if not db.exists():
        raise AssertionError(f"no database at {db}")
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    conn.text_factory = bytes
    out: dict[str, list[bytes]] = {}
    for sid, text in conn.execute(
        "SELECT session_id, event_json FROM transcript_events ORDER BY session_id, seq"
    ):
        out.setdefault(sid.decode(), []).append(text if raw else original_bytes(text))
    conn.close()
    return out


def db_entries(db: Path) -> dict[str, dict[str, Any]]:
    import sqlite3

    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    rows = conn.execute("SELECT session_key, entry_json FROM session_nodes").fetchall()
    conn.close()
    return {k: json.loads(v) for k, v in rows}


def test_snapshot_sees_content_and_mode_changes(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    before = snapshot(tmp_path)
    os.chmod(tmp_path / "a", 0o600)
    assert snapshot(tmp_path) != before


def test_make_f_matches_the_spec_fixture(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    assert sorted(p.name for p in sessions.iterdir()) == [
        "orphan.jsonl",
        "session-1.jsonl",
        "session-1.trajectory.jsonl",
        "sessions.json",
    ]
