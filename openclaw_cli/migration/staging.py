"""Publish-on-complete (spec D22): a fresh agent database is built under a private name beside the
live path (`openclaw-agent.sqlite.import-<runId>`) and becomes the live database only after the
import was validated, in one step (a non-overwriting hard link, then the build name is dropped).
Until then every command keeps reading the legacy store, which the import never touched before
publication; a build that was interrupted, failed or killed is discarded by the next import or by
`recover` and never read by anything else.

`pending_import` tells read commands that an import of an agent did not complete, from the newest
migration manifest naming that agent (cheap: only consulted when the agent has no live database).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from openclaw_cli.errors import RefusedError
from openclaw_cli.fsio import FILE_MODE, fsync_dir

BUILD_INFIX = ".import-"
_SIDECARS = ("-wal", "-shm", "-journal")
IMPORT_COMMAND = "openclaw doctor --session-sqlite import"
RECOVER_COMMAND = "openclaw doctor --session-sqlite recover"
_MANIFESTS_CONSULTED = 8  # newest manifests read to find the agent's latest run
_MANIFEST_READ_LIMIT = 8 * 1024 * 1024  # a bigger manifest belongs to a run that archived (published)


ROWS_INFIX = "-rows-"  # `<build>-rows-<n>`: the parser process's rows files (`parser_process.RowsFiles`)


def build_path(live: Path, run_id: str) -> Path:
    return live.with_name(f"{live.name}{BUILD_INFIX}{run_id}")


def rows_base(build: Path) -> str:
    """The prefix of a build's rows files (a number follows); they go with the build."""
    return f"{build}{ROWS_INFIX}"


def builds(live: Path) -> list[Path]:
    """Unpublished builds of `live` (their SQLite sidecars not included)."""
    prefix = f"{live.name}{BUILD_INFIX}"
    try:
        names = os.listdir(live.parent)
    except OSError:
        return []
    return sorted(
        live.parent / n
        for n in names
        if n.startswith(prefix) and not n.endswith(_SIDECARS) and ROWS_INFIX not in n[len(prefix) :]
    )


def _file_set(build: Path) -> list[Path]:
    rows = f"{build.name}{ROWS_INFIX}"
    try:
        names = [n for n in os.listdir(build.parent) if n.startswith(rows)]
    except OSError:
        names = []
    return [build, *(Path(f"{build}{suffix}") for suffix in _SIDECARS), *(build.parent / n for n in names)]


def discard(build: Path) -> bool:
    """Remove a build and its sidecars (never the live database: a build that shares the live
    inode after a publication was killed between its two steps only loses its extra name)."""
    removed = False
    for path in _file_set(build):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # never follow or remove anything but our own regular files
        os.unlink(path)
        removed = True
    if removed:
        fsync_dir(build.parent)
    return removed


def discard_all(live: Path) -> int:
    return sum(discard(b) for b in builds(live))


def publish(build: Path, live: Path) -> None:
    """Make the validated build the live database. The build's connections are closed and its WAL
    checkpointed, so the single file holds everything. An empty placeholder at the live path (a
    0-byte file or an SQLite file without tables) is replaced atomically; anything else there
    means another writer created a database meanwhile, and the build is kept out of its way."""
    for suffix in ("-wal", "-journal"):
        side = Path(f"{build}{suffix}")
        if side.exists() and side.stat().st_size > 0:
            raise RefusedError(
                f"{side}: the import's database still has unwritten changes; it was not published"
            )
    shm = Path(f"{build}-shm")
    for side in (Path(f"{build}-wal"), Path(f"{build}-journal"), shm):
        if side.exists():
            side.unlink()
    os.chmod(build, FILE_MODE)
    try:
        st = os.lstat(live)
    except FileNotFoundError:
        st = None
    if st is not None:
        from openclaw_cli.migration.dbinfo import classify_db

        if not stat.S_ISREG(st.st_mode) or classify_db(live).kind != "empty":
            raise RefusedError(
                f"{live}: another process created a database while the import ran; the import's "
                f"database was not published (kept as {build.name} until the next import)"
            )
        os.replace(build, live)
        fsync_dir(live.parent)
        return
    try:
        os.link(build, live)
    except FileExistsError:
        raise RefusedError(
            f"{live}: another process created a database while the import ran; the import's "
            f"database was not published"
        ) from None
    fsync_dir(live.parent)
    os.unlink(build)
    fsync_dir(live.parent)


# ---- what read commands say ---------------------------------------------------------------------


@dataclass
class PendingImport:
    agent_id: str
    run_id: str
    state: str  # "failed" | "incomplete"
    reason: str | None = None

    def notice(self) -> str:
        if self.state == "failed":
            what = f"failed (run {self.run_id}" + (f": {self.reason}" if self.reason else "") + ")"
        else:
            what = f"did not complete (run {self.run_id}: still running, or interrupted)"
        return (
            f"The SQLite import of agent {self.agent_id} {what}; this command reads the legacy store, which "
            f"the import left intact. Run `{IMPORT_COMMAND}` to finish it, or `{RECOVER_COMMAND}` to undo it."
        )


def pending_import(runs_dir: Path, state_dir: Path, agent_id: str) -> PendingImport | None:
    """The agent's newest migration run when it did not complete and was not undone (`recover` /
    `restore` record their attempt in the manifest). Only for agents without a live database."""
    try:
        names = [
            n
            for n in os.listdir(runs_dir)
            if n.startswith("session-sqlite-") and n.endswith(".json") and not n.endswith(".failure.json")
        ]
    except OSError:
        return None
    names.sort(key=_run_order, reverse=True)
    from openclaw_cli import jsonutil

    for name in names[:_MANIFESTS_CONSULTED]:
        path = runs_dir / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MANIFEST_READ_LIMIT:
                continue
            data = jsonutil.loads(path.read_bytes())
        except (OSError, *jsonutil.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        mine = [t for t in data.get("targets", []) if isinstance(t, dict) and t.get("agentId") == agent_id]
        if not mine:
            continue
        if data.get("mode", "import") != "import" or data.get("restore"):
            return None  # undone by restore/recover (or not an import at all)
        if data.get("completedAt") and not data.get("failedAt"):
            return None
        run_id = str(data.get("runId", name[:-5]))
        if not data.get("failedAt"):
            return PendingImport(agent_id, run_id, "incomplete")  # still running, or killed
        reason = None
        from openclaw_cli.migration.report import is_blocking

        for target in mine:
            for issue in target.get("issues") or []:
                if isinstance(issue, dict) and is_blocking(str(issue.get("code", ""))):
                    reason = f"[{issue.get('code')}] {issue.get('message')}"
                    break
            if reason:
                break
        return PendingImport(agent_id, run_id, "failed", reason)
    return None


def _run_order(name: str) -> tuple[int, str]:
    # session-sqlite-<epochMs>-<hex>.json
    parts = name.split("-")
    try:
        return int(parts[2]), name
    except (IndexError, ValueError):
        return 0, name
