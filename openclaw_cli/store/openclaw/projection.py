"""What OpenClaw's own writers maintain beside the rows they write (spec D26), kept by every write
transaction to a real OpenClaw database (`openclaw_writes.transaction` calls `settle` before its
COMMIT, whatever the schema version), so the next real Gateway start finds nothing to reconcile.

* **The transcript projection** of each session whose events changed — its active-event rows
  (`session_transcript_active_events`), its full-text rows (`session_transcript_fts` and their row
  map `session_transcript_fts_rows`) and its index state (`session_transcript_index_state`) —
  extended as OpenClaw 2026.9.6's in-transaction appender does when the new events plainly extend
  a current projection (`catch_up`), else rebuilt as its `rebuildSessionTranscriptIndexInTransaction`
  does: the events' tree (ids, parent links, leaf controls, resets) gives the visible branch; every non-header event
  on it that is canonical, tree-linked or carries a message is an active event (its message
  position counted among those with a message; context-eligible unless its message says
  `excludeFromContext: true`); every user/assistant message with an id and non-blank text is a
  full-text row (text, role, timestamp as a number); the index state records the last seq, the
  counts, the append parent and `needs_rebuild = 0`. A session left without events loses all three.
* **The canonical validation queue** (`session_canonical_validation_pending`): the schema's
  triggers queue every key whose node or current window a write touched; OpenClaw's writers
  certify their final rows in the same transaction (`certifyCanonicalSessionValidationRow`). Ours
  certify the keys they wrote and the keys their transaction queued, each only when it passes the
  checks of OpenClaw's `validateCanonicalSessionRow` we reproduce (entry valid and matching its
  projections, canonical key and lineage keys); a row we cannot vouch for stays queued for the
  real Gateway to judge.
* **The canonical receipt** (`session_key_contract.canonical_ready`): the certifying Gateway's proof
  that every row of this physical file was validated, `[1,<agent id>,"<dev>:<ino>",
  "<birth time ns>"]` (`openclaw-agent-db-validation-cache-*.mjs`: `physicalReceipt`,
  `recordOpenClawAgentCanonicalValidation`). While it is current 2026.9.6's Gateway validates only
  the queued keys at start, else every row. Offline writes leave it as it is (the reference: "leave
  alone on 24"); our Gateway, the state's writer (D25), records it as the real one does — in a write
  transaction, once every row passed our checks and nothing stays queued (`certify_all`).

Facts from the installed 2026.9.6 package (`dist/session-transcript-index-*.mjs`,
`transcript-tree-*.mjs`, `session-transcript-fts-*.mjs`, `session-canonical-validation-*.mjs`,
`session-canonical-key-*.mjs`); docs/decisions.md "issue 23: projections" says what we left out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.jsonutil import loads

if TYPE_CHECKING:
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

CANONICAL_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "reset",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_ABSENT = object()  # JavaScript's `undefined` (a key not present)
_NAV_KEYS = ("type", "id", "parentId", "targetId", "appendParentId", "appendMode")
PENDING = "session_canonical_validation_pending"
PROJECTION_TABLES = ("session_transcript_active_events", "session_transcript_index_state")


# ---- the transcript tree (OpenClaw's scanSessionTranscriptNavigation) -------------------------------------


def _nonblank(value: Any) -> Any:
    """`readNonBlankString`: the string itself when it has a non-space character, else absent."""
    return value if isinstance(value, str) and value.strip() else _ABSENT


def _canonical(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in CANONICAL_TYPES


@dataclass
class _Node:
    id: str
    parent_id: Any  # str | None (or a raw value for an invalid leaf control)
    leaf_id: Any  # str | None | _ABSENT
    append_parent_id: Any
    side: bool
    record: dict[str, Any]
    seq: int


def _tree_entry(record: Any) -> _Node | None:
    """`parseSessionTranscriptTreeEntry`: a parent-linked row (a `leaf` row selects its target)."""
    if not isinstance(record, dict) or record.get("type") == "session" or "parentId" not in record:
        return None
    node_id = _nonblank(record.get("id"))
    parent = None if record["parentId"] is None else _nonblank(record["parentId"])
    if node_id is _ABSENT or parent is _ABSENT:
        return None
    seq = record.get("seq", -1)
    if record.get("type") == "leaf":
        target = None if record.get("targetId", _ABSENT) is None else _nonblank(record.get("targetId"))
        raw_append = record.get("appendParentId", _ABSENT)
        append = target if raw_append is _ABSENT else None if raw_append is None else _nonblank(raw_append)
        mode = record.get("appendMode", _ABSENT)
        if target is _ABSENT or append is _ABSENT or (mode is not _ABSENT and mode != "side"):
            return None
        return _Node(node_id, target, target, append, mode == "side", record, seq)
    side = record.get("appendMode") == "side"
    leaf = node_id if _canonical(record) and not side else _ABSENT
    return _Node(node_id, parent, leaf, node_id, side, record, seq)


def _leaf_control(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") == "leaf" and _tree_entry(record) is not None


def _parentless(record: Any, parent: Any) -> _Node | None:
    if not _canonical(record) or "parentId" in record:
        return None
    node_id = _nonblank(record.get("id"))
    if node_id is _ABSENT:
        return None
    side = record.get("appendMode") == "side"
    return _Node(node_id, parent, _ABSENT if side else node_id, node_id, side, record, record.get("seq", -1))


def _resolve_parent(parent: Any, by_id: dict[str, _Node]) -> Any:
    """Through leaf controls to the canonical parent (a cycle stops where it closes)."""
    seen: set[str] = set()
    current = parent
    while current is not None:
        if current in seen:
            return current
        node = by_id.get(current) if isinstance(current, str) else None
        if node is None or not _leaf_control(node.record):
            return current
        seen.add(current)
        current = node.parent_id
    return None


@dataclass
class Tree:
    by_id: dict[str, _Node] = field(default_factory=dict)
    leaf_id: Any = None
    append_parent_id: Any = None
    has_leaf_control: bool = False


def scan_tree(records: Iterable[dict[str, Any]]) -> Tree:
    """The navigation scan over navigation records (`{seq, type?, id?, parentId?, targetId?,
    appendParentId?, appendMode?}`) in seq order."""
    tree = Tree()
    by_id = tree.by_id
    reset_descendants: set[str] = set()
    invalid_controls: set[str] = set()
    latest_reset: Any = _ABSENT
    leaf: Any = None
    append_parent: Any = None

    def known(ref: Any) -> bool:
        return ref is None or (isinstance(ref, str) and ref in by_id and ref not in invalid_controls)

    for record in records:
        explicit = _tree_entry(record)
        control = _leaf_control(record)
        if (
            latest_reset is not _ABSENT
            and leaf is not None
            and explicit is not None
            and explicit.leaf_id is not _ABSENT
            and control
            and (explicit.leaf_id is None or explicit.leaf_id not in reset_descendants)
        ):
            explicit = _Node(explicit.id, leaf, leaf, leaf, explicit.side, record, explicit.seq)
        if (
            explicit is not None
            and explicit.leaf_id is not _ABSENT
            and control
            and (not known(explicit.leaf_id) or not known(explicit.append_parent_id))
        ):
            invalid_controls.add(explicit.id)
            by_id[explicit.id] = _Node(
                explicit.id,
                record.get("parentId"),
                _ABSENT,
                append_parent,
                explicit.side,
                record,
                explicit.seq,
            )
            continue
        entry = explicit if explicit is not None else _parentless(record, leaf)
        if entry is not None and _canonical(record):
            stale = (
                explicit is not None
                and entry.parent_id is not None
                and entry.parent_id not in by_id
                and leaf is not None
            )
            if (
                (
                    latest_reset is not _ABSENT
                    and not entry.side
                    and (entry.parent_id is None or entry.parent_id not in reset_descendants)
                )
                or not entry.side
                and stale
                or (
                    explicit is not None
                    and not entry.side
                    and entry.parent_id == append_parent
                    and leaf != append_parent
                )
            ):
                wanted = leaf
            else:
                wanted = entry.parent_id
            entry.parent_id = _resolve_parent(wanted, by_id)
        if entry is None:
            continue
        by_id[entry.id] = entry
        if record.get("type") == "reset":
            latest_reset = entry.id
            reset_descendants = {entry.id}
        elif (
            latest_reset is not _ABSENT
            and entry.parent_id is not None
            and entry.parent_id in reset_descendants
        ):
            reset_descendants.add(entry.id)
        append_parent = entry.append_parent_id
        if entry.leaf_id is not _ABSENT:
            leaf = entry.leaf_id
        if control:
            tree.has_leaf_control = True
    tree.leaf_id, tree.append_parent_id = leaf, append_parent
    return tree


def visible_path(tree: Tree) -> list[_Node]:
    """`selectSessionTranscriptTreePathNodes(tree, tree.leafId)`: root to leaf, leaf controls out;
    a cycle gives nothing, a missing ancestor keeps the reachable suffix."""
    if tree.leaf_id is None:
        return []
    path: list[_Node] = []
    seen: set[Any] = set()
    current = tree.leaf_id
    while current:
        if not isinstance(current, str):
            break
        if current in seen:
            return []
        seen.add(current)
        node = tree.by_id.get(current)
        if node is None:
            break
        if not _leaf_control(node.record):
            path.append(node)
        current = node.parent_id
    path.reverse()
    return path


# ---- one session's projection ----------------------------------------------------------------------------


def _message_text(message: Any) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    if isinstance(message.get("text"), str):
        return message["text"].strip() or None
    if not isinstance(content, list):
        return None
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("text", "input_text", "output_text")
        and isinstance(block.get("text"), str)
        and block["text"].strip()
    ]
    return "\n".join(parts) if parts else None


def _js_date_parse(text: str) -> float | None:
    from datetime import UTC, datetime

    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return float((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)


def fts_entry(event: Any, created_at: int) -> tuple[str, str, str, float] | None:
    """`extractTranscriptIndexEntry`: (message id, role, text, timestamp) of a user/assistant
    message with an id and text."""
    if not isinstance(event, dict) or event.get("type") != "message" or not isinstance(event.get("id"), str):
        return None
    message = event.get("message") if isinstance(event.get("message"), dict) else None
    role = message.get("role") if message else None
    message_id = event["id"].strip()
    if not message_id or role not in ("user", "assistant"):
        return None
    text = _message_text(message)
    if not text:
        return None
    stamp = event.get("timestamp")
    when: float | None = None
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        when = float(stamp)
    elif isinstance(stamp, str):
        when = _js_date_parse(stamp)
    if when is None or when != when or when in (float("inf"), float("-inf")):
        when = float(created_at)
    return message_id, role, text, when


def projects_active(event: Any) -> bool:
    return (
        isinstance(event, dict)
        and event.get("type") != "session"
        and (_canonical(event) or _tree_entry(event) is not None or "message" in event)
    )


def context_eligible(event: Any) -> int:
    message = event.get("message") if isinstance(event, dict) else None
    return 0 if isinstance(message, dict) and message.get("excludeFromContext") is True else 1


@dataclass
class Projection:
    active: list[tuple[int, int, int | None, int]]  # (position, event seq, message position, eligible)
    fts: list[tuple[str, str, str, float]]
    indexed_seq: int
    leaf_event_id: Any
    messages: int


def build_projection(events: list[tuple[int, int, Any]]) -> Projection | None:
    """The projection of one session from its events `(seq, created_at, parsed event)` in seq
    order; None without events."""
    if not events:
        return None
    navigation = []
    for seq, _created, event in events:
        record: dict[str, Any] = {"seq": seq}
        if isinstance(event, dict):
            record.update((key, event[key]) for key in _NAV_KEYS if key in event)
        navigation.append(record)
    tree = scan_tree(navigation)
    path = visible_path(tree)
    by_seq = {seq: (created, event) for seq, created, event in events}
    if path:
        rows = [(node.seq, *by_seq[node.seq]) for node in path if node.seq in by_seq]
    elif tree.has_leaf_control:
        rows = []
    else:
        rows = events
    active: list[tuple[int, int, int | None, int]] = []
    fts: list[tuple[str, str, str, float]] = []
    messages = 0
    for seq, created, event in rows:
        indexed = fts_entry(event, created)
        if indexed is not None:
            fts.append(indexed)
        if not projects_active(event):
            continue
        position = None
        if "message" in event:
            position = messages
            messages += 1
        active.append((len(active), seq, position, context_eligible(event)))
    leaf = tree.append_parent_id if isinstance(tree.append_parent_id, str) else None
    return Projection(active, fts, events[-1][0], leaf, messages)


def _session_events(store: OpenClawDbStore, sid: str) -> list[tuple[int, int, Any]] | None:
    """(seq, created_at, parsed event) in seq order; None when an event cannot be read (its
    projection is then left for OpenClaw to rebuild, marked)."""
    conn = store._db()
    out: list[tuple[int, int, Any]] = []
    for seq, created, text, blob, size in conn.execute(
        "SELECT seq, created_at, event_json, event_zstd, event_utf8_bytes FROM transcript_events"
        " WHERE session_id = ? ORDER BY seq",
        (sid,),
    ):
        try:
            raw = store._decode(sid, seq, text, blob, size)
            out.append((seq, created, loads(raw)))
        except Exception:  # any undecodable event: its projection is left to OpenClaw
            return None
    return out


def delete_projection(conn: sqlite3.Connection, sid: str, tables: set[str]) -> None:
    if "session_transcript_fts_rows" in tables:
        conn.execute(
            "DELETE FROM session_transcript_fts_rows WHERE session_id = ?", (sid,)
        )  # (its trigger: the FTS rows)
    for table in PROJECTION_TABLES:
        if table in tables:
            conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))


def rebuild(store: OpenClawDbStore, sid: str, now_ms: int) -> bool:
    """Rebuild one session's projection in the open transaction; False when it was left marked
    for OpenClaw (an unreadable event) or the database keeps no projection."""
    conn, tables = store._db(), store._tables
    if "session_transcript_index_state" not in tables or "session_transcript_active_events" not in tables:
        return False
    events = _session_events(store, sid)
    if events is None:
        conn.execute(
            "UPDATE session_transcript_index_state SET needs_rebuild = 1, updated_at = ? WHERE session_id = ?",
            (now_ms, sid),
        )
        return False
    delete_projection(conn, sid, tables)
    projection = build_projection(events)
    if projection is None:
        return True
    conn.executemany(
        "INSERT INTO session_transcript_active_events(session_id, active_position, event_seq,"
        " message_position, context_eligible) VALUES (?,?,?,?,?)",
        [(sid, *row) for row in projection.active],
    )
    _insert_fts(conn, tables, sid, projection.fts)
    conn.execute(
        "INSERT INTO session_transcript_index_state(session_id, indexed_seq, leaf_event_id, needs_rebuild,"
        " active_event_count, active_message_count, updated_at) VALUES (?,?,?,0,?,?,?) ON CONFLICT(session_id)"
        " DO UPDATE SET indexed_seq = excluded.indexed_seq, leaf_event_id = excluded.leaf_event_id, needs_rebuild = 0,"
        " active_event_count = excluded.active_event_count, active_message_count = excluded.active_message_count,"
        " updated_at = excluded.updated_at",
        (
            sid,
            projection.indexed_seq,
            projection.leaf_event_id,
            len(projection.active),
            projection.messages,
            now_ms,
        ),
    )
    return True


def _forward(
    cursor: tuple[int, int, int, Any], event: Any, seq: int
) -> tuple[tuple[int, int, int, Any], bool] | None:
    """`prepareSessionTranscriptProjectionAppend`: the cursor `(active, messages, indexed seq,
    leaf)` after appending `event` at `seq`, and whether it is an active event; None when the event
    does not plainly extend the visible branch (the session is rebuilt then)."""
    active, messages, indexed, leaf = cursor
    tree = _tree_entry(event)
    canonical = _canonical(event)
    if seq != indexed + 1 or (canonical and event.get("type") == "reset"):
        return None  # (a reset changes what is visible before it: rebuilt, as OpenClaw's catch-up does)
    if indexed != -1 and (
        _leaf_control(event)
        or (canonical and event.get("appendMode") == "side")
        or (canonical and leaf is None and active > 0)
        or (not canonical and leaf is not None and projects_active(event))
        or (tree is not None and tree.parent_id != leaf)
    ):
        return None
    is_active = projects_active(event)
    with_message = is_active and "message" in event
    event_id = (event["id"].strip() or None) if canonical and isinstance(event.get("id"), str) else None
    new_leaf = event_id if event_id is not None else leaf
    return (active + int(is_active), messages + int(with_message), seq, new_leaf), is_active


def catch_up(store: OpenClawDbStore, sid: str) -> bool:
    """Index the events appended after a current projection as OpenClaw's in-transaction appender
    does (`createTranscriptIndexAppenderInTransaction`); False when the session must be rebuilt."""
    conn, tables = store._db(), store._tables
    if "session_transcript_index_state" not in tables or "session_transcript_active_events" not in tables:
        return False
    state = conn.execute(
        "SELECT active_event_count, active_message_count, indexed_seq, leaf_event_id, needs_rebuild"
        " FROM session_transcript_index_state WHERE session_id = ?",
        (sid,),
    ).fetchone()
    if state is None or state[4] != 0:
        return False
    if conn.execute(
        "SELECT 1 FROM session_transcript_active_events WHERE session_id = ? AND context_eligible IS NULL LIMIT 1",
        (sid,),
    ).fetchone():
        return False
    cursor: tuple[int, int, int, Any] = (state[0], state[1], state[2], state[3])
    active: list[tuple[int, int, int | None, int]] = []
    fts: list[tuple[str, str, str, float]] = []
    updated = None
    rows = conn.execute(
        "SELECT seq, created_at, event_json, event_zstd, event_utf8_bytes FROM transcript_events"
        " WHERE session_id = ? AND seq > ? ORDER BY seq",
        (sid, cursor[2]),
    ).fetchall()
    for seq, created, text, blob, size in rows:
        try:
            event = loads(store._decode(sid, seq, text, blob, size))
        except Exception:
            return False
        step = _forward(cursor, event, seq)
        if step is None:
            return False
        after, is_active = step
        if is_active:
            position = cursor[1] if after[1] > cursor[1] else None
            active.append((cursor[0], seq, position, context_eligible(event)))
        indexed = fts_entry(event, created)
        if indexed is not None:
            fts.append(indexed)
        cursor, updated = after, created
    if updated is None:  # nothing appended: current only if no event was removed either
        latest = conn.execute(
            "SELECT max(seq) FROM transcript_events WHERE session_id = ?", (sid,)
        ).fetchone()[0]
        return cast("bool", latest == cursor[2])
    conn.executemany(
        "INSERT INTO session_transcript_active_events(session_id, active_position, event_seq,"
        " message_position, context_eligible) VALUES (?,?,?,?,?)",
        [(sid, *row) for row in active],
    )
    _insert_fts(conn, tables, sid, fts)
    conn.execute(
        "UPDATE session_transcript_index_state SET active_event_count = ?, active_message_count = ?,"
        " indexed_seq = ?, leaf_event_id = ?, needs_rebuild = 0, updated_at = ? WHERE session_id = ?",
        (cursor[0], cursor[1], cursor[2], cursor[3], updated, sid),
    )
    return True


def _insert_fts(
    conn: sqlite3.Connection, tables: set[str], sid: str, rows: list[tuple[str, str, str, float]]
) -> None:
    """Each full-text row and its row-map entry (the FTS rowid is the map's id)."""
    if "session_transcript_fts_rows" not in tables or "session_transcript_fts" not in tables:
        return
    for message_id, role, text, when in rows:
        rowid = conn.execute(
            "INSERT INTO session_transcript_fts_rows(session_id, message_id) VALUES (?,?)", (sid, message_id)
        ).lastrowid
        conn.execute(
            "INSERT INTO session_transcript_fts(rowid, text, session_id, message_id, role, timestamp)"
            " VALUES (?,?,?,?,?,?)",
            (rowid, text, sid, message_id, role, when),
        )


# ---- the canonical validation queue ----------------------------------------------------------------------


def pending_keys(conn: sqlite3.Connection, tables: set[str]) -> set[str]:
    if PENDING not in tables:
        return set()
    return {row[0] for row in conn.execute(f"SELECT session_key FROM {PENDING}")}


def _agent_key(key: str) -> tuple[str, str] | None:
    parts = key.split(":", 2)
    if len(parts) == 3 and parts[0] == "agent" and parts[1] and parts[2]:
        return parts[1], parts[2]
    return None


def _canonical_key(key: Any, main_key: str) -> bool:
    """Conservatively canonical: trimmed, lower-case (OpenClaw folds keys; opaque mixed-case peer
    ids are left to it), `agent:<id>:<rest>`, `global` or `unknown`; `…:main` only under main key `main`."""
    if not isinstance(key, str) or key != key.strip() or key != key.lower():
        return False
    parsed = _agent_key(key)
    if parsed is None:
        return key in ("global", "unknown")
    return parsed[1] != "main" or main_key == "main"


def _delivery_may_rename(key: str, entry: dict[str, Any]) -> bool:
    """OpenClaw re-derives a key from a delivery channel's peer (`resolveDeliveryProvenCanonicalSessionKey`):
    only a case-folded alias of a mixed-case peer id (or thread id) can come out different, so a key
    whose segment after its delivery channel's `:channel:`/`:group:` marker has letters is left to it."""
    channels = set()
    for source in (entry.get("deliveryContext"), entry.get("delivery"), entry.get("origin")):
        if isinstance(source, dict):
            for field_name in ("channel", "provider"):
                if isinstance(source.get(field_name), str):
                    channels.add(source[field_name].strip().lower())
            context = source.get("context")
            if isinstance(context, dict) and isinstance(context.get("channel"), str):
                channels.add(context["channel"].strip().lower())
    if isinstance(entry.get("channel"), str):
        channels.add(entry["channel"].strip().lower())
    folded = key.lower()
    for marker in (f"{ch}:{kind}:" for ch in channels if ch for kind in ("channel", "group")):
        at = folded.rfind(marker)
        if at >= 0 and any(c.isalpha() for c in folded[at + len(marker) :]):
            return True
    return False


def vouch(row: tuple[Any, ...], main_key: str) -> bool:
    """Whether `validateCanonicalSessionRow` would pass the row (as far as we reproduce it)."""
    key, sid, valid, text, parent, spawned, fork, retained = row
    if text == "{}" and valid == -1 and retained == sid:
        return True  # the retained-history placeholder
    if valid != 1 or not _canonical_key(key, main_key):
        return False
    try:
        entry = loads(text)
    except ValueError:
        return False
    if (
        not isinstance(entry, dict)
        or entry.get("sessionId") != sid
        or not isinstance(sid, str)
        or not sid.strip()
    ):
        return False
    updated = entry.get("updatedAt")
    if isinstance(updated, bool) or not isinstance(updated, int | float):
        return False
    fork_source: dict[str, Any] = entry["forkSource"] if isinstance(entry.get("forkSource"), dict) else {}
    expected_parent = entry.get("parentSessionKey", entry.get("spawnedBy"))
    if (
        parent != expected_parent
        or spawned != entry.get("spawnedBy")
        or fork != fork_source.get("sessionKey")
    ):
        return False
    if any(value is not None and not _canonical_key(value, main_key) for value in (parent, spawned, fork)):
        return False
    return not _delivery_may_rename(key, entry)


def _main_key(conn: sqlite3.Connection, tables: set[str]) -> str:
    row = (
        conn.execute("SELECT main_key FROM session_key_contract WHERE id = 1").fetchone()
        if "session_key_contract" in tables
        else None
    )
    return (row[0] if row and isinstance(row[0], str) else "main").strip().lower() or "main"


def certify(conn: sqlite3.Connection, tables: set[str], keys: Iterable[str]) -> set[str]:
    """Take the keys we vouch for off the queue (the others stay for the real Gateway); returns
    the keys we could not vouch for."""
    wanted = sorted(set(keys))
    refused: set[str] = set()
    if not wanted or PENDING not in tables:
        return refused
    main_key = _main_key(conn, tables)
    for chunk in _chunks(wanted):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT n.session_key, n.current_session_id, n.entry_valid, n.entry_json, n.parent_session_key,"
            " n.spawned_by, n.fork_source_session_key, w.session_id FROM session_nodes AS n"
            " LEFT JOIN session_windows AS w ON w.session_id = n.current_session_id AND w.session_key = n.session_key"
            f" WHERE n.session_key IN ({marks})",
            chunk,
        ).fetchall()
        found = {r[0] for r in rows}
        vouched = [r[0] for r in rows if vouch(r, main_key)]
        refused.update(found.difference(vouched))
        done = vouched + [k for k in chunk if k not in found]
        for part in _chunks(done):
            conn.execute(f"DELETE FROM {PENDING} WHERE session_key IN ({','.join('?' * len(part))})", part)
    return refused


