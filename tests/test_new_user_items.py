"""Issue 22 §7, the small ones found when tried as a new user: the legacy-store hint names the
agent's import command, restore says what the store reads afterwards, export takes its format
from -o's extension and never overwrites a file of another format, status counts archived rows
apart, has an Agent column with several agents and says when the state dir does not exist."""

from __future__ import annotations

import json
from pathlib import Path

from cleanup_support import cli, make_legacy, make_sqlite, now_ms, write_config

KEY = "agent:main:main"


def _two_agents(state_dir: Path) -> None:
    now = now_ms()
    make_legacy(
        state_dir,
        {
            KEY: {"sessionId": "a", "updatedAt": now},
            "agent:main:x": {"sessionId": "b", "updatedAt": now, "archivedAt": now},
        },
    )
    make_legacy(state_dir, {"agent:work:main": {"sessionId": "c", "updatedAt": now}}, agent="work")
    write_config(state_dir, {"agents": {"list": [{"id": "main", "default": True}, {"id": "work"}]}})


def test_the_legacy_hint_names_the_agents_import(state_dir: Path) -> None:
    _two_agents(state_dir)
    proc = cli("sessions", "--agent", "work", "--json")
    assert proc.returncode == 0, proc.stderr
    hint = json.loads(proc.stdout).get("hint", "") + proc.stderr
    assert "--session-sqlite-agent work" in hint and "--session-sqlite-all-agents" in hint


def test_status_counts_archived_rows_and_shows_the_agent(state_dir: Path) -> None:
    _two_agents(state_dir)
    proc = cli("status")
    assert proc.returncode == 0, proc.stderr
    assert "main: legacy: 2 sessions (1 archived)" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if "Key" in line and "Kind" in line)
    assert "Agent" in header
    assert any("work" in line and "agent:work:main" in line for line in proc.stdout.splitlines())
    doc = json.loads(cli("status", "--json").stdout)
    assert [s["archivedSessions"] for s in doc["stores"]] == [1, 0] and doc["stateDirExists"] is True


def test_one_agent_has_no_agent_column(state_dir: Path) -> None:
    make_legacy(state_dir, {KEY: {"sessionId": "a", "updatedAt": now_ms()}})
    proc = cli("status")
    header = next(line for line in proc.stdout.splitlines() if "Key" in line and "Kind" in line)
    assert "Agent" not in header and "(0 archived)" not in proc.stdout


def test_status_says_when_the_state_dir_does_not_exist(state_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-state"
    proc = cli("status", env={"OPENCLAW_STATE_DIR": str(missing)})
    assert proc.returncode == 0, proc.stderr
    assert "does not exist" in proc.stdout.splitlines()[0]
    doc = json.loads(cli("status", "--json", env={"OPENCLAW_STATE_DIR": str(missing)}).stdout)
    assert doc["stateDirExists"] is False
    assert not missing.exists()  # status created nothing


def test_export_format_follows_the_extension_and_never_overwrites_another_format(state_dir: Path) -> None:
    make_sqlite(state_dir, {KEY: {"sessionId": "a", "updatedAt": now_ms()}})
    out = state_dir / "exports"
    out.mkdir(exist_ok=True)
    md, html = out / "s.md", out / "s.html"
    assert cli("sessions", "export", KEY, "-o", str(md)).returncode == 0
    assert md.read_text().startswith("# Session")
    assert cli("sessions", "export", KEY, "-o", str(html)).returncode == 0
    assert html.read_text().lower().startswith("<!doctype html")
    clash = cli("sessions", "export", KEY, "--format", "jsonl", "-o", str(md))
    assert clash.returncode == 2 and "does not match" in clash.stderr
    assert md.read_text().startswith("# Session")  # untouched
    again = cli("sessions", "export", KEY, "-o", str(md))  # same format: replaced
    assert again.returncode == 0
    notes = out / "notes.jsonl"
    notes.write_text("# my notes, not an export\n")
    refused = cli("sessions", "export", KEY, "-o", str(notes))
    assert refused.returncode == 2 and "Refusing to overwrite" in refused.stderr
    assert notes.read_text() == "# my notes, not an export\n"
    plain = out / "plain.txt"  # an unknown extension: JSONL, as before
    assert cli("sessions", "export", KEY, "-o", str(plain)).returncode == 0
    assert json.loads(plain.read_text().splitlines()[0])["type"] == "session"


def test_restore_says_what_the_store_reads_afterwards(state_dir: Path) -> None:
    make_legacy(state_dir, {KEY: {"sessionId": "a", "updatedAt": now_ms()}})
    imported = cli("doctor", "--session-sqlite", "import", "--session-sqlite-agent", "main")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    restored = cli("doctor", "--session-sqlite", "restore", "--session-sqlite-agent", "main")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "still read the SQLite database" in restored.stdout
    assert "older, file-backed OpenClaw" in restored.stdout
