"""sessions.list's built-row cache (`ops.session_views._ROWS`, issue 30): a list after a commit
answers exactly what it answers with the cache empty — the changed row rebuilt, the others as
they were, the list's own `snapshotAt` on every row, titles inserted into fresh rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.ops import session_views
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.methods import METHODS, parse_params
from openclaw_cli.paths import resolve_paths
from tests.conftest import generate_legacy_state, run_cli


@pytest.fixture(params=["legacy", "sqlite"])
def state(request: pytest.FixtureRequest, state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 30, 0, 99)
    if request.param == "sqlite":
        done = run_cli("doctor", "--session-sqlite", "import", "--json")
        assert done.returncode == 0, done.stderr
    return state_dir


def _call(ctx: Context, name: str, params: dict[str, Any]) -> Any:
    error, parsed = parse_params(name, params)
    assert error is None, error
    return METHODS[name].run(ctx, parsed)


def _fresh(ctx: Context, params: dict[str, Any]) -> Any:
    session_views._ROWS.clear()
    session_views._PAGES.clear()
    session_views._TITLES.clear()
    return _call(ctx, "sessions.list", params)


def test_list_after_commits_is_the_uncached_list(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_800_000_000_000]
    ctx = Context.load(resolve_paths(), clock=lambda: clock[0])
    params = {"limit": 10, "includeDerivedTitles": True}
    built: list[str] = []  # the keys of the rows shaped (not taken from the cache)
    shape = session_views.gateway_row

    def counted(ctx: Context, key: str, entry: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        built.append(key)
        return shape(ctx, key, entry, **kwargs)

    monkeypatch.setattr(session_views, "gateway_row", counted)
    from openclaw_cli.ops import titles

    heads: list[str] = []  # the sessions whose transcript head was read for a title
    read_head = titles.first_user_text

    def counted_head(store: Any, entry: dict[str, Any]) -> str | None:
        heads.append(entry["sessionId"])
        return read_head(store, entry)

    monkeypatch.setattr(titles, "first_user_text", counted_head)
    first = _fresh(ctx, params)
    keys = [row["key"] for row in first["sessions"]]
    assert sorted(built) == sorted(keys)  # the empty cache: every row shaped
    page = keys
    for n, change in enumerate([{"label": "renamed"}, {"pinned": True}, {"label": None}, {"pinned": False}]):
        target = keys[n % 3]
        result = _call(ctx, "sessions.patch", {"key": target, **change})
        assert result
        clock[0] += 1000
        built.clear()
        heads.clear()
        cached = _call(ctx, "sessions.list", params)
        listed = [row["key"] for row in cached["sessions"]]
        # titles too: only the patched row's and new rows' transcripts are read (issue 30)
        changed = {
            row["sessionId"] for row in cached["sessions"] if row["key"] == target or row["key"] not in page
        }
        assert set(heads) <= changed
        # the others reused: only the patched row and rows new to the page are shaped again
        assert (target in built) == (target in listed) and set(built) <= {target} | (set(listed) - set(page))
        assert len(built) < len(listed)
        assert all(row["snapshotAt"] == clock[0] for row in cached["sessions"])
        assert cached == _fresh(ctx, params)
        page = listed
        again = _call(ctx, "sessions.list", params)  # served again: fresh dicts, not the cached ones
        again["sessions"][0]["key"] = "changed by a caller"
        assert _call(ctx, "sessions.list", params)["sessions"][0]["key"] != "changed by a caller"


def test_another_config_is_another_row(state: Path) -> None:
    ctx = Context.load(resolve_paths(), clock=lambda: 1_800_000_000_000)
    before = _fresh(ctx, {"limit": 5})
    config = state / "openclaw.json"
    config.write_text('{"agents": {"defaults": {"model": "anthropic/claude-x"}}}')
    reloaded = Context.load(resolve_paths(), clock=lambda: 1_800_000_000_000)
    after = _call(reloaded, "sessions.list", {"limit": 5})
    assert after == _fresh(reloaded, {"limit": 5})
    assert [r.get("model") for r in after["sessions"]] != [r.get("model") for r in before["sessions"]] or all(
        "modelOverride" in r for r in before["sessions"]
    )
