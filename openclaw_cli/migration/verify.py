"""Validate before archive (§6.6 step 7, made byte-exact): every key is in SQLite with the legacy
sessionId, and the lines imported from each transcript are in SQLite in order, byte-identical —
checked by count and by a sha256 over the events read back, compared with the sha256 computed while
the file was read. Nothing is archived unless this passes."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_cli.migration.report import TargetReport
from openclaw_cli.store.quarantine import PREFIX_BYTES, original_bytes

FULL_SCAN_MIN_SESSIONS = 200


@dataclass(slots=True)
class _Tracker:
    need: int
    next_seq: int = 0
    taken: int = 0
    hash: Any = None  # made at the session's first row, dropped once its digest is known
    digest: str | None = None
    disordered: bool = False

    def settle(self) -> None:
        """Keep the digest, not the hash object, once every needed row was hashed (100,000 live
        hash objects were ~25 MB; sessions are contiguous in storage order, so one is live)."""
        if self.hash is not None and self.taken >= self.need:
            self.digest = self.hash.hexdigest()
            self.hash = None


def connect_ro(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def verify_records(db: Path, states: list[Any], report: TargetReport, *, progress: Any = None) -> None:
    conn = connect_ro(db)
    try:
        conn.execute("BEGIN")  # one snapshot for every read below
        keys = dict(conn.execute("SELECT session_key, current_session_id FROM session_nodes"))
        need: dict[str, int] = {}
        for state in states:
            if state.line_digest is not None and state.stored_lines > 0:
                sid = state.rec.session_id
                need[sid] = max(need.get(sid, 0), state.stored_lines)
        digests, counts = _prefix_digests(conn, need)
        for state in states:
            rec = state.rec
            ok = True
            if state.alias_of is None:
                stored = keys.get(rec.key)
                if stored is None:
                    report.add("sqlite_entry_missing", f"SQLite entry is missing for {rec.key}.", rec.source_key)
                    ok = False
                elif stored != rec.session_id:
                    report.add("sqlite_entry_mismatch", f"SQLite sessionId {stored} does not match {rec.session_id}.",
                               rec.source_key)
                    ok = False
            if state.line_digest is not None and state.stored_lines > 0:
                sid = rec.session_id
                have = counts.get(sid, 0)
                m = state.stored_lines
                if have < m:
                    report.add("sqlite_transcript_count_mismatch",
                               f"SQLite transcript has {have} events; verified import expects {m}.", rec.source_key)
                    ok = False
                elif digests.get((sid, m)) != state.line_digest and not _contains_all(conn, state):
                    report.add("sqlite_transcript_mismatch",
                               f"SQLite transcript of session {sid} does not hold every line of {rec.transcript} "
                               "byte-identically; the original is kept.", rec.source_key)
                    ok = False
            state.verified = ok
            if progress is not None:
                progress.advance(1)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _prefix_digests(conn: sqlite3.Connection, need: dict[str, int]) -> tuple[dict[tuple[str, int], str], dict[str, int]]:
    """sha256 over the first `need[sid]` events (+ `\\n`) of each session, and each session's count."""
    digests: dict[tuple[str, int], str] = {}
    counts: dict[str, int] = {}
    if not need:
        return digests, counts
    conn.text_factory = bytes
    try:
        try:
            windows = conn.execute("SELECT count(*) FROM session_windows").fetchone()[0]
        except sqlite3.Error:
            windows = len(need)
        # one table scan beats thousands of point queries, unless most of the table is other history
        if len(need) >= FULL_SCAN_MIN_SESSIONS and len(need) * 2 >= windows:
            trackers = {sid.encode("utf-8"): _Tracker(n) for sid, n in need.items()}
            # one pass in storage order (an import writes each session contiguously, seq ascending);
            # each line comes with its `\n` (one hash update per row); the session's tracker is
            # looked up when the session changes and its state kept in locals meanwhile (stored
            # back on the next change): the loop body is a few comparisons and one hash update
            current: bytes | None = None
            tracker: _Tracker | None = None
            next_seq = taken = wanted = 0  # not `need`: the redo loop below still reads that dict
            disordered = False
            update: Any = None
            prefix = PREFIX_BYTES
            for sid_b, seq, line in conn.execute(
                    "SELECT session_id, seq, event_json || char(10) FROM transcript_events"):
                if sid_b != current:
                    if tracker is not None:
                        tracker.next_seq, tracker.taken, tracker.disordered = next_seq, taken, disordered
                        tracker.settle()
                    current = sid_b
                    tracker = trackers.get(sid_b)
                    if tracker is not None:
                        if tracker.hash is None and tracker.digest is None:
                            tracker.hash = hashlib.sha256()
                        next_seq, taken, wanted, disordered = (tracker.next_seq, tracker.taken, tracker.need,
                                                               tracker.disordered)
                        update = tracker.hash.update if tracker.hash is not None else None
                if tracker is None:
                    continue
                if seq != next_seq:
                    disordered = True
                next_seq = seq + 1
                taken += 1
                if taken <= wanted and not disordered:
                    update(original_bytes(line[:-1]) + b"\n" if line.startswith(prefix) else line)
            if tracker is not None:
                tracker.next_seq, tracker.taken, tracker.disordered = next_seq, taken, disordered
            redo = []
            for sid_b, tracker in trackers.items():
                sid = sid_b.decode("utf-8")
                if tracker.disordered:
                    redo.append(sid)
                    continue
                counts[sid] = tracker.taken
                tracker.settle()
                if tracker.digest is not None:
                    digests[(sid, tracker.need)] = tracker.digest
        else:
            redo = list(need)
        for sid in redo:
            n = need[sid]
            h = hashlib.sha256()
            taken = 0
            for (text,) in conn.execute(
                    "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT ?", (sid, n)):
                h.update(original_bytes(text) if text.startswith(PREFIX_BYTES) else text)
                h.update(b"\n")
                taken += 1
            counts[sid] = conn.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?",
                                       (sid,)).fetchone()[0]
            if taken >= n:
                digests[(sid, n)] = h.hexdigest()
    finally:
        conn.text_factory = str
    return digests, counts


def _contains_all(conn: sqlite3.Connection, state: Any) -> bool:
    """Rare path (a session whose stored history diverged from the file and was merged): every
    imported line must still be present byte-identically, each as often as in the file."""
    from openclaw_cli.migration.legacy_reader import iter_file_lines
    from openclaw_cli.migration.publish import open_regular_nofollow

    conn.text_factory = bytes
    try:
        have = Counter(original_bytes(row[0]) for row in conn.execute(
            "SELECT event_json FROM transcript_events WHERE session_id = ?", (state.rec.session_id,)))
    finally:
        conn.text_factory = str
    try:
        fd, _ = open_regular_nofollow(state.rec.transcript)
    except Exception:
        return False
    taken = 0
    try:
        for line, _nl in iter_file_lines(fd):
            if taken >= state.stored_lines:
                break
            if not line or line.isspace():
                continue
            taken += 1
            if have[line] <= 0:
                return False
            have[line] -= 1
    finally:
        import os

        os.close(fd)
    return taken >= state.stored_lines
