"""Pure disk-budget math (`maintenance.md` §6): no I/O, inputs are snapshots.

Two measurements:

* legacy directory store (§6.2): bytes of the regular files in the sessions dir, with
  `sessions.json` counted as it *would* be written (JS `JSON.stringify(store, null, 2)`);
* SQLite store (§6.3, G1 logical bytes): entry JSON bytes plus per-session transcript bytes,
  each session counted once and released with its last referencing entry.

Both return the §6.1 result object (`DiskBudgetResult.to_json()`, OpenClaw's keys in order) and
what to remove, in order. Trigger is `total > maxBytes`; target is `total <= highWaterBytes`,
re-checked before every removal. Warn-only mode reports `overBudget` and removes nothing.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.paths import transcript_candidates
from openclaw_cli.records import FrozenRecord, Record
from openclaw_cli.store.facts import compact_bytes
from openclaw_cli.store.files import DirFile, DirSnapshot
from openclaw_cli.store.names import (  # noqa: F401 - re-exported for the cleanup modules
    archive_stamp_ms as parse_archive_timestamp,
)
from openclaw_cli.store.names import (
    is_archive_artifact_name,
    is_primary_transcript_name,
    is_store_temp_name,
    is_trajectory_name,
)

STALE_TEMP_MS = 5 * 60 * 1000  # a store temp younger than this is a live atomic write (§6.2)

ProtectedFn = Callable[[str, Mapping[str, Any]], bool]
SessionIdsFn = Callable[[Mapping[str, Any]], Iterable[str]]


# ---- the §6.1 result object ---------------------------------------------------------------------


class DiskBudgetResult(FrozenRecord):
    __slots__ = _fields = (
        "total_bytes_before",
        "total_bytes_after",
        "removed_files",
        "removed_entries",
        "freed_bytes",
        "max_bytes",
        "high_water_bytes",
        "over_budget",
    )
    total_bytes_before: int
    total_bytes_after: int
    removed_files: int
    removed_entries: int
    freed_bytes: int
    max_bytes: int
    high_water_bytes: int
    over_budget: bool

    def __init__(
        self,
        total_bytes_before: int,
        total_bytes_after: int,
        removed_files: int,
        removed_entries: int,
        freed_bytes: int,
        max_bytes: int,
        high_water_bytes: int,
        over_budget: bool,
    ) -> None:
        self._assign(
            total_bytes_before,
            total_bytes_after,
            removed_files,
            removed_entries,
            freed_bytes,
            max_bytes,
            high_water_bytes,
            over_budget,
        )

    def to_json(self) -> dict[str, Any]:
        """OpenClaw's `SessionDiskBudgetSweepResult`, keys in OpenClaw's order."""
        return {
            "totalBytesBefore": self.total_bytes_before,
            "totalBytesAfter": self.total_bytes_after,
            "removedFiles": self.removed_files,
            "removedEntries": self.removed_entries,
            "freedBytes": self.freed_bytes,
            "maxBytes": self.max_bytes,
            "highWaterBytes": self.high_water_bytes,
            "overBudget": self.over_budget,
        }


def budget_limits(max_bytes: int | None, high_water_bytes: int | None) -> tuple[int, int] | None:
    """(max, high water) or None when the budget is disabled ([R]: `maxDiskBytes <= 0` disables)."""
    if not _is_int(max_bytes) or max_bytes <= 0:
        return None
    if not _is_int(high_water_bytes):
        return None
    return max_bytes, min(max(high_water_bytes, 0), max_bytes)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _idle(total: int, max_bytes: int, high: int, over: bool) -> DiskBudgetResult:
    return DiskBudgetResult(total, total, 0, 0, 0, max_bytes, high, over)


class FileRemoval(FrozenRecord):
    """One file the budget removes. `needs_archive` marks transcript content (primary transcripts,
    compaction checkpoints): D15 requires a verified archive before the original goes."""

    __slots__ = _fields = ("name", "size", "kind", "needs_archive", "session_id")
    name: str  # path relative to the sessions dir, `/`-separated
    size: int
    kind: str  # archive | store-temp | prompt-blob | checkpoint | trajectory | transcript
    needs_archive: bool
    session_id: str | None  # set when released by an evicted entry

    def __init__(
        self, name: str, size: int, kind: str, needs_archive: bool, session_id: str | None = None
    ) -> None:
        self._assign(name, size, kind, needs_archive, session_id)


class BudgetPlan(Record):
    _fields = ("result", "evicted_keys", "file_removals", "released_session_ids")
    result: DiskBudgetResult | None
    evicted_keys: list[str]
    file_removals: list[FileRemoval]
    released_session_ids: list[str]

    def __init__(
        self,
        result: DiskBudgetResult | None,
        evicted_keys: list[str] | None = None,
        file_removals: list[FileRemoval] | None = None,
        released_session_ids: list[str] | None = None,
    ) -> None:
        self.result = result
        self.evicted_keys = [] if evicted_keys is None else evicted_keys
        self.file_removals = [] if file_removals is None else file_removals
        self.released_session_ids = [] if released_session_ids is None else released_session_ids


# ---- JSON byte sizes ----------------------------------------------------------------------------


def _js_number(value: float | int) -> str:
    """JS `Number#toString` for JSON: integral values without `.0`, exponents as `1e+21`/`1e-7`."""
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    if -7 < exp < 0:  # JS writes 1e-6 … 1e-1 in plain decimal notation
        negative = mantissa.startswith("-")
        digits = mantissa.lstrip("-").replace(".", "")
        return f"{'-' if negative else ''}0.{'0' * (-exp - 1)}{digits}"
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp)}"


_SURROGATE = lazy_pattern(globals(), "_SURROGATE", "[\ud800-\udfff]")


def _js_string_bytes(text: str) -> int:
    encoded = json.dumps(text, ensure_ascii=False)
    lone = len(_SURROGATE.findall(text))
    # JS escapes a lone surrogate as `\udXXX` (6 bytes) where UTF-8 with surrogatepass takes 3.
    return len(encoded.encode("utf-8", "surrogatepass")) + 3 * lone


def js_json_bytes(value: Any, depth: int = 0) -> int:
    """UTF-8 length of `JSON.stringify(value, null, 2)` nested at `depth` (each nested line is
    indented by `2 * depth` extra spaces). Values JSON cannot hold count as `null`."""
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int | float):
        return len(_js_number(value))
    if isinstance(value, str):
        return _js_string_bytes(value)
    if isinstance(value, Mapping):
        if not value:
            return 2
        inner = 2 * (depth + 1)
        body = sum(_js_string_bytes(str(k)) + 2 + js_json_bytes(v, depth + 1) for k, v in value.items())
        n = len(value)
        return 2 + n * (1 + inner) + body + (n - 1) + 1 + 2 * depth
    if isinstance(value, list | tuple):
        if not value:
            return 2
        inner = 2 * (depth + 1)
        body = sum(js_json_bytes(v, depth + 1) for v in value)
        n = len(value)
        return 2 + n * (1 + inner) + body + (n - 1) + 1 + 2 * depth
    return 4


def entry_chunk_bytes(key: str, entry: Any) -> int:
    """Bytes of one top-level entry inside the pretty store: `  "<key>": <entry at depth 1>`."""
    return 2 + _js_string_bytes(key) + 2 + js_json_bytes(entry, 1)


def store_json_bytes(entries: Mapping[str, Any]) -> int:
    """UTF-8 length of `JSON.stringify(store, null, 2)` (no trailing newline): `{}` is 2 bytes,
    each entry adds its chunk plus 2 (`{\\n` … `\\n}` and the `,\\n` separators)."""
    return 2 + sum(entry_chunk_bytes(k, v) + 2 for k, v in entries.items())


def sqlite_entry_bytes(entry: Any) -> int:
    """UTF-8 length of an entry's stored `entry_json` (compact JSON)."""
    return compact_bytes(entry)


