"""What schema 24 (OpenClaw 2026.9.7–2026.9.9) adds to the schema-23 agent database, and how we
read and write it (spec D24; openclaw-after-2026.9.6.md §1–§2; docs/decisions.md "Issue 23:
schema 24" names the upstream files and commits these facts come from).

Three entry fields, `sessionDiffBaseline`, `skillsSnapshot` and `systemPromptReport`, live as
one `session_entry_snapshots` row each (`value_json`, keyed by `(session_key, field)`, cascading
with the node) instead of inside `entry_json`; triggers count every snapshot change in
`session_nodes.snapshot_revision`, which fresh databases place after `entry_json` and migrated
ones last (so columns are always named, never positional).

* Full reads reassemble the entry: a snapshot row's value replaces any inline value (unmigrated
  rows may still hold them inline) and is appended last, as OpenClaw's `attachSessionEntrySnapshots`
  does; list reads drop the three keys. Values are parsed here, never by SQLite's JSON functions
  (they may nest deeper than SQLite's limit): a value too deep for our parsers is kept as its text
  (`jsonutil.RawJson`), an unreadable one is left out of the entry, reported, and never deleted
  by a write.
* An entry write puts the entry without the three fields in `entry_json`, then replaces the
  snapshot rows (rows of absent fields deleted, changed ones upserted, equal ones not touched so
  the revision does not move), then — last, by the caller — sets `entry_valid = 1`.
  `snapshot_revision`, `schema_meta` and `user_version` are never written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from openclaw_cli import jsonutil

VERSION = 24
SNAPSHOT_FIELDS = ("sessionDiffBaseline", "skillsSnapshot", "systemPromptReport")
SNAPSHOT_TABLE = "session_entry_snapshots"
SNAPSHOT_TABLE_COLUMNS = ("session_key", "field", "value_json")
REVISION_COLUMN = "snapshot_revision"
SNAPSHOT_TRIGGERS = (
    "session_entry_snapshots_after_insert",
    "session_entry_snapshots_after_update",
    "session_entry_snapshots_after_delete",
)
# one statement reads a node and its snapshot values (OpenClaw's correlated sub-selects)
SNAPSHOT_SELECT = ", ".join(
    f"(SELECT value_json FROM {SNAPSHOT_TABLE} AS s WHERE s.session_key = n.session_key AND s.field = '{field}')"
    for field in SNAPSHOT_FIELDS
)


def extend_shape(
    columns: dict[str, frozenset[str]], triggers: dict[str, frozenset[str]]
) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Schema 24's catalogue from schema 23's (the tables we write, their triggers)."""
    columns = {
        **columns,
        "session_nodes": columns["session_nodes"] | {REVISION_COLUMN},
        SNAPSHOT_TABLE: frozenset(SNAPSHOT_TABLE_COLUMNS),
    }
    triggers = {**triggers, SNAPSHOT_TABLE: frozenset(SNAPSHOT_TRIGGERS)}
    return columns, triggers


def has_snapshots(conn: sqlite3.Connection) -> bool:
    """Whether this database keeps the snapshot fields in their own table (schema 24+)."""
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SNAPSHOT_TABLE,)
        ).fetchone()
        is not None
    )


# ---- reads ------------------------------------------------------------------------------------------------


class SnapshotIssue(Exception):
    """A snapshot value we cannot read (not JSON): the entry is read without it."""


def parse_value(text: Any, *, lazy: bool = False) -> Any:
    """The value of a snapshot row. `lazy` (bulk reads): a JSON object is checked, then held as
    its text (`jsonutil.JsonObjectText`) rather than as parsed objects."""
    if not isinstance(text, str):
        raise SnapshotIssue("value_json is not text")
    try:
        value = jsonutil.loads_or_raw(text)
    except jsonutil.JSONDecodeError as exc:
        raise SnapshotIssue(f"value_json is not JSON: {exc}") from None
    if lazy and type(value) is dict and value:
        return jsonutil.JsonObjectText(text)
    return value


def attach(
    entry: dict[str, Any], values: Iterable[Any], on_issue: Any = None, *, lazy: bool = False
) -> dict[str, Any]:
    """`entry` with the snapshot values (in `SNAPSHOT_FIELDS` order, None for no row) in place of
    any inline ones, each appended last. `on_issue(field, message)` hears of unreadable values."""
    for field, text in zip(SNAPSHOT_FIELDS, values, strict=True):
        if text is None:
            continue
        try:
            value = parse_value(text, lazy=lazy)
        except SnapshotIssue as exc:
            if on_issue is not None:
                on_issue(field, str(exc))
            entry.pop(field, None)  # neither a stale inline copy nor a guess
            continue
        entry.pop(field, None)
        entry[field] = value
    return entry


