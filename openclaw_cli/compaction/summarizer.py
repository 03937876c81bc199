"""The built-in summariser (spec D8): offline, deterministic, extractive, linear in its input.

It fills the default-mode headings (R4.7.4) or, in safeguard mode, the five headings of R4.12.3,
and keeps the identifiers of the compacted part (every §4.13 class, `identifiers.py`) in
`## Critical Context` / `## Exact identifiers`:

- every identifier of the WHOLE compacted part is extracted (user text, assistant text / thinking /
  tool-call arguments, tool-call ids, tool output), de-duplicated, newest mention first;
- identifiers from USER messages are always kept, in every later round too (tagged
  `User-provided identifiers:` so a later round can tell them apart), up to a safety cap;
- the others of this round are kept up to `SummaryBudget.round_identifier_chars` (conversation
  first, then tool-call ids, then tool output; newest first within each), those carried from a
  previous summary up to `carry_identifier_chars`; when a cap bites the newest are kept, and
  `Digest.dropped_ids` lists every identifier left out (`compact --json` reports it as
  `identifiersDropped`; the summary says how many).

Prose (goal, constraints, decisions, ...) is bounded by the summary's size rather than the
transcript's: texts are read newest first and only until each section cap is full.

A previous summary is re-distilled, not nested: its sections are parsed (ours, OpenClaw's LLM
format, the safeguard format, or free text), merged with the new items, de-duplicated and capped
per section, so repeated compaction stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from openclaw_cli.compaction.identifiers import IdentifierScanner, ask_keywords, scan_identifiers
from openclaw_cli.compaction.messages import content_blocks, is_runtime_context, role_of, text_of
from openclaw_cli.compaction.shedding import SHED_KEY, ShedBlock, failure_line
from openclaw_cli.jsonutil import dumps_compact

NO_PRIOR_HISTORY = "No prior history."
TURN_CONTEXT_DIVIDER = "\n\n---\n\n**Turn Context (split turn):**\n\n"
USER_IDS_LABEL = "User-provided identifiers:"
OTHER_IDS_LABEL = "Identifiers:"
SPLIT_TURN_MAX_CHARS = 8000
SUMMARY_TRUNCATED_MARKER = "\n\n[Compaction summary truncated to fit budget]"
FILE_LIST_MAX_CHARS = 900

DEFAULT_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)


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

    @classmethod
    def for_output_tokens(cls, max_output_tokens: int | None) -> SummaryBudget:
        """Scale the identifier budgets to the summary size allowed (R4.7.7 `maxTokens`; the default
        16000 gives about the class defaults). Identifiers take about 2.5-3 characters per token."""
        if not max_output_tokens or max_output_tokens <= 0:
            return cls()
        chars = max_output_tokens * 5 // 2
        return cls(
            user_identifier_chars=max(4000, chars * 2 // 3),
            round_identifier_chars=max(3000, chars // 2),
            carry_identifier_chars=max(1000, chars // 10),
        )


# -- cue patterns (prose extraction) ------------------------------------------------------------
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|should(?:n't)?|prefer|avoid|only|without|make sure|"
    r"ensure|required?|no more than|at most|at least|keep|not allowed|forbidden)\b",
    re.I,
)
_DONE = re.compile(
    r"\b(?:done|completed?|fixed|created|added|updated|implemented|wrote|written|removed|deleted|renamed|"
    r"merged|passed|passing|succeeded|finished|resolved|installed|configured|deployed|refactored|moved)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decision|chose|choose|chosen|going with|will use|we'll use|use \w+ instead|instead of|"
    r"switch(?:ed)? to|opted|settled on|agreed|rather than|trade-?off)\b",
    re.I,
)
_NEXT = re.compile(
    r"\b(?:next|todo|to-do|then i'll|i'll then|follow[- ]up|remaining|still need|needs? to|plan to|"
    r"will (?:add|write|run|fix|update|check)|afterwards)\b",
    re.I,
)
_BLOCKED = re.compile(
    r"\b(?:blocked|cannot|can't|unable|failed|failing|fails|error|exception|denied|timed? ?out|"
    r"not found|missing)\b",
    re.I,
)
_BLOCKED_STRONG = re.compile(
    r"\b(?:blocked|cannot|can't|couldn't|unable|failed to|still fail\w*|denied|timed? ?out)\b", re.I
)
_PROGRESS = re.compile(r"\b(?:working on|in progress|currently|now (?:i'm|i am)|let me|starting)\b", re.I)
_CUES = (
    ("decisions", _DECISION),
    ("next_steps", _NEXT),
    ("blocked", _BLOCKED_STRONG),
    ("done", _DONE),
    ("blocked", _BLOCKED),
    ("in_progress", _PROGRESS),
)  # the first that matches files a sentence
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
_MARKERS = re.compile(
    r"\[(?:Compaction summary truncated to fit budget|Earlier compaction context truncated to "
    r"fit budget|Earlier preserved messages truncated)\]"
)
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
    dropped_ids: list[str] = field(default_factory=list)  # extracted (or carried) but over budget

    @property
    def omitted_ids(self) -> int:
        return len(self.dropped_ids)

    @property
    def kept_ids(self) -> list[str]:
        return [*self.user_ids, *self.other_ids]


# -- parsing a previous summary (re-distillation input) ------------------------------------------
_SECTION_MAP = {
    "goal": "goal",
    "original goal": "goal",
    "constraints & preferences": "constraints",
    "constraints/rules": "constraints",
    "constraints": "constraints",
    "constraints and preferences": "constraints",
    "rules": "constraints",
    "progress": "done",
    "done": "done",
    "early progress": "done",
    "completed": "done",
    "in progress": "in_progress",
    "pending user asks": "in_progress",
    "original request": "in_progress",
    "blocked": "blocked",
    "tool failures": "blocked",
    "key decisions": "decisions",
    "decisions": "decisions",
    "next steps": "next_steps",
    "open todos": "next_steps",
    "todos": "next_steps",
    "critical context": "notes",
    "exact identifiers": "notes",
    "context for suffix": "notes",
    "recent turns preserved verbatim": None,
}
_ITEM_PREFIXES = (
    ("Completed:", "done"),
    ("Blocked:", "blocked"),
    ("Original goal:", "goal"),
    ("Next:", "next_steps"),
    ("In progress:", "in_progress"),
)


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
        item = _DECISION_PREFIX.sub(
            lambda m: "" if m.group(1) == "Decision" else f"{m.group(1)}: ", item
        ).strip()
        if not item or item.lower() in _NONE_ITEMS:
            continue
        target = section
        for prefix, name in _ITEM_PREFIXES:
            if item.startswith(prefix):
                item, target = item[len(prefix) :].strip(), name
                break
        getattr(digest, target).append(item)
    # identifiers written anywhere else (prose, foreign formats, file lists) are carried too
    known = set(digest.user_ids)
    extra = [i.value for i in scan_identifiers(text) if i.value not in known]
    digest.other_ids = list(dict.fromkeys([*digest.other_ids, *extra]))
    return digest


# -- extraction from messages --------------------------------------------------------------------
# One forward pass collects the texts (references, no copies) and what needs every message (tool-call
# counts and ids). Identifiers are then extracted from all of it (`identifiers.py`: one C-level scan
# per source); prose is read newest first and only until the section caps are full.
@dataclass
class _Collected:
    """One pass over the messages: the texts each extraction needs, oldest first (read newest first)."""

    messages: list[Mapping[str, Any]] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)  # of `messages` (two lists: no tuple per message)
    call_ids: list[str] = field(default_factory=list)
    tool_counts: dict[str, int] = field(default_factory=dict)
    users: list[str] = field(default_factory=list)  # non-blank user texts
    assistants: list[str] = field(default_factory=list)  # non-blank assistant texts
    conversation: list[str] = field(default_factory=list)  # + thinking, custom messages, summaries
    arguments: list[str] = field(default_factory=list)  # tool-call arguments, bash commands
    # tool results, bash output; a block of shed tool results (`shedding.py`) stands for its texts
    tools: list[str | ShedBlock] = field(default_factory=list)

    def newest(self, *roles: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for role, message in zip(reversed(self.roles), reversed(self.messages), strict=True):
            if role in roles:
                yield role, message

    def user_texts(self) -> Iterator[str]:
        """Non-blank user texts, newest first."""
        return reversed(self.users)

    def assistant_texts(self) -> Iterator[str]:
        return reversed(self.assistants)

    def conversation_texts(self) -> Iterator[str]:
        """Assistant text and thinking, custom messages and summaries: newest first."""
        return reversed(self.conversation)

    def argument_texts(self) -> Iterator[str]:
        """Tool-call arguments and bash commands (structured, not prose): newest first."""
        return reversed(self.arguments)

    def tool_texts(self) -> Iterator[str | ShedBlock]:
        """Tool output (tool results, bash output; shed blocks), newest first."""
        return reversed(self.tools)

    def errors(self, limit: int) -> list[str]:
        """The last `limit` failed tool calls and bash commands, oldest first."""
        out: list[str] = []
        for role, message in self.newest("toolResult", "bashExecution"):
            if len(out) >= limit:
                break
            if role == "toolResult":
                if message.get("isError") is True:
                    name = message.get("toolName") if isinstance(message.get("toolName"), str) else "tool"
                    shed = message.get(SHED_KEY)
                    first = shed.first if shed is not None else failure_line(text_of(message))
                    out.append(f"`{name}` failed: {first}")
            else:
                exit_code = message.get("exitCode")
                if isinstance(exit_code, int) and exit_code != 0:
                    out.append(f"`{message.get('command')}` exited with code {exit_code}")
        return out[::-1]


def _argument_text(args: Any) -> str:
    """The values of tool-call arguments, one per line: identifiers as the model wrote them (a JSON
    dump would double every backslash of a Windows path)."""
    out: list[str] = []
    stack = [args]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, Mapping):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list | tuple):
            stack.extend(reversed(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append(str(value))
    return "\n".join(out) if out else dumps_compact(args)


def _single_text(message: Mapping[str, Any]) -> str:
    """`text_of` with a fast path for pi's usual shape: one text block."""
    content = message.get("content")
    if type(content) is list and len(content) == 1:
        block = content[0]
        text = block.get("text") if type(block) is dict and block.get("type") == "text" else None
        if type(text) is str:
            return text
    return text_of(message)


