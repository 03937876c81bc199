"""`openclaw storage` keeps each file store's rows' facts between runs (issue 27, speed: 100,000
sessions < 3 s warm): an unchanged sessions.json is not parsed again and the document is the one a
run that parses it makes; a changed, damaged, foreign or racily written one is parsed again."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.maintenance import storage_facts
from tests.storage_support import SESSIONS_DIR, cli_json, make_state

_PAST = time.time() - 3600  # written an hour ago: settled, so its facts are kept


def _state(state_dir: Path) -> Path:
    """The fixture's legacy store in OpenClaw's layout (what the row cutter reads), with snapshot
    fields and settings under which the plan archives, prunes and caps; written an hour ago."""
    make_state("legacy", state_dir)
    store = state_dir / SESSIONS_DIR / "sessions.json"
    rows = json.loads(store.read_text())
    keys = list(rows)
    rows[keys[0]]["systemPromptReport"] = {"chars": 1234, "text": "x" * 500}
    rows[keys[2]]["sessionDiffBaseline"] = "b" * 300
    store.write_text(json.dumps(rows, indent=2))
    os.utime(store, (_PAST, _PAST))
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"pruneAfter": "3d", "maxEntries": 4}}})
    )
    return store


def _doc() -> dict[str, Any]:
    code, doc, err = cli_json("storage")
    assert code == 0, err
    doc.pop("generatedAt")
    return doc


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every cut of a sessions.json into rows from now on (the method still runs)."""
    from openclaw_cli.store.legacy.store import LegacyStore

    calls: list[str] = []
    original = LegacyStore._split_rows

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(self.path))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LegacyStore, "_split_rows", counted)
    return calls


@pytest.fixture
def cached(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "cache"))
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.9.6")
    return _state(state_dir)


def _kept(state_dir: Path) -> list[Path]:
    return sorted((state_dir.parent / "cache" / "openclaw-cli" / "storage").glob("*.facts"))


