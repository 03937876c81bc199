"""A forked process making the usage ledger's lines while its parent archives (issue 30).

A cleanup of thousands of sessions parses each export's usage lines for the ledger (one third of
its Python work on *many*) while it compresses, writes and verifies the archives. The parent sends
each `(session id, export)` down a pipe as it archives it; the child, forked from it (so it holds
the rows the lines are made from), makes each line and keeps them until the parent closes the
pipe, then writes them all back as one answer (the ledger's: both files' bytes in their final
order) — it never writes while the parent may still be writing, so neither can block the other
for good. The parent reads them before anything leaves the store
(`RetirementLedger.before_leaving`): the ledger is appended exactly as without the worker.

Only the main thread forks, and only when no other thread runs than our idle ones (the state
owner's heartbeat, the lock watchdog: a fork copies no other thread, and a lock one of them held
would stay held in the child): anywhere else `start` says no and the lines are made in-process.
Whatever the child did not send back (it died, a frame is damaged) is made by the parent from a
fresh read, as for a session without an export. The child ignores Ctrl-C (its parent handles it),
touches no file, database or lock of the parent's (it closes every other descriptor), and ends
with `os._exit`; if the parent dies first, the child sees the end of its input, finds nobody to
write to and exits.
"""

from __future__ import annotations

import os
import select
import struct
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

_HEAD = struct.Struct("<II")  # session id bytes, payload bytes
_FLUSH = 1 << 18  # bytes gathered before a write to the child
_BACKLOG = 4 << 20  # bytes the pipe did not take yet that the caller holds before it waits


