"""What a killed writer leaves in a directory, and its removal (issue 13 cases 8 and the soak): the
temp files of our atomic writes (`<name>.<pid>.<hex32>.tmp`, `.<name>.<pid>.<hex32>.tmp`, a temp
database's `-wal`/`-shm`) and lock files, when the process that made them is gone. A temp file is never data: the file it was being written
from (an original being archived, a transcript being rotated) is still in place, and nothing refers
to the temp name. A lock of a dead owner is reclaimed exactly as the next writer would reclaim it.
A temp or lock of a live process is never touched (even a pid reused by another program counts
as live: left alone)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# `<name>.<pid>.<hex32>.tmp` and `.<name>.<pid>.<hex32>.tmp` (atomic writes: stores, archives, manifests,
# configs, successor transcripts, new databases) and a temp database's SQLite sidecars
_TEMP = re.compile(r"^\.?.+\.(?P<pid>\d+)\.[0-9a-f]{32}\.tmp(?:-wal|-shm|-journal)?$")
_LOCKS = (".jsonl.lock", "sessions.json.lock")
# the endings of every name `_TEMP` or `_LOCKS` takes: the other names are passed over without a
# regex (a sessions dir lists a name per transcript)
_CANDIDATE_ENDINGS = (".tmp", ".tmp-wal", ".tmp-shm", ".tmp-journal", *_LOCKS)


def temp_owner(name: str) -> int | None:
    """The writer's pid of one of our temp files, else None."""
    match = _TEMP.match(name)
    return int(match.group("pid")) if match else None


def sweep_crash_leftovers(
    sessions_dir: Path, lock_settings: Any = None, names: Iterable[str] | None = None
) -> list[str]:
    """Remove dead writers' temp files and locks directly in `sessions_dir` (any directory we write
    into: a sessions dir, an agent's database dir, the migration runs dir, the state dir); the
    removed paths. `names`: the directory's listing when the caller has just taken it (a dead
    writer creates nothing since; a writer dying since leaves its file to the next sweep, as one
    dying right after the listing always did)."""
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.store.lock import DEFAULT_LOCK_SETTINGS, decide, inspect_lock, is_pid_alive

    settings = lock_settings or DEFAULT_LOCK_SETTINGS
    removed: list[str] = []
    if names is None:
        try:
            names = os.listdir(sessions_dir)
        except OSError:
            return removed
    # only the candidates sorted: a sessions dir may list 100,000 transcripts
    for name in sorted(name for name in names if name.endswith(_CANDIDATE_ENDINGS)):
        pid = temp_owner(name)
        if pid is None and not name.endswith(_LOCKS):
            continue
        path = Path(sessions_dir) / name
        if pid is not None:
            if pid == os.getpid() or is_pid_alive(pid):
                continue
            if _unlink_regular(path):
                removed.append(str(path))
            continue
        if name.endswith(_LOCKS):
            try:
                inspection = inspect_lock(path, settings)
            except OpenClawError:
                continue  # not a lock file we could have left (a directory, a FIFO, ...): not ours to sweep
            if (
                inspection is not None
                and "dead-pid" in inspection.stale_reasons
                and decide(inspection, settings) == "reclaim"
                and _unlink_regular(path)
            ):
                removed.append(str(path))
    return removed


def _unlink_regular(path: Path) -> bool:
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True
