"""Entry maintenance that archives in place (releases 2026.9.6 and 2026.9.9; `maintenance.md`
Appendix A G3, `observed-openclaw-2026.9.6.md` §7, confirmed against the installed 2026.9.6).

Stages, forced (a cleanup), on the store left after the explicit repairs:
1. model-run probes older than 24 h are deleted, only when the *unarchived* rows exceed maxEntries;
2. `dashboard:` rows inactive for `archiveDashboardAfter` are archived (`stale-dashboard`);
3. rows older than `pruneAfter` (by `updatedAt`): synthetic ones deleted (`prune-stale`), the others
   archived (`age-retention`);
4. the cap: unarchived rows beyond maxEntries, oldest activity first among the unprotected ones;
   synthetic ones deleted (`cap-overflow`), the others archived (`active-session-cap`). No floor:
   protected rows alone may keep the store above the cap.

A row is left alone by every stage when it is archived already, pinned (and pinnable), locked to
its model, running, named by `--active-key` or live work, active within `preserveRecent`, or
protected: a non-synthetic primary key, thread, external delivery route (DMs included), `direct:`
peer, external group/channel, Telegram topic, `delivery.kind: external`, or a group/channel/thread
chat. Activity is the newest of lastInteractionAt, lastActivityAt, sessionStartedAt, updatedAt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openclaw_cli.keys import (
    _THREAD_MARKER,
    PROBE_KEY_MIN_LEN,
    _split_agent_key,
    _text,
    is_model_run_probe_key,
    is_synthetic_key,
    is_synthetic_rest,
    parse_agent_key,
    parse_thread,
)
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import Record

REASON_DASHBOARD = "stale-dashboard"
REASON_AGE = "age-retention"
REASON_CAP = "active-session-cap"
ACTION_ARCHIVE_DASHBOARD = "archive-dashboard"
ACTION_ARCHIVE_AGE = "archive-age"
ACTION_ARCHIVE_CAP = "archive-cap"
ARCHIVE_ACTIONS = {
    REASON_DASHBOARD: ACTION_ARCHIVE_DASHBOARD,
    REASON_AGE: ACTION_ARCHIVE_AGE,
    REASON_CAP: ACTION_ARCHIVE_CAP,
}

_DELIVERY_PEER_KINDS = frozenset({"channel", "direct", "dm", "group"})
_DIRECT_PEER = lazy_pattern(globals(), "_DIRECT_PEER", r"^direct:.+$")
_EXTERNAL_GROUP = lazy_pattern(globals(), "_EXTERNAL_GROUP", r"^[^:]+:(?:group|channel):.+$")
_TELEGRAM_DM_TOPIC = lazy_pattern(globals(), "_TELEGRAM_DM_TOPIC", r"^telegram:(?:direct|dm):.+:topic:[^:]+$")


def _rest(key: str) -> str | None:
    parsed = parse_agent_key(key)
    return parsed[1].lower() if parsed else None


def is_disposable(key: str) -> bool:
    """Synthetic runtime rows (deleted, never archived): §3.2 keys and model-run probes."""
    return is_synthetic_key(key) or is_model_run_probe_key(key)


def is_delivery_route(key: str) -> bool:
    """A complete external delivery shape: `<channel>:<account>:direct|dm:<peer>` or
    `<channel>:channel|direct|dm|group:<peer>` (a thread suffix set aside)."""
    thread = parse_thread(key)
    return _is_route_rest(_rest(thread[0] if thread else key))


def _is_route_rest(rest: str | None) -> bool:
    """`is_delivery_route` of a key without a thread suffix, from its lower-cased rest."""
    if rest is None:
        return False
    parts = rest.split(":")
    if parts[0] == "agent" or len(parts) < 3 or not parts[0].strip():
        return False
    if len(parts) >= 4 and parts[2] in ("direct", "dm"):
        return bool(parts[1].strip() and parts[3].strip() and ":".join(parts[3:]).strip())
    return parts[1] in _DELIVERY_PEER_KINDS and bool(parts[2].strip() and ":".join(parts[2:]).strip())


def _chat_type(entry: Mapping[str, Any]) -> str:
    chat = entry.get("chatType")
    if chat is None:
        origin = entry.get("origin")
        chat = origin.get("chatType") if isinstance(origin, Mapping) else None
    return chat.strip().lower() if isinstance(chat, str) else ""


def is_protected(key: str, entry: Mapping[str, Any]) -> bool:
    """The observed 9.6 protected set (never a synthetic key)."""
    if is_disposable(key):
        return False
    return _protected_by_key(key, _rest(key)) or _protected_by_entry(entry)


def _protected_by_key(key: str, rest: str | None) -> bool:
    """The key-only half of `is_protected` (a non-synthetic key): primary, thread, delivery route,
    `direct:` peer, external group/channel, Telegram DM topic."""
    lowered = key.strip().lower()
    if lowered == "global" or rest == "main" or parse_thread(key):
        return True
    shape = rest if rest is not None else lowered
    return bool(
        _is_route_rest(rest)  # (is_delivery_route(key): the key has no thread suffix here)
        or _DIRECT_PEER.match(shape)
        or _EXTERNAL_GROUP.match(shape)
        or _TELEGRAM_DM_TOPIC.match(shape)
    )


def _protected_by_entry(entry: Mapping[str, Any]) -> bool:
    """The entry half: an external delivery, or a group/channel/thread chat."""
    delivery = entry.get("delivery")
    # (`type(...) is dict` first: the usual values, without the ABC's instance check)
    if (
        delivery is not None
        and (type(delivery) is dict or isinstance(delivery, Mapping))
        and delivery.get("kind") == "external"
    ):
        return True
    return _chat_type(entry) in ("group", "channel", "thread")


# What a key alone decides, as bits (`_key_shape`)
_DISPOSABLE, _KEY_PROTECTED, _DASHBOARD, _MODEL_RUN = 1, 2, 4, 8


def _key_shape(key: str) -> int:
    """Every key-only verdict of the stages from one burst of parsing the key: a planning run
    remembers them per key (`Guard.shape`) instead of re-parsing the key in every stage, which
    needed a process-wide parse cache as large as the store (~30 MB at 100,000 keys, issue 30).

    `_key_shape_parts` with its helpers inline for a string key (every real one): the key stripped
    and lower-cased once, `_split_agent_key`'s and `parse_thread`'s steps on them, and each
    pattern tried only when the text it needs is there (20,000 keys: ~35 -> ~15 ms; the same
    verdicts, `tests/test_archiving_key_shape.py`)."""
    if type(key) is not str:
        return _key_shape_parts(key)
    bits = _MODEL_RUN | _DISPOSABLE if len(key) >= PROBE_KEY_MIN_LEN and is_model_run_probe_key(key) else 0
    value = key.strip()
    lowered = value.lower()
    rest = None  # `_rest(key)`: `_split_agent_key`'s rest, lower-cased
    if value[:6].lower() == "agent:":
        body = value[6:]
        sep = body.find(":")
        if sep >= 0:
            raw = body[sep + 1 :].strip()
            if raw and body[:sep].strip() and not raw.startswith(":"):
                rest = raw.lower()
    if is_synthetic_rest(rest if rest is not None else lowered):
        return bits | _DISPOSABLE | (_DASHBOARD if rest is not None and rest.startswith("dashboard:") else 0)
    if rest is not None and rest.startswith("dashboard:"):
        bits |= _DASHBOARD
    if bits & _DISPOSABLE:
        return bits
    # `_protected_by_key(key, rest)`
    if lowered == "global" or rest == "main":
        return bits | _KEY_PROTECTED
    marker = lowered.rfind(_THREAD_MARKER)  # `parse_thread(key)`
    if marker >= 0 and value[marker + len(_THREAD_MARKER) :].strip():
        return bits | _KEY_PROTECTED
    shape = rest if rest is not None else lowered
    if (
        _is_route_rest(rest)
        or (shape.startswith("direct:") and _DIRECT_PEER.match(shape))
        or ((":group:" in shape or ":channel:" in shape) and _EXTERNAL_GROUP.match(shape))
        or (shape.startswith("telegram:") and ":topic:" in shape and _TELEGRAM_DM_TOPIC.match(shape))
    ):
        bits |= _KEY_PROTECTED
    return bits


def _key_shape_parts(key: str) -> int:
    """`_key_shape` from the key predicates themselves (what the inline way must equal)."""
    bits = _MODEL_RUN | _DISPOSABLE if is_model_run_probe_key(key) else 0
    # the key parsed once (`_rest`; `is_synthetic_key` reads the same rest, or the whole key)
    parsed = _split_agent_key(key) if isinstance(key, str) else None
    rest = parsed[1].lower() if parsed else None
    if is_synthetic_rest(rest if rest is not None else _text(key).strip().lower()):
        bits |= _DISPOSABLE
    if (rest or "").startswith("dashboard:"):
        bits |= _DASHBOARD
    if not bits & _DISPOSABLE and _protected_by_key(key, rest):
        bits |= _KEY_PROTECTED
    return bits


def key_shape(key: str) -> int:
    """What `Guard.shapes` holds for `key` (a caller that knows the keys before planning may hand
    them to `plan.plan_cleanup(key_shapes=...)`)."""
    return _key_shape(key)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0.0
    return float(value)


_ACTIVITY_FIELDS = ("lastInteractionAt", "lastActivityAt", "sessionStartedAt", "updatedAt")


def activity_at(entry: Mapping[str, Any]) -> float:
    """The newest of the activity fields as a number (0.0 when none is one): `max(0.0, *numbers)`
    without the generator and a call per absent field (the cap sorts 100,000 rows by it)."""
    best = 0.0
    get = entry.get
    for name in _ACTIVITY_FIELDS:
        value = get(name)
        if value is not None:
            number = _number(value)
            if number > best:
                best = number
    return best


def is_pinnable(key: str, entry: Mapping[str, Any]) -> bool:
    """9.6: not a sub-agent run (key or `spawnedBy`), and no parent or the agent's main key as parent."""
    rest = _rest(key)
    if key.strip().lower().startswith("subagent:") or (rest or "").startswith("subagent:"):
        return False
    spawned = entry.get("spawnedBy")
    if isinstance(spawned, str) and spawned.strip():
        return False
    parent = entry.get("parentSessionKey")
    if not isinstance(parent, str) or not parent.strip():
        return True
    parsed = parse_agent_key(key)
    return parsed is not None and parent.strip() == f"agent:{parsed[0]}:main"


