"""The legacy store: `agents/<id>/sessions/sessions.json` plus `<sessionId>.jsonl` transcripts
(spec D3, storage-migration.md §2–§3), byte-compatible with OpenClaw.

Reading never writes anything (no lock files, no directories). Problems in the data are reported,
never fatal for the whole store and never "repaired" by dropping data:
* `sessions.json` that is not JSON / not an object → `InvalidDataError` (OpenClaw's wording);
* rows that are not objects, lack a valid string `sessionId`, or carry a sessionId that could
  name a path (`../../x`) are left out of `load_entries()` and reported in `store.issues`, but
  stay in the file exactly as they are on every rewrite;
* rows with wrongly typed fields (`updatedAt` a string, …) are loaded as they are and reported;
* a transcript reached through a symlink is not followed: reported and treated as missing.

Writes are atomic (temp file, fsync, rename, fsync dir) and serialised with OpenClaw's lock
protocol on `sessions.json.lock`; the file is written like JS `JSON.stringify(store, null, 2)`
(no trailing newline, non-ASCII unescaped) keeping key order, unknown fields and numbers exactly
as written (`1e+21`, `1.50`, `-0` survive a rewrite). No `sessions.json.bak.*` is ever created.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from openclaw_cli import clock, jsonutil
from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import (
    InvalidDataError,
    InvalidIdError,
    OpenClawError,
    RefusedError,
    SessionBusyError,
)
from openclaw_cli.fsio import O_CLOEXEC, O_NOFOLLOW, atomic_write_bytes
from openclaw_cli.gcpause import gc_paused
from openclaw_cli.ids import is_valid_legacy_session_id, normalize_agent_id, validate_session_id
from openclaw_cli.jsonutil import INT_MIN, UINT_MAX, RawNumber, exact_float, exact_int
from openclaw_cli.lazyre import lazy_module, lazy_pattern
from openclaw_cli.paths import safe_regular_file, transcript_candidates
from openclaw_cli.records import Record
from openclaw_cli.store import archives as archives_mod
from openclaw_cli.store.base import (
    KIND_LEGACY,
    ArchiveFile,
    ChangeProbe,
    FileProbe,
    LeavingHook,
    ReadIssue,
    RestoreOutcome,
    SessionStore,
    SessionTotals,
    StoreStats,
    TranscriptLine,
)
from openclaw_cli.store.transcript import append_jsonl, count_lines, header_line, iter_jsonl, tail_jsonl

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    import orjson
else:
    orjson = lazy_module(globals(), "orjson")  # imported on first use (a warm search needs none)
if TYPE_CHECKING:  # the lock module is imported by the writes (read-only commands never need it)
    from openclaw_cli.store.lock import LockSettingsLike


# Known SessionEntry fields and the JSON type OpenClaw writes for them (storage-migration §2.3).
# A mismatch is reported, never corrected. `null` is accepted everywhere (treated as absent).
_NUMBER = (
    "updatedAt",
    "sessionStartedAt",
    "lastInteractionAt",
    "lastActivityAt",
    "createdAt",
    "startedAt",
    "endedAt",
    "runtimeMs",
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "contextTokens",
    "cacheRead",
    "cacheWrite",
    "estimatedCostUsd",
    "compactionCount",
    "archivedAt",
    "pinnedAt",
    "lastReadAt",
    "markedUnreadAt",
    "spawnDepth",
    "memoryFlushAt",
    "memoryFlushCompactionCount",
    "queueDebounceMs",
    "queueCap",
    "lifecycleRevision",
    "totalTokensVersion",
    "lastHeartbeatSentAt",
)
_STRING = (
    "sessionFile",
    "chatType",
    "label",
    "displayName",
    "subject",
    "groupId",
    "groupChannel",
    "channel",
    "lastChannel",
    "lastTo",
    "lastAccountId",
    "model",
    "modelProvider",
    "providerOverride",
    "modelOverride",
    "spawnedBy",
    "parentSessionKey",
    "parentSessionId",
    "previousSessionId",
    "archiveReason",
    "thinkingLevel",
    "verboseLevel",
    "reasoningLevel",
    "elevatedLevel",
    "sendPolicy",
    "status",
    "createdVia",
)
_BOOLEAN = ("systemSent", "abortedLastRun", "forkedFromParent", "totalTokensFresh", "initializationPending")
_ARRAY = ("compactionCheckpoints",)
_FIELD_TYPES: dict[str, str] = {
    **{k: "number" for k in _NUMBER},
    **{k: "string" for k in _STRING},
    **{k: "boolean" for k in _BOOLEAN},
    **{k: "array" for k in _ARRAY},
}


_JSON_TYPE_OF = {
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
# an ASCII subset of the legacy rule
_FAST_SID = lazy_pattern(globals(), "_FAST_SID", r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}$")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    kind = _JSON_TYPE_OF.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_FAST_SID_LINES = lazy_pattern(globals(), "_FAST_SID_LINES", r"(?:[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}\n)*")


def _all_fast_session_ids(rows: dict[str, Any]) -> bool:
    """True when every row is an object whose `sessionId` passes the ASCII fast rule (`_FAST_SID`),
    checked with one regex over all ids instead of one match per row."""
    try:
        ids = "\n".join([row.get("sessionId") for row in rows.values()])  # only dicts have .get
    except (AttributeError, TypeError):  # a row that is not an object, an id that is not a string
        return False
    if ids.count("\n") != max(0, len(rows) - 1):  # an id holding a newline would pass as two ids
        return False
    return _FAST_SID_LINES.fullmatch(ids + "\n" if rows else "") is not None


def session_id_ok(sid: Any) -> bool:
    """The legacy session-id rule (ids.is_valid_legacy_session_id), with an ASCII fast path."""
    return isinstance(sid, str) and (_FAST_SID.match(sid) is not None or is_valid_legacy_session_id(sid))


def row_problem(key: str, entry: Any) -> str | None:
    """Why a row cannot be used (it stays in the file untouched), or None."""
    if not isinstance(entry, dict):
        return f"session entry {key!r} is not an object ({_json_type(entry)}); skipped while preserving it in the store."
    sid = entry.get("sessionId")
    if not isinstance(sid, str) or not sid.strip():
        return f"session entry {key!r} is missing a valid sessionId; skipped while preserving the original index for recovery."
    if not session_id_ok(sid):
        return f"session entry {key!r} has an unsafe sessionId {sid!r}; skipped while preserving it in the store."
    return None


def field_problems(key: str, entry: dict[str, Any]) -> list[str]:
    """Known fields holding the wrong JSON type (reported, never corrected)."""
    problems = []
    for name, value in entry.items():
        expected = _FIELD_TYPES.get(name)
        if expected is None or value is None:
            continue
        actual = _JSON_TYPE_OF.get(type(value)) or _json_type(value)
        if actual != expected:
            problems.append(f"session entry {key!r}: field {name} should be a {expected}, got {actual}")
    return problems


def entry_problems(key: str, entry: Any) -> tuple[bool, list[str]]:
    """(usable, problems) of one row. Unusable rows are kept on disk but not loaded."""
    problem = row_problem(key, entry)
    if problem is not None:
        return False, [problem]
    return True, field_problems(key, entry)


# ---- numbers as written -------------------------------------------------------------------------
# (the lossless number and surrogate handling lives in jsonutil, shared with the SQLite readers)

_RawNumber = RawNumber

_NUMBER_CANDIDATE = lazy_pattern(
    globals(),
    "_NUMBER_CANDIDATE",
    rb"[:\[,]\s*+(?=[-\d])(-0(?![\d.eE])|-?\d+\.\d+(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+|-?\d{19,})(?=\s*[,\]}])",
)
_INT_MIN, _INT_MAX = INT_MIN, UINT_MAX
_float_token = exact_float
_int_token = exact_int


def _token_is_lossy(token: bytes) -> bool:
    text = token.decode()
    if text == "-0":
        return True
    if "." in text or "e" in text or "E" in text:
        return orjson.dumps(float(text)).decode() != text
    return not _INT_MIN <= int(text) <= _INT_MAX


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def _stream_row(
    buf: bytes, start: int, end: int, loads: Any, *, last: bool
) -> tuple[str, dict[str, Any] | None] | None:
    """One `"key": {…}` row cut out of a pretty-printed store: (key, entry, or None for an
    unusable row); None when the cut is not exactly one row (fall back to the whole parse)."""
    text = buf[start:end].rstrip()
    if last:
        if not text.endswith(b"}"):
            return None
        text = text[:-1].rstrip()
    elif not text.endswith(b","):
        return None
    else:
        text = text[:-1]
    try:
        parsed = loads(b"{" + text + b"}")
    except ValueError:
        return None
    if type(parsed) is not dict or len(parsed) != 1:
        return None
    ((key, row),) = parsed.items()
    sid = row.get("sessionId") if type(row) is dict else None
    if sid is not None and type(sid) is str and _FAST_SID.match(sid):
        return key, row
    return key, (row if row_problem(key, row) is None else None)


def parse_store_bytes(raw: bytes, *, lossless: bool = False) -> Any:
    """Parse `sessions.json`. With `lossless`, numbers whose text a rewrite would change are kept
    as `_RawNumber` (only when such numbers exist; otherwise the fast orjson result is used)."""
    fast_error: Exception | None = None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        fast_error, value = exc, None
    if fast_error is None and not (
        lossless and any(_token_is_lossy(m.group(1)) for m in _NUMBER_CANDIDATE.finditer(raw))
    ):
        return value
    # orjson rejects > 64-bit integers and lone surrogates, which JSON.parse accepts.
    try:
        return jsonutil.loads_exact(raw)
    except jsonutil.DocumentError as exc:  # not UTF-8, a BOM: say so (orjson's wording misleads)
        raise ValueError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(str(fast_error or exc)) from exc


def dump_store_bytes(store: dict[str, Any]) -> bytes:
    """JS `JSON.stringify(store, null, 2)`: 2-space indent, no trailing newline, UTF-8 unescaped."""
    try:
        return jsonutil.dumps_bytes(store, option=orjson.OPT_INDENT_2)  # deep rows included (issue 29 #8)
    except TypeError as exc:
        raise InvalidDataError(f"Cannot serialise the session store: {exc}") from exc


# ---- the store ----------------------------------------------------------------------------------


class _Snapshot(Record):
    _fields = ("signature", "rows", "entries", "row_issues", "store_issues")
    signature: tuple[int, int, int, int] | None
    rows: dict[str, Any]  # every row as parsed, file order
    entries: dict[str, dict[str, Any]]  # usable rows
    row_issues: dict[str, ReadIssue]  # key -> why it is unusable
    store_issues: list[ReadIssue] | None  # all row/field issues, computed on first access

    def __init__(
        self,
        signature: tuple[int, int, int, int] | None,
        rows: dict[str, Any],
        entries: dict[str, dict[str, Any]],
        row_issues: dict[str, ReadIssue] | None = None,
        store_issues: list[ReadIssue] | None = None,
    ) -> None:
        self.signature = signature
        self.rows = rows
        self.entries = entries
        self.row_issues = {} if row_issues is None else row_issues
        self.store_issues = store_issues


class LegacyStore(SessionStore):
    kind = KIND_LEGACY
    schema = None
    transcripts_in_files = True

    def __init__(self, store_path: Path, agent_id: str, *, database_absent: bool = False):
        self.path = Path(os.path.abspath(store_path))
        self.agent_id = normalize_agent_id(agent_id)
        self.sessions_dir = self.path.parent
        self._dir_prefix = os.path.join(str(self.sessions_dir), "")  # "<sessions dir>/"
        self._read_issues: list[ReadIssue] = []  # transcript problems met while reading
        self._issue_keys: set[tuple[str, int | None, str]] = set()
        self._snapshot: _Snapshot | None = None
        self._by_session_id: dict[str, dict[str, Any]] | None = None
        self._totals_cache: dict[Path, tuple[tuple[int, int, int], SessionTotals]] = {}
        # a database published after this (an import) supersedes the store; `database_absent`: the
        # caller chose this store because it saw none (no window between its check and ours)
        self._database_at_open = None if database_absent else self._imported_database()

    @property
    def issues(self) -> list[ReadIssue]:
        """Everything reported so far: unusable rows and wrongly typed fields of sessions.json (in
        file order), then transcript problems (malformed lines, symlinks) met while reading.
        An unreadable sessions.json shows here as one issue (load_entries() raises it)."""
        try:
            snapshot = self._load()
        except OpenClawError as exc:
            message = exc.message.removeprefix(f"{self.path}: ").removeprefix(f"{self.path} ")
            return [ReadIssue(str(self.path), None, message), *self._read_issues]
        if snapshot.store_issues is None:
            found: list[ReadIssue] = []
            for key, row in snapshot.rows.items():
                issue = snapshot.row_issues.get(key)
                if issue is not None:
                    found.append(issue)
                elif key in snapshot.entries:
                    found.extend(ReadIssue(str(self.path), None, p) for p in field_problems(key, row))
            snapshot.store_issues = found
        out = list(snapshot.store_issues)
        return out + self._read_issues

    # ---- reading sessions.json ---------------------------------------------------------------
    def exists(self) -> bool:
        return os.path.lexists(self.path)

    def change_probe(self) -> ChangeProbe | None:
        """sessions.json's identity, size and mtime (every write replaces it by rename)."""
        return FileProbe(str(self.path))

    def _signature(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        except NotADirectoryError as exc:
            raise InvalidDataError(f"{self.path}: parent path is not a directory") from exc
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def _read_bytes(self) -> bytes | None:
        """The raw file (None when missing); refuses symlinks and non-regular files."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            parent = self.path.parent
            if os.path.lexists(parent) and not parent.is_dir():
                raise InvalidDataError(f"{self.path}: parent path is not a directory") from None
            self._check_not_imported()  # gone because an import archived it: not an empty store
            return None
        except NotADirectoryError as exc:
            raise InvalidDataError(f"{self.path}: parent path is not a directory") from exc
        if stat.S_ISLNK(st.st_mode):
            raise RefusedError(
                f"{self.path}: is a symbolic link; refusing to follow it (move the real file here)"
            )
        if not stat.S_ISREG(st.st_mode):
            raise InvalidDataError(f"{self.path}: not a regular file")
        try:
            fd = os.open(self.path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        except OSError as exc:
            raise InvalidDataError(f"{self.path}: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def _parse(self, raw: bytes | None, *, lossless: bool = False) -> dict[str, Any]:
        if raw is None:
            return {}
        try:
            with gc_paused():  # thousands of new dicts: the cyclic GC would rescan them repeatedly
                value = parse_store_bytes(raw, lossless=lossless)
        except ValueError as exc:
            raise InvalidDataError(f"{self.path}: {exc}") from exc
        if not isinstance(value, dict):
            raise InvalidDataError(f"{self.path} does not contain an object session store.")
        return value

    def _load(self) -> _Snapshot:
        signature = self._signature()
        if self._snapshot is not None and self._snapshot.signature == signature and signature is not None:
            return self._snapshot
        raw = self._read_bytes()
        rows = self._parse(raw)
        if _all_fast_session_ids(rows):  # the usual file: every row usable, no per-row work
            snapshot = _Snapshot(signature, rows, rows, {})
            self._snapshot = snapshot
            self._by_session_id = None
            return snapshot
        entries: dict[str, dict[str, Any]] = {}
        row_issues: dict[str, ReadIssue] = {}
        for key, row in rows.items():
            # inline fast path of row_problem(): a dict with a plain ASCII session id
            sid = row.get("sessionId") if type(row) is dict else None
            if sid is not None and type(sid) is str and _FAST_SID.match(sid):
                entries[key] = row
                continue
            problem = row_problem(key, row)
            if problem is None:
                entries[key] = row
            else:
                row_issues[key] = ReadIssue(str(self.path), None, problem)
        snapshot = _Snapshot(signature, rows, entries, row_issues)
        self._snapshot = snapshot
        self._by_session_id = None
        return snapshot

    def _note(self, issue: ReadIssue, issues: list[ReadIssue] | None) -> None:
        if issues is not None:
            issues.append(issue)
            return
        key = (issue.path, issue.line, issue.message)
        if key not in self._issue_keys:
            self._issue_keys.add(key)
            self._read_issues.append(issue)

    def load_entries(self) -> dict[str, dict[str, Any]]:
        """Usable rows, key → entry as stored, in file order. The entry dicts are shared with a
        cache: copy one before changing it unless you save it right after."""
        return dict(self._load().entries)

    def skipped_rows(self) -> list[ReadIssue]:
        """Rows of sessions.json that are not listed (not an object, no usable sessionId), each
        with why; they stay in the file untouched."""
        return list(self._load().row_issues.values())

    def load_rows(self) -> dict[str, Any]:
        """Every row of the file, unusable ones included (for repair and inspection tools)."""
        return dict(self._load().rows)

    def get_entry(self, key: str) -> dict[str, Any] | None:
        return self._load().entries.get(key)

    def count_entries(self) -> int:
        return len(self._load().entries)

    def _entry_for_session(self, session_id: str) -> dict[str, Any] | None:
        snapshot = self._load()
        if self._by_session_id is None:
            index: dict[str, dict[str, Any]] = {}
            for entry in snapshot.entries.values():
                index.setdefault(entry["sessionId"].strip(), entry)
            self._by_session_id = index
        return self._by_session_id.get(session_id.strip() if isinstance(session_id, str) else session_id)

    # ---- transcripts ----------------------------------------------------------------------
    def resolve_transcript(
        self,
        session_id: str,
        entry: dict[str, Any] | None = None,
        issues: list[ReadIssue] | None = None,
        *,
        _index: dict[str, str] | None = None,
    ) -> Path | None:
        """The existing transcript file of a session (never through a symlink), or None."""
        if not session_id_ok(session_id):
            self._note(
                ReadIssue(str(self.path), None, f"invalid session id {session_id!r}; no transcript read"),
                issues,
            )
            return None
        if entry is None:
            entry = self._entry_for_session(session_id)
        session_file = entry.get("sessionFile") if isinstance(entry, dict) else None
        if not isinstance(session_file, str):
            session_file = None
        root = self.sessions_dir
        names = self._candidate_names(session_id, session_file)
        if names is None:  # an unusual sessionFile (sub-directory, Windows path): the general rule
            for candidate in transcript_candidates(root, session_id, session_file):
                if safe_regular_file(candidate, root):
                    return candidate
                if _reached_through_symlink(candidate, root):
                    self._note_symlink(candidate, issues)
            return None
        for name in names:
            kind = _index.get(name) if _index is not None else _entry_kind(root / name)
            if kind == "file":
                return root / name
            if kind == "link":
                self._note_symlink(root / name, issues)
        return None

    def _note_symlink(self, path: Path, issues: list[ReadIssue] | None) -> None:
        self._note(
            ReadIssue(str(path), None, "transcript is a symbolic link; not followed (treated as missing)"),
            issues,
        )

    def _candidate_names(self, session_id: str, session_file: str | None) -> list[str] | None:
        """paths.transcript_candidates for the common cases, as plain names in the sessions dir
        (no pathlib work: listing 20,000 rows must stay fast). None: use the general rule."""
        default = f"{session_id.strip()}.jsonl"
        if session_file is None or not session_file or session_file.startswith("sqlite:"):
            return [default]
        prefix = self._dir_prefix
        if (
            session_file.startswith(prefix)
            and session_file.find("/", len(prefix)) < 0
            and "\\" not in session_file
        ):
            # `<sessions dir>/<name>` (what OpenClaw writes): already normalised, no pathlib needed
            name = session_file[len(prefix) :]
            if name in ("", ".", ".."):
                return [default]
            return [name] if name == default else [name, default]
        if "\\" in session_file or session_file in (".", ".."):
            return None
        if "/" not in session_file:
            name = session_file
        elif session_file.startswith("/"):
            normalized = os.path.normpath(session_file)
            root = str(self.sessions_dir)
            if normalized.startswith(root + os.sep) and os.path.dirname(normalized) != root:
                return None  # inside a sub-directory of the sessions dir
            name = os.path.basename(session_file)
            if not name or name in (".", ".."):
                return [default]
        else:
            return None
        return [name] if name == default else [name, default]

    def _dir_index(self) -> dict[str, str]:
        """name -> "file" | "link" | "other" for the sessions dir, from one directory scan."""
        try:  # the file types come with the directory listing: no system call per entry
            with os.scandir(self.sessions_dir) as it:  # (no list of 100,000 DirEntry objects)
                return {
                    item.name: "link"
                    if item.is_symlink()
                    else "file"
                    if item.is_file(follow_symlinks=False)
                    else "other"
                    for item in it
                }
        except FileNotFoundError:
            return {}
        except OSError:  # a type the listing did not give and lstat could not find (entry vanished)
            pass
        index: dict[str, str] = {}
        try:
            with os.scandir(self.sessions_dir) as it:
                for item in it:
                    try:
                        if item.is_symlink():
                            index[item.name] = "link"
                        elif item.is_file(follow_symlinks=False):
                            index[item.name] = "file"
                        else:
                            index[item.name] = "other"
                    except OSError:
                        continue
        except OSError:
            pass
        return index

    def _dir_sizes(self) -> tuple[dict[str, str], dict[str, int], dict[str, str]]:
        """`_dir_index()` plus the size of every regular file, from one listing and one lstat per
        entry (stats needs nearly every size: a scan for the types first would walk it twice),
        plus `<sessions dir>/<name>` → name of the regular files (see `_resolve_rows`)."""
        try:
            names = os.listdir(self.sessions_dir)
        except OSError:
            return {}, {}, {}
        index: dict[str, str] = {}
        sizes: dict[str, int] = {}
        paths: dict[str, str] = {}
        lstat, prefix, type_mask = os.lstat, self._dir_prefix, 0o170000
        for name in names:
            path = prefix + name
            try:
                st = lstat(path)
            except OSError:
                continue  # vanished since the listing
            kind = st.st_mode & type_mask
            if kind == stat.S_IFREG:
                index[name] = "file"
                sizes[name] = st.st_size
                paths[path] = name
            else:
                index[name] = "link" if kind == stat.S_IFLNK else "other"
        return index, sizes, paths

    def iter_transcript(
        self, session_id: str, *, entry: dict[str, Any] | None = None, issues: list[ReadIssue] | None = None
    ) -> Iterator[TranscriptLine]:
        path = self.resolve_transcript(session_id, entry, issues)
        if path is None:
            return iter(())
        return iter_jsonl(path, issues=issues if issues is not None else self._read_issues)

    def tail_transcript(
        self,
        session_id: str,
        n: int,
        *,
        entry: dict[str, Any] | None = None,
        issues: list[ReadIssue] | None = None,
    ) -> list[TranscriptLine]:
        path = self.resolve_transcript(session_id, entry, issues)
        if path is None:
            return []
        return tail_jsonl(path, n, issues=issues if issues is not None else self._read_issues)

    def has_transcript(self, session_id: str, *, entry: dict[str, Any] | None = None) -> bool:
        return self.resolve_transcript(session_id, entry) is not None

    def _totals_for(self, path: Path) -> SessionTotals:
        try:
            st = os.lstat(path)
        except OSError:
            return SessionTotals(0, 0)
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._totals_cache.get(path)
        if cached is not None and cached[0] == sig:
            return cached[1]
        events, size = count_lines(path)
        totals = SessionTotals(events=events, bytes=size)
        self._totals_cache[path] = (sig, totals)
        return totals

    def session_totals(self) -> dict[str, SessionTotals]:
        """sessionId → (non-blank lines, bytes without newlines) of its transcript file, counted
        from the file (cached per file while it is unchanged). Sessions without a file: absent."""
        out: dict[str, SessionTotals] = {}
        index = self._dir_index()
        for entry in self._load().entries.values():
            sid = entry["sessionId"].strip()
            if sid in out:
                continue
            path = self.resolve_transcript(sid, entry, _index=index)
            if path is not None:
                out[sid] = self._totals_for(path)
        return out

    def list_archives(self) -> list[ArchiveFile]:
        return archives_mod.list_archives(self.sessions_dir)

    # ---- layout facts ------------------------------------------------------------------------------
    def legacy_data_present(self) -> bool:
        if self.path.exists():
            return True
        from openclaw_cli.store.files import has_transcript_files

        return has_transcript_files(self.sessions_dir)

    def preview_session_bytes(self) -> dict[str, int] | None:
        return None  # sizes would mean a stat of every transcript: previews go without them

    def stored_session_totals(self) -> dict[str, SessionTotals]:
        return {}  # nothing is kept at write time: counting means reading every file

    def transcript_file_bytes(self, session_id: str, entry: dict[str, Any]) -> int | None:
        path = self.resolve_transcript(session_id, entry, [])
        if path is None:
            return None
        try:
            return os.lstat(path).st_size
        except OSError:
            return None

    def locate_transcript(self, session_id: str, entry: dict[str, Any], issues: list[ReadIssue]) -> bool:
        return self.resolve_transcript(session_id, entry, issues) is not None

    # ---- the write protocol ------------------------------------------------------------------------
    @contextmanager
    def write_lock(self, lock_settings: Any) -> Iterator[None]:
        """OpenClaw's write lock on `sessions.json` (§12), held for the whole mutation: an
        OpenClaw runtime writer waits for us and we wait for it. `doctor --session-sqlite import`
        holds the same lock from its snapshot of this store until it published or rolled back
        (issue 29 #4): a write that waited for it and finds the store imported meanwhile would be
        undone (the import did not see it), so it is refused as busy — run again, it then goes to
        the database."""
        from openclaw_cli.store.lock import transcript_lock

        with transcript_lock(self.path, lock_settings, allow_reentrant=True):
            self._check_not_imported()
            yield

    def ensure_not_moved(self) -> None:
        self._check_not_imported()

    def _check_not_imported(self) -> None:
        """Busy when an import published a database for this store since it was opened."""
        if self._database_at_open is None:
            imported = self._imported_database()
            if imported is not None:
                raise SessionBusyError(
                    f"session store {self.path} was imported into SQLite ({imported}) while this command ran; "
                    "nothing was changed. Run the command again: it now uses the database."
                )

    def _imported_database(self) -> Path | None:
        """The database an import published for this store (a 0-byte placeholder is none)."""
        from openclaw_cli.paths import sqlite_for_store

        for shared in (False, True):
            db = sqlite_for_store(self.path, self.agent_id, shared=shared)
            try:
                st = os.lstat(db)
            except OSError:
                continue
            if st.st_size > 0 or not stat.S_ISREG(st.st_mode):
                return db
        return None

    def read_snapshot(
        self, key: str, entry: dict[str, Any], *, data_on_demand: bool = False, on_entry: Any = None
    ) -> Any:
        from openclaw_cli.store.snapshot import read_file_snapshot

        return read_file_snapshot(self, key, entry, data_on_demand=data_on_demand, on_entry=on_entry)

    def commit_compaction(
        self,
        snapshot: Any,
        comp: dict[str, Any],
        *,
        rotate: bool,
        now_ms: int,
        lock_settings: Any,
        reason: str = "manual",
    ) -> Any:
        from openclaw_cli.store.legacy.compaction import commit_compaction

        return commit_compaction(
            snapshot, comp, rotate=rotate, now_ms=now_ms, lock_settings=lock_settings, reason=reason
        )

    def pending_rotation(self, snapshot: Any) -> dict[str, Any] | None:
        from openclaw_cli.store.legacy.compaction import pending_rotation

        return pending_rotation(snapshot)

    def finish_rotation(
        self, snapshot: Any, comp: dict[str, Any], *, now_ms: int, lock_settings: Any, reason: str = "manual"
    ) -> Any:
        from openclaw_cli.store.legacy.compaction import finish_rotation

        return finish_rotation(snapshot, comp, now_ms=now_ms, lock_settings=lock_settings, reason=reason)

    def commit_max_lines(
        self,
        snapshot: Any,
        kept: list[bytes],
        *,
        now_ms: int,
        lock_settings: Any,
        keep_session_id: bool = True,
    ) -> Any:  # the id is kept here anyway; the flag says which release's row change (2026.9.6+ clears usage)
        from openclaw_cli.store.legacy.compaction import commit_max_lines

        return commit_max_lines(
            snapshot, kept, now_ms=now_ms, lock_settings=lock_settings, clears_usage=keep_session_id
        )

    def retire(
        self,
        plan: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        checkpoint: Any,
        progress: Any = None,
        leaving: LeavingHook | None = None,
    ) -> Any:
        from openclaw_cli.store.legacy.retire import retire

        return retire(
            self,
            plan,
            lock_settings=lock_settings,
            now_ms=now_ms,
            checkpoint=checkpoint,
            progress=progress,
            leaving=leaving,
        )

    def retire_all(self, *, lock_settings: Any, now_ms: int, checkpoint: Any) -> tuple[Any, int, int]:
        from openclaw_cli.store.legacy.retire import retire_all

        return retire_all(self, lock_settings=lock_settings, now_ms=now_ms, checkpoint=checkpoint)

    def session_id_taken(self, session_id: str) -> bool:
        if (Path(self.sessions_dir) / f"{session_id}.jsonl").exists():
            return True
        return any(entry.get("sessionId") == session_id for entry in self.load_entries().values())

    def restore_session(
        self, key: str, entry: dict[str, Any], content: bytes, *, lock_settings: Any, now_ms: int
    ) -> RestoreOutcome:
        from openclaw_cli.store.legacy.restore import restore_session

        self.ensure_writable("restore a session")
        return restore_session(self, key, entry, content, lock_settings=lock_settings)

    def patch_entry(
        self, key: str, mutate: Any, *, lock_settings: Any, create: bool = False, now_ms: int | None = None
    ) -> Any:
        from openclaw_cli.store.legacy.lifecycle import patch_entry

        return patch_entry(self, key, mutate, lock_settings=lock_settings, create=create)

    def archive_rows(
        self,
        archives: Any,
        *,
        archived_at: int,
        expected: Any,
        lock_settings: Any,
        remove: Iterable[str] = (),
    ) -> list[str]:
        """One read-modify-write of sessions.json for every row (not one per row); the rows
        `remove` names (a cleanup's removals) leave in the same rewrite."""
        from openclaw_cli.store.base import archive_mutation
        from openclaw_cli.store.lock import transcript_lock

        self.ensure_writable("archive sessions")
        gone = list(dict.fromkeys(remove))
        with transcript_lock(self.path, lock_settings, allow_reentrant=True):
            current = self.load_entries()
            updates = {}
            for key, reason in archives.items():
                row = current.get(key)
                updated = archive_mutation(reason, archived_at, expected.get(key))(
                    dict(row) if row is not None else None
                )
                if updated is not None:
                    updates[key] = updated
            for key, entry in updates.items():
                _check_entry_for_write(key, entry)
            raw = self._read_for_write()
            present = [key for key in gone if key in raw]
            changed = {k: e for k, e in updates.items() if not (k in raw and raw[k] == e)}
            if present or changed:
                for key in present:
                    del raw[key]
                raw.update(changed)  # an unchanged row keeps its original text
                self._write(raw)
        return list(updates)

    def reset_session(
        self, key: str, build: Any, *, lock_settings: Any, now_ms: int, marker: dict[str, Any] | None = None
    ) -> Any:
        from openclaw_cli.store.legacy.lifecycle import reset_session

        return reset_session(self, key, build, lock_settings=lock_settings, now_ms=now_ms, marker=marker)

    def switch_branch(self, key: str, leaf_id: str, build: Any, *, lock_settings: Any, now_ms: int) -> Any:
        from openclaw_cli.store.legacy.lifecycle import switch_branch

        return switch_branch(self, key, leaf_id, build, lock_settings=lock_settings, now_ms=now_ms)

    def fork_session(
        self,
        parent_key: str,
        child_key: str,
        build: Any,
        *,
        lock_settings: Any,
        now_ms: int,
        max_tokens: int,
        wait: bool = False,
        through_last_completed: bool = False,
        at_entry: str | None = None,
    ) -> Any:
        from openclaw_cli.store.legacy.lifecycle import fork_session

        return fork_session(
            self,
            parent_key,
            child_key,
            build,
            lock_settings=lock_settings,
            now_ms=now_ms,
            max_tokens=max_tokens,
            wait=wait,
            through_last_completed=through_last_completed,
            at_entry=at_entry,
        )

    def export_transcript(
        self, session_id: str, dest: Any, *, entry: dict[str, Any] | None = None
    ) -> SessionTotals:
        """The transcript file's bytes as they are (malformed lines included), streamed; a missing
        transcript writes nothing."""
        path = self.resolve_transcript(session_id, entry, [])
        events = total = 0
        if path is None:
            return SessionTotals(events=0, bytes=0)
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            for raw in fh:
                dest.write(raw)
                stripped = raw.rstrip(b"\r\n")
                if stripped.strip():
                    events += 1
                    total += len(stripped)
        return SessionTotals(events=events, bytes=total)

    def _resolve_rows(
        self,
        index: dict[str, str],
        paths: dict[str, str] | None = None,
    ) -> tuple[list[str], list[str | Path | None]]:
        """(keys, transcripts) of the usable rows, aligned: each row's existing transcript as a
        name in the sessions dir, a Path below it (an unusual `sessionFile`), or None. Resolves
        like `resolve_transcript` from one directory scan, without pathlib per row (20,000 rows).
        `paths`: `<sessions dir>/<name>` → name of the regular files, when the scan made it."""
        entries = self._load().entries
        keys, rows = list(entries), list(entries.values())
        # The usual row: `sessionFile` is `<sessions dir>/<name>` of an existing file, which is
        # its first candidate (`_candidate_names`): one C-level lookup per row.
        prefix = self._dir_prefix
        if paths is None:
            paths = {prefix + name: name for name, kind in index.items() if kind == "file"}
        files = (
            paths
            if not any("\\" in name for name in paths.values())
            else {path: name for path, name in paths.items() if "\\" not in name}
        )
        refs = [row.get("sessionFile") for row in rows]
        try:
            lookup: Any = files.get
            found: list[str | Path | None] = list(map(lookup, refs))
        except TypeError:  # an unhashable sessionFile (a list, an object): those rows go the long way
            found = [files.get(ref) if type(ref) is str else None for ref in refs]
        root = self.sessions_dir
        candidate_names = self._candidate_names
        for i in [i for i, name in enumerate(found) if name is None]:
            entry, session_file = rows[i], refs[i]
            sid = entry["sessionId"]
            names = candidate_names(sid, session_file if isinstance(session_file, str) else None)
            if names is None:
                path = self.resolve_transcript(sid, entry, _index=index)
                found[i] = path.name if path is not None and path.parent == root else path
                continue
            for candidate in names:
                kind = index.get(candidate)
                if kind == "file":
                    found[i] = candidate
                    break
                if kind == "link":
                    self._note_symlink(root / candidate, None)
        return keys, found

    def _referenced(self, index: dict[str, str]) -> tuple[dict[str, list[str]], dict[Path, list[str]]]:
        """Existing transcripts of the usable rows → keys of the rows using them: plain names in
        the sessions dir, and paths elsewhere below it."""
        by_name: dict[str, list[str]] = {}
        by_path: dict[Path, list[str]] = {}
        for key, found in zip(*self._resolve_rows(index), strict=True):
            if isinstance(found, str):
                by_name.setdefault(found, []).append(key)
            elif found is not None:
                by_path.setdefault(found, []).append(key)
        return by_name, by_path

    def referenced_transcripts(self, *, _index: dict[str, str] | None = None) -> dict[Path, list[str]]:
        """Existing transcript path → keys of the rows that use it (one directory scan)."""
        by_name, by_path = self._referenced(self._dir_index() if _index is None else _index)
        root = self.sessions_dir
        return {**{root / name: keys for name, keys in by_name.items()}, **by_path}

    def iter_rows_with_transcripts(
        self, rows: Iterable[tuple[str, dict[str, Any]]] | None = None, index: dict[str, str] | None = None
    ) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        """(key, entry, transcript file or None) of every usable row, in file order, holding one
        row at a time where the file allows it (`_iter_rows_streamed`): `openclaw storage` on
        100,000 rows stays flat in memory. The transcript is resolved like `_resolve_rows` does,
        from one directory scan, as a path string. `rows`: (key, file facts) of the rows as
        `load_file_facts` made them (not read again; each resolves to the same file as its whole
        entry). `index`: the sessions dir's `_dir_index()` as the caller listed it this run."""
        if index is None:
            index = self._dir_index()
        prefix = self._dir_prefix
        root = self.sessions_dir
        candidate_names = self._candidate_names
        plen = len(prefix)
        for key, entry in self._iter_rows_streamed() if rows is None else rows:
            ref = entry.get("sessionFile")
            if type(ref) is str and ref.startswith(prefix):
                # the usual row: `<sessions dir>/<name>` of a regular file (its first candidate)
                name = ref[plen:]
                if "/" not in name and "\\" not in name and index.get(name) == "file" and name != "..":
                    yield key, entry, ref
                    continue
            sid = entry["sessionId"]
            if ref is None and type(sid) is str:
                # a facts row whose `sessionFile` was its default (left out of the facts) or a row
                # without one: `candidate_names(sid, None)` is that one name
                name = sid.strip() + ".jsonl"
                if index.get(name) == "file":
                    yield key, entry, prefix + name
                    continue
            names = candidate_names(sid, ref if type(ref) is str else None)
            found: str | None = None
            if names is None:
                path = self.resolve_transcript(sid, entry, _index=index)
                found = None if path is None else str(path)
            else:
                for candidate in names:
                    kind = index.get(candidate)
                    if kind == "file":
                        found = prefix + candidate
                        break
                    if kind == "link":
                        self._note_symlink(root / candidate, None)
            yield key, entry, found

    def load_file_facts(
        self, on_row: Callable[[str, dict[str, Any]], None] | None = None
    ) -> dict[str, Any] | None:
        """Every row's file facts (`facts.file_entry_facts`) made one row at a time as the file is
        cut (`_split_rows`): at 100,000 rows ~50 MB instead of ~350 MB of whole entries. None when
        a row is unusable, the layout is not the one the cutter reads, or the file is already held
        whole (then the whole entries cost nothing more). `on_row(key, entry)` sees each whole
        usable row as it passes (`openclaw storage` takes what its tally needs of it there)."""
        from openclaw_cli.store.facts import file_entry_facts

        signature = self._signature()
        if signature is None or (self._snapshot is not None and self._snapshot.signature == signature):
            return None
        root = str(self.sessions_dir)  # (the default transcript's reference left out: see there)
        normalised = root.startswith("/") and not root.startswith("//") and os.path.normpath(root) == root
        prefix = self._dir_prefix if normalised and root != "/" else None
        out: dict[str, Any] = {}
        state = [False]
        unusable = [False]
        with gc_paused():
            for key, entry in self._split_rows(1 << 20, set(), state, unusable):
                out[key] = file_entry_facts(entry, prefix)
                if on_row is not None:
                    on_row(key, entry)
        if not state[0] or unusable[0] or self._signature() != signature:
            return None  # (a row the cutter doubts, an unusable row, or a write meanwhile)
        return out

    def _iter_rows_streamed(self, block: int = 1 << 20) -> Iterator[tuple[str, dict[str, Any]]]:
        """The usable rows, one at a time. A file laid out as `JSON.stringify(store, null, 2)`
        writes it (what OpenClaw and `dump_store_bytes` write: every top-level key starts a line
        with exactly two spaces, and JSON strings hold no raw newline) is cut at those lines and
        each row parsed alone; anything else — another layout, a row orjson cannot parse (huge
        integers), a repeated key — falls back to the whole-file parse (`_load`), skipping the rows
        already given (the same rows, in the same order)."""
        seen: set[str] = set()
        state = [False]  # every row read
        yield from self._split_rows(block, seen, state)
        if state[0]:
            return
        snapshot = self._load()
        skip = len(seen)
        for key in snapshot.rows:
            if skip:
                skip -= 1
                continue
            entry = snapshot.entries.get(key)
            if entry is not None:
                yield key, entry

    def _split_rows(
        self, block: int, seen: set[str], state: list[Any], unusable: list[bool] | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        except OSError:
            return
        with os.fdopen(fd, "rb", buffering=0) as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return
            head = fh.read(5)
            if head != b'{\n  "':
                return
            rest = head[2:]
            loads, mark = orjson.loads, b'\n  "'
            while True:
                data = fh.read(block)
                buf = rest + data if data else rest
                start = 0
                while (cut := buf.find(mark, start)) >= 0:
                    row = _stream_row(buf, start, cut, loads, last=False)
                    if row is None or row[0] in seen:
                        return  # a cut the per-row parse doubts: the whole file decides
                    seen.add(row[0])
                    start = cut + 1
                    if row[1] is not None:
                        yield row[0], row[1]
                    elif unusable is not None:
                        unusable[0] = True
                rest = buf[start:]
                if not data:
                    break
            row = _stream_row(rest, 0, len(rest), loads, last=True)
            if row is None or row[0] in seen:
                return
            seen.add(row[0])
            if row[1] is not None:
                yield row[0], row[1]
            elif unusable is not None:
                unusable[0] = True
            state[0] = True

    def stats(self, *, count_issues: bool = True) -> StoreStats:
        """Counts from sessions.json and one scan of the sessions dir (transcripts are not read,
        only their sizes). `count_issues=False` leaves out `extra["issues"]`, which checks every
        field of every row (read-only summaries that do not show it skip that scan)."""
        entries = self._load().entries
        index, sizes, paths = self._dir_sizes()
        found = self._resolve_rows(index, paths)[1]
        by_name: set[Any] = set(found)
        by_name.discard(None)
        by_path = {p for p in by_name if not isinstance(p, str)}
        by_name -= by_path
        prefix = self._dir_prefix
        # (a name resolved outside the listing — created since — is measured now)
        transcript_bytes = sum(
            sizes[name] if name in sizes else _sizes([prefix + name])[0] or 0 for name in by_name
        )
        transcript_bytes += sum(size for size in _sizes(list(by_path)) if size)
        orphan_sizes = [
            size
            for name, size in sizes.items()
            if name not in by_name and archives_mod.is_primary_transcript_name(name)
        ]
        orphans, orphan_bytes = len(orphan_sizes), sum(orphan_sizes)
        archives = archives_mod.list_archives(self.sessions_dir, index)
        compactions = 0
        for entry in entries.values():
            count = entry.get("compactionCount")
            if type(count) is int and count > 0:
                compactions += count
        extra: dict[str, Any] = {
            "missingTranscripts": found.count(None),
            "orphanTranscripts": orphans,
            "orphanTranscriptBytes": orphan_bytes,
        }
        if count_issues:
            extra["issues"] = len(self.issues)
        extra["compactionsSource"] = "entries.compactionCount"
        return StoreStats(
            sessions=len(entries),
            transcript_bytes=transcript_bytes,
            transcript_events=None,  # counting needs a full scan: see session_totals()
            archives_count=len(archives),
            archives_bytes=sum(a.size for a in archives),
            compactions=compactions,
            extra=extra,
        )

    # ---- writes -----------------------------------------------------------------------------
    def _write(self, rows: dict[str, Any]) -> None:
        atomic_write_bytes(self.path, dump_store_bytes(rows))
        self._snapshot = None
        self._by_session_id = None

    def _read_for_write(self) -> dict[str, Any]:
        """The current file, parsed losslessly; refuses to overwrite a file it cannot read."""
        return self._parse(self._read_bytes(), lossless=True)

    def save_entries(
        self, entries: dict[str, dict[str, Any]], *, lock_settings: LockSettingsLike | None = None
    ) -> None:
        """Replace the store's usable rows with `entries` (atomic). Rows already in the file keep
        their position and, when unchanged, their exact text; new keys are appended; unusable
        rows (see `store.issues`) are kept unless `entries` names their key."""
        self.ensure_writable("write sessions.json")
        for key, entry in entries.items():
            _check_entry_for_write(key, entry)
        from openclaw_cli.store.lock import transcript_lock

        with transcript_lock(self.path, lock_settings, allow_reentrant=True):
            current = self._read_for_write()
            out: dict[str, Any] = {}
            for key, row in current.items():
                if key in entries:
                    out[key] = row if row == entries[key] else entries[key]
                elif not entry_problems(key, row)[0]:
                    out[key] = row  # never drop what we could not read
            for key, entry in entries.items():
                if key not in out:
                    out[key] = entry
            self._write(out)

    def upsert_entries(
        self, updates: dict[str, dict[str, Any]], *, lock_settings: LockSettingsLike | None = None
    ) -> None:
        """Insert or replace rows (read-modify-write of sessions.json under its lock)."""
        self.ensure_writable("write sessions.json")
        if not updates:
            return
        for key, entry in updates.items():
            _check_entry_for_write(key, entry)
        from openclaw_cli.store.lock import transcript_lock

        with transcript_lock(self.path, lock_settings, allow_reentrant=True):
            current = self._read_for_write()
            for key, entry in updates.items():
                if key in current and current[key] == entry:
                    continue  # keep the original text of an unchanged row
                current[key] = entry
            self._write(current)

    def delete_entries(
        self, keys: Iterable[str], *, lock_settings: LockSettingsLike | None = None
    ) -> list[str]:
        """Remove rows by key (usable or not); returns the keys that were present."""
        self.ensure_writable("write sessions.json")
        wanted = list(dict.fromkeys(keys))
        from openclaw_cli.store.lock import transcript_lock

        with transcript_lock(self.path, lock_settings, allow_reentrant=True):
            current = self._read_for_write()
            removed = [key for key in wanted if key in current]
            if not removed:
                return []
            for key in removed:
                del current[key]
            self._write(current)
        return removed

    def transcript_path(self, session_id: str, entry: dict[str, Any] | None = None) -> Path:
        """Where the session's transcript is (existing file) or will be created."""
        existing = self.resolve_transcript(session_id, entry, issues=[])
        if existing is not None:
            return existing
        sid = (
            validate_session_id(session_id)
            if isinstance(session_id, str)
            else validate_session_id(str(session_id))
        )
        if entry is None:
            entry = self._entry_for_session(sid)
        session_file = entry.get("sessionFile") if isinstance(entry, dict) else None
        root = self.sessions_dir
        if isinstance(session_file, str):
            for candidate in transcript_candidates(root, sid, session_file):
                if candidate.parent == root and archives_mod.is_primary_transcript_name(candidate.name):
                    return candidate  # e.g. a topic transcript `<id>-topic-<n>.jsonl` not written yet
        return root / f"{sid}.jsonl"

    def append_transcript(
        self,
        session_id: str,
        raw_lines: Iterable[str | bytes],
        *,
        entry: dict[str, Any] | None = None,
        lock_settings: LockSettingsLike | None = None,
        cwd: str | None = None,
        now_ms: int | None = None,
    ) -> Path:
        """Append raw JSON lines under OpenClaw's transcript lock. A new (or empty) transcript
        starts with a v4 header `{"type":"session","version":4,"id","timestamp","cwd"}`."""
        self.ensure_writable("append to a transcript")
        path = self.transcript_path(session_id, entry)
        if os.path.islink(path) or _reached_through_symlink(path, self.sessions_dir):
            raise RefusedError(f"Refusing to write transcript {path}: it is reached through a symbolic link")
        ms = clock.now_ms() if now_ms is None else int(now_ms)
        header = header_line(
            session_id.strip(), timestamp=iso_ms(ms), cwd=cwd if cwd is not None else os.getcwd()
        )
        append_jsonl(path, raw_lines, lock_settings=lock_settings, header=header)
        return path


def _check_entry_for_write(key: Any, entry: Any) -> None:
    if not isinstance(key, str) or not key:
        raise InvalidDataError(f"Invalid session key: {key!r}")
    if not isinstance(entry, dict):
        raise InvalidDataError(f"Session entry {key!r} must be an object.")
    if not session_id_ok(entry.get("sessionId")):
        raise InvalidIdError(f"Invalid session ID: {entry.get('sessionId')}")


def _sizes(paths: list[str | Path]) -> list[int | None]:
    """lstat sizes (None for a file that vanished)."""
    lstat = os.lstat
    try:
        return [lstat(path).st_size for path in paths]  # one pass without per-file exception frames
    except OSError:
        pass
    out: list[int | None] = []
    for path in paths:
        try:
            out.append(lstat(path).st_size)
        except OSError:
            out.append(None)
    return out


def _entry_kind(path: Path) -> str | None:
    """ "file", "link", "other" or None (missing) without following a symlink."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "other"


def _reached_through_symlink(path: Path, root: Path) -> bool:
    """True when `path` (inside `root`) or one of its directories below `root` is a symlink."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return False
    current = root
    for part in relative.parts:
        current = current / part
        try:
            if current.is_symlink():
                return True
        except OSError:
            return False
    return False
