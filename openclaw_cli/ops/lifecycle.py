"""Session lifecycle operations (compaction-lifecycle.md §3, spec D1, D6, D15; the Gateway
fixture README § sessions.patch / reset / create / delete): what the Gateway serves as
`sessions.patch|reset|create|delete` and the CLI runs locally, with OpenClaw's params, results,
preconditions and error texts. The store write protocol (`patch_entry`, `reset_session`,
`fork_session`, `delete_session`) performs the writes; `lifecycle` holds the pure rules.

Beside it: key resolution (`session_keys`), the CLI's lifecycle batch envelope
(`lifecycle_batch`) and the export source (`transcript_export`).

Params are the Gateway's (closed: an unknown key is an error) plus the local-only `store`
(offline repair) and `dryRun` (validate and show, write nothing).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from openclaw_cli.errors import (
    NotFoundError,
    OpenClawError,
    PreconditionError,
    SessionChangedError,
    UsageError,
)
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.params import SESSIONS_CREATE, SESSIONS_DELETE, SESSIONS_PATCH, SESSIONS_RESET
from openclaw_cli.ops.rows import BUILTIN_MODEL
from openclaw_cli.ops.scopes import LOCAL_PARAMS
from openclaw_cli.ops.session_keys import (
    find_entry,
    locate,
    locate_target,
    main_key_name,
    owner_agent,
)

if TYPE_CHECKING:
    from openclaw_cli.store.base import SessionStore

# Which keys of a method's schema (`ops/params.py`, OpenClaw's) we act on; every other key the
# schema accepts is refused as "not supported by openclaw-cli" (it does not run agents), so a key
# the real Gateway accepts is never "unexpected" here and one it refuses never "not supported".
PATCH_EXPECTED = ("expectedSessionId", "expectedLifecycleRevision", "expectedMarkedUnreadAt")
PATCH_ORGANISATION = ("label", "category", "archived", "pinned", "unread")
PATCH_OVERRIDES = (
    "thinkingLevel",
    "verboseLevel",
    "traceLevel",
    "reasoningLevel",
    "responseUsage",
    "elevatedLevel",
    "sendPolicy",
    "groupActivation",
)
PATCH_PARAMS = frozenset(SESSIONS_PATCH.props)
PATCH_SUPPORTED = frozenset({"key", "agentId", *PATCH_EXPECTED, *PATCH_ORGANISATION, *PATCH_OVERRIDES})
PATCH_UNSUPPORTED = tuple(name for name in SESSIONS_PATCH.props if name not in PATCH_SUPPORTED)
RESET_PARAMS = frozenset(SESSIONS_RESET.props)
DELETE_PARAMS = frozenset(SESSIONS_DELETE.props)
CREATE_SUPPORTED = ("parentSessionKey", "fork", "forkFrom", "agentId", "key", "label", "displayName", "model")
CREATE_PARAMS = frozenset(SESSIONS_CREATE.props)
CREATE_UNSUPPORTED = tuple(name for name in SESSIONS_CREATE.props if name not in CREATE_SUPPORTED)
MAX_LABEL = 512
NOT_FOUND_TEXT = "Session not found. Run {hint} to choose a valid key."


# ---- params --------------------------------------------------------------------------------------------


def _check_params(
    method: str, params: Any, allowed: frozenset[str], *, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise UsageError(f"invalid {method} params: must be object")
    for name in required:
        if name not in params:
            raise UsageError(f"invalid {method} params: must have required property '{name}'")
    for name in params:
        if name not in allowed and name not in LOCAL_PARAMS:
            raise UsageError(f"invalid {method} params: at root: unexpected property '{name}'")
    return params


def _typed(
    method: str,
    params: dict[str, Any],
    name: str,
    kinds: tuple[type, ...],
    what: str,
    *,
    nullable: bool = False,
) -> None:
    if name not in params:
        return
    value = params[name]
    if value is None and nullable:
        return
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise UsageError(f"invalid {method} params: at /{name}: must be {what}")


def _text_param(method: str, params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"invalid {method} params: at /{name}: must be a non-empty string")
    return value.strip()


def parse_label(raw: Any) -> str:
    """OpenClaw's label rule: a string, trimmed, not empty, at most 512 characters."""
    if not isinstance(raw, str):
        raise UsageError("invalid label: must be a string")
    label = raw.strip()
    if not label:
        raise UsageError("invalid label: empty")
    if len(label) > MAX_LABEL:
        raise UsageError(f"invalid label: too long (max {MAX_LABEL})")
    from openclaw_cli.lifecycle import _CONTROL

    if _CONTROL.search(label):
        raise UsageError("invalid label: control characters are not allowed")
    return label


# ---- finding the session ----------------------------------------------------------------------------------