def _collect(messages: Iterable[Mapping[str, Any]]) -> _Collected:
    c = _Collected()
    keep = c.messages.append
    keep_role = c.roles.append
    tools = c.tools.append
    for message in messages:
        role = role_of(message)
        if role is None or (role == "custom" and is_runtime_context(message)):
            continue
        keep(message)
        keep_role(role)
        if role == "toolResult":
            shed = message.get(SHED_KEY)
            if shed is None:
                tools(_single_text(message))
            elif not c.tools or c.tools[-1] is not shed.block:  # `settle` made each block one run
                tools(shed.block)
        elif role == "user":
            text = _single_text(message)
            if text.strip():
                c.users.append(text)
        elif role == "assistant":
            text = text_of(message)
            if text.strip():
                c.assistants.append(text)
                c.conversation.append(text)
            for block in content_blocks(message):
                if type(block) is not dict and not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "toolCall":
                    raw_name = block.get("name")
                    name = raw_name if isinstance(raw_name, str) else "tool"
                    c.tool_counts[name] = c.tool_counts.get(name, 0) + 1
                    if isinstance(block.get("id"), str) and block["id"]:
                        c.call_ids.append(block["id"])
                    args = block.get("arguments")
                    if args:
                        c.arguments.append(args if isinstance(args, str) else _argument_text(args))
                elif kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
                    c.conversation.append(block["thinking"])
        elif role == "bashExecution":
            for key, target in (("command", c.arguments), ("output", c.tools)):
                value = message.get(key)
                if isinstance(value, str) and value:
                    target.append(value)
        else:  # custom, branchSummary, compactionSummary
            c.conversation.append(text_of(message))
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
        role, message = c.roles[index], c.messages[index]
        if role == "user":
            text = text_of(message)
            if text.strip():
                last_at, last = index, text
                break
    for index in range(last_at):
        role, message = c.roles[index], c.messages[index]
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
    caps = {
        "done": budget.done_items - 1,
        "decisions": budget.decision_items,
        "next_steps": budget.next_items,
        "blocked": budget.blocked_items,
        "in_progress": budget.progress_items,
        "notes": budget.note_items if focus_set else 0,
    }
    found: dict[str, list[str]] = {k: [] for k in caps}
    scanned = 0
    for text in c.assistant_texts():
        if focus_set or _has_cue(text, scan, _ANY_CUE_LOWER, _ANY_CUE):
            for sentence in reversed(_sentences(text, scan)):
                lower = sentence.lower()
                if (
                    focus_set
                    and len(found["notes"]) < caps["notes"]
                    and focus_set & set(_FOCUS_WORD.findall(lower))
                ):
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


