"""Staged-summarisation helpers (§4.10): adaptive chunk ratio, token-share split that never
separates a tool call from its results (R4.10.6, profile L's pending-tool-block algorithm), fixed
size chunks (R4.10.5) and history pruning for a context share (R4.10.7).

All functions take projected *messages* and a `count(message) -> int` (default: chars/4 estimate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.compaction.messages import is_aborted, role_of, tool_call_ids, tool_result_id
from openclaw_cli.compaction.tokens import estimate_message_tokens

BASE_CHUNK_RATIO = 0.4
MIN_CHUNK_RATIO = 0.15
SAFETY_MARGIN = 1.2
SUMMARIZATION_OVERHEAD_TOKENS = 4096
DEFAULT_PARTS = 2
MIN_MESSAGES_FOR_SPLIT = 4

Message = Mapping[str, Any]
Count = Callable[[Message], int]


def compute_adaptive_chunk_ratio(
    messages: Sequence[Message], context_window: int, count: Count = estimate_message_tokens
) -> float:
    """R4.10.2: shrink the chunk ratio when the average message is a large share of the window."""
    if not messages or context_window <= 0:
        return BASE_CHUNK_RATIO
    average = sum(count(m) for m in messages) / len(messages) * SAFETY_MARGIN / context_window
    if average > 0.1:
        return max(MIN_CHUNK_RATIO, BASE_CHUNK_RATIO - min(2 * average, 0.25))
    return BASE_CHUNK_RATIO


def max_chunk_tokens(context_window: int, ratio: float) -> int:
    """R4.9 step 8: `max(1, floor(W * ratio) - 4096)`."""
    return max(1, math.floor(context_window * ratio) - SUMMARIZATION_OVERHEAD_TOKENS)


def split_messages_by_token_share(
    messages: Sequence[Message], parts: int = DEFAULT_PARTS, count: Count = estimate_message_tokens
) -> list[list[Message]]:
    """R4.10.6: up to `parts` chunks of about equal tokens; an assistant message with tool calls
    and its results always share a chunk (aborted/errored calls never hold a split open).
    `sum(chunks, []) == list(messages)`."""
    if not messages:
        return []
    if parts <= 1:
        return [list(messages)]
    tokens = [count(m) for m in messages]
    target = sum(tokens) / parts
    chunks: list[list[Message]] = []
    current: list[Message] = []
    current_tokens = 0
    current_counts: list[int] = []
    pending: set[str] = set()
    pending_at = -1  # position of the pending assistant inside `current`

    def split_at(index: int) -> None:
        nonlocal current, current_tokens, current_counts
        chunks.append(current[:index])
        current, current_counts = current[index:], current_counts[index:]
        current_tokens = sum(current_counts)

    for message, t in zip(messages, tokens, strict=True):
        if not pending and len(chunks) < parts - 1 and current and current_tokens + t > target:
            chunks.append(current)
            current, current_counts, current_tokens = [], [], 0
        current.append(message)
        current_counts.append(t)
        current_tokens += t
        role = role_of(message)
        if role == "assistant":
            ids = tool_call_ids(message)
            if ids and not is_aborted(message):
                pending, pending_at = set(ids), len(current) - 1
            else:
                pending, pending_at = set(), -1
        elif role == "toolResult" and pending:
            ident = tool_result_id(message)
            if ident is None:
                pending.clear()
            else:
                pending.discard(ident)
            if not pending:
                if len(chunks) < parts - 1 and current_tokens > target and pending_at > 0:
                    split_at(pending_at)
                pending_at = -1
    if pending and len(chunks) < parts - 1 and current_tokens > target and pending_at > 0:
        split_at(pending_at)
    if current:
        chunks.append(current)
    return chunks


def chunk_messages_by_max_tokens(
    messages: Sequence[Message], max_tokens: int, count: Count = estimate_message_tokens
) -> list[list[Message]]:
    """R4.10.5: consecutive chunks of at most `max(1, floor(max_tokens / 1.2))` tokens (a single
    larger message forms its own chunk)."""
    limit = max(1, math.floor(max_tokens / SAFETY_MARGIN))
    chunks: list[list[Message]] = []
    current: list[Message] = []
    used = 0
    for message in messages:
        t = count(message)
        if current and used + t > limit:
            chunks.append(current)
            current, used = [], 0
        current.append(message)
        used += t
    if current:
        chunks.append(current)
    return chunks


def repair_tool_pairing(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """Drop tool results whose call is not earlier in the list; returns (kept, dropped)."""
    calls: set[str] = set()
    kept: list[Message] = []
    dropped: list[Message] = []
    for message in messages:
        role = role_of(message)
        if role == "assistant":
            calls.update(tool_call_ids(message))
        elif role == "toolResult":
            ident = tool_result_id(message)
            if ident is not None and ident not in calls:
                dropped.append(message)
                continue
        kept.append(message)
    return kept, dropped


@dataclass
class PruneResult:
    messages: list[Message]
    dropped_messages_list: list[Message] = field(default_factory=list)
    dropped_chunks: int = 0
    dropped_messages: int = 0
    dropped_tokens: int = 0
    kept_tokens: int = 0
    budget_tokens: int = 0


def prune_history_for_context_share(
    messages: Sequence[Message],
    max_context_tokens: int,
    max_history_share: float = 0.5,
    parts: int = DEFAULT_PARTS,
    count: Count = estimate_message_tokens,
) -> PruneResult:
    """R4.10.7: drop the oldest token-share chunk while the history exceeds
    `max(1, floor(maxContextTokens * share))`, repairing tool pairing after each drop."""
    budget = max(1, math.floor(max_context_tokens * max_history_share))
    kept = list(messages)
    dropped: list[Message] = []
    dropped_chunks = 0
    kept_tokens = sum(count(m) for m in kept)
    while kept and kept_tokens > budget:
        chunks = split_messages_by_token_share(kept, parts, count)
        if len(chunks) < 2:
            break
        rest = [m for chunk in chunks[1:] for m in chunk]
        repaired, orphans = repair_tool_pairing(rest)
        dropped.extend(chunks[0])
        dropped.extend(orphans)
        dropped_chunks += 1
        kept = repaired
        kept_tokens = sum(count(m) for m in kept)
    if dropped_chunks > 1:  # orphans of one round may precede the next round's first chunk
        position = {id(m): i for i, m in enumerate(messages)}
        dropped.sort(key=lambda m: position[id(m)])
    return PruneResult(
        messages=kept,
        dropped_messages_list=dropped,
        dropped_chunks=dropped_chunks,
        dropped_messages=len(dropped),
        dropped_tokens=sum(count(m) for m in dropped),
        kept_tokens=kept_tokens,
        budget_tokens=budget,
    )
