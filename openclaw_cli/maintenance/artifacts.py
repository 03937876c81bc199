"""The files of an agent's sessions dir during cleanup (`maintenance.md` §6.2, §7.4, §7.5, §8):
one directory snapshot, and from it — without further I/O, except hashing candidates for
finishing an interrupted cleanup — what leaves the directory:

* the transcripts (and trajectory sidecars, referenced compaction checkpoints) of removed entries
  whose files no remaining entry references (§8.1);
* the unreferenced-artifact sweep (§7.5): old unreferenced checkpoints, trajectory sidecars and
  primary transcripts, store temp files and abandoned archive temps, unreferenced prompt blobs;
* the `resetArchiveRetention` sweep (§7.4): archives whose *name* timestamp is too old.

Everything that is transcript content leaves through a verified archive (D6.2, D15); `apply.py`
performs the effects. Safety rules beyond OpenClaw:
* D6.3 — files that another store of the agent references (its SQLite database, an un-imported
  `sessions.json`) are `protected`: never swept, never removed by the disk budget. On a SQLite
  target the sweep never touches transcript-like files at all: in an SQLite agent's sessions dir
  they can only be legacy data that was not imported (OpenClaw deletes them, observed §12.1);
  without a `sessions.json` the directory has no index and its transcripts are left alone too.
* no transcript younger than 5 minutes is swept (it may be written before its row is saved);
* a young unreferenced file for which an identical `deleted` archive already exists is finished
  (a cleanup killed between removing rows and removing originals left it behind).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.maintenance.budget import (
    STALE_TEMP_MS,
    LegacyDirMeasure,
    entry_artifact_names,
)
from openclaw_cli.maintenance.plan import plan_archive_retention
from openclaw_cli.records import Record
from openclaw_cli.store.files import (  # noqa: F401 - the sessions-dir snapshot, re-exported for cleanup
    _PROMPT_BLOB,
    PROMPT_DIR,
    TRANSCRIPT_KINDS,
    DirFile,
    DirSnapshot,
    archive_temp_pid,
    classify,
    scan_sessions_dir,
)
from openclaw_cli.store.retire import FileAction

ABANDONED_TEMP_MS = (
    24 * 3600 * 1000
)  # an archive temp of a live (or recycled) pid older than this is abandoned
PENDING_PREFIX = "pending/"  # budget-measure entries: counted, never removed (archives this run writes)
PROTECTED_PREFIX = "protected/"  # budget-measure entries: counted, never removed (D6.3)
_STORE_TEMP_PID = lazy_pattern(globals(), "_STORE_TEMP_PID", r"^[^.]+\.json\.(\d{1,7})\.")


def _pid_gone(pid: int | None) -> bool:
    if pid is None:
        return False
    from openclaw_cli.store.lock import is_pid_alive

    return pid != os.getpid() and not is_pid_alive(pid)


def _temp_pid(name: str, kind: str) -> int | None:
    if kind == "archive-temp":
        return archive_temp_pid(name)
    match = _STORE_TEMP_PID.match(name)
    return int(match.group(1)) if match else None


def _names_fn(snapshot: DirSnapshot | None, root: Path) -> Callable[[Any], list[str]]:
    """`entry_artifact_names`, or — when the directory holds no trajectory sidecar (the usual
    case) — just the transcript candidates of entries without compaction checkpoints: the
    sidecar names could not match an existing file anyway (cleanup resolves 20,000 entries)."""
    from openclaw_cli.maintenance.budget import _PLAIN_SID, _fast_candidate_names, _normalized_prefix

    if snapshot is None or snapshot.has_trajectory():
        return lambda entry: entry_artifact_names(entry, root)
    plain_sid = _PLAIN_SID.fullmatch  # (the compiled pattern's: `_PLAIN_SID` is made on first use)
    prefix = _normalized_prefix(str(root))
    start = len(prefix) if prefix is not None else 0

    def names(entry: Any) -> list[str]:
        if isinstance(entry, dict) and not entry.get("compactionCheckpoints"):
            sid, sf = entry.get("sessionId"), entry.get("sessionFile")
            if sf is None and type(sid) is str and sid and plain_sid(sid):
                # a file-facts row whose `sessionFile` was its default (left out of the facts):
                # `_fast_candidate_names(sid, None, root)`, without the call
                return [f"{sid}.jsonl"]
            if prefix is not None and type(sid) is str and sf == f"{prefix}{sid}.jsonl" and plain_sid(sid):
                return [sf[start:]]  # the usual row (`_fast_candidate_names` gives this one name)
            fast = _fast_candidate_names(
                sid if isinstance(sid, str) else None, sf if isinstance(sf, str) else None, root
            )
            if fast is not None:
                return fast
        return entry_artifact_names(entry, root)

    return names


def referenced_names(entries: Iterable[Any], root: Path, snapshot: DirSnapshot | None = None) -> set[str]:
    """Names the entries keep alive. With `snapshot`, names that cannot exist in it may be left
    out (see `_names_fn`): only use the result for lookups of that snapshot's files."""
    names = _names_fn(snapshot, root)
    out: set[str] = set()
    for entry in entries:
        out.update(names(entry))
    return out