@dataclass
class IdentifierSets:
    """Every identifier of a compacted part by source, each unique and newest mention first;
    a value appears only in the first source that has it (user text; the assistant's text, then its
    tool-call arguments and bash commands; tool-call ids; tool output)."""

    user: list[str] = field(default_factory=list)
    conversation: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    tool: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [*self.user, *self.conversation, *self.calls, *self.tool]


def collect_identifiers(
    messages: Iterable[Mapping[str, Any]], scanner: IdentifierScanner | None = None
) -> IdentifierSets:
    """The identifiers of `messages` (the whole compacted part), by source, newest first."""
    c = messages if isinstance(messages, _Collected) else _collect(messages)
    return _identifier_sets(c, scanner or IdentifierScanner())


def _identifier_sets(c: _Collected, scanner: IdentifierScanner) -> IdentifierSets:
    user = list(scanner.scan_many(c.user_texts()))
    seen = set(user)
    conversation = [v for v in scanner.scan_many(c.conversation_texts()) if v not in seen]
    scanner.forget(prose=True)  # no prose follows; its memo would only add to the peak below
    seen.update(conversation)
    conversation += [v for v in scanner.scan_many(c.argument_texts(), prose=False) if v not in seen]
    scanner.forget(prose=False)  # the few tokens tool output shares with arguments are classified again
    seen.update(conversation)
    calls = [v for v in dict.fromkeys(reversed(c.call_ids)) if v not in seen]
    seen.update(calls)
    tool = [v for v in _tool_identifiers(scanner, c.tool_texts()) if v not in seen]
    return IdentifierSets(user, conversation, calls, tool)


