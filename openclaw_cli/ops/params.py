"""Closed param schemas of every method we serve (each the `params` of its row in `ops/methods.py`;
the Gateway keeps only `connect`'s, `gateway/schemas.py`), with OpenClaw's error texts.

OpenClaw validates params with ajv (first error only) and formats the error as
`invalid <method> params: <where>: <ajv message>` — `at root: unexpected property 'bogus'`,
`at /limit: must be >= 1`, `must have required property 'key'`, `must be object`
(fixtures/gateway-2026.9.6 README, "Error envelope"). This module is a small validator with the
same keyword order (type, then required, then unknown properties, then each property in
declaration order) and the same message texts; an `AnyOf` reports every branch's first error and
then `must match a schema in anyOf`, joined with `; ` as OpenClaw joins ajv's error list.
The schemas list the keys OpenClaw 2026.9.6 accepts, so a real client's request is never refused
for a key we merely do not act on (which keys we act on: docs/decisions.md, "Gateway server").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any


class Schema:
    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        """Errors as (instancePath, message); empty when valid. Stops at the first error, like
        ajv without allErrors (an AnyOf collects its branches' first errors)."""
        raise NotImplementedError

    def normalize(self, value: Any) -> Any:
        """`value` (already valid) with every integer as a Python int (`3.0` -> 3)."""
        return value


# JavaScript's Number.MAX_SAFE_INTEGER: beyond it the real Gateway's integers are no longer exact
# (2**64+5 arrives as 18446744073709552000), so we refuse them as "must be integer" rather than
# act on a value the client did not send (docs/decisions.md, "Gateway params: integers").
MAX_SAFE_INTEGER = 2**53 - 1


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_SAFE_INTEGER
    return (
        isinstance(value, float)
        and math.isfinite(value)
        and value.is_integer()
        and abs(value) <= MAX_SAFE_INTEGER
    )


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


@dataclass
class Str(Schema):
    min_len: int | None = None
    max_len: int | None = None
    pattern: str | None = None
    enum: tuple[str, ...] | None = None

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if not isinstance(value, str):
            return [(path, "must be string")]
        if self.max_len is not None and len(value) > self.max_len:
            return [(path, f"must not have more than {self.max_len} characters")]
        if self.min_len is not None and len(value) < self.min_len:
            return [(path, f"must not have fewer than {self.min_len} characters")]
        if self.pattern is not None and not re.search(self.pattern, value):
            return [(path, f'must match pattern "{self.pattern}"')]
        if self.enum is not None and value not in self.enum:
            return [(path, "must be equal to one of the allowed values")]
        return []


NonEmpty = Str(min_len=1)
Label = Str(min_len=1, max_len=512)


@dataclass
class Int(Schema):
    minimum: int | None = None
    maximum: int | None = None

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return [(path, "must be integer")]  # bounds apply to finite numbers only (`-1e400`: this alone)
        # a finite number that is not an integer still meets the bounds keywords, and ajv reports
        # both (the real Gateway: `maxChars: 19.5` is "must be integer; at /maxChars: must be >= 20")
        found = [] if _is_int(value) else [(path, "must be integer")]
        if self.maximum is not None and value > self.maximum:
            found.append((path, f"must be <= {self.maximum}"))
        elif self.minimum is not None and value < self.minimum:
            found.append((path, f"must be >= {self.minimum}"))
        return found

    def normalize(self, value: Any) -> Any:
        return int(value)


@dataclass
class Num(Schema):
    minimum: float | None = None

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if not _is_number(value):
            return [(path, "must be number")]
        if self.minimum is not None and value < self.minimum:
            return [(path, f"must be >= {_num(self.minimum)}")]
        return []


class Bool(Schema):
    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        return [] if isinstance(value, bool) else [(path, "must be boolean")]


class Null(Schema):
    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        return [] if value is None else [(path, "must be null")]


class Unknown(Schema):
    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        return []


@dataclass
class Const(Schema):
    value: Any

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if value == self.value and type(value) is type(self.value):
            return []
        # TypeBox's Literal carries the value's JSON type, and ajv reports that keyword first
        # (`sortBy: null`: "must be string; must be equal to constant", recorded from 2026.9.6)
        kind = _json_type(self.value)
        if kind is not None and _json_type(value) != kind:
            return [(path, f"must be {kind}"), (path, "must be equal to constant")]
        return [(path, "must be equal to constant")]


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else None


@dataclass
class Arr(Schema):
    items: Schema
    min_items: int | None = None
    max_items: int | None = None

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if not isinstance(value, list):
            return [(path, "must be array")]
        if self.max_items is not None and len(value) > self.max_items:
            return [(path, f"must not have more than {self.max_items} items")]
        if self.min_items is not None and len(value) < self.min_items:
            return [(path, f"must not have fewer than {self.min_items} items")]
        for index, item in enumerate(value):
            found = self.items.errors(item, f"{path}/{index}")
            if found:
                return found
        return []

    def normalize(self, value: Any) -> Any:
        return [self.items.normalize(item) for item in value]


@dataclass
class Rec(Schema):
    """`Type.Record(string, value)`: any keys, every value matching."""

    value: Schema

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if not isinstance(value, dict):
            return [(path, "must be object")]
        for key, item in value.items():
            found = self.value.errors(item, f"{path}/{_pointer(key)}")
            if found:
                return found
        return []

    def normalize(self, value: Any) -> Any:
        return {key: self.value.normalize(item) for key, item in value.items()}


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@dataclass
class Obj(Schema):
    """A closed object (OpenClaw's `closedObject`): `props` in declaration order, `required` keys."""

    props: dict[str, Schema]
    required: tuple[str, ...] = ()
    closed: bool = True
    min_props: int | None = None

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        if not isinstance(value, dict):
            return [(path, "must be object")]
        if self.min_props is not None and len(value) < self.min_props:
            return [(path, f"must not have fewer than {self.min_props} properties")]
        for key in self.required:
            if key not in value:
                return [(path, f"must have required property '{key}'")]
        if self.closed:
            for key in value:
                if key not in self.props:
                    return [(path, f"unexpected property '{key}'")]
        for key, schema in self.props.items():
            if key in value:
                found = schema.errors(value[key], f"{path}/{_pointer(key)}")
                if found:
                    return found
        return []

    def normalize(self, value: Any) -> Any:
        return {
            key: self.props[key].normalize(item) if key in self.props else item for key, item in value.items()
        }


@dataclass
class AnyOf(Schema):
    options: tuple[Schema, ...] = field(default_factory=tuple)

    def __init__(self, *options: Schema):
        self.options = options

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        collected: list[tuple[str, str]] = []
        for option in self.options:
            found = option.errors(value, path)
            if not found:
                return []
            collected.extend(found)
        return [*collected, (path, "must match a schema in anyOf")]

    def normalize(self, value: Any) -> Any:
        for option in self.options:
            if not option.errors(value, ""):
                return option.normalize(value)
        return value


def Nullable(schema: Schema) -> AnyOf:  # noqa: N802 - reads like the schema types
    return AnyOf(schema, Null())


def Literals(*values: Any) -> AnyOf:  # noqa: N802
    return AnyOf(*(Const(v) for v in values))


def format_errors(errors: list[tuple[str, str]]) -> str:
    """OpenClaw's `formatValidationErrors`: `at <path>: <message>`; `at root` only for unknown
    properties; a required property or a root type error without a location."""
    parts: list[str] = []
    for path, message in errors:
        if message.startswith("unexpected property"):
            where = f"at {path}" if path else "at root"
            parts.append(f"{where}: {message}")
        elif path:
            parts.append(f"at {path}: {message}")
        else:
            parts.append(message)
    unique = list(dict.fromkeys(p for p in parts if p.strip()))
    return "; ".join(unique) if unique else "unknown validation error"


def validate(schema: Schema, value: Any) -> str | None:
    """None when `value` matches, else the formatted error text."""
    found = schema.errors(value, "")
    return format_errors(found) if found else None


# ---- sessions.* --------------------------------------------------------------------------------------------

_LIST_PROPS: dict[str, Schema] = {
    "limit": Int(minimum=1),
    "offset": Int(minimum=0),
    "activeMinutes": Int(minimum=1),
    "activeOnly": Bool(),
    "requireLastInteraction": Bool(),
    "sortBy": Literals("updatedAt", "lastInteractionAt", "activity"),
    "includeGlobal": Bool(),
    "includeUnknown": Bool(),
    "excludeSubagents": Bool(),
    "excludeCron": Bool(),
    "excludeSystem": Bool(),
    "configuredAgentsOnly": Bool(),
    "includeDerivedTitles": Bool(),
    "includeLastMessage": Bool(),
    "includeActivitySummary": Bool(),
    "label": Label,
    "projectId": NonEmpty,
    "workspaceDir": NonEmpty,
    "group": Str(),
    "pinned": Bool(),
    "boardFace": Literals("chat", "dashboard"),
    "hasBoard": Bool(),
    "creatorId": NonEmpty,
    "ownerId": NonEmpty,
    "ownerFirst": Bool(),
    "involvingMe": Bool(),
    "profileRelation": Obj(
        {"profileId": NonEmpty, "relationship": Literals("owned", "created", "involving")},
        required=("profileId", "relationship"),
    ),
    "involvingProfileId": NonEmpty,
    "includePeople": Bool(),
    "spawnedBy": NonEmpty,
    "agentId": NonEmpty,
    "search": Str(),
    "archived": AnyOf(Bool(), Const("all")),
}
# ours (issue 28): `includeSize` adds each row's transcript bytes (`transcriptBytes`) for the dashboard
SESSIONS_LIST = Obj({**_LIST_PROPS, "includeSize": Bool()})

# Mutations of sessions.patch (OpenClaw's SessionsPatchMutationProperties).
_NULLABLE_TEXT = Nullable(NonEmpty)
_PATCH_MUTATIONS: dict[str, Schema] = {
    "label": Nullable(Label),
    "autoLabel": Nullable(Label),
    "icon": Nullable(Str()),
    "color": Nullable(Str()),
    "category": Nullable(Label),
    "boardFace": Literals("chat", "dashboard"),
    "boardPresentation": AnyOf(Const("split"), Const("expanded"), Null()),
    "statusNote": Nullable(Str(max_len=120)),
    "attention": Nullable(Str()),
    "ttlMinutes": Int(minimum=1, maximum=120),
    "archived": Bool(),
    "pinned": Bool(),
    "unread": Bool(),
    "contextWindow": _NULLABLE_TEXT,
    "thinkingLevel": _NULLABLE_TEXT,
    "fastMode": AnyOf(Bool(), Const("auto"), Null()),
    "toolOverrides": Nullable(Rec(Unknown())),
    "verboseLevel": _NULLABLE_TEXT,
    "traceLevel": _NULLABLE_TEXT,
    "reasoningLevel": _NULLABLE_TEXT,
    "responseUsage": AnyOf(Const("off"), Const("tokens"), Const("full"), Const("on"), Null()),
    "elevatedLevel": _NULLABLE_TEXT,
    "execHost": _NULLABLE_TEXT,
    "execSecurity": _NULLABLE_TEXT,
    "execAsk": _NULLABLE_TEXT,
    "execNode": _NULLABLE_TEXT,
    "permissionMode": _NULLABLE_TEXT,
    "sandboxMode": AnyOf(Const("off"), Null()),
    "nativeRuntimeConsent": _NULLABLE_TEXT,
    "model": _NULLABLE_TEXT,
    "agentRuntime": _NULLABLE_TEXT,
    "completionOwnerSessionKey": _NULLABLE_TEXT,
    "inheritedToolPolicyVersion": AnyOf(Const(1), Null()),
    "inheritedToolAllow": Nullable(Arr(NonEmpty)),
    "inheritedToolDeny": Nullable(Arr(NonEmpty)),
    "sendPolicy": AnyOf(Const("allow"), Const("deny"), Null()),
    "groupActivation": AnyOf(Const("mention"), Const("always"), Null()),
}
SESSIONS_PATCH = Obj(
    {
        "key": NonEmpty,
        "agentId": NonEmpty,
        "expectedSessionId": NonEmpty,
        "expectedLifecycleRevision": NonEmpty,
        "expectedPermissionMode": _NULLABLE_TEXT,
        "expectedSandboxMode": AnyOf(Const("off"), Null()),
        "expectedNativeRuntimeConsent": _NULLABLE_TEXT,
        "expectedToolOverrides": Nullable(Rec(Unknown())),
        "expectedMarkedUnreadAt": Nullable(Num(minimum=0)),
        **_PATCH_MUTATIONS,
    },
    required=("key",),
)

_CREATE_KEYS_TEXT = (
    "key",
    "idempotencyKey",
    "agentId",
    "model",
    "agentRuntime",
    "contextWindow",
    "thinkingLevel",
    "permissionMode",
    "catalogId",
    "parentSessionKey",
)
SESSIONS_CREATE = Obj(
    {
        **{name: NonEmpty for name in _CREATE_KEYS_TEXT},
        "label": Label,
        "displayName": Str(min_len=1, max_len=500),
        "titleSource": Str(max_len=1000),
        "category": Label,
        "fastMode": AnyOf(Bool(), Const("auto")),
        "toolOverrides": Rec(Unknown()),
        "incognito": Bool(),
        "visibility": Str(),
        "spawnDepth": Int(minimum=1),
        "fork": Bool(),
        "forkFrom": Const("last-completed"),
        "emitCommandHooks": Bool(),
        "succeedsParent": Bool(),
        "timeoutMs": Int(minimum=0),
        "task": Str(),
        "message": Str(),
        "mentions": Unknown(),
        "attachments": Unknown(),
        "projectId": Str(min_len=1),
        "projectGitUrl": Str(min_len=1, max_len=2048),
        "repository": Unknown(),
        "worktree": Bool(),
        "worktreeSource": Const("empty"),
        "worktreeBaseRef": Str(min_len=1),
        "worktreeName": Str(pattern="^[a-z0-9][a-z0-9-]{0,63}$"),
        "execNode": Str(min_len=1),
        "cwd": Str(min_len=1),
    }
)

SESSIONS_RESET = Obj(
    {"key": NonEmpty, "agentId": NonEmpty, "reason": Literals("new", "reset"), "expectedSessionId": NonEmpty},
    required=("key",),
)
SESSIONS_DELETE = Obj(
    {
        "key": NonEmpty,
        "agentId": NonEmpty,
        "deleteTranscript": Bool(),
        "expectedSessionId": NonEmpty,
        "expectedLifecycleRevision": NonEmpty,
        "expectedSessionUpdatedAt": Num(minimum=0),
        "emitLifecycleHooks": Bool(),
        "archivedOnly": Bool(),
    },
    required=("key",),
)
SESSIONS_COMPACT = Obj({"key": NonEmpty, "agentId": NonEmpty, "maxLines": Int(minimum=1)}, required=("key",))
SESSIONS_CLEANUP = Obj(
    {
        "agent": NonEmpty,
        "allAgents": Bool(),
        "enforce": Bool(),
        "activeKey": NonEmpty,
        "fixMissing": Bool(),
        "fixDmScope": Bool(),
        # ours (issue 28): the dashboard's cleanup preview, a plan that writes nothing (read scope)
        # and, with includeActions, the rows each rule would touch
        "dryRun": Bool(),
        "includeActions": Bool(),
    }
)
# OpenClaw's chat.history as 2026.9.6 takes it (observed: limit 1-1000, offset >= 0 from the newest)
# OpenClaw's ChatHistoryParamsSchema, every key (the Control UI sends `maxBytes`); we page by
# `limit`/`offset` and bound text by `maxChars`, and take the others without acting on them
CHAT_HISTORY = Obj(
    {
        "sessionKey": NonEmpty,
        "agentId": NonEmpty,
        "cursor": Str(),
        "limit": Int(minimum=1, maximum=1000),
        "maxBytes": Int(minimum=1024),
        "offset": Int(minimum=0),
        "pendingBefore": Int(minimum=1),
        "inputRunIds": Arr(Str(min_len=1, max_len=256), min_items=1, max_items=50),
        "messageId": NonEmpty,
        "sessionId": NonEmpty,
        "maxChars": Int(minimum=1, maximum=500_000),
    },
    required=("sessionKey",),
)
# chat.startup: a history page, or a short chat link's first page (OpenClaw's union)
CHAT_STARTUP = AnyOf(
    CHAT_HISTORY,
    Obj(
        {
            "shortId": NonEmpty,
            "slugHint": NonEmpty,
            "agentId": NonEmpty,
            "limit": Int(minimum=1, maximum=1000),
            "maxBytes": Int(minimum=1024),
        },
        required=("shortId", "agentId"),
    ),
)
SESSIONS_MESSAGES_SUBSCRIBE = Obj(
    {"key": NonEmpty, "agentId": NonEmpty, "includeApprovals": Const(True)}, required=("key",)
)
SESSIONS_MESSAGES_UNSUBSCRIBE = Obj({"key": NonEmpty, "agentId": NonEmpty}, required=("key",))
# ours (issue 28): `openclaw storage`'s params (docs/storage.md), for the dashboard's storage view
STORAGE_REPORT = Obj({"agent": NonEmpty, "allAgents": Bool(), "top": Int(minimum=0, maximum=100)})
SESSIONS_PREVIEW = Obj(
    {"keys": Arr(NonEmpty, min_items=1), "limit": Int(minimum=1), "maxChars": Int(minimum=20)},
    required=("keys",),
)
SESSIONS_DESCRIBE = Obj(
    {"key": NonEmpty, "agentId": NonEmpty, "includeDerivedTitles": Bool(), "includeLastMessage": Bool()},
    required=("key",),
)

_SEARCH_SCOPE_KEYS = (
    "activeMinutes",
    "activeOnly",
    "requireLastInteraction",
    "sortBy",
    "includeGlobal",
    "includeUnknown",
    "excludeSubagents",
    "excludeCron",
    "excludeSystem",
    "configuredAgentsOnly",
    "label",
    "projectId",
    "workspaceDir",
    "group",
    "pinned",
    "boardFace",
    "hasBoard",
    "creatorId",
    "ownerId",
    "involvingMe",
    "profileRelation",
    "involvingProfileId",
    "spawnedBy",
    "agentId",
    "search",
    "archived",
)


@dataclass
class NotCombined(Schema):
    """`{not: {required: [key], anyOf: [{required: [other]}, …]}}` after the object's own checks
    (ajv: "must not be valid")."""

    inner: Schema
    key: str
    others: tuple[str, ...]

    def errors(self, value: Any, path: str) -> list[tuple[str, str]]:
        found = self.inner.errors(value, path)
        if found:
            return found
        if self.key in value and any(other in value for other in self.others):
            return [(path, "must not be valid")]
        return []


# OpenClaw's closed params, then openclaw-cli's extensions (our Gateway serves archives, roles,
# time ranges and literal search from its own index; the real one refuses these keys)
SESSIONS_SEARCH = NotCombined(
    Obj(
        {
            "agentId": NonEmpty,
            "sessionKeys": Arr(NonEmpty, min_items=1, max_items=200),
            "scope": Obj({name: _LIST_PROPS[name] for name in _SEARCH_SCOPE_KEYS}),
            "query": Str(min_len=1, max_len=4096),
            "limit": Int(minimum=1, maximum=25),
            "agent": NonEmpty,
            "allAgents": Bool(),
            "roles": Arr(Literals("user", "assistant", "tool"), min_items=1, max_items=3),
            "since": Int(),
            "until": Int(),
            "archived": Bool(),
            "fixed": Bool(),
            "redact": Bool(),
            "reindex": Bool(),
        },
        required=("query",),
    ),
    "scope",
    ("agentId", "sessionKeys"),
)

AGENTS_LIST = Obj({})
AGENTS_DELETE = Obj({"agentId": NonEmpty, "deleteFiles": Bool()}, required=("agentId",))
HEALTH = Obj({"probe": Bool()})
STATUS = Obj({"includeChannelSummary": Bool(), "includeCliProjection": Bool()})

# ---- issue 25: reads OpenClaw's clients ask a session Gateway for (OpenClaw 2026.9.6's schemas) ----
SESSIONS_RESOLVE = Obj(
    {
        "key": NonEmpty,
        "sessionId": NonEmpty,
        "label": Label,
        "reference": Obj({"key": NonEmpty, "slug": NonEmpty}, required=("key",)),
        "shortId": NonEmpty,
        "slugHint": NonEmpty,
        "agentId": NonEmpty,
        "spawnedBy": NonEmpty,
        "includeGlobal": Bool(),
        "includeUnknown": Bool(),
        "allowMissing": Bool(),
    }
)
# `system-presence` takes any params (the real one answers `{bogus: 1}` with the list)
SYSTEM_PRESENCE = Obj({}, closed=False)
LOGS_TAIL = Obj(
    {
        "cursor": Int(minimum=0),
        "limit": Int(minimum=1, maximum=5000),
        "maxBytes": Int(minimum=1, maximum=1_000_000),
    }
)
CONFIG_GET = Obj({})
# `sessions.get`: OpenClaw checks no schema (`key` or `sessionKey`, `limit`, `agentId` read loosely)
SESSIONS_GET = Obj({}, closed=False)
SESSIONS_STORAGE = Obj({})
SESSIONS_PATCH_MANY = Obj(
    {
        "targets": Arr(
            Obj(
                {
                    "key": NonEmpty,
                    "agentId": NonEmpty,
                    "expectedSessionId": NonEmpty,
                    "expectedLifecycleRevision": NonEmpty,
                    "expectedSandboxMode": AnyOf(Const("off"), Null()),
                    "expectedPermissionMode": _NULLABLE_TEXT,
                    "expectedNativeRuntimeConsent": _NULLABLE_TEXT,
                },
                required=("key",),
            ),
            min_items=1,
            max_items=100,
        ),
        "patch": Obj(_PATCH_MUTATIONS, min_props=1),
    },
    required=("targets", "patch"),
)
CHAT_MESSAGE_GET = Obj(
    {
        "sessionKey": NonEmpty,
        "agentId": NonEmpty,
        "messageId": NonEmpty,
        "maxChars": Int(minimum=1, maximum=2_000_000),
    },
    required=("sessionKey", "messageId"),
)
SESSIONS_BRANCHES_LIST = Obj({"sessionKey": NonEmpty, "agentId": NonEmpty}, required=("sessionKey",))
# issue 25: forks at a message and branch switches (OpenClaw's `sessions-rewind` family)
SESSIONS_FORK = Obj(
    {"sessionKey": NonEmpty, "agentId": NonEmpty, "entryId": NonEmpty}, required=("sessionKey", "entryId")
)
SESSIONS_BRANCHES_SWITCH = Obj(
    {"sessionKey": NonEmpty, "agentId": NonEmpty, "leafEntryId": NonEmpty},
    required=("sessionKey", "leafEntryId"),
)
CHAT_METADATA = NotCombined(
    Obj({"agentId": NonEmpty, "authProfileId": Str(min_len=1, max_len=256), "sessionKey": Str(min_len=1)}),
    "sessionKey",
    ("authProfileId",),
)

# sessions.groups.* (OpenClaw's SessionsGroups*ParamsSchema; names are SessionLabelString)
_SECTION_ID = Str(min_len=1, max_len=512)
SESSIONS_GROUPS_LIST = Obj({})
SESSIONS_GROUPS_DEFAULTS = Obj({})
SESSIONS_GROUPS_PUT = Obj({"names": Arr(Label), "sectionOrder": Arr(_SECTION_ID)}, required=("names",))
SESSIONS_GROUPS_RENAME = Obj({"name": Label, "to": Label}, required=("name", "to"))
SESSIONS_GROUPS_UPDATE = Obj(
    {"name": Label, "cwd": Nullable(NonEmpty), "worktree": Bool()}, required=("name", "cwd", "worktree")
)
SESSIONS_GROUPS_DELETE = Obj({"name": Label}, required=("name",))
_DATE = Str(pattern=r"^\d{4}-\d{2}-\d{2}$")
SESSIONS_USAGE = Obj(
    {
        "key": NonEmpty,
        "agentId": NonEmpty,
        "agentScope": Literals("all"),
        "creatorKey": NonEmpty,
        "startDate": _DATE,
        "endDate": _DATE,
        "mode": Literals("utc", "gateway", "specific"),
        "range": Literals("7d", "30d", "90d", "1y", "all"),
        "groupBy": Literals("instance", "family"),
        "includeHistorical": Bool(),
        "utcOffset": Str(pattern=r"^UTC[+-]\d{1,2}(?::[0-5]\d)?$"),
        "timeZone": NonEmpty,
        "limit": Int(minimum=1),
        "includeContextWeight": Bool(),
    }
)