def is_main_session(ctx: Context, agent_id: str, key: str, main_name: str | None | bool = False) -> bool:
    """`main_name`: `main_key_name(ctx)` when the caller has it (False: read it here)."""
    from openclaw_cli.keys import main_key

    name = main_key_name(ctx) if main_name is False else main_name
    return key.strip().lower() == "global" or key == main_key(
        agent_id, name if isinstance(name, str) else None
    )


def _resolved(
    ctx: Context, agent_id: str, entry: dict[str, Any] | None, models: dict[str, str] | None = None
) -> dict[str, Any]:
    """`models`: each agent's default model ref, kept across the results of one batch."""
    from openclaw_cli.config import default_model

    entry = entry or {}
    model = entry.get("modelOverride")
    provider = entry.get("providerOverride")
    if not isinstance(model, str) or not model:
        # the configured model, else OpenClaw's built-in default (`gpt-6-astra`), as the real
        # Gateway resolves it
        ref = models.get(agent_id) if models is not None else None
        if ref is None:
            ref = default_model(ctx.config, agent_id) or BUILTIN_MODEL
            if models is not None:
                models[agent_id] = ref
        provider_default, _, model_default = (ref or "").rpartition("/")
        model = model_default or entry.get("model")
        provider = provider or provider_default or entry.get("modelProvider")
    out: dict[str, Any] = {
        "modelProvider": provider if isinstance(provider, str) and provider else None,
        "model": model if isinstance(model, str) and model else None,
    }
    harness = entry.get("agentRuntimeOverride") or entry.get("agentHarnessId")
    if isinstance(harness, str) and harness:
        out["agentRuntime"] = {"id": harness, "source": "session"}
    return out


@contextmanager
def _writer(ctx: Context, st: SessionStore) -> Iterator[None]:
    from openclaw_cli.store.writer import store_writer

    try:
        with store_writer(st, ctx.lock_settings()):
            yield
    finally:
        ctx.note_writes(st)  # e.g. where a real OpenClaw database's backup went (D21)


# ---- sessions.patch ------------------------------------------------------------------------------------------


def _check_patch_params(params: Any) -> dict[str, Any]:
    method = "sessions.patch"
    checked = _check_params(method, params, PATCH_PARAMS, required=("key",))
    for name in PATCH_UNSUPPORTED:
        if name in params:
            raise UsageError(
                f"sessions.patch: {name} is not supported by openclaw-cli (it does not run agents); "
                "nothing was changed."
            )
    for name in ("archived", "pinned", "unread"):
        _typed(method, params, name, (bool,), "boolean")
    _typed(method, params, "expectedSessionId", (str,), "string")
    _typed(method, params, "expectedLifecycleRevision", (str,), "string")
    _typed(method, params, "expectedMarkedUnreadAt", (int, float), "number", nullable=True)
    _typed(method, params, "agentId", (str,), "string")
    for name in PATCH_OVERRIDES:
        value = params.get(name)
        if (
            name in params
            and value is not None
            and (not isinstance(value, str) or not value.strip() or len(value) > 64)
        ):
            raise UsageError(f"invalid {method} params: at /{name}: must be a non-empty string or null")
    if "label" in params and params["label"] is not None:
        parse_label(params["label"])
    from openclaw_cli.lifecycle import check_session_key

    check_session_key(params["key"])  # blank, control characters, length: as every command checks keys
    return checked


