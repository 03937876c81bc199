"""The search index's first build (issue 26, the build path): what each shard is created with and
how a parallel build splits its work. Speed figures live in `scripts/bench` (search-big)."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.search.query import parse
from tests.conftest import generate_legacy_state


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    return state_dir


def _hashsize(path: Path) -> int | None:
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT v FROM fts_config WHERE k = 'hashsize'").fetchone()
    return int(row[0]) if row else None


def test_shards_hold_a_build_in_memory_before_writing_a_segment(tmp_path: Path) -> None:
    """Every shard's FTS5 table is created (and re-created by a reset) with the raised pending-data
    limit: a first build is written as one segment, not merged again level by level."""
    from openclaw_cli.search.index import FTS_HASHSIZE, AgentIndex

    index = AgentIndex(tmp_path / "idx.sqlite")
    try:
        paths = [p for p in index.paths if p is not None]
        assert len(paths) == 2
        assert [_hashsize(p) for p in paths] == [FTS_HASHSIZE] * 2
        index.reset()
        assert [_hashsize(p) for p in paths] == [FTS_HASHSIZE] * 2
    finally:
        index.close()
    assert FTS_HASHSIZE > 1 << 20  # FTS5's default is 1 MB


def test_a_forked_shard_builder_reuses_the_parents_file_sources(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources that share no connection (files) serve the forked child as the parent built them: it
    neither lists the sessions directory again nor parses sessions.json before its shard. A
    refresh that fails would make the child fail (and the parent redo its shard)."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.search import index as index_mod
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.store.detect import open_agent_store

    monkeypatch.setattr(index_mod, "PARALLEL_MIN_SOURCES", 1)
    monkeypatch.setattr(index_mod, "_single_threaded", lambda: True)
    collected: list[Any] = []
    real_collect = index_mod._collect

    def collect(child: tuple[int, int]) -> Any:
        stats = real_collect(child)
        collected.append(stats)
        return stats

    monkeypatch.setattr(index_mod, "_collect", collect)

    def no_refresh(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the child scanned the sources again")

    import openclaw_cli.search.engine as engine_mod

    real_agent_sources = engine_mod.agent_sources
    calls: list[int] = []

    def agent_sources(*args: Any, **kwargs: Any) -> Any:
        calls.append(os.getpid())
        if len(calls) > 1:
            no_refresh()
        return real_agent_sources(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "agent_sources", agent_sources)
    paths = resolve_paths()
    store = open_agent_store(paths, "main", read_only=True)
    try:
        target = StoreTarget(store, paths.import_archive_dir("main"))
        outcome = search([target], parse("session"), Options(limit=5, index_root=tmp_path / "idx", workers=2))
    finally:
        store.close()
    assert len(collected) == 1 and collected[0] is not None  # the child built its shard itself
    assert collected[0].sources_read > 0
    assert outcome.results
