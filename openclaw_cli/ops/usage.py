"""`openclaw usage` (issue 27 §6): tokens and cost of the live sessions plus what the usage ledger
kept of the sessions that left their stores — totals that do not drop when cleanup runs.

A ledger record stands for a whole session and counts while that session is not in its store
(a record written before a removal that then failed, or a session restored since, is not counted
twice); a `delta` record (the lines a max-lines compaction dropped) always counts. A ledger that is
partly unreadable still counts its readable records and says how many lines it skipped: usage never
fails on a ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from openclaw_cli.errors import UsageError
from openclaw_cli.ops.context import Context

GROUPINGS = ("agent", "model", "day", "kind")


def parse_since(raw: str | None, now_ms: int) -> str | None:
    """`--since` as the first UTC day counted: a date (2026-10-01), an ISO time, or a duration
    back from now (7d, 12h, 30m)."""
    if raw is None:
        return None
    text = raw.strip()
    if not text:
        raise UsageError("--since must not be blank")
    try:
        from openclaw_cli.config.units import parse_duration_ms

        ms = parse_duration_ms(text, default_unit="d")
    except Exception:  # noqa: BLE001 - not a duration: a date then
        ms = None
    if ms is not None:
        return datetime.fromtimestamp((now_ms - ms) / 1000, tz=UTC).strftime("%Y-%m-%d")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {raw!r}: use a date (2026-10-01), an ISO time or a duration (7d, 12h)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def usage_report(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `by` (agent | model | day | kind), `since` (text), `agent`, `allAgents`."""
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.keys import session_kind
    from openclaw_cli.ops.targets import known_agent_ids, open_target, select_targets
    from openclaw_cli.paths import cache_root
    from openclaw_cli.store import usage_summary as usum
    from openclaw_cli.store.usage_ledger import ledger_path, transcript_usage
    from openclaw_cli.store.usage_summary import records_at, summarize

    by = params.get("by") or "agent"
    if by not in GROUPINGS:
        raise UsageError(f"Unknown --by {by!r}; use one of: {', '.join(GROUPINGS)}.")
    now = ctx.now_ms()
    since = parse_since(params.get("since"), now)
    if params.get("agent"):
        targets = select_targets(ctx.paths, ctx.config, agent=params["agent"], all_agents=False, store=None)
    else:
        targets = [ctx.paths.target(a) for a in known_agent_ids(ctx.paths, ctx.config)]
        seen = {t.agent_id for t in targets}
        for path in sorted(ctx.paths.state_dir.joinpath("openclaw-cli-usage").glob("*.ledger.jsonl")):
            agent_id = path.name[: -len(".ledger.jsonl")]
            if agent_id not in seen:  # an agent deleted since: its ledger still counts
                targets.append(ctx.paths.target(agent_id))
                seen.add(agent_id)
    # name -> [input, output, cacheRead, cacheWrite, totalTokens, cost, messages, live msgs, ledger msgs]
    groups: dict[str, list[float]] = {}
    ledgers: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    column = {"day": 0, "model": 1}.get(by)

    def count(label: str, slices: list[Any], ledger: bool) -> None:
        for item in slices:
            if since is not None and not (isinstance(item[0], str) and item[0] >= since):
                continue
            vals = item[2:9]
            if len(vals) != 7 or not all(type(v) is int or type(v) is float for v in vals):
                vals = usum.clean_figures(vals)
            name = label if column is None else str(item[column])
            g = groups.get(name)
            if g is None:
                g = groups[name] = [0, 0, 0, 0, 0, 0.0, 0, 0, 0]
            g[0] += vals[0]
            g[1] += vals[1]
            g[2] += vals[2]
            g[3] += vals[3]
            g[4] += vals[4]
            g[5] += vals[5]
            g[6] += vals[6]
            g[8 if ledger else 7] += vals[6]

    for target in targets:
        agent_id = target.agent_id
        live: set[str] = set()
        store_path = target.sqlite_path if target.sqlite_path.exists() else target.store_path
        if store_path.exists():
            try:
                with open_target(ctx, target, read_only=True) as store:
                    _count_rows, rows = store.iter_listing(archived=None)
                    for key, entry in rows:
                        sid = entry.get("sessionId")
                        sids = [sid] if isinstance(sid, str) and sid else []
                        sids += [w for w in store.window_session_ids(key) if w not in sids]
                        kind = session_kind(key, entry)
                        for one in sids:
                            if one in live:
                                continue
                            live.add(one)
                            use = transcript_usage(store, one, entry if one == sid else None)
                            slices: Any = [[day, model, *slot] for (day, model), slot in use.slices.items()]
                            label = {"agent": agent_id, "kind": kind}.get(by, "")
                            count(label, slices, False)
            except OpenClawError as exc:
                failures.append({"agentId": agent_id, "path": str(store_path), "error": exc.message})
        ledger = ledger_path(ctx.paths.state_dir, agent_id)
        summary, tail, error = summarize(ledger, None if params.get("noCache") else cache_root())
        sums = {k: list(v) for k, v in summary.groups.items()}
        # whole-session records of sessions that are live again count through the store
        excluded = {sid for sid in live if sid in summary.sessions} if live else set()
        taken = 0
        if excluded:
            offsets = sorted(o for sid in excluded for o in summary.sessions[sid])
            for record in records_at(ledger, offsets):
                if not record.get("delta") and record["sessionId"] in live:
                    usum.subtract(sums, record)
                    taken += 1
        for record in usum.tail_records(tail, summary):
            summary.count += 1
            if record.get("delta") or record["sessionId"] not in live:
                usum.add(sums, record)
            else:
                taken += 1
        for (is_day, day, model, record_kind), vals in sums.items():
            if since is not None and not (is_day and day >= since):
                continue
            name = {"agent": agent_id, "kind": record_kind, "day": day}.get(by, model)
            g = groups.get(name)
            if g is None:
                g = groups[name] = [0, 0, 0, 0, 0, 0.0, 0, 0, 0]
            for i in range(7):
                g[i] += vals[i]
            g[8] += vals[6]
        if summary.count or summary.unreadable or error:
            ledgers.append(
                {
                    "agentId": agent_id,
                    "path": str(ledger),
                    "records": summary.count,
                    "counted": summary.count - taken,
                    "unreadableLines": summary.unreadable,
                    "unreadableAt": summary.unreadable_lines,
                    **({"error": error} if error else {}),
                }
            )
    totals = [0, 0, 0, 0, 0, 0.0, 0, 0, 0]
    for g in groups.values():
        for i, value in enumerate(g):
            totals[i] += value
    docs = [_doc(name, g) for name, g in groups.items()]
    ordered = sorted(docs, key=lambda g: (g["name"] if by == "day" else -g["totalTokens"], g["name"]))
    return {
        "by": by,
        "since": since,
        "generatedAt": now,
        "totals": _doc("total", totals),
        "groups": ordered,
        "ledgers": ledgers,
        "failures": failures,
    }


def _doc(name: str, g: list[float]) -> dict[str, Any]:
    return {
        "name": name,
        "input": int(g[0]),
        "output": int(g[1]),
        "cacheRead": int(g[2]),
        "cacheWrite": int(g[3]),
        "totalTokens": int(g[4]),
        "cost": round(g[5], 10),
        "messages": int(g[6]),
        "liveMessages": int(g[7]),
        "ledgerMessages": int(g[8]),
    }
