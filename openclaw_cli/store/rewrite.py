"""Pure transcript rewrites for compaction (no I/O): the in-memory parse of a transcript, the
linear-branch fast path, R4.17.2's successor transcript, OpenClaw's `maxLines` split and R4.8.3's
row bookkeeping. `persist` applies them to stores."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from openclaw_cli.clock import iso_ms
from openclaw_cli.errors import InvalidDataError
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.base import ReadIssue, TranscriptLine


def linear_branch(lines: Sequence[TranscriptLine]) -> list[TranscriptLine] | None:
    """The active branch of a transcript that is one plain chain (what OpenClaw writes without
    forks or navigation): every entry canonical, with a unique id and `parentId` = the previous
    entry's id (the first: null), no `appendMode`. `tree.active_branch` returns exactly these
    entries for such a file; anything else (None here) goes through the full tree walk."""
    from openclaw_cli.store.tree import CANONICAL_TYPES

    out: list[TranscriptLine] = []
    append = out.append
    seen: set[str] = set()
    add = seen.add
    previous: str | None = None
    missing = object()
    for line in lines:
        obj = line.obj
        if obj is None:
            return None
        kind = obj.get("type")
        if kind == "session":
            continue
        ident = obj.get("id")
        if (
            type(ident) is not str
            or obj.get("parentId", missing) != previous
            or kind not in CANONICAL_TYPES
            or not ident
            or ident.isspace()
            or ident in seen
            or "appendMode" in obj
        ):
            return None
        add(ident)
        previous = ident
        append(line)
    return out


def parse_transcript_bytes(
    data: bytes, label: str, issues: list[ReadIssue] | None = None
) -> list[TranscriptLine]:
    """`transcript.iter_jsonl_stream` over bytes already in memory, with the same results (seq
    over non-blank lines, 1-based line numbers, falsy lines skipped, bad lines reported): clean
    lines take an orjson fast path, anything unusual goes through `transcript.parse_line`. Valid
    UTF-8 (the usual case) is decoded once as a whole rather than line by line. The cyclic GC is
    paused while tens of thousands of dicts are built (it would rescan them)."""
    from openclaw_cli.gcpause import gc_paused

    with gc_paused():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return _parse_byte_lines(data, label, issues)
        return _parse_text_lines(text, label, issues)


def _parse_text_lines(text: str, label: str, issues: list[ReadIssue] | None) -> list[TranscriptLine]:
    import orjson

    from openclaw_cli.store.transcript import parse_line

    out: list[TranscriptLine] = []
    append = out.append
    loads = orjson.loads
    pieces = text.split("\n")
    last = len(pieces) - 1  # the piece after the final newline (empty for a complete file)
    seq = 0
    for index, raw in enumerate(pieces):
        if not raw:
            continue
        line: TranscriptLine | None = None
        if raw[0] == "{" and raw[-1] != "\r":
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                obj = None
            if type(obj) is dict and obj:
                line = TranscriptLine(seq, raw, obj, index + 1)
        if line is None:
            data = raw.encode("utf-8")
            if data.isspace():  # blank by the byte reader's (ASCII) rule
                continue
            line = parse_line(
                data, seq=seq, line_no=index + 1, path=label, issues=issues, truncated=index == last
            )
        seq += 1
        if line is not None:
            append(line)
    return out


_MESSAGE_NAMES = ("role", "api", "provider", "model", "stopReason", "toolName")


def share_names(obj: dict[str, Any], previous_id: Any = None, numbers: dict[int, int] | None = None) -> Any:
    """Replace the short names every entry repeats (its type; a message's role, api, provider,
    model, stop reason, tool name; its content blocks' types and tool names) by one shared string
    each, a `parentId` equal to the previous entry's id by that id, and (with `numbers`, one dict
    per transcript) equal usage figures by one int: equal values, ~15 % less memory for a parsed
    transcript held whole by a compaction. Returns the entry's id (pass it with the next entry)."""
    intern = sys.intern
    kind = obj.get("type")
    if type(kind) is str:
        obj["type"] = intern(kind)
    ident = obj.get("id")
    if previous_id is not None and obj.get("parentId") == previous_id:
        obj["parentId"] = previous_id
    message = obj.get("message")
    if type(message) is dict:
        for name in _MESSAGE_NAMES:
            value = message.get(name)
            if type(value) is str and len(value) < 64:
                message[name] = intern(value)
        usage = message.get("usage")
        if numbers is not None and type(usage) is dict:
            for name, value in usage.items():
                if type(value) is int:
                    usage[name] = numbers.setdefault(value, value)
        content = message.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict:
                    value = block.get("type")
                    if type(value) is str:
                        block["type"] = intern(value)
                    value = block.get("name")
                    if type(value) is str and len(value) < 64:
                        block["name"] = intern(value)
    return ident if type(ident) is str else None


