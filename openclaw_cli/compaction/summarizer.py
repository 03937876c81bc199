"""The built-in summariser (spec D8): offline, deterministic, extractive, linear in its input.

It fills the default-mode headings (R4.7.4) or, in safeguard mode, the five headings of R4.12.3,
and keeps the identifiers of the compacted part in `## Critical Context` / `## Exact identifiers`:

- identifiers from USER messages are always kept, in every later round too (tagged
  `User-provided identifiers:` so a later round can tell them apart);
- identifiers of this round from assistant text, tool calls (arguments and call ids) and tool
  output are kept up to `SummaryBudget.round_identifier_chars` (conversation first, tool-call ids,
  then tool output; the most recently mentioned first; a line says how many were left out);
- identifiers carried from a previous summary are kept up to `carry_identifier_chars` (newest).

Linear, and bounded by the summary's size rather than the transcript's: texts are scanned newest
first and only until each budget is full (tool output: at most `tool_scan_chars`), so when older
text was never scanned the omitted count is a lower bound ("at least N").

A previous summary is re-distilled, not nested: its sections are parsed (ours, OpenClaw's LLM
format, the safeguard format, or free text), merged with the new items, de-duplicated and capped
per section, so repeated compaction stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.compaction.identifiers import ask_keywords, iter_identifiers, scan_identifiers
from openclaw_cli.compaction.messages import content_blocks, is_runtime_context, role_of, text_of
from openclaw_cli.jsonutil import dumps_compact

NO_PRIOR_HISTORY = "No prior history."
TURN_CONTEXT_DIVIDER = "\n\n---\n\n**Turn Context (split turn):**\n\n"
USER_IDS_LABEL = "User-provided identifiers:"
OTHER_IDS_LABEL = "Identifiers:"
SPLIT_TURN_MAX_CHARS = 8000
FILE_LIST_MAX_CHARS = 900

DEFAULT_HEADINGS = ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                    "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context")


@dataclass(frozen=True)
class SummaryBudget:
    """Caps that keep repeated compaction bounded (user identifiers are never capped)."""

    item_chars: int = 200
    goal_items: int = 2
    constraint_items: int = 8
    done_items: int = 10
    progress_items: int = 4
    blocked_items: int = 5
    decision_items: int = 8
    next_items: int = 6
    note_items: int = 6
    user_identifier_chars: int = 32000  # a safety cap: a summary must still fit the context window
    round_identifier_chars: int = 24000
    carry_identifier_chars: int = 4000
    prose_scan_chars: int = 4000  # per message: prose cues are looked for in its head only
    prose_scan_total_chars: int = 400_000  # per role, newest messages first (keeps extraction O(1) in size)
    tool_scan_chars: int = 8_000_000  # tool output scanned for identifiers, newest first (lowest priority)

    @classmethod
    def for_output_tokens(cls, max_output_tokens: int | None) -> SummaryBudget:
        """Scale the identifier budgets to the summary size allowed (R4.7.7 `maxTokens`; the default
        16000 gives about the class defaults). Identifiers take about 2.5-3 characters per token."""
        if not max_output_tokens or max_output_tokens <= 0:
            return cls()
        chars = max_output_tokens * 5 // 2
        return cls(user_identifier_chars=max(4000, chars * 2 // 3), round_identifier_chars=max(3000, chars // 2),
                   carry_identifier_chars=max(1000, chars // 10))


# -- cue patterns (prose extraction) ------------------------------------------------------------
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should(?:n't)?|prefer|avoid|only|without|make sure|"
    r"ensure|required?|no more than|at most|at least|keep|not allowed|forbidden)\b", re.I)
_DONE = re.compile(
    r"\b(?:done|completed?|fixed|created|added|updated|implemented|wrote|written|removed|deleted|renamed|"
    r"merged|passed|passing|succeeded|finished|resolved|installed|configured|deployed|refactored|moved)\b", re.I)
_DECISION = re.compile(
    r"\b(?:decided|decision|chose|choose|chosen|going with|will use|we'll use|use \w+ instead|instead of|"
    r"switch(?:ed)? to|opted|settled on|agreed|rather than|trade-?off)\b", re.I)
_NEXT = re.compile(
    r"\b(?:next|todo|to-do|then i'll|i'll then|follow[- ]up|remaining|still need|needs? to|plan to|"
    r"will (?:add|write|run|fix|update|check)|afterwards)\b", re.I)
_BLOCKED = re.compile(
    r"\b(?:blocked|cannot|can't|unable|failed|failing|fails|error|exception|denied|timed? ?out|"
    r"not found|missing)\b", re.I)
_BLOCKED_STRONG = re.compile(r"\b(?:blocked|cannot|can't|couldn't|unable|failed to|still fail\w*|denied|timed? ?out)\b",
                             re.I)
_PROGRESS = re.compile(r"\b(?:working on|in progress|currently|now (?:i'm|i am)|let me|starting)\b", re.I)
_CUES = (("decisions", _DECISION), ("next_steps", _NEXT), ("blocked", _BLOCKED_STRONG), ("done", _DONE),
         ("blocked", _BLOCKED), ("in_progress", _PROGRESS))  # the first that matches files a sentence
_ANY_CUE = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in _CUES), re.I)  # prefilter
# The cue patterns are lower-case: on ASCII text, lower-casing first and matching without re.I finds
# exactly the same matches about 3x faster (re.I is what makes these alternations slow).
_ANY_CUE_LOWER = re.compile(_ANY_CUE.pattern)
_CONSTRAINT_LOWER = re.compile(_CONSTRAINT.pattern)
_CUES_LOWER = tuple((key, re.compile(pattern.pattern)) for key, pattern in _CUES)
_FOCUS_WORD = re.compile(r"[\w'-]+")
_NONE_ITEMS = frozenset({"(none)", "none", "none.", "none captured.", "no prior history.", "n/a", "-"})
_BULLET = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
_DECISION_PREFIX = re.compile(r"^\*\*([^*]{1,80})\*\*:\s*")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
_TAG_BLOCK = re.compile(r"<(read-files|modified-files|workspace-critical-rules)>.*?</\1>", re.S)
_MARKERS = re.compile(r"\[(?:Compaction summary truncated to fit budget|Earlier compaction context truncated to "
                      r"fit budget|Earlier preserved messages truncated)\]")
_WS = re.compile(r"\s+")


def _clip(text: str, limit: int) -> str:
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _norm(item: str) -> str:
    return _WS.sub(" ", item).strip().lower().rstrip(".")


@dataclass
class Digest:
    """The structured content of a summary, independent of its rendering."""

    goal: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    user_ids: list[str] = field(default_factory=list)
    other_ids: list[str] = field(default_factory=list)
    omitted_ids: int = 0
    omitted_more: bool = False  # older texts were not scanned: `omitted_ids` is a lower bound


# -- parsing a previous summary (re-distillation input) ------------------------------------------
_SECTION_MAP = {
    "goal": "goal", "original goal": "goal",
    "constraints & preferences": "constraints", "constraints/rules": "constraints", "constraints": "constraints",
    "constraints and preferences": "constraints", "rules": "constraints",
    "progress": "done", "done": "done", "early progress": "done", "completed": "done",
    "in progress": "in_progress", "pending user asks": "in_progress", "original request": "in_progress",
    "blocked": "blocked", "tool failures": "blocked",
    "key decisions": "decisions", "decisions": "decisions",
    "next steps": "next_steps", "open todos": "next_steps", "todos": "next_steps",
    "critical context": "notes", "exact identifiers": "notes", "context for suffix": "notes",
    "recent turns preserved verbatim": None,
}
_ITEM_PREFIXES = (("Completed:", "done"), ("Blocked:", "blocked"), ("Original goal:", "goal"),
                  ("Next:", "next_steps"), ("In progress:", "in_progress"))


def parse_summary(text: str | None) -> Digest:
    """Parse a previous compaction summary into a Digest (lenient: any markdown or plain text)."""
    digest = Digest()
    if not text or not text.strip():
        return digest
    body = _MARKERS.sub("", _TAG_BLOCK.sub("", text)).replace("**Turn Context (split turn):**", "")
    section: str | None = "notes"
    for raw_line in body.splitlines():
        line = raw_line.strip()
        if not line or line == "---":
            continue
        heading = _HEADING.match(line)
        if heading:
            section = _SECTION_MAP.get(heading.group(2).strip().lower(), "notes")
            continue
        if section is None:
            continue
        item = _BULLET.sub("", line)
        if item.startswith(USER_IDS_LABEL):
            digest.user_ids.extend(_BACKTICKED.findall(item))
            continue
        if item.startswith(OTHER_IDS_LABEL):
            digest.other_ids.extend(_BACKTICKED.findall(item))
            continue
        if item.startswith("…and ") and "identifiers" in item:
            continue
        item = _DECISION_PREFIX.sub(lambda m: "" if m.group(1) == "Decision" else f"{m.group(1)}: ", item).strip()
        if not item or item.lower() in _NONE_ITEMS:
            continue
        target = section
        for prefix, name in _ITEM_PREFIXES:
            if item.startswith(prefix):
                item, target = item[len(prefix):].strip(), name
                break
        getattr(digest, target).append(item)
    # identifiers written anywhere else (prose, foreign formats, file lists) are carried too
    known = set(digest.user_ids)
    extra = [i.value for i in scan_identifiers(text) if i.value not in known]
    digest.other_ids = list(dict.fromkeys([*digest.other_ids, *extra]))
    return digest


# -- extraction from messages --------------------------------------------------------------------
# Work is bounded by what the summary can hold: one cheap forward pass collects what needs every
# message (tool-call counts and ids); texts are then read newest-first and only until the section
# caps and identifier budgets are full, so a 50 MB transcript costs about what its newest part does.
@dataclass
class _Collected:
    messages: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # (role, message)
    call_ids: list[str] = field(default_factory=list)
    tool_counts: dict[str, int] = field(default_factory=dict)

    def newest(self, *roles: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for role, message in reversed(self.messages):
            if role in roles:
                yield role, message

    def user_texts(self) -> Iterator[str]:
        """Non-blank user texts, newest first."""
        for _, message in self.newest("user"):
            text = text_of(message)
            if text.strip():
                yield text

    def assistant_texts(self) -> Iterator[str]:
        for _, message in self.newest("assistant"):
            text = text_of(message)
            if text.strip():
                yield text

    def conversation_texts(self) -> Iterator[str]:
        """Assistant text, thinking and tool-call arguments, bash commands, custom messages and
        summaries: newest first (the pieces of one message last first)."""
        for role, message in reversed(self.messages):
            if role in ("user", "toolResult"):
                continue
            if role == "assistant":
                pieces = [text_of(message)]
                for block in content_blocks(message):
                    if type(block) is not dict and not isinstance(block, Mapping):
                        continue
                    kind = block.get("type")
                    if kind == "thinking" and isinstance(block.get("thinking"), str):
                        pieces.append(block["thinking"])
                    elif kind == "toolCall":
                        args = block.get("arguments")
                        if args:
                            pieces.append(args if isinstance(args, str) else dumps_compact(args))
                yield from reversed(pieces)
            elif role == "bashExecution":
                command = message.get("command")
                if isinstance(command, str):
                    yield command
            else:  # custom, branchSummary, compactionSummary
                yield text_of(message)

    def tool_texts(self) -> Iterator[str]:
        """Tool output (tool results, bash output), newest first."""
        for role, message in self.newest("toolResult", "bashExecution"):
            if role == "toolResult":
                yield text_of(message)
            elif isinstance(message.get("output"), str):
                yield message["output"]

    def errors(self, limit: int) -> list[str]:
        """The last `limit` failed tool calls and bash commands, oldest first."""
        out: list[str] = []
        for role, message in self.newest("toolResult", "bashExecution"):
            if len(out) >= limit:
                break
            if role == "toolResult":
                if message.get("isError") is True:
                    name = message.get("toolName") if isinstance(message.get("toolName"), str) else "tool"
                    text = text_of(message)
                    first = next((ln for ln in text.splitlines() if ln.strip()), "failed (no output)")
                    out.append(f"`{name}` failed: {first}")
            else:
                exit_code = message.get("exitCode")
                if isinstance(exit_code, int) and exit_code != 0:
                    out.append(f"`{message.get('command')}` exited with code {exit_code}")
        return out[::-1]


def _collect(messages: Iterable[Mapping[str, Any]]) -> _Collected:
    c = _Collected()
    keep = c.messages.append
    for message in messages:
        role = role_of(message)
        if role is None or (role == "custom" and is_runtime_context(message)):
            continue
        keep((role, message))
        if role != "assistant":
            continue
        for block in content_blocks(message):
            if (type(block) is dict or isinstance(block, Mapping)) and block.get("type") == "toolCall":
                name = block.get("name") if isinstance(block.get("name"), str) else "tool"
                c.tool_counts[name] = c.tool_counts.get(name, 0) + 1
                if isinstance(block.get("id"), str) and block["id"]:
                    c.call_ids.append(block["id"])
    return c


def _has_cue(text: str, limit: int, lower: re.Pattern[str], folded: re.Pattern[str]) -> bool:
    """Whether the first `limit` chars of `text` contain a cue (no sentence of it can otherwise)."""
    head = text[:limit]
    return (lower.search(head.lower()) if head.isascii() else folded.search(head)) is not None


def _sentences(text: str, limit: int) -> list[str]:
    head = text[:limit]
    return [s.strip() for s in _SENTENCE_SPLIT.split(head) if len(s.strip()) > 3]


def _add(items: list[str], item: str, budget: SummaryBudget) -> None:
    items.append(_clip(item, budget.item_chars))


def _first_and_last_user(c: _Collected) -> tuple[str | None, str | None]:
    """The first and (when there are two or more) the last non-blank user text."""
    last_at = -1
    last: str | None = None
    for index in range(len(c.messages) - 1, -1, -1):
        role, message = c.messages[index]
        if role == "user":
            text = text_of(message)
            if text.strip():
                last_at, last = index, text
                break
    for index in range(last_at):
        role, message = c.messages[index]
        if role == "user":
            text = text_of(message)
            if text.strip():
                return text, last
    return last, None


def _extract_prose(c: _Collected, budget: SummaryBudget, focus: list[str]) -> Digest:
    d = Digest()
    scan = budget.prose_scan_chars
    first_user, last_user = _first_and_last_user(c)
    if first_user is not None:
        d.goal.append(_clip(first_user, budget.item_chars * 2))
    constraints: list[str] = []
    scanned = 0
    for text in c.user_texts():  # newest first, reversed back below
        if _has_cue(text, scan, _CONSTRAINT_LOWER, _CONSTRAINT):
            for sentence in reversed(_sentences(text, scan)):
                if _CONSTRAINT.search(sentence) and len(constraints) < budget.constraint_items:
                    _add(constraints, sentence, budget)
        scanned += min(len(text), scan)
        if len(constraints) >= budget.constraint_items or scanned >= budget.prose_scan_total_chars:
            break
    d.constraints = constraints[::-1]
    if last_user is not None:
        _add(d.in_progress, last_user, budget)
    focus_set = set(focus)
    caps = {"done": budget.done_items - 1, "decisions": budget.decision_items, "next_steps": budget.next_items,
            "blocked": budget.blocked_items, "in_progress": budget.progress_items,
            "notes": budget.note_items if focus_set else 0}
    found: dict[str, list[str]] = {k: [] for k in caps}
    scanned = 0
    for text in c.assistant_texts():
        if focus_set or _has_cue(text, scan, _ANY_CUE_LOWER, _ANY_CUE):
            for sentence in reversed(_sentences(text, scan)):
                lower = sentence.lower()
                if focus_set and len(found["notes"]) < caps["notes"] and focus_set & set(_FOCUS_WORD.findall(lower)):
                    _add(found["notes"], sentence, budget)
                if sentence.isascii():
                    sentence_cmp, cues = lower, _CUES_LOWER
                else:
                    sentence_cmp, cues = sentence, _CUES
                for key, pattern in cues:
                    if pattern.search(sentence_cmp):
                        if len(found[key]) < caps[key]:
                            _add(found[key], sentence, budget)
                        break
        scanned += min(len(text), scan)
        if scanned >= budget.prose_scan_total_chars or all(len(found[k]) >= caps[k] for k in caps):
            break
    d.decisions = found["decisions"][::-1]
    d.next_steps = found["next_steps"][::-1]
    d.done = found["done"][::-1]
    d.notes = found["notes"][::-1]
    d.in_progress = found["in_progress"][::-1] + d.in_progress
    d.blocked = [_clip(e, budget.item_chars) for e in c.errors(budget.blocked_items)] + found["blocked"][::-1]
    if c.tool_counts:
        counts = ", ".join(f"{name} ×{n}" for name, n in sorted(c.tool_counts.items(), key=lambda kv: -kv[1]))
        d.done.append(_clip(f"Tool calls: {counts}", budget.item_chars * 2))
    return d


_FIRST_CHUNK_CHARS = 16384  # identifier scans go newest-first in chunks that double up to 1M chars
_MAX_CHUNK_CHARS = 1 << 20


@dataclass
class _Picked:
    values: list[str]  # kept, oldest first
    seen: set[str]  # every identifier met (kept or not)
    omitted: int  # met but not kept
    complete: bool  # every text was scanned, so `omitted` is exact


def _pick_newest(texts: Iterator[str], *, conversational: bool, limit_chars: int, exclude: Collection[str],
                 max_scan_chars: int | None = None) -> _Picked:
    """The identifiers mentioned last in `texts` (newest first) whose rendering fits `limit_chars`;
    scanning stops once the budget is full (or after `max_scan_chars`)."""
    kept: list[str] = []
    seen: set[str] = set()
    state = {"used": 0, "omitted": 0, "full": limit_chars < 6}  # nothing shorter than "5%" + 4 fits
    if state["full"]:
        return _Picked([], seen, 0, False)

    def scan(chunk: list[str]) -> None:
        occurrences = [value for value, _ in iter_identifiers("\n".join(reversed(chunk)),
                                                              conversational=conversational)]
        for value in reversed(occurrences):  # newest mention first
            if value in seen or value in exclude:
                continue
            seen.add(value)
            cost = len(value) + 4
            if state["full"] or state["used"] + cost > limit_chars:
                state["full"] = True
                state["omitted"] += 1
                continue
            kept.append(value)
            state["used"] += cost

    chunk: list[str] = []
    size = scanned = 0
    target = _FIRST_CHUNK_CHARS
    complete = True
    for text in texts:
        if not text:
            continue
        chunk.append(text)
        size += len(text)
        if size >= target:
            scan(chunk)
            scanned += size
            chunk, size, target = [], 0, min(target * 2, _MAX_CHUNK_CHARS)
            if state["full"] or (max_scan_chars is not None and scanned >= max_scan_chars):
                complete = not any(texts)
                break
    if chunk:
        scan(chunk)
    return _Picked(kept[::-1], seen, state["omitted"], complete)


def _fit_newest(values: list[str], limit_chars: int) -> tuple[list[str], int]:
    """Keep the newest values (end of the list) whose rendering fits `limit_chars`."""
    kept: list[str] = []
    used = 0
    for value in reversed(values):
        cost = len(value) + 4
        if used + cost > limit_chars:
            break
        kept.append(value)
        used += cost
    return kept[::-1], len(values) - len(kept)


_HEXISH = re.compile(r"[0-9a-fA-F]{8,}")


def _fit_carried(values: list[str], limit_chars: int) -> tuple[list[str], int]:
    """Carried identifiers within budget: paths, URLs and other readable ids first (newest first),
    then opaque hex ids (tool-call ids, hashes) with what is left; original order kept."""
    readable = [v for v in values if not _HEXISH.search(v) or "/" in v]
    opaque = [v for v in values if _HEXISH.search(v) and "/" not in v]
    kept_readable, _ = _fit_newest(readable, limit_chars)
    used = sum(len(v) + 4 for v in kept_readable)
    kept_opaque, _ = _fit_newest(opaque, limit_chars - used)
    keep = set(kept_readable) | set(kept_opaque)
    kept = [v for v in values if v in keep]
    return kept, len(values) - len(kept)


_TOOL_COUNTS = re.compile(r"^Tool calls: (.+)$")
_TOOL_COUNT_ITEM = re.compile(r"^(.+?) ×(\d+)$")


def _merge_tool_counts(old: Digest, new: Digest, budget: SummaryBudget) -> None:
    """Fold the previous `Tool calls: name ×n, …` item into this round's one (keeps Done bounded)."""
    counts: dict[str, int] = {}
    for digest in (old, new):
        for item in [i for i in digest.done if _TOOL_COUNTS.match(i)]:
            digest.done.remove(item)
            for part in _TOOL_COUNTS.match(item).group(1).split(", "):  # type: ignore[union-attr]
                m = _TOOL_COUNT_ITEM.match(part.strip())
                if m:
                    counts[m.group(1)] = counts.get(m.group(1), 0) + int(m.group(2))
    if counts:
        text = ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        new.done.append(_clip(f"Tool calls: {text}", budget.item_chars * 2))


