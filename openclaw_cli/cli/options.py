"""Parsing of option values the Typer declarations take as text (`--limit 25|all`, `--active N`)."""

from __future__ import annotations

from openclaw_cli.errors import UsageError


def parse_limit(raw: str | None) -> int | None:
    if raw is None:
        return 100
    value = raw.strip().lower()
    if value == "all":
        return None
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError('--limit must be a positive integer or "all", for example --limit 25.')


def parse_active(raw: str | None) -> int | None:
    if raw is None:
        return None
    value = raw.strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError("--active must be a positive number of minutes, for example --active 30.")
