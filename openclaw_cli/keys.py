"""Session-key parsing, normalisation and classification.

Rules: `compaction-lifecycle.md` §1.2–1.3 (R1.3.x, EX1.3.*) and §6.4 (R6.4.4, R6.4.7),
`maintenance.md` §3 (synthetic keys, model-run probes, cron runs, durable external pointers,
primary keys) and §10.5 (`--fix-dm-scope`). Everything here is pure string logic: no I/O.

Keys are compared lower-cased (trimmed); `normalize_key` keeps the case of Signal group ids and
Matrix room/thread ids, which are opaque and case-sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from openclaw_cli.ids import DEFAULT_AGENT_ID, normalize_agent_id
from openclaw_cli.lazyre import lazy_pattern

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any, Literal

    KeyShape = Literal["missing", "agent", "malformed_agent", "legacy_or_alias"]
    SessionKind = Literal["global", "unknown", "cron", "spawn-child", "group", "direct"]


SYNTHETIC_PREFIXES = ("subagent:", "acp:", "cron:", "acp-bridge:", "hook:", "node:")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# Whole raw key (no surrounding whitespace allowed), case-insensitive (maintenance.md §3.3).
_PROBE_KEY = lazy_pattern(
    globals(), "_PROBE_KEY", rf"^agent:([^:\s]+):explicit:model-run-{_UUID}$", re.IGNORECASE
)
PROBE_KEY_MIN_LEN = len("agent:x:explicit:model-run-") + 36  # case folding keeps lengths: one char per char
_PROBE_REST = lazy_pattern(globals(), "_PROBE_REST", rf"^explicit:model-run-{_UUID}$")
_CRON_RUN_REST = lazy_pattern(globals(), "_CRON_RUN_REST", r"^cron:([^:]+):run:([^:]+)(?::|$)")
_TELEGRAM_TOPIC_REST = lazy_pattern(
    globals(), "_TELEGRAM_TOPIC_REST", r"^telegram:(?:group|channel|direct|dm):.+:topic:[^:]+$"
)
_EXTERNAL_GROUP_REST = lazy_pattern(globals(), "_EXTERNAL_GROUP_REST", r"^[^:]+:(?:group|channel):.+$")
_SIGNAL_GROUP = lazy_pattern(globals(), "_SIGNAL_GROUP", r"(?:^|:)signal:group:")
_MATRIX_ROOM = lazy_pattern(globals(), "_MATRIX_ROOM", r"(?:^|:)matrix:(?:channel|group):")
_THREAD_MARKER = ":thread:"
_DURABLE_CHAT_TYPES = frozenset({"group", "channel", "thread"})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_agent_key(key: str | None) -> tuple[str, str] | None:
    return _parse_agent_key(key) if isinstance(key, str) else None


def _split_agent_key(key: str) -> tuple[str, str] | None:
    """R1.3.1: `agent:<agentId>:<rest>` -> (agentId lower-cased and trimmed, rest trimmed), else None.

    The `agent:` prefix is case-insensitive; agentId and rest must be non-empty and rest must not
    start with `:` (EX1.3.d: `agent::main`, `agent:main:`, `agent:main::x` do not parse).
    `rest` keeps its case: callers lower-case it (or `normalize_key` it) for comparisons.
    """
    value = _text(key).strip()
    if value[:6].lower() != "agent:":
        return None
    body = value[6:]
    sep = body.find(":")
    if sep < 0:
        return None
    agent_id = body[:sep].strip().lower()
    rest = body[sep + 1 :].strip()
    if not agent_id or not rest or rest.startswith(":"):
        return None
    return agent_id, rest


# the key predicates of one row parse its key several times in a row; a listing asks once per key
# and uses `_split_agent_key`. Bounded well below a store's size (issue 30: 131,072 held ~30 MB at
# 100,000 keys): planners remember their per-key verdicts per run (`archiving.Guard.shape`,
# `plan.Preserver`) rather than lean on this cache across stages.
_parse_agent_key = lru_cache(maxsize=4096)(_split_agent_key)


def _rest_lower(key: str | None) -> str:
    """The lower-cased `rest` of an agent key, or the whole lower-cased key when it does not parse."""
    parsed = parse_agent_key(key)
    return parsed[1].lower() if parsed else _text(key).strip().lower()


def classify_key_shape(key: str | None) -> KeyShape:
    """R1.3.2: empty -> missing; parses -> agent; `agent:` prefix that fails -> malformed_agent."""
    value = _text(key).strip()
    if not value:
        return "missing"
    if parse_agent_key(value):
        return "agent"
    if value.lower().startswith("agent:"):
        return "malformed_agent"
    return "legacy_or_alias"


def normalize_key(key: str | None) -> str:
    """R1.3.3: trimmed and lower-cased, except Signal group ids (the segment after `signal:group:`)
    and Matrix room ids (after `matrix:channel|group:` up to the last `:thread:`) plus the Matrix
    thread id, which keep their case (EX1.3.a, EX1.3.b)."""
    value = _text(key).strip()
    lowered = value.lower()
    match = _MATRIX_ROOM.search(lowered)
    if match:
        start = match.end()
        tail = value[start:]
        marker = tail.lower().rfind(_THREAD_MARKER)
        if marker >= 0:
            room = tail[:marker].strip()
            thread = tail[marker + len(_THREAD_MARKER) :].strip()
            return f"{lowered[:start]}{room}{_THREAD_MARKER}{thread}"
        return f"{lowered[:start]}{tail.strip()}"
    match = _SIGNAL_GROUP.search(lowered)
    if match:
        start = match.end()
        tail = value[start:]
        sep = tail.find(":")
        if sep < 0:
            return f"{lowered[:start]}{tail.strip()}"
        return f"{lowered[:start]}{tail[:sep].strip()}{tail[sep:].lower()}"
    return lowered


def preserve_key_form(key: str | None) -> str:
    """The form used to compare store keys with preserve keys: trimmed and lower-cased (§4)."""
    return _text(key).strip().lower()


def main_key(agent_id: str | None, main: str | None = None) -> str:
    """R1.2.1 `buildMainKey`: `agent:<lenient agent id>:<lower-cased main key or "main">`."""
    rest = _text(main).strip().lower() or "main"
    return f"agent:{normalize_agent_id(agent_id)}:{rest}"


def to_agent_store_key(agent_id: str | None, key: str | None, main: str | None = None) -> str:
    """R1.3.4 request key -> store key (EX1.3.e).

    empty or `main` -> the agent's main key; an agent-scoped key -> `agent:<parsed id>:<rest>`
    (normalised); a string starting `agent:` that does not parse -> normalised as-is; anything
    else -> `agent:<agentId>:<normalised key>`.
    """
    raw = _text(key).strip()
    if not raw or raw.lower() == "main":
        return main_key(agent_id, main)
    parsed = parse_agent_key(raw)
    if parsed:
        return normalize_key(f"agent:{parsed[0]}:{parsed[1]}")
    if raw.lower().startswith("agent:"):
        return normalize_key(raw)
    return f"agent:{normalize_agent_id(agent_id)}:{normalize_key(raw)}"


def from_agent_store_key(key: str | None) -> str:
    """Reverse of `to_agent_store_key`: strip `agent:<id>:` (unparseable keys are returned trimmed)."""
    parsed = parse_agent_key(key)
    return parsed[1] if parsed else _text(key).strip()


def canonicalize_bare_key(key: str, default_agent: str | None = DEFAULT_AGENT_ID) -> str:
    """D14: a bare `cron:…` / `hook:…` key becomes `agent:<default>:cron:…` (normalised, as
    OpenClaw's `doctor --fix` does); every other key is returned unchanged."""
    value = _text(key).strip()
    lowered = value.lower()
    if lowered.startswith(("cron:", "hook:")) and len(value) > 5:
        return f"agent:{normalize_agent_id(default_agent)}:{normalize_key(value)}"
    return key


def is_synthetic_key(key: str | None) -> bool:
    """§3.2: disposable runtime keys (sub-agent, ACP, cron, ACP bridge, hook, node, heartbeat).

    G1 does not count model-run probes as synthetic (G2+ does).
    """
    return is_synthetic_rest(_rest_lower(key))


def is_synthetic_rest(rest: str) -> bool:
    """`is_synthetic_key` of a key whose `_rest_lower` is `rest`."""
    if not rest:
        return False
    if rest.startswith(SYNTHETIC_PREFIXES):
        return True
    return rest == "heartbeat" or rest.endswith(":heartbeat") or ":heartbeat:" in rest


def is_model_run_probe_key(key: str | None) -> bool:
    """§3.3: `agent:<id>:explicit:model-run-<uuid>`, case-insensitive, no surrounding whitespace."""
    if not isinstance(key, str) or len(key) < PROBE_KEY_MIN_LEN:  # most keys: too short to be one
        return False
    match = _PROBE_KEY.match(key)
    if not match:
        return False
    parsed = parse_agent_key(key)
    if not parsed or parsed[0] != match.group(1).lower():
        return False
    return bool(_PROBE_REST.match(parsed[1].lower()))


def parse_cron_run(key: str | None) -> tuple[str, str] | None:
    """EX1.3.f: `agent:<id>:cron:<job>:run:<run>[:…]` -> (base key `agent:<id>:cron:<job>`, run id)."""
    if not isinstance(key, str) or ":run:" not in key.lower():
        return None  # most keys: the marker the rule needs is absent (ASCII lower-casing is context-free)
    parsed = parse_agent_key(key)
    if not parsed:
        return None
    match = _CRON_RUN_REST.match(parsed[1].lower())
    if not match:
        return None
    return f"agent:{parsed[0]}:cron:{match.group(1)}", match.group(2)


def is_cron_run_key(key: str | None) -> bool:
    """§3.4: cron run keys (the base `agent:<id>:cron:<job>` is not one)."""
    return parse_cron_run(key) is not None


def is_cron_key(key: str | None) -> bool:
    """A cron job or cron run key (`rest` starts with `cron:`; bare `cron:` keys count too)."""
    return _rest_lower(key).startswith("cron:")


def is_subagent_key(key: str | None) -> bool:
    return _rest_lower(key).startswith("subagent:")


def subagent_depth(key: str | None) -> int:
    """Number of `:subagent:` segments in the lower-cased key (`agent:main:subagent:a` -> 1)."""
    return _text(key).strip().lower().count(":subagent:")


def parse_thread(key: str | None) -> tuple[str, str] | None:
    """R1.3.5: the last `:thread:` (case-insensitive) splits (base key, thread id); None without a
    marker or with an empty thread id."""
    value = _text(key).strip()
    marker = value.lower().rfind(_THREAD_MARKER)
    if marker < 0:
        return None
    thread_id = value[marker + len(_THREAD_MARKER) :]
    if not thread_id.strip():
        return None
    return value[:marker], thread_id


def reset_type(key: str | None, *, chat_type: str | None = None, thread_context: bool = False) -> str:
    """R1.3.6 reset-type classification: `thread` when the message has thread context (thread
    id/label/starter/parent key) or the key has `:thread:`/`:topic:` (EX1.3.c); `group` for a
    group/channel chat or a `:group:`/`:channel:` key; else `direct`."""
    lowered = _text(key).lower()
    if thread_context or ":thread:" in lowered or ":topic:" in lowered:
        return "thread"
    kind = chat_type.strip().lower() if isinstance(chat_type, str) else ""
    if kind in ("group", "channel") or ":group:" in lowered or ":channel:" in lowered:
        return "group"
    return "direct"


def _chat_type(entry: Mapping[str, Any] | None) -> str:
    if not isinstance(entry, Mapping):
        return ""
    chat_type = entry.get("chatType")
    if chat_type is None:
        origin = entry.get("origin")
        chat_type = origin.get("chatType") if isinstance(origin, Mapping) else None
    return chat_type.strip().lower() if isinstance(chat_type, str) else ""


def has_durable_chat_type(entry: Mapping[str, Any] | None) -> bool:
    """The entry's chat metadata (`chatType`, else `origin.chatType`) is group, channel or thread."""
    return _chat_type(entry) in _DURABLE_CHAT_TYPES


def is_durable_external_pointer(key: str | None, entry: Mapping[str, Any] | None = None) -> bool:
    """§3.5: a non-synthetic key that points at a durable external conversation: a thread suffix,
    a Telegram topic, an external group/channel, or chat metadata `group`/`channel`/`thread`."""
    if is_synthetic_key(key):
        return False
    if parse_thread(key):
        return True
    rest = _rest_lower(key)
    if _TELEGRAM_TOPIC_REST.match(rest) or _EXTERNAL_GROUP_REST.match(rest):
        return True
    return has_durable_chat_type(entry)


def is_primary_key(key: str | None) -> bool:
    """§3.6 [R]: `global` (case-insensitive) or any agent key whose rest is exactly `main`."""
    value = _text(key).strip().lower()
    if value == "global":
        return True
    parsed = parse_agent_key(value)
    return parsed is not None and parsed[1] == "main"


def is_dm_scope_retire_candidate(key: str | None, agent_id: str | None = None) -> bool:
    """§10.5: `rest` split on `:` is exactly `direct:<peer>`, `<channel>:direct:<peer>` or
    `<channel>:<account>:direct:<peer>` (all parts non-empty); a nested `agent:` rest never is.
    With `agent_id`, the key must also belong to that agent."""
    parsed = parse_agent_key(key)
    if not parsed:
        return False
    if agent_id is not None and parsed[0] != normalize_agent_id(agent_id):
        return False
    parts = parsed[1].lower().split(":")
    if parts[0] == "agent" or not all(parts):
        return False
    n = len(parts)
    return (
        (n == 2 and parts[0] == "direct")
        or (n == 3 and parts[1] == "direct")
        or (n == 4 and parts[2] == "direct")
    )


def session_kind(key: str | None, entry: Mapping[str, Any] | None = None) -> SessionKind:
    """R6.4.4 listing kind: sentinels, then cron, then spawn-child (`spawnedBy`), then group
    (chat metadata or a `:group:`/`:channel:` key), else direct."""
    value = _text(key).strip()
    if value == "global":
        return "global"
    if value == "unknown":
        return "unknown"
    lowered = value.lower()
    # is_cron_key(value), without filling the planners' cache; its `rest` is part of the key and
    # only ASCII letters lower-case to "cron", so a key without "cron:" is no cron key
    if "cron:" in lowered:
        parsed = _split_agent_key(value)
        if (parsed[1] if parsed else value).lower().startswith("cron:"):
            return "cron"
    if type(entry) is not dict:
        entry = entry if isinstance(entry, Mapping) else {}
    if entry.get("spawnedBy"):
        return "spawn-child"
    chat_type = entry.get("chatType")
    if chat_type in ("group", "channel") or ":group:" in lowered or ":channel:" in lowered:
        return "group"
    return "direct"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and value not in (float("inf"), float("-inf")) else None


def is_pinnable(key: str | None, entry: Mapping[str, Any] | None) -> bool:
    """R6.4.7: root sessions and sessions auto-parented to the agent's home root (its main key)
    are pinnable; child sessions (a non-root parent) and sub-agent runs are not."""
    entry = entry if isinstance(entry, Mapping) else {}
    if subagent_depth(key) > 0 or is_subagent_key(key) or entry.get("spawnedBy"):
        return False
    if entry.get("forkedFromParent") is True:
        return False
    parent = entry.get("parentSessionKey")
    if not isinstance(parent, str) or not parent.strip():
        return True
    return is_primary_key(parent) and preserve_key_form(parent) != "global"


def derive_row_flags(entry: Mapping[str, Any] | None, key: str | None = None) -> dict[str, bool]:
    """Derived row booleans (R6.4.7, storage-migration §5.2–5.3, EX6.4.c).

    archived = `archivedAt` set; pinned = `pinnedAt` set and the row is pinnable (needs `key` to
    recognise sub-agent runs); unread = `markedUnreadAt` set, or the newest of
    `lastInteractionAt`/`lastActivityAt` is after the baseline `lastReadAt ?? createdAt`.
    """
    if type(entry) is not dict:
        entry = entry if isinstance(entry, Mapping) else {}
    get = entry.get
    archived = get("archivedAt") is not None
    pinned = get("pinnedAt") is not None and is_pinnable(key, entry)
    unread = get("markedUnreadAt") is not None
    if not unread:
        last_read = get("lastReadAt")
        if last_read is not None:
            baseline = _number(last_read)
        else:
            created = get("createdAt")
            baseline = None if created is None else _number(created)
        if baseline is not None:
            latest = max(
                _number(entry.get("lastInteractionAt")) or 0.0, _number(entry.get("lastActivityAt")) or 0.0
            )
            unread = latest > baseline
    return {"archived": archived, "pinned": pinned, "unread": unread}
