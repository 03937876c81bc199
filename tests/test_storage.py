"""`openclaw storage` (issue 27 §1) on every store kind: figures that add up to `du`, containers,
kinds and payload classes, orphans, inline media, the biggest sessions and events, unreadable
files named with exit 0."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.storage_support import DB, SESSIONS_DIR, STORE_KINDS, cli, cli_json, du_bytes, make_state


@pytest.fixture(params=STORE_KINDS)
def kind_state(request: pytest.FixtureRequest, state_dir: Path) -> tuple[str, Path]:
    return request.param, make_state(request.param, state_dir)


def _container(doc: dict, name: str) -> dict:
    return next(
        (c for c in doc["byContainer"] if c["container"] == name), {"bytes": 0, "diskBytes": 0, "files": 0}
    )


def test_figures_add_up_to_du_on_every_store_kind(kind_state: tuple[str, Path]) -> None:
    kind, state = kind_state
    code, doc, err = cli_json("storage")
    assert code == 0, err
    assert doc["unreadable"] == []
    du = du_bytes(state)
    assert abs(doc["total"]["diskBytes"] - du) <= du * 0.01
    assert sum(c["diskBytes"] for c in doc["byContainer"]) == doc["total"]["diskBytes"]
    assert sum(a["diskBytes"] for a in doc["byAgent"]) == doc["total"]["diskBytes"]
    assert sum(c["bytes"] for c in doc["byContainer"]) == doc["total"]["bytes"]
    main = next(a for a in doc["byAgent"] if a["agentId"] == "main")
    assert abs(main["diskBytes"] - du_bytes(state / "agents" / "main")) <= du * 0.01
    [store] = doc["stores"]
    assert store["sessions"] > 0
    # the same logical bytes whatever the store kind: every session's event text, classified
    kinds = {k["kind"] for k in doc["byKind"]}
    assert {"main", "direct", "group", "cron", "hook", "subagent"} <= kinds
    logical = sum(k["bytes"] for k in doc["byKind"])
    assert logical == sum(p["bytes"] for p in doc["byPayload"] if p["class"] != "snapshots")
    assert doc["topSessions"][0]["key"] == "agent:main:telegram:direct:stale-1"
    assert doc["topEvents"][0]["bytes"] >= doc["topEvents"][-1]["bytes"]
    if kind == "legacy":
        assert _container(doc, "transcripts")["files"] > 0
    else:
        assert _container(doc, "sqliteMain")["files"] == 1
    if kind == "schema24":
        assert sum(k["snapshotBytes"] for k in doc["byKind"]) > 0  # snapshot rows counted as such


def test_logical_figures_agree_across_store_kinds(state_dir: Path, tmp_path: Path) -> None:
    """The legacy state and the same imported into our SQLite hold the same event text (the import
    also makes a session of the legacy state's one orphan transcript)."""
    figures = {}
    orphan_text = 0
    for kind in ("legacy", "sqlite"):
        for child in list(state_dir.iterdir()):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        make_state(kind, state_dir)
        code, doc, err = cli_json("storage")
        assert code == 0, err
        figures[kind] = (
            {k["kind"]: k["bytes"] for k in doc["byKind"]},
            {p["class"]: p["bytes"] for p in doc["byPayload"]},
        )
        if kind == "legacy":
            [orphan] = [p for p in (state_dir / SESSIONS_DIR).glob("*.jsonl") if _is_orphan(p)]
            orphan_text = len(orphan.read_bytes().replace(b"\n", b""))
    legacy_kinds, sqlite_kinds = figures["legacy"][0], figures["sqlite"][0]
    assert sqlite_kinds.pop("direct") - legacy_kinds.pop("direct") == orphan_text > 0
    assert legacy_kinds == sqlite_kinds
    assert sum(figures["sqlite"][1].values()) - sum(figures["legacy"][1].values()) == orphan_text


def _is_orphan(path: Path) -> bool:
    rows = json.loads((path.parent / "sessions.json").read_text())
    return path.stem not in {row["sessionId"] for row in rows.values()}


def test_orphans_tombstones_and_media_are_named(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    sessions = state_dir / SESSIONS_DIR
    orphan = sessions / "11111111-2222-3333-4444-555555555555.jsonl"
    orphan.write_text('{"type":"session","id":"11111111-2222-3333-4444-555555555555"}\n')
    tomb = sessions / "aaaaaaaa-2222-3333-4444-555555555555.jsonl.deleted.2026-01-01T00-00-00.000Z"
    tomb.write_text('{"type":"session"}\n' * 100)
    rows = json.loads((sessions / "sessions.json").read_text())
    key = "agent:main:main"
    path = sessions / f"{rows[key]['sessionId']}.jsonl"
    picture = base64.b64encode(os.urandom(90000)).decode()
    line = {
        "type": "message",
        "id": "m1",
        "message": {"role": "user", "content": [{"type": "image", "data": picture, "mimeType": "image/png"}]},
    }
    with path.open("a") as fh:
        fh.write(json.dumps(line, separators=(",", ":")) + "\n")
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"resetArchiveRetention": "1d"}}})
    )
    code, doc, err = cli_json("storage", "--top", "1")
    assert code == 0, err
    assert _container(doc, "orphans")["files"] == 2  # the fixture's own unreferenced transcript and ours
    tombstones = _container(doc, "tombstones")
    assert tombstones["files"] == 1 and tombstones["byReason"]["deleted"]["bytes"] == tomb.stat().st_size
    [png] = doc["media"]
    assert png["mimeType"] == "image/png" and png["bytes"] == len(picture)
    assert doc["topEvents"] == [
        {
            "agentId": "main",
            "key": key,
            "sessionId": rows[key]["sessionId"],
            "line": len(path.read_text().splitlines()),
            "class": "text",
            "bytes": len(json.dumps(line, separators=(",", ":"))),
        }
    ]
    reclaim = {r["setting"]: r for r in doc["reclaimable"]}
    assert reclaim["sessions cleanup --orphans"]["files"] == 2
    assert reclaim["sessions cleanup --tombstones"]["bytes"] == tomb.stat().st_size  # past 1d


