"""Reading a legacy store for the migration: the strict `sessions.json` reader (§2.4–2.6), one record
per importable entry with its transcript resolved (§6.6 step 3), orphan discovery, and the single-pass
transcript reader (read once: hash, split, parse) the importer and dry-run share.

The import reads `sessions.json` with a strict JSON parser, as OpenClaw's doctor does (T-44); the
bytes it parsed are the ones it hashes for the manifest, so the archived index is provably the one
that was imported.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openclaw_cli.ids import is_valid_legacy_session_id, is_valid_session_id
from openclaw_cli.jsonutil import loads
from openclaw_cli.migration.publish import ArtifactError, Identity, fingerprint, open_regular_nofollow
from openclaw_cli.migration.report import Issue
from openclaw_cli.paths import transcript_candidates
from openclaw_cli.store.names import is_primary_transcript_name
from openclaw_cli.store.quarantine import QUARANTINE_TYPE, reason_for

if TYPE_CHECKING:
    from openclaw_cli.migration.index_stream import StreamedEntries

READ_CHUNK = 8 * 1024 * 1024
CHANGED_MESSAGE = (
    "Legacy transcript changed during import; stop active session writers and rerun `openclaw doctor --fix`."
)


# ---- sessions.json --------------------------------------------------------------------------------


@dataclass
class LegacyIndex:
    path: Path
    exists: bool = False
    identity: Identity | None = None
    fingerprint: tuple[int, int, int, int, int] | None = None
    entries: dict[str, Any] | StreamedEntries | None = None  # StreamedEntries: read member by member
    issues: list[Issue] = field(default_factory=list)
    exact: dict[str, Any] = field(default_factory=dict)  # key -> preflight.EntryText (D22)

    @property
    def readable(self) -> bool:
        return self.entries is not None

    def close(self) -> None:
        """Release the file a member-wise read index keeps open to read entries again."""
        from openclaw_cli.migration.index_stream import StreamedEntries

        if isinstance(self.entries, StreamedEntries):
            self.entries.close()


def read_index(path: Path, *, allow_symlink_issue: bool = True) -> LegacyIndex:
    index = LegacyIndex(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            index.issues.append(Issue("store_unreadable", f"{path}: parent path is not a directory"))
        return index
    except OSError as exc:
        index.exists = True
        index.issues.append(Issue("store_unreadable", f"{path}: {exc.strerror or exc}"))
        return index
    index.exists = True
    if stat.S_ISLNK(st.st_mode):
        index.issues.append(Issue("store_unreadable", f"{path}: refusing to follow a symbolic link"))
        return index
    try:
        fd, before = open_regular_nofollow(path)
    except ArtifactError as exc:
        index.issues.append(Issue("store_unreadable", f"{path}: {exc}"))
        return index
    except OSError as exc:
        index.issues.append(Issue("store_unreadable", f"{path}: {exc.strerror or exc}"))
        return index
    from openclaw_cli.migration.index_stream import NotStreamable, StreamedEntries, scan_members

    try:
        # member by member first (memory flat in the number of sessions); anything else whole
        streamed: StreamedEntries | None = StreamedEntries(path, (before.st_dev, before.st_ino))
        hasher = hashlib.sha256()
        try:
            for key, offset, length, crc, value in scan_members(fd, hasher):
                streamed.add(key, offset, length, crc, value)  # type: ignore[union-attr]
        except NotStreamable:
            streamed = None
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while True:
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if fingerprint(before) != fingerprint(after):
        index.issues.append(Issue("store_unreadable", f"{path}: the file changed while it was read"))
        return index
    index.fingerprint = fingerprint(before)
    if streamed is not None:
        index.identity = Identity(
            before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, hasher.hexdigest()
        )
        index.entries = streamed
        return index
    raw = b"".join(chunks)
    del chunks
    index.identity = Identity(
        before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, hashlib.sha256(raw).hexdigest()
    )
    data, error = _parse_index(raw, index)
    if error is not None:
        index.issues.append(Issue("store_unreadable", f"{path}: {error}"))
        return index
    if not isinstance(data, dict):
        index.issues.append(Issue("store_not_object", f"{path} does not contain an object session store."))
        return index
    index.entries = data
    return index


def _parse_index(raw: bytes, index: LegacyIndex) -> tuple[Any, str | None]:
    """(parsed store, error). D22 pre-flight: a file orjson cannot read exactly is parsed again
    entry by entry with every number as written, and the entries to store with their original
    text are recorded in `index.exact`."""
    from openclaw_cli.jsonutil import DocumentError
    from openclaw_cli.migration.preflight import exact_entries, needs_exact_pass

    fast_error: Exception | None = None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        fast_error, data = exc, None
    if fast_error is None and (not isinstance(data, dict) or not needs_exact_pass(raw)):
        return data, None
    try:
        data, index.exact = exact_entries(raw)
    except DocumentError as exc:
        return None, str(exc)
    except (ValueError, RecursionError) as exc:
        if fast_error is None:
            return data, None
        try:
            value = loads(raw)  # a JSON document that is not an object: say so, not "invalid JSON"
        except (ValueError, RecursionError):
            return None, _json_error(fast_error or exc)
        return value, None
    return data, None


def _json_error(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"SyntaxError: {text}"


# ---- records ---------------------------------------------------------------------------------------


class Record:
    """One importable entry. A record of a member-wise read index does not hold its entry: it is
    parsed from the file each time it is asked for (the import asks once, when it stores it)."""

    __slots__ = (
        "key",
        "source_key",
        "session_id",
        "_entry",
        "_src",
        "_idx",
        "transcript_text",
        "expected_text",
        "sqlite_marker",
        "recovered",
        "problem",
        "entry_text",
    )

    def __init__(
        self,
        key: str,
        source_key: str,
        session_id: str,
        entry: dict[str, Any] | None,
        transcript: Path | None = None,
        expected: Path | None = None,
        sqlite_marker: bool = False,
        recovered: bool = False,
        problem: str | None = None,
        entry_text: str | None = None,
    ):
        self.key = key  # the key stored in SQLite (bare cron:/hook: canonicalised, D14)
        self.source_key = source_key  # the key as written in sessions.json (or the synthetic recovered key)
        self.session_id = session_id
        self._entry = entry
        self._src: StreamedEntries | None = None
        self._idx = 0
        # paths as text: a Path is ~490 bytes on Python 3.11, a record lives for the whole import
        self.transcript_text: str | None = None  # an existing candidate (may still be unsafe, see `problem`)
        self.expected_text: str | None = None  # where the transcript was looked for (missing-file message)
        self.transcript = transcript
        self.expected = expected
        self.sqlite_marker = sqlite_marker
        self.recovered = recovered
        self.problem = problem  # why the transcript cannot be read or moved
        self.entry_text = entry_text  # the original text, stored as is (D22: values stored as written)

    @property
    def transcript(self) -> Path | None:
        return None if self.transcript_text is None else Path(self.transcript_text)

    @transcript.setter
    def transcript(self, path: Path | str | None) -> None:
        self.transcript_text = None if path is None else os.fspath(path)

    @property
    def expected(self) -> Path | None:
        return None if self.expected_text is None else Path(self.expected_text)

    @expected.setter
    def expected(self, path: Path | str | None) -> None:
        self.expected_text = None if path is None else os.fspath(path)

    @property
    def entry(self) -> dict[str, Any]:
        if self._src is not None:
            entry: dict[str, Any] = self._src.entry_at(self._idx)
            return entry
        return self._entry  # type: ignore[return-value]

    def entry_bytes(self) -> bytes | None:
        """The entry's bytes as `sessions.json` holds them, checked against the first read, when
        the index was read member-wise (the entry is parsed from them); None otherwise."""
        if self._src is None:
            return None
        return self._src.entry_bytes_at(self._idx)

    def __repr__(self) -> str:
        return f"Record({self.key!r}, {self.session_id!r}, transcript={self.transcript!r})"


def invalid_entry_message(store: Path) -> str:
    return (
        f"{store}: session entry is missing a valid sessionId; skipped while preserving the original index "
        "for recovery."
    )


class DirListing:
    """One scandir of the sessions dir: name -> (is regular file, is symlink), no per-file syscalls."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.kinds: dict[str, tuple[bool, bool]] = {}
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    try:
                        self.kinds[entry.name] = (entry.is_file(follow_symlinks=False), entry.is_symlink())
                    except OSError:
                        self.kinds[entry.name] = (False, False)
        except OSError:
            pass

    def exists(self, name: str) -> bool:
        return name in self.kinds


