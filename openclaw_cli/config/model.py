"""The parts of `openclaw.json` this tool uses (spec D10), as small immutable section objects.

Only the keys we act on are modelled; everything else in OpenClaw's large config is ignored.
Every modelled leaf is checked by a strict validator of our own, so a bad value becomes one
issue naming the key path, the value and an example, instead of OpenClaw's silent fallback.
Durations and byte sizes are stored already parsed (ms / bytes, with the key's default unit);
`False` is kept where it means "disabled"; `None` means "not set" (defaults are applied in
`resolve.py`, not here, so a model says exactly what the user wrote).

Each section declares a field table (file key -> attribute, and how to check the value); one
walker builds every section from it. This replaced pydantic models that cost ~100 ms of start-up
per command; the attribute names, values and reported issues are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from openclaw_cli.config.units import MAX_SAFE_INTEGER, js_string, parse_byte_size, parse_duration_ms

TYPE_CHECKING = False  # `typing` costs start-up time; only type checkers need it here
if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    _S = TypeVar("_S", bound="_Section")

# One problem found while building: (key path, reason, the offending value).
Issue = tuple[tuple[str | int, ...], str, object]


class ConfigValueError(ValueError):
    """A leaf value is invalid; `reason` says what is wrong (the loader adds the path, the value
    and an example)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConfigValidationError(ValueError):
    """Raised when a section is constructed directly (`MaintenanceConfig(maxEntries=0)`) from
    invalid values; the loader collects issues instead of raising."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        shown = "; ".join(
            f"{'.'.join(str(p) for p in loc) or '<root>'}: {reason}" for loc, reason, _ in issues
        )
        super().__init__(f"invalid config: {shown}")


# --------------------------------------------------------------------------------------------
# Leaf validators. Each returns the normalised value or raises ConfigValueError.


def _fail(reason: str) -> ConfigValueError:
    return ConfigValueError(reason)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _integer(value: Any, *, minimum: int, maximum: int | None = None) -> int:
    number: int
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"expected an integer, got {_type_name(value)}")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise _fail("expected an integer")
        value = int(value)
    number = value
    if abs(number) > MAX_SAFE_INTEGER:
        raise _fail("integer is too large")
    if number < minimum:
        raise _fail("must be positive" if minimum == 1 else f"must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise _fail(f"must be at most {maximum}")
    return number


def int_field(minimum: int, maximum: int | None = None) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if value is None:
            return None
        return _integer(value, minimum=minimum, maximum=maximum)

    return check


def positive_ms_or_infinity(value: Any) -> float | None:
    """`session.writeLock.acquireTimeoutMs`: a positive safe integer, or Infinity (JSON5 literal
    or the string "Infinity", since plain JSON cannot spell it)."""
    if value is None:
        return None
    if value == "Infinity" or (isinstance(value, float) and value == math.inf):
        return math.inf
    return _integer(value, minimum=1)


def number_field(minimum: float, maximum: float) -> Callable[[Any], float | None]:
    def check(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _fail(f"expected a number, got {_type_name(value)}")
        # Integers are compared exactly: math.isfinite() overflows on huge JSON5 integers.
        if (isinstance(value, float) and not math.isfinite(value)) or not minimum <= value <= maximum:
            raise _fail(f"must be between {js_string(minimum)} and {js_string(maximum)}")
        return float(value)

    return check


# The value is shown before the reason, and the key's own example after it (loader.make_issue).
DURATION_REASON = "not a duration: use a number with ms, s, m, h or d, such as 30s, 5m, 2h, 30d or 1h30m"
BYTE_SIZE_REASON = "not a byte size: use a number with b, kb, mb, gb or tb, such as 512kb, 10mb or 2gb"


def duration_field(default_unit: str, *, allow_false: bool = False) -> Callable[[Any], Any]:
    """A duration string or number (bare numbers in `default_unit`) -> ms. Blank = not set."""

    def check(value: Any) -> int | Literal[False] | None:
        if value is None:
            return None
        if value is False and allow_false:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            allowed = "a duration or false" if allow_false else "a duration"
            raise _fail(f"expected {allowed}, got {_type_name(value)}")
        if isinstance(value, str) and not value.strip():
            return None
        try:
            return parse_duration_ms(value, default_unit)
        except ValueError:
            raise _fail(DURATION_REASON) from None

    return check


def byte_size_field(*, allow_false: bool = False) -> Callable[[Any], Any]:
    """A byte size string or number (bare numbers are bytes) -> bytes. Blank = not set."""

    def check(value: Any) -> int | Literal[False] | None:
        if value is None:
            return None
        if value is False and allow_false:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            allowed = "a byte size or false" if allow_false else "a byte size"
            raise _fail(f"expected {allowed}, got {_type_name(value)}")
        if isinstance(value, str) and not value.strip():
            return None
        try:
            return parse_byte_size(value, "b")
        except ValueError:
            raise _fail(BYTE_SIZE_REASON) from None

    return check


def enum_field(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or value not in choices:
            listed = ", ".join(f'"{c}"' for c in choices)
            raise _fail(f"expected one of {listed}")
        return value

    return check


def bool_field(value: Any) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _fail(f"expected true or false, got {_type_name(value)}")
    return value


def str_field(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(f"expected a string, got {_type_name(value)}")
    return value


def str_list_field(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _fail("expected an array of strings")
    return list(value)


def model_ref_field(value: Any) -> str | dict[str, Any] | None:
    """`agents.defaults.model`: "provider/model" or `{primary, fallbacks}` (kept as a copy)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        primary = value.get("primary")
        fallbacks = value.get("fallbacks")
        if primary is not None and not isinstance(primary, str):
            raise _fail("model.primary must be a string")
        if fallbacks is not None and (
            not isinstance(fallbacks, list) or not all(isinstance(f, str) for f in fallbacks)
        ):
            raise _fail("model.fallbacks must be an array of strings")
        return dict(value)
    raise _fail(f"expected a model name or {{primary, fallbacks}}, got {_type_name(value)}")