def test_one_agent_and_the_text_chart(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    code, doc, _ = cli_json("storage", "--agent", "main")
    assert code == 0
    assert doc["root"] == str(state_dir / "agents" / "main")
    assert (
        abs(doc["total"]["diskBytes"] - du_bytes(state_dir / "agents" / "main"))
        <= doc["total"]["diskBytes"] * 0.01
    )
    code, out, _ = cli("storage")
    assert code == 0
    assert "By container (disk)" in out and "Reclaimable" in out and "\x1b[" not in out  # NO_COLOR: plain


def _drop_dac() -> list[str] | None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    return prefix if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0 else None


def test_unreadable_files_are_counted_named_and_exit_0(state_dir: Path) -> None:
    prefix = [] if os.geteuid() != 0 else _drop_dac()
    if prefix is None:
        pytest.skip("as root, needs setpriv(1) to take away the permission override")
    make_state("legacy", state_dir)
    sessions = state_dir / SESSIONS_DIR
    locked_dir = sessions / "private"
    locked_dir.mkdir()
    (locked_dir / "x.bin").write_bytes(b"x" * 5000)
    rows = json.loads((sessions / "sessions.json").read_text())
    locked_file = sessions / f"{rows['agent:main:main']['sessionId']}.jsonl"
    os.chmod(locked_dir, 0)
    os.chmod(locked_file, 0)
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-m", "openclaw_cli", "storage", "--json"],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=120,
        )
    finally:
        os.chmod(locked_dir, 0o700)
        os.chmod(locked_file, 0o600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    named = {item["path"] for item in doc["unreadable"]}
    assert str(locked_dir) in named
    assert any(p.endswith("#" + rows["agent:main:main"]["sessionId"]) for p in named)
    assert "unreadable" in proc.stderr and "Warning" in proc.stderr


def test_a_database_counts_its_free_pages(state_dir: Path) -> None:
    import sqlite3

    make_state("sqlite", state_dir)
    db = state_dir / DB
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE filler(x BLOB)")
        for _ in range(200):
            conn.execute("INSERT INTO filler VALUES (randomblob(4096))")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("DROP TABLE filler")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        free = (
            conn.execute("PRAGMA freelist_count").fetchone()[0]
            * conn.execute("PRAGMA page_size").fetchone()[0]
        )
    code, doc, err = cli_json("storage")
    assert code == 0, err
    assert free > 800_000
    assert _container(doc, "sqliteFreePages")["bytes"] == free
    reclaim = {r["setting"]: r for r in doc["reclaimable"]}
    assert reclaim["doctor --session-sqlite compact"]["bytes"] == free


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_reclaimable_has_what_cleanup_enforce_would_free_per_setting(kind: str, state_dir: Path) -> None:
    """The maintenance planner's own dry run, per setting (issue 27 §1): the sessions it would
    prune or cap are the ones `sessions cleanup --dry-run --enforce` names, with their bytes."""
    make_state(kind, state_dir)
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "warn", "pruneAfter": "3d", "maxEntries": 4}}})
    )
    code, plan, err = cli_json("sessions", "cleanup", "--dry-run", "--enforce")
    assert code == 0, err
    code, doc, err = cli_json("storage")
    assert code == 0, err
    assert doc["cleanupPlanned"] is True
    planned = {r["reason"]: r for r in doc["reclaimable"] if "reason" in r}
    pruned = plan.get("pruned", 0)
    capped = plan.get("capped", 0)
    assert pruned + capped > 0, plan  # the fixture has stale rows and more than 4
    assert planned.get("prune-stale", {}).get("files", 0) == pruned
    assert planned.get("cap-overflow", {}).get("files", 0) == capped
    assert planned["prune-stale"]["setting"] == "session.maintenance.pruneAfter"
    assert planned["prune-stale"]["bytes"] > 0
    # the same figures as cleanup's own per-reason report (text)
    code, text, _ = cli("sessions", "cleanup", "--dry-run", "--enforce")
    assert code == 0
    for reason, item in planned.items():
        if reason.startswith("archive ("):
            continue
        line = next(x for x in text.splitlines() if x.strip().startswith(f"{reason}:"))
        assert line.split(":")[1].split(",")[0].strip() == str(item["files"]), (reason, line)
    # nothing was written by either: the store still lists every row
    code, listing, _ = cli_json("sessions", "--limit", "all")
    assert code == 0 and len(listing["sessions"]) == plan["beforeCount"]


