"""`openclaw storage` (issue 27 §1): where a state directory's disk went, as one JSON document
(the shape is documented in docs/storage.md; the dashboard draws it).

A read-only operation: every store is opened read-only, nothing is written. Not a Gateway method
(OpenClaw's Gateway has none): the CLI calls `storage_report` directly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.ops.context import Context

if TYPE_CHECKING:
    from openclaw_cli.maintenance.storage_facts import RowFacts
    from openclaw_cli.maintenance.storage_memo import Listing, RowWatch, TallyMemo
    from openclaw_cli.store.base import SessionStore

SCHEMA_VERSION = 1


def storage_report(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `agent` (one agent: its directory only), `allAgents`, `top` (N biggest sessions and
    events, default 10), `plan` (what the cleanup settings would reclaim, through the maintenance
    planner over the rows' facts: True or None = planned, False = left out), `noCache` (read every
    transcript file: the figures of files unchanged since the last run are otherwise taken from the
    cache dir, `maintenance.storage.FileFigures`)."""
    from openclaw_cli.config import maintenance_settings
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.maintenance import storage as st
    from openclaw_cli.ops.behavior import behavior_of
    from openclaw_cli.ops.targets import open_target, select_targets

    top_n = max(0, int(params.get("top") or 10))
    agent = params.get("agent")
    paths = ctx.paths
    if agent:
        targets = select_targets(paths, ctx.config, agent=agent, all_agents=False, store=None)
        root = paths.agent_dir(targets[0].agent_id)
    else:
        from openclaw_cli.ops.targets import known_agent_ids

        targets = [paths.target(a) for a in known_agent_ids(paths, ctx.config)]
        root = paths.state_dir
    now = ctx.now_ms()
    # each file store's sessions.json is read once: its rows' file facts (what the cleanup plan
    # reads) with each row's snapshot bytes (what the tally reads of a whole row besides them)
    # and each file store's sessions dir listed once, with every entry's lstat (`storage_memo`):
    # the plan's snapshot, the tally's memo key and the disk walk of that directory
    listed: dict[str, Any] = {}  # store path -> Listing
    read_once = (
        {} if params.get("plan") is False else _file_facts(ctx, targets, bool(params.get("noCache")), listed)
    )
    # the cleanup plan first: its working set (~100 MB at 100,000 rows) is freed before the tally
    # builds its own, so the peak is the larger of the two, not their sum
    planned = None if params.get("plan") is False else _planned(ctx, agent, now, read_once, listed)
    report = st.StorageReport(root=root)
    tally = st.PayloadTally(top_n=top_n)
    by_kind: dict[str, list[int]] = {}
    top_sessions: list[Any] = []
    views: dict[str, st.StoreView] = {}
    stores_doc: list[dict[str, Any]] = []
    retention_ms: int | None = None
    db_orphans: list[tuple[str, str, int, int]] = []  # agent, session id, events, bytes
    listings: dict[tuple[int, int], Any] = {}  # sessions dirs listed for the tally's memo
    for target in targets:
        try:
            store = open_target(ctx, target, read_only=True)
        except OpenClawError as exc:
            report.unreadable.append({"path": str(target.sqlite_path), "error": exc.message})
            continue
        with store:
            referenced: set[str] = set()  # transcript files the rows name (file stores)
            views[target.agent_id] = st.StoreView(
                target.agent_id,
                store.kind,
                Path(store.path),
                Path(store.sessions_dir),
                store.transcripts_in_files,
                referenced,
            )
            if retention_ms is None:
                retention_ms = maintenance_settings(
                    ctx.config, behavior_of(ctx, store)
                ).reset_archive_retention_ms
            try:
                once = read_once.pop(str(store.path), None)
                # a file store whose store file and sessions dir are unchanged since a run that
                # kept its tally: that tally, no row or transcript read (`storage_memo`)
                memo = (
                    _memo(store, top_n, tally, by_kind, top_sessions, listed.pop(str(store.path), None))
                    if store.transcripts_in_files and not params.get("noCache")
                    else None
                )
                kept = memo.load() if memo is not None else None
                if kept is not None and memo is not None and memo.listing is not None:
                    # the walk takes the sessions dir's entries from this listing (one lstat each)
                    views[target.agent_id].listing = memo.listing
                    listings[memo.listing.ident] = memo.listing
                if kept is not None:
                    from openclaw_cli.maintenance.storage_memo import restore_state

                    once = None  # (the rows' facts, let go: not read)
                    sessions, names, state = kept
                    restore_state(state, tally, by_kind, top_sessions)
                    # (all in the sessions dir: the walk looks them up by name in its listing)
                    views[target.agent_id].referenced_names = set(names)
                else:
                    from openclaw_cli.maintenance.storage_memo import RowWatch

                    unreadable_before = len(report.unreadable)
                    watch = RowWatch(memo.prefix) if memo is not None else None
                    sessions, used = _tally_store(
                        store,
                        once,
                        params,
                        top_n,
                        tally,
                        by_kind,
                        top_sessions,
                        report,
                        referenced,
                        watch,
                        memo,
                    )
                    if used is not None:  # (the figures and the walk from it: no stat taken again)
                        views[target.agent_id].listing = used
                        listings[used.ident] = used
                    if (
                        memo is not None
                        and watch is not None
                        and watch.inside
                        and len(report.unreadable) == unreadable_before
                    ):
                        from openclaw_cli.maintenance.storage_memo import tally_state

                        memo.keep(sessions, referenced, tally_state(tally, by_kind, top_sessions))
            except OpenClawError as exc:
                report.unreadable.append({"path": str(store.path), "error": exc.message})
                sessions = 0
            if not store.transcripts_in_files:
                try:  # transcripts inside the database that no row references
                    db_orphans.extend((target.agent_id, *o) for o in store.orphan_sessions())
                except OpenClawError as exc:
                    report.unreadable.append({"path": str(store.path), "error": exc.message})
            stores_doc.append(
                {
                    "agentId": target.agent_id,
                    "kind": store.kind,
                    "schema": store.schema,
                    "path": str(store.path),
                    "sessions": sessions,
                }
            )
    st.walk_disk(root, views, report, listings)
    doc = _document(report, tally, by_kind, top_sessions, stores_doc, retention_ms, now, top_n)
    orphans = doc["reclaimable"][0]
    orphans["sessions"] = len(db_orphans)
    orphans["bytes"] += sum(o[3] for o in db_orphans)
    if db_orphans:
        orphans["what"] += "; transcripts in the databases no row references (event bytes)"
    doc["cleanupPlanned"] = planned is not None
    doc["reclaimable"] += planned or []
    return doc


