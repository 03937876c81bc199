"""`sessions.json` read member by member (issue 16: import memory flat in the number of sessions).

The whole-document reader (`legacy_reader._parse_index`) held the file's bytes, orjson's working
memory (~4x the document) and every parsed entry at once: ~1 GB for 100,000 sessions. This reader
walks the top-level object in 1 MiB chunks, hands each member's value bytes to orjson, hashes every
byte as it is read and keeps, per member, only its key, offset, length and crc32; an entry is
parsed again from the file when it is needed (`StreamedEntries.entry_at`).

It accepts exactly what the whole-document fast path accepts and returns the same values: anything
else raises `NotStreamable` and the caller reads the file whole as before, so every unusual
document (invalid JSON, a BOM, a duplicate key, a number the D22 pre-flight must keep as written,
a top level that is not an object, a depth orjson refuses) gets the old reader's exact result.
Why the member-wise reading is the same language: outside member values and keys, a JSON object
holds only `{`, `}`, `,`, `:` and JSON whitespace, which this reader checks itself; keys and values
are validated by orjson (a value is parsed inside `[...]` when it could reach orjson's depth limit,
so the depth counts as in the document). The D22 number check (`preflight.needs_exact_pass`) looks
at windows of 24 bytes around suspicious number tokens: every such token lies inside one member
(key through value), so it is run on that member with 24 bytes either side, which are the same
bytes it saw in the whole file.
"""

from __future__ import annotations

import os
import re
import zlib
from array import array
from collections.abc import Iterator
from typing import Any

import orjson

from openclaw_cli.errors import PreconditionError
from openclaw_cli.migration.preflight import (
    DIGITS_NEEDLE,
    NEEDLE_CLASSES,
    NEEDLES,
    SUSPECT,
    TOKEN_CHARS,
    exponent_may_close,
)

CHUNK = 1024 * 1024
WINDOW = 24  # preflight.needs_exact_pass looks this far either side of a number token
_WS = re.compile(rb"[ \t\n\r]*")
_KEY = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
# a string, number or literal: the value ends where the match ends (orjson validates it)
_SCALAR = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[-+0-9.eE]++|[a-zA-Z]++', re.DOTALL)
# everything up to the next bracket, strings skipped whole (the general end-of-value search)
_SKIP = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
_HEAD = re.compile(rb'("(?:[^"\\]++|\\.)*+")[ \t\n\r]*:[ \t\n\r]*', re.DOTALL)  # key, colon
_NEXT = re.compile(rb"[ \t\n\r]*(?:,([ \t\n\r]*)|\}[ \t\n\r]*)")  # after a value: next key's gap, or the end
LOOKAHEAD = 64 * 1024  # bytes kept ahead of the member being read (a larger member takes the general path)
_DEPTH_SAFE = 2000  # a value shorter than this cannot reach orjson's depth limit (1024) inside the object


class NotStreamable(Exception):
    """The document is not one the member-wise reader handles: read it whole."""


class ExactProbe:
    """`preflight.needs_exact_pass` over a file fed chunk by chunk, with the answer it gives on the
    whole file: a needle's run and its 24-byte windows are judged only once all their bytes are
    here (the tail that may still be needed is carried to the next chunk)."""

    def __init__(self) -> None:
        self.tail = b""
        self.tail_base = 0  # file offset of tail[0]
        self.resume = dict.fromkeys(NEEDLES, 0)  # per needle: the file offset its search goes on from

    def feed(self, chunk: bytes, *, final: bool) -> bool:
        buf = self.tail + chunk if self.tail else chunk
        base = self.tail_base
        classes = buf.translate(NEEDLE_CLASSES)
        keep = max(0, len(buf) - 64)
        for needle in NEEDLES:
            start = max(0, self.resume[needle] - base)
            while (i := classes.find(needle, start)) != -1:
                end = i + len(needle)
                while end < len(classes) and classes[end] in TOKEN_CHARS:
                    end += 1
                if not final and end + WINDOW >= len(buf):  # the run or its window may go on
                    self.resume[needle] = base + i
                    keep = min(keep, max(0, i - WINDOW))
                    break
                if (
                    needle is DIGITS_NEEDLE or exponent_may_close(buf, end, min(len(buf), end + WINDOW))
                ) and SUSPECT.search(
                    buf, max(0, i - WINDOW), end + WINDOW
                ):  # the tail keeps WINDOW bytes before i
                    return True
                start = end
            else:
                self.resume[needle] = base + max(start, len(buf) - len(needle) + 1)
        self.tail = buf[keep:]
        self.tail_base = base + keep
        return False


