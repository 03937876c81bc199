"""`sessions.list` `sortBy` (OpenClaw 2026.9.6's session list order) on every store kind: the
legacy sessions.json, our SQLite store (its index walk and its sorted page), a real schema-23
database (read-only), and the operations layer's merge of several agents' stores. Expected orders
are written out by hand for a small set, and an independent transcription of OpenClaw's
comparator (`compareSessionEntryPairs`, JS number semantics) judges generated sets."""

from __future__ import annotations

import functools
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.keys import is_pinnable
from openclaw_cli.store.base import ListingQuery, SessionStore
from openclaw_cli.store.legacy.store import LegacyStore
from openclaw_cli.store.sqlite.store import SqliteStore

SORTS = ("updatedAt", "lastInteractionAt", "activity")


def _k(name: str) -> str:
    return f"agent:main:direct:{name}"


SUB = "agent:main:subagent:x"
# Pins against the updatedAt order, a pin tie, a pinned sub-agent run (not pinnable), an explicit
# null pin, ties, missing timestamps, 0 beside a missing updatedAt, a float, an archived row.
HAND: dict[str, dict[str, Any]] = {
    _k("a"): {"pinnedAt": 100, "updatedAt": 9000, "lastInteractionAt": 500},
    _k("b"): {"pinnedAt": 300, "updatedAt": 1000, "lastInteractionAt": 500},
    _k("c"): {"pinnedAt": 300, "updatedAt": 2000},
    SUB: {"pinnedAt": 999, "updatedAt": 5000, "lastInteractionAt": 800},
    _k("d"): {"updatedAt": 5000, "lastInteractionAt": 700},
    _k("e"): {"updatedAt": 7000, "lastInteractionAt": 100, "lastActivityAt": 8000},
    _k("f"): {"updatedAt": 3000, "lastActivityAt": -5, "createdAt": 50},
    _k("g"): {"lastInteractionAt": 900, "createdAt": 4000},
    _k("h"): {"updatedAt": 0},
    _k("i"): {"updatedAt": 6000.5, "lastInteractionAt": 6000.5},
    _k("j"): {"updatedAt": 99999, "archivedAt": 5, "lastInteractionAt": 1},
    _k("m"): {"createdAt": 2500},
    _k("n"): {"pinnedAt": None, "updatedAt": 4000},
}
EXPECTED = {
    "updatedAt": ["c", "b", "a", "e", "i", "d", SUB, "n", "f", "g", "h", "m"],
    "lastInteractionAt": ["i", "g", SUB, "d", "a", "b", "e", "c", "f", "h", "m", "n"],
    "activity": ["e", "i", "n", "f", "m", "c", "g", SUB, "d", "a", "b", "h"],
}


def _expected(sort_by: str) -> list[str]:
    return [key if key.startswith("agent:") else _k(key) for key in EXPECTED[sort_by]]


# ---- the three store kinds over the same entries ------------------------------------------------------


def _legacy(tmp_path: Path, entries: dict[str, dict[str, Any]]) -> SessionStore:
    path = tmp_path / "legacy" / "sessions.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({key: {"sessionId": f"s{i}", **entry} for i, (key, entry) in enumerate(entries.items())})
    )
    return LegacyStore(path, "main")


def _ours(tmp_path: Path, entries: dict[str, dict[str, Any]]) -> SessionStore:
    path = tmp_path / "ours" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True)
    with SqliteStore(path, "main", create=True) as store:
        store.upsert_entries(
            {key: {"sessionId": f"s{i}", **entry} for i, (key, entry) in enumerate(entries.items())}
        )
    return SqliteStore(path, "main", read_only=True)