def _tool_identifiers(scanner: IdentifierScanner, items: Iterable[str | ShedBlock]) -> Iterable[str]:
    """The identifiers of newest-first tool texts, where a shed block's identifiers stand for its
    run of texts: the same values in the same order as one `scan_many` over all the texts
    (`shedding.py` says why)."""
    items = list(items)
    if not any(type(item) is ShedBlock for item in items):
        return scanner.scan_many(items, prose=False)  # type: ignore[arg-type]
    out: dict[str, None] = {}
    texts: list[str] = []
    for item in items:
        if type(item) is ShedBlock:
            if texts:
                out.update(dict.fromkeys(scanner.scan_many(texts, prose=False)))
                texts = []
            out.update(dict.fromkeys(item.ids))
        else:
            texts.append(item)  # type: ignore[arg-type]
    if texts:
        out.update(dict.fromkeys(scanner.scan_many(texts, prose=False)))
    return out


def _fit_newest(values: list[str], limit_chars: int) -> tuple[list[str], list[str]]:
    """(kept, dropped) of `values` (newest first): the newest whose rendering fits `limit_chars`;
    once one does not fit, every older one is dropped too (the cap keeps the newest)."""
    used = 0
    for index, value in enumerate(values):
        cost = len(value) + 4
        if used + cost > limit_chars:
            return values[:index], values[index:]
        used += cost
    return list(values), []