# what each reason of the cleanup plan (`ops.cleanup.reason_bytes`) comes from
_PLAN_SETTINGS = {
    "prune-stale": ("session.maintenance.pruneAfter", "stale sessions removed"),
    "cap-overflow": ("session.maintenance.maxEntries", "sessions over the cap removed"),
    "prune-model-run": ("session.maintenance.maxEntries", "model-run sessions pruned under pressure"),
    "prune-cron-retention": ("cron.sessionRetention", "finished cron-run sessions removed"),
    "prune-missing": ("--fix-missing", "rows whose transcript is missing"),
    "unreferenced artifacts": (
        "session.maintenance.pruneAfter",
        "unreferenced transcripts and sidecars swept",
    ),
    "tombstones (retention)": (
        "session.maintenance.resetArchiveRetention",
        "deleted/reset archives past retention",
    ),
    "disk budget files": ("session.maintenance.maxDiskBytes", "files removed to get under the disk budget"),
}


def _file_facts(
    ctx: Context, targets: list[Any], no_cache: bool = False, listed: dict[str, Any] | None = None
) -> dict[str, RowFacts]:
    """store path -> `load_file_facts()` with what the tally reads of each whole row besides them
    (`maintenance.storage_facts.RowFacts`) of each file store that gives its facts, from one read
    of its sessions.json (none while the file is unchanged since a run kept them: `StoreFacts`).
    `listed`: filled with each file store's sessions dir listing (`storage_memo.list_dir`; not
    with `no_cache`, which reads and lists everything as it goes)."""
    from openclaw_cli.config import maintenance_settings
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.gcpause import gc_paused
    from openclaw_cli.maintenance.service import file_facts_plan
    from openclaw_cli.maintenance.storage_facts import RowFacts, StoreFacts
    from openclaw_cli.ops.behavior import behavior_of
    from openclaw_cli.ops.targets import open_target
    from openclaw_cli.paths import cache_root

    out: dict[str, RowFacts] = {}
    for target in targets:
        try:
            store = open_target(ctx, target, read_only=True)
        except OpenClawError:
            continue  # (the tally names it)
        with store:
            if not store.transcripts_in_files:
                continue
            if listed is not None and not no_cache:
                from openclaw_cli.maintenance.storage_memo import list_dir

                listing = list_dir(str(store.sessions_dir))
                if listing is not None:
                    listed[str(store.path)] = listing
            behavior = behavior_of(ctx, store)
            if not file_facts_plan(behavior, maintenance_settings(ctx.config, behavior)):
                continue  # (the plan reads whole rows: facts held beside them would only add up)
            # an unchanged sessions.json is not parsed again: its facts are kept in the cache dir
            kept = StoreFacts(str(store.path), None if no_cache else cache_root())
            with gc_paused():  # (100,000 small dicts made at once)
                cached = kept.load()
            if cached is not None:
                out[str(store.path)] = cached
                continue
            rows = RowFacts({})
            try:
                facts = store.load_file_facts(rows.add_row)
            except OpenClawError:
                continue
            if facts is not None:
                rows.facts = facts
                out[str(store.path)] = rows
                kept.keep(rows)
    return out


