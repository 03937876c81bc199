"""The `safeguard` pipeline (§4.9) around a summary provider, and its pieces.

`run_safeguard` is what `summarize_plan` runs in safeguard mode:

1. runtime-context carriers are never summarised (the summariser and the serialiser skip them);
2. without any real conversation the structured fallback summary is written, no provider call;
3. suffix sections: `## Tool Failures`, the preserved recent turns, the workspace critical rules
   (`postCompactionSections`, `workspace_rules.py`) and the file lists;
4. a third-party provider gets the whole compacted part and its answer is finalised with the
   formatted split-turn prefix and the preserved turns (no audit); otherwise:
5. history pruning when the new content exceeds `maxHistoryShare` of the window: the oldest
   chunks are summarised first and that summary becomes the previous summary;
6. the audit's identifiers come from the last 10 messages (R4.12.5);
7. the last `recentTurnsPreserve` user turns leave the summary input and are rendered verbatim;
9. attempts (1 + `qualityGuard.maxRetries` with the guard on): summarise, finalise into the
   16000-character artifact (the suffix loses its head first), audit, retry with feedback.

The built-in summariser is told the audit's identifiers up front (they are at most 12), so its
identifier audit cannot fail, and being deterministic it is never retried; an LLM gets OpenClaw's
corrective feedback on a retry instead (profile L: the last attempt is kept when all fail).
The built-in one also extracts identifiers from the whole compacted part (pruned chunks and
preserved turns included), so nothing leaves the summary unreported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openclaw_cli.compaction.chunking import prune_history_for_context_share
from openclaw_cli.compaction.messages import (
    content_blocks,
    is_runtime_context,
    role_of,
    text_of,
    tool_call_ids,
)
from openclaw_cli.compaction.tokens import estimate_message_tokens

Message = Mapping[str, Any]

ARTIFACT_MAX_CHARS = 16000
ARTIFACT_TRUNCATED_MARKER = "\n\n[Earlier compaction context truncated to fit budget]\n\n"
MIN_BODY_CHARS = 8000  # the body keeps at least this much of the artifact; the suffix gives way first
RECENT_TURNS_HEADING = "\n\n## Recent turns preserved verbatim\n"
RECENT_TURN_LINE_CHARS = 600
RECENT_TURNS_MAX_CHARS = 8000
RECENT_TURNS_TRUNCATED = "[Earlier preserved messages truncated]"
TOOL_FAILURES_HEADING = "\n\n## Tool Failures\n"
TOOL_FAILURE_LINES = 8
TOOL_FAILURE_CHARS = 240
HISTORY_SAFETY_MARGIN = 1.2
AUDIT_WINDOW = 10
PREVIOUS_SUMMARY_TAG = "previous-compaction-summary"
_PREVIOUS_SUMMARY_INSTRUCTION = (
    "The block above is the summary written at earlier compactions of this session. Re-distill it together "
    "with the messages that follow: keep what still matters, drop stale, duplicated or superseded detail, "
    "and do not copy it verbatim."
)
_HEARTBEAT = "HEARTBEAT_OK"


# -- step 2: is there a conversation at all? ------------------------------------------------------
def has_real_conversation(messages: Sequence[Message]) -> bool:
    """A user/assistant/custom(displayed)/bash/summary message with meaningful text (not blank, not a
    silent-reply token, not only `HEARTBEAT_OK`) or a non-text content block (an image). Tool
    results count only with such an anchor near them, so they never decide on their own."""
    from openclaw_cli.compaction.silent import HEARTBEAT_TOKEN, is_silent_reply

    for message in messages:
        role = role_of(message)
        if role not in ("user", "assistant", "custom", "bashExecution", "branchSummary", "compactionSummary"):
            continue
        if role == "custom" and (message.get("display") is False or is_runtime_context(message)):
            continue
        text = text_of(message).strip()
        if (
            text
            and not is_silent_reply(text)
            and not is_silent_reply(text, HEARTBEAT_TOKEN)
            and text != _HEARTBEAT
        ):
            return True
        for block in content_blocks(message):
            if isinstance(block, Mapping) and block.get("type") not in ("text", "toolCall", "thinking", None):
                return True
    return False


# -- step 3: tool failures ------------------------------------------------------------------------
def tool_failures_section(messages: Sequence[Message]) -> str:
    """`## Tool Failures`: up to 8 lines `- <tool>[ (status=… exitCode=…)]: <text ≤ 240>` then
    `- ...and N more`; one line per toolCallId; `failed (no output)` when the result is empty."""
    lines: list[str] = []
    seen: set[str] = set()
    total = 0
    for message in messages:
        if role_of(message) != "toolResult" or message.get("isError") is not True:
            continue
        ident = message.get("toolCallId")
        if isinstance(ident, str):
            if ident in seen:
                continue
            seen.add(ident)
        total += 1
        if len(lines) < TOOL_FAILURE_LINES:
            text = " ".join(text_of(message).split())[:TOOL_FAILURE_CHARS] or "failed (no output)"
            raw_details = message.get("details")
            details = raw_details if isinstance(raw_details, Mapping) else {}
            status = [f"{k}={details[k]}" for k in ("status", "exitCode") if details.get(k) is not None]
            suffix = f" ({' '.join(status)})" if status else ""
            lines.append(f"- {message.get('toolName') or 'tool'}{suffix}: {text}")
    if not lines:
        return ""
    if total > len(lines):
        lines.append(f"- ...and {total - len(lines)} more")
    return TOOL_FAILURES_HEADING + "\n".join(lines)


# -- step 5: history pruning ----------------------------------------------------------------------
@dataclass
class HistoryPrune:
    kept: list[Message]
    dropped: list[Message]
    new_content_tokens: int
    max_history_tokens: int


def prune_for_history_share(
    messages: Sequence[Message],
    turn_prefix: Sequence[Message],
    tokens_before: int,
    context_window: int,
    max_history_share: float,
    count: Callable[[Message], int] = estimate_message_tokens,
) -> HistoryPrune | None:
    """§4.9 step 5: when `newContent = tokensBefore − est(history) − est(prefix)` exceeds
    `floor(W × share × 1.2)`, drop the oldest token-share chunks (tool pairs kept, orphans dropped)
    until the history fits `floor(W × share)`. None when nothing needs to go."""
    summarizable = sum(count(m) for m in messages) + sum(count(m) for m in turn_prefix)
    new_content = max(0, math.floor(tokens_before - summarizable))
    max_history = math.floor(context_window * max_history_share * HISTORY_SAFETY_MARGIN)
    if new_content <= max_history or not messages:
        return None
    pruned = prune_history_for_context_share(
        messages, context_window, max_history_share, parts=2, count=count
    )
    if not pruned.dropped_chunks:
        return None
    return HistoryPrune(pruned.messages, pruned.dropped_messages_list, new_content, max_history)


# -- step 7: recent turns preserved verbatim ------------------------------------------------------
def split_recent_turns(messages: Sequence[Message], turns: int) -> tuple[list[Message], list[Message]]:
    """(summarise, preserve): the last `turns` user turns — each user message with the assistant
    replies after it and the tool results of their calls — leave the summary input."""
    messages = list(messages)
    if turns <= 0:
        return messages, []
    starts = [i for i, m in enumerate(messages) if role_of(m) == "user" and text_of(m).strip()]
    if not starts:
        return messages, []
    first = starts[-min(turns, len(starts))]
    preserved = messages[first:]
    calls = {i for m in preserved for i in tool_call_ids(m)}
    # a result of a preserved call that was displaced before the turn (rare) moves with it
    earlier = [
        m for m in messages[:first] if not (role_of(m) == "toolResult" and m.get("toolCallId") in calls)
    ]
    return earlier, preserved


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= RECENT_TURN_LINE_CHARS else text[:RECENT_TURN_LINE_CHARS] + "..."


def recent_turns_section(preserved: Sequence[Message]) -> str:
    """`## Recent turns preserved verbatim`: `- User: …`, `- Assistant: …`, `- Tool result (<tool>): …`
    (each ≤ 600 chars + `...`), the newest kept within 8000 chars, older ones replaced by a marker."""
    lines: list[str] = []
    for message in preserved:
        role = role_of(message)
        if role == "custom" and is_runtime_context(message):
            continue
        text = text_of(message)
        if not text.strip():
            continue
        if role == "user":
            lines.append(f"- User: {_one_line(text)}")
        elif role == "assistant":
            lines.append(f"- Assistant: {_one_line(text)}")
        elif role == "toolResult":
            lines.append(f"- Tool result ({message.get('toolName') or 'tool'}): {_one_line(text)}")
    if not lines:
        return ""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > RECENT_TURNS_MAX_CHARS:
            break
        kept.append(line)
        used += len(line) + 1
    kept.reverse()
    if len(kept) < len(lines):
        kept.insert(0, RECENT_TURNS_TRUNCATED)
    return RECENT_TURNS_HEADING + "\n".join(kept)


# -- step 9: the previous summary as a message, the artifact budget ---------------------------------
def previous_summary_message(previous: str) -> dict[str, Any]:
    """The previous summary as the first user message of an LLM's input (re-distil, don't copy)."""
    text = f"<{PREVIOUS_SUMMARY_TAG}>\n{previous.strip()}\n</{PREVIOUS_SUMMARY_TAG}>\n\n{_PREVIOUS_SUMMARY_INSTRUCTION}"
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def body_budget(suffix: str, max_chars: int = ARTIFACT_MAX_CHARS) -> int:
    """How long the summary body may be beside `suffix` (it keeps at least MIN_BODY_CHARS)."""
    return max(min(MIN_BODY_CHARS, max_chars), max_chars - len(suffix))


def finalize(body: str, suffix: str, max_chars: int = ARTIFACT_MAX_CHARS) -> str:
    """Fit body + suffix into `max_chars`: the suffix loses its head first (marker); a body too long
    to leave the suffix a quarter of the budget (only an over-long provider answer) is cut first,
    with OpenClaw's summary marker."""
    from openclaw_cli.compaction.summarizer import SUMMARY_TRUNCATED_MARKER

    if len(body) + len(suffix) <= max_chars:
        return body + suffix
    reserve = min(len(suffix), max_chars // 4)
    if len(body) > max_chars - reserve:
        body = body[: max(0, max_chars - reserve - len(SUMMARY_TRUNCATED_MARKER))] + SUMMARY_TRUNCATED_MARKER
    room = max_chars - len(body)
    if len(suffix) > room:
        keep = room - len(ARTIFACT_TRUNCATED_MARKER)
        suffix = ARTIFACT_TRUNCATED_MARKER + suffix[len(suffix) - keep :] if keep > 0 else ""
    return body + suffix


def format_turn_prefix(messages: Sequence[Message], max_chars: int) -> str:
    """The split-turn section of the provider path: the prefix messages themselves, serialised."""
    from openclaw_cli.compaction.providers import serialize_conversation
    from openclaw_cli.compaction.summarizer import TURN_CONTEXT_DIVIDER

    text = serialize_conversation(messages)
    if not text:
        return ""
    if len(text) > max_chars:
        text = text[:max_chars]
    return TURN_CONTEXT_DIVIDER + text


# -- the pipeline ------------------------------------------------------------------------------------
@dataclass
class SafeguardResult:
    summary: str
    provider_used: str
    fallback_reason: str | None = None
    quality: Any = None  # identifiers.GuardResult when the guard ran
    pruned_messages: int = 0  # step 5: messages summarised first as the previous summary
    preserved_messages: int = 0  # step 7: messages rendered verbatim


def _latest_user_ask(messages: Sequence[Message]) -> str | None:
    return next((text_of(m) for m in reversed(messages) if role_of(m) == "user" and text_of(m).strip()), None)


def run_safeguard(
    plan: Any,
    provider: Any,
    request: Any,
    *,
    settings: Any,
    provider_config: Mapping[str, Any] | None = None,
    workspace_rules: str = "",
) -> SafeguardResult:
    """§4.9 for a ready plan (see the module doc). `request` is the base `SummaryRequest` (limits,
    policy, custom instructions, cancellation); `workspace_rules` the step-3 section (or "")."""
    from dataclasses import replace

    from openclaw_cli.compaction import providers as prov
    from openclaw_cli.compaction.identifiers import (
        audit_summary,
        extract_audit_identifiers,
        run_quality_guard,
    )
    from openclaw_cli.compaction.summarizer import (
        SPLIT_TURN_MAX_CHARS,
        append_file_lists,
        structured_fallback_summary,
    )

    history = list(plan.messages_to_summarize)
    prefix = list(plan.turn_prefix_messages)
    everything = [*history, *prefix]
    files = append_file_lists("", plan.read_files, plan.modified_files)
    if not has_real_conversation(everything):  # step 2: no call, no re-trigger loop
        return SafeguardResult(structured_fallback_summary(plan.previous_summary) + files, prov.BUILTIN_ID)
    failures = tool_failures_section(everything)  # step 3
    custom = request.custom_instructions
    fallback_reason: str | None = None

    provider_id = provider if isinstance(provider, str) else getattr(provider, "id", None)
    llm = (
        provider is not None
        and not prov.is_builtin(provider)
        and provider_id in (prov.OPENAI_ID, "openai")
        or isinstance(provider, prov.OpenAICompatibleProvider)
    )
    if provider is not None and not prov.is_builtin(provider) and not llm:  # step 4: the provider path
        structured = prov.safeguard_instructions(settings.identifier_policy)
        req = replace(
            request,
            messages=everything,
            turn_prefix_messages=(),
            custom_instructions=f"{structured}\n\nAdditional focus:\n{custom}" if custom else structured,
            extra={},
        )
        text, used, fallback_reason = prov.try_provider(provider, req, provider_config=provider_config)
        if text is not None:
            _, preserved = split_recent_turns(history, settings.recent_turns_preserve)
            summary = (
                text
                + format_turn_prefix(prefix, SPLIT_TURN_MAX_CHARS)
                + recent_turns_section(preserved)
                + failures
                + workspace_rules
                + files
            )
            return SafeguardResult(summary, used)
        provider = None  # R4.14.5: the built-in path takes over

    # step 5: history pruning; the dropped part is summarised first and becomes the previous summary
    previous = plan.previous_summary
    pruned = prune_for_history_share(
        history, prefix, plan.tokens_before.tokens, request.context_window, settings.max_history_share
    )
    if pruned is not None:
        stage = _request_for(request, provider, llm, pruned.dropped, (), previous, custom, None)
        previous, _, reason = prov.summarize_with_fallback(
            provider,
            stage,
            provider_config=provider_config,
            fallback_request=_request_for(request, None, False, pruned.dropped, (), previous, custom, None),
        )
        fallback_reason = fallback_reason or reason
        history = pruned.kept
    # step 6: what the audit looks for; step 7: recent turns leave the summary input
    audit_ids = extract_audit_identifiers(text_of(m) for m in [*history, *prefix][-AUDIT_WINDOW:])
    latest = _latest_user_ask(everything)
    history, preserved = split_recent_turns(history, settings.recent_turns_preserve)
    suffix = recent_turns_section(preserved) + failures + workspace_rules + files
    used_box: dict[str, Any] = {"provider": prov.BUILTIN_ID, "reason": fallback_reason}

    def generate(feedback: str | None) -> str:
        extra = "\n\n".join(x for x in (custom, feedback) if x) or None
        builtin_req = _request_for(
            request,
            None,
            False,
            history,
            prefix,
            previous,
            extra,
            plan.messages_to_summarize,
            pins=audit_ids,
            max_chars=body_budget(suffix),
        )
        if provider is not None and not (history or prefix):
            # every message is preserved verbatim: nothing to send to a model (step 9)
            text = structured_fallback_summary(previous)
            used_box["provider"] = prov.BUILTIN_ID
        elif provider is None:
            # (with every message preserved, the built-in summariser still lists their identifiers)
            text = prov.BuiltinProvider().summarize(builtin_req)
            request.extra.update(builtin_req.extra)
            used_box["provider"] = prov.BUILTIN_ID
        else:
            llm_req = _request_for(request, provider, True, history, prefix, previous, extra, None)
            text, used_box["provider"], reason = prov.summarize_with_fallback(
                provider, llm_req, provider_config=provider_config, fallback_request=builtin_req
            )
            used_box["reason"] = reason or used_box["reason"]
            request.extra.update(llm_req.extra)
        return finalize(text, suffix)

    quality = None
    if settings.quality_guard_active:
        quality = run_quality_guard(
            generate,
            lambda text: audit_summary(
                text,
                identifiers=audit_ids,
                latest_user_ask=latest,
                identifier_policy=settings.identifier_policy,
            ),
            # the built-in summariser is deterministic and already has the audit's identifiers: a
            # retry would write the same summary again
            max_retries=settings.quality_guard_retries if provider is not None else 0,
            identifier_policy=settings.identifier_policy,
        )
        summary = quality.summary
    else:
        summary = generate(None)
    return SafeguardResult(
        summary,
        used_box["provider"],
        used_box["reason"],
        quality,
        len(pruned.dropped) if pruned else 0,
        len(preserved),
    )


def _request_for(
    base: Any,
    provider: Any,
    llm: bool,
    messages: Sequence[Message],
    prefix: Sequence[Message],
    previous: str | None,
    custom: str | None,
    identifier_messages: Sequence[Message] | None,
    *,
    pins: Sequence[str] = (),
    max_chars: int | None = None,
) -> Any:
    """The request of one summary call: an LLM gets the previous summary as its first message
    (step 9); the built-in summariser merges it itself and takes identifiers from
    `identifier_messages` (the whole compacted part) when given."""
    from dataclasses import replace

    if llm and provider is not None:
        lead = [previous_summary_message(previous)] if previous and previous.strip() else []
        return replace(
            base,
            messages=[*lead, *messages],
            turn_prefix_messages=list(prefix),
            previous_summary=None,
            custom_instructions=custom,
            extra={},
        )
    return replace(
        base,
        messages=list(messages),
        turn_prefix_messages=list(prefix),
        previous_summary=previous,
        custom_instructions=custom,
        identifier_messages=identifier_messages,
        pinned_identifiers=list(pins),
        max_summary_chars=max_chars,
        extra={},
    )


__all__ = [
    "ARTIFACT_MAX_CHARS",
    "AUDIT_WINDOW",
    "HistoryPrune",
    "SafeguardResult",
    "body_budget",
    "finalize",
    "format_turn_prefix",
    "has_real_conversation",
    "previous_summary_message",
    "prune_for_history_share",
    "recent_turns_section",
    "run_safeguard",
    "split_recent_turns",
    "tool_failures_section",
]
