"""The Gateway owns its state directory while it runs.

Two things, taken at start and given back at shutdown:
* OpenClaw's state ownership coordinator (`store.state_owner`): an exclusive SQLite lock that
  OpenClaw's own Gateway and its `doctor --session-sqlite import|restore|recover|compact` take,
  so both OpenClaw's doctor and ours refuse while our Gateway runs (and our Gateway refuses to
  start while one of them runs). The operating system drops the lock when the process dies.
* Our marker `<state>/tmp/openclaw-<uid>/openclaw-cli-gateway.json` (`{pid, url, …}`, 0600) that
  `openclaw gateway status` reads. A marker whose pid is gone, or whose coordinator nobody holds,
  is stale: reported as such, and replaced by the next Gateway.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_cli.errors import StateOwnedError

MARKER_NAME = "openclaw-cli-gateway.json"


def marker_path(state_dir: Path) -> Path:
    uid = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(state_dir) / "tmp" / f"openclaw-{uid}" / MARKER_NAME


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def read_marker(state_dir: Path) -> dict[str, Any] | None:
    import orjson

    try:
        data = orjson.loads(marker_path(state_dir).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def gateway_state(state_dir: Path) -> dict[str, Any]:
    """`openclaw gateway status`: is a Gateway running for this state dir (pid, url), is a stale
    marker lying around, or does something else (OpenClaw's Gateway, a doctor run) own it."""
    from openclaw_cli.store.state_owner import coordinator_held

    marker = read_marker(state_dir)
    held = coordinator_held(Path(state_dir))
    result: dict[str, Any] = {"stateDir": str(state_dir), "running": False, "pid": None, "url": None,
                              "ownedByOther": False, "staleMarker": False}
    if marker is not None:
        alive = pid_alive(marker.get("pid"))
        if alive and held:
            result.update(running=True, pid=marker.get("pid"), url=marker.get("url"),
                          startedAt=marker.get("startedAt"), version=marker.get("version"))
            return result
        result["staleMarker"] = True
        result["stalePid"] = marker.get("pid")
        result["markerPath"] = str(marker_path(state_dir))
    if held:
        result["ownedByOther"] = True  # OpenClaw's Gateway or a maintenance command
    return result


@dataclass
class StateOwnership:
    """Held by a running Gateway; `release()` is idempotent."""

    state_dir: Path
    conn: sqlite3.Connection | None
    marker: Path | None = None

    def write_marker(self, info: dict[str, Any]) -> None:
        import orjson

        from openclaw_cli.fsio import DIR_MODE, atomic_write_bytes, ensure_dir

        path = marker_path(self.state_dir)
        ensure_dir(path.parent, DIR_MODE)
        atomic_write_bytes(path, orjson.dumps({**info, "pid": os.getpid()}, option=orjson.OPT_INDENT_2) + b"\n")
        self.marker = path

    def release(self) -> None:
        if self.marker is not None:
            current = read_marker(self.state_dir)
            if current is not None and current.get("pid") == os.getpid():
                try:
                    os.unlink(self.marker)
                except FileNotFoundError:
                    pass
            self.marker = None
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            conn.close()


def take_ownership(state_dir: Path) -> StateOwnership:
    """Take the coordinator, or StateOwnedError (exit BUSY) naming who holds it."""
    from openclaw_cli.store.state_owner import hold_coordinator

    state_dir = Path(state_dir)
    conn = hold_coordinator(state_dir)
    if conn is None:
        marker = read_marker(state_dir)
        if marker is not None and pid_alive(marker.get("pid")):
            raise StateOwnedError(f"A Gateway already runs for {state_dir} (pid {marker.get('pid')}, "
                                  f"{marker.get('url')}); stop it first or use `openclaw gateway status`.")
        raise StateOwnedError(f"Cannot start the Gateway: another Gateway (OpenClaw's?) or an SQLite maintenance "
                              f"command owns the state directory {state_dir}. Stop it and retry.")
    return StateOwnership(state_dir, conn)
