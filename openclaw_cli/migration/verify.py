"""Validate before archive (§6.6 step 7, made byte-exact): every key is in SQLite with the legacy
sessionId, and the lines imported from each transcript are in SQLite in order, byte-identical —
checked by count and by a sha256 over the events read back, compared with the sha256 computed while
the file was read. Nothing is archived unless this passes."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openclaw_cli.migration.report import TargetReport
from openclaw_cli.store.quarantine import PREFIX_BYTES, original_bytes

FULL_SCAN_MIN_SESSIONS = 200


def connect_ro(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def wanted(states: list[Any], part: int = 8192) -> Iterator[dict[str, tuple[int, str | None]]]:
    """What `scan_wanted` takes, from the states as `verify_records` reads them: per sessionId
    the lines wanted and the expected digest (None: shared by several states — every settlement is
    wanted back), in parts of `part` sessions. Only a transient set of the sessionIds is held: the
    maps `verify_records` keeps are made after the work done beside the scan (the 100k peak)."""
    seen: set[str] = set()
    shared: dict[str, int] = {}
    for state in states:
        if state.line_digest is not None and state.stored_lines > 0:
            sid = state.rec.session_id
            if sid in seen:
                shared[sid] = 0
            seen.add(sid)
    del seen
    chunk: dict[str, tuple[int, str | None]] = {}
    for state in states:
        digest = state.line_digest
        if digest is not None and state.stored_lines > 0:
            sid = state.rec.session_id
            if sid in shared:
                shared[sid] = max(shared[sid], state.stored_lines)
                continue
            chunk[sid] = (state.stored_lines, digest)
            if len(chunk) >= part:
                yield chunk
                chunk = {}
    chunk.update((sid, (n, None)) for sid, n in shared.items())
    if chunk:
        yield chunk


# what a scan run elsewhere answers (`scan_wanted`): the settlements that are not a clean match, in
# the order they were made, and the sessions it never settled
Scanned = tuple[list[tuple[str, int, str | None]], list[str]]


def verify_records(
    db: Path,
    states: list[Any],
    report: TargetReport,
    *,
    progress: Any = None,
    scanned: Callable[[], Scanned | None] | None = None,
) -> int:
    """Per state: the key's stored sessionId, and its lines' count and digest. Nothing per session
    is held beyond two maps keyed by the states' own sessionId strings: each digest is compared as
    the scan settles it and only the sessions that fail keep what they found (`found`).
    `scanned`: the scan's answer from another process (`scan_wanted` over `wanted(states)`), taken
    here; None from it (that scan failed) or no `scanned`: the scan runs here. Returns the number
    of states that did not verify."""
    conn = connect_ro(db)
    failed = 0
    try:
        conn.execute("BEGIN")  # one snapshot for every read below
        need: dict[str, int] = {}
        by_sid: dict[str, Any] = {}  # sessionId -> its state, or the list of states sharing it (rare)
        for state in states:
            if state.line_digest is not None and state.stored_lines > 0:
                sid = state.rec.session_id
                other = by_sid.get(sid)
                if other is None:
                    by_sid[sid] = state
                    need[sid] = state.stored_lines
                else:
                    by_sid[sid] = [*other, state] if isinstance(other, list) else [other, state]
                    need[sid] = max(need[sid], state.stored_lines)
        found: dict[str, tuple[int, str | None]] = {}  # what failing (or shared) sessions hold

        def settle(sid: str, count: int, digest: str | None) -> None:
            state = by_sid[sid]
            if (
                isinstance(state, list)
                or count < state.stored_lines
                or digest != state.line_digest
                or sid in found
            ):
                found[sid] = (count, digest)

        answer = scanned() if scanned is not None else None
        if answer is None:
            _scan_prefix_digests(conn, need, settle)
        else:
            # the same settlements as here, in the same order; a clean match settles nothing in `found`
            calls, unsettled = answer
            for sid, count, digest in calls:
                settle(sid, count, digest)
            missing = set(unsettled)
            for sid, n in need.items():
                if n >= 0 and sid not in missing:
                    need[sid] = ~n
        nodes = conn.execute("SELECT session_key, current_session_id FROM session_nodes ORDER BY rowid")
        node = next(nodes, None)  # a fresh build stores its keys in the order of `states`
        for state in states:
            rec = state.rec
            ok = True
            if state.alias_of is None:
                if node is not None and node[0] == rec.key:  # keys are unique: this is the key's row
                    stored = node[1]
                    node = next(nodes, None)
                else:
                    row = conn.execute(
                        "SELECT current_session_id FROM session_nodes WHERE session_key = ?", (rec.key,)
                    ).fetchone()
                    stored = row[0] if row else None
                if stored is None:
                    report.add(
                        "sqlite_entry_missing", f"SQLite entry is missing for {rec.key}.", rec.source_key
                    )
                    ok = False
                elif stored != rec.session_id:
                    report.add(
                        "sqlite_entry_mismatch",
                        f"SQLite sessionId {stored} does not match {rec.session_id}.",
                        rec.source_key,
                    )
                    ok = False
            expected = state.line_digest  # read once: a clean file's is made from its packed identity
            if expected is not None and state.stored_lines > 0:
                sid = rec.session_id
                m = state.stored_lines
                settled = need[sid] < 0
                have, digest = found.get(sid, (m, expected)) if settled else (0, None)
                if have < m:
                    report.add(
                        "sqlite_transcript_count_mismatch",
                        f"SQLite transcript has {have} events; verified import expects {m}.",
                        rec.source_key,
                    )
                    ok = False
                elif (digest != expected or ~need[sid] != m) and not _contains_all(conn, state):
                    report.add(
                        "sqlite_transcript_mismatch",
                        f"SQLite transcript of session {sid} does not hold every line of {rec.transcript} "
                        "byte-identically; the original is kept.",
                        rec.source_key,
                    )
                    ok = False
            state.verified = ok
            if not ok:
                failed += 1
            if progress is not None:
                progress.advance(1)
        nodes.close()  # rows of keys this run did not import may be left unread
        conn.execute("COMMIT")
    finally:
        conn.close()
    return failed


def scan_wanted(
    db: str, wanted: dict[str, tuple[int, str | None]], full_scan_min: int | None = None
) -> Scanned:
    """Verification's scan of `db` for another process (the import's parser process, idle once the
    bulk import took every record): `wanted` is `wanted()`'s parts merged. Returns the
    settlements `verify_records`' own would keep — every one of a shared session (expected None),
    of a session short of its lines or whose digest differs, and any second one — and the sessions
    never settled; a clean match is returned as nothing (the caller marks it settled)."""
    need = {sid: n for sid, (n, _expected) in wanted.items()}
    calls: list[tuple[str, int, str | None]] = []
    reported: set[str] = set()

    def settle(sid: str, count: int, digest: str | None) -> None:
        n, expected = wanted[sid]
        if expected is None or count < n or digest != expected or sid in reported:
            reported.add(sid)
            calls.append((sid, count, digest))

    conn = connect_ro(Path(db))
    try:
        conn.execute("BEGIN")
        _scan_prefix_digests(conn, need, settle, full_scan_min)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return calls, [sid for sid, n in need.items() if n >= 0]


def _scan_prefix_digests(
    conn: sqlite3.Connection,
    need: dict[str, int],
    settle: Callable[[str, int, str | None], None],
    full_scan_min: int | None = None,
) -> None:
    """For each session of `need` found in storage: `settle(sid, count, digest)` with its number of
    events and the sha256 over its first `need[sid]` events (+ `\\n`), None when it has fewer. A
    settled session's entry becomes `~n` (negative: settled; `~entry` is still its n). A session may
    be settled twice (the second call is the answer): the full scan settles each session when its
    rows end, and one whose rows come apart or out of order is settled again by point queries."""
    if not need:
        return
    conn.text_factory = bytes
    try:
        try:
            windows = conn.execute("SELECT count(*) FROM session_windows").fetchone()[0]
        except sqlite3.Error:
            windows = len(need)
        # one table scan beats thousands of point queries, unless most of the table is other history
        least = FULL_SCAN_MIN_SESSIONS if full_scan_min is None else full_scan_min
        if len(need) >= least and len(need) * 2 >= windows:
            redo = _full_scan(conn, need, settle)
        else:
            redo = list(need)
        for sid in redo:
            n = need[sid] if need[sid] >= 0 else ~need[sid]
            h = hashlib.sha256()
            taken = 0
            for (text,) in conn.execute(
                "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT ?", (sid, n)
            ):
                h.update(original_bytes(text) if text.startswith(PREFIX_BYTES) else text)
                h.update(b"\n")
                taken += 1
            count = conn.execute(
                "SELECT count(*) FROM transcript_events WHERE session_id = ?", (sid,)
            ).fetchone()[0]
            need[sid] = ~n
            settle(sid, count, h.hexdigest() if taken >= n else None)
    finally:
        conn.text_factory = str


def _full_scan(
    conn: sqlite3.Connection, need: dict[str, int], settle: Callable[[str, int, str | None], None]
) -> list[str]:
    """One pass in storage order (an import writes each session contiguously, seq ascending); each
    line comes with its `\\n` (one hash update per row). One session is open at a time, its state in
    locals; it is settled when its rows end. Returns the sessions to settle again by point queries:
    rows out of order, or rows coming back after another session's."""
    redo: dict[str, None] = {}
    current: bytes | None = None
    sid: str | None = None  # the open session, when it is one of `need`
    h: Any = None
    update: Any = None
    next_seq = taken = wanted = 0
    disordered = False
    prefix = PREFIX_BYTES

    for sid_b, seq, line in conn.execute(
        "SELECT session_id, seq, event_json || char(10) FROM transcript_events"
    ):
        if sid_b != current:
            if sid is not None:  # the open session's rows end here (inline: this loop runs per row)
                if disordered:
                    redo[sid] = None
                else:
                    need[sid] = ~wanted
                    settle(sid, taken, h.hexdigest() if taken >= wanted else None)
            current = sid_b
            text = sid_b.decode("utf-8", "replace") if isinstance(sid_b, bytes) else None
            wanted = need.get(text, 0) if text is not None else 0
            if text is None or text in redo or text not in need:
                sid = None
                continue
            if wanted < 0:  # settled already: its rows come back after another session's
                redo[text] = None
                sid = None
                continue
            sid = text
            h = hashlib.sha256()
            update = h.update
            next_seq = taken = 0
            disordered = False
        if sid is None:
            continue
        if seq != next_seq:
            disordered = True
        next_seq = seq + 1
        taken += 1
        if taken <= wanted and not disordered:
            update(original_bytes(line[:-1]) + b"\n" if line.startswith(prefix) else line)
    if sid is not None:
        if disordered:
            redo[sid] = None
        else:
            need[sid] = ~wanted
            settle(sid, taken, h.hexdigest() if taken >= wanted else None)
    return list(redo)


def _contains_all(conn: sqlite3.Connection, state: Any) -> bool:
    """Rare path (a session whose stored history diverged from the file and was merged): every
    imported line must still be present byte-identically, each as often as in the file."""
    from openclaw_cli.migration.legacy_reader import iter_file_lines
    from openclaw_cli.migration.publish import open_regular_nofollow

    conn.text_factory = bytes
    try:
        have = Counter(
            original_bytes(row[0])
            for row in conn.execute(
                "SELECT event_json FROM transcript_events WHERE session_id = ?", (state.rec.session_id,)
            )
        )
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
    return bool(taken >= state.stored_lines)
