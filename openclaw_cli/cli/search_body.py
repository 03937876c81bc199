"""The body of `openclaw sessions search QUERY` (ops/search.py), without Typer: the Typer command
(`cli/search.py`) and the fast path (`cli/fast.py`) both run it.

Runs locally from the index in the cache dir, or — when a Gateway owns the state dir and the query
needs nothing it lacks — through its `sessions.search` (ours takes every option; OpenClaw's own
only plain words over live transcripts of one agent)."""

from __future__ import annotations

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any


ROLES = ("user", "assistant", "tool")


def _time_ms(value: str | None, flag: str, now_ms: int) -> int | None:
    """An ISO date/time (UTC unless it says otherwise), epoch milliseconds, or a duration ago
    (`90m`, `7d`)."""
    if value is None:
        return None
    from datetime import UTC, datetime

    from openclaw_cli.errors import UsageError

    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return int(parsed.timestamp() * 1000)
    except ValueError:
        pass
    from openclaw_cli.config.units import parse_duration_ms

    try:
        return now_ms - parse_duration_ms(text, "d")
    except ValueError:
        raise UsageError(
            f"{flag} takes an ISO date or time (2026-11-02, 2026-11-02T10:00Z), epoch milliseconds, "
            f"or a duration ago such as 7d or 90m (got {value!r})."
        ) from None


def _plainly_valid(params: dict[str, Any]) -> bool:
    """Whether the params this command built pass `sessions.search`'s schema (`ops.params`) for
    certain, so the local call may skip it: the method table and the schema module are ~10 ms of
    imports on every search. Holds for ASCII texts (their grapheme count is their length, which
    `search.query.parse` has bounded) and the value kinds built below; anything else is checked
    by the schema itself, with the same error text as before."""

    def text(value: Any) -> bool:
        return isinstance(value, str) and value != ""

    def whole(value: Any) -> bool:
        return type(value) is int and abs(value) <= 9007199254740991

    keys = params.get("sessionKeys")
    return (
        isinstance(params.get("query"), str)
        and params["query"].isascii()
        and 1 <= len(params["query"]) <= 4096
        and all(text(params[k]) for k in ("agent",) if k in params)
        and (keys is None or (isinstance(keys, list) and 1 <= len(keys) <= 200 and all(map(text, keys))))
        and all(whole(params[k]) for k in ("since", "until") if k in params)
        and all(params[k] is True for k in ("allAgents", "fixed", "redact", "reindex") if k in params)
        and isinstance(params.get("archived"), bool)
    )


