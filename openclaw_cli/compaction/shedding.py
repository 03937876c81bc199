"""Tool output kept out of memory while a summary compaction plans (issue 15: flat memory).

Most of a long transcript is tool output (31 MB of the bench's 50 MB session), and the built-in
summariser needs only three facts of it: its size (token counts), its identifiers, and the first
line of a failed result. `ToolOutputShedder` is the snapshot reader's `on_entry`: it keeps the newest
`window_chars` of tool-result text whole and, for older results, replaces the text of their text
blocks by "" and records those facts under `SHED_KEY` in the message (`ShedText`), a block of
consecutive results at a time (`ShedBlock`).

Why a block's identifiers can stand for its texts: tool output is scanned without the prose forms,
one candidate token at a time, and tokens never span lines, so `IdentifierScanner.scan_many` over
newest-first texts orders each value by the newest text holding it, then by its first position
there; scanning consecutive runs of those texts run by run (newest run first) and keeping each
value's first appearance gives the same values in the same order (`summarizer._tool_identifiers`).

Readers that understand shed messages: the token counter (estimates from the recorded weights; an
exact count that is not cached re-reads the message's block first: `Tokenizer.loader`) and the
built-in summariser (a block's identifiers stand for its texts; `settle` first re-reads every
block that is not one contiguous run of what is summarised, so starts, cut points, other branches
and bash output between results never mix in). Everything else gets whole objects: the service
sheds only for the built-in summariser outside safeguard mode. A re-read line comes from the same
transcript, checked against the snapshot (`TranscriptSnapshot.read_lines`), or the compaction
re-plans (`SnapshotChanged`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from openclaw_cli.compaction.identifiers import IdentifierScanner
from openclaw_cli.compaction.messages import text_of
from openclaw_cli.textweight import weighted_chars

SHED_KEY = "\x00shed"  # in a message dict: its text blocks' text is "" and this ShedText holds the facts
# Message fields no reader of a summary compaction looks at (the entry's own `timestamp` stays): left
# out of the objects kept, read again with the line when a successor copies the message.
UNREAD_FIELDS = frozenset({"api", "provider", "model", "timestamp"})
_SLIMMED_ROLES = frozenset({"assistant", "toolResult"})  # a user message's dict is as small without them
WINDOW_CHARS = 512_000  # the newest tool-result text kept whole (kept tails, recent exact counts)
# With the estimate the figures to hold are the other way round (1 s, memory to spare; exact: 5 s, and
# the encoder's 30 MB): it keeps more tool output whole and every message field, which costs less time.
ESTIMATE_WINDOW_CHARS = WINDOW_CHARS
BLOCK_CHARS = 1_000_000  # tool-result text shed at a time (a chunk)
BLOCK_CHUNKS = 4  # chunks per block (what one re-read of a broken block brings back); fewer when
_OPEN_LINE_CHARS = 1_000_000  # ... the chunks' unique lines, held until their block is complete, reach this
LOAD_BLOCKS = 1  # one uncached exact count re-reads its block and up to this many older ones
_MEMO_LIMIT = 200_000  # classified tokens memoised while reading (a pure cache: cleared when full)
_LINE_CACHE_CHARS = 2_000_000  # tool-output lines whose identifiers are remembered across blocks (the same)
FAILED_NO_OUTPUT = "failed (no output)"


class ShedBlock:
    """Consecutive shed tool results (file order) and their identifiers, newest first (both set
    when the block is complete: before anything reads them)."""

    __slots__ = ("ids", "index", "members")

    def __init__(self, ids: tuple[str, ...], members: tuple[int, ...], index: int):
        self.ids = ids  # as scan_many(newest-first texts, prose=False) gives them
        self.members = members  # line numbers, oldest first
        self.index = index


class ShedText:
    """What a shed tool result's text weighed and held (`SHED_KEY` in its message)."""

    __slots__ = ("block", "chars", "first", "line_no", "weighted")

    def __init__(self, line_no: int, chars: int, weighted: int, first: str | None, block: ShedBlock):
        self.line_no = line_no
        self.chars = chars  # sum of len() of its text blocks' text (the exact count's cache key)
        self.weighted = weighted  # their weighted characters (the estimate)
        self.first = first  # a failed result's first non-blank line (`isError: true` only)
        self.block = block


def shed_of(message: Any) -> ShedText | None:
    return message.get(SHED_KEY) if type(message) is dict else None


def failure_line(text: str) -> str:
    """The first non-blank line of a failed tool result (what `## Blocked` quotes)."""
    return next((ln for ln in text.splitlines() if ln.strip()), FAILED_NO_OUTPUT)


