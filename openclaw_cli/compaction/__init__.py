"""Compaction library: thresholds, token counts, cut point, summaries, memory-flush planning.

Pure functions over transcript entry dicts (active branch, root first). Persistence (appending
the entry under the lock, successor windows) lives in the store layer, which calls:

    plan = plan_compaction(branch, keep_recent_tokens=None, hard_checkpoint=True)
    if plan.ready:
        outcome = summarize_plan(plan, provider=None, settings=settings)
        entry = build_compaction_entry(plan, outcome.summary, entry_id=..., parent_id=plan.leaf_id)

Heavy imports (tiktoken) happen only when an exact count is requested.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from openclaw_cli import clock
from openclaw_cli.compaction.cutpoint import (
    ALREADY_COMPACTED,
    NOTHING_TO_COMPACT,
    STATUS_READY,
    CompactionPlan,
    CutPoint,
    find_cut_point,
    prepare_compaction,
)
from openclaw_cli.compaction.identifiers import GuardResult
from openclaw_cli.compaction.memory_flush import FlushDecision, plan_memory_flush
from openclaw_cli.compaction.thresholds import (
    CompactionSettings,
    MemoryFlushSettings,
    compaction_threshold,
    effective_reserve,
    resolve_context_window,
    settings_reserve,
    should_compact,
)
from openclaw_cli.compaction.tokens import EXACT_CONTEXT_CHARS, TokenCount, Tokenizer
from openclaw_cli.errors import OpenClawError

__all__ = [
    "ALREADY_COMPACTED",
    "NOTHING_TO_COMPACT",
    "STATUS_READY",
    "CompactionPlan",
    "CompactionSettings",
    "CutPoint",
    "FlushDecision",
    "MemoryFlushSettings",
    "SummaryOutcome",
    "TokenCount",
    "Tokenizer",
    "build_compaction_entry",
    "compaction_threshold",
    "effective_reserve",
    "find_cut_point",
    "new_entry_id",
    "plan_compaction",
    "plan_memory_flush",
    "prepare_compaction",
    "resolve_context_window",
    "should_compact",
    "summarize_plan",
]


def plan_compaction(
    branch_entries: Sequence[Mapping[str, Any]],
    *,
    keep_recent_tokens: int | None = None,
    hard_checkpoint: bool = False,
    tokenizer: Tokenizer | Literal["exact", "estimate"] | None = None,
    exact_context_chars: int | None = EXACT_CONTEXT_CHARS,
    exact_min_tokens: int = 0,
) -> CompactionPlan:
    """What compacting this active branch would do (§4.5-§4.6). `hard_checkpoint=True` is D16's
    manual compaction without an explicit keepRecentTokens; `keep_recent_tokens=None` otherwise
    means 20000. `plan.status` says `ready`, `no_compactable_entries` or `already_compacted`.
    With an exact tokenizer, `tokens_before` is exact for the newest `exact_context_chars` of
    context and until its exact part exceeds `exact_min_tokens` (pass a threshold that a decision
    compares it with); older messages are estimated and the figure says so (`tokens.py`)."""
    if tokenizer is None or isinstance(tokenizer, str):
        tokenizer = Tokenizer(tokenizer or "estimate")
    plan = prepare_compaction(
        branch_entries,
        keep_recent_tokens,
        tokenizer,
        hard_checkpoint,
        exact_context_chars=exact_context_chars,
        exact_min_tokens=exact_min_tokens,
    )
    plan.token_method = tokenizer.method
    return plan


@dataclass
class SummaryOutcome:
    summary: str
    provider_used: str
    fallback_reason: str | None = None
    quality: GuardResult | None = None
    tokens_after: int | None = None  # summary message + kept tail, counted with the plan's method
    token_method: str = "estimate"
    # the identifiers of the compacted part (and of the summary it replaces) that the summary holds,
    # and those it does not (a budget cap, or a provider that left them out)
    identifiers_kept: list[str] = field(default_factory=list)
    identifiers_dropped: list[str] = field(default_factory=list)
    pruned_messages: int = 0  # safeguard step 5: oldest messages summarised first (history share)
    preserved_messages: int = 0  # safeguard step 7: messages of the recent turns kept verbatim


def summarize_plan(
    plan: CompactionPlan,
    provider: Any = None,
    *,
    settings: CompactionSettings | None = None,
    custom_instructions: str | None = None,
    context_window: int | None = None,
    cancel_event: threading.Event | None = None,
    provider_config: Mapping[str, Any] | None = None,
    timeout_s: float = 180.0,
    max_output_tokens: int | None = None,
    workspace_dir: str | os.PathLike[str] | None = None,
) -> SummaryOutcome:
    """Summarise a ready plan with `provider` (None = built-in; a provider object or an id), falling
    back to the built-in summariser on failure (R4.14.5), and append the file lists (R4.7.8). In
    safeguard mode the whole §4.9 pipeline runs (`safeguard.py`), with the workspace critical rules
    read from `<workspace_dir>/AGENTS.md` when `postCompactionSections` is set. The outcome lists
    which identifiers of the compacted part the summary kept and which it dropped. Cancellation
    propagates."""
    from openclaw_cli.compaction import providers as prov
    from openclaw_cli.compaction.summarizer import append_file_lists

    if not plan.ready:
        raise OpenClawError(plan.reason or "nothing to compact", type="compaction_skipped")
    settings = settings or CompactionSettings()
    window = context_window or 200000
    mode = settings.effective_mode
    reserve = settings_reserve(window, settings)
    request = prov.SummaryRequest(
        messages=plan.messages_to_summarize,
        turn_prefix_messages=plan.turn_prefix_messages,
        previous_summary=plan.previous_summary,
        custom_instructions=custom_instructions,
        identifier_policy=settings.identifier_policy,
        identifier_instructions=settings.identifier_instructions,
        max_output_tokens=max_output_tokens or max(1, int(0.8 * reserve)),
        timeout_s=timeout_s,
        mode=mode,
        context_window=window,
        cancel_event=cancel_event,
    )
    quality: GuardResult | None = None
    pruned = preserved = 0
    if mode == "safeguard":
        from openclaw_cli.compaction.safeguard import run_safeguard
        from openclaw_cli.compaction.workspace_rules import read_critical_rules

        rules = read_critical_rules(workspace_dir, settings.post_compaction_sections)
        result = run_safeguard(
            plan, provider, request, settings=settings, provider_config=provider_config, workspace_rules=rules
        )
        summary, provider_used, fallback_reason, quality = (
            result.summary,
            result.provider_used,
            result.fallback_reason,
            result.quality,
        )
        pruned, preserved = result.pruned_messages, result.preserved_messages
    else:
        summary, provider_used, fallback_reason = prov.summarize_with_fallback(
            provider, request, provider_config=provider_config
        )
        summary = append_file_lists(summary, plan.read_files, plan.modified_files)
    kept, dropped = _identifier_report(
        plan, summary, request.extra.get(prov.IDENTIFIER_REPORT) if provider_used == prov.BUILTIN_ID else None
    )
    tokenizer = Tokenizer("exact" if plan.token_method == "exact" else "estimate")
    return SummaryOutcome(
        summary,
        provider_used,
        fallback_reason,
        quality,
        plan.tokens_after(summary, tokenizer),
        tokenizer.method,
        kept,
        dropped,
        pruned,
        preserved,
    )


def _identifier_report(plan: CompactionPlan, summary: str, builtin: Any) -> tuple[list[str], list[str]]:
    """(kept, dropped) identifiers of the compacted part and of the previous summary. The built-in
    summariser reports what it extracted; another provider's output is checked against a fresh
    extraction (identifiers anywhere in its text count as kept)."""
    from openclaw_cli.compaction.identifiers import IdentifierScanner
    from openclaw_cli.compaction.summarizer import collect_identifiers, parse_summary, reconcile_identifiers

    if builtin is not None:
        if builtin.checked_text and summary.startswith(builtin.checked_text):
            # only the sections appended after the built-in text (file lists, ...) can add any
            appended = IdentifierScanner().scan(summary[len(builtin.checked_text) :])
            if not appended:
                return builtin.kept, builtin.dropped
            found = [v for v in builtin.dropped if v in appended]
            keep = set(found)
            return [*builtin.kept, *found], [v for v in builtin.dropped if v not in keep]
        report = reconcile_identifiers([*builtin.kept, *builtin.dropped], summary)
    else:
        previous = parse_summary(plan.previous_summary)
        candidates = [
            *collect_identifiers([*plan.messages_to_summarize, *plan.turn_prefix_messages]).all(),
            *previous.user_ids,
            *previous.other_ids,
        ]
        report = reconcile_identifiers(candidates, summary, substring_check=True)
    return report.kept, report.dropped


def new_entry_id(existing: Collection[str] = ()) -> str:
    """An 8-hex-digit entry id (pi's format), unique among `existing`."""
    while True:
        value = os.urandom(4).hex()  # what secrets.token_hex does, without importing hmac/hashlib
        if value not in existing:
            return value


def build_compaction_entry(
    plan: CompactionPlan,
    summary: str,
    *,
    entry_id: str | None = None,
    parent_id: str | None = None,
    timestamp: str | None = None,
    details: Mapping[str, Any] | None = None,
    tokens_after: int | None = None,
    from_hook: bool = False,
) -> dict[str, Any]:
    """The `compaction` transcript entry (R2.4.4, R4.8.1): `type, id, parentId, timestamp, summary,
    firstKeptEntryId, tokensBefore, tokensAfter?, details`. A hard checkpoint points
    `firstKeptEntryId` at the entry itself (nothing before it is kept, R4.8.2)."""
    if not plan.ready:
        raise OpenClawError(plan.reason or "nothing to compact", type="compaction_skipped")
    if not isinstance(summary, str) or not summary.strip():
        raise OpenClawError("refusing to write a compaction with an empty summary", type="compaction_failed")
    ident = entry_id or new_entry_id()
    entry: dict[str, Any] = {
        "type": "compaction",
        "id": ident,
        "parentId": parent_id if parent_id is not None else plan.leaf_id,
        "timestamp": timestamp or clock.iso_now(),
        "summary": summary,
        "firstKeptEntryId": ident
        if plan.hard_checkpoint or not plan.first_kept_entry_id
        else plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before.tokens,
    }
    if tokens_after is not None:
        entry["tokensAfter"] = int(tokens_after)
    methods: dict[str, str] = {"tokensBefore": plan.tokens_before.method}
    if tokens_after is not None:
        methods["tokensAfter"] = plan.token_method
    entry["details"] = {
        "readFiles": list(plan.read_files),
        "modifiedFiles": list(plan.modified_files),
        "tokenMethods": methods,
        **(details or {}),
    }
    if from_hook:
        entry["fromHook"] = True
    return entry