_HEXISH = re.compile(r"[0-9a-fA-F]{8,}")
_PURE_HEX = re.compile(r"^[0-9a-fA-F]{8,}$")


def _fit_carried(values: list[str], limit_chars: int) -> tuple[list[str], list[str]]:
    """Carried identifiers (oldest first, as a summary lists them) within budget: paths, URLs and
    other readable ids first (newest first), then opaque hex ids (tool-call ids, hashes) with what
    is left; returns (kept in original order, dropped)."""
    newest = values[::-1]
    readable = [v for v in newest if not _HEXISH.search(v) or "/" in v]
    opaque = [v for v in newest if _HEXISH.search(v) and "/" not in v]
    kept_readable, _ = _fit_newest(readable, limit_chars)
    used = sum(len(v) + 4 for v in kept_readable)
    kept_opaque, _ = _fit_newest(opaque, limit_chars - used)
    keep = set(kept_readable) | set(kept_opaque)
    return [v for v in values if v in keep], [v for v in newest if v not in keep]


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


@dataclass
class _DigestInputs:
    """What a digest is assembled from, extracted once (re-assembling with a smaller budget is cheap)."""

    new: Digest  # this round's prose, at the base budget
    old: Digest  # the re-distilled previous summary
    sets: IdentifierSets  # every identifier of the compacted part


def _prepare_digest(
    messages: Sequence[Mapping[str, Any]],
    previous_summary: str | None,
    custom_instructions: str | None,
    budget: SummaryBudget,
    identifier_messages: Sequence[Mapping[str, Any]] | None,
) -> _DigestInputs:
    c = _collect(messages)
    new = _extract_prose(c, budget, ask_keywords(custom_instructions) if custom_instructions else [])
    old = parse_summary(previous_summary)
    _merge_tool_counts(old, new, budget)
    ids_source = c if identifier_messages is None else _collect(identifier_messages)
    return _DigestInputs(new, old, _identifier_sets(ids_source, IdentifierScanner()))