def _tally_store(
    store: SessionStore,
    once: RowFacts | None,
    params: dict[str, Any],
    top_n: int,
    tally: Any,
    by_kind: dict[str, list[int]],
    top_sessions: list[Any],
    report: Any,
    referenced: set[str],
    watch: RowWatch | None = None,
    memo: TallyMemo | None = None,
) -> tuple[int, Listing | None]:
    """One store's sessions through the tally (`maintenance.storage.tally_sessions`): its rows
    streamed, whole (schema 24's snapshot rows joined), with their files; a file store's from the
    facts already made (each freed once tallied), its transcripts unchanged since the last run not
    read again (`FileFigures`). Returns the sessions read and the listing of the sessions dir the
    tally took its stats from, if any: `memo`'s (taken this run) is used when the figures cache
    has records (files unchanged as listed are not stat'ed again, the directory index is made from
    it); a first run (no record) lets it go: holding it beside the records that run makes peaked
    at 154 MiB."""
    from openclaw_cli.gcpause import gc_paused
    from openclaw_cli.maintenance import storage as st
    from openclaw_cli.paths import cache_root

    files = (
        st.FileFigures(str(store.sessions_dir), None if params.get("noCache") else cache_root())
        if store.transcripts_in_files
        else None
    )
    listing = index = None
    if memo is not None:
        listing = memo.listing
        memo.release()  # (this frame holds the only reference: let go below unless used)
        if listing is not None and files is not None and files.old:
            index = listing.index() if not listing.failed else None
            if index is None or not files.check_listing(listing, index):
                listing = index = None
        listing = listing if index is not None else None
    snaps = once.snaps if once is not None else None
    kinds = once.row_kinds() if once is not None else None  # (one per row, in order)
    rows = store.iter_rows_with_transcripts(None if once is None else _drain(once.facts), index)
    del index  # (held by the rows' generator while they are tallied)
    if watch is not None:
        rows = watch.rows(rows)
    with gc_paused():  # 100,000 rows: the cyclic GC would rescan what is kept
        return st.tally_sessions(
            store,
            rows,
            tally,
            by_kind,
            top_sessions,
            top_n,
            report.unreadable,
            referenced,
            files,
            snaps,
            kinds,
        ), listing


