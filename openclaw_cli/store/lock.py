"""OpenClaw's transcript write lock (spec maintenance.md §12, decision D12), interoperable with
the real OpenClaw: a sidecar `<realpath(dir)>/<basename>.lock` created with O_CREAT|O_EXCL (0600)
holding 2-space JSON `{"pid", "createdAt", "maxHoldMs", "starttime"}`.

A contended lock is inspected and, following §12.4, either waited for (live OpenClaw owner),
reclaimed (dead / recycled / orphaned / non-OpenClaw owner, or an aged payload-less file), or
reported as stale without stealing it (a live OpenClaw owner that is too old or over its
maximum hold). Errors are `SessionBusyError` with OpenClaw's exact messages and codes.
"""

from __future__ import annotations

import atexit
import math
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from openclaw_cli import clock
from openclaw_cli.errors import LockPathError, OpenClawError, SessionBusyError, os_error
from openclaw_cli.fsio import O_CLOEXEC, O_NOFOLLOW, file_kind
from openclaw_cli.records import FrozenRecord, Record

if TYPE_CHECKING:
    import signal as _signal  # typeshed has no stub for the C module `signal` wraps
else:
    import _signal  # built in: `signal` without its enums (~3.6 M instructions), no file to read

TIMEOUT_CODE = "OPENCLAW_SESSION_WRITE_LOCK_TIMEOUT"
STALE_CODE = "OPENCLAW_SESSION_WRITE_LOCK_STALE"
RETRY_INTERVAL_S = 0.05  # OpenClaw retries every 50 ms (constant)
PAYLOADLESS_GRACE_MS = 30_000
PAYLOADLESS_GRACE_SHORT_MS = 5_000  # when the acquire timeout is below 30 s
WATCHDOG_INTERVAL_S = 60.0
MAX_LOCK_HOLD_MS = 2_147_000_000

# Reasons that prove nobody legitimate holds the lock: the file may be removed.
REMOVABLE_REASONS = frozenset({"dead-pid", "recycled-pid", "orphan-self-pid", "non-openclaw-owner"})
PAYLOADLESS_REASONS = frozenset({"missing-pid", "invalid-createdAt"})
AGE_REASONS = frozenset({"too-old", "hold-exceeded"})


class LockSettingsLike(Protocol):
    """What the lock needs from `session.writeLock` (config/resolve.py's WriteLockSettings fits)."""

    @property
    def acquire_timeout_ms(self) -> float: ...
    @property
    def stale_ms(self) -> float: ...
    @property
    def max_hold_ms(self) -> float: ...


class LockSettings(FrozenRecord):
    """Defaults of spec D1 / maintenance.md §2.2 (`math.inf` acquire timeout = wait forever)."""

    __slots__ = _fields = ("acquire_timeout_ms", "stale_ms", "max_hold_ms")
    acquire_timeout_ms: float
    stale_ms: float
    max_hold_ms: float

    def __init__(
        self, acquire_timeout_ms: float = 60_000, stale_ms: float = 1_800_000, max_hold_ms: float = 300_000
    ) -> None:
        self._assign(acquire_timeout_ms, stale_ms, max_hold_ms)


DEFAULT_LOCK_SETTINGS = LockSettings()


# ---- process facts ------------------------------------------------------------------------------


def process_start_time(pid: int) -> int | None:
    """Start time in clock ticks: field 22 of /proc/<pid>/stat (None when unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    tail = data[data.rfind(b")") + 2 :].split()
    try:
        return int(tail[19])  # tail[0] is field 3 (state)
    except (IndexError, ValueError):
        return None


def is_pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    # A zombie has exited; only its exit status remains.
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        state = data[data.rfind(b")") + 2 :].split()[0]
        if state in (b"Z", b"X"):
            return False
    except (OSError, IndexError):
        pass
    return True


def looks_like_openclaw(pid: int) -> bool:
    """Spec D12: some element of the holder's argv has a basename containing `openclaw`
    (case-insensitive). When the argv cannot be read we assume it does (never steal blindly)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            data = fh.read()
    except OSError:
        return True
    for arg in data.split(b"\0"):
        if not arg:
            continue
        base = arg.rstrip(b"/").rsplit(b"/", 1)[-1]
        if b"openclaw" in base.lower():
            return True
    return False


def _parse_iso_ms(value: str) -> float | None:
    """Date.parse for the ISO-8601 strings OpenClaw writes (and close variants)."""
    text = value.strip()
    if not text:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp() * 1000


