"""Restore and recover (storage-migration.md §6.9–6.11, spec D13): after the state dir moved or was
copied, from real OpenClaw manifests, failed runs, sanitised failure reports."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import OPENCLAW_FIXTURE, copy_tree, generate_legacy_state
from tests.test_migration_helpers import doctor, make_f


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _point_to(monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(state / "openclaw.json"))


@pytest.mark.parametrize("how", ["move", "copy"])
def test_restore_after_the_state_dir_moved_or_was_copied(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    generate_legacy_state(state_dir, 30, 0.2, 5, "--orphans", "1", "--missing", "1")
    make_f(state_dir, agent="work")
    sessions = {a: state_dir / "agents" / a / "sessions" for a in ("main", "work")}
    before = {a: _tree(p) for a, p in sessions.items()}
    assert doctor("import").exit_code == 0
    assert all(not any(p.iterdir()) for p in sessions.values())
    new_home = tmp_path / "elsewhere" / "state"
    new_home.parent.mkdir()
    if how == "move":
        shutil.move(str(state_dir), str(new_home))
    else:
        shutil.copytree(state_dir, new_home)  # new inodes: only sha256 + size identify the archives
    _point_to(monkeypatch, new_home)
    report = doctor("restore")
    assert report.exit_code == 0, report.to_json()
    restored = report.targets[0].restore["restoredFiles"]
    assert len(restored) == sum(len(t) for t in before.values())
    assert all(p.startswith(str(new_home)) for p in restored)
    for agent, tree in before.items():
        assert _tree(new_home / "agents" / agent / "sessions") == tree
    if how == "copy":  # the original location was not touched
        assert all(not any(p.iterdir()) for p in sessions.values())
    # the moved state imports again without duplicating anything
    again = doctor("import")
    assert again.exit_code == 0 and again.to_json()["totals"]["importedTranscriptEvents"] == 0


def _real_manifest_state(state: Path, old_root: str) -> Path:
    copy_tree(OPENCLAW_FIXTURE / "imported-state", state)
    runs = state / "session-sqlite-migration-runs"
    for path in runs.glob("*.json"):
        path.write_text(path.read_text().replace("$OPENCLAW_STATE_DIR", old_root))
    return runs


def test_restore_reads_a_real_openclaw_manifest_from_another_machine(state_dir: Path) -> None:
    _real_manifest_state(state_dir, "/home/someone-else/.openclaw")
    report = doctor("restore")
    assert report.exit_code == 0, report.to_json()
    assert len(report.targets[0].restore["restoredFiles"]) == 13
    legacy = OPENCLAW_FIXTURE / "legacy-state" / "agents" / "main" / "sessions"
    assert _tree(state_dir / "agents" / "main" / "sessions") == _tree(legacy)
    # the real OpenClaw database was not written
    db = state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    assert (
        db.read_bytes()
        == (OPENCLAW_FIXTURE / "imported-state" / "agents/main/agent/openclaw-agent.sqlite").read_bytes()
    )


def test_restore_refuses_an_archive_whose_content_changed(state_dir: Path) -> None:
    _real_manifest_state(state_dir, str(state_dir))
    archive = next((state_dir / "agents/main/session-sqlite-import-archive").glob("agent_main_main.*"))
    archive.write_bytes(archive.read_bytes() + b'{"tampered":true}\n')
    report = doctor("restore")
    assert report.exit_code == 1
    reasons = {c["reason"] for c in report.targets[0].restore["conflicts"]}
    assert reasons == {"archive content does not match the recorded sha256; refusing restore"}
    assert archive.exists()
    assert not (state_dir / "agents/main/sessions/df30a0ea-38b3-46e4-abd3-2c8eddd59451.jsonl").exists()


def _failing_import(state_dir: Path) -> tuple[Path, dict]:
    """F plus a second row whose transcript is hard-linked: it is imported, never archived, and the
    run fails (the index stays) — a failed manifest with archived artifacts."""
    sessions = make_f(state_dir)
    store = json.loads((sessions / "sessions.json").read_text())
    store["agent:main:token=supersecret:alice@example.com"] = {"sessionId": "s2", "updatedAt": 5}
    (sessions / "sessions.json").write_text(json.dumps(store))
    (sessions / "s2.jsonl").write_text('{"type":"session","id":"s2"}\n')
    os.link(sessions / "s2.jsonl", state_dir / "s2-hardlink.jsonl")
    report = doctor("import")
    assert report.exit_code == 1
    return sessions, report.to_json()


def test_failed_import_writes_sanitised_failure_reports(state_dir: Path) -> None:
    sessions, report = _failing_import(state_dir)
    codes = [i["code"] for i in report["targets"][0]["issues"]]
    assert codes == ["transcript_archive_failed", "legacy_store_archive_failed"]
    run = report["migrationRun"]
    manifest = json.loads(Path(run["manifestPath"]).read_text())
    assert (
        manifest["failedAt"]
        and manifest["failureReports"]["markdownPath"] == run["failureReportMarkdownPath"]
    )
    body = Path(run["failureReportMarkdownPath"]).read_text() + Path(run["failureReportJsonPath"]).read_text()
    assert body.startswith("# Session SQLite Migration Failure")
    assert "legacy_store_archive_failed" in body and manifest["runId"] in body
    for secret in (
        "supersecret",
        "alice@example.com",
        "agent:main:main",
        str(Path.home()),
        os.environ["HOME"],
    ):
        assert secret not in body, secret
    assert (sessions / "sessions.json").exists() and (sessions / "s2.jsonl").exists()


def test_recover_restores_the_newest_failed_run(state_dir: Path) -> None:
    sessions, first = _failing_import(state_dir)
    # the archived transcript of the failed run goes back; the index never left
    rec = doctor("recover")
    assert rec.exit_code == 0, rec.to_json()
    assert rec.migration_run.run_id == first["migrationRun"]["runId"]
    assert (sessions / "session-1.jsonl").read_text().startswith('{"type":"session"')
    assert (sessions / "session-1.trajectory.jsonl").exists()
    assert rec.targets[0].restore["restoredFiles"]


def test_t14_a_rewritten_manifest_is_not_trusted_by_recover(state_dir: Path) -> None:
    _failing_import(state_dir)
    runs = state_dir / "session-sqlite-migration-runs"
    path = next(p for p in runs.glob("*.json") if not p.name.endswith(".failure.json"))
    data = json.loads(path.read_text())
    data["targets"][0]["sqlitePath"] = "agents/main/agent/other.sqlite"
    path.write_text(json.dumps(data, indent=2))
    rec = doctor("recover")
    assert [i.code for t in rec.targets for i in t.issues] == ["recover_manifest_missing"]
    assert rec.migration_run is None and rec.exit_code == 1


def test_restore_after_restore_then_import_round_trip(state_dir: Path) -> None:
    sessions = make_f(state_dir)
    tree = _tree(sessions)
    for _ in range(2):
        assert doctor("import").exit_code == 0
        assert doctor("restore").exit_code == 0
        assert _tree(sessions) == tree
    # two manifests now name the same sources; restore picks the one still holding an archive
    assert doctor("import").exit_code == 0
    report = doctor("restore")
    assert report.exit_code == 0 and _tree(sessions) == tree
