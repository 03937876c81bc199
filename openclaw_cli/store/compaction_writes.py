"""Writing a compaction into a store (compaction-lifecycle.md §4.8, §4.17; spec D6, D12, D15, D16):
the store write protocol's `commit_compaction` and `commit_max_lines`. The compaction domain
plans and summarises; the transcript rewrites (`rewrite`) are pure; this module writes the result
of a snapshot (`snapshot`):

* **append** (R4.8.1): ONE `compaction` entry whose parent is the current leaf. Legacy stores
  append under OpenClaw's transcript write lock (D12); our SQLite store in one `BEGIN IMMEDIATE`
  transaction. The original lines are never modified. The row then gets R4.8.3's bookkeeping
  (`compactionCount + 1`, `totalTokens = tokensAfter` with `totalTokensFresh: true`, `updatedAt`).
* **rotate** (`truncateAfterCompaction`, R4.17): after the append, a successor transcript built
  by R4.17.2 becomes the session's active one. Legacy: a new file
  `<ISO ts, ':' and '.' -> '-'>_<newId>.jsonl` (header with `parentSession`), written atomically,
  re-read and validated, then the row points at it and `compactionCheckpoints[]` links the old
  transcript, which stays in place. SQLite (D16): a successor window (new `sessionId`, reason
  `compaction`) holding the same lines, created with the entry update in the append's transaction;
  the previous window stays readable. The full original is archived first (verified zstd, D6.2).
* **max lines** (OpenClaw's `sessions.compact {maxLines}`): keep the header and the last N-1
  lines, the first kept event re-rooted to `parentId: null`. The full original is archived first
  (D15: the dropped prefix leaves the store only through a verified archive). Legacy: the file is
  replaced atomically; SQLite: a successor window, as above.

Concurrency: the snapshot is read without a lock; the write phase takes the lock (or the
transaction), checks that the transcript and the row are unchanged since the snapshot and raises
`SnapshotChanged` otherwise, so the caller can re-plan. A compaction therefore never lands on a
leaf that is no longer the leaf, and no lock is held while a summary provider is called.

Crash safety (D6.4): every step is atomic and ordered so that, killed at any instant, the row
names either the old transcript (complete, possibly ending in the new compaction entry) or a
complete, validated successor; the old transcript and the archive keep the full history. A
successor file orphaned by a kill before the row update is an unreferenced primary transcript
(cleanup archives it, never deletes it).
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
from openclaw_cli.store.base import ReadIssue, SessionStore, TranscriptLine
from openclaw_cli.store.rewrite import (
    build_successor_lines,
    entry_after_compaction,
    entry_after_max_lines,
    iso_ms,
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
    from openclaw_cli.store.sqlite.store import SqliteStore

CHECKPOINT_CAP = 25  # compactionCheckpoints kept per session (R4.17.3)
ARCHIVE_REASON = "bak"  # `<sid>.jsonl.bak.<ts>.zst`: maintenance.md §7.2's "legacy compact backups"

CRASH_ENV = "OPENCLAW_COMPACT_CRASH_AT"  # crash-test hook (openclaw_cli/crashpoints.py)
CRASH_COUNT_ENV = "OPENCLAW_COMPACT_CRASH_COUNT"


def Checkpoints() -> CrashPoints:  # noqa: N802 - kept name for callers
    return CrashPoints("OPENCLAW_COMPACT")


# ---- results -------------------------------------------------------------------------------------------


def _archive(store: SessionStore, snapshot: TranscriptSnapshot, now_ms: int) -> Any:
    from openclaw_cli.store.archives import write_verified_archive

    # streamed: the transcript is compressed and hashed as it is read (never held whole), then
    # read back and compared before anything relies on it (D6.2)
    return write_verified_archive(
        store.sessions_dir,
        snapshot.session_id,
        ARCHIVE_REASON,
        snapshot.write_transcript,
        now_ms=now_ms,
        source_size=snapshot.transcript_size,
    )


def _archive_json(result: Any) -> dict[str, Any]:
    return {
        "path": str(result.path),
        "sha256": result.sha256,
        "bytes": result.size,
        "storedBytes": result.stored_size,
        "compressed": result.compressed,
        "reused": result.reused,
    }


def _checkpoint(
    key: str,
    *,
    reason: str,
    now_ms: int,
    comp: dict[str, Any] | None,
    pre: dict[str, Any],
    post: dict[str, Any],
) -> dict[str, Any]:
    """One `compactionCheckpoints[]` record (R4.17.3; the summary stays in the transcript)."""
    record: dict[str, Any] = {
        "checkpointId": str(uuid.uuid4()),
        "sessionKey": key,
        "sessionId": pre["sessionId"],
        "createdAt": now_ms,
        "reason": reason,
    }
    if comp is not None:
        record["tokensBefore"] = comp.get("tokensBefore")
        if comp.get("tokensAfter") is not None:
            record["tokensAfter"] = comp["tokensAfter"]
        record["firstKeptEntryId"] = comp.get("firstKeptEntryId")
    record["preCompaction"] = pre
    record["postCompaction"] = post
    return record


def _with_checkpoint(entry: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
    """The entry with `record` appended to `compactionCheckpoints` (capped), or None when the
    existing value is not a list (never overwritten: it is someone's history)."""
    existing = entry.get("compactionCheckpoints")
    if existing is not None and not isinstance(existing, list):
        return None
    out = dict(entry)
    out["compactionCheckpoints"] = [*(existing or []), record][-CHECKPOINT_CAP:]
    return out


# ---- legacy writes ---------------------------------------------------------------------------------


def _verify_legacy(snapshot: TranscriptSnapshot) -> dict[str, Any]:
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


def _update_legacy_row(
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


def _expected_context(
    snapshot: TranscriptSnapshot, compaction_line: str, comp: dict[str, Any]
) -> tuple[list[TranscriptLine], list[dict[str, Any]]]:
    lines = [*snapshot.lines, TranscriptLine(seq=len(snapshot.lines), raw=compaction_line, obj=comp)]
    return lines, rebuilt_context(lines)


def _successor_for(
    snapshot: TranscriptSnapshot,
    all_lines: list[TranscriptLine],
    expected: list[dict[str, Any]],
    *,
    new_sid: str,
    now_ms: int,
    parent_session: str | None,
) -> list[str]:
    header = snapshot.header or {}
    cwd: str = header["cwd"] if isinstance(header.get("cwd"), str) else os.getcwd()
    # the lines it copies get their exact text back (a summary snapshot keeps none)
    lines = build_successor_lines(
        all_lines,
        session_id=new_sid,
        timestamp=iso_ms(now_ms),
        cwd=cwd,
        parent_session=parent_session,
        restore=snapshot.restore_raw,
    )
    if rebuilt_context(parse_lines(lines)) != expected:
        raise InvalidDataError("successor transcript does not rebuild the compacted context")
    return lines


@contextmanager
def _legacy_locks(snapshot: TranscriptSnapshot, lock_settings: Any) -> Iterator[None]:
    """The transcript's write lock, then `sessions.json`'s: both are held before anything is
    written, so a busy row store fails the whole compaction instead of half of it."""
    from openclaw_cli.store.lock import transcript_lock

    assert snapshot.path is not None
    with (
        transcript_lock(snapshot.path, lock_settings),
        transcript_lock(snapshot.store.path, lock_settings, allow_reentrant=True),
    ):
        yield


def apply_compaction_legacy(
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
    with _legacy_locks(snapshot, lock_settings):
        row = _verify_legacy(snapshot)
        cp()
        successor_lines: list[str] | None = None
        new_sid = str(uuid.uuid4())
        rotating = rotate and _can_rotate(row, result.warnings)
        if rotating:
            # the entry names the successor it is about to get: a kill between the append and the
            # row update is finished by the next run (finish_rotation_legacy), never left half-done
            details: dict[str, Any] = comp["details"] if isinstance(comp.get("details"), dict) else {}
            comp["details"] = {**details, SUCCESSOR_KEY: new_sid}
        line = dumps_compact(comp)
        if rotating:
            all_lines, expected = _expected_context(snapshot, line, comp)
            try:
                successor_lines = _successor_for(
                    snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=str(path)
                )
            except InvalidDataError as exc:
                result.warnings.append(f"successor transcript not created: {exc.message}")
            if successor_lines is not None:
                result.archive = _archive_json(_archive(store, snapshot, now_ms))
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
            with_record = _with_checkpoint(
                updated,
                _checkpoint(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            if with_record is None or not _can_rotate(current, result.warnings):
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

        result.entry = _update_legacy_row(snapshot, mutate, lock_settings, result.warnings)
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


def finish_rotation_legacy(
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
    with _legacy_locks(snapshot, lock_settings):
        row = _verify_legacy(snapshot)
        if not _can_rotate(row, result.warnings):
            return result
        all_lines = list(snapshot.lines)
        expected = rebuilt_context(all_lines)
        new_path = _adopt_successor(path.parent, new_sid, path, expected)
        successor_count = 0
        if new_path is None:
            successor_lines = _successor_for(
                snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=str(path)
            )
            result.archive = _archive_json(_archive(store, snapshot, now_ms))
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
            with_record = _with_checkpoint(
                updated,
                _checkpoint(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            if with_record is None:
                return None
            with_record["sessionId"] = new_sid
            with_record["sessionFile"] = _session_file_value(current.get("sessionFile"), new_path)
            return with_record

        result.entry = _update_legacy_row(snapshot, mutate, lock_settings, result.warnings)
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


def apply_max_lines_legacy(
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
    with _legacy_locks(snapshot, lock_settings):
        _verify_legacy(snapshot)
        cp()
        result.archive = _archive_json(_archive(snapshot.store, snapshot, now_ms))
        cp()
        _write_new_file(path, kept, cp, replace=True)
        result.entry = _update_legacy_row(
            snapshot,
            lambda current: entry_after_max_lines(current, now_ms=now_ms, clears_usage=clears_usage),
            lock_settings,
            result.warnings,
        )
        cp()
    cp.finish()
    return result


# ---- SQLite writes -----------------------------------------------------------------------------------


def _verify_sqlite(snapshot: TranscriptSnapshot) -> dict[str, Any]:
    store = snapshot.store
    totals = store.window_totals(snapshot.session_id)  # type: ignore[attr-defined]
    have = (totals.events, totals.bytes) if totals is not None else (0, 0)
    if have != snapshot.signature:
        raise SnapshotChanged(snapshot.key)
    row = store.get_entry(snapshot.key)
    if row is None or row.get("sessionId") != snapshot.entry.get("sessionId"):
        raise SnapshotChanged(snapshot.key)
    return row


def _can_rotate(row: dict[str, Any], warnings: list[str]) -> bool:
    """A row whose `compactionCheckpoints` is not a list keeps its transcript: that value is
    someone's history and is never overwritten (nor is a successor left behind unreferenced)."""
    value = row.get("compactionCheckpoints")
    if value is None or isinstance(value, list):
        return True
    warnings.append("compactionCheckpoints is not a list; the session keeps its transcript (no successor)")
    return False


def _successor_entry(current: dict[str, Any], new_sid: str, record: dict[str, Any]) -> dict[str, Any]:
    """The row pointing at a successor window. A `sessionFile` naming the predecessor's (legacy)
    file would now name the wrong session: it moves into the checkpoint record."""
    out = _with_checkpoint(current, record)
    if out is None:
        out = dict(current)
    out["sessionId"] = new_sid
    out.pop("sessionFile", None)
    return out


def apply_compaction_sqlite(
    snapshot: TranscriptSnapshot, comp: dict[str, Any], *, rotate: bool, now_ms: int, reason: str = "manual"
) -> PersistResult:
    store = cast("SqliteStore", snapshot.store)
    cp = Checkpoints()
    line = dumps_compact(comp)
    tokens_after = comp.get("tokensAfter")
    result = PersistResult(snapshot.session_id, None)
    successor_lines: list[str] | None = None
    new_sid = str(uuid.uuid4())
    archive: Any = None
    if rotate and _can_rotate(snapshot.entry, result.warnings):
        all_lines, expected = _expected_context(snapshot, line, comp)
        try:
            successor_lines = _successor_for(
                snapshot, all_lines, expected, new_sid=new_sid, now_ms=now_ms, parent_session=None
            )
        except InvalidDataError as exc:
            result.warnings.append(f"successor window not created: {exc.message}")
    with store.transaction():
        row = _verify_sqlite(snapshot)
        if successor_lines is not None and not _can_rotate(row, result.warnings):
            successor_lines = None
        if successor_lines is not None:  # inside the write transaction: a busy store writes nothing at all
            archive = _archive(store, snapshot, now_ms)
            result.archive = _archive_json(archive)
            cp()
        store.append_events(snapshot.session_id, [line], session_key=snapshot.key)
        current = cast("dict[str, Any]", store.get_entry(snapshot.key))  # verified above, same transaction
        updated = entry_after_compaction(current, tokens_after=tokens_after, now_ms=now_ms)
        if successor_lines is not None:
            comp_id = comp.get("id")
            pre: dict[str, Any] = {
                "sessionId": snapshot.session_id,
                "leafId": comp.get("parentId"),
                "entryId": comp_id,
            }
            if isinstance(current.get("sessionFile"), str):
                pre["sessionFile"] = current["sessionFile"]
            post = {"sessionId": new_sid, "leafId": comp_id, "entryId": comp_id}
            updated = _successor_entry(
                updated,
                new_sid,
                _checkpoint(snapshot.key, reason=reason, now_ms=now_ms, comp=comp, pre=pre, post=post),
            )
            header = snapshot.header or {}
            store.create_window(
                snapshot.key,
                new_sid,
                previous_session_id=snapshot.session_id,
                reason="compaction",
                raw_lines=successor_lines,
                entry=updated,
                created_at_ms=now_ms,
                cwd=header.get("cwd") if isinstance(header.get("cwd"), str) else None,
            )
            _record_archive(store, snapshot, archive, now_ms)
            result.session_id = new_sid
            result.successor = {
                "sessionId": new_sid,
                "previousSessionId": snapshot.session_id,
                "window": "compaction",
                "lines": len(successor_lines),
            }
        else:
            store.upsert_entries({snapshot.key: updated})
        result.entry = updated
        cp()  # a kill here rolls the whole transaction back
    cp()
    cp.finish()
    return result


def _record_archive(store: SqliteStore, snapshot: TranscriptSnapshot, archive: Any, now_ms: int) -> None:
    store.record_archive(
        archive_name=archive.path.name,
        session_id=snapshot.session_id,
        session_key=snapshot.key,
        reason=ARCHIVE_REASON,
        encoding="zstd" if archive.compressed else "identity",
        sha256=archive.sha256,
        archive_bytes=archive.stored_size,
        event_count=len(snapshot.lines),
        raw_bytes=archive.size,
        created_at_ms=now_ms,
    )


def apply_max_lines_sqlite(
    snapshot: TranscriptSnapshot, kept: list[bytes], *, now_ms: int, keep_session_id: bool = False
) -> PersistResult:
    """D15 + D16 on our SQLite store: the kept lines become a successor window (new sessionId,
    reason `compaction`); the previous window stays readable; the full original is archived.
    With `keep_session_id` (OpenClaw 2026.9.6+): the session keeps its id and window, which holds
    the kept lines from seq 0 (the full original archived first, as above)."""
    import orjson

    store = cast("SqliteStore", snapshot.store)
    cp = Checkpoints()
    if keep_session_id:
        result = PersistResult(snapshot.session_id, None)
        with store.transaction():
            _verify_sqlite(snapshot)
            archive = _archive(store, snapshot, now_ms)
            result.archive = _archive_json(archive)
            cp()
            store.replace_events(snapshot.session_id, kept, session_key=snapshot.key)
            current = cast(
                "dict[str, Any]", store.get_entry(snapshot.key)
            )  # verified above, same transaction
            updated = entry_after_max_lines(current, now_ms=now_ms, clears_usage=True)
            store.upsert_entries({snapshot.key: updated})
            _record_archive(store, snapshot, archive, now_ms)
            result.entry = updated
            cp()
        cp()
        cp.finish()
        return result
    new_sid = str(uuid.uuid4())
    lines: list[bytes] = list(kept)
    if lines:
        try:
            first = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            first = None
        if isinstance(first, dict) and first.get("type") == "session":  # the header names the new window
            first["id"] = new_sid
            first.pop("sessionId", None)
            lines[0] = orjson.dumps(first)
    result = PersistResult(new_sid, None)
    with store.transaction():
        _verify_sqlite(snapshot)
        archive = _archive(store, snapshot, now_ms)
        result.archive = _archive_json(archive)
        cp()
        current = cast("dict[str, Any]", store.get_entry(snapshot.key))  # verified above, same transaction
        updated = entry_after_compaction(current, tokens_after=None, now_ms=now_ms, count=False)
        pre: dict[str, Any] = {"sessionId": snapshot.session_id}
        if isinstance(current.get("sessionFile"), str):
            pre["sessionFile"] = current["sessionFile"]
        updated = _successor_entry(
            updated,
            new_sid,
            _checkpoint(
                snapshot.key, reason="manual", now_ms=now_ms, comp=None, pre=pre, post={"sessionId": new_sid}
            ),
        )
        header = snapshot.header or {}
        store.create_window(
            snapshot.key,
            new_sid,
            previous_session_id=snapshot.session_id,
            reason="compaction",
            raw_lines=lines,
            entry=updated,
            created_at_ms=now_ms,
            cwd=header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        )
        _record_archive(store, snapshot, archive, now_ms)
        result.entry = updated
        result.successor = {
            "sessionId": new_sid,
            "previousSessionId": snapshot.session_id,
            "window": "compaction",
            "lines": len(lines),
        }
        cp()
    cp()
    cp.finish()
    return result