# ---- the canonical receipt ------------------------------------------------------------------------------


def _birth_time_ns(path: str) -> int | None:
    """The file's birth time as Node's `statSync(…, {bigint: true}).birthtimeNs` gives it (libuv's
    statx: `stx_btime`, 0 where the filesystem keeps none); None where statx is unavailable."""
    import ctypes
    import struct
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        statx = libc.statx
    except (OSError, AttributeError):
        return None
    buf = ctypes.create_string_buffer(256)
    # AT_FDCWD, flags 0 (AT_STATX_SYNC_AS_STAT), mask STATX_BASIC_STATS | STATX_BTIME, as libuv asks
    if statx(-100, path.encode(), 0, 0xFFF, buf) != 0:
        return None
    seconds, nanos = struct.unpack_from("<qI", buf, 80)  # struct statx: stx_btime at byte 80
    return cast("int", seconds * 1_000_000_000 + nanos)


def receipt(path: Any, agent_id: str) -> str | None:
    """`physicalReceipt`: JSON `[1, agentId, "<dev>:<ino>", "<birthtime ns>"]` of the file."""
    import os

    from openclaw_cli.jsonutil import dumps_compact

    try:
        st = os.stat(path)
    except OSError:
        return None
    born = _birth_time_ns(str(path))
    if born is None:
        return None
    return dumps_compact([1, agent_id, f"{st.st_dev}:{st.st_ino}", str(born)])


