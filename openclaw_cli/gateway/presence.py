"""Who is connected, as OpenClaw 2026.9.6's Gateway tells it (`system-presence`, the hello-ok
`snapshot.presence` and the `presence` event; recorded: tests/fixtures/gateway-2026.9.6-presence).

A connection that stays (any client mode but `cli`, `backend` and `probe`, which OpenClaw counts
as ephemeral) gets an entry on connect — `{clientId, mode, onlineSince, roles, ts, text, host,
version, platform, …, reason: "connect"}` — and keeps it, `reason: "disconnect"`, for five minutes
after it leaves; each change bumps the presence version and is broadcast as `{presence: [the
Gateway's own entry, then the clients', newest first]}` with `stateVersion {presence, health}`.
OpenClaw's entries also name the operator's user profile (`user`): we hold no identities, so ours
have none; a loopback client's `ip` is left out, as OpenClaw leaves a local client's out.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL_MODES = frozenset({"cli", "backend", "probe"})
TTL_MS = 300_000  # a departed client's entry is listed this long (OpenClaw's TTL)
MAX_ENTRIES = 200
_OPTIONAL = ("deviceFamily", "modelIdentifier", "timeZone")


class PresenceBook:
    def __init__(self) -> None:
        self.version = 1
        self._entries: dict[str, dict[str, Any]] = {}  # connId -> entry

    @staticmethod
    def tracked(client: dict[str, Any]) -> bool:
        return client.get("mode") not in EPHEMERAL_MODES

    def connected(self, conn_id: str, client: dict[str, Any], ip: str | None, now: int) -> bool:
        """Record a connection that stays; True when the book changed (then broadcast)."""
        if not self.tracked(client):
            return False
        mode = client.get("mode") or "unknown"
        entry: dict[str, Any] = {
            "clientId": client.get("id"),
            "mode": mode,
            "onlineSince": now,
            "roles": ["operator"],
            "ts": now,
            # OpenClaw's first registration has no host yet, and the text it writes then is kept
            "text": f"Node: unknown · mode {mode}",
            "host": client.get("displayName") or client.get("id"),
        }
        if ip and not _loopback(ip):
            entry["ip"] = ip
        entry["version"] = client.get("version")
        entry["platform"] = client.get("platform")
        for name in _OPTIONAL:
            if client.get(name):
                entry[name] = client[name]
        if client.get("instanceId"):
            entry["instanceId"] = client["instanceId"]
        entry["reason"] = "connect"
        self._prune(now)
        self._entries[conn_id] = entry
        self.version += 1
        return True

    def disconnected(self, conn_id: str, now: int) -> bool:
        entry = self._entries.get(conn_id)
        if entry is None:
            return False
        entry["ts"] = now
        entry["reason"] = "disconnect"
        self.version += 1
        return True

    def _prune(self, now: int) -> None:
        for conn_id, entry in list(self._entries.items()):
            if entry["reason"] == "disconnect" and now - entry["ts"] > TTL_MS:
                del self._entries[conn_id]

    def clients(self, now: int) -> list[dict[str, Any]]:
        """The clients' entries, newest first, departed ones past the TTL left out (a read: any
        thread may ask; the event loop alone changes the book)."""
        live = [
            e for e in list(self._entries.values()) if e["reason"] == "connect" or now - e["ts"] <= TTL_MS
        ]
        return [dict(e) for e in sorted(live, key=lambda e: -e["ts"])[:MAX_ENTRIES]]


def _loopback(ip: str) -> bool:
    return ip in ("::1", "localhost") or ip.startswith("127.") or ip.startswith("::ffff:127.")
