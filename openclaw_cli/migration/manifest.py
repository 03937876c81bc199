"""Migration run manifests (storage-migration.md §6.8, spec D13).

Ours keep OpenClaw's v3 shape plus `"pathBase": "stateDir"`: every path inside the state directory is
stored relative to it (a path outside it stays absolute), and artifacts are identified by sha256 and
size (dev/ino are recorded, never required), so `restore` works after the state dir was copied or
moved. Real OpenClaw manifests (absolute paths) are read too: their paths are mapped into the
current state dir by their `agents/<id>/<dir>/<name>` suffix.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeGuard

import orjson

from openclaw_cli import __version__, clock
from openclaw_cli.clock import iso_now as iso_now  # the manifest's stamps (importer, restore, failure)
from openclaw_cli.fsio import atomic_write_bytes, ensure_dir
from openclaw_cli.jsonutil import JSONDecodeError, StreamedArray, dumps_pretty, loads
from openclaw_cli.migration.publish import Identity
from openclaw_cli.migration.report import is_blocking
from openclaw_cli.paths import IMPORT_ARCHIVE_DIR

if TYPE_CHECKING:
    from openclaw_cli.migration.index_stream import BlockReader

MANIFEST_VERSION = 3
PATH_BASE = "stateDir"
APP_VERSION = f"openclaw-cli {__version__}"
MOVE_KINDS = frozenset({"legacy-store", "transcript", "trajectory", "unreferenced-jsonl"})


def new_run_id(now_ms: int | None = None) -> str:
    now_ms = clock.now_ms() if now_ms is None else now_ms
    return f"session-sqlite-{now_ms}-{uuid.uuid4().hex[:8]}"


class PathMapper:
    """Converts between real paths and manifest paths for one state directory."""

    def __init__(self, state_dir: Path, relative: bool):
        self.state_dir = state_dir
        self.relative = relative
        self._prefix = str(state_dir).rstrip(os.sep) + os.sep

    def to_manifest(self, path: Path | str) -> str:
        text = os.fspath(path)
        if self.relative and text.startswith(self._prefix):
            rel = text[len(self._prefix) :]
            return rel.replace(os.sep, "/") if os.sep != "/" else rel
        return text

    def to_real_text(self, raw: str) -> str:
        """The exact inverse of `to_manifest` for a path this mapper wrote (no re-rooting)."""
        return raw if raw.startswith("/") else self._prefix + raw

    def to_real(self, raw: str) -> Path:
        path = Path(raw)
        if not path.is_absolute():
            return self.state_dir / path
        try:
            path.relative_to(self.state_dir)
            return path
        except ValueError:
            pass
        parts = path.parts
        # OpenClaw's absolute paths from another location: re-root by the agents/<id>/<dir>/<name> suffix
        if len(parts) >= 4 and parts[-4] == "agents":
            return self.state_dir.joinpath(*parts[-4:])
        if len(parts) >= 3 and parts[-2] == "session-sqlite-migration-runs":
            return self.state_dir.joinpath(*parts[-2:])
        return path


def _valid_path_text(raw: Any, relative: bool) -> TypeGuard[str]:
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return False
    path = PurePosixPath(raw)
    if path.is_absolute():
        return True  # absolute paths are allowed in both kinds (outside-the-state-dir stores)
    if not relative:
        return False
    return ".." not in path.parts and "." not in raw.split("/")


@dataclass
class LoadedManifest:
    path: Path
    data: dict[str, Any]
    mapper: PathMapper
    ours: bool

    @property
    def run_id(self) -> str:
        return str(self.data.get("runId", self.path.stem))

    @property
    def failed(self) -> bool:
        d = self.data
        if not d.get("completedAt") or d.get("failedAt") or d.get("failureReports"):
            return True
        for t in d.get("targets", []):
            for issue in t.get("issues", []) or []:
                if isinstance(issue, dict) and is_blocking(str(issue.get("code", ""))):
                    return True
        return False

    @property
    def sort_stamp(self) -> str:
        d = self.data
        return str(d.get("failedAt") or d.get("completedAt") or d.get("startedAt") or "")

    def frozen(self) -> bool:
        reports = self.data.get("failureReports")
        return isinstance(reports, dict) and "githubIssue" in reports

    def save(self) -> None:
        write_manifest(self.path, self.data)


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Pretty JSON (2 spaces) + newline, written atomically and durably (0600 in a 0700 dir). A
    target's moves may be a `MoveLog` / `CompletedMoves`: their JSON is streamed into the file, the
    bytes are the same as for plain lists."""
    from openclaw_cli.fsio import refuse_symlinked_dirs

    refuse_symlinked_dirs(path.parent, path.parent.parent, "the migration manifest")  # the runs dir
    ensure_dir(path.parent)
    atomic_write_bytes(path, _manifest_pieces(data))