def certify_all(conn: sqlite3.Connection, tables: set[str], path: Any, agent_id: str) -> bool:
    """What 2026.9.6's Gateway does at start (`certifySessionCanonicalValidationPending`), in the
    caller's write transaction: with a current receipt, the queued keys are judged; without, every
    row. When every judged row passed and nothing stays queued, the receipt is (re)written — never
    otherwise, so the real Gateway still validates what we could not. Returns whether it is current."""
    if PENDING not in tables or "session_key_contract" not in tables:
        return False
    columns = {row[1] for row in conn.execute("PRAGMA table_info(session_key_contract)")}
    if "canonical_ready" not in columns:
        return False  # the real writer adds it; we change no schema
    proof = receipt(path, agent_id)
    if proof is None:
        return False
    row = conn.execute("SELECT canonical_ready FROM session_key_contract WHERE id = 1").fetchone()
    if row is None:
        return False
    current = row[0] == proof
    judged = pending_keys(conn, tables)
    if not current:
        judged |= {r[0] for r in conn.execute("SELECT session_key FROM session_nodes")}
    if current and not judged:
        return True
    refused = certify(conn, tables, judged)
    if refused or pending_keys(conn, tables):
        return cast("bool", current)
    conn.execute("UPDATE session_key_contract SET canonical_ready = ? WHERE id = 1", (proof,))
    return True


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---- the transaction's part ------------------------------------------------------------------------------