def build_records(
    index: LegacyIndex,
    sessions_dir: Path,
    *,
    agent_id: str,
    owner_filter: Callable[[str], bool] | None = None,
    listing: DirListing | None = None,
    members: Iterable[tuple[str, Any]] | None = None,
) -> tuple[list[Record], list[Issue]]:
    """Importable records in store order, plus `entry_invalid` issues. `listing`: the sessions
    dir's, when the caller listed it already; `members`: (key, (sessionId, sessionFile) or None)
    of a member-wise read index's entries as another process reads them (`index_stream.index_parts`:
    `index.entries` grows as they are taken), instead of the facts of `index.entries`' first read."""
    from openclaw_cli.keys import canonicalize_bare_key

    records: list[Record] = []
    issues: list[Issue] = []
    if listing is None:
        listing = DirListing(sessions_dir)
    base = str(sessions_dir)
    from openclaw_cli.migration.index_stream import StreamedEntries
    from openclaw_cli.migration.preflight import key_problem, shown_key, substitute_key

    streamed = index.entries if isinstance(index.entries, StreamedEntries) else None
    facts: Any = streamed.take_facts() if streamed is not None else None
    pairs: Any
    if members is not None:
        pairs, facts = members, True
    elif streamed is not None and facts is not None:
        pairs = zip(streamed, facts, strict=True)
    else:
        pairs = (index.entries or {}).items()
    for position, (key, item) in enumerate(pairs):
        if owner_filter is not None and not owner_filter(key):
            continue
        if facts is not None:  # (sessionId, sessionFile) from the first read; None: not an object
            entry = None
            sid, session_file = item if item is not None else (None, None)
        else:
            entry = item
            sid = entry.get("sessionId") if isinstance(entry, dict) else None
            session_file = entry.get("sessionFile") if isinstance(entry, dict) else None
        if not isinstance(sid, str) or not sid.strip() or not is_valid_legacy_session_id(sid):
            issues.append(Issue("entry_invalid", invalid_entry_message(index.path), key))
            continue
        sid = sid.strip()
        stored_key = canonicalize_bare_key(key, agent_id)
        problem = key_problem(key)
        if problem is not None:
            stored_key = substitute_key(key, agent_id)
            issues.append(
                Issue(
                    "entry_key_invalid",
                    (
                        f"{index.path}: the key {shown_key(key)} {problem}, so it cannot name a session; the entry is "
                        f"stored under {stored_key} (sessionId {sid}) and the original key stays in the archived "
                        "sessions.json."
                    ),
                    stored_key,
                )
            )
        record = Record(stored_key, key if problem is None else stored_key, sid, entry)
        if streamed is not None:  # read again when stored: 100,000 entries are ~150 MB of objects
            record._entry, record._src, record._idx = None, streamed, position
        exact = index.exact.get(key)
        if exact is not None:
            record.entry_text = exact.text
            for finding in exact.findings:
                issues.append(
                    Issue(
                        "entry_value_unrepresentable",
                        (
                            f"{index.path}: field {finding.path} = {finding.literal[:80]} {finding.why}; the entry is "
                            "stored with its original text, readers show the value as written and treat it as unknown "
                            "in computations."
                        ),
                        record.source_key,
                    )
                )
        if isinstance(session_file, str) and session_file.startswith("sqlite:"):
            record.sqlite_marker = True
        elif (names := _fast_candidate_names(session_file, sid, base)) is not None:
            # the common cases, decided from one directory listing (same order as transcript_candidates)
            record.expected_text = f"{base}{os.sep}{names[0]}"
            for name in names:
                if listing.exists(name):
                    record.transcript_text = (
                        record.expected_text if name == names[0] else f"{base}{os.sep}{name}"
                    )
                    regular, _link = listing.kinds[name]
                    if not regular:
                        record.problem = f"Migration source is not a regular file: {record.transcript}"
                    break
        else:
            candidates = transcript_candidates(
                sessions_dir, sid, session_file if isinstance(session_file, str) else None
            )
            record.expected = candidates[0] if candidates else sessions_dir / f"{sid}.jsonl"
            for candidate in candidates:
                if os.path.lexists(candidate):
                    record.transcript = candidate
                    record.problem = _unsafe_reason(candidate, sessions_dir)
                    break
        records.append(record)
    return records, issues


