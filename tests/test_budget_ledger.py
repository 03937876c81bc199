"""The disk budget's eviction tiers keep what they evict in the usage ledger (issue 27 §6, D23;
`maintenance/reclaim.py`): historical windows (tier 3) and 2026.9.9's idle conversations (tier 5,
the row eviction tier 4's `active-session-cap` rows go through too) leave their store only after
their usage is appended, so `openclaw usage` totals do not drop when the budget reclaims, on every
store kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.storage_support import DB, STORE_KINDS, cli_json, make_state

OLD = "0ld00000-2222-4333-8444-555555555555"
USAGE_LINE = {
    "type": "message",
    "id": "o1",
    "timestamp": "2026-11-01T00:00:00.000Z",
    "message": {
        "role": "assistant",
        "model": "m-1",
        "usage": {"input": 700, "output": 30, "totalTokens": 730, "cost": {"total": 0.25}},
        "content": [{"type": "text", "text": "earlier"}],
    },
}
GROUPS = {
    "agent:main:telegram:group:123",
    "agent:main:telegram:group:-1006",
    "agent:main:telegram:group:-1007",
}


def _ok(*args: str) -> dict:
    code, doc, err = cli_json(*args)
    assert code == 0, (args, doc, err)
    return doc


def _figures(doc: dict) -> tuple[int, int, int, int, float]:
    t = doc["totals"]
    return t["input"], t["output"], t["totalTokens"], t["messages"], round(t["cost"], 6)


def _keys() -> set[str]:
    return {row["key"] for row in _ok("sessions", "--limit", "all")["sessions"]}


def _ledger(state: Path) -> list[dict]:
    path = state / "openclaw-cli-usage" / "main.ledger.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_the_budget_tiers_ledger_every_session_they_evict(
    kind: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_state(kind, state_dir)
    if kind == "sqlite":  # an earlier window of main that no row references: tier 3's historical session
        from openclaw_cli.store.sqlite.store import SqliteStore

        with SqliteStore(state_dir / DB, "main") as store:
            store.append_events(
                OLD, [json.dumps(USAGE_LINE, separators=(",", ":"))], session_key="agent:main:main"
            )
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.9.9")
    # nothing for the entry stages (no row stale, none over the cap); a budget no state can meet,
    # set explicitly: 9.9's final tier evicts the idle group conversations too
    (state_dir / "openclaw.json").write_text(
        json.dumps(
            {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "3650d", "maxDiskBytes": 1}}}
        )
    )
    rows = _keys()
    assert rows >= GROUPS
    before = _ok("usage")
    assert before["totals"]["totalTokens"] > 0
    done = _ok("sessions", "cleanup", "--enforce", "--no-backup")
    budget = done["diskBudget"]
    assert budget["overBudget"] is True and budget["removedEntries"] > 0
    evicted = rows - _keys()
    assert evicted == GROUPS  # only the tiers removed rows (the entry stages had nothing to do)
    records = [r for r in _ledger(state_dir) if r["reason"] == "budget"]
    assert {r["key"] for r in records if r["key"]} == evicted
    if kind == "sqlite":  # the earlier window left through tier 3, its usage kept too
        assert OLD in {r["sessionId"] for r in records}
    assert len(records) >= budget["removedEntries"]  # (a row's earlier windows leave with it)
    # what the evicted sessions cost is still counted
    assert _figures(_ok("usage")) == _figures(before)
