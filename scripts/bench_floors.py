"""Floors for scripts/bench (issue 16): the least work an import or a cleanup enforce can do on the
same data, measured in the same run, so a case reads as ours / floor.

- `import_floor(state_dir)`: read every transcript of the state and insert each raw line into one
  fresh WAL database in one transaction (no parsing, no validation, no archiving).
- `import_floor_d6(state_dir)`: the same plus what every import must also do (spec D4/D6/D22):
  hash each file, parse each line, keyed rows, read back and hash, archive by link + unlink.
- `cleanup_floor(state_dir, session_ids)`: for the given sessions of an imported agent database,
  read their lines, compress each transcript once (zstd level 3, as our archives), write it, read
  it back and compare (sha256 of the decompressed read-back against the original's: D6.2's
  verified archive), make the files durable together (syncfs, then the directory), then one
  DELETE transaction.

Both are pure functions returning seconds; they create their scratch files beside the data and
remove them. `cases(ours)` gives the bench cases that run ours and the floor alternately.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

AGENT_DB = Path("agents/main/agent/openclaw-agent.sqlite")
IMPORT_ARGS = ["doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"]
CLEANUP_BIG = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}
CLEANUP_MANY = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 5000}}}


def _transcripts(state_dir: Path) -> list[Path]:
    return sorted(p for p in (state_dir / "agents").glob("*/sessions/*.jsonl") if p.is_file())


def _syncfs(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
            os.sync()
        os.fsync(fd)
    finally:
        os.close(fd)


def _floor_database(scratch: Path, create_table: str) -> sqlite3.Connection:
    """A fresh WAL database set up as ours is (8 KiB pages, synchronous NORMAL), with one table."""
    conn = sqlite3.connect(scratch / "floor.sqlite", isolation_level=None)
    conn.execute("PRAGMA page_size = 8192")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(create_table)
    return conn


def import_floor(state_dir: Path) -> float:
    """Seconds to read every transcript and insert each raw line into one WAL database in one
    transaction (8 KiB pages like ours; committed and checkpointed on close)."""
    state_dir = Path(state_dir)
    scratch = Path(tempfile.mkdtemp(prefix=".floor-", dir=state_dir.parent))
    try:
        start = time.perf_counter()
        conn = _floor_database(
            scratch, "CREATE TABLE lines (session_id TEXT NOT NULL, seq INTEGER NOT NULL, line BLOB NOT NULL)"
        )
        conn.execute("BEGIN")
        insert = "INSERT INTO lines VALUES (?, ?, ?)"
        for path in _transcripts(state_dir):
            sid = path.name[:-6]
            data = path.read_bytes()
            conn.executemany(insert, ((sid, i, line) for i, line in enumerate(data.split(b"\n")) if line))
        conn.execute("COMMIT")
        conn.close()  # the last connection checkpoints the WAL into the database (fsyncs)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def import_floor_d6(state_dir: Path) -> float:
    """The import floor plus the work the spec requires of every import besides building rows
    (`import_floor` skips it): each transcript hashed (sha256: its identity in the manifest, D6),
    each line parsed (D22: only a JSON object is stored as an event), the lines stored under
    their `(session_id, seq)` primary key (D4's `transcript_events`), read back and hashed before
    anything is archived (D6 validate-before-archive), then every transcript moved into an archive
    directory by link + unlink, each directory synced once (D6's moves, batched). Not counted:
    identities, entries and windows (D4's other tables) and the manifest."""
    import hashlib

    import orjson

    state_dir = Path(state_dir)
    scratch = Path(tempfile.mkdtemp(prefix=".floor-", dir=state_dir.parent))
    try:
        start = time.perf_counter()
        conn = _floor_database(
            scratch,
            "CREATE TABLE lines (session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "line TEXT NOT NULL, PRIMARY KEY (session_id, seq))",
        )
        conn.execute("BEGIN")
        insert = "INSERT INTO lines VALUES (?, ?, ?)"
        loads = orjson.loads
        digests: dict[str, str] = {}
        paths = _transcripts(state_dir)
        for path in paths:
            sid = path.name[:-6]
            data = path.read_bytes()
            digests[sid] = hashlib.sha256(data).hexdigest()
            rows = []
            for i, line in enumerate(data.split(b"\n")):
                if line:
                    loads(line)
                    rows.append((sid, i, line.decode()))
            conn.executemany(insert, rows)
        conn.execute("COMMIT")
        conn.text_factory = bytes
        current, digest = None, None
        read_back: dict[bytes, str] = {}
        for sid, line in conn.execute("SELECT session_id, line || char(10) FROM lines"):
            if sid != current:
                if digest is not None:
                    read_back[current] = digest.hexdigest()
                current, digest = sid, hashlib.sha256()
            digest.update(line)
        if digest is not None:
            read_back[current] = digest.hexdigest()
        conn.close()
        # compared as the import compares (a file with blank lines or no final newline differs: counted only)
        _mismatched = sum(read_back.get(sid.encode()) != want for sid, want in digests.items())
        archive = scratch / "archive"
        archive.mkdir()
        dirs = set()
        for path in paths:
            os.link(path, archive / path.name)
            dirs.add(path.parent)
        _fsync_dirs([archive])
        for path in paths:
            os.unlink(path)
        _fsync_dirs(dirs)
        elapsed = time.perf_counter() - start
        for path in paths:  # put the state back as it was (not timed)
            os.link(archive / path.name, path)
        return elapsed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fsync_dirs(dirs: Iterable[Path]) -> None:
    for directory in dirs:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def cleanup_floor(
    state_dir: Path,
    session_ids: Iterable[str],
    db: Path = AGENT_DB,
    *,
    in_db: bool = False,
    verify: bool = True,
    keep: bool = False,
) -> float:
    """Seconds to archive `session_ids` of the state's agent database once (read, zstd, write, read
    back and verify, one durable flush) and delete them in one transaction. Mutates the state:
    give it a copy. `in_db`: the compressed archives are rows of one table written in the DELETE's
    transaction (OpenClaw's `session_transcript_archives` way: no file, one commit) instead of
    files. `verify` (D6.2, on by default): each archive file is read back, decompressed and its
    sha256 compared with the original's before anything is deleted (the in-database floor's rows
    are not read back). `keep`: the archives stay (the caller removes the whole copy when its case
    ends: unlinking them here would free inodes the next timed run's creations scan past)."""
    import hashlib

    import zstandard

    state_dir = Path(state_dir)
    sids = list(session_ids)
    # the archives go where ours must put them (D6.7: the agent's sessions dir), named as OpenClaw
    # names them: a fresh directory of the floor's own was placed by ext4 away from the inodes the
    # bench's previous copy freed, so only ours paid the allocator's recently-deleted inode scan
    # (no journal on the bench machine; decisions: cleanup36)
    out = (state_dir / db).parent.parent / "sessions"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S.000Z", time.gmtime())
    created: list[Path] = []
    try:
        start = time.perf_counter()
        conn = sqlite3.connect(state_dir / db, isolation_level=None)
        conn.execute("PRAGMA synchronous = NORMAL")
        cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
        dctx = zstandard.ZstdDecompressor()
        if in_db:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS floor_archives (session_id TEXT PRIMARY KEY, data BLOB NOT NULL)"
            )
            conn.execute("BEGIN IMMEDIATE")
        for sid in sids:
            lines = conn.execute(
                "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (sid,)
            )
            data = b"".join(text.encode() + b"\n" for (text,) in lines)
            if in_db:
                conn.execute("INSERT INTO floor_archives VALUES (?, ?)", (sid, cctx.compress(data)))
                continue
            path = out / f"{sid}.jsonl.deleted.{stamp}.zst"
            packed = cctx.compress(data)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            created.append(path)
            try:
                os.write(fd, packed)
            finally:
                os.close(fd)
            if verify:
                fd = os.open(path, os.O_RDONLY)
                try:
                    back = os.read(fd, len(packed) + 1)
                finally:
                    os.close(fd)
                unpacked = dctx.decompress(back)
                if hashlib.sha256(unpacked).digest() != hashlib.sha256(data).digest():
                    raise RuntimeError(f"floor: archive of {sid} does not verify")
        if not in_db:
            _syncfs(out)
            conn.execute("BEGIN IMMEDIATE")
        for part in range(0, len(sids), 500):
            chunk = sids[part : part + 500]
            marks = ",".join("?" * len(chunk))
            for table, column in (
                ("transcript_event_identities", "session_id"),
                ("transcript_events", "session_id"),
                ("session_windows", "session_id"),
                ("session_nodes", "current_session_id"),
            ):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
        conn.execute("COMMIT")
        conn.close()
        return time.perf_counter() - start
    finally:
        for path in [] if keep else created:
            path.unlink(missing_ok=True)


def session_ids(db_path: Path) -> set[str]:
    conn = sqlite3.connect(f"{Path(db_path).absolute().as_uri()}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT session_id FROM session_windows")}
    finally:
        conn.close()