def _dump(data: Any) -> bytes:
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return (dumps_pretty(data) + "\n").encode("utf-8")


def _manifest_pieces(data: dict[str, Any]) -> Iterator[bytes]:
    targets = data.get("targets")
    views: list[MoveView] = []
    if isinstance(targets, list):
        token = uuid.uuid4().hex
        stubbed = []
        for target in targets:
            if isinstance(target, dict) and any(isinstance(v, MoveView) for v in target.values()):
                target = dict(target)
                for k, v in target.items():
                    if isinstance(v, MoveView):
                        target[k] = f"moves-{token}-{len(views)}"
                        views.append(v)
            stubbed.append(target)
        if views:
            data = {**data, "targets": stubbed}
    text = _dump(data)
    if not views:
        yield text
        return
    pos = 0
    for n, view in enumerate(views):
        marker = f'"moves-{token}-{n}"'.encode()
        at = text.index(marker, pos)
        yield text[pos:at]
        yield from view.json_pieces()
        pos = at + len(marker)
    yield text[pos:]


# a target's moves are elements of `targets[i].<moves>`: 8 spaces deep, the list closes at 6
_ELEMENT_PAD = b"\n" + b" " * 8
_ELEMENT_SEP = b"," + _ELEMENT_PAD
_LIST_CLOSE = b"\n" + b" " * 6 + b"]"
_SPILL_BLOCK = 1024 * 1024
_ARCHIVE_PATH_MARK = b'"archivePath": "'  # a move's first member as `OPT_INDENT_2` writes it


class MoveView:
    """A target's moves as the manifest holds them (iterable as dicts, `len`, streamed JSON)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _chunk_indexes(self) -> Iterable[int]:
        raise NotImplementedError

    def log(self) -> MoveLog:
        raise NotImplementedError

    def __iter__(self) -> Iterator[dict[str, Any]]:
        log = self.log()
        for n in self._chunk_indexes():
            yield orjson.loads(log.chunk(n))

    def __bool__(self) -> bool:
        return len(self) > 0

    def in_log_order(self) -> bool:
        """Whether the moves are the log's first `len(self)` moves, in order (their JSON is then
        a stretch of the log's bytes, copied in blocks)."""
        return False

    def json_pieces(self) -> Iterator[bytes]:
        if not len(self):
            yield b"[]"
            return
        log = self.log()
        yield b"["
        if self.in_log_order() and log.whole:
            # the log holds each move after its separator: the list's bytes as they are, in blocks
            # (two writes of a 20,000-move manifest asked for 40,000 chunks and wrote 80,000 pieces)
            yield from log.span(len(self))
            yield _LIST_CLOSE
            return
        first = True
        for n in self._chunk_indexes():
            yield _ELEMENT_PAD if first else b"," + _ELEMENT_PAD
            yield log.chunk(n)
            first = False
        yield _LIST_CLOSE


