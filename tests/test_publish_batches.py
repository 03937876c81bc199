"""`publish.publish_batches` (issue 30): the import's moves published with two batches in flight —
one batch linked by the calling thread while a worker removes the previous batch's original
names (`OPENCLAW_IMPORT_PUBLISH=threads`), or one at a time. Per file the A-4 steps and checks are
`publish_batch`'s; what the worker raises reaches the caller and no worker outlives the call."""

from __future__ import annotations

import os
import threading
from contextlib import closing
from pathlib import Path

import pytest

from openclaw_cli.interrupts import InterruptRequested
from openclaw_cli.migration.publish import Identity, Move, publish_batch, publish_batches, reconcile_pair

pytestmark = pytest.mark.timeout(60)


def _moves(root: Path, count: int) -> list[Move]:
    src, dst = root / "sessions", root / "archive"
    src.mkdir(parents=True, exist_ok=True)
    dst.mkdir(exist_ok=True)
    moves = []
    for i in range(count):
        path = src / f"s{i:04d}.jsonl"
        path.write_bytes(f'{{"i":{i}}}\n'.encode())
        os.chmod(path, 0o644)
        st = os.lstat(path)
        ident = Identity(st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, "0" * 64)
        moves.append(Move(str(path), str(dst / f"main.s{i:04d}.jsonl.imported-1"), ident))
    return moves


def _batches(moves: list[Move], size: int) -> list[list[Move]]:
    return [moves[i : i + size] for i in range(0, len(moves), size)]


@pytest.mark.parametrize("two_threads", [True, False])
def test_batches_are_published_as_publish_batch_publishes_them(tmp_path: Path, two_threads: bool) -> None:
    moves = _moves(tmp_path / "a", 10)
    changed = moves[6]  # rewritten after it was hashed: never published
    Path(changed.source).write_bytes(b'{"changed":true}\n')
    labels: list[str] = []
    out = list(
        publish_batches(_batches(moves, 4), checkpoint=labels.append, mode=0o600, two_threads=two_threads)
    )
    assert [batch for batch, _ in out] == _batches(moves, 4)  # in batch order, each once
    done = [m for _, result in out for m in result.done]
    failed = [m for _, result in out for m in result.failed]
    assert done == [m for m in moves if m is not changed] and failed == [changed]
    assert "changed before publication" in (changed.error or "")
    assert sorted(labels) == ["linked"] * 9 + ["unlinked"] * 9
    for move in done:
        st = os.lstat(move.dest)
        assert st.st_nlink == 1 and st.st_mode & 0o777 == 0o600 and not os.path.exists(move.source)
    assert os.path.exists(changed.source) and not os.path.exists(changed.dest)
    # the same store published by `publish_batch`, one batch at a time, gives the same results
    same = _moves(tmp_path / "b", 10)
    Path(same[6].source).write_bytes(b'{"changed":true}\n')
    one_by_one = [publish_batch(batch, mode=0o600) for batch in _batches(same, 4)]
    assert [(len(r.done), len(r.failed)) for r in one_by_one] == [
        (len(r.done), len(r.failed)) for _, r in out
    ]


def test_what_the_worker_raises_reaches_the_caller_and_no_worker_is_left(tmp_path: Path) -> None:
    """Ctrl-C taken at the worker's checkpoint (its first removal): the caller gets the interrupt,
    the worker is joined, and every file is under its old name, its new name, or both names of one
    inode (what A-4 allows at any instant; `reconcile_pair` settles it)."""
    moves = _moves(tmp_path, 12)
    seen: list[str] = []

    def checkpoint(label: str) -> None:
        seen.append(label)
        if label == "unlinked" and threading.current_thread() is not threading.main_thread():
            raise InterruptRequested(2)

    before = threading.active_count()
    published = publish_batches(_batches(moves, 4), checkpoint=checkpoint, mode=0o600)
    with pytest.raises(InterruptRequested), closing(published):
        for _ in published:
            pass
    assert threading.active_count() == before
    assert seen.count("unlinked") == 1
    for move in moves:
        state = reconcile_pair(Path(move.source), Path(move.dest))
        assert state in ("source", "dest", "settled"), (move.source, state)
        here = move.source if os.path.exists(move.source) else move.dest
        assert os.lstat(here).st_nlink == 1


def test_an_error_in_the_callers_loop_joins_the_worker(tmp_path: Path) -> None:
    moves = _moves(tmp_path, 9)
    before = threading.active_count()
    published = publish_batches(_batches(moves, 3), mode=0o600)
    with pytest.raises(RuntimeError), closing(published):
        for _ in published:
            raise RuntimeError("the caller's bookkeeping failed")
    assert threading.active_count() == before
    # batch 0 was handed over once batch 1 was linked and its removals begun: both end published
    for move in moves[:6]:
        assert not os.path.exists(move.source) and os.lstat(move.dest).st_nlink == 1
    for move in moves[6:]:
        assert os.path.exists(move.source) and not os.path.exists(move.dest)
