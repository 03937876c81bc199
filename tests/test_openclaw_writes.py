"""Writes to real OpenClaw schema-23 databases (issue 12, spec D21): cleanup enforce, agent delete
and compaction on a database the real OpenClaw built (or the checked-in fixture DB without
/tmp/peer), with the guard rails: offline only, a backup first, one transaction, other schemas
refused. The real OpenClaw's own judgement of these writes is in test_openclaw_writes_peer.py."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from cleanup_support import cli_json, release_2026_7, sessions_dir, tree_digest, write_config  # noqa: F401 - fixture

from tests.openclaw_db_support import (
    DB_REL,
    archive_rows,
    assert_archived,
    checks,
    connect,
    decoded_jsonl,
    event_rows,
    logical_state,
    nodes,
    plant_artifacts,
    windows,
)

CLEANUP = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 6}}}


def _db(state: Path) -> Path:
    return state / DB_REL


def _cleanup(state: Path, *extra: str) -> tuple[int, dict, str]:
    return cli_json("sessions", "cleanup", "--enforce", "--store", str(_db(state)), "--json", *extra)


def _files(state: Path) -> dict[str, str]:
    """Every file of the agents dir except SQLite's WAL sidecars (the last connection to close
    folds and removes them: same database, different files)."""
    return {
        name: digest
        for name, digest in tree_digest(state / "agents").items()
        if not name.endswith(("-wal", "-shm"))
    }


def _backups(state: Path) -> list[Path]:
    return sorted(p for p in _db(state).parent.iterdir() if ".openclaw-cli-backup-" in p.name)


def test_cleanup_enforce_removes_rows_with_verified_archives_and_keeps_the_rest_byte_identical(
    real_state: Path,
):
    write_config(real_state, CLEANUP)
    db = _db(real_state)
    before_events, before_nodes = event_rows(db), nodes(db)
    contents = {sid: decoded_jsonl(db, sid) for sid in before_events}
    code, doc, err = _cleanup(real_state)
    assert code == 0, err
    after_nodes = nodes(db)
    removed = set(before_nodes) - set(after_nodes)
    assert doc["appliedCount"] == len(after_nodes) == doc["afterCount"] and doc["beforeCount"] == len(
        before_nodes
    )
    assert len(removed) == doc["beforeCount"] - doc["afterCount"] > 0
    assert checks(db) == ("ok", [])
    after_events = event_rows(db)
    kept_sids = {sid for sid, _ in after_nodes.values()}
    for sid in kept_sids:  # every event of every remaining session, byte-identical (JSON or zstd rows)
        assert after_events[sid] == before_events[sid]
    left_sids = {before_nodes[k][0] for k in removed} - kept_sids
    gone = set(before_events) - set(after_events)
    assert gone == left_sids & set(before_events)  # (a session without events leaves without an archive)
    for sid in gone:
        assert_archived(db, sessions_dir(real_state), sid, contents[sid])
    assert not left_sids & set(windows(db))
    conn = connect(db)
    try:  # nothing derived from a removed session is left behind
        for table in (
            "session_transcript_fts_rows",
            "session_transcript_active_events",
            "session_transcript_index_state",
            "transcript_event_identities",
            "transcript_rewrite_watermarks",
        ):
            left = {r[0] for r in conn.execute(f"SELECT DISTINCT session_id FROM {table}")}
            assert not left & gone, table
        assert (
            not {r[0] for r in conn.execute("SELECT session_key FROM session_canonical_validation_pending")}
            & removed
        )
    finally:
        conn.close()
    [backup] = _backups(real_state)
    assert set(nodes(backup)) == set(before_nodes) and event_rows(backup) == before_events  # the run's backup
    assert oct(backup.stat().st_mode & 0o777) == "0o600"


@pytest.mark.usefixtures("release_2026_7")  # G1 cleanup rules (D23: a schema-23 DB follows 2026.9.6)
def test_disk_budget_and_artifact_sweep_on_a_real_database(real_state: Path):
    """The disk budget (G1 logical bytes, §6.3) evicts rows with verified archives, as predicted by
    the dry run; the unreferenced-artifact sweep takes the stale temp and the prompt blob only."""
    write_config(
        real_state,
        {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "3650d", "maxEntries": 500}}},
    )
    db = _db(real_state)
    total = cli_json("sessions", "cleanup", "--dry-run", "--store", str(db), "--json")[1]["diskBudget"][
        "totalBytesBefore"
    ]
    write_config(
        real_state,
        {
            "session": {
                "maintenance": {
                    "mode": "enforce",
                    "pruneAfter": "3650d",
                    "maxEntries": 500,
                    "maxDiskBytes": total // 2,
                    "highWaterBytes": total // 3,
                }
            }
        },
    )
    files = plant_artifacts(real_state)
    before_events, before_nodes = event_rows(db), nodes(db)
    contents = {sid: decoded_jsonl(db, sid) for sid in before_events}
    code, dry, err = cli_json("sessions", "cleanup", "--dry-run", "--store", str(db), "--json")
    assert code == 0, err
    code, doc, err = _cleanup(real_state)
    assert code == 0, err
    budget = doc["diskBudget"]
    assert budget == dry["diskBudget"] and budget["overBudget"] and budget["removedEntries"] > 0
    assert budget["totalBytesAfter"] <= budget["highWaterBytes"] == total // 3
    after_nodes = nodes(db)
    assert len(before_nodes) - len(after_nodes) == budget["removedEntries"] and doc["afterCount"] == len(
        after_nodes
    )
    assert doc["unreferencedArtifacts"]["removedFiles"] == 2
    assert not files["temp"].exists() and not files["blob"].exists() and files["orphan"].exists()
    after_events = event_rows(db)
    kept = {sid for sid, _ in after_nodes.values()}
    for sid in kept:
        assert after_events[sid] == before_events[sid]
    for sid in set(before_events) - set(after_events):
        assert sid not in kept
        assert_archived(db, sessions_dir(real_state), sid, contents[sid])
    assert set(before_events) - set(after_events)
    assert checks(db) == ("ok", [])


def test_a_second_run_changes_nothing_and_writes_no_second_backup_in_one_process(real_state: Path):
    write_config(real_state, CLEANUP)
    assert _cleanup(real_state)[0] == 0
    db = _db(real_state)
    archives = archive_rows(db)
    code, doc, _ = _cleanup(real_state, "--no-backup")
    assert code == 0 and doc["beforeCount"] == doc["afterCount"]
    assert archive_rows(db) == archives and len(_backups(real_state)) == 1


def test_dry_run_writes_nothing_and_no_backup_skips_the_backup(real_state: Path):
    write_config(real_state, CLEANUP)
    digest = tree_digest(real_state)
    code, dry, _ = cli_json("sessions", "cleanup", "--dry-run", "--store", str(_db(real_state)), "--json")
    assert code == 0 and dry["dryRun"] and dry["wouldMutate"]
    assert tree_digest(real_state) == digest
    code, doc, _ = _cleanup(real_state, "--no-backup")
    assert code == 0 and doc["afterCount"] == dry["afterCount"]
    assert _backups(real_state) == []


def test_the_agents_own_store_is_cleaned_without_store_too(real_state: Path):
    write_config(real_state, CLEANUP)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 0, err
    assert doc["storePath"] == str(_db(real_state)) and doc["appliedCount"] == doc["afterCount"]
    assert checks(_db(real_state)) == ("ok", [])


def test_a_gateway_owning_the_state_refuses_with_the_real_wording(real_state: Path, spawn):
    write_config(real_state, CLEANUP)
    lock = real_state / "tmp" / f"openclaw-{os.getuid()}" / "gateway.state.lock.sqlite"
    lock.parent.mkdir(parents=True, exist_ok=True)
    spawn(
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(lock)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode = MEMORY'); c.execute('BEGIN EXCLUSIVE')\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    digest, rows = _files(real_state), logical_state(_db(real_state))
    code, doc, _ = _cleanup(real_state)
    assert code == 5 and doc["error"]["type"] == "state_owned", doc
    message = doc["error"]["message"]
    assert (
        "while the Gateway or another SQLite maintenance command owns this OpenClaw state directory"
        in message
    )
    assert "without --store" in message  # where to go instead: the running Gateway
    assert (
        _files(real_state) == digest and logical_state(_db(real_state)) == rows
    )  # no backup, archive or row


def test_a_busy_database_fails_before_anything_changed(real_state: Path, spawn):
    write_config(
        real_state, {**CLEANUP, "session": {**CLEANUP["session"], "writeLock": {"acquireTimeoutMs": 300}}}
    )
    db = _db(real_state)
    spawn(
        "import sqlite3, time\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    before = nodes(db)
    code, doc, _ = _cleanup(real_state)
    assert code == 5 and "locked" in doc["error"]["message"]
    assert nodes(db) == before and _backups(real_state) == []
    assert (
        [p for p in sessions_dir(real_state).glob("*.zst")] == []
        if sessions_dir(real_state).exists()
        else True
    )


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("PRAGMA user_version = 22", "schema version 22"),
        ("UPDATE schema_meta SET role = 'global'", "schema role global"),
    ],
)
def test_other_schemas_and_roles_are_named_and_refused(real_state: Path, sql: str, named: str):
    write_config(real_state, CLEANUP)
    db = _db(real_state)
    conn = sqlite3.connect(str(db))
    conn.execute(sql)
    conn.commit()
    conn.close()
    digest = _files(real_state)
    code, doc, _ = _cleanup(real_state)
    assert code != 0 and doc["error"]["type"] == "unsupported_schema" and named in doc["error"]["message"]
    assert _files(real_state) == digest


def _share_session(db: Path, removed: str, keeper: str) -> str:
    """Make `keeper` point at `removed`'s session (as a shared main session would): the window stays
    owned by `removed`."""
    conn = connect(db)
    try:
        sid, text = conn.execute(
            "SELECT current_session_id, entry_json FROM session_nodes WHERE session_key = ?", (removed,)
        ).fetchone()
        entry = json.loads(
            conn.execute("SELECT entry_json FROM session_nodes WHERE session_key = ?", (keeper,)).fetchone()[
                0
            ]
        )
        entry["sessionId"] = sid
        conn.execute(
            "UPDATE session_nodes SET current_session_id = ?, entry_json = ? WHERE session_key = ?",
            (sid, json.dumps(entry, separators=(",", ":")), keeper),
        )
        conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (keeper,))
        conn.commit()
        return sid
    finally:
        conn.close()


@pytest.mark.usefixtures("release_2026_7")  # G1 cleanup rules (D23: a schema-23 DB follows 2026.9.6)
def test_a_window_a_surviving_row_still_uses_moves_to_that_row(real_state: Path):
    """OpenClaw re-homes a removed row's window to the row that keeps it: deleting the node would
    otherwise cascade the window and its events away."""
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    db = _db(real_state)
    stale = "agent:main:telegram:direct:stale-1"
    sid = _share_session(db, stale, "agent:main:main")
    events = event_rows(db)[sid]
    code, doc, err = _cleanup(real_state)
    assert code == 0, err
    assert stale not in nodes(db) and nodes(db)["agent:main:main"][0] == sid
    assert windows(db)[sid] == "agent:main:main" and event_rows(db)[sid] == events
    assert sid not in archive_rows(db)
    assert checks(db) == ("ok", [])


def test_a_session_with_an_unreadable_event_never_leaves(real_state: Path):
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    db = _db(real_state)
    stale = "agent:main:telegram:direct:stale-1"
    sid = nodes(db)[stale][0]
    conn = connect(db)
    conn.execute(
        "UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = 1", ('{"broken', sid)
    )
    conn.commit()
    conn.close()
    code, doc, err = _cleanup(real_state)
    assert code == 0, err
    assert stale in nodes(db) and sid in event_rows(db) and sid not in archive_rows(db)


def test_agents_delete_archives_every_window_then_empties_the_database(real_state: Path):
    write_config(real_state, {"agents": {"list": [{"id": "main"}, {"id": "ops"}]}})
    db = _db(real_state)
    contents = {sid: decoded_jsonl(db, sid) for sid in event_rows(db)}
    code, doc, err = cli_json("agents", "delete", "main", "--force", "--json")
    assert code == 0, err
    assert doc["removedEntries"] > 0 and doc["keptRows"] == 0 and doc["archivedTranscripts"] == len(contents)
    assert nodes(db) == {} and event_rows(db) == {} and windows(db) == {}
    for sid, content in contents.items():
        assert_archived(db, sessions_dir(real_state), sid, content)
    assert checks(db) == ("ok", []) and len(_backups(real_state)) == 1


def test_compaction_appends_one_identity_row_and_keeps_the_projection(real_state: Path):
    db = _db(real_state)
    key = "agent:main:main"
    sid = nodes(db)[key][0]
    before = event_rows(db)
    code, doc, err = cli_json("compact", key, "--store", str(db), "--json")
    assert code == 0 and doc["compacted"], err
    after = event_rows(db)
    assert after[sid][:-1] == before[sid] and len(after[sid]) == len(before[sid]) + 1
    seq, text, blob, size, nav, _ = after[sid][-1]
    comp = json.loads(text)
    assert comp["type"] == "compaction" and blob is None and nav is None and size == len(text.encode())
    assert {s: r for s, r in after.items() if s != sid} == {s: r for s, r in before.items() if s != sid}
    conn = connect(db)
    try:
        identity = conn.execute(
            "SELECT seq, event_type, parent_id FROM transcript_event_identities"
            " WHERE session_id = ? AND event_id = ?",
            (sid, comp["id"]),
        ).fetchone()
        assert identity == (seq, "compaction", comp["parentId"])
        state = conn.execute(
            "SELECT needs_rebuild, indexed_seq FROM session_transcript_index_state WHERE session_id = ?",
            (sid,),
        ).fetchone()
        assert state == (0, seq)  # D26: built in the same transaction, the compaction event included
        active = conn.execute(
            "SELECT max(event_seq) FROM session_transcript_active_events WHERE session_id = ?", (sid,)
        ).fetchone()
        assert active == (seq,)
        valid, entry_json, updated = conn.execute(
            "SELECT entry_valid, entry_json, updated_at FROM session_nodes WHERE session_key = ?", (key,)
        ).fetchone()
    finally:
        conn.close()
    entry = json.loads(entry_json)
    assert (
        valid == 1 and entry["updatedAt"] == updated and entry["totalTokens"] == doc["result"]["tokensAfter"]
    )
    assert checks(db) == ("ok", [])


def test_max_lines_rewrites_in_place_after_a_verified_bak_archive(real_state: Path):
    from openclaw_cli.store.archives import read_archive_bytes

    db = _db(real_state)
    key = "agent:main:telegram:group:123"
    sid = nodes(db)[key][0]
    original = decoded_jsonl(db, sid)
    code, doc, err = cli_json("compact", key, "--max-lines", "5", "--store", str(db), "--json")
    assert code == 0 and doc["compacted"] and doc["kept"] == 5, err
    assert nodes(db)[key][0] == sid  # OpenClaw keeps the session id and window
    rows = event_rows(db)[sid]
    assert [r[0] for r in rows] == [0, 1, 2, 3, 4]
    assert json.loads(rows[1][1])["parentId"] is None
    assert read_archive_bytes(Path(doc["archive"]["path"])) == original  # D15: the dropped prefix is archived
    assert checks(db) == ("ok", [])


def test_lifecycle_patches_rewrite_the_entry_and_its_projections_only(real_state: Path):
    db = _db(real_state)
    key = "agent:main:telegram:group:123"
    sid = nodes(db)[key][0]
    events = event_rows(db)
    store = ("--store", str(db), "--json", "--no-backup")
    for args in (("pin", key), ("label", key, "Quarterly planning"), ("mark-unread", key)):
        code, doc, err = cli_json("sessions", *args, *store)
        assert code == 0 and doc["ok"], err
    conn = connect(db)
    try:
        entry_json, valid, label, pinned_at, updated = conn.execute(
            "SELECT entry_json, entry_valid, label, pinned_at, updated_at FROM session_nodes WHERE session_key = ?",
            (key,),
        ).fetchone()
        window = conn.execute(
            "SELECT display_name, updated_at FROM session_windows WHERE session_id = ?", (sid,)
        ).fetchone()
    finally:
        conn.close()
    entry = json.loads(entry_json)
    assert valid == 1 and label == entry["label"] == "Quarterly planning" and pinned_at == entry["pinnedAt"]
    assert entry["markedUnreadAt"] and updated == entry["updatedAt"] and window[1] == updated
    assert event_rows(db) == events  # a patch touches no transcript row
    code, doc, err = cli_json("sessions", "archive", key, *store)
    assert code == 0, err
    code, listed, _ = cli_json("sessions", "--json", "--limit", "all")
    assert {r["key"]: r["archived"] for r in listed["sessions"]}[key] is True  # listed and marked (issue 22)
    assert checks(db) == ("ok", [])


def test_reset_starts_a_new_window_and_keeps_the_old_generation(
    real_state: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    db = _db(real_state)
    key = "agent:main:telegram:group:123"
    old = nodes(db)[key][0]
    events = event_rows(db)[old]
    code, doc, err = cli_json("sessions", "reset", key, "--store", str(db), "--json")
    assert code == 0 and doc["previousSessionId"] == old and doc["archived"] == [], err
    new = nodes(db)[key][0]
    assert new == doc["sessionId"] != old
    assert event_rows(db)[old] == events  # OpenClaw keeps older generations (S-3)
    [(_, header, *_)] = event_rows(db)[new]
    assert json.loads(header)["type"] == "session" and json.loads(header)["id"] == new
    conn = connect(db)
    try:
        assert conn.execute(
            "SELECT session_key, reason, previous_session_id FROM session_windows WHERE session_id = ?",
            (new,),
        ).fetchone() == (key, "reset", old)
    finally:
        conn.close()
    assert checks(db) == ("ok", [])


def test_fork_copies_the_active_branch_into_a_new_window(real_state: Path):
    db = _db(real_state)
    parent = "agent:main:main"
    code, doc, err = cli_json(
        "sessions", "fork", parent, "--to", "agent:main:forked", "--store", str(db), "--json"
    )
    assert code == 0 and doc["ok"], err
    child = nodes(db)["agent:main:forked"][0]
    rows = event_rows(db)[child]
    assert json.loads(rows[0][1])["type"] == "session"
    assert len(rows) == 1 + doc["copiedEntries"] and (doc["isolated"] or doc["copiedEntries"] > 0)
    parent_ids = {json.loads(line).get("id") for line in decoded_jsonl(db, nodes(db)[parent][0]).splitlines()}
    assert {json.loads(r[1]).get("id") for r in rows[1:]} <= parent_ids  # (zstd rows of the parent decoded)
    assert checks(db) == ("ok", [])


def test_delete_archives_the_session_first(real_state: Path):
    db = _db(real_state)
    key = "agent:main:telegram:group:123"
    sid = nodes(db)[key][0]
    content = decoded_jsonl(db, sid)
    code, doc, err = cli_json("sessions", "delete", key, "--yes", "--store", str(db), "--json")
    assert code == 0 and doc["results"][0]["status"] == "deleted", err
    assert key not in nodes(db) and sid not in event_rows(db)
    assert_archived(db, sessions_dir(real_state), sid, content)
    assert checks(db) == ("ok", [])


def test_a_full_disk_refuses_before_the_backup_or_any_archive(real_state: Path):
    """Issue 13's space pre-checks on schema-23 writes (a real tmpfs): the backup that does not
    fit, then the verified archives that do not fit (--no-backup) are refused with the typed
    no-space error before anything changed; with room again the same cleanup succeeds."""
    import shutil
    import subprocess
    import sys

    from openclaw_cli.errors import ExitCode
    from tests.hardening_support import can_mount, env_for, tmpfs

    reason = can_mount()
    if reason:
        pytest.skip(reason)
    write_config(real_state, CLEANUP)
    size = sum(p.stat().st_size for p in real_state.rglob("*") if p.is_file())
    with tmpfs(f"{size * 2 + (4 << 20)}") as mnt:
        state = mnt / "state"
        shutil.copytree(real_state, state)
        db = _db(state)

        def cleanup(*extra: str) -> tuple[int, dict]:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "openclaw_cli",
                    "sessions",
                    "cleanup",
                    "--enforce",
                    "--json",
                    "--store",
                    str(db),
                    *extra,
                ],
                env=env_for(state),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert "Traceback" not in proc.stderr, proc.stderr
            return proc.returncode, json.loads(proc.stdout)

        def fill(leave: int) -> Path:
            filler = mnt / "filler"
            with open(filler, "wb") as fh:
                fh.write(b"\0" * max(0, shutil.disk_usage(mnt).free - leave))
            return filler

        rows, files = logical_state(db), _files(state)
        filler = fill(db.stat().st_size // 2)  # the archives would fit, the backup (the whole database) not
        code, doc = cleanup()
        assert code == ExitCode.NO_SPACE and doc["error"]["type"] == "no_space", doc
        assert "backup" in doc["error"]["message"] and "--no-backup" in doc["error"]["message"]
        assert logical_state(db) == rows and _files(state) == files
        os.unlink(filler)
        filler = fill(96 << 10)  # room for SQLite's -shm, not for the archives
        code, doc = cleanup("--no-backup")
        assert code == ExitCode.NO_SPACE and "verified archives" in doc["error"]["message"], doc
        assert logical_state(db) == rows and _files(state) == files
        os.unlink(filler)
        code, doc = cleanup()
        assert code == 0 and doc["applied"] and doc["afterCount"] < doc["beforeCount"], doc
        assert checks(db) == ("ok", []) and len(_backups(state)) == 1