def _merge_items(old: list[str], new: list[str], cap: int, *, keep_oldest: bool = False) -> list[str]:
    seen: set[str] = set()
    merged: list[str] = []
    for item in [*old, *new]:
        key = _norm(item)
        if key and key not in seen:
            seen.add(key)
            merged.append(item)
    if len(merged) <= cap:
        return merged
    return merged[:cap] if keep_oldest else merged[-cap:]


def build_digest(messages: Sequence[Mapping[str, Any]], *, previous_summary: str | None = None,
                 custom_instructions: str | None = None, budget: SummaryBudget | None = None) -> Digest:
    """Extract this round's content and merge it with the re-distilled previous summary."""
    budget = budget or SummaryBudget()
    c = _collect(messages)
    new = _extract_prose(c, budget, ask_keywords(custom_instructions) if custom_instructions else [])
    old = parse_summary(previous_summary)
    _merge_tool_counts(old, new, budget)
    d = Digest(
        goal=(old.goal or new.goal)[:budget.goal_items],
        constraints=_merge_items(old.constraints, new.constraints, budget.constraint_items),
        done=_merge_items(old.done, new.done, budget.done_items),
        in_progress=_merge_items([i for i in old.in_progress if _norm(i) not in {_norm(x) for x in new.done}],
                                 new.in_progress, budget.progress_items),
        blocked=_merge_items(old.blocked, new.blocked, budget.blocked_items),
        decisions=_merge_items(old.decisions, new.decisions, budget.decision_items),
        next_steps=_merge_items(old.next_steps, new.next_steps, budget.next_items),
        notes=_merge_items(old.notes, new.notes, budget.note_items),
    )
    # identifiers: user ones always (newest first, then carried ones); this round's others within
    # budget (conversation, tool-call ids, tool output); carried ones within budget
    user = _pick_newest(c.user_texts(), conversational=True, limit_chars=budget.user_identifier_chars, exclude=())
    new_user = set(user.values)
    carried_user = [v for v in dict.fromkeys(old.user_ids) if v not in new_user]
    if user.omitted:  # the budget is full: every carried one is older than what was dropped
        old_kept, old_dropped = [], len(carried_user)
    else:
        old_kept, old_dropped = _fit_newest(carried_user, budget.user_identifier_chars
                                            - sum(len(v) + 4 for v in user.values))
    user_ids = [*old_kept, *user.values]
    user_set = set(user_ids)
    remaining = budget.round_identifier_chars
    conv = _pick_newest(c.conversation_texts(), conversational=True, limit_chars=remaining, exclude=user_set)
    remaining -= sum(len(v) + 4 for v in conv.values)
    calls_all = [i for i in dict.fromkeys(c.call_ids) if i not in user_set and i not in conv.seen]
    calls, calls_dropped = _fit_newest(calls_all, remaining) if remaining > 0 else ([], len(calls_all))
    remaining -= sum(len(v) + 4 for v in calls)
    tool = _pick_newest(c.tool_texts(), conversational=False, limit_chars=remaining,
                        exclude=user_set | conv.seen | set(calls_all), max_scan_chars=budget.tool_scan_chars)
    round_ids = [*conv.values, *calls, *tool.values]
    round_set = set(round_ids)
    carried = [i for i in old.other_ids if i not in user_set and i not in round_set]
    carried_kept, carried_dropped = _fit_carried(carried, budget.carry_identifier_chars)
    d.user_ids = user_ids
    d.other_ids = [*carried_kept, *round_ids]
    d.omitted_ids = user.omitted + old_dropped + conv.omitted + calls_dropped + tool.omitted + carried_dropped
    d.omitted_more = not (user.complete and conv.complete and tool.complete)
    return d


