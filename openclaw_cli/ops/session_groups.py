"""`sessions.groups.*`: the Gateway-owned custom session group catalog, as OpenClaw 2026.9.6 serves
it (recorded: tests/fixtures/gateway-2026.9.6-groups). The catalog (names, order, New Session
defaults, the sidebar's section order) is `store/group_catalog.py`'s; membership is each session
row's `category`, in every agent store whatever its kind (legacy, ours, OpenClaw schema 23/24):
`rename` repoints and `delete` clears the members' category without touching `updatedAt` (group
maintenance must not reorder recency), and `put` refuses to drop a group that still has members.
A `sessions.patch` that sets a category the catalog lacks appends it (`register_category`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from openclaw_cli.errors import MissingScopeError, OpenClawError, PreconditionError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.scopes import ADMIN
from openclaw_cli.store import group_catalog as catalogs

_SECTIONS = ("ungrouped", "groups", "work")


class GroupUnavailableError(PreconditionError):
    """A group change OpenClaw refuses with a plain `Error`, which its handler answers UNAVAILABLE
    (e.g. `group rename requires non-empty names` for a blank name). Nothing was modified."""

    gateway_code = "UNAVAILABLE"


def _name(raw: Any) -> str | None:
    """OpenClaw's normalizeOptionalString: trimmed, None when empty."""
    if not isinstance(raw, str):
        return None
    return raw.strip() or None


def normalize_names(names: list[str]) -> list[str]:
    """Trimmed, empty and repeated names dropped, first occurrence's order."""
    seen: list[str] = []
    for raw in names:
        name = _name(raw)
        if name and name not in seen:
            seen.append(name)
    return seen


def normalize_section_order(order: list[str], groups: list[str]) -> list[str]:
    """The sidebar's section ids OpenClaw keeps: `ungrouped`, `groups`, `work`, `category:<a group
    in this put>`, `catalog:<id>` — trimmed, unknown or repeated ids dropped."""
    known = set(groups)
    out: list[str] = []
    for raw in order:
        section = raw.strip()
        canonical = None
        if section in _SECTIONS:
            canonical = section
        elif section.startswith("category:"):
            name = _name(section[len("category:") :])
            if name and name in known:
                canonical = f"category:{name}"
        elif section.startswith("catalog:"):
            ident = _name(section[len("catalog:") :])
            if ident:
                canonical = f"catalog:{ident}"
        if canonical and canonical not in out:
            out.append(canonical)
    return out


# ---- membership: the category of every agent store's rows --------------------------------------------------


def _stores(ctx: Context, *, read_only: bool) -> list[Any]:
    from openclaw_cli.ops.targets import has_session_store, open_target, session_agent_ids

    stores = []
    for agent_id in session_agent_ids(ctx.paths, ctx.config):
        if has_session_store(ctx.paths, agent_id):
            stores.append(open_target(ctx, ctx.paths.target(agent_id), read_only=read_only))
    return stores


def _members(entries: dict[str, dict[str, Any]], name: str) -> list[str]:
    return [key for key, entry in entries.items() if _name(entry.get("category")) == name]


def member_counts(ctx: Context, names: list[str]) -> dict[str, int]:
    """How many sessions (all agents) each named group has."""
    counts = dict.fromkeys(names, 0)
    for store in _stores(ctx, read_only=True):
        with store as st:
            for entry in st.load_entries().values():
                name = _name(entry.get("category"))
                if name in counts:
                    counts[name] += 1
    return counts


def _move_members(ctx: Context, name: str, to: str | None) -> int:
    """Repoint (`to`) or clear (None) the category of every row in group `name`, in each store
    under its writer; a row whose category changed meanwhile is left alone. The count updated."""
    from openclaw_cli.ops.lifecycle import _writer

    updated = 0
    for store in _stores(ctx, read_only=False):
        with store as st:
            keys = _members(st.load_entries(), name)
            if not keys:
                continue

            def repoint(current: dict[str, Any] | None) -> dict[str, Any] | None:
                if current is None or _name(current.get("category")) != name:
                    return None  # gone or regrouped since it was read: nothing to write
                nxt = dict(current)  # updatedAt kept: recency order is not the group's to change
                if to is None:
                    nxt.pop("category", None)
                else:
                    nxt["category"] = to
                return nxt

            with _writer(ctx, st):
                outcomes = st.patch_entries(
                    [(key, repoint) for key in keys], lock_settings=ctx.lock_settings(), now_ms=ctx.now_ms()
                )
            for outcome in outcomes:
                if isinstance(outcome, OpenClawError):
                    raise outcome
                if isinstance(outcome, dict) and (
                    (to is None and "category" not in outcome) or outcome.get("category") == to
                ):
                    updated += 1
    return updated


