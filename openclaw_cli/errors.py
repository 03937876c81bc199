"""Typed errors and the one exit-code table (docs/exit-codes.md is checked against it by a test)."""

from __future__ import annotations

from enum import IntEnum

TYPE_CHECKING = False  # no `typing` import at run time: every command imports this module
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.errors_more import (
        ForbiddenError as ForbiddenError,
    )
    from openclaw_cli.errors_more import (
        GatewayCredentialsRequiredError as GatewayCredentialsRequiredError,
    )
    from openclaw_cli.errors_more import (
        GatewayError as GatewayError,
    )
    from openclaw_cli.errors_more import (
        GatewayRequestError as GatewayRequestError,
    )
    from openclaw_cli.errors_more import (
        GatewaySecurityError as GatewaySecurityError,
    )
    from openclaw_cli.errors_more import (
        GatewayTransportError as GatewayTransportError,
    )
    from openclaw_cli.errors_more import (
        Interrupted as Interrupted,
    )
    from openclaw_cli.errors_more import (
        LockPathError as LockPathError,
    )
    from openclaw_cli.errors_more import (
        MissingScopeError as MissingScopeError,
    )
    from openclaw_cli.errors_more import (
        NoSpaceError as NoSpaceError,
    )
    from openclaw_cli.errors_more import (
        OutOfRangeError as OutOfRangeError,
    )
    from openclaw_cli.errors_more import (
        PermissionDeniedError as PermissionDeniedError,
    )
    from openclaw_cli.errors_more import (
        PreconditionError as PreconditionError,
    )
    from openclaw_cli.errors_more import (
        ReadOnlyFilesystemError as ReadOnlyFilesystemError,
    )
    from openclaw_cli.errors_more import (
        ResourceLimitError as ResourceLimitError,
    )
    from openclaw_cli.errors_more import (
        SessionBusyError as SessionBusyError,
    )
    from openclaw_cli.errors_more import (
        SessionChangedError as SessionChangedError,
    )
    from openclaw_cli.errors_more import (
        StateOwnedError as StateOwnedError,
    )
    from openclaw_cli.errors_more import (
        StoreBusyError as StoreBusyError,
    )
    from openclaw_cli.errors_more import (
        SymlinkLoopError as SymlinkLoopError,
    )
    from openclaw_cli.errors_more import (
        UnsafeLockDirError as UnsafeLockDirError,
    )


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


class InvalidDataError(OpenClawError):
    type = "invalid_data"
    exit_code = ExitCode.INVALID_DATA


class InvalidIdError(InvalidDataError):
    type = "invalid_id"


class RefusedError(OpenClawError):
    type = "refused"
    exit_code = ExitCode.REFUSED


def os_error(exc: OSError, path: object = None, *, action: str | None = None) -> OpenClawError | None:
    """The typed error for an OSError whose errno is in the table (else None). `path` overrides
    the exception's own filename; `action` says what was being done (`writing`, `locking`, ...)."""
    import errno as errno_mod

    from openclaw_cli.errors_more import _ERRNO_TYPES, NoSpaceError

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
    from openclaw_cli.errors_more import NoSpaceError, OutOfRangeError

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


# The classes of rarer errors (busy, preconditions, the Gateway's, no space, permissions, limits,
# interrupts) live in errors_more and are imported the first time one is named: creating ~20
# exception classes is ~2.5 M instructions of a ~236 M search that raises none of them. Every
# class is still `openclaw_cli.errors.<Name>` (its `__module__` says so, pickle finds it here).
_MORE = frozenset(
    (
        "SessionBusyError",
        "StoreBusyError",
        "PreconditionError",
        "ForbiddenError",
        "MissingScopeError",
        "SessionChangedError",
        "LockPathError",
        "StateOwnedError",
        "UnsafeLockDirError",
        "GatewayError",
        "OutOfRangeError",
        "GatewayRequestError",
        "GatewayTransportError",
        "GatewayCredentialsRequiredError",
        "GatewaySecurityError",
        "NoSpaceError",
        "PermissionDeniedError",
        "ReadOnlyFilesystemError",
        "ResourceLimitError",
        "SymlinkLoopError",
        "Interrupted",
    )
)

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name in _MORE:
            from openclaw_cli import errors_more

            value = getattr(errors_more, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
