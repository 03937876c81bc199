"""Closed param schemas of every method we serve (each the `params` of its row in `ops/methods.py`;
the Gateway keeps only `connect`'s, `gateway/schemas.py`), with OpenClaw's error texts.

OpenClaw 2026.9.6 checks params with TypeBox 1.3's compiled validator and formats its error list as
`invalid <method> params: <errors>` (read from the installed package, and recorded:
tests/fixtures/gateway-2026.9.6-params, README there). The rule this module follows:

* **Every error is reported**, not the first: each keyword of a schema is checked even after one
  failed, in TypeBox's fixed keyword order (not the order the schema lists them): `type`; for an
  object `required`, `additionalProperties`, `patternProperties`, `properties` (declaration order,
  present keys only), `minProperties`; for an array `items` (each item), `maxItems`, `minItems`; for
  a string `maxLength`, `minLength`, `pattern`; for a number `maximum`, `minimum`; then `const`,
  `enum`, `not`, `anyOf`. The value-kind groups run on the value's own JSON kind, whatever the
  schema's `type` says (`19.5` for an integer with a minimum of 20 fails both).
* **At most 8 errors per list** (TypeBox's `maxErrors`); each `anyOf` branch has a list of its own,
  whose errors are then added to the parent's (still capped), followed by `must match a schema in
  anyOf`. An unknown property first adds `schema is false` at its path (counted against the 8), which
  is dropped again when the `additionalProperties` error that names it follows.
* **One error per keyword**: `required` names every missing key and `additionalProperties` every
  unknown one, but OpenClaw's `formatValidationErrors` prints only the first of each
  (`must have required property 'sessionKey'`, `at root: unexpected property 'key'`).
* **Texts**: TypeBox's English, lowercase (`must not have fewer than 1 characters`); paths are
  `/`-joined raw keys; `; ` joins the distinct texts in order.
* **String lengths count graphemes** as TypeBox does (a base character with its combining marks,
  variation selectors, ZWJ sequences and flag pairs are one), not UTF-16 units or code points.
* **Patterns** are JavaScript regular expressions with the `u` flag: `\\d` is ASCII and `$` is the
  very end (no newline before it).

The schemas list the keys OpenClaw 2026.9.6 accepts, so a real client's request is never refused
for a key we merely do not act on (which keys we act on: docs/decisions.md, "Gateway server").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

# TypeBox's `Settings.maxErrors`: a list stops growing at 8
MAX_ERRORS = 8


@dataclass(frozen=True)
class Fault:
    """One error as TypeBox reports it: where, which keyword, its text, and for `required` /
    `additionalProperties` the keys it names."""

    path: str
    keyword: str
    message: str
    names: tuple[str, ...] = ()


class Faults:
    """An error list capped at MAX_ERRORS (TypeBox's `ErrorContext`)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Fault] = []

    def full(self) -> bool:
        return len(self.items) >= MAX_ERRORS

    def add(self, path: str, keyword: str, message: str, names: tuple[str, ...] = ()) -> bool:
        if not self.full():
            self.items.append(Fault(path, keyword, message, names))
        return False


class Schema:
    def collect(self, value: Any, path: str, out: Faults) -> bool:
        """Check `value`, adding every error to `out`; True when valid. Returns False at once when
        `out` is already full (TypeBox stops descending there)."""
        if out.full():
            return False
        return self._collect(value, path, out)

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        raise NotImplementedError

    def errors(self, value: Any, path: str = "") -> list[Fault]:
        """Every error (at most MAX_ERRORS); empty when valid."""
        out = Faults()
        self.collect(value, path, out)
        return out.items

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
    """A JSON number (JavaScript's `typeof value === "number"`; our too-big ints count, as theirs)."""
    return not isinstance(value, bool) and isinstance(value, int | float)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


# ---- string lengths as TypeBox counts them (graphemes over UTF-16 code units) ----------------------------


def _units(value: str) -> list[int]:
    data = value.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def _code_point_at(units: list[int], index: int) -> int:
    first = units[index]
    if 0xD800 <= first <= 0xDBFF and index + 1 < len(units) and 0xDC00 <= units[index + 1] <= 0xDFFF:
        return 0x10000 + ((first - 0xD800) << 10) + (units[index + 1] - 0xDC00)
    return first


def _width(point: int) -> int:
    return 2 if point > 0xFFFF else 1


def _is_modifier(point: int) -> bool:
    return (
        0x0300 <= point <= 0x036F
        or 0x1AB0 <= point <= 0x1AFF
        or 0x1DC0 <= point <= 0x1DFF
        or 0xFE20 <= point <= 0xFE2F
        or 0xFE00 <= point <= 0xFE0F
    )


def _skip_modifiers(units: list[int], index: int) -> int:
    while index < len(units):
        point = _code_point_at(units, index)
        if not _is_modifier(point):
            break
        index += _width(point)
    return index


def _next_cluster(units: list[int], start: int) -> int:
    first = _code_point_at(units, start)
    end = _skip_modifiers(units, start + _width(first))
    while end < len(units) - 1 and units[end] == 0x200D:
        end = _skip_modifiers(units, end + 1 + _width(_code_point_at(units, end + 1)))
    regional = range(0x1F1E6, 0x1F1FF + 1)
    if first in regional and end < len(units) and _code_point_at(units, end) in regional:
        end += _width(_code_point_at(units, end))
    return end


def grapheme_count(value: str) -> int:
    """TypeBox's `GraphemeCount` (its own segmentation, not Unicode's full rules)."""
    if value.isascii():
        return len(value)
    units = _units(value)
    count = index = 0
    while index < len(units):
        index = _next_cluster(units, index)
        count += 1
    return count


def _js_pattern(pattern: str) -> re.Pattern[str]:
    """A JavaScript `u`-flag pattern as Python's: ASCII classes, `$` only at the very end."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "]":
            in_class = False
            out.append(char)
        elif char == "$" and not in_class:
            out.append(r"\Z")
        else:
            out.append(char)
    return re.compile("".join(out), re.ASCII)


@dataclass
class Str(Schema):
    min_len: int | None = None
    max_len: int | None = None
    pattern: str | None = None
    enum: tuple[str, ...] | None = None
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._regex = _js_pattern(self.pattern) if self.pattern is not None else None

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        if not isinstance(value, str):
            out.add(path, "type", "must be string")
            if self.enum is not None:  # the string keywords skip it; an enum still judges it
                _enum(self.enum, value, path, out)
            return False
        ok = True
        if self.max_len is not None or self.min_len is not None:
            length = grapheme_count(value)
            if self.max_len is not None and length > self.max_len:
                ok = out.add(path, "maxLength", f"must not have more than {self.max_len} characters")
            if self.min_len is not None and length < self.min_len:
                ok = out.add(path, "minLength", f"must not have fewer than {self.min_len} characters")
        if self._regex is not None and not self._regex.search(value):
            ok = out.add(path, "pattern", f'must match pattern "{self.pattern}"')
        if self.enum is not None and not _enum(self.enum, value, path, out):
            ok = False
        return ok


def _enum(values: tuple[Any, ...], value: Any, path: str, out: Faults) -> bool:
    if any(_json_equal(value, v) for v in values):
        return True
    return out.add(path, "enum", "must be equal to one of the allowed values")


@dataclass
class Enum(Schema):
    """`{enum: [...]}` with no `type` (a `Type.Enum`): only the enum's own error."""

    values: tuple[Any, ...]

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        return _enum(self.values, value, path, out)


NonEmpty = Str(min_len=1)
Label = Str(min_len=1, max_len=512)


def _bounds(value: Any, path: str, out: Faults, minimum: float | None, maximum: float | None) -> bool:
    """The number keywords (run on any JSON number, whatever the schema's type)."""
    if not _is_number(value):
        return True
    ok = True
    if maximum is not None and not value <= maximum:
        ok = out.add(path, "maximum", f"must be <= {_num(maximum)}")
    if minimum is not None and not value >= minimum:
        ok = out.add(path, "minimum", f"must be >= {_num(minimum)}")
    return ok


@dataclass
class Int(Schema):
    minimum: int | None = None
    maximum: int | None = None

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        ok = _is_int(value) or out.add(path, "type", "must be integer")
        if isinstance(value, float) and not math.isfinite(value):
            return False  # `1e400` (Infinity to JSON.parse): the type alone, as recorded
        return _bounds(value, path, out, self.minimum, self.maximum) and ok

    def normalize(self, value: Any) -> Any:
        return int(value)


@dataclass
class Num(Schema):
    minimum: float | None = None

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        finite = _is_number(value) and math.isfinite(value)
        ok = finite or out.add(path, "type", "must be number")
        if not finite:
            return False
        return _bounds(value, path, out, self.minimum, None) and ok


class Bool(Schema):
    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        return isinstance(value, bool) or out.add(path, "type", "must be boolean")


class Null(Schema):
    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        return value is None or out.add(path, "type", "must be null")


class Unknown(Schema):
    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        return True


class Unchecked(Schema):
    """Params a method reads without a schema (OpenClaw's `health` and `status` answer `"x"`,
    `{probe: "true"}` and unknown keys alike): anything passes, and what is no object reaches the
    handler as `{}`."""

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        return True

    def normalize(self, value: Any) -> Any:
        return value if isinstance(value, dict) else {}


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


@dataclass
class Const(Schema):
    """TypeBox's `Literal`: `{type: <the value's JSON type>, const: value}` (type checked first:
    `sortBy: null` is "must be string; must be equal to constant", recorded from 2026.9.6)."""

    value: Any

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        kind = _json_type(self.value)
        ok = True
        if kind is not None and _json_type(value) != kind:
            ok = out.add(path, "type", f"must be {kind}")
        if not _json_equal(value, self.value):
            ok = out.add(path, "const", "must be equal to constant")
        return ok


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number" if math.isfinite(value) else None
    return "string" if isinstance(value, str) else None


@dataclass
class Arr(Schema):
    items: Schema
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        if not isinstance(value, list):
            return out.add(path, "type", "must be array")
        ok = True
        for index, item in enumerate(value):
            if not self.items.collect(item, f"{path}/{index}", out):
                ok = False
        if self.max_items is not None and len(value) > self.max_items:
            ok = out.add(path, "maxItems", f"must not have more than {self.max_items} items")
        if self.min_items is not None and len(value) < self.min_items:
            ok = out.add(path, "minItems", f"must not have fewer than {self.min_items} items")
        if self.unique and len({_canonical(item) for item in value}) < len(value):
            ok = out.add(path, "uniqueItems", "must not have duplicate items")
        return ok

    def normalize(self, value: Any) -> Any:
        return [self.items.normalize(item) for item in value]


def _canonical(value: Any) -> Any:
    """A hashable form under which two JSON values are equal exactly when JavaScript's deep
    equality says so (`1` and `1.0` are one number)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", repr(value))


@dataclass
class Rec(Schema):
    """`Type.Record(string, value)`: `patternProperties {"^.*$": value}`, every value checked."""

    value: Schema

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        if not isinstance(value, dict):
            return out.add(path, "type", "must be object")
        ok = True
        for key, item in value.items():
            if not self.value.collect(item, f"{path}/{key}", out):
                ok = False
        return ok

    def normalize(self, value: Any) -> Any:
        return {key: self.value.normalize(item) for key, item in value.items()}


@dataclass
class Obj(Schema):
    """An object (OpenClaw's `closedObject` when `closed`): `props` in declaration order, `required`
    keys, `min_props`."""

    props: dict[str, Schema]
    required: tuple[str, ...] = ()
    closed: bool = True
    min_props: int | None = None

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        if not isinstance(value, dict):
            return out.add(path, "type", "must be object")
        ok = True
        missing = tuple(key for key in self.required if key not in value)
        if missing:
            ok = out.add(path, "required", f"must have required properties {', '.join(missing)}", missing)
        if self.closed:
            unknown: list[str] = []
            for key in value:
                if key not in self.props:
                    # `additionalProperties: false` is a schema that fails: its error first
                    out.add(f"{path}/{key}", "boolean", "schema is false")
                    unknown.append(key)
            if unknown:
                ok = out.add(
                    path, "additionalProperties", "must not have additional properties", tuple(unknown)
                )
        for key, schema in self.props.items():
            if key in value and not schema.collect(value[key], f"{path}/{key}", out):
                ok = False
        if self.min_props is not None and len(value) < self.min_props:
            ok = out.add(path, "minProperties", f"must not have fewer than {self.min_props} properties")
        return ok

    def normalize(self, value: Any) -> Any:
        return {
            key: self.props[key].normalize(item) if key in self.props else item for key, item in value.items()
        }


@dataclass
class AnyOf(Schema):
    options: tuple[Schema, ...] = field(default_factory=tuple)

    def __init__(self, *options: Schema):
        self.options = options

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        failed: list[Faults] = []
        for option in self.options:
            branch = Faults()
            if option.collect(value, path, branch):
                return True
            failed.append(branch)
        for branch in failed:
            for fault in branch.items:
                out.add(fault.path, fault.keyword, fault.message, fault.names)
        return out.add(path, "anyOf", "must match a schema in anyOf")

    def normalize(self, value: Any) -> Any:
        for option in self.options:
            if not option.errors(value):
                return option.normalize(value)
        return value


def Nullable(schema: Schema) -> AnyOf:  # noqa: N802 - reads like the schema types
    return AnyOf(schema, Null())


def Literals(*values: Any) -> Schema:  # noqa: N802
    """TypeBox's union of literals; a single literal is that literal alone (no `anyOf`)."""
    return Const(values[0]) if len(values) == 1 else AnyOf(*(Const(v) for v in values))


def _drop_false_schemas(faults: list[Fault]) -> list[Fault]:
    """OpenClaw's `normalizeTypeBoxValidationErrors`: the `schema is false` errors right before the
    `additionalProperties` error naming the same keys go (an error list cut at 8 keeps them)."""
    kept: list[Fault] = []
    run = 0
    for fault in faults:
        if fault.keyword == "boolean":
            kept.append(fault)
            run += 1
            continue
        if fault.keyword == "additionalProperties" and 0 < len(fault.names) <= run:
            tail = kept[len(kept) - len(fault.names) :]
            if all(f.path == f"{fault.path}/{name}" for f, name in zip(tail, fault.names, strict=True)):
                del kept[len(kept) - len(fault.names) :]
        kept.append(fault)
        run = 0
    return kept


def format_errors(faults: list[Fault]) -> str:
    """OpenClaw's `formatValidationErrors`: `at <path>: <text>` (a root error has no location, but an
    unknown property at the root says `at root`); `required` and `additionalProperties` name only
    their first key; distinct texts joined with `; `."""
    parts: list[str] = []
    for fault in faults:
        where = f"at {fault.path}: " if fault.path else ""
        if fault.keyword == "additionalProperties" and fault.names:
            parts.append(
                f"{'at ' + fault.path if fault.path else 'at root'}: unexpected property '{fault.names[0]}'"
            )
        elif fault.keyword == "required" and fault.names:
            parts.append(f"{where}must have required property '{fault.names[0]}'")
        else:
            parts.append(f"{where}{fault.message}")
    unique = list(dict.fromkeys(part for part in parts if part.strip()))
    return "; ".join(unique) if unique else "unknown validation error"


def validate(schema: Schema, value: Any) -> str | None:
    """None when `value` matches, else the formatted error text."""
    faults = schema.errors(value)
    return format_errors(_drop_false_schemas(faults)) if faults else None


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

_PERMISSION_MODE = Literals("read-only", "guarded", "workspace", "full")
_TOOL_OVERRIDES = Obj(
    {
        "mcpServers": Rec(Bool()),
        "mcpToolsDeny": Rec(Arr(NonEmpty)),
        "skills": Rec(Bool()),
        "webSearch": Bool(),
    }
)

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
    "attention": Nullable(Str(enum=("hand", "key", "alert", "flag", "lock", "hourglass"))),
    "ttlMinutes": Int(minimum=1, maximum=120),
    "archived": Bool(),
    "pinned": Bool(),
    "unread": Bool(),
    "contextWindow": _NULLABLE_TEXT,
    "thinkingLevel": _NULLABLE_TEXT,
    "fastMode": AnyOf(Bool(), Const("auto"), Null()),
    "toolOverrides": Nullable(_TOOL_OVERRIDES),
    "verboseLevel": _NULLABLE_TEXT,
    "traceLevel": _NULLABLE_TEXT,
    "reasoningLevel": _NULLABLE_TEXT,
    "responseUsage": AnyOf(Const("off"), Const("tokens"), Const("full"), Const("on"), Null()),
    "elevatedLevel": _NULLABLE_TEXT,
    "execHost": _NULLABLE_TEXT,
    "execSecurity": _NULLABLE_TEXT,
    "execAsk": _NULLABLE_TEXT,
    "execNode": _NULLABLE_TEXT,
    "permissionMode": Nullable(_PERMISSION_MODE),
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
        "expectedPermissionMode": Nullable(_PERMISSION_MODE),
        "expectedSandboxMode": AnyOf(Const("off"), Null()),
        "expectedNativeRuntimeConsent": _NULLABLE_TEXT,
        "expectedToolOverrides": Nullable(_TOOL_OVERRIDES),
        "expectedMarkedUnreadAt": Nullable(Num(minimum=0)),
        **_PATCH_MUTATIONS,
    },
    required=("key",),
)