def _assemble_digest(
    inputs: _DigestInputs, budget: SummaryBudget, pinned_identifiers: Iterable[str] = ()
) -> Digest:
    new, old, sets = inputs.new, inputs.old, inputs.sets

    def merged(old_items: list[str], new_items: list[str], cap: int) -> list[str]:
        return [
            _clip(i, budget.item_chars) if len(i) > budget.item_chars else i
            for i in _merge_items(old_items, new_items, cap)
        ]

    done_keys = {_norm(x) for x in new.done}
    d = Digest(
        goal=[_clip(g, budget.item_chars * 2) for g in (old.goal or new.goal)[: budget.goal_items]],
        constraints=merged(old.constraints, new.constraints, budget.constraint_items),
        done=merged(old.done, new.done, budget.done_items),
        in_progress=merged(
            [i for i in old.in_progress if _norm(i) not in done_keys], new.in_progress, budget.progress_items
        ),
        blocked=merged(old.blocked, new.blocked, budget.blocked_items),
        decisions=merged(old.decisions, new.decisions, budget.decision_items),
        next_steps=merged(old.next_steps, new.next_steps, budget.next_items),
        notes=merged(old.notes, new.notes, budget.note_items),
    )
    # identifiers of the whole compacted part: user ones always (this round's newest first, then
    # carried ones); this round's others within budget (conversation, call ids, tool output); carried
    # ones within budget
    new_user = set(sets.user)
    carried_user = [v for v in dict.fromkeys(reversed(old.user_ids)) if v not in new_user]  # newest first
    user_kept, user_dropped = _fit_newest([*sets.user, *carried_user], budget.user_identifier_chars)
    user_ids = user_kept[::-1]  # rendered oldest first
    user_all = new_user.union(carried_user)
    others = [v for v in (*sets.conversation, *sets.calls, *sets.tool) if v not in user_all]
    round_ids, round_dropped = _fit_newest(others, budget.round_identifier_chars)
    this_round = user_all.union(others)
    carried = [v for v in dict.fromkeys(old.other_ids) if v not in this_round]
    carried_kept, carried_dropped = _fit_carried(carried, budget.carry_identifier_chars)
    dropped = [*user_dropped, *round_dropped, *carried_dropped]
    if dropped and pinned_identifiers:
        rescued = _pinned(dropped, pinned_identifiers)
        if rescued:
            keep = set(rescued)
            dropped = [v for v in dropped if v not in keep]
            round_ids = [*rescued, *round_ids]  # rendered last, with the newest
    d.user_ids = user_ids
    d.other_ids = [*carried_kept, *round_ids[::-1]]
    d.dropped_ids = dropped
    return d


def _pinned(dropped: list[str], pins: Iterable[str]) -> list[str]:
    """The dropped values a pin names (a pure-hex pin matches case-insensitively, as the audit does)."""
    pins = set(pins)
    found = [v for v in dropped if v in pins]
    hex_pins = {p.upper() for p in pins if _PURE_HEX.match(p)} - {v.upper() for v in found}
    if hex_pins:
        found += [v for v in dropped if v not in pins and len(v) >= 8 and v.upper() in hex_pins]
    return found


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
        lines.append(f"- …and {d.omitted_ids} more identifiers omitted (summary identifier budget)")
    return lines


def render_default(d: Digest) -> str:
    lines = [
        "## Goal",
        *(d.goal or ["(none)"]),
        "",
        "## Constraints & Preferences",
        *_bullets(d.constraints),
        "",
        "## Progress",
        "### Done",
        *_bullets(d.done, "- [x] "),
        "",
        "### In Progress",
        *_bullets(d.in_progress, "- [ ] "),
        "",
        "### Blocked",
        *_bullets(d.blocked),
        "",
        "## Key Decisions",
        *_bullets(d.decisions, "- **Decision**: "),
        "",
        "## Next Steps",
        *([f"{i}. {s}" for i, s in enumerate(d.next_steps, 1)] or ["(none)"]),
        "",
        "## Critical Context",
    ]
    context = [f"- {n}" for n in d.notes] + _id_lines(d)
    lines.extend(context or ["(none)"])
    return "\n".join(lines)


def render_safeguard(d: Digest) -> str:
    decisions = [*d.decisions, *(f"Completed: {x}" for x in d.done)]
    todos = [
        *(f"In progress: {x}" for x in d.in_progress[:-1]),
        *d.next_steps,
        *(f"Blocked: {x}" for x in d.blocked),
    ]
    asks = [*d.in_progress[-1:], *(f"Original goal: {g}" for g in d.goal)]
    lines = [
        "## Decisions",
        *(_bullets(decisions) if decisions else ["None."]),
        "",
        "## Open TODOs",
        *(_bullets(todos) if todos else ["None."]),
        "",
        "## Constraints/Rules",
        *(_bullets(d.constraints) if d.constraints else ["None."]),
        "",
        "## Pending user asks",
        *(_bullets(asks) if asks else ["None."]),
        "",
        "## Exact identifiers",
    ]
    context = [f"- {n}" for n in d.notes] + _id_lines(d)
    lines.extend(context or ["None captured."])
    return "\n".join(lines)