def session_id_names(session_ids: Iterable[str], snapshot: DirSnapshot) -> set[str]:
    """Names belonging to sessions a SQLite store holds: `<sid>.jsonl`, `<sid>-topic-*.jsonl`,
    their sidecars (D6.3)."""
    sids = {s.strip() for s in session_ids if isinstance(s, str) and s.strip()}
    out: set[str] = set()
    for sid in sids:
        out.update({f"{sid}.jsonl", f"{sid}.trajectory.jsonl", f"{sid}.trajectory-path.json"})
    for name in snapshot.files:
        head = name.split("-topic-", 1)[0] if "-topic-" in name else None
        if head in sids or (is_checkpoint_name(name) and name.split(".checkpoint.", 1)[0] in sids):
            out.add(name)
    return out


def prompt_hashes(entries: Iterable[Any]) -> set[str]:
    out: set[str] = set()
    for entry in entries:
        if type(entry) is dict and entry.get("skillsSnapshot") is None:
            continue  # the usual row (checked without ABC isinstance calls: 20,000 rows)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("skillsSnapshot"), Mapping):
            continue
        ref = entry["skillsSnapshot"].get("promptRef")
        texts = (
            [ref]
            if isinstance(ref, str)
            else [v for v in ref.values() if isinstance(v, str)]
            if isinstance(ref, Mapping)
            else []
        )
        for text in texts:
            out.update(re.findall(r"[0-9a-f]{64}", text.lower()))
    return out


def _action(f: DirFile, kind: str, source: str, session_id: str | None = None) -> FileAction:
    return FileAction(f.name, f.size, f.mtime_ms, kind, kind in TRANSCRIPT_KINDS, source, session_id)


# ---- §8.1 files of removed entries --------------------------------------------------------------


def _removed_entry_files(
    snapshot: DirSnapshot,
    entries: Mapping[str, Any],
    removed: Iterable[str],
    still_referenced: Collection[str],
    protected: Collection[str],
) -> Iterator[tuple[str, DirFile, str, str | None]]:
    """(name, file, kind, session id) of each existing transcript file of the removed entries that no
    remaining entry references and no other store protects, once, in order of first sight."""
    seen: set[str] = set()
    files, kind_of = snapshot.files, snapshot.kind
    names_of = _names_fn(snapshot, snapshot.root)
    for key in removed:
        entry = entries.get(key)
        sid = entry.get("sessionId") if type(entry) is dict or isinstance(entry, Mapping) else None
        sid = sid if isinstance(sid, str) else None
        for name in names_of(entry):
            f = files.get(name)
            if f is None or name in seen or name in still_referenced or name in protected:
                continue
            # (`<id>.jsonl`, the usual one: `classify`'s first rule inline)
            kind = (
                "transcript"
                if name.endswith(".jsonl") and "." not in name[:-6] and "/" not in name
                else kind_of(name)
            )
            if kind not in TRANSCRIPT_KINDS:
                continue
            seen.add(name)
            yield name, f, kind, sid


def entry_file_actions(
    snapshot: DirSnapshot,
    entries: Mapping[str, Any],
    removed: Iterable[str],
    still_referenced: Collection[str],
    protected: Collection[str],
) -> list[FileAction]:
    """Existing files of removed entries (transcript candidates, sidecars, referenced checkpoints)
    that no remaining entry references and no other store protects: archived, then removed."""
    return [
        FileAction(f.name, f.size, f.mtime_ms, kind, True, "entry", sid)  # transcript content
        for _name, f, kind, sid in _removed_entry_files(
            snapshot, entries, removed, still_referenced, protected
        )
    ]


