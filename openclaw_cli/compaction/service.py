"""Compacting sessions of one store (spec D9): what `openclaw compact` and the Gateway's
`sessions.compact` run (through `ops/compact.py`, which selects the store and resolves the key).
Both return plain JSON-able dicts in OpenClaw's shapes plus ours.

`compact_in_store(ctx, agent_id, store, key, entry, ...)`:
* without `max_lines`: summary compaction (§4.5-§4.8). `{ok, key, compacted, result: {tokensBefore,
  tokensAfter}}` (observed §8) plus `firstKeptEntryId`, `provider`, `fallbackReason`, `tokenMethod`,
  `identifiersKept` / `identifiersDropped` (the identifiers of the compacted part that the summary
  holds, and those its budget or provider left out), and `summary` in dry runs. With an explicit
  `keepRecentTokens` (argument, else `agents.defaults.compaction.keepRecentTokens`) the recent
  tail is kept; without one the
  compaction is a hard checkpoint (D16, R4.16.4): the rebuilt context starts at the summary.
  Token figures say how they were made (D7): `tokenMethod` (tokensAfter), `tokensBeforeMethod` and
  `tokensBeforeDetail`. With `--tokenizer exact` the cut point, the kept tail and tokensAfter are
  exact; tokensBefore is exact for the newest ~4M chars of context and a chars/4 estimate beyond
  (then labelled `estimate`, with the estimated part in `tokensBeforeDetail`), or provider usage.
* with `max_lines`: OpenClaw's line-based mode, `{ok, key, compacted, kept}`.
* refusals raise typed errors (nothing is modified): unknown key `NotFoundError`; nothing to
  compact / already compacted `CompactionSkipped` (its JSON is OpenClaw's `{ok:false, key,
  compacted:false, reason}` plus the error envelope); a locked transcript `SessionBusyError`
  (OpenClaw's lock message); a real OpenClaw database `RefusedError` (dry runs still work).

`scan_store(...)` (for `compact --over-threshold`) selects sessions whose context is past `window - reserve`
(R4.3.1, strictly greater) from stored figures only (D16): the row's `totalTokens` unless
`totalTokensFresh` is false, else our SQLite store's per-session token estimate kept at write
time, else the transcript's bytes / 4. The session's window is the row's `contextTokens`, else the
model's known window (`resolve_context_window`). A dry run reads nothing else. A real run
compacts each candidate with an exact count and skips one whose counted context (provider usage
in the transcript plus the messages after it) turns out to be below the threshold (counted exactly
until its exact part passes the threshold, so the decision is exact).
Decisions: `--over-threshold` emulates the engine's threshold compaction, so it keeps
`keepRecentTokens` (default 20000) rather than making hard checkpoints, records checkpoint reason
`auto-threshold`, and ignores `compaction.enabled` (an operator asked for it, as with `/compact`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Literal

from openclaw_cli.errors import ExitCode, NotFoundError, OpenClawError, UsageError
from openclaw_cli.gcpause import gc_paused

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

MAX_ATTEMPTS = 3  # re-plans after a concurrent write to the same session
TokenizerName = Literal["exact", "estimate"]


class CompactionSkipped(OpenClawError):
    """Nothing was compacted (R4.16.6 reasons); OpenClaw's CLI exits 1 for these."""

    type = "compaction_skipped"
    exit_code = ExitCode.ERROR

    def __init__(self, key: str, reason: str, *, code: str, extra: Mapping[str, Any] | None = None):
        issues = (extra or {}).get("issues") or []
        detail = f" ({issues[0]}{f'; {len(issues) - 1} more' if len(issues) > 1 else ''})" if issues else ""
        super().__init__(f"Session {key} was not compacted: {reason}{detail}")
        self.key = key
        self.reason = reason
        self.code = code
        self.extra = dict(extra or {})

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": False,
            "key": self.key,
            "compacted": False,
            "reason": self.reason,
            "code": self.code,
            **self.extra,
            "error": {"type": self.type, "message": self.message},
        }


# ---- settings ----------------------------------------------------------------------------------------