def _fast_candidate_names(session_file: Any, sid: str, base: str) -> list[str] | None:
    """File names `paths.transcript_candidates` would return for a bare name, no locator, or an
    absolute path (in the sessions dir or from another machine); None for anything else."""
    default = f"{sid}.jsonl"
    if session_file is None:
        return [default]
    if not isinstance(session_file, str) or not session_file or "\\" in session_file:
        return None
    if "/" not in session_file:
        if session_file in (".", ".."):
            return None
        name = session_file
    elif session_file.startswith("/") and not session_file.endswith("/"):
        cut = session_file.rfind("/")
        name = session_file[cut + 1 :]  # os.path.basename
        # an absolute path with no `//`, `/.` or `/..` is already normal: no normpath, no dirname
        norm = os.path.normpath(session_file) if "//" in session_file or "/." in session_file else None
        if norm is None:
            inside = session_file.startswith(base + os.sep)
            parent = session_file[:cut] if cut else "/"
        else:
            inside = norm.startswith(base + os.sep)
            parent = os.path.dirname(norm)
        if inside and parent != base:
            return None  # a sub-directory of the sessions dir: the general resolver decides
        if name in ("", ".", ".."):
            return None
    else:
        return None
    return [name] if name == default else [name, default]


def _unsafe_reason(path: Path, sessions_dir: Path) -> str | None:
    if path.parent != sessions_dir:
        return f"Migration source is outside the target sessions directory: {path}"
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return f"Migration source is not a regular file: {path}"
    return None