class Guard(Record):
    """Who no stage touches (see the module docstring). `preserve_keys` are compared as given and
    trimmed/lower-cased; `preserve_session_ids` are sessions held by live work."""

    _fields = ("preserve_keys", "preserve_session_ids", "preserve_recent_ms", "now_ms")  # (not `shapes`)
    preserve_keys: frozenset[str]
    preserve_session_ids: frozenset[str]
    preserve_recent_ms: int | None
    now_ms: float
    shapes: dict[str, int]  # a memo: not shown, not compared

    def __init__(
        self,
        preserve_keys: frozenset[str],
        preserve_session_ids: frozenset[str],
        preserve_recent_ms: int | None,
        now_ms: float,
        shapes: dict[str, int] | None = None,
    ) -> None:
        self.preserve_keys = preserve_keys
        self.preserve_session_ids = preserve_session_ids
        self.preserve_recent_ms = preserve_recent_ms
        self.now_ms = now_ms
        self.shapes = {} if shapes is None else shapes

    def shape(self, key: str) -> int:
        """`_key_shape(key)`, computed once per key for this guard's run."""
        bits = self.shapes.get(key)
        if bits is None:
            bits = self.shapes[key] = _key_shape(key)
        return bits

    def preserved(self, key: str, entry: Mapping[str, Any], archived: bool) -> bool:
        if archived:
            return True
        if "pinnedAt" in entry and entry.get("pinnedAt") is not None and is_pinnable(key, entry):
            return True
        if entry.get("modelSelectionLocked") is True or entry.get("status") == "running":
            return True
        # (both sets are empty in a run without --active-key or live work: not asked then)
        if self.preserve_keys and (key in self.preserve_keys or key.strip().lower() in self.preserve_keys):
            return True
        if self.preserve_session_ids:
            sid = entry.get("sessionId")
            if isinstance(sid, str) and sid in self.preserve_session_ids:
                return True
        shape = self.shape(key)
        if shape & _DISPOSABLE:  # (never protected, never spared for recent activity)
            return False
        if self.preserve_recent_ms is not None:
            activity = activity_at(entry)
            if activity > 0 and self.now_ms - activity <= self.preserve_recent_ms:
                return True
        return bool(shape & _KEY_PROTECTED) or _protected_by_entry(entry)

    def free_fn(self) -> Callable[[str, Mapping[str, Any]], bool]:
        """`lambda key, entry: not self.preserved(key, entry, False)` with the guard's fields read
        once and the per-row checks inline, the key's shape first (most rows of a big store are
        protected by their key alone) and before the entry's activity and chat: the archive
        planner asks it of every unarchived row (100,000 at issue 27's scale). Every check is
        pure, so their order does not change the verdict."""
        keys, sids = self.preserve_keys, self.preserve_session_ids
        recent, now = self.preserve_recent_ms, self.now_ms
        shapes, shape_of = self.shapes, self.shape

        def is_free(key: str, entry: Mapping[str, Any]) -> bool:
            bits = shapes.get(key)
            if bits is None:
                bits = shape_of(key)
            if bits & _KEY_PROTECTED:  # (every check before `_DISPOSABLE` answers preserved too)
                return False
            get = entry.get
            if get("pinnedAt") is not None and is_pinnable(key, entry):
                return False
            if get("modelSelectionLocked") is True or get("status") == "running":
                return False
            if keys and (key in keys or key.strip().lower() in keys):
                return False
            if sids:
                sid = get("sessionId")
                if isinstance(sid, str) and sid in sids:
                    return False
            if bits & _DISPOSABLE:  # (never protected, never spared for recent activity)
                return True
            if recent is not None:
                activity = activity_at(entry)
                if activity > 0 and now - activity <= recent:
                    return False
            # `_protected_by_entry`, inline
            delivery = get("delivery")
            if (
                delivery is not None
                and (type(delivery) is dict or isinstance(delivery, Mapping))
                and delivery.get("kind") == "external"
            ):
                return False
            chat = get("chatType")
            if chat is None:
                origin = get("origin")
                chat = origin.get("chatType") if isinstance(origin, Mapping) else None
            return not (isinstance(chat, str) and chat.strip().lower() in ("group", "channel", "thread"))

        return is_free


