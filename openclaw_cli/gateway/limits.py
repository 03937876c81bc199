"""What one Gateway process lets clients hold at once, and the throttle on failed auth (issue 29;
the figures and why: docs/decisions.md, "Issue 29: Gateway hardening").

- connections: every TCP connection counts from accept to close; beyond `max_connections` (and
  never more than the descriptors RLIMIT_NOFILE leaves) a new one is closed at once, and one peer
  address holds at most `max_preauth_per_ip` connections that have not authenticated (OpenClaw's
  32, same env override);
- requests: `per_connection_inflight` per connection, `total_inflight` in all, reads (which build
  whole responses in memory) `parallel_reads` at a time;
- output: a connection's unsent bytes are capped at the advertised `maxBufferedBytes` (then it is
  closed 1008 "slow consumer", as OpenClaw does), all connections' together at `total_buffered`;
- failed auth: per peer address, OpenClaw's policy (10 failures in 60 s lock a remote address out
  for 5 min; loopback is never locked out but each failure is answered after a delay doubling from
  250 ms to 5 s), logged once per burst.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from openclaw_cli.gateway import protocol

MAX_CONNECTIONS = 512
MAX_PREAUTH_PER_IP = 32  # OpenClaw's DEFAULT_MAX_PREAUTH_CONNECTIONS_PER_IP
PER_CONNECTION_INFLIGHT = 8
TOTAL_INFLIGHT = 64
PARALLEL_READS = 2
MAX_TOTAL_BUFFERED_BYTES = 256 * 1024 * 1024
PREAUTH_MAX_BUFFERED_BYTES = 1024 * 1024  # a client that has not authenticated gets little more than pongs
KEEPALIVE_INTERVAL_S = 25.0  # OpenClaw's: a ping every 25 s; one not answered by the next is a dead peer
CLOSE_GRACE_S = 1.0  # OpenClaw's WEBSOCKET_CLOSE_GRACE_MS: a close frame's chance before the socket is cut
FD_RESERVE = (
    32  # descriptors kept for the stores, logs and worker threads when RLIMIT_NOFILE caps connections
)

AUTH_MAX_ATTEMPTS = 10
AUTH_WINDOW_S = 60.0
AUTH_LOCKOUT_S = 300.0
LOOPBACK_DELAY_BASE_S = 0.25
LOOPBACK_DELAY_MAX_S = 5.0
AUTH_MAX_TRACKED = 10_000  # peer addresses remembered at once (older, unlocked ones are forgotten first)

ENV_MAX_PREAUTH = "OPENCLAW_MAX_PREAUTH_CONNECTIONS_PER_IP"
ENV_MAX_CONNECTIONS = "OPENCLAW_GATEWAY_MAX_CONNECTIONS"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else default


def descriptor_budget() -> int | None:
    """Connections the soft RLIMIT_NOFILE leaves room for (the descriptors open now and a reserve
    subtracted); None when it cannot be read."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        in_use = len(os.listdir("/proc/self/fd"))
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    return max(1, soft - in_use - FD_RESERVE)


