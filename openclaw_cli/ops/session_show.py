"""`openclaw sessions show KEY` (issue 27 §4): one session whole — the stored entry (on schema 24
with its snapshot fields), its flags and derived state, where its transcript lives and how big it
is, its window history and the archives of its key."""

from __future__ import annotations

from typing import Any

from openclaw_cli.ops.context import Context


def show_session(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """params: `key`, `agent`, `store`."""
    from openclaw_cli.keys import derive_row_flags, session_kind
    from openclaw_cli.maintenance.storage import storage_kind
    from openclaw_cli.ops.listing_filters import session_channel
    from openclaw_cli.ops.restore import _retention_ms
    from openclaw_cli.ops.sessions import resolve_session
    from openclaw_cli.store.archive_catalog import catalog
    from openclaw_cli.store.base import ReadIssue
    from openclaw_cli.store.usage_ledger import transcript_usage

    key = params.get("key")
    target, store, stored_key, entry = resolve_session(
        ctx, key, agent=params.get("agent"), store=params.get("store"), read_only=True
    )
    with store:
        sid = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None
        issues: list[ReadIssue] = []
        transcript: dict[str, Any] = {"sessionId": sid}
        if sid:
            if store.transcripts_in_files:
                path = store.resolve_transcript(sid, entry, issues)
                transcript["location"] = str(path) if path is not None else None
                transcript["fileBytes"] = store.transcript_file_bytes(sid, entry)
            else:
                transcript["location"] = f"sqlite:{store.path}#{sid}"
            usage = transcript_usage(store, sid, entry)
            transcript["events"] = usage.events
            transcript["usage"] = usage.doc()
            transcript["firstActivityAt"] = usage.first_ms
            transcript["lastActivityAt"] = usage.last_ms
            totals = store.stored_session_totals().get(sid) if not store.transcripts_in_files else None
            if totals is not None:
                transcript["bytes"] = totals.bytes
            else:
                from openclaw_cli.maintenance.storage import LineSink

                sink = LineSink(lambda line, n: None)
                store.export_transcript(sid, sink, entry=entry)
                sink.close()
                transcript["bytes"] = sink.bytes
        windows = store.list_windows(stored_key)
        archives = [
            a.doc()
            for a in catalog(store, retention_ms=_retention_ms(ctx, store))
            if a.key == stored_key
            or (a.session_id is not None and a.session_id in {sid, *(w["sessionId"] for w in windows)})
        ]
        doc: dict[str, Any] = {
            "key": stored_key,
            "agentId": target.agent_id,
            "store": {"path": str(store.path), "kind": store.kind, "schema": store.schema},
            "entry": entry,
            "flags": derive_row_flags(entry, stored_key),
            "derived": {
                "kind": session_kind(stored_key, entry),
                "storageKind": storage_kind(stored_key, entry),
                "channel": session_channel(stored_key, entry),
                "archived": entry.get("archivedAt") is not None,
            },
            "transcript": transcript,
            "windows": windows,
            "archives": archives,
        }
        if issues:
            doc["issues"] = [str(i) for i in issues]
    if ctx.hints:
        doc["hint"] = " ".join(ctx.hints)
    return doc