def entry_session_ids(entry: Mapping[str, Any] | Any) -> list[str]:
    """Session ids an entry references (Q4: at least its `sessionId`)."""
    if type(entry) is not dict and not isinstance(entry, Mapping):  # dict first: ABC checks are slow
        return []
    sid = entry.get("sessionId")
    return [sid] if isinstance(sid, str) and sid.strip() else []


def _updated_at(entry: Any, missing: float) -> float:
    value = entry.get("updatedAt") if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return missing
    return float(value)


# ---- §6.3 SQLite logical bytes ------------------------------------------------------------------


class SqliteMeasure(FrozenRecord):
    """Input of the SQLite measurement: per-session event bytes (transcript + trajectory JSON) and
    optionally the stored `entry_json` byte size per key (computed with `sqlite_entry_bytes`
    when absent)."""

    __slots__ = _fields = ("session_bytes", "entry_bytes")
    session_bytes: Mapping[str, int]
    entry_bytes: Mapping[str, int] | None

    def __init__(
        self, session_bytes: Mapping[str, int], entry_bytes: Mapping[str, int] | None = None
    ) -> None:
        self._assign(session_bytes, entry_bytes)


class PhysicalMeasure(FrozenRecord):
    """2026.9.6+ budget input: the physical bytes of the agent's session data (database main file
    and WAL, every file of the sessions dir and its `cold/`, prompt blobs; never `-shm`)."""

    __slots__ = _fields = ("total_bytes",)
    total_bytes: int

    def __init__(self, total_bytes: int) -> None:
        self._assign(total_bytes)