def library_settings(config: Any) -> Any:
    """`agents.defaults.compaction` (validated by the config layer) as the compaction library's
    settings; `keep_recent_tokens` is set only when it was configured explicitly (D16)."""
    from openclaw_cli.compaction.thresholds import CompactionSettings
    from openclaw_cli.config import compaction_settings

    c = compaction_settings(config)
    explicit = getattr(c, "keep_recent_tokens_explicit", False)
    guard = getattr(c, "quality_guard_enabled", None)
    return CompactionSettings(
        enabled=bool(getattr(c, "enabled", True)),
        mode=getattr(c, "mode", None) or "default",
        provider=getattr(c, "provider", None) or None,
        reserve_tokens=getattr(c, "reserve_tokens", None),
        reserve_tokens_floor=int(getattr(c, "reserve_tokens_floor", 20000)),
        keep_recent_tokens=getattr(c, "keep_recent_tokens", None) if explicit else None,
        max_history_share=float(getattr(c, "max_history_share", 0.5)),
        recent_turns_preserve=int(getattr(c, "recent_turns_preserve", 3)),
        identifier_policy=getattr(c, "identifier_policy", None) or "strict",
        identifier_instructions=getattr(c, "identifier_instructions", None),
        quality_guard_enabled=guard,
        quality_guard_max_retries=int(getattr(c, "quality_guard_max_retries", 1)),
        truncate_after_compaction=bool(getattr(c, "truncate_after_compaction", False)),
        post_compaction_sections=getattr(c, "post_compaction_sections", None),
    )


def _workspace(ctx: Any, agent_id: str) -> Any:
    """Where the agent's AGENTS.md is read for `postCompactionSections` (safeguard mode only)."""
    from openclaw_cli.config import workspace_dir

    return workspace_dir(ctx.config, agent_id, ctx.paths)


def _timeout_seconds(config: Any) -> float:
    from openclaw_cli.config import compaction_settings

    value = getattr(compaction_settings(config), "timeout_seconds", None)
    return float(value) if isinstance(value, int | float) and value > 0 else 180.0


def _configured_model(config: Any) -> str | None:
    from openclaw_cli.config import compaction_settings

    model = getattr(compaction_settings(config), "model", None)
    return model.strip() if isinstance(model, str) and model.strip() else None


def resolve_provider(
    config: Any, flag: str | None, settings: Any
) -> tuple[str | None, dict[str, Any] | None]:
    """(provider id for `summarize_plan`, provider config). `--provider` wins over
    `compaction.provider`; `openai` is the OpenAI-compatible HTTP provider configured from the
    `OPENCLAW_COMPACTION_*` environment, with `compaction.model` / `compaction.timeoutSeconds`
    filling what the environment leaves unset. Unknown ids given on the command line are usage
    errors; a configured one that is not installed falls back to the built-in summariser."""
    from openclaw_cli.compaction import providers as prov

    name = (flag or "").strip() or settings.provider or prov.BUILTIN_ID
    if name == prov.BUILTIN_ID:
        return None, None
    if name in ("openai", prov.OPENAI_ID):
        try:
            env = prov.openai_config_from_env() or {}
        except prov.ProviderError:
            env = {}  # load_provider reports it as the fallback reason
        extra: dict[str, Any] = {}
        model = _configured_model(config)
        if not env.get("model") and model:
            extra["model"] = model.split("/", 1)[1] if "/" in model else model
        if "timeout_s" not in env:
            extra["timeout_s"] = _timeout_seconds(config)
        return name, extra
    if flag and name not in prov.available_providers():
        raise UsageError(
            f'Unknown compaction provider "{name}". Available: '
            f"{', '.join(['openai', *prov.available_providers()])}."
        )
    return name, None


def context_window(config: Any, entry: Mapping[str, Any], agent_id: str | None = None) -> int:
    """The row's `contextTokens` (the window OpenClaw resolved for its model), else the model's
    known window, else `agents.defaults.contextTokens`, else 200000."""
    from openclaw_cli.compaction.thresholds import resolve_context_window
    from openclaw_cli.config import context_tokens_default, default_model

    stored = entry.get("contextTokens")
    if isinstance(stored, int | float) and not isinstance(stored, bool) and stored == stored and stored > 0:
        return int(stored)
    model = entry.get("model") if isinstance(entry.get("model"), str) else default_model(config, agent_id)
    provider = entry.get("modelProvider") if isinstance(entry.get("modelProvider"), str) else None
    if isinstance(model, str) and "/" in model and provider is None:
        provider, model = model.split("/", 1)
    return resolve_context_window(
        model, provider=provider, agent_context_tokens=context_tokens_default(config)
    )


