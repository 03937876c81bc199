"""Transcript archives (spec maintenance.md §7.1–§7.3, storage-migration.md §3.8, decisions D6.2
and D15): archive names and their classification, listing and reading (plain or zstd), and the
verified archive writer through which every transcript leaves a store.

`write_verified_archive` streams: a 200 MB transcript is hashed and compressed block by block into
an exclusive temp file, published under a name that never overwrites anything (hard link, else
checked rename), and read back and compared (sha256 of the original bytes) before it returns.
"""

from __future__ import annotations

import _thread
import errno
import functools
import io
import itertools
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from openclaw_cli.clock import utc_ms, utc_strftime
from openclaw_cli.errors import InvalidDataError, InvalidIdError, OpenClawError, RefusedError
from openclaw_cli.fsio import FILE_MODE, O_CLOEXEC, O_NOFOLLOW, ensure_dir, fsync_dir
from openclaw_cli.ids import is_valid_legacy_session_id
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import Record
from openclaw_cli.store.base import ArchiveFile, ReadIssue, TranscriptLine
from openclaw_cli.store.names import is_primary_transcript_name as is_primary_transcript_name  # re-exported
from openclaw_cli.store.names import is_trajectory_name as is_trajectory_name  # re-exported

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any, BinaryIO

ARCHIVE_REASONS = ("reset", "deleted", "bak")
ZST_SUFFIX = ".zst"
COPY_BLOCK = 1 << 20
MAX_NAME_TRIES = 10

_TS = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z"
# compiled on first use (lazyre): a search whose hits are all in live transcripts reads no archive name
_ARCHIVE_RE = lazy_pattern(
    globals(),
    "_ARCHIVE_RE",
    rf"^(?P<base>.+)\.(?P<reason>reset|deleted|bak)\.(?P<ts>{_TS})(?:\.(?P<nonce>[0-9a-f]{{32}}))?$",
)
_TS_RE = lazy_pattern(
    globals(), "_TS_RE", r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})(?:\.(\d{3}))?Z$"
)
_STORE_BACKUP_RE = lazy_pattern(globals(), "_STORE_BACKUP_RE", r"^sessions\.json\.bak\.\d+$")
_MIGRATED_RE = lazy_pattern(globals(), "_MIGRATED_RE", r"\.migrated(?:\.\d+)?$")
_REPAIR_BACKUP_RE = lazy_pattern(
    globals(),
    "_REPAIR_BACKUP_RE",
    r"\.jsonl\.pre-doctor-(?:branch|openai-codex)-repair-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z\.bak$",
)
_STORE_TEMP_RE = lazy_pattern(
    globals(), "_STORE_TEMP_RE", r"^sessions\.json\.(?:\d+\.)?[0-9a-fA-F-]{32,36}\.tmp$"
)


class ArchiveError(OpenClawError):
    type = "archive_error"


