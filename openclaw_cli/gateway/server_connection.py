"""The server's WebSocket connection: admission (connection caps), writes that never wait for the
peer, the slow-consumer close, and quiet failure once the peer is gone.

Every frame is written with `post()`, synchronously: into the socket's buffer or, when the peer
has left `limits.max_buffered_bytes` unread, not at all — the connection is closed 1008 "slow
consumer" (a close frame, then the socket cut after `CLOSE_GRACE_S`), as OpenClaw does. Nothing in
the Gateway awaits a peer's reading, so one stuck client cannot hold a broadcast, a tick or
another client's response (issue 29, finding 2).
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State

from openclaw_cli.gateway import protocol
from openclaw_cli.gateway.limits import CLOSE_GRACE_S, BurstLog, Limits, descriptor_budget, normalize_ip


class ConnectionBook:
    """Who is connected: every TCP connection from accept to close, and those of each peer
    address that have not authenticated yet. Decides admission."""

    def __init__(self, limits: Limits, burst_log: BurstLog) -> None:
        self.limits = limits
        budget = descriptor_budget()
        self.max_connections = min(limits.max_connections, budget) if budget else limits.max_connections
        self.open: set[GatewayConnection] = set()
        self.preauth: Counter[str] = Counter()
        self.log = burst_log

    def admit(self, conn: GatewayConnection) -> bool:
        ip = conn.peer_ip
        if len(self.open) >= self.max_connections:
            self.log(
                "connections-full",
                f"[gateway] refusing connections: {len(self.open)} open, the limit is {self.max_connections}",
            )
            return False
        if self.preauth[ip] >= self.limits.max_preauth_per_ip:
            self.log(
                f"preauth:{ip}",
                f"[gateway] refusing connections from {ip}: "
                f"{self.preauth[ip]} not yet authenticated (limit {self.limits.max_preauth_per_ip})",
            )
            return False
        self.open.add(conn)
        self.preauth[ip] += 1
        return True

    def authenticated(self, conn: GatewayConnection) -> None:
        if conn in self.open and not conn.authenticated:
            conn.authenticated = True
            self._drop_preauth(conn.peer_ip)

    def closed(self, conn: GatewayConnection) -> None:
        if conn in self.open:
            self.open.discard(conn)
            if not conn.authenticated:
                self._drop_preauth(conn.peer_ip)

    def _drop_preauth(self, ip: str) -> None:
        self.preauth[ip] -= 1
        if self.preauth[ip] <= 0:
            del self.preauth[ip]

    def total_buffered(self) -> int:
        return sum(c.buffered() for c in self.open)


def _text_header(size: int) -> bytes:
    """RFC 6455's header of an unmasked, final text frame of `size` bytes."""
    if size < 126:
        return bytes((0x81, size))
    if size < 1 << 16:
        return _SHORT.pack(0x81, 126, size)
    return _LONG.pack(0x81, 127, size)


_SHORT = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


class GatewayConnection(ServerConnection):
    """websockets' server connection with the Gateway's admission, output cap and quiet failure.
    `book` is set on the subclass `serve()` gets (one per Gateway)."""

    book: ConnectionBook

    def __init__(self, protocol_: Any, *args: Any, **kwargs: Any) -> None:
        fail = protocol_.fail

        def fail_quietly(code: int, reason: str = "") -> None:
            # an oversized pre-auth frame: 1009 with an empty reason, as OpenClaw (refused from its header)
            fail(code, "" if code == protocol.CLOSE_TOO_BIG else reason)

        protocol_.fail = fail_quietly
        super().__init__(protocol_, *args, **kwargs)
        self.peer_ip = "unknown"
        self.peer_port: int | None = None
        self.authenticated = False
        self.slow = False
        self.admitted = False
        self.on_slow: Callable[[GatewayConnection], object] | None = None

    # ---- admission -------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self.peer_ip = normalize_ip(peer[0] if isinstance(peer, tuple) and peer else None)
        self.peer_port = peer[1] if isinstance(peer, tuple) and len(peer) > 1 else None
        self.admitted = self.book.admit(self)
        if not self.admitted:
            cast(
                asyncio.Transport, transport
            ).abort()  # frees the descriptor now; websockets' handler sees the lost connection

    def connection_lost(self, exc: Exception | None) -> None:
        if self.admitted:
            self.book.closed(self)
        super().connection_lost(exc)

    # ---- output ----------------------------------------------------------------------------------------
    def buffered(self) -> int:
        """Bytes written but not yet taken by the peer's socket (our side of `bufferedAmount`)."""
        try:
            return self.transport.get_write_buffer_size()
        except (AttributeError, RuntimeError):
            return 0

    def cap(self) -> int:
        limits = self.book.limits
        return limits.max_buffered_bytes if self.authenticated else limits.preauth_max_buffered_bytes

    def post(self, data: bytes) -> bool:
        """Write one text frame now, or close the connection as a slow consumer when it would
        leave more than its cap unread. False when the frame was not written."""
        if self.slow or self.protocol.state is not State.OPEN:
            return False
        size = len(data)
        if self.buffered() + size > self.cap():
            self.close_slow()
            return False
        if size > 1 << 20 and self.book.total_buffered() + size > self.book.limits.max_total_buffered_bytes:
            # all connections together hold too much: the one holding most goes first
            largest = max(self.book.open, key=lambda c: c.buffered(), default=self)
            largest.close_slow()
            if largest is self or self.buffered() + size > self.cap():
                return False
        proto = self.protocol
        if proto.extensions or proto.expect_continuation_frame or proto.writes or proto.debug:
            proto.send_text(data)  # websockets' own path (never taken by this server's connections)
            self.send_data()
            return True
        # the frame websockets' `send_text` + `send_data` would write (a server's frames are not
        # masked; no extension is negotiated: compression=None), in one write without its
        # Frame object, BytesIO and event list: ~10 % of the loop's CPU per answer (issue 30)
        if not self.transport.is_closing():
            self.transport.write(_text_header(size) + data)
        if self.buffered() > self.cap():
            self.close_slow()
        return True

    def close_slow(self) -> None:
        """OpenClaw's slow-consumer close: 1008 "slow consumer", the socket cut after the grace."""
        if self.slow:
            return
        self.slow = True
        if self.on_slow is not None:
            self.on_slow(self)
        try:
            if self.protocol.state is State.OPEN:
                self.protocol.send_close(protocol.CLOSE_POLICY, protocol.SLOW_CONSUMER_REASON)
                self.send_data()
        finally:
            self.loop.call_later(CLOSE_GRACE_S, self.transport.abort)

    def send_data(self) -> None:
        """websockets' `send_data`, in one write, and silent once the peer is gone: a burst of
        5,000 pings gave 5,000 pongs, each a write into the lost socket that asyncio logs
        ("socket.send() raised exception."); what the protocol queued then is dropped."""
        pending: list[bytes] = []
        for data in self.protocol.data_to_send():
            if data:
                pending.append(data)
                continue
            self._write(pending)  # b"": the protocol's end of stream after a close
            pending = []
            if not self.transport.is_closing():
                if self.transport.can_write_eof():
                    try:
                        self.transport.write_eof()
                    except (
                        Exception
                    ):  # as websockets: write_eof() documents no exception; OSError is plausible
                        pass
                else:
                    self.transport.close()
        self._write(pending)
        if not self.slow and self.buffered() > self.cap():
            self.close_slow()  # e.g. pongs piling up for a client that pings and never reads

    def _write(self, chunks: list[bytes]) -> None:
        if chunks and not self.transport.is_closing():
            self.transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