def strip(entry: dict[str, Any]) -> dict[str, Any]:
    """The list projection: no snapshot field, inline or not."""
    for field in SNAPSHOT_FIELDS:
        entry.pop(field, None)
    return entry


def full_entries(conn: sqlite3.Connection, keys: list[str]) -> Iterator[tuple[str, str, tuple[Any, ...]]]:
    """(key, entry_json, snapshot texts) of the valid rows among `keys`, 500 keys a statement."""
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for key, text, *values in conn.execute(
            f"SELECT n.session_key, n.entry_json, {SNAPSHOT_SELECT} FROM session_nodes AS n"
            f" WHERE n.entry_valid = 1 AND n.session_key IN ({marks})",
            chunk,
        ):
            yield key, text, tuple(values)


def same_entry(text: Any, values: tuple[Any, ...], planned: Any) -> bool:
    """Whether the stored row (`entry_json`, snapshot texts) is the entry a plan read: the hot
    part compared parsed, each snapshot by its text when the plan holds it as text (a bulk read),
    else parsed — a row unchanged since the plan costs no snapshot parse."""
    if not isinstance(planned, Mapping):
        return False
    try:
        stored = jsonutil.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(stored, dict):
        return False
    for field, value in zip(SNAPSHOT_FIELDS, values, strict=True):
        if value is None:
            continue
        stored.pop(field, None)  # a row's value wins over an inline one
        if field not in planned:
            return False
        want = planned[field]
        if isinstance(want, jsonutil.JsonObjectText) and want.text == value:
            continue
        try:
            if parse_value(value) != want:
                return False
        except SnapshotIssue:
            return False
    rows = {field for field, value in zip(SNAPSHOT_FIELDS, values, strict=True) if value is not None}
    return stored == {k: v for k, v in planned.items() if k not in rows}


# ---- writes -----------------------------------------------------------------------------------------------


