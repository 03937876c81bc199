"""Which agent a session key belongs to, and which stored row it names: the one owner rule and
the one key resolver behind every operation that takes a session key (`sessions.patch|reset|
delete|describe|preview|resolve`, `chat.history`, tail, compact, show), as OpenClaw 2026.9.6's
Gateway resolves them (`resolveRequestedSessionAgentId`, then the row: docs/decisions.md "Issue 24:
one key resolver").

* **Owner** (`owner_agent`): `agentId` when given (a key prefixed with another agent is refused),
  else the key's own `agent:<id>:` prefix, else the default agent — refused when several agents
  are configured and nothing names one.
* **Row** (`find_entry`): the key as given, OpenClaw's store form (`agent:<id>:<rest>`, R1.3.4), the
  bare legacy cron/hook form, then every row compared in the canonical, normalised form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import PreconditionError, UsageError

if TYPE_CHECKING:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.targets import Target
    from openclaw_cli.store.base import SessionStore


def main_key_name(ctx: Context) -> str | None:
    """`session.mainKey` (None: OpenClaw's default `main`)."""
    try:
        from openclaw_cli.config.resolve import _model

        value = _model(ctx.config).session.main_key
    except AttributeError:
        return None
    return value if isinstance(value, str) else None


def owner_agent(ctx: Context, key: str, agent: str | None, store: str | None) -> str | None:
    """The agent a key belongs to: `agentId`, else the key's own `agent:<id>:` prefix; refuses a
    key of another agent and, with several agents configured, a key without an owner."""
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.keys import from_agent_store_key, parse_agent_key

    parsed = parse_agent_key(key)
    if agent is not None:
        if not agent.strip():
            raise UsageError("--agent must not be blank")
        wanted = normalize_agent_id(agent)
        if parsed and parsed[0] != wanted:
            raise UsageError(
                f'Session key "{key}" belongs to agent "{parsed[0]}", not "{wanted}". '
                f"Pass --agent {parsed[0]} or a key of agent {wanted}."
            )
        return wanted
    if parsed:
        return parsed[0]
    if store is None:
        from openclaw_cli.config import configured_agent_ids

        if len(configured_agent_ids(ctx.config)) > 1:
            raise PreconditionError(
                f'Multiple agents are configured, but session key "{from_agent_store_key(key)}" has no explicit '
                "owner. Pass agentId or use an agent-prefixed session key."
            )
    return None


def key_candidates(agent_id: str, key: str, main_name: str | None = None) -> list[str]:
    """The spellings a key may be stored under, most exact first: as given, OpenClaw's store form
    (`agent:<id>:<rest>`, R1.3.4), and for cron/hook keys the bare legacy form a store written
    before the import holds (`cron:job1`; D14 canonicalises it on import), so one key finds its
    row before and after the migration."""
    from openclaw_cli.keys import parse_agent_key, to_agent_store_key

    store_key = to_agent_store_key(agent_id, key, main_name)
    out = [key, store_key]
    parsed = parse_agent_key(store_key)
    if parsed and parsed[0] == agent_id and parsed[1].lower().startswith(("cron:", "hook:")):
        out.append(parsed[1])
    return list(dict.fromkeys(out))


def find_entry(
    st: SessionStore, agent_id: str, key: str, main_name: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """(the stored key, its entry) for `key` in one store; the entry is None when no row matches.
    Exact spellings are looked up first (one indexed read); then every row is compared in the
    canonical, normalised form."""
    from openclaw_cli.keys import canonicalize_bare_key, normalize_key, to_agent_store_key

    for candidate in key_candidates(agent_id, key, main_name):
        entry = st.get_entry(candidate)
        if entry is not None:
            return candidate, entry
    store_key = to_agent_store_key(agent_id, key, main_name)
    wanted = normalize_key(store_key)
    for candidate, entry in st.load_entries().items():
        if normalize_key(canonicalize_bare_key(candidate, agent_id)) == wanted:
            return candidate, entry
    return store_key, None


@dataclass
class Located:
    agent_id: str
    store: SessionStore  # an open SessionStore (the caller closes it)
    key: str  # the store key
    entry: dict[str, Any] | None
    requested: str


def resolve_target(
    ctx: Context,
    key: str,
    *,
    agent: str | None,
    store: str | None,
    memo: dict[Any, Target] | None = None,
) -> tuple[str, Target]:
    """(the key, the target of the store it lives in) by the one owner rule, nothing opened. With
    an explicit `store`, a key prefixed with another agent than the store's is refused. `memo`
    keeps the selection of each owner for the requests of one batch (the selection lists the
    state's agent directories: once per batch, not once per key)."""
    from openclaw_cli.keys import parse_agent_key
    from openclaw_cli.ops.targets import select_targets

    owner = owner_agent(ctx, key, agent, store)
    selector = owner if store is None else agent
    target = memo.get((selector, store)) if memo is not None else None
    if target is None:
        target = select_targets(ctx.paths, ctx.config, agent=selector, all_agents=False, store=store)[0]
        if memo is not None:
            memo[(selector, store)] = target
    parsed = parse_agent_key(key)
    if store is not None and parsed and parsed[0] != target.agent_id:
        raise UsageError(
            f'Session key "{key}" belongs to agent "{parsed[0]}", but {store} is the store of agent '
            f'"{target.agent_id}".'
        )
    return key, target


def locate_target(
    ctx: Context,
    raw_key: Any,
    *,
    agent: str | None,
    store: str | None,
    what: str = "session key",
    memo: dict[Any, Target] | None = None,
) -> tuple[str, Target]:
    """(the checked key, the target of the store it lives in), nothing opened: a key a request
    names (`check_session_key`: a string, not blank, within bounds)."""
    from openclaw_cli.lifecycle import check_session_key

    return resolve_target(ctx, check_session_key(raw_key, what=what), agent=agent, store=store, memo=memo)


def locate(
    ctx: Context,
    raw_key: Any,
    *,
    agent: str | None,
    store: str | None,
    read_only: bool,
    what: str = "session key",
) -> Located:
    """Open the store `raw_key` lives in and find its row (None when absent)."""
    from openclaw_cli.ops.targets import open_target

    key, target = locate_target(ctx, raw_key, agent=agent, store=store, what=what)
    st = open_target(ctx, target, read_only=read_only)
    try:
        stored_key, entry = find_entry(st, target.agent_id, key, main_key_name(ctx))
        return Located(target.agent_id, st, stored_key, entry, key)
    except BaseException:
        st.close()
        raise


def find_session(
    ctx: Context, key: str, agent_id: str | None
) -> tuple[str, SessionStore, str, dict[str, Any]] | None:
    """(agent, its store opened read-only, stored key, entry) of a session key, or None when the
    owner's store or the row does not exist. The owner rule refuses as for every key. The caller
    closes the store."""
    from openclaw_cli.ops.targets import open_existing

    _, target = resolve_target(ctx, key.strip(), agent=agent_id, store=None)
    store = open_existing(ctx, target.agent_id)
    if store is None:
        return None
    try:
        stored, entry = find_entry(store, target.agent_id, key.strip(), main_key_name(ctx))
    except BaseException:
        store.close()
        raise
    if entry is None:
        store.close()
        return None
    return target.agent_id, store, stored, entry


def list_hint(agent: str | None) -> str:
    """The command that lists the keys a not-found key could have been."""
    return f"openclaw sessions list{f' --agent {agent}' if agent else ''} --json"