# ---- one session ---------------------------------------------------------------------------------------


def check_args(
    keep_recent_tokens: int | None, max_lines: int | None, tokenizer: str, provider: str | None
) -> None:
    if tokenizer not in ("exact", "estimate"):
        raise UsageError(f'--tokenizer must be "exact" or "estimate" (got "{tokenizer}").')
    if keep_recent_tokens is not None and (isinstance(keep_recent_tokens, bool) or keep_recent_tokens < 1):
        raise UsageError(
            "--keep-recent-tokens must be a positive integer, for example --keep-recent-tokens 20000."
        )
    if max_lines is not None:
        if isinstance(max_lines, bool) or max_lines < 1:
            raise UsageError("--max-lines must be a positive integer, for example --max-lines 200.")
        if keep_recent_tokens is not None or provider:
            raise UsageError(
                "--max-lines keeps raw transcript lines; it cannot be combined with "
                "--keep-recent-tokens or --provider."
            )


def _now(ctx: Any, now_ms: int | None) -> int:
    return ctx.now_ms() if now_ms is None else int(now_ms)


def _replan_entry(st: SessionStore, key: str, attempt: int) -> dict[str, Any]:
    """The session changed between snapshot and write: re-read its row for another attempt."""
    from openclaw_cli.store.snapshot import SnapshotChanged

    if attempt >= MAX_ATTEMPTS:
        raise SnapshotChanged(key)
    fresh = st.get_entry(key)
    if fresh is None:
        raise NotFoundError(f"Session not found: {key}. It was removed while being compacted.")
    return fresh


def compact_in_store(
    ctx: Any,
    agent_id: str,
    st: SessionStore,
    key: str,
    entry: dict[str, Any],
    *,
    keep_recent_tokens: int | None = None,
    max_lines: int | None = None,
    provider: str | None = None,
    tokenizer: TokenizerName = "exact",
    dry_run: bool = False,
    instructions: str | None = None,
    reason: str = "manual",
    require_over_threshold: bool = False,
    now_ms: int | None = None,
    keep_session_id: bool = False,
) -> dict[str, Any]:
    """Compact one session of an open store (see the module doc). `dry_run` reads only (no
    lock, no write). `keep_session_id`: `max_lines` keeps the session's id (its behaviour
    release's rule, spec D23)."""
    if not dry_run:
        st.ensure_writable("compact a session")
        _sweep_leftovers(ctx, st)
    if max_lines is not None:
        return _compact_max_lines(
            ctx, agent_id, st, key, entry, max_lines, dry_run, _now(ctx, now_ms), keep_session_id
        )
    return _compact_summary(
        ctx,
        agent_id,
        st,
        key,
        entry,
        keep_recent_tokens=keep_recent_tokens,
        provider=provider,
        tokenizer=tokenizer,
        dry_run=dry_run,
        instructions=instructions,
        reason=reason,
        require_over_threshold=require_over_threshold,
        now_ms=now_ms,
    )


# Planning and summarising hold every parsed entry of a transcript (tens of thousands of dicts);
# the cyclic GC would rescan them again and again (~20 % of the run) for no gain.
_gc_paused = gc_paused


def _sweep_leftovers(ctx: Any, st: SessionStore) -> None:
    """A killed compaction's partial archive, successor temp and locks go first (issue 13 case 8)."""
    from openclaw_cli.config import write_lock_settings
    from openclaw_cli.store.leftovers import sweep_crash_leftovers

    sweep_crash_leftovers(st.sessions_dir, write_lock_settings(ctx.config))


def _finish_rotation(
    st: SessionStore,
    snapshot: Any,
    plan: Any,
    *,
    settings: Any,
    lock_settings: Any,
    dry_run: bool,
    agent_id: str,
    key: str,
    reason: str,
    stamp: int,
) -> dict[str, Any] | None:
    """ "Already compacted" because a kill came between the compaction entry and the successor:
    finish the rotation instead of reporting nothing to do."""
    if dry_run or not settings.truncate_after_compaction:
        return None
    comp = st.pending_rotation(snapshot)
    if comp is None:
        return None
    with _writer(st, lock_settings):
        written = st.finish_rotation(snapshot, comp, now_ms=stamp, lock_settings=lock_settings, reason=reason)
    if written.successor is None:
        return None
    result = {
        "ok": True,
        "key": key,
        "compacted": True,
        "resumed": True,
        "dryRun": False,
        "agentId": agent_id,
        "sessionId": written.session_id,
        "previousSessionId": snapshot.session_id,
        "path": str(st.path),
        "compactionEntryId": comp.get("id"),
        "successor": written.successor,
        "archive": written.archive,
    }
    if written.entry is not None:
        result["compactionCount"] = written.entry.get("compactionCount")
    if written.warnings:
        result["warnings"] = written.warnings
    return result