# -- rendering ----------------------------------------------------------------------------------
def _bullets(items: list[str], prefix: str = "- ") -> list[str]:
    return [f"{prefix}{item}" for item in items] if items else ["(none)"]


def _id_lines(d: Digest) -> list[str]:
    lines: list[str] = []
    if d.user_ids:
        lines.append(f"- {USER_IDS_LABEL} " + ", ".join(f"`{v}`" for v in d.user_ids))
    if d.other_ids:
        lines.append(f"- {OTHER_IDS_LABEL} " + ", ".join(f"`{v}`" for v in d.other_ids))
    if d.omitted_ids:
        least = "at least " if d.omitted_more else ""
        lines.append(f"- …and {least}{d.omitted_ids} more identifiers omitted (summary identifier budget)")
    return lines


def render_default(d: Digest) -> str:
    lines = ["## Goal", *(d.goal or ["(none)"]), "", "## Constraints & Preferences", *_bullets(d.constraints), "",
             "## Progress", "### Done", *_bullets(d.done, "- [x] "), "", "### In Progress",
             *_bullets(d.in_progress, "- [ ] "), "", "### Blocked", *_bullets(d.blocked), "", "## Key Decisions",
             *_bullets(d.decisions, "- **Decision**: "), "", "## Next Steps",
             *([f"{i}. {s}" for i, s in enumerate(d.next_steps, 1)] or ["(none)"]), "", "## Critical Context"]
    context = [f"- {n}" for n in d.notes] + _id_lines(d)
    lines.extend(context or ["(none)"])
    return "\n".join(lines)


