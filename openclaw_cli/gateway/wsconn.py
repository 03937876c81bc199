"""A WebSocket client connection driven entirely in the calling thread: websockets' Sans-I/O
`ClientProtocol` over a socket we read and write ourselves.

Why not websockets' sync client: it reads the socket in a background thread while the calling
thread writes. On a TLS socket that means OpenSSL's SSL_read and SSL_write on one SSL object at
once, which OpenSSL does not support (openssl/openssl#20446). The TLS 1.3 session tickets a server
sends right after the handshake are processed inside SSL_read while our upgrade request is being
written, and now and then the upgrade never completes (a timeout; see docs/decisions.md
"Gateway client: TLS 1.3 tickets"). Here every read and write happens in one thread, in order.

The wire is what the sync client sent: the same upgrade request (Host, permessage-deflate offer,
our User-Agent), masked frames, automatic pongs, a close frame and then waiting for the server to
close the TCP connection. Deadlines are absolute `time.monotonic()` values; `TimeoutError` when
one passes, `Closed` when the connection ends, `OSError` from the socket otherwise.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidMessage
from websockets.extensions.permessage_deflate import enable_client_permessage_deflate
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

RECV_BYTES = 65536
_DATA_OPCODES = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)


class Closed(Exception):
    """The connection ended: the server's close code and reason (1006 and "" without a close frame)."""

    def __init__(self, code: int, reason: str):
        super().__init__(f"closed ({code}): {reason}")
        self.code = code
        self.reason = reason


class ClientWebSocket:
    """One client connection over a connected (and, for wss://, TLS-handshaken) socket."""

    def __init__(self, sock: socket.socket, url: str, *, user_agent: str, max_size: int):
        self.sock = sock
        self.protocol = ClientProtocol(
            parse_uri(url), extensions=enable_client_permessage_deflate(None), max_size=max_size
        )
        self.user_agent = user_agent
        self._frames: deque[Frame] = deque()
        self._eof = False

    # ---- the opening handshake ----------------------------------------------------------------

    def handshake(self, deadline: float) -> None:
        """Send the upgrade request and read the response; raises websockets' `InvalidHandshake`
        (`InvalidStatus` for a non-101 answer), `TimeoutError` or `OSError`."""
        request = self.protocol.connect()
        request.headers["User-Agent"] = self.user_agent
        self.protocol.send_request(request)
        self._flush(deadline)
        while True:
            for event in self.protocol.events_received():
                if isinstance(event, Response):
                    if self.protocol.handshake_exc is not None:
                        raise self.protocol.handshake_exc
                    continue
                self._frames.append(cast(Frame, event))  # frames that came in the same read as the response
            if self.protocol.handshake_exc is not None:
                raise self.protocol.handshake_exc
            if self.protocol.state is not State.CONNECTING:
                return
            if self._eof:
                raise InvalidMessage("connection closed before the WebSocket upgrade response")
            self._read(deadline)

    # ---- messages -----------------------------------------------------------------------------

    def recv(self, deadline: float) -> bytes:
        """The next whole text or binary message (fragments joined); control frames are handled
        by the protocol (pongs sent, the close echoed)."""
        parts: list[bytes] = []
        while True:
            while self._frames:
                frame = self._frames.popleft()
                if frame.opcode in _DATA_OPCODES:
                    parts.append(bytes(frame.data))
                    if frame.fin:
                        return b"".join(parts)
            if self.protocol.state is not State.OPEN:
                raise self._closed()
            self._read(deadline)
            self._frames.extend(e for e in self.protocol.events_received() if isinstance(e, Frame))

    def send_text(self, data: bytes, deadline: float) -> None:
        if self.protocol.state is not State.OPEN:
            raise self._closed()
        self.protocol.send_text(data)
        self._flush(deadline)

    def close(self, timeout: float) -> None:
        """A close frame without a status code (1005, as OpenClaw's CLI sends), then wait up to
        `timeout` s for the server to close the TCP connection; the socket is closed in any case."""
        deadline = time.monotonic() + timeout
        try:
            if self.protocol.state is State.OPEN:
                self.protocol.send_close()
                self._flush(deadline)
            while not self._eof and self.protocol.state is not State.CLOSED:
                self._read(deadline)
                self.protocol.events_received()
        except (OSError, TimeoutError, Closed):
            pass
        finally:
            self.sock.close()

    # ---- I/O ----------------------------------------------------------------------------------

    def _closed(self) -> Closed:
        rcvd = self.protocol.close_rcvd
        return Closed(rcvd.code, rcvd.reason) if rcvd is not None else Closed(1006, "")

    def _read(self, deadline: float) -> None:
        if self._eof:
            raise self._closed()
        self.sock.settimeout(_left(deadline))
        try:
            data = self.sock.recv(RECV_BYTES)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if data:
            self.protocol.receive_data(data)
        else:
            self._eof = True
            self.protocol.receive_eof()
        self._flush(deadline)

    def _flush(self, deadline: float) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.settimeout(_left(deadline))
                self.sock.sendall(data)
            else:  # the protocol's end of stream: half-close
                try:
                    self.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left