@dataclass(frozen=True)
class Limits:
    max_connections: int = MAX_CONNECTIONS
    max_preauth_per_ip: int = MAX_PREAUTH_PER_IP
    per_connection_inflight: int = PER_CONNECTION_INFLIGHT
    total_inflight: int = TOTAL_INFLIGHT
    parallel_reads: int = PARALLEL_READS
    max_buffered_bytes: int = protocol.MAX_BUFFERED_BYTES
    max_total_buffered_bytes: int = MAX_TOTAL_BUFFERED_BYTES
    preauth_max_buffered_bytes: int = PREAUTH_MAX_BUFFERED_BYTES
    keepalive_interval_s: float = KEEPALIVE_INTERVAL_S

    @classmethod
    def from_env(cls, **overrides: object) -> Limits:
        """The defaults, OpenClaw's env override of the pre-auth cap and ours of the connection cap."""
        values: dict[str, object] = {
            "max_preauth_per_ip": _env_int(ENV_MAX_PREAUTH, MAX_PREAUTH_PER_IP),
            "max_connections": _env_int(ENV_MAX_CONNECTIONS, MAX_CONNECTIONS),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.startswith("127.") or ip == "localhost"


def normalize_ip(ip: str | None) -> str:
    if not ip:
        return "unknown"
    return ip[7:] if ip.startswith("::ffff:") else ip


class BurstLog:
    """One log line per key and burst: the first event logs, the next ones within `quiet_s` of
    each other are counted, and the first after a quiet spell logs with how many were held back."""

    def __init__(
        self, log: Callable[[str], None], quiet_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = log
        self._quiet = quiet_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def __call__(self, key: str, text: str) -> bool:
        now = self._clock()
        last = self._last.get(key)
        self._last[key] = now
        if last is not None and now - last < self._quiet:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._log(text + (f" ({held} more like it before this burst)" if held else ""))
        if len(self._last) > AUTH_MAX_TRACKED:
            cutoff = now - self._quiet
            for k in [k for k, t in self._last.items() if t < cutoff]:
                self._last.pop(k, None)
        return True

    def held(self, key: str) -> int:
        return self._held.get(key, 0)


@dataclass
class _Attempts:
    times: list[float] = field(default_factory=list)
    locked_until: float = 0.0


class AuthThrottle:
    """Failed shared-secret attempts per peer address (OpenClaw's auth-rate-limit policy)."""

    def __init__(self, *, exempt_loopback: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.exempt_loopback = exempt_loopback
        self._clock = clock
        self._entries: dict[str, _Attempts] = {}

    def _exempt(self, ip: str) -> bool:
        return self.exempt_loopback and is_loopback(ip)

    def _refresh(self, entry: _Attempts, now: float) -> None:
        if entry.locked_until and now >= entry.locked_until:
            entry.locked_until = 0.0
            entry.times.clear()
        entry.times[:] = [t for t in entry.times if t > now - AUTH_WINDOW_S]

    def retry_after_ms(self, ip: str) -> int | None:
        """Milliseconds until `ip` may try again, or None when it may try now."""
        if self._exempt(ip):
            return None
        entry = self._entries.get(ip)
        if entry is None:
            return None
        now = self._clock()
        self._refresh(entry, now)
        if not entry.locked_until and len(entry.times) >= AUTH_MAX_ATTEMPTS:
            entry.locked_until = now + AUTH_LOCKOUT_S
        if entry.locked_until and now < entry.locked_until:
            return max(1, int((entry.locked_until - now) * 1000))
        return None

    def failed(self, ip: str) -> float:
        """Record a failure; the seconds to wait before answering it (loopback's back-off, else 0)."""
        now = self._clock()
        entry = self._entries.get(ip)
        if entry is None:
            self._forget_some(now)
            entry = self._entries[ip] = _Attempts()
        self._refresh(entry, now)
        entry.times.append(now)
        if self._exempt(ip):
            history = 1 + int(LOOPBACK_DELAY_MAX_S / LOOPBACK_DELAY_BASE_S).bit_length()
            del entry.times[:-history]
            return float(min(LOOPBACK_DELAY_BASE_S * 2 ** (len(entry.times) - 1), LOOPBACK_DELAY_MAX_S))
        if len(entry.times) >= AUTH_MAX_ATTEMPTS:
            entry.locked_until = now + AUTH_LOCKOUT_S
        return 0.0

    def succeeded(self, ip: str) -> None:
        self._entries.pop(ip, None)

    def _forget_some(self, now: float) -> None:
        if len(self._entries) < AUTH_MAX_TRACKED:
            return
        for ip, entry in list(self._entries.items()):
            self._refresh(entry, now)
            if not entry.locked_until and not entry.times:
                del self._entries[ip]
        if len(self._entries) >= AUTH_MAX_TRACKED:  # all busy: drop the oldest unlocked one
            for ip, entry in self._entries.items():
                if not entry.locked_until:
                    del self._entries[ip]
                    break