class MoveLog(MoveView):
    """The planned moves of one target, kept out of memory (issue 16: 100,000 moves were ~300 MB of
    Python objects): each move's JSON, indented for its place in the manifest, in an unnamed
    temporary file beside the manifest (gone with the process); the manifest file keeps its shape."""

    def __init__(self, spill_dir: Path):
        self._dir = spill_dir
        self._fd: int | None = None
        self._end = 0  # bytes in the file plus the write buffer
        self._pending: list[bytes] = []  # appended, not written yet (one write per ~1 MiB)
        self._pending_bytes = 0
        self._reader: BlockReader | None = None
        self.offsets = array("Q")  # where each move's JSON starts (after its separator) ...
        self.lengths = array("Q")  # ... and its length
        # every byte of the file belongs to an indexed move or its separator (false once an
        # append failed half-way: the list is then read move by move)
        self.whole = True

    def log(self) -> MoveLog:
        return self

    def in_log_order(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self.offsets)

    def _chunk_indexes(self) -> Iterable[int]:
        return range(len(self.offsets))

    def append(self, move: dict[str, Any]) -> int:
        """Record a move; returns its index (for `CompletedMoves.add`). A `StreamedArray` of
        strings as `artifact.dependencies` (the legacy index's move names every transcript: 100,000
        paths) is written as it is produced, the bytes `orjson.dumps` gives the whole list."""
        artifact = move.get("artifact")
        deps = artifact.get("dependencies") if isinstance(artifact, dict) else None
        if isinstance(artifact, dict) and isinstance(deps, StreamedArray):
            return self._append_pieces(_streamed_dependencies(move, artifact, deps))
        return self._append_pieces(
            [orjson.dumps(move, option=orjson.OPT_INDENT_2).replace(b"\n", _ELEMENT_PAD)]
        )

    def _append_pieces(self, pieces: Iterable[bytes]) -> int:
        # each move is written after the separator it has in the manifest's list (the first one's
        # newline and indent; a comma before the others'), so the list is a stretch of the file
        self._add(_ELEMENT_PAD if not self.offsets else _ELEMENT_SEP)
        start, length = self._end, 0
        try:
            for piece in pieces:
                length += len(piece)
                self._add(piece)
        except BaseException:
            self.whole = False  # bytes nothing refers to: the list is read move by move from now on
            raise
        # indexed only once whole: a move that failed half-way is bytes nothing refers to
        self.offsets.append(start)
        self.lengths.append(length)
        return len(self.offsets) - 1

    def _add(self, piece: bytes) -> None:
        self._end += len(piece)
        self._pending.append(piece)
        self._pending_bytes += len(piece)
        if self._pending_bytes >= _SPILL_BLOCK:
            self._flush()

    def span(self, count: int) -> Iterator[bytes]:
        """The bytes of the first `count` moves with their separators (what a list of them holds
        between `[` and its close), read in blocks."""
        self._flush()
        assert self._fd is not None and 0 < count <= len(self.offsets)
        at = self.offsets[0] - len(_ELEMENT_PAD)
        end = self.offsets[count - 1] + self.lengths[count - 1]
        while at < end:
            block = os.pread(self._fd, min(_SPILL_BLOCK, end - at), at)
            if not block:
                raise OSError(errno.EIO, "the spilled moves ended early")
            yield block
            at += len(block)

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._fd is None:
            self._fd = _unnamed_file(self._dir)
        data = memoryview(b"".join(self._pending))
        at = self._end - len(data)
        while data:
            written = os.pwrite(self._fd, data, at)
            data, at = data[written:], at + written
        self._pending.clear()
        self._pending_bytes = 0

    def extend(self, moves: Iterable[dict[str, Any]]) -> None:
        for move in moves:
            self.append(move)

    def chunk(self, n: int) -> bytes:
        self._flush()
        assert self._fd is not None
        reader = self._reader
        if reader is None:  # imported once, not per move (an import statement costs ~1 us each time)
            from openclaw_cli.migration.index_stream import BlockReader

            reader = self._reader = BlockReader(_SPILL_BLOCK)
        return reader.read(self._fd, self.offsets[n], self.lengths[n])

    def archive_paths(self, indexes: Iterable[int]) -> Iterator[str]:
        """The `archivePath` of each indexed move, in the given order: found in the log's bytes
        where it sits (a move's first member, `new_move`; its value ends at the next quote unless
        it holds an escape, which the JSON parser then reads), through a `BlockReader`'s
        cached block as `chunk` reads, looked at in place (`BlockReader.locate`): no copy or parse
        of the move per path (a report renders 20,000 of them, issue 30)."""
        from openclaw_cli.migration.index_stream import BlockReader

        self._flush()
        fd = self._fd
        offsets, lengths = self.offsets, self.lengths
        locate = BlockReader(_SPILL_BLOCK).locate
        mark, skip = _ARCHIVE_PATH_MARK, len(_ARCHIVE_PATH_MARK)
        loads = orjson.loads
        for n in indexes:
            assert fd is not None
            length = lengths[n]
            buf, rel = locate(fd, offsets[n], length)
            at = buf.index(mark, rel, rel + length) + skip
            raw = buf[at : buf.index(b'"', at)]
            yield loads(buf[rel : rel + length])["archivePath"] if b"\\" in raw else raw.decode("utf-8")

    def close(self) -> None:
        self._reader = None
        self._pending.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


_DEPENDENCY_MARK = "__openclaw_cli_streamed_dependencies__"
_DEPENDENCY_BATCH = 512
# a dependency sits 6 spaces deep in a move (`artifact.dependencies[i]`), the move 8 deep in the file
_DEPENDENCY_SEP = b",\n" + b" " * 14