class _Reader:
    """A sliding window over the file: `buf[0]` is at file offset `base`; every byte read is hashed."""

    def __init__(self, fd: int, hasher: Any):
        self.fd = fd
        self.hasher = hasher
        self.buf = b""
        self.base = 0
        self.eof = False
        self.probe = ExactProbe()

    def fill(self, upto: int) -> bool:
        """Make file offsets below `upto` available; False at EOF before that."""
        while self.base + len(self.buf) < upto:
            if self.eof:
                return False
            chunk = os.read(self.fd, max(CHUNK, len(self.buf)))
            if not chunk:
                self.eof = True
                if self.probe.feed(b"", final=True):
                    raise NotStreamable("a number the pre-flight keeps as written")
                return False
            self.hasher.update(chunk)
            if self.probe.feed(chunk, final=False):
                raise NotStreamable("a number the pre-flight keeps as written")
            self.buf += chunk
        return True

    def drop_before(self, offset: int) -> None:
        """Forget bytes before `offset` (keeping WINDOW bytes of history for the number check)."""
        cut = offset - WINDOW - self.base
        if cut > CHUNK:
            self.buf = self.buf[cut:]
            self.base += cut

    def at(self, offset: int) -> int:
        """The byte at a file offset (-1 at EOF)."""
        rel = offset - self.base
        if rel < len(self.buf):
            return self.buf[rel]
        if not self.fill(offset + 1):
            return -1
        return self.buf[offset - self.base]

    def match(self, pattern: re.Pattern[bytes], offset: int) -> int:
        """The file offset where `pattern` matched at `offset` stops (-1: no match), reading on
        while the match could go on: it failed, reached the end of the window, or (the skip
        pattern) stopped at a string that is not complete yet."""
        buf = self.buf
        rel = offset - self.base
        if rel < len(buf):
            m = pattern.match(buf, rel)
            if m is not None:
                end = m.end()
                if end < len(buf) and (pattern is not _SKIP or buf[end] != 0x22):
                    return self.base + end
        while True:
            self.fill(offset + 1)
            rel = offset - self.base
            m = pattern.match(self.buf, rel)
            end = m.end() if m is not None else -1
            if self.eof or (
                m is not None and end < len(self.buf) and not (pattern is _SKIP and self.buf[end] == 0x22)
            ):
                return -1 if m is None else self.base + end
            self.fill(self.base + len(self.buf) + 1)

    def skip_ws(self, offset: int) -> int:
        return self.match(_WS, offset)

    def bytes(self, start: int, end: int) -> bytes:
        return self.buf[start - self.base : end - self.base]


def _value_end(r: _Reader, start: int, indent: bytes | None) -> tuple[int, Any, bytes]:
    """File offset after the JSON value starting at `start`, the value (parsed by orjson) and its bytes."""
    first = r.at(start)
    if first in (0x7B, 0x5B):  # { [
        closer = b"}" if first == 0x7B else b"]"
        if indent is not None:
            # pretty-printed (JSON.stringify(store, null, 2)): a raw newline is never inside a string,
            # so the member's closing bracket is normally the first newline + the key's indent + the
            # bracket; it is taken only when the value then parses (else the general search decides).
            # Looked for within LOOKAHEAD bytes only: a file laid out otherwise costs a bounded search
            # per member, never a read to the end of the file
            needle = b"\n" + indent + closer
            rel = r.buf.find(needle, start - r.base, start - r.base + LOOKAHEAD)
            if rel != -1:
                end = r.base + rel + len(needle)
                data = r.bytes(start, end)
                try:
                    return end, _parse(data), data
                except orjson.JSONDecodeError:
                    pass
        end = _bracket_end(r, start)
    else:
        end = r.match(_SCALAR, start)
        if end == -1 or end == start:
            raise NotStreamable("not a JSON value")
    data = r.bytes(start, end)
    try:
        return end, _parse(data), data
    except orjson.JSONDecodeError:
        raise NotStreamable("invalid value") from None


