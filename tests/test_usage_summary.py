"""The usage ledger's cached summary (issue 27 §6, `usage` over 100,000 records < 300 ms): the same
report with and without it, after appends, after a ledger rewritten before its summed end, with a
session live again, with a torn last line, and with a cache dir that cannot be written."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from openclaw_cli.store.usage_summary import summarize, summary_path
from tests.storage_support import cli_json, make_state


def _record(i: int, *, sid: str | None = None, delta: bool = False, kind: str = "cron") -> dict:
    day = f"2026-{1 + i % 3:02d}-{1 + i % 5:02d}"
    record = {
        "v": 1,
        "agentId": "main",
        "key": f"agent:main:cron:job{i}",
        "sessionId": sid or f"gone-{i}",
        "kind": kind,
        "reason": "cleanup",
        "slices": [[day, f"openai/gpt-{i % 2}", 10 + i, 1, 0, 0, 11 + i, 0.25, 2]],
    }
    if delta:
        record["delta"] = True
    return record


def _write(ledger: Path, records: list, *, mode: str = "a") -> None:
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open(mode) as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def _report(*args: str) -> dict:
    code, doc, err = cli_json("usage", *args)
    assert code == 0, err
    doc.pop("generatedAt")
    return doc


def _uncached(*args: str) -> dict:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.usage import usage_report
    from openclaw_cli.paths import resolve_paths

    by = args[1] if args[:1] == ("--by",) else "agent"
    doc = usage_report(Context.load(resolve_paths()), {"by": by, "noCache": True})
    doc.pop("generatedAt")
    return doc


@pytest.fixture
def ledger(state_dir: Path) -> Path:
    make_state("legacy", state_dir)
    return state_dir / "openclaw-cli-usage" / "main.ledger.jsonl"


def test_appends_are_summed_incrementally_with_the_same_report(ledger: Path, state_dir: Path) -> None:
    _write(ledger, [_record(i) for i in range(30)])
    first = _report("--by", "model")
    from openclaw_cli.paths import cache_root

    cache = summary_path(ledger, cache_root())
    assert cache.exists()
    assert first == _uncached("--by", "model")
    _write(ledger, [_record(i) for i in range(30, 45)] + [_record(99, delta=True)])
    for by in ("agent", "model", "day", "kind"):
        assert _report("--by", by) == _uncached("--by", by), by
    assert _report()["ledgers"][0]["records"] == 46


def test_a_ledger_changed_before_the_summed_end_is_summed_again(ledger: Path) -> None:
    _write(ledger, [_record(i) for i in range(10)])
    _report()
    # same size, other figures: not an append
    text = ledger.read_text().replace('"cleanup"', '"deleted"').replace("0.25", "0.75")
    ledger.write_text(text)
    assert _report() == _uncached()
    assert _report()["totals"]["cost"] == pytest.approx(7.5)


def test_a_session_live_again_counts_through_its_store(ledger: Path, state_dir: Path) -> None:
    code, listing, _ = cli_json("sessions", "--limit", "all")
    live_sid = listing["sessions"][0]["sessionId"]
    _write(ledger, [_record(1), _record(2, sid=live_sid), _record(3, sid=live_sid, delta=True)])
    doc = _report()
    assert doc == _uncached()
    assert doc["ledgers"][0] | {"path": None} == {
        "agentId": "main",
        "path": None,
        "records": 3,
        "counted": 2,  # the whole-session record of a live session is not counted; its delta is
        "unreadableLines": 0,
        "unreadableAt": [],
    }


def test_torn_and_damaged_lines_are_counted_not_fatal(ledger: Path) -> None:
    _write(ledger, [_record(1), "{not json", _record(2)])
    with ledger.open("a") as fh:
        fh.write('{"v":1,"sessionId":"torn"')  # a crash mid-append
    doc = _report()
    assert doc == _uncached()
    assert (doc["ledgers"][0]["unreadableLines"], doc["ledgers"][0]["unreadableAt"]) == (2, [2, 4])
    with ledger.open("a") as fh:
        fh.write("\n" + json.dumps(_record(3)) + "\n")
    doc = _report()
    assert doc == _uncached()
    assert doc["ledgers"][0]["records"] == 3


def test_a_cache_dir_that_cannot_be_written_only_costs_speed(
    ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(ledger, [_record(i) for i in range(5)])
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert _report() == _uncached()
    summary, _tail, error = summarize(ledger, blocked / "openclaw-cli")
    assert error is None and summary.count == 5
    assert stat.S_ISREG(blocked.stat().st_mode)