def _streamed_dependencies(
    move: dict[str, Any], artifact: dict[str, Any], deps: StreamedArray
) -> Iterator[bytes]:
    """The move's JSON in pieces, its dependencies dumped a batch at a time: each batch as an
    indented list whose items are re-indented to their depth (a newline is never inside a JSON
    string, so every newline of the batch is a separator)."""
    items = iter(deps.items)
    first = next(items, None)
    if first is None:  # empty: exactly the plain dump
        yield orjson.dumps(
            {**move, "artifact": {**artifact, "dependencies": []}}, option=orjson.OPT_INDENT_2
        ).replace(b"\n", _ELEMENT_PAD)
        return
    text = orjson.dumps(
        {**move, "artifact": {**artifact, "dependencies": [_DEPENDENCY_MARK]}}, option=orjson.OPT_INDENT_2
    ).replace(b"\n", _ELEMENT_PAD)
    mark = orjson.dumps(_DEPENDENCY_MARK)
    at = text.index(mark)
    yield text[:at]
    batch = [first]
    leading = True
    for item in items:
        batch.append(item)
        if len(batch) >= _DEPENDENCY_BATCH:
            yield _dependency_batch(batch, leading)
            leading = False
            batch = []
    if batch:
        yield _dependency_batch(batch, leading)
    yield text[at + len(mark) :]


def _dependency_batch(batch: list[str], leading: bool) -> bytes:
    body = orjson.dumps(batch, option=orjson.OPT_INDENT_2)[4:-2]  # the items of `[\n  "a",\n  "b"\n]`
    body = body.replace(b",\n  ", _DEPENDENCY_SEP)
    return body if leading else _DEPENDENCY_SEP + body


