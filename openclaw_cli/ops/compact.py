"""`sessions.compact` (`openclaw compact`, `openclaw sessions compact`; compaction-lifecycle.md
R4.16.7): resolve the session, compact it in its store (`compaction.service`), return
`{ok, key, compacted, result|kept}` plus our fields; and `compact --over-threshold` over every
selected store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openclaw_cli.compaction.service import (
    CompactionSkipped,
    TokenizerName,
    check_args,
    compact_in_store,
    library_settings,
    resolve_provider,
    scan_store,
)
from openclaw_cli.errors import OpenClawError, RefusedError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.sessions import resolve_session
from openclaw_cli.ops.targets import open_target, select_targets

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

__all__ = [
    "CompactionSkipped",
    "compact_or_skip",
    "compact_over_threshold",
    "compact_session",
    "sessions_compact",
]


def compact_session(
    ctx: Context,
    key: str,
    *,
    agent: str | None = None,
    store: str | None = None,
    keep_recent_tokens: int | None = None,
    max_lines: int | None = None,
    provider: str | None = None,
    tokenizer: TokenizerName = "exact",
    dry_run: bool = False,
    instructions: str | None = None,
    reason: str = "manual",
    require_over_threshold: bool = False,
    now_ms: int | None = None,
) -> dict[str, Any]:
    """Compact one session; refusals raise typed errors (nothing modified)."""
    check_args(keep_recent_tokens, max_lines, tokenizer, provider)
    target, st, resolved, entry = resolve_session(ctx, key, agent=agent, store=store, read_only=dry_run)
    with st:
        from openclaw_cli.ops.behavior import behavior_of

        lifecycle = behavior_of(ctx, st).lifecycle  # spec D23: the release this store follows
        try:
            return compact_in_store(
                ctx,
                target.agent_id,
                st,
                resolved,
                entry,
                keep_recent_tokens=keep_recent_tokens,
                max_lines=max_lines,
                provider=provider,
                tokenizer=tokenizer,
                dry_run=dry_run,
                instructions=instructions,
                reason=reason,
                require_over_threshold=require_over_threshold,
                now_ms=now_ms,
                keep_session_id=lifecycle.compact_max_lines_keeps_session_id,
            )
        except CompactionSkipped:
            if not dry_run:
                _busy_if_an_import_moved_it(ctx, target.agent_id, st)
            raise
        finally:
            ctx.note_writes(st)


def _busy_if_an_import_moved_it(ctx: Context, agent_id: str, st: SessionStore) -> None:
    """A legacy session that reads as having nothing to compact while `doctor --session-sqlite
    import` runs on its store (or has just published) most likely lost its transcript to the
    import's move: busy (exit 5, run again), not "nothing compactable" (exit 0), which would
    acknowledge a compaction the import then undoes (issue 29 #4; found by the soak's races)."""
    if not st.transcripts_in_files:
        return
    st.ensure_not_moved()  # a database published since the store was opened: SessionBusyError
    from openclaw_cli.errors import OpenClawError, SessionBusyError
    from openclaw_cli.migration.staging import pending_import
    from openclaw_cli.store.state_owner import coordinator_held
    from openclaw_cli.store.writer import owning_state_dir

    state_dir = owning_state_dir(st) or ctx.paths.state_dir
    pending = pending_import(ctx.paths.migration_runs_dir(), state_dir, agent_id)
    if pending is None or pending.state != "incomplete":
        return  # an interrupted import keeps its own hint; nothing is moving now
    try:
        running = coordinator_held(state_dir)
    except OpenClawError:
        running = False
    if running:
        raise SessionBusyError(
            f"The SQLite import of agent {agent_id} (run {pending.run_id}) is moving this store's "
            "transcripts; nothing was changed. Run the command again when it has finished: it then "
            "uses the database."
        )


def skipped_document(exc: CompactionSkipped) -> dict[str, Any]:
    """A session with nothing to compact (no compactable entries, already compacted, below the
    threshold) is a success, not a failure: `{ok: true, key, compacted: false, reason, code}` (a
    nightly `openclaw compact KEY` must not fail on an idle session)."""
    return {
        "ok": True,
        "key": exc.key,
        "compacted": False,
        "reason": exc.reason,
        "code": exc.code,
        **exc.extra,
    }


def compact_or_skip(ctx: Context, key: str, **kwargs: Any) -> dict[str, Any]:
    """`compact_session`, with "nothing to compact" returned as `skipped_document`. Other
    refusals still raise, and so does a skip caused by an unreadable transcript (its `issues`:
    a symbolic link refused, malformed lines): that is not an idle session but a problem."""
    try:
        return compact_session(ctx, key, **kwargs)
    except CompactionSkipped as exc:
        if exc.extra.get("issues"):
            raise
        return skipped_document(exc)


def sessions_compact(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The `sessions.compact` method: `{key, agentId?, maxLines?}` plus the local extensions
    (`keepRecentTokens`, `provider`, `tokenizer`, `instructions`, `dryRun`, `store`)."""
    from openclaw_cli.keys import parse_agent_key

    key = params.get("key") or ""
    agent = params.get("agentId")
    if agent is None and params.get("store") is None:
        parsed = parse_agent_key(key)
        agent = parsed[0] if parsed else None  # an agent-scoped key names its store (as OpenClaw's Gateway)
    return compact_or_skip(
        ctx,
        key,
        agent=agent,
        store=params.get("store"),
        keep_recent_tokens=params.get("keepRecentTokens"),
        max_lines=params.get("maxLines"),
        provider=params.get("provider"),
        tokenizer=params.get("tokenizer") or "exact",
        dry_run=bool(params.get("dryRun")),
        instructions=params.get("instructions"),
    )


def compact_over_threshold(
    ctx: Context,
    *,
    agent: str | None = None,
    all_agents: bool = False,
    store: str | None = None,
    dry_run: bool = False,
    keep_recent_tokens: int | None = None,
    provider: str | None = None,
    tokenizer: TokenizerName = "exact",
    instructions: str | None = None,
    now_ms: int | None = None,
) -> dict[str, Any]:
    """Compact every session past its threshold (from stored figures, D16); a dry run only lists them."""
    check_args(keep_recent_tokens, None, tokenizer, provider)
    settings = library_settings(ctx.config)
    if not dry_run:
        resolve_provider(ctx.config, provider, settings)  # an unknown --provider fails before any write
    targets = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=all_agents, store=store)
    stores: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    checked = 0
    refused: list[str] = []
    for target in targets:
        with open_target(ctx, target, read_only=True) as st:
            count, found = scan_store(ctx, st, target.agent_id, settings)
            checked += count
            candidates.extend(found)
            stores.append(
                {
                    "agentId": target.agent_id,
                    "kind": st.kind,
                    "path": str(st.path),
                    "sessions": count,
                    "overThreshold": len(found),
                }
            )
            if found and not st.accepts_writes:
                refused.append(str(st.path))
    result: dict[str, Any] = {
        "ok": True,
        "dryRun": dry_run,
        "overThreshold": True,
        "checked": checked,
        "candidates": len(candidates),
        "compacted": 0,
        "skipped": 0,
        "failed": 0,
        "stores": stores,
        "sessions": candidates,
    }
    if ctx.hints:
        result["hint"] = " ".join(ctx.hints)
    if dry_run or not candidates:
        return result
    if refused:
        raise RefusedError(
            f"Refusing to compact sessions in {', '.join(refused)}: openclaw-cli does not write "
            "that kind of store; nothing was compacted. Use --dry-run, or select other agents "
            "with --agent."
        )
    for item in candidates:
        try:
            done = compact_session(
                ctx,
                item["key"],
                agent=item["agentId"],
                store=store,
                keep_recent_tokens=keep_recent_tokens,
                provider=provider,
                tokenizer=tokenizer,
                instructions=instructions,
                reason="auto-threshold",
                require_over_threshold=True,
                now_ms=now_ms,
            )
        except CompactionSkipped as exc:
            item.update(compacted=False, reason=exc.reason, code=exc.code)
            if "result" in exc.extra:
                item["result"] = exc.extra["result"]
            result["skipped"] += 1
        except OpenClawError as exc:
            item.update(compacted=False, error={"type": exc.type, "message": exc.message})
            result["failed"] += 1
        else:
            item.update(
                {
                    k: done.get(k)
                    for k in (
                        "compacted",
                        "result",
                        "sessionId",
                        "previousSessionId",
                        "firstKeptEntryId",
                        "provider",
                        "fallbackReason",
                        "tokenMethod",
                        "warnings",
                    )
                    if k in done
                }
            )
            result["compacted"] += 1
    result["ok"] = result["failed"] == 0
    return result