def test_the_plan_is_made_at_every_size_unless_left_out(state_dir: Path) -> None:
    """The cleanup plan runs over the rows' facts (issue 30), so `storage` plans by default at every
    size; `--no-plan` leaves it out, `--plan` asks for it."""
    make_state("legacy", state_dir)
    (state_dir / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "3d"}}}))
    code, doc, err = cli_json("storage")
    assert code == 0, err
    assert doc["cleanupPlanned"] is True and [r for r in doc["reclaimable"] if "reason" in r]
    code, doc, err = cli_json("storage", "--plan")
    assert doc["cleanupPlanned"] is True and [r for r in doc["reclaimable"] if "reason" in r]
    code, doc, err = cli_json("storage", "--no-plan")
    assert doc["cleanupPlanned"] is False
    assert not [r for r in doc["reclaimable"] if "reason" in r]


def test_compact_reports_the_bytes_it_reclaimed(state_dir: Path) -> None:
    """Issue 27 §2: `doctor --session-sqlite compact` on our SQLite says what the VACUUM gave back —
    the database and WAL bytes before less after, as the files measure — and `storage` had
    counted the free pages it returned."""
    make_state("sqlite", state_dir)
    code, listing, _ = cli_json("sessions", "--limit", "all")
    keys = [s["key"] for s in listing["sessions"] if not s["key"].endswith(":main")][:6]
    for key in keys:
        code, _, err = cli("sessions", "delete", key, "--yes")
        assert code == 0, err
    db = state_dir / DB
    wal = Path(f"{db}-wal")
    before = db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    code, doc, _ = cli_json("storage")
    free = _container(doc, "sqliteFreePages")["bytes"]
    code, report, err = cli_json("doctor", "--session-sqlite", "compact")
    assert code == 0, err
    compact = report["targets"][0]["compact"]
    after = db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    assert compact["reclaimedBytes"] == before - after > 0
    assert compact["reclaimedBytes"] >= free
    assert report["totals"]["reclaimedBytes"] == compact["reclaimedBytes"]
    code, text, _ = cli("doctor", "--session-sqlite", "compact")
    assert code == 0 and "compact reclaimed=0 bytes" in text  # nothing left to give back