def entry_file_sizes(
    snapshot: DirSnapshot,
    entries: Mapping[str, Any],
    removed: Iterable[str],
    still_referenced: Collection[str],
    protected: Collection[str],
) -> tuple[dict[str, int], dict[str, int]]:
    """`entry_file_actions`'s files as figures only (a figures-only plan, `storage`): name -> size,
    and the bytes per session id, without a `FileAction` per file (issue 27: ~0.2 s at 100,000
    removed rows). Same files, same order of first sight."""
    sizes: dict[str, int] = {}
    by_sid: dict[str, int] = {}
    for name, f, _kind, sid in _removed_entry_files(snapshot, entries, removed, still_referenced, protected):
        sizes[name] = f.size
        if sid:
            by_sid[sid] = by_sid.get(sid, 0) + f.size
    return sizes, by_sid


# ---- §7.5 unreferenced-artifact sweep -----------------------------------------------------------


class SweepPlan(Record):
    _fields = ("older_than_ms", "scanned", "removals", "finished")
    older_than_ms: int
    scanned: int
    removals: list[FileAction]
    finished: int  # removals that finish an interrupted cleanup (identical archive exists)

    def __init__(
        self,
        older_than_ms: int,
        scanned: int = 0,
        removals: list[FileAction] | None = None,
        finished: int = 0,
    ) -> None:
        self.older_than_ms = older_than_ms
        self.scanned = scanned
        self.removals = [] if removals is None else removals
        self.finished = finished

    @property
    def freed(self) -> int:
        return sum(a.size for a in self.removals)

    def to_json(self, removed: int | None = None, freed: int | None = None) -> dict[str, int]:
        return {
            "scannedFiles": self.scanned,
            "removedFiles": len(self.removals) if removed is None else removed,
            "freedBytes": self.freed if freed is None else freed,
            "olderThanMs": self.older_than_ms,
        }


def deleted_archives_by_base(snapshot: DirSnapshot) -> dict[str, list[str]]:
    from openclaw_cli.store.archives import parse_archive_name

    out: dict[str, list[str]] = {}
    for name in snapshot.files:
        if "/" in name or ".deleted." not in name:
            continue
        parsed = parse_archive_name(name, "deleted")
        if parsed is not None:
            out.setdefault(parsed[0], []).append(name)
    return out


def _file_sha(path: Path) -> tuple[str, int] | None:
    import hashlib  # lazy: only finishing an interrupted cleanup hashes files

    digest = hashlib.sha256()
    size = 0
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def has_identical_archive(snapshot: DirSnapshot, name: str, archives: Mapping[str, list[str]]) -> bool:
    """True when a `deleted` archive of `name` holds exactly the file's bytes."""
    candidates = archives.get(name)
    if not candidates:
        return False
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.store.archives import hash_archive

    own = _file_sha(snapshot.root / name)
    if own is None:
        return False
    for archive in candidates:
        try:
            if hash_archive(snapshot.root / archive) == own:
                return True
        except OpenClawError:
            continue
    return False