_MIGRATED = lazy_pattern(globals(), "_MIGRATED", r"\.migrated(?:\.\d+)?$")
_PRE_DOCTOR = lazy_pattern(
    globals(),
    "_PRE_DOCTOR",
    r"\.jsonl\.pre-doctor-(?:branch|openai-codex)-repair-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z\.bak$",
)
_BLOB_PREFIX = lazy_pattern(globals(), "_BLOB_PREFIX", r"[a-f0-9]{2}")
_BLOB_NAME = lazy_pattern(
    globals(),
    "_BLOB_NAME",
    r"[a-f0-9]{64}\.txt(?:\.(?:\d+\.)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp)?",
)


def _kept_name(name: str) -> bool:
    # (both patterns hold these words: the usual name is kept without a search, 100,000 a run)
    if ".migrated" not in name and ".pre-doctor-" not in name:
        return True
    return not (_MIGRATED.search(name) or _PRE_DOCTOR.search(name))


def _blob_prefixes(sessions_dir: Path) -> list[os.DirEntry[str]]:
    blobs = sessions_dir / "skills-prompts" / "sha256"
    try:
        return [
            d for d in os.scandir(blobs) if d.is_dir(follow_symlinks=False) and _BLOB_PREFIX.fullmatch(d.name)
        ]
    except OSError:
        return []


def count_swept_files(sessions_dir: Path) -> int:
    """What the 2026.9.6+ unreferenced-artifact sweep reports as `scannedFiles`: every regular file
    of the sessions dir (not migration leftovers) plus the prompt blobs."""
    sessions_dir = Path(sessions_dir)
    seen: set[str] = set()
    count = _dir_bytes(sessions_dir, _kept_name, seen, sizes=False)[0]
    for prefix in _blob_prefixes(sessions_dir):
        count += _dir_bytes(Path(prefix.path), _BLOB_NAME.fullmatch, seen, sizes=False)[0]
    return count