def _schema23(tmp_path: Path, entries: dict[str, dict[str, Any]]) -> SessionStore:
    """The real OpenClaw fixture database with its rows replaced by `entries` (entry_json is what
    our read-only schema-23 store lists from)."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store
    from tests.conftest import OPENCLAW_FIXTURE, copy_tree

    state = copy_tree(OPENCLAW_FIXTURE / "imported-state", tmp_path / "s23" / ".openclaw")
    db = state / "agents/main/agent/openclaw-agent.sqlite"
    conn = sqlite3.connect(db)
    try:
        template = conn.execute("SELECT * FROM session_nodes LIMIT 1").fetchone()
        columns = [row[1] for row in conn.execute("PRAGMA table_info(session_nodes)")]
        conn.execute("DELETE FROM session_nodes")
        for i, (key, entry) in enumerate(entries.items()):
            row = dict(zip(columns, template, strict=True))
            row.update(session_key=key, entry_json=json.dumps({"sessionId": f"s{i}", **entry}))
            if "current_session_id" in row:
                row["current_session_id"] = f"s{i}"
            marks = ",".join("?" * len(row))
            conn.execute(f"INSERT INTO session_nodes ({','.join(row)}) VALUES ({marks})", list(row.values()))
        conn.execute("UPDATE session_nodes SET entry_valid = 1")  # its insert trigger awaits OpenClaw's check
        conn.commit()
    finally:
        conn.close()
    paths = resolve_paths(
        {
            "HOME": str(state.parent),
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        }
    )
    store = open_agent_store(Context.load(paths).paths, "main", read_only=True)
    assert store.schema == "openclaw 23"
    return store


STORES = {"legacy": _legacy, "sqlite": _ours, "schema23": _schema23}


def _keys(store: SessionStore, **query: Any) -> tuple[list[str], int]:
    rows, total = store.list_view(ListingQuery(**query))
    return [key for key, _ in rows], total


@pytest.mark.parametrize("kind", STORES)
def test_each_order_by_hand(tmp_path: Path, kind: str) -> None:
    store = STORES[kind](tmp_path, HAND)
    try:
        for sort_by in SORTS:
            keys, total = _keys(store, sort_by=sort_by)
            assert keys == _expected(sort_by) and total == 12, sort_by
            # pages: offset/limit apply after the sort, whatever the order
            for size in (1, 3, 5):
                walked = [
                    k
                    for off in range(0, 12, size)
                    for k in _keys(store, sort_by=sort_by, offset=off, limit=size)[0]
                ]
                assert walked == _expected(sort_by), (sort_by, size)
            # an archived listing and "all" are ordered the same way (the archived row's place)
            everything, total_all = _keys(store, sort_by=sort_by, archived=None)
            assert total_all == 13 and [k for k in everything if k != _k("j")] == _expected(sort_by)
            assert _keys(store, sort_by=sort_by, archived=True) == ([_k("j")], 1)
        assert _keys(store, archived=None)[0].index(_k("j")) == 3  # after the pins, the newest
        assert _keys(store, sort_by="lastInteractionAt", archived=None)[0][-4:] == [_k(x) for x in "fhmn"]
        # the pinned filter keeps its meaning in every order; only updatedAt puts pins first
        assert _keys(store, pinned=True)[0] == [_k("c"), _k("b"), _k("a")]
        assert _keys(store, pinned=True, sort_by="activity")[0] == [_k("c"), _k("a"), _k("b")]
        # activeMinutes: updatedAt is compared, the activity timestamp with sortBy "activity"
        assert _keys(store, active_since_ms=2600) == (
            [_k("a"), _k("e"), _k("i"), _k("d"), SUB, _k("n"), _k("f")],
            7,
        )
        assert _keys(store, active_since_ms=2600, sort_by="lastInteractionAt")[0] == [
            _k("i"),
            SUB,
            _k("d"),
            _k("a"),
            _k("e"),
            _k("f"),
            _k("n"),
        ]
        assert _keys(store, active_since_ms=2600, sort_by="activity") == (
            [_k("e"), _k("i"), _k("n"), _k("f")],
            4,
        )
        assert _keys(store, label="none", sort_by="activity") == ([], 0)
    finally:
        store.close()


@pytest.mark.parametrize("kind", STORES)
def test_pins_at_or_below_zero_rank_with_or_after_unpinned_rows(tmp_path: Path, kind: str) -> None:
    """OpenClaw's comparator ranks a pin by its pinnedAt: a row pinned at 0 ties with the unpinned
    rows, one pinned before 1970 sorts after them (our SQLite page then takes the generic path)."""
    entries = {
        _k("p-neg"): {"pinnedAt": -10, "updatedAt": 900},
        _k("p-zero"): {"pinnedAt": 0, "updatedAt": 50},
        _k("p-one"): {"pinnedAt": 1, "updatedAt": 1},
        _k("u1"): {"updatedAt": 100},
        _k("u2"): {"updatedAt": 60},
    }
    store = STORES[kind](tmp_path, entries)
    try:
        assert _keys(store)[0] == [_k(x) for x in ("p-one", "u1", "u2", "p-zero", "p-neg")]
        assert _keys(store, offset=1, limit=2)[0] == [_k("u1"), _k("u2")]
        assert _keys(store, sort_by="activity")[0] == [
            _k(x) for x in ("p-neg", "u1", "u2", "p-zero", "p-one")
        ]
    finally:
        store.close()


# ---- OpenClaw's comparator, transcribed with JS number semantics, as the judge -------------------------


def _js(value: Any) -> float:
    return 0 if value is None else value  # `?? 0`; the generated values are numbers or null/absent


def _positive(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _activity(entry: dict[str, Any]) -> float:
    act, inter = _positive(entry.get("lastActivityAt")), _positive(entry.get("lastInteractionAt"))
    if act is not None or inter is not None:
        return max(act or 0, inter or 0)
    return _positive(entry.get("updatedAt")) or _positive(entry.get("createdAt")) or 0


def _openclaw_compare(sort_by: str, a: tuple[str, dict], b: tuple[str, dict]) -> float:
    if sort_by == "updatedAt":
        pins = [_js(e.get("pinnedAt")) if "pinnedAt" in e and is_pinnable(k, e) else 0 for k, e in (a, b)]
        if pins[0] != pins[1]:
            return pins[1] - pins[0]
    stamp = _activity if sort_by == "activity" else (lambda e: _js(e.get(sort_by)))
    by_time = stamp(b[1]) - stamp(a[1])
    if by_time != 0:
        return by_time
    return -1 if a[0] < b[0] else 1 if a[0] > b[0] else 0


def _generated(seed: int, count: int) -> dict[str, dict[str, Any]]:
    rng = random.Random(seed)
    pool = [None, 0, -5, 1, 100, 100, 250.5, 1000, 1000, 5000]
    entries: dict[str, dict[str, Any]] = {}
    for i in range(count):
        key = f"agent:main:subagent:r{i}" if rng.random() < 0.1 else _k(f"r{i:03d}")
        entry: dict[str, Any] = {}
        for field, chance in (
            ("updatedAt", 0.9),
            ("createdAt", 0.4),
            ("lastInteractionAt", 0.6),
            ("lastActivityAt", 0.4),
            ("pinnedAt", 0.15),
            ("archivedAt", 0.1),
        ):
            if rng.random() < chance:
                entry[field] = rng.choice(pool)
        if entry.get("archivedAt") is None:
            entry.pop("archivedAt", None)
        entries[key] = entry
    return entries


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_sets_follow_openclaws_comparator(tmp_path: Path, kind: str, seed: int) -> None:
    entries = _generated(seed, 150)
    store = STORES[kind](tmp_path, entries)
    try:
        for sort_by in SORTS:
            order = functools.cmp_to_key(functools.partial(_openclaw_compare, sort_by))
            for archived in (False, None, True):
                visible = [
                    (k, e) for k, e in entries.items() if archived is None or ("archivedAt" in e) == archived
                ]
                want = [k for k, _ in sorted(visible, key=order)]
                for offset, limit in ((0, None), (0, 7), (5, 20), (140, 50)):
                    keys, total = _keys(store, sort_by=sort_by, archived=archived, offset=offset, limit=limit)
                    end = None if limit is None else offset + limit
                    assert (keys, total) == (want[offset:end], len(want)), (sort_by, archived, offset, limit)
    finally:
        store.close()


# ---- the operations layer: sessions.list / subscribe over several agents ------------------------------


def _state_with_two_agents(state: Path) -> None:
    from tests.gateway_server_support import write_config

    write_config(state, {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}})
    main = {key: entry for key, entry in HAND.items() if key != SUB}
    ops = {
        "agent:ops:direct:o1": {"updatedAt": 8000, "lastInteractionAt": 50, "pinnedAt": 200},
        "agent:ops:direct:o2": {"updatedAt": 5000, "lastInteractionAt": 950, "lastActivityAt": 7500},
    }
    for agent, entries in (("main", main), ("ops", ops)):
        path = state / "agents" / agent / "agent" / "openclaw-agent.sqlite"
        path.parent.mkdir(parents=True)
        with SqliteStore(path, agent, create=True) as store:
            store.upsert_entries(
                {k: {"sessionId": f"{agent}{i}", **e} for i, (k, e) in enumerate(entries.items())}
            )


def test_sessions_list_merges_agents_in_the_requested_order(state_dir: Path) -> None:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    _state_with_two_agents(state_dir)
    ctx = Context.load(resolve_paths())
    o1, o2 = "agent:ops:direct:o1", "agent:ops:direct:o2"
    expected = {
        "updatedAt": [_k("c"), _k("b"), o1, _k("a"), _k("e"), _k("i"), _k("d"), o2, _k("n")],
        "lastInteractionAt": [_k("i"), o2, _k("g"), _k("d"), _k("a"), _k("b"), _k("e"), o1, _k("c")],
        "activity": [_k("e"), o2, _k("i"), _k("n"), _k("f"), _k("m"), _k("c"), _k("g"), _k("d")],
    }
    for sort_by, want in expected.items():
        params = {"limit": 9} if sort_by == "updatedAt" else {"sortBy": sort_by, "limit": 9}
        page = call(ctx, "sessions.list", params)
        assert [row["key"] for row in page["sessions"]] == want, sort_by
        assert (page["totalCount"], page["nextOffset"], page["hasMore"]) == (13, 9, True)
        rest = call(ctx, "sessions.list", {**params, "offset": 9})
        assert rest["offset"] == 9 and rest["nextOffset"] is None and rest["hasMore"] is False
        assert len(rest["sessions"]) == 4 and not {r["key"] for r in rest["sessions"]} & set(want)
        listed = call(ctx, "sessions.subscribe", {**params, "limit": 3})["list"]
        assert [row["key"] for row in listed["sessions"]] == want[:3]
    # pinned rows keep `pinned: true` in the other orders; they are just not put first
    rows = call(ctx, "sessions.list", {"sortBy": "activity", "limit": 100})["sessions"]
    assert [r["key"] for r in rows if r["pinned"]] == [_k("c"), _k("a"), _k("b"), o1]


def test_one_agents_pages_are_paged_by_its_store(state_dir: Path) -> None:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    _state_with_two_agents(state_dir)
    ctx = Context.load(resolve_paths())
    main = [k for k in _expected("activity") if k != SUB]
    for offset in (0, 4, 8, 10):
        page = call(
            ctx, "sessions.list", {"agentId": "main", "sortBy": "activity", "limit": 4, "offset": offset}
        )
        assert [r["key"] for r in page["sessions"]] == main[offset : offset + 4]
        more = offset + 4 < 11
        assert (page["totalCount"], page["nextOffset"], page["hasMore"]) == (
            11,
            offset + 4 if more else None,
            more,
        )


def test_sort_by_schema_errors_are_openclaws() -> None:
    """Recorded from the real 2026.9.6 Gateway: a non-string fails every literal's type first."""
    from openclaw_cli.ops.methods import check_params

    one_of = "at /sortBy: must be equal to constant; at /sortBy: must match a schema in anyOf"
    assert check_params("sessions.list", {"sortBy": "x"}) == f"invalid sessions.list params: {one_of}"
    for value in (None, 5, True):
        assert (
            check_params("sessions.list", {"sortBy": value})
            == f"invalid sessions.list params: at /sortBy: must be string; {one_of}"
        )
    for value in SORTS:
        assert check_params("sessions.list", {"sortBy": value}) is None
    recorded = [  # the same rule in other literals: the real Gateway's texts, verbatim
        (
            "sessions.list",
            {"archived": 5},
            "at /archived: must be boolean; at /archived: must be string; "
            "at /archived: must be equal to constant; at /archived: must match a schema in anyOf",
        ),
        (
            "sessions.list",
            {"boardFace": None},
            "at /boardFace: must be string; at /boardFace: must be equal to "
            "constant; at /boardFace: must match a schema in anyOf",
        ),
        (
            "sessions.patch",
            {"key": "agent:main:main", "sendPolicy": 5},
            "at /sendPolicy: must be string; "
            "at /sendPolicy: must be equal to constant; at /sendPolicy: must be null; at /sendPolicy: must match a "
            "schema in anyOf",
        ),
        (
            "sessions.patch",
            {"key": "agent:main:main", "fastMode": 1},
            "at /fastMode: must be boolean; at /fastMode: "
            "must be string; at /fastMode: must be equal to constant; at /fastMode: must be null; at /fastMode: must "
            "match a schema in anyOf",
        ),
        (
            "sessions.patch",
            {"key": "agent:main:main", "inheritedToolPolicyVersion": "1"},
            "at /inheritedToolPolicyVersion: must be number; at /inheritedToolPolicyVersion: must be equal to constant;"
            " at /inheritedToolPolicyVersion: must be null; at /inheritedToolPolicyVersion: must match a schema in anyOf",
        ),
    ]
    for method, params, text in recorded:
        assert check_params(method, params) == f"invalid {method} params: {text}", params