def parse_transcript_stream(
    stream: BinaryIO,
    label: str,
    issues: list[ReadIssue] | None = None,
    *,
    keep_raw: bool = True,
    on_entry: Callable[[dict[str, Any], int], None] | None = None,
) -> list[TranscriptLine]:
    """`parse_transcript_bytes` over a stream read block by block, with the same lines and issues,
    so the whole transcript is never held as bytes or text. `keep_raw=False` leaves `raw` None on
    the clean lines (their exact text is re-read only when a successor needs it:
    `TranscriptSnapshot.restore_raw`); odd lines keep the text `parse_line` made of them.
    `on_entry(obj, line_no)` sees each clean line's object as it is parsed (a reader that slims
    what it keeps, `read_snapshot(on_entry=...)`)."""
    import orjson

    from openclaw_cli.gcpause import gc_paused
    from openclaw_cli.store.transcript import _split_lines, parse_line

    out: list[TranscriptLine] = []
    append = out.append
    loads = orjson.loads
    seq = 0
    line_no = 0
    previous: Any = None
    numbers: dict[int, int] = {}
    with gc_paused():
        for raw, had_newline in _split_lines(stream, 1 << 20):
            line_no += 1
            if not raw or raw.isspace():
                continue
            line: TranscriptLine | None = None
            if raw[-1] != 13 and raw[0] == 123:  # no trailing CR, starts with "{"
                try:
                    obj = loads(raw)
                except orjson.JSONDecodeError:
                    obj = None
                if type(obj) is dict and obj:
                    if on_entry is not None:  # first: it may leave fields out, which then need no sharing
                        on_entry(obj, line_no)
                    previous = share_names(obj, previous, numbers)
                    line = TranscriptLine(
                        seq,
                        raw.decode("utf-8") if keep_raw else None,  # type: ignore[arg-type]
                        obj,
                        line_no,
                    )
            if line is None:
                line = parse_line(
                    raw, seq=seq, line_no=line_no, path=label, issues=issues, truncated=not had_newline
                )
            seq = line_no if line_no == seq + 1 else seq + 1  # the same int object when they agree
            if line is not None:
                append(line)
    return out


def _parse_byte_lines(data: bytes, label: str, issues: list[ReadIssue] | None) -> list[TranscriptLine]:
    import orjson

    from openclaw_cli.store.transcript import parse_line

    out: list[TranscriptLine] = []
    append = out.append
    loads = orjson.loads
    raw_lines = data.split(b"\n")
    last = len(raw_lines) - 1
    seq = 0
    for index, raw in enumerate(raw_lines):
        if not raw or raw.isspace():
            continue
        line: TranscriptLine | None = None
        if raw[-1] != 13 and raw[0] == 123:  # no trailing CR, starts with "{"
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                obj = None
            if type(obj) is dict and obj:
                line = TranscriptLine(seq=seq, raw=raw.decode("utf-8"), obj=obj, line_no=index + 1)
        if line is None:
            line = parse_line(
                raw, seq=seq, line_no=index + 1, path=label, issues=issues, truncated=index == last
            )
        seq += 1
        if line is not None:
            append(line)
    return out