def read_header_id(path: Path) -> str | None:
    """The id of a transcript's first line when it is a `type:"session"` header."""
    try:
        fd, _ = open_regular_nofollow(path)
    except (OSError, ArtifactError):
        return None
    try:
        head = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    for line in head.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if isinstance(obj, dict) and obj.get("type") == "session":
            value = obj.get("id", obj.get("sessionId"))
            return value if isinstance(value, str) else None
        return None
    return None


def scan_jsonl_names(sessions_dir: Path, keep: Callable[[str], bool] | None = None) -> list[str]:
    """Names of every `*.jsonl` directly in the sessions dir (symlinks included, directories not),
    sorted; with `keep`, only the names it accepts (the others are never held)."""
    out: list[str] = []
    try:
        with os.scandir(sessions_dir) as it:
            for entry in it:
                name = entry.name
                if (
                    name.endswith(".jsonl")
                    and (keep is None or keep(name))
                    and not entry.is_dir(follow_symlinks=False)
                ):
                    out.append(name)
    except OSError:
        return []
    out.sort()
    return out


def discover_orphans(
    sessions_dir: Path, records: list[Record], *, agent_id: str, listing: DirListing | None = None
) -> list[Record]:
    """Primary transcripts no record references whose header names the file's own session id:
    imported as `agent:<id>:recovered:<sessionId>` (already archived), as OpenClaw does.
    `listing`: the sessions dir's, when the caller listed it already (`build_records`'s)."""
    base = str(sessions_dir)
    cut = len(base) + 1
    referenced = set()
    for r in records:
        t = r.transcript_text
        if t is None:
            continue
        if t[cut - 1 : cut] == os.sep and t.startswith(base) and os.sep not in t[cut:] and t[cut:]:
            referenced.add(t[cut:])  # `<base>/<name>`: the common case, without os.path
        elif os.path.dirname(t) == base:
            referenced.add(os.path.basename(t))
    known_ids = {r.session_id for r in records}
    out: list[Record] = []
    if listing is None:
        listing = DirListing(sessions_dir)
    for name in sorted(name for name in listing.kinds if name not in referenced):
        if not is_primary_transcript_name(name):
            continue
        stem = name[: -len(".jsonl")]
        regular, _link = listing.kinds[name]
        if not regular or stem in known_ids or not is_valid_session_id(stem):
            continue
        path = sessions_dir / name
        if read_header_id(path) != stem:
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        mtime_ms = st.st_mtime_ns // 1_000_000
        key = f"agent:{agent_id}:recovered:{stem}"
        entry = {"sessionId": stem, "updatedAt": mtime_ms, "archivedAt": mtime_ms}
        out.append(Record(key, key, stem, entry, transcript=path, expected=path, recovered=True))
        known_ids.add(stem)
    return out