def secret_field(value: Any) -> str | dict[str, Any] | None:
    """A secret: a string, or OpenClaw's reference object `{source, provider, id}` (a copy)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("source"), str) and isinstance(value.get("id"), str):
        return dict(value)
    raise _fail("expected a string or a secret reference {source, provider, id}")


POSITIVE_INT = int_field(1)
NON_NEGATIVE_INT = int_field(0)


# --------------------------------------------------------------------------------------------
# Field kinds. A field maps a camelCase file key to a snake_case attribute. A missing or null
# key gives the default (None, or an all-defaults section); a bad value is recorded as an issue.


class _Field:
    __slots__ = ("attr", "key")

    def __init__(self, key: str, attr: str) -> None:
        self.key = key
        self.attr = attr

    def default(self) -> Any:
        return None

    def convert(self, value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> Any:
        raise NotImplementedError


class _Leaf(_Field):
    """A scalar (or small free-form value) checked by a leaf validator; `check=None` keeps any
    value as written (legacy keys that are only reported)."""

    __slots__ = ("check",)

    def __init__(self, key: str, attr: str, check: Callable[[Any], Any] | None) -> None:
        super().__init__(key, attr)
        self.check = check

    def convert(self, value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> Any:
        if self.check is None:
            return value
        try:
            return self.check(value)
        except ConfigValueError as error:
            issues.append((loc, error.reason, value))
            return None


def _section_value(cls: type[_S], value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> _S | None:
    """`value` as a `cls` section, or None (issue recorded) when it is not an object."""
    if isinstance(value, dict):
        return cls._build(value, loc, issues)
    if isinstance(value, cls):
        return value
    issues.append((loc, "expected an object", value))
    return None


class _Nested(_Field):
    """A nested section: all defaults when absent, or None when `optional`."""

    __slots__ = ("cls", "optional")

    def __init__(self, key: str, attr: str, cls: type[_Section], *, optional: bool = False) -> None:
        super().__init__(key, attr)
        self.cls = cls
        self.optional = optional

    def default(self) -> Any:
        return None if self.optional else self.cls()

    def convert(self, value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> Any:
        built = _section_value(self.cls, value, loc, issues)
        return self.default() if built is None else built


class _NestedMap(_Field):
    """An object of sections keyed by a free name (agent id, channel, session type)."""

    __slots__ = ("cls",)

    def __init__(self, key: str, attr: str, cls: type[_Section]) -> None:
        super().__init__(key, attr)
        self.cls = cls

    def convert(self, value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> Any:
        if not isinstance(value, dict):
            issues.append((loc, "expected an object", value))
            return None
        out: dict[str, _Section] = {}
        for name, item in value.items():
            bad_name = not isinstance(name, str)  # only from Python callers, never from a file
            if bad_name:
                issues.append(((*loc, name, "[key]"), "Input should be a valid string", name))
            built = _section_value(self.cls, item, (*loc, name), issues)
            if built is not None and not bad_name:
                out[name] = built
        return out


class _NestedList(_Field):
    """An array of sections."""

    __slots__ = ("cls",)

    def __init__(self, key: str, attr: str, cls: type[_Section]) -> None:
        super().__init__(key, attr)
        self.cls = cls

    def convert(self, value: Any, loc: tuple[str | int, ...], issues: list[Issue]) -> Any:
        if not isinstance(value, list | tuple):
            issues.append((loc, "expected an array", value))
            return None
        out: list[_Section] = []
        for index, item in enumerate(value):
            built = _section_value(self.cls, item, (*loc, index), issues)
            if built is not None:
                out.append(built)
        return out


def _slots(fields: tuple[_Field, ...]) -> tuple[str, ...]:
    return tuple(f.attr for f in fields)


# --------------------------------------------------------------------------------------------
# Sections


def _restore(cls: type[_Section], values: tuple[Any, ...]) -> _Section:
    obj = cls.__new__(cls)
    name: str
    for name, value in zip(cls.__slots__, values, strict=True):
        object.__setattr__(obj, name, value)
    return obj


class _Section:
    """Base of every section: immutable, compared by value.

    Keys are looked up by their camelCase name first, then by the attribute name (as the former
    pydantic models did with `populate_by_name`); unknown keys are ignored (the loader warns
    about the ones that deserve it). `Section()` is all defaults; `Section(**keys)` validates
    and raises ConfigValidationError on bad values.
    """

    __slots__ = ()
    _fields: tuple[_Field, ...] = ()

    if TYPE_CHECKING:  # the fields are slots filled from `_fields`: typed as their values

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, **values: Any) -> None:
        issues: list[Issue] = []
        self._fill(values, (), issues)
        if issues:
            raise ConfigValidationError(issues)

    @classmethod
    def _build(cls: type[_S], data: dict[str, Any], loc: tuple[str | int, ...], issues: list[Issue]) -> _S:
        obj = cls.__new__(cls)
        obj._fill(data, loc, issues)
        return obj

    def _fill(self, data: dict[str, Any], loc: tuple[str | int, ...], issues: list[Issue]) -> None:
        setter = object.__setattr__
        for f in self._fields:
            key = f.key
            value = data.get(key)
            if value is None and f.attr != key:
                value = data.get(f.attr)
                if value is not None:
                    key = f.attr
            setter(self, f.attr, f.default() if value is None else f.convert(value, (*loc, key), issues))

    @classmethod
    def keys(cls) -> frozenset[str]:
        """The camelCase keys this section understands."""
        return frozenset(f.key for f in cls._fields)

    def _values(self) -> tuple[Any, ...]:
        names: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in names)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (type(self), self._values())


# session.*


class MaintenanceConfig(_Section):
    _fields = (
        _Leaf("mode", "mode", enum_field("enforce", "warn")),
        _Leaf("pruneAfter", "prune_after", duration_field("d")),
        _Leaf("pruneDays", "prune_days", duration_field("d")),  # legacy alias of pruneAfter
        _Leaf("maxEntries", "max_entries", POSITIVE_INT),
        _Leaf("resetArchiveRetention", "reset_archive_retention", duration_field("d", allow_false=True)),
        _Leaf("maxDiskBytes", "max_disk_bytes", byte_size_field(allow_false=True)),
        _Leaf("highWaterBytes", "high_water_bytes", byte_size_field()),
        # 2026.9.6+ keys (spec D23): read under the releases that have them, ignored under 2026.7
        _Leaf("archiveDashboardAfter", "archive_dashboard_after", duration_field("d", allow_false=True)),
        _Leaf("preserveRecent", "preserve_recent", duration_field("d", allow_false=True)),
        _Leaf("rotateBytes", "rotate_bytes", None),  # legacy: ignored, reported as a warning
    )
    __slots__ = _slots(_fields)


class WriteLockConfig(_Section):
    _fields = (
        _Leaf("acquireTimeoutMs", "acquire_timeout_ms", positive_ms_or_infinity),
        _Leaf("staleMs", "stale_ms", POSITIVE_INT),
        _Leaf("maxHoldMs", "max_hold_ms", POSITIVE_INT),
    )
    __slots__ = _slots(_fields)


class ResetConfig(_Section):
    # L modes daily/idle; `manual` (older L) and `none` (current OpenClaw) mean "no time-based reset".
    _fields = (
        _Leaf("mode", "mode", enum_field("daily", "idle", "manual", "none")),
        _Leaf("atHour", "at_hour", int_field(0, 23)),
        _Leaf("idleMinutes", "idle_minutes", NON_NEGATIVE_INT),
    )
    __slots__ = _slots(_fields)


class SessionConfig(_Section):
    _fields = (
        _Nested("maintenance", "maintenance", MaintenanceConfig),
        _Nested("writeLock", "write_lock", WriteLockConfig),
        _Nested("reset", "reset", ResetConfig, optional=True),
        _NestedMap("resetByType", "reset_by_type", ResetConfig),
        _NestedMap("resetByChannel", "reset_by_channel", ResetConfig),
        _Leaf("idleMinutes", "idle_minutes", NON_NEGATIVE_INT),  # legacy, honoured by profile L
        _Leaf(
            "dmScope",
            "dm_scope",
            enum_field("main", "per-peer", "per-channel-peer", "per-account-channel-peer"),
        ),
        _Leaf("scope", "scope", enum_field("per-sender", "global")),
        _Leaf("mainKey", "main_key", str_field),
        _Leaf("store", "store", str_field),
        _Leaf("parentForkMaxTokens", "parent_fork_max_tokens", None),  # legacy: ignored, warned
    )
    __slots__ = _slots(_fields)


# agents.*


class QualityGuardConfig(_Section):
    _fields = (
        _Leaf("enabled", "enabled", bool_field),
        _Leaf("maxRetries", "max_retries", int_field(0, 3)),
    )
    __slots__ = _slots(_fields)


class MidTurnPrecheckConfig(_Section):
    _fields = (_Leaf("enabled", "enabled", bool_field),)
    __slots__ = _slots(_fields)


class MemoryFlushConfig(_Section):
    _fields = (
        _Leaf("enabled", "enabled", bool_field),
        _Leaf("model", "model", str_field),
        _Leaf("softThresholdTokens", "soft_threshold_tokens", NON_NEGATIVE_INT),
        _Leaf("forceFlushTranscriptBytes", "force_flush_transcript_bytes", byte_size_field()),
        _Leaf("prompt", "prompt", str_field),
        _Leaf("systemPrompt", "system_prompt", str_field),
    )
    __slots__ = _slots(_fields)


class CompactionConfig(_Section):
    _fields = (
        _Leaf("enabled", "enabled", bool_field),
        _Leaf("mode", "mode", enum_field("default", "safeguard")),
        _Leaf("provider", "provider", str_field),
        _Leaf("model", "model", str_field),
        _Leaf("thinkingLevel", "thinking_level", str_field),
        _Leaf("reserveTokens", "reserve_tokens", NON_NEGATIVE_INT),
        _Leaf("reserveTokensFloor", "reserve_tokens_floor", NON_NEGATIVE_INT),
        _Leaf("keepRecentTokens", "keep_recent_tokens", POSITIVE_INT),
        _Leaf("maxHistoryShare", "max_history_share", number_field(0, 1)),
        _Leaf("recentTurnsPreserve", "recent_turns_preserve", int_field(0, 12)),
        _Leaf("identifierPolicy", "identifier_policy", enum_field("strict", "off", "custom")),
        _Leaf("identifierInstructions", "identifier_instructions", str_field),
        _Nested("qualityGuard", "quality_guard", QualityGuardConfig),
        _Leaf("truncateAfterCompaction", "truncate_after_compaction", bool_field),
        _Leaf("maxActiveTranscriptBytes", "max_active_transcript_bytes", byte_size_field()),
        _Nested("midTurnPrecheck", "mid_turn_precheck", MidTurnPrecheckConfig),
        _Leaf("postCompactionSections", "post_compaction_sections", str_list_field),
        _Leaf("notifyUser", "notify_user", bool_field),
        _Leaf("timeoutSeconds", "timeout_seconds", POSITIVE_INT),
        _Nested("memoryFlush", "memory_flush", MemoryFlushConfig),
    )
    __slots__ = _slots(_fields)


class AgentDefaultsConfig(_Section):
    _fields = (
        _Nested("compaction", "compaction", CompactionConfig),
        _Leaf("contextTokens", "context_tokens", POSITIVE_INT),
        _Leaf("model", "model", model_ref_field),
        _Leaf("workspace", "workspace", str_field),  # the default agent's workspace (AGENTS.md)
    )
    __slots__ = _slots(_fields)


class AgentEntryConfig(_Section):
    """One roster entry (`agents.entries.<id>` or an element of `agents.list`)."""

    _fields = (
        _Leaf("id", "id", str_field),  # required in `agents.list`, checked by the loader
        _Leaf("default", "default", bool_field),
        _Leaf("name", "name", str_field),
        _Leaf("model", "model", model_ref_field),
        _Leaf("contextTokens", "context_tokens", POSITIVE_INT),
        _Leaf("workspace", "workspace", str_field),
        _Leaf("agentDir", "agent_dir", str_field),
    )
    __slots__ = _slots(_fields)


class AgentsConfig(_Section):
    _fields = (
        _Nested("defaults", "defaults", AgentDefaultsConfig),
        _NestedMap("entries", "entries", AgentEntryConfig),
        _NestedList("list", "agent_list", AgentEntryConfig),
        _Leaf("ownership", "ownership", str_field),
    )
    __slots__ = _slots(_fields)


# cron.*, gateway.*


class RunLogConfig(_Section):
    _fields = (
        _Leaf("keepLines", "keep_lines", POSITIVE_INT),
        _Leaf("maxBytes", "max_bytes", byte_size_field()),  # accepted, no effect (maintenance.md §9.2)
    )
    __slots__ = _slots(_fields)


class CronConfig(_Section):
    _fields = (
        _Leaf("sessionRetention", "session_retention", duration_field("h", allow_false=True)),
        _Nested("runLog", "run_log", RunLogConfig),
    )
    __slots__ = _slots(_fields)


class GatewayAuthConfig(_Section):
    _fields = (
        _Leaf("mode", "mode", str_field),
        _Leaf("token", "token", secret_field),
        _Leaf("password", "password", secret_field),
    )
    __slots__ = _slots(_fields)


class GatewayTlsConfig(_Section):
    _fields = (
        _Leaf("enabled", "enabled", bool_field),
        _Leaf("certPath", "cert_path", str_field),
        _Leaf("keyPath", "key_path", str_field),
    )
    __slots__ = _slots(_fields)


class GatewayConfig(_Section):
    _fields = (
        _Leaf("port", "port", int_field(1, 65535)),
        _Leaf("bind", "bind", str_field),
        _Leaf("customBindHost", "custom_bind_host", str_field),
        _Leaf("mode", "mode", enum_field("local", "remote")),
        _Nested("auth", "auth", GatewayAuthConfig),
        _Nested("tls", "tls", GatewayTlsConfig),
    )
    __slots__ = _slots(_fields)


class OpenClawConfig(_Section):
    _fields = (
        _Nested("session", "session", SessionConfig),
        _Nested("agents", "agents", AgentsConfig),
        _Nested("cron", "cron", CronConfig),
        _Nested("gateway", "gateway", GatewayConfig),
    )
    __slots__ = _slots(_fields)


def build_config(raw: Any) -> tuple[OpenClawConfig, list[Issue]]:
    """The config object for a parsed file, and every issue found (in field order).

    Keys in error hold their default in the returned object; bad entries of `agents.entries`,
    `agents.list` and `session.resetBy*` are left out.
    """
    issues: list[Issue] = []
    if not isinstance(raw, dict):
        issues.append(((), "expected an object", raw))
        return OpenClawConfig(), issues
    return OpenClawConfig._build(raw, (), issues), issues


# Keys a user may legitimately write inside the two sections whose unknown keys are warned
# about (D10). Later-OpenClaw keys are listed in the loader: they are not errors, just unused.
MAINTENANCE_KEYS = MaintenanceConfig.keys()
COMPACTION_KEYS = CompactionConfig.keys()
COMPACTION_NESTED_KEYS: dict[str, frozenset[str]] = {
    f.key: f.cls.keys() for f in CompactionConfig._fields if isinstance(f, _Nested)
}