# ---- bench cases ---------------------------------------------------------------------------------------


def _rusage_run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, float, int]:
    """(wall s, user s, sys s, peak RSS MB, exit code) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and proc.stderr is not None:
        print(
            f"    ! exit {code}: {' '.join(cmd[-4:])}\n{proc.stderr.read().decode(errors='replace')[-800:]}",
            file=sys.stderr,
        )
    return wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024, code


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed_floor(fn: Callable[[], float]) -> tuple[float, float]:
    """(wall s, CPU s) of a floor run in this process: on a shared machine the CPU seconds compare
    better than the wall."""
    before = _cpu()
    wall = fn()
    return wall, _cpu() - before


def _report(
    b: Any,
    name: str,
    ours: list[tuple[float, float, float, float, int]],
    floor: list[tuple[float, float]],
    target_ratio: float | None,
    rss_max: float | None,
) -> None:
    wall = statistics.median(r[0] for r in ours)
    cpu = statistics.median(r[1] + r[2] for r in ours)
    floor_wall = statistics.median(f[0] for f in floor)
    floor_cpu = statistics.median(f[1] for f in floor)
    ratio = wall / floor_wall
    cpu_ratio = cpu / floor_cpu if floor_cpu else None
    rss = max(r[3] for r in ours)
    checks = []
    if target_ratio is not None:
        checks.append(f"ratio:{'OK' if ratio <= target_ratio else 'MISSED'}")
    if rss_max is not None:
        checks.append(f"rss:{'OK' if rss <= rss_max else 'MISSED'}")
    line = {
        "case": name,
        "ours": f"median {wall:.3f} s (user {statistics.median(r[1] for r in ours):.2f}, "
        f"sys {statistics.median(r[2] for r in ours):.2f}), peak RSS {rss:.0f} MB",
        "floor": f"median {floor_wall:.3f} s (cpu {floor_cpu:.2f})",
        "oursOverFloor": f"{ratio:.2f}x wall, {cpu_ratio:.2f}x cpu" if cpu_ratio else f"{ratio:.2f}x wall",
        "target": " ".join(
            t
            for t in (
                f"<= {target_ratio:g}x floor" if target_ratio else "",
                f"peak RSS <= {rss_max:g} MB" if rss_max else "",
            )
            if t
        ),
        "verdict": " ".join(checks),
        "figures": {
            "oursSeconds": wall,
            "oursCpuSeconds": cpu,
            "floorSeconds": floor_wall,
            "floorCpuSeconds": floor_cpu,
            "peakRssMb": rss,
        },
    }
    b.results.append(line)
    print(
        f"\n{name}\n  ours : {line['ours']}\n  floor: {line['floor']}\n  ours/floor {line['oursOverFloor']} "
        f"(target: {line['target']}) {line['verdict']}",
        file=sys.stderr,
    )


def _import_vs_floor(
    b: Any, ours: list[str], name: str, label: str, rss_max: float | None, d6_target: float
) -> None:
    """Issue 30 judges the import against the D6 floor (read + hash + parse + keyed rows +
    read-back + moves, same run): `d6_target` is its ratio; the bare floor is shown beside it."""
    runs: list[tuple[float, float, float, float, int]] = []
    floors: list[tuple[float, float]] = []
    d6: list[tuple[float, float]] = []
    for i in range(b.runs):  # alternating: ours and the floors see the same machine state
        state = b.fresh_copy(name, f"floor-import-{i}")
        floors.append(_timed_floor(lambda state=state: import_floor(state)))
        d6.append(_timed_floor(lambda state=state: import_floor_d6(state)))
        shutil.rmtree(state)
        state = b.fresh_copy(name, f"ours-import-{i}")
        runs.append(_rusage_run([*ours, *IMPORT_ARGS], b.env_ours(state)))
        shutil.rmtree(state)
    _report(b, label, runs, floors, None, rss_max)
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] + r[2] for r in runs)
    d6_wall = statistics.median(f[0] for f in d6)
    d6_cpu = statistics.median(f[1] for f in d6)
    b.results[-1]["floorD6"] = f"median {d6_wall:.3f} s (cpu {d6_cpu:.2f})"
    b.results[-1]["oursOverFloorD6"] = f"{wall / d6_wall:.2f}x wall, {cpu / d6_cpu:.2f}x cpu"
    b.results[-1]["figures"].update({"floorD6Seconds": d6_wall, "floorD6CpuSeconds": d6_cpu})
    d6_verdict = f"d6ratio:{'OK' if wall / d6_wall <= d6_target else 'MISSED'}"
    b.results[-1]["target"] = " ".join(
        t for t in (f"<= {d6_target:g}x the D6 floor", b.results[-1]["target"]) if t
    )
    b.results[-1]["verdict"] = " ".join(t for t in (d6_verdict, b.results[-1]["verdict"]) if t)
    print(
        f"  floor with D6's hashing, parsing, keyed rows, read-back and moves (import_floor_d6): median "
        f"{d6_wall:.3f} s (cpu {d6_cpu:.2f}); ours/that {wall / d6_wall:.2f}x wall, {cpu / d6_cpu:.2f}x cpu "
        f"(target: <= {d6_target:g}x) {d6_verdict}",
        file=sys.stderr,
    )


def _imported(b: Any, ours: list[str], name: str) -> Path:
    """Our import of a dataset, cached (cleanup runs start from copies of it)."""
    dest = b.data / f"{name}-ours-imported"
    if not (dest / ".imported").exists():
        dest = b.fresh_copy(name, "ours-imported")
        subprocess.run([*ours, *IMPORT_ARGS], env=b.env_ours(dest), check=True, stdout=subprocess.DEVNULL)
        (dest / ".imported").write_text("ok")
    return dest


# ext4 without a journal (the bench machine) makes every file creation within ~60 s of a deletion
# scan past the recently freed inodes (`recently_deleted`): a timed run started in that minute paid
# seconds of system time the others did not, whichever side came first after the previous case's
# removals (decisions: cleanup36, stop 44's lead section). The bench's removals are stamped.
SETTLE_AFTER_REMOVAL_S = 65.0
_last_removal = 0.0


def stamp_removals() -> None:
    """Make `shutil.rmtree` note when the bench last freed inodes (`settle` waits them out)."""
    original = shutil.rmtree

    def rmtree(path: Any, *args: Any, **kwargs: Any) -> None:
        global _last_removal
        existed = os.path.lexists(path)
        try:
            original(path, *args, **kwargs)
        finally:
            if existed:
                _last_removal = time.monotonic()

    shutil.rmtree = rmtree  # type: ignore[assignment]


_at_exit: list[Path] = []


def remove_at_exit(*paths: Path) -> None:
    """Remove `paths` when the bench ends, not now: inodes freed during a run count as recently
    freed for 60 s, and for 6 minutes while their inode-table block is dirty — which the next
    case's own file creations make it (cleanup44b, stop 44) — so one case's copies removed at its
    end slowed the next case's timed creations, the floor's (no flush until its end) more than ours."""
    if not _at_exit:
        import atexit

        atexit.register(remove_deferred)
    _at_exit.extend(paths)


def remove_deferred() -> None:
    """The removals `remove_at_exit` put off (run when the bench ends)."""
    while _at_exit:
        shutil.rmtree(_at_exit.pop(), ignore_errors=True)


def settle() -> None:
    """Before a timed run: let the writeback of the freshly copied dataset finish (file creation
    right after copying ~0.3 GB is several times slower for a while on this machine, and a `syncfs`
    would flush the copy too), and let the minute after the bench's last removal pass: the same for
    ours and the floors."""
    os.sync()
    since = time.monotonic() - _last_removal
    time.sleep(max(10.0, SETTLE_AFTER_REMOVAL_S - since) if _last_removal else 10.0)


def cleanup_runs(
    b: Any,
    ours: list[str],
    name: str,
    config: dict[str, Any],
    *,
    in_db: bool = False,
    child: Callable[[list[str], dict[str, str]], Any] = _rusage_run,
) -> tuple[list[Any], list[tuple[float, float]], list[tuple[float, float]], int]:
    """Ours (`cleanup --enforce`, a child) and the verified file floor (`cleanup_floor` of the
    sessions ours removed, in this process), alternating, each run on its own copy of our cached
    import of `name`; `in_db` adds the in-database floor. Same preparation for every run: all the
    copies are made first, then each run starts after `settle()`, and nothing is deleted until
    the bench ends — a copy removed between runs frees thousands of inodes, and ext4 without a
    journal (this machine) makes every file creation in the next minutes scan past them
    (`recently_deleted`), so whichever run came after a removal paid seconds of system time the
    others did not (decisions: cleanup36, cleanup37). The order alternates (ours first in even
    runs, the floor first in odd ones: the floor needs the sessions ours removed, known from run
    0). `child` runs ours and gives its figures. Returns (ours runs, floor runs, in-database floor
    runs, sessions removed per run)."""
    source = b.ours_imported(name) if hasattr(b, "ours_imported") else _imported(b, ours, name)
    before = session_ids(source / AGENT_DB)
    count = max(1, min(b.runs, 3))
    sides = ("ours", "floor", "indb") if in_db else ("ours", "floor")
    works = {(side, i): b.data / f"{name}-cleanup-{side}-{i}" for i in range(count) for side in sides}
    for work in works.values():  # a previous run's leftovers go before any copy is made
        shutil.rmtree(work, ignore_errors=True)
    runs: list[Any] = []
    floors: list[tuple[float, float]] = []
    in_dbs: list[tuple[float, float]] = []
    removed: list[str] = []
    try:
        for work in works.values():
            shutil.copytree(source, work)
        for i in range(count):
            order = sides if i % 2 == 0 else tuple(reversed(sides))
            for side in order:
                work = works[side, i]
                settle()
                if side == "ours":
                    runs.append(
                        child([*ours, "sessions", "cleanup", "--enforce", "--json"], b.env_ours(work, config))
                    )
                    gone = sorted(before - session_ids(work / AGENT_DB))
                    if removed and gone != removed:
                        print(
                            f"    ! run {i} removed {len(gone)} sessions, run 0 {len(removed)}",
                            file=sys.stderr,
                        )
                    removed = removed or gone
                elif side == "floor":
                    floors.append(
                        _timed_floor(
                            lambda work=work, removed=removed: cleanup_floor(work, removed, keep=True)
                        )
                    )
                else:
                    in_dbs.append(
                        _timed_floor(
                            lambda work=work, removed=removed: cleanup_floor(work, removed, in_db=True)
                        )
                    )
    finally:
        remove_at_exit(*works.values())
    return runs, floors, in_dbs, len(removed)


def _cleanup_vs_floor(b: Any, ours: list[str], name: str, config: dict[str, Any], label: str) -> None:
    runs, floors, in_db, removed = cleanup_runs(b, ours, name, config, in_db=True)
    print(
        f"  ({removed} sessions removed per run; floor with the archives inside the database: median "
        f"{statistics.median(f[0] for f in in_db):.3f} s, cpu {statistics.median(f[1] for f in in_db):.2f})",
        file=sys.stderr,
    )
    _report(b, label, runs, floors, 1.3, None)  # issue 30: <= 1.3x the verified file floor


def cases(ours: list[str]) -> dict[str, Callable[[Any], None]]:
    """Bench cases (registered in scripts/bench.py) measuring ours against the floors."""
    return {
        "floor-import-big": lambda b: _import_vs_floor(
            b, ours, "big", "import big (2,000 sessions, 211 MB) vs its floor", 100, 1.3
        ),
        "floor-import-many": lambda b: _import_vs_floor(
            b, ours, "many", "import many (20,000 sessions) vs its floor", None, 1.5
        ),
        "floor-cleanup-big": lambda b: _cleanup_vs_floor(
            b, ours, "big", CLEANUP_BIG, "cleanup --enforce, big imported, maxEntries 500, vs its floor"
        ),
        "floor-cleanup-many": lambda b: _cleanup_vs_floor(
            b, ours, "many", CLEANUP_MANY, "cleanup --enforce, many imported, maxEntries 5000, vs its floor"
        ),
    }
