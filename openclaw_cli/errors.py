"""Typed errors and the one exit-code table (docs/exit-codes.md is checked against it by a test)."""

from __future__ import annotations

from enum import IntEnum

TYPE_CHECKING = False  # no `typing` import at run time: every command imports this module
if TYPE_CHECKING:
    from typing import Any


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # generic failure; selection errors; blocking migration issues (OpenClaw uses 1)
    USAGE = 2  # invalid flags or arguments
    CONFIG = 3  # openclaw.json is unreadable or has an invalid value
    NOT_FOUND = 4  # unknown session key, agent or store
    BUSY = 5  # session/store locked by another writer, or the state is owned by a Gateway
    INVALID_DATA = 6  # corrupt or malformed store data, invalid ids
    REFUSED = 7  # a write was refused: read-only OpenClaw database, unsafe path or symlink
    GATEWAY = 8  # the Gateway answered with an error
    GATEWAY_UNAVAILABLE = 9  # a Gateway listens but the exchange failed: closed, timeout, TLS, protocol
    GATEWAY_AUTH = 10  # no Gateway credentials, or the Gateway refused the ones we sent
    NO_SPACE = 11  # the filesystem is full (ENOSPC, EDQUOT, SQLITE_FULL) or a space pre-check refused
    PERMISSION = 12  # permission denied (EACCES, EPERM) or a read-only filesystem (EROFS)
    RESOURCE = 13  # a process limit was hit: too many open files (EMFILE, ENFILE), out of memory
    INTERRUPTED = 130  # Ctrl-C / SIGTERM (multi-step commands stop at the next safe point)


EXIT_CODE_DOCS: dict[ExitCode, str] = {
    ExitCode.OK: "Success (dry runs that would change something also exit 0).",
    ExitCode.ERROR: "Generic failure: target selection errors, blocking `doctor --session-sqlite` issues, restore conflicts.",
    ExitCode.USAGE: "Invalid command-line usage (unknown flag, bad value, conflicting options).",
    ExitCode.CONFIG: "The config file is unreadable or holds an invalid value (the message names the key, the value and an example).",
    ExitCode.NOT_FOUND: "A named session key, agent or store does not exist.",
    ExitCode.BUSY: "A session or store is locked by another writer (`session file locked …`), or a Gateway owns the state directory.",
    ExitCode.INVALID_DATA: "Stored data is corrupt or malformed (e.g. `sessions.json` is not a JSON object), an id is invalid, or a stored number is out of range for what the command computes (`out_of_range`).",
    ExitCode.REFUSED: "A write was refused: a store opened read-only, a path outside the state directory, a symbolic or hard link, a symbolic-link loop (`ELOOP`); or a plaintext `ws://` Gateway URL to a non-loopback host.",
    ExitCode.GATEWAY: "The Gateway was reached but answered the request with an error (`gateway_request_error`).",
    ExitCode.GATEWAY_UNAVAILABLE: "A Gateway could not be used: the connection closed, timed out, failed TLS verification or broke the protocol (`gateway_transport_error`); nothing was run locally. With `gateway call|probe|health`, also: nothing listens.",
    ExitCode.GATEWAY_AUTH: "Gateway credentials are missing while a Gateway listens (`gateway_credentials_required`), or the Gateway rejected them at connect (`gateway_request_error`, e.g. `AUTH_TOKEN_MISMATCH`).",
    ExitCode.NO_SPACE: "Not enough disk space: a pre-check refused before writing (`not enough space (need N, have M)`), or a write hit `ENOSPC`/`EDQUOT`/SQLite full and was rolled back. The message names the path.",
    ExitCode.PERMISSION: "Permission denied (`EACCES`, `EPERM`) or a read-only filesystem (`EROFS`) on the named path; nothing was changed by the failed step.",
    ExitCode.RESOURCE: "A process limit was hit: too many open files (`EMFILE`, `ENFILE`) or out of memory; raise the limit (`ulimit -n`) and re-run.",
    ExitCode.INTERRUPTED: "Interrupted (Ctrl-C or SIGTERM). A multi-step command stops at the next safe point and says what state it left and which command finishes or undoes it.",
}


class OpenClawError(Exception):
    """Base of every expected error: carries a JSON `type` and an exit code."""

    type: str = "cli_error"
    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, type: str | None = None, exit_code: ExitCode | None = None):
        super().__init__(message)
        self.message = message
        if type is not None:
            self.type = type
        if exit_code is not None:
            self.exit_code = exit_code

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "error": {"type": self.type, "message": self.message}}


class UsageError(OpenClawError):
    type = "cli_error"
    exit_code = ExitCode.USAGE


class SelectionError(OpenClawError):
    """Target selection errors (`--agent must not be blank`, …); OpenClaw exits 1."""

    type = "cli_error"
    exit_code = ExitCode.ERROR


class ConfigError(OpenClawError):
    type = "config_error"
    exit_code = ExitCode.CONFIG

    def __init__(self, message: str, *, issues: list[dict[str, Any]] | None = None, path: str | None = None):
        super().__init__(message)
        self.issues = issues or []
        self.path = path

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.issues:
            out["issues"] = self.issues
        return out


class NotFoundError(OpenClawError):
    type = "not_found"
    exit_code = ExitCode.NOT_FOUND


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


class InvalidDataError(OpenClawError):
    type = "invalid_data"
    exit_code = ExitCode.INVALID_DATA


class InvalidIdError(InvalidDataError):
    type = "invalid_id"


class RefusedError(OpenClawError):
    type = "refused"
    exit_code = ExitCode.REFUSED


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


def os_error(exc: OSError, path: object = None, *, action: str | None = None) -> OpenClawError | None:
    """The typed error for an OSError whose errno is in the table (else None). `path` overrides
    the exception's own filename; `action` says what was being done (`writing`, `locking`, ...)."""
    import errno as errno_mod

    name = errno_mod.errorcode.get(exc.errno or 0)
    found = _ERRNO_TYPES.get(name or "")
    if found is None:
        return None
    cls, meaning = found
    where = path if path is not None else (exc.filename if exc.filename is not None else None)
    doing = f" while {action}" if action else ""
    text = f"{where}: {meaning}{doing} ({name})" if where is not None else f"{meaning}{doing} ({name})"
    if cls is NoSpaceError:
        return NoSpaceError(text, path=where)
    return cls(text)


def typed_error(exc: BaseException) -> OpenClawError | None:
    """The typed error for an unexpected exception we can still explain (an OSError with a known
    errno, SQLite's "disk full", a number beyond float range); None when there is none."""
    if isinstance(exc, OSError):
        return os_error(exc)
    if isinstance(exc, OverflowError):
        return OutOfRangeError(
            f"A number is out of range: {exc}. The value is kept as written; report the command that hit it."
        )
    if type(exc).__module__ == "sqlite3":
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code == 13:  # SQLITE_FULL
            return NoSpaceError(f"The disk is full: {exc} (SQLite)")
    return None


def exit_codes_markdown() -> str:
    """The exit-code table as Markdown (docs/exit-codes.md is this text; a test keeps them equal)."""
    lines = [
        "# Exit codes",
        "",
        "Generated from `openclaw_cli/errors.py` by `python scripts/gen_docs.py`; a test checks it is current.",
        "",
        'Under `--json` every failure also prints `{"ok":false,"error":{"type":…,"message":…}}` on stdout.',
        "",
        "| code | name | meaning |",
        "|---|---|---|",
    ]
    for code in ExitCode:
        lines.append(f"| {int(code)} | `{code.name}` | {EXIT_CODE_DOCS[code]} |")
    return "\n".join(lines) + "\n"
