"""The transcript generations an entry keeps alive (OpenClaw's `collectSessionStateIdsForEntry`),
shared by the database store kinds: the real OpenClaw database's retire (`openclaw/writes.py`) and
our SQLite store's window eviction (`sqlite/store.py`). Kept beside the kinds so that neither kind
imports the other (the `independence` contract in pyproject.toml).

Not the rule of the cleanup's byte budget (`maintenance/budget.entry_session_ids`): that one counts
an entry's `sessionId` only (maintenance.md Q4, the spec's minimum), a different answer on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _text(value: Any) -> str | None:
    """OpenClaw's `normalizeText`: a trimmed non-empty string, else None."""
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def entry_session_ids(entry: Mapping[str, Any]) -> list[str]:
    """Every transcript generation an entry keeps (OpenClaw's `collectSessionStateIdsForEntry`):
    its sessionId, previousSessionId, usageFamilySessionIds and compaction checkpoints' ids."""
    out: list[str] = []

    def add(value: Any) -> None:
        text = _text(value)
        if text is not None and text not in out:
            out.append(text)

    add(entry.get("sessionId"))
    add(entry.get("previousSessionId"))
    family = entry.get("usageFamilySessionIds")
    for sid in family if isinstance(family, list) else ():
        add(sid)
    checkpoints = entry.get("compactionCheckpoints")
    for record in checkpoints if isinstance(checkpoints, list) else ():
        if isinstance(record, Mapping):
            add(record.get("sessionId"))
            add(_mapping(record.get("preCompaction")).get("sessionId"))
            add(_mapping(record.get("postCompaction")).get("sessionId"))
    return out
