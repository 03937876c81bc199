"""Issue 13 case 6: the same input gets the same answer from every command, and an answer that
names the input as it is (never a slug of it, never another file's wording)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.hardening_support import DB, SESSIONS, cli, doctor, make_state


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return make_state(tmp_path)


def test_a_bom_is_refused_by_reads_and_by_the_import_alike(state: Path) -> None:
    path = state / SESSIONS / "sessions.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    read = cli(state, "sessions", "--json")
    dry = json.loads(doctor(state, "dry-run", "--json").stdout)
    imported = doctor(state, "import", "--json")
    assert read.returncode == 6 and "byte order mark" in json.loads(read.stdout)["error"]["message"]
    issue = json.loads(imported.stdout)["targets"][0]["issues"][0]
    assert (
        imported.returncode == 1
        and issue["code"] == "store_unreadable"
        and "byte order mark" in issue["message"]
    )
    assert dry["targets"][0]["issues"][0]["code"] == "store_unreadable"
    assert not (state / DB).exists() and path.exists()


def test_invalid_utf8_in_sessions_json_is_called_that(state: Path) -> None:
    path = state / SESSIONS / "sessions.json"
    path.write_bytes(path.read_bytes().replace(b'"chatType": "direct"', b'"chatType": "\xff\xfe"', 1))
    for proc in (cli(state, "sessions", "--json"), doctor(state, "import", "--json")):
        text = proc.stdout
        assert "not valid UTF-8" in text and "surrogates" not in text, text


def test_a_sqlite_file_of_another_kind_is_not_called_an_openclaw_database(state: Path) -> None:
    (state / DB).parent.mkdir(parents=True)
    conn = sqlite3.connect(state / DB)
    conn.execute("CREATE TABLE a(x)")
    conn.commit()
    conn.close()
    imported = doctor(state, "import", "--json")
    message = json.loads(imported.stdout)["error"]["message"]
    assert imported.returncode == 6 and "not an OpenClaw agent database" in message
    assert "a real OpenClaw agent database" not in message


@pytest.mark.parametrize("raw", ["main/../../..", "../main", "main\x1b[31m", "\x1b[2Jmain", "ma in"])
def test_an_agent_id_is_never_slugged_into_another_one(state: Path, raw: str) -> None:
    proc = cli(state, "sessions", "--agent", raw, "--json")
    assert proc.returncode == 2, proc.stdout
    message = json.loads(proc.stdout)["error"]["message"]
    assert json.dumps(raw) in message  # shown as given, control characters escaped
    text = cli(state, "sessions", "--agent", raw)
    assert "\x1b" not in text.stderr and json.dumps(raw) in text.stderr


def test_migration_agent_selectors_are_checked(state: Path) -> None:
    bad = cli(state, "doctor", "--session-sqlite", "import", "--session-sqlite-agent", "../../x", "--json")
    assert bad.returncode == 2 and "Invalid agent id" in json.loads(bad.stdout)["error"]["message"]
    ghost = cli(state, "doctor", "--session-sqlite", "dry-run", "--session-sqlite-agent", "ghost", "--json")
    assert (
        ghost.returncode == 4 and 'Unknown agent id "ghost"' in json.loads(ghost.stdout)["error"]["message"]
    )
    ok = cli(state, "doctor", "--session-sqlite", "dry-run", "--session-sqlite-agent", "main", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["totals"]["targets"] == 1


def test_rows_a_listing_cannot_show_are_said(state: Path) -> None:
    path = state / SESSIONS / "sessions.json"
    data = json.loads(path.read_text())
    first = next(iter(data))
    data[first]["sessionId"] = "../../etc/passwd"
    path.write_text(json.dumps(data, indent=2))
    listing = json.loads(cli(state, "sessions", "--json").stdout)
    assert (
        listing["count"] == 11 and "1 row(s) of" in listing["hint"] and "unsafe sessionId" in listing["hint"]
    )
    text = cli(state, "sessions")
    assert "1 row(s) of" in text.stderr


def test_doctor_and_dry_run_report_a_database_the_import_refuses(state: Path) -> None:
    (state / DB).parent.mkdir(parents=True)
    (state / DB).write_bytes(b"garbage, not a database" * 10)
    dry = doctor(state, "dry-run", "--json")
    codes = [i["code"] for i in json.loads(dry.stdout)["targets"][0]["issues"]]
    assert dry.returncode == 1 and "sqlite_corrupt" in codes
    plain = cli(state, "doctor")
    assert "sqlite_corrupt" in plain.stdout + plain.stderr
    assert doctor(state, "import").returncode == 6


def test_an_empty_database_file_is_read_as_no_database_by_every_command(state: Path) -> None:
    (state / DB).parent.mkdir(parents=True)
    (state / DB).write_bytes(b"")
    listing = cli(state, "sessions", "--json")
    assert listing.returncode == 0 and json.loads(listing.stdout)["count"] == 12
    assert doctor(state, "import", "--json").returncode == 0  # the import replaces the empty file
    assert json.loads(cli(state, "sessions", "--json").stdout)["path"].endswith(".sqlite")