def _render_turn_prefix(d: Digest, demote: bool) -> str:
    h = "###" if demote else "##"
    request = d.goal[:1] or ["(none)"]
    progress = [*d.done, *d.decisions]
    lines = [
        f"{h} Original Request",
        *request,
        "",
        f"{h} Early Progress",
        *_bullets(progress),
        "",
        f"{h} Context for Suffix",
        *([*(f"- {x}" for x in d.blocked), *_id_lines(d)] or ["(none)"]),
    ]
    return "\n".join(lines)


def _turn_prefix_digest(
    inputs: _DigestInputs, budget: SummaryBudget, demote: bool, max_chars: int | None
) -> tuple[str, Digest]:
    """R4.7.6 prefix summary; with `max_chars` (safeguard: 8000) the budgets shrink until it fits,
    so a cap never cuts an identifier in half (a last-resort cut is found by the caller's reconcile)."""
    d = _assemble_digest(inputs, budget)
    text = _render_turn_prefix(d, demote)
    for attempt in range(8):
        if max_chars is None or len(text) <= max_chars:
            return text, d
        budget = _scaled(budget, min(0.8, max_chars / len(text)) if attempt < 6 else 0.0)
        d = _assemble_digest(inputs, budget)
        text = _render_turn_prefix(d, demote)
    return (text if max_chars is None else text[:max_chars]), d


@dataclass
class IdentifierReport:
    """What a summary kept of the identifiers of its compacted part (and of the summary it replaces):
    `kept` are in the summary text, `dropped` are not (a budget cap, or a provider that left them out)."""

    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    checked_text: str = ""  # the summary text the split was made against


def reconcile_identifiers(
    candidates: Iterable[str], summary: str, *, substring_check: bool = False
) -> IdentifierReport:
    """Split `candidates` by whether `summary` holds them: as an identifier token of the summary
    (the same scanner), or with `substring_check` (free-form provider output) anywhere in it."""
    present = IdentifierScanner().scan(summary)
    report = IdentifierReport(checked_text=summary)
    for value in dict.fromkeys(candidates):
        if value in present or (substring_check and value in summary):
            report.kept.append(value)
        else:
            report.dropped.append(value)
    return report


def _scaled(budget: SummaryBudget, factor: float) -> SummaryBudget:
    """The budget with its identifier and section caps scaled by `factor` (< 1 shrinks)."""

    def n(value: int, floor: int = 0) -> int:
        return max(floor, int(value * factor))

    return replace(
        budget,
        user_identifier_chars=n(budget.user_identifier_chars),
        round_identifier_chars=n(budget.round_identifier_chars),
        carry_identifier_chars=n(budget.carry_identifier_chars),
        item_chars=n(budget.item_chars, 60),
        constraint_items=n(budget.constraint_items, 2),
        done_items=n(budget.done_items, 2),
        progress_items=n(budget.progress_items, 1),
        blocked_items=n(budget.blocked_items, 1),
        decision_items=n(budget.decision_items, 2),
        next_items=n(budget.next_items, 2),
        note_items=n(budget.note_items, 1),
    )