def _local_search(cx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.search` run here. The schema is the Gateway's, whose `limit` is OpenClaw's 1-25;
    a local search takes up to `ops.search.MAX_LIMIT` (checked by the command before), so the
    schema sees the limit within its bound and the handler the one asked for."""
    from openclaw_cli.ops.search import sessions_search

    if not _plainly_valid(params):
        from openclaw_cli.errors import UsageError
        from openclaw_cli.ops.methods import parse_params

        limit = params["limit"]
        error, checked = parse_params("sessions.search", {**params, "limit": min(limit, 25)}, local=True)
        if error:
            raise UsageError(error)
        params = {**checked, "limit": limit}
    return sessions_search(cx, params)


def _real_gateway_can_serve(params: dict[str, Any], query: Any) -> bool:
    """OpenClaw's own method: plain words, live transcripts, one agent named with its keys, ≤ 25."""
    return (
        query.plain_words()
        and not params.get("archived")
        and not params.get("roles")
        and params.get("since") is None
        and params.get("until") is None
        and not params.get("allAgents")
        and not params.get("reindex")
        and (not params.get("agent") or bool(params.get("sessionKeys")))
        and params.get("limit", 10) <= 25
    )


def _gateway_files(state_dir: Any) -> bool:
    """Whether `<state>/tmp/openclaw-<uid>/` holds what a running Gateway leaves there: our marker
    (`openclaw-cli-gateway.json`), 2026.9.6's `gateway.state.lock` / `gateway.<hash>.lock`, or
    2026.9.8+'s owner file `state.<hash>.lock`. Without any, no Gateway owns the state and the
    probe (imports, the coordinator lock) is skipped: one directory listing."""
    import os

    uid = os.getuid() if hasattr(os, "getuid") else None
    for name in {f"openclaw-{uid}" if uid is not None else "openclaw", "openclaw-user"}:
        try:
            names = os.listdir(os.path.join(state_dir, "tmp", name))
        except OSError:
            continue
        for entry in names:
            if entry == "openclaw-cli-gateway.json" or (
                entry.startswith(("gateway.", "state.")) and ".lock" in entry
            ):
                return True
    return False


def _delegated(cx: Any, params: dict[str, Any], gw: Any) -> dict[str, Any] | None:
    """The owning Gateway's answer, or None to search locally (no Gateway, or one that cannot
    answer this query the same way)."""
    if params.get("store") or not _gateway_files(cx.paths.state_dir):
        return None
    from openclaw_cli.gateway.ownership import read_marker
    from openclaw_cli.search.query import parse
    from openclaw_cli.store.owner_file import pid_alive
    from openclaw_cli.store.state_owner import coordinator_held

    marker = read_marker(cx.paths.state_dir)
    ours = bool(marker and pid_alive(marker.get("pid")))
    if not ours and not coordinator_held(cx.paths.state_dir):
        return None  # nobody owns the state: reading it directly is what the Gateway would do
    query = parse(params["query"], fixed=params.get("fixed") is True)
    if params.get("limit", 10) > 25 or (not ours and not _real_gateway_can_serve(params, query)):
        return None
    from openclaw_cli.cli.delegation import GatewayOptions, delegate
    from openclaw_cli.errors import OpenClawError

    wire = {k: v for k, v in params.items() if k not in ("verbose", "redact") and v not in (None, False)}
    if not ours:
        wire = {k: v for k, v in wire.items() if k in ("query", "limit", "sessionKeys")}
        if params.get("agent"):
            wire["agentId"] = params["agent"]
    gw = gw or GatewayOptions()
    marker_url = marker.get("url") if ours and marker is not None else None
    if not gw.url and isinstance(marker_url, str):
        # our Gateway wrote where it listens; the credentials are still the configured ones
        from openclaw_cli.gateway.discovery import discover

        found = discover(paths=cx.paths, config=cx.config, token=gw.token, password=gw.password)
        if not (found.token or found.password):
            cx.hint(
                f"Our Gateway owns this state ({marker_url}) but no credentials are configured "
                "(--token/--password or OPENCLAW_GATEWAY_TOKEN); searched locally."
            )
            return None
        gw = GatewayOptions(
            url=marker_url, token=found.token, password=found.password, timeout_ms=gw.timeout_ms
        )
    try:
        doc = delegate("sessions.search", wire, gw, paths=cx.paths, config=cx.config, hint=cx.hint)
    except OpenClawError as exc:  # a read: the stores answer it as well (the index is ours)
        cx.hint(f"The Gateway that owns this state did not answer ({exc.message}); searched locally.")
        return None
    if doc is None:
        return None
    from openclaw_cli.redact import redact

    for hit in doc.get("results", []):
        if not isinstance(hit, dict):
            continue
        if not ours:
            hit.setdefault("source", "gateway")  # OpenClaw's hits: its live database
        if params.get("redact") and isinstance(hit.get("snippet"), str):
            hit["snippet"] = redact(hit["snippet"])
    return doc


def search_command(
    query: str,
    *,
    agent: str | None,
    all_agents: bool,
    store: str | None,
    sessions: list[str],
    roles: list[str],
    since: str | None,
    until: str | None,
    archived: bool,
    limit: int,
    json_mode: bool,
    fixed: bool,
    redact: bool,
    reindex: bool,
    verbose: bool,
    gw: Any,
) -> None:
    from openclaw_cli.cli.common import echo_json, load_context, print_lines, run, say_hints, say_warning

    def body() -> None:
        from openclaw_cli.errors import UsageError
        from openclaw_cli.ops.search import MAX_LIMIT

        bad = [r for r in roles if r not in ROLES]
        if bad:
            raise UsageError(f"--role must be one of {', '.join(ROLES)} (got {bad[0]!r}).")
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"--limit must be from 1 to {MAX_LIMIT} (got {limit}).")
        cx = load_context()
        now = cx.now_ms()
        params: dict[str, Any] = {
            "query": query,
            "limit": limit,
            "agent": agent,
            "allAgents": all_agents or None,
            "store": store,
            "sessionKeys": list(dict.fromkeys(sessions)) or None,
            "roles": list(dict.fromkeys(roles)) or None,
            "since": _time_ms(since, "--since", now),
            "until": _time_ms(until, "--until", now),
            "archived": archived,
            "fixed": fixed or None,
            "redact": redact or None,
            "reindex": reindex or None,
            "verbose": verbose or None,
        }
        params = {k: v for k, v in params.items() if v is not None}
        from openclaw_cli.search.plainjson import prefer_stdlib
        from openclaw_cli.search.query import parse

        prefer_stdlib(48)  # a one-shot process reads a page of hit lines: orjson is imported past it

        parse(query, fixed=fixed)  # the query's own texts, before the method's schema sees it
        doc = None if reindex else _delegated(cx, params, gw)
        if doc is None:
            doc = _local_search(cx, params)
        doc.setdefault("skipped", [])
        if json_mode:
            from openclaw_cli.search.plainjson import pretty

            document = {"query": query, **doc}
            text = pretty(document)  # emit_json's bytes without importing orjson, when it can
            if text is None:
                echo_json(document)
            else:
                import sys

                sys.stdout.write(text + "\n")
                sys.stdout.flush()
            say_hints(cx.hints)  # stderr: the document stays one JSON value
        else:
            from openclaw_cli.cli.render_search import search_lines

            print_lines(search_lines(doc, query, fixed=fixed))
            say_hints(cx.hints)
            skipped = doc.get("skipped") or []
            if skipped and verbose:
                for issue in skipped:
                    say_warning(f"Skipped: {issue}")
            elif skipped:
                say_warning(f"Skipped {len(skipped)} unreadable line(s) or archive(s); --verbose names them.")
            if verbose:
                from openclaw_cli.output import err

                for stats in doc.get("index", []):
                    err(
                        f"index: {stats['sourcesRead']} source(s) read ({stats['bytesRead']} bytes, "
                        f"{stats['rowsIndexed']} rows) in {stats['seconds']} s, {stats['sourcesUnchanged']} unchanged"
                        + (", rebuilt" if stats["rebuilt"] else "")
                    )

    run(body, json_mode=json_mode)