def test_a_list_decodes_only_its_pages_pinned_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: our SQLite listing keeps each pinned row's place in the default order by its key
    and exact stored JSON, so a list right after one pinned row changed decodes that row and the
    page's rows, not every pinned row (the Gateway's mix lists with ~300 pinned rows); the order
    stays the comparator's, the changed row where its new pin puts it."""
    from openclaw_cli.store.sqlite import store as store_mod

    monkeypatch.setattr(store_mod, "_PINNED_ORDER", {})
    entries = {_k(f"p{i:03}"): {"pinnedAt": 1000 + i, "updatedAt": 5000 - i} for i in range(120)}
    entries.update({_k(f"u{i}"): {"updatedAt": 100 + i} for i in range(30)})
    with _ours(tmp_path, entries) as store:
        first, _ = _keys(store, limit=10)
    assert first == [_k(f"p{i:03}") for i in range(119, 109, -1)]
    path = tmp_path / "ours" / "openclaw-agent.sqlite"
    changed = {"sessionId": "s0", "pinnedAt": 5000, "updatedAt": 1}
    with SqliteStore(path, "main") as writer:
        writer.upsert_entries({_k("p000"): changed})
    entries[_k("p000")] = changed
    decoded: list[str] = []
    real = store_mod._loads_line

    def counting(text: str) -> Any:
        decoded.append(text)
        return real(text)

    monkeypatch.setattr(store_mod, "_loads_line", counting)
    monkeypatch.setattr(store_mod, "_orjson_loads", counting)  # (a batch's rows: `_parse_entries`)
    with SqliteStore(path, "main", read_only=True) as store:
        keys, total = _keys(store, limit=10)
        assert len(decoded) == 11, len(decoded)  # the changed row, and the page
        whole, _ = _keys(store)
    order = functools.cmp_to_key(functools.partial(_openclaw_compare, "updatedAt"))
    assert whole == [k for k, _ in sorted(entries.items(), key=order)]
    assert (keys, total) == (whole[:10], 150)
    assert keys[0] == _k("p000")


