"""The legacy store's compaction writes (`commit_compaction`, `finish_rotation`, `commit_max_lines`):
the protocol (locks, order, crash safety) is in `store/compaction_common.py`'s docstring.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.errors import InvalidDataError, NotFoundError
from openclaw_cli.fsio import atomic_file, fsync_dir
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.base import ReadIssue, TranscriptLine
from openclaw_cli.store.compaction_common import (
    Checkpoints,
    archive_json,
    archive_snapshot,
    can_rotate,
    checkpoint_record,
    expected_context,
    successor_for,
    with_checkpoint,
)
from openclaw_cli.store.rewrite import (
    entry_after_compaction,
    entry_after_max_lines,
    parse_lines,
    rebuilt_context,
    successor_file_name,
)
from openclaw_cli.store.snapshot import (
    PersistResult,
    SnapshotChanged,
    TranscriptSnapshot,
    file_signature,
)

if TYPE_CHECKING:
    from openclaw_cli.store.legacy.store import LegacyStore


def _verify(snapshot: TranscriptSnapshot) -> dict[str, Any]:
    store = snapshot.store
    path = snapshot.path
    assert path is not None
    try:
        current = file_signature(os.lstat(path))
    except OSError:
        raise SnapshotChanged(snapshot.key) from None
    if current != snapshot.signature:
        raise SnapshotChanged(snapshot.key)
    row = store.get_entry(snapshot.key)
    if row is None or row.get("sessionId") != snapshot.entry.get("sessionId"):
        raise SnapshotChanged(snapshot.key)
    return row


def _update_row(
    snapshot: TranscriptSnapshot,
    mutate: Callable[[dict[str, Any]], dict[str, Any] | None],
    lock_settings: Any,
    warnings: list[str],
) -> dict[str, Any] | None:
    """Read-modify-write of the row under the sessions.json lock, so concurrent row changes survive."""
    from openclaw_cli.store.lock import transcript_lock

    store = cast("LegacyStore", snapshot.store)  # this path writes legacy rows only
    with transcript_lock(store.path, lock_settings, allow_reentrant=True):
        current = store.get_entry(snapshot.key)
        if current is None or current.get("sessionId") != snapshot.entry.get("sessionId"):
            warnings.append(f"session row {snapshot.key} changed meanwhile; its bookkeeping was not updated")
            return None
        updated = mutate(current)
        if updated is None:
            return None
        store.upsert_entries({snapshot.key: updated}, lock_settings=lock_settings)
        return updated


def _write_new_file(path: Path, lines: Sequence[str | bytes], cp: CrashPoints, *, replace: bool) -> None:
    """Temp file `.<name>.<pid>.<uuid>.tmp` (exclusive create, 0600), fsync, rename, fsync dir."""
    data = b"".join((r.encode("utf-8") if isinstance(r, str) else r) + b"\n" for r in lines)
    with atomic_file(path, replace=replace, before_publish=cp) as fh:
        view = memoryview(data)
        while view:
            view = view[fh.write(view) :]
    cp()


def _session_file_value(old: Any, new_path: Path) -> str:
    """Keep the row's `sessionFile` style: a bare name stays a bare name, otherwise absolute."""
    if isinstance(old, str) and old and "/" not in old and "\\" not in old:
        return new_path.name
    return str(new_path)


@contextmanager
def _locks(snapshot: TranscriptSnapshot, lock_settings: Any) -> Iterator[None]:
    """The transcript's write lock, then `sessions.json`'s: both are held before anything is
    written, so a busy row store fails the whole compaction instead of half of it."""
    from openclaw_cli.store.lock import transcript_lock

    assert snapshot.path is not None
    with (
        transcript_lock(snapshot.path, lock_settings),
        transcript_lock(snapshot.store.path, lock_settings, allow_reentrant=True),
    ):
        yield


