"""Compaction settings, effective reserve (R4.2, profile L) and the threshold test (R4.3.1).

Settings arrive as parameters: the config layer validates `agents.defaults.compaction.*` and hands
us values; `CompactionSettings.from_mapping` accepts that (camelCase) mapping directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openclaw_cli.errors import ConfigError

ENGINE_RESERVE_TOKENS = 16384
DEFAULT_RESERVE_TOKENS_FLOOR = 20000
DEFAULT_KEEP_RECENT_TOKENS = 20000
DEFAULT_CONTEXT_WINDOW = 200000
DEFAULT_MAX_HISTORY_SHARE = 0.5
DEFAULT_RECENT_TURNS_PRESERVE = 3
DEFAULT_SOFT_THRESHOLD_TOKENS = 4000
DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES = 2 * 1024 * 1024
MIN_PROMPT_BUDGET_CAP = 8000


@dataclass(frozen=True)
class MemoryFlushSettings:
    enabled: bool = True
    soft_threshold_tokens: int = DEFAULT_SOFT_THRESHOLD_TOKENS
    force_flush_transcript_bytes: int = DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES  # 0 disables
    model: str | None = None


@dataclass(frozen=True)
class CompactionSettings:
    """`agents.defaults.compaction.*` as the compaction library needs it (defaults: spec D1/§0.3).

    `keep_recent_tokens` is None when not explicitly configured: automatic compaction then uses
    20000 (R4.2.5) and manual compaction is a hard checkpoint (D16).
    """

    enabled: bool = True
    mode: str = "default"  # default | safeguard (forced safeguard when `provider` is set)
    provider: str | None = None
    reserve_tokens: int | None = None  # None -> engine default 16384
    reserve_tokens_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR  # 0 disables the floor
    keep_recent_tokens: int | None = None
    max_history_share: float = DEFAULT_MAX_HISTORY_SHARE
    recent_turns_preserve: int = DEFAULT_RECENT_TURNS_PRESERVE
    identifier_policy: str = "strict"  # strict | off | custom
    identifier_instructions: str | None = None
    quality_guard_enabled: bool | None = None  # None -> true in safeguard mode (R4.12.1)
    quality_guard_max_retries: int = 1
    truncate_after_compaction: bool = False
    post_compaction_sections: tuple[str, ...] | None = None  # AGENTS.md sections for safeguard summaries
    memory_flush: MemoryFlushSettings = field(default_factory=MemoryFlushSettings)

    @property
    def effective_mode(self) -> str:
        return "safeguard" if self.provider else self.mode

    @property
    def effective_keep_recent_tokens(self) -> int:
        return self.keep_recent_tokens if self.keep_recent_tokens else DEFAULT_KEEP_RECENT_TOKENS

    @property
    def quality_guard_active(self) -> bool:
        if self.effective_mode != "safeguard":
            return False
        return True if self.quality_guard_enabled is None else self.quality_guard_enabled

    @property
    def quality_guard_retries(self) -> int:
        return max(0, min(3, int(self.quality_guard_max_retries)))

    @classmethod
    def from_mapping(
        cls, raw: Mapping[str, Any] | None, *, key_prefix: str = "agents.defaults.compaction"
    ) -> CompactionSettings:
        """Build from a config mapping (camelCase keys as in `openclaw.json`); wrong types raise
        ConfigError naming the key, the value and an example."""
        raw = raw or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(
                f'{key_prefix} must be an object (got {raw!r}); example: {{"keepRecentTokens": 20000}}'
            )

        def num(key: str, *, allow_float: bool = False, positive: bool = False) -> Any:
            value = raw.get(key)
            if value is None:
                return None
            ok_type = (int, float) if allow_float else (int,)
            if (
                isinstance(value, bool)
                or not isinstance(value, ok_type)
                or value < 0
                or (positive and value == 0)
            ):
                kind = "a positive number" if positive else "a non-negative number"
                raise ConfigError(f"{key_prefix}.{key} must be {kind} (got {value!r}); example: 20000")
            return value

        def flag(key: str, mapping: Mapping[str, Any] = raw, prefix: str = key_prefix) -> bool | None:
            value = mapping.get(key)
            if value is None:
                return None
            if not isinstance(value, bool):
                raise ConfigError(f"{prefix}.{key} must be true or false (got {value!r}); example: true")
            return value

        mode = raw.get("mode", "default")
        if mode not in ("default", "safeguard"):
            raise ConfigError(f'{key_prefix}.mode must be "default" or "safeguard" (got {mode!r})')
        policy = raw.get("identifierPolicy", "strict")
        if policy not in ("strict", "off", "custom"):
            raise ConfigError(f"{key_prefix}.identifierPolicy must be strict, off or custom (got {policy!r})")
        share = num("maxHistoryShare", allow_float=True)
        if share is not None and not 0 < share <= 1:
            raise ConfigError(
                f"{key_prefix}.maxHistoryShare must be between 0 and 1 (got {share!r}); example: 0.5"
            )
        guard = raw.get("qualityGuard") or {}
        if not isinstance(guard, Mapping):
            raise ConfigError(f"{key_prefix}.qualityGuard must be an object (got {guard!r})")
        flush = raw.get("memoryFlush") or {}
        if not isinstance(flush, Mapping):
            raise ConfigError(f"{key_prefix}.memoryFlush must be an object (got {flush!r})")
        force_bytes = flush.get("forceFlushTranscriptBytes", DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES)
        if isinstance(force_bytes, str):
            force_bytes = parse_byte_size(
                force_bytes, key=f"{key_prefix}.memoryFlush.forceFlushTranscriptBytes"
            )
        if isinstance(force_bytes, bool) or not isinstance(force_bytes, int) or force_bytes < 0:
            raise ConfigError(
                f"{key_prefix}.memoryFlush.forceFlushTranscriptBytes must be bytes or a size "
                f'(got {force_bytes!r}); example: "2mb"'
            )
        soft = flush.get("softThresholdTokens", DEFAULT_SOFT_THRESHOLD_TOKENS)
        if isinstance(soft, bool) or not isinstance(soft, int) or soft < 0:
            raise ConfigError(
                f"{key_prefix}.memoryFlush.softThresholdTokens must be a non-negative integer "
                f"(got {soft!r}); example: 4000"
            )
        retries = guard.get("maxRetries", 1)
        if isinstance(retries, bool) or not isinstance(retries, (int, float)):
            raise ConfigError(
                f"{key_prefix}.qualityGuard.maxRetries must be a number (got {retries!r}); example: 1"
            )
        floor = num("reserveTokensFloor")
        turns = num("recentTurnsPreserve")
        sections = raw.get("postCompactionSections")
        if sections is not None and (
            not isinstance(sections, list | tuple) or not all(isinstance(x, str) for x in sections)
        ):
            raise ConfigError(
                f"{key_prefix}.postCompactionSections must be a list of strings (got {sections!r}); "
                'example: ["Session Startup", "Red Lines"]'
            )
        return cls(
            enabled=flag("enabled") is not False,
            mode=mode,
            provider=raw.get("provider") or None,
            reserve_tokens=num("reserveTokens"),
            reserve_tokens_floor=DEFAULT_RESERVE_TOKENS_FLOOR if floor is None else int(floor),
            keep_recent_tokens=num("keepRecentTokens", positive=True),
            max_history_share=DEFAULT_MAX_HISTORY_SHARE if share is None else float(share),
            recent_turns_preserve=DEFAULT_RECENT_TURNS_PRESERVE
            if turns is None
            else max(0, min(12, int(turns))),
            identifier_policy=policy,
            identifier_instructions=raw.get("identifierInstructions") or None,
            quality_guard_enabled=flag("enabled", guard, f"{key_prefix}.qualityGuard"),
            quality_guard_max_retries=max(0, min(3, int(retries))),
            truncate_after_compaction=flag("truncateAfterCompaction") is True,
            post_compaction_sections=tuple(sections) if sections is not None else None,
            memory_flush=MemoryFlushSettings(
                enabled=flag("enabled", flush, f"{key_prefix}.memoryFlush") is not False,
                soft_threshold_tokens=soft,
                force_flush_transcript_bytes=force_bytes,
                model=flush.get("model") or None,
            ),
        )


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}


def parse_byte_size(value: str | int, *, key: str = "size") -> int:
    """`"2mb"` -> 2097152 (binary multiples, §4.1); integers pass through; invalid -> ConfigError."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f'{key} must not be negative (got {value!r}); example: "2mb"')
        return value
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise ConfigError(f'{key} is not a byte size (got {value!r}); example: "2mb"')
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def effective_reserve(
    window: int | None,
    reserve_tokens: int | None = None,
    reserve_tokens_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR,
) -> int:
    """R4.2.1-R4.2.3 (profile L) with the final clamp to `maxReserve` when the window is known."""
    floor = max(0, int(reserve_tokens_floor))
    base = ENGINE_RESERVE_TOKENS if reserve_tokens is None else max(0, int(reserve_tokens))
    if window and window > 0:
        min_prompt = min(MIN_PROMPT_BUDGET_CAP, max(1, window // 2))
        max_reserve = max(0, window - min_prompt)
        floor = min(floor, max_reserve)
        return min(max(base, floor), max_reserve)
    return max(base, floor)


def effective_reserve_current(window: int) -> int:
    """R4.2.4 (profile C, for comparison only): `min(20000, floor(W / 4))`."""
    return min(max(ENGINE_RESERVE_TOKENS, DEFAULT_RESERVE_TOKENS_FLOOR), window // 4)


def settings_reserve(window: int | None, settings: CompactionSettings | None = None) -> int:
    settings = settings or CompactionSettings()
    return effective_reserve(window, settings.reserve_tokens, settings.reserve_tokens_floor)


def compaction_threshold(window: int, settings: CompactionSettings | None = None) -> int:
    """Context size above which threshold compaction runs: `W - reserve` (R4.3.1)."""
    return window - settings_reserve(window, settings)


def should_compact(
    context_tokens: Any, window: int | None, settings: CompactionSettings | None = None
) -> bool:
    """R4.3.1: `enabled and W > 0 and contextTokens > W - reserve` (strictly greater).
    `context_tokens` is an int or a `TokenCount`."""
    settings = settings or CompactionSettings()
    context_tokens = getattr(context_tokens, "tokens", context_tokens)
    if not settings.enabled or not window or window <= 0:
        return False
    return bool(context_tokens > compaction_threshold(window, settings))


# Default context windows (tokens) of common models, longest matching prefix wins. Published
# figures of the vendors as of 2026; config values (`overrides`) always win. Unknown -> 200000.
DEFAULT_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-5", 400000),  # gpt-5, gpt-5.x, -mini, -nano, -codex
    ("gpt-4.1", 1047576),  # gpt-4.1, -mini, -nano
    ("gpt-4o", 128000),  # gpt-4o, gpt-4o-mini
    ("gpt-4-turbo", 128000),
    ("gpt-4-32k", 32768),
    ("gpt-4", 8192),
    ("gpt-3.5-turbo", 16385),
    ("gpt-oss", 131072),
    ("o1-mini", 128000),
    ("o1", 200000),
    ("o3", 200000),  # o3, o3-mini, o3-pro
    ("o4-mini", 200000),
    ("codex-mini", 200000),
    ("claude", 200000),  # claude 3.x / 4.x (opus, sonnet, haiku)
    ("gemini-1.5-pro", 2097152),
    ("gemini-1.5-flash", 1048576),
    ("gemini-2", 1048576),  # gemini-2.0 / 2.5 pro & flash
    ("gemini-3", 1048576),
    ("gemini", 1048576),
    ("llama-4", 1048576),
    ("llama4", 1048576),
    ("llama-3.1", 131072),
    ("llama-3.2", 131072),
    ("llama-3.3", 131072),
    ("llama3.1", 131072),
    ("llama3.2", 131072),
    ("llama3.3", 131072),
    ("llama-3", 8192),
    ("llama3", 8192),
    ("mistral-large", 131072),
    ("mistral-small", 131072),
    ("codestral", 262144),
    ("mixtral", 32768),
    ("qwen3", 131072),
    ("qwen2.5", 131072),
    ("deepseek", 131072),  # deepseek-chat / -reasoner (V3.x)
    ("grok-4", 256000),
    ("grok-3", 131072),
    ("glm-4.5", 131072),
    ("glm-4.6", 204800),
    ("kimi-k2", 262144),
)


def resolve_context_window(
    model: str | None,
    *,
    provider: str | None = None,
    overrides: Mapping[str, int] | None = None,
    agent_context_tokens: int | None = None,
    default: int = DEFAULT_CONTEXT_WINDOW,
) -> int:
    """Context window of a model: config override (`provider/model` or `model` key) -> the table
    above -> the agent's configured `contextTokens` -> 200000 (R5.2.1's fallback chain)."""
    name = (model or "").strip()
    bare = name.split("/")[-1].lower() if name else ""
    if overrides:
        for key in (f"{provider}/{name}" if provider else None, name, bare):
            if key and isinstance(overrides.get(key), int) and overrides[key] > 0:
                return overrides[key]
    if bare:
        best: tuple[int, int] | None = None
        for prefix, window in DEFAULT_CONTEXT_WINDOWS:
            if bare.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), window)
        if best:
            return best[1]
    if agent_context_tokens and agent_context_tokens > 0:
        return agent_context_tokens
    return default