@dataclass
class Touched:
    """What one write transaction changed: sessions whose events changed, keys it wrote, and the
    queue as the transaction found it."""

    sessions: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    pending_before: set[str] = field(default_factory=set)


def begin(store: OpenClawDbStore) -> None:
    store.touched = Touched(pending_before=pending_keys(store._db(), store._tables))


def touch_session(store: OpenClawDbStore, sid: str) -> None:
    if store.touched is not None:
        store.touched.sessions.add(sid)


def touch_key(store: OpenClawDbStore, key: str) -> None:
    if store.touched is not None:
        store.touched.keys.add(key)


def settle(store: OpenClawDbStore, now_ms: int) -> None:
    """Before COMMIT: every touched session's projection rebuilt, the queue certified."""
    touched = store.touched
    if touched is None:
        return
    conn, tables = store._db(), store._tables
    for sid in sorted(touched.sessions):
        if not catch_up(store, sid):
            rebuild(store, sid, now_ms)
    pending = pending_keys(conn, tables)
    certify(conn, tables, (pending - touched.pending_before) | (touched.keys & pending))
    if _served_here(store):  # our Gateway is the state's certifying writer (D25)
        certify_all(conn, tables, store.path, store.agent_id)
    store.touched = None


def _served_here(store: OpenClawDbStore) -> bool:
    from openclaw_cli.store.state_owner import held_here
    from openclaw_cli.store.writer import owning_state_dir

    return held_here(owning_state_dir(store))
