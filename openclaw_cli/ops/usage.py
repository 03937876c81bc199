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
    from openclaw_cli.store.usage_ledger import ledger_path, read_records, slot_of, transcript_usage

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
    groups: dict[str, dict[str, Any]] = {}
    totals = _group("total")
    ledgers: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []

    def count(name: str, slices: list[Any], source: str) -> None:
        kept = [s for s in slices if since is None or (isinstance(s[0], str) and s[0] >= since)]
        if not kept:
            return
        for key_name, slice_ in _regroup(by, name, kept):
            group = groups.setdefault(key_name, _group(key_name))
            _add(group, slice_, source)
        for slice_ in kept:
            _add(totals, slice_, source)

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
                            slices = [[day, model, *slot] for (day, model), slot in use.slices.items()]
                            label = {"agent": agent_id, "kind": kind}.get(by, "")
                            count(label, slices, "live")
            except OpenClawError as exc:
                failures.append({"agentId": agent_id, "path": str(store_path), "error": exc.message})
        read = read_records(ledger_path(ctx.paths.state_dir, agent_id))
        counted = 0
        for record in read.records:
            if not record.get("delta") and record["sessionId"] in live:
                continue
            counted += 1
            slices = []
            for item in record.get("slices") or []:
                if isinstance(item, list) and len(item) >= 9:
                    slices.append([item[0], item[1], *slot_of(dict(zip(_NAMES, item[2:9], strict=False)))])
            label = {"agent": agent_id, "kind": record.get("kind") or "unknown"}.get(by, "")
            count(label, slices, "ledger")
        if read.records or read.unreadable or read.error:
            ledgers.append(
                {
                    "agentId": agent_id,
                    "path": str(ledger_path(ctx.paths.state_dir, agent_id)),
                    "records": len(read.records),
                    "counted": counted,
                    "unreadableLines": read.unreadable,
                    "unreadableAt": read.unreadable_lines,
                    **({"error": read.error} if read.error else {}),
                }
            )
    ordered = sorted(
        groups.values(), key=lambda g: (g["name"] if by == "day" else -g["totalTokens"], g["name"])
    )
    return {
        "by": by,
        "since": since,
        "generatedAt": now,
        "totals": totals,
        "groups": ordered,
        "ledgers": ledgers,
        "failures": failures,
    }


_NAMES = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "messages")


def _regroup(by: str, label: str, slices: list[Any]) -> list[tuple[str, Any]]:
    if by == "day":
        return [(s[0], s) for s in slices]
    if by == "model":
        return [(s[1], s) for s in slices]
    return [(label, s) for s in slices]


def _group(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": 0.0,
        "messages": 0,
        "liveMessages": 0,
        "ledgerMessages": 0,
    }


def _add(group: dict[str, Any], slice_: list[Any], source: str) -> None:
    for i, name in enumerate(_NAMES):
        value = slice_[2 + i]
        group[name] = round(group[name] + value, 10) if name == "cost" else int(group[name] + value)
    group["liveMessages" if source == "live" else "ledgerMessages"] += int(slice_[8])