def _bracket_end(r: _Reader, start: int) -> int:
    depth = 0
    i = start
    while True:
        c = r.at(i)
        if c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                return i + 1
        else:
            raise NotStreamable("unterminated value")
        i = r.match(_SKIP, i + 1)
        if i == -1:
            raise NotStreamable("unterminated value")


def parse_entry(data: bytes) -> Any:
    """A member's value from its bytes, as `StreamedEntries.entry_at` parses it."""
    return _parse(data)


def _parse(data: bytes) -> Any:
    if len(data) < _DEPTH_SAFE:
        return orjson.loads(data)
    return orjson.loads(b"[" + data + b"]")[0]  # the depth the value has inside the object


def scan_members(fd: int, hasher: Any) -> Iterator[tuple[str, int, int, int, Any]]:
    """(key, value offset, value length, crc32 of the value bytes, parsed value) of every member
    of the top-level object, in file order. Raises NotStreamable for anything the whole-document
    reader must decide (the caller then reads the file whole)."""
    r = _Reader(fd, hasher)
    i = r.skip_ws(0)
    if r.at(i) != 0x7B:
        raise NotStreamable("not an object")
    ws_start = i + 1
    i = r.skip_ws(i + 1)
    seen: set[str] = set()
    if r.at(i) == 0x7D:
        end = r.skip_ws(i + 1)
        if r.at(end) != -1:
            raise NotStreamable("content after the document")
        return
    gap = r.bytes(ws_start, i)
    while True:
        if r.base + len(r.buf) - i < LOOKAHEAD and not r.eof:
            r.drop_before(i)
            r.fill(i + LOOKAHEAD)
        nl = gap.rfind(b"\n")
        indent = gap[nl + 1 :] if nl != -1 else None
        buf, base = r.buf, r.base
        m = _HEAD.match(buf, i - base)
        if m is not None and m.end() < len(buf):
            key_bytes, start = m.group(1), base + m.end()
        else:  # a key or gap longer than the window, or no key: the general path decides
            key_end = r.match(_KEY, i) if r.at(i) == 0x22 else -1
            if key_end == -1:
                raise NotStreamable("expected a key")
            key_bytes = r.bytes(i, key_end)
            colon = r.skip_ws(key_end)
            if r.at(colon) != 0x3A:
                raise NotStreamable("expected ':'")
            start = r.skip_ws(colon + 1)
        try:
            key = orjson.loads(key_bytes)
        except orjson.JSONDecodeError:
            raise NotStreamable("bad key") from None
        if key in seen:
            raise NotStreamable("duplicate key")  # JSON.parse: first position, last value
        seen.add(key)
        end, value, data = _value_end(r, start, indent)
        yield key, start, end - start, zlib.crc32(data), value
        buf, base = r.buf, r.base
        m = _NEXT.match(buf, end - base)
        if m is not None and m.end() < len(buf):
            if m.group(1) is not None:
                gap, i = m.group(1), base + m.end()
                continue
            tail = base + m.end()
        else:
            j = r.skip_ws(end)
            c = r.at(j)
            if c == 0x2C:
                ws_start = j + 1
                i = r.skip_ws(j + 1)
                gap = r.bytes(ws_start, i)
                continue
            if c != 0x7D:
                raise NotStreamable("expected ',' or '}'")
            tail = r.skip_ws(j + 1)
        if r.at(tail) != -1:
            raise NotStreamable("content after the document")
        return