def render_safeguard(d: Digest) -> str:
    decisions = [*d.decisions, *(f"Completed: {x}" for x in d.done)]
    todos = [*(f"In progress: {x}" for x in d.in_progress[:-1]), *d.next_steps,
             *(f"Blocked: {x}" for x in d.blocked)]
    asks = [*d.in_progress[-1:], *(f"Original goal: {g}" for g in d.goal)]
    lines = ["## Decisions", *(_bullets(decisions) if decisions else ["None."]), "", "## Open TODOs",
             *(_bullets(todos) if todos else ["None."]), "", "## Constraints/Rules",
             *(_bullets(d.constraints) if d.constraints else ["None."]), "", "## Pending user asks",
             *(_bullets(asks) if asks else ["None."]), "", "## Exact identifiers"]
    context = [f"- {n}" for n in d.notes] + _id_lines(d)
    lines.extend(context or ["None captured."])
    return "\n".join(lines)


def summarize_turn_prefix(messages: Sequence[Mapping[str, Any]], *, budget: SummaryBudget | None = None,
                          demote: bool = False) -> str:
    """R4.7.6 headings for the prefix of a split turn (the retained suffix follows in context)."""
    budget = budget or SummaryBudget()
    d = build_digest(messages, budget=budget)
    h = "###" if demote else "##"
    request = d.goal[:1] or ["(none)"]
    progress = [*d.done, *d.decisions]
    lines = [f"{h} Original Request", *request, "", f"{h} Early Progress", *_bullets(progress), "",
             f"{h} Context for Suffix", *([*(f"- {x}" for x in d.blocked), *_id_lines(d)] or ["(none)"])]
    return "\n".join(lines)