# in OpenClaw's declaration order (the order its errors come in)
SESSIONS_CREATE = Obj(
    {
        "key": NonEmpty,
        "idempotencyKey": NonEmpty,
        "agentId": NonEmpty,
        "label": Label,
        "displayName": Str(min_len=1, max_len=500),
        "titleSource": Str(max_len=1000),
        "category": Label,
        "model": NonEmpty,
        "agentRuntime": NonEmpty,
        "contextWindow": NonEmpty,
        "thinkingLevel": NonEmpty,
        "fastMode": AnyOf(Bool(), Const("auto")),
        "permissionMode": _PERMISSION_MODE,
        "toolOverrides": _TOOL_OVERRIDES,
        "incognito": Bool(),
        "visibility": Literals("shared", "read-only", "suggest", "draft"),
        "catalogId": NonEmpty,
        "parentSessionKey": NonEmpty,
        "spawnDepth": Int(minimum=1),
        "fork": Bool(),
        "forkFrom": Const("last-completed"),
        "emitCommandHooks": Bool(),
        "succeedsParent": Bool(),
        "timeoutMs": Int(minimum=0),
        "task": Str(),
        "message": Str(),
        "mentions": Arr(
            Obj(
                {
                    "profileId": Str(min_len=1, max_len=256),
                    "start": Int(minimum=0, maximum=MAX_SAFE_INTEGER),
                    "end": Int(minimum=1, maximum=MAX_SAFE_INTEGER),
                },
                required=("profileId", "start", "end"),
            ),
            max_items=10,
        ),
        "attachments": Arr(
            Obj(
                {
                    "type": Str(),
                    "mimeType": Str(),
                    "fileName": Str(),
                    "origin": Literals("paste", "file"),
                    "content": Unknown(),
                    "sizeBytes": Num(),
                    "durationMs": Num(),
                    "width": Num(),
                    "height": Num(),
                },
                closed=False,
            )
        ),
        "projectId": Str(min_len=1),
        "projectGitUrl": Str(min_len=1, max_len=2048),
        "repository": Obj(
            {"url": Str(min_len=1, max_len=2048), "ref": Str(min_len=1, max_len=1024)}, required=("url",)
        ),
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
# `limit`/`offset`, bound text by `maxChars` and the page by `maxBytes`, answer a `cursor` with
# `{kind: "reset"}` (ops/history.py), and take the others without acting on them
CHAT_HISTORY = Obj(
    {
        "sessionKey": NonEmpty,
        "agentId": NonEmpty,
        "cursor": Str(),
        "limit": Int(minimum=1, maximum=1000),
        "maxBytes": Int(minimum=1024),
        "offset": Int(minimum=0),
        "pendingBefore": Int(minimum=1),
        "inputRunIds": Arr(Str(min_len=1, max_len=256), min_items=1, max_items=50, unique=True),
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
    """An object schema with `not: {required: [key], anyOf: [{required: [other]}, …]}`: the object's
    own errors, then "must not be valid" (TypeBox checks `not` after the object keywords). A value
    that is no object meets `required` (an object keyword), so `not` refuses it too."""

    inner: Obj
    key: str
    others: tuple[str, ...]

    def _collect(self, value: Any, path: str, out: Faults) -> bool:
        ok = self.inner.collect(value, path, out)
        if not isinstance(value, dict) or (self.key in value and any(o in value for o in self.others)):
            ok = out.add(path, "not", "must not be valid")
        return ok

    def normalize(self, value: Any) -> Any:
        return self.inner.normalize(value)


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
HEALTH = Unchecked()
STATUS = Unchecked()  # `includeChannelSummary`, `includeCliProjection` (acted on when `true`)

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
                    "expectedPermissionMode": Nullable(_PERMISSION_MODE),
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

# openclaw-cli's own keys beside OpenClaw's, per method (docs/decisions.md, issues 26 and 28): the real
# Gateway refuses them as unexpected properties; ours takes them, so a request naming one is answered
# differently by design (the param replay, tests/test_gateway_params_replay.py, leaves those out)
EXTENSIONS: dict[str, frozenset[str]] = {
    "sessions.list": frozenset({"includeSize"}),
    "sessions.subscribe": frozenset({"includeSize"}),
    "sessions.cleanup": frozenset({"dryRun", "includeActions"}),
    "sessions.search": frozenset(
        {"agent", "allAgents", "roles", "since", "until", "archived", "fixed", "redact", "reindex"}
    ),
}
