"""Bad input never loses data: corrupt or foreign databases, newer OpenClaw schemas, hard links and
symlinks, transcripts written during the import, an archive directory we cannot write. Each gives a
clear error or issue with a documented exit code, and the originals stay untouched."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode
from tests.conftest import OPENCLAW_FIXTURE, run_cli
from tests.test_migration_helpers import F_LINES, db_events, doctor, make_f, snapshot

DB = Path("agents/main/agent/openclaw-agent.sqlite")


def _cli(*args: str):
    return run_cli("doctor", "--session-sqlite", *args, "--json")


def test_corrupt_database_refuses_import_with_invalid_data_exit(state_dir: Path) -> None:
    make_f(state_dir)
    db = state_dir / DB
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not sqlite" * 20)
    before = snapshot(state_dir)
    result = _cli("import", "--session-sqlite-all-agents")
    assert result.returncode == ExitCode.INVALID_DATA
    payload = json.loads(result.stdout)
    assert payload["ok"] is False and "recover" in payload["error"]["message"]
    assert snapshot(state_dir) == before


def test_database_from_a_newer_openclaw_is_never_written(state_dir: Path) -> None:
    make_f(state_dir)
    db = state_dir / DB
    db.parent.mkdir(parents=True)
    shutil.copyfile(OPENCLAW_FIXTURE / "imported-state" / DB, db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 27")  # 24-26 are read since issue 23
    conn.close()
    before = snapshot(state_dir)
    result = _cli("import", "--session-sqlite-all-agents")
    assert result.returncode == ExitCode.REFUSED
    assert "newer schema version 27" in json.loads(result.stdout)["error"]["message"]
    inspect = _cli("inspect", "--session-sqlite-all-agents")
    assert inspect.returncode == 1
    codes = [i["code"] for i in json.loads(inspect.stdout)["targets"][0]["issues"]]
    assert "sqlite_read_failed" in codes
    compact = _cli("compact", "--session-sqlite-all-agents")
    assert compact.returncode == 1
    assert snapshot(state_dir) == before


def test_current_real_openclaw_database_is_read_but_import_refused(state_dir: Path) -> None:
    make_f(state_dir)
    db = state_dir / DB
    db.parent.mkdir(parents=True)
    shutil.copyfile(OPENCLAW_FIXTURE / "imported-state" / DB, db)
    before = snapshot(state_dir)
    result = _cli("import", "--session-sqlite-all-agents")
    assert result.returncode == ExitCode.REFUSED
    assert "real OpenClaw agent database" in json.loads(result.stdout)["error"]["message"]
    validate = _cli("validate", "--session-sqlite-all-agents")
    assert json.loads(validate.stdout)["targets"][0]["sqliteEntries"] == 13
    assert snapshot(state_dir) == before


@pytest.mark.parametrize("kind", ["hard-link", "symlink", "symlink-component", "outside"])
def test_explicit_store_path_guards(state_dir: Path, tmp_path: Path, kind: str) -> None:
    sessions = make_f(state_dir)
    store = sessions / "sessions.json"
    if kind == "hard-link":
        os.link(store, tmp_path / "other-name.json")
        arg, text = store, "for a hard-linked path"
    elif kind == "symlink":
        (sessions / "alias.json").symlink_to(store)
        arg, text = sessions / "alias.json", "for a symbolic-link path"
    elif kind == "symlink-component":
        (state_dir / "agents" / "linked").symlink_to(state_dir / "agents" / "main")
        arg, text = (
            state_dir / "agents" / "linked" / "sessions" / "sessions.json",
            "through a symbolic-link path component",
        )
    else:
        outside = tmp_path / "outside" / "sessions.json"
        outside.parent.mkdir()
        shutil.copyfile(store, outside)
        arg, text = outside, "for a path outside the active OpenClaw state directory"
    before = snapshot(state_dir)
    result = _cli("import", "--session-sqlite-store", str(arg))
    assert result.returncode == ExitCode.REFUSED, result.stdout
    message = json.loads(result.stdout)["error"]["message"]
    assert message.startswith("Cannot run session SQLite import ") and text in message
    assert snapshot(state_dir) == before
    # read-only modes are not guarded: they report (a symlinked index is reported unreadable, D6.7)
    dry = _cli("dry-run", "--session-sqlite-store", str(arg))
    assert dry.returncode == (1 if kind == "symlink" else 0) and "targets" in json.loads(dry.stdout)


def test_hard_linked_transcript_is_imported_but_never_moved(state_dir: Path, tmp_path: Path) -> None:
    sessions = make_f(state_dir)
    os.link(sessions / "session-1.jsonl", tmp_path / "second-name.jsonl")
    report = doctor("import")
    assert report.exit_code == 1
    issues = {i.code: i.message for i in report.targets[0].issues}
    assert "nlink=2" in issues["transcript_archive_failed"]
    assert "legacy_store_archive_failed" in issues
    assert (sessions / "session-1.jsonl").read_text() == "\n".join(F_LINES) + "\n"
    assert (sessions / "sessions.json").exists()
    assert db_events(state_dir / DB)["session-1"] == [x.encode() for x in F_LINES]
    # once the extra link is gone, a re-run completes without duplicating a line
    (tmp_path / "second-name.jsonl").unlink()
    again = doctor("import")
    assert again.exit_code == 0, again.to_json()
    assert db_events(state_dir / DB)["session-1"] == [x.encode() for x in F_LINES]
    assert not (sessions / "sessions.json").exists()


def test_transcript_written_during_import_is_left_alone(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openclaw_cli.migration import parser_process as importer  # where transcripts are opened

    sessions = make_f(state_dir)
    real_open = importer.open_regular_nofollow
    appended = '{"type":"event","id":"late"}\n'

    def open_then_write(path: Path | str):
        fd, st = real_open(path)
        if Path(path).name == "session-1.jsonl":
            with open(path, "a") as fh:  # a live session writer appends while we read
                fh.write(appended)
        return fd, st

    monkeypatch.setattr(importer, "open_regular_nofollow", open_then_write)
    report = doctor("import")
    assert report.exit_code == 1
    issue = next(i for i in report.targets[0].issues if i.code == "transcript_changed_during_import")
    assert "Legacy transcript changed during import; stop active session writers" in issue.message
    assert (sessions / "session-1.jsonl").read_text() == "\n".join(F_LINES) + "\n" + appended
    assert (sessions / "sessions.json").exists()
    # the target did not validate: nothing was published (D22), the legacy store stays in use
    assert not (state_dir / DB).exists() and not list((state_dir / DB).parent.iterdir())
    monkeypatch.setattr(importer, "open_regular_nofollow", real_open)
    assert doctor("import").exit_code == 0
    assert db_events(state_dir / DB)["session-1"][-1] == appended.strip().encode()


@pytest.mark.parametrize("how", ["not-a-directory", "link-fails"])
def test_unwritable_archive_directory_keeps_every_original(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    sessions = make_f(state_dir)
    before = {p.name: p.read_bytes() for p in sessions.iterdir()}
    archive = state_dir / "agents" / "main" / "session-sqlite-import-archive"
    if how == "not-a-directory":
        archive.write_text("in the way")
    else:
        real_link = os.link

        def refuse(src, dst, **kwargs):
            if (
                Path(dst).parent == archive
            ):  # the archive directory only (the database is published by link too)
                raise PermissionError(errno.EACCES, "Permission denied", str(dst))
            return real_link(src, dst, **kwargs)

        monkeypatch.setattr(os, "link", refuse)
    report = doctor("import")
    assert report.exit_code == 1
    codes = {i.code for i in report.targets[0].issues}
    assert {"transcript_archive_failed", "legacy_store_archive_failed"} <= codes
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == before
    assert db_events(state_dir / DB)["session-1"] == [x.encode() for x in F_LINES]
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    assert manifest["failedAt"] and manifest["targets"][0]["completedMoves"] == []


def test_malformed_transcript_line_is_quarantined_and_the_lines_after_it_imported(state_dir: Path) -> None:
    # D22 replaces the "readable prefix" rule: the truncated line is kept, the valid line after it too
    sessions = make_f(state_dir)
    content = F_LINES[0] + '\n{"type":"event","id":"evt-1"\n' + F_LINES[1] + "\n"
    (sessions / "session-1.jsonl").write_text(content)
    report = doctor("import")
    assert report.exit_code == 0
    issue = report.targets[0].issues[0]
    assert issue.code == "transcript_malformed" and issue.message.endswith(
        "kept byte-exact as a quarantined raw line and every line after it is imported; the original remains "
        "protected for recovery."
    )
    assert db_events(state_dir / DB)["session-1"] == [line.encode() for line in content.splitlines()]
    assert db_events(state_dir / DB, raw=True)["session-1"][1].startswith(
        b'{"type":"openclaw-cli.quarantined-line"'
    )
    archived = [Path(p) for p in report.targets[0].archived_transcript_files if "session-1.jsonl" in p]
    assert [p.read_text() for p in archived] == [content]


def test_unusual_lines_are_stored_byte_exact(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    lines = [
        F_LINES[0],
        '{ "type" : "event", "id":"spaced" }',
        '{"type":"event","id":"crlf"}\r',
        "",
        "   ",
        '{"type":"event","id":"\\u00e9t\u00e9"}',
    ]
    (sessions / "session-1.jsonl").write_text("\n".join(lines))  # blank lines, CRLF, no final newline
    report = doctor("import")
    assert report.exit_code == 0 and report.targets[0].issues == []
    # every non-blank line, byte-exact (spacing, the CR, escapes kept), nothing re-serialised
    assert db_events(state_dir / DB)["session-1"] == [x.encode() for x in lines if x.strip()]
    archived = [Path(p) for p in report.targets[0].archived_transcript_files if "session-1.jsonl" in p]
    assert [p.read_bytes() for p in archived] == [
        "\n".join(lines).encode()
    ]  # verified by digest, then archived


@pytest.mark.parametrize("malformed", [False, True])
def test_large_transcripts_are_streamed_with_the_same_guarantees(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, malformed: bool
) -> None:
    from openclaw_cli.migration import importer

    monkeypatch.setattr(importer, "WHOLE_FILE_LIMIT", 16)  # every transcript takes the streaming path
    monkeypatch.setattr(importer, "READ_CHUNK", 7)  # lines cross chunk boundaries
    sessions = make_f(state_dir)
    lines = [*F_LINES, *(f'{{"type":"event","id":"e{i}"}}' for i in range(20))]
    if malformed:
        lines.insert(5, '{"broken":')
    content = ("\n".join(lines) + "\n").encode()
    (sessions / "session-1.jsonl").write_bytes(content)
    report = doctor("import")
    assert report.exit_code == 0
    stored = db_events(state_dir / DB)["session-1"]
    assert stored == [x.encode() for x in lines]  # a malformed line is quarantined in place (D22)
    assert [i.code for i in report.targets[0].issues] == (["transcript_malformed"] if malformed else [])
    archived = [Path(p) for p in report.targets[0].archived_transcript_files if "session-1.jsonl" in p]
    assert [p.read_bytes() for p in archived] == [content]
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    move = next(
        m for m in manifest["targets"][0]["completedMoves"] if m["sourcePath"].endswith("session-1.jsonl")
    )
    assert move["artifact"]["identity"]["sha256"] == hashlib.sha256(content).hexdigest()


def test_database_of_another_agent_is_refused_before_anything_is_written(state_dir: Path) -> None:
    from openclaw_cli.errors import InvalidDataError
    from openclaw_cli.store.sqlite.store import SqliteStore

    make_f(state_dir)
    SqliteStore(state_dir / DB, "work", create=True).close()
    before = snapshot(state_dir)
    with pytest.raises(InvalidDataError, match="belongs to agent work; requested agent main"):
        doctor("import")
    assert snapshot(state_dir) == before
