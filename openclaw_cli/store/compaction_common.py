"""Writing a compaction into a store (compaction-lifecycle.md §4.8, §4.17; spec D6, D12, D15, D16):
the store write protocol's `commit_compaction` and `commit_max_lines`. The compaction domain
plans and summarises; the transcript rewrites (`rewrite`) are pure; each store kind writes the
result of a snapshot (`snapshot`) in its package (`legacy/compaction.py`, `sqlite/compaction.py`,
`openclaw/compaction.py`), with what they share here (the archive, the checkpoint record, the
successor lines, the crash points):

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
from typing import TYPE_CHECKING, Any

from openclaw_cli.clock import iso_ms
from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.errors import InvalidDataError
from openclaw_cli.store.base import SessionStore, TranscriptLine
from openclaw_cli.store.rewrite import (
    build_successor_lines,
    parse_lines,
    rebuilt_context,
)
from openclaw_cli.store.snapshot import (
    TranscriptSnapshot,
)

if TYPE_CHECKING:
    pass


CHECKPOINT_CAP = 25  # compactionCheckpoints kept per session (R4.17.3)


ARCHIVE_REASON = "bak"  # `<sid>.jsonl.bak.<ts>.zst`: maintenance.md §7.2's "legacy compact backups"


CRASH_ENV = "OPENCLAW_COMPACT_CRASH_AT"  # crash-test hook (openclaw_cli/crashpoints.py)


CRASH_COUNT_ENV = "OPENCLAW_COMPACT_CRASH_COUNT"


def Checkpoints() -> CrashPoints:  # noqa: N802 - kept name for callers
    return CrashPoints("OPENCLAW_COMPACT")


def archive_snapshot(store: SessionStore, snapshot: TranscriptSnapshot, now_ms: int) -> Any:
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


def archive_json(result: Any) -> dict[str, Any]:
    return {
        "path": str(result.path),
        "sha256": result.sha256,
        "bytes": result.size,
        "storedBytes": result.stored_size,
        "compressed": result.compressed,
        "reused": result.reused,
    }


def checkpoint_record(
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


def with_checkpoint(entry: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
    """The entry with `record` appended to `compactionCheckpoints` (capped), or None when the
    existing value is not a list (never overwritten: it is someone's history)."""
    existing = entry.get("compactionCheckpoints")
    if existing is not None and not isinstance(existing, list):
        return None
    out = dict(entry)
    out["compactionCheckpoints"] = [*(existing or []), record][-CHECKPOINT_CAP:]
    return out


def expected_context(
    snapshot: TranscriptSnapshot, compaction_line: str, comp: dict[str, Any]
) -> tuple[list[TranscriptLine], list[dict[str, Any]]]:
    lines = [*snapshot.lines, TranscriptLine(seq=len(snapshot.lines), raw=compaction_line, obj=comp)]
    return lines, rebuilt_context(lines)


def successor_for(
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


def can_rotate(row: dict[str, Any], warnings: list[str]) -> bool:
    """A row whose `compactionCheckpoints` is not a list keeps its transcript: that value is
    someone's history and is never overwritten (nor is a successor left behind unreferenced)."""
    value = row.get("compactionCheckpoints")
    if value is None or isinstance(value, list):
        return True
    warnings.append("compactionCheckpoints is not a list; the session keeps its transcript (no successor)")
    return False


def successor_entry(current: dict[str, Any], new_sid: str, record: dict[str, Any]) -> dict[str, Any]:
    """The row pointing at a successor window. A `sessionFile` naming the predecessor's (legacy)
    file would now name the wrong session: it moves into the checkpoint record."""
    out = with_checkpoint(current, record)
    if out is None:
        out = dict(current)
    out["sessionId"] = new_sid
    out.pop("sessionFile", None)
    return out