def commit_compaction(
    snapshot: TranscriptSnapshot,
    comp: dict[str, Any],
    *,
    rotate: bool,
    now_ms: int,
    lock_settings: Any,
    reason: str = "manual",
) -> PersistResult:
    from openclaw_cli.store.transcript import append_jsonl

    store = snapshot.store
    path = snapshot.path
    if path is None:
        raise NotFoundError(f"Session {snapshot.key} has no transcript file; nothing to compact.")
    cp = Checkpoints()
    tokens_after = comp.get("tokensAfter")
    result = PersistResult(snapshot.session_id, None)
    with _locks(snapshot, lock_settings):
        row = _verify(snapshot)
        cp()
        successor_lines: list[str] | None = None
        new_sid = str(uuid.uuid4())
        rotating = rotate and can_rotate(row, result.warnings)
        if rotating:
            # the entry names the successor it is about to get: a kill between the append and the
            # row update is finished by the next run (finish_rotation), never left half-done
            details: dict[str, Any] = comp["details"] if isinstance(comp.get("details"), dict) else {}
            comp["details"] = {**details, SUCCESSOR_KEY: new_sid}
        line = dumps_compact(comp)
        if rotating:
            all_lines, expected = expected_context(snapshot, line, comp)
            try:
                successor_lines = successor_for(
                    snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=str(path)
                )
            except InvalidDataError as exc:
                result.warnings.append(f"successor transcript not created: {exc.message}")
            if successor_lines is not None:
                result.archive = archive_json(archive_snapshot(store, snapshot, now_ms))
                cp()
        append_jsonl(path, [line], lock_settings=lock_settings)
        cp()
        new_path: Path | None = None
        if successor_lines is not None:
            new_path = path.parent / successor_file_name(now_ms, new_sid)
            _write_new_file(new_path, successor_lines, cp, replace=False)
            reread = parse_lines([ln.raw for ln in _reread(new_path)])
            if rebuilt_context(reread) != expected:
                os.unlink(new_path)
                fsync_dir(new_path.parent)
                result.warnings.append("successor transcript failed validation after writing; not used")
                new_path = None
        comp_id = comp.get("id")

        def mutate(current: dict[str, Any]) -> dict[str, Any] | None:
            updated = entry_after_compaction(current, tokens_after=tokens_after, now_ms=now_ms)
            if new_path is None:
                return updated
            pre = {
                "sessionId": snapshot.session_id,
                "sessionFile": str(path),
                "leafId": comp.get("parentId"),
                "entryId": comp_id,
            }
            post = {"sessionId": new_sid, "sessionFile": str(new_path), "leafId": comp_id, "entryId": comp_id}
            with_record = with_checkpoint(
                updated,
                checkpoint_record(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            if with_record is None or not can_rotate(current, result.warnings):
                os.unlink(new_path)  # unreachable under the locks; never leave a successor unreferenced
                return updated
            with_record["sessionId"] = new_sid
            with_record["sessionFile"] = _session_file_value(current.get("sessionFile"), new_path)
            result.session_id = new_sid
            result.successor = {
                "sessionId": new_sid,
                "sessionFile": str(new_path),
                "previousSessionId": snapshot.session_id,
                "previousSessionFile": str(path),
                "lines": len(successor_lines or []),
            }
            return with_record

        result.entry = _update_row(snapshot, mutate, lock_settings, result.warnings)
        cp()
    cp.finish()
    return result


SUCCESSOR_KEY = "successorSessionId"  # compaction details: the successor a rotation creates


def pending_rotation(snapshot: TranscriptSnapshot) -> dict[str, Any] | None:
    """The transcript's last entry when it is a compaction whose successor never became the row's
    transcript (a kill between the append and the row update), else None."""
    if snapshot.path is None or not snapshot.lines:
        return None
    last = snapshot.lines[-1].obj
    if not isinstance(last, dict) or last.get("type") != "compaction":
        return None
    details = last.get("details")
    new_sid = details.get(SUCCESSOR_KEY) if isinstance(details, dict) else None
    if not isinstance(new_sid, str) or new_sid == snapshot.entry.get("sessionId"):
        return None
    from openclaw_cli.ids import is_valid_session_id

    return last if is_valid_session_id(new_sid) else None


def _adopt_successor(
    directory: Path, new_sid: str, parent: Path, expected: list[dict[str, Any]]
) -> Path | None:
    """A successor file the killed run already wrote, when it is complete and rebuilds the context."""
    for candidate in sorted(directory.glob(f"*_{new_sid}.jsonl")):
        try:
            lines = _reread(candidate)
        except (InvalidDataError, OSError):
            continue
        header = lines[0].obj if lines else None
        if (
            isinstance(header, dict)
            and header.get("parentSession") == str(parent)
            and rebuilt_context(parse_lines([ln.raw for ln in lines])) == expected
        ):
            return candidate
    return None


def finish_rotation(
    snapshot: TranscriptSnapshot,
    comp: dict[str, Any],
    *,
    now_ms: int,
    lock_settings: Any,
    reason: str = "manual",
) -> PersistResult:
    """Complete a rotation a kill interrupted (issue 13 case 8): the compaction entry is in the
    transcript; the successor it names is adopted when the killed run wrote it completely, else
    written now; then the row points at it. The row's compaction bookkeeping is applied unless the
    killed run's row update already did it."""
    store = snapshot.store
    path = snapshot.path
    assert path is not None
    cp = Checkpoints()
    new_sid = comp["details"][SUCCESSOR_KEY]
    result = PersistResult(snapshot.session_id, None)
    with _locks(snapshot, lock_settings):
        row = _verify(snapshot)
        if not can_rotate(row, result.warnings):
            return result
        all_lines = list(snapshot.lines)
        expected = rebuilt_context(all_lines)
        new_path = _adopt_successor(path.parent, new_sid, path, expected)
        successor_count = 0
        if new_path is None:
            successor_lines = successor_for(
                snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=str(path)
            )
            result.archive = archive_json(archive_snapshot(store, snapshot, now_ms))
            cp()
            new_path = path.parent / successor_file_name(now_ms, new_sid)
            _write_new_file(new_path, successor_lines, cp, replace=False)
            successor_count = len(successor_lines)
        else:
            successor_count = len(_reread(new_path))
        tokens_after = comp.get("tokensAfter")
        booked = (
            tokens_after is not None
            and row.get("totalTokens") == tokens_after
            and row.get("totalTokensFresh") is True
        )
        comp_id = comp.get("id")

        def mutate(current: dict[str, Any]) -> dict[str, Any] | None:
            updated = (
                current
                if booked
                else entry_after_compaction(current, tokens_after=tokens_after, now_ms=now_ms)
            )
            pre = {
                "sessionId": snapshot.session_id,
                "sessionFile": str(path),
                "leafId": comp.get("parentId"),
                "entryId": comp_id,
            }
            post = {"sessionId": new_sid, "sessionFile": str(new_path), "leafId": comp_id, "entryId": comp_id}
            with_record = with_checkpoint(
                updated,
                checkpoint_record(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            if with_record is None:
                return None
            with_record["sessionId"] = new_sid
            with_record["sessionFile"] = _session_file_value(current.get("sessionFile"), new_path)
            return with_record

        result.entry = _update_row(snapshot, mutate, lock_settings, result.warnings)
        if result.entry is not None and result.entry.get("sessionId") == new_sid:
            result.session_id = new_sid
            result.successor = {
                "sessionId": new_sid,
                "sessionFile": str(new_path),
                "previousSessionId": snapshot.session_id,
                "previousSessionFile": str(path),
                "lines": successor_count,
                "resumed": True,
            }
        cp()
    cp.finish()
    return result


def _reread(path: Path) -> list[TranscriptLine]:
    from openclaw_cli.store.transcript import iter_jsonl

    issues: list[ReadIssue] = []
    lines = list(iter_jsonl(path, issues=issues))
    if issues:
        raise InvalidDataError(f"successor transcript {path} is not readable: {issues[0]}")
    return lines


def commit_max_lines(
    snapshot: TranscriptSnapshot,
    kept: list[bytes],
    *,
    now_ms: int,
    lock_settings: Any,
    clears_usage: bool = False,
) -> PersistResult:
    path = snapshot.path
    if path is None:
        raise NotFoundError(f"Session {snapshot.key} has no transcript file; nothing to compact.")
    cp = Checkpoints()
    result = PersistResult(snapshot.session_id, None)
    with _locks(snapshot, lock_settings):
        _verify(snapshot)
        cp()
        result.archive = archive_json(archive_snapshot(snapshot.store, snapshot, now_ms))
        cp()
        _write_new_file(path, kept, cp, replace=True)
        result.entry = _update_row(
            snapshot,
            lambda current: entry_after_max_lines(current, now_ms=now_ms, clears_usage=clears_usage),
            lock_settings,
            result.warnings,
        )
        cp()
    cp.finish()
    return result
