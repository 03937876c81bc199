"""Spec D26 (issue 23 part 4): every write to a real OpenClaw database keeps what OpenClaw's own
writers keep, in the same transaction — the active-event projection, the full-text rows and their
row map, the transcript index state, the canonical validation queue — so the next real Gateway
start finds nothing to reconcile (the peer half: tests/test_openclaw_writes_peer.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cleanup_support import cli_json, write_config

from tests.openclaw_db_support import (
    DB_REL,
    checks,
    connect,
    fixture_state,
    nodes,
    projection_rows,
    rebuilt_projection_equal,
    unsettled,
)


def test_our_rebuild_is_the_real_writers_projection(state_dir: Path):
    """On the database the real OpenClaw 2026.9.6 imported (its projection built by its writer),
    rebuilding every session from its events gives the same rows, row for row."""
    fixture_state(state_dir)
    db = state_dir / DB_REL
    conn = connect(db)
    active, fts, states = projection_rows(conn)
    conn.close()
    assert len(active) > 300 and len(fts) > 200 and len(states) == 12
    assert rebuilt_projection_equal(db)


def _settled_copy(real_state: Path) -> Path:
    """The state as a real Gateway leaves it after its first start: the queue validated."""
    db = real_state / DB_REL
    conn = connect(db)
    with conn:
        conn.execute("DELETE FROM session_canonical_validation_pending")
    conn.close()
    return db


WRITES = (
    ("sessions", "pin", "{k0}"),
    ("sessions", "label", "{k0}", "Quarterly planning"),
    ("sessions", "archive", "{k1}"),
    ("sessions", "mark-unread", "{k2}"),
    ("sessions", "reset", "{k3}"),
    ("sessions", "fork", "{main}", "--to", "agent:main:forked"),
    ("sessions", "delete", "{k4}", "--yes"),
    ("compact", "{main}"),
    ("compact", "{group}", "--max-lines", "5"),
    ("sessions", "cleanup", "--enforce"),
)


def test_after_every_write_nothing_is_left_to_reconcile_or_validate(real_state: Path):
    db = _settled_copy(real_state)
    write_config(
        real_state, {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
    )
    keys = sorted(
        k
        for k in nodes(db)
        if k not in ("agent:main:main", "agent:main:telegram:group:123") and "model-run" not in k
    )
    names = {f"k{i}": key for i, key in enumerate(keys[:5])}
    names.update(main="agent:main:main", group="agent:main:telegram:group:123")
    for args in WRITES:
        argv = [a.format(**names) for a in args]
        code, doc, err = cli_json(*argv, "--store", str(db), "--json")
        assert code == 0, (argv, err, doc)
        left = unsettled(db)
        assert left == {"reconcile": [], "orphans": [], "unmapped": [], "pending": []}, (argv, left)
        assert rebuilt_projection_equal(db), argv
    assert checks(db) == ("ok", [])
    conn = connect(db)
    try:  # the forked and the reset sessions are searchable (their full-text rows exist)
        forked = nodes(db)["agent:main:forked"][0]
        reset = nodes(db)[names["k3"]][0]
        counts = dict(
            conn.execute("SELECT session_id, count(*) FROM session_transcript_fts_rows GROUP BY session_id")
        )
        states = dict(conn.execute("SELECT session_id, needs_rebuild FROM session_transcript_index_state"))
    finally:
        conn.close()
    assert counts.get(forked, 0) > 0 and states[forked] == 0 and states[reset] == 0


def test_a_row_we_cannot_vouch_for_stays_queued(real_state: Path):
    """A key OpenClaw folds (upper case) is written but left in the queue for the real Gateway to
    judge; the keys we vouch for leave it."""
    db = _settled_copy(real_state)
    key = sorted(nodes(db))[0]
    conn = connect(db)
    with conn:
        sid, entry = conn.execute(
            "SELECT current_session_id, entry_json FROM session_nodes WHERE session_key = ?", (key,)
        ).fetchone()
        odd = key.replace("agent:main:", "agent:main:Odd-")
        conn.execute(
            "INSERT INTO session_nodes(session_key, current_session_id, entry_json, entry_valid, updated_at)"
            " SELECT ?, current_session_id, entry_json, 1, updated_at FROM session_nodes WHERE session_key = ?",
            (odd, key),
        )
        conn.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (odd,))
        conn.execute("DELETE FROM session_canonical_validation_pending")
    conn.close()
    for target in (key, odd):
        code, doc, err = cli_json("sessions", "pin", target, "--store", str(db), "--json")
        assert code == 0, (target, err)
    assert unsettled(db)["pending"] == [odd]
    assert json.loads(nodes(db)[key][1])["pinnedAt"] and sid


# ---- the tree: which events are on the visible branch ------------------------------------------------------


def _msg(i: str, parent: str | None, role: str = "user", text: str = "hello", **extra: object) -> dict:
    return {
        "type": "message",
        "id": i,
        "parentId": parent,
        "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": f"{text} {i}"}]},
        **extra,
    }


def _project(events: list[dict]) -> tuple[list[int], list[str], str | None]:
    from openclaw_cli.store.openclaw.projection import build_projection

    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-12-01T10:00:00.000Z"}
    proj = build_projection([(seq, 1_000 + seq, event) for seq, event in enumerate([header, *events])])
    assert proj is not None
    return [row[1] for row in proj.active], [row[0] for row in proj.fts], proj.leaf_event_id


def test_a_linear_transcript_projects_every_event_but_the_header():
    assert _project([_msg("a", None), _msg("b", "a", "assistant"), _msg("c", "b")]) == (
        [1, 2, 3],
        ["a", "b", "c"],
        "c",
    )


def test_a_branch_keeps_only_the_path_to_the_newest_leaf():
    """b and c are siblings: the leaf is c (last canonical), so b is off the visible branch."""
    assert _project([_msg("a", None), _msg("b", "a", "assistant"), _msg("c", "a", "assistant")]) == (
        [1, 3],
        ["a", "c"],
        "c",
    )


def test_a_leaf_control_selects_an_earlier_branch():
    events = [
        _msg("a", None),
        _msg("b", "a", "assistant"),
        _msg("c", "a", "assistant"),
        {"type": "leaf", "id": "l1", "parentId": "c", "targetId": "b"},
    ]
    assert _project(events) == ([1, 2], ["a", "b"], "b")


def test_excluded_events_blank_text_and_tool_results():
    from openclaw_cli.store.openclaw.projection import build_projection

    blank = {
        **_msg("b", "a", "assistant"),
        "message": {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
    }
    hidden = {**_msg("h", "x"), "message": {"role": "user", "content": "secret", "excludeFromContext": True}}
    events = [
        _msg("a", None),
        blank,
        {"type": "custom", "id": "x", "parentId": "b", "customType": "note"},
        hidden,
        {"type": "message", "id": "t", "parentId": "h", "message": {"role": "toolResult", "content": "ok"}},
    ]
    active, fts, leaf = _project(events)
    assert (
        active == [1, 2, 3, 4, 5] and fts == ["a", "h"] and leaf == "t"
    )  # blank text, tool results: not searchable
    proj = build_projection([(seq, 0, e) for seq, e in enumerate([{"type": "session"}, *events])])
    assert proj is not None
    assert [(row[2], row[3]) for row in proj.active] == [(0, 1), (1, 1), (None, 1), (2, 0), (3, 1)]


@pytest.mark.parametrize(
    "stamp,expected",
    [("2026-12-01T10:00:00.123Z", 1_796_119_200_123.0), (1234, 1234.0), ("not a date", 1001.0)],
)
def test_full_text_timestamps_are_numbers_like_the_real_writers(stamp: object, expected: float):
    from openclaw_cli.store.openclaw.projection import fts_entry

    event = {**_msg("a", None), "timestamp": stamp}
    assert fts_entry(event, 1001) == ("a", "user", "hello a", expected)


# ---- backups: one per run, 7 days, at most 5 per database, counted by status --------------------------------


def _plant_backups(db: Path, ages_days: list[float]) -> list[Path]:
    import time

    from openclaw_cli.store.archives import format_archive_timestamp
    from openclaw_cli.store.openclaw.guard import BACKUP_MARKER

    now = int(time.time() * 1000)
    out = []
    for age in ages_days:
        path = db.with_name(
            f"{db.name}{BACKUP_MARKER}{format_archive_timestamp(now - int(age * 86_400_000))}"
        )
        path.write_bytes(b"old backup")
        out.append(path)
    return out


def test_each_run_prunes_backups_to_seven_days_and_five(state_dir: Path):
    from openclaw_cli.store.openclaw.guard import list_backups

    fixture_state(state_dir)
    db = state_dir / DB_REL
    old = _plant_backups(db, [30, 8, 6, 5, 4, 3, 2])  # 2 expired, 5 recent
    key = sorted(nodes(db))[0]
    code, doc, err = cli_json("sessions", "pin", key, "--store", str(db), "--json")
    assert code == 0, err
    kept = [p for _, p, _ in list_backups(db)]
    assert len(kept) == 5 and kept[-1] not in old  # this run's backup, and the 4 newest before it
    assert kept[:-1] == old[-4:]
    code, doc, err = cli_json("status", "--json")
    assert code == 0, err
    [store] = [s for s in doc["stores"] if s["path"] == str(db)]
    assert (
        store["backups"]["count"] == 5
        and store["backups"]["keepDays"] == 7
        and store["backups"]["keepCount"] == 5
    )
    assert store["backups"]["bytes"] == sum(p.stat().st_size for p in kept)
    text = cli_json("status")[1]
    assert "backups 5 (" in text and "kept 7 days, at most 5" in text


def test_our_gateway_backs_up_once_per_request(state_dir: Path):
    from openclaw_cli.store.openclaw.guard import list_backups
    from tests.gateway_server_support import GatewayProcess, connected

    fixture_state(state_dir)
    db = state_dir / DB_REL
    first, second = sorted(nodes(db))[:2]
    with GatewayProcess() as gw, connected(gw.url) as client:
        for key in (first, second):
            res = client.request("sessions.patch", {"key": key, "pinned": True})
            assert res["ok"], res
    assert len(list_backups(db)) == 2  # two runs, two backups (a Gateway is one process for many runs)
    left = unsettled(db)
    assert left["reconcile"] == [] and first not in left["pending"] and second not in left["pending"]


def test_an_append_extends_a_current_projection_without_rebuilding_it(state_dir: Path):
    """A compaction summary appended to a session whose projection is current is indexed as
    OpenClaw's in-transaction appender does (the index state's time is the event's), and the
    result is what a rebuild gives."""
    fixture_state(state_dir)
    db = state_dir / DB_REL
    sid = nodes(db)["agent:main:main"][0]
    code, doc, err = cli_json("compact", "agent:main:main", "--store", str(db), "--json")
    assert code == 0 and doc["compacted"], err
    conn = connect(db)
    try:
        seq, created = conn.execute(
            "SELECT seq, created_at FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (sid,),
        ).fetchone()
        state = conn.execute(
            "SELECT indexed_seq, needs_rebuild, updated_at FROM session_transcript_index_state WHERE session_id = ?",
            (sid,),
        ).fetchone()
    finally:
        conn.close()
    assert state == (seq, 0, created)
    assert rebuilt_projection_equal(db) and unsettled(db)["reconcile"] == []