def measure_physical(
    sessions_dir: Path, database: Path | None, snapshot: DirSnapshot | None = None
) -> PhysicalMeasure:
    """The 2026.9.6+ budget's bytes: regular files of the sessions dir (not migration leftovers
    `*.migrated[.N]` or pre-doctor repair backups) and of its `cold/`, prompt blobs
    (`skills-prompts/sha256/<2 hex>/<64 hex>.txt`), the database main file and its `-wal`; each
    file once by its real path. `snapshot`: the sessions dir as `scan_sessions_dir` listed it in
    this run (its regular files and their sizes), summed instead of listing it again."""
    sessions_dir = Path(sessions_dir)
    # summed per directory: two directories hold the same file only when they are one directory
    # (`cold` a link to `.`), counted once by its real path (no 100,000-path dict)
    seen: set[str] = set()
    own = (
        _dir_bytes(sessions_dir, _kept_name, seen)[1]
        if snapshot is None
        else _snapshot_bytes(sessions_dir, snapshot, seen)
    )
    return _physical(sessions_dir, database, own, seen)


def sweep_and_measure(sessions_dir: Path, database: Path | None) -> tuple[int, PhysicalMeasure]:
    """(`count_swept_files`, `measure_physical`) of the sessions dir with its own files listed once:
    each regular file counted and lstat'ed in one pass (issue 30: the after-apply measure listed
    the directory once for the sweep's count, then again for the budget's bytes)."""
    sessions_dir = Path(sessions_dir)
    seen: set[str] = set()
    count, own = _dir_bytes(sessions_dir, _kept_name, seen)
    counted = set(seen)  # (each figure goes on with its own set of directories seen, as alone)
    for prefix in _blob_prefixes(sessions_dir):
        count += _dir_bytes(Path(prefix.path), _BLOB_NAME.fullmatch, counted, sizes=False)[0]
    return count, _physical(sessions_dir, database, own, seen)


def _physical(sessions_dir: Path, database: Path | None, own: int, seen: set[str]) -> PhysicalMeasure:
    """`measure_physical` once the sessions dir's own files are summed (`own`, its real path in
    `seen`): `cold/`, the prompt blobs, the database and its WAL."""
    total = own + _dir_bytes(sessions_dir / "cold", _kept_name, seen)[1]
    for prefix in _blob_prefixes(sessions_dir):
        total += _dir_bytes(Path(prefix.path), _BLOB_NAME.fullmatch, seen)[1]
    files: dict[str, int] = {}
    if database is not None:
        for path in (Path(database), Path(f"{database}-wal")):
            try:
                if path.is_file() and os.path.realpath(path.parent) not in seen:
                    files[os.path.realpath(path)] = path.stat().st_size
            except OSError:
                continue
    return PhysicalMeasure(total + sum(files.values()))


def _snapshot_bytes(directory: Path, snapshot: DirSnapshot, seen: set[str]) -> int:
    """`_dir_bytes(directory, _kept_name, seen)[1]` from the snapshot's own files of `directory`
    (the same regular files: listed, then lstat'ed)."""
    try:
        real = os.path.realpath(directory)
    except OSError:
        return 0
    if real in seen:
        return 0
    seen.add(real)
    # (`_kept_name`'s first test inline: the usual name needs no call)
    return sum(
        f.size
        for name, f in snapshot.files.items()
        if "/" not in name and ((".migrated" not in name and ".pre-doctor-" not in name) or _kept_name(name))
    )


def _dir_bytes(directory: Path, keep: Any, seen: set[str], *, sizes: bool = True) -> tuple[int, int]:
    """(files, bytes) of the regular files of `directory` whose names `keep` keeps, once per real
    directory (`seen`); `sizes=False`: no stat, bytes 0 (a count)."""
    try:
        real = os.path.realpath(directory)
    except OSError:
        return 0, 0
    if real in seen:
        return 0, 0
    seen.add(real)
    count = total = 0
    try:
        with os.scandir(directory) as it:
            for item in it:
                try:
                    if item.is_file(follow_symlinks=False) and keep(item.name):
                        count += 1
                        if sizes:
                            total += item.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    except OSError:
        pass
    return count, total


