"""Operator forks, planned (compaction-lifecycle.md §3.7–§3.8; spec D1): which lines of the
parent's active branch a child session starts with, and how large the parent is. Pure: the
store's `fork_session` reads the parent and writes the child.

* Parent size (R3.7.3): max(the row's usable `totalTokens`, a transcript estimate). The estimate
  walks the context part of the branch (after the latest compaction/reset boundary, plus its
  kept tail): the latest assistant usage total plus ceil(bytes/4) of the lines after it; with
  no usage, ceil(all bytes/4).
* Above the fixed 100K cap the child starts isolated (its header only), as automatic forks do
  (R3.7.4); otherwise it gets the branch, root first. Lines are copied byte-exact; a line whose
  `parentId` is not the previously copied entry (a boundary prepended to the branch, a re-attached
  entry) is rewritten with that parent, so the child is one plain chain whose active branch is
  exactly the copied entries.
* `through_last_completed` (`forkFrom: "last-completed"`) stops after the last assistant
  message that finished (not aborted, no error).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.store.base import TranscriptLine


@dataclass
class ForkPlan:
    lines: list[str]  # the child transcript, header first
    parent_tokens: int
    max_tokens: int
    isolated: bool
    copied_entries: int
    warning: str | None = None
    editor_text: str | None = None  # a fork at a user message: that message's text (`message_cut`)


def _usage_total(message: Mapping[str, Any]) -> int:
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return 0
    total = usage.get("totalTokens")
    if isinstance(total, int | float) and not isinstance(total, bool) and total > 0:
        return int(total)
    out = 0
    for name in ("input", "output", "cacheRead", "cacheWrite"):
        value = usage.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            out += int(value)
    return out


def _assistant(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not isinstance(obj, Mapping) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    return message if isinstance(message, Mapping) and message.get("role") == "assistant" else None


def _line_bytes(line: TranscriptLine) -> int:
    return len(line.raw.encode("utf-8"))


def transcript_tokens(branch: Sequence[TranscriptLine]) -> int:
    """R3.7.3's transcript estimate of a branch (see the module docstring)."""
    from openclaw_cli.store.tree import context_entries

    boundary, kept = context_entries(list(branch))
    lines = ([boundary] if boundary is not None else []) + kept
    anchor = None
    usage = 0
    for index in range(len(lines) - 1, -1, -1):
        message = _assistant(lines[index].obj)
        if message is not None:
            total = _usage_total(message)
            if total > 0 and message.get("stopReason") not in ("aborted", "error"):
                anchor, usage = index, total
                break
    if anchor is None:
        return math.ceil(sum(_line_bytes(line) for line in lines) / 4)
    return usage + math.ceil(sum(_line_bytes(line) for line in lines[anchor + 1 :]) / 4)


def row_tokens(entry: Mapping[str, Any]) -> int:
    """The row's `totalTokens` when usable (profile L: unless `totalTokensFresh === false`)."""
    total = entry.get("totalTokens")
    if isinstance(total, bool) or not isinstance(total, int | float) or total != total or total < 0:
        return 0
    if entry.get("totalTokensFresh") is False or total == float("inf"):
        return 0
    return int(total)


def _completed_prefix(branch: list[TranscriptLine]) -> list[TranscriptLine]:
    for index in range(len(branch) - 1, -1, -1):
        message = _assistant(branch[index].obj)
        if (
            message is not None
            and message.get("stopReason") not in ("aborted", "error")
            and not message.get("errorMessage")
        ):
            return branch[: index + 1]
    return []


def plan_fork(
    parent_entry: Mapping[str, Any],
    header: Mapping[str, Any] | None,
    branch: Sequence[TranscriptLine],
    *,
    child_session_id: str,
    timestamp: str,
    cwd: str,
    parent_ref: str | None,
    max_tokens: int,
    through_last_completed: bool = False,
    at_entry: str | None = None,
    all_lines: Sequence[TranscriptLine] = (),
) -> ForkPlan:
    """The child's transcript lines for forking `branch` (the parent's active branch); with
    `at_entry`, OpenClaw's fork at that user message of `all_lines` (the whole transcript) instead
    (`message_cut.plan_cut`: no size cap, no `parentSession`)."""
    if at_entry is not None:
        from openclaw_cli.store.message_cut import plan_cut

        cut = plan_cut(
            list(all_lines), at_entry, child_session_id=child_session_id, timestamp=timestamp, cwd=cwd
        )
        return ForkPlan(cut.lines, 0, max_tokens, False, cut.copied_entries, editor_text=cut.editor_text)
    chosen = _completed_prefix(list(branch)) if through_last_completed else list(branch)
    parent_tokens = max(row_tokens(parent_entry), transcript_tokens(chosen))
    version = header.get("version") if isinstance(header, Mapping) else None
    head: dict[str, Any] = {
        "type": "session",
        "version": version if isinstance(version, int) and version >= 3 else 4,
        "id": child_session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_ref:
        head["parentSession"] = parent_ref
    lines = [dumps_compact(head)]
    if parent_tokens > max_tokens:
        warning = (
            f"Parent context is too large to fork ({parent_tokens}/{max_tokens} tokens); "
            "starting with isolated context instead."
        )
        return ForkPlan(lines, parent_tokens, max_tokens, True, 0, warning)
    previous: str | None = None
    copied = 0
    for line in chosen:
        obj = line.obj
        if obj is None:
            continue
        if obj.get("parentId", None) == previous and "parentId" in obj and obj.get("appendMode") is None:
            lines.append(line.raw)
        else:
            fixed = dict(obj)
            fixed["parentId"] = previous
            fixed.pop("appendMode", None)
            lines.append(dumps_compact(fixed))
        ident = obj.get("id")
        previous = ident if isinstance(ident, str) and ident.strip() else previous
        copied += 1
    return ForkPlan(lines, parent_tokens, max_tokens, False, copied)
