"""Cut-point selection (§4.5) and compaction preparation (§4.6) over active-branch entries.

Two deliberate refinements of R4.5, both decided by the spec README or needed for safety:
- D16: a turn is split only when that turn is larger than the keep budget (EX4.5.b). When the
  raw R4.5 cut lands on an assistant message inside a smaller turn, the cut moves back to the
  turn's start (the whole turn is kept, so the kept tail still holds >= keep tokens).
- Tool pairing: a position between a tool call and a result that was displaced after other
  messages (EX4.10.e shape) is never a cut point, so no kept toolResult loses its call and no
  summarised call loses its result. In ordinary transcripts results follow their call directly
  and this changes nothing.
Split-turn detection looks at the chosen message itself, before metadata entries in front of it
are pulled into the kept tail (step 4), so a `model_change` before a user message never turns a
clean cut into a split.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.compaction.messages import (
    content_blocks,
    is_boundary_entry,
    is_context_entry,
    is_cut_point_entry,
    is_turn_start_entry,
    project_entry,
    role_of,
    text_of,
    tool_call_ids,
    tool_result_id,
)
from openclaw_cli.compaction.thresholds import DEFAULT_KEEP_RECENT_TOKENS
from openclaw_cli.compaction.tokens import EXACT_CONTEXT_CHARS, TokenCount, Tokenizer, context_tokens
from openclaw_cli.errors import InvalidDataError

Count = Callable[[Mapping[str, Any]], int]

STATUS_READY = "ready"
NOTHING_TO_COMPACT = "no_compactable_entries"
ALREADY_COMPACTED = "already_compacted"
LATEST_REQUEST_MAX = 800
_LATEST_REQUEST_MARKER = "\n[... latest user request truncated ...]\n"


@dataclass(frozen=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int = -1  # -1 unless the cut splits a turn
    is_split_turn: bool = False


def _crossing_mask(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> list[bool]:
    """mask[i - start] is True when a tool call before i has its result at or after i."""
    size = end - start
    diff = [0] * (size + 1)
    call_at: dict[str, int] = {}
    any_crossing = False
    for i in range(start, end):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        role = role_of(message)
        if role == "assistant":
            for ident in tool_call_ids(message):
                call_at[ident] = i
        elif role == "toolResult":
            result_id = tool_result_id(message)
            a = call_at.get(result_id) if result_id else None
            if a is not None and i - a > 1:
                diff[a + 1 - start] += 1
                diff[i + 1 - start] -= 1
                any_crossing = True
    if not any_crossing:
        return []
    mask, running = [], 0
    for k in range(size):
        running += diff[k]
        mask.append(running > 0)
    return mask


def _valid_cut_points(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> list[int]:
    mask = _crossing_mask(entries, start, end)
    return [i for i in range(start, end) if is_cut_point_entry(entries[i]) and not (mask and mask[i - start])]


def find_cut_point(
    entries: Sequence[Mapping[str, Any]], start: int, end: int, keep_tokens: int, count: Count
) -> CutPoint:
    """R4.5 steps 1-5 over `entries[start:end]` (see the module doc for the two refinements).

    `count(entry)` returns the entry's message tokens (0 for metadata). Only the tail that the
    budget needs is counted.
    """
    cut_points = _valid_cut_points(entries, start, end)
    if not cut_points:  # step 1
        return CutPoint(start)
    cut = cut_points[0]  # step 2
    accumulated = 0
    for i in range(end - 1, start - 1, -1):  # step 3
        accumulated += count(entries[i])
        if accumulated >= keep_tokens:
            k = bisect.bisect_left(cut_points, i)
            if k < len(cut_points):
                cut = cut_points[k]
            break
    turn_start = -1
    split = False
    if not is_turn_start_entry(entries[cut]):  # step 5
        valid = set(cut_points)  # a turn start inside a displaced tool pair is not a boundary
        for j in range(cut - 1, start - 1, -1):
            if j in valid and is_turn_start_entry(entries[j]):
                turn_start = j
                break
        if turn_start >= 0:
            turn_end = end
            for j in range(cut + 1, end):
                if j in valid and is_turn_start_entry(entries[j]):
                    turn_end = j
                    break
            turn_tokens = 0
            for j in range(turn_start, turn_end):  # only "larger than the budget?" matters
                turn_tokens += count(entries[j])
                if turn_tokens > keep_tokens:
                    split = True
                    break
            if not split:  # D16: the turn fits the budget -> keep it whole
                cut, turn_start = turn_start, -1
    while cut > start:  # step 4: pull metadata in front of the cut into the kept tail
        previous = entries[cut - 1]
        if is_context_entry(previous) or is_boundary_entry(previous):
            break
        cut -= 1
    return CutPoint(cut, turn_start if split else -1, split)


@dataclass
class FileOps:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def merge_details(self, details: Any) -> None:
        if not isinstance(details, Mapping):
            return
        for value in details.get("readFiles") or []:
            if isinstance(value, str):
                self.read.add(value)
        for value in details.get("modifiedFiles") or []:
            if isinstance(value, str):
                self.edited.add(value)

    def add_message(self, message: Mapping[str, Any] | None) -> None:
        role = role_of(message)
        if role == "assistant":
            content = message.get("content")  # type: ignore[union-attr]
            for call in content if type(content) is list else content_blocks(message):  # type: ignore[arg-type]
                if (type(call) is not dict and not isinstance(call, Mapping)) or call.get(
                    "type"
                ) != "toolCall":
                    continue
                name = normalize_tool_name(call.get("name"))
                if name not in ("read", "write", "edit"):
                    continue
                args = call.get("arguments")
                if not isinstance(args, Mapping):
                    continue
                path = next(
                    (
                        args[k]
                        for k in ("path", "file_path", "filePath")
                        if isinstance(args.get(k), str) and args.get(k)
                    ),
                    None,
                )
                if path:
                    {"read": self.read, "write": self.written, "edit": self.edited}[name].add(path)
        elif role == "toolResult" and normalize_tool_name(message.get("toolName")) == "apply_patch":  # type: ignore[union-attr]
            details = message.get("details")  # type: ignore[union-attr]
            summary = details.get("summary") if isinstance(details, Mapping) else None
            if isinstance(summary, Mapping):
                for key, target in (("added", self.written), ("modified", self.edited)):
                    for value in summary.get(key) or []:
                        if isinstance(value, str):
                            target.add(value)

    def lists(self) -> tuple[list[str], list[str]]:
        """(readFiles, modifiedFiles): modified = edited ∪ written; read excludes modified."""
        modified = self.edited | self.written
        return sorted(self.read - modified), sorted(modified)


_MCP_PREFIX = re.compile(r"^mcp__.+?__")


def normalize_tool_name(name: Any) -> str:
    if not isinstance(name, str):
        return ""
    return _normalized_tool_name(name)


@functools.lru_cache(maxsize=4096)  # a transcript uses a handful of tool names, tens of thousands of times
def _normalized_tool_name(name: str) -> str:
    return _MCP_PREFIX.sub("", name.strip().lower())


@dataclass
class CompactionPlan:
    """What a compaction would do; `status` is `ready` or a skip reason code (R4.11.3)."""

    status: str
    reason: str | None = None
    hard_checkpoint: bool = False
    keep_recent_tokens: int | None = None
    first_kept_index: int | None = None  # index into the branch; None for a hard checkpoint
    first_kept_entry_id: str | None = None  # None for a hard checkpoint (entry points at itself)
    turn_start_index: int = -1
    is_split_turn: bool = False
    previous_summary: str | None = None
    previous_compaction_id: str | None = None
    start_index: int = 0
    entries_to_summarize: list[Mapping[str, Any]] = field(default_factory=list)
    messages_to_summarize: list[Mapping[str, Any]] = field(default_factory=list)
    turn_prefix_entries: list[Mapping[str, Any]] = field(default_factory=list)
    turn_prefix_messages: list[Mapping[str, Any]] = field(default_factory=list)
    kept_entries: list[Mapping[str, Any]] = field(default_factory=list)
    kept_tokens: int = 0
    tokens_before: TokenCount = field(default_factory=lambda: TokenCount(0, "estimate"))
    token_method: str = "estimate"
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    latest_user_request: str | None = None
    leaf_id: str | None = None

    @property
    def ready(self) -> bool:
        return self.status == STATUS_READY

    @property
    def summarized_count(self) -> int:
        return len(self.messages_to_summarize) + len(self.turn_prefix_messages)

    def tokens_after(self, summary: str, tokenizer: Tokenizer | None = None) -> int:
        """Context size right after compaction: the summary message plus the kept tail (counted
        with the plan's method unless another tokenizer is given)."""
        from openclaw_cli.store.tree import compaction_summary_text

        tok = tokenizer or Tokenizer("exact" if self.token_method == "exact" else "estimate")
        return tok.count_text(compaction_summary_text(summary)) + self.kept_tokens


def _truncate_request(text: str) -> str:
    if len(text) <= LATEST_REQUEST_MAX:
        return text
    return text[:379] + _LATEST_REQUEST_MARKER + text[-380:]


def _latest_user_text(context: Sequence[Mapping[str, Any]]) -> str | None:
    for item in reversed(context):
        message = project_entry(item)
        if role_of(message) == "user":
            text = text_of(message).strip()
            if text:
                return _truncate_request(text)
    return None


def prepare_compaction(
    branch_entries: Sequence[Mapping[str, Any]],
    keep_recent_tokens: int | None = None,
    count: Tokenizer | Count | None = None,
    hard_checkpoint: bool = False,
    *,
    exact_context_chars: int | None = EXACT_CONTEXT_CHARS,
    exact_min_tokens: int = 0,
) -> CompactionPlan:
    """§4.6 over the active branch (root first). `keep_recent_tokens=None` means the default
    20000; `hard_checkpoint=True` summarises everything (D16: manual compaction without an
    explicit keepRecentTokens). Never raises for "nothing to do": see `plan.status`.

    An exact tokenizer counts `tokens_before` exactly for the newest `exact_context_chars` of
    context (None: all of it) and on until the exact part exceeds `exact_min_tokens` (a threshold
    decision); the cut point, the kept tail and `tokens_after` are always exact."""
    entries = [e for e in branch_entries if isinstance(e, Mapping)]
    counter: Tokenizer | Count = count if count is not None else Tokenizer("estimate")
    keep = keep_recent_tokens if keep_recent_tokens and keep_recent_tokens > 0 else DEFAULT_KEEP_RECENT_TOKENS
    method = getattr(counter, "method", "estimate")
    leaf_id = entries[-1].get("id") if entries else None
    plan = CompactionPlan(
        status=NOTHING_TO_COMPACT,
        reason="nothing compactable in this session yet",
        hard_checkpoint=hard_checkpoint,
        keep_recent_tokens=None if hard_checkpoint else keep,
        token_method=method,
        leaf_id=leaf_id if isinstance(leaf_id, str) else None,
    )
    if not entries:
        return plan
    if entries[-1].get("type") == "compaction":  # step 1
        plan.status, plan.reason = ALREADY_COMPACTED, "session is already compacted"
        return plan
    if is_boundary_entry(entries[-1]):  # a reset at the tail: nothing after it yet
        return plan

    boundary = -1  # step 2
    for i in range(len(entries) - 1, -1, -1):
        if is_boundary_entry(entries[i]):
            boundary = i
            break
    ops = FileOps()
    start = 0
    kept_start = 0
    if boundary >= 0:
        b_entry = entries[boundary]
        start = kept_start = boundary + 1
        first_kept = b_entry.get("firstKeptEntryId")
        if isinstance(first_kept, str) and first_kept:
            for i in range(boundary - 1, -1, -1):
                if entries[i].get("id") == first_kept:
                    start = kept_start = i
                    break
        if b_entry.get("type") == "compaction":
            summary = b_entry.get("summary")
            plan.previous_summary = summary if isinstance(summary, str) and summary.strip() else None
            plan.previous_compaction_id = b_entry.get("id") if isinstance(b_entry.get("id"), str) else None
            if b_entry.get("fromHook") is not True:
                ops.merge_details(b_entry.get("details"))
    plan.start_index = start

    # step 3: the rebuilt current context (R4.8.2) and its size; usage before the boundary is stale
    if boundary >= 0:
        context = [entries[boundary], *entries[kept_start:boundary], *entries[boundary + 1 :]]
        usage_from = 1 + (boundary - kept_start)
    else:
        context, usage_from = entries, 0
    plan.tokens_before = context_tokens(
        context,
        counter,
        usage_from=usage_from,
        exact_chars=exact_context_chars,
        exact_min_tokens=exact_min_tokens,
    )
    plan.latest_user_request = _latest_user_text(context)

    end = len(entries)
    if hard_checkpoint:
        cut = CutPoint(end)
        history_end = end
    else:
        cut = find_cut_point(entries, start, end, keep, counter)
        history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
        first = entries[cut.first_kept_index] if cut.first_kept_index < end else None
        ident = first.get("id") if first is not None else None
        if first is not None and not (isinstance(ident, str) and ident.strip()):  # step 4
            raise InvalidDataError(
                "First kept entry has no UUID - session may need migration", type="invalid_session"
            )
        plan.first_kept_entry_id = ident
    plan.first_kept_index = None if hard_checkpoint else cut.first_kept_index
    plan.turn_start_index = cut.turn_start_index
    plan.is_split_turn = cut.is_split_turn

    for i in range(start, history_end):  # step 5
        entry = entries[i]
        if is_boundary_entry(entry):
            continue
        message = project_entry(entry)
        if message is not None:
            plan.entries_to_summarize.append(entry)
            plan.messages_to_summarize.append(message)
            ops.add_message(message)
    if cut.is_split_turn:  # step 6
        for i in range(cut.turn_start_index, cut.first_kept_index):
            message = project_entry(entries[i])
            if message is not None:
                plan.turn_prefix_entries.append(entries[i])
                plan.turn_prefix_messages.append(message)
                ops.add_message(message)
    if not plan.messages_to_summarize and not plan.turn_prefix_messages:  # step 7
        plan.first_kept_entry_id = None
        return plan

    if not hard_checkpoint:
        for i in range(cut.first_kept_index, end):
            entry = entries[i]
            if project_entry(entry) is not None:
                plan.kept_entries.append(entry)
                plan.kept_tokens += counter(entry)
    plan.read_files, plan.modified_files = ops.lists()  # step 8
    plan.status, plan.reason = STATUS_READY, None
    return plan