def apply_patch(
    current: dict[str, Any] | None,
    params: dict[str, Any],
    *,
    key: str,
    now_ms: int,
    main: bool,
    label_in_use: Callable[[str], bool],
) -> dict[str, Any]:
    """The row after `params` (OpenClaw's order: label, archive, pin, unread, overrides), or a
    typed error (nothing written)."""
    from openclaw_cli.keys import is_pinnable

    if "archived" in params:
        if current is None or not current.get("sessionId"):
            raise NotFoundError(f"session not found: {key}")
        if params.get("expectedSessionId") is None:
            raise PreconditionError(f"expectedSessionId required for session lifecycle patch: {key}")
        if params["archived"] is True and main:
            if key.strip().lower() == "unknown":
                raise PreconditionError("Cannot archive the unknown session sentinel.")
            raise PreconditionError("Cannot archive an agent's main session.")
    expected = params.get("expectedSessionId")
    if expected is not None and (current is None or current.get("sessionId") != expected.strip()):
        raise SessionChangedError(key, "patch")
    revision = params.get("expectedLifecycleRevision")
    if revision is not None and (current is None or current.get("lifecycleRevision") != revision.strip()):
        raise SessionChangedError(key, "patch")
    if (
        "expectedMarkedUnreadAt" in params
        and (current or {}).get("markedUnreadAt") != params["expectedMarkedUnreadAt"]
    ):
        raise SessionChangedError(key, "patch")
    if current is None:
        from openclaw_cli.lifecycle import check_session_key

        # a patch that creates the row takes the key rule of sessions.create (issue 29 #8): no
        # `agent:main:` from "agent:main:\n\r\t", no `..` or `/` segments
        check_session_key(key, new=True)
        nxt: dict[str, Any] = {
            "sessionId": str(uuid.uuid4()),
            "lifecycleRevision": str(uuid.uuid4()),
            "updatedAt": now_ms,
            "createdVia": "operator",
            "createdAt": now_ms,
        }
    else:
        nxt = dict(current)
        updated = current.get("updatedAt")
        base = updated if isinstance(updated, int | float) and not isinstance(updated, bool) else 0
        nxt["updatedAt"] = max(base, now_ms)
    if "label" in params:
        if params["label"] is None:
            nxt.pop("label", None)
        else:
            label = parse_label(params["label"])
            if label_in_use(label):
                raise PreconditionError(f"label already in use: {label}")
            nxt["label"] = label
    if "category" in params:  # a custom group's membership (`sessions.groups.*`), stored trimmed
        category = params["category"].strip() if isinstance(params["category"], str) else ""
        if category:
            nxt["category"] = category
        else:
            nxt.pop("category", None)
    if "archived" in params:
        if params["archived"] is True:
            if nxt.get("archivedAt") is None:
                nxt["archivedAt"] = now_ms
                nxt["archiveReason"] = "manual"
                nxt.pop("archivedBy", None)
            nxt.pop("pinnedAt", None)
        else:
            for name in ("archivedAt", "archivedBy", "archiveReason"):
                nxt.pop(name, None)
    pinnable = is_pinnable(key, nxt)
    if not pinnable:
        nxt.pop("pinnedAt", None)
    if "pinned" in params:
        if params["pinned"] is True:
            if nxt.get("archivedAt") is not None:
                raise PreconditionError("cannot pin an archived session; restore it first")
            if not pinnable:
                raise PreconditionError("cannot pin a child session; pin its parent session instead")
            if nxt.get("pinnedAt") is None:
                nxt["pinnedAt"] = now_ms
        else:
            nxt.pop("pinnedAt", None)
    if "unread" in params:
        if params["unread"] is True:
            previous = (current or {}).get("markedUnreadAt")
            floor = (
                previous + 1 if isinstance(previous, int | float) and not isinstance(previous, bool) else 0
            )
            nxt["markedUnreadAt"] = max(now_ms, floor)
        else:
            nxt["lastReadAt"] = now_ms
            nxt.pop("markedUnreadAt", None)
            nxt.pop("agentStatus", None)
    for name in PATCH_OVERRIDES:
        if name in params:
            if params[name] is None:
                nxt.pop(name, None)
            else:
                nxt[name] = params[name].strip()
    return nxt