def successor_file_name(now_ms: int, session_id: str) -> str:
    """R4.17.2 step 6: `<ISO timestamp with ":" and "." -> "-">_<newId>.jsonl`."""
    return f"{iso_ms(now_ms).replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def _int_or_zero(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return int(value)


def entry_after_compaction(
    entry: dict[str, Any], *, tokens_after: int | None, now_ms: int, count: bool = True
) -> dict[str, Any]:
    """R4.8.3: `compactionCount += 1`, `updatedAt = now`, `totalTokens = tokensAfter` and
    `totalTokensFresh = true` when known, else `totalTokensFresh = false`. Other fields (unknown
    ones included) are kept as they are, in order."""
    out = dict(entry)
    if count:
        out["compactionCount"] = _int_or_zero(entry.get("compactionCount")) + 1
    out["updatedAt"] = now_ms
    if tokens_after is not None:
        out["totalTokens"] = int(tokens_after)
        out["totalTokensFresh"] = True
    else:
        out["totalTokensFresh"] = False
    return out


# What OpenClaw 2026.9.6+ clears on the row of a transcript `sessions.compact {maxLines}` trimmed
# (its run usage and token figures, CLI session bindings, the context-budget status): observed
# through the real Gateway, as its session accessor does it.
MAX_LINES_CLEARED = frozenset(
    (
        "contextBudgetStatus",
        "inputTokens",
        "outputTokens",
        "cacheRead",
        "cacheWrite",
        "estimatedCostUsd",
        "totalTokens",
        "totalTokensFresh",
        "totalTokensVersion",
        "cliSessionBindings",
        "cliSessionIds",
        "claudeCliSessionId",
    )
)


def entry_after_max_lines(entry: dict[str, Any], *, now_ms: int, clears_usage: bool) -> dict[str, Any]:
    """The row after `compact --max-lines`: the release that keeps the session id (2026.9.6+)
    clears `MAX_LINES_CLEARED` and stamps `updatedAt`; profile L (2026.7) keeps the figures and
    marks them stale (`totalTokensFresh = false`). `compactionCount` is unchanged either way."""
    if not clears_usage:
        return entry_after_compaction(entry, tokens_after=None, now_ms=now_ms, count=False)
    out = {name: value for name, value in entry.items() if name not in MAX_LINES_CLEARED}
    out["updatedAt"] = now_ms
    return out


