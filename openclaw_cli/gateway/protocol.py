"""OpenClaw's Gateway protocol 4 as both halves speak it (observed-openclaw-2026.9.6.md §8, the
recorded frames in fixtures/gateway-2026.9.6): frame shapes, the error envelope, close codes,
limits and the client identities a `connect` may carry. The server (`gateway.server`) and the
client (`gateway.client`) import these names; neither spells a literal of its own.

Frames are JSON text: request `{type:"req", id, method, params}`, response
`{type:"res", id, ok, payload | error:{code, message, details?, retryable?, retryAfterMs?}}`,
event `{type:"event", event, payload, seq?, stateVersion?}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.ops.scopes import ADMIN, READ, WRITE

__all__ = ["ADMIN", "READ", "WRITE"]  # the operator scopes, defined once in ops.scopes

PROTOCOL_VERSION = 4
# `minProtocol` a probe may send and still be told what we expect (recorded PROTOCOL_MISMATCH details)
MINIMUM_PROBE_PROTOCOL = 3

# Limits (hello-ok `policy`, error-preauth-oversized): frames before a successful connect are cut
# at 64 KiB by the WebSocket layer, before any JSON parsing; afterwards `maxPayload` applies.
PREAUTH_MAX_BYTES = 65_536
MAX_PAYLOAD = 26_214_400
MAX_BUFFERED_BYTES = 52_428_800
TICK_INTERVAL_MS = 30_000
HEALTH_INTERVAL_MS = 60_000
HANDSHAKE_TIMEOUT_S = 15.0  # error-handshake-timeout: closed 1000 after 15.0 s of silence

ROLE_OPERATOR = "operator"
OPERATOR_SCOPES = (ADMIN, READ, WRITE)

# Client identities OpenClaw accepts in `connect.client` (anything else fails the closed schema).
CLIENT_IDS = (
    "webchat-ui",
    "openclaw-control-ui",
    "openclaw-browser-copilot",
    "openclaw-tui",
    "webchat",
    "cli",
    "gateway-client",
    "openclaw-macos",
    "openclaw-linux",
    "openclaw-ios",
    "openclaw-watchos",
    "openclaw-android",
    "node-host",
    "openclaw-worker",
    "test",
    "fingerprint",
    "openclaw-probe",
)
CLIENT_MODES = ("webchat", "cli", "ui", "backend", "node", "worker", "probe", "test")
MODE_PROBE = "probe"  # a probe connection without a device identity gets no scopes (cli-status)

# Error codes (the `error.code` of a failed response).
INVALID_REQUEST = "INVALID_REQUEST"
FORBIDDEN = "FORBIDDEN"
NOT_PAIRED = "NOT_PAIRED"
UNAVAILABLE = "UNAVAILABLE"

# WebSocket close codes the server uses.
CLOSE_NORMAL = 1000  # handshake timeout, non-JSON first frame
CLOSE_GOING_AWAY = 1001  # graceful shutdown
CLOSE_PROTOCOL_ERROR = 1002  # protocol mismatch
CLOSE_POLICY = 1008  # auth failures, invalid connect, request before connect
CLOSE_TOO_BIG = 1009  # pre-auth frame over PREAUTH_MAX_BYTES

# Events we emit.
EVENT_CHALLENGE = "connect.challenge"
EVENT_SESSIONS_CHANGED = "sessions.changed"
EVENT_TICK = "tick"
EVENT_HEALTH = "health"
EVENT_SHUTDOWN = "shutdown"
EVENT_PRESENCE = "presence"
EVENT_SESSION_OPERATION = "session.operation"
EVENT_CONFIG_CHANGED = "config.changed"
CHALLENGE_CAPABILITIES: tuple[str, ...] = ()  # OpenClaw advertises model-catalog-snapshot; we serve none

TOKEN_MISMATCH_MESSAGE = (
    "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)"
)
PASSWORD_MISMATCH_MESSAGE = (
    "unauthorized: gateway password mismatch (use this gateway's gateway.auth.password)"
)
TOKEN_MISSING_MESSAGE = (
    "unauthorized: gateway token missing (use this gateway's gateway.auth.token or pair the device)"
)
PASSWORD_MISSING_MESSAGE = "unauthorized: gateway password missing (use this gateway's gateway.auth.password)"


@dataclass
class RequestError(Exception):
    """A failed request: the error envelope, and for handshake failures the close code that follows."""

    code: str
    message: str
    details: dict[str, Any] | None = None
    retryable: bool | None = None
    retry_after_ms: int | None = None
    close: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        if self.retryable is not None:
            error["retryable"] = self.retryable
        if self.retry_after_ms is not None:
            error["retryAfterMs"] = self.retry_after_ms
        return error


def invalid(message: str, **kwargs: Any) -> RequestError:
    return RequestError(INVALID_REQUEST, message, **kwargs)


def missing_scope(scope: str) -> RequestError:
    return RequestError(
        FORBIDDEN,
        f"missing scope: {scope}",
        details={"code": "MISSING_SCOPE", "missingScope": scope, "requiredScopes": [scope]},
    )


def unknown_method(name: str) -> RequestError:
    return invalid(f"unknown method: {name}")


def unavailable_method(name: str, why: str, *, by_design: bool) -> RequestError:
    """One of OpenClaw's methods we do not serve (docs/gateway.md): OpenClaw's code for a capability
    it cannot offer (its `<method> unavailable during gateway startup` shape, not retryable)."""
    return RequestError(
        UNAVAILABLE,
        f"{name} unavailable: {why}",
        details={"method": name, "reason": "refused-by-design" if by_design else "not-yet"},
    )


def protocol_mismatch(client_min: Any, client_max: Any) -> RequestError:
    return invalid(
        "protocol mismatch",
        close=CLOSE_PROTOCOL_ERROR,
        details={
            "code": "PROTOCOL_MISMATCH",
            "clientMinProtocol": client_min,
            "clientMaxProtocol": client_max,
            "expectedProtocol": PROTOCOL_VERSION,
            "minimumProbeProtocol": MINIMUM_PROBE_PROTOCOL,
        },
    )


def token_mismatch() -> RequestError:
    return invalid(
        TOKEN_MISMATCH_MESSAGE,
        close=CLOSE_POLICY,
        details={
            "code": "AUTH_TOKEN_MISMATCH",
            "authReason": "token_mismatch",
            "canRetryWithDeviceToken": False,
            "recommendedNextStep": "update_auth_credentials",
        },
    )


def password_mismatch() -> RequestError:
    return invalid(
        PASSWORD_MISMATCH_MESSAGE,
        close=CLOSE_POLICY,
        details={
            "code": "AUTH_PASSWORD_MISMATCH",
            "authReason": "password_mismatch",
            "canRetryWithDeviceToken": False,
            "recommendedNextStep": "update_auth_credentials",
        },
    )


def credential_missing(mode: str) -> RequestError:
    """`auth` was sent without the credential this Gateway's auth mode needs."""
    message = PASSWORD_MISSING_MESSAGE if mode == "password" else TOKEN_MISSING_MESSAGE
    reason = "password_missing" if mode == "password" else "token_missing"
    return invalid(
        message,
        close=CLOSE_POLICY,
        details={
            "code": "AUTH_PASSWORD_MISSING" if mode == "password" else "AUTH_TOKEN_MISSING",
            "authReason": reason,
            "canRetryWithDeviceToken": False,
            "recommendedNextStep": "update_auth_credentials",
        },
    )


