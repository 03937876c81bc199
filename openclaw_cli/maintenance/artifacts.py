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
import stat
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.maintenance.budget import (
    STALE_TEMP_MS,
    DirFile,
    LegacyDirMeasure,
    entry_artifact_names,
    is_archive_artifact_name,
    is_primary_transcript_name,
    is_store_temp_name,
    is_trajectory_name,
)
from openclaw_cli.maintenance.plan import plan_archive_retention

ABANDONED_TEMP_MS = 24 * 3600 * 1000  # an archive temp of a live (or recycled) pid older than this is abandoned
PENDING_PREFIX = "pending/"  # budget-measure entries: counted, never removed (archives this run writes)
PROTECTED_PREFIX = "protected/"  # budget-measure entries: counted, never removed (D6.3)
PROMPT_DIR = "skills-prompts"
_PROMPT_BLOB = re.compile(r"^skills-prompts/sha256/[0-9a-f]{2}/([0-9a-f]{64})\.txt$")
_PROMPT_BLOB_TEMP = re.compile(r"^skills-prompts/sha256/[0-9a-f]{2}/[0-9a-f]{64}\.txt\..+\.tmp$")
_STORE_TEMP_PID = re.compile(r"^[^.]+\.json\.(\d{1,7})\.")
_MIGRATED = re.compile(r"\.migrated(?:\.\d+)?$|\.pre-doctor-(?:branch|openai-codex)-repair-.+\.bak$")
TRANSCRIPT_KINDS = ("transcript", "checkpoint", "trajectory")


@dataclass(slots=True)  # not frozen: cleanup builds one per removed transcript (frozen init is 3x slower)
class FileAction:
    """One file leaving the sessions dir. `archive`: through a verified archive first (transcript
    content); otherwise it is unlinked (temps, prompt blobs, expired or budget-removed archives).
    Treated as immutable."""

    name: str  # relative to the sessions dir, `/`-separated
    size: int
    mtime_ms: float
    kind: str
    archive: bool
    source: str  # entry | sweep | retention | budget
    session_id: str | None = None


@dataclass
class DirSnapshot:
    """Regular files directly in the sessions dir plus prompt blobs (never through a symlink)."""

    root: Path
    files: dict[str, DirFile] = field(default_factory=dict)
    _kinds: dict[str, str | None] = field(default_factory=dict, repr=False)
    _has_trajectory: bool | None = field(default=None, repr=False)


    def has_trajectory(self) -> bool:
        """Whether any file is a trajectory sidecar (asked by every names pass: memoised)."""
        if self._has_trajectory is None:
            self._has_trajectory = any(is_trajectory_name(n) and self.kind(n) == "trajectory" for n in self.files)
        return self._has_trajectory

    def kind(self, name: str) -> str | None:
        """`classify(name)` of a snapshot name, memoised (a 20,000-file directory is classified
        by several passes)."""
        try:
            return self._kinds[name]
        except KeyError:
            kind = self._kinds[name] = classify(name)
            return kind


def scan_sessions_dir(root: Path) -> DirSnapshot:
    snap = DirSnapshot(Path(root))
    _scan_into(snap, Path(root), "")
    blobs = Path(root) / PROMPT_DIR / "sha256"
    try:
        if stat.S_ISDIR(os.lstat(Path(root) / PROMPT_DIR).st_mode) and stat.S_ISDIR(os.lstat(blobs).st_mode):
            with os.scandir(blobs) as it:
                subdirs = [d.name for d in it if d.is_dir(follow_symlinks=False)]
            for sub in sorted(subdirs):
                _scan_into(snap, blobs / sub, f"{PROMPT_DIR}/sha256/{sub}/")
    except OSError:
        pass
    return snap


def _scan_into(snap: DirSnapshot, directory: Path, prefix: str) -> None:
    # Listing through a directory descriptor makes each entry's stat relative to it (fstatat):
    # measurably cheaper over 20,000 files than resolving the full path each time.
    fd = None
    if os.scandir in os.supports_fd:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
    try:
        it = os.scandir(directory if fd is None else fd)
    except OSError:
        if fd is not None:
            os.close(fd)
        return
    files, type_mask, regular = snap.files, 0o170000, stat.S_IFREG
    try:
        with it:
            for item in it:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_mode & type_mask != regular:
                    continue  # symlinks, directories, sockets: never touched
                name = prefix + item.name
                files[name] = DirFile(name, st.st_size, st.st_mtime_ns / 1e6)
    finally:
        if fd is not None:
            os.close(fd)


# ---- names --------------------------------------------------------------------------------------


def archive_temp_pid(name: str) -> int | None:
    from openclaw_cli.store.archives import archive_temp_pid as parse

    return parse(name)


def classify(name: str, store_name: str = "sessions.json") -> str | None:
    """The kind of a snapshot name, or None for files cleanup never touches (notes, locks,
    migration leftovers, unknown names)."""
    if name.endswith(".jsonl") and "." not in name[:-6] and "/" not in name:
        return "transcript"  # fast path: `<sessionId>.jsonl` (no marker can hide without a dot)
    if name.startswith(PROMPT_DIR + "/"):
        if _PROMPT_BLOB.match(name):
            return "prompt-blob"
        return "prompt-blob-temp" if _PROMPT_BLOB_TEMP.match(name) else None
    if name == store_name or name.endswith(".lock") or _MIGRATED.search(name):
        return None
    if is_archive_artifact_name(name):
        return "archive"
    if name.endswith(".tmp"):
        if is_store_temp_name(name, store_name):
            return "store-temp"
        return "archive-temp" if archive_temp_pid(name) is not None else None
    if is_checkpoint_name(name):
        return "checkpoint"
    if is_trajectory_name(name):
        return "trajectory"
    return "transcript" if is_primary_transcript_name(name) else None


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


