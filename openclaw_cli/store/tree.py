"""Transcript tree, leaf and active branch (spec storage-migration.md §3.5) and the model context
rebuilt from the active branch (compaction-lifecycle.md R4.8.2).

Our own implementation of OpenClaw's rules:
* entries are scanned in file order; the header (`type:"session"`) and non-object lines are not
  tree nodes;
* an entry with a `parentId` property and a non-blank `id` is an explicit node; a canonical,
  non-`side` entry becomes the leaf; `side` entries join the tree without moving it;
* a `leaf` control moves the leaf to `targetId` (null ⇒ empty branch) and sets where the next
  append attaches (`appendParentId`, default `targetId`); a control naming an unknown id is
  invalid: it stays in the tree as a transparent marker and changes nothing;
* a canonical entry without `parentId` (v1 style) attaches to the current leaf;
* after a `reset`, a non-side canonical entry whose parent does not descend from that reset, and
  a canonical entry whose parent is unknown, are re-attached to the current leaf;
* leaf controls are never part of a path: children of a control hang from its target;
* every walk is cycle-safe; a cycle on the active path makes the branch invalid (empty);
* when no explicit node ever moved the leaf (pure v1 / header-less files), the active branch is
  every entry in file order.
Unknown entry types with `id` + `parentId` are opaque nodes: kept on paths, never interpreted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from openclaw_cli.store.base import TranscriptLine

CANONICAL_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "reset",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
BOUNDARY_TYPES = ("compaction", "reset")

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"  # R4.8.2: branch summaries use "the same <summary> wrapping"

_UNSET: Any = object()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _is_canonical(obj: dict[str, Any]) -> bool:
    return obj.get("type") in CANONICAL_TYPES


@dataclass
class TreeNode:
    id: str
    parent_id: str | None  # normalised (logical) parent
    raw_parent_id: str | None  # as written in the file
    line: TranscriptLine
    index: int  # position among the scanned entries
    side: bool = False
    leaf_control: bool = False
    invalid_control: bool = False


@dataclass
class TranscriptTree:
    entries: list[TranscriptLine]  # every non-header line, file order
    nodes: list[TreeNode] = field(default_factory=list)
    by_id: dict[str, TreeNode] = field(default_factory=dict)
    leaf_id: str | None = None
    append_parent_id: str | None = None
    has_leaf_control: bool = False
    has_leaf_update: bool = False
    has_explicit_leaf_update: bool = False
    has_invalid_leaf_control: bool = False

    def path_to(self, node_id: str | None) -> list[TreeNode] | None:
        """Root→node path without leaf controls; None on a cycle. A missing ancestor ends the
        walk (the reachable suffix is kept)."""
        if node_id is None:
            return []
        path: list[TreeNode] = []
        seen: set[str] = set()
        current: str | None = node_id
        while current is not None:
            if current in seen:
                return None
            seen.add(current)
            node = self.by_id.get(current)
            if node is None:
                break
            if not node.leaf_control:
                path.append(node)
            current = node.parent_id
        path.reverse()
        return path

    def contains(self, start: str | None, target: str) -> bool:
        """Does the ancestry of `start` (itself included) reach `target`? Cycle-safe."""
        seen: set[str] = set()
        current = start
        while current is not None and current not in seen:
            if current == target:
                return True
            seen.add(current)
            node = self.by_id.get(current)
            current = node.parent_id if node is not None else None
        return False

    def skip_controls(self, parent_id: str | None) -> str | None:
        """A parent that is a leaf control stands for the control's own target."""
        seen: set[str] = set()
        current = parent_id
        while current is not None:
            if current in seen:
                return current
            seen.add(current)
            node = self.by_id.get(current)
            if node is None or not node.leaf_control:
                return current
            current = node.parent_id
        return None


def _parse_leaf_control(obj: dict[str, Any]) -> tuple[str | None, str | None, bool] | None:
    """(targetId, appendParentId, side) of a well-formed `leaf` control, else None."""
    raw_target = obj.get("targetId", _UNSET)
    target = None if raw_target is None else _text(raw_target)
    if raw_target is not None and target is None:
        return None
    raw_append = obj.get("appendParentId", _UNSET)
    if raw_append is _UNSET:
        append = target
    elif raw_append is None:
        append = None
    else:
        append = _text(raw_append)
        if append is None:
            return None
    mode = obj.get("appendMode", _UNSET)
    if mode is not _UNSET and mode != "side":
        return None
    return target, append, mode == "side"


