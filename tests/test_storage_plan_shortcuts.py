"""Issue 27 (stop 40): the shortcuts `openclaw storage`'s plan and tally take at 100,000 sessions
give the general rule's answers — the removed rows' unreferenced session ids worked out when first
asked, a `<id>.jsonl` name's kind answered inline (`classify`'s first rule), a listing of regular
files indexed without a look at each mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.maintenance import plan as plan_mod
from openclaw_cli.maintenance.storage_memo import list_dir
from openclaw_cli.store.files import classify

NOW = 1_796_000_000_000
DAY = 86_400_000
SETTINGS = SimpleNamespace(
    mode="enforce",
    prune_after_ms=30 * DAY,
    max_entries=None,
    reset_archive_retention_ms=None,
    max_disk_bytes=None,
    high_water_bytes=None,
    model_run_prune_after_ms=DAY,
)


def test_a_plans_unreferenced_session_ids_are_worked_out_when_first_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = plan_mod._unreferenced_ids
    monkeypatch.setattr(plan_mod, "_unreferenced_ids", lambda *args: calls.append(1) or real(*args))
    stale, fresh = NOW - 40 * DAY, NOW - DAY
    entries = {
        "agent:main:telegram:direct:a": {"sessionId": "shared", "updatedAt": stale},
        "agent:main:telegram:direct:b": {"sessionId": "shared", "updatedAt": fresh},
        "agent:main:telegram:direct:c": {"sessionId": "gone-1", "updatedAt": stale},
        "agent:main:telegram:direct:d": {"sessionId": "gone-2", "updatedAt": stale},
        "agent:main:telegram:direct:e": {"sessionId": "gone-1", "updatedAt": stale},
        "agent:main:telegram:direct:f": {"sessionId": " ", "updatedAt": stale},
    }
    plan = plan_mod.plan_cleanup(entries, SETTINGS, now_ms=NOW)
    assert plan.removed and calls == []  # (not worked out by planning)
    # the removed rows' ids no kept row references, in removal order, once each
    assert plan.unreferenced_session_ids == ["gone-1", "gone-2"]
    assert plan.unreferenced_session_ids is plan.unreferenced_session_ids and calls == [1]
    nothing = plan_mod.plan_cleanup(
        {"agent:main:main": {"sessionId": "m", "updatedAt": NOW}}, SETTINGS, now_ms=NOW
    )
    assert nothing.unreferenced_session_ids == [] and calls == [1]


_NAME_PART = st.text(alphabet="ab0-_.:/@", min_size=0, max_size=8)


@settings(max_examples=600, deadline=None)
@given(
    head=_NAME_PART,
    tail=st.sampled_from(
        ["", ".jsonl", ".trajectory.jsonl", ".deleted.2026-01-01T00-00-00.000Z", ".jsonl.tmp"]
    ),
    store_name=st.sampled_from(["sessions.json", "store.json", "a.jsonl"]),
)
def test_the_inline_transcript_rule_is_classifys_first_rule(head: str, tail: str, store_name: str) -> None:
    """The sweep and the removed rows' files answer a name's kind inline when it is
    `<no dot, no slash>.jsonl` (`artifacts.plan_unreferenced_sweep`, `_removed_entry_files`):
    `classify` says "transcript" for every such name, whatever the store's name."""
    name = head + tail
    if name.endswith(".jsonl") and "." not in name[:-6] and "/" not in name:
        assert classify(name, store_name) == "transcript"


def test_a_listings_index_and_plainness_follow_each_entrys_mode(tmp_path: Path) -> None:
    """`Listing.index()`/`plain()` answer a directory of regular files alone from its least and
    greatest mode; any other entry (a link, a directory, a fifo) takes the per-entry rule."""
    tmp_path = tmp_path / "listed"
    tmp_path.mkdir()
    for name in ("a.jsonl", "b.jsonl", "sessions.json"):
        (tmp_path / name).write_text("x")
    only_files = list_dir(str(tmp_path))
    assert only_files is not None and only_files.index() == dict.fromkeys(only_files.names, "file")
    assert only_files.plain()
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "pipe")
    mixed = list_dir(str(tmp_path))
    assert mixed is not None
    kinds = {stat.S_IFREG: "file", stat.S_IFLNK: "link"}
    expected = {n: kinds.get(os.lstat(tmp_path / n).st_mode & 0o170000, "other") for n in mixed.names}
    assert mixed.index() == expected
    assert expected["link.jsonl"] == "link" and expected["sub"] == expected["pipe"] == "other"
    assert not mixed.plain()
    (tmp_path / "link.jsonl").unlink()
    (tmp_path / "pipe").unlink()
    with_dir = list_dir(str(tmp_path))
    assert with_dir is not None and with_dir.plain() and with_dir.index()["sub"] == "other"
