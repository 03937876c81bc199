"""The root options (`--profile`, `--behavior`, `--no-color`) as both front doors read them: the Typer app
(`cli/main.py`) and the Typer-free fast path (`cli/fast.py`). No Typer here: the fast path must
not import it."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from openclaw_cli.lazyre import lazy_pattern

PROG = "openclaw"
PROFILE_NAME = lazy_pattern(globals(), "PROFILE_NAME", r"[A-Za-z0-9_-]+")  # used with --profile only
PROFILE_ERROR = 'Invalid --profile (use letters, numbers, "_", "-" only)'
# root value option -> the root callback's parameter
ROOT_VALUE_PARAMS = {"--profile": "profile", "--behavior": "behavior"}
ROOT_VALUE_OPTIONS = tuple(ROOT_VALUE_PARAMS)
ROOT_FLAGS = ("--no-color",)


def hoist_root_options(args: Sequence[str]) -> list[str]:
    """Move root options given after the subcommand (`openclaw status --profile work`) in front of
    it, where the parser expects them; nothing after `--` is touched."""
    args = list(args)
    if not args:
        return args
    front: list[str] = []
    rest: list[str] = []
    i = 0
    seen_command = False
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if not arg.startswith("-"):
            seen_command = True
        if seen_command and arg in ROOT_VALUE_OPTIONS and i + 1 < len(args):
            front += [arg, args[i + 1]]
            i += 2
            continue
        if seen_command and (arg in ROOT_FLAGS or any(arg.startswith(o + "=") for o in ROOT_VALUE_OPTIONS)):
            front.append(arg)
            i += 1
            continue
        rest.append(arg)
        i += 1
    return front + rest


def json_requested(args: Sequence[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def invalid_profile(profile: str | None) -> str | None:
    """The (stripped) profile name that is not valid: `--profile`'s value, or OPENCLAW_PROFILE's
    when the flag is absent; None when both are fine."""
    for name in (profile, os.environ.get("OPENCLAW_PROFILE") if profile is None else None):
        if name is not None and name.strip() and not PROFILE_NAME.fullmatch(name.strip()):
            return name.strip()
    return None


def apply_profile(profile: str | None) -> None:
    """The one path resolver reads OPENCLAW_PROFILE, so every command sees the flag."""
    if profile:
        os.environ["OPENCLAW_PROFILE"] = profile.strip()


def invalid_behavior(behavior: str | None) -> str | None:
    """The `--behavior` value that names no behaviour release (None when fine or absent)."""
    if behavior is None:
        return None
    from openclaw_cli.behavior import RELEASES

    return None if behavior.strip() in RELEASES else behavior


def apply_behavior(behavior: str | None) -> None:
    """`--behavior RELEASE` for this process (spec D23: it wins over OPENCLAW_CLI_BEHAVIOR)."""
    if behavior is None and "openclaw_cli.behavior" not in sys.modules:
        return  # nothing to clear: the module starts with no flag (and costs ~15 ms to import)
    from openclaw_cli.behavior import set_requested

    set_requested(behavior)