def summarize_with_report(
    messages: Sequence[Mapping[str, Any]],
    *,
    previous_summary: str | None = None,
    turn_prefix_messages: Sequence[Mapping[str, Any]] = (),
    custom_instructions: str | None = None,
    mode: str = "default",
    budget: SummaryBudget | None = None,
    identifier_messages: Sequence[Mapping[str, Any]] | None = None,
    pinned_identifiers: Iterable[str] = (),
    max_chars: int | None = None,
) -> tuple[str, IdentifierReport]:
    """The built-in summary of a compaction (history + split-turn context, R4.7.8 without the file
    lists, which `append_file_lists` adds for every provider) and its identifier report.

    `identifier_messages`: where the history's identifiers come from when `messages` is only part
    of the compacted history (safeguard: preserved recent turns, pruned chunks). `max_chars`: the
    rendered summary must fit (safeguard's artifact budget); the budgets shrink until it does, so
    identifiers are left out whole (and reported) rather than cut, and only a summary that still
    does not fit is cut, with OpenClaw's marker."""
    budget = budget or SummaryBudget()
    pins = list(pinned_identifiers)
    history_inputs = None
    if messages or not turn_prefix_messages or identifier_messages or (previous_summary or "").strip():
        history_inputs = _prepare_digest(
            messages, previous_summary, custom_instructions, budget, identifier_messages
        )
    prefix_inputs = (
        _prepare_digest(turn_prefix_messages, None, None, budget, None) if turn_prefix_messages else None
    )
    render = render_safeguard if mode == "safeguard" else render_default
    for attempt in range(8):
        candidates: list[str] = []
        if history_inputs is not None:
            d = _assemble_digest(history_inputs, budget, pins)
            text = render(d)
            candidates += [*d.kept_ids, *d.dropped_ids]
        else:
            text = NO_PRIOR_HISTORY
        if prefix_inputs is not None:
            prefix, pd = _turn_prefix_digest(
                prefix_inputs,
                budget,
                mode == "safeguard",
                SPLIT_TURN_MAX_CHARS if mode == "safeguard" else None,
            )
            candidates += [*pd.kept_ids, *pd.dropped_ids]
            text = text + TURN_CONTEXT_DIVIDER + prefix
        if max_chars is None or len(text) <= max_chars:
            break
        budget = _scaled(budget, min(0.8, max_chars / len(text)) if attempt < 6 else 0.0)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(0, max_chars - len(SUMMARY_TRUNCATED_MARKER))] + SUMMARY_TRUNCATED_MARKER
    return text, reconcile_identifiers(candidates, text)


def summarize(
    messages: Sequence[Mapping[str, Any]],
    *,
    previous_summary: str | None = None,
    turn_prefix_messages: Sequence[Mapping[str, Any]] = (),
    custom_instructions: str | None = None,
    mode: str = "default",
    budget: SummaryBudget | None = None,
    identifier_messages: Sequence[Mapping[str, Any]] | None = None,
    max_chars: int | None = None,
) -> str:
    """`summarize_with_report` without the report."""
    return summarize_with_report(
        messages,
        previous_summary=previous_summary,
        turn_prefix_messages=turn_prefix_messages,
        custom_instructions=custom_instructions,
        mode=mode,
        budget=budget,
        identifier_messages=identifier_messages,
        max_chars=max_chars,
    )[0]


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


def append_file_lists(
    summary: str, read_files: Sequence[str] = (), modified_files: Sequence[str] = ()
) -> str:
    """R4.7.8 file tags (each list capped at 900 chars with `...and N more`, as C does)."""
    if read_files:
        summary += "\n\n<read-files>\n" + "\n".join(_cap_list(list(read_files))) + "\n</read-files>"
    if modified_files:
        summary += (
            "\n\n<modified-files>\n" + "\n".join(_cap_list(list(modified_files))) + "\n</modified-files>"
        )
    return summary


def structured_fallback_summary(previous_summary: str | None) -> str:
    """§4.9 structured fallback (no real conversation): reuse a previous five-heading summary."""
    if previous_summary:
        positions = [
            previous_summary.find(h)
            for h in (
                "## Decisions",
                "## Open TODOs",
                "## Constraints/Rules",
                "## Pending user asks",
                "## Exact identifiers",
            )
        ]
        if all(p >= 0 for p in positions) and positions == sorted(positions):
            return previous_summary
    return "\n".join(
        [
            "## Decisions",
            (previous_summary or NO_PRIOR_HISTORY).strip(),
            "",
            "## Open TODOs",
            "None.",
            "",
            "## Constraints/Rules",
            "None.",
            "",
            "## Pending user asks",
            "None.",
            "",
            "## Exact identifiers",
            "None captured.",
        ]
    )
