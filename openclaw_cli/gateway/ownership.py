"""The Gateway owns its state directory while it runs (spec D25: it writes the state it owns).

Taken at start and given back at shutdown, every form of ownership the real releases recognise:
* OpenClaw 2026.9.6's state ownership coordinator (`store.state_owner`): an exclusive SQLite lock
  that OpenClaw's own Gateway and its `doctor --session-sqlite import|restore|recover|compact` take,
  so both OpenClaw's doctor and ours refuse while our Gateway runs (and our Gateway refuses to
  start while one of them runs). The operating system drops the lock when the process dies.
* 2026.9.6's Gateway locks `<state>/tmp/openclaw-<uid>/gateway.state.lock` and the per-config
  `gateway.<first 8 hex of sha256(config path)>.lock` (`resolveGatewayLockPaths`): their SQLite
  sidecars (`….lock.sqlite`) held exclusively, and the one JSON payload (pid, ownerId, createdAt,
  configPath, stateDir, port, startTime, processNamespace) in both, which its CLI reads (the
  config's first) to find the running Gateway.
* 2026.9.8+'s owner file `state.<16 hex>.lock` (`store/owner_file.py`, role `gateway`), its mtime
  renewed every 15 s (the cross-namespace heartbeat).
Then the process is registered as the state's owner (`state_owner.register_owner`): its own
writes go through the same guard rails as offline writes (backup, busy probe, one transaction)
without being refused by its own locks.
* Our marker `<state>/tmp/openclaw-<uid>/openclaw-cli-gateway.json` (`{pid, url, …}`, 0600) that
  `openclaw gateway status` reads. A marker whose pid is gone, or whose coordinator nobody holds,
  is stale: reported as such, and replaced by the next Gateway.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.errors import StateOwnedError
from openclaw_cli.store.owner_file import pid_alive

MARKER_NAME = "openclaw-cli-gateway.json"
HEARTBEAT_S = 15.0  # 2026.9.8+ owners renew their file's mtime this often


def marker_path(state_dir: Path) -> Path:
    uid = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(state_dir) / "tmp" / f"openclaw-{uid}" / MARKER_NAME


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
    result: dict[str, Any] = {
        "stateDir": str(state_dir),
        "running": False,
        "pid": None,
        "url": None,
        "ownedByOther": False,
        "staleMarker": False,
    }
    if marker is not None:
        alive = pid_alive(marker.get("pid"))
        if alive and held:
            result.update(
                running=True,
                pid=marker.get("pid"),
                url=marker.get("url"),
                startedAt=marker.get("startedAt"),
                version=marker.get("version"),
            )
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
    owner_file: Any = None  # store.owner_file.OwnerFile (2026.9.8+)
    lock_conn: sqlite3.Connection | None = None  # gateway.state.lock.sqlite (2026.9.6)
    lock_file: Any = None  # gateway.state.lock's payload (2026.9.6)
    config_lock_conn: sqlite3.Connection | None = None  # gateway.<hash>.lock.sqlite (2026.9.6)
    config_lock_file: Any = None  # gateway.<hash>.lock's payload (2026.9.6)
    config_path: Path | None = None
    registered: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _heartbeat: threading.Thread | None = None

    def announce(self, port: int, config_path: Path | None) -> None:
        """After the listener is bound: 2026.9.6's `gateway.state.lock` payload with the port."""
        from openclaw_cli.store import owner_file

        data = owner_file.payload(self.state_dir, role=None, config_path=config_path, port=port)
        self.lock_file = owner_file.write_payload_file(
            owner_file.lock_dir(self.state_dir) / "gateway.state.lock", data
        )
        if self.config_lock_conn is not None and self.config_path is not None:
            self.config_lock_file = owner_file.write_payload_file(
                config_lock_path(self.state_dir, self.config_path), data
            )

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if self.owner_file is not None:
                self.owner_file.touch()

    def write_marker(self, info: dict[str, Any]) -> None:
        import orjson

        from openclaw_cli.fsio import DIR_MODE, atomic_write_bytes, ensure_dir, refuse_symlinked_dirs

        path = marker_path(self.state_dir)
        refuse_symlinked_dirs(
            path.parent, Path(self.state_dir), "the Gateway marker"
        )  # tmp/, tmp/openclaw-<uid>/
        ensure_dir(path.parent, DIR_MODE)
        atomic_write_bytes(
            path, orjson.dumps({**info, "pid": os.getpid()}, option=orjson.OPT_INDENT_2) + b"\n"
        )
        self.marker = path

    def release(self) -> None:
        from openclaw_cli.store.state_owner import unregister_owner

        self._stop.set()
        if self.registered:
            unregister_owner(self.state_dir)
            self.registered = False
        for attr in ("config_lock_file", "lock_file", "owner_file"):
            held = getattr(self, attr)
            setattr(self, attr, None)
            if held is not None:
                held.release()
        for attr in ("config_lock_conn", "lock_conn"):
            lock_conn = getattr(self, attr)
            setattr(self, attr, None)
            if lock_conn is not None:
                try:
                    lock_conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                lock_conn.close()
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


