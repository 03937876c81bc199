"""`openclaw compact` and its alias `openclaw sessions compact` (compaction-lifecycle.md R4.16.7).

Both run the `sessions.compact` operation (`ops.compact`). Compacting one session (no `--dry-run`,
no `--store`) is first sent to the Gateway as `sessions.compact {key, agentId?, maxLines?}` plus our
local extensions only when given (`keepRecentTokens`, `provider`, `tokenizer`, `instructions`:
a real OpenClaw Gateway rejects them); it runs locally only when nothing listens (spec D9/D20).
`--over-threshold` has no Gateway method: it refuses while a Gateway listens (unless `--store`).
`--json` prints one document on stdout (OpenClaw's `{ok, key, compacted, result|kept}` plus our
fields); the text report goes to stdout too (spec D19), hints and warnings to stderr. A session
with nothing to compact is a success (`compacted: false` and the reason, exit 0); refusals exit
non-zero with the typed error's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import typer

from openclaw_cli.cli.common import echo_json, run, say_hints
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL
from openclaw_cli.cli.store_options import NO_BACKUP

if TYPE_CHECKING:
    from openclaw_cli.compaction.service import TokenizerName


def _complete_key(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import session_keys

    return session_keys(ctx, incomplete)


def _complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import agent_ids

    return agent_ids(ctx, incomplete)


KEY = typer.Argument(
    None,
    help="The session key to compact (omit with --over-threshold).",
    show_default=False,
    autocompletion=_complete_key,
)
KEEP = typer.Option(
    None,
    "--keep-recent-tokens",
    metavar="<n>",
    help="Keep about N recent tokens verbatim (default: agents.defaults.compaction.keepRecentTokens "
    "if configured, else a hard checkpoint: the context restarts at the summary).",
)
MAX_LINES = typer.Option(
    None,
    "--max-lines",
    metavar="<n>",
    help="OpenClaw's line mode: keep the header and the last N-1 transcript lines "
    "(the dropped prefix is archived first).",
)
PROVIDER = typer.Option(
    None,
    "--provider",
    metavar="<id>",
    help="Summary provider: builtin, openai (OPENCLAW_COMPACTION_* environment) or an "
    "installed entry-point provider. Failures fall back to builtin.",
)
TOKENIZER = typer.Option(
    "exact",
    "--tokenizer",
    metavar="<exact|estimate>",
    help="Token counts: exact (tiktoken cl100k) or estimate (chars/4; CJK and other scripts "
    "weighted as cl100k counts them).",
)
INSTRUCTIONS = typer.Option(
    None, "--instructions", metavar="<text>", help="Extra focus for the summary (like /compact TEXT)."
)
OVER = typer.Option(
    False,
    "--over-threshold",
    help="Compact every session whose stored context size is past window - reserve.",
)
DRY_RUN = typer.Option(
    False, "--dry-run", help="Show the cut point, token counts and summary; write nothing."
)
AGENT = typer.Option(
    None,
    "--agent",
    metavar="<id>",
    autocompletion=_complete_agent,
    help="The agent's store (default: the agent a KEY names, else the default agent).",
)
ALL_AGENTS = typer.Option(False, "--all-agents", help="With --over-threshold: every agent's store.")
STORE = typer.Option(
    None,
    "--store",
    metavar="<path>",
    help="An explicit store: a legacy sessions.json or an agent .sqlite (offline repair).",
)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
HELP = (
    "Compact a session: summarise older history into a compaction entry (append-only), or with "
    "--max-lines keep only the last lines."
)


def compact_command(
    *,
    key: str | None,
    keep_recent_tokens: int | None,
    max_lines: int | None,
    provider: str | None,
    tokenizer: str,
    instructions: str | None,
    over_threshold: bool,
    dry_run: bool,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    json_mode: bool,
    gateway: dict[str, Any] | None = None,
    no_backup: bool = False,
) -> None:
    def body() -> None:
        from openclaw_cli.cli.common import load_context
        from openclaw_cli.cli.delegation import delegate, ensure_no_gateway, gateway_options, given
        from openclaw_cli.compaction.service import check_args
        from openclaw_cli.errors import UsageError

        if over_threshold and key:
            raise UsageError("Pass either a session KEY or --over-threshold, not both.")
        if not over_threshold and not (key and key.strip()):
            raise UsageError(
                "Missing session KEY (or use --over-threshold). Run openclaw sessions list --json "
                "to choose a valid key."
            )
        if all_agents and not over_threshold:
            raise UsageError("--all-agents only applies with --over-threshold.")
        if over_threshold and max_lines is not None:
            raise UsageError("--max-lines cannot be combined with --over-threshold.")
        gw_options = gateway_options(**(gateway or {}))
        cx = load_context(backup=not no_backup)
        from openclaw_cli.cli.delegation import follow_owner

        follow_owner(cx, gw_options, dry_run=dry_run, store=store)  # D23: as the Gateway would apply it
        if over_threshold and not dry_run and not store:
            ensure_no_gateway(gw_options, paths=cx.paths, config=cx.config, what="compact --over-threshold")
        if not over_threshold:
            check_args(keep_recent_tokens, max_lines, tokenizer, provider)
            params = given(
                key=key,
                agentId=agent,
                maxLines=max_lines,
                keepRecentTokens=keep_recent_tokens,
                provider=provider,
                tokenizer=None if tokenizer == "exact" else tokenizer,
                instructions=instructions,
                dryRun=dry_run,
                store=store,
            )
            served = delegate("sessions.compact", params, gw_options, paths=cx.paths, config=cx.config)
            if served is not None:
                _report_served(served, cx, json_mode)
                return
        if over_threshold:
            from openclaw_cli.ops.compact import compact_over_threshold

            result = compact_over_threshold(
                cx,
                agent=agent,
                all_agents=all_agents,
                store=store,
                dry_run=dry_run,
                keep_recent_tokens=keep_recent_tokens,
                provider=provider,
                tokenizer=cast("TokenizerName", tokenizer),  # checked there (check_args)
                instructions=instructions,
            )
            if json_mode:
                echo_json(result)
            else:
                render_over_threshold(result)
            if not result["ok"]:
                raise typer.Exit(1)
            return
        from openclaw_cli.ops.compact import compact_or_skip

        result = compact_or_skip(
            cx,
            key or "",
            agent=agent,
            store=store,
            keep_recent_tokens=keep_recent_tokens,
            max_lines=max_lines,
            provider=provider,
            tokenizer=cast("TokenizerName", tokenizer),  # checked above (check_args)
            dry_run=dry_run,
            instructions=instructions,
        )
        if json_mode:
            if cx.hints and "hint" not in result:
                result["hint"] = " ".join(cx.hints)
            echo_json(result)
        elif not result.get("compacted") and "reason" in result:
            render_skipped(result)
        elif max_lines is not None:
            render_max_lines(result)
        else:
            render_session(result)
        if not json_mode:
            say_hints(cx.hints)

    run(body, json_mode=json_mode)


def _report_served(result: dict[str, Any], cx: Any, json_mode: bool) -> None:
    """The Gateway's `{ok, key, compacted, kept|result|reason}` as received; `ok:false` exits 1 (the
    real CLI does)."""
    from openclaw_cli.output import err, out, sanitize_text

    if json_mode:
        echo_json(result)
    else:
        key = sanitize_text(result.get("key"))
        if result.get("ok") is False:
            err(f"{key}: not compacted ({sanitize_text(result.get('reason') or 'no reason given')}).")
        elif not result.get("compacted"):
            render_skipped(result)
        elif "dropped" in result:  # our Gateway: the local document
            render_max_lines(result)
        elif "tokenMethod" in result:
            render_session(result)
        else:  # OpenClaw's Gateway: {ok, key, compacted, kept} or {…, result}
            kept = f"kept {result['kept']} lines" if "kept" in result else "compacted"
            out(f"{key}: {kept} (compacted by the Gateway).")
    say_hints(cx.hints)
    if result.get("ok") is False:
        raise typer.Exit(1)


# ---- text rendering (stdout; stored data always sanitised, D6.8) -------------------------------------------


def _fmt(value: Any) -> str:
    from openclaw_cli.cli.cells import format_token_count

    return format_token_count(value)


def _context_line(result: dict[str, Any]) -> str:
    figures = result.get("result") or {}
    before, after = figures.get("tokensBefore"), figures.get("tokensAfter")
    window = result.get("contextWindow")
    text = f"({_fmt(before)} → {_fmt(after)})"
    if isinstance(after, int) and isinstance(window, int) and window > 0:
        text += f" • Context {_fmt(after)}/{_fmt(window)} ({round(after * 100 / window)}%)"
    return text


def render_session(result: dict[str, Any]) -> None:
    from openclaw_cli.output import err, out, sanitize_text

    key = sanitize_text(result.get("key"))
    if result.get("dryRun"):
        out("Dry run: nothing was written.")
        out(f"Would compact {key} {_context_line(result)}")
    else:
        out(f"Compacted {key} {_context_line(result)}")
    methods = f"tokens: {result.get('tokenMethod')} (before: {result.get('tokensBeforeMethod')})"
    out(
        f"  provider: {sanitize_text(result.get('provider'))} · {methods} · threshold {_fmt(result.get('threshold'))}"
    )
    if result.get("fallbackReason"):
        out(f"  fallback: {sanitize_text(result['fallbackReason'])}")
    cut = result.get("cutPoint")
    if result.get("hardCheckpoint") or not cut:
        out(
            "  hard checkpoint: the rebuilt context starts at the summary (pass --keep-recent-tokens N to keep "
            "a recent tail)"
        )
    else:
        split = " (splits an oversized turn)" if cut.get("splitTurn") else ""
        out(
            f"  cut point: entry {sanitize_text(cut.get('entryId'))} ({sanitize_text(cut.get('role') or cut.get('type'))}, "
            f"{sanitize_text(cut.get('timestamp'))}), entry {cut.get('index')} of {cut.get('branchEntries')}{split}"
        )
    out(
        f"  summarised {result.get('summarizedMessages')} messages, kept {result.get('keptMessages')} "
        f"({_fmt(result.get('keptTokens'))} tokens); summary {result.get('summaryChars')} chars"
    )
    kept, dropped = result.get("identifiersKept"), result.get("identifiersDropped")
    if isinstance(kept, list) and isinstance(dropped, list):
        note = f" ({len(dropped)} left out: see identifiersDropped in --json)" if dropped else ""
        out(f"  identifiers: {len(kept)} kept in the summary{note}")
    successor = result.get("successor")
    if successor:
        where = successor.get("sessionFile") or f"session window {successor.get('sessionId')}"
        out(
            f"  successor transcript: {sanitize_text(where)} (previous {sanitize_text(successor.get('previousSessionId'))})"
        )
    elif result.get("dryRun") and result.get("truncateAfterCompaction"):
        out("  truncateAfterCompaction: a successor transcript would become the active one")
    archive = result.get("archive")
    if archive:
        out(f"  archive: {sanitize_text(archive.get('path'))}")
    for warning in result.get("warnings") or []:
        err(f"  warning: {sanitize_text(warning)}")
    for issue in result.get("issues") or []:
        err(f"  skipped unreadable line: {sanitize_text(issue)}")
    if result.get("dryRun") and isinstance(result.get("summary"), str):
        out("Summary:")
        for line in result["summary"].splitlines():
            out(f"  {sanitize_text(line)}")


def render_max_lines(result: dict[str, Any]) -> None:
    from openclaw_cli.output import err, out, sanitize_text

    key = sanitize_text(result.get("key"))
    if not result.get("dropped"):
        out(f"{key}: nothing to drop ({sanitize_text(result.get('reason'))}).")
        return
    verb = "Would keep" if result.get("dryRun") else "Kept"
    if result.get("dryRun"):
        out("Dry run: nothing was written.")
    out(
        f"{key}: {verb} {result.get('kept')} of {result.get('lines')} lines ({result.get('dropped')} dropped)."
    )
    if result.get("archive"):
        out(f"  archive of the full transcript: {sanitize_text(result['archive'].get('path'))}")
    if result.get("successor"):
        out(f"  successor session window: {sanitize_text(result['successor'].get('sessionId'))}")
    for warning in result.get("warnings") or []:
        err(f"  warning: {sanitize_text(warning)}")


def render_over_threshold(result: dict[str, Any]) -> None:
    from openclaw_cli.output import err, out, sanitize_text

    if result.get("dryRun"):
        out("Dry run: nothing was written (sizes from stored figures; a real run re-counts each session).")
    for item in result.get("sessions") or []:
        line = (
            f"{sanitize_text(item.get('key'))}: {_fmt(item.get('tokens'))} > {_fmt(item.get('threshold'))} "
            f"({sanitize_text(item.get('tokenSource'))}, window {_fmt(item.get('contextWindow'))})"
        )
        if item.get("compacted"):
            figures = item.get("result") or {}
            line += f" → compacted ({_fmt(figures.get('tokensBefore'))} → {_fmt(figures.get('tokensAfter'))})"
        elif item.get("reason"):
            line += f" → skipped: {sanitize_text(item['reason'])}"
        elif item.get("error"):
            line += f" → failed: {sanitize_text(item['error'].get('message'))}"
        out(line)
    verb = "would compact" if result.get("dryRun") else "compacted"
    count = result.get("candidates") if result.get("dryRun") else result.get("compacted")
    out(
        f"{result.get('checked')} sessions checked, {result.get('candidates')} over threshold, {verb} {count}"
        + (
            ""
            if result.get("dryRun")
            else f", skipped {result.get('skipped')}, failed {result.get('failed')}"
        )
        + "."
    )
    if result.get("hint"):
        err(f"Hint: {sanitize_text(result['hint'])}")


def render_skipped(result: dict[str, Any]) -> None:
    from openclaw_cli.output import out, sanitize_text

    out(f"{sanitize_text(result.get('key'))}: nothing to compact ({sanitize_text(result.get('reason'))}).")


# ---- registration ------------------------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    from openclaw_cli.cli.sessions import sessions_app

    @app.command("compact", help=HELP)
    def top_compact(
        key: str = KEY,
        keep_recent_tokens: int = KEEP,
        max_lines: int = MAX_LINES,
        provider: str = PROVIDER,
        tokenizer: str = TOKENIZER,
        instructions: str = INSTRUCTIONS,
        over_threshold: bool = OVER,
        dry_run: bool = DRY_RUN,
        agent: str = AGENT,
        all_agents: bool = ALL_AGENTS,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        compact_command(
            key=key,
            keep_recent_tokens=keep_recent_tokens,
            max_lines=max_lines,
            provider=provider,
            tokenizer=tokenizer,
            instructions=instructions,
            over_threshold=over_threshold,
            dry_run=dry_run,
            agent=agent,
            all_agents=all_agents,
            store=store,
            json_mode=json_mode,
            gateway={"url": url, "token": token, "password": password, "timeout": timeout},
            no_backup=no_backup,
        )

    @sessions_app.command("compact", help=HELP + " Same as `openclaw compact`.")
    def sessions_compact(
        ctx: typer.Context,
        key: str = KEY,
        keep_recent_tokens: int = KEEP,
        max_lines: int = MAX_LINES,
        provider: str = PROVIDER,
        tokenizer: str = TOKENIZER,
        instructions: str = INSTRUCTIONS,
        over_threshold: bool = OVER,
        dry_run: bool = DRY_RUN,
        agent: str = AGENT,
        all_agents: bool = ALL_AGENTS,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        parent = ctx.parent.obj if ctx.parent is not None and isinstance(ctx.parent.obj, dict) else {}
        compact_command(
            key=key,
            keep_recent_tokens=keep_recent_tokens,
            max_lines=max_lines,
            provider=provider,
            tokenizer=tokenizer,
            instructions=instructions,
            over_threshold=over_threshold,
            dry_run=dry_run,
            agent=agent or parent.get("agent"),
            all_agents=all_agents or bool(parent.get("all_agents")),
            store=store or parent.get("store"),
            json_mode=json_mode or bool(parent.get("json")),
            gateway={"url": url, "token": token, "password": password, "timeout": timeout},
            no_backup=no_backup,
        )