def scan_tree(lines: Iterable[TranscriptLine]) -> TranscriptTree:
    """Build the tree of a transcript's lines (header and non-object lines are skipped)."""
    entries = [ln for ln in lines if not (ln.obj is not None and ln.obj.get("type") == "session")]
    tree = TranscriptTree(entries=entries)
    leaf: str | None = None
    append_parent: str | None = None
    latest_reset: str | None = None
    invalid_controls: set[str] = set()

    def known(ref: str | None) -> bool:
        return ref is None or (ref in tree.by_id and ref not in invalid_controls)

    for index, line in enumerate(entries):
        obj = line.obj
        if obj is None:
            continue
        ident = _text(obj.get("id"))
        has_parent = "parentId" in obj
        raw_parent = obj.get("parentId") if has_parent else None
        parent_ok = raw_parent is None or _text(raw_parent) is not None
        canonical = _is_canonical(obj)
        side = obj.get("appendMode") == "side"
        explicit = ident is not None and has_parent and parent_ok

        if explicit and obj.get("type") == "leaf":
            control = _parse_leaf_control(obj)
            if control is None:
                continue  # malformed control: not a tree entry at all
            target, append, side = control
            if latest_reset is not None and leaf is not None and not tree.contains(target, latest_reset):
                target = append = leaf  # navigation may not jump back across a reset
            node = TreeNode(cast(str, ident), target, raw_parent, line, index, side=side, leaf_control=True)
            if not known(target) or not known(append):
                tree.has_invalid_leaf_control = True
                invalid_controls.add(cast(str, ident))
                node.parent_id = raw_parent
                node.invalid_control = True
                _add(tree, node)
                continue
            _add(tree, node)
            append_parent = append
            leaf = target
            tree.has_leaf_control = tree.has_leaf_update = tree.has_explicit_leaf_update = True
            continue

        if explicit:
            parent: str | None = raw_parent
        elif canonical and not has_parent and ident is not None:
            parent = leaf  # v1-style entry: continues the current branch
        else:
            continue  # no id / malformed parent: not a tree node (kept only in `entries`)

        if canonical:
            if latest_reset is not None and not side and not tree.contains(parent, latest_reset):
                parent = leaf
            elif (
                explicit and not side and parent is not None and parent not in tree.by_id and leaf is not None
            ):
                parent = leaf  # unknown parent: re-attach to the current leaf
            elif explicit and not side and parent == append_parent and leaf != append_parent:
                parent = leaf  # appended at the physical cursor, continues the visible leaf
            parent = tree.skip_controls(parent)

        node = TreeNode(
            cast(str, ident), parent, raw_parent, line, index, side=side
        )  # explicit or v1: has an id
        _add(tree, node)
        if obj.get("type") == "reset":
            latest_reset = ident
        append_parent = ident
        if canonical and not side:
            leaf = ident
            tree.has_leaf_update = True
            if explicit:
                tree.has_explicit_leaf_update = True
    tree.leaf_id = leaf
    tree.append_parent_id = append_parent
    return tree


def _add(tree: TranscriptTree, node: TreeNode) -> None:
    tree.nodes.append(node)
    tree.by_id[node.id] = node  # a repeated id: the later entry wins, as in OpenClaw


def active_branch(lines: Iterable[TranscriptLine]) -> list[TranscriptLine]:
    """The entries of the active branch, root first (header excluded).

    If a `compaction`/`reset` precedes the branch's root in the file but is not on it (a branch
    restarted after a boundary), it is prepended, so the context keeps that summary."""
    tree = scan_tree(lines)
    return branch_of(tree)


def branch_of(tree: TranscriptTree) -> list[TranscriptLine]:
    if not tree.has_explicit_leaf_update:
        return list(tree.entries)
    path = tree.path_to(tree.leaf_id)
    if path is None:
        return []  # cycle: the branch is invalid
    branch = [node.line for node in path]
    first_index = path[0].index if path else 0  # an empty branch stays empty
    for index in range(first_index - 1, -1, -1):
        obj = tree.entries[index].obj
        if obj is None or obj.get("type") not in BOUNDARY_TYPES:
            continue
        if obj.get("type") == "reset":
            reset_id, kept_id = _text(obj.get("id")), _text(obj.get("firstKeptEntryId"))
            if reset_id and kept_id:
                reset_path = tree.path_to(reset_id) or []
                ids = [node.id for node in reset_path]
                if kept_id in ids:
                    return [node.line for node in reset_path[ids.index(kept_id) :]] + branch
        return [tree.entries[index], *branch]
    return branch


# ---- context ------------------------------------------------------------------------------------


