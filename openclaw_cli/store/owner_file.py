"""The state-owner lock file of OpenClaw 2026.9.8+ (openclaw-after-2026.9.6.md §2; upstream
`src/infra/gateway-state-owner.ts` and `gateway-lock-payload.ts`, docs/decisions.md "issue 23:
ownership across releases").

`<state>/tmp/openclaw-<uid>/state.<first 16 hex of sha256(canonical path of
<state>/state/openclaw.sqlite)>.lock`, created exclusively, holding one JSON payload `{pid, ownerId,
createdAt, stateDir, configPath, role, startTime?, stateOwnerKind?, processNamespace?}`, removed by
its owner. A file whose pid is alive (and, when a `startTime` is recorded, still the same process)
is a live owner. Its `processNamespace` (`{host, boot: {platform, identity}, pidNamespace}`, upstream
`classifyGatewayLockProcessNamespace`) qualifies the pid first: absent, or our boot and PID
namespace, the pid rules apply; another boot of this host is dead; anything else (another PID
namespace or host, `null`, a malformed value) cannot be judged by pid, and the file's mtime (the
owner's heartbeat, renewed every 15 s) decides: over 90 s old is dead, else the owner is kept and a
writer refuses with OpenClaw's namespace wording. The 2026.9.6 Gateway's own
lock file `gateway.state.lock` in the same directory carries the same payload shape (without
`role` for a Gateway); `write_payload_file` writes both.
"""

from __future__ import annotations

import _socket  # (`socket.gethostname` is this module's: socket.py builds its enums, ~14 M instructions)
import hashlib
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from openclaw_cli import clock

HEARTBEAT_S = 15.0
FOREIGN_STALE_S = 90.0
ROLES = ("gateway", "agent-embedded", "skill-workshop-apply", "sqlite-maintenance")


def uid_dir_name() -> str:
    return f"openclaw-{os.getuid()}" if hasattr(os, "getuid") else "openclaw"


def lock_dir(state_dir: Path) -> Path:
    """OpenClaw's Gateway lock directory `<state>/tmp/openclaw-<uid>` (canonical state dir)."""
    return Path(os.path.realpath(state_dir)) / "tmp" / uid_dir_name()


def state_database(state_dir: Path) -> Path:
    return Path(state_dir) / "state" / "openclaw.sqlite"


def owner_file_path(state_dir: Path) -> Path:
    canonical = os.path.realpath(state_database(state_dir))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return lock_dir(state_dir) / f"state.{digest}.lock"


def process_start_time(pid: int) -> int | None:
    """Field 22 of `/proc/<pid>/stat` (clock ticks since boot), OpenClaw's `startTime`."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
    except (OSError, ValueError):
        return None
    end = stat.rfind(")")
    if end < 0:
        return None
    fields = stat[end + 1 :].split()
    try:
        value = int(fields[19])
    except (IndexError, ValueError):
        return None
    return value if value >= 0 else None


_BOOT_ID = re.compile(r"^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$", re.IGNORECASE)
_NAMESPACE: list[dict[str, Any] | None] = []  # probed once per process (upstream caches it too)
NAMESPACE_MESSAGE = (
    "cannot verify Gateway ownership from this process (different PID namespace); the owner heartbeat "
    "is fresh — run this command inside the Gateway container or with a shared PID namespace. If the "
    "previous Gateway stopped, wait up to 90 seconds after its last heartbeat, then retry"
)


def process_namespace() -> dict[str, Any] | None:
    """This process's `processNamespace` as 2026.9.8+ records it (`readGatewayLockProcessNamespace`):
    the host name, the kernel's boot id and the PID namespace's inode; None where it cannot be read
    (not Linux: the boot identity of other systems comes from tools we do not run)."""
    if not _NAMESPACE:
        value = None
        if sys.platform.startswith("linux"):
            try:
                with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as fh:
                    boot = fh.read().strip().lower()
                pid_ns = str(os.stat("/proc/self/ns/pid").st_ino)
                if _BOOT_ID.match(boot):
                    value = {
                        "host": _socket.gethostname(),
                        "boot": {"platform": "linux", "identity": boot},
                        "pidNamespace": pid_ns,
                    }
            except OSError:
                value = None
        _NAMESPACE.append(value)
    return _NAMESPACE[0]


def _parse_namespace(value: Any) -> dict[str, Any] | None:
    """The recorded namespace if it has upstream's shape (`ProcessNamespaceSchema`), else None."""
    if not isinstance(value, dict):
        return None
    host, boot, pid_ns = value.get("host"), value.get("boot"), value.get("pidNamespace")
    if not (isinstance(host, str) and host and isinstance(pid_ns, str) and pid_ns):
        return None
    if not isinstance(boot, dict) or set(boot) != {"platform", "identity"}:
        return None  # a strict object upstream
    platform, identity = boot["platform"], boot["identity"]
    if platform in ("linux", "darwin"):
        ok = isinstance(identity, str) and _BOOT_ID.match(identity) is not None
    elif platform == "win32":
        ok = isinstance(identity, str) and (
            re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{7}Z$", identity) is not None
        )
    else:
        ok = False
    return value if ok else None


