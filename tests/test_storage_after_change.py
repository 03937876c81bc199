"""`openclaw storage` after a change (issue 27, 100,000 sessions < 3 s): the kept whole tally no
longer matches, the rows' facts and the files' figures are still kept. The tally then takes each
transcript's stats from the listing of the sessions dir the run already took (no lstat per file)
and the disk walk takes that directory from it too; whatever changed between runs, the document is
the one a run that reads everything makes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.maintenance import storage as st
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


def _drop_tally(state_dir: Path) -> None:
    for memo in (state_dir.parent / "cache" / "openclaw-cli" / "storage").glob("*.tally"):
        memo.unlink()


def _doc() -> dict[str, Any]:
    code, doc, err = cli_json("storage")
    assert code == 0, err
    doc.pop("generatedAt")
    return doc


def _from_scratch(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> dict[str, Any]:
    """The whole command's document with an empty cache dir of its own (reads every file)."""
    with monkeypatch.context() as m:
        fresh = state_dir.parent / f"fresh-{time.monotonic_ns()}"
        m.setenv("XDG_CACHE_HOME", str(fresh))
        return _doc()


def _transcripts(state_dir: Path) -> list[Path]:
    sessions = state_dir / SESSIONS_DIR
    rows = json.loads((sessions / "sessions.json").read_text())
    out = []
    for row in rows.values():
        path = sessions / f"{row['sessionId']}.jsonl"
        if path.exists() and path not in out:
            out.append(path)
    return out


def _lstats(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> list[str]:
    """Every lstat `maintenance/storage.py` (the tally's figures, the disk walk) takes of a
    transcript of the sessions dir from now on (a row resolved by the store itself, e.g. its file
    under another name, is looked at there as before)."""
    calls: list[str] = []
    sessions = str(state_dir / SESSIONS_DIR)

    class Counted:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
            text = os.fsdecode(path)
            if text.startswith(sessions) and text.endswith(".jsonl"):
                calls.append(text)
            return os.lstat(path, *args, **kwargs)

    monkeypatch.setattr(st, "os", Counted())
    return calls


def test_after_a_change_unchanged_transcripts_are_not_stated_again(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _doc()  # (keeps the facts, the figures and the tally)
    transcripts = _transcripts(state_dir)
    assert len(transcripts) >= 3
    _drop_tally(state_dir)
    lstats = _lstats(monkeypatch, state_dir)
    second = _doc()
    assert lstats == []  # every transcript's stats from the run's own listing
    assert second == first
    # one transcript grown: that one is looked at (and read), none of the others
    with transcripts[0].open("a") as fh:
        fh.write('{"type":"message","message":{"role":"user","content":"more words"}}\n')
    os.utime(transcripts[0], (PAST + 60, PAST + 60))
    _drop_tally(state_dir)
    lstats.clear()
    third = _doc()
    assert lstats == [str(transcripts[0])]
    monkeypatch.setattr(st, "os", os)
    assert third == _from_scratch(monkeypatch, state_dir)
    assert third["total"]["diskBytes"] == pytest.approx(du_bytes(state_dir), rel=0.01)


def test_changes_between_runs_give_the_from_scratch_document(
    cached: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each change, with the kept tally dropped (facts and figures kept) and with it kept: the
    same document as a run with an empty cache."""
    sessions = state_dir / SESSIONS_DIR
    first = _doc()
    biggest = sessions / f"{first['topEvents'][0]['sessionId']}.jsonl"
    transcripts = [biggest, *(p for p in _transcripts(state_dir) if p != biggest)]

    def changes() -> Any:
        # a tool result made text (same size), its mtime put back: only its ctime says so
        changed = next(p for p in transcripts if b'"role":"toolResult"' in p.read_bytes())
        stamp = changed.stat()
        changed.write_bytes(changed.read_bytes().replace(b'"role":"toolResult"', b'"role":"toolResulx"', 1))
        os.utime(changed, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert changed.stat().st_size == stamp.st_size
        yield "same size and mtime, other content"
        # grown by a big line (a new biggest event)
        with transcripts[2].open("a") as fh:
            fh.write('{"type":"message","message":{"role":"user","content":"' + "z" * 200_000 + '"}}\n')
        settle(state_dir)
        yield "grown"
        # a transcript removed, its row kept (missing), and an orphan added
        transcripts[3].unlink()
        (sessions / "99999999-1111-4222-8333-444444444444.jsonl").write_text('{"type":"session"}\n')
        settle(state_dir)
        yield "removed and orphan"
        # a row removed from sessions.json (its transcript becomes an orphan)
        rows = json.loads((sessions / "sessions.json").read_text())
        del rows[next(iter(rows))]
        (sessions / "sessions.json").write_text(json.dumps(rows, indent=2))
        settle(state_dir)
        yield "row removed"
        # a transcript replaced by a link (never followed, never kept)
        transcripts[4].unlink()
        transcripts[4].symlink_to(transcripts[0])
        settle(state_dir)
        yield "symbolic link"
        # written just now (racily clean: read, not kept)
        with transcripts[0].open("a") as fh:
            fh.write('{"type":"compaction","summary":"s"}\n')
        yield "young"

    assert len(transcripts) >= 5
    for what in changes():
        expected = _from_scratch(monkeypatch, state_dir)
        if what == "same size and mtime, other content":
            assert expected != first  # (the change shows in the document)
        _drop_tally(state_dir)
        assert _doc() == expected, what
        assert _doc() == expected, what  # (and with whatever the run before kept)


def test_check_listing_keeps_only_records_the_listing_shows_unchanged(cached: Path, state_dir: Path) -> None:
    """`FileFigures.check_listing`: a record stays when its file is listed with its size, mtime,
    ctime and inode; changed: dropped; not listed: set aside for an lstat."""
    from openclaw_cli.maintenance.storage_memo import list_dir

    sessions = state_dir / SESSIONS_DIR
    transcripts = _transcripts(state_dir)
    _doc()
    cache = state_dir.parent / "cache" / "openclaw-cli"
    kept = st.FileFigures(str(sessions), cache)
    assert {str(sessions / n) for n in kept.old} >= {str(p) for p in transcripts}
    os.utime(transcripts[0], (PAST + 5, PAST + 5))  # (mtime changed)
    listing = list_dir(str(sessions))
    assert listing is not None
    files = st.FileFigures(str(sessions), cache)
    files.old["elsewhere/x.jsonl"] = next(iter(files.old.values()))
    assert files.check_listing(listing, listing.index())
    assert transcripts[0].name not in files.old
    assert {p.name for p in transcripts[1:]} <= set(files.old)
    assert set(files.unlisted) == {"elsewhere/x.jsonl"}
    other = list_dir(str(state_dir))
    assert other is not None and not st.FileFigures(str(sessions), cache).check_listing(other, other.index())
