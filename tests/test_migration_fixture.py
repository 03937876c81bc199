"""The real OpenClaw 2026.9.6 fixture: our import must give the sessions the real CLI listed, keep
every transcript line byte-identical and in order, and report in OpenClaw's JSON shapes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openclaw_cli.migration.manifest import load_manifest
from tests.conftest import OPENCLAW_FIXTURE
from tests.test_migration_helpers import db_entries, db_events, doctor, snapshot

OUTPUTS = OPENCLAW_FIXTURE / "outputs"
ORPHAN = "083ddf53-7690-42d8-9a49-01824250e803.jsonl"


def _with_placeholder(obj: object, state: Path) -> object:
    return json.loads(json.dumps(obj).replace(str(state), "$OPENCLAW_STATE_DIR"))


@pytest.fixture
def fixture_state(legacy_fixture_state: Path) -> Path:
    orphan = legacy_fixture_state / "agents" / "main" / "sessions" / ORPHAN
    os.utime(orphan, ns=(1796018042966000000, 1796018042966000000))  # as the fixture README says
    return legacy_fixture_state


def test_dry_run_and_inspect_equal_the_real_outputs(fixture_state: Path) -> None:
    before = snapshot(fixture_state)
    dry = doctor("dry-run").to_json()
    assert _with_placeholder(dry, fixture_state) == json.loads((OUTPUTS / "doctor-dry-run.json").read_text())
    assert list(dry["targets"][0]) == list(
        json.loads((OUTPUTS / "doctor-dry-run.json").read_text())["targets"][0]
    )
    inspect = doctor("inspect").to_json()
    assert _with_placeholder(inspect, fixture_state) == json.loads(
        (OUTPUTS / "doctor-inspect-legacy.json").read_text()
    )
    assert snapshot(fixture_state) == before  # D6.1: nothing written, no DB created


def test_import_gives_the_real_listing_and_byte_identical_transcripts(fixture_state: Path) -> None:
    sessions_dir = fixture_state / "agents" / "main" / "sessions"
    originals = {p.name: p.read_bytes() for p in sessions_dir.glob("*.jsonl")}
    legacy = json.loads((sessions_dir / "sessions.json").read_text())
    report = doctor("import")
    assert report.exit_code == 0
    got = report.to_json()
    real = json.loads((OUTPUTS / "doctor-import.json").read_text())
    # same shape and key order; the same counts; timestamps in names and DB sizes differ
    assert list(got) == list(real)
    assert list(got["targets"][0]) == list(real["targets"][0])
    assert list(got["targets"][0]["compact"]) == list(real["targets"][0]["compact"])
    assert got["totals"] == real["totals"]
    assert got["targets"][0]["issues"] == _issues_here(real["targets"][0]["issues"], fixture_state)
    assert [
        Path(p).name.rsplit(".imported-", 1)[0] for p in got["targets"][0]["archivedTranscriptFiles"]
    ] == [Path(p).name.rsplit(".imported-", 1)[0] for p in real["targets"][0]["archivedTranscriptFiles"]]

    db = fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    entries = db_entries(db)
    listing = json.loads((OUTPUTS / "sessions.json").read_text())["sessions"]
    assert len(entries) == len(listing) == 13
    for row in listing:
        entry = entries[row["key"]]
        assert entry["sessionId"] == row["sessionId"]
        assert entry["updatedAt"] == row["updatedAt"]
        for field in ("inputTokens", "outputTokens", "totalTokens"):
            assert entry.get(field) == row.get(field), (row["key"], field)
    # D14: entries are stored exactly as they were (the recovered orphan row is synthesised)
    for key, entry in legacy.items():
        assert entries[key] == entry
    assert entries["agent:main:recovered:083ddf53-7690-42d8-9a49-01824250e803"] == {
        "sessionId": "083ddf53-7690-42d8-9a49-01824250e803",
        "updatedAt": 1796018042966,
        "archivedAt": 1796018042966,
    }

    events = db_events(db)
    total = 0
    for name, data in originals.items():
        sid = name[: -len(".jsonl")]
        lines = [line for line in data.split(b"\n") if line.strip()]
        assert events[sid] == lines, sid  # every line, in order, byte-identical
        total += len(lines)
    assert total == 335
    # originals left the sessions dir only into the archive, byte-identical
    archive = fixture_state / "agents" / "main" / "session-sqlite-import-archive"
    archived = {p.read_bytes() for p in archive.iterdir()}
    assert set(originals.values()) <= archived
    assert list(sessions_dir.iterdir()) == []


def _issues_here(issues: list[dict], state: Path) -> list[dict]:
    return json.loads(json.dumps(issues).replace("$OPENCLAW_STATE_DIR", str(state)))


def test_manifest_has_openclaw_shape_with_relative_paths(fixture_state: Path) -> None:
    report = doctor("import")
    path = Path(report.migration_run.manifest_path)
    data = json.loads(path.read_text())
    real = json.loads(
        next(
            (OPENCLAW_FIXTURE / "imported-state" / "session-sqlite-migration-runs").glob("*.json")
        ).read_text()
    )
    assert data["manifestVersion"] == 3 and data["pathBase"] == "stateDir"
    assert list(data["targets"][0]) == list(real["targets"][0])
    assert [k for k in data if k != "pathBase"] == list(real)
    target = data["targets"][0]
    assert target["validationBeforeArchive"] == "passed"
    assert target["plannedMoves"] == target["completedMoves"]
    assert len(target["plannedMoves"]) == 13
    real_moves = {m["sourcePath"].rsplit("/", 1)[-1]: m for m in real["targets"][0]["plannedMoves"]}
    for move in target["plannedMoves"]:
        assert not move["sourcePath"].startswith("/") and not move["archivePath"].startswith("/")
        assert list(move) == list(real_moves[move["sourcePath"].rsplit("/", 1)[-1]])
        other = real_moves[move["sourcePath"].rsplit("/", 1)[-1]]
        # same bytes as the real OpenClaw recorded, same classification
        assert move["artifact"]["identity"]["sha256"] == other["artifact"]["identity"]["sha256"]
        assert move["artifact"]["classification"] == other["artifact"]["classification"]
        assert move["artifact"]["reason"] == other["artifact"]["reason"]
        assert (fixture_state / move["archivePath"]).is_file()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert load_manifest(path, fixture_state) is not None


def test_second_import_and_validate_are_no_ops(fixture_state: Path) -> None:
    assert doctor("import").exit_code == 0
    before = snapshot(fixture_state)
    again = doctor("import").to_json()
    assert again["totals"]["targets"] == 0 and "migrationRun" not in again
    assert doctor("validate").to_json() == json.loads((OUTPUTS / "doctor-validate-after.json").read_text())
    inspect = doctor("inspect")
    assert inspect.to_json()["totals"]["sqliteEntries"] == 13
    assert snapshot(fixture_state) == before


def test_inspect_after_import_matches_the_real_shape(fixture_state: Path) -> None:
    doctor("import")
    got = doctor("inspect").to_json()
    real = json.loads((OUTPUTS / "doctor-inspect-after.json").read_text())
    assert list(got["targets"][0]) == list(real["targets"][0])
    assert list(got["targets"][0]["dbStats"]) == list(real["targets"][0]["dbStats"])
    stats = got["targets"][0]["dbStats"]
    assert stats["integrityCheck"] == "ok"
    # the same five largest sessions by bytes, with the same event counts and byte sizes
    assert stats["largestSessions"] == real["targets"][0]["dbStats"]["largestSessions"]
    assert stats["totalTranscriptRowBytes"] == real["targets"][0]["dbStats"]["totalTranscriptRowBytes"]


def test_inspect_reads_the_real_openclaw_database_without_writing(imported_fixture_state: Path) -> None:
    before = snapshot(imported_fixture_state)
    got = doctor("inspect").to_json()
    real = json.loads((OUTPUTS / "doctor-inspect-after.json").read_text())
    assert _with_placeholder(got, imported_fixture_state) == real
    assert snapshot(imported_fixture_state) == before


def test_validate_and_dry_run_write_nothing_on_a_legacy_state(fixture_state: Path) -> None:
    before = snapshot(fixture_state)
    report = doctor("validate")
    assert report.exit_code == 1  # every key is missing from SQLite (T-23)
    assert {i.code for i in report.targets[0].issues} >= {"sqlite_entry_missing"}
    doctor("dry-run")
    doctor("inspect")
    assert snapshot(fixture_state) == before
