"""The export source (`open_export`): a session's transcript lines as a stream, with the facts an
export or a chat read needs (key, sessionId, agent, a version for caches), read without loading
the whole transcript."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import (
    NotFoundError,
    UsageError,
)
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.session_keys import (
    list_hint,
    locate,
)

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


# ---- export ------------------------------------------------------------------------------------------------


@dataclass
class ExportSource:
    key: str
    session_id: str
    agent_id: str
    store_path: str
    branch: str  # active | all
    entry: dict[str, Any]
    lines: Callable[[], Iterator[Any]]  # TranscriptLine, header first, in file order
    issues: list[Any] = field(default_factory=list)
    # changes whenever the transcript may have (the store's change token and the transcript
    # file's size); None when the store cannot tell: a reader's cache keys on it (chat.history)
    version: Any = None
    # tells whether the session's row or transcript may have changed since (`store.base.ChangeProbe`):
    # the store's own probe, the transcript file's where transcripts are files, and the agent's
    # database path (a database appearing beside a legacy store is read instead); None when the
    # store cannot tell
    probe: Any = None


def _probe(ctx: Context, st: SessionStore, agent_id: str, sid: str, entry: dict[str, Any]) -> Any:
    from openclaw_cli.store.base import FileProbe, Probes

    store_probe = st.change_probe()
    if store_probe is None:
        return None
    parts = [store_probe, FileProbe(str(ctx.paths.agent_db_path(agent_id)))]
    if st.transcripts_in_files:
        path = st.resolve_transcript(sid, entry, [])
        if path is None:
            return None
        parts.append(FileProbe(str(path)))
    return Probes(tuple(parts))


def _transcript_version(st: SessionStore, sid: str, entry: dict[str, Any]) -> Any:
    if st.transcripts_in_files:  # a file: identity, size, mtime
        path = st.resolve_transcript(sid, entry, [])
        try:
            info = os.stat(path) if path is not None else None
        except OSError:
            return None
        return None if info is None else (sid, str(path), info.st_ino, info.st_size, info.st_mtime_ns)
    token = st.change_token()
    return None if token is None else (sid, token)


_TREE_FIELDS = ("type", "id", "parentId", "appendMode", "targetId", "appendParentId", "firstKeptEntryId")


def _slim(line: Any) -> Any:
    """The parts of a line the tree walk reads (flat memory over a large transcript)."""
    from openclaw_cli.store.base import TranscriptLine

    obj = line.obj
    slim = None if obj is None else {name: obj[name] for name in _TREE_FIELDS if name in obj}
    return TranscriptLine(seq=line.seq, raw="", obj=slim)


EXACT_IDS = 65_536  # ids a linear check keeps as they are; past that, a fixed-size filter
_FILTER_BITS = 1 << 27  # 16 MiB, 4 probes: a false "seen" once in ~10 checks of a 1M-line file


class _SeenIds:
    """The ids met so far, in bounded memory: the first EXACT_IDS in a set, every later one in a
    Bloom filter of fixed size. `add` answers False for an id certainly met before; an id the
    filter only may have met is kept as a suspect, for an exact count afterwards."""

    def __init__(self) -> None:
        self.exact: set[str] = set()
        self.bits: bytearray | None = None
        self.suspects: set[str] = set()

    @staticmethod
    def _places(ident: str) -> tuple[int, int, int, int]:
        mask = _FILTER_BITS - 1
        first, second = hash(ident), hash(ident + "\0")
        return first & mask, (first >> 32) & mask, second & mask, (second >> 32) & mask

    def _mark(self, ident: str) -> bool:
        """Set the id's bits; True when all were set already."""
        assert self.bits is not None
        bits = self.bits
        present = True
        for place in self._places(ident):
            byte, bit = place >> 3, 1 << (place & 7)
            if not bits[byte] & bit:
                present = False
                bits[byte] |= bit
        return present

    def add(self, ident: str) -> bool:
        if self.bits is None:
            if ident in self.exact:
                return False
            self.exact.add(ident)
            if len(self.exact) >= EXACT_IDS:
                self.bits = bytearray(_FILTER_BITS // 8)
                for known in self.exact:
                    self._mark(known)
                self.exact = set()
            return True
        if self._mark(ident):
            self.suspects.add(ident)
        return True


def _is_linear(lines: Callable[[], Iterator[Any]]) -> bool:
    """Is the transcript one plain chain — `rewrite.linear_branch`'s rule, checked while streaming
    (ids kept in bounded memory, `_SeenIds`): then its active branch is every entry, in file
    order. `lines` is called again only when the filter suspects a repeated id (an exact count)."""
    from openclaw_cli.store.tree import CANONICAL_TYPES

    seen = _SeenIds()
    previous: str | None = None
    missing = object()
    header = False
    for line in lines():
        obj = line.obj
        if obj is None:
            return False
        kind = obj.get("type")
        if kind == "session":
            if header:
                return False
            header = True
            continue
        ident = obj.get("id")
        if (
            type(ident) is not str
            or not ident.strip()
            or kind not in CANONICAL_TYPES
            or obj.get("parentId", missing) != previous
            or "appendMode" in obj
            or not seen.add(ident)
        ):
            return False
        previous = ident
    if seen.suspects:
        counts = dict.fromkeys(seen.suspects, 0)
        for line in lines():
            obj = line.obj or {}
            ident = obj.get("id")
            if type(ident) is str and ident in counts and obj.get("type") != "session":
                counts[ident] += 1
                if counts[ident] > 1:
                    return False
    return True


@contextmanager
def open_export(
    ctx: Context, raw_key: str, *, agent: str | None, store: str | None, branch: str = "active"
) -> Iterator[ExportSource]:
    """A session's transcript for export, streamed: `branch="all"` yields every line as stored;
    `"active"` first walks the tree over slim copies of the lines (ids and parents only), then
    streams the header and the active branch's lines, root first."""
    from openclaw_cli.store.tree import active_branch

    if branch not in ("active", "all"):
        raise UsageError("--branch must be active or all.")
    loc = locate(ctx, raw_key, agent=agent, store=store, read_only=True)
    with loc.store as st:
        if loc.entry is None:
            raise NotFoundError(
                f"Session not found: {loc.requested}. Run {list_hint(agent)} to choose a valid key."
            )
        sid = loc.entry.get("sessionId")
        if not isinstance(sid, str) or not sid.strip():
            raise NotFoundError(f"Session {loc.key} has no sessionId; nothing to export.")
        issues: list[Any] = []
        entry = loc.entry

        def every() -> Iterator[Any]:
            yield from st.iter_transcript(sid, entry=entry, issues=issues)

        def active() -> Iterator[Any]:
            if _is_linear(lambda: st.iter_transcript(sid, entry=entry, issues=[])):
                yield from every()  # one plain chain (the usual transcript): its branch is every line
                return
            slim = []
            header_seq = None
            for line in st.iter_transcript(sid, entry=entry, issues=[]):
                if header_seq is None and line.obj is not None and line.obj.get("type") == "session":
                    header_seq = line.seq
                slim.append(_slim(line))
            chosen = [line.seq for line in active_branch(slim)]
            del slim
            order = ([header_seq] if header_seq is not None else []) + chosen
            wanted = set(order)
            if order == sorted(order):
                for line in st.iter_transcript(sid, entry=entry, issues=issues):
                    if line.seq in wanted:
                        yield line
                return
            held = {
                line.seq: line
                for line in st.iter_transcript(sid, entry=entry, issues=issues)
                if line.seq in wanted
            }  # a branch out of file order (rare): only its lines are kept
            for seq in order:
                if seq in held:
                    yield held[seq]

        yield ExportSource(
            loc.key,
            sid,
            loc.agent_id,
            str(st.path),
            branch,
            entry,
            every if branch == "all" else active,
            issues,
            _transcript_version(st, sid, entry),
            _probe(ctx, st, loc.agent_id, sid, entry),
        )
