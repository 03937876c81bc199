"""T-24: after import, a session's SQLite mutation watermark equals its JSONL file's mtime."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from tests.conftest import run_cli


def test_transcript_watermark_is_the_file_mtime(legacy_fixture_state: Path) -> None:
    sid = "df30a0ea-38b3-46e4-abd3-2c8eddd59451"
    transcript = legacy_fixture_state / "agents/main/sessions" / f"{sid}.jsonl"
    mtime_ns = 1_795_000_123_456_000_000
    os.utime(transcript, ns=(mtime_ns, mtime_ns))
    proc = run_cli("doctor", "--session-sqlite", "import", "--json")
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(legacy_fixture_state / "agents/main/agent/openclaw-agent.sqlite")
    (watermark,) = db.execute(
        "SELECT transcript_updated_at FROM session_windows WHERE session_id = ?", (sid,)
    ).fetchone()
    assert watermark == mtime_ns // 1_000_000
