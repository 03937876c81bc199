"""The rarer typed errors of `openclaw_cli.errors` (which see): imported the first time one is
named there (`from openclaw_cli.errors import GatewayError` works as before). Not imported
directly: the names belong to `openclaw_cli.errors`."""

from __future__ import annotations

from openclaw_cli.errors import ExitCode, InvalidDataError, OpenClawError, RefusedError

TYPE_CHECKING = False  # no `typing` import at run time
if TYPE_CHECKING:
    from typing import Any


class SessionBusyError(OpenClawError):
    """OpenClaw's "session busy": lock timeout or stale-but-live lock, SQLite busy timeout."""

    type = "session_busy"
    exit_code = ExitCode.BUSY

    def __init__(self, message: str, *, code: str = "OPENCLAW_SESSION_WRITE_LOCK_TIMEOUT"):
        super().__init__(message)
        self.code = code


class StoreBusyError(SessionBusyError):
    """SQLite's write lock stayed held by another connection past `busy_timeout` (D12). Writers
    re-word it as OpenClaw's lock timeout for the store (`store.writer.sqlite_busy`)."""

    def __init__(self, path: object, timeout_ms: float):
        super().__init__(f"session store locked (timeout {timeout_ms}ms): {path}")
        self.path = path
        self.timeout_ms = timeout_ms


class PreconditionError(OpenClawError):
    """A request the current state does not allow (OpenClaw's `INVALID_REQUEST` preconditions:
    `Cannot archive an agent's main session.`, `label already in use: …`, a target key that
    exists, …). Nothing was modified. OpenClaw exits 1 for these."""

    type = "invalid_request"
    exit_code = ExitCode.ERROR
    details: dict[str, Any] | None = None


class ForbiddenError(PreconditionError):
    """A request this connection may not make whatever its scopes (OpenClaw's `FORBIDDEN`, e.g. an
    account action on a token connection, which holds no user identity). Nothing was modified."""

    gateway_code = "FORBIDDEN"


class MissingScopeError(ForbiddenError):
    """A request whose params need a scope the connection lacks, found by the method itself (what it
    needs depends on more than the params: OpenClaw's `sessions.groups.update` cwd outside every
    agent workspace): `missing scope: <scope>` with OpenClaw's MISSING_SCOPE details."""

    def __init__(self, scope: str):
        super().__init__(f"missing scope: {scope}")
        self.details = {"code": "MISSING_SCOPE", "missingScope": scope, "requiredScopes": [scope]}


class SessionChangedError(PreconditionError):
    """The row moved since the caller read it (`expectedSessionId` / `expectedLifecycleRevision`
    no longer match): `Session <key> changed before <action>. Retry.`, details
    `{reason: "session-changed"}` as OpenClaw sends them. Nothing was modified."""

    type = "session_changed"

    def __init__(self, key: str, action: str):
        super().__init__(f"Session {key} changed before {action}. Retry.")
        self.key = key
        self.details = {"reason": "session-changed"}


class LockPathError(SessionBusyError):
    """The lock path holds something no lock holder makes (a directory, a symbolic link, a FIFO,
    ...) or cannot be inspected: waiting would never end, so it is reported at once (exit BUSY)."""

    type = "lock_unusable"

    def __init__(self, message: str):
        super().__init__(message, code="OPENCLAW_SESSION_WRITE_LOCK_UNUSABLE")


class StateOwnedError(OpenClawError):
    type = "state_owned"
    exit_code = ExitCode.BUSY


class UnsafeLockDirError(RefusedError):
    """A lock directory in a shared place (the coordinator's under /tmp) that is a symbolic link,
    another user's, or not private: refused before any lock is taken through it."""

    type = "unsafe_lock_directory"


class GatewayError(OpenClawError):
    type = "gateway_error"
    exit_code = ExitCode.GATEWAY


class OutOfRangeError(InvalidDataError):
    """A stored number the command must compute with is beyond what it can represent."""

    type = "out_of_range"


class GatewayRequestError(GatewayError):
    """The Gateway answered a request (or our `connect`) with `ok:false`: OpenClaw's
    `gateway_request_error {code, message, details?, retryable, retryAfterMs?}`. A rejected connect
    about credentials exits GATEWAY_AUTH."""

    type = "gateway_request_error"

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: object = None,
        retryable: bool = False,
        retry_after_ms: int | None = None,
        method: str | None = None,
        auth: bool = False,
    ):
        super().__init__(message or code)
        self.code = code
        self.details = details
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.method = method
        if auth:
            self.exit_code = ExitCode.GATEWAY_AUTH

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type, "code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        error["retryable"] = self.retryable
        if self.retry_after_ms is not None:
            error["retryAfterMs"] = self.retry_after_ms
        return {"ok": False, "error": error}


