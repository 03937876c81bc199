"""The Gateway's answer cache (issue 25's chat.history speed): a read marked `reusable` whose
handler said its answer may be sent again (`Context.reuse`) is kept as its encoded response frame,
and the next identical request gets that frame with its own request id (and the clock's value in
the answer's clock fields) spliced in, on the event loop: no thread hop, no handler, no encoding.

When it is reused: only while the handler's probe (`store.base.ChangeProbe`: the store's change
marker, the transcript file's identity and size) reads the value it read around a whole read. The
first answer for a request is only a candidate: the probe is read before the next identical request
runs and again after it, and that answer is kept only when both reads agree (a change during the
read, which could have mixed old and new, keeps nothing). A probe that cannot tell (None) keeps
nothing. A config reload (a new config object) is a miss.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from openclaw_cli.gateway import protocol
from openclaw_cli.jsonutil import dumps_bytes

MAX_ANSWER_BYTES = 16 << 20  # kept frames' bytes (a 50 MB transcript's first page is ~175 KB)
MAX_ENTRIES = 256  # requests tracked (a candidate holds only its probe)


class AnswerTemplate:
    """An encoded response frame with holes for the request id and the clock."""

    def __init__(self, pieces: list[bytes | str]) -> None:
        self.pieces = pieces  # bytes as written; "id" / "now" where a value goes
        self.size = sum(len(piece) for piece in pieces if isinstance(piece, bytes))

    def render(self, req_id: Any, now: int) -> bytes:
        out: list[bytes] = []
        for piece in self.pieces:
            if piece == "id":
                out.append(dumps_bytes(req_id))
            elif piece == "now":
                out.append(str(int(now)).encode())
            else:
                assert isinstance(piece, bytes)
                out.append(piece)
        return b"".join(out)


def template(result: Any, now_fields: tuple[tuple[str, ...], ...]) -> AnswerTemplate | None:
    """The response frame of `result` with holes; None when a clock field is not where it is said
    to be (nothing is reused then)."""
    token = uuid.uuid4().hex
    marks = {f"__openclaw_answer_id_{token}__": "id", f"__openclaw_answer_now_{token}__": "now"}
    now_mark = f"__openclaw_answer_now_{token}__"
    payload = result
    for path in now_fields:
        payload = _replaced(payload, path, now_mark)
        if payload is None:
            return None
    data = dumps_bytes(protocol.response_ok(f"__openclaw_answer_id_{token}__", payload))
    parts = re.split(rb'"(__openclaw_answer_(?:id|now)_' + token.encode() + rb"__)\"", data)
    pieces: list[bytes | str] = []
    for n, part in enumerate(parts):
        pieces.append(marks[part.decode()] if n % 2 else part)
    if pieces.count("id") != 1 or pieces.count("now") != len(now_fields):
        return None
    return AnswerTemplate(pieces)


def _replaced(value: Any, path: tuple[str, ...], mark: str) -> Any:
    """A copy of `value` (copied only along `path`) with the field at `path` set to `mark`."""
    if not path or not isinstance(value, dict) or path[0] not in value:
        return None
    copy = dict(value)
    if len(path) == 1:
        copy[path[0]] = mark
        return copy
    inner = _replaced(value[path[0]], path[1:], mark)
    if inner is None:
        return None
    copy[path[0]] = inner
    return copy


class WaitingReads:
    """Identical reads waiting for a read slot share one read (issue 30: in the mix, a list after
    a commit was read again by every client queued behind the slots, ~3-7 ms of GIL each). A read
    joins only one that has not started: that read's snapshot is then taken after the joiner
    arrived, so it holds every write answered before the joiner asked — what the joiner's own read
    would have seen. Used from the event loop only."""

    def __init__(self) -> None:
        self._waiting: dict[Any, tuple[Any, asyncio.Future[Any]]] = {}
        self.joined = 0  # reads answered by another's read (so far)

    @staticmethod
    def key(name: str, params: dict[str, Any], scopes: tuple[str, ...]) -> Any:
        try:
            return (name, orjson.dumps(params, option=orjson.OPT_SORT_KEYS), scopes)
        except TypeError:  # a value orjson cannot write: never shared
            return None

    def join(self, key: Any, config: Any) -> asyncio.Future[Any] | None:
        """The result of an identical read (under the same config object) still waiting for its
        slot, else None."""
        found = self._waiting.get(key)
        if found is None or found[0] is not config or found[1].done():
            return None
        self.joined += 1
        return found[1]

    def wait(self, key: Any, config: Any) -> asyncio.Future[Any]:
        """Register a read about to wait for its slot: identical requests may join it until it
        starts."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[key] = (config, future)
        return future

    def started(self, key: Any, future: asyncio.Future[Any]) -> None:
        """The read got its slot: nobody joins it any more."""
        if self._waiting.get(key, (None, None))[1] is future:
            del self._waiting[key]

    def done(self, key: Any, future: asyncio.Future[Any], result: Any, answered: bool) -> None:
        """The read's result to those that joined it; when it did not answer (its connection gone,
        cancelled, a failure) they read for themselves."""
        self.started(key, future)
        if not future.done():
            if answered:
                future.set_result(result)
            else:
                future.cancel()

    def __len__(self) -> int:
        return len(self._waiting)


