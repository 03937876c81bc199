"""stop 40 (issue 26): the rarer typed errors are created the first time one is named, yet every
one is still `openclaw_cli.errors.<Name>`, with its place in the hierarchy and its exit code."""

from __future__ import annotations

import errno
import pickle
import subprocess
import sys

import pytest

from openclaw_cli import errors
from openclaw_cli.errors import (
    ExitCode,
    GatewaySecurityError,
    InvalidDataError,
    NoSpaceError,
    OpenClawError,
    OutOfRangeError,
    RefusedError,
    SessionBusyError,
    StoreBusyError,
    SymlinkLoopError,
)

# (name, its direct base, the exit code it carries)
MORE = [
    ("SessionBusyError", "OpenClawError", ExitCode.BUSY),
    ("StoreBusyError", "SessionBusyError", ExitCode.BUSY),
    ("PreconditionError", "OpenClawError", ExitCode.ERROR),
    ("ForbiddenError", "PreconditionError", ExitCode.ERROR),
    ("MissingScopeError", "ForbiddenError", ExitCode.ERROR),
    ("SessionChangedError", "PreconditionError", ExitCode.ERROR),
    ("LockPathError", "SessionBusyError", ExitCode.BUSY),
    ("StateOwnedError", "OpenClawError", ExitCode.BUSY),
    ("UnsafeLockDirError", "RefusedError", ExitCode.REFUSED),
    ("GatewayError", "OpenClawError", ExitCode.GATEWAY),
    ("OutOfRangeError", "InvalidDataError", ExitCode.INVALID_DATA),
    ("GatewayRequestError", "GatewayError", ExitCode.GATEWAY),
    ("GatewayTransportError", "OpenClawError", ExitCode.GATEWAY_UNAVAILABLE),
    ("GatewayCredentialsRequiredError", "OpenClawError", ExitCode.GATEWAY_AUTH),
    ("GatewaySecurityError", "RefusedError", ExitCode.REFUSED),
    ("NoSpaceError", "OpenClawError", ExitCode.NO_SPACE),
    ("PermissionDeniedError", "OpenClawError", ExitCode.PERMISSION),
    ("ReadOnlyFilesystemError", "PermissionDeniedError", ExitCode.PERMISSION),
    ("ResourceLimitError", "OpenClawError", ExitCode.RESOURCE),
    ("SymlinkLoopError", "RefusedError", ExitCode.REFUSED),
    ("Interrupted", "OpenClawError", ExitCode.INTERRUPTED),
]


def test_the_lazy_names_are_the_table() -> None:
    assert {name for name, _, _ in MORE} == errors._MORE


@pytest.mark.parametrize(("name", "base", "code"), MORE)
def test_each_rarer_error_is_an_errors_class_with_its_base_and_code(
    name: str, base: str, code: ExitCode
) -> None:
    cls = getattr(errors, name)
    assert isinstance(cls, type) and issubclass(cls, OpenClawError)
    assert cls.__module__ == "openclaw_cli.errors" and cls.__qualname__ == name
    assert cls.__bases__ == (getattr(errors, base),)
    assert cls.exit_code is code
    assert getattr(errors, name) is cls  # created once


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        errors.NoSuchError  # noqa: B018
    with pytest.raises(ImportError):
        exec("from openclaw_cli.errors import NoSuchError")


def test_rarer_errors_pickle_by_their_errors_name() -> None:
    exc = SymlinkLoopError("loop")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is SymlinkLoopError and back.args == ("loop",)
    assert b"openclaw_cli.errors" in pickle.dumps(exc) and b"errors_more" not in pickle.dumps(exc)


def test_the_typed_error_helpers_still_answer_with_them() -> None:
    found = errors.os_error(OSError(errno.ENOSPC, "full"), "/x")
    assert type(found) is NoSpaceError and found.path == "/x" and found.exit_code is ExitCode.NO_SPACE
    assert type(errors.os_error(OSError(errno.ELOOP, "loop"), "/y")) is SymlinkLoopError
    assert type(errors.typed_error(OverflowError("big"))) is OutOfRangeError
    assert issubclass(OutOfRangeError, InvalidDataError) and issubclass(GatewaySecurityError, RefusedError)
    assert issubclass(StoreBusyError, SessionBusyError)


def test_importing_errors_creates_none_of_them() -> None:
    code = (
        "import sys, openclaw_cli.errors as e\n"
        "print('openclaw_cli.errors_more' in sys.modules, sorted(n for n in e._MORE if n in vars(e)))\n"
        "e.NoSpaceError\n"
        "print('openclaw_cli.errors_more' in sys.modules, sorted(n for n in e._MORE if n in vars(e)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False []", "True ['NoSpaceError']"]
