"""The Gateway server (spec D9): OpenClaw's protocol 4 over an asyncio `websockets` server, serving
the operations layer's method table (`ops.methods`) to the real OpenClaw CLI, our own client and
anything else that speaks the protocol.

One connection: `connect.challenge` → the first frame must be `connect` (closed schema, allowed
client id, protocol 4, constant-time token/password check; frames are capped at 64 KiB until it
succeeded) → `hello-ok` → `req`/`res` frames in any order, events with a per-connection `seq`.
Each request: known method → operator scope (the row's rule, `ops.scopes`) → the row's closed param
schema → handler in a thread pool, so the event loop keeps serving while SQLite works; a long read
(`Method.long_read`: a cleanup dry run) in the reader process (`gateway/readers.py`), where it
cannot hold this interpreter's GIL while writes wait (issue 30).

Writes: a mutating method (`Method.mutates`) first waits for the writer of every store it
touches (`WriterQueues`: one writer per store, FIFO; reads never wait), then runs the handler,
which takes the store's own writer (`store.writer.store_writer`: SQLite `BEGIN IMMEDIATE`, the
legacy store's lock file) exactly as on the CLI path, so crash safety is the CLI's (D6.4).
`sessions.changed` events go to subscribed connections after the response (built only when a
connection is subscribed).

Shutdown (`stop()`): stop accepting, answer new requests UNAVAILABLE, let in-flight writes finish,
send `shutdown` and close every socket with 1001.
"""

from __future__ import annotations

import asyncio
import os
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from openclaw_cli.clock import now_ms
from openclaw_cli.errors import (
    NoSpaceError,
    OpenClawError,
    PermissionDeniedError,
    ResourceLimitError,
    SessionBusyError,
    StateOwnedError,
    typed_error,
)
from openclaw_cli.gateway import events, protocol, schemas, trace
from openclaw_cli.gateway.answers import AnswerCache, AnswerTemplate, WaitingReads
from openclaw_cli.gateway.auth import AuthPolicy
from openclaw_cli.gateway.collector import FullCollections
from openclaw_cli.gateway.limits import AuthThrottle, BurstLog, Limits
from openclaw_cli.gateway.presence import PresenceBook
from openclaw_cli.gateway.readers import ReaderProcess
from openclaw_cli.gateway.server_connection import ConnectionBook, GatewayConnection
from openclaw_cli.jsonutil import dumps_bytes
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.inventory import REFUSED, method_status, unserved_reason
from openclaw_cli.ops.methods import METHODS, Method, parse_params
from openclaw_cli.ops.scopes import ADMIN, READ, satisfied
from openclaw_cli.ops.session_groups import missing_mutation_target
from openclaw_cli.paths import StatePaths

EVENTS = (
    protocol.EVENT_CHALLENGE,
    protocol.EVENT_SESSIONS_CHANGED,
    protocol.EVENT_TICK,
    protocol.EVENT_SHUTDOWN,
    protocol.EVENT_HEALTH,
    protocol.EVENT_PRESENCE,
    protocol.EVENT_SESSION_OPERATION,
)  # and `config.changed`, which OpenClaw sends without listing it (recorded: agents-delete)
DRAIN_TIMEOUT_S = 120.0  # how long shutdown waits for in-flight writes
BATCH_MAX = 64  # requests one group commit takes (a bound on the latency a batch adds to the next)
# Background WAL checkpoints (`_checkpoint_loop`): looked for every CHECKPOINT_INTERVAL_S once a
# write committed; made when the writes pause (none in flight, none answered for CHECKPOINT_QUIET_S)
# or, under writes that do not pause, CHECKPOINT_MAX_S after the first write not yet copied. A
# checkpoint's page copy and fsyncs slow the group commits running beside it (issue 30: a tenth
# of the slowest patches overlapped one with a checkpoint every 0.5 s); fewer and larger ones
# copy a page rewritten by many commits once. The WAL stays far below the write connections' own
# limit (`LIVE_WAL_AUTOCHECKPOINT`, 16,000 pages) in CHECKPOINT_MAX_S.
CHECKPOINT_INTERVAL_S = 0.25
CHECKPOINT_QUIET_S = 0.25
CHECKPOINT_MAX_S = 2.0
GC_TICK_S = 0.25  # how often a scheduled full collection looks for a moment with nothing served
# reads whose answer is a function of their params, the caller's scopes, the config and the stores'
# state only: identical ones waiting for a read slot share one read (`answers.WaitingReads`)
SHARED_READS = frozenset({"sessions.list", "sessions.describe", "sessions.preview"})


def checkpoint_due(*, pending_s: float, quiet_s: float, writing: bool) -> bool:
    """Whether a background checkpoint is due: the oldest write not yet copied committed
    `pending_s` ago, the last write was answered `quiet_s` ago, and whether one is in flight."""
    return pending_s >= CHECKPOINT_MAX_S or (not writing and quiet_s >= CHECKPOINT_QUIET_S)


def served_methods() -> list[str]:
    """hello-ok `features.methods`: the table's order, OpenClaw's (ours that OpenClaw has no
    counterpart of are served, not announced)."""
    return [name for name, row in METHODS.items() if row.advertised]


@dataclass
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 0
    auth: AuthPolicy = field(default_factory=lambda: AuthPolicy("none"))
    ssl: Any = None  # ssl.SSLContext for wss://
    tick_interval_ms: int = protocol.TICK_INTERVAL_MS
    health_interval_ms: int = protocol.HEALTH_INTERVAL_MS
    handshake_timeout_s: float = protocol.HANDSHAKE_TIMEOUT_S
    # SQLite releases the GIL, so reads overlap; a write that got its store's queue must not then
    # wait for a thread behind slow reads
    workers: int = 32
    verbose: bool = False
    log: Callable[[str], None] | None = None
    limits: Limits = field(default_factory=Limits.from_env)
    # failed auth from loopback is delayed but never locked out (OpenClaw's default); tests turn it off
    exempt_loopback: bool = True
    # the dashboard's local server (`openclaw dashboard --local`): every write is refused
    read_only: bool = False
    # `gateway run --control-ui DIR`: OpenClaw's Control UI build served at `/` instead of our dashboard
    control_ui: Path | None = None
    # `gateway run` (process-wide choices, off for servers inside another program, e.g. tests):
    # the reader process spawned at start, not at the first long read (`gateway/readers.py`), and
    # the full garbage collections run between requests (`gateway/collector.py`) (issue 30)
    reader_at_start: bool = False
    scheduled_gc: bool = False