def plan_physical_budget(
    measure: PhysicalMeasure, *, max_bytes: int | None, high_water_bytes: int | None
) -> BudgetPlan:
    """The 2026.9.6 cleanup's budget result: measured, reported (`overBudget` when above the
    maximum), no live row ever evicted. (The apply's reclamation tiers — WAL checkpoint, retained
    reset/delete archives, historical sessions, `active-session-cap` archives — are not planned
    here: a preview reports the measurement, as OpenClaw's does.)"""
    limits = budget_limits(max_bytes, high_water_bytes)
    if limits is None:
        return BudgetPlan(None)
    max_b, high = limits
    before = int(measure.total_bytes)
    return BudgetPlan(_idle(before, max_b, high, before > max_b))


def sqlite_total_bytes(
    entries: Mapping[str, Any], measure: SqliteMeasure, session_ids_of: SessionIdsFn = entry_session_ids
) -> int:
    total = 0
    seen: set[str] = set()
    for key, entry in entries.items():
        total += _entry_bytes(key, entry, measure)
        for sid in session_ids_of(entry):
            if sid not in seen:
                seen.add(sid)
                total += int(measure.session_bytes.get(sid, 0) or 0)
    return total


def _entry_bytes(key: str, entry: Any, measure: SqliteMeasure) -> int:
    if measure.entry_bytes is not None and key in measure.entry_bytes:
        return int(measure.entry_bytes[key])
    return sqlite_entry_bytes(entry)


def plan_sqlite_budget(
    entries: Mapping[str, Any],
    measure: SqliteMeasure,
    *,
    max_bytes: int | None,
    high_water_bytes: int | None,
    is_protected: ProtectedFn,
    warn_only: bool = False,
    session_ids_of: SessionIdsFn = entry_session_ids,
) -> BudgetPlan:
    """§6.3: evict non-protected entries oldest `updatedAt` first (missing = oldest, stable over
    store order) until the logical total is at or below the high water. `removedFiles` is 0 and
    `freedBytes = before - after`."""
    limits = budget_limits(max_bytes, high_water_bytes)
    if limits is None:
        return BudgetPlan(None)
    max_b, high = limits
    before = sqlite_total_bytes(entries, measure, session_ids_of)
    if before <= max_b:
        return BudgetPlan(_idle(before, max_b, high, False))
    if warn_only:
        return BudgetPlan(_idle(before, max_b, high, True))
    refs: dict[str, int] = {}
    for entry in entries.values():
        for sid in set(session_ids_of(entry)):
            refs[sid] = refs.get(sid, 0) + 1
    order = sorted(entries, key=lambda k: _updated_at(entries[k], -math.inf))
    total = before
    plan = BudgetPlan(None)
    for key in order:
        if total <= high:
            break
        entry = entries[key]
        if is_protected(key, entry):
            continue
        total -= _entry_bytes(key, entry, measure)
        plan.evicted_keys.append(key)
        for sid in set(session_ids_of(entry)):
            refs[sid] -= 1
            if refs[sid] == 0:
                total -= int(measure.session_bytes.get(sid, 0) or 0)
                plan.released_session_ids.append(sid)
    plan.result = DiskBudgetResult(
        before, total, 0, len(plan.evicted_keys), max(0, before - total), max_b, high, True
    )
    return plan


# ---- §6.2 legacy directory ----------------------------------------------------------------------

_PROMPT_BLOB = lazy_pattern(
    globals(), "_PROMPT_BLOB", r"^skills-prompts/sha256/[0-9a-f]{2}/([0-9a-f]{64})\.txt$"
)
_PROMPT_BLOB_TEMP = lazy_pattern(
    globals(), "_PROMPT_BLOB_TEMP", r"^skills-prompts/sha256/[0-9a-f]{2}/[0-9a-f]{64}\.txt\..+\.tmp$"
)
_HASH = lazy_pattern(globals(), "_HASH", r"[0-9a-f]{64}")