class UsageWorker:
    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid = pid
        self._to = to_child
        self._from = from_child
        self._buf = bytearray()
        # gathered input the pipe did not take yet (its write end does not block): the caller goes
        # on while the child is behind, up to `_BACKLOG` bytes, then waits (issue 30, stop 46)
        self._unsent: deque[memoryview] = deque()
        self._unsent_bytes = 0
        self.broken = False

    @classmethod
    def start(
        cls, make: Callable[[str, bytes], Any], answer: Callable[[dict[str, Any]], Sequence[bytes]]
    ) -> UsageWorker | bool:
        """A child making `make(session id, content)` for each sent pair and, once the parent has
        sent them all, writing back the parts `answer(what it made, by session id)` gives, one
        after the other; False where this process cannot fork safely (another thread running, no
        `fork`)."""
        if not _forkable():
            return False
        fds: list[int] = []
        try:
            for _ in range(2):
                fds.extend(os.pipe())
            pid = os.fork()
        except OSError:  # out of descriptors or processes: the lines are made in-process
            for fd in fds:
                os.close(fd)
            return False
        down_r, down_w, up_r, up_w = fds
        if pid == 0:  # pragma: no cover - the child (its work is checked through the parent)
            _child(down_r, up_w, make, answer)
        os.close(down_r)
        os.close(up_w)
        _widen(down_w)
        _widen(up_r)  # (the answer, ~10 MB on *many*: a few pipefuls, not one per 64 KiB)
        os.set_blocking(down_w, False)  # (the child's end blocks as before)
        return cls(pid, down_w, up_r)

    def send(self, session_id: str, content: bytes) -> bool:
        """Hand one export over; False when the child is gone (the caller makes the line itself)."""
        if self.broken or self._to < 0:
            return False
        sid = session_id.encode()
        self._buf += _HEAD.pack(len(sid), len(content))
        self._buf += sid
        self._buf += content
        if len(self._buf) >= _FLUSH:
            return self._flush()
        return True

    def _flush(self, wait: bool = False) -> bool:
        """What is gathered goes to the pipe as far as it takes it now; the rest waits for the next
        call, unless more than `_BACKLOG` bytes wait (or `wait`): then this waits until all went.
        (With the pipe alone the caller waited whenever the child was a pipeful behind: 27-400 ms
        of a *many* cleanup's archive loop at load 3-5.)"""
        if self._buf:
            self._unsent.append(memoryview(self._buf))  # (a new buffer gathers the next ones)
            self._unsent_bytes += len(self._buf)
            self._buf = bytearray()
        wait = wait or self._unsent_bytes > _BACKLOG
        unsent = self._unsent
        try:
            while unsent:
                try:
                    written = os.write(self._to, unsent[0])
                except BlockingIOError:
                    if not wait:
                        return True
                    select.select([], [self._to], [])
                    continue
                self._unsent_bytes -= written
                if written == len(unsent[0]):
                    unsent.popleft()
                else:
                    unsent[0] = unsent[0][written:]
        except OSError:
            self.broken = True
            unsent.clear()
            self._unsent_bytes = 0
            return False
        return True

    def close_input(self) -> None:
        """Every export is sent: what is gathered goes now and the child may answer (it works
        through the last ones while this process makes the archives durable)."""
        if self._to < 0:
            return
        if not self.broken:
            self._flush(wait=True)
        os.close(self._to)
        self._to = -1  # (nothing more is sent)

    def answer(self) -> bytes | None:
        """The child's whole answer once it has every export; None when it failed."""
        self.close_input()
        chunks: list[bytes] = []
        try:
            while True:
                chunk = os.read(self._from, PIPE_BYTES)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._from)
        _, status = os.waitpid(self.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def abort(self) -> None:
        import signal

        for fd in (self._to, self._from):
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass


# the pipe to the child holds this much (Linux's default pipe-max-size; a pipe holds 64 KiB by
# default): with room for several `_FLUSH`es the parent's writes do not wait for the child to parse
# the previous ones — with 64 KiB each 256 KiB write waited until the child had parsed most of it,
# so the two ran in lockstep (issue 30: ~0.8 s of a *many* cleanup's wall in the parent's sends)
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (OSError, ImportError):
        pass  # (not Linux, or over the limit: the usual pipe, only slower)


# threads of ours that only sleep on an event between a `utime` or a lock-file check: the child
# never uses what they might hold at the fork (no lock file, no event of theirs)
_IDLE_THREADS = frozenset({"state-owner-heartbeat", "session-write-lock-watchdog"})


def _forkable() -> bool:
    """A fork here copies no thread that could hold something the child needs: the main thread,
    with no other thread than our idle ones."""
    import threading

    if not hasattr(os, "fork") or threading.current_thread() is not threading.main_thread():
        return False
    return all(t is threading.main_thread() or t.name in _IDLE_THREADS for t in threading.enumerate())


def _write_parts(fd: int, parts: Sequence[bytes]) -> None:
    """Every part written in order, a group of them a `writev` (no copy of them joined first)."""
    group = 512  # (within every system's IOV_MAX)
    for start in range(0, len(parts), group):
        pending = [memoryview(part) for part in parts[start : start + group] if part]
        while pending:
            done = os.writev(fd, pending)
            while pending and done >= len(pending[0]):
                done -= len(pending.pop(0))
            if pending and done:
                pending[0] = pending[0][done:]


def _child(
    down: int,
    up: int,
    make: Callable[[str, bytes], Any],
    answer: Callable[[dict[str, Any]], Sequence[bytes]],
) -> None:  # pragma: no cover
    code = 1
    try:
        import gc
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        gc.disable()  # short-lived: the parent's heap stays shared, nothing to collect
        for low, high in (
            (3, min(down, up)),
            (min(down, up) + 1, max(down, up)),
            (max(down, up) + 1, 1 << 16),
        ):
            os.closerange(low, high)
        made: dict[str, Any] = {}
        with os.fdopen(down, "rb", buffering=1 << 20) as source:
            head = _HEAD.size
            while True:
                raw = source.read(head)
                if len(raw) < head:
                    break
                n_sid, n_content = _HEAD.unpack(raw)
                sid = source.read(n_sid).decode()
                made[sid] = make(sid, source.read(n_content))
        _write_parts(up, answer(made))
        code = 0
    except BaseException:
        code = 1
    finally:
        os._exit(code)