class ArchivingResult(Record):
    _fields = (
        "deleted",
        "archived",
        "model_run_pruned",
        "archived_count",
        "cap_archived",
        "pruned",
        "capped",
    )
    deleted: list[tuple[str, str]]  # (key, action) in stage order
    archived: dict[str, str]  # key -> archiveReason, in stage order
    model_run_pruned: int
    archived_count: int  # dashboard + age archives (the JSON's `archived`)
    cap_archived: int
    pruned: int  # stale rows deleted
    capped: int  # cap victims: archived + deleted

    def __init__(
        self,
        deleted: list[tuple[str, str]] | None = None,
        archived: dict[str, str] | None = None,
        model_run_pruned: int = 0,
        archived_count: int = 0,
        cap_archived: int = 0,
        pruned: int = 0,
        capped: int = 0,
    ) -> None:
        self.deleted = [] if deleted is None else deleted
        self.archived = {} if archived is None else archived
        self.model_run_pruned = model_run_pruned
        self.archived_count = archived_count
        self.cap_archived = cap_archived
        self.pruned = pruned
        self.capped = capped


def plan_archiving(
    store: Mapping[str, Any],
    *,
    guard: Guard,
    prune_after_ms: int | None,
    max_entries: int | None,
    dashboard_after_ms: int | None,
    model_run_after_ms: int | None,
) -> ArchivingResult:
    """The four stages over `store` (key -> entry, store order); nothing is mutated.

    Per row (100,000 at issue 27's scale) the stages walk `store.items()` themselves, the cheap
    conditions (a deleted or archived row, the key's shape, the time field) before the protection
    verdict, which is asked once per row and kept (`verdicts`); no call per row but `Guard.free_fn`'s."""
    now = guard.now_ms
    out = ArchivingResult()
    # rows deleted so far (the stages walk `store` itself, skipping them: no copy of a 100k-row store)
    deleted: set[str] = set()
    archived: set[str]  # rows archived already or by a stage (set below)
    shapes = guard.shapes
    shape_of = guard.shape
    is_free = guard.free_fn()
    verdicts: dict[str, bool] = {}  # key -> free while unarchived (asked by the prune and cap stages)
    empty: Mapping[str, Any] = {}

    def entry_of(key: str) -> Mapping[str, Any]:
        value = store[key]
        return value if type(value) is dict or isinstance(value, Mapping) else empty

    def free(key: str, entry: Mapping[str, Any]) -> bool:
        if key in archived:
            return False  # (an archived row is preserved)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = is_free(key, entry)
        return verdict

    cap = (
        max_entries
        if isinstance(max_entries, int) and not isinstance(max_entries, bool) and max_entries > 0
        else None
    )
    # The model-run and dashboard stages read every key's shape: when either may run, one walk of
    # the store makes every shape first and notes the rows each stage needs — the probe keys, the
    # dashboard keys, and the rows not protected by their key (the only ones the prune and cap
    # stages can take: `is_free` refuses the others first). The stages then walk those lists, in
    # store order, instead of the whole store three more times (issue 30: *many*'s 20,000 rows,
    # 11,155 protected by their key, 2,109 dashboard rows).
    rows: Any = store.items()  # what the prune and cap stages walk
    model_run_keys: list[str] | None = None
    dashboard_keys: list[str] | None = None
    if (dashboard_after_ms and dashboard_after_ms > 0) or (
        cap is not None and model_run_after_ms and model_run_after_ms > 0
    ):
        archived = set()
        model_run_keys, dashboard_keys, unprotected = [], [], []
        for key, value in store.items():
            if (type(value) is dict or isinstance(value, Mapping)) and "archivedAt" in value:
                archived.add(key)
            bits = shapes.get(key)
            if bits is None:
                bits = shapes[key] = _key_shape(key)  # (`guard.shape(key)`)
            if bits & _MODEL_RUN:
                model_run_keys.append(key)
            if bits & _DASHBOARD:
                dashboard_keys.append(key)
            if not bits & _KEY_PROTECTED:
                unprotected.append((key, value))
        rows = unprotected
    else:
        archived = {
            k for k, e in store.items() if (type(e) is dict or isinstance(e, Mapping)) and "archivedAt" in e
        }
    unarchived = len(store) - len(archived)
    if cap is not None and unarchived > cap and model_run_after_ms and model_run_after_ms > 0:
        cutoff = now - model_run_after_ms
        for key in [k for k in model_run_keys or () if free(k, entry_of(k))]:
            updated = entry_of(key).get("updatedAt")
            if isinstance(updated, int | float) and not isinstance(updated, bool) and updated < cutoff:
                deleted.add(key)
                out.deleted.append((key, "prune-model-run"))
                out.model_run_pruned += 1
    if dashboard_after_ms and dashboard_after_ms > 0:
        cutoff = now - dashboard_after_ms
        for key in dashboard_keys or ():
            if key in deleted:
                continue
            entry = entry_of(key)
            if not free(key, entry):
                continue
            activity = activity_at(entry)
            if 0 < activity < cutoff:
                archived.add(key)
                out.archived[key] = REASON_DASHBOARD
                out.archived_count += 1
    if prune_after_ms and prune_after_ms > 0:
        cutoff = now - prune_after_ms
        for key, value in rows:
            if key in deleted or key in archived:
                continue
            entry = value if type(value) is dict or isinstance(value, Mapping) else empty
            updated = entry.get("updatedAt")
            # (the time field before the verdict: both are pure, a row not stale is asked by the cap)
            kind = type(updated)
            if updated is not None and (kind is int or kind is float):  # (the usual row: no isinstance)
                if not updated < cutoff:
                    continue
            elif (
                updated is None
                or not isinstance(updated, int | float)
                or isinstance(updated, bool)
                or not updated < cutoff
            ):
                continue
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = is_free(key, entry)
            if not verdict:
                continue
            bits = shapes.get(key)
            if bits is None:
                bits = shape_of(key)
            if bits & _DISPOSABLE:
                deleted.add(key)
                out.deleted.append((key, "prune-stale"))
                out.pruned += 1
            else:
                archived.add(key)
                out.archived[key] = REASON_AGE
                out.archived_count += 1
    if cap is not None:
        # (`archived` and `deleted` are disjoint sets of store keys)
        overflow = len(store) - len(archived) - len(deleted) - cap
        if overflow > 0:
            eligible: list[tuple[str, Mapping[str, Any]]] = []
            for key, value in rows:
                # (a row protected by its key is never free, `is_free`'s first answer: most rows
                # of a big store, passed over with one lookup; the last stage keeps no verdict)
                bits = shapes.get(key)
                if (bits is not None and bits & _KEY_PROTECTED) or key in archived or key in deleted:
                    continue
                entry = value if type(value) is dict or isinstance(value, Mapping) else empty
                verdict = verdicts.get(key)
                if verdict is None:
                    verdict = is_free(key, entry)
                if verdict:
                    eligible.append((key, entry))
            if eligible:
                # oldest activity first; equal activity: later store rows first (as OpenClaw orders them)
                eligible.reverse()
                eligible.sort(key=lambda row: activity_at(row[1]))
                for key, _entry in eligible[: min(overflow, len(eligible))]:
                    bits = shapes.get(key)
                    if bits is None:
                        bits = shape_of(key)
                    if bits & _DISPOSABLE:
                        deleted.add(key)
                        out.deleted.append((key, "cap-overflow"))
                    else:
                        archived.add(key)
                        out.archived[key] = REASON_CAP
                        out.cap_archived += 1
                    out.capped += 1
    return out