class LegacyDirMeasure(FrozenRecord):
    """Input of the legacy directory measurement: the sessions dir snapshot (top-level regular
    files plus `skills-prompts/sha256/…` blobs), the dir itself (to resolve `sessionFile`
    references without I/O) and the store file's name."""

    __slots__ = _fields = ("files", "sessions_dir", "store_name", "projected_store_bytes")
    files: Sequence[DirFile]
    sessions_dir: Path
    store_name: str
    # Bytes of the store as it would be written, when the caller already knows them (e.g. the
    # length of the serialised store); None computes JS `JSON.stringify(store, null, 2)` bytes.
    projected_store_bytes: int | None

    def __init__(
        self,
        files: Sequence[DirFile],
        sessions_dir: Path,
        store_name: str = "sessions.json",
        projected_store_bytes: int | None = None,
    ) -> None:
        self._assign(files, sessions_dir, store_name, projected_store_bytes)


def _relative_name(path: Path, root: Path) -> str | None:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def _sidecars(transcript_name: str, session_id: str | None) -> list[str]:
    stem = transcript_name[: -len(".jsonl")] if transcript_name.endswith(".jsonl") else transcript_name
    names = [f"{stem}.trajectory.jsonl", f"{stem}.trajectory-path.json"]
    if session_id:
        names += [f"{session_id}.trajectory.jsonl", f"{session_id}.trajectory-path.json"]
    return names


_PLAIN_SID = lazy_pattern(globals(), "_PLAIN_SID", r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,254}")


@functools.lru_cache(maxsize=16)
def _normalized_prefix(root: str) -> str | None:
    """`<root>/` when `root` is absolute and normalised (then `<root>/<plain name>` is normalised
    too and needs no pathlib work), else None."""
    plain = root.startswith("/") and not root.startswith("//") and root != "/"
    return root + "/" if plain and os.path.normpath(root) == root else None


def _fast_candidate_names(sid: str | None, session_file: str | None, root: Path) -> list[str] | None:
    """`transcript_candidates` as names for the common shapes (no pathlib: cleanup resolves every
    entry of a 20,000-row store); None when the general rule is needed."""
    if not sid or not _PLAIN_SID.fullmatch(sid):
        return None
    default = f"{sid}.jsonl"
    if session_file is None or not session_file or session_file.startswith("sqlite:"):
        return [default]
    prefix = _normalized_prefix(str(root))
    if prefix is not None and session_file.startswith(prefix):
        # `<sessions dir>/<name>`, what OpenClaw writes (the dir may contain `/.`: `~/.openclaw`)
        name = session_file[len(prefix) :]
        if name and "/" not in name and "\\" not in name and name not in (".", ".."):
            return [name] if name == default else [name, default]
    if "\\" in session_file or "//" in session_file or "/." in session_file or session_file.startswith("."):
        return None
    if "/" in session_file:
        head, _, name = session_file.rpartition("/")
        if not head.startswith("/") or not name:
            return None
        if head != str(root) and head.startswith(str(root) + "/"):
            return None  # a sub-directory of the sessions dir
    else:
        name = session_file
    return [name] if name == default else [name, default]


def _entry_artifact_names(entry: Any, root: Path) -> list[str]:
    """Names an entry keeps alive: every transcript candidate (conservative: all of them, not only
    the first existing one) and their trajectory sidecars."""
    if not isinstance(entry, Mapping):
        return []
    sid = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None
    session_file = entry.get("sessionFile") if isinstance(entry.get("sessionFile"), str) else None
    if not sid and not session_file:
        return []
    fast = _fast_candidate_names(sid, session_file, root)
    out: list[str] = []
    if fast is not None:
        for name in fast:
            if name not in out:
                out.append(name)
                out.extend(n for n in _sidecars(name, sid) if n not in out)
        return out
    for candidate in transcript_candidates(root, sid or "", session_file):
        rel = _relative_name(candidate, root)
        if rel and rel not in out:
            out.append(rel)
            out.extend(n for n in _sidecars(rel, sid) if n not in out)
    return out


