"""`sessions archives` and `sessions restore` (issue 27 §3): list what can be brought back, and
bring a deleted, pruned, capped or reset session back from its verified archive into its store.

Not Gateway methods: OpenClaw's Gateway has no restore, so both run offline (a Gateway owning the
state refuses the restore's write, D25, as every offline write). The CLI calls them directly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import NotFoundError, PreconditionError, UsageError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.targets import open_target, select_targets

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

# row fields that described the removal, not the session
_REMOVAL_FIELDS = ("archivedAt", "archiveReason", "archivedBy")


def _retention_ms(ctx: Context, store: SessionStore) -> int | None:
    from openclaw_cli.config import maintenance_settings
    from openclaw_cli.ops.behavior import behavior_of

    return maintenance_settings(ctx.config, behavior_of(ctx, store)).reset_archive_retention_ms


def sessions_archives(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `agent`, `allAgents`, `store`, `key` (only this key's archives)."""
    from openclaw_cli.store.archive_catalog import catalog

    targets = select_targets(
        ctx.paths,
        ctx.config,
        agent=params.get("agent"),
        all_agents=bool(params.get("allAgents")),
        store=params.get("store"),
    )
    items: list[dict[str, Any]] = []
    retention: int | None = None
    for target in targets:
        with open_target(ctx, target, read_only=True) as store:
            retention = _retention_ms(ctx, store)
            for archive in catalog(store, retention_ms=retention):
                if params.get("key") and archive.key != params["key"]:
                    continue
                items.append(archive.doc())
    doc: dict[str, Any] = {"count": len(items), "retentionMs": retention, "archives": items}
    if ctx.hints:
        doc["hint"] = " ".join(ctx.hints)
    return doc


def _looks_like_key(text: str) -> bool:
    return text.startswith("agent:") or ":" in text and not text.endswith((".zst", ".jsonl"))


def sessions_restore(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `target` (a key, a session id, or an archive name or path), `as` (the new key),
    `dryRun`, `agent`, `store`."""
    import uuid

    from openclaw_cli.keys import parse_agent_key
    from openclaw_cli.store.archive_catalog import catalog, find_archive, read_verified
    from openclaw_cli.store.writer import store_writer

    selector = (params.get("target") or "").strip()
    if not selector:
        raise UsageError("sessions restore needs a session key, session id or archive name")
    new_key = params.get("as")
    if new_key is not None and not new_key.strip():
        raise UsageError("--as must not be blank")
    dry_run = bool(params.get("dryRun"))
    agent = params.get("agent")
    if agent is None and params.get("store") is None:
        for text in (new_key, selector):
            parsed = parse_agent_key(text) if text and _looks_like_key(text) else None
            if parsed:
                agent = parsed[0]
                break
    target = select_targets(ctx.paths, ctx.config, agent=agent, all_agents=False, store=params.get("store"))[
        0
    ]
    with open_target(ctx, target, read_only=dry_run) as store:
        archives = catalog(store, retention_ms=_retention_ms(ctx, store))
        found = find_archive(archives, selector)
        if not found:
            raise NotFoundError(
                f"No archive of {selector} in {store.sessions_dir}. Run openclaw sessions archives to list what "
                "can be restored."
            )
        archive = found[0]
        key = (new_key or "").strip() or archive.key
        if not key:
            raise UsageError(
                f"Archive {archive.name} does not record the key it belonged to; pass --as <key> to name the "
                "restored session."
            )
        if store.get_entry(key) is not None:
            raise PreconditionError(
                f"Session {key} exists; refusing to restore over it. Pass --as <new-key> to restore "
                f"{archive.name} beside it."
            )
        content, verified = read_verified(store, archive)  # before anything is written
        sid = archive.session_id or str(uuid.uuid4())
        if store.session_id_taken(sid):
            if new_key is None:
                raise PreconditionError(
                    f"Session id {sid} of {archive.name} is in use in this store; pass --as <new-key> to restore "
                    "it as a new session."
                )
            sid = str(uuid.uuid4())
        now = ctx.now_ms()
        entry = {k: v for k, v in (archive.entry or {}).items() if k not in _REMOVAL_FIELDS}
        entry["sessionId"] = sid
        entry["updatedAt"] = now  # brought back now: not stale again at the next cleanup
        events = sum(1 for line in content.split(b"\n") if line.strip())
        doc: dict[str, Any] = {
            "ok": True,
            "key": key,
            "sessionId": sid,
            "agentId": target.agent_id,
            "archive": archive.doc(),
            "verified": verified,
            "events": events,
            "bytes": len(content),
            "dryRun": dry_run,
        }
        if dry_run:
            doc["wouldRestore"] = True
            return doc
        with store_writer(store, ctx.lock_settings()):
            outcome = store.restore_session(
                key, entry, content, lock_settings=ctx.lock_settings(), now_ms=now
            )
        ctx.note_writes(store)
        doc["restored"] = True
        doc["location"] = outcome.location
        doc["entry"] = outcome.entry
    if ctx.hints:
        doc["hint"] = " ".join(ctx.hints)
    return doc