def lock_path_for(transcript: Path) -> Path:
    """`<realpath(dir)>/<basename>.lock` (the dir falls back to its absolute path if unresolvable)."""
    transcript = Path(os.path.abspath(transcript))
    try:
        directory = Path(os.path.realpath(transcript.parent, strict=True))
    except OSError:
        directory = transcript.parent
    return directory / f"{transcript.name}.lock"


# ---- inspection ---------------------------------------------------------------------------------


class LockInspection(Record):
    _fields = (
        "lock_path",
        "pid",
        "pid_alive",
        "created_at",
        "age_ms",
        "stale_reasons",
        "payload_readable",
        "file_age_ms",
        "signature",
    )
    lock_path: Path
    pid: int | None
    pid_alive: bool
    created_at: str | None
    age_ms: float | None
    stale_reasons: list[str]
    payload_readable: bool
    file_age_ms: float | None  # from the lock file's mtime
    signature: tuple[int, int, int, int] | None  # (dev, ino, size, mtime_ns) when inspected

    def __init__(
        self,
        lock_path: Path,
        pid: int | None,
        pid_alive: bool,
        created_at: str | None,
        age_ms: float | None,
        stale_reasons: list[str],
        payload_readable: bool,
        file_age_ms: float | None = None,
        signature: tuple[int, int, int, int] | None = None,
    ) -> None:
        self.lock_path = lock_path
        self.pid = pid
        self.pid_alive = pid_alive
        self.created_at = created_at
        self.age_ms = age_ms
        self.stale_reasons = stale_reasons
        self.payload_readable = payload_readable
        self.file_age_ms = file_age_ms
        self.signature = signature

    @property
    def stale(self) -> bool:
        return bool(self.stale_reasons)

    def owner_text(self) -> str:
        if self.pid is None:
            return "owner=unknown"
        text = f"pid={self.pid} alive={'true' if self.pid_alive else 'false'}"
        if self.age_ms is not None:
            text += f" ageMs={math.floor(self.age_ms)}"
        return text

    def to_dict(self, removed: bool = False) -> dict[str, Any]:
        return {
            "lockPath": str(self.lock_path),
            "pid": self.pid,
            "pidAlive": self.pid_alive,
            "createdAt": self.created_at,
            "ageMs": None if self.age_ms is None else math.floor(self.age_ms),
            "stale": self.stale,
            "staleReasons": list(self.stale_reasons),
            "removed": removed,
        }


def _valid_lock_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def unusable_lock(lock_path: Path, what: str) -> LockPathError:
    """A lock path that no lock holder could have made: waiting would never end (issue 29 #3)."""
    return LockPathError(
        f"session lock path is {what}, not a lock file: {lock_path}. Nothing was changed; if no OpenClaw "
        "process is running, remove it and retry."
    )


def _os_failure(exc: OSError, lock_path: Path) -> Exception:
    """An OSError met while locking: the typed error of its errno (EMFILE exit 13, EACCES 12, ...),
    else a lock-path error (exit 5) naming it — never "no lock"."""
    typed = os_error(exc, lock_path, action="locking")
    if typed is not None:
        return typed
    return unusable_lock(lock_path, f"unusable ({exc.strerror or exc})")