def entry_artifact_names(entry: Any, root: Path) -> list[str]:
    """Public: the sessions-dir names an entry keeps alive (transcript candidates, their trajectory
    sidecars and the compaction checkpoints it references), as the disk budget counts them."""
    names = _entry_artifact_names(entry, root)
    if isinstance(entry, Mapping) and entry.get("compactionCheckpoints"):
        names.extend(n for n in _checkpoint_names(entry, root) if n not in names)
    return names


def _checkpoint_names(entry: Any, root: Path) -> list[str]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("compactionCheckpoints"), list):
        return []
    out: list[str] = []
    for checkpoint in entry["compactionCheckpoints"]:
        if not isinstance(checkpoint, Mapping):
            continue
        for side in ("preCompaction", "postCompaction"):
            info = checkpoint.get(side)
            ref = info.get("sessionFile") if isinstance(info, Mapping) else None
            if isinstance(ref, str) and ref.strip():
                for candidate in transcript_candidates(root, "", ref.strip()):
                    name = _relative_name(candidate, root)
                    if name:
                        out.append(name)
    return out


def _prompt_hashes(entry: Any) -> set[str]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("skillsSnapshot"), Mapping):
        return set()
    ref = entry["skillsSnapshot"].get("promptRef")
    if isinstance(ref, str):
        texts = [ref]
    elif isinstance(ref, Mapping):
        texts = [v for v in ref.values() if isinstance(v, str)]
    else:
        texts = []
    return {h for text in texts for h in _HASH.findall(text.lower())}


def legacy_total_bytes(entries: Mapping[str, Any], measure: LegacyDirMeasure) -> int:
    store_file = sum(f.size for f in measure.files if f.name == measure.store_name)
    projected = measure.projected_store_bytes
    projected = store_json_bytes(entries) if projected is None else projected
    return sum(max(0, f.size) for f in measure.files) - store_file + projected


