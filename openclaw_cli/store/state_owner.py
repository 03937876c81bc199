"""Whether a Gateway owns an OpenClaw state directory, for writes to its schema-23 databases
(spec D21: offline only).

OpenClaw's Gateway, and each of its SQLite maintenance commands, owns a state directory by holding
an exclusive SQLite transaction on the coordinator `/tmp/openclaw-state-locks-<uid>/
gateway-lifecycle.<8 hex of sha256(realpath(<state>/state/openclaw.sqlite))>.lock.sqlite`; a
running Gateway also holds `<state>/tmp/openclaw-<uid>/gateway.state.lock[.sqlite]`. Our writer
takes the coordinator for the whole write (so no Gateway starts halfway through it, exactly as
OpenClaw's `doctor` maintenance does) and checks the Gateway's own locks; either one held by
someone else is a refusal with the real CLI's wording. The one implementation of the protocol:
the migration's destructive modes (`migration/ownership.py`) and the Gateway (`gateway/ownership.py`)
take the same locks through it.

OpenClaw 2026.9.8+ owns a state directory through a lock file instead (`store/owner_file.py`):
a live one refuses too, with that release's own wording, and our writers create one
(`role: "sqlite-maintenance"`) for as long as they hold the state, so a 9.8+ Gateway does not start
halfway through. A Gateway serving the state dir holds every form for its whole life and
registers itself (`register_owner`): its own writes pass without refusing themselves (spec D25).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openclaw_cli.errors import StateOwnedError, UnsafeLockDirError, typed_error
from openclaw_cli.lazyre import lazy_pattern

WAIT_BUDGET_S = 0.25
POLL_S = 0.025
STATE_LOCK_NAMES = ("gateway.state.lock", "gateway.state.lock.sqlite")
CONFIG_LOCK_SIDECAR = lazy_pattern(globals(), "CONFIG_LOCK_SIDECAR", r"^gateway\.[0-9a-f]{8}\.lock\.sqlite$")
_HELD: dict[str, int] = {}  # realpath(state dir) -> Gateways of this process serving it
_HELD_GUARD = threading.RLock()


def _uid() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else "user"


def coordinator_path(state_dir: Path) -> Path:
    db = os.path.realpath(Path(state_dir) / "state" / "openclaw.sqlite")
    digest = hashlib.sha256(db.encode("utf-8")).hexdigest()[:8]
    return _lock_base() / f"openclaw-state-locks-{_uid()}" / f"gateway-lifecycle.{digest}.lock.sqlite"


def _lock_base() -> Path:
    """Where OpenClaw keeps its coordinators: `/tmp` on POSIX, whatever TMPDIR says."""
    if os.name == "posix":
        return Path("/tmp")
    import tempfile  # (elsewhere only: with shutil, bz2, lzma and random, ~4 ms to import)

    return Path(tempfile.gettempdir())


def state_lock_paths(state_dir: Path) -> list[Path]:
    """A running 2026.9.6 Gateway's own lock files (honoured when they exist): `gateway.state.lock`
    and the per-config `gateway.<8 hex of sha256(config path)>.lock`, by their SQLite sidecars (any
    config's: a Gateway of this state dir owns it whichever config it was started with)."""
    base = Path(state_dir) / "tmp" / f"openclaw-{_uid()}"
    paths = [base / name for name in STATE_LOCK_NAMES]
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return paths
    paths += [base / n for n in names if CONFIG_LOCK_SIDECAR.match(n)]
    return paths


def owned_message(operation: str) -> str:
    """The real CLI's refusal (`DoctorSqliteMaintenanceLockUnavailableError`), plus where to go."""
    return (
        f"Cannot run {operation} while the Gateway or another SQLite maintenance command owns this "
        "OpenClaw state directory. Stop the Gateway and retry, or run the command without --store "
        "so that the running Gateway makes the change."
    )


class _Held(Exception):
    pass


def ensure_private_lock_dir(directory: Path) -> None:
    """The coordinator's directory under the shared temp dir, made 0700 and verified before any
    use (issue 29 #7): a real directory (not a symbolic link), owned by us, private. Anyone can
    create `/tmp/openclaw-state-locks-<uid>` first; a planted symbolic link would send our lock
    file elsewhere and another user's directory would let them block us for good, so both are
    refused (`UnsafeLockDirError`, exit 7). Our own directory with a wider mode is narrowed to 0700,
    then checked again — as OpenClaw does with the same directory."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise UnsafeLockDirError(
            f"The coordinator lock directory {directory} cannot be checked: "
            f"{exc.strerror or exc}. Nothing was changed."
        ) from None
    fix = f"remove it (`rm -r {directory}`) if no OpenClaw process is running, then retry"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise UnsafeLockDirError(
            f"Refusing to use the coordinator lock directory {directory}: it is {kind}, not a "
            f"private directory (someone may have planted it). Nothing was changed; {fix}."
        )
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeLockDirError(
            f"Refusing to use the coordinator lock directory {directory}: it belongs to another "
            f"user (uid {st.st_uid}), who could block or spoof this state's lock. Nothing was "
            f"changed; ask an administrator to {fix}."
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        try:
            os.chmod(directory, 0o700, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
        st = os.lstat(directory)
        if stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeLockDirError(
                f"Refusing to use the coordinator lock directory {directory}: its permissions "
                f"({stat.S_IMODE(st.st_mode):04o}) are not private and could not be narrowed to "
                f"0700. Nothing was changed; {fix}."
            )


def _checked_lock_file(path: Path) -> None:
    """The coordinator file itself: a regular file or nothing (never a link out of the directory)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeLockDirError(
            f"Refusing to use the coordinator lock {path}: it is not a regular file. Nothing was "
            "changed; remove it if no OpenClaw process is running, then retry."
        )


def _exclusive(path: Path, *, create: bool) -> sqlite3.Connection | None:
    """A connection holding BEGIN EXCLUSIVE on `path`; None when there is no lock file to honour;
    `_Held` when another process holds it for longer than the wait budget."""
    if not create and not path.is_file():
        return None
    if create:
        ensure_private_lock_dir(path.parent)
        _checked_lock_file(path)
    deadline = time.monotonic() + WAIT_BUDGET_S
    while True:
        conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA journal_mode = MEMORY")
            conn.execute("BEGIN EXCLUSIVE")
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            text = str(exc).lower()
            if "locked" not in text and "busy" not in text:
                if create:
                    raise
                return None  # not a SQLite lock we understand (a plain marker file): nothing to honour
            if time.monotonic() >= deadline:
                raise _Held() from None
            time.sleep(POLL_S)


def hold_coordinator(state_dir: Path) -> sqlite3.Connection | None:
    """The coordinator held (an open connection in BEGIN EXCLUSIVE) for as long as the caller
    keeps it open — a Gateway holds it for its whole life; None when someone else holds it.
    A dead holder's lock is released by the operating system, so a killed Gateway leaves nothing
    that blocks the next one."""
    try:
        return _exclusive(coordinator_path(state_dir), create=True)
    except _Held:
        return None


def coordinator_held(state_dir: Path) -> bool:
    """Whether a live process holds the coordinator (a Gateway or a maintenance command)."""
    path = coordinator_path(state_dir)
    if not os.path.lexists(path):
        return False
    ensure_private_lock_dir(path.parent)  # never read a lock through a planted link
    _checked_lock_file(path)
    conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.DatabaseError as exc:
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    finally:
        conn.close()


def busy_message(state_dir: Path, owner: dict[str, object], hint: str = "") -> str:
    """OpenClaw 2026.9.8+'s refusal (`GatewayStateOwnerContentionError`) for its owner file; for an
    owner in another PID namespace whose heartbeat is fresh, its `GatewayLockNamespaceError`."""
    from openclaw_cli.store.owner_file import NAMESPACE_MESSAGE, state_database

    if owner.get("namespaceUnknown"):
        return f"{NAMESPACE_MESSAGE} (owner file {owner_file_path_text(state_dir)})."
    text = (
        f"OpenClaw state database is busy at {state_database(state_dir)}. Wait for the other OpenClaw process "
        "to finish, then retry. If it persists, run `openclaw gateway status` and check for other OpenClaw "
        "processes using the same state directory. A running Gateway can hold this ownership until it stops; "
        "stop it through its service manager or original terminal before retrying."
    )
    if hint and (owner.get("role") or "gateway") == "gateway":
        text += f" {hint}"
    return text


def owner_file_path_text(state_dir: Path) -> str:
    from openclaw_cli.store.owner_file import owner_file_path

    return str(owner_file_path(state_dir))


def _key(state_dir: Path) -> str:
    return os.path.realpath(state_dir)


def held_here(state_dir: Path | None) -> bool:
    """Whether this process serves `state_dir` as its Gateway (which holds every form of ownership)."""
    if state_dir is None:
        return False
    with _HELD_GUARD:
        return _HELD.get(_key(state_dir), 0) > 0


def register_owner(state_dir: Path) -> None:
    """A Gateway that took every form of ownership serves the state dir from now on."""
    with _HELD_GUARD:
        _HELD[_key(state_dir)] = _HELD.get(_key(state_dir), 0) + 1


def unregister_owner(state_dir: Path) -> None:
    key = _key(state_dir)
    with _HELD_GUARD:
        if _HELD.get(key, 0) > 1:
            _HELD[key] -= 1
        else:
            _HELD.pop(key, None)


def refuse_if_owner_file(state_dir: Path, hint: str = "") -> None:
    """StateOwnedError when a live 2026.9.8+ owner file names this state dir."""
    from openclaw_cli.store.owner_file import live_owner, owner_file_path

    owner = live_owner(owner_file_path(state_dir))
    if owner is not None and (owner.get("namespaceUnknown") or owner.get("pid") != os.getpid()):
        raise StateOwnedError(busy_message(state_dir, owner, hint))


class StateClaim:
    """What `state_held` yields: `take_owner_file()` creates our 2026.9.8+ owner file (once). A
    caller that defers it (the import: its space and symlink checks come first, so a refused import
    creates nothing in the state dir) calls it before its first write."""

    def __init__(self, state_dir: Path, refusal: str, hint: str) -> None:
        self.state_dir, self.refusal, self.hint = state_dir, refusal, hint
        self.owner: object | None = None
        self.served = False  # this process is the state's Gateway: nothing to take

    def take_owner_file(self) -> None:
        from openclaw_cli.store import owner_file

        if self.served or self.owner is not None:
            return
        with _typed_lock_errors(self.refusal):
            try:
                held = owner_file.acquire(
                    owner_file.owner_file_path(self.state_dir),
                    owner_file.payload(self.state_dir, role="sqlite-maintenance"),
                )
            except owner_file.StateOwnedByOther as exc:
                raise StateOwnedError(busy_message(self.state_dir, exc.owner, self.hint)) from None
        held.start_heartbeat()
        self.owner = held

    def release(self) -> None:
        held, self.owner = self.owner, None
        if held is not None:
            held.release()  # type: ignore[attr-defined]


@contextmanager
def _typed_lock_errors(refusal: str) -> Iterator[None]:
    try:
        yield
    except _Held:
        raise StateOwnedError(refusal) from None
    except (OSError, sqlite3.Error) as exc:
        # a full disk, a read-only filesystem, EMFILE: their own exit codes (11/12/13, issue 29
        # #8), not "owned by someone else"
        typed = typed_error(exc)
        if typed is not None:
            raise typed from None
        raise StateOwnedError(f"{refusal} (lock unavailable: {exc})") from None


@contextmanager
def state_held(
    state_dir: Path, refusal: str, hint: str = "", *, defer_owner_file: bool = False
) -> Iterator[StateClaim]:
    """Hold the state directory's ownership for the block — the 2026.9.6 coordinator, the
    Gateway's own lock files where they exist, and a 2026.9.8+ owner file of ours —, or
    `StateOwnedError` (exit BUSY) with the owner's release's wording (`refusal` for 2026.9.6,
    `busy_message` for 9.8+; `hint` is added when the owner is a Gateway). A process serving the
    state dir as its Gateway passes (it holds all of them already). With `defer_owner_file` a live
    owner file is still refused at once, but ours is created by `claim.take_owner_file()`."""
    claim = StateClaim(state_dir, refusal, hint)
    if held_here(state_dir):
        claim.served = True
        yield claim  # this process is the state's Gateway: its own writes (D25)
        return
    held: list[sqlite3.Connection] = []
    try:
        with _typed_lock_errors(refusal):
            conn = _exclusive(coordinator_path(state_dir), create=True)
            if conn is not None:
                held.append(conn)
            for path in state_lock_paths(state_dir):
                conn = _exclusive(path, create=False)
                if conn is not None:
                    held.append(conn)
            refuse_if_owner_file(state_dir, hint)
        if not defer_owner_file:
            claim.take_owner_file()
        yield claim
    finally:
        claim.release()
        for conn in held:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            conn.close()


GATEWAY_HINT = "Or run the command without --store so that the running Gateway makes the change."


@contextmanager
def state_not_owned(state_dir: Path | None, operation: str) -> Iterator[None]:
    """Hold the state directory's maintenance ownership for a write (spec D25). Without a state
    directory (a database outside any `agents/<id>/` layout) there is nothing a Gateway could own."""
    if state_dir is None:
        yield
        return
    with state_held(state_dir, owned_message(operation), GATEWAY_HINT):
        yield
