"""storage-migration.md §9 edge cases (T-xx) that apply to our lossless design, on fixture F."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from openclaw_cli.errors import InvalidDataError, RefusedError, SelectionError
from tests.test_migration_helpers import F_ENTRY, F_LINES, db_entries, db_events, doctor, make_f, snapshot

DB = Path("agents/main/agent/openclaw-agent.sqlite")


def totals(report) -> dict:
    return report.to_json()["totals"]


def test_t01_t02_dry_run_and_inspect_count_and_create_nothing(state_dir: Path) -> None:
    make_f(state_dir)
    store = str(state_dir / "agents/main/sessions/sessions.json")
    t = totals(doctor("dry-run", store=store))
    assert (
        t["legacyEntries"],
        t["validatedEntries"],
        t["validatedTranscriptEvents"],
        t["unreferencedJsonlFiles"],
        t["issues"],
        t["sqliteEntries"],
    ) == (1, 1, 2, 2, 0, 0)
    t = totals(doctor("inspect", store=store))
    assert (t["legacyEntries"], t["sqliteEntries"], t["issues"]) == (1, 0, 0)
    assert not (state_dir / DB).exists() and not (state_dir / DB).parent.exists()


def test_t03_inspect_sqlite_only(state_dir: Path) -> None:
    from openclaw_cli.store.sqlite.store import SqliteStore

    store = SqliteStore(state_dir / DB, "main", create=True)
    store.upsert_entries({"agent:main:main": {"sessionId": "s1", "updatedAt": 1}})
    store.close()
    t = totals(doctor("inspect"))
    assert (t["sqliteEntries"], t["legacyEntries"], t["targets"]) == (1, 0, 1)
    assert not (state_dir / "agents/main/sessions/sessions.json").exists()


def test_t04_t05_import_twice_then_validate_and_inspect(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    orphan = (sessions / "orphan.jsonl").read_bytes()
    first = doctor("import")
    t = totals(first)
    assert (
        t["importedEntries"],
        t["importedTranscriptEvents"],
        t["archivedLegacyStoreFiles"],
        t["archivedTranscriptFiles"],
        t["archivedUnreferencedJsonlFiles"],
        t["unreferencedJsonlFiles"],
        t["issues"],
    ) == (1, 2, 1, 2, 1, 0, 0)
    for mode in ("import", "validate"):
        again = totals(doctor(mode))
        assert all(v == 0 for v in again.values()), (mode, again)
    assert sorted(os.listdir(sessions)) == []
    archive = state_dir / "agents/main/session-sqlite-import-archive"
    orphans = [p for p in archive.iterdir() if "archive-tier.orphan.jsonl.imported-" in p.name]
    assert len(orphans) == 1 and orphans[0].read_bytes() == orphan
    assert totals(doctor("inspect"))["sqliteEntries"] == 1
    assert db_entries(state_dir / DB) == {"agent:main:main": F_ENTRY}  # lossless (D14)
    assert db_events(state_dir / DB)["session-1"] == [line.encode() for line in F_LINES]
    manifest = json.loads(Path(first.migration_run.manifest_path).read_text())
    target = manifest["targets"][0]
    assert target["validationBeforeArchive"] == "passed"
    names = sorted(m["sourcePath"].rsplit("/", 1)[-1] for m in target["completedMoves"])
    assert names == ["orphan.jsonl", "session-1.jsonl", "session-1.trajectory.jsonl", "sessions.json"]
    assert len(target["plannedMoves"]) == 4


def test_t06_trajectory_pointer_is_archived_with_its_transcript(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    (sessions / "session-1.trajectory-path.json").write_text('{"path":"x"}')
    report = doctor("import")
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    moves = [m for m in manifest["targets"][0]["completedMoves"] if m["kind"] == "trajectory"]
    assert any(
        m["archivePath"].endswith(".imported-" + m["archivePath"].rsplit("-", 1)[-1])
        and "session-1.trajectory-path.json.imported-" in m["archivePath"]
        for m in moves
    )


def test_t07_many_orphans_get_distinct_archive_names(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    for i in range(64):
        (sessions / f"orphan-{i}.jsonl").write_text('{"type":"event"}\n')
    (sessions / "orphan collision.jsonl").write_text('{"a":1}\n')
    (sessions / "orphan_collision.jsonl").write_text('{"a":2}\n')
    report = doctor("import")
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    moves = [m for m in manifest["targets"][0]["completedMoves"] if m["kind"] == "unreferenced-jsonl"]
    assert len(moves) == 67 and len({m["archivePath"] for m in moves}) == 67
    contents = {(state_dir / m["archivePath"]).read_text() for m in moves}
    assert {'{"a":1}\n', '{"a":2}\n'} <= contents


def test_t08_t09_restore_twice_even_without_the_database(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    originals = {p.name: p.read_bytes() for p in sessions.iterdir()}
    doctor("import")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{state_dir / DB}{suffix}").unlink(missing_ok=True)  # T-09
    report = doctor("restore")
    assert report.exit_code == 0 and totals(report)["issues"] == 0
    assert report.targets[0].restore["conflicts"] == []
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == originals
    again = doctor("restore")
    assert again.targets[0].restore["restoredFiles"] == []
    assert sorted(Path(p).name for p in again.targets[0].restore["skippedFiles"]) == sorted(originals)


def test_t10_planned_moves_restore_without_completed_moves(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    originals = {p.name: p.read_bytes() for p in sessions.iterdir()}
    report = doctor("import")
    path = Path(report.migration_run.manifest_path)
    data = json.loads(path.read_text())
    data["targets"][0]["completedMoves"] = []
    path.write_text(json.dumps(data, indent=2))
    assert doctor("restore").exit_code == 0
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == originals


@pytest.mark.parametrize("damage", ["targets-object", "outside-archive", "other-store"])
def test_t11_t12_t13_untrusted_manifests_move_nothing(state_dir: Path, damage: str) -> None:
    make_f(state_dir)
    report = doctor("import")
    path = Path(report.migration_run.manifest_path)
    data = json.loads(path.read_text())
    outside = state_dir / "outside.txt"
    outside.write_text("keep me")
    if damage == "targets-object":
        data["targets"] = {}
    elif damage == "outside-archive":
        data["targets"][0]["plannedMoves"][0]["archivePath"] = "outside.txt"
    else:
        data["targets"][0]["storePath"] = "agents/other/sessions/sessions.json"
    path.write_text(json.dumps(data, indent=2))
    before = snapshot(state_dir)
    result = doctor("restore")
    assert result.targets[0].restore["restoredFiles"] == []
    assert result.targets[0].restore["manifestPaths"] == []
    assert snapshot(state_dir) == before
    assert outside.read_text() == "keep me"


def test_t15_new_file_at_the_source_is_never_overwritten(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    doctor("import")
    (sessions / "session-1.jsonl").write_text("new content\n")
    report = doctor("restore")
    assert report.exit_code == 1
    codes = [(i.code, i.message) for t in report.targets for i in t.issues]
    assert codes == [
        (
            "restore_conflict",
            f"{sessions / 'session-1.jsonl'}: source and archive both exist; refusing to overwrite source",
        )
    ]
    assert (sessions / "session-1.jsonl").read_text() == "new content\n"


def test_t16_restore_for_a_nonexistent_store_restores_nothing(state_dir: Path) -> None:
    make_f(state_dir)
    doctor("import")
    report = doctor("restore", store=str(state_dir / "agents/main/sessions/nope.json"))
    assert report.targets[0].restore["manifestPaths"] == []
    assert report.targets[0].restore["restoredFiles"] == []


def test_t17_symlinked_archive_entry_is_refused(state_dir: Path, tmp_path: Path) -> None:
    make_f(state_dir)
    report = doctor("import")
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    move = next(m for m in manifest["targets"][0]["plannedMoves"] if m["kind"] == "transcript")
    archive = state_dir / move["archivePath"]
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(archive.read_bytes())
    archive.unlink()
    archive.symlink_to(elsewhere)
    result = doctor("restore")
    reasons = {c["reason"] for c in result.targets[0].restore["conflicts"]}
    assert "archive is not a regular file; refusing restore" in reasons
    assert archive.is_symlink() and not (state_dir / move["sourcePath"]).exists()


@pytest.mark.parametrize("what", ["store", "archive-dir"])
def test_t18_symlinked_store_or_archive_dir_refuses_import(
    state_dir: Path, tmp_path: Path, what: str
) -> None:
    sessions = make_f(state_dir)
    if what == "store":
        real = tmp_path / "real-sessions.json"
        (sessions / "sessions.json").rename(real)
        (sessions / "sessions.json").symlink_to(real)
    else:
        (tmp_path / "arch").mkdir()
        (state_dir / "agents/main/session-sqlite-import-archive").symlink_to(tmp_path / "arch")
    before = snapshot(state_dir)
    with pytest.raises(RefusedError, match="Refusing session SQLite migration through symbolic link"):
        doctor("import")
    assert snapshot(state_dir) == before


def test_t19_symlinked_transcript_is_not_followed_and_blocks_the_index(
    state_dir: Path, tmp_path: Path
) -> None:
    sessions = make_f(state_dir)
    target = tmp_path / "outside.jsonl"
    target.write_text("\n".join(F_LINES) + "\n")
    (sessions / "session-1.jsonl").unlink()
    (sessions / "session-1.jsonl").symlink_to(target)
    report = doctor("import")
    tr = report.targets[0]
    assert "transcript_archive_failed" in {i.code for i in tr.issues}
    assert tr.archived_transcript_files == []
    assert report.exit_code == 1  # the index is kept: legacy_store_archive_failed
    assert (sessions / "session-1.jsonl").is_symlink() and target.read_text().startswith("{")
    assert (sessions / "sessions.json").exists()
    assert "session-1" not in db_events(state_dir / DB)


def test_t20_two_keys_sharing_one_transcript(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    store = {"agent:main:main": F_ENTRY, "agent:main:alias": dict(F_ENTRY, updatedAt=3000)}
    (sessions / "sessions.json").write_text(json.dumps(store))
    report = doctor("import")
    t = totals(report)
    assert t["importedEntries"] == 2 and t["importedTranscriptEvents"] == 2
    entries = db_entries(state_dir / DB)
    assert {entries[k]["sessionId"] for k in store} == {"session-1"}
    archived = [
        p
        for p in report.targets[0].archived_transcript_files
        if p.endswith(".imported-" + p.rsplit("-", 1)[-1]) and "session-1.jsonl" in p
    ]
    assert len(archived) == 1


def test_t21_missing_transcript_is_a_warning(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    (sessions / "session-1.jsonl").unlink()
    report = doctor("import")
    t = totals(report)
    assert (t["importedEntries"], t["importedTranscriptEvents"], t["issues"]) == (1, 0, 1)
    assert report.targets[0].issues[0].code == "transcript_missing"
    assert report.exit_code == 0


def test_t22_sqlite_marker_needs_no_transcript(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    (sessions / "session-1.jsonl").unlink()
    entry = dict(F_ENTRY, sessionFile=f"sqlite:main:session-1:{sessions / 'sessions.json'}")
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": entry}))
    report = doctor("import")
    assert totals(report)["issues"] == 0 and totals(report)["importedEntries"] == 1


def test_t23_validate_before_import_reports_missing_entries(state_dir: Path) -> None:
    make_f(state_dir)
    report = doctor("validate")
    assert report.exit_code == 1
    assert [(i.code, i.session_key) for i in report.targets[0].issues] == [
        ("sqlite_entry_missing", "agent:main:main")
    ]
    assert not (state_dir / DB).exists()


def test_t27_a_shorter_legacy_file_never_truncates_sqlite(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    longer = F_LINES + ['{"type":"event","id":"evt-2"}']
    (sessions / "session-1.jsonl").write_text("\n".join(longer) + "\n")
    doctor("import")
    doctor("restore")
    (sessions / "session-1.jsonl").write_text(longer[-1] + "\n")  # rewritten to only the last event
    report = doctor("import")
    assert totals(report)["importedTranscriptEvents"] == 0
    assert db_events(state_dir / DB)["session-1"] == [line.encode() for line in longer]


def test_t28_custom_store_gets_its_own_database(state_dir: Path) -> None:
    custom = state_dir / "legacy-session-store"
    custom.mkdir()
    (custom / "sessions.json").write_text(json.dumps({"agent:main:main": F_ENTRY}))
    (custom / "session-1.jsonl").write_text("\n".join(F_LINES) + "\n")
    report = doctor("import", store=str(custom / "sessions.json"))
    assert report.targets[0].sqlite_path == str(custom / "openclaw-agent.sqlite")
    assert db_events(custom / "openclaw-agent.sqlite")["session-1"] == [x.encode() for x in F_LINES]


def test_t29_shared_custom_store_keeps_the_index_until_every_owner_imported(state_dir: Path) -> None:
    shared = state_dir / "shared-store"
    shared.mkdir()
    store = {
        "agent:main:main": dict(F_ENTRY, sessionFile="m.jsonl", sessionId="m"),
        "agent:work:main": dict(F_ENTRY, sessionFile="w.jsonl", sessionId="w"),
    }
    (shared / "sessions.json").write_text(json.dumps(store))
    (shared / "m.jsonl").write_text('{"type":"session","id":"m"}\n')
    (shared / "w.jsonl").write_text('{"type":"session","id":"w"}\n')
    config = {
        "session": {"store": str(shared / "sessions.json")},
        "agents": {"ownership": "explicit", "list": [{"id": "main", "default": True}, {"id": "work"}]},
    }
    (state_dir / "openclaw.json").write_text(json.dumps(config))
    one = doctor("import", agent="main")
    assert totals(one)["archivedLegacyStoreFiles"] == 0
    assert (shared / "sessions.json").exists() and (shared / "w.jsonl").exists()
    both = doctor("import")
    t = totals(both)
    assert t["archivedLegacyStoreFiles"] == 1
    assert not (shared / "sessions.json").exists()
    assert set(db_entries(shared / "openclaw-agent.main.sqlite")) == {"agent:main:main"}
    assert set(db_entries(shared / "openclaw-agent.work.sqlite")) == {"agent:work:main"}


def test_t30_explicit_store_of_another_agent(state_dir: Path) -> None:
    sessions = make_f(state_dir, agent="codex-proof")
    report = doctor("import", store=str(sessions / "sessions.json"))
    assert report.targets[0].agent_id == "codex-proof"
    assert db_events(state_dir / "agents/codex-proof/agent/openclaw-agent.sqlite")["session-1"]
    with pytest.raises(SelectionError, match='belongs to agent "codex-proof", not requested agent "main"'):
        doctor("inspect", store=str(sessions / "sessions.json"), agent="main")


def test_t31_jsonl_beside_a_sqlite_session_is_reported(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    doctor("import")
    (sessions / "session-1.jsonl").write_text(F_LINES[0] + "\n")
    report = doctor("inspect")
    issues = [i for i in report.targets[0].issues if i.code == "active_sqlite_transcript_jsonl"]
    assert len(issues) == 1 and "session-1.jsonl" in issues[0].message
    assert report.exit_code == 0


def test_t32_corrupt_database_inspect_and_recover(state_dir: Path) -> None:
    make_f(state_dir)
    db = state_dir / DB
    db.parent.mkdir(parents=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").write_bytes(b"garbage" * 100)
    report = doctor("inspect")
    assert [i.code for i in report.targets[0].issues][:2] == [
        "sqlite_corrupt",
        "sqlite_active_transcript_scan_failed",
    ]
    with pytest.raises(InvalidDataError, match="recover"):
        doctor("import")  # refused before anything is written
    rec = doctor("recover")
    assert totals(rec)["issues"] == 0
    moved = rec.targets[0].corrupt_recovery["movedFiles"]
    assert len(moved) == 4 and all(".corrupt-" in p for p in moved)
    assert not any(Path(f"{db}{s}").exists() for s in ("", "-wal", "-shm", "-journal"))
    assert doctor("import").exit_code == 0  # a fresh database now


def test_t33_sidecars_without_a_database_are_moved(state_dir: Path) -> None:
    db = state_dir / DB
    db.parent.mkdir(parents=True)
    Path(f"{db}-wal").write_bytes(b"x")
    Path(f"{db}-journal").write_bytes(b"y")
    rec = doctor("recover")
    cr = rec.targets[0].corrupt_recovery
    assert len(cr["movedFiles"]) == 2 and cr["skippedFiles"] == [str(db), f"{db}-shm"]


def test_t34_a_failed_rename_rolls_back(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from openclaw_cli.migration import recover as recover_mod

    db = state_dir / DB
    db.parent.mkdir(parents=True)
    for suffix in ("", "-wal"):
        Path(f"{db}{suffix}").write_bytes(b"garbage" * 100)
    calls = {"n": 0}
    real = recover_mod._rename

    def flaky(src: Path, dst: Path) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(13, "Permission denied")
        real(src, dst)

    monkeypatch.setattr(recover_mod, "_rename", flaky)
    rec = doctor("recover")
    assert [i.code for i in rec.targets[0].issues] == ["sqlite_corrupt_recovery_failed"]
    assert not list(db.parent.glob("*.corrupt-*"))
    assert db.exists() and Path(f"{db}-wal").exists()


def test_t35_database_path_is_a_directory(state_dir: Path) -> None:
    db = state_dir / DB
    db.mkdir(parents=True)
    rec = doctor("recover")
    assert [i.code for i in rec.targets[0].issues] == ["sqlite_recovery_inspect_failed"]
    assert db.is_dir()


def test_t38_t40_compact_reclaims_and_fixes_mode(state_dir: Path) -> None:
    make_f(state_dir)
    sessions = state_dir / "agents/main/sessions"
    (sessions / "session-1.jsonl").write_text(
        "\n".join(F_LINES + [json.dumps({"type": "x", "id": f"e{i}", "pad": "p" * 4000}) for i in range(200)])
        + "\n"
    )
    doctor("import")
    db = state_dir / DB
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM transcript_events")
    conn.commit()
    conn.close()
    os.chmod(db, 0o666)
    report = doctor("compact")
    c = report.targets[0].compact
    assert (
        c["reclaimedBytes"] > 0
        and c["freelistAfterPages"] == 0
        and c["dbSizeAfterBytes"] < c["dbSizeBeforeBytes"]
    )
    assert oct(db.stat().st_mode & 0o777) == "0o600"


def test_t39_compact_refuses_foreign_owner_and_real_openclaw_db(
    state_dir: Path, imported_fixture_state: Path
) -> None:
    before = snapshot(imported_fixture_state / "agents")
    report = doctor("compact")
    assert report.exit_code == 1
    assert report.targets[0].issues[0].code == "sqlite_compact_failed"
    assert "real OpenClaw agent database" in report.targets[0].issues[0].message
    assert snapshot(imported_fixture_state / "agents") == before


def test_t44_json5_store_is_unreadable_and_nothing_moves(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    (sessions / "sessions.json").write_text('{"agent:main:main": {"sessionId": "session-1",},}')
    before = {p.name: p.read_bytes() for p in sessions.iterdir()}
    report = doctor("import")
    assert report.exit_code == 1
    assert report.targets[0].issues[0].code == "store_unreadable"
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == before
    assert json.loads(Path(report.migration_run.failure_report_json_path).read_text())["runId"]


def test_bare_cron_and_hook_keys_are_canonicalised(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    store = {
        "cron:job1": dict(F_ENTRY, sessionId="c1", sessionFile="c1.jsonl"),
        "hook:0620f087-7e5f-4381-83fa-ac572f564652": dict(F_ENTRY, sessionId="h1", sessionFile="h1.jsonl"),
        "agent:main:main": F_ENTRY,
    }
    (sessions / "sessions.json").write_text(json.dumps(store))
    for sid in ("c1", "h1"):
        (sessions / f"{sid}.jsonl").write_text(f'{{"type":"session","id":"{sid}"}}\n')
    assert doctor("import").exit_code == 0
    keys = set(db_entries(state_dir / DB))
    assert keys == {
        "agent:main:cron:job1",
        "agent:main:hook:0620f087-7e5f-4381-83fa-ac572f564652",
        "agent:main:main",
    }


def test_bare_key_colliding_with_its_canonical_key_keeps_both_histories(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    store = {
        "cron:job1": dict(F_ENTRY, sessionId="old", sessionFile="old.jsonl", updatedAt=1),
        "agent:main:cron:job1": dict(F_ENTRY, sessionId="new", sessionFile="new.jsonl", updatedAt=5),
    }
    (sessions / "sessions.json").write_text(json.dumps(store))
    for sid in ("old", "new"):
        (sessions / f"{sid}.jsonl").write_text(f'{{"type":"session","id":"{sid}"}}\n')
    report = doctor("import")
    assert report.exit_code == 0
    assert "entry_alias_merged" in {i.code for i in report.targets[0].issues}
    assert db_entries(state_dir / DB)["agent:main:cron:job1"]["sessionId"] == "new"
    assert set(db_events(state_dir / DB)) >= {"old", "new"}  # no transcript left behind


@pytest.mark.parametrize("full_scan", [True, False])
@pytest.mark.parametrize("damage", ["altered", "dropped", "none"])
def test_validate_before_archive_catches_a_store_that_lost_or_changed_a_line(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, full_scan: bool, damage: str
) -> None:
    from openclaw_cli.migration import verify
    from openclaw_cli.store.sqlite.store import SqliteStore

    monkeypatch.setattr(verify, "FULL_SCAN_MIN_SESSIONS", 1 if full_scan else 10**9)
    sessions = make_f(state_dir)
    real_bulk = SqliteStore.bulk_import

    def lossy_bulk(self, records, **kwargs):
        result = real_bulk(self, records, **kwargs)
        with self.transaction() as conn:
            if damage == "altered":  # same count, one byte different
                conn.execute(
                    "UPDATE transcript_events SET event_json = replace(event_json, 'evt-1', 'evt-X')"
                )
            elif damage == "dropped":
                conn.execute("DELETE FROM transcript_events WHERE seq = 1")
        return result

    monkeypatch.setattr(SqliteStore, "bulk_import", lossy_bulk)
    report = doctor("import")
    codes = {i.code for i in report.targets[0].issues}
    if damage == "none":
        assert report.exit_code == 0 and not (sessions / "session-1.jsonl").exists()
        return
    expected = "sqlite_transcript_mismatch" if damage == "altered" else "sqlite_transcript_count_mismatch"
    assert expected in codes and report.exit_code == 1
    assert (sessions / "session-1.jsonl").read_text() == "\n".join(F_LINES) + "\n"  # never archived
    assert (sessions / "sessions.json").exists()
    manifest = json.loads(Path(report.migration_run.manifest_path).read_text())
    assert manifest["targets"][0]["validationBeforeArchive"] == "failed"