INDEX_PART = 1024  # members per part of `index_parts`


def index_parts(path: str, part: int = INDEX_PART) -> Iterator[tuple[Any, ...]]:
    """`legacy_reader.read_index`'s member-wise read of a plain `sessions.json` (a regular file,
    streamable, unchanged while read), in parts for another process (`parser_process`'s INDEX):
    `("part", keys, offsets, lengths, crcs, facts)` — the arrays as bytes, the facts as
    `StreamedEntries.add` takes them — then `("end", identity, fingerprint)` with the identity as
    (dev, ino, mtime_ns, size, sha256 hex); `("fallback", why)` instead for anything else, after
    which the caller reads the file itself (`read_index`, which reports what it finds)."""
    import hashlib
    import stat

    from openclaw_cli.migration.publish import ArtifactError, fingerprint, open_regular_nofollow

    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            yield ("fallback", "a symbolic link")
            return
        fd, before = open_regular_nofollow(path)  # type: ignore[arg-type]  # os.open takes str too
    except (OSError, ArtifactError) as exc:
        yield ("fallback", str(exc))
        return
    hasher = hashlib.sha256()
    keys: list[str] = []
    offsets, lengths, crcs = array("Q"), array("Q"), array("L")
    facts: list[Any] = []
    try:
        try:
            for key, offset, length, crc, value in scan_members(fd, hasher):
                keys.append(key)
                offsets.append(offset)
                lengths.append(length)
                crcs.append(crc)
                facts.append(
                    (value.get("sessionId"), value.get("sessionFile")) if isinstance(value, dict) else None
                )
                if len(keys) >= part:
                    yield ("part", keys, offsets.tobytes(), lengths.tobytes(), crcs.tobytes(), facts)
                    keys, facts = [], []
                    offsets, lengths, crcs = array("Q"), array("Q"), array("L")
        except NotStreamable as exc:
            yield ("fallback", str(exc))
            return
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if keys:
        yield ("part", keys, offsets.tobytes(), lengths.tobytes(), crcs.tobytes(), facts)
    if fingerprint(before) != fingerprint(after):
        yield ("fallback", "the file changed while it was read")
        return
    identity = (before.st_dev, before.st_ino, before.st_mtime_ns, before.st_size, hasher.hexdigest())
    yield ("end", identity, fingerprint(before))


NEAR = 64 * 1024  # a read this far past the block goes on forward: the next block is read


class BlockReader:
    """`pread` through one cached block: reads that go forward through a file (the import reads
    entries and moves in the order they were written) cost one system call per block. A read
    elsewhere (a jump back, or more than `NEAR` past the block: entries read out of file order) reads just
    what it asks for and keeps the block."""

    def __init__(self, block: int = CHUNK):
        self.block = block
        self.base = 0
        self.data = b""

    def read(self, fd: int, offset: int, length: int) -> bytes:
        buf, rel = self.locate(fd, offset, length)
        return buf if rel == 0 and len(buf) == length else buf[rel : rel + length]

    def locate(self, fd: int, offset: int, length: int) -> tuple[bytes, int]:
        """`(buffer, start)` holding the `length` bytes at `offset` from `buffer[start]`: what
        `read` copies out, for a caller that only looks inside it (no copy per read)."""
        rel = offset - self.base
        if rel < 0 or rel + length > len(self.data):
            if self.data and not 0 <= rel < len(self.data) + NEAR:
                return os.pread(fd, length, offset), 0
            self.data = os.pread(fd, max(self.block, length), offset)
            self.base, rel = offset, 0
        return self.data, rel

    def forget(self) -> None:
        self.data = b""


class IndexChanged(PreconditionError):
    """`sessions.json` no longer holds the bytes read when the import started (nothing of a fresh
    import is published: the run rolls back)."""


