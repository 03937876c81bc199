"""What our writer needs to know about a real OpenClaw schema-23 agent database
(storage-migration.md §4, OpenClaw 2026.9.6's `session-accessor.sqlite-*`), kept apart from the
read path (`openclaw_db.py`) so that reads import none of it.

* the write connection (§4.1): `busy_timeout`, `foreign_keys = ON` (the schema's cascades remove
  a window's events, identities, active-event rows, index state and watermark with it),
  `synchronous = FULL` for our one commit, the journal mode left as OpenClaw set it;
* the projections OpenClaw's entry writer derives from `entry_json` (S-1 node columns, S-3 window
  columns) and the registered archive names of `session_transcript_archives` (`<sid>.jsonl.<reason>.<ts>.<generation>.zst`).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openclaw_cli.store.archives import format_archive_timestamp

ARCHIVE_ZSTD_SUFFIX = ".zst"
MAX_ARCHIVE_SID_BYTES = 96  # longer ids are named `session-<sha256>` in registered archive names
SESSION_STATUSES = frozenset({"running", "done", "failed", "killed", "timeout"})
CREATED_VIA = frozenset({"operator", "spawn", "channel", "cron", "talk", "run", "plugin", "internal"})
ACTOR_TYPES = frozenset({"human", "agent", "system"})
CHAT_TYPES = frozenset({"direct", "group", "channel"})

# Node columns our entry writer sets (OpenClaw's `bindSessionNode`), in this order.
NODE_COLUMNS = (
    "current_session_id",
    "entry_json",
    "updated_at",
    "status",
    "created_at",
    "created_via",
    "created_actor_type",
    "created_actor_id",
    "project_id",
    "parent_session_key",
    "spawned_by",
    "fork_source_session_key",
    "fork_source_session_id",
    "fork_source_entry_id",
    "label",
    "display_name",
    "category",
    "icon",
    "pinned_at",
    "archived_at",
    "last_read_at",
    "last_interaction_at",
    "last_activity_at",
)
# Window columns an entry write projects (`bindSessionWindowEntryProjection`); `created_at`,
# `reason` and the provenance columns of an existing window are left as they are.
WINDOW_COLUMNS = (
    "previous_session_id",
    "session_scope",
    "started_at",
    "ended_at",
    "status",
    "chat_type",
    "channel",
    "account_id",
    "model_provider",
    "model",
    "agent_harness_id",
    "parent_session_key",
    "spawned_by",
    "display_name",
)


def _octet_length(value: Any) -> int | None:
    """SQLite's `octet_length(X)` (3.43+): bytes of X as text (UTF-8) or blob."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return len(value)
    return len(str(value).encode("utf-8"))


def add_schema_functions(conn: sqlite3.Connection) -> None:
    """Functions schema 23's CHECK constraints call that an older SQLite lacks (`octet_length`
    guards `navigation_json`): without them every write or integrity check touching
    `transcript_events` fails with "unknown function"."""
    if sqlite3.sqlite_version_info < (3, 43, 0):
        conn.create_function("octet_length", 1, _octet_length, deterministic=True)


