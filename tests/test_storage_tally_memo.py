"""`openclaw storage` keeps a file store's whole tally between runs (issue 27, speed: 100,000
sessions < 3 s warm): while neither sessions.json nor any entry of the sessions dir changed, no
row is resolved and no transcript looked at, and the document is the one a run that reads every
file makes; anything changed, a young file, another `--top`, a damaged memo: tallied again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.maintenance import storage as st
from openclaw_cli.maintenance import storage_memo
from tests.storage_support import (
    PAST,
    SESSIONS_DIR,
    cli_json,
    du_bytes,
    settle,
    settled_legacy_state,
)


@pytest.fixture
def cached(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return settled_legacy_state(state_dir, monkeypatch)


def _tallies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every store tallied by reading from now on (the function still runs)."""
    calls: list[str] = []
    original = st.tally_sessions

    def counted(store: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(store.path))
        return original(store, *args, **kwargs)

    monkeypatch.setattr(st, "tally_sessions", counted)
    return calls


def _doc(*args: str) -> dict[str, Any]:
    code, doc, err = cli_json("storage", *args)
    assert code == 0, err
    doc.pop("generatedAt")
    return doc


def _read_everything(*args: str) -> dict[str, Any]:
    """The document of a run that reads every row and file (no cache of any kind)."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.storage import storage_report
    from openclaw_cli.paths import resolve_paths

    top = int(args[1]) if args[:1] == ("--top",) else 10
    doc = storage_report(Context.load(resolve_paths()), {"top": top, "noCache": True})
    doc.pop("generatedAt")
    return doc


def _memos(state_dir: Path) -> list[Path]:
    return sorted((state_dir.parent / "cache" / "openclaw-cli" / "storage").glob("*.tally"))


def test_an_unchanged_store_is_answered_from_its_kept_tally(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _tallies(monkeypatch)
    first = _doc()
    assert len(reads) == 1 and len(_memos(state_dir)) == 1
    assert first["topEvents"] and first["byPayload"] and first["byKind"]
    assert any(c["container"] == "orphans" for c in first["byContainer"])
    reads.clear()
    second = _doc()
    assert reads == []  # nothing resolved, nothing read
    assert second == first == _read_everything()
    assert second["total"]["diskBytes"] == pytest.approx(du_bytes(state_dir), rel=0.01)


def test_a_changed_store_file_or_transcript_is_tallied_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _tallies(monkeypatch)
    _doc()
    sessions = state_dir / SESSIONS_DIR
    rows = json.loads((sessions / "sessions.json").read_text())
    grown = sessions / f"{rows['agent:main:main']['sessionId']}.jsonl"
    with grown.open("a") as fh:
        fh.write('{"type":"message","message":{"role":"user","content":"' + "z" * 300_000 + '"}}\n')
    reads.clear()
    after = _doc()
    assert len(reads) == 1
    assert after["topEvents"][0]["key"] == "agent:main:main" and after["topEvents"][0]["bytes"] > 300_000
    assert after == _read_everything()
    # young (written just now): not kept, so read again however often it is asked
    reads.clear()
    assert _doc() == after and len(reads) == 1
    settle(state_dir)
    _doc()
    reads.clear()
    assert _doc() == after and reads == []
    # a row removed from sessions.json (the files unchanged)
    del rows["agent:main:main"]
    (sessions / "sessions.json").write_text(json.dumps(rows, indent=2))
    settle(state_dir)
    reads.clear()
    changed = _doc()
    assert len(reads) == 1 and changed != after and changed == _read_everything()
    # a file added to the sessions dir
    (sessions / "notes.txt").write_text("x" * 5000)
    settle(state_dir)
    reads.clear()
    added = _doc()
    assert len(reads) == 1 and added == _read_everything()


def test_another_top_or_a_damaged_memo_is_tallied_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _tallies(monkeypatch)
    first = _doc()
    reads.clear()
    three = _doc("--top", "3")
    assert len(reads) == 1 and three == _read_everything("--top", "3")
    assert len(three["topEvents"]) == 3
    for memo in _memos(state_dir):
        memo.write_bytes(b"\x00not marshal")
    reads.clear()
    assert _doc() == first and len(reads) == 1
    for memo in _memos(state_dir):
        memo.write_bytes(__import__("marshal").dumps((storage_memo.MEMO_VERSION, "other key", 1, [], ())))
    reads.clear()
    assert _doc() == first and len(reads) == 1


def test_a_symbolic_link_or_a_file_outside_the_listing_is_never_kept(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = state_dir / SESSIONS_DIR
    (sessions / "link.jsonl").symlink_to(sessions / "sessions.json")
    settle(state_dir)
    reads = _tallies(monkeypatch)
    first = _doc()
    assert _memos(state_dir) == []
    reads.clear()
    assert _doc() == first and len(reads) == 1
    (sessions / "link.jsonl").unlink()
    # a row whose transcript is elsewhere under the agent (its changes are not in the listing)
    rows = json.loads((sessions / "sessions.json").read_text())
    key = next(iter(rows))
    elsewhere = state_dir / "agents" / "main" / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / f"{rows[key]['sessionId']}.jsonl"
    old = sessions / f"{rows[key]['sessionId']}.jsonl"
    if old.exists():
        old.rename(moved)
    rows[key]["sessionFile"] = str(moved)
    (sessions / "sessions.json").write_text(json.dumps(rows, indent=2))
    settle(state_dir)
    os.utime(elsewhere, (PAST, PAST))
    reads.clear()
    doc = _doc()
    assert _memos(state_dir) == [] and len(reads) == 1
    reads.clear()
    assert _doc() == doc and len(reads) == 1
    assert doc == _read_everything()


def test_the_walk_over_a_listing_equals_the_walk_that_lists(cached: Path, state_dir: Path) -> None:
    """Disk figures from the listing the tally's memo took (names looked up in it, stats not taken
    again) equal a walk that lists and stats every directory itself."""
    from openclaw_cli.store.legacy.store import LegacyStore

    sessions = state_dir / SESSIONS_DIR
    os.link(next(sessions.glob("*.jsonl")), sessions / "hard.link.bin")  # a hard link: counted once
    store = LegacyStore(sessions / "sessions.json", "main")
    referenced = {str(p) for p in sessions.glob("*.jsonl")} - {str(next(sessions.glob("*.jsonl")))}

    def walk(listed: bool, by_name: bool) -> Any:
        view = st.StoreView(
            "main", "legacy", store.path, sessions, True, set() if by_name else set(referenced)
        )
        listings = {}
        if listed:
            listing = storage_memo.list_dir(str(sessions))
            assert listing is not None
            view.listing = listing
            listings[listing.ident] = listing
            if by_name:
                view.referenced_names = {Path(p).name for p in referenced}
        report = st.StorageReport(root=state_dir)
        st.walk_disk(state_dir, {"main": view}, report, listings)
        return report

    plain = walk(False, False)
    for listed, by_name in ((True, False), (True, True)):
        report = walk(listed, by_name)
        assert report.total == plain.total
        assert report.by_container == plain.by_container
        assert report.by_agent == plain.by_agent
        assert report.orphan_files == plain.orphan_files
        assert report.tombstone_files == plain.tombstone_files
        assert report.unreadable == plain.unreadable
    assert plain.orphan_files  # (the file left out of `referenced` is an orphan)


def test_the_plans_snapshot_from_a_listing_equals_its_own_scan(cached: Path, state_dir: Path) -> None:
    """The cleanup plan's snapshot of the sessions dir made from the listing `storage` took equals
    the one it lists itself: the same regular files in the same order, with the same sizes and
    mtimes; links, directories and prompt blobs as the scan has them."""
    from openclaw_cli.store.files import scan_sessions_dir

    sessions = state_dir / SESSIONS_DIR
    (sessions / "link.jsonl").symlink_to(sessions / "sessions.json")
    (sessions / "sub").mkdir()
    blobs = sessions / "skills-prompts" / "sha256" / "ab"
    blobs.mkdir(parents=True)
    (blobs / ("ab" + "0" * 62 + ".txt")).write_text("prompt")
    (sessions / "x.deleted.2026-01-01T00-00-00.000Z").write_text("old")
    listing = storage_memo.list_dir(str(sessions))
    assert listing is not None
    own = scan_sessions_dir(sessions)
    made = scan_sessions_dir(sessions, listing.regular_files())
    assert list(made.files.items()) == list(own.files.items())
    assert listing.regular_files() is None  # (given once: its mtimes let go)
    assert "link.jsonl" not in made.files and "sub" not in made.files
    assert any(name.startswith("skills-prompts/") for name in made.files)


def test_the_budgets_kept_names_equal_its_two_patterns() -> None:
    """`budget._kept_name` answers the usual name without a search, as the two patterns would."""
    from openclaw_cli.maintenance.budget import _MIGRATED, _PRE_DOCTOR, _kept_name

    names = [
        "a.jsonl",
        "sessions.json",
        "sessions.json.migrated",
        "x.jsonl.migrated.3",
        "x.migrated.jsonl",
        "migrated",
        ".migrated",
        "x.jsonl.pre-doctor-branch-repair-2026-01-02T03-04-05-678Z.bak",
        "x.jsonl.pre-doctor-openai-codex-repair-2026-01-02T03-04-05-678Z.bak",
        "x.jsonl.pre-doctor-branch-repair-2026-01-02.bak",
        "x.pre-doctor-",
        "x.deleted.2026-01-01T00-00-00.000Z",
    ]
    for name in names:
        assert _kept_name(name) == (not (_MIGRATED.search(name) or _PRE_DOCTOR.search(name))), name


def test_a_second_agents_tally_is_kept_after_the_firsts(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two legacy agents: each store's memo is keyed by the state the tally is in before it, so the
    second store's kept tally follows the first's; one agent changed: both tallied again in order
    (the first's new state changes the second's key), and every document is a read-everything one."""
    import shutil

    sessions = state_dir / SESSIONS_DIR
    other = state_dir / "agents" / "ops" / "sessions"
    other.mkdir(parents=True)
    rows = json.loads((sessions / "sessions.json").read_text())
    moved = {}
    for i, (key, row) in enumerate(rows.items()):
        if i % 2:
            continue
        name = f"{row['sessionId']}.jsonl"
        if (sessions / name).exists():
            shutil.copy2(sessions / name, other / name)
        moved[key.replace("agent:main:", "agent:ops:")] = {**row, "sessionFile": name}
    (other / "sessions.json").write_text(json.dumps(moved, indent=2))
    settle(state_dir)
    for path in [*other.rglob("*"), other]:
        os.utime(path, (PAST, PAST))
    reads = _tallies(monkeypatch)
    first = _doc()
    assert len(reads) == 2 and len(_memos(state_dir)) == 2
    assert [s["agentId"] for s in first["stores"]] == ["main", "ops"] or len(first["stores"]) == 2
    reads.clear()
    assert _doc() == first and reads == []
    assert first == _read_everything()
    with (sessions / next(iter(n for n in os.listdir(sessions) if n.endswith(".jsonl")))).open("a") as fh:
        fh.write('{"type":"message","message":{"role":"user","content":"more"}}\n')
    settle(state_dir)
    reads.clear()
    changed = _doc()
    assert len(reads) == 2 and changed != first
    assert changed == _read_everything()