def sessions_patch(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.patch`: `{ok, path, key, entry, resolved}`; an unknown key creates the row
    (`createdVia: "operator"`), as the real Gateway does; `dryRun` returns the row it would write."""
    params = _check_patch_params(params)
    dry_run = bool(params.get("dryRun"))
    loc = locate(
        ctx, params["key"], agent=params.get("agentId"), store=params.get("store"), read_only=dry_run
    )
    now = ctx.now_ms()
    with loc.store as st:
        main = is_main_session(ctx, loc.agent_id, loc.key)

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            return apply_patch(
                current,
                params,
                key=loc.key,
                now_ms=now,
                main=main,
                label_in_use=lambda label: any(k != loc.key for k in st.label_owners(label)),
            )

        if dry_run:
            entry = mutate(dict(loc.entry) if loc.entry is not None else None)
        else:
            with _writer(ctx, st):
                entry = _stored(
                    st.patch_entry(
                        loc.key, mutate, lock_settings=ctx.lock_settings(), create=True, now_ms=now
                    )
                )
            _register_category(ctx, params)
        result: dict[str, Any] = {
            "ok": True,
            "path": str(st.path),
            "key": loc.key,
            "entry": entry,
            "resolved": _resolved(ctx, loc.agent_id, entry),
        }
        if dry_run:
            result["dryRun"] = True
            result["created"] = loc.entry is None
        return result


def sessions_patch_many(ctx: Context, batch: list[dict[str, Any]]) -> list[Any]:
    """`sessions.patch` for requests that arrived together (the Gateway's group commit): each
    outcome — its result document, or the error that refused it — exactly as if the requests ran
    one after another in this order, but the requests of one store share one open, one writer
    hold and one transaction (a savepoint each). A dry run or an explicit `store` runs alone."""
    from openclaw_cli.ops.targets import open_target

    outcomes: list[Any] = [None] * len(batch)
    groups: dict[str, tuple[Any, list[tuple[int, dict[str, Any], str]]]] = {}
    selected: dict[Any, Any] = {}  # each owner's store, selected once per batch
    for i, raw in enumerate(batch):
        try:
            params = _check_patch_params(raw)
            if params.get("dryRun") or params.get("store") is not None:
                outcomes[i] = sessions_patch(ctx, params)
                continue
            key, target = locate_target(
                ctx, params["key"], agent=params.get("agentId"), store=None, memo=selected
            )
        except OpenClawError as exc:
            outcomes[i] = exc
            continue
        groups.setdefault(f"{target.agent_id}\0{target.explicit}", (target, []))[1].append((i, params, key))
    main_name = main_key_name(ctx)
    models: dict[str, str] = {}  # each agent's default model, once per batch
    for target, members in groups.values():
        try:
            st = open_target(ctx, target, read_only=False)
        except OpenClawError as exc:
            for i, _, _ in members:
                outcomes[i] = exc
            continue
        with st:
            items: list[tuple[str, Callable[[dict[str, Any] | None], dict[str, Any]]]] = []
            placed: list[tuple[int, str]] = []
            for i, params, key in members:
                try:
                    stored_key, _ = find_entry(st, target.agent_id, key, main_name)
                except OpenClawError as exc:
                    outcomes[i] = exc
                    continue
                items.append(
                    (stored_key, _patch_mutation(ctx, st, params, target.agent_id, stored_key, main_name))
                )
                placed.append((i, stored_key))
            if not items:
                continue
            try:
                with _writer(ctx, st):
                    written = st.patch_entries(items, lock_settings=ctx.lock_settings(), create=True)
            except OpenClawError as exc:
                written = [exc] * len(items)
            for (i, stored_key), entry in zip(placed, written, strict=True):
                if not isinstance(entry, OpenClawError):
                    _register_category(ctx, batch[i])
                outcomes[i] = (
                    entry
                    if isinstance(entry, OpenClawError)
                    else {
                        "ok": True,
                        "path": str(st.path),
                        "key": stored_key,
                        "entry": entry,
                        "resolved": _resolved(ctx, target.agent_id, entry, models),
                    }
                )
    return outcomes


def _register_category(ctx: Context, params: dict[str, Any]) -> None:
    """A committed patch that set a category new to the group catalog appends it there."""
    if isinstance(params.get("category"), str):
        from openclaw_cli.ops.session_groups import register_category

        register_category(ctx, params["category"])


def _patch_mutation(
    ctx: Context,
    st: SessionStore,
    params: dict[str, Any],
    agent_id: str,
    key: str,
    main_name: str | None | bool = False,
) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    main = is_main_session(ctx, agent_id, key, main_name)

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        return apply_patch(
            current,
            params,
            key=key,
            now_ms=ctx.now_ms(),
            main=main,
            label_in_use=lambda label: any(k != key for k in st.label_owners(label)),
        )

    return mutate


# ---- sessions.reset -------------------------------------------------------------------------------------------


def reset_marker(reason: str, now_ms: int) -> dict[str, Any]:
    """The transcript entry OpenClaw 2026.9.6 appends on reset (observed:
    `{"type":"reset","id":"8848ab1d","parentId":<the leaf>,"timestamp":…,"reason":"reset"|"new"}`;
    its `chat.history` shows it as a "Reset" row). The store fills `parentId` with the leaf."""
    from openclaw_cli.clock import iso_ms

    return {
        "type": "reset",
        "id": uuid.uuid4().hex[:8],
        "parentId": None,
        "timestamp": iso_ms(now_ms),
        "reason": reason,
    }


def _created_by_reset(ctx: Context, agent_id: str, now: int) -> dict[str, Any]:
    """The row a 2026.9.6 Gateway's reset creates for a key it does not know (observed field for
    field: a new id, zeroed counters, `createdVia: "operator"`, the agent's resolved model; no
    transcript)."""
    resolved = _resolved(ctx, agent_id, None)
    return {
        "sessionId": str(uuid.uuid4()),
        "lifecycleRevision": str(uuid.uuid4()),
        "updatedAt": now,
        "sessionStartedAt": now,
        "systemSent": False,
        "abortedLastRun": False,
        "compactionCount": 0,
        "createdVia": "operator",
        "createdAt": now,
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
        "totalTokensFresh": True,
        "totalTokensVersion": 1,
        "modelProvider": resolved["modelProvider"],
        "model": resolved["model"],
    }


def sessions_reset(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.reset` as the store's behaviour release does it (spec D23,
    `behavior.lifecycle`). 2026.9.6/9.9: the key keeps its `sessionId` (new lifecycle revision,
    counters zeroed, the resolved model) and a `reset` entry is appended to its transcript; a key
    with no row gets one (`createdVia: "operator"`). 2026.7 (profile L): a new `sessionId`, the
    previous transcript leaves through a verified `.reset.` archive, an unknown key is not found.
    `{ok, key, entry, resolved}` plus ours: `sessionId`, `previousSessionId` (when it changed),
    `reason`, `archived`."""
    from openclaw_cli.lifecycle import reset_entry
    from openclaw_cli.ops.behavior import behavior_of

    method = "sessions.reset"
    _check_params(method, params, RESET_PARAMS, required=("key",))
    reason = params.get("reason")
    if reason is not None and reason not in ("new", "reset"):
        raise UsageError(f"invalid {method} params: at /reason: must be equal to one of the allowed values")
    _typed(method, params, "expectedSessionId", (str,), "string")
    dry_run = bool(params.get("dryRun"))
    loc = locate(
        ctx, params["key"], agent=params.get("agentId"), store=params.get("store"), read_only=dry_run
    )
    now = ctx.now_ms()
    expected = params.get("expectedSessionId")
    reason = reason or "reset"

    with loc.store as st:
        rules = behavior_of(ctx, st).lifecycle
        result: dict[str, Any] = {"ok": True, "key": loc.key}
        if loc.entry is None:
            if not rules.reset_creates_unknown_key or expected is not None:
                raise NotFoundError(f"session not found: {loc.key}")
            return _reset_creates(ctx, st, loc, now, result, dry_run, reason)
        keep = rules.reset_keeps_session_id
        new_sid = str(uuid.uuid4())

        def build(current: dict[str, Any]) -> dict[str, Any]:
            if expected is not None and current.get("sessionId") != expected.strip():
                raise SessionChangedError(loc.key, "reset")
            sid = current["sessionId"] if keep and isinstance(current.get("sessionId"), str) else new_sid
            entry = reset_entry(current, session_key=loc.key, new_session_id=sid, now_ms=now)
            if keep:
                entry["totalTokensVersion"] = 1
            return entry

        marker = reset_marker(reason, now) if rules.reset_appends_marker else None
        if dry_run:
            entry = build(dict(loc.entry))
            result.update(
                entry=entry,
                resolved=_resolved(ctx, loc.agent_id, entry),
                dryRun=True,
                sessionId=entry["sessionId"],
                reason=reason,
            )
            if entry["sessionId"] != loc.entry.get("sessionId"):
                result["previousSessionId"] = loc.entry.get("sessionId")
            return result
        with _writer(ctx, st):
            current = st.get_entry(loc.key)
            linked = linked_transcripts(st, current) if current is not None else []
            from openclaw_cli.store.usage_ledger import Appended, ledgered, record_leaving

            appended = Appended()
            if (
                not keep
                and current is not None
                and (expected is None or current.get("sessionId") == expected.strip())
            ):
                # issue 27: the previous transcript leaves through a reset archive; its usage stays
                appended = record_leaving(
                    st, [(loc.key, current, current.get("sessionId"))], reason="reset", now_ms=now
                )
            with ledgered(appended):
                outcome = st.reset_session(
                    loc.key, build, lock_settings=ctx.lock_settings(), now_ms=now, marker=marker
                )
        if linked:
            result["warnings"] = [
                symlink_warning(path).replace("(the row was)", "(the session was reset)") for path in linked
            ]
        result.update(
            entry=outcome.entry,
            resolved=_resolved(ctx, loc.agent_id, outcome.entry),
            sessionId=outcome.session_id,
        )
        if outcome.previous_session_id not in (None, outcome.session_id):
            result["previousSessionId"] = outcome.previous_session_id
        result.update(
            reason=reason, archived=[str(outcome.archive.path)] if outcome.archive is not None else []
        )
        if outcome.shared:
            result["warning"] = (
                "Another session row uses the previous transcript; it stays in place (not archived)."
            )
        return result


def _stored(row: dict[str, Any] | None) -> dict[str, Any]:
    """The row `patch_entry` stored: never None when the mutation always returns a row (it
    writes that row, or keeps an unchanged one, or raises)."""
    return cast("dict[str, Any]", row)


def _reset_creates(
    ctx: Context, st: SessionStore, loc: Any, now: int, result: dict[str, Any], dry_run: bool, reason: str
) -> dict[str, Any]:
    """Reset of a key with no row, as a 2026.9.6 Gateway does it: the row is created."""
    from openclaw_cli.lifecycle import check_session_key

    check_session_key(loc.key, new=True)  # the key rule of rows created by a request (issue 29 #8)
    created = _created_by_reset(ctx, loc.agent_id, now)

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is not None:
            raise SessionChangedError(loc.key, "reset")  # created meanwhile: the caller retries
        return created

    if not dry_run:
        with _writer(ctx, st):
            created = _stored(
                st.patch_entry(loc.key, mutate, lock_settings=ctx.lock_settings(), create=True, now_ms=now)
            )
    result.update(
        entry=created,
        resolved=_resolved(ctx, loc.agent_id, created),
        sessionId=created["sessionId"],
        reason=reason,
        archived=[],
        created=True,
    )
    if dry_run:
        result["dryRun"] = True
    return result


# ---- sessions.create (operator fork) ---------------------------------------------------------------------


def _check_create(params: Any) -> dict[str, Any]:
    method = "sessions.create"
    checked = _check_params(method, params, CREATE_PARAMS)
    if params.get("fork") is True and params.get("succeedsParent"):
        raise PreconditionError("succeedsParent conflicts with fork: a fork runs in parallel to its parent")
    for name in CREATE_UNSUPPORTED:
        if name in params:
            raise UsageError(
                f"sessions.create: {name} is not supported by openclaw-cli (it does not run agents); "
                "nothing was created."
            )
    _typed(method, params, "fork", (bool,), "boolean")
    if params.get("fork") is True and not params.get("parentSessionKey"):
        raise PreconditionError("fork requires parentSessionKey")
    if "forkFrom" in params and params.get("fork") is not True:
        raise PreconditionError("forkFrom requires fork=true")
    if "forkFrom" in params and params["forkFrom"] != "last-completed":
        raise UsageError(f"invalid {method} params: at /forkFrom: must be equal to one of the allowed values")
    for name in ("parentSessionKey", "agentId", "key", "displayName", "model"):
        _typed(method, params, name, (str,), "string")
    if params.get("label") is not None:
        parse_label(params["label"])
    return checked


def _child_key(ctx: Context, params: dict[str, Any], agent_id: str) -> str:
    from openclaw_cli.keys import parse_agent_key, to_agent_store_key
    from openclaw_cli.lifecycle import check_session_key

    raw = params.get("key")
    if raw is None:
        return f"agent:{agent_id}:dashboard:{uuid.uuid4()}"
    key = check_session_key(raw, what="new session key", new=True)
    parsed = parse_agent_key(key)
    if parsed and parsed[0] != agent_id:
        raise UsageError(
            f'New session key "{key}" belongs to agent "{parsed[0]}", but the parent session belongs to '
            f'agent "{agent_id}"; a fork stays in its parent\'s store.'
        )
    return to_agent_store_key(agent_id, key, main_key_name(ctx))


def _model_override(entry: dict[str, Any], model: str | None, parent: dict[str, Any] | None) -> None:
    if model is not None:
        provider, _, name = model.strip().rpartition("/")
        entry["modelOverride"] = name
        if provider:
            entry["providerOverride"] = provider
        entry["modelOverrideSource"] = "user"
        return
    for name in ("providerOverride", "modelOverride", "modelOverrideSource"):
        if parent is not None and parent.get(name) is not None:
            entry[name] = parent[name]


def sessions_create(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.create`: with `{parentSessionKey, fork: true}` an operator fork (R3.8) — the
    parent's active branch copied into a new session, isolated (header only, with a warning) when
    the parent is above the fixed 100K-token cap; refused while the parent's transcript write lock
    is held unless `forkFrom: "last-completed"`. Without `fork`, an empty operator session.
    `{ok, key, sessionId, entry, runStarted: false, resolved}` plus ours (`forked`, `isolated`,
    `parentTokens`, `maxTokens`, `copiedEntries`, `warning`)."""
    from openclaw_cli.lifecycle import PARENT_FORK_MAX_TOKENS

    params = _check_create(params)
    dry_run = bool(params.get("dryRun"))
    parent_raw = params.get("parentSessionKey")
    now = ctx.now_ms()
    label = parse_label(params["label"]) if params.get("label") is not None else None
    if parent_raw is None:
        return _create_empty(ctx, params, label, now, dry_run)
    loc = locate(
        ctx,
        parent_raw,
        agent=params.get("agentId"),
        store=params.get("store"),
        read_only=dry_run,
        what="parent session key",
    )
    with loc.store as st:
        if loc.entry is None:
            raise NotFoundError(f"session not found: {loc.key}")
        parent = loc.entry
        child_key = _child_key(ctx, params, loc.agent_id)
        if st.get_entry(child_key) is not None:
            raise PreconditionError(f"session already exists: {child_key}")
        if label is not None and st.label_owners(label):
            raise PreconditionError(f"label already in use: {label}")
        fork = params.get("fork") is True

        def build(seed: dict[str, Any], plan: Any) -> dict[str, Any]:
            entry: dict[str, Any] = {
                "sessionId": seed["sessionId"],
                "lifecycleRevision": str(uuid.uuid4()),
                "updatedAt": now,
                "sessionStartedAt": now,
                "delivery": {"kind": "none"},
                "createdVia": "operator",
                "createdAt": now,
                "spawnDepth": 0,
                "parentSessionKey": loc.key,
                "parentSessionId": parent.get("sessionId"),
            }
            isolated = plan is None or plan.isolated
            if fork and not isolated:
                entry["forkSource"] = {"sessionKey": loc.key, "sessionId": parent.get("sessionId")}
            entry["totalTokensFresh"] = False
            if fork and not isolated:
                entry["forkedFromParent"] = True
            if label is not None:
                if st.label_owners(label):
                    raise PreconditionError(f"label already in use: {label}")
                entry["label"] = label
            if params.get("displayName"):
                entry["displayName"] = params["displayName"].strip()
            _model_override(entry, params.get("model"), parent)
            if isinstance(parent.get("chatType"), str):
                entry["chatType"] = parent["chatType"]
            return entry

        if dry_run:
            from openclaw_cli.store.fork import plan_fork

            snapshot = st.read_snapshot(loc.key, parent)
            seed_sid = str(uuid.uuid4())
            plan = (
                plan_fork(
                    parent,
                    snapshot.header,
                    snapshot.branch,
                    child_session_id=seed_sid,
                    timestamp="",
                    cwd="",
                    parent_ref=None,
                    max_tokens=PARENT_FORK_MAX_TOKENS,
                    through_last_completed=params.get("forkFrom") == "last-completed",
                )
                if fork
                else None
            )
            entry = build({"sessionId": seed_sid}, plan)
            return _create_result(ctx, loc.agent_id, child_key, entry, plan, fork, dry_run=True)
        if not fork:
            with _writer(ctx, st):

                def fresh(current: dict[str, Any] | None) -> dict[str, Any]:
                    _refuse_existing(child_key, current)
                    return build({"sessionId": str(uuid.uuid4())}, None)

                entry = _stored(
                    st.patch_entry(
                        child_key, fresh, lock_settings=ctx.lock_settings(), create=True, now_ms=now
                    )
                )
            return _create_result(ctx, loc.agent_id, child_key, entry, None, False)
        with _writer(ctx, st):
            outcome = st.fork_session(
                loc.key,
                child_key,
                build,
                lock_settings=ctx.lock_settings(),
                now_ms=now,
                max_tokens=PARENT_FORK_MAX_TOKENS,
                wait=params.get("forkFrom") == "last-completed",
                through_last_completed=params.get("forkFrom") == "last-completed",
            )
        return _create_result(ctx, loc.agent_id, child_key, outcome.entry, outcome.plan, True)