def plan_legacy_budget(
    entries: Mapping[str, Any],
    measure: LegacyDirMeasure,
    *,
    max_bytes: int | None,
    high_water_bytes: int | None,
    now_ms: float,
    is_protected: ProtectedFn,
    warn_only: bool = False,
) -> BudgetPlan:
    """§6.2 enforcement order, re-checking `total <= highWater` before each removal:

    1. unreferenced prompt blobs (blob temps only when older than 5 min), oldest mtime first;
    2. archive artifacts, oldest mtime first; then store temp files older than 5 min (a fresh
       temp is a live atomic write); then unreferenced checkpoints, trajectory sidecars and
       primary transcripts, oldest mtime first. (G1 uses one mtime-ordered queue for these three
       kinds; we drop already-archived data before anything that is not archived yet.)
    3. entries, oldest `updatedAt` first (missing = 0; stable), skipping protected ones; each
       shrinks the projected `sessions.json` by its chunk + 2 bytes (never below `{}`) and, with
       the last reference to its session id, releases its transcript and sidecars.
    `freedBytes` counts removed file bytes (as G1).
    """
    limits = budget_limits(max_bytes, high_water_bytes)
    if limits is None:
        return BudgetPlan(None)
    max_b, high = limits
    root = Path(measure.sessions_dir)
    files = [f for f in measure.files if f.size >= 0]
    store_file_size = sum(f.size for f in files if f.name == measure.store_name)
    projected = measure.projected_store_bytes
    projected = store_json_bytes(entries) if projected is None else projected
    before = sum(f.size for f in files) - store_file_size + projected
    if before <= max_b:
        return BudgetPlan(_idle(before, max_b, high, False))
    if warn_only:
        return BudgetPlan(_idle(before, max_b, high, True))

    # Reference counts by name, so a file shared by several entries goes with its last entry.
    name_refs: dict[str, int] = {}
    hash_refs: dict[str, int] = {}
    for entry in entries.values():
        for name in set(_entry_artifact_names(entry, root)) | set(_checkpoint_names(entry, root)):
            name_refs[name] = name_refs.get(name, 0) + 1
        for digest in _prompt_hashes(entry):
            hash_refs[digest] = hash_refs.get(digest, 0) + 1
    by_name = {f.name: f for f in files}
    stale_before = now_ms - STALE_TEMP_MS
    plan = BudgetPlan(None)
    removed: set[str] = set()
    total = before
    freed = 0

    def remove(f: DirFile, kind: str, needs_archive: bool, session_id: str | None = None) -> None:
        nonlocal total, freed
        removed.add(f.name)
        total -= f.size
        freed += f.size
        plan.file_removals.append(FileRemoval(f.name, f.size, kind, needs_archive, session_id))

    def by_age(items: list[DirFile]) -> list[DirFile]:
        return sorted(items, key=lambda f: (f.mtime_ms, f.name))

    blobs, archives, temps, orphans = [], [], [], []
    for f in files:
        name = f.name
        blob = _PROMPT_BLOB.match(name)
        if blob:
            if blob.group(1) not in hash_refs:
                blobs.append(f)
        elif _PROMPT_BLOB_TEMP.match(name):
            if f.mtime_ms <= stale_before:
                blobs.append(f)
        elif "/" in name or name == measure.store_name:
            continue
        elif is_archive_artifact_name(name):
            archives.append(f)
        elif is_store_temp_name(name, measure.store_name):
            if f.mtime_ms <= stale_before:
                temps.append(f)
        elif name not in name_refs and (
            is_checkpoint_name(name) or is_trajectory_name(name) or is_primary_transcript_name(name)
        ):
            orphans.append(f)

    queue: list[tuple[DirFile, str, bool]] = [(f, "prompt-blob", False) for f in by_age(blobs)]
    queue += [(f, "archive", False) for f in by_age(archives)]
    queue += [(f, "store-temp", False) for f in by_age(temps)]
    queue += [
        (f, _artifact_kind(f.name), _artifact_kind(f.name) in ("transcript", "checkpoint"))
        for f in by_age(orphans)
    ]
    for f, kind, needs_archive in queue:
        if total <= high:
            break
        if f.size > 0:
            remove(f, kind, needs_archive)

    if total > high:
        sid_refs: dict[str, int] = {}
        for entry in entries.values():
            for sid in entry_session_ids(entry):
                sid_refs[sid] = sid_refs.get(sid, 0) + 1
        for key in sorted(entries, key=lambda k: _updated_at(entries[k], 0.0)):
            if total <= high:
                break
            entry = entries[key]
            if is_protected(key, entry):
                continue
            old_projected = projected
            projected = max(2, projected - (entry_chunk_bytes(key, entry) + 2))
            total += projected - old_projected
            plan.evicted_keys.append(key)
            for digest in _prompt_hashes(entry):
                hash_refs[digest] -= 1
                if hash_refs[digest] == 0:
                    for f in files:
                        blob = _PROMPT_BLOB.match(f.name)
                        if blob and blob.group(1) == digest and f.name not in removed:
                            remove(f, "prompt-blob", False)
            own = set(_entry_artifact_names(entry, root)) | set(_checkpoint_names(entry, root))
            for name in own:
                name_refs[name] -= 1
            for sid in entry_session_ids(entry):
                sid_refs[sid] -= 1
                if sid_refs[sid] > 0:
                    continue
                plan.released_session_ids.append(sid)
                for name in _entry_artifact_names(entry, root):
                    artifact = by_name.get(name)
                    if (
                        artifact is None
                        or name in removed
                        or name_refs.get(name, 0) > 0
                        or artifact.size <= 0
                    ):
                        continue
                    kind = _artifact_kind(name)
                    remove(artifact, kind, kind in ("transcript", "checkpoint"), sid)
    plan.result = DiskBudgetResult(
        before, total, len(plan.file_removals), len(plan.evicted_keys), freed, max_b, high, True
    )
    return plan


def _artifact_kind(name: str) -> str:
    if is_trajectory_name(name):
        return "trajectory"
    if is_checkpoint_name(name):
        return "checkpoint"
    return "transcript"
