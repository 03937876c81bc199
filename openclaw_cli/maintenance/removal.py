"""What leaves a store when named rows are deleted (`sessions delete`, `sessions.delete`;
spec D6.2, D6.3, D15): the same rules cleanup uses for the rows it removes (§8.1), for an
explicit list of keys. Pure planning over one directory snapshot; `store.retire` performs it.

* transcripts in files (legacy): every file of the removed rows (transcript candidates, topic
  files, trajectory sidecars, compaction checkpoints they reference) that no remaining row uses
  and no other store of the agent holds (D6.3) — archived, then removed;
* transcripts in the database (our SQLite): the rows' current session ids and their earlier
  windows (compaction successors, D16) that no remaining row references.
With `keep_transcripts` only the rows go (OpenClaw's `deleteTranscript: false`): what they
referenced stays for a later cleanup, which archives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.store.retire import Retirement

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


def retirement_for_keys(
    store: SessionStore,
    entries: Mapping[str, dict[str, Any]],
    keys: Iterable[str],
    *,
    keep_transcripts: bool = False,
) -> Retirement:
    """The retirement of `keys` (rows as read: `entries[key]`) from `store`."""
    removed = [key for key in dict.fromkeys(keys) if key in entries]
    planned = {key: entries[key] for key in removed}
    if keep_transcripts:
        return Retirement(removed, entries=planned, sweep_locks=False)
    if store.transcripts_in_files:
        return Retirement(
            removed, entries=planned, archive_actions=_file_actions(store, planned), sweep_locks=False
        )
    remaining_ids = {e.get("sessionId") for k, e in store.load_entries().items() if k not in planned}
    session_ids: list[str] = []
    session_keys: dict[str, str] = {}
    for key, entry in planned.items():
        sid = entry.get("sessionId")
        for candidate in [sid, *store.window_session_ids(key)]:
            if (
                isinstance(candidate, str)
                and candidate not in remaining_ids
                and candidate not in session_keys
            ):
                session_ids.append(candidate)
                session_keys[candidate] = key
    return Retirement(
        removed, entries=planned, session_ids=session_ids, session_keys=session_keys, sweep_locks=False
    )


def _file_actions(store: SessionStore, planned: dict[str, dict[str, Any]]) -> list[Any]:
    from openclaw_cli.maintenance.artifacts import (
        entry_file_actions,
        referenced_names,
        session_id_names,
    )
    from openclaw_cli.maintenance.service import _other_store_session_ids
    from openclaw_cli.store.files import TRANSCRIPT_KINDS, scan_sessions_dir

    root = Path(store.sessions_dir)
    snapshot = scan_sessions_dir(root)
    rows = store.load_rows() if store.exists() else {}
    remaining = [row for key, row in rows.items() if key not in planned]
    still = referenced_names(remaining, root, snapshot)
    other_sids = _other_store_session_ids(store)
    if other_sids is None:  # an unreadable database of the agent may hold any of them
        protected = {n for n in snapshot.files if snapshot.kind(n) in TRANSCRIPT_KINDS}
    else:
        protected = session_id_names(other_sids, snapshot) if other_sids else set()
    return entry_file_actions(snapshot, planned, list(planned), still, protected)