# ---- the methods ------------------------------------------------------------------------------------------


def _state(ctx: Context) -> Path:
    return Path(ctx.paths.state_dir)


def groups_list(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.list`: `{groups: [{name, position}], sectionOrder}` (path-free: read scope)."""
    catalog = catalogs.read(_state(ctx))
    return {"groups": catalog.listing(), "sectionOrder": catalog.section_order}


def groups_defaults(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.defaults`: each group's New Session `cwd` / `worktree` (write scope). OpenClaw
    hides a group from a non-admin unless every member session is theirs to change; every session
    here is any write-scoped operator's (no per-profile sharing), so none is hidden."""
    return {"defaults": catalogs.read(_state(ctx)).defaults()}


def groups_put(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.put`: the ordered name list replaces the catalog (new names created, kept
    ones re-positioned with their defaults); dropping a group that has members is refused."""
    names = normalize_names(params["names"])
    order = params.get("sectionOrder")
    current = catalogs.read(_state(ctx))
    dropped = [g.name for g in current.groups if g.name not in names]
    if dropped:
        counts = member_counts(ctx, dropped)
        busy = [(n, counts[n]) for n in dropped if counts[n] > 0]
        if busy:
            listed = ", ".join(f'"{n}" ({c})' for n, c in busy)
            raise PreconditionError(
                f"sessions.groups.put cannot drop groups that still have member sessions: {listed}; "
                "include them in names or remove them via sessions.groups.delete"
            )
    now = ctx.now_ms()
    with catalogs.edit(_state(ctx)) as catalog:
        kept = {g.name: g for g in catalog.groups if g.name in names}
        catalog.groups = [
            catalogs.Group(n, i, kept[n].created_at, kept[n].cwd, kept[n].worktree)
            if n in kept
            else catalogs.Group(n, i, now)
            for i, n in enumerate(names)
        ]
        if order is not None:
            catalog.section_order = normalize_section_order(order, names)
            catalog.order_changed = True
    return {"ok": True, "groups": catalog.listing(), "sectionOrder": catalog.section_order}


def _mutate_group(ctx: Context, raw_name: Any, raw_to: Any, rename: bool) -> dict[str, Any]:
    name = _name(raw_name)
    to = _name(raw_to) if rename else None
    if not name or (rename and not to):
        raise GroupUnavailableError(
            "group rename requires non-empty names" if rename else "group delete requires a non-empty name"
        )
    updated = 0
    if name != to:
        with catalogs.edit(_state(ctx)) as catalog:  # prepare: the target exists before members move
            source = catalog.find(name)
            if rename and source is None:
                raise PreconditionError(f"unknown session group: {name}")
            if to is not None and source is not None and catalog.find(to) is None:
                catalog.groups.append(
                    catalogs.Group(to, source.position, source.created_at, source.cwd, source.worktree)
                )
                catalog.sort()
        updated = _move_members(ctx, name, to)
        with catalogs.edit(_state(ctx)) as catalog:  # retire the old name, and its sidebar section
            catalog.groups = [g for g in catalog.groups if g.name != name]
            old, new = f"category:{name}", (f"category:{to}" if to else None)
            if old in catalog.section_order:
                if new is None or new in catalog.section_order:
                    catalog.section_order = [s for s in catalog.section_order if s != old]
                else:
                    catalog.section_order = [new if s == old else s for s in catalog.section_order]
    catalog_now = catalogs.read(_state(ctx))
    return {
        "ok": True,
        "groups": catalog_now.listing(),
        "sectionOrder": catalog_now.section_order,
        "updatedSessions": updated,
    }


def groups_rename(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.rename`: the group takes the new name (merging into an existing group of
    that name), every member session's category follows; `updatedSessions` counts them."""
    return _mutate_group(ctx, params["name"], params["to"], rename=True)


def groups_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.delete`: the group goes and its members' category is cleared (an unknown
    name is no error: nothing to do)."""
    return _mutate_group(ctx, params["name"], None, rename=False)


def groups_update(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.groups.update`: one group's New Session defaults (`cwd` absolute or null,
    `worktree`); `{ok, defaults}`."""
    cwd = params.get("cwd")
    if cwd and not os.path.isabs(cwd):
        raise PreconditionError("session group cwd must be absolute")
    name = _name(params["name"])
    if not name:
        raise PreconditionError("session group name must not be empty")
    if cwd and ctx.caller_scopes is not None and ADMIN not in ctx.caller_scopes:
        cwd = workspace_containment(ctx, cwd)
        if cwd is None:
            raise MissingScopeError(ADMIN)
    with catalogs.edit(_state(ctx)) as catalog:
        group = catalog.find(name)
        if group is None:
            raise PreconditionError(f"unknown session group: {name}")
        group.cwd = _name(cwd)
        group.worktree = bool(params["worktree"])
    return {"ok": True, "defaults": catalog.defaults()}


# the group methods whose target OpenClaw's session-sharing layer resolves from `name` before their
# handler (and before their params are checked) when the caller is not an admin
NAMED_TARGET_METHODS = ("sessions.groups.rename", "sessions.groups.delete", "sessions.groups.update")


def missing_mutation_target(method: str, params: Any, scopes: frozenset[str]) -> bool:
    """True when OpenClaw refuses this call as `session mutation target is unavailable`
    (SESSION_MUTATION_TARGET_REQUIRED): a non-admin caller's rename, delete or update whose `name`
    is not a non-blank string (recorded: `" "`, `""`, `5`, none). An admin's goes on to the params
    and the handler's own texts."""
    if method not in NAMED_TARGET_METHODS or ADMIN in scopes:
        return False
    name = params.get("name") if isinstance(params, dict) else None
    return not (isinstance(name, str) and name.strip())


def workspace_containment(ctx: Context, cwd: str) -> str | None:
    """OpenClaw's rule for a write-scoped caller's group cwd: the directory must exist and, links
    resolved, lie inside (or be) the real directory of a configured agent's workspace; it is then
    saved as that real path. None when it does not (the caller needs `operator.admin`)."""
    from openclaw_cli.config import configured_agent_ids
    from openclaw_cli.ops.agents import workspace_dir

    roots: list[str] = []
    for agent_id in configured_agent_ids(ctx.config):
        try:
            roots.append(os.path.realpath(workspace_dir(ctx, agent_id), strict=True))
        except (OSError, ValueError):
            continue  # a workspace not created yet contains nothing
    try:
        real = os.path.realpath(os.path.normpath(cwd), strict=True)  # `..` first, as path.resolve
    except (OSError, ValueError):
        return None
    inside = any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)
    return real if inside else None


# ---- sessions.patch's category --------------------------------------------------------------------------

_registered: set[tuple[str, str]] = set()
_registered_lock = threading.Lock()


def register_category(ctx: Context, raw: Any) -> bool:
    """Append a category a `sessions.patch` assigned to the catalog when it is new (OpenClaw keeps
    the catalog covering every group a UI can see). True when it was added."""
    name = _name(raw)
    if not name:
        return False
    if catalogs.read(_state(ctx)).find(name) is not None:
        return False
    with catalogs.edit(_state(ctx)) as catalog:
        if catalog.find(name) is not None:
            return False
        last = max((g.position for g in catalog.groups), default=-1)
        catalog.groups.append(catalogs.Group(name, last + 1, ctx.now_ms()))
    with _registered_lock:
        _registered.add((str(ctx.paths.state_dir), name))
    return True


def take_registered(ctx: Context, raw: Any) -> bool:
    """Whether a patch's category was newly registered (once: the Gateway's `groups` change event)."""
    name = _name(raw)
    with _registered_lock:
        key = (str(ctx.paths.state_dir), name or "")
        if key in _registered:
            _registered.discard(key)
            return True
    return False