def build_successor_lines(
    lines: Sequence[TranscriptLine],
    *,
    session_id: str,
    timestamp: str,
    cwd: str,
    parent_session: str | None,
    version: int = 4,
    restore: Callable[[list[TranscriptLine]], None] | None = None,
) -> list[str]:
    """R4.17.2 steps 1-5 over a transcript that ends in its latest compaction (header dropped).

    Summarised = active-branch entries before the compaction up to (not including)
    `firstKeptEntryId` (everything before it for a hard checkpoint). Only `message` entries among
    them are removed, plus `label` entries that target a removed id; every kept entry whose
    parent was removed is re-parented to its nearest surviving ancestor (its text is re-serialised;
    every other line stays byte-exact). Entries not on the active branch come first, then the
    branch, each in file order. `restore(lines)` gives the lines copied byte-exact their text when
    they were read without it (`TranscriptSnapshot.restore_raw`): only those, not the summarised."""
    from openclaw_cli.store.tree import branch_of, scan_tree

    tree = scan_tree(lines)
    branch = branch_of(tree)
    boundary = next(
        (
            i
            for i in range(len(branch) - 1, -1, -1)
            if (obj := branch[i].obj) is not None and obj.get("type") == "compaction"
        ),
        None,
    )
    if boundary is None:
        raise InvalidDataError("no compaction entry on the active branch; no successor transcript")
    first_kept = branch[boundary].obj.get("firstKeptEntryId")  # type: ignore[union-attr]
    kept_at = next(
        (i for i in range(boundary) if (obj := branch[i].obj) is not None and obj.get("id") == first_kept),
        boundary,
    )
    removed: set[str] = set()
    removed_lines: set[int] = set()
    for line in branch[:kept_at]:
        obj = line.obj
        if obj is not None and obj.get("type") == "message":
            removed_lines.add(id(line))
            if isinstance(obj.get("id"), str):
                removed.add(obj["id"])
    for line in tree.entries:
        obj = line.obj
        if obj is not None and obj.get("type") == "label" and obj.get("targetId") in removed:
            removed_lines.add(id(line))
            if isinstance(obj.get("id"), str):
                removed.add(obj["id"])
    parent_of = {
        line.obj["id"]: line.obj.get("parentId")
        for line in tree.entries
        if line.obj is not None and isinstance(line.obj.get("id"), str)
    }

    def survivor(parent: Any) -> Any:
        seen: set[str] = set()
        while isinstance(parent, str) and parent in removed and parent not in seen:
            seen.add(parent)
            parent = parent_of.get(parent)
        return None if isinstance(parent, str) and parent in removed else parent

    header: dict[str, Any] = {
        "type": "session",
        "version": version,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_session:
        header["parentSession"] = parent_session
    out = [dumps_compact(header)]
    on_branch = {id(line) for line in branch}
    ordered = [ln for ln in tree.entries if id(ln) not in on_branch] + [
        ln for ln in tree.entries if id(ln) in on_branch
    ]
    if restore is not None:
        textless = [ln for ln in ordered if ln.raw is None and id(ln) not in removed_lines]
        if textless:
            restore(textless)
    for line in ordered:
        if id(line) in removed_lines:
            continue
        obj = line.obj
        parent = obj.get("parentId") if obj is not None else None
        if isinstance(parent, str) and parent in removed:
            moved = dict(obj)  # type: ignore[arg-type]
            moved["parentId"] = survivor(parent)
            out.append(dumps_compact(moved))
        else:
            if line.raw is None:  # a summary snapshot's line: `TranscriptSnapshot.restore_raw` first
                raise InvalidDataError("successor transcript: a line's text was not restored")
            out.append(line.raw)
    if len(out) == 1:
        raise InvalidDataError("empty successor transcript")
    return out


def parse_lines(raw_lines: Sequence[str | bytes], label: str = "<successor>") -> list[TranscriptLine]:
    data = b"".join((r.encode("utf-8") if isinstance(r, str) else r) + b"\n" for r in raw_lines)
    return parse_transcript_bytes(data, label)


def rebuilt_context(lines: Sequence[TranscriptLine]) -> list[dict[str, Any]]:
    from openclaw_cli.store.tree import active_branch, build_context

    return build_context(active_branch(lines))


def max_lines_split(data: bytes, max_lines: int) -> tuple[list[bytes], int, int]:
    """OpenClaw's `maxLines` over the physical non-blank lines: (kept lines, dropped count, total).

    The kept lines include the header (when the first line is one) followed by the last
    `max_lines - 1` lines; the first kept event is re-rooted to `parentId: null`. Without a
    header the last `max_lines` lines are kept."""
    import orjson

    raw = [line[:-1] if line.endswith(b"\r") else line for line in data.split(b"\n") if line.strip()]
    total = len(raw)
    if total <= max_lines:
        return raw, 0, total
    head: list[bytes] = []
    try:
        first = orjson.loads(raw[0])
    except orjson.JSONDecodeError:
        first = None
    if isinstance(first, dict) and first.get("type") == "session":
        head = [raw[0]]
    tail_count = max_lines - len(head)
    tail = raw[total - tail_count :] if tail_count > 0 else []
    for index, line in enumerate(tail):  # re-root the first kept event that names a parent
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "parentId" in obj:
            if obj["parentId"] is not None:
                obj["parentId"] = None
                tail[index] = dumps_compact(obj).encode("utf-8")
            break
    kept = head + tail
    return kept, total - len(kept), total