RATE_LIMITED_MESSAGE = "unauthorized: too many failed authentication attempts (retry later)"
SLOW_CONSUMER_REASON = "slow consumer"  # close 1008: the client's unread output passed maxBufferedBytes


def rate_limited(retry_after_ms: int) -> RequestError:
    """Too many failed attempts from this peer address (OpenClaw's `rate_limited` auth failure)."""
    details = {
        "code": "AUTH_RATE_LIMITED",
        "authReason": "rate_limited",
        "canRetryWithDeviceToken": False,
        "recommendedNextStep": "wait_then_retry",
    }
    return invalid(
        RATE_LIMITED_MESSAGE,
        close=CLOSE_POLICY,
        retryable=True,
        retry_after_ms=retry_after_ms,
        details=details,
    )


def device_identity_required() -> RequestError:
    return RequestError(
        NOT_PAIRED,
        "device identity required",
        details={"code": "DEVICE_IDENTITY_REQUIRED"},
        close=CLOSE_POLICY,
    )


ORIGIN_NOT_ALLOWED_MESSAGE = (
    "origin not allowed (open the Control UI from the gateway host or allow it in "
    "gateway.controlUi.allowedOrigins)"
)


def origin_not_allowed() -> RequestError:
    """A browser's connect from a page this Gateway did not serve (as recorded from 2026.9.6)."""
    return RequestError(
        INVALID_REQUEST,
        ORIGIN_NOT_ALLOWED_MESSAGE,
        details={"code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": "origin not allowed"},
        close=CLOSE_POLICY,
    )


def read_only_server(method: str) -> RequestError:
    """A write sent to the dashboard's read-only local server (`openclaw dashboard --local`)."""
    return RequestError(
        FORBIDDEN,
        f"{method} writes, and this is a read-only server (start `openclaw gateway run` to make changes)",
        details={"code": "READ_ONLY_SERVER"},
    )


def connect_not_first() -> RequestError:
    return invalid("invalid handshake: first request must be connect", close=CLOSE_POLICY)


CONNECT_AGAIN_MESSAGE = "connect is only valid as the first request"


# ---- frames ------------------------------------------------------------------------------------------


def request(req_id: str, method: str, params: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def response_ok(req_id: Any, payload: Any) -> dict[str, Any]:
    return {"type": "res", "id": req_id, "ok": True, "payload": payload}


def response_error(req_id: Any, error: RequestError) -> dict[str, Any]:
    return {"type": "res", "id": req_id, "ok": False, "error": error.envelope()}


def event(
    name: str,
    payload: Any,
    *,
    seq: int | None = None,
    state_version: dict[str, int] | None = None,
) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "event", "event": name, "payload": payload}
    if seq is not None:
        frame["seq"] = seq
    if state_version is not None:
        frame["stateVersion"] = state_version
    return frame


def challenge(nonce: str, ts: int) -> dict[str, Any]:
    """The first frame of every connection (it carries no seq)."""
    return event(EVENT_CHALLENGE, {"nonce": nonce, "ts": ts, "capabilities": list(CHALLENGE_CAPABILITIES)})


def encode(frame: dict[str, Any]) -> str:
    from openclaw_cli.jsonutil import dumps_bytes

    # what our parsers hand out (numbers kept as written, values kept as text) is written back too
    return dumps_bytes(frame).decode("utf-8")
