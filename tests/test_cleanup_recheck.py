"""The apply's re-check of the rows its plan read (spec maintenance §8.3, D6): a row written since
the plan read it is neither removed nor archived in place, while a row written again with the same
content (another key order) still counts as unchanged; and `session_bytes()` is read once per
apply (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cleanup_support import transcript_lines

from openclaw_cli.store.retire import Retirement
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore
from tests.storage_support import cli_json, make_state

NOW = 1_796_000_000_000


@pytest.fixture
def store(tmp_path: Path):
    db = SqliteStore(tmp_path / "agent" / "openclaw-agent.sqlite", "main", create=True)
    db.bulk_import(
        [
            ImportRecord(
                f"agent:main:s{i}",
                {"sessionId": f"s{i}", "updatedAt": i, "label": f"row {i}"},
                [line.encode() for line in transcript_lines(f"s{i}", 2)],
            )
            for i in range(6)
        ],
        on_malformed="quarantine",
    )
    yield db
    db.close()


def _rewrite(store: SqliteStore, key: str, text: str) -> None:
    """Another writer's row, stored as `text` (the projection columns left as they are)."""
    with store.transaction() as conn:
        conn.execute("UPDATE session_nodes SET entry_json = ? WHERE session_key = ?", (text, key))


def test_a_row_changed_since_the_plan_stays_and_one_written_again_as_it_was_leaves(
    store: SqliteStore,
) -> None:
    """Four rows planned to leave. Since the plan: s1's row gained a field (changed: it stays, and
    its session, still referenced, stays too); s2's row was written again with the same content in
    another key order (equal content: it leaves with s0 and s3)."""
    entries = store.load_entries()
    keys = [f"agent:main:s{i}" for i in range(4)]
    plan = Retirement(
        keys,
        entries=entries,
        session_ids=[f"s{i}" for i in range(4)],
        session_keys={f"s{i}": k for i, k in enumerate(keys)},
    )
    _rewrite(store, keys[1], json.dumps({**entries[keys[1]], "label": "renamed"}, separators=(",", ":")))
    _rewrite(
        store, keys[2], json.dumps(dict(reversed(list(entries[keys[2]].items()))), separators=(",", ":"))
    )
    outcome = store.retire(plan, lock_settings=None, now_ms=NOW, checkpoint=lambda: None)
    assert keys[1] in outcome.kept and "s1" in outcome.kept
    assert store.entry_keys() == {keys[1], "agent:main:s4", "agent:main:s5"}
    assert set(store.session_totals()) == {"s1", "s4", "s5"}


def test_a_row_whose_updated_at_moved_is_not_archived_in_place(store: SqliteStore) -> None:
    entries = store.load_entries()
    same, moved = "agent:main:s0", "agent:main:s1"
    newer = json.dumps({**entries[moved], "updatedAt": 99}, separators=(",", ":"))
    _rewrite(store, moved, newer)
    done = store.archive_rows(
        {same: "stale", moved: "stale"}, archived_at=NOW, expected=entries, lock_settings=None
    )
    assert done == [same]
    archived = store.get_entry(same)
    assert archived is not None and archived["archivedAt"] == NOW and archived["archiveReason"] == "stale"
    assert store.get_entry(moved) == json.loads(newer)


def test_an_apply_reads_the_session_sizes_once(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2026.7's budget measure, `reason_bytes` and the retirement's space check share one
    `session_bytes()` read (three before, issue 30)."""
    make_state("sqlite", state_dir)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
    )
    reads: list[int] = []
    real_sizes = SqliteStore.session_bytes

    def counting(self: SqliteStore) -> dict[str, int]:
        reads.append(1)
        return real_sizes(self)

    retired: list[Any] = []
    real_retire = SqliteStore.retire

    def spy(self: SqliteStore, plan: Retirement, **kwargs: Any) -> Any:
        retired.append(plan)
        return real_retire(self, plan, **kwargs)

    monkeypatch.setattr(SqliteStore, "session_bytes", counting)
    monkeypatch.setattr(SqliteStore, "retire", spy)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce")
    assert code == 0, err
    [plan] = retired
    assert plan.removed_keys and plan.session_ids and plan.session_bytes is not None
    assert len(reads) == 1