def config_lock_path(state_dir: Path, config_path: Path) -> Path:
    """2026.9.6's per-config Gateway lock: `gateway.<first 8 hex of sha256(config path)>.lock`."""
    import hashlib

    from openclaw_cli.store.owner_file import lock_dir

    digest = hashlib.sha256(str(config_path).encode("utf-8")).hexdigest()[:8]
    return lock_dir(state_dir) / f"gateway.{digest}.lock"


def take_ownership(state_dir: Path, config_path: Path | None = None) -> StateOwnership:
    """Take every form of ownership (module docstring), or StateOwnedError (exit BUSY) naming who
    holds one; nothing is left held on a refusal. Without `config_path` the per-config lock of
    2026.9.6 is not taken."""
    from openclaw_cli.store import owner_file
    from openclaw_cli.store.state_owner import busy_message, hold_coordinator, register_owner

    state_dir = Path(state_dir)
    conn = hold_coordinator(state_dir)
    if conn is None:
        marker = read_marker(state_dir)
        if marker is not None and pid_alive(marker.get("pid")):
            raise StateOwnedError(
                f"A Gateway already runs for {state_dir} (pid {marker.get('pid')}, "
                f"{marker.get('url')}); stop it first or use `openclaw gateway status`."
            )
        raise StateOwnedError(
            f"Cannot start the Gateway: another Gateway (OpenClaw's?) or an SQLite maintenance "
            f"command owns the state directory {state_dir}. Stop it and retry."
        )
    ownership = StateOwnership(state_dir, conn)
    try:
        try:
            ownership.owner_file = owner_file.acquire(
                owner_file.owner_file_path(state_dir), owner_file.payload(state_dir, role="gateway")
            )
        except owner_file.StateOwnedByOther as exc:
            raise StateOwnedError(f"Cannot start the Gateway: {busy_message(state_dir, exc.owner)}") from None
        ownership.lock_conn = _hold_state_lock(state_dir, "gateway.state.lock")
        if config_path is not None:
            ownership.config_path = Path(config_path)
            ownership.config_lock_conn = _hold_state_lock(
                state_dir, config_lock_path(state_dir, Path(config_path)).name
            )
        register_owner(state_dir)
        ownership.registered = True
        ownership._heartbeat = threading.Thread(
            target=ownership._beat, name="state-owner-heartbeat", daemon=True
        )
        ownership._heartbeat.start()
    except BaseException:
        ownership.release()
        raise
    return ownership


def _hold_state_lock(state_dir: Path, name: str) -> sqlite3.Connection:
    """A 2026.9.6 Gateway lock's SQLite sidecar (`<name>.sqlite`), held exclusively for the
    Gateway's life."""
    from openclaw_cli.fsio import DIR_MODE, FILE_MODE, O_NOFOLLOW, ensure_dir
    from openclaw_cli.store.owner_file import lock_dir
    from openclaw_cli.store.state_owner import _exclusive, _Held

    path = lock_dir(state_dir) / f"{name}.sqlite"
    ensure_dir(path.parent, DIR_MODE)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | O_NOFOLLOW, FILE_MODE))  # 0600, not SQLite's 0644
    try:
        conn = _exclusive(path, create=True)
    except _Held:
        raise StateOwnedError(
            f"Cannot start the Gateway: another Gateway holds {lock_dir(state_dir)}/{name} "
            "(gateway already running)."
        ) from None
    assert conn is not None
    return conn