def _ts_ms(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def context_entries(branch: list[TranscriptLine]) -> tuple[TranscriptLine | None, list[TranscriptLine]]:
    """(boundary, kept entries) of R4.8.2: the last `compaction`/`reset` on the branch, then the
    entries from its `firstKeptEntryId` (only when that entry lies before the boundary) up to
    it, then everything after it. Without a boundary: (None, whole branch)."""
    boundary_at = None
    for i in range(len(branch) - 1, -1, -1):
        obj = branch[i].obj
        if obj is not None and obj.get("type") in BOUNDARY_TYPES:
            boundary_at = i
            break
    if boundary_at is None:
        return None, list(branch)
    boundary = branch[boundary_at]
    kept_start = boundary_at
    kept_id = _text(boundary.obj.get("firstKeptEntryId")) if boundary.obj else None
    if kept_id is not None:
        for i in range(boundary_at):
            obj = branch[i].obj
            if obj is not None and obj.get("id") == kept_id:
                kept_start = i
                break
    return boundary, branch[kept_start:boundary_at] + branch[boundary_at + 1 :]


def _user_text(text: str, timestamp: int | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": text}]}
    if timestamp is not None:
        msg["timestamp"] = timestamp
    return msg


def compaction_summary_text(summary: str) -> str:
    return f"{COMPACTION_SUMMARY_PREFIX}{summary}{SUMMARY_SUFFIX}"


def branch_summary_text(summary: str) -> str:
    return f"{BRANCH_SUMMARY_PREFIX}{summary}{SUMMARY_SUFFIX}"


def _bash_text(message: dict[str, Any]) -> str:
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(message.get("exitCode"), int) and message.get("exitCode") not in (0, None):
        text += f"\n\nCommand exited with code {message['exitCode']}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _as_content(content: Any) -> Any:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def entry_message(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The model message an entry contributes (None for entries that never enter context)."""
    kind = obj.get("type")
    if obj.get("excludeFromContext") is True:
        return None
    timestamp = _ts_ms(obj.get("timestamp"))
    if kind == "message":
        message = obj.get("message")
        if not isinstance(message, dict) or message.get("excludeFromContext") is True:
            return None
        role = message.get("role")
        ts = _ts_ms(message.get("timestamp"))
        if ts is None:
            ts = timestamp
        if role == "bashExecution":
            return _user_text(_bash_text(message), ts)
        if role in ("custom", "hookMessage"):
            out = {"role": "user", "content": _as_content(message.get("content", ""))}
            if ts is not None:
                out["timestamp"] = ts
            return out
        return message
    if kind == "custom_message":
        out = {"role": "user", "content": _as_content(obj.get("content", ""))}
        if timestamp is not None:
            out["timestamp"] = timestamp
        return out
    if kind == "branch_summary":
        summary = obj.get("summary")
        return _user_text(branch_summary_text(summary if isinstance(summary, str) else ""), timestamp)
    return None


def build_context(branch: list[TranscriptLine]) -> list[dict[str, Any]]:
    """Model context of an active branch (R4.8.2): the compaction summary as a user message, then
    the kept entries' messages. `reset` is a boundary without a summary."""
    boundary, kept = context_entries(branch)
    messages: list[dict[str, Any]] = []
    if boundary is not None and boundary.obj is not None and boundary.obj.get("type") == "compaction":
        summary = boundary.obj.get("summary")
        messages.append(
            _user_text(
                compaction_summary_text(summary if isinstance(summary, str) else ""),
                _ts_ms(boundary.obj.get("timestamp")),
            )
        )
    for line in kept:
        if line.obj is None:
            continue
        message = entry_message(line.obj)
        if message is not None:
            messages.append(message)
    return messages


def session_settings(branch: list[TranscriptLine]) -> dict[str, Any]:
    """Latest thinking level and model on the branch (`thinking_level_change`, `model_change`,
    else the last assistant message's provider/model)."""
    out: dict[str, Any] = {"thinkingLevel": None, "provider": None, "modelId": None}
    model_from_change = False
    for line in branch:
        obj = line.obj
        if obj is None:
            continue
        kind = obj.get("type")
        if kind == "thinking_level_change" and isinstance(obj.get("thinkingLevel"), str):
            out["thinkingLevel"] = obj["thinkingLevel"]
        elif kind == "model_change":
            out["provider"], out["modelId"] = obj.get("provider"), obj.get("modelId")
            model_from_change = True
        elif kind == "message" and isinstance(obj.get("message"), dict):
            message = obj["message"]
            if message.get("role") == "assistant" and isinstance(message.get("model"), str):
                out["provider"], out["modelId"] = message.get("provider"), message["model"]
                model_from_change = False
    out["source"] = "model_change" if model_from_change else ("assistant" if out["modelId"] else None)
    return out
