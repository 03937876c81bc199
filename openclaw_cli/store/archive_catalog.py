"""What can be restored (issue 27 §3): every transcript archive of one store, whatever wrote it,
with the key it belonged to, its recorded checksum and when the current retention expires it.

Sources, per store kind:
* archive files in the agent's sessions dir (`<sid>.jsonl.deleted|reset|bak.<ts>[.zst]`), every kind;
* our SQLite's `session_transcript_archives` rows: key, sha256 of the original bytes, sizes;
* a real OpenClaw database's `session_transcript_archives` rows: key, the zstd blob itself and the
  sha256 of that blob (a row whose file was never published is restored from its blob);
* the usage ledger's removed rows (`usage_ledger.removed_path`): the key (and row) of a legacy
  session, whose archive name holds only its session id.

Reading is read-only: the database tables are read through a read-only connection of their own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import InvalidDataError, NotFoundError

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore


@dataclass
class RestorableArchive:
    agent_id: str
    name: str  # the archive's file name (also a database row's archive_name)
    path: Path  # where its file is or would be published
    session_id: str | None
    key: str | None
    reason: str  # deleted | reset | bak
    created_ms: int | None
    stored_bytes: int
    compressed: bool
    source: str  # "file" | "database" (a row of an OpenClaw database whose file is absent)
    raw_bytes: int | None = None
    events: int | None = None
    sha256: str | None = None  # the recorded checksum
    sha256_of: str | None = None  # "content" (ours) | "blob" (OpenClaw's zstd payload)
    expires_ms: int | None = None
    entry: dict[str, Any] | None = None  # the removed row, where the ledger kept it

    def doc(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "key": self.key,
            "sessionId": self.session_id,
            "reason": self.reason,
            "archivedAt": self.created_ms,
            "expiresAt": self.expires_ms,
            "bytes": self.stored_bytes,
            "rawBytes": self.raw_bytes,
            "events": self.events,
            "compressed": self.compressed,
            "source": self.source,
            "checksum": {"sha256": self.sha256, "of": self.sha256_of} if self.sha256 else None,
            "name": self.name,
            "path": str(self.path),
        }


def _db_rows(store: SessionStore) -> dict[str, dict[str, Any]]:
    """archive_name -> what a database store recorded of it (empty for a legacy store)."""
    if store.transcripts_in_files:
        return {}
    import sqlite3

    from openclaw_cli.store.sqlite_common import open_readonly

    try:
        handle = open_readonly(Path(store.path))
    except Exception:  # noqa: BLE001 - an unreadable database: its files are still listed
        return {}
    try:
        conn = handle.conn
        columns = {row[1] for row in conn.execute("PRAGMA table_info(session_transcript_archives)")}
        if not columns:
            return {}
        out: dict[str, dict[str, Any]] = {}
        if "archive_blob" in columns:  # OpenClaw's table
            sql = (
                "SELECT archive_name, session_id, session_key, reason, encoding, archive_sha256, created_at,"
                " length(archive_blob) FROM session_transcript_archives"
            )
            for name, sid, key, reason, encoding, sha, created, size in conn.execute(sql):
                out[name] = {
                    "session_id": sid,
                    "key": key,
                    "reason": reason,
                    "compressed": encoding == "zstd",
                    "sha256": sha,
                    "sha256_of": "blob",
                    "created": created,
                    "stored": size,
                    "blob": True,
                }
        else:
            sql = (
                "SELECT archive_name, session_id, session_key, reason, encoding, archive_sha256, archive_bytes,"
                " event_count, raw_bytes, created_at FROM session_transcript_archives"
            )
            for name, sid, key, reason, encoding, sha, stored, events, raw, created in conn.execute(sql):
                out[name] = {
                    "session_id": sid,
                    "key": key,
                    "reason": reason,
                    "compressed": encoding == "zstd",
                    "sha256": sha,
                    "sha256_of": "content",
                    "stored": stored,
                    "events": events,
                    "raw": raw,
                    "created": created,
                }
        return out
    except sqlite3.Error:
        return {}
    finally:
        handle.close()


def removed_rows(state_dir: Path | None, agent_id: str) -> dict[str, dict[str, Any]]:
    """sessionId -> the newest removed-row record the ledger kept for it."""
    if state_dir is None:
        return {}
    from openclaw_cli.store.usage_ledger import read_records, removed_path

    out: dict[str, dict[str, Any]] = {}
    for record in read_records(removed_path(state_dir, agent_id)).records:
        out[record["sessionId"]] = record
    return out


def catalog(store: SessionStore, *, retention_ms: int | None = None) -> list[RestorableArchive]:
    """Every restorable archive of `store`, oldest first."""
    from openclaw_cli.store.usage_ledger import state_dir_of

    rows = _db_rows(store)
    removed = removed_rows(state_dir_of(store), store.agent_id)
    out: list[RestorableArchive] = []
    for item in store.list_archives():
        name = item.path.name
        if item.reason not in ("deleted", "reset", "bak") or name.startswith("sessions.json"):
            continue
        row = rows.get(name, {})
        on_disk = item.path.exists()
        sid = item.session_id or row.get("session_id")
        ledger = removed.get(sid) if sid else None
        archive = RestorableArchive(
            agent_id=store.agent_id,
            name=name,
            path=item.path,
            session_id=sid,
            key=row.get("key") or (ledger or {}).get("key"),
            reason=item.reason,
            created_ms=item.timestamp_ms if item.timestamp_ms is not None else row.get("created"),
            stored_bytes=item.size,
            compressed=item.compressed,
            source="file" if on_disk else "database",
            raw_bytes=row.get("raw"),
            events=row.get("events"),
            sha256=row.get("sha256"),
            sha256_of=row.get("sha256_of"),
            entry=(ledger or {}).get("entry") if isinstance((ledger or {}).get("entry"), dict) else None,
        )
        if (
            retention_ms is not None
            and archive.reason in ("deleted", "reset")
            and archive.created_ms is not None
        ):
            archive.expires_ms = archive.created_ms + retention_ms
        out.append(archive)
    out.sort(key=lambda a: (a.created_ms or 0, a.name))
    return out


def find_archive(archives: list[RestorableArchive], selector: str) -> list[RestorableArchive]:
    """The archives a `restore` argument names: an archive file name or path, a session id, or a
    session key (its newest archive first)."""
    wanted = selector.strip()
    by_name = [
        a for a in archives if a.name == wanted or str(a.path) == wanted or a.name == Path(wanted).name
    ]
    if by_name:
        return by_name
    matches = [a for a in archives if a.session_id == wanted or a.key == wanted]
    return sorted(matches, key=lambda a: (-(a.created_ms or 0), a.name))


def read_verified(store: SessionStore, archive: RestorableArchive) -> tuple[bytes, str]:
    """The archive's original bytes, checked against what was recorded: (content, how it was
    verified). A mismatch or a damaged archive raises `InvalidDataError` naming the archive."""
    from openclaw_cli.store.archives import open_archive

    blob: bytes | None = None
    if archive.source == "database" or (archive.sha256_of == "blob"):
        blob = _blob(store, archive.name) if archive.source == "database" else None
        if blob is None:
            try:
                blob = archive.path.read_bytes()
            except FileNotFoundError:
                blob = _blob(store, archive.name)
        if blob is None:
            raise NotFoundError(
                f"Archive {archive.name} is gone (neither its file nor its database row is left)."
            )
        if archive.sha256 and hashlib.sha256(blob).hexdigest() != archive.sha256:
            raise InvalidDataError(
                f"Archive {archive.name} fails its checksum (sha256 of the stored archive differs from the "
                "one recorded): refusing to restore it; nothing was written."
            )
        content = _decode(blob, archive) if archive.compressed else blob
        return content, "sha256 of the stored archive"
    try:
        with open_archive(archive.path, compressed=archive.compressed) as stream:
            content = stream.read()
    except FileNotFoundError:
        raise NotFoundError(f"Archive file {archive.path} is gone.") from None
    except InvalidDataError as exc:
        raise InvalidDataError(
            f"Archive {archive.name} is damaged ({exc.message}): refusing to restore it; nothing was written."
        ) from None
    if archive.sha256:
        if hashlib.sha256(content).hexdigest() != archive.sha256:
            raise InvalidDataError(
                f"Archive {archive.name} fails its checksum (sha256 of its content differs from the one "
                "recorded): refusing to restore it; nothing was written."
            )
        return content, "sha256 of the content"
    if archive.compressed:
        return content, "zstd frame checksum"
    _check_lines(content, archive)
    return content, "every line is JSON (no checksum recorded for a plain archive)"


def _decode(blob: bytes, archive: RestorableArchive) -> bytes:
    import zstandard

    parts: list[bytes] = []
    rest = blob
    try:
        while rest:  # every frame; a frame cut short is damage, never a short restore
            obj = zstandard.ZstdDecompressor().decompressobj()
            parts.append(obj.decompress(rest))
            if not obj.eof:
                raise zstandard.ZstdError("truncated zstd frame")
            rest = obj.unused_data
    except zstandard.ZstdError as exc:
        raise InvalidDataError(
            f"Archive {archive.name} is damaged ({exc}): refusing to restore it; nothing was written."
        ) from None
    return b"".join(parts)


def _blob(store: SessionStore, name: str) -> bytes | None:
    from openclaw_cli.store.sqlite_common import open_readonly

    handle = open_readonly(Path(store.path))
    try:
        row = handle.conn.execute(
            "SELECT archive_blob FROM session_transcript_archives WHERE archive_name = ?", (name,)
        ).fetchone()
        return bytes(row[0]) if row else None
    finally:
        handle.close()


def _check_lines(content: bytes, archive: RestorableArchive) -> None:
    import orjson

    for number, line in enumerate(content.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            orjson.loads(line)
        except ValueError:
            raise InvalidDataError(
                f"Archive {archive.name} line {number} is not JSON: refusing to restore it; nothing was written."
            ) from None