def classify_namespace(data: dict[str, Any], path: Path) -> str:
    """`same` (judge by pid), `dead` or `unknown` (another namespace with a fresh heartbeat)."""
    if "processNamespace" not in data:
        return "same"  # legacy records keep the pid rules
    recorded, current = _parse_namespace(data["processNamespace"]), process_namespace()
    if (
        recorded is not None
        and current is not None
        and recorded["boot"]["platform"] == current["boot"]["platform"]
    ):
        if recorded["boot"]["identity"].lower() != current["boot"]["identity"]:
            if recorded["host"] == current["host"]:
                return "dead"  # written before this host's last boot
        elif recorded["pidNamespace"] == current["pidNamespace"]:
            return "same"
    try:
        return "dead" if time.time() - os.stat(path).st_mtime > FOREIGN_STALE_S else "unknown"
    except OSError:
        return "unknown"


def pid_alive(pid: Any) -> bool:
    """Does process `pid` exist (ours or another user's)? Anything but a positive int: no."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def payload(
    state_dir: Path,
    *,
    role: str | None,
    config_path: Path | None = None,
    port: int | None = None,
    schema: bool = False,
) -> dict[str, Any]:
    """Our payload: OpenClaw's fields, `processNamespace` included where we can read it (so a
    process in another PID namespace judges us by the heartbeat, not by a pid that means nothing
    there; where we cannot, the field is left out: "judge by pid", as for legacy records)."""
    state = os.path.realpath(state_dir)
    out: dict[str, Any] = {
        "pid": os.getpid(),
        "ownerId": str(uuid.uuid4()),
        "createdAt": clock.iso_now(),
        "configPath": str(config_path or Path(state) / "openclaw.json"),
        "stateDir": state,
    }
    if port is not None and 0 < port < 65536:
        out["port"] = int(port)
    if role is not None:
        out["role"] = role
    start = process_start_time(os.getpid())
    if start is not None:
        out["startTime"] = start
    if schema:
        out["stateOwnerKind"] = "schema"
    namespace = process_namespace()
    if namespace is not None:
        out["processNamespace"] = namespace
    return out


def read_payload(path: Path) -> dict[str, Any] | None:
    import orjson

    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("pid"), int)
        or isinstance(data.get("pid"), bool)
    ):
        return None
    if not isinstance(data.get("createdAt"), str) or not isinstance(data.get("configPath"), str):
        return None
    role = data.get("role")
    if role is not None and role not in ROLES:
        return None
    return data


def live_owner(path: Path) -> dict[str, Any] | None:
    """The payload of a live owner of lock file `path`, else None (absent, unreadable, stale)."""
    data = read_payload(path)
    if data is None:
        return None
    namespace = classify_namespace(data, Path(path))
    if namespace == "dead":
        return None
    if namespace == "unknown":  # its pid means nothing here; a fresh heartbeat keeps it
        return {**data, "namespaceUnknown": True}
    pid = data["pid"]
    if not pid_alive(pid):
        return None
    recorded = data.get("startTime")
    if isinstance(recorded, int | float) and not isinstance(recorded, bool):
        current = process_start_time(pid)
        if current is not None and current != recorded:
            return None  # the pid was recycled
    return data


class OwnerFile:
    """A lock file we created (exclusively) with our payload; `release()` removes it if it is
    still ours. `StateOwnedByOther` carries the live payload found instead."""

    def __init__(self, path: Path, data: dict[str, Any], created_dirs: tuple[Path, ...] = ()):
        self.path = Path(path)
        self.data = data
        self.created_dirs = created_dirs  # made for this file, deepest first: removed again if empty
        self.parent_times: tuple[int, int] | None = None  # (atime_ns, mtime_ns) of their parent before

    def touch(self) -> None:
        """The heartbeat: the file's mtime (payload bytes never change)."""
        try:
            os.utime(self.path)
        except OSError:
            pass

    def start_heartbeat(self, interval: float = HEARTBEAT_S) -> None:
        """Renew the mtime every `interval` s until `release()`: a process in another PID
        namespace judges our (namespace-qualified) file by it and takes it as dead after 90 s."""
        import threading

        stop = threading.Event()
        self._stop_beat = stop

        def beat() -> None:
            while not stop.wait(interval):
                self.touch()

        threading.Thread(target=beat, name="state-owner-heartbeat", daemon=True).start()

    def release(self) -> None:
        stop = getattr(self, "_stop_beat", None)
        if stop is not None:
            stop.set()
        current = read_payload(self.path)
        if current is not None and current.get("ownerId") == self.data.get("ownerId"):
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        # An offline write must leave the state dir as it found it (spec D6.1: a refused or
        # finished command adds nothing): the `tmp/openclaw-<uid>` we made goes when empty.
        if not self.created_dirs:
            return
        top = self.created_dirs[-1].parent
        for directory in self.created_dirs:
            try:
                os.rmdir(directory)
            except OSError:
                return  # not empty (someone else's lock files), or gone: keep the rest too
        if self.parent_times is not None:
            try:  # ... and its times as they were (a "nothing written" check compares them)
                os.utime(top, ns=self.parent_times, follow_symlinks=False)
            except OSError:
                pass