# ---- names ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)  # a batch of archives shares one timestamp
def format_archive_timestamp(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, every `:` replaced by `-` (2026-02-23T12-34-56.000Z)."""
    ms = int(ms)
    return utc_strftime("%Y-%m-%dT%H-%M-%S", ms // 1000) + f".{ms % 1000:03d}Z"


def parse_archive_timestamp(text: str) -> int | None:
    """Epoch ms of `YYYY-MM-DDTHH-MM-SS[.mmm]Z`, None if malformed or not a real date."""
    match = _TS_RE.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    at = utc_ms(year, month, day, hour, minute, second)  # None: not a real date (datetime's rule)
    return None if at is None else at + int(match.group(7) or 0)


def parse_archive_name(name: str, reason: str | None = None) -> tuple[str, str, int | None, bool] | None:
    """(base, reason, timestamp ms, compressed) of an archive artifact name, else None.

    `sessions.json.bak.<n>` (old store rotation backups) parses as ("sessions.json", "bak",
    None, False): the number's unit is unknown. With `reason`, only that reason matches."""
    if ".reset." not in name and ".deleted." not in name and ".bak." not in name:
        return None  # every archive name has one of these markers (a 20,000-file dir is mostly not archives)
    if _STORE_BACKUP_RE.match(name):
        return ("sessions.json", "bak", None, False) if reason in (None, "bak") else None
    compressed = name.endswith(ZST_SUFFIX)
    stem = name[: -len(ZST_SUFFIX)] if compressed else name
    match = _ARCHIVE_RE.match(stem)
    if not match or (reason is not None and match.group("reason") != reason):
        return None
    ts = parse_archive_timestamp(match.group("ts"))
    if ts is None:
        return None
    return match.group("base"), match.group("reason"), ts, compressed


def is_archive_name(name: str) -> bool:
    return parse_archive_name(name) is not None


def is_migration_leftover_name(name: str) -> bool:
    """`*.migrated[.<n>]` and `*.jsonl.pre-doctor-…-repair-<ts>.bak`: never touched by maintenance."""
    return bool(_MIGRATED_RE.search(name) or _REPAIR_BACKUP_RE.search(name))


def is_store_temp_name(name: str) -> bool:
    """`sessions.json.[<pid>.]<uuid>.tmp`: a live or abandoned atomic store write."""
    return bool(_STORE_TEMP_RE.match(name))


def archive_name(base: str, reason: str, ts_ms: int, *, compressed: bool) -> str:
    return f"{base}.{reason}.{format_archive_timestamp(ts_ms)}{ZST_SUFFIX if compressed else ''}"


def _session_id_of(base: str) -> str | None:
    return base[: -len(".jsonl")] if base.endswith(".jsonl") and len(base) > len(".jsonl") else None


def list_archives(directory: Path, names: Iterable[str] | None = None) -> list[ArchiveFile]:
    """Archive artifacts directly inside `directory` (regular files only; symlinks are not
    followed), sorted by name. A missing directory has none. `names`: the directory's entries
    from a scan the caller already made (saves a second scan of a large directory)."""
    out: list[ArchiveFile] = []
    if names is None:
        try:
            with os.scandir(directory) as it:
                names = [entry.name for entry in it]
        except OSError:
            return out
    for name in names:
        parsed = parse_archive_name(name)
        if parsed is None:
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        base, reason, ts, compressed = parsed
        out.append(ArchiveFile(Path(path), _session_id_of(base), reason, ts, compressed, st.st_size))
    out.sort(key=lambda a: a.path.name)
    return out


# ---- reading --------------------------------------------------------------------------------------


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - zstandard is a dependency
        raise InvalidDataError("this runtime lacks zstd support (install the `zstandard` package)") from exc
    return zstandard


# zstd contexts are reusable one operation at a time, per thread (`threading.local` is this C class;
# `threading` itself is not imported by a search)
_contexts = _thread._local()


def _compressor(level: int) -> Any:
    cache = getattr(_contexts, "compressors", None)
    if cache is None:
        cache = _contexts.compressors = {}
    cctx = cache.get(level)
    if cctx is None:
        cctx = cache[level] = _zstd().ZstdCompressor(level=level, write_checksum=True)
    return cctx


def _decompressor(zstandard: Any) -> Any:
    dctx = getattr(_contexts, "decompressor", None)
    if dctx is None:
        dctx = _contexts.decompressor = zstandard.ZstdDecompressor()
    return dctx


def open_archive_fd(path: Path | str) -> int:
    """The descriptor of an archive opened as `open_archive` opens it (no symbolic link followed),
    or its typed error; the caller checks that it is a regular file (`not_regular`)."""
    try:
        return os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except FileNotFoundError as exc:
        raise InvalidDataError(f"Archive not found: {path}") from exc
    except OSError as exc:
        raise RefusedError(
            f"Cannot open archive {path}: {exc.strerror or exc} (symbolic links are not followed)"
        ) from exc


def not_regular(path: Path | str) -> RefusedError:
    return RefusedError(f"Cannot open archive {path}: not a regular file")


def _open_regular(path: Path) -> BinaryIO:
    fd = open_archive_fd(path)
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        raise not_regular(path)
    return fh


@contextmanager
def open_archive(path: Path, *, compressed: bool | None = None) -> Iterator[BinaryIO]:
    """A binary stream of an archive's original content (decompressed when `.zst`). A truncated
    or corrupt zstd archive raises InvalidDataError while it is read, never a short read."""
    path = Path(path)
    is_zst = path.name.endswith(ZST_SUFFIX) if compressed is None else compressed
    fh = _open_regular(path)
    try:
        if not is_zst:
            yield fh
            return
        try:
            zstandard = _zstd()
        except InvalidDataError as exc:
            raise InvalidDataError(
                f"Cannot read compressed transcript archive {path}: {exc.message}"
            ) from exc
        yield _ZstdReader(fh, path, zstandard)  # type: ignore[misc]
    finally:
        fh.close()


class _ZstdReader(io.RawIOBase):
    """Streams the frames of a zstd file. Unlike zstandard's stream_reader it notices a frame
    cut short (the archive was truncated) and reports it instead of returning fewer bytes."""

    INPUT_CHUNK = 8 * 1024  # small input pieces keep each burst of output bounded

    def __init__(self, fh: BinaryIO, path: Path, zstandard: object):
        self._fh = fh
        self._path = path
        self._zstd = zstandard
        self._dctx = _decompressor(zstandard)
        self._obj: Any = None
        self._pending = b""
        self._buf = b""
        self._pos = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        chunk = self._pending or self._fh.read(self.INPUT_CHUNK)
        self._pending = b""
        if not chunk:
            if self._obj is not None:
                raise InvalidDataError(f"Cannot read transcript archive {self._path}: truncated zstd frame")
            self._done = True
            return
        if self._obj is None:
            self._obj = self._dctx.decompressobj()
        try:
            out = self._obj.decompress(chunk)
        except self._zstd.ZstdError as exc:  # type: ignore[attr-defined]
            raise InvalidDataError(f"Cannot read transcript archive {self._path}: {exc}") from exc
        if out:
            self._buf = self._buf[self._pos :] + out if self._pos < len(self._buf) else out
            self._pos = 0
        if self._obj.eof:
            self._pending = self._obj.unused_data
            self._obj = None

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts: list[bytes] = []
            while True:
                piece = self.read(COPY_BLOCK)
                if not piece:
                    return b"".join(parts)
                parts.append(piece)
        while len(self._buf) - self._pos < size and not self._done:
            self._fill()
        out = self._buf[self._pos : self._pos + size]
        self._pos += len(out)
        return out


def _read_all(stream: BinaryIO) -> Iterator[bytes]:
    while True:
        chunk = stream.read(COPY_BLOCK)
        if not chunk:
            return
        yield chunk


def read_archive_bytes(path: Path) -> bytes:
    """The whole original content (for small archives; use `open_archive` to stream)."""
    with open_archive(path) as stream:
        return b"".join(_read_all(stream))


WHOLE_READ_LIMIT = 4 * 1024 * 1024  # compressed archives up to this size are read and decompressed in one go


def _hash_small_zst(path: Path) -> tuple[str, int] | None:
    """(sha256, size) of a small `.zst` archive read in one piece (the read-back of a fresh
    archive: one read and one decompression call instead of 8 KiB steps); None when it is larger."""
    import hashlib

    with _open_regular(path) as fh:
        data = fh.read(WHOLE_READ_LIMIT + 1)
    if len(data) > WHOLE_READ_LIMIT:
        return None
    zstandard = _zstd()
    digest = hashlib.sha256()
    size = 0
    rest = data
    try:
        while rest:  # every frame, as _ZstdReader reads them
            obj = _decompressor(zstandard).decompressobj()
            out = obj.decompress(rest)
            if not obj.eof:
                raise InvalidDataError(f"Cannot read transcript archive {path}: truncated zstd frame")
            digest.update(out)
            size += len(out)
            rest = obj.unused_data
    except zstandard.ZstdError as exc:
        raise InvalidDataError(f"Cannot read transcript archive {path}: {exc}") from exc
    return digest.hexdigest(), size


def hash_archive(path: Path) -> tuple[str, int]:
    """(sha256 hex, size) of the original content, streamed."""
    import hashlib  # lazy: OpenSSL start-up costs ~3 ms of every read-only command

    if Path(path).name.endswith(ZST_SUFFIX):
        small = _hash_small_zst(Path(path))
        if small is not None:
            return small
    digest = hashlib.sha256()
    size = 0
    with open_archive(path) as stream:
        for chunk in _read_all(stream):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def iter_archive_lines(path: Path, *, issues: list[ReadIssue] | None = None) -> Iterator[TranscriptLine]:
    """Transcript lines of an archive, streamed (same rules as `transcript.iter_jsonl`)."""
    from openclaw_cli.store.transcript import iter_jsonl_stream

    with open_archive(path) as stream:
        yield from iter_jsonl_stream(stream, str(path), issues=issues)


# ---- writing --------------------------------------------------------------------------------------


class ArchiveResult(Record):
    _fields = ("path", "sha256", "size", "stored_size", "compressed", "reused")
    path: Path
    sha256: str  # of the original (uncompressed) bytes
    size: int  # original bytes
    stored_size: int  # bytes on disk
    compressed: bool
    reused: bool  # an identical archive already existed

    def __init__(
        self, path: Path, sha256: str, size: int, stored_size: int, compressed: bool, reused: bool = False
    ) -> None:
        self.path = path
        self.sha256 = sha256
        self.size = size
        self.stored_size = stored_size
        self.compressed = compressed
        self.reused = reused

    @property
    def name(self) -> str:
        """The archive's file name."""
        return self.path.name


class ExportedArchive(ArchiveResult):
    """`ExportArchiver`'s result: a fresh, verified archive in the archiver's directory, its `Path`
    made only when asked (issue 30: a `Path` per archive was ~4 us of a cleanup's archive loop, and
    the loop needs only the name)."""

    _fields = ArchiveResult._fields

    def __init__(self, directory: str, name: str, sha256: str, size: int, stored_size: int) -> None:
        self._directory = directory
        self._name = name
        self._path: Path | None = None
        self.sha256 = sha256
        self.size = size
        self.stored_size = stored_size
        self.compressed = True
        self.reused = False

    @property
    def name(self) -> str:
        return self._name

    @property  # read-write, as the base class's attribute
    def path(self) -> Path:
        if self._path is None:
            self._path = Path(self._directory, self._name)
        return self._path

    @path.setter
    def path(self, value: Path) -> None:
        self._path = Path(value)
        self._directory, self._name = str(self._path.parent), self._path.name


def _validate_base(base: str) -> None:
    if (
        not base
        or base in (".", "..")
        or base.startswith(".")
        or "/" in base
        or "\\" in base
        or "\x00" in base
        or len(base.encode()) > 200
    ):
        raise InvalidIdError(f"Invalid archive base name: {base!r}")


def _source_chunks(source: bytes | Path) -> tuple[Iterator[bytes], int | None, BinaryIO | None]:
    if isinstance(source, bytes | bytearray | memoryview):
        data = memoryview(bytes(source)) if not isinstance(source, bytes) else memoryview(source)

        def gen() -> Iterator[bytes]:
            for start in range(0, len(data), COPY_BLOCK):
                yield bytes(data[start : start + COPY_BLOCK])

        return gen(), len(data), None
    try:
        fd = os.open(source, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except FileNotFoundError as exc:
        raise InvalidDataError(f"Transcript to archive not found: {source}") from exc
    except OSError as exc:
        raise RefusedError(
            f"Cannot read transcript {source}: {exc.strerror or exc} (symbolic links are not followed)"
        ) from exc
    fh = os.fdopen(fd, "rb", buffering=0)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        fh.close()
        raise RefusedError(f"Cannot archive {source}: not a regular file")

    def gen_file() -> Iterator[bytes]:
        while True:
            chunk = fh.read(COPY_BLOCK)
            if not chunk:
                return
            yield chunk

    return gen_file(), st.st_size, fh


class _HashingSink:
    """What a writer source writes to: hashed, counted and passed on (to the compressor)."""

    def __init__(self, digest: Any, out: Any):
        self._digest = digest
        self._out = out
        self.size = 0

    def write(self, data: Any) -> int:
        self._digest.update(data)
        self._out.write(data)
        self.size += len(data)
        return len(data)


_ARCHIVE_TEMP_RE = lazy_pattern(
    globals(), "_ARCHIVE_TEMP_RE", r"^(?P<archive>.+)\.(?P<pid>\d+)\.[0-9a-f]{32}\.tmp$"
)


def archive_temp_pid(name: str) -> int | None:
    """The writer's pid of an archive temp file `<archive name>.<pid>.<hex32>.tmp` (what
    `write_verified_archive` creates before publishing), else None. A temp whose writer is gone is
    an abandoned partial copy: the original it was copied from is still in place."""
    match = _ARCHIVE_TEMP_RE.match(name)
    if not match or not is_archive_name(match.group("archive")):
        return None
    return int(match.group("pid"))


def _find_identical(
    dest_dir: Path, base: str, reason: str, sha: str, size: int, existing: Iterable[ArchiveFile] | None = None
) -> ArchiveFile | None:
    for archive in list_archives(dest_dir) if existing is None else existing:
        parsed = parse_archive_name(archive.path.name, reason)
        if parsed is None or parsed[0] != base:
            continue
        if not archive.compressed and archive.size != size:
            continue
        try:
            if hash_archive(archive.path) == (sha, size):
                return archive
        except OpenClawError:
            continue
    return None


def write_verified_archive(
    dest_dir: str | Path,
    session_id: str,
    reason: str,
    source: bytes | Path | Callable[[Any], Any],
    *,
    now_ms: int,
    level: int = 3,
    compress: bool = True,
    base_name: str | None = None,
    sync: bool = True,
    existing: Iterable[ArchiveFile] | None = None,
    source_size: int | None = None,
    dest_real: str | None = None,
) -> ArchiveResult:
    """Write `<base>.<reason>.<timestamp>[.zst]` in `dest_dir` (base defaults to
    `<sessionId>.jsonl`), durable and verified, and return it. Reuses an identical archive of the
    same base and reason. Empty content is never compressed (no `.zst`).

    Batch callers (cleanup archiving thousands of transcripts) may pass `sync=False`: the file and
    directory fsyncs are skipped and the caller makes the directory durable once (e.g. `syncfs`)
    before it relies on the archives; the read-back verification still runs. `existing` lists the
    archives to consider for reuse instead of scanning `dest_dir` on every call, and `dest_real`
    the real path of `dest_dir`, which they created and resolved once for the whole batch.

    `source` is the content (bytes), a file to copy, or a writer `source(sink)` that writes the
    content to `sink.write` block by block (a snapshot's transcript): it is hashed and compressed
    as it arrives, never held whole, and whatever the writer raises (the transcript changed)
    removes the temp file and propagates. `source_size`: how many bytes the writer will write
    (recorded in the zstd frame, which then refuses any other amount).

    Raises InvalidIdError (bad id/name), RefusedError (a path outside `dest_dir`, a symlinked
    source), ArchiveError (no free name after 10 tries, or the read-back differs)."""
    if reason not in ARCHIVE_REASONS:
        raise InvalidIdError(
            f"Invalid archive reason: {reason!r} (expected one of {', '.join(ARCHIVE_REASONS)})"
        )
    if not is_valid_legacy_session_id(session_id):
        raise InvalidIdError(f"Invalid session ID: {session_id}")
    base = base_name if base_name is not None else f"{session_id.strip()}.jsonl"
    _validate_base(base)
    dest_dir = Path(os.path.abspath(dest_dir))
    if dest_real is None:
        ensure_dir(dest_dir)
        dest_real = os.path.realpath(dest_dir)

    def inside(path: Path) -> Path:
        # names are validated to hold no separator, so their parent is dest_dir itself (whose
        # real path is known); anything else is resolved
        same_dir = path.parent == dest_dir
        resolved_parent = dest_real if same_dir else os.path.realpath(path.parent)
        if resolved_parent != dest_real or path.name in (".", "..") or os.sep in path.name:
            raise RefusedError(f"Cannot archive transcript outside {dest_dir}: {path}")
        return path

    writer_source = source if callable(source) else None
    if writer_source is None:
        chunks, expected_size, source_fh = _source_chunks(source)  # type: ignore[arg-type]
    else:
        chunks, expected_size, source_fh = iter(()), source_size, None
    use_zstd = compress and expected_size != 0
    first_name = archive_name(base, reason, now_ms, compressed=use_zstd)
    import uuid  # here: uuid imports platform, which a search does not need

    tmp = inside(dest_dir / f"{first_name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    import hashlib  # lazy: OpenSSL start-up costs ~3 ms of every read-only command

    digest = hashlib.sha256()
    size = 0
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            if use_zstd and source_fh is None and isinstance(source, bytes):
                # in memory already (a database export): one compression call, one write
                digest.update(source)
                size = len(source)
                out.write(_compressor(level).compress(source))
            elif use_zstd:
                cctx = _compressor(level)
                # The frame records the content size only when it cannot change under us.
                known = expected_size if source_fh is None and expected_size else -1
                with cctx.stream_writer(out, size=known, closefd=False) as writer:
                    if writer_source is not None:
                        tee = _HashingSink(digest, writer)
                        writer_source(tee)
                        size = tee.size
                    for chunk in chunks:
                        digest.update(chunk)
                        size += len(chunk)
                        writer.write(chunk)
            elif writer_source is not None:
                tee = _HashingSink(digest, out)
                writer_source(tee)
                size = tee.size
            else:
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            out.flush()
            stored_size = out.tell()
            if sync:
                os.fsync(out.fileno())
    except BaseException as exc:
        _unlink_quiet(tmp)
        if use_zstd and isinstance(exc, _zstd().ZstdError):  # a writer source broke its declared size
            raise ArchiveError(
                f"Transcript changed while archiving {session_id}; nothing was archived"
            ) from exc
        raise
    finally:
        if source_fh is not None:
            source_fh.close()
    sha = digest.hexdigest()
    if use_zstd and size == 0:  # the source shrank to nothing while we read it
        _unlink_quiet(tmp)
        raise ArchiveError(f"Transcript changed while archiving {session_id}; nothing was archived")

    same = _find_identical(dest_dir, base, reason, sha, size, existing)
    if same is not None:
        _unlink_quiet(tmp)
        return ArchiveResult(same.path, sha, size, same.size, same.compressed, reused=True)

    final: Path | None = None
    try:
        for attempt in range(MAX_NAME_TRIES):
            name = (
                first_name
                if attempt == 0
                else archive_name(base, reason, now_ms + attempt, compressed=use_zstd)
            )
            candidate = inside(dest_dir / name)
            if _publish(tmp, candidate):
                final = candidate
                break
    finally:
        if final is None or os.path.lexists(tmp):  # a rename consumed it; a hard link did not
            _unlink_quiet(tmp)
    if final is None:
        raise ArchiveError(f"Could not create transcript archive for {session_id}")
    if sync:
        fsync_dir(dest_dir)
    try:
        verified = hash_archive(final) == (sha, size)
    except OpenClawError:
        verified = False
    if not verified:
        _unlink_quiet(final)
        fsync_dir(dest_dir)
        raise ArchiveError(f"Transcript archive verification failed for {session_id}")
    return ArchiveResult(final, sha, size, stored_size, use_zstd)


Prepared = tuple[str, bytes, bool]  # `ExportArchiver.prepare`: sha256 hex, zstd frame, frame round-trips


class ExportArchiver:
    """`write_verified_archive` for in-memory content (database exports) in bulk: the hot path of a
    cleanup that archives thousands of small transcripts into one directory the caller created and
    resolved (`dest_real`), made durable by the caller afterwards (one `syncfs`, as `sync=False`).

    Per archive: one compression call, one unnamed file (`O_TMPFILE` in the directory) written with
    one `write`, read back through its descriptor with one `pread` — the file must hold exactly the
    bytes written, and they must decompress to content of the original's sha256 and size (D6.2) —
    and only then given its name by `linkat`, which never replaces anything (the next millisecond
    on a clash, as the general writer): a name never shows an archive that was not verified, and
    the read-back by name's open, `fstat` and close are gone (issue 30: 3 syscalls per archive;
    the link names the very inode that was read). A kill before the link leaves nothing, never a
    partial file under any name;
    a temp name and its rename cost one more directory insertion and a `renameat2` per archive
    (~0.2 s of system time over 6,736 archives, issue 30). Where the filesystem has no unnamed files
    or `/proc` is missing, an exclusive temp file renamed into place and read back by name. No per-archive
    realpath, uuid, buffered file object, lstat or `Path` (`ExportedArchive` makes it when asked);
    the stored size is the length written. Call
    `close` when done (the directory's descriptor)."""

    def __init__(
        self,
        dest_dir: Path | str,
        dest_real: str,
        reason: str,
        now_ms: int,
        *,
        level: int = 3,
        on_created: Callable[[ArchiveResult], None] | None = None,
    ):
        if reason not in ARCHIVE_REASONS:
            raise InvalidIdError(
                f"Invalid archive reason: {reason!r} (expected one of {', '.join(ARCHIVE_REASONS)})"
            )
        self.directory = os.path.abspath(dest_dir)
        self.real = dest_real
        self.reason = reason
        self.now_ms = int(now_ms)
        self.level = level
        self.on_created = on_created or (lambda result: None)
        # per archive: the name's suffix (one timestamp for the batch) and the hash function, looked
        # up once (issue 30: the loop's per-archive Python)
        self._suffix = archive_name("", reason, self.now_ms, compressed=True)
        import hashlib  # lazy for the module (a search imports it): this archiver is cleanup's
        import secrets

        self._sha256 = hashlib.sha256

        self._prefix = (
            f"{os.getpid()}.{secrets.token_hex(12)}"  # + an 8-digit hex counter: archive_temp_pid's shape
        )
        self._counter = itertools.count()
        self._unnamed = _UNNAMED_FILES  # False once the filesystem or /proc refused: temp + rename
        self._dir_fd: int | None = None

    def close(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def prepare(self, data: bytes) -> Prepared:
        """What `write` computes from `data` alone, with no file touched: its sha256, its zstd frame
        and whether that frame decompresses to `data` itself, byte for byte. Safe on another thread
        than `write`'s (each thread its own zstd contexts; zstd and sha256 run without the GIL), so
        archive k+1's is made while archive k's file is written (`ArchiveBatch.archive_exports`)."""
        sha = self._sha256(data).hexdigest()
        blob = _compressor(self.level).compress(data)
        zstandard = _zstd()
        try:
            same = _decompressor(zstandard).decompress(blob) == data
        except zstandard.ZstdError:
            same = False
        return sha, blob, same

    def write(
        self,
        session_id: str,
        data: bytes,
        base: str,
        existing: Iterable[ArchiveFile] = (),
        prepared: Prepared | None = None,
    ) -> ArchiveResult:
        """The verified archive of `data` (reusing an identical one of `existing`, the batch's
        archives of the same base). Empty content takes the general writer (never compressed).
        `on_created` sees each archive this call publishes (before its read-back by name, on the
        temp way), so a rollback finds it. `prepared`: `prepare(data)`, made beforehand — the
        file must then hold exactly its frame, which was found to decompress to `data` (a frame
        that did not fails the archive as a read-back that differs does: nothing is named)."""
        if not is_valid_legacy_session_id(session_id):
            raise InvalidIdError(f"Invalid session ID: {session_id}")
        _validate_base(base)
        if not data:
            result = write_verified_archive(
                self.directory,
                session_id,
                self.reason,
                data,
                now_ms=self.now_ms,
                base_name=base,
                sync=False,
                existing=existing,
                dest_real=self.real,
            )
            if not result.reused:
                self.on_created(result)
            return result
        if os.sep in base or (
            os.altsep and os.altsep in base
        ):  # a second guard: never a path out of the directory
            raise RefusedError(f"Cannot archive transcript outside {self.directory}: {base}")
        if prepared is None:
            sha = self._sha256(data).hexdigest()
        else:
            sha, blob, frame_ok = prepared
        size = len(data)
        if existing:
            same = _find_identical(Path(self.directory), base, self.reason, sha, size, list(existing))
            if same is not None:
                return ArchiveResult(same.path, sha, size, same.size, same.compressed, reused=True)
        if prepared is None:
            blob = _compressor(self.level).compress(data)
        elif not frame_ok:
            raise ArchiveError(f"Transcript archive verification failed for {session_id}")
        first = base + self._suffix  # archive_name(base, reason, now_ms, compressed=True)
        name = (
            self._write_unnamed(blob, base, first, None if prepared is not None else data)
            if self._unnamed
            else _REFUSED
        )
        if name is _UNVERIFIED:
            raise ArchiveError(f"Transcript archive verification failed for {session_id}")
        if name is not _REFUSED:  # linked after its read-back (or None: no free name)
            if name is None:
                raise ArchiveError(f"Could not create transcript archive for {session_id}")
            result = ExportedArchive(self.directory, name, sha, size, len(blob))
            self.on_created(result)
            return result
        tmp = f"{self.directory}{os.sep}{first}.{self._prefix}{next(self._counter) & 0xFFFFFFFF:08x}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)
        try:
            try:
                _write_all(fd, blob)
            finally:
                os.close(fd)
        except BaseException:
            _unlink_quiet(tmp)
            raise
        final = self._publish(tmp, base, first)
        if final is None:
            raise ArchiveError(f"Could not create transcript archive for {session_id}")
        result = ExportedArchive(self.directory, final, sha, size, len(blob))
        self.on_created(result)
        if not _written_as(f"{self.directory}{os.sep}{final}", blob, sha, size):
            _unlink_quiet(result.path)
            fsync_dir(Path(self.directory))
            raise ArchiveError(f"Transcript archive verification failed for {session_id}")
        return result

    def _write_unnamed(self, blob: bytes, base: str, first: str, original: bytes | None) -> str | None:
        """`blob` (`original` compressed) in an unnamed file of the directory, read back and
        verified through its descriptor, then linked under the first free name (None: no free name;
        `original` None: the frame was already found to decompress to it, `prepare`). `_UNVERIFIED` when
        the read-back differs (nothing was named). `_REFUSED` (and the temp way from then on) when
        the filesystem has no unnamed files or the link through `/proc/self/fd` is refused, before
        anything was named."""
        try:
            if self._dir_fd is None:
                self._dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | O_CLOEXEC)
            fd = os.open(self.directory, os.O_TMPFILE | os.O_RDWR | O_CLOEXEC, FILE_MODE)
        except OSError as exc:
            if exc.errno not in _NO_UNNAMED_FILES:
                raise
            self._unnamed = False
            return _REFUSED
        try:
            _write_all(fd, blob)
            if not _holds(fd, blob, original):
                return _UNVERIFIED
            source = f"/proc/self/fd/{fd}"
            for attempt in range(MAX_NAME_TRIES):
                name = (
                    first
                    if attempt == 0
                    else archive_name(base, self.reason, self.now_ms + attempt, compressed=True)
                )
                try:  # linkat(AT_SYMLINK_FOLLOW): never replaces an existing name
                    os.link(source, name, dst_dir_fd=self._dir_fd)
                except FileExistsError:
                    continue
                except OSError as exc:
                    if exc.errno not in _NO_UNNAMED_FILES:
                        raise
                    self._unnamed = False  # e.g. no /proc: nothing was named
                    return _REFUSED
                return name
            return None
        finally:
            os.close(fd)

    def _publish(self, tmp: str, base: str, first: str) -> str | None:
        consumed = False
        try:
            for attempt in range(MAX_NAME_TRIES):
                name = (
                    first
                    if attempt == 0
                    else archive_name(base, self.reason, self.now_ms + attempt, compressed=True)
                )
                published, consumed = _publish_moved(tmp, f"{self.directory}{os.sep}{name}")
                if published:
                    return name
            return None
        finally:
            if not consumed:
                _unlink_quiet(tmp)


# O_TMPFILE where the platform has it; these errors (at its open or at the link through /proc)
# mean "not here" and fall back to a named temp file
_UNNAMED_FILES = hasattr(os, "O_TMPFILE")
_NO_UNNAMED_FILES = frozenset(
    {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.EXDEV, errno.EPERM, errno.ENOSYS}
)
_REFUSED = "\0refused"  # `_write_unnamed`: no unnamed file here (NUL: never a path)
_UNVERIFIED = "\0unverified"  # `_write_unnamed`: the read-back differs (nothing was named)


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view) :]


def _frame_holds(got: bytes, blob: bytes, sha: str, size: int) -> bool:
    """What a read-back found is exactly `blob`, whose one zstd frame decompresses to `size` bytes
    of sha256 `sha`."""
    import hashlib

    if got != blob:
        return False
    zstandard = _zstd()
    try:
        content = _decompressor(zstandard).decompress(got)
    except zstandard.ZstdError:
        return False
    return len(content) == size and hashlib.sha256(content).hexdigest() == sha


def _holds(fd: int, blob: bytes, original: bytes | None) -> bool:
    """The read-back of a fresh unnamed archive through its own descriptor: the file (a regular
    file: `O_TMPFILE` makes nothing else) must hold exactly `blob` — one more byte is asked for, so
    anything after it shows — and its one zstd frame must decompress to `original` itself, byte for
    byte (its sha256 and size follow; issue 30: the in-memory export is at hand, so the comparison
    needs no second sha256 — ~8.5 us of the loop per 3.8 KB archive)."""
    want = len(blob)
    try:
        got = os.pread(fd, want + 1, 0)
        while 0 < len(got) < want:  # a short read before the end: read on
            more = os.pread(fd, want + 1 - len(got), len(got))
            if not more:
                break
            got += more
    except OSError:
        return False
    if got != blob:
        return False
    if original is None:  # `blob` itself was decompressed and compared beforehand (`prepare`)
        return True
    zstandard = _zstd()
    try:
        content: bytes = _decompressor(zstandard).decompress(got)
    except zstandard.ZstdError:
        return False
    return content == original


def _written_as(path: str, blob: bytes, sha: str, size: int) -> bool:
    """The read-back of a fresh archive: one read of the file (a regular file, never a link), which
    must hold exactly `blob`, whose one zstd frame must decompress to `size` bytes of sha256 `sha`."""
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        # a regular file of exactly the length written (its size says there is nothing after it:
        # no read to the end of the file, one syscall fewer per archive)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(blob):
            return False
        got = os.read(fd, len(blob))
        while len(got) < len(blob):  # a short read before the end: read on (a regular file rarely does this)
            more = os.read(fd, len(blob) - len(got))
            if not more:
                break
            got += more
    except OSError:
        return False
    finally:
        os.close(fd)
    return _frame_holds(got, blob, sha, size)


_RENAME_NOREPLACE = 1
_renameat2: object = None  # None: not looked up yet; False: unavailable


def _rename_noreplace(src: Path | str, dst: Path | str) -> bool | None:
    """Linux `renameat2(RENAME_NOREPLACE)`: one directory operation instead of link + unlink.
    True when renamed, False when `dst` exists, None when unsupported here."""
    global _renameat2
    if _renameat2 is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    if _renameat2 is False:
        return None
    import ctypes
    import errno

    at_fdcwd = -100
    if _renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:  # type: ignore[operator]
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        return False
    return None  # EINVAL/ENOSYS (filesystem or kernel without it): fall back


def _publish(tmp: Path | str, final: Path | str) -> bool:
    """Give `tmp` the name `final` without ever replacing an existing file."""
    return _publish_moved(tmp, final)[0]


def _publish_moved(tmp: Path | str, final: Path | str) -> tuple[bool, bool]:
    """`_publish`, also saying whether `tmp` is gone (renamed) or still there (a hard link, or
    nothing published): (published, tmp consumed)."""
    renamed = _rename_noreplace(tmp, final)
    if renamed is not None:
        return renamed, renamed
    try:
        os.link(tmp, final, follow_symlinks=False)
        return True, False
    except FileExistsError:
        return False, False
    except OSError:
        pass  # no hard links on this filesystem: check, then rename
    if os.path.lexists(final):
        return False, False
    os.rename(tmp, final)
    return True, True


def _unlink_quiet(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