def _refuse_existing(key: str, current: dict[str, Any] | None) -> None:
    if current is not None:
        raise PreconditionError(f"session already exists: {key}")


def _create_empty(
    ctx: Context, params: dict[str, Any], label: str | None, now: int, dry_run: bool
) -> dict[str, Any]:
    from openclaw_cli.ops.targets import open_target, select_targets

    agent = params.get("agentId")
    # without a key, OpenClaw's owner rule judges the main key (recorded: `sessions.create {}` with two
    # agents is refused naming `session key "main"`, as `sessions.usage {}` is)
    owner = owner_agent(ctx, params.get("key") or "main", agent, params.get("store"))
    if owner is None and params.get("store") is None:
        from openclaw_cli.config import default_agent_id

        owner = default_agent_id(ctx.config)
    target = select_targets(ctx.paths, ctx.config, agent=owner, all_agents=False, store=params.get("store"))[
        0
    ]
    key = _child_key(ctx, params, target.agent_id)

    def build(current: dict[str, Any] | None) -> dict[str, Any]:
        _refuse_existing(key, current)
        entry: dict[str, Any] = {
            "sessionId": str(uuid.uuid4()),
            "lifecycleRevision": str(uuid.uuid4()),
            "updatedAt": now,
            "sessionStartedAt": now,
            "delivery": {"kind": "none"},
            "createdVia": "operator",
            "createdAt": now,
            "spawnDepth": 0,
        }
        if label is not None:
            if st.label_owners(label):
                raise PreconditionError(f"label already in use: {label}")
            entry["label"] = label
        if params.get("displayName"):
            entry["displayName"] = params["displayName"].strip()
        _model_override(entry, params.get("model"), None)
        return entry

    with open_target(ctx, target, read_only=dry_run) as st:
        if dry_run:
            return _create_result(
                ctx, target.agent_id, key, build(st.get_entry(key)), None, False, dry_run=True
            )
        with _writer(ctx, st):
            entry = st.patch_entry(key, build, lock_settings=ctx.lock_settings(), create=True, now_ms=now)
        return _create_result(ctx, target.agent_id, key, entry, None, False)