@dataclass(eq=False)
class Connection:
    ws: GatewayConnection
    conn_id: str
    scopes: tuple[str, ...] = ()
    client: dict[str, Any] = field(default_factory=dict)
    subscribed: bool = False
    seq: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    ping: asyncio.Task[None] | None = None
    missed: int = 0  # keepalive rounds the current ping has gone unanswered

    def send(self, frame: dict[str, Any]) -> bool:
        """Write now (never waits for the peer); False when the connection is gone or was just
        closed as a slow consumer."""
        # values our readers keep as written (raw numbers, deep or bulk-read JSON kept as text)
        # are written back by our serialiser; plain frames take orjson's fast path inside it
        return self.ws.post(dumps_bytes(frame))

    def send_event(self, name: str, payload: Any, *, state_version: dict[str, int] | None = None) -> None:
        self.seq += 1
        self.send(protocol.event(name, payload, seq=self.seq, state_version=state_version))


class _RWLock:
    """Many holders of `shared()`, or one of `exclusive()` (FIFO-fair enough for a writer queue)."""

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._writer)
            self._readers += 1
        try:
            yield
        finally:
            async with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._writer)
            self._writer = True
            await self._cond.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            async with self._cond:
                self._writer = False
                self._cond.notify_all()


class WriterQueues:
    """One writer per store (keyed by agent id), FIFO per store; a mutation that touches every
    store (`--all-agents` cleanup, `agents.delete`, which also rewrites the config) holds all."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._all = _RWLock()

    @asynccontextmanager
    async def hold(self, keys: list[str] | None) -> AsyncIterator[None]:
        if keys is None:
            async with self._all.exclusive():
                yield
            return
        async with self._all.shared():
            held: list[asyncio.Lock] = []
            try:
                for key in sorted(set(keys)):  # one order everywhere: no deadlock between two writers
                    lock = self._locks.setdefault(key, asyncio.Lock())
                    await lock.acquire()
                    held.append(lock)
                yield
            finally:
                for lock in reversed(held):
                    lock.release()


class _Committed(NamedTuple):
    """A committed write, as `events.after` takes it."""

    ctx: Context
    method: Method
    params: dict[str, Any]
    result: Any
    prior: dict[str, Any]


def write_keys(ctx: Context, method: str, params: dict[str, Any]) -> list[str] | None:
    """The stores (agent ids) a mutating request writes; None = every store."""
    from openclaw_cli.config import default_agent_id
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.keys import parse_agent_key

    def agent_of(value: Any) -> str | None:
        parsed = parse_agent_key(value) if isinstance(value, str) else None
        return parsed[0] if parsed else None

    def named(value: Any) -> str | None:
        return normalize_agent_id(value) if isinstance(value, str) and value.strip() else None

    if method == "agents.delete" or method.startswith("sessions.groups."):
        return None  # a group's members may be in any agent's store
    if method == "sessions.cleanup":
        if params.get("allAgents") is True:
            return None
        return [named(params.get("agent")) or default_agent_id(ctx.config)]
    if method == "sessions.patchMany":
        targets = params.get("targets") or []
        owners = {agent_of(t.get("key")) or named(t.get("agentId")) for t in targets if isinstance(t, dict)}
        return sorted({o or default_agent_id(ctx.config) for o in owners})
    keys = {agent_of(params.get(name)) for name in ("key", "parentSessionKey", "sessionKey")} - {None}
    if not keys:
        keys = {named(params.get("agentId")) or default_agent_id(ctx.config)}
    return sorted(k for k in keys if k)


# What a first write imports beyond its handler's module (the store's write modules): imported at
# start, so the first group commit does not pay ~14 ms of imports for every request in it (issue
# 30: with 1,000 patches, the first batch's 20 requests are the p99)
WARM_MODULES = (
    "openclaw_cli.lifecycle",
    "openclaw_cli.store.writer",
    "openclaw_cli.store.sqlite.lifecycle",
    "openclaw_cli.store.legacy.lifecycle",
    "openclaw_cli.store.openclaw.lifecycle",
)


def warm_up() -> None:
    """Import every served method's handler module and the stores' write modules now."""
    import importlib

    for row in METHODS.values():
        for reference in (row.handler, row.batch):
            if reference:
                importlib.import_module(reference.partition(":")[0])
    for module in WARM_MODULES:
        importlib.import_module(module)


WARM_STORES_MAX = 16  # agent stores whose write connection the start opens (the rest on first write)


def warm_writes(ctx: Context) -> int:
    """Open each agent's SQLite store for writing once, at start (issue 30): the live keeper keeps
    that write connection (opened, configured, its schema and owner checked, the write statements'
    tables read), so the first group commit of the Gateway's life takes a ready one instead of
    paying for it inside its batch. Only a database that exists, is ours and is current: nothing is
    created or migrated at start (a pending migration stays the first write's), and a store that
    cannot be opened now is left to the first write, which reports it. Returns how many were kept."""
    import sqlite3

    from openclaw_cli.ops.targets import open_target, select_targets

    kept = 0
    try:
        targets = select_targets(ctx.paths, ctx.config, agent=None, all_agents=True, store=None)
    except OpenClawError:
        return 0
    for target in targets[:WARM_STORES_MAX]:
        try:
            reader = open_target(ctx, target, read_only=True)
            try:
                if not reader.current_for_writes():
                    continue  # a legacy store, or a migration pending
            finally:
                reader.close()
            with open_target(ctx, target, read_only=False) as writer:
                writer.label_owners("")  # the label index's first pages, on the write connection
            kept += 1
        except (OpenClawError, sqlite3.Error, OSError):
            continue
    return kept


def event_frame(name: str, payload: bytes, seq: int) -> bytes:
    """`dumps_bytes(protocol.event(name, <payload>, seq=seq))` from the payload's encoded bytes:
    a broadcast encodes its payload once, not once per connection."""
    return b"".join(
        (b'{"type":"event","event":', dumps_bytes(name), b',"payload":', payload, b',"seq":', b"%d}" % seq)
    )


def _parse_like_javascript(raw: str) -> Any:
    """What orjson refuses but JSON.parse reads: a number beyond double range (`1e400`) is
    Infinity there, which the schema then refuses ("must be integer") instead of the frame going
    unanswered. NaN/Infinity literals are not JSON and stay refused."""
    import json

    def no_constants(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(raw, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return None


def _error_of(exc: BaseException) -> protocol.RequestError:
    if isinstance(exc, protocol.RequestError):
        return exc
    if not isinstance(exc, OpenClawError):
        exc = typed_error(exc) or exc  # ENOSPC, SQLite's "disk full", EMFILE... from below the store layer
    if isinstance(exc, SessionBusyError | StateOwnedError | NoSpaceError | ResourceLimitError):
        # the request was fine; the Gateway cannot do it now (busy, disk full, out of descriptors): retry later
        return protocol.RequestError(
            protocol.UNAVAILABLE,
            exc.message,
            retryable=True,
            details={"type": exc.type, **({"code": code} if (code := getattr(exc, "code", None)) else {})},
        )
    if isinstance(exc, PermissionDeniedError):  # a read-only or unwritable state dir: not the client's fault
        return protocol.RequestError(
            protocol.UNAVAILABLE, exc.message, retryable=False, details={"type": exc.type}
        )
    if isinstance(exc, OpenClawError):
        details = getattr(exc, "details", None)
        code = getattr(exc, "gateway_code", None) or protocol.INVALID_REQUEST  # `ForbiddenError`
        return protocol.RequestError(
            code, exc.message, details=details if isinstance(details, dict) else None
        )
    return protocol.RequestError(protocol.UNAVAILABLE, f"internal error: {type(exc).__name__}: {exc}")


class GatewayServer:
    """A running Gateway for one state directory. `await start()`, then `await stop()`."""

    def __init__(
        self, paths: StatePaths, options: ServerOptions | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        self.paths = paths
        self.options = options or ServerOptions()
        self.clock = clock
        self.boot_id = str(uuid.uuid4())
        self.connections: set[Connection] = set()
        self._subscribers: set[Connection] = set()  # the connections subscribed (a subset)
        self.writers = WriterQueues()
        self.stopping = False
        self._pool = ThreadPoolExecutor(max_workers=self.options.workers, thread_name_prefix="gateway")
        self._readers = ReaderProcess()  # long reads (`Method.long_read`), in a child started on use
        self._server: Any = None
        self._started = time.monotonic()
        self._config: Any = None
        self._paths: StatePaths = paths  # with the config's session.store applied
        self._config_key: Any = object()
        self._config_file = os.fspath(paths.config_path)
        self._writes_inflight = 0
        self._writes_done = 0
        self._last_write = 0.0  # time.monotonic() when the last write was answered
        self._writes_idle = asyncio.Event()
        self._writes_idle.set()
        # writes first: a read that got its slot does not start while a group commit's handler
        # runs (it waits for that batch, once; identical reads may still join it meanwhile), so
        # the batch shares the GIL with fewer threads (issue 30)
        self._batches_running = 0
        self._no_batch = asyncio.Event()
        self._no_batch.set()
        self._background: list[asyncio.Task[None]] = []
        self._batches: dict[
            tuple[str, tuple[str, ...]],
            list[tuple[dict[str, Any], asyncio.Future[Any], dict[str, Any] | None]],
        ] = {}
        self._draining: set[tuple[str, tuple[str, ...]]] = set()
        self._background_writes: set[asyncio.Task[None]] = set()
        self._health: dict[str, Any] | None = None
        self._tasks_on_connect: set[asyncio.Future[None]] = set()
        self._health_version = 0
        self.presence = PresenceBook()
        self._answers = AnswerCache()  # reusable reads' answers (`Method.reusable`, `gateway/answers.py`)
        self._waiting = WaitingReads()  # identical reads waiting for a slot (`SHARED_READS`)
        self._trace = trace.from_env()  # stage timestamps per request (`OPENCLAW_GATEWAY_TRACE`)
        self._serving = 0  # requests in progress, but long reads waiting for the reader process
        self._collector: FullCollections | None = None  # `ServerOptions.scheduled_gc`
        self._quiet_check: asyncio.TimerHandle | None = None  # the collector's look after the last answer
        self._control_ui: Any = None
        if self.options.control_ui is not None:
            from openclaw_cli import __version__
            from openclaw_cli.gateway.control_ui import ControlUi

            self._control_ui = ControlUi(
                self.options.control_ui, version=__version__, secret=self.options.auth.secret
            )
        self.address: tuple[str, int] | None = None
        self._live = False
        limits = self.options.limits
        self._burst_log = BurstLog(self._log)
        self.book = ConnectionBook(limits, self._burst_log)
        self.throttle = AuthThrottle(exempt_loopback=self.options.exempt_loopback)
        self._inflight = asyncio.Semaphore(limits.total_inflight)
        self._reads = asyncio.Semaphore(limits.parallel_reads)

    # ---- lifecycle -----------------------------------------------------------------------------------------
    async def start(self) -> tuple[str, int]:
        from openclaw_cli.store.sqlite_common import enable_live_reads

        enable_live_reads()  # reads run while this process writes: WAL readers, never immutable ones
        self._live = True
        try:
            ctx = self._context()  # a bad config fails the start, not the first request
            warm_up()
            if not self.options.read_only:
                warm_writes(ctx)
            if self.options.reader_at_start:
                self._readers.start()
            if self.options.scheduled_gc:
                self._collector = FullCollections()
                self._collector.install()
            self._server = await self._listen()
        except BaseException:
            await self.stop()
            raise
        sockname = next(iter(self._server.sockets)).getsockname()
        self.address = (sockname[0], sockname[1])
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self._tick_loop()),
            loop.create_task(self._health_loop()),
            loop.create_task(self._checkpoint_loop()),
            loop.create_task(self._keepalive_loop()),
        ]
        if self._collector is not None:
            self._background.append(loop.create_task(self._gc_loop()))
        if self._trace is not None:
            self._background.append(loop.create_task(self._trace.lag_probe()))
        return self.address

    async def _listen(self) -> Any:
        connection_class = type("BookedConnection", (GatewayConnection,), {"book": self.book})
        loop = asyncio.get_running_loop()
        quiet_accept_errors(loop, self._burst_log)
        return await serve(
            self._handle,
            self.options.host,
            self.options.port,
            ssl=self.options.ssl,
            max_size=protocol.PREAUTH_MAX_BYTES,
            compression=None,
            create_connection=connection_class,
            server_header=None,
            open_timeout=self.options.handshake_timeout_s,
            close_timeout=5,
            ping_interval=None,  # our own keepalive (`_keepalive_loop`): websockets' waits behind a stuck send
            process_request=self._plain_http,
        )

    def _plain_http(self, connection: Any, request: Any) -> Any:
        """A GET without the WebSocket upgrade: the dashboard's static assets (`gateway.http`), or
        the operator's Control UI build (`--control-ui`); an upgrade goes on to the protocol."""
        from openclaw_cli.gateway import http

        if http.wants_upgrade(request):
            return None
        if self._control_ui is not None:
            return self._control_ui.response(request)
        return http.static_response(request)

    @property
    def sockets(self) -> list[Any]:
        return list(self._server.sockets) if self._server is not None else []

    async def stop(self) -> None:
        """Stop accepting, finish in-flight writes, close sockets with 1001."""
        if self.stopping:
            return
        self.stopping = True
        if self._server is not None:
            self._server.server.close()  # no new TCP connections; existing ones keep being served
        try:
            await asyncio.wait_for(self._writes_idle.wait(), timeout=DRAIN_TIMEOUT_S)
        except TimeoutError:
            self._log(
                f"[gateway] {self._writes_inflight} write(s) still running after {DRAIN_TIMEOUT_S:.0f} s"
            )
        for task in self._background:
            task.cancel()
        for conn in list(self.connections):
            conn.send_event(protocol.EVENT_SHUTDOWN, {"reason": "gateway stopping"})
        if self._server is not None:
            self._server.close(
                close_connections=True, code=protocol.CLOSE_GOING_AWAY, reason="gateway stopping"
            )
            await self._server.wait_closed()
        self._pool.shutdown(wait=True)
        await asyncio.to_thread(self._readers.shutdown)  # a long read in progress finishes first
        if self._quiet_check is not None:
            self._quiet_check.cancel()
            self._quiet_check = None
        if self._collector is not None:
            self._collector.uninstall()
            self._collector = None
        if self._trace is not None:
            self._trace.flush(final=True)
        if self._live:
            from openclaw_cli.store.sqlite_common import disable_live_reads

            disable_live_reads()
            self._live = False

    def _log(self, text: str) -> None:
        if self.options.log is not None:
            self.options.log(text)

    # ---- config --------------------------------------------------------------------------------------------
    def _context(self) -> Context:
        """A fresh Context per request; the config is re-read when its file changed (agents.delete
        rewrites it; an operator may edit it)."""
        self._reload_config()
        return Context(
            paths=self._paths,
            config=self._config,
            clock=self.clock,
            gateway_presence=lambda: self.presence.clients(self.clock()),
        )

    def _reload_config(self) -> None:
        """Re-read the config when its file changed (announcing the change but at the first read)."""
        try:  # one stat of a path kept as text (a Path built per request cost ~10 % of a patch's loop time)
            st = os.stat(self._config_file)
            key: Any = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            key = None
        if key != self._config_key:
            first = self._config is None
            loaded = Context.load(self.paths)
            self._config, self._paths, self._config_key = loaded.config, loaded.paths, key
            if not first:
                self._broadcast_config_changed(Path(self._config_file))

    def _config_seen(self) -> None:
        """Re-read the config if its file changed (announcing it); a config that cannot be read now
        is the next request's error, not this one's. One stat when it did not change."""
        try:
            self._reload_config()
        except Exception:  # noqa: BLE001 - the answer is sent; the next request reports the config
            pass

    # ---- connections ---------------------------------------------------------------------------------------
    async def _handle(self, ws: Any) -> None:  # a GatewayConnection (`create_connection`)
        if not ws.admitted:
            return  # refused at accept (connection caps): already cut
        conn = Connection(
            ws, str(uuid.uuid4()), slots=asyncio.Semaphore(self.options.limits.per_connection_inflight)
        )
        ws.on_slow = lambda _ws: self._burst_log(
            f"slow:{ws.peer_ip}",
            f"[gateway] closing a slow consumer (1008): conn={conn.conn_id} peer={ws.peer_ip} left more than "
            f"{ws.cap()} bytes unread",
        )
        conn.send(protocol.challenge(str(uuid.uuid4()), self.clock()))
        if not await self._handshake(conn):
            return
        self.connections.add(conn)
        try:
            async for raw in ws:
                if self._collector is not None:
                    self._collector.note_activity()
                frame = self._parse(raw)
                if frame is None or frame.get("type") != "req":
                    continue  # not a request: nothing to answer
                rec = (
                    self._trace.request(frame.get("method"), frame.get("id"), conn.ws.peer_port)
                    if self._trace is not None
                    else None
                )
                await conn.slots.acquire()  # per connection, then in all: a full slot stops reading
                await self._inflight.acquire()
                task = asyncio.get_running_loop().create_task(self._request(conn, frame, rec))
                conn.tasks.add(task)
                task.add_done_callback(conn.tasks.discard)
        except ConnectionClosed:
            pass
        finally:
            self.connections.discard(conn)
            self._subscribers.discard(conn)
            if self.presence.disconnected(conn.conn_id, self.clock()):
                self._broadcast_presence()
            if conn.ping is not None:
                conn.ping.cancel()
            if conn.tasks:
                await asyncio.gather(*conn.tasks, return_exceptions=True)

    @staticmethod
    def _parse(raw: Any) -> dict[str, Any] | None:
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        try:
            frame = orjson.loads(raw)
        except orjson.JSONDecodeError:
            frame = _parse_like_javascript(raw)
        return frame if isinstance(frame, dict) else None

    async def _close(self, conn: Connection, code: int, reason: str = "") -> None:
        encoded = reason.encode("utf-8")[:123]  # a close reason holds at most 123 bytes
        try:
            await conn.ws.close(code, encoded.decode("utf-8", "ignore"))
        except ConnectionClosed:
            pass

    async def _handshake(self, conn: Connection) -> bool:
        try:
            raw = await asyncio.wait_for(conn.ws.recv(), timeout=self.options.handshake_timeout_s)
        except TimeoutError:
            await self._close(conn, protocol.CLOSE_NORMAL)
            return False
        except ConnectionClosed:
            return False  # e.g. the 64 KiB pre-auth cap: closed 1009 by the WebSocket layer
        frame = self._parse(raw)
        if frame is None or frame.get("type") != "req":
            await self._close(conn, protocol.CLOSE_NORMAL)
            return False
        req_id = frame.get("id")
        ip = conn.ws.peer_ip
        try:
            if frame.get("method") != "connect":
                raise protocol.connect_not_first()
            hello = self._connect(conn, frame.get("params"))
        except protocol.RequestError as exc:
            code = (exc.details or {}).get("code")
            if code in ("AUTH_TOKEN_MISMATCH", "AUTH_PASSWORD_MISMATCH"):
                delay = self.throttle.failed(ip)
                self._burst_log(
                    f"auth:{ip}",
                    f"[gateway] failed auth from {ip} ({code}); further failures from it are throttled "
                    "and logged once per burst",
                )
                if delay:
                    await asyncio.sleep(delay)  # loopback: answered late instead of locked out
            elif code == "AUTH_RATE_LIMITED":
                self._burst_log(
                    f"lockout:{ip}",
                    f"[gateway] auth attempts from {ip} locked out for {(exc.retry_after_ms or 0) // 1000} s "
                    "(too many failures)",
                )
            conn.send(protocol.response_error(req_id, exc))
            await self._close(conn, exc.close or protocol.CLOSE_POLICY, exc.message)
            return False
        self.throttle.succeeded(ip)
        self.book.authenticated(conn.ws)
        conn.ws.protocol.max_message_size = protocol.MAX_PAYLOAD
        conn.send(protocol.response_ok(req_id, hello))
        if self.presence.connected(conn.conn_id, conn.client, ip, self.clock()):
            self._broadcast_presence()
        # OpenClaw sends `health` right after hello-ok (recorded at 0.0 s), then on its schedule
        self._tasks_on_connect.add(task := asyncio.ensure_future(self._send_health(conn)))
        task.add_done_callback(self._tasks_on_connect.discard)
        if self.options.verbose:
            self._log(
                f"[ws] connect client={conn.client.get('id')} mode={conn.client.get('mode')} "
                f"scopes={','.join(conn.scopes) or '-'} conn={conn.conn_id}"
            )
        return True

    def _connect(self, conn: Connection, params: Any) -> dict[str, Any]:
        error = schemas.check_connect(params)
        if error:
            raise protocol.invalid(error, close=protocol.CLOSE_POLICY)
        if not params["minProtocol"] <= protocol.PROTOCOL_VERSION <= params["maxProtocol"]:
            raise protocol.protocol_mismatch(params["minProtocol"], params["maxProtocol"])
        self._check_origin(conn)
        role = params.get("role", protocol.ROLE_OPERATOR)
        if role != protocol.ROLE_OPERATOR:
            raise protocol.invalid(f"unsupported role: {role}", close=protocol.CLOSE_POLICY)
        if self.options.auth.mode != "none":
            retry_after = self.throttle.retry_after_ms(conn.ws.peer_ip)
            if retry_after is not None:
                raise protocol.rate_limited(retry_after)
        method = self.options.auth.check(params.get("auth"))
        client = params["client"]
        requested = list(dict.fromkeys(params.get("scopes") or []))
        if client.get("mode") == protocol.MODE_PROBE and "device" not in params:
            requested = []  # a probe without a device identity gets no scopes (as OpenClaw: cli-status)
        if self.options.read_only:
            requested = [s for s in requested if s == READ]  # the read-only server grants reading only
        conn.scopes = tuple(requested)
        conn.client = client
        return self._hello(conn, method)

    def _check_origin(self, conn: Connection) -> None:
        from openclaw_cli.gateway.http import allowed_origins, origin_allowed

        request = getattr(conn.ws, "request", None)
        headers = getattr(request, "headers", None)
        if headers is None:
            return
        origin = headers.get("Origin")
        if not origin_allowed(origin, headers.get("Host"), allowed_origins(self._config)):
            raise protocol.origin_not_allowed()

    def _hello(self, conn: Connection, auth_method: str) -> dict[str, Any]:
        from openclaw_cli import __version__
        from openclaw_cli.config import configured_agent_ids, default_agent_id, default_model

        config = self._config
        configured = configured_agent_ids(config)
        default = default_agent_id(config)
        session = getattr(getattr(config, "model", None), "session", None)
        main = (getattr(session, "main_key", None) or "main").strip().lower() or "main"
        return {
            "type": "hello-ok",
            "protocol": protocol.PROTOCOL_VERSION,
            "server": {"version": __version__, "bootId": self.boot_id, "connId": conn.conn_id},
            "features": {"methods": served_methods(), "events": list(EVENTS), "capabilities": []},
            "snapshot": {
                "suspension": {"phase": "draining" if self.stopping else "accepting"},
                "presence": self._presence_list() if conn.scopes and satisfied(READ, conn.scopes) else [],
                "health": self._health or {},
                "stateVersion": {"presence": self.presence.version, "health": self._health_version},
                "uptimeMs": int((time.monotonic() - self._started) * 1000),
                "sessionDefaults": {
                    "defaultAgentId": default,
                    "modelConfigured": default_model(config) is not None,
                    "ownership": "explicit" if len(configured) > 1 else "sole",
                    "selectionRequired": len(configured) > 1,
                    "mainKey": main,
                    "mainSessionKey": f"agent:{default}:{main}",
                    "scope": getattr(session, "scope", None) or "per-sender",
                },
                **(
                    {
                        "configPath": str(self.paths.config_path),
                        "stateDir": str(self.paths.state_dir),
                        "authMode": self.options.auth.mode,
                    }
                    if ADMIN in conn.scopes
                    else {}
                ),  # admin only, as OpenClaw
            },
            "auth": {"method": auth_method, "role": protocol.ROLE_OPERATOR, "scopes": list(conn.scopes)},
            "policy": {
                "maxPayload": protocol.MAX_PAYLOAD,
                "maxBufferedBytes": self.options.limits.max_buffered_bytes,
                "tickIntervalMs": self.options.tick_interval_ms,
            },
        }

    # ---- requests ------------------------------------------------------------------------------------------
    async def _request(
        self, conn: Connection, frame: dict[str, Any], rec: dict[str, Any] | None = None
    ) -> None:
        started = time.monotonic()
        self._serving += 1
        if self._trace is not None:
            self._trace.enter(rec)
            self._trace.mark(rec, "start")
        req_id = frame.get("id")
        name = frame.get("method")
        ok = False
        try:
            result, committed = await self._run(conn, name, frame.get("params"))
            if self._trace is not None:
                self._trace.mark(rec, "res")
            # built before the answer (a client sees a write's events before its next answer, as
            # recorded from OpenClaw), and only when someone listens: nobody subscribed, a change
            # row (a read of the row and of the transcript's tail) is no part of a write's latency
            changes = await self._announced(committed) if committed is not None else []
            ok = True
            if isinstance(result, AnswerTemplate):  # a kept answer: this request's id and clock spliced in
                conn.ws.post(result.render(req_id, self.clock()))
            else:
                response = protocol.response_ok(req_id, result)
                del result  # the encoded frame is all that stays (memory: one copy per response, not two)
                conn.send(response)
                del response
            if self._trace is not None:
                self._trace.mark(rec, "sent")
            if changes:
                self._broadcast_changes(changes)
            if committed is not None and committed.method.batch is None:
                # a write that rewrote the config (agents.delete) says so now; a group-committed
                # one (sessions.patch) writes store rows only: an operator's edit is the next
                # request's to see, as after a read (one stat fewer per patch)
                self._config_seen()
        except BaseException as exc:  # every failure is an answer, never a dropped request
            if isinstance(exc, asyncio.CancelledError):
                raise
            error = _error_of(exc)
            if not isinstance(exc, OpenClawError | protocol.RequestError):
                if typed_error(exc) is None:  # a bug: its traceback
                    self._log(f"[gateway] {name} failed:\n{traceback.format_exc()}")
                else:
                    self._log(f"[gateway] {name} failed: {error.message}")
            conn.send(protocol.response_error(req_id, error))
            if self._trace is not None:
                self._trace.mark(rec, "err")
            if isinstance(exc, OpenClawError) and isinstance(name, str):  # the handler ran and refused
                self._broadcast_changes(events.after_refusal(name, self.clock()))
        finally:
            conn.slots.release()
            self._inflight.release()
            self._serving -= 1
            if self._collector is not None:
                self._collector.note_activity()
                if self._serving == 0 and self._quiet_check is None:
                    # the last answer is written: a full collection owed runs if nothing more
                    # arrives for the quiet window (a client answered now may send its next at once)
                    self._quiet_check = asyncio.get_running_loop().call_later(
                        self._collector.quiet_s, self._quiet_checked
                    )
            if self.options.verbose:
                mark = "✓" if ok else "✗"
                self._log(
                    f"[ws] ⇄ res {mark} {name} {int((time.monotonic() - started) * 1000)}ms "
                    f"conn={conn.conn_id} id={req_id}"
                )

    async def _run(self, conn: Connection, name: Any, params: Any) -> tuple[Any, _Committed | None]:
        """The result, and for a committed write what its change events are built from."""
        if not isinstance(name, str) or not name:
            raise protocol.invalid("invalid request frame: method must be a non-empty string")
        if name == "connect":
            raise protocol.invalid(protocol.CONNECT_AGAIN_MESSAGE)
        method = METHODS.get(name)
        if method is None:
            why = unserved_reason(name)
            if why is None:
                raise protocol.unknown_method(name)
            raise protocol.unavailable_method(name, why, by_design=method_status(name)[0] == REFUSED)
        if params is None:
            params = {}
        if not method.scope_free:
            required = method.required_scope(params if isinstance(params, dict) else None)
            if not satisfied(required, conn.scopes):
                raise protocol.missing_scope(required)
        if missing_mutation_target(name, params, frozenset(conn.scopes)):  # OpenClaw's sharing layer
            raise protocol.invalid(
                "session mutation target is unavailable",
                details={"code": "SESSION_MUTATION_TARGET_REQUIRED", "method": name},
            )
        error, params = parse_params(name, params)
        if error:
            raise protocol.invalid(error)
        if self.stopping:
            raise protocol.RequestError(protocol.UNAVAILABLE, "gateway is shutting down", retryable=True)
        writes = method.writes(params)
        if writes and self.options.read_only:
            raise protocol.read_only_server(name)
        ctx = self._context()
        ctx.caller_scopes = frozenset(conn.scopes)
        loop = asyncio.get_running_loop()
        if not writes and method.long_read:  # in the reader process, off this one's GIL (issue 30)
            return await self._long_read(conn, name, params, ctx), None
        if not writes:
            kept_key = self._answers.key(name, params) if method.reusable else None
            probed = None
            if kept_key is not None:  # an unchanged answer is sent again from here, on the loop
                frame, probed = self._answers.before(kept_key, ctx.config)
                if frame is not None:
                    return frame, None
                joined = self._answers.joinable(kept_key, probed)
                if joined is not None:  # the same read is running: its answer, if still current
                    try:
                        shared = await asyncio.shield(joined)
                    except asyncio.CancelledError:
                        if not joined.cancelled():
                            raise
                    else:
                        if self._answers.still(kept_key, probed):
                            return shared, None
            reading = self._answers.reading(kept_key, probed) if kept_key is not None else None
            shared_key = self._waiting.key(name, params, conn.scopes) if name in SHARED_READS else None
            if shared_key is not None:
                waiting = self._waiting.join(shared_key, ctx.config)
                if waiting is not None:  # an identical read not started yet: its answer is this one's
                    if self._trace is not None:
                        self._trace.mark(self._trace.current(), "join")
                    try:
                        return await asyncio.shield(waiting), None
                    except asyncio.CancelledError:
                        if not waiting.cancelled():
                            raise
                    shared_key = None  # it gave up before reading: this request reads for itself
            waiting = self._waiting.wait(shared_key, ctx.config) if shared_key is not None else None
            result: Any = None
            answered = False  # a cancelled await leaves ctx.reuse set with no result: never shared
            try:
                async with self._reads:  # a read builds its whole response in memory: a few at a time
                    if self._batches_running:
                        await self._no_batch.wait()
                    if waiting is not None:  # started: from here on it could miss a joiner's writes
                        self._waiting.started(shared_key, waiting)
                    if conn.ws.slow or conn.ws.state is not State.OPEN:
                        raise protocol.RequestError(
                            protocol.UNAVAILABLE, "connection closed"
                        )  # nobody to answer
                    if self._trace is None:
                        result = await loop.run_in_executor(self._pool, method.run, ctx, params)
                    else:
                        rec = self._trace.current()
                        self._trace.mark(rec, "rin")
                        run = self._trace.timed([rec] if rec else [], method.run, ctx, params)
                        result = await loop.run_in_executor(self._pool, run)
                    answered = True
            finally:
                if kept_key is not None:
                    self._answers.done_reading(kept_key, reading, result, not answered or ctx.reuse is None)
                if waiting is not None:
                    self._waiting.done(shared_key, waiting, result, answered)
            if kept_key is not None:
                self._answers.after(kept_key, ctx.config, ctx.reuse, probed, result)
            if name == "sessions.subscribe":
                conn.subscribed = True
                if conn in self.connections:  # not one closed while this request ran
                    self._subscribers.add(conn)
            return result, None
        operation = events.operation_start(ctx, name, params, self.clock())  # session.operation
        if operation is not None:
            self._broadcast_subscribed(protocol.EVENT_SESSION_OPERATION, operation)
        self._writes_inflight += 1
        self._writes_idle.clear()
        try:
            keys = write_keys(ctx, name, params)
            if method.batch is not None and keys is not None:
                result, prior = await self._batched(method, keys, params), dict[str, Any]()
            else:
                async with self.writers.hold(keys):
                    result, prior = await loop.run_in_executor(self._pool, self._write, ctx, method, params)
        except BaseException as exc:
            if operation is not None and not isinstance(exc, asyncio.CancelledError):
                end = events.operation_end(operation, None, _error_of(exc).message, self.clock())
                self._broadcast_subscribed(protocol.EVENT_SESSION_OPERATION, end)
            raise
        finally:
            self._writes_inflight -= 1
            self._writes_done += 1
            self._last_write = time.monotonic()
            if self._writes_inflight == 0:
                self._writes_idle.set()
        if operation is not None:
            end = events.operation_end(operation, result, None, self.clock())
            self._broadcast_subscribed(protocol.EVENT_SESSION_OPERATION, end)
        return result, _Committed(ctx, method, params, result, prior)

    async def _long_read(self, conn: Connection, name: str, params: dict[str, Any], ctx: Context) -> Any:
        from openclaw_cli.gateway.readers import ReaderFailed

        if conn.ws.slow or conn.ws.state is not State.OPEN:
            raise protocol.RequestError(protocol.UNAVAILABLE, "connection closed")  # nobody to answer
        t0 = self._trace.now() if self._trace is not None else 0.0
        self._serving -= 1  # waiting for another process: a collection here holds nothing up
        try:
            return await self._readers.run(self.paths, name, params, ctx.now_ms())
        except ReaderFailed as failed:
            if failed.trace:
                self._log(f"[gateway] {name} failed (reader process):\n{failed.trace}")
            raise failed.error from None
        finally:
            self._serving += 1
            if self._trace is not None:
                self._trace.event("long", t0, m=name)

    async def _announced(self, committed: _Committed) -> list[dict[str, Any]]:
        """The `sessions.changed` payloads of a committed write; none read when no connection is
        subscribed."""
        if not self._subscribers:
            return []
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._changes, *committed)

    async def _batched(self, method: Method, keys: list[str], params: dict[str, Any]) -> Any:
        """Group commit: a request joins the queue of its method and stores; one drain per queue
        takes everything waiting (up to BATCH_MAX), holds the stores' writer once and runs the
        method's batch handler, so N concurrent patches of one store cost one open and one
        commit instead of N, in arrival order (FIFO with the store's other writers)."""
        loop = asyncio.get_running_loop()
        queue_key = (method.name, tuple(keys))
        queue = self._batches.setdefault(queue_key, [])
        future: asyncio.Future[Any] = loop.create_future()
        rec = None
        if self._trace is not None:
            rec = self._trace.current()
            self._trace.mark(rec, "enq")
        queue.append((dict(params), future, rec))
        if queue_key not in self._draining:
            self._draining.add(queue_key)
            task = loop.create_task(self._drain(method, keys, queue_key))
            self._background_writes.add(task)
            task.add_done_callback(self._background_writes.discard)
        return await future

    async def _drain(self, method: Method, keys: list[str], queue_key: tuple[str, tuple[str, ...]]) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._batches.get(queue_key):
                queue = self._batches[queue_key]
                batch = queue[:BATCH_MAX]
                del queue[:BATCH_MAX]
                try:
                    async with self.writers.hold(keys), self._batch_running():
                        ctx, requests = self._context(), [params for params, _, _ in batch]
                        if self._trace is None:
                            outcomes = await loop.run_in_executor(self._pool, method.run_batch, ctx, requests)
                        else:
                            recs = [rec for _, _, rec in batch if rec is not None]
                            held, number = self._trace.now(), self._trace.batch()
                            for rec in recs:
                                rec.update(held=held, n=len(batch), b=number)
                            run = self._trace.timed(recs, method.run_batch, ctx, requests)
                            outcomes = await loop.run_in_executor(self._pool, run)
                except BaseException as exc:  # the whole batch failed (not one refused request)
                    outcomes = [exc] * len(batch)
                for (_, future, _), outcome in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self._draining.discard(queue_key)
            if not self._batches.get(queue_key):
                self._batches.pop(queue_key, None)

    @asynccontextmanager
    async def _batch_running(self) -> AsyncIterator[None]:
        """A group commit's handler is running: reads wait for it before they start."""
        self._batches_running += 1
        self._no_batch.clear()
        try:
            yield
        finally:
            self._batches_running -= 1
            if not self._batches_running:
                self._no_batch.set()

    @staticmethod
    def _write(ctx: Context, method: Method, params: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        prior = events.before(ctx, method, params)
        return method.run(ctx, dict(params)), prior

    @staticmethod
    def _changes(
        ctx: Context, method: Method, params: dict[str, Any], result: Any, prior: dict[str, Any]
    ) -> list[dict[str, Any]]:
        try:
            return events.after(ctx, method, params, result, prior)
        except OpenClawError:
            return []  # the write committed; a failed event read must not turn it into an error

    def _broadcast_changes(self, changes: list[dict[str, Any]]) -> None:
        """Each change to every subscribed connection (an `activity-summary` to every connection
        that may read, as OpenClaw's): the payload encoded once, each connection's `seq` spliced in
        (the bytes `send_event` would write)."""
        subscribed = list(self._subscribers)
        readers: list[Connection] | None = None
        for payload in changes:
            targets = subscribed
            if payload.get("reason") == events.ACTIVITY_SUMMARY:
                if readers is None:
                    readers = [c for c in self.connections if c.scopes and satisfied(READ, c.scopes)]
                targets = readers
            if not targets:
                continue
            body = dumps_bytes(payload)
            for conn in targets:
                conn.seq += 1
                conn.ws.post(event_frame(protocol.EVENT_SESSIONS_CHANGED, body, conn.seq))

    def _broadcast_config_changed(self, path: Path) -> None:
        """OpenClaw's `config.changed {path, hash, ts}` (recorded after agents.delete rewrote the
        file), when the config file is seen changed — by this Gateway's own write or an operator's
        edit: after every committed write, on each request and on the health schedule. `hash` is
        config.get's (`sha256:` of the file's bytes); to every connection that may read."""
        import hashlib

        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        payload = {
            "path": str(path),
            "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
            "ts": self.clock(),
        }
        for conn in list(self.connections):
            if conn.scopes and satisfied(READ, conn.scopes):
                conn.send_event(protocol.EVENT_CONFIG_CHANGED, payload)

    def _broadcast_subscribed(self, event: str, payload: dict[str, Any]) -> None:
        for conn in list(self._subscribers):
            conn.send_event(event, payload)

    def _presence_list(self) -> list[dict[str, Any]]:
        from openclaw_cli.ops.gateway_reads import system_presence

        return system_presence(self._context(), {})

    def _broadcast_presence(self) -> None:
        """OpenClaw's `presence` event: the whole list, to every connection that may read it."""
        try:
            payload = {"presence": self._presence_list()}
        except OpenClawError:  # a config that cannot be read now: the next change tells
            return
        version = {"presence": self.presence.version, "health": self._health_version}
        for conn in list(self.connections):
            if conn.scopes and satisfied(READ, conn.scopes):
                conn.send_event(protocol.EVENT_PRESENCE, payload, state_version=version)

    # ---- periodic events -----------------------------------------------------------------------------------
    async def _tick_loop(self) -> None:
        interval = self.options.tick_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            payload = events.tick(self.clock())
            for conn in list(self.connections):
                conn.send_event(protocol.EVENT_TICK, payload)

    async def _keepalive_loop(self) -> None:
        """A ping per connection on this timer (not websockets', whose ping waits behind a send the
        peer does not read). A ping gets two rounds, like OpenClaw's 25 s to write it and 25 s for
        the pong (a client reading a large response on a slow link answers late, not never); a
        connection whose ping is still unanswered then is cut."""
        interval = self.options.limits.keepalive_interval_s
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            for conn in list(self.connections):
                if conn.ping is not None and not conn.ping.done():
                    conn.missed += 1
                    if conn.missed < 2:
                        continue
                    self._burst_log(
                        f"keepalive:{conn.ws.peer_ip}",
                        f"[gateway] no pong within {2 * interval:g} s: closing conn={conn.conn_id} "
                        f"peer={conn.ws.peer_ip}",
                    )
                    conn.ws.transport.abort()
                    continue
                conn.missed = 0
                conn.ping = loop.create_task(self._ping(conn.ws))

    @staticmethod
    async def _ping(ws: GatewayConnection) -> None:
        try:
            pong = await ws.ping()
            await pong
        except (ConnectionClosed, asyncio.CancelledError, RuntimeError):
            pass

    def _quiet_checked(self) -> None:
        self._quiet_check = None
        self._collect_if_idle()

    def _collect_if_idle(self) -> None:
        if self._collector is None:
            return
        t0 = self._trace.now() if self._trace is not None else 0.0
        if self._collector.maybe_collect(busy=self._serving > 0) and self._trace is not None:
            self._trace.event("gcfull", t0, serving=self._serving)

    async def _gc_loop(self) -> None:
        """A full collection owed, at a moment with nothing served (or after `DEFER_MAX_S`)."""
        while True:
            await asyncio.sleep(GC_TICK_S)
            self._collect_if_idle()

    async def _checkpoint_loop(self) -> None:
        """WAL checkpoints between requests, not inside a commit (see `checkpoint_live_databases`)."""
        from openclaw_cli.store.sqlite_common import checkpoint_live_databases

        loop = asyncio.get_running_loop()
        done = 0
        pending = 0.0  # when a look first found writes not yet copied
        while True:
            await asyncio.sleep(CHECKPOINT_INTERVAL_S)
            if self._writes_done != done:
                now = time.monotonic()
                pending = pending or now
                if not checkpoint_due(
                    pending_s=now - pending,
                    quiet_s=now - self._last_write,
                    writing=self._writes_inflight > 0,
                ):
                    continue
                done, pending = self._writes_done, 0.0
                t0 = self._trace.now() if self._trace is not None else 0.0
                await loop.run_in_executor(self._pool, checkpoint_live_databases)
                if self._trace is not None:
                    self._trace.event("ckpt", t0)

    async def _send_health(self, conn: Connection) -> None:
        from openclaw_cli.ops.session_views import health

        if self._health is None:
            try:
                loop = asyncio.get_running_loop()
                self._health = await loop.run_in_executor(self._pool, health, self._context(), {})
                self._health_version += 1
            except Exception as exc:  # reported by the next scheduled refresh
                self._log(f"[gateway] health refresh failed: {exc}")
                return
        version = {"presence": self.presence.version, "health": self._health_version}
        conn.send_event(protocol.EVENT_HEALTH, self._health, state_version=version)

    async def _health_loop(self) -> None:
        from openclaw_cli.ops.session_views import health

        loop = asyncio.get_running_loop()
        interval = self.options.health_interval_ms / 1000
        while True:
            t0 = self._trace.now() if self._trace is not None else 0.0
            try:
                self._health = await loop.run_in_executor(self._pool, health, self._context(), {})
                self._health_version += 1
            except Exception as exc:  # a store that cannot be read now: keep serving, report next time
                self._log(f"[gateway] health refresh failed: {exc}")
            else:
                version = {"presence": self.presence.version, "health": self._health_version}
                for conn in list(self.connections):
                    conn.send_event(protocol.EVENT_HEALTH, self._health, state_version=version)
            if self._trace is not None:
                self._trace.event("health", t0)
            await asyncio.sleep(interval)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, burst_log: BurstLog) -> None:
    """asyncio logs every failed accept (EMFILE: out of descriptors) with a traceback and retries a
    second later; under a connection flood that is megabytes of tracebacks. One line per burst
    instead; every other loop error goes to the handler that was there."""
    previous = loop.get_exception_handler()

    def handler(loop_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        message = str(context.get("message", ""))
        if message.startswith("socket.accept() out of system resource") and isinstance(exc, OSError):
            burst_log(
                "accept",
                f"[gateway] cannot accept connections now: {exc.strerror or exc} "
                "(retrying every second; raise `ulimit -n` or lower the connection limits)",
            )
            return
        if isinstance(exc, (ValueError, OSError)) and _accept_retry_after_close(context.get("handle")):
            return  # the Gateway closed its socket while asyncio's accept retry was pending
        if previous is not None:
            previous(loop_, context)
        else:
            loop_.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _accept_retry_after_close(handle: object) -> bool:
    """Whether a failed callback is asyncio's accept retry (`_start_serving`, scheduled a second
    after an EMFILE) for a listening socket closed meanwhile: the Gateway stopped in that second,
    there is nothing left to serve, and asyncio would print a traceback for it."""
    import socket

    callback = getattr(handle, "_callback", None)
    if getattr(callback, "__name__", "") != "_start_serving":
        return False
    return any(
        isinstance(arg, socket.socket) and arg.fileno() == -1 for arg in getattr(handle, "_args", ()) or ()
    )
