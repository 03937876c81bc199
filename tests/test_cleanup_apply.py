"""`sessions cleanup` on generated stores, legacy and SQLite: the dry run predicts the apply, the
dry run writes nothing, the apply keeps protected rows, bounds the store, archives every removed
transcript (verified by decompressing), and never touches data another store holds (D6.3)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cleanup_support import (
    DAY,
    archive_map,
    cli,
    cli_json,
    db_path,
    entry,
    load_store,
    maintenance_config,
    make_legacy,
    make_sqlite,
    release_2026_7,  # noqa: F401 - the fixture, used by pytestmark
    service,
    sessions_dir,
    sha,
    sqlite_transcript_bytes,
    tree_digest,
    write_config,
)
from conftest import NOW_MS, generate_legacy_state

from openclaw_cli.maintenance.plan import Preserver

pytestmark = pytest.mark.usefixtures("release_2026_7")  # G1 rules: written against 2026.7 (D23)

VOLATILE = {"dryRun", "applied", "appliedCount"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """300 generated sessions (module-scoped: copied per test)."""
    dest = tmp_path_factory.mktemp("gen") / "state"
    generate_legacy_state(
        dest, 300, 0, 4711, "--min-turns", "1", "--cron-key-style", "canonical", "--orphans", "2"
    )
    return dest


def _install(generated: Path, state: Path) -> None:
    shutil.copytree(generated / "agents", state / "agents", dirs_exist_ok=True)


def _import(state: Path) -> None:
    proc = cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert proc.returncode == 0, proc.stderr


def _same_prediction(dry: dict, applied: dict) -> None:
    assert {k: v for k, v in dry.items() if k not in VOLATILE} == {
        k: v for k, v in applied.items() if k not in VOLATILE
    }
    assert applied["appliedCount"] == dry["afterCount"]


def _check_enforced(state: Path, entries: dict, before_sha: dict[str, str], doc: dict) -> None:
    remaining = load_store(state)
    assert len(remaining) == doc["appliedCount"]
    preserver = Preserver(entries)
    protected = {k for k, e in entries.items() if preserver(k, e)}
    assert protected <= set(remaining)  # no protected row is gone
    cap = 50
    assert len(remaining) <= max(cap, len(protected) + min(cap, 25))
    archives = archive_map(sessions_dir(state))
    gone_sids = {entries[k]["sessionId"] for k in set(entries) - set(remaining)}
    still_sids = {e["sessionId"] for e in remaining.values()}
    for sid in gone_sids - still_sids:
        if sid in before_sha:
            assert before_sha[sid] in archives.get(f"{sid}.jsonl", []), f"{sid}: no verified archive"


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_dry_run_predicts_enforce_and_writes_nothing(kind, generated, state_dir):
    _install(generated, state_dir)
    maintenance_config(state_dir, maxEntries=50, pruneAfter="7d")
    if kind == "sqlite":
        _import(state_dir)
    entries = load_store(state_dir)
    if kind == "legacy":
        before_sha = {p.name[:-6]: sha(p.read_bytes()) for p in sessions_dir(state_dir).glob("*.jsonl")}
    else:
        before_sha = {
            e["sessionId"]: sha(sqlite_transcript_bytes(state_dir, e["sessionId"])) for e in entries.values()
        }
    digest = tree_digest(state_dir)
    dry = service(dry_run=True, now_ms=NOW_MS)
    assert tree_digest(state_dir) == digest  # byte-identical, no DB, no lock file
    assert dry["beforeCount"] == len(entries) >= 300 and dry["afterCount"] < 300 and dry["wouldMutate"]
    applied = service(enforce=True, now_ms=NOW_MS)
    _same_prediction(dry, applied)
    _check_enforced(state_dir, entries, before_sha, applied)
    again = service(enforce=True, now_ms=NOW_MS)  # idempotent: nothing left to do
    assert again["afterCount"] == again["beforeCount"] == applied["appliedCount"]
    assert again["unreferencedArtifacts"]["removedFiles"] == 0
    listing = json.loads(cli("sessions", "--json", "--limit", "all", "--all").stdout)
    assert listing["count"] == applied["appliedCount"]
    assert {row["key"] for row in listing["sessions"]} == set(load_store(state_dir))
    if kind == "sqlite":
        code, inspect, _ = cli_json(
            "doctor", "--session-sqlite", "inspect", "--session-sqlite-all-agents", "--json"
        )
        assert code == 0
        assert inspect["targets"][0]["sqliteEntries"] == applied["appliedCount"]
        assert inspect["targets"][0]["dbStats"]["integrityCheck"] == "ok"
    else:
        # the two orphans (no row) are old enough to be swept: archived, then removed
        assert (
            applied["unreferencedArtifacts"]["removedFiles"] == dry["unreferencedArtifacts"]["removedFiles"]
        )


def test_cli_dry_run_and_enforce_agree(generated, state_dir):
    _install(generated, state_dir)
    maintenance_config(state_dir, maxEntries=50, pruneAfter="7d")
    digest = tree_digest(state_dir)
    code, dry, _ = cli_json("sessions", "cleanup", "--dry-run", "--json")
    assert code == 0 and tree_digest(state_dir) == digest
    code, applied, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 0, err
    # the CLI runs at the real clock: ages may cross a cutoff between the two runs only by seconds
    _same_prediction(dry, applied)


def test_old_legacy_transcripts_still_referenced_are_never_removed(state_dir):
    generate_legacy_state(
        state_dir, 40, 0, 99, "--min-turns", "1", "--cron-key-style", "canonical", "--orphans", "3"
    )
    root = sessions_dir(state_dir)
    old = NOW_MS / 1000 - 120 * 86400
    for path in root.iterdir():
        os.utime(path, (old, old))
    maintenance_config(state_dir, pruneAfter="30d", maxEntries=500)
    before = {p.name: sha(p.read_bytes()) for p in root.glob("*.jsonl")}
    doc = service(enforce=True, now_ms=NOW_MS)
    remaining = load_store(state_dir)
    for key, e in remaining.items():
        path = root / f"{e['sessionId']}.jsonl"
        assert path.exists() and sha(path.read_bytes()) == before[path.name], key
    # everything that left (stale rows' transcripts, the 3 orphans) is in a verified archive
    archives = archive_map(root)
    for name, digest in before.items():
        if not (root / name).exists():
            assert digest in archives.get(name, []), name
    assert doc["unreferencedArtifacts"]["removedFiles"] == 3


def test_sqlite_agent_never_touches_unimported_legacy_transcripts(state_dir):
    maintenance_config(state_dir, pruneAfter="30d")
    make_sqlite(
        state_dir,
        {"agent:main:new": entry("new", NOW_MS - 40 * DAY), "agent:main:keep": entry("keep", NOW_MS)},
    )
    legacy = {
        "agent:main:l1": entry("l1", NOW_MS - 90 * DAY),
        "agent:main:l2": entry("l2", NOW_MS - 90 * DAY),
    }
    root = make_legacy(state_dir, legacy)
    (root / "orphan-legacy.jsonl").write_text('{"type":"session","version":3,"id":"orphan-legacy"}\n')
    old = NOW_MS / 1000 - 120 * 86400
    for path in root.iterdir():
        os.utime(path, (old, old))
    legacy_digest = tree_digest(root)
    preview = service(dry_run=True, now_ms=NOW_MS)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert preview["unreferencedArtifacts"]["removedFiles"] == 0
    assert doc["pruned"] == 1 and doc["unreferencedArtifacts"]["removedFiles"] == 0
    after = tree_digest(root)
    assert {k: v for k, v in after.items() if ".deleted." not in k} == legacy_digest
    assert set(load_store(state_dir)) == {"agent:main:keep"}


def test_legacy_store_selected_next_to_a_database_protects_the_database_sessions(state_dir):
    """--store on a legacy sessions.json whose agent also has a SQLite DB: transcripts of sessions
    the DB holds are not unreferenced (D6.3), even when old and unreferenced by sessions.json."""
    make_sqlite(state_dir, {"agent:main:x": entry("shared", NOW_MS)})
    root = make_legacy(state_dir, {"agent:main:y": entry("y", NOW_MS)})
    (root / "shared.jsonl").write_text('{"type":"session","version":3,"id":"shared"}\n')
    old = NOW_MS / 1000 - 120 * 86400
    os.utime(root / "shared.jsonl", (old, old))
    maintenance_config(state_dir)
    doc = service(store=str(root / "sessions.json"), enforce=True, now_ms=NOW_MS)
    assert doc["unreferencedArtifacts"]["removedFiles"] == 0
    assert (root / "shared.jsonl").exists()


def test_hostile_session_ids_never_produce_paths_outside_the_sessions_dir(state_dir):
    maintenance_config(state_dir, pruneAfter="1d")
    outside = state_dir / "agents" / "main" / "outside.jsonl"
    make_legacy(
        state_dir,
        {
            "agent:main:a": entry("a", NOW_MS - 10 * DAY, sessionFile="../outside.jsonl"),
            "agent:main:b": entry("../x", NOW_MS - 10 * DAY),
            "agent:main:c": entry("..", NOW_MS - 10 * DAY),
        },
    )
    outside.write_text("precious\n")
    (state_dir / "agents" / "x.jsonl").write_text("also precious\n")
    digest_outside = {p: p.read_bytes() for p in (outside, state_dir / "agents" / "x.jsonl")}
    doc = service(enforce=True, now_ms=NOW_MS)
    for path, data in digest_outside.items():
        assert path.read_bytes() == data
    rows = json.loads((sessions_dir(state_dir) / "sessions.json").read_text())
    assert "agent:main:b" in rows and "agent:main:c" in rows  # unusable rows are kept as they are
    assert "agent:main:a" not in rows and doc["pruned"] == 1
    for name in os.listdir(sessions_dir(state_dir)):
        assert "/" not in name and not name.startswith(".")


def test_hostile_session_ids_in_sqlite_rows(state_dir):
    maintenance_config(state_dir, pruneAfter="1d")
    make_sqlite(state_dir, {"agent:main:ok": entry("ok", NOW_MS - 10 * DAY)})
    from openclaw_cli.store.sqlite.store import SqliteStore

    with SqliteStore(db_path(state_dir), "main") as store:
        store.upsert_entries(
            {
                "agent:main:evil": entry("../../evil", NOW_MS - 10 * DAY),
                "agent:main:dots": entry("..", NOW_MS - 10 * DAY),
            }
        )
    before = set(os.listdir(state_dir / "agents"))
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["pruned"] == 3 and doc["appliedCount"] == 0
    assert set(os.listdir(state_dir / "agents")) == before
    assert sorted(os.listdir(sessions_dir(state_dir)))[0].startswith("ok.jsonl.deleted.")
    assert len(os.listdir(sessions_dir(state_dir))) == 1


def test_real_openclaw_database_dry_run_reads_and_enforce_writes_after_a_backup(imported_fixture_state):
    db = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    write_config(imported_fixture_state, {"session": {"maintenance": {"maxEntries": 5}}})
    digest = tree_digest(imported_fixture_state)
    code, dry, err = cli_json("sessions", "cleanup", "--store", str(db), "--dry-run", "--json")
    assert code == 0, err
    assert dry["beforeCount"] == 13 and dry["storePath"] == str(db) and dry["dryRun"] is True
    assert tree_digest(imported_fixture_state) == digest  # D6.1
    code, doc, err = cli_json("sessions", "cleanup", "--store", str(db), "--enforce", "--json")
    assert code == 0, err
    assert doc["applied"] is True and doc["appliedCount"] == dry["afterCount"] < 13  # D21: verified writes
    assert [p.name for p in db.parent.iterdir() if ".openclaw-cli-backup-" in p.name]


def test_an_older_openclaw_database_is_named_and_refused(imported_fixture_state):
    import sqlite3

    db = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 21")
    conn.commit()
    conn.close()
    code, doc, _ = cli_json("cleanup", "--enforce", "--json")  # the agent's own store is that DB
    assert (
        code == 6
        and doc["error"]["type"] == "unsupported_schema"
        and "schema version 21" in doc["error"]["message"]
    )


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_cron_retention_reaps_expired_run_sessions(kind, state_dir):
    write_config(
        state_dir, {"cron": {"sessionRetention": "24h"}, "session": {"maintenance": {"pruneAfter": "30d"}}}
    )
    entries = {
        "agent:main:cron:job1": entry("base", NOW_MS - 2 * DAY),
        "agent:main:cron:job1:run:r1": entry("r1", NOW_MS - 2 * DAY),
        "agent:main:cron:job1:run:r2": entry("r2", NOW_MS - 3_600_000),
        "agent:main:cron:job1:run:r3": entry("r3", NOW_MS - 2 * DAY, modelSelectionLocked=True),
    }
    (make_legacy if kind == "legacy" else make_sqlite)(state_dir, entries)
    dry = service(dry_run=True, now_ms=NOW_MS)
    doc = service(enforce=True, now_ms=NOW_MS)
    _same_prediction(dry, doc)
    assert doc["cronPruned"] == 1 and doc["pruned"] == 0
    assert list(doc).index("cronPruned") == list(doc).index("capped") + 1
    assert set(load_store(state_dir)) == set(entries) - {"agent:main:cron:job1:run:r1"}
    # r2 (fresh) and r3 (locked) remain: the stage still reports, and has nothing left to reap
    assert service(dry_run=True, now_ms=NOW_MS, agent="main")["cronPruned"] == 0


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_fix_missing_removes_rows_without_message_records(kind, state_dir):
    entries = {
        "agent:main:good": entry("good", NOW_MS),
        "agent:main:gone": entry("gone", NOW_MS),
        "agent:main:header": entry("header", NOW_MS),
        "agent:main:pending": entry("pending", NOW_MS, initializationPending=True),
    }
    if kind == "legacy":
        root = make_legacy(state_dir, entries, skip={"gone", "pending"})
        (root / "header.jsonl").write_text('{"type":"session","version":3,"id":"header"}\n')
        header_sha = sha((root / "header.jsonl").read_bytes())
    else:
        make_sqlite(state_dir, entries, skip={"gone", "pending", "header"})
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(db_path(state_dir), "main") as store:
            store.append_events(
                "header", ['{"type":"session","version":3,"id":"header"}'], session_key="agent:main:header"
            )
        header_sha = sha(sqlite_transcript_bytes(state_dir, "header"))
    dry = service(dry_run=True, fix_missing=True, now_ms=NOW_MS)
    doc = service(enforce=True, fix_missing=True, now_ms=NOW_MS)
    _same_prediction(dry, doc)
    assert doc["missing"] == 2
    assert set(load_store(state_dir)) == {"agent:main:good", "agent:main:pending"}
    assert header_sha in archive_map(sessions_dir(state_dir))["header.jsonl"]


def test_fix_dm_scope_and_active_key(state_dir):
    entries = {
        "agent:main:telegram:direct:p1": entry("p1", NOW_MS),
        "agent:main:telegram:direct:p2": entry("p2", NOW_MS),
        "agent:main:direct:p3": entry("p3", NOW_MS),
        "agent:main:main": entry("m", NOW_MS),
        "agent:main:old": entry("old", NOW_MS - 40 * DAY),
    }
    make_legacy(state_dir, entries)
    doc = service(enforce=True, fix_dm_scope=True, active_key="agent:main:telegram:direct:p2", now_ms=NOW_MS)
    assert doc["dmScopeRetired"] == 2 and doc["pruned"] == 1
    assert set(load_store(state_dir)) == {"agent:main:telegram:direct:p2", "agent:main:main"}
    entries2 = {"agent:main:stale": entry("stale", NOW_MS - 40 * DAY)}
    shutil.rmtree(sessions_dir(state_dir))
    make_legacy(state_dir, entries2)
    doc = service(enforce=True, active_key="  Agent:Main:Stale  ", now_ms=NOW_MS)
    assert doc["pruned"] == 0 and set(load_store(state_dir)) == set(entries2)


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_warn_mode_applies_only_explicit_repairs(kind, state_dir):
    maintenance_config(state_dir, mode="warn", pruneAfter="1d", maxEntries=1)
    entries = {f"agent:main:s{i}": entry(f"s{i}", NOW_MS - 5 * DAY) for i in range(4)}
    (make_legacy if kind == "legacy" else make_sqlite)(state_dir, entries, skip={"s3"})
    root = sessions_dir(state_dir)
    root.mkdir(parents=True, exist_ok=True)
    dead = root / "gone.jsonl.lock"
    dead.write_text('{"pid": 999999999, "createdAt": "2026-01-01T00:00:00.000Z"}')
    digest = {k: v for k, v in tree_digest(state_dir).items() if not k.endswith((".sqlite", "-wal", "-shm"))}
    doc = service(now_ms=NOW_MS)
    assert {
        k: v for k, v in tree_digest(state_dir).items() if not k.endswith((".sqlite", "-wal", "-shm"))
    } == digest
    assert doc["mode"] == "warn" and doc["appliedCount"] == 4 and not doc["wouldMutate"]
    assert doc["unreferencedArtifacts"] == {
        "scannedFiles": 0,
        "removedFiles": 0,
        "freedBytes": 0,
        "olderThanMs": DAY,
    }
    doc = service(fix_missing=True, now_ms=NOW_MS)
    assert doc["missing"] == 1 and doc["appliedCount"] == 3
    doc = service(enforce=True, now_ms=NOW_MS)
    assert doc["mode"] == "enforce" and doc["appliedCount"] == 0


def test_crash_leftovers_are_cleaned_on_the_next_run(state_dir):
    """An archive temp and a store temp of a dead writer, and an original whose identical archive
    exists (a run killed between its archive and its removal)."""
    import subprocess
    import sys

    from openclaw_cli.store.archives import write_verified_archive

    entries = {"agent:main:a": entry("a", NOW_MS)}
    root = make_legacy(state_dir, entries)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    (root / f"x.jsonl.deleted.2026-01-01T00-00-00.000Z.zst.{pid}.{'a' * 32}.tmp").write_bytes(b"partial")
    (root / f"sessions.json.{pid}.{'b' * 32}.tmp").write_bytes(b"{}")
    (root / "done.jsonl").write_text('{"type":"session","version":3,"id":"done"}\n')
    write_verified_archive(root, "done", "deleted", root / "done.jsonl", now_ms=NOW_MS)
    (root / "young-orphan.jsonl").write_text('{"type":"session","version":3,"id":"young-orphan"}\n')
    maintenance_config(state_dir)
    doc = service(enforce=True, now_ms=NOW_MS)
    left = sorted(os.listdir(root))
    assert doc["unreferencedArtifacts"]["removedFiles"] == 3
    assert "done.jsonl" not in left and "young-orphan.jsonl" in left
    assert not [n for n in left if n.endswith(".tmp")]
    assert len([n for n in left if n.startswith("done.jsonl.deleted.")]) == 1  # the archive was reused


def test_symlinked_sessions_dir_is_refused_for_apply(state_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    make_sqlite(state_dir, {"agent:main:old": entry("old", NOW_MS - 40 * DAY)})
    elsewhere.mkdir()
    sessions_dir(state_dir).symlink_to(elsewhere, target_is_directory=True)
    maintenance_config(state_dir, pruneAfter="30d")
    code, doc, _ = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 7 and "symbolic link" in doc["error"]["message"]
    assert list(elsewhere.iterdir()) == []
    assert set(load_store(state_dir)) == {"agent:main:old"}


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_disk_budget_evicts_oldest_removable_sessions_through_archives(kind, state_dir):
    entries = {
        "agent:main:main": entry("m", NOW_MS - 9 * DAY),
        "agent:main:telegram:group:1": entry("g", NOW_MS - 8 * DAY),
    }
    entries.update({f"agent:main:s{i}": entry(f"s{i}", NOW_MS - (7 - i) * DAY) for i in range(6)})
    (make_legacy if kind == "legacy" else make_sqlite)(state_dir, entries, turns=20)
    maintenance_config(state_dir)
    total = service(dry_run=True, now_ms=NOW_MS)["diskBudget"]["totalBytesBefore"]
    maintenance_config(state_dir, maxDiskBytes=total // 2, highWaterBytes=total // 2)
    if kind == "legacy":
        before = {p.name: sha(p.read_bytes()) for p in sessions_dir(state_dir).glob("*.jsonl")}
    else:
        before = {
            f"{e['sessionId']}.jsonl": sha(sqlite_transcript_bytes(state_dir, e["sessionId"]))
            for e in entries.values()
        }
    dry = service(dry_run=True, now_ms=NOW_MS)
    doc = service(enforce=True, now_ms=NOW_MS)
    _same_prediction(dry, doc)
    budget = doc["diskBudget"]
    assert budget["overBudget"] and budget["removedEntries"] >= 1
    assert budget["totalBytesAfter"] <= budget["highWaterBytes"]
    remaining = set(load_store(state_dir))
    assert {"agent:main:main", "agent:main:telegram:group:1"} <= remaining  # protected rows are never evicted
    evicted = set(entries) - remaining
    assert evicted == {f"agent:main:s{i}" for i in range(budget["removedEntries"])}  # oldest first
    archives = archive_map(sessions_dir(state_dir))
    for key in evicted:
        name = f"{entries[key]['sessionId']}.jsonl"
        assert before[name] in archives[name]