def _names_fn(snapshot: DirSnapshot | None, root: Path):
    """`entry_artifact_names`, or — when the directory holds no trajectory sidecar (the usual
    case) — just the transcript candidates of entries without compaction checkpoints: the
    sidecar names could not match an existing file anyway (cleanup resolves 20,000 entries)."""
    from openclaw_cli.maintenance.budget import _PLAIN_SID, _fast_candidate_names, _normalized_prefix

    if snapshot is None or snapshot.has_trajectory():
        return lambda entry: entry_artifact_names(entry, root)
    prefix = _normalized_prefix(str(root))
    start = len(prefix) if prefix is not None else 0

    def names(entry: Any) -> list[str]:
        if isinstance(entry, dict) and not entry.get("compactionCheckpoints"):
            sid, sf = entry.get("sessionId"), entry.get("sessionFile")
            if prefix is not None and type(sid) is str and sf == f"{prefix}{sid}.jsonl" and _PLAIN_SID.fullmatch(sid):
                return [sf[start:]]  # the usual row (`_fast_candidate_names` gives this one name)
            fast = _fast_candidate_names(sid if isinstance(sid, str) else None,
                                         sf if isinstance(sf, str) else None, root)
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
        texts = [ref] if isinstance(ref, str) else [v for v in ref.values() if isinstance(v, str)] \
            if isinstance(ref, Mapping) else []
        for text in texts:
            out.update(re.findall(r"[0-9a-f]{64}", text.lower()))
    return out


def _action(f: DirFile, kind: str, source: str, session_id: str | None = None) -> FileAction:
    return FileAction(f.name, f.size, f.mtime_ms, kind, kind in TRANSCRIPT_KINDS, source, session_id)


# ---- §8.1 files of removed entries --------------------------------------------------------------


def entry_file_actions(snapshot: DirSnapshot, entries: Mapping[str, Any], removed: Iterable[str],
                       still_referenced: Collection[str], protected: Collection[str]) -> list[FileAction]:
    """Existing files of removed entries (transcript candidates, sidecars, referenced checkpoints)
    that no remaining entry references and no other store protects: archived, then removed."""
    out: list[FileAction] = []
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
            kind = kind_of(name)
            if kind not in TRANSCRIPT_KINDS:
                continue
            seen.add(name)
            out.append(FileAction(f.name, f.size, f.mtime_ms, kind, True, "entry", sid))  # transcript content
    return out


# ---- §7.5 unreferenced-artifact sweep -----------------------------------------------------------


@dataclass
class SweepPlan:
    older_than_ms: int
    scanned: int = 0
    removals: list[FileAction] = field(default_factory=list)
    finished: int = 0  # removals that finish an interrupted cleanup (identical archive exists)

    @property
    def freed(self) -> int:
        return sum(a.size for a in self.removals)

    def to_json(self, removed: int | None = None, freed: int | None = None) -> dict[str, int]:
        return {"scannedFiles": self.scanned, "removedFiles": len(self.removals) if removed is None else removed,
                "freedBytes": self.freed if freed is None else freed, "olderThanMs": self.older_than_ms}


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
    candidates = [(f, kind) for f in snapshot.files.values()
                  if f.name not in exclude and (kind := kind_of(f.name)) is not None and kind != "archive"]
    candidates.sort(key=lambda item: (item[0].mtime_ms, item[0].name))
    plan.scanned = len(candidates)
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


@dataclass
class RetentionPlan:
    scanned: int = 0
    removals: list[FileAction] = field(default_factory=list)

    def to_json(self, removed: int | None = None) -> dict[str, int]:
        return {"scannedFiles": self.scanned, "removedFiles": len(self.removals) if removed is None else removed}


def plan_retention_sweep(snapshot: DirSnapshot, retention_ms: int | None, now_ms: float) -> RetentionPlan | None:
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


def budget_measure(snapshot: DirSnapshot, *, gone: Collection[str], pending: Iterable[FileAction],
                   protected: Collection[str], projected_store_bytes: int | None, now_ms: float,
                   store_name: str = "sessions.json") -> LegacyDirMeasure:
    """The directory as the disk budget stage sees it (§10.7: after the entry removals and the
    sweeps): `gone` files are not counted; archives this run writes are counted at their
    original size (an upper bound of the compressed size) and never removed by the budget;
    protected files are counted and never removed."""
    # lock files come and go with writers (ours included): never measured
    files = [f for f in snapshot.files.values() if f.name not in gone and not f.name.endswith(".lock")]
    if protected:
        files = [DirFile(PROTECTED_PREFIX + f.name, f.size, f.mtime_ms) if f.name in protected else f for f in files]
    files.extend([DirFile(PENDING_PREFIX + action.name, action.size, now_ms) for action in pending])
    return LegacyDirMeasure(files, snapshot.root, store_name, projected_store_bytes)