def _read_payload(
    lock_path: Path,
) -> tuple[dict[str, Any] | None, tuple[int, int, int, int] | None, float | None]:
    """(payload or None, file signature, mtime in ms); (None, None, None) when nothing is there.
    Never follows a symlinked lock file, never blocks on a FIFO; a lock path that is not a regular
    file, or cannot be read, raises (`LockPathError`, or the errno's typed error)."""
    try:
        st = os.lstat(lock_path)
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        raise _os_failure(exc, lock_path) from None
    if not stat.S_ISREG(st.st_mode):
        raise unusable_lock(lock_path, file_kind(st.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC
    try:
        fd = os.open(lock_path, flags)
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        raise _os_failure(exc, lock_path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the lstat and the open
            raise unusable_lock(lock_path, file_kind(st.st_mode))
        sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        data = os.read(fd, 64 * 1024)
    except OSError as exc:
        raise _os_failure(exc, lock_path) from None
    finally:
        os.close(fd)
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        payload = None
    return payload, sig, st.st_mtime_ns / 1e6


def inspect_lock(
    lock_path: Path,
    settings: LockSettingsLike = DEFAULT_LOCK_SETTINGS,
    *,
    now_ms: float | None = None,
    held_by_us: bool = False,
) -> LockInspection | None:
    """Stale reasons of an existing lock file (None when the file is gone)."""
    payload, sig, mtime_ms = _read_payload(lock_path)
    if sig is None:
        return None
    now = clock.now_ms() if now_ms is None else now_ms
    p = payload or {}
    raw_pid = p.get("pid")
    pid = raw_pid if _valid_lock_int(raw_pid) and cast(int, raw_pid) > 0 else None
    own_pid = pid == os.getpid()
    pid_alive = pid is not None and (own_pid or is_pid_alive(pid))
    created_at = p.get("createdAt") if isinstance(p.get("createdAt"), str) else None
    created_ms = _parse_iso_ms(created_at) if created_at is not None else None
    age_ms = max(0.0, now - created_ms) if created_ms is not None else None
    stored_start = p.get("starttime") if _valid_lock_int(p.get("starttime")) else None
    max_hold = p.get("maxHoldMs")
    max_hold = (
        max_hold
        if isinstance(max_hold, int | float) and not isinstance(max_hold, bool) and max_hold > 0
        else None
    )

    reasons: list[str] = []
    if pid is None:
        reasons.append("missing-pid")
    elif not pid_alive:
        reasons.append("dead-pid")
    elif stored_start is not None:
        current = process_start_time(pid)
        if current is not None and current != stored_start:
            reasons.append("recycled-pid")
    if age_ms is None:
        reasons.append("invalid-createdAt")
    elif age_ms > settings.stale_ms:
        reasons.append("too-old")
    if age_ms is not None and max_hold is not None and not held_by_us and age_ms > max_hold:
        reasons.append("hold-exceeded")
    if own_pid and not held_by_us and "recycled-pid" not in reasons:
        reasons.append("orphan-self-pid")  # our pid, starttime missing or equal to ours, not held
    elif (
        pid is not None
        and pid_alive
        and not own_pid
        and "recycled-pid" not in reasons
        and not looks_like_openclaw(pid)
    ):
        reasons.append("non-openclaw-owner")
    file_age = max(0.0, now - mtime_ms) if mtime_ms is not None else None
    return LockInspection(
        lock_path=lock_path,
        pid=pid,
        pid_alive=pid_alive,
        created_at=created_at,
        age_ms=age_ms,
        stale_reasons=reasons,
        payload_readable=payload is not None,
        file_age_ms=file_age,
        signature=sig,
    )


def decide(inspection: LockInspection, settings: LockSettingsLike) -> str:
    """§12.4: "wait", "reclaim" or "stale" (fail without stealing)."""
    reasons = set(inspection.stale_reasons)
    if not reasons:
        return "wait"
    if reasons & REMOVABLE_REASONS:
        return "reclaim"
    if reasons <= PAYLOADLESS_REASONS:
        # The holder may not have written its payload yet: only an aged file is abandoned.
        grace = PAYLOADLESS_GRACE_SHORT_MS if settings.acquire_timeout_ms < 30_000 else PAYLOADLESS_GRACE_MS
        limit = min(settings.stale_ms, grace)
        if inspection.file_age_ms is not None and inspection.file_age_ms > limit:
            return "reclaim"
        return "wait"
    if "missing-pid" in reasons:
        return "reclaim"  # no owner recorded and the payload is old: nobody can be waiting on it
    if reasons <= AGE_REASONS | {"invalid-createdAt"}:
        return "stale"  # a live OpenClaw owner held it too long: report, never steal
    return "wait"


def _remove_if_unchanged(inspection: LockInspection) -> bool:
    try:
        _, sig, _ = _read_payload(inspection.lock_path)
    except (OpenClawError, OSError):
        return False  # replaced by something else, or unreadable: not ours to remove
    if sig is None:
        return True  # already gone
    if sig != inspection.signature:
        return False
    try:
        os.unlink(inspection.lock_path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


# ---- holding ------------------------------------------------------------------------------------


class _Held(Record):
    _fields = ("key", "lock_path", "fd", "dev_ino", "acquired_at", "max_hold_ms", "count", "released")
    key: str
    lock_path: Path
    fd: int
    dev_ino: tuple[int, int]
    acquired_at: float  # monotonic seconds
    max_hold_ms: float
    count: int
    released: bool

    def __init__(
        self,
        key: str,
        lock_path: Path,
        fd: int,
        dev_ino: tuple[int, int],
        acquired_at: float,
        max_hold_ms: float,
        count: int = 1,
        released: bool = False,
    ) -> None:
        self.key = key
        self.lock_path = lock_path
        self.fd = fd
        self.dev_ino = dev_ino
        self.acquired_at = acquired_at
        self.max_hold_ms = max_hold_ms
        self.count = count
        self.released = released


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.RLock()
_hooks_installed = False
_watchdog: threading.Thread | None = None
_watchdog_stop = threading.Event()


def _release_held(held: _Held, *, force: bool = False) -> bool:
    with _HELD_GUARD:
        if held.released:
            return False
        if not force:
            held.count -= 1
            if held.count > 0:
                return False
        held.released = True
        if _HELD.get(held.key) is held:
            del _HELD[held.key]
    try:
        os.close(held.fd)
    except OSError:
        pass
    # Delete only if the file at the path is still the one we created.
    try:
        st = os.lstat(held.lock_path)
        if (st.st_dev, st.st_ino) == held.dev_ino:
            os.unlink(held.lock_path)
    except OSError:
        pass
    return True


def release_all_locks() -> None:
    with _HELD_GUARD:
        helds = list(_HELD.values())
    for held in helds:
        _release_held(held, force=True)


def _on_term_signal(signum: int, frame: Any) -> None:
    release_all_locks()
    # Re-raise with the default action, as OpenClaw does when its handler was the only one.
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(release_all_locks)
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGQUIT"):
            signum = getattr(_signal, name, None)
            if signum is None:
                continue
            try:
                if _signal.getsignal(signum) == _signal.SIG_DFL:  # (the C module's handlers are ints)
                    _signal.signal(signum, _on_term_signal)
            except (ValueError, OSError):
                pass


def watchdog_check(now_monotonic: float | None = None, *, stderr: Any = None) -> int:
    """Force-release locks held longer than their maxHoldMs (§12.6); returns how many."""
    now = time.monotonic() if now_monotonic is None else now_monotonic
    released = 0
    with _HELD_GUARD:
        helds = list(_HELD.values())
    for held in helds:
        held_ms = (now - held.acquired_at) * 1000
        if held_ms <= held.max_hold_ms:
            continue
        print(
            f"[session-write-lock] releasing lock held for {int(held_ms)}ms "
            f"(max={int(held.max_hold_ms)}ms): {held.lock_path}",
            file=stderr or sys.stderr,
        )
        if _release_held(held, force=True):
            released += 1
    return released


def _ensure_watchdog() -> None:
    global _watchdog
    if _watchdog is not None and _watchdog.is_alive():
        return

    def run() -> None:
        while not _watchdog_stop.wait(WATCHDOG_INTERVAL_S):
            try:
                watchdog_check()
            except Exception:  # noqa: BLE001 - best effort, like OpenClaw's watchdog
                pass

    _watchdog = threading.Thread(target=run, name="session-write-lock-watchdog", daemon=True)
    _watchdog.start()


class TranscriptLock(Record):
    """A held lock; `release()` (or leaving the `with` block) gives it back."""

    _fields = ("transcript", "lock_path", "_held", "_released")  # (compared; `repr` shows the first two)
    transcript: Path
    lock_path: Path
    _held: _Held
    _released: bool

    def __init__(self, transcript: Path, lock_path: Path, _held: _Held, _released: bool = False) -> None:
        self.transcript = transcript
        self.lock_path = lock_path
        self._held = _held
        self._released = _released

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(transcript={self.transcript!r}, lock_path={self.lock_path!r})"

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        _release_held(self._held)

    def __enter__(self) -> TranscriptLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _format_ms(value: float) -> str:
    return str(int(value)) if value != math.inf and float(value).is_integer() else str(value)


_own_start: tuple[int, int | None] | None = None  # (pid, start time): a forked child has another pid


def _own_start_time() -> int | None:
    """Our own start time, read once per process (cleanup takes thousands of locks)."""
    global _own_start
    pid = os.getpid()
    if _own_start is None or _own_start[0] != pid:
        _own_start = (pid, process_start_time(pid))
    return _own_start[1]


def _payload_bytes(max_hold_ms: float) -> bytes:
    payload: dict[str, Any] = {
        "pid": os.getpid(),
        "createdAt": clock.iso_now(),
        "maxHoldMs": int(max_hold_ms),
    }
    start = _own_start_time()
    if start is not None:
        payload["starttime"] = start
    return orjson.dumps(payload, option=orjson.OPT_INDENT_2)  # JSON.stringify(payload, null, 2)


def acquire_transcript_lock(
    transcript: Path,
    settings: LockSettingsLike | None = None,
    *,
    allow_reentrant: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> TranscriptLock:
    """Take OpenClaw's write lock for `transcript` (waiting up to `acquire_timeout_ms`).

    Raises SessionBusyError (code OPENCLAW_SESSION_WRITE_LOCK_TIMEOUT or _STALE)."""
    settings = settings or DEFAULT_LOCK_SETTINGS
    _install_hooks()
    transcript = Path(os.path.abspath(transcript))
    os.makedirs(transcript.parent, mode=0o700, exist_ok=True)
    lock_path = lock_path_for(transcript)
    key = str(lock_path)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None and allow_reentrant and not held.released:
            held.count += 1
            return TranscriptLock(transcript, lock_path, held)

    timeout_ms = settings.acquire_timeout_ms
    started = time.monotonic()
    last: LockInspection | None = None
    quick_retries = 0  # retries without a sleep (the file vanished or was reclaimed): bounded
    while True:
        try:
            fd = os.open(
                lock_path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0o600,
            )
        except FileExistsError:
            fd = None
        except OSError as exc:
            raise _os_failure(exc, lock_path) from None
        if fd is not None:
            try:
                os.write(fd, _payload_bytes(settings.max_hold_ms))
                st = os.fstat(fd)
            except BaseException:
                os.close(fd)
                try:
                    os.unlink(lock_path)
                except OSError:
                    pass
                raise
            new = _Held(key, lock_path, fd, (st.st_dev, st.st_ino), time.monotonic(), settings.max_hold_ms)
            with _HELD_GUARD:
                _HELD[key] = new
            _ensure_watchdog()
            return TranscriptLock(transcript, lock_path, new)

        with _HELD_GUARD:
            held_by_us = key in _HELD
        inspection = inspect_lock(lock_path, settings, held_by_us=held_by_us)
        elapsed_ms = (time.monotonic() - started) * 1000
        if inspection is None or (
            decide(inspection, settings) == "reclaim" and _remove_if_unchanged(inspection)
        ):
            # released (or reclaimed) between our attempt and the inspection: retry at once, but
            # a path that keeps coming and going gets the regular retry interval and the timeout
            quick_retries += 1
            if quick_retries <= 3:
                continue
            if elapsed_ms >= timeout_ms:
                break
            quick_retries = 0
            sleep(min(RETRY_INTERVAL_S, max(0.0, (timeout_ms - elapsed_ms) / 1000)))
            continue
        last = inspection
        verdict = decide(inspection, settings)
        if verdict == "stale":
            reasons = ", ".join(inspection.stale_reasons) or "unknown"
            raise SessionBusyError(
                f"session file lock stale ({reasons}): {inspection.owner_text()} {lock_path}", code=STALE_CODE
            )
        if elapsed_ms >= timeout_ms:
            break
        sleep(min(RETRY_INTERVAL_S, max(0.0, (timeout_ms - elapsed_ms) / 1000)))
    owner = last.owner_text() if last is not None else "owner=unknown"
    raise SessionBusyError(
        f"session file locked (timeout {_format_ms(timeout_ms)}ms): {owner} {lock_path}", code=TIMEOUT_CODE
    )


@contextmanager
def transcript_lock(
    transcript: Path, settings: LockSettingsLike | None = None, *, allow_reentrant: bool = False
) -> Iterator[TranscriptLock]:
    lock = acquire_transcript_lock(transcript, settings, allow_reentrant=allow_reentrant)
    try:
        yield lock
    finally:
        lock.release()


# ---- doctor sweep -------------------------------------------------------------------------------


def sweep_stale_locks(
    sessions_dir: Path,
    settings: LockSettingsLike | None = None,
    *,
    remove: bool = False,
    now_ms: float | None = None,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Inspect every `*.jsonl.lock` in `sessions_dir` (sorted by name), §12.7.

    With `remove=True` the removable stale ones are deleted (each logged as
    `removed stale session lock: <path> (<reasons>)`); the default only reports, so a `doctor`
    without `--fix` writes nothing (D6.1). Locks of a live OpenClaw owner are never removed."""
    settings = settings or DEFAULT_LOCK_SETTINGS
    try:
        names = sorted(os.listdir(sessions_dir))
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for name in names:
        if not name.endswith(".jsonl.lock"):
            continue
        lock_path = Path(sessions_dir) / name
        try:
            if not stat.S_ISREG(os.lstat(lock_path).st_mode):
                continue
        except OSError:
            continue
        with _HELD_GUARD:
            held_by_us = str(lock_path_for(lock_path.with_name(name[: -len(".lock")]))) in _HELD
        try:
            inspection = inspect_lock(lock_path, settings, now_ms=now_ms, held_by_us=held_by_us)
        except (OpenClawError, OSError):
            continue  # replaced by a non-file since the listing, or unreadable: the writes report it
        if inspection is None:
            continue
        removed = False
        if remove and inspection.stale and decide(inspection, settings) == "reclaim":
            removed = _remove_if_unchanged(inspection)
            if removed and log is not None:
                log(
                    f"removed stale session lock: {lock_path} ({', '.join(inspection.stale_reasons) or 'unknown'})"
                )
        out.append(inspection.to_dict(removed))
    return out
