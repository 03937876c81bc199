"""Units of the migration: the hard-link publication protocol, archive names, manifest validation and
path mapping, failure-report sanitising, the ownership lock, report shapes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.errors import StateOwnedError
from openclaw_cli.migration import manifest as mf
from openclaw_cli.migration.failure import Sanitizer
from openclaw_cli.migration.legacy_reader import _fast_candidate_names
from openclaw_cli.migration.ownership import state_ownership
from openclaw_cli.migration.publish import (
    ArtifactError,
    Move,
    NameReserver,
    archive_name,
    hash_file,
    publish_batch,
    reconcile_pair,
    slug,
)
from openclaw_cli.migration.report import Report, TargetReport
from openclaw_cli.paths import transcript_candidates
from tests.conftest import OPENCLAW_FIXTURE


def _file(path: Path, data: bytes = b'{"a":1}\n') -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_publish_moves_the_same_inode_and_never_copies(tmp_path: Path) -> None:
    src = _file(tmp_path / "s" / "a.jsonl")
    (tmp_path / "d").mkdir()
    ino = src.stat().st_ino
    move = Move(src, tmp_path / "d" / "a.arch", hash_file(src))
    result = publish_batch([move])
    assert result.done == [move] and not src.exists()
    st = (tmp_path / "d" / "a.arch").stat()
    assert st.st_ino == ino and st.st_nlink == 1


@pytest.mark.parametrize("problem", ["changed", "hard-link", "dest-exists", "symlink", "missing"])
def test_publish_failures_leave_the_source_untouched(tmp_path: Path, problem: str) -> None:
    src = _file(tmp_path / "s" / "a.jsonl")
    dest_dir = tmp_path / "d"
    dest_dir.mkdir()
    ident = hash_file(src)
    dest = dest_dir / "a.arch"
    if problem == "changed":
        src.write_bytes(b'{"a":2}\n{"b":3}\n')  # rewritten after it was hashed
    elif problem == "hard-link":
        os.link(src, tmp_path / "alias")
    elif problem == "dest-exists":
        dest.write_bytes(b"someone else's")
    elif problem == "symlink":
        real = _file(tmp_path / "real.jsonl")
        src.unlink()
        src.symlink_to(real)
    else:
        src.unlink()
    before = src.read_bytes() if src.exists() else None
    result = publish_batch([Move(src, dest, ident)])
    assert result.failed and not result.done and result.failed[0].error
    if problem == "hard-link":
        assert "nlink=2" in result.failed[0].error
    if before is not None:
        assert src.read_bytes() == before
    assert (not dest.exists()) or dest.read_bytes() == b"someone else's"


def test_reconcile_settles_an_interrupted_publication(tmp_path: Path) -> None:
    src = _file(tmp_path / "s" / "a.jsonl")
    dest = tmp_path / "d" / "a.arch"
    dest.parent.mkdir()
    os.link(src, dest)  # killed between link and unlink
    assert reconcile_pair(src, dest) == "settled"
    assert src.read_bytes() == b'{"a":1}\n' and not dest.exists() and src.stat().st_nlink == 1
    other = _file(dest, b"different inode")
    assert reconcile_pair(src, other) == "both" and other.exists() and src.exists()


_SLUG_REFERENCE = re.compile(r"[^A-Za-z0-9_.-]+")


@settings(max_examples=400)
@given(
    st.text(alphabet=st.sampled_from("aZ09_.-: /\x00\x7f\t\né€𝄞") | st.characters(), max_size=40),
    st.sampled_from([0, 1, 5, 120, 160]),
)
def test_slug_is_the_regex_substitution(value: str, limit: int) -> None:
    """`slug`'s translate path (ASCII, no two replaced characters in a row) gives what the regex
    gives for any text: each run of other characters one `_`, cut to the limit, else the default."""
    assert slug(value, limit, "empty") == (_SLUG_REFERENCE.sub("_", value)[:limit] or "empty")
    assert slug("agent:main:telegram:group:-1006", 120, "s") == "agent_main_telegram_group_-1006"
    assert slug("a::b\x00\x00c\x00", 120, "s") == "a_b_c_"


def test_archive_names_follow_openclaw() -> None:
    assert (
        archive_name("agent:main:telegram:group:-1006", "2240c697.jsonl", 5)
        == "agent_main_telegram_group_-1006.2240c697.jsonl.imported-5"
    )
    assert archive_name("", "", 5) == "session.artifact.imported-5"
    assert archive_name("k" * 300, "f", 1).startswith("k" * 120 + ".f.")
    assert (
        archive_name("orphan collision", "orphan collision.jsonl", 1)
        == "orphan_collision.orphan_collision.jsonl.imported-1"
    )


def test_name_reserver_numbers_collisions_and_gives_up_after_99(tmp_path: Path) -> None:
    (tmp_path / "k.f.imported-1").write_text("x")
    reserver = NameReserver(tmp_path)
    assert Path(reserver.reserve("k", "f", 1)).name == "k.f.imported-1.1"
    assert Path(reserver.reserve("k", "f", 1)).name == "k.f.imported-1.2"
    for _ in range(97):
        reserver.reserve("k", "f", 1)
    with pytest.raises(ArtifactError, match="Could not archive f for k"):
        reserver.reserve("k", "f", 1)


def _ours() -> dict:
    data = mf.new_manifest("session-sqlite-1-abcdef01", 1)
    target = mf.new_target(
        "main", "agents/main/sessions/sessions.json", "agents/main/agent/openclaw-agent.sqlite"
    )
    ident = {"dev": "1", "ino": "2", "mtimeNs": "3", "size": 4, "sha256": "0" * 64}
    move = {
        "archivePath": "agents/main/session-sqlite-import-archive/x.imported-1",
        "artifact": {
            "identity": ident,
            "classification": "imported",
            "reason": "r",
            "dependencies": [],
            "disposal": {"state": "retained"},
        },
        "kind": "transcript",
        "sessionKey": "agent:main:main",
        "sourcePath": "agents/main/sessions/x.jsonl",
    }
    target["plannedMoves"] = [move]
    target["completedMoves"] = [dict(move)]
    data["targets"] = [target]
    return data


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: None, None),
        (lambda d: d.update(manifestVersion=5), "unsupported manifestVersion"),
        (lambda d: d.update(manifestVersion=4), "manifestVersion 4 without a GitHub receipt"),
        (
            lambda d: d["targets"][0]["plannedMoves"][0].update(
                sourcePath="agents/main/sessions/../../x.jsonl"
            ),
            "move paths invalid",
        ),
        (
            lambda d: d["targets"][0]["plannedMoves"][0].update(archivePath="agents/main/x.imported-1"),
            "archive outside the archive directory",
        ),
        (
            lambda d: d["targets"][0].update(
                completedMoves=[
                    dict(
                        d["targets"][0]["plannedMoves"][0],
                        archivePath="agents/main/session-sqlite-import-archive/y",
                    )
                ]
            ),
            "completed move was never planned",
        ),
        (lambda d: d["targets"].append(dict(d["targets"][0])), "duplicate target"),
        (
            lambda d: d["targets"][0]["plannedMoves"][0]["artifact"]["identity"].update(sha256="zz"),
            "artifact identity invalid",
        ),
        (lambda d: d.update(targets={}), "targets is not a list"),
    ],
)
def test_manifest_validation(damage, why) -> None:
    data = _ours()
    damage(data)
    assert mf.validate_manifest(data) == why


def test_real_openclaw_manifest_validates_and_maps_into_the_current_state(tmp_path: Path) -> None:
    path = next((OPENCLAW_FIXTURE / "imported-state" / "session-sqlite-migration-runs").glob("*.json"))
    data = json.loads(path.read_text().replace("$OPENCLAW_STATE_DIR", "/old/home/.openclaw"))
    assert mf.validate_manifest(data) is None
    mapper = mf.PathMapper(tmp_path, relative=False)
    move = data["targets"][0]["plannedMoves"][0]
    assert (
        mapper.to_real(move["archivePath"])
        == tmp_path / "agents/main/session-sqlite-import-archive" / Path(move["archivePath"]).name
    )
    assert (
        mapper.to_real(str(tmp_path / "agents/main/sessions/x.jsonl"))
        == tmp_path / "agents/main/sessions/x.jsonl"
    )
    assert mapper.to_real("/srv/custom/sessions.json") == Path("/srv/custom/sessions.json")


def test_relative_mapper_round_trip(tmp_path: Path) -> None:
    mapper = mf.PathMapper(tmp_path, relative=True)
    inside = tmp_path / "agents" / "main" / "sessions" / "a b.jsonl"
    assert mapper.to_manifest(inside) == "agents/main/sessions/a b.jsonl"
    assert mapper.to_real(mapper.to_manifest(inside)) == inside
    assert mapper.to_manifest(Path("/srv/elsewhere/sessions.json")) == "/srv/elsewhere/sessions.json"


def test_sanitizer_redacts_what_a_support_report_must_not_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/alice")
    san = Sanitizer({"agent:main:telegram:direct:42"})
    text = san.text(
        "/home/alice/.openclaw/x token=abc123 mail bob@example.com agent:main:telegram:direct:42 cron:job1"
    )
    assert text.startswith("~/.openclaw/x token=[redacted] mail [redacted-email] [redacted-session-key:")
    assert "abc123" not in text and "42" not in text and "cron:job1" not in text
    assert len(san.text("x" * 2000)) == 501
    assert san.issue({"code": "c", "message": "m", "sessionKey": "k"})["sessionKey"].startswith(
        "[redacted-session-key:"
    )


_names = st.text(alphabet="ab./\\ -_:", min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.none(), _names, _names.map(lambda s: "/s/a/sessions/" + s), _names.map(lambda s: "/x/" + s))
)
def test_fast_candidates_agree_with_the_shared_resolver(session_file: str | None) -> None:
    base = "/s/a/sessions"
    fast = _fast_candidate_names(session_file, "abc", base)
    if fast is None:
        return
    slow = transcript_candidates(Path(base), "abc", session_file)
    assert [Path(base) / name for name in fast] == slow


def test_ownership_is_exclusive(tmp_path: Path) -> None:
    held = state_ownership(tmp_path, "import")
    held.__enter__()
    try:
        with pytest.raises(StateOwnedError, match="Cannot run session SQLite compact while the Gateway"):
            state_ownership(tmp_path, "compact").__enter__()
    finally:
        held.__exit__(None, None, None)
    with state_ownership(tmp_path, "compact"):  # released
        pass


def test_recover_report_omits_fields_openclaw_omits() -> None:
    report = Report("recover", [TargetReport("main", "/s", "/d")])
    data = report.to_json()
    assert "archivedLegacyStoreFiles" not in data["targets"][0]
    assert "reclaimedBytes" not in data["totals"] and "archivedLegacyStoreFiles" not in data["totals"]
    assert list(Report("import").to_json()["totals"]) == sorted(Report("import").to_json()["totals"])


def test_text_report_groups_issues_of_one_kind() -> None:
    """300 sessions with the same problem (e.g. `inspect` after `restore`) read as one finding
    with a count and the first few sessions, not 300 near-identical lines."""
    target = TargetReport("main", "/s", "/d")
    for i in range(300):
        target.add(
            "active_sqlite_transcript_jsonl",
            f"SQLite-backed session has a legacy JSONL transcript awaiting "
            f"verification: /s/sess-{i:03d}.jsonl. Run openclaw doctor --fix.",
            f"agent:main:k{i}",
        )
    target.add("transcript_missing", "Transcript file is missing: /s/x.jsonl", "agent:main:x")
    from openclaw_cli.cli.render_migration import migration_text

    lines = migration_text(Report("inspect", [target]).to_json())
    issue_lines = lines[2:]
    assert issue_lines[0] == (
        "  [active_sqlite_transcript_jsonl] 300 issues: SQLite-backed session has a legacy "
        "JSONL transcript awaiting verification: /s/….jsonl. Run openclaw doctor --fix."
    )
    assert issue_lines[1:4] == [
        "    agent:main:k0: sess-000",
        "    agent:main:k1: sess-001",
        "    agent:main:k2: sess-002",
    ]
    assert issue_lines[4] == "    ...and 297 more (--json lists every one)"
    assert issue_lines[5] == "  [transcript_missing] agent:main:x: Transcript file is missing: /s/x.jsonl"
    assert len(lines) == 8


def test_text_report_caps_issue_kinds() -> None:
    target = TargetReport("main", "/s", "/d")
    for i in range(13):
        target.add(f"code_{i:02d}", f"m{i}", f"k{i}")
    from openclaw_cli.cli.render_migration import migration_text

    lines = migration_text(Report("dry-run", [target]).to_json())
    assert lines[-1] == "  ...and 3 more issue(s) of 3 other kind(s)"
    assert len([x for x in lines if x.startswith("  [")]) == 10


def test_report_document_reads_each_targets_paths_once() -> None:
    """Issue 30: the totals count the paths the targets' documents already hold (an import's
    archived paths are read back from its MoveLog, which cost a second pass over 20,000 moves)."""
    from openclaw_cli.migration.report import Report, TargetReport

    class Counted(list):  # type: ignore[type-arg]
        passes = 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            Counted.passes += 1
            return super().__iter__()

    report = Report("import")
    for agent, paths in (("a", ["/x/1", "/x/2"]), ("b", ["/x/2", "/x/3", "/x/4"])):
        target = TargetReport(agent, f"/s/{agent}.json", f"/d/{agent}.sqlite")
        target.archived_transcript_files = Counted(paths)
        target.unreferenced_jsonl_files = ["/u/1", "/u/1"]
        report.targets.append(target)
    doc = report.to_json()
    assert Counted.passes == 2  # one per target
    assert doc["totals"]["archivedTranscriptFiles"] == 4
    assert doc["totals"]["unreferencedJsonlFiles"] == 1
    assert doc["totals"] == report.totals()