class GatewayTransportError(OpenClawError):
    """No usable exchange with a Gateway: OpenClaw's `gateway_transport_error {kind, message, code?,
    reason?, timeoutMs?}` plus the `gateway {url, urlSource, bindDetail?}` block. `kind` is
    OpenClaw's `closed` / `timeout`, or ours `tls` / `protocol`. `message` holds every line (text
    output); the JSON shows the first, as OpenClaw does. `unreachable` marks "nothing listens"
    (refused / unreachable before any WebSocket opened): the one case a mutation runs locally."""

    type = "gateway_transport_error"
    exit_code = ExitCode.GATEWAY_UNAVAILABLE

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        gateway: dict[str, Any] | None = None,
        code: int | None = None,
        reason: str | None = None,
        timeout_ms: int | None = None,
        unreachable: bool = False,
    ):
        super().__init__(message)
        self.kind = kind
        self.gateway = gateway or {}
        self.code = code
        self.reason = reason
        self.timeout_ms = timeout_ms
        self.unreachable = unreachable

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {
            "type": self.type,
            "kind": self.kind,
            "message": self.message.split("\n", 1)[0].strip(),
        }
        if self.code is not None:
            error["code"] = self.code
        if self.reason is not None:
            error["reason"] = self.reason
        if self.timeout_ms is not None:
            error["timeoutMs"] = self.timeout_ms
        return {"ok": False, "error": error, "gateway": dict(self.gateway)}


class GatewayCredentialsRequiredError(OpenClawError):
    """A Gateway must be called but we hold no credential for it (OpenClaw's
    `gateway_credentials_required`; also its "url override requires explicit credentials")."""

    type = "gateway_credentials_required"
    exit_code = ExitCode.GATEWAY_AUTH


class GatewaySecurityError(RefusedError):
    """A plaintext `ws://` URL to a non-loopback host (credentials and data would travel in clear)."""

    type = "gateway_security_error"


class NoSpaceError(OpenClawError):
    """ENOSPC/EDQUOT/SQLITE_FULL, or the free-space pre-check (`need`/`have` in bytes)."""

    type = "no_space"
    exit_code = ExitCode.NO_SPACE

    def __init__(
        self, message: str, *, path: object = None, need: int | None = None, have: int | None = None
    ):
        super().__init__(message)
        self.path = path
        self.need = need
        self.have = have


class PermissionDeniedError(OpenClawError):
    type = "permission_denied"
    exit_code = ExitCode.PERMISSION


class ReadOnlyFilesystemError(PermissionDeniedError):
    type = "read_only_filesystem"


class ResourceLimitError(OpenClawError):
    type = "resource_limit"
    exit_code = ExitCode.RESOURCE


class SymlinkLoopError(RefusedError):
    type = "symlink_loop"


class Interrupted(OpenClawError):
    """A multi-step command stopped at a safe point after SIGINT/SIGTERM; the message says what
    state it left and the command that finishes or undoes it."""

    type = "interrupted"
    exit_code = ExitCode.INTERRUPTED


# errno -> (error class, what it means); the message always names the path.
_ERRNO_TYPES: dict[str, tuple[type[OpenClawError], str]] = {
    "ENOSPC": (NoSpaceError, "no space left on the device"),
    "EDQUOT": (NoSpaceError, "disk quota exceeded"),
    "EACCES": (PermissionDeniedError, "permission denied"),
    "EPERM": (PermissionDeniedError, "operation not permitted"),
    "EROFS": (ReadOnlyFilesystemError, "read-only filesystem"),
    "EMFILE": (ResourceLimitError, "too many open files in this process (raise `ulimit -n`)"),
    "ENFILE": (ResourceLimitError, "too many open files on the system"),
    "ENOMEM": (ResourceLimitError, "out of memory"),
    "ELOOP": (
        SymlinkLoopError,
        "too many levels of symbolic links (a symbolic-link loop); links are not followed",
    ),
}


for _cls in [
    SessionBusyError,
    StoreBusyError,
    PreconditionError,
    ForbiddenError,
    MissingScopeError,
    SessionChangedError,
    LockPathError,
    StateOwnedError,
    UnsafeLockDirError,
    GatewayError,
    OutOfRangeError,
    GatewayRequestError,
    GatewayTransportError,
    GatewayCredentialsRequiredError,
    GatewaySecurityError,
    NoSpaceError,
    PermissionDeniedError,
    ReadOnlyFilesystemError,
    ResourceLimitError,
    SymlinkLoopError,
    Interrupted,
]:
    _cls.__module__ = "openclaw_cli.errors"  # as when they were defined there: reprs and pickles
del _cls