def plan_unreferenced_sweep(
    snapshot: DirSnapshot,
    *,
    referenced: Collection[str],
    protected: Collection[str],
    exclude: Collection[str],
    referenced_hashes: Collection[str],
    older_than_ms: int,
    now_ms: float,
    transcripts: bool,
    store_name: str = "sessions.json",
) -> SweepPlan:
    """§7.5 on a snapshot, oldest mtime first. `exclude`: files the entry removals already take
    (not counted twice). `transcripts` False: checkpoints, sidecars and primary transcripts are
    never swept (SQLite targets, directories without `sessions.json`, see the module docstring)."""
    plan = SweepPlan(older_than_ms=max(0, int(older_than_ms or 0)))
    cutoff = now_ms - max(plan.older_than_ms, STALE_TEMP_MS)
    blob_cutoff = now_ms - max(plan.older_than_ms, STALE_TEMP_MS)
    stale_temp = now_ms - STALE_TEMP_MS
    archives: dict[str, list[str]] | None = None
    kind_of = snapshot.kind if store_name == "sessions.json" else (lambda name: classify(name, store_name))
    # what the sweep looks at, then in age order (the removals' order); the rest is never sorted
    # (a transcript a row keeps alive, `<id>.jsonl`: `classify`'s first rule answers its kind
    # inline, for either store name — most of a big sessions dir, no call per file)
    candidates = [
        (f, kind)
        for f in snapshot.files.values()
        if (name := f.name) not in exclude
        and (
            kind := "transcript"
            if name in referenced and name.endswith(".jsonl") and "." not in name[:-6] and "/" not in name
            else kind_of(name)
        )
        is not None
        and kind != "archive"
    ]
    plan.scanned = len(candidates)
    # transcripts a row keeps alive, or another store protects, are never swept: left out before
    # the sort (most of a big sessions dir)
    candidates = [
        item
        for item in candidates
        if item[1] not in TRANSCRIPT_KINDS
        or (transcripts and item[0].name not in referenced and item[0].name not in protected)
    ]
    candidates.sort(key=lambda item: (item[0].mtime_ms, item[0].name))
    for f, kind in candidates:
        if kind in TRANSCRIPT_KINDS:
            if not transcripts or f.name in referenced or f.name in protected:
                continue
            if f.mtime_ms <= cutoff:
                plan.removals.append(_action(f, kind, "sweep"))
                continue
            if archives is None:
                archives = deleted_archives_by_base(snapshot)
            if has_identical_archive(snapshot, f.name, archives):
                plan.removals.append(_action(f, kind, "sweep"))
                plan.finished += 1
        elif kind in ("store-temp", "archive-temp"):
            old = ABANDONED_TEMP_MS if kind == "archive-temp" else STALE_TEMP_MS
            if _pid_gone(_temp_pid(f.name, kind)) or f.mtime_ms <= now_ms - old:
                plan.removals.append(_action(f, kind, "sweep"))
        elif kind == "prompt-blob":
            digest = _PROMPT_BLOB.match(f.name).group(1)  # type: ignore[union-attr]
            if digest not in referenced_hashes and f.mtime_ms <= blob_cutoff:
                plan.removals.append(_action(f, kind, "sweep"))
        elif kind == "prompt-blob-temp" and f.mtime_ms <= stale_temp:
            plan.removals.append(_action(f, kind, "sweep"))
    return plan


# ---- §7.4 archive retention ---------------------------------------------------------------------


class RetentionPlan(Record):
    _fields = ("scanned", "removals")
    scanned: int
    removals: list[FileAction]

    def __init__(self, scanned: int = 0, removals: list[FileAction] | None = None) -> None:
        self.scanned = scanned
        self.removals = [] if removals is None else removals

    def to_json(self, removed: int | None = None) -> dict[str, int]:
        return {
            "scannedFiles": self.scanned,
            "removedFiles": len(self.removals) if removed is None else removed,
        }


def plan_retention_sweep(
    snapshot: DirSnapshot, retention_ms: int | None, now_ms: float
) -> RetentionPlan | None:
    """`resetArchiveRetention` over the archives of the sessions dir (None when unset)."""
    if retention_ms is None:
        return None
    names = sorted(n for n in snapshot.files if "/" not in n and snapshot.kind(n) == "archive")
    decided = plan_archive_retention(names, retention_ms, now_ms)
    plan = RetentionPlan(scanned=decided.scanned)
    for name in decided.removed:
        plan.removals.append(_action(snapshot.files[name], "archive", "retention"))
    return plan


# ---- the legacy disk budget's view of the directory ---------------------------------------------


def budget_measure(
    snapshot: DirSnapshot,
    *,
    gone: Collection[str],
    pending: Iterable[FileAction],
    protected: Collection[str],
    projected_store_bytes: int | None,
    now_ms: float,
    store_name: str = "sessions.json",
) -> LegacyDirMeasure:
    """The directory as the disk budget stage sees it (§10.7: after the entry removals and the
    sweeps): `gone` files are not counted; archives this run writes are counted at their
    original size (an upper bound of the compressed size) and never removed by the budget;
    protected files are counted and never removed."""
    # lock files come and go with writers (ours included): never measured
    files = [f for f in snapshot.files.values() if f.name not in gone and not f.name.endswith(".lock")]
    if protected:
        files = [
            DirFile(PROTECTED_PREFIX + f.name, f.size, f.mtime_ms) if f.name in protected else f
            for f in files
        ]
    files.extend([DirFile(PENDING_PREFIX + action.name, action.size, now_ms) for action in pending])
    return LegacyDirMeasure(files, snapshot.root, store_name, projected_store_bytes)