def summarize(messages: Sequence[Mapping[str, Any]], *, previous_summary: str | None = None,
              turn_prefix_messages: Sequence[Mapping[str, Any]] = (), custom_instructions: str | None = None,
              mode: str = "default", budget: SummaryBudget | None = None) -> str:
    """The built-in summary of a compaction (history + split-turn context, R4.7.8 without the file
    lists, which `append_file_lists` adds for every provider)."""
    budget = budget or SummaryBudget()
    render = render_safeguard if mode == "safeguard" else render_default
    if messages or not turn_prefix_messages:
        history = render(build_digest(messages, previous_summary=previous_summary,
                                      custom_instructions=custom_instructions, budget=budget))
    elif previous_summary and previous_summary.strip():
        history = render(build_digest([], previous_summary=previous_summary, budget=budget))
    else:
        history = NO_PRIOR_HISTORY
    if turn_prefix_messages:
        prefix = summarize_turn_prefix(turn_prefix_messages, budget=budget, demote=mode == "safeguard")
        if mode == "safeguard" and len(prefix) > SPLIT_TURN_MAX_CHARS:
            prefix = prefix[:SPLIT_TURN_MAX_CHARS]
        history = history + TURN_CONTEXT_DIVIDER + prefix
    return history


def _cap_list(paths: list[str], limit: int = FILE_LIST_MAX_CHARS) -> list[str]:
    out: list[str] = []
    used = 0
    for index, path in enumerate(paths):
        if used + len(path) + 1 > limit and out:
            out.append(f"...and {len(paths) - index} more")
            break
        out.append(path)
        used += len(path) + 1
    return out


def append_file_lists(summary: str, read_files: Sequence[str] = (), modified_files: Sequence[str] = ()) -> str:
    """R4.7.8 file tags (each list capped at 900 chars with `...and N more`, as C does)."""
    if read_files:
        summary += "\n\n<read-files>\n" + "\n".join(_cap_list(list(read_files))) + "\n</read-files>"
    if modified_files:
        summary += "\n\n<modified-files>\n" + "\n".join(_cap_list(list(modified_files))) + "\n</modified-files>"
    return summary


def structured_fallback_summary(previous_summary: str | None) -> str:
    """§4.9 structured fallback (no real conversation): reuse a previous five-heading summary."""
    if previous_summary:
        positions = [previous_summary.find(h) for h in
                     ("## Decisions", "## Open TODOs", "## Constraints/Rules", "## Pending user asks",
                      "## Exact identifiers")]
        if all(p >= 0 for p in positions) and positions == sorted(positions):
            return previous_summary
    return "\n".join(["## Decisions", (previous_summary or NO_PRIOR_HISTORY).strip(), "", "## Open TODOs", "None.",
                      "", "## Constraints/Rules", "None.", "", "## Pending user asks", "None.", "",
                      "## Exact identifiers", "None captured."])