def _shedder(method: str) -> Any:
    from openclaw_cli.compaction import shedding

    if method == "exact":
        return shedding.ToolOutputShedder(shedding.WINDOW_CHARS, shedding.BLOCK_CHARS)
    return shedding.ToolOutputShedder(shedding.ESTIMATE_WINDOW_CHARS, shedding.BLOCK_CHARS, slim_fields=False)


def _writer(st: SessionStore, lock_settings: Any) -> Any:
    """The store's single writer (maintenance.md §11, D9/D12): one mutation at a time per store in
    this process; `sessions.json`'s lock or a SQLite write-lock probe across processes; a busy
    SQLite store reported with OpenClaw's lock-timeout wording."""
    from openclaw_cli.store.writer import store_writer

    return store_writer(st, lock_settings)


def _skip(key: str, plan: Any, snapshot: Any) -> CompactionSkipped:
    """Nothing to do; problems met while reading (a symlinked or malformed transcript) say why."""
    extra = {"issues": [str(issue) for issue in snapshot.issues]} if snapshot.issues else None
    return CompactionSkipped(
        key, plan.reason or "nothing compactable in this session yet", code=plan.status, extra=extra
    )


def _cut_point(snapshot: Any, plan: Any) -> dict[str, Any] | None:
    if plan.hard_checkpoint or plan.first_kept_index is None:
        return None
    branch = snapshot.branch_entries
    first = branch[plan.first_kept_index] if plan.first_kept_index < len(branch) else {}
    raw_message = first.get("message")
    message = raw_message if isinstance(raw_message, dict) else {}
    return {
        "entryId": plan.first_kept_entry_id,
        "index": plan.first_kept_index,
        "branchEntries": len(branch),
        "type": first.get("type"),
        "role": message.get("role"),
        "timestamp": first.get("timestamp"),
        "splitTurn": plan.is_split_turn,
        "turnStartEntryId": branch[plan.turn_start_index].get("id") if plan.is_split_turn else None,
    }


def _compact_summary(
    ctx: Any,
    agent_id: str,
    st: SessionStore,
    key: str,
    entry: dict[str, Any],
    *,
    keep_recent_tokens: int | None,
    provider: str | None,
    tokenizer: TokenizerName,
    dry_run: bool,
    instructions: str | None,
    reason: str,
    require_over_threshold: bool,
    now_ms: int | None,
) -> dict[str, Any]:
    from openclaw_cli.compaction.thresholds import DEFAULT_KEEP_RECENT_TOKENS, compaction_threshold
    from openclaw_cli.compaction.tokens import Tokenizer

    settings = library_settings(ctx.config)
    keep = keep_recent_tokens if keep_recent_tokens is not None else settings.keep_recent_tokens
    if keep is None and require_over_threshold:
        keep = DEFAULT_KEEP_RECENT_TOKENS  # threshold compaction keeps the engine's recent tail
    hard = keep is None
    window = context_window(ctx.config, entry, agent_id)
    threshold = compaction_threshold(window, settings)
    provider_id, provider_config = resolve_provider(ctx.config, provider, settings)
    counter = Tokenizer(tokenizer)
    if tokenizer == "exact":
        from openclaw_cli.compaction.tokens import preload_encoding

        preload_encoding()  # before the transcript is read: their peaks do not add up
    lock_settings = None
    if not dry_run:
        from openclaw_cli.config import write_lock_settings

        lock_settings = write_lock_settings(ctx.config)
    # The built-in path runs with the cyclic GC paused from the read to the write: the parsed
    # transcript (hundreds of thousands of objects) is freed by reference counting when the
    # attempt returns, before the GC is back (re-enabled while they lived, it rescans them all).
    # A network provider's call (maybe minutes) never runs with the GC paused.
    with _gc_paused() if provider_id is None else nullcontext():
        try:
            return _summary_attempts(
                ctx,
                agent_id,
                st,
                key,
                entry,
                settings=settings,
                keep=keep,
                hard=hard,
                window=window,
                threshold=threshold,
                provider_id=provider_id,
                provider_config=provider_config,
                counter=counter,
                lock_settings=lock_settings,
                dry_run=dry_run,
                instructions=instructions,
                reason=reason,
                require_over_threshold=require_over_threshold,
                now_ms=now_ms,
            )
        finally:
            # the loader holds the transcript read: freed before the GC is back (it would scan it all)
            counter.loader = None