def test_an_unchanged_store_is_not_parsed_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    first = _doc()
    assert len(reads) == 1 and len(_kept(state_dir)) == 1
    assert first["cleanupPlanned"] and [r for r in first["reclaimable"] if r.get("files")]
    reads.clear()
    asked = _asked(monkeypatch)
    assert _doc() == first
    assert reads == []  # the facts came from the cache
    # and with them each row's storage kind and its key's shape (the archive-in-place planner's
    # key-only verdicts): no key parsed again by the tally or the plan
    assert asked == []


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Keys whose storage kind or key shape is worked out from now on."""
    from openclaw_cli.maintenance import archiving
    from openclaw_cli.maintenance import storage as st

    asked: list[str] = []
    shape, kind = archiving._key_shape, st.storage_kind

    def counted_shape(key: str) -> int:
        asked.append(key)
        return shape(key)

    def counted_kind(key: str, entry: Any) -> str:
        asked.append(key)
        return kind(key, entry)

    monkeypatch.setattr(archiving, "_key_shape", counted_shape)
    monkeypatch.setattr(st, "storage_kind", counted_kind)
    return asked


def test_key_shapes_given_to_the_planner_plan_the_same(cached: Path) -> None:
    """`plan_cleanup(key_shapes=...)` (what storage keeps) plans exactly what it plans alone."""
    from openclaw_cli.behavior import BEHAVIOR_2026_9_6
    from openclaw_cli.config.resolve import MaintenanceSettings
    from openclaw_cli.maintenance.archiving import key_shape
    from openclaw_cli.maintenance.plan import plan_cleanup

    entries = json.loads(cached.read_text())
    settings = MaintenanceSettings(prune_after_ms=3 * 86_400_000, max_entries=4)
    behavior = BEHAVIOR_2026_9_6
    now = 1_800_000_000_000
    alone = plan_cleanup(entries, settings, now_ms=now, behavior=behavior)
    shapes = {key: key_shape(key) for key in entries}
    given = plan_cleanup(entries, settings, now_ms=now, behavior=behavior, key_shapes=shapes)
    assert (given.actions, given.archived, given.removed) == (alone.actions, alone.archived, alone.removed)
    assert alone.archived or alone.removed


def test_a_changed_store_is_parsed_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    _doc()
    rows = json.loads(cached.read_text())
    del rows[next(iter(rows))]
    cached.write_text(json.dumps(rows, indent=2))
    os.utime(cached, (_PAST, _PAST))  # (same mtime as before: the size and ctime differ)
    reads.clear()
    after = _doc()
    assert len(reads) == 1
    assert sum(s["sessions"] for s in after["stores"]) == len(rows)
    # the same document as a run that keeps nothing
    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "other-cache"))
    assert _doc() == after


def test_a_damaged_or_foreign_cache_is_made_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _doc()
    (kept,) = _kept(state_dir)
    reads = _reads(monkeypatch)
    for damage in (b"\x00garbage", kept.read_bytes()[:-40], b""):
        kept.write_bytes(damage)
        assert _doc() == first
    assert len(reads) == 3
    # facts made by other code (store/facts.py changed since) are not used
    monkeypatch.setattr(storage_facts, "_code_digest", lambda: "other code")
    reads.clear()
    assert _doc() == first
    assert len(reads) == 1


def test_a_store_written_in_the_last_seconds_is_not_kept(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.utime(cached, None)  # now: could be written again within the clock's resolution
    reads = _reads(monkeypatch)
    first = _doc()
    assert _kept(state_dir) == []
    assert _doc() == first
    assert len(reads) == 2


def test_no_cache_dir_costs_only_the_reading(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _doc()
    blocked = state_dir.parent / "blocked"
    blocked.write_text("a file where the cache dir would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert _doc() == first


def test_the_preserved_keys_are_worked_out_only_when_asked(
    cached: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`storage`'s plan never reads `CleanupPlan.preserved_keys` (a pass over every row): it is
    worked out when first asked, and is then the set worked out at once."""
    from openclaw_cli.behavior import BEHAVIOR_2026_9_6
    from openclaw_cli.config.resolve import MaintenanceSettings
    from openclaw_cli.maintenance.plan import Preserver, plan_cleanup

    calls: list[int] = []
    original = Preserver.preserved_among

    def counted(self: Preserver, entries: Any) -> frozenset[str]:
        calls.append(len(entries))
        return original(self, entries)

    monkeypatch.setattr(Preserver, "preserved_among", counted)
    _doc()
    assert calls == []
    entries = json.loads(cached.read_text())
    settings = MaintenanceSettings(prune_after_ms=3 * 86_400_000, max_entries=4)
    plan = plan_cleanup(entries, settings, now_ms=1_800_000_000_000, behavior=BEHAVIOR_2026_9_6)
    assert calls == []
    expected = original(Preserver(entries), entries)
    assert plan.preserved_keys == expected and expected
    assert plan.preserved_keys is plan.preserved_keys  # (once)


def test_the_sweep_plans_as_before_when_referenced_transcripts_are_left_out_of_its_sort() -> None:
    """`plan_unreferenced_sweep` leaves the transcripts a row keeps alive (or another store
    protects) out before ordering the rest: the same scanned count, removals and order as the
    rule over every file in (mtime, name) order."""
    from openclaw_cli.maintenance.artifacts import DirFile, DirSnapshot, plan_unreferenced_sweep
    from openclaw_cli.store.files import TRANSCRIPT_KINDS

    now = 1_800_000_000_000
    snap = DirSnapshot(Path("/nonexistent-sessions"))
    names = []
    for i in range(60):
        name = f"{i:08x}-aaaa-4bbb-8ccc-{i:012x}.jsonl"
        names.append(name)
        age = (i * 7919) % 50 * 86_400_000  # old and young, ties included
        snap.files[name] = DirFile(name, 100 + i, now - age)
    referenced, protected = set(names[::3]), set(names[1::5])
    for transcripts in (True, False):
        plan = plan_unreferenced_sweep(
            snap,
            referenced=referenced,
            protected=protected,
            exclude={names[2]},
            referenced_hashes=(),
            older_than_ms=7 * 86_400_000,
            now_ms=now,
            transcripts=transcripts,
        )
        files = sorted(
            (
                f
                for f in snap.files.values()
                if f.name != names[2] and snap.kind(f.name) not in (None, "archive")
            ),
            key=lambda f: (f.mtime_ms, f.name),
        )
        assert plan.scanned == len(files)
        expected = [
            f.name
            for f in files
            if (
                snap.kind(f.name) not in TRANSCRIPT_KINDS
                or (transcripts and f.name not in referenced and f.name not in protected)
            )
            and f.mtime_ms <= now - 7 * 86_400_000
        ]
        assert [a.name for a in plan.removals] == expected
        assert bool(expected) == transcripts
