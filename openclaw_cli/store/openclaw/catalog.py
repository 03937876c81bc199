"""Which OpenClaw agent schema a database holds, and whether openclaw-cli may write it (spec D24).

* Versions: 23 (2026.9.6) and 24 (2026.9.7–2026.9.9) are read and written; 25 (writer-side
  validation, its triggers retired) and 26 (JSON predicate columns) are read — additive for a
  reader — and never written; 22 and older are refused (`openclaw doctor` upgrades them); newer
  than 26 is refused as unknown.
* Markers: `PRAGMA user_version` and `schema_meta.schema_version` move together in every
  OpenClaw migration; a database where they differ is refused, both values named.
* Shape: before a write, the tables we write (and their triggers) are compared by column name
  with the shape each writable version has — schema 23's from the 2026.9.6 catalogue, schema 24's
  from the published v2026.9.9 catalogue, the migrated form being the same set of names. A
  missing trigger, or a missing or unexpected column, is named and the write refused; tables we
  do not write may differ (OpenClaw adds first-use tables without a version bump).
"""

from __future__ import annotations

import sqlite3

from openclaw_cli.store.openclaw import v24 as openclaw_v24

OLDEST_READ = 23
NEWEST_READ = 26
WRITABLE = frozenset({23, 24})
READ_ONLY = {
    25: "schema 25 moves session-row validation into OpenClaw's writers and retires the triggers ours rely on",
    26: "schema 26 adds JSON predicate columns every writer must compute",
}

# Schema 23 (OpenClaw 2026.9.6's catalogue): the tables our writes touch, by column name.
_COLUMNS_23: dict[str, frozenset[str]] = {
    name: frozenset(cols)
    for name, cols in {
        "session_nodes": (
            "session_key",
            "current_session_id",
            "entry_json",
            "legacy_acp_migration_json",
            "entry_valid",
            "updated_at",
            "status",
            "created_at",
            "created_via",
            "created_actor_type",
            "created_actor_id",
            "owner_actor_type",
            "owner_actor_id",
            "owner_assigned_by_type",
            "owner_assigned_by_id",
            "owner_assigned_at",
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
        ),
        "session_windows": (
            "session_id",
            "session_key",
            "previous_session_id",
            "reason",
            "session_scope",
            "created_at",
            "updated_at",
            "transcript_updated_at",
            "transcript_observed_at",
            "session_entry_provenance",
            "acp_owned",
            "plugin_owner_id",
            "hook_external_content_source",
            "started_at",
            "ended_at",
            "status",
            "chat_type",
            "channel",
            "account_id",
            "primary_conversation_id",
            "model_provider",
            "model",
            "agent_harness_id",
            "parent_session_key",
            "spawned_by",
            "display_name",
        ),
        "transcript_events": (
            "session_id",
            "seq",
            "event_json",
            "created_at",
            "event_zstd",
            "event_utf8_bytes",
            "navigation_json",
        ),
        "transcript_event_identities": (
            "session_id",
            "event_id",
            "seq",
            "event_type",
            "parent_id",
            "message_idempotency_key",
            "created_at",
        ),
        "session_transcript_archives": (
            "session_id",
            "generation",
            "session_key",
            "reason",
            "encoding",
            "archive_blob",
            "archive_sha256",
            "archive_name",
            "created_at",
            "published_at",
            "publish_attempts",
            "last_publish_attempt_at",
            "last_publish_error",
        ),
        "session_transcript_fts_rows": ("id", "session_id", "message_id"),
        "session_transcript_fts": ("text", "session_id", "message_id", "role", "timestamp"),
        "session_transcript_active_events": (
            "session_id",
            "active_position",
            "event_seq",
            "message_position",
            "context_eligible",
        ),
        "session_transcript_index_state": (
            "session_id",
            "indexed_seq",
            "leaf_event_id",
            "needs_rebuild",
            "active_event_count",
            "active_message_count",
            "updated_at",
        ),
        "transcript_rewrite_watermarks": ("session_id", "generation", "updated_at"),
        "session_canonical_validation_pending": ("session_key",),
    }.items()
}
# ... and the triggers on them (the entry-validity and canonical-pending ones our writes rely on).
_TRIGGERS_23: dict[str, frozenset[str]] = {
    "session_nodes": frozenset(
        {
            "session_nodes_canonical_pending_after_delete",
            "session_nodes_canonical_pending_after_insert",
            "session_nodes_canonical_pending_after_update",
            "session_nodes_entry_valid_after_entry_update",
            "session_nodes_entry_valid_after_identity_update",
            "session_nodes_entry_valid_after_insert",
        }
    ),
    "session_windows": frozenset(
        {
            "session_windows_canonical_pending_after_delete",
            "session_windows_canonical_pending_after_insert",
            "session_windows_canonical_pending_after_update",
        }
    ),
    "session_transcript_fts_rows": frozenset({"session_transcript_fts_rows_after_delete"}),
}
# tables a write may create (first use) or that an OpenClaw database may not have yet
_OPTIONAL_TABLES = frozenset(
    {
        "session_transcript_archives",
        "session_transcript_fts_rows",
        "session_transcript_fts",
        "session_transcript_active_events",
        "session_transcript_index_state",
        "transcript_rewrite_watermarks",
        "session_canonical_validation_pending",
        "transcript_event_identities",
    }
)