def _create_result(
    ctx: Context,
    agent_id: str,
    key: str,
    entry: dict[str, Any],
    plan: Any,
    fork: bool,
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ok": True,
        "key": key,
        "sessionId": entry["sessionId"],
        "entry": entry,
        "runStarted": False,
        "resolved": _resolved(ctx, agent_id, entry),
    }
    if fork and plan is not None:
        result.update(
            forked=not plan.isolated,
            isolated=plan.isolated,
            parentTokens=plan.parent_tokens,
            maxTokens=plan.max_tokens,
            copiedEntries=plan.copied_entries,
        )
        if plan.warning:
            result["warning"] = plan.warning
    if dry_run:
        result["dryRun"] = True
    return result


# ---- sessions.delete -----------------------------------------------------------------------------------------


def sessions_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.delete`: `{ok, key, deleted, archived:[absolute archive paths]}`; an unknown key
    is `deleted: false` (ok). Every transcript that leaves is a verified zstd archive first (D6.2);
    `deleteTranscript: false` removes only the row."""
    from openclaw_cli.maintenance.removal import retirement_for_keys

    method = "sessions.delete"
    _check_params(method, params, DELETE_PARAMS, required=("key",))
    for name in ("deleteTranscript", "emitLifecycleHooks", "archivedOnly"):
        _typed(method, params, name, (bool,), "boolean")
    for name in ("expectedSessionId", "expectedLifecycleRevision"):
        _typed(method, params, name, (str,), "string")
    _typed(method, params, "expectedSessionUpdatedAt", (int, float), "number")
    dry_run = bool(params.get("dryRun"))
    loc = locate(
        ctx, params["key"], agent=params.get("agentId"), store=params.get("store"), read_only=dry_run
    )
    with loc.store as st:
        if is_main_session(ctx, loc.agent_id, loc.key):
            raise PreconditionError(f"Cannot delete the main session ({loc.key}).")

        def check(entry: dict[str, Any] | None) -> None:
            if entry is None:
                return
            if params.get("archivedOnly") is True and entry.get("archivedAt") is None:
                raise PreconditionError(
                    f"Session {loc.key} is not archived. Archive it first, then delete it."
                )
            for name, field_name in (
                ("expectedSessionId", "sessionId"),
                ("expectedLifecycleRevision", "lifecycleRevision"),
                ("expectedSessionUpdatedAt", "updatedAt"),
            ):
                want = params.get(name)
                have = entry.get(field_name)
                if want is not None and (want.strip() if isinstance(want, str) else want) != have:
                    raise SessionChangedError(loc.key, "deletion")

        check(loc.entry)
        if loc.entry is None:
            return {"ok": True, "key": loc.key, "deleted": False, "archived": []}
        keep = params.get("deleteTranscript") is False
        if dry_run:
            plan = retirement_for_keys(st, {loc.key: loc.entry}, [loc.key], keep_transcripts=keep)
            would = [a.name for a in plan.archive_actions] or list(plan.session_ids)
            return {
                "ok": True,
                "key": loc.key,
                "deleted": False,
                "dryRun": True,
                "wouldDelete": True,
                "wouldArchive": would,
            }
        with _writer(ctx, st):
            current = st.get_entry(loc.key)
            check(current)
            if current is None:
                return {"ok": True, "key": loc.key, "deleted": False, "archived": []}
            if current.get("sessionId") != loc.entry.get("sessionId"):
                raise SessionChangedError(loc.key, "deletion")
            plan = retirement_for_keys(st, {loc.key: current}, [loc.key], keep_transcripts=keep)
            linked = [] if keep else linked_transcripts(st, current)
            from openclaw_cli.store.usage_ledger import Appended, ledgered, record_retirement

            # issue 27: the transcript's usage outlives it (appended before it leaves)
            appended = (
                Appended() if keep else record_retirement(st, plan, reason="deleted", now_ms=ctx.now_ms())
            )
            with ledgered(appended):
                outcome = st.delete_session(
                    loc.key, current, plan, lock_settings=ctx.lock_settings(), now_ms=ctx.now_ms()
                )
        doc = {
            "ok": True,
            "key": loc.key,
            "deleted": outcome.deleted,
            "archived": [str(p) for p in outcome.archived],
        }
        if linked:
            doc["warnings"] = [symlink_warning(path) for path in linked]
        return doc


def linked_transcripts(st: SessionStore, entry: dict[str, Any]) -> list[str]:
    """A file store's transcript paths of `entry` that are symbolic links: never followed, so
    neither archived nor removed — said, not passed over in silence (issue 29 #9)."""
    if not st.transcripts_in_files:
        return []
    sid = entry.get("sessionId")
    names = [f"{sid}.jsonl"] if isinstance(sid, str) and sid else []
    session_file = entry.get("sessionFile")
    if isinstance(session_file, str) and session_file:
        names.append(session_file)
    found: list[str] = []
    looked: set[str] = set()
    for name in names:
        path = os.path.join(str(st.sessions_dir), name) if not os.path.isabs(name) else name
        if path not in looked:  # (the usual row names one file twice: one lstat)
            looked.add(path)
            if os.path.islink(path):
                found.append(path)
    return found


def symlink_warning(path: str) -> str:
    return (
        f"Transcript {path} is a symbolic link: links are not followed, so it was neither archived nor "
        "removed (the row was). Archive or remove its target yourself if it should go."
    )


def sessions_patch_many_method(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.patchMany` (OpenClaw 2026.9.6): one `patch` applied to up to 100 `targets`, each
    as its own `sessions.patch` (its expectations checked, its own outcome), committed together
    per store; `{outcomes: [{ok, key, agentId?, error?}]}` in the targets' order."""
    batch = [{**target, **params["patch"]} for target in params["targets"]]
    outcomes = []
    for target, outcome in zip(params["targets"], sessions_patch_many(ctx, batch), strict=True):
        identity = {"key": target["key"], **({"agentId": target["agentId"]} if target.get("agentId") else {})}
        if isinstance(outcome, OpenClawError):
            outcomes.append(
                {"ok": False, **identity, "error": {"code": "INVALID_REQUEST", "message": outcome.message}}
            )
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            outcomes.append({"ok": True, **identity})
    return {"outcomes": outcomes}