def _summary_attempts(
    ctx: Any,
    agent_id: str,
    st: SessionStore,
    key: str,
    entry: dict[str, Any],
    *,
    settings: Any,
    keep: int | None,
    hard: bool,
    window: int,
    threshold: int,
    provider_id: str | None,
    provider_config: dict[str, Any] | None,
    counter: Any,
    lock_settings: Any,
    dry_run: bool,
    instructions: str | None,
    reason: str,
    require_over_threshold: bool,
    now_ms: int | None,
) -> dict[str, Any]:
    from openclaw_cli.compaction import (
        ALREADY_COMPACTED,
        build_compaction_entry,
        new_entry_id,
        plan_compaction,
        summarize_plan,
    )
    from openclaw_cli.store.snapshot import SnapshotChanged

    # The built-in summariser (outside safeguard mode) reads only the size, identifiers and failure
    # lines of tool output: the reader keeps those instead of the text (`shedding.py`, issue 15).
    # Safeguard mode and network providers quote or send the texts: they get whole objects.
    shed_tool_output = provider_id is None and settings.effective_mode != "safeguard"
    for attempt in range(1, MAX_ATTEMPTS + 1):
        with _gc_paused():
            shedder = _shedder(counter.method) if shed_tool_output else None
            snapshot = st.read_snapshot(key, entry, data_on_demand=True, on_entry=shedder)
            if shedder is not None:
                shedder.bind(snapshot)
            counter.loader = shedder.whole_messages if shedder is not None else None
            # the threshold re-check decides on tokensBefore: its exact part must pass the threshold
            plan = plan_compaction(
                snapshot.branch_entries,
                keep_recent_tokens=keep,
                hard_checkpoint=hard,
                tokenizer=counter,
                exact_min_tokens=threshold if require_over_threshold else 0,
            )
            if (
                require_over_threshold
                and plan.tokens_before.tokens <= threshold
                and plan.status != ALREADY_COMPACTED
            ):
                raise CompactionSkipped(
                    key,
                    "context is below the compaction threshold",
                    code="below_threshold",
                    extra={
                        "result": {"tokensBefore": plan.tokens_before.tokens},
                        "tokensBeforeMethod": plan.tokens_before.method,
                        "threshold": threshold,
                    },
                )
            if not plan.ready:
                if plan.status == ALREADY_COMPACTED:
                    if shedder is not None and settings.truncate_after_compaction and not dry_run:
                        shedder.restore_all_but()  # a successor is built from whole objects
                    resumed = _finish_rotation(
                        st,
                        snapshot,
                        plan,
                        settings=settings,
                        lock_settings=lock_settings,
                        dry_run=dry_run,
                        agent_id=agent_id,
                        key=key,
                        reason=reason,
                        stamp=_now(ctx, now_ms),
                    )
                    if resumed is not None:
                        return resumed
                raise _skip(key, plan, snapshot)
            if shedder is not None:  # blocks cut by the plan's bounds get their text back
                shedder.settle(plan.messages_to_summarize, plan.turn_prefix_messages)
        # a network provider may take minutes: the GC is paused here only on the built-in path (caller)
        outcome = summarize_plan(
            plan,
            provider_id,
            settings=settings,
            custom_instructions=instructions,
            context_window=window,
            provider_config=provider_config,
            timeout_s=_timeout_seconds(ctx.config),
            workspace_dir=_workspace(ctx, agent_id),
        )
        comp = build_compaction_entry(
            plan,
            outcome.summary,
            entry_id=new_entry_id(snapshot.entry_ids()),
            parent_id=plan.leaf_id,
            tokens_after=outcome.tokens_after,
            details={"provider": outcome.provider_used},
        )
        result: dict[str, Any] = {
            "ok": True,
            "key": key,
            "compacted": not dry_run,
            "result": {"tokensBefore": plan.tokens_before.tokens, "tokensAfter": outcome.tokens_after},
            "dryRun": dry_run,
            "agentId": agent_id,
            "sessionId": snapshot.session_id,
            "path": str(st.path),
            "compactionEntryId": comp["id"],
            "firstKeptEntryId": plan.first_kept_entry_id,
            "hardCheckpoint": plan.hard_checkpoint,
            "keepRecentTokens": plan.keep_recent_tokens,
            "provider": outcome.provider_used,
            "fallbackReason": outcome.fallback_reason,
            "tokenMethod": outcome.token_method,
            "tokensBeforeMethod": plan.tokens_before.method,
            "tokensBeforeDetail": plan.tokens_before.to_json(),
            "contextWindow": window,
            "threshold": threshold,
            "summarizedMessages": plan.summarized_count,
            "keptMessages": len(plan.kept_entries),
            "keptTokens": plan.kept_tokens,
            "splitTurn": plan.is_split_turn,
            "cutPoint": _cut_point(snapshot, plan),
            "summaryChars": len(outcome.summary),
            "identifiersKept": outcome.identifiers_kept,
            "identifiersDropped": outcome.identifiers_dropped,
        }
        if snapshot.issues:
            result["issues"] = [str(issue) for issue in snapshot.issues]
        if dry_run:
            result["summary"] = outcome.summary
            result["truncateAfterCompaction"] = settings.truncate_after_compaction
            return result
        stamp = _now(ctx, now_ms)
        try:
            if shedder is not None and settings.truncate_after_compaction:
                # the successor copies (or re-serialises) every line but the summarised ones
                shedder.restore_all_but(plan.messages_to_summarize, plan.turn_prefix_messages)
            with _writer(st, lock_settings):
                written = st.commit_compaction(
                    snapshot,
                    comp,
                    now_ms=stamp,
                    reason=reason,
                    rotate=settings.truncate_after_compaction,
                    lock_settings=lock_settings,
                )
        except SnapshotChanged:
            entry = _replan_entry(st, key, attempt)
            continue
        result["sessionId"] = written.session_id
        if written.session_id != snapshot.session_id:
            result["previousSessionId"] = snapshot.session_id
        if written.entry is not None:
            result["compactionCount"] = written.entry.get("compactionCount")
        result["successor"] = written.successor
        result["archive"] = written.archive
        if written.warnings:
            result["warnings"] = written.warnings
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _compact_max_lines(
    ctx: Any,
    agent_id: str,
    st: SessionStore,
    key: str,
    entry: dict[str, Any],
    max_lines: int,
    dry_run: bool,
    stamp: int,
    keep_session_id: bool = False,
) -> dict[str, Any]:
    from openclaw_cli.store.rewrite import max_lines_split
    from openclaw_cli.store.snapshot import SnapshotChanged

    lock_settings = None
    if not dry_run:
        from openclaw_cli.config import write_lock_settings

        lock_settings = write_lock_settings(ctx.config)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        snapshot = st.read_snapshot(key, entry)
        if not snapshot.data.strip():
            extra = {"issues": [str(issue) for issue in snapshot.issues]} if snapshot.issues else None
            raise CompactionSkipped(
                key, "nothing compactable in this session yet", code="no_compactable_entries", extra=extra
            )
        kept, dropped, total = max_lines_split(snapshot.data, max_lines)
        result: dict[str, Any] = {
            "ok": True,
            "key": key,
            "compacted": bool(dropped) and not dry_run,
            "kept": len(kept),
            "dryRun": dry_run,
            "agentId": agent_id,
            "sessionId": snapshot.session_id,
            "path": str(st.path),
            "maxLines": max_lines,
            "lines": total,
            "dropped": dropped,
        }
        if not dropped:
            result["reason"] = f"transcript already has at most {max_lines} lines"
            return result
        if dry_run:
            # what the apply would do to the id (spec D23: our SQLite store starts a successor
            # window under 2026.7; 2026.9.6+ and the other stores keep the id)
            result["keepsSessionId"] = keep_session_id or not st.max_lines_opens_successor
            return result
        try:
            with _writer(st, lock_settings):
                written = st.commit_max_lines(
                    snapshot, kept, now_ms=stamp, lock_settings=lock_settings, keep_session_id=keep_session_id
                )
        except SnapshotChanged:
            entry = _replan_entry(st, key, attempt)
            continue
        result["sessionId"] = written.session_id
        if written.session_id != snapshot.session_id:
            result["previousSessionId"] = snapshot.session_id
        else:  # issue 27: the dropped lines' usage stays in the ledger (a successor window keeps them)
            _ledger_dropped(st, key, snapshot, kept, stamp)
        result["successor"] = written.successor
        result["archive"] = written.archive
        if written.warnings:
            result["warnings"] = written.warnings
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _ledger_dropped(st: SessionStore, key: str, snapshot: Any, kept: list[bytes], now_ms: int) -> None:
    """A max-lines compaction that kept the session's id: the usage of the lines it dropped, as a
    ledger delta record (counted whatever becomes of the session)."""
    from openclaw_cli.keys import session_kind
    from openclaw_cli.store.usage_ledger import (
        Usage,
        append_lines,
        ledger_path,
        lines_usage,
        state_dir_of,
        usage_record,
    )

    state = state_dir_of(st)
    if state is None:
        return
    before = lines_usage(bytes(snapshot.data).split(b"\n"))
    dropped = Usage()
    dropped.add(before)
    dropped.add(lines_usage(kept), sign=-1)
    dropped.model, dropped.provider = before.model, before.provider
    if not dropped.totals[6]:
        return  # no usage left with the dropped lines
    record = usage_record(
        agent_id=st.agent_id,
        key=key,
        session_id=snapshot.session_id,
        kind=session_kind(
            key, snapshot.entry if isinstance(getattr(snapshot, "entry", None), dict) else None
        ),
        reason="compaction",
        usage=dropped,
        now_ms=now_ms,
        delta=True,
    )
    append_lines(ledger_path(state, st.agent_id), [record])