def unreferenced_jsonl(sessions_dir: Path, records: Iterable[Record]) -> list[Path]:
    """`*.jsonl` files no record uses as its transcript (trajectories included), sorted by name.
    A name is referenced when a record's transcript is `<sessions dir>/<name>`; the records' own
    path strings are what is looked up, and the directory is scanned without keeping every name
    (100,000 of each were ~25 MB while the import plans its moves)."""
    base = str(sessions_dir)
    prefix = base + os.sep
    referenced: set[str] = set()
    for r in records:
        t = r.transcript_text
        if t is not None and os.path.dirname(t) == base:
            name = os.path.basename(t)
            # the text itself (no copy) unless it spells the directory differently
            referenced.add(t if len(t) == len(prefix) + len(name) and t.startswith(prefix) else prefix + name)
    return [
        sessions_dir / name
        for name in scan_jsonl_names(sessions_dir, keep=lambda name: prefix + name not in referenced)
    ]


def trajectory_paths(transcript: Path) -> list[Path]:
    base = transcript.name[: -len(".jsonl")] if transcript.name.endswith(".jsonl") else transcript.name
    return [
        transcript.with_name(f"{base}.trajectory.jsonl"),
        transcript.with_name(f"{base}.trajectory-path.json"),
    ]


# ---- transcripts: read-only scans (dry-run, validate) --------------------------------------------------

NL = b"\n"


@dataclass
class TranscriptScan:
    """What the import would store from a transcript: every non-blank line (D22: a malformed one
    as a quarantined raw line), their count and sha256 (each line's bytes + `\n`)."""

    lines: int = 0
    digest: str | None = None
    error: str | None = None  # first malformed line: `<path>:<line>: <reason>`
    malformed: int = 0  # lines that will be stored quarantined
    unreadable: str | None = None
    missing: bool = False


def iter_file_lines(fd: int) -> Iterator[tuple[bytes, bool]]:
    """(line without its `\n`, whether a `\n` ended it), streaming in large chunks."""
    rest = b""
    while True:
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            break
        if rest:
            chunk = rest + chunk
        parts = chunk.split(NL)
        rest = parts.pop()
        for part in parts:
            yield part, True
    if rest:
        yield rest, False


def scan_transcript(path: Path, *, want_digest: bool = True) -> TranscriptScan:
    scan = TranscriptScan()
    try:
        fd, _ = open_regular_nofollow(path)
    except ArtifactError as exc:
        scan.unreadable = str(exc)
        return scan
    except FileNotFoundError:
        scan.missing = True
        return scan
    except OSError as exc:
        scan.unreadable = f"{path}: {exc.strerror or exc}"
        return scan
    digest = hashlib.sha256() if want_digest else None
    try:
        for line_no, (line, _nl) in enumerate(iter_file_lines(fd), start=1):
            if not line or line.isspace():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict) or obj.get("type") == QUARANTINE_TYPE:
                scan.malformed += 1
                if scan.error is None:
                    scan.error = f"{path}:{line_no}: malformed transcript line: {reason_for(line)}"
            scan.lines += 1
            if digest is not None:
                digest.update(line)
                digest.update(NL)
    finally:
        os.close(fd)
    scan.digest = digest.hexdigest() if digest is not None else None
    return scan


def malformed_message(error: str, count: int = 1) -> str:
    """D22 (replaces the "readable prefix" rule): malformed lines are kept, in place, as quarantined
    raw lines and the lines after them are imported."""
    many = f" ({count} such lines in this file)" if count > 1 else ""
    return (
        f"{error}{many}. The line is kept byte-exact as a quarantined raw line and every line after it is "
        "imported; the original remains protected for recovery."
    )