@dataclass
class _Kept:
    config: Any  # the config object the answer was read under
    probe: Any  # the handler's ChangeProbe
    token: Any = None  # what the probe read around the kept read
    frame: AnswerTemplate | None = None


class AnswerCache:
    """Kept answers by (method, params), held to `budget` bytes of encoded frames (a frame larger
    than that is not kept: chat.history's page may be up to 6 MiB) and `entries` requests; the
    least recently used go first. Used from the event loop only."""

    def __init__(self, budget: int = MAX_ANSWER_BYTES, entries: int = MAX_ENTRIES) -> None:
        self._kept: OrderedDict[Any, _Kept] = OrderedDict()
        self._budget = budget
        self._entries = entries
        self._bytes = 0
        # reads in flight by key: (the probe's value before it, its result when done)
        self._reading: dict[Any, tuple[Any, asyncio.Future[Any]]] = {}

    def joinable(self, key: Any, before: Any) -> asyncio.Future[Any] | None:
        """The result of an identical read already in flight that started with the probe at the
        value it reads now (whose answer is then this request's too, if the probe still reads it
        when that read is done), else None."""
        found = self._reading.get(key)
        if found is None or before is None or found[0] != before or found[1].done():
            return None
        return found[1]

    def reading(self, key: Any, before: Any) -> asyncio.Future[Any] | None:
        """Register a read that identical requests may join (when its probe value is known)."""
        if before is None or key in self._reading:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._reading[key] = (before, future)
        return future

    def done_reading(self, key: Any, future: asyncio.Future[Any] | None, result: Any, failed: bool) -> None:
        if future is None:
            return
        if self._reading.get(key, (None, None))[1] is future:
            del self._reading[key]
        if not future.done():
            if failed:
                future.cancel()  # joiners read for themselves
            else:
                future.set_result(result)

    def still(self, key: Any, before: Any) -> bool:
        """Does the probe of the kept entry for `key` still read `before`?"""
        kept = self._kept.get(key)
        return kept is not None and before is not None and kept.probe.read() == before

    @staticmethod
    def key(name: str, params: dict[str, Any]) -> Any:
        try:
            return (name, orjson.dumps(params, option=orjson.OPT_SORT_KEYS))
        except TypeError:  # a value orjson cannot write: never kept
            return None

    def before(self, key: Any, config: Any) -> tuple[AnswerTemplate | None, Any]:
        """(the kept frame when it may be sent now, else None; the probe's value now, to compare
        with its value after the read that follows)."""
        kept = self._kept.get(key)
        if kept is None or kept.config is not config:
            return None, None
        value = kept.probe.read()
        if value is not None and kept.frame is not None and value == kept.token:
            self._kept.move_to_end(key)
            return kept.frame, value
        return None, value

    def after(self, key: Any, config: Any, reuse: Any, before: Any, result: Any) -> None:
        """After a read: keep its answer when the probe read the same value before and after it
        (and it is the probe the value before was read with); else keep only its probe."""
        old = self._kept.pop(key, None)
        if old is not None and old.frame is not None:
            self._bytes -= old.frame.size
        if reuse is None:
            return
        value = reuse.probe.read()
        kept = _Kept(config, reuse.probe)
        if (
            old is not None
            and old.config is config
            and old.probe == reuse.probe
            and value is not None
            and value == before
        ):
            kept.token = value
            frame = template(result, reuse.now_fields)
            if frame is not None and frame.size <= self._budget:
                kept.frame = frame
                self._bytes += frame.size
        self._kept[key] = kept
        while self._bytes > self._budget or len(self._kept) > self._entries:
            _, dropped = self._kept.popitem(last=False)
            if dropped.frame is not None:
                self._bytes -= dropped.frame.size

    @property
    def held_bytes(self) -> int:
        """The kept frames' bytes."""
        return self._bytes