def test_the_pinned_order_keeps_one_version_per_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: the kept pinned order holds each pinned row's latest JSON only (looked up by key,
    checked by the text), not one entry per version a row ever had: a Gateway whose clients pin and
    relabel the same rows again and again keeps ~one entry per pinned row, and never clears the
    whole cache (and decodes every pinned row again) because old versions filled it."""
    from openclaw_cli.store.sqlite import store as store_mod

    monkeypatch.setattr(store_mod, "_PINNED_ORDER", {})
    entries = {_k(f"p{i:02}"): {"pinnedAt": 1000 + i, "updatedAt": 5000 - i} for i in range(20)}
    entries.update({_k(f"u{i}"): {"updatedAt": 100 + i} for i in range(5)})
    _ours(tmp_path, entries).close()
    path = tmp_path / "ours" / "openclaw-agent.sqlite"
    order = functools.cmp_to_key(functools.partial(_openclaw_compare, "updatedAt"))
    for version in range(6):
        changed = {
            "sessionId": "s3",
            "pinnedAt": 2000 + version,
            "updatedAt": version,
            "label": f"v{version}",
        }
        with SqliteStore(path, "main") as writer:
            writer.upsert_entries({_k("p03"): changed})
        entries[_k("p03")] = changed
        with SqliteStore(path, "main", read_only=True) as store:
            keys, total = _keys(store, limit=10)
        assert keys == [k for k, _ in sorted(entries.items(), key=order)][:10] and total == 25
    assert len(store_mod._PINNED_ORDER) == 20  # one per pinned row, whatever the versions


def test_a_list_reads_the_pinned_rows_once(tmp_path: Path) -> None:
    """Issue 30: the counting pass that names the pinned rows (after every commit in a live store)
    reads their JSON in the same walk of the pinned index; no second lookup of each pinned key
    (half the CPU of a Gateway list with ~350 pinned rows). Same page, same order."""
    entries = {_k(f"p{i:02}"): {"pinnedAt": 1000 + i, "updatedAt": 5000 - i} for i in range(30)}
    entries.update({_k(f"u{i}"): {"updatedAt": 100 + i} for i in range(10)})
    store = _ours(tmp_path, entries)
    statements: list[str] = []
    try:
        store._conn.set_trace_callback(statements.append)  # noqa: SLF001 - the statements under test
        keys, total = _keys(store, limit=35)
    finally:
        store.close()
    order = functools.cmp_to_key(functools.partial(_openclaw_compare, "updatedAt"))
    assert (keys, total) == ([k for k, _ in sorted(entries.items(), key=order)][:35], 40)
    assert not [sql for sql in statements if "session_key IN (" in sql], statements
    assert len([sql for sql in statements if "entry_json" in sql and "pinned_at IS NOT NULL" in sql]) == 1