class StreamedEntries:
    """The entries of a member-wise read `sessions.json`, read again from the file when asked:
    keys, offsets, lengths and crc32s are all it holds (a Mapping's read side, in file order)."""

    def __init__(self, path: Any, ident: tuple[int, int]):
        self.path = path
        self._ident = ident  # (dev, ino) of the file that was read
        self.keys_list: list[str] = []
        self.offsets = array("Q")
        self.lengths = array("Q")
        self.crcs = array("L")
        self._fd: int | None = None
        self._positions: dict[str, int] | None = None
        self._reader = BlockReader()
        # (sessionId, sessionFile) of each dict entry, from the first read: build_records takes them
        # once instead of parsing every entry again (then they are dropped)
        self._facts: list[tuple[Any, Any] | None] | None = []

    def add(self, key: str, offset: int, length: int, crc: int, value: Any = None) -> None:
        self.keys_list.append(key)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.crcs.append(crc)
        if self._facts is not None:
            self._facts.append(
                (value.get("sessionId"), value.get("sessionFile")) if isinstance(value, dict) else None
            )

    def add_part(self, keys: list[str], offsets: bytes, lengths: bytes, crcs: bytes) -> None:
        """Members read by another process (`index_parts`); their facts are not kept."""
        self.keys_list.extend(keys)
        self.offsets.frombytes(offsets)
        self.lengths.frombytes(lengths)
        self.crcs.frombytes(crcs)

    def set_identity(self, dev: int, ino: int) -> None:
        """The (dev, ino) of the file read (`index_parts`' identity): the one entries are read from."""
        self._ident = (dev, ino)

    def take_facts(self) -> list[tuple[Any, Any] | None] | None:
        """The (sessionId, sessionFile) pairs of the first read, once (None afterwards)."""
        facts, self._facts = self._facts, None
        return facts

    def __len__(self) -> int:
        return len(self.keys_list)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_list)

    def keys(self) -> list[str]:
        return self.keys_list

    def __contains__(self, key: object) -> bool:
        return key in self._index_of()

    def __getitem__(self, key: str) -> Any:
        return self.entry_at(self._index_of()[key])

    def get(self, key: str, default: Any = None) -> Any:
        n = self._index_of().get(key)
        return default if n is None else self.entry_at(n)

    def items(self) -> Iterator[tuple[str, Any]]:
        for n, key in enumerate(self.keys_list):
            yield key, self.entry_at(n)

    def values(self) -> Iterator[Any]:
        for n in range(len(self.keys_list)):
            yield self.entry_at(n)

    def _index_of(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {k: n for n, k in enumerate(self.keys_list)}
        return self._positions

    def entry_at(self, n: int) -> Any:
        """The n-th entry, parsed from the file; IndexChanged when its bytes are not the ones read."""
        return _parse(self.entry_bytes_at(n))

    def entry_bytes_at(self, n: int) -> bytes:
        """The n-th entry's bytes (what `entry_at` parses, `parse_entry` parses them elsewhere);
        IndexChanged when they are not the ones read."""
        data = self._reader.read(self._open(), self.offsets[n], self.lengths[n])
        if len(data) != self.lengths[n] or zlib.crc32(data) != self.crcs[n]:
            raise IndexChanged(f"{self.path}: the file changed while it was imported; rerun the import.")
        return data

    def _open(self) -> int:
        if self._fd is None:
            from openclaw_cli.migration.publish import ArtifactError, open_regular_nofollow

            try:
                fd, st = open_regular_nofollow(self.path)
            except (FileNotFoundError, ArtifactError) as exc:  # a process limit (EMFILE) is typed by the run
                raise IndexChanged(
                    f"{self.path}: the file was moved while it was imported ({exc}); rerun the import."
                ) from None
            if (st.st_dev, st.st_ino) != self._ident:
                os.close(fd)
                raise IndexChanged(
                    f"{self.path}: the file was replaced while it was imported; rerun the import."
                )
            self._fd = fd
        return self._fd

    def close(self) -> None:
        self._reader.forget()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()