def open_writable(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A read-write connection with OpenClaw's per-connection settings (§4.1)."""
    conn = sqlite3.connect(
        str(path), isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
    )
    try:
        add_schema_functions(conn)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
        conn.execute("PRAGMA journal_size_limit = 67108864")
    except BaseException:
        conn.close()
        raise
    return conn


def state_dir_of(db_path: Path) -> Path | None:
    """`<state>/agents/<id>/agent/<db>` → `<state>`; None for a database elsewhere."""
    path = Path(db_path).absolute()
    parts = path.parents
    if len(parts) >= 4 and parts[0].name == "agent" and parts[2].name == "agents":
        return parts[3]
    return None


# ---- projections ----------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    """OpenClaw's `normalizeText`: a trimmed non-empty string, else NULL."""
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return None


def _number(value: Any) -> int | float | None:
    """A finite number as SQLite INTEGER when integral (STRICT integer columns), else NULL."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer():
            return int(value)
        return None  # STRICT INTEGER columns refuse fractions; OpenClaw's entries carry integer ms
    return value


def _choice(value: Any, allowed: frozenset[str]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def display_name(entry: Mapping[str, Any]) -> str | None:
    """The window's display name: displayName, label, subject or groupId (first that is set)."""
    for field in ("displayName", "label", "subject", "groupId"):
        text = _text(entry.get(field))
        if text is not None:
            return text
    return None


def _external(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    delivery = _mapping(entry.get("delivery"))
    return delivery if delivery.get("kind") == "external" else {}


def _channel(entry: Mapping[str, Any]) -> str | None:
    """`delivery.context.channel ?? delivery.origin.provider` of an external delivery."""
    delivery = _external(entry)
    channel = _mapping(delivery.get("context")).get("channel")
    if channel is None:
        channel = _mapping(delivery.get("origin")).get("provider")
    return _text(channel)


def _account(entry: Mapping[str, Any]) -> str | None:
    return _text(_mapping(_external(entry).get("context")).get("accountId"))


def node_values(entry: Mapping[str, Any], entry_json: str, updated_at: int) -> tuple[Any, ...]:
    """The S-1 projections of `entry`, in `NODE_COLUMNS` order."""
    actor = _mapping(entry.get("createdActor"))
    fork = _mapping(entry.get("forkSource"))
    return (
        _text(entry.get("sessionId")),
        entry_json,
        updated_at,
        _choice(entry.get("status"), SESSION_STATUSES),
        _number(entry.get("createdAt")),
        _choice(entry.get("createdVia"), CREATED_VIA),
        _choice(actor.get("type"), ACTOR_TYPES),
        _text(actor.get("id")),
        _text(entry.get("projectId")),
        _text(entry.get("parentSessionKey")) or _text(entry.get("spawnedBy")),
        _text(entry.get("spawnedBy")),
        _text(fork.get("sessionKey")),
        _text(fork.get("sessionId")),
        _text(fork.get("entryId")),
        _text(entry.get("label")),
        _text(entry.get("displayName")),
        _text(entry.get("category")),
        _text(entry.get("icon")),
        _number(entry.get("pinnedAt")),
        _number(entry.get("archivedAt")),
        _number(entry.get("lastReadAt")),
        _number(entry.get("lastInteractionAt")),
        _number(entry.get("lastActivityAt")),
    )


def session_scope(entry: Mapping[str, Any], key: str) -> str:
    chat_type = _choice(entry.get("chatType"), CHAT_TYPES)
    folded = key.strip().lower()
    if chat_type == "direct" and (folded == "main" or folded.endswith(":main")):
        return "shared-main"
    if chat_type in ("group", "channel"):
        return chat_type
    return "conversation"


def window_values(key: str, entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """The S-3 projections of `entry` for its window, in `WINDOW_COLUMNS` order."""
    return (
        _text(entry.get("previousSessionId")),
        session_scope(entry, key),
        _number(entry.get("startedAt")),
        _number(entry.get("endedAt")),
        _choice(entry.get("status"), SESSION_STATUSES),
        _choice(entry.get("chatType"), CHAT_TYPES),
        _channel(entry),
        _account(entry),
        _text(entry.get("modelProvider")),
        _text(entry.get("model")),
        _text(entry.get("agentHarnessId")),
        _text(entry.get("parentSessionKey")),
        _text(entry.get("spawnedBy")),
        display_name(entry),
    )


def window_created_at(entry: Mapping[str, Any], fallback: int) -> int:
    for field in ("sessionStartedAt", "startedAt", "updatedAt"):
        value = _number(entry.get(field))
        if value is not None and value >= 0:
            return int(value)
    return fallback


# ---- archives and generations ---------------------------------------------------------------------------


def new_generation() -> str:
    """A transcript generation token (OpenClaw: a v4 uuid without dashes)."""
    return uuid.uuid4().hex


def registered_archive_name(
    session_id: str, reason: str, created_at: int, generation: str, *, compressed: bool
) -> str:
    """The `archive_name` of a `session_transcript_archives` row (and of its published file)."""
    component = session_id
    if len(session_id.encode("utf-8")) > MAX_ARCHIVE_SID_BYTES:
        component = "session-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()
    suffix = ARCHIVE_ZSTD_SUFFIX if compressed else ""
    return f"{component}.jsonl.{reason}.{format_archive_timestamp(created_at)}.{generation}{suffix}"
