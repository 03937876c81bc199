"""Retired config keys: read-only findings for `doctor`, and the rewrite `doctor --fix` does.

Texts are OpenClaw's (`storage-migration.md` §8.1–8.3). Zero-duration `pruneAfter` is *not*
removed here although later OpenClaw does: for us 0 means "age pruning disabled" (resolve.py),
and removing it would switch on the 30-day default, i.e. start deleting.
"""

from __future__ import annotations

from pathlib import Path

from openclaw_cli.errors import ConfigError, RefusedError

TYPE_CHECKING = False  # every load reads the findings: keep this module's imports light
if TYPE_CHECKING:
    from typing import Any

FIX_HEADER = "Migrated legacy config keys in the active openclaw.json:"

ROTATE_BYTES_MESSAGE = (
    'session.maintenance.rotateBytes is deprecated and ignored; run "openclaw doctor --fix" to remove it.'
)
PARENT_FORK_MAX_TOKENS_MESSAGE = (
    'session.parentForkMaxTokens was removed; parent fork sizing is automatic. Run "openclaw doctor --fix" '
    "to remove it."
)
PRUNE_DAYS_MESSAGE = 'session.maintenance.pruneDays was renamed to pruneAfter. Run "openclaw doctor --fix".'
RESET_BY_TYPE_DM_MESSAGE = 'session.resetByType.dm was renamed to direct. Run "openclaw doctor --fix".'


def _record(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def legacy_key_findings(raw: dict[str, Any]) -> list[str]:
    """What `doctor` (without --fix) reports about retired keys in a parsed config."""
    findings: list[str] = []
    session = _record(raw.get("session"))
    if session is None:
        return findings
    maintenance = _record(session.get("maintenance"))
    reset_by_type = _record(session.get("resetByType"))
    if maintenance is not None and "rotateBytes" in maintenance:
        findings.append(ROTATE_BYTES_MESSAGE)
    if "parentForkMaxTokens" in session:
        findings.append(PARENT_FORK_MAX_TOKENS_MESSAGE)
    if maintenance is not None and "pruneDays" in maintenance:
        findings.append(PRUNE_DAYS_MESSAGE)
    if reset_by_type is not None and "dm" in reset_by_type:
        findings.append(RESET_BY_TYPE_DM_MESSAGE)
    return findings


def migrate_legacy_keys(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return a migrated deep copy and the change messages, in OpenClaw's order."""
    import copy

    out = copy.deepcopy(raw)
    changes: list[str] = []
    session = _record(out.get("session"))
    if session is None:
        return out, changes
    maintenance = _record(session.get("maintenance"))
    if maintenance is not None and "pruneDays" in maintenance:
        if "pruneAfter" not in maintenance:
            # Rebuild the dict so pruneAfter takes pruneDays' place in the key order.
            items = [("pruneAfter", v) if k == "pruneDays" else (k, v) for k, v in maintenance.items()]
            maintenance.clear()
            maintenance.update(items)
            changes.append("Moved session.maintenance.pruneDays → session.maintenance.pruneAfter.")
        else:
            del maintenance["pruneDays"]
            changes.append("Removed session.maintenance.pruneDays (pruneAfter already set).")
    reset_by_type = _record(session.get("resetByType"))
    if reset_by_type is not None and "dm" in reset_by_type:
        if "direct" not in reset_by_type:
            items = [("direct", v) if k == "dm" else (k, v) for k, v in reset_by_type.items()]
            reset_by_type.clear()
            reset_by_type.update(items)
            changes.append("Moved session.resetByType.dm → session.resetByType.direct.")
        else:
            del reset_by_type["dm"]
            changes.append("Removed session.resetByType.dm (direct already set).")
    if maintenance is not None and "rotateBytes" in maintenance:
        del maintenance["rotateBytes"]
        changes.append("Removed deprecated session.maintenance.rotateBytes.")
    if "parentForkMaxTokens" in session:
        del session["parentForkMaxTokens"]
        changes.append("Removed session.parentForkMaxTokens; parent fork sizing is automatic.")
    return out, changes


def _write_backup(path: Path, data: bytes) -> Path:
    """Copy `data` to `<name>.bak` (or `.bak.1`, `.bak.2`, …), never replacing an existing file.

    The copy is written to a temp file, fsynced, then hard-linked into place: link() fails when
    the name exists, so a backup that appeared meanwhile is never overwritten.
    """
    import os
    import uuid

    from openclaw_cli.fsio import FILE_MODE, fsync_dir

    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.bak.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        index = 0
        while True:
            candidate = path.with_name(f"{path.name}.bak" if index == 0 else f"{path.name}.bak.{index}")
            try:
                os.link(tmp, candidate)
            except FileExistsError:
                index += 1
                continue
            fsync_dir(path.parent)
            return candidate
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def fix_legacy_config(path: Path) -> list[str]:
    """Remove/migrate retired keys in the config file at `path` (for `doctor --fix`).

    Writes a byte-identical backup first, then the migrated config as 2-space JSON (comments of a
    JSON5 original survive only in the backup). Returns OpenClaw's change messages; with nothing
    to change (or no file) it writes nothing and returns [].
    """
    import json

    from openclaw_cli.config.loader import parse_config_bytes, read_config_bytes
    from openclaw_cli.fsio import atomic_write_text

    path = Path(path)
    if path.is_symlink():
        raise RefusedError(
            f"Refusing to rewrite {path}: it is a symbolic link. Point OPENCLAW_CONFIG_PATH at the real file "
            "or fix that file directly."
        )
    original = read_config_bytes(path)
    if original is None:
        return []
    raw = parse_config_bytes(original, path)
    migrated, changes = migrate_legacy_keys(raw)
    if not changes:
        return []
    _write_backup(path, original)
    if read_config_bytes(path) != original:
        raise ConfigError(
            f"Config file {path} changed while it was being fixed; nothing was rewritten. Run the "
            "command again.",
            path=str(path),
        )
    text = json.dumps(migrated, indent=2, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)
    return changes
