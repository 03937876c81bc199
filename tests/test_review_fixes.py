"""Regression tests for defects found in review."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from openclaw_cli import jsonutil
from openclaw_cli.config.resolve import WriteLockSettings, sqlite_busy_timeout_ms
from openclaw_cli.store.legacy.store import LegacyStore


def test_json_loads_rejects_nan_and_infinity() -> None:
    assert jsonutil.loads('{"n": 1}') == {"n": 1}
    for text in ('{"t": NaN}', '{"t": Infinity}', '{"t": -Infinity}'):
        with pytest.raises(jsonutil.JSONDecodeError):
            jsonutil.loads(text)


def test_busy_timeout_is_capped_to_what_sqlite_accepts() -> None:
    assert sqlite_busy_timeout_ms(WriteLockSettings(3_000_000_000, 1, 1)) == 2_147_000_000
    assert sqlite_busy_timeout_ms(WriteLockSettings(math.inf, 1, 1)) == 2_147_000_000


def _store(tmp_path: Path, rows: dict) -> LegacyStore:
    path = tmp_path / "agents/main/sessions/sessions.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rows))
    return LegacyStore(path, "main")


def test_a_session_id_with_a_newline_is_not_loaded(tmp_path: Path) -> None:
    store = _store(
        tmp_path, {"ok": {"sessionId": "good", "updatedAt": 1}, "bad": {"sessionId": "a\nb", "updatedAt": 2}}
    )
    assert list(store.load_entries()) == ["ok"]


def test_listing_orders_zero_before_missing_and_negative(tmp_path: Path) -> None:
    store = _store(
        tmp_path,
        {
            "neg": {"sessionId": "n", "updatedAt": -5},
            "none": {"sessionId": "x"},
            "zero": {"sessionId": "z", "updatedAt": 0},
            "new": {"sessionId": "w", "updatedAt": 9},
        },
    )
    rows, total = store.list_entries()
    assert [k for k, _ in rows] == ["new", "zero", "neg", "none"] and total == 4


def test_long_tool_output_keeps_an_error_from_its_middle() -> None:
    from openclaw_cli.compaction.providers import TOOL_RESULT_MAX_CHARS, _truncate_tool_result

    for before, after in ((1500, 5000), (4000, 3000), (6000, 10)):
        text = "x" * before + " Traceback: boom happened " + "y" * after
        out = _truncate_tool_result(text)
        assert "Traceback: boom happened" in out
        assert len(out) < TOOL_RESULT_MAX_CHARS + 200
