"""The listing filters and orders of `openclaw sessions` (issue 27 §5): `--kind`, `--label`,
`--match GLOB`, `--pinned`, `--unread`, `--channel` and `--sort updated|created|size|tokens`.

The same filters as the Gateway's `sessions.list` where it has them (`label` exact, `pinned`);
the rest are the CLI's own. A filter reads the stored entry and the row the listing shows, so a
store kind never changes what matches."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openclaw_cli.errors import UsageError

SORTS = ("updated", "created", "size", "tokens")
# the kinds a listing row shows, and the finer ones `openclaw storage` groups by
KINDS = (
    "main",
    "direct",
    "group",
    "cron",
    "hook",
    "subagent",
    "spawn-child",
    "dashboard",
    "thread",
    "global",
    "unknown",
    "other",
)


@dataclass(frozen=True)
class ListingFilters:
    kinds: tuple[str, ...] = ()
    label: str | None = None
    match: str | None = None
    pinned: bool = False
    unread: bool = False
    channel: str | None = None
    sort: str | None = None

    @property
    def active(self) -> bool:
        return bool(
            self.kinds or self.label or self.match or self.pinned or self.unread or self.channel or self.sort
        )


def parse_filters(
    kinds: list[str] | None = None,
    label: str | None = None,
    match: str | None = None,
    pinned: bool = False,
    unread: bool = False,
    channel: str | None = None,
    sort: str | None = None,
) -> ListingFilters:
    wanted: list[str] = []
    for raw in kinds or []:
        for part in raw.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part not in KINDS:
                raise UsageError(f"Unknown --kind {part!r}; use one of: {', '.join(KINDS)}.")
            wanted.append(part)
    if sort is not None and sort not in SORTS:
        raise UsageError(f"Unknown --sort {sort!r}; use one of: {', '.join(SORTS)}.")
    for name, value in (("--label", label), ("--match", match), ("--channel", channel)):
        if value is not None and not value.strip():
            raise UsageError(f"{name} must not be blank")
    return ListingFilters(tuple(dict.fromkeys(wanted)), label, match, pinned, unread, channel, sort)


def session_channel(key: str, entry: dict[str, Any]) -> str | None:
    """The channel a session talks on: its `channel` / `lastChannel` / delivery context, else the
    key's channel segment (`agent:<id>:<channel>:direct:…`)."""
    for value in (
        entry.get("channel"),
        entry.get("lastChannel"),
        (entry.get("deliveryContext") or {}).get("channel")
        if isinstance(entry.get("deliveryContext"), dict)
        else None,
        (entry.get("origin") or {}).get("provider") if isinstance(entry.get("origin"), dict) else None,
    ):
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    from openclaw_cli.keys import parse_agent_key

    parsed = parse_agent_key(key)
    parts = (parsed[1] if parsed else key).split(":")
    if len(parts) >= 3 and parts[1] in ("direct", "group", "channel", "dm"):
        return parts[0].lower()
    return None


def row_kinds(key: str, entry: dict[str, Any], shown_kind: str | None) -> set[str]:
    """Every kind name a row answers to: the listing's kind and `storage`'s finer one."""
    from openclaw_cli.maintenance.storage import storage_kind

    out = {storage_kind(key, entry)}
    if shown_kind:
        out.add(shown_kind)
    return out


def predicate(filters: ListingFilters) -> Callable[[str, dict[str, Any], dict[str, Any]], bool]:
    """(key, entry, shown row) -> kept."""
    pattern = filters.match
    channel = filters.channel.strip().lower() if filters.channel else None

    def keep(key: str, entry: dict[str, Any], row: dict[str, Any]) -> bool:
        if filters.kinds and not row_kinds(key, entry, row.get("kind")) & set(filters.kinds):
            return False
        if filters.label is not None and entry.get("label") != filters.label:
            return False
        if pattern is not None and not fnmatch.fnmatchcase(key, pattern):
            return False
        if filters.pinned and not row.get("pinned"):
            return False
        if filters.unread and not row.get("unread"):
            return False
        return not (channel is not None and session_channel(key, entry) != channel)

    return keep


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else float("-inf")


def sort_key(
    filters: ListingFilters, sizes: dict[str, int] | None = None
) -> Callable[[tuple[str, dict[str, Any], dict[str, Any]]], Any]:
    """Descending order of (key, entry, row) by the chosen figure; ties newest first, then key."""
    order = filters.sort or "updated"

    def figure(item: tuple[str, dict[str, Any], dict[str, Any]]) -> float:
        key, entry, row = item
        if order == "created":
            return _number(
                entry.get("createdAt")
                if entry.get("createdAt") is not None
                else entry.get("sessionStartedAt")
            )
        if order == "size":
            return float((sizes or {}).get(str(entry.get("sessionId")), 0))
        if order == "tokens":
            return _number(entry.get("totalTokens"))
        return _number(entry.get("updatedAt"))

    return lambda item: (-figure(item), -_number(item[1].get("updatedAt")), item[0])
