"""A database store's cleanup hands its leaving sessions to the store in session-id order — the
order of the events' primary-key index, of the identities and windows tables and of a fresh
import's events — whatever order the plan removed their rows in (issue 30): the exports and the
removals' deletes then walk each b-tree forwards. What leaves and what is archived is unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cleanup_support import transcript_lines

from openclaw_cli.store.retire import Retirement
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore
from tests.storage_support import cli_json, make_state


def test_the_leaving_sessions_are_exported_and_dropped_in_session_id_order(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_state("sqlite", state_dir)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
    )
    db = state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    # stale rows whose keys (store order) run against their session ids
    store = SqliteStore(db, "main")
    try:
        store.bulk_import(
            [
                ImportRecord(
                    f"agent:main:order-{i}",
                    {"sessionId": f"order-s{9 - i}", "updatedAt": 1_000 + i},
                    [line.encode() for line in transcript_lines(f"order-s{9 - i}", 1)],
                )
                for i in range(8)
            ],
            on_malformed="quarantine",
        )
    finally:
        store.close()
    retired: list[Retirement] = []
    planned: list[Any] = []
    exported: list[list[str]] = []
    dropped: list[list[str]] = []
    real_retire, real_export, real_drop = (
        SqliteStore.retire,
        SqliteStore.export_transcripts,
        SqliteStore.drop_session_events,
    )

    def retire(self: SqliteStore, plan: Retirement, **kwargs: Any) -> Any:
        retired.append(plan)
        planned.append(plan.entries)  # (the apply lets the plan's rows go once retire returns)
        return real_retire(self, plan, **kwargs)

    def export(self: SqliteStore, session_ids: Any, **kwargs: Any) -> Any:
        ids = list(session_ids)
        exported.append(ids)
        return real_export(self, ids, **kwargs)

    def drop(self: SqliteStore, session_ids: Any, **kwargs: Any) -> Any:
        ids = list(session_ids)
        dropped.append(ids)
        return real_drop(self, ids, **kwargs)

    monkeypatch.setattr(SqliteStore, "retire", retire)
    monkeypatch.setattr(SqliteStore, "export_transcripts", export)
    monkeypatch.setattr(SqliteStore, "drop_session_events", drop)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce")
    assert code == 0, err
    [plan] = retired
    [entries] = planned
    mine = [f"order-s{9 - i}" for i in range(8)]
    # the plan removed these rows in an order that is not the sessions' (else this shows nothing)
    in_removal_order = [
        sid
        for key in plan.removed_keys
        if isinstance(entries.get(key), dict) and (sid := entries[key].get("sessionId")) in mine
    ]
    assert sorted(in_removal_order) == sorted(mine) and in_removal_order != sorted(mine)
    assert plan.session_ids == sorted(plan.session_ids)
    [ids] = exported
    assert ids == sorted(ids) and set(mine) <= set(ids)
    assert [sid for batch in dropped for sid in batch] == [sid for sid in ids]
    # every one of them left, each with its archive
    archives = {p.name.split(".jsonl")[0] for p in (db.parent.parent / "sessions").glob("*.deleted.*")}
    assert set(mine) <= archives
    check = SqliteStore(db, "main", read_only=True)
    try:
        assert not set(mine) & set(check.session_totals())
    finally:
        check.close()
