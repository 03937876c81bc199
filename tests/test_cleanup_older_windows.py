"""A removed key's earlier windows (compaction successors, D16) leave with it unless a kept row
still names their session; the kept rows' ids are gathered only when such a window exists
(issue 30) — the same sessions, in the windows' order, as gathering them first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from openclaw_cli.maintenance.service import _older_windows
from openclaw_cli.store.base import SessionStore


class _Store:
    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs

    def window_keys(self) -> list[tuple[str, str]]:
        return list(self.pairs)

    def windows_beside(self, keys: Any, leaving: Any) -> list[tuple[str, str]]:
        return SessionStore.windows_beside(self, keys, leaving)  # type: ignore[arg-type]  # (the base rule)


def _result(entries: dict[str, Any], removed: list[str], leaving: list[str]) -> Any:
    return SimpleNamespace(
        plan=SimpleNamespace(removed=removed),
        entries=entries,
        sqlite_sessions=list(leaving),
        sqlite_session_keys={
            sid: key for key in removed for sid in leaving if entries[key]["sessionId"] == sid
        },
    )


def _reference(pairs: list[tuple[str, str]], result: Any) -> list[str]:
    removed = set(result.plan.removed)
    still = {
        e.get("sessionId") for k, e in result.entries.items() if k not in removed and isinstance(e, dict)
    }
    out, have = list(result.sqlite_sessions), set(result.sqlite_sessions)
    for sid, key in pairs:
        if key in removed and sid not in still and sid not in have:
            have.add(sid)
            out.append(sid)
    return out


def test_earlier_windows_of_removed_keys_leave_unless_a_kept_row_names_them():
    entries = {
        "agent:main:a": {"sessionId": "a2"},
        "agent:main:b": {"sessionId": "b1"},
        "agent:main:c": {"sessionId": "a1"},  # kept, and names a's earlier window
        "agent:main:d": {"sessionId": "d2"},
        "agent:main:e": "not an object",
    }
    pairs = [
        ("d2", "agent:main:d"),
        ("a2", "agent:main:a"),
        ("a1", "agent:main:a"),
        ("a0", "agent:main:a"),
        ("b1", "agent:main:b"),
        ("d1", "agent:main:d"),
        ("b0", "agent:main:b"),
    ]
    result = _result(entries, ["agent:main:a", "agent:main:b"], ["a2", "b1"])
    expected = _reference(pairs, result)
    _older_windows(_Store(pairs), result)
    assert result.sqlite_sessions == expected == ["a2", "b1", "a0", "b0"]
    assert (
        result.sqlite_session_keys["a0"] == "agent:main:a"
        and result.sqlite_session_keys["b0"] == "agent:main:b"
    )


def test_no_earlier_window_no_change():
    entries = {"agent:main:a": {"sessionId": "a1"}, "agent:main:b": {"sessionId": "b1"}}
    pairs = [("a1", "agent:main:a"), ("b1", "agent:main:b")]
    result = _result(entries, ["agent:main:a"], ["a1"])
    _older_windows(_Store(pairs), result)
    assert result.sqlite_sessions == ["a1"] and result.sqlite_session_keys == {"a1": "agent:main:a"}


def test_the_stores_windows_beside_are_the_base_rule_over_window_keys(tmp_path: Any) -> None:
    """Our SQLite store reads only the removed keys' windows (through the session-key index, 500
    keys a statement) and sorts the few it finds: the same pairs in the same order as the base
    rule over every window (`window_keys`, `created_at DESC, session_id`), across chunks, equal
    times and non-ASCII ids."""
    from openclaw_cli.store.sqlite.store import SqliteStore

    store = SqliteStore(tmp_path / "agent" / "openclaw-agent.sqlite", "main", create=True)
    try:
        rows = [
            (f"s{i:04d}{'é' if i % 7 == 0 else ''}", f"agent:main:k{i % 1300}", 1_000 + (i * 37) % 11)
            for i in range(2600)
        ]
        with store.transaction() as conn:
            conn.executemany(
                "INSERT INTO session_windows(session_id, session_key, created_at, updated_at) VALUES (?,?,?,?)",
                [(sid, key, created, created) for sid, key, created in rows],
            )
        keys = {f"agent:main:k{i}" for i in range(0, 1300, 2)}
        leaving = {sid for sid, _, _ in rows[::3]}
        got = store.windows_beside(keys, leaving)
        assert got == SessionStore.windows_beside(store, keys, leaving)
        assert len(got) > 500 and got != sorted(got)
        assert store.windows_beside(set(), leaving) == []
    finally:
        store.close()
