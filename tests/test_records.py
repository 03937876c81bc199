"""The plain value classes (`openclaw_cli.records`) behave as the dataclasses they replaced: repr,
equality and hashing by the fields, read-only frozen records, pickling, and `_assign` setting each
field by `_fields`' order (a field given in the wrong order or a missing one shows here)."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from openclaw_cli.config.resolve import WriteLockSettings
from openclaw_cli.ops.context import Reuse
from openclaw_cli.paths import StatePaths, Target
from openclaw_cli.store.base import ListingQuery


def test_state_paths_fields_repr_equality_hash_and_pickle() -> None:
    paths = StatePaths(Path("/h"), Path("/h/.openclaw"), Path("/h/c.json"), "work", "{agentId}.json")
    assert (paths.home, paths.state_dir, paths.config_path, paths.profile, paths.session_store) == (
        Path("/h"),
        Path("/h/.openclaw"),
        Path("/h/c.json"),
        "work",
        "{agentId}.json",
    )
    assert repr(paths) == (
        "StatePaths(home=PosixPath('/h'), state_dir=PosixPath('/h/.openclaw'), "
        "config_path=PosixPath('/h/c.json'), profile='work', session_store='{agentId}.json')"
    )
    same = StatePaths(Path("/h"), Path("/h/.openclaw"), Path("/h/c.json"), "work", "{agentId}.json")
    assert paths == same and hash(paths) == hash(same)
    assert paths != StatePaths(Path("/h"), Path("/h/.openclaw"), Path("/h/c.json"), "work")
    assert pickle.loads(pickle.dumps(paths)) == paths
    assert copy.deepcopy(paths) == paths
    with pytest.raises(AttributeError):
        paths.home = Path("/x")  # type: ignore[misc]


def test_every_assigning_class_sets_its_fields_in_order() -> None:
    target = Target("main", Path("/s/sessions.json"), Path("/s/db.sqlite"), Path("/e"), True)
    assert (target.agent_id, target.store_path, target.sqlite_path, target.explicit, target.shared) == (
        "main",
        Path("/s/sessions.json"),
        Path("/s/db.sqlite"),
        Path("/e"),
        True,
    )
    query = ListingQuery(
        archived=False,
        active_since_ms=5.0,
        label="l",
        pinned=True,
        offset=2,
        limit=3,
        match=None,
        sort_by="activity",
    )
    assert [getattr(query, name) for name in ListingQuery._fields] == [
        False,
        5.0,
        "l",
        True,
        2,
        3,
        None,
        "activity",
    ]
    lock = WriteLockSettings(acquire_timeout_ms=1, stale_ms=2, max_hold_ms=3)
    assert (lock.acquire_timeout_ms, lock.stale_ms, lock.max_hold_ms) == (1, 2, 3)
    reuse = Reuse("probe", (("a",),))
    assert (reuse.probe, reuse.now_fields) == ("probe", (("a",),))


def test_assign_refuses_a_wrong_count_of_values() -> None:
    lock = WriteLockSettings(acquire_timeout_ms=1, stale_ms=2, max_hold_ms=3)
    with pytest.raises(ValueError):
        lock._assign(1, 2)