def _memo(
    store: SessionStore,
    top_n: int,
    tally: Any,
    by_kind: dict[str, list[int]],
    top_sessions: list[Any],
    listing: Any = None,
) -> TallyMemo:
    """The kept tally of a file store (`maintenance.storage_memo.TallyMemo`), keyed by the state
    the tally is in before it."""
    from openclaw_cli.maintenance.storage_memo import TallyMemo, tally_state
    from openclaw_cli.paths import cache_root

    return TallyMemo(
        str(store.path),
        str(store.sessions_dir),
        store.agent_id,
        cache_root(),
        top_n,
        tally_state(tally, by_kind, top_sessions),
        listing,
    )


def _drain(facts: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key, facts) of every row in order, each row's facts let go once given."""
    for key in list(facts):
        yield key, facts.pop(key)


def _planned(
    ctx: Context,
    agent: str | None,
    now: int,
    read_once: dict[str, RowFacts],
    listed: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """What `sessions cleanup --enforce` would free, per setting, as the maintenance planner plans
    it under the release each store follows (a dry run: nothing written, no lock taken)."""
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.ops.cleanup import CleanupOptions, cleanup_stores

    # planned over the rows' facts (`store/facts.py`: a database store's, or a file store's with
    # its file references, made in `_file_facts`), so 100,000 sessions plan in tens of MB (issue
    # 30); the per-reason bytes are the cleanup text report's
    options = CleanupOptions(
        agent=agent,
        all_agents=not agent,
        dry_run=True,
        enforce=True,
        reason_bytes=True,
        figures_only=True,
        file_facts={path: once.facts for path, once in read_once.items()},
        key_shapes={path: once.key_shapes() for path, once in read_once.items() if once.whole()},
        listings={listing.path: listing for listing in (listed or {}).values()},
    )
    try:
        results = cleanup_stores(ctx, options, now_ms=now)
    except OpenClawError as exc:
        return [
            {
                "setting": "sessions cleanup --enforce",
                "what": f"not planned: {exc.message}",
                "bytes": 0,
                "files": 0,
            }
        ]
    totals: dict[str, list[int]] = {}
    over = 0  # bytes over the disk budget's high water (the reclamation tiers would run)
    for result in results:
        for reason, (count, size) in result.reason_bytes.items():
            slot = totals.setdefault(reason, [0, 0])
            slot[0] += count
            slot[1] += size
        budget = result.plan.disk_budget
        if budget is not None and budget.over_budget:
            over += max(0, budget.total_bytes_after - budget.high_water_bytes)
    out = []
    for reason, (count, size) in totals.items():
        if reason.startswith("archive ("):  # rows archived in place keep their transcripts
            setting, what = "session.maintenance", f"rows marked archived {reason[8:]}, nothing freed,"
        else:
            setting, what = _PLAN_SETTINGS.get(reason, ("session.maintenance", f"rows {reason}"))
        out.append(
            {
                "setting": setting,
                "what": f"{what} by `sessions cleanup --enforce` (transcript bytes; archived first)",
                "bytes": size,
                "files": count,
                "reason": reason,
            }
        )
    if over:
        out.append(
            {
                "setting": "session.maintenance.maxDiskBytes",
                "what": "over the disk budget after the plan: `sessions cleanup --enforce` reclaims "
                "(free pages, archives, old windows) down to highWaterBytes",
                "bytes": over,
                "files": 0,
                "reason": "disk budget",
            }
        )
    return out


def _document(
    report: Any,
    tally: Any,
    by_kind: dict[str, list[int]],
    top_sessions: list[Any],
    stores: list[dict[str, Any]],
    retention_ms: int | None,
    now: int,
    top_n: int,
) -> dict[str, Any]:
    from openclaw_cli.maintenance.storage import CONTAINERS, PAYLOAD_CLASSES

    def ordered(table: dict[str, Any], order: tuple[str, ...]) -> list[str]:
        return [n for n in order if n in table] + sorted(n for n in table if n not in order)

    expired = [
        t
        for t in report.tombstone_files
        if retention_ms is not None and t[3] is not None and t[3] + retention_ms <= now
    ]
    free = sum(f[3] for f in report.sqlite_files)
    wal = sum(f[4] for f in report.sqlite_files)
    orphan_bytes = sum(f[2] for f in report.orphan_files)
    reclaimable = [
        {
            "setting": "sessions cleanup --orphans",
            "what": "unreferenced transcripts (archived, verified, then removed)",
            "bytes": orphan_bytes,
            "files": len(report.orphan_files),
        },
        {
            "setting": "sessions cleanup --tombstones",
            "what": "deleted/reset archives past session.maintenance.resetArchiveRetention"
            + ("" if retention_ms is not None else " (unset: kept forever)"),
            "bytes": sum(t[4] for t in expired),
            "files": len(expired),
            "retentionMs": retention_ms,
        },
        {
            "setting": "doctor --session-sqlite compact",
            "what": "free pages of the SQLite databases (VACUUM; a real OpenClaw database is"
            " compacted by OpenClaw's own doctor, or by cleanup --enforce over maxDiskBytes)",
            "bytes": free,
            "files": sum(1 for f in report.sqlite_files if f[3]),
        },
        {
            "setting": "wal checkpoint",
            "what": "write-ahead logs folded back on the last connection's close",
            "bytes": wal,
            "files": sum(1 for f in report.sqlite_files if f[4]),
        },
    ]
    payload = [
        {"class": cls, "bytes": tally.classes[cls][0], "events": tally.classes[cls][1]}
        for cls in PAYLOAD_CLASSES
    ]
    media = [
        {"mimeType": mime, "bytes": v[0], "parts": v[1]}
        for mime, v in sorted(tally.media.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "root": str(report.root),
        "generatedAt": now,
        "total": report.total.doc(),
        "byAgent": [{"agentId": a, **report.by_agent[a].doc()} for a in sorted(report.by_agent)],
        "byContainer": [
            {
                "container": c,
                **report.by_container[c].doc(),
                **(
                    {
                        "byReason": {
                            r: b.doc()
                            for r, b in sorted(report.archives_by_reason.items())
                            if (r in ("deleted", "reset")) == (c == "tombstones")
                        }
                    }
                    if c in ("tombstones", "archives")
                    else {}
                ),
            }
            for c in ordered(report.by_container, CONTAINERS)
        ],
        "byKind": [
            {"kind": k, "sessions": v[0], "bytes": v[1], "snapshotBytes": v[2]}
            for k, v in sorted(by_kind.items(), key=lambda kv: (-kv[1][1], kv[0]))
        ],
        "byPayload": payload,
        "media": media,
        "topSessions": [
            {"agentId": w[0], "key": w[1], "sessionId": w[2], "kind": w[3], "events": w[4], "bytes": size}
            for size, _, w in sorted(top_sessions, key=lambda t: (-t[0], t[1]))
        ][:top_n],
        "topEvents": [
            {"agentId": w[0], "key": w[1], "sessionId": w[2], "line": w[3], "class": w[4], "bytes": size}
            for size, _, w in sorted(tally.top_events, key=lambda t: (-t[0], -t[1]))
        ][:top_n],
        "reclaimable": reclaimable,
        "stores": stores,
        "unreadable": report.unreadable,
    }
