"""Per-session facts (issue 30): an entry reduced to what maintenance planning and `status` read —
its key (the dict key), session id, timestamps, chat kind and flags — so a 100,000-row database
store plans in a few tens of MB instead of holding every whole entry (~2 KB each as Python dicts).

A facts dict is a plain dict with the same field names and values as the entry for every field the
planner reads (`maintenance/plan.py`, `archiving.py`, the budget and sweep inputs of database
stores), so the planner runs on either unchanged; `tests/test_session_facts.py` holds the plans
equal. Left out: display fields (model, tokens, labels, …), and the file references only file
stores' planning and `--fix-missing` read (`sessionFile`, `compactionCheckpoints`,
`initializationPending`): `file_entry_facts` keeps those too, for a file store's dry run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openclaw_cli.ids import is_plain_session_id
from openclaw_cli.jsonutil import dumps_compact

# kept as they are when present (presence matters too: `"archivedAt" in entry` counts archived rows)
_KEPT = (
    "sessionId",
    "updatedAt",
    "archivedAt",
    "pinnedAt",
    "modelSelectionLocked",
    "spawnedBy",
    "parentSessionKey",
)
# a few short values repeated on most rows: one shared string each
_SHARED = ("chatType", "status")
# the other timestamps only decide the activity time, max(…, updatedAt): kept only above updatedAt
_ACTIVITY = ("lastInteractionAt", "lastActivityAt", "sessionStartedAt")
# nested objects the planner reads one field of: reduced to that field
_NESTED = (("origin", "chatType"), ("delivery", "kind"), ("skillsSnapshot", "promptRef"))

_shared: dict[str, str] = {}


def _number(value: Any) -> float:
    """The activity rule's reading of a timestamp (`archiving._number`): a finite-or-not real
    number, booleans and NaN as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0.0
    return float(value)


def entry_facts(entry: Any) -> Any:
    """The facts of one stored entry (a non-object row is returned as it is: the planner reads no
    field of it either way)."""
    if type(entry) is not dict:
        return entry
    out: dict[str, Any] = {}
    for name in _KEPT:
        if name in entry:
            out[name] = entry[name]
    for name in _SHARED:
        value = entry.get(name)
        if value is not None:
            out[name] = _shared.setdefault(value, value) if type(value) is str else value
    base = _number(entry.get("updatedAt"))
    for name in _ACTIVITY:
        if name in entry and _number(entry[name]) > base:
            out[name] = entry[name]
    for name, inner in _NESTED:
        value = entry.get(name)
        if value is None:
            continue
        if type(value) is dict or isinstance(value, Mapping):  # (a schema-24 snapshot: JSON text)
            out[name] = {inner: value[inner]} if inner in value else {}
        elif name != "skillsSnapshot":  # (read only when it is an object)
            out[name] = value
    return out


def compact_bytes(entry: Any) -> int:
    """UTF-8 length of an entry as compact JSON: what a database store's disk budget counts for a
    row (`maintenance.budget.sqlite_entry_bytes`), taken from the whole entry while its facts are made."""
    return len(dumps_compact(entry).encode("utf-8", "surrogatepass"))


# what a file store's planning reads besides the facts: the files a row keeps alive
_FILE_REFS = ("sessionFile", "compactionCheckpoints", "initializationPending")


def file_entry_facts(entry: Any, dir_prefix: str | None = None) -> Any:
    """The facts of one row of a file store (legacy): `entry_facts` plus the file references its
    planning reads (`maintenance.artifacts.referenced_names`, `entry_file_actions`, the symlink
    warning), kept as they are — except a `sessionFile` that names the row's default transcript,
    `<dir_prefix><sessionId>.jsonl` with a plain id (`dir_prefix`: the sessions dir, absolute and
    normalised, with its final `/`): every reader resolves that row to the same one name without
    it (`maintenance.budget._fast_candidate_names`), and it is most rows' longest string."""
    out = entry_facts(entry)
    if type(entry) is dict:
        for name in _FILE_REFS:
            if name in entry:
                out[name] = entry[name]
        ref = out.get("sessionFile")
        if dir_prefix is not None and type(ref) is str and ref.startswith(dir_prefix):
            sid = entry.get("sessionId")
            if type(sid) is str and ref == f"{dir_prefix}{sid}.jsonl" and is_plain_session_id(sid):
                del out["sessionFile"]
    return out
