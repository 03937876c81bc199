"""What can stop an import other than its data: the free space it needs (checked before it writes
anything, and before it records its archive plan), and a failure turned into the typed error the
operator sees (a full disk as the no-space error whatever SQLite called it)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from openclaw_cli.errors import OpenClawError, typed_error
from openclaw_cli.fsio import check_space

MANIFEST_BYTES_PER_FILE = (
    4096  # a planned + completed move is ~2 KB; an atomic rewrite briefly needs two copies
)
WAL_ALLOWANCE = 96 * 1024 * 1024  # the bulk import checkpoints the WAL every 10,000 pages (80 MiB)
ROWS_FILE_FACTOR = 2  # bytes a line takes in the parser's rows files, per byte of line (`rows_files_bytes`)
# pages of a rows file beyond its rows (`rows_files_bytes`): the schema's, and the partly filled
# last page of each level of its four b-trees (64 KiB pages: `parser_process.ROWS_PAGE_SIZE`)
ROWS_FILE_SLACK_PAGES = 16


def _manifest_size(path: Path | None) -> int:
    try:
        return os.stat(path).st_size if path is not None else 0
    except OSError:
        return 0


def _legacy_size(sessions_dir: Path, names: list[str] | None = None) -> tuple[int, int, int, bool]:
    """(bytes, files, the largest file's bytes, whether it was listed whole) of the legacy store
    directory (one scandir, no reads); every name it lists appended to `names`."""
    total = files = largest = 0
    try:
        with os.scandir(sessions_dir) as it:
            for entry in it:
                if names is not None:
                    names.append(entry.name)
                try:
                    if entry.is_file(follow_symlinks=False):
                        size = entry.stat(follow_symlinks=False).st_size
                        total += size
                        files += 1
                        if size > largest:
                            largest = size
                except OSError:
                    continue
    except OSError:
        return total, files, largest, False
    return total, files, largest, True


def _estimate_db_bytes(data: int, files: int) -> int:
    """Measured: a database holds 1.17x (big transcripts) to 1.6x (20,000 small sessions) its
    legacy bytes; the WAL adds up to the checkpoint interval during the import."""
    return int(data * 1.35) + files * 2048 + min(WAL_ALLOWANCE, data) + 1024 * 1024


def rows_files_bytes(data: int, largest: int) -> int:
    """What the parser process's rows files (`parser_process.RowsFiles`, beside the build) can hold
    on disk at once, from the legacy bytes and the largest file. A file is closed after the record
    that takes it past `ROWS_FILE_BYTES` of lines (a record the parser reads is at most
    `PARSER_FILE_LIMIT`) and removed once the importing process has copied it, which it does when it
    reaches the next file's first record; the parser runs at most `WINDOW_JOBS` records ahead. So at
    once: the closed file not copied yet, the records of the next one up to the importing process,
    and the window ahead of it — never more than every transcript. Lines take ~1.5x their bytes
    there (measured on *many*, ~440-byte lines: ~190 bytes of event and identity row each): 2x;
    plus, per file, the pages its b-trees hold partly filled (`ROWS_FILE_SLACK_PAGES`)."""
    from openclaw_cli.migration.parser_process import (
        PARSER_FILE_LIMIT,
        ROWS_FILE_BYTES,
        ROWS_PAGE_SIZE,
        WINDOW_JOBS,
    )

    record = min(largest, PARSER_FILE_LIMIT)
    at_once = 2 * (ROWS_FILE_BYTES + record) + WINDOW_JOBS * record
    return ROWS_FILE_FACTOR * min(data, at_once) + 2 * ROWS_FILE_SLACK_PAGES * ROWS_PAGE_SIZE


def check_import_space(
    targets: list[Any],
    db_kinds: dict[Path, str],
    runs_dir: Path,
    listed: dict[Path, list[str]] | None = None,
) -> None:
    """Refuse before anything is written when a filesystem cannot hold what the import will
    write: the database (and its WAL), the parser's rows files beside it when the parser may read
    (`importer.parser_wanted`) and the manifest, estimated from the legacy sizes. `listed`: each
    sessions dir's names, as its scan found them, for the leftovers' sweep that follows
    (`engine._sweep_leftovers`: the directory is not listed again)."""
    from openclaw_cli.migration.importer import parser_wanted

    needs: dict[int, list[Any]] = {}  # st_dev -> [a path on it, bytes, what]

    def add(path: Path, n: int, what: str) -> None:
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            dev = os.stat(probe).st_dev
        except OSError:
            return
        slot = needs.setdefault(dev, [probe, 0, []])
        slot[1] += n
        slot[2].append(what)

    files_total = 0
    for t in targets:
        names: list[str] | None = [] if listed is not None else None
        data, files, largest, whole = _legacy_size(t.sessions_dir, names)
        if listed is not None and names is not None and whole:
            listed[t.sessions_dir] = names
        files_total += files
        db = _estimate_db_bytes(data, files)
        kind = db_kinds.get(t.sqlite_path, "missing")
        if kind == "ours":
            db //= 2  # an existing database already holds part of it (re-runs append only what is missing)
        add(t.sqlite_path.parent, db, f"the database of agent {t.agent_id}")
        if parser_wanted(t.sessions_dir, fresh=kind in ("missing", "empty")):  # as `_import_target` decides
            add(
                t.sqlite_path.parent,
                rows_files_bytes(data, largest),
                f"the parser's rows files of agent {t.agent_id}",
            )
    add(runs_dir, MANIFEST_BYTES_PER_FILE * (files_total + 1), "the migration manifest")
    for path, n, what in needs.values():
        check_space(path, n, " and ".join(what))


def check_archive_plan_space(runs_dir: Path, manifest: Path | None, moves: int) -> None:
    """Hard links need no data space; the manifest that records them does."""
    check_space(
        runs_dir,
        MANIFEST_BYTES_PER_FILE * (moves + 1) + _manifest_size(manifest),
        "recording the archive plan in the migration manifest",
        consequence="the SQLite store is live and verified, every original stays in place until a re-run "
        "of the import archives it",
    )


def full_disk(error: OpenClawError, db: Path | None) -> OpenClawError:
    """A database error of an import on a full filesystem is the full disk (SQLite reports a write
    cut short as an I/O error or a malformed image on the next read)."""
    from openclaw_cli.errors import NoSpaceError
    from openclaw_cli.fsio import free_bytes
    from openclaw_cli.store.sqlite_common import FULL_DISK_BYTES

    if isinstance(error, NoSpaceError) or db is None or error.type not in ("invalid_data", "io_error"):
        return error
    free = free_bytes(db.parent)
    if free is None or free >= FULL_DISK_BYTES:
        return error
    return NoSpaceError(
        f"{db.parent}: no space left on the device ({free} bytes free) while writing the database: "
        f"{error.message}",
        path=db,
    )


def typed_failure(exc: BaseException, db: Path | None) -> OpenClawError:
    """The typed error for whatever stopped the run (an SQLite error is translated as a write)."""
    if isinstance(exc, sqlite3.Error):
        from openclaw_cli.store.sqlite_common import translate_error

        translated = translate_error(exc, db or Path("the agent database"), 5000, writing=True)
        if isinstance(translated, OpenClawError):
            return translated
    return typed_error(exc) or OpenClawError(f"{type(exc).__name__}: {exc}", type="internal_error")
