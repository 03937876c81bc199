"""The one classifier of file names in an agent's sessions dir (maintenance.md §7.2; storage-
migration.md §3.1): primary transcripts, trajectory sidecars, compaction checkpoints, archives,
store temps. Every module that asks "is this a transcript / an archive?" asks here."""

from __future__ import annotations

import re

from openclaw_cli.clock import utc_ms
from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.lazyre import lazy_pattern

__all__ = [
    "archive_stamp_ms",
    "is_archive_artifact_name",
    "is_checkpoint_name",
    "is_primary_transcript_name",
    "is_retained_archive_name",
    "is_store_temp_name",
    "is_trajectory_name",
]

STORE_NAME = "sessions.json"
_ARCHIVE_STAMP = lazy_pattern(
    globals(),
    "_ARCHIVE_STAMP",
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})(?:\.(\d{3}))?Z(?:\.[0-9a-f]{32})?$",
)
_ARCHIVE_MARKER = lazy_pattern(globals(), "_ARCHIVE_MARKER", r"\.(deleted|reset|bak)\.")
_STORE_BACKUP = lazy_pattern(globals(), "_STORE_BACKUP", r"^sessions\.json\.bak\.\d+$")
_UUIDISH = r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})"


def archive_stamp_ms(name: str, reason: str) -> int | None:
    """§7.1: epoch ms of `<…>.<reason>.<YYYY-MM-DDTHH-MM-SS[.mmm]Z>[.<32 hex>][.zst]`, taken from
    the *last* `.<reason>.` marker; None when the name carries no such archive stamp."""
    base = name[:-4] if name.endswith(".zst") else name
    marker = base.rfind(f".{reason}.")
    if marker < 0:
        return None
    match = _ARCHIVE_STAMP.match(base[marker + len(reason) + 2 :])
    if not match:
        return None
    year, month, day, hour, minute, second, millis = match.groups()
    at = utc_ms(int(year), int(month), int(day), int(hour), int(minute), int(second))  # None: not a real date
    return None if at is None else at + int(millis or 0)


def is_archive_artifact_name(name: str) -> bool:
    """§7.2: `sessions.json.bak.<n>`, or the last `.deleted.`/`.reset.`/`.bak.` marker (after an
    optional `.zst`) is followed by a valid archive timestamp (`keep.deleted.keep.jsonl` is not)."""
    if _STORE_BACKUP.match(name):
        return True
    if ".deleted." not in name and ".reset." not in name and ".bak." not in name:
        return False  # (most names of a 20,000-file directory)
    base = name[:-4] if name.endswith(".zst") else name
    markers = list(_ARCHIVE_MARKER.finditer(base))
    return bool(markers) and archive_stamp_ms(name, markers[-1].group(1)) is not None


def is_retained_archive_name(name: str) -> bool:
    """A transcript archive the 2026.9.6+ disk budget may remove (`.deleted.`/`.reset.`/`.bak.`
    with an archive stamp); a `sessions.json.bak.<n>` store backup is not one."""
    return not _STORE_BACKUP.match(name) and is_archive_artifact_name(name)


def is_trajectory_name(name: str) -> bool:
    return name.endswith(".trajectory.jsonl") or name.endswith(".trajectory-path.json")


def is_primary_transcript_name(name: str) -> bool:
    """§3.1: `*.jsonl` that is not the store, a hidden (temp) file, a trajectory sidecar, a
    compaction checkpoint or an archive."""
    return (
        name.endswith(".jsonl")
        and name != STORE_NAME
        and not name.startswith(".")
        and not is_trajectory_name(name)
        and not is_checkpoint_name(name)
        and not is_archive_artifact_name(name)
    )


def is_store_temp_name(name: str, store_name: str = STORE_NAME) -> bool:
    """`<store>.[<pid>.]<uuid>.tmp` (OpenClaw) or `<store>.<pid>.<hex32>.tmp` (our fsio)."""
    return bool(re.match(rf"^{re.escape(store_name)}\.(?:\d+\.)?{_UUIDISH}\.tmp$", name, re.IGNORECASE))
