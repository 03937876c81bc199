"""What a `doctor --session-sqlite` run may touch: its modes, whether a target holds legacy data
(discovery modes keep only those), and the path guards for destructive explicit stores (§6.3).
Target selection itself is the operations layer's (`ops.targets.select_migration_targets`)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from openclaw_cli.errors import RefusedError, UsageError
from openclaw_cli.paths import Target

MODES = ("dry-run", "import", "validate", "inspect", "compact", "restore", "recover")
DISCOVERY_MODES = frozenset({"dry-run", "import", "validate"})
DESTRUCTIVE_MODES = frozenset({"import", "compact", "restore", "recover"})
MODE_ERROR = (
    "Invalid --session-sqlite mode. Use dry-run, import, validate, inspect, compact, restore, or recover."
)
OPTIONS_WITHOUT_MODE = "doctor session SQLite options require --session-sqlite. Use `openclaw doctor --session-sqlite dry-run ...`."
GITHUB_ISSUE_ERROR = "--github-issue requires --session-sqlite recover."


def validate_mode(mode: str) -> str:
    value = (mode or "").strip()
    if value not in MODES:
        raise UsageError(MODE_ERROR)
    return value


def _is_primary_transcript(name: str) -> bool:
    from openclaw_cli.store.names import is_primary_transcript_name

    return is_primary_transcript_name(name)


def has_legacy_source(target: Target) -> bool:
    """The target's legacy store exists, or its sessions dir holds a primary transcript."""
    if target.is_sqlite_selector:
        return False
    try:
        if os.path.lexists(target.store_path):
            return True
        with os.scandir(target.sessions_dir) as it:
            for entry in it:
                if _is_primary_transcript(entry.name) and entry.is_file(follow_symlinks=False):
                    return True
    except OSError as exc:
        # a symbolic-link loop on the way is not "no legacy data": the run reports it (ELOOP)
        return exc.errno == errno.ELOOP
    return False


def guard_explicit_store(mode: str, target: Target, state_dir: Path) -> None:
    """§6.3 guards for a destructive mode on an explicit store path."""
    op = f"session SQLite {mode}"
    path = target.sqlite_path if target.is_sqlite_selector else target.store_path
    root = Path(os.path.realpath(state_dir))
    candidate = Path(os.path.normpath(path))
    try:
        rel = candidate.relative_to(root)
    except ValueError:
        try:
            rel = candidate.relative_to(state_dir)
            candidate = root / rel
        except ValueError:
            raise RefusedError(
                f"Cannot run {op} for a path outside the active OpenClaw state directory: {path}. "
                "Set OPENCLAW_STATE_DIR to the owning state directory and retry."
            ) from None
    current = root
    for i, part in enumerate(rel.parts):
        current = current / part
        if current.is_symlink():
            if i == len(rel.parts) - 1:
                raise RefusedError(
                    f"Cannot run {op} for a symbolic-link path: {path}. "
                    "Point --session-sqlite-store at the real file inside the state directory and retry."
                )
            raise RefusedError(
                f"Cannot run {op} through a symbolic-link path component: {path}. "
                "Point --session-sqlite-store at the real file inside the state directory and retry."
            )
    try:
        st = os.lstat(candidate)
    except FileNotFoundError:
        return
    if st.st_nlink > 1 and not os.path.isdir(candidate):
        raise RefusedError(
            f"Cannot run {op} for a hard-linked path: {path}. Remove the additional hard link and retry."
        )