def _sheddable(message: Any) -> bool:
    """A tool result of pi's usual shape: a list of dict blocks, every text block's text a string."""
    if (
        type(message) is not dict
        or message.get("role") != "toolResult"
        or message.get("excludeFromContext") is True
    ):
        return False
    content = message.get("content")
    if type(content) is not list or not content:
        return False
    texts = 0
    for block in content:
        if type(block) is not dict:
            return False
        if block.get("type") == "text":
            if type(block.get("text")) is not str:
                return False
            texts += 1
    return texts > 0


class ToolOutputShedder:
    """The `on_entry` of a summary compaction's snapshot read (see the module doc). Bind the
    snapshot (`bind`) before anything re-reads."""

    def __init__(
        self, window_chars: int = WINDOW_CHARS, block_chars: int = BLOCK_CHARS, *, slim_fields: bool = True
    ):
        self._window = max(0, window_chars)
        self._block = max(1, block_chars)
        self._slim_fields = slim_fields  # leave `UNREAD_FIELDS` out too
        self._pending: deque[tuple[int, dict[str, Any], str]] = deque()  # newest results, still whole
        self._pending_chars = 0
        self._entries: dict[int, dict[str, Any]] = {}  # line number -> entry kept slimmed (fields, text)
        self._shed = 0  # of them, tool results whose text is shed
        self._shared: dict[int, list[dict[str, str]]] = {}  # shed content of n plain text blocks, shared
        self._blocks: list[ShedBlock] = []
        self._values: dict[str, str] = {}  # one string per identifier value across blocks
        self._scanner = IdentifierScanner()
        self._line_ids: dict[str, tuple[str, ...]] = {}  # line -> its identifiers (a pure cache)
        self._open: ShedBlock | None = None  # the block chunks are being shed into
        self._open_lines: list[dict[str, None]] = []  # its chunks' unique lines, oldest chunk first
        self._open_line_chars = 0
        self._open_members: list[int] = []
        self._line_chars = 0
        self._snapshot: Any = None
        self.shed_total = 0  # tool results shed while reading (tests, stats)
        self.rereads = 0  # transcript re-reads (tests, stats)
        self.restored = 0  # messages given their text back

    # -- reading ---------------------------------------------------------------------------
    def __call__(self, obj: dict[str, Any], line_no: int) -> None:
        message = obj.get("message")
        if type(message) is not dict or obj.get("type") != "message":
            return
        role = message.get("role")
        if role not in _SLIMMED_ROLES:
            return
        if self._slim_fields and (
            "timestamp" in message or "model" in message or "api" in message or "provider" in message
        ):
            # a new dict: deleting keys would leave its table at the old size
            message = obj["message"] = {k: v for k, v in message.items() if k not in UNREAD_FIELDS}
            self._entries[line_no] = obj
        if role != "toolResult":
            return
        content = message.get("content")
        if type(content) is list and len(content) == 1:  # pi's usual shape: one text block
            block = content[0]
            if (
                type(block) is not dict
                or block.get("type") != "text"
                or message.get("excludeFromContext") is True
            ):
                return
            text = block.get("text")
            if type(text) is not str:
                return
        elif _sheddable(message):
            text = text_of(message)
        else:
            return
        self._entries[line_no] = obj
        self._pending.append((line_no, message, text))
        self._pending_chars += len(text)
        if self._pending_chars > self._window + self._block:
            while self._pending_chars > self._window + self._block:
                self._shed_oldest()

    def _shed_oldest(self) -> None:
        """Shed the oldest `block_chars` of pending tool-result text (a chunk): its messages keep
        their facts, the chunk its lines (deduplicated) until its block is complete."""
        from itertools import chain

        members: list[tuple[int, dict[str, Any], str]] = []
        size = 0
        while self._pending and size < self._block:
            item = self._pending.popleft()
            members.append(item)
            size += len(item[2])
        self._pending_chars -= size
        block = self._open
        if block is None:
            block = self._open = ShedBlock((), (), len(self._blocks))
            self._blocks.append(block)
        lines = dict.fromkeys(
            chain.from_iterable(text.split("\n") for _, _, text in reversed(members) if text)
        )
        lines.pop("", None)
        self._open_lines.append(lines)
        self._open_line_chars += sum(map(len, lines))
        self._open_members.extend(n for n, _, _ in members)
        for line_no, message, text in members:
            chars = weighted = 0
            content = message["content"]
            plain = True
            for part in content:
                if part.get("type") == "text":
                    value = part["text"]
                    chars += len(value)
                    weighted += len(value) if value.isascii() else weighted_chars(value)
                    part["text"] = ""
                    plain = plain and len(part) == 2
                else:
                    plain = False
            if plain:  # nothing left to tell these blocks apart: one list for every such message
                shared = self._shared.get(len(content))
                if shared is None:
                    shared = self._shared[len(content)] = [dict(p) for p in content]
                message["content"] = shared
            first = failure_line(text) if message.get("isError") is True else None
            message[SHED_KEY] = ShedText(line_no, chars, weighted, first, block)
        self._shed += len(members)
        self.shed_total += len(members)
        if len(self._open_lines) >= BLOCK_CHUNKS or self._open_line_chars >= _OPEN_LINE_CHARS:
            self._close_block()

    def _close_block(self) -> None:
        """The open block's identifiers, from its chunks' lines (newest chunk first)."""
        from itertools import chain

        block = self._open
        if block is None:
            return
        chunks = self._open_lines
        lines = chunks[0] if len(chunks) == 1 else dict.fromkeys(chain.from_iterable(reversed(chunks)))
        values = self._values
        block.ids = tuple(values.setdefault(v, v) for v in self._identifiers(lines))
        block.members = tuple(self._open_members)
        self._open = None
        self._open_lines = []
        self._open_line_chars = 0
        self._open_members = []
        if len(self._scanner._memo[False]) > _MEMO_LIMIT:  # noqa: SLF001 - a pure cache, bounded here
            self._scanner.forget(prose=False)

    def _identifiers(self, lines: dict[str, None]) -> Iterable[str]:
        """The identifiers of newest-first unique tool-output lines, in order, as `scan_many` finds
        them; lines met in earlier blocks are remembered (files read again, logs)."""
        from itertools import chain

        cache = self._line_ids
        new = list(lines.keys() - cache.keys())  # their order does not matter: they are cached
        if new:
            size = sum(map(len, new))
            if self._line_chars + size > _LINE_CACHE_CHARS:  # start over with this block's lines
                cache.clear()
                self._line_chars = 0
                new = list(lines)
                size = sum(map(len, new))
            found = self._scanner.scan_lines(new)
            if size <= _LINE_CACHE_CHARS:
                cache.update(zip(new, found, strict=True))
                self._line_chars += size
            else:  # too much to remember: this block's own lines only
                known = dict(zip(new, found, strict=True))
                return dict.fromkeys(chain.from_iterable(map(known.__getitem__, lines)))
        return dict.fromkeys(chain.from_iterable(map(cache.__getitem__, lines)))

    def bind(self, snapshot: Any) -> None:
        """The snapshot whose transcript shed lines are re-read from; reading is over. A snapshot
        that holds its bytes was parsed whole (a store that declined to stream, after showing
        some objects): then nothing it holds was slimmed, and nothing is re-read."""
        self._close_block()
        self._snapshot = snapshot
        if getattr(snapshot, "raw_data", None) is not None:
            self._entries.clear()
            self._blocks.clear()
            self._shed = 0
        self._pending.clear()
        self._pending_chars = 0
        self._scanner = IdentifierScanner()
        self._line_ids = {}
        self._line_chars = 0

    @property
    def shed_count(self) -> int:
        return self._shed

    # -- giving text back ------------------------------------------------------------------------
    def restore(self, line_nos: Iterable[int]) -> None:
        """Give the shed messages of whole blocks holding `line_nos` their exact text back (one
        re-read of the transcript): a block is always either all shed or all whole."""
        wanted: set[int] = set()
        entries = self._entries
        for line_no in line_nos:
            obj = entries.get(line_no)
            if obj is None:
                continue
            wanted.add(line_no)
            info = obj["message"].get(SHED_KEY)
            if info is not None:
                wanted.update(n for n in info.block.members if n in entries)
        self._restore_lines(wanted)

    def restore_all_but(self, *sequences: Sequence[Mapping[str, Any]]) -> None:
        """Every shed message whole again except those of `sequences` (the summarised ones): what
        a successor transcript copies or re-serialises (the kept tail, other branches) and the
        context it is checked against are built from whole objects."""
        summarised = {id(message) for messages in sequences for message in messages}
        self.restore([n for n, obj in self._entries.items() if id(obj["message"]) not in summarised])

    def whole_messages(
        self, items: Sequence[Mapping[str, Any]], reduce: Callable[[dict[str, Any]], Any] | None = None
    ) -> list[tuple[dict[str, Any], Any]]:
        """`Tokenizer.loader`: (entry as kept, its message as written, or what `reduce` makes of it:
        one message whole at a time) for the shed ones of `items` (entries), read again but left
        shed: an exact count needs the text once, the plan never.
        A single item (a count walking back from the newest entry) brings the tool results of
        `LOAD_BLOCKS` older blocks too, so such a walk re-reads the transcript once per few blocks."""
        found: list[ShedText] = []
        for item in items:
            info = shed_of(item.get("message") if item.get("type") == "message" else item)
            if info is not None and info.line_no in self._entries:
                found.append(info)
        if not found:
            return []
        wanted = {info.line_no for info in found}
        if len(found) == 1:
            index = found[0].block.index
            for block in self._blocks[max(0, index - LOAD_BLOCKS) : index + 1]:
                wanted.update(n for n in block.members if n in self._entries)
        fresh = self._fresh(wanted, reduce)
        return [(self._entries[n], fresh[n]) for n in sorted(wanted)]

    def _fresh(
        self, wanted: set[int], reduce: Callable[[dict[str, Any]], Any] | None = None
    ) -> dict[int, Any]:
        """The messages of the lines `wanted` as written (or `reduce(message)`), re-read and checked
        against what was kept; each line's text is let go as soon as it is parsed."""
        import orjson

        from openclaw_cli.store.snapshot import SnapshotChanged

        if self._snapshot is None:
            raise RuntimeError("ToolOutputShedder: a re-read before bind(snapshot)")
        found = self._snapshot.read_lines(wanted)
        self.rereads += 1
        changed = SnapshotChanged(self._snapshot.key)
        out: dict[int, Any] = {}
        for line_no in wanted:
            obj = self._entries[line_no]
            message = obj["message"]
            raw = found.pop(line_no, None)
            fresh = orjson.loads(raw) if raw is not None else None
            fresh_message = (
                fresh.get("message") if type(fresh) is dict and fresh.get("id") == obj.get("id") else None
            )
            if type(fresh_message) is not dict or fresh_message.get("role") != message.get("role"):
                raise changed
            info: ShedText | None = message.get(SHED_KEY)
            if info is not None:
                content = fresh_message.get("content")
                if (
                    type(content) is not list
                    or len(content) != len(message["content"])
                    or info.chars
                    != sum(
                        len(p["text"])
                        for p in content
                        if type(p) is dict and p.get("type") == "text" and type(p.get("text")) is str
                    )
                ):
                    raise changed
            out[line_no] = fresh_message if reduce is None else reduce(fresh_message)
        return out

    def _restore_lines(self, wanted: set[int]) -> None:
        """Give the entries of the lines `wanted` their messages' every field and text back, in
        place (the plan's lists hold the same dicts)."""
        if not wanted:
            return
        for line_no, fresh_message in self._fresh(wanted).items():
            message = self._entries.pop(line_no)["message"]
            if SHED_KEY in message:
                self._shed -= 1
            message.clear()
            message.update(fresh_message)
            self.restored += 1

    # -- before summarising ----------------------------------------------------------------------
    def settle(self, *sequences: Sequence[Mapping[str, Any]]) -> None:
        """Re-read every block that is not, whole and in order, one contiguous run of the tool
        texts of exactly one of `sequences` (the messages summarised, the split turn's prefix):
        the summariser then takes each remaining block's identifiers for its texts."""
        if not self._shed:
            return
        runs: dict[
            int, tuple[int, ShedBlock, list[int], int]
        ] = {}  # block index -> (seq, block, lines, first)
        broken: set[int] = set()
        for seq_index, messages in enumerate(sequences):
            position = 0  # index among the tool texts the summariser collects (`_collect`)
            for message in messages:
                role = message.get("role") if type(message) is dict or isinstance(message, Mapping) else None
                if role == "toolResult":
                    info = shed_of(message)
                    if info is not None:
                        block = info.block
                        run = runs.get(block.index)
                        if run is None:
                            runs[block.index] = (seq_index, block, [info.line_no], position)
                        elif run[0] != seq_index or run[3] + len(run[2]) != position:
                            broken.add(block.index)
                        else:
                            run[2].append(info.line_no)
                    position += 1
                elif role == "bashExecution":
                    output = message.get("output")
                    if isinstance(output, str) and output:
                        position += 1
        for index, (_, block, lines, _) in runs.items():
            if tuple(lines) != block.members:
                broken.add(index)
        wanted = {n for index in broken for n in self._blocks[index].members if n in self._entries}
        self._restore_lines(wanted)