class StateOwnedByOther(Exception):
    def __init__(self, path: Path, owner: dict[str, Any]):
        super().__init__(str(path))
        self.path = path
        self.owner = owner


def _missing_dirs(directory: Path) -> tuple[Path, ...]:
    """The ancestors of `directory` (itself included) that do not exist yet, deepest first."""
    missing: list[Path] = []
    while not directory.exists() and directory.parent != directory:
        missing.append(directory)
        directory = directory.parent
    return tuple(missing)


def acquire(path: Path, data: dict[str, Any]) -> OwnerFile:
    """Create `path` exclusively holding `data`; a stale file is removed first (once). Raises
    `StateOwnedByOther` when a live owner holds it."""
    import orjson

    from openclaw_cli.fsio import DIR_MODE, FILE_MODE, O_NOFOLLOW, ensure_dir

    created = _missing_dirs(Path(path).parent)
    parent_times = None
    if created:
        try:
            st = os.stat(created[-1].parent, follow_symlinks=False)
            parent_times = (st.st_atime_ns, st.st_mtime_ns)
        except OSError:
            pass
    ensure_dir(Path(path).parent, DIR_MODE)
    body = orjson.dumps(data)
    for _attempt in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, FILE_MODE)
        except FileExistsError:
            owner = live_owner(path)
            if owner is not None:
                raise StateOwnedByOther(Path(path), owner) from None
            try:  # stale (dead pid, recycled pid, unreadable): reclaim it
                os.unlink(path)
            except FileNotFoundError:
                pass
            continue
        try:
            os.write(fd, body)  # (no fsync: a lock file means nothing after a crash of its owner)
        except BaseException:
            os.close(fd)
            try:  # a full disk: no empty owner file left behind (issue 29 #8: nothing changed)
                os.unlink(path)
            except OSError:
                pass
            raise
        os.close(fd)
        held = OwnerFile(Path(path), data, created)
        held.parent_times = parent_times
        return held
    owner = live_owner(path) or {"pid": None}
    raise StateOwnedByOther(Path(path), owner)


def write_payload_file(path: Path, data: dict[str, Any]) -> OwnerFile:
    """A 2026.9.6 Gateway lock file (`gateway.state.lock`, `gateway.<hash>.lock`): replaced
    atomically (its own SQLite sidecar, held by the caller, is what excludes)."""
    import orjson

    from openclaw_cli.fsio import DIR_MODE, atomic_write_bytes, ensure_dir

    ensure_dir(Path(path).parent, DIR_MODE)
    atomic_write_bytes(Path(path), orjson.dumps(data))
    return OwnerFile(Path(path), data)