def shape(version: int) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(columns by table, triggers by table) of the tables we write, for a writable version."""
    if version == 23:
        return _COLUMNS_23, _TRIGGERS_23
    if version == openclaw_v24.VERSION:
        return openclaw_v24.extend_shape(_COLUMNS_23, _TRIGGERS_23)
    raise ValueError(f"no known shape for schema {version}")


def markers(conn: sqlite3.Connection) -> tuple[int, int | None]:
    """(`PRAGMA user_version`, `schema_meta.schema_version` of the primary row or None)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    try:
        row = conn.execute("SELECT schema_version FROM schema_meta WHERE meta_key = 'primary'").fetchone()
    except sqlite3.OperationalError:
        return version, None
    return version, (row[0] if row is not None else None)


def markers_disagree(path: object, user_version: int, meta_version: object) -> str:
    return (
        f"OpenClaw agent database {path} has schema markers that disagree: PRAGMA user_version = {user_version}, "
        f"schema_meta.schema_version = {meta_version}. OpenClaw moves both together; a database in this state "
        "was changed by hand or by a partial migration: restore it from a backup with the matching OpenClaw "
        "build (openclaw-cli neither reads nor writes it)."
    )


def drift(conn: sqlite3.Connection, version: int) -> list[str]:
    """How the tables we write differ from the known shape of `version` (empty: none)."""
    columns, triggers = shape(version)
    present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    actual_triggers: dict[str, set[str]] = {}
    for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'"):
        actual_triggers.setdefault(table, set()).add(name)
    out: list[str] = []
    for table in sorted(columns):
        if table not in present:
            if table not in _OPTIONAL_TABLES:
                out.append(f"table {table} is missing")
            continue
        have = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
        out.extend(f"unexpected column {table}.{name}" for name in sorted(have - columns[table]))
        out.extend(f"column {table}.{name} is missing" for name in sorted(columns[table] - have))
        expected = triggers.get(table, frozenset())
        found = actual_triggers.get(table, set())
        out.extend(f"trigger {name} (on {table}) is missing" for name in sorted(expected - found))
        out.extend(f"unexpected trigger {name} on {table}" for name in sorted(found - expected))
    return out


def write_refusal(conn: sqlite3.Connection, path: object, version: int) -> str | None:
    """Why a write to this database is refused (None: it may be written)."""
    if version in READ_ONLY:
        return (
            f"OpenClaw agent database {path} uses schema version {version}, which openclaw-cli reads but never "
            f"writes ({READ_ONLY[version]}); use OpenClaw itself for changes."
        )
    if version not in WRITABLE:
        return f"OpenClaw agent database {path} uses schema version {version}; openclaw-cli writes schemas 23 and 24."
    differences = drift(conn, version)
    if differences:
        more = f" (and {len(differences) - 3} more)" if len(differences) > 3 else ""
        return (
            f"OpenClaw agent database {path} says schema version {version} but its catalogue differs from every "
            f"schema-{version} shape openclaw-cli knows: {'; '.join(differences[:3])}{more}. It is read, never "
            "written; OpenClaw's own `openclaw doctor` checks and repairs its schema."
        )
    return None
