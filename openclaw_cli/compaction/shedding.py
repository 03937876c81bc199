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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from openclaw_cli.compaction.identifiers import IdentifierScanner
from openclaw_cli.compaction.messages import text_of
from openclaw_cli.textweight import weighted_chars

SHED_KEY = "\x00shed"  # in a message dict: its text blocks' text is "" and this ShedText holds the facts
WINDOW_CHARS = 512_000  # the newest tool-result text kept whole (kept tails, recent exact counts)
BLOCK_CHARS = 1_000_000  # tool-result text per block (what one re-read of a broken block brings back)
LOAD_BLOCKS = 4  # one uncached exact count re-reads its block and up to this many older ones
_MEMO_LIMIT = 200_000  # classified tokens memoised while reading (a pure cache: cleared when full)
FAILED_NO_OUTPUT = "failed (no output)"


class ShedBlock:
    """Consecutive shed tool results (file order) and their identifiers, newest first."""

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
    if type(message) is not dict or message.get("role") != "toolResult" or message.get("excludeFromContext") is True:
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

    def __init__(self, window_chars: int = WINDOW_CHARS, block_chars: int = BLOCK_CHARS):
        self._window = max(0, window_chars)
        self._block = max(1, block_chars)
        self._pending: deque[tuple[int, dict[str, Any], str]] = deque()  # newest results, still whole
        self._pending_chars = 0
        self._shed: dict[int, dict[str, Any]] = {}  # line number -> shed message
        self._blocks: list[ShedBlock] = []
        self._values: dict[str, str] = {}  # one string per identifier value across blocks
        self._scanner = IdentifierScanner()
        self._snapshot: Any = None
        self.shed_total = 0  # tool results shed while reading (tests, stats)
        self.rereads = 0  # transcript re-reads (tests, stats)
        self.restored = 0  # messages given their text back

    # -- reading ---------------------------------------------------------------------------
    def __call__(self, obj: dict[str, Any], line_no: int) -> None:
        if obj.get("type") != "message":
            return
        message = obj.get("message")
        if not _sheddable(message):
            return
        text = text_of(message)
        self._pending.append((line_no, message, text))  # type: ignore[arg-type]
        self._pending_chars += len(text)
        while self._pending_chars > self._window + self._block:
            self._shed_oldest()

    def _shed_oldest(self) -> None:
        members: list[tuple[int, dict[str, Any], str]] = []
        size = 0
        while self._pending and size < self._block:
            item = self._pending.popleft()
            members.append(item)
            size += len(item[2])
        self._pending_chars -= size
        values = self._values
        found = self._scanner.scan_many([text for _, _, text in reversed(members)], prose=False)
        block = ShedBlock(tuple(values.setdefault(v, v) for v in found), tuple(n for n, _, _ in members),
                          len(self._blocks))
        self._blocks.append(block)
        for line_no, message, text in members:
            chars = weighted = 0
            for part in message["content"]:
                if part.get("type") == "text":
                    value = part["text"]
                    chars += len(value)
                    weighted += len(value) if value.isascii() else weighted_chars(value)
                    part["text"] = ""
            first = failure_line(text) if message.get("isError") is True else None
            message[SHED_KEY] = ShedText(line_no, chars, weighted, first, block)
            self._shed[line_no] = message
        self.shed_total += len(members)
        if len(self._scanner._memo[False]) > _MEMO_LIMIT:  # noqa: SLF001 - a pure cache, bounded here
            self._scanner.forget(prose=False)

    def bind(self, snapshot: Any) -> None:
        """The snapshot whose transcript shed lines are re-read from; reading is over."""
        self._snapshot = snapshot
        self._pending.clear()
        self._pending_chars = 0
        self._scanner = IdentifierScanner()

    @property
    def shed_count(self) -> int:
        return len(self._shed)

    # -- giving text back ------------------------------------------------------------------------
    def restore(self, line_nos: Iterable[int]) -> None:
        """Give the shed messages of whole blocks holding `line_nos` their exact text back (one
        re-read of the transcript): a block is always either all shed or all whole."""
        wanted: set[int] = set()
        for line_no in line_nos:
            message = self._shed.get(line_no)
            if message is not None:
                wanted.update(n for n in message[SHED_KEY].block.members if n in self._shed)
        self._restore_lines(wanted)

    def restore_all_but(self, *sequences: Sequence[Mapping[str, Any]]) -> None:
        """Every shed message whole again except those of `sequences` (the summarised ones): what
        a successor transcript copies or re-serialises (the kept tail, other branches) and the
        context it is checked against are built from whole objects."""
        summarised = {id(message) for messages in sequences for message in messages}
        self.restore([n for n, message in self._shed.items() if id(message) not in summarised])

    def restore_entries(self, items: Sequence[Mapping[str, Any]]) -> None:
        """`Tokenizer.loader`: the shed ones of `items` (entries or messages) whole again. A single
        item (a count walking back from the newest entry) brings `LOAD_BLOCKS` older blocks too,
        so such a walk re-reads the transcript once per few blocks, not once per entry."""
        found: list[ShedText] = []
        for item in items:
            message = item.get("message") if item.get("type") == "message" else item
            info = shed_of(message)
            if info is not None:
                found.append(info)
        if not found:
            return
        line_nos = [info.line_no for info in found]
        if len(found) == 1:
            index = found[0].block.index
            for block in self._blocks[max(0, index - LOAD_BLOCKS):index]:
                line_nos.extend(block.members)
        self.restore(line_nos)

    def _restore_lines(self, wanted: set[int]) -> None:
        if not wanted:
            return
        import orjson

        from openclaw_cli.store.snapshot import SnapshotChanged

        if self._snapshot is None:
            raise RuntimeError("ToolOutputShedder.restore before bind(snapshot)")
        found = self._snapshot.read_lines(wanted)
        self.rereads += 1
        for line_no in sorted(wanted):
            message = self._shed[line_no]
            info: ShedText = message[SHED_KEY]
            raw = found.get(line_no)
            fresh = orjson.loads(raw) if raw is not None else None
            fresh_message = fresh.get("message") if type(fresh) is dict else None
            fresh_content = fresh_message.get("content") if type(fresh_message) is dict else None
            content = message["content"]
            if type(fresh_content) is not list or len(fresh_content) != len(content):
                raise SnapshotChanged(self._snapshot.key)
            texts: list[tuple[dict[str, Any], str]] = []
            for part, fresh_part in zip(content, fresh_content, strict=True):
                if part.get("type") == "text":
                    value = fresh_part.get("text") if type(fresh_part) is dict else None
                    if type(value) is not str:
                        raise SnapshotChanged(self._snapshot.key)
                    texts.append((part, value))
            if sum(len(value) for _, value in texts) != info.chars:
                raise SnapshotChanged(self._snapshot.key)
            for part, value in texts:
                part["text"] = value
            del message[SHED_KEY]
            del self._shed[line_no]
            self.restored += 1

    # -- before summarising ----------------------------------------------------------------------
    def settle(self, *sequences: Sequence[Mapping[str, Any]]) -> None:
        """Re-read every block that is not, whole and in order, one contiguous run of the tool
        texts of exactly one of `sequences` (the messages summarised, the split turn's prefix):
        the summariser then takes each remaining block's identifiers for its texts."""
        if not self._shed:
            return
        runs: dict[int, tuple[int, ShedBlock, list[int], int]] = {}  # block index -> (seq, block, lines, first)
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
        wanted = {n for index in broken for n in self._blocks[index].members if n in self._shed}
        self._restore_lines(wanted)