def _unnamed_file(directory: Path) -> int:
    ensure_dir(directory)
    try:
        return os.open(directory, os.O_RDWR | os.O_TMPFILE | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
    import tempfile

    fd, name = tempfile.mkstemp(dir=directory, prefix=".moves-", suffix=".tmp")
    os.unlink(name)  # a filesystem without O_TMPFILE: unnamed right away
    return fd


class CompletedMoves(MoveView):
    """The completed moves of one target: indexes into its planned `MoveLog`, in completion order."""

    def __init__(self, planned: MoveLog):
        self._planned = planned
        self.indexes = array("L")
        self._in_order = True  # indexes are 0, 1, 2, ... (every move completed in planned order)

    def log(self) -> MoveLog:
        return self._planned

    def in_log_order(self) -> bool:
        return self._in_order

    def __len__(self) -> int:
        return len(self.indexes)

    def _chunk_indexes(self) -> Iterable[int]:
        return self.indexes

    def add(self, n: int) -> None:
        if n != len(self.indexes):
            self._in_order = False
        self.indexes.append(n)


class ArchivedPaths:
    """A report's list of archived files as indexes into the target's `MoveLog` (100,000 paths were
    ~23 MB held beside the per-session state while publishing): each path is read back from its
    planned move's `archivePath` when the report is rendered, in the order the moves completed."""

    def __init__(self, planned: MoveLog, to_real: Callable[[str], str]):
        self._planned = planned
        self._to_real = to_real
        self.indexes = array("L")

    def add(self, n: int) -> None:
        self.indexes.append(n)

    def __len__(self) -> int:
        return len(self.indexes)

    def __bool__(self) -> bool:
        return len(self.indexes) > 0

    def __iter__(self) -> Iterator[str]:
        return map(self._to_real, self._planned.archive_paths(self.indexes))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArchivedPaths | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def validate_manifest(data: Any) -> str | None:
    """None when `data` is a well-formed manifest, else why not (such manifests are ignored)."""
    if not isinstance(data, dict):
        return "not an object"
    version = data.get("manifestVersion")
    if version not in (1, 2, 3, 4):
        return "unsupported manifestVersion"
    if version == 4 and not (
        isinstance(data.get("failureReports"), dict) and "githubIssue" in data["failureReports"]
    ):
        return "manifestVersion 4 without a GitHub receipt"
    relative = data.get("pathBase") == PATH_BASE
    if "pathBase" in data and not relative:
        return "unknown pathBase"
    if not isinstance(data.get("runId"), str) or not isinstance(data.get("startedAt"), str):
        return "missing runId/startedAt"
    targets = data.get("targets")
    if not isinstance(targets, list):
        return "targets is not a list"
    seen_targets: set[str] = set()
    for target in targets:
        if not isinstance(target, dict):
            return "target is not an object"
        agent_id, store, sqlite = target.get("agentId"), target.get("storePath"), target.get("sqlitePath")
        if (
            not isinstance(agent_id, str)
            or not _valid_path_text(store, relative)
            or not _valid_path_text(sqlite, relative)
        ):
            return "target paths invalid"
        key = f"{agent_id}\x00{store}"
        if key in seen_targets:
            return "duplicate target"
        seen_targets.add(key)
        planned, completed = target.get("plannedMoves", []), target.get("completedMoves", [])
        if not isinstance(planned, list) or not isinstance(completed, list):
            return "moves are not lists"
        if not isinstance(target.get("issues", []), list):
            return "issues is not a list"
        store_dir = PurePosixPath(store).parent
        archive_dir = store_dir.parent / IMPORT_ARCHIVE_DIR
        planned_keys: set[str] = set()
        for move in planned:
            why = _validate_move(move, store, store_dir, archive_dir, relative)
            if why:
                return why
            key = f"{move['sourcePath']}\x00{move['archivePath']}"
            if key in planned_keys:
                return "duplicate planned move"
            planned_keys.add(key)
        for move in completed:
            if _validate_move(move, store, store_dir, archive_dir, relative):
                return "invalid completed move"
            if f"{move['sourcePath']}\x00{move['archivePath']}" not in planned_keys:
                return "completed move was never planned"
    return None


def _validate_move(
    move: Any, store: str, store_dir: PurePosixPath, archive_dir: PurePosixPath, relative: bool
) -> str | None:
    if not isinstance(move, dict):
        return "move is not an object"
    src, dst, kind = move.get("sourcePath"), move.get("archivePath"), move.get("kind")
    if kind not in MOVE_KINDS:
        return "unknown move kind"
    if not _valid_path_text(src, relative) or not _valid_path_text(dst, relative) or src == dst:
        return "move paths invalid"
    if PurePosixPath(dst).parent != archive_dir:
        return "archive outside the archive directory"
    if kind == "legacy-store":
        if src != store:
            return "legacy-store move does not name the store"
    elif PurePosixPath(src).parent != store_dir:
        return "source outside the store directory"
    artifact = move.get("artifact")
    if artifact is not None and (
        not isinstance(artifact, dict) or Identity.from_json(artifact.get("identity")) is None
    ):
        return "artifact identity invalid"
    return None


def load_manifest(path: Path, state_dir: Path) -> LoadedManifest | None:
    """A manifest that is a regular, non-hard-linked file in a non-symlinked dir and validates."""
    try:
        if path.parent.is_symlink():
            return None
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            raw = fh.read()
        data = loads(raw)
    except (OSError, *JSONDecodeError):
        return None
    if validate_manifest(data) is not None:
        return None
    relative = data.get("pathBase") == PATH_BASE
    return LoadedManifest(path, data, PathMapper(state_dir, relative), ours=relative)


def manifest_files(runs_dir: Path) -> list[Path]:
    try:
        if runs_dir.is_symlink() or not runs_dir.is_dir():
            return []
        names = sorted(
            p
            for p in runs_dir.iterdir()
            if p.name.endswith(".json")
            and not p.name.endswith((".failure.json",))
            and p.name.startswith("session-sqlite-")
        )
    except OSError:
        return []
    return names


def load_all(
    runs_dir: Path, state_dir: Path, *, skip: Callable[[Path], bool] | None = None
) -> tuple[list[LoadedManifest], list[Path]]:
    """Every readable manifest oldest first (by startedAt, then name), plus the unreadable paths;
    files for which `skip(path)` is true are neither loaded nor listed."""
    good: list[LoadedManifest] = []
    bad: list[Path] = []
    for path in manifest_files(runs_dir):
        if skip is not None and skip(path):
            continue
        loaded = load_manifest(path, state_dir)
        if loaded is None:
            bad.append(path)
        else:
            good.append(loaded)
    good.sort(key=lambda m: (str(m.data.get("startedAt", "")), m.path.name))
    return good, bad


_TARGET_OPEN = b"    {\n"  # a target of the top-level "targets" array, as `write_manifest` indents it
_MOVES_OPEN = {b'      "completedMoves": [\n': 0, b'      "plannedMoves": [\n': 1}
_MOVES_EMPTY = {b'      "completedMoves": [],\n': 0, b'      "plannedMoves": [],\n': 1}
_MOVES_CLOSE = (b"      ],\n", b"      ]\n")
_MOVES_END = b"\n      ]"
_SETTLED_CHUNK = 1 << 20
_SETTLED_LINE_MAX = 1 << 20


def moves_all_completed(path: Path) -> bool:
    """True when the file is laid out as `write_manifest` writes a run (2-space pretty JSON, one
    value per line) in which every target's completedMoves are its plannedMoves byte for byte, in
    order, and nothing mentions a restore: reconciling such a run can do nothing (each planned move
    is completed; an invalid manifest is skipped anyway), so `reconcile_interrupted` need not parse
    it — a finished import of 100,000 sessions leaves a ~190 MB manifest that would otherwise be
    parsed whole (~900 MB) by every later import. Read in 1 MiB chunks: outside the move arrays
    line by line (a JSON string holds no raw newline, so each line is structure), each array
    hashed in bulk up to its close line; any line it does not expect, or arrays that differ,
    answer False and the caller loads the file as before."""
    import hashlib

    digests: tuple[list[bytes], list[bytes]] = ([], [])
    targets = 0
    which = -1  # >= 0: the close line of that kind's array is the next line
    digest = b""
    last = b""
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            buf = fh.read(_SETTLED_CHUNK)
            if not buf.startswith(b"{\n"):
                return False
            pos = 2
            while True:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    chunk = fh.read(_SETTLED_CHUNK)
                    if not chunk:
                        if pos < len(buf):
                            return False  # no newline at the end
                        break
                    if len(buf) - pos > _SETTLED_LINE_MAX:
                        return False
                    buf, pos = buf[pos:] + chunk, 0
                    continue
                line = buf[pos : nl + 1]
                pos = nl + 1
                last = line
                if which >= 0:
                    if line not in _MOVES_CLOSE:
                        return False
                    digests[which].append(digest)
                    which = -1
                elif b'"restore"' in line:
                    return False
                elif line in _MOVES_OPEN:
                    # the array's items, up to its close line (the only line there that starts
                    # with exactly six spaces and "]"), hashed in bulk
                    which, hasher = _MOVES_OPEN[line], hashlib.sha256()
                    at = buf.find(_MOVES_END, pos - 1)
                    while at < 0:
                        keep = max(pos, len(buf) - len(_MOVES_END) + 1)  # a marker cut by the chunk
                        hasher.update(buf[pos:keep])
                        chunk = fh.read(_SETTLED_CHUNK)
                        if not chunk:
                            return False
                        buf, pos = buf[keep:] + chunk, 0
                        at = buf.find(_MOVES_END)
                    hasher.update(buf[pos : at + 1])
                    pos = at + 1
                    digest = hasher.digest()
                elif line in _MOVES_EMPTY:
                    digests[_MOVES_EMPTY[line]].append(b"")
                elif line == _TARGET_OPEN:
                    targets += 1
    except OSError:
        return False
    completed, planned = digests
    return which < 0 and last == b"}\n" and len(completed) == len(planned) == targets and completed == planned


def new_manifest(run_id: str, started_ms: int) -> dict[str, Any]:
    return {
        "manifestVersion": MANIFEST_VERSION,
        "openClawVersion": APP_VERSION,
        "pathBase": PATH_BASE,
        "runId": run_id,
        "startedAt": iso_now(started_ms),
        "targets": [],
    }


def new_target(agent_id: str, store: str, sqlite: str) -> dict[str, Any]:
    return {
        "agentId": agent_id,
        "sqlitePath": sqlite,
        "storePath": store,
        "completedMoves": [],
        "issues": [],
        "plannedMoves": [],
        "validationBeforeArchive": "not_run",
    }


def new_move(
    *,
    source: str,
    archive: str,
    kind: str,
    session_key: str | None,
    identity: Identity,
    classification: str,
    reason: str,
    dependencies: list[str] | StreamedArray | None = None,
) -> dict[str, Any]:
    move: dict[str, Any] = {
        "archivePath": archive,
        "artifact": {
            "identity": identity.to_json(),
            "classification": classification,
            "reason": reason,
            "dependencies": dependencies
            if isinstance(dependencies, StreamedArray)
            else list(dependencies or []),
            "disposal": {"state": "retained"},
        },
        "kind": kind,
    }
    if session_key is not None:
        move["sessionKey"] = session_key
    move["sourcePath"] = source
    return move