def split(entry: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """(the entry without the snapshot fields, [(field, value_json)] of those present).
    A field whose value is None in Python (JSON null) is stored as `'null'`, as OpenClaw does."""
    hot = {key: value for key, value in entry.items() if key not in SNAPSHOT_FIELDS}
    rows = [(field, jsonutil.dumps_compact(entry[field])) for field in SNAPSHOT_FIELDS if field in entry]
    return hot, rows


def replace_snapshots(
    conn: sqlite3.Connection, key: str, rows: list[tuple[str, str]], keep: Iterable[str] = ()
) -> None:
    """Make the key's snapshot rows exactly `rows` (plus the fields in `keep`: stored values we
    could not read, which a write must not lose): delete the others, upsert the changed ones. An
    unchanged row is not rewritten, so the triggers bump `snapshot_revision` only for real changes."""
    present = [field for field, _ in rows] + [field for field in keep if field not in dict(rows)]
    if present:
        marks = ",".join("?" * len(present))
        conn.execute(
            f"DELETE FROM {SNAPSHOT_TABLE} WHERE session_key = ? AND field NOT IN ({marks})", (key, *present)
        )
    else:
        conn.execute(f"DELETE FROM {SNAPSHOT_TABLE} WHERE session_key = ?", (key,))
    if rows:
        conn.execute(
            f"INSERT INTO {SNAPSHOT_TABLE}(session_key, field, value_json) VALUES {','.join(['(?,?,?)'] * len(rows))}"
            f" ON CONFLICT(session_key, field) DO UPDATE SET value_json = excluded.value_json"
            f" WHERE {SNAPSHOT_TABLE}.value_json != excluded.value_json",
            [value for field, text in rows for value in (key, field, text)],
        )


def unreadable_fields(conn: sqlite3.Connection, key: str) -> list[str]:
    """Fields of `key` whose stored value is not JSON (kept by a write, never replaced by a guess)."""
    out = []
    for field, text in conn.execute(
        f"SELECT field, value_json FROM {SNAPSHOT_TABLE} WHERE session_key = ?", (key,)
    ):
        try:
            parse_value(text)
        except SnapshotIssue:
            out.append(field)
    return out


def inline_fields(conn: sqlite3.Connection, key: str) -> list[str]:
    """Snapshot fields the stored `entry_json` of `key` still holds inline while rows exist too."""
    row = conn.execute("SELECT entry_json FROM session_nodes WHERE session_key = ?", (key,)).fetchone()
    if row is None:
        return []
    try:
        stored = jsonutil.loads_or_raw(row[0])
    except (*jsonutil.JSONDecodeError, TypeError):
        return []
    if not isinstance(stored, dict):
        return []
    fields = [f for f in SNAPSHOT_FIELDS if f in stored]
    if not fields:
        return []
    with_rows = {
        f for (f,) in conn.execute(f"SELECT field FROM {SNAPSHOT_TABLE} WHERE session_key = ?", (key,))
    }
    return [f for f in fields if f in with_rows]


@dataclass
class SnapshotWrite:
    hot: dict[str, Any]  # what `entry_json` holds
    rows: list[tuple[str, str]]  # (field, value_json) the table holds after the write
    keep: list[str]  # stored fields we could not read: left as they are

    def apply(self, conn: sqlite3.Connection, key: str) -> None:
        replace_snapshots(conn, key, self.rows, self.keep)


def prepare_write(
    conn: sqlite3.Connection, key: str, entry: Mapping[str, Any], notices: list[str] | None
) -> SnapshotWrite:
    """An entry write on schema 24: `hot` goes into the node row, then `apply` (before
    `entry_valid = 1`). A row that held fields both inline and in rows (a migration left it half
    done) is normalised by the write — the rows' values are what every read showed — and a
    notice says so; stored values we cannot read are kept, and said."""
    hot, rows = split(entry)
    keep = unreadable_fields(conn, key)
    if notices is not None:
        doubled = inline_fields(conn, key)
        if doubled:
            notices.append(
                f"Session {key} held {', '.join(doubled)} both inline in entry_json and in "
                f"{SNAPSHOT_TABLE}; the table's values (the ones every read shows) were kept and the "
                "inline copies dropped."
            )
        if keep:
            notices.append(
                f"Session {key}: the unreadable {SNAPSHOT_TABLE} value(s) of {', '.join(keep)} were "
                "left as stored."
            )
    return SnapshotWrite(hot, [(f, t) for f, t in rows if f not in keep], keep)


# ---- what doctor --session-sqlite validate lists ------------------------------------------------------------


def snapshot_issues(
    conn: sqlite3.Connection, sqlite_json_depth: int = 1000
) -> list[tuple[str, str, str | None]]:
    """(code, message, session key) of snapshot rows that are not as OpenClaw's writers leave them:
    rows without a node, fields both inline and in rows, unreadable values, and values nesting
    deeper than SQLite's JSON functions read (valid, read by us; SQLite's json_* fail on them)."""
    out: list[tuple[str, str, str | None]] = []
    for key, field in conn.execute(
        f"SELECT s.session_key, s.field FROM {SNAPSHOT_TABLE} AS s"
        " WHERE NOT EXISTS (SELECT 1 FROM session_nodes AS n WHERE n.session_key = s.session_key)"
        " ORDER BY s.session_key, s.field"
    ):
        out.append(
            (
                "sqlite_snapshot_orphan",
                f"Snapshot row {field} of {key} has no session node "
                "(a foreign-key violation: OpenClaw deletes snapshot rows with their node).",
                key,
            )
        )
    for key, text, *values in conn.execute(
        f"SELECT n.session_key, n.entry_json, {SNAPSHOT_SELECT} FROM session_nodes AS n ORDER BY n.session_key"
    ):
        have = [f for f, v in zip(SNAPSHOT_FIELDS, values, strict=True) if v is not None]
        if have and isinstance(text, str) and any(f'"{f}"' in text for f in have):
            try:
                stored = jsonutil.loads_or_raw(text)
            except jsonutil.JSONDecodeError:
                stored = None
            doubled = [f for f in have if isinstance(stored, dict) and f in stored]
            if doubled:
                out.append(
                    (
                        "sqlite_snapshot_inline_duplicate",
                        f"Session {key} holds {', '.join(doubled)} both inline in entry_json and in "
                        f"{SNAPSHOT_TABLE} (reads use the table's values).",
                        key,
                    )
                )
        for field, value in zip(SNAPSHOT_FIELDS, values, strict=True):
            if value is None:
                continue
            try:
                parsed = parse_value(value)
            except SnapshotIssue as exc:
                out.append(("sqlite_snapshot_unreadable", f"Snapshot {field} of {key}: {exc}.", key))
                continue
            if isinstance(parsed, jsonutil.RawJson) or _depth_over(value, sqlite_json_depth):
                out.append(
                    (
                        "sqlite_snapshot_deep_json",
                        f"Snapshot {field} of {key} nests deeper than SQLite's JSON limit ({sqlite_json_depth}); "
                        "it is read in full, SQLite's json functions cannot read it.",
                        key,
                    )
                )
    return out


def _depth_over(text: str, limit: int) -> bool:
    """Whether the brackets of a JSON text nest deeper than `limit` (strings skipped)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest > limit