# ---- every session past its threshold -------------------------------------------------------------------


def _finite_nonneg(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return None
    if value == float("inf"):
        return None
    return value


def stored_context_tokens(
    entry: Mapping[str, Any], totals: Any = None, file_bytes: int | None = None
) -> tuple[int, str] | None:
    """(tokens, source) from stored figures only (D16): `totalTokens` unless `totalTokensFresh` is
    false (R2.5.1, profile L), else the write-time token estimate, else bytes / 4."""
    total = _finite_nonneg(entry.get("totalTokens"))
    if total is not None and entry.get("totalTokensFresh") is not False:
        return int(total), "totalTokens"
    estimate = getattr(totals, "token_estimate", None)
    if isinstance(estimate, int) and estimate > 0:
        return estimate, "tokenEstimate"
    size = file_bytes if file_bytes is not None else getattr(totals, "bytes", None)
    if isinstance(size, int) and size > 0:
        return -(-size // 4), "bytes/4"
    return None


def scan_store(ctx: Any, st: SessionStore, agent_id: str, settings: Any) -> tuple[int, list[dict[str, Any]]]:
    """(sessions checked, sessions past their threshold) of one store, from stored figures."""
    from openclaw_cli.compaction.thresholds import compaction_threshold

    entries = st.load_entries()
    totals = st.stored_session_totals()
    found: list[dict[str, Any]] = []
    thresholds: dict[int, int] = {}
    for key, entry in entries.items():
        sid = entry.get("sessionId") if isinstance(entry, dict) else None
        if not isinstance(sid, str) or not sid:
            continue
        figure = stored_context_tokens(entry, totals.get(sid))
        if figure is None:
            size = st.transcript_file_bytes(sid, entry)
            if size is not None:
                figure = stored_context_tokens(entry, None, size)
        if figure is None:
            continue
        window = context_window(ctx.config, entry, agent_id)
        threshold = thresholds.get(window)
        if threshold is None:
            threshold = thresholds[window] = compaction_threshold(window, settings)
        tokens, source = figure
        if tokens > threshold:
            found.append(
                {
                    "agentId": agent_id,
                    "key": key,
                    "sessionId": sid,
                    "tokens": tokens,
                    "tokenSource": source,
                    "contextWindow": window,
                    "threshold": threshold,
                }
            )
    return len(entries), found
