"""Issue 29 finding 9 (local): the import manifest and the Gateway marker are never written through
a symlinked directory (they were written wherever the link pointed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode, RefusedError
from tests.hardening_support import DB, SESSIONS, doctor, make_state


def test_the_import_refuses_a_symlinked_manifest_directory(tmp_path: Path) -> None:
    state = make_state(tmp_path, 5)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (state / "session-sqlite-migration-runs").symlink_to(elsewhere)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == ExitCode.REFUSED, proc.stdout[-800:]
    error = json.loads(proc.stdout)["error"]
    assert "symbolic link" in error["message"] and "session-sqlite-migration-runs" in error["message"]
    assert list(elsewhere.iterdir()) == []
    assert not (state / DB).exists() and (state / SESSIONS / "sessions.json").exists()


@pytest.mark.parametrize("link", ["tmp", "tmp/openclaw-uid"])
def test_the_gateway_marker_is_not_written_through_a_symlinked_directory(tmp_path: Path, link: str) -> None:
    import os

    from openclaw_cli.gateway.ownership import StateOwnership, marker_path

    state = tmp_path / "state"
    state.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = marker_path(state).parent if link.endswith("uid") else state / "tmp"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(elsewhere)
    with pytest.raises(RefusedError) as info:
        StateOwnership(state, None).write_marker({"url": "ws://127.0.0.1:1", "version": "x"})
    assert "symbolic link" in info.value.message and str(where) in info.value.message
    assert list(elsewhere.iterdir()) == [] and os.path.islink(where)


def test_deleting_a_row_whose_transcript_is_a_symlink_warns(tmp_path: Path) -> None:
    from tests.hardening_support import cli

    state = make_state(tmp_path, 5)
    key = "agent:main:cron:job1"
    sid = json.loads((state / SESSIONS / "sessions.json").read_text())[key]["sessionId"]
    link = state / SESSIONS / f"{sid}.jsonl"
    real = tmp_path / "real.jsonl"
    link.rename(real)
    link.symlink_to(real)
    before = real.read_bytes()
    proc = cli(state, "sessions", "delete", key, "--yes", "--json")
    assert proc.returncode == 0, proc.stdout[-600:]
    result = json.loads(proc.stdout)["results"][0]
    assert result["status"] == "deleted" and result["archived"] == []
    assert any(str(link) in w and "symbolic link" in w for w in result["warnings"]), result
    assert link.is_symlink() and real.read_bytes() == before  # never followed
    text = cli(state, "sessions", "delete", "agent:main:telegram:group:123", "--yes")
    assert text.returncode == 0


def test_resetting_a_row_whose_transcript_is_a_symlink_warns(tmp_path: Path) -> None:
    from tests.hardening_support import cli

    state = make_state(tmp_path, 5)
    key = "agent:main:cron:job1"
    sid = json.loads((state / SESSIONS / "sessions.json").read_text())[key]["sessionId"]
    link = state / SESSIONS / f"{sid}.jsonl"
    real = tmp_path / "real.jsonl"
    link.rename(real)
    link.symlink_to(real)
    proc = cli(state, "sessions", "reset", key, "--json")
    assert proc.returncode == 0, proc.stdout[-600:]
    doc = json.loads(proc.stdout)
    assert any(str(link) in w and "symbolic link" in w for w in doc["warnings"]), doc
    text = cli(state, "sessions", "reset", key)
    assert (
        text.returncode == 0 and "Warning:" not in text.stdout
    )  # the new session has its own regular transcript


def test_cleanup_of_a_row_whose_transcript_is_a_symlink_warns(tmp_path: Path) -> None:
    """A row the cleanup removes (2026.7 prunes stale rows and archives their transcripts) whose
    transcript is a symbolic link: the link is not followed, and the summary says so (`warnings`,
    stderr in text) instead of passing over it in silence."""
    from tests.hardening_support import cli

    state = make_state(tmp_path, 5)
    (state / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "1d"}}})
    )
    store = json.loads((state / SESSIONS / "sessions.json").read_text())
    key = "agent:main:cron:job1"
    link = state / SESSIONS / f"{store[key]['sessionId']}.jsonl"
    real = tmp_path / "real.jsonl"
    link.rename(real)
    link.symlink_to(real)
    before = real.read_bytes()
    env = {"OPENCLAW_CLI_BEHAVIOR": "2026.7"}
    dry = cli(state, "sessions", "cleanup", "--dry-run", "--json", **env)
    assert dry.returncode == 0, dry.stdout[-600:]
    assert any(str(link) in w and "would be neither" in w for w in json.loads(dry.stdout)["warnings"])
    text = cli(state, "sessions", "cleanup", "--dry-run", **env)
    assert text.returncode == 0 and f"Warning: Transcript {link}" in text.stderr, text.stderr[-600:]
    proc = cli(state, "sessions", "cleanup", "--enforce", "--json", **env)
    assert proc.returncode == 0, proc.stdout[-600:]
    doc = json.loads(proc.stdout)
    assert key not in json.loads((state / SESSIONS / "sessions.json").read_text())  # the row went
    assert any(str(link) in w and "symbolic link" in w for w in doc["warnings"]), doc
    assert link.is_symlink() and real.read_bytes() == before  # never followed
    assert all(key not in w for w in doc["warnings"] if str(link) not in w)
    text = cli(state, "sessions", "cleanup", "--enforce", **env)  # nothing left to remove: no warning
    assert text.returncode == 0 and "Warning:" not in text.stderr
