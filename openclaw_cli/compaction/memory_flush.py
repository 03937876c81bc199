"""Pre-compaction memory flush planning (§5.2-§5.5, profile L).

`plan_memory_flush` is pure: a session row (`SessionEntry` dict), settings and the current figures
in, a `FlushDecision` out. Running the silent flush turn and persisting `memoryFlushAt` /
`memoryFlushCompactionCount` (see `flush_bookkeeping`) belong to the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openclaw_cli.compaction.thresholds import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_RESERVE_TOKENS_FLOOR,
    CompactionSettings,
    MemoryFlushSettings,
)

NO_REPLY_HINT = "\n\nIf no user-visible reply is needed, start with NO_REPLY."
DEFAULT_FLUSH_PROMPT = (
    "Pre-compaction memory flush. Store durable memories now, only in memory/YYYY-MM-DD.md (create the "
    "memory/ directory if needed). If that file already exists, append to it; do not rewrite it. Treat "
    "MEMORY.md, DREAMS.md, SOUL.md and AGENTS.md as read-only. Do not create timestamped variants of the "
    "daily file (no hour or minute in the name). If nothing to store, reply with NO_REPLY."
)
DEFAULT_FLUSH_SYSTEM_PROMPT = (
    "Pre-compaction memory flush turn. The session is close to auto-compaction, so capture durable memories "
    "to disk now: memory/YYYY-MM-DD.md only, appending when it exists; MEMORY.md, DREAMS.md, SOUL.md and "
    "AGENTS.md are read-only. You may reply, but usually NO_REPLY is correct."
)

# skip reasons (outcome `skipped`), in the order they are checked
SKIP_DISABLED = "disabled"
SKIP_NO_SESSION = "no_session"
SKIP_HEARTBEAT = "heartbeat"
SKIP_CLI_BACKEND = "cli_backend"
SKIP_NATIVE_COMPACTION = "native_compaction"
SKIP_SANDBOX_READ_ONLY = "sandbox_read_only"
SKIP_INCOGNITO = "incognito"
SKIP_ALREADY_FLUSHED = "already_flushed_this_cycle"
SKIP_BELOW_THRESHOLD = "below_threshold"
TRIGGER_TOKENS = "tokens"
TRIGGER_BYTES = "transcript_bytes"


@dataclass(frozen=True)
class FlushDecision:
    run: bool
    reason: str  # the trigger when run, else the skip reason
    trigger: str | None = None  # tokens | transcript_bytes
    threshold: int = 0  # token threshold (0 = token trigger disabled)
    tokens: int | None = None  # the token figure compared with the threshold
    compaction_count: int = 0


def memory_flush_threshold(
    context_window: int,
    reserve_tokens_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR,
    soft_threshold_tokens: int = 4000,
) -> int:
    """R5.2.1 (L): `max(0, W - reserveTokensFloor - softThresholdTokens)` (floor uncapped)."""
    return max(
        0, int(context_window) - max(0, int(reserve_tokens_floor)) - max(0, int(soft_threshold_tokens))
    )


def memory_flush_threshold_current(
    context_window: int, soft_threshold_tokens: int = 4000, server_threshold: int = 0
) -> tuple[int, int]:
    """R5.2.2 (profile C, for comparison): (flush threshold, compaction threshold)."""
    reserve = min(20000, context_window // 4)
    soft = min(soft_threshold_tokens, (context_window - reserve) // 2)
    compaction = max(0, context_window - reserve, server_threshold)
    return max(0, compaction - soft), compaction


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def plan_memory_flush(
    entry: Mapping[str, Any] | None,
    settings: MemoryFlushSettings | CompactionSettings | None = None,
    context_window: int | None = None,
    tokens: int | None = None,
    transcript_bytes: int | None = None,
    *,
    heartbeat: bool = False,
    cli_backend: bool = False,
    native_compaction: bool = False,
    sandbox_workspace_access: str | None = None,
    incognito: bool = False,
    reserve_tokens_floor: int | None = None,
) -> FlushDecision:
    """Decide whether the pre-compaction memory flush runs now (R5.2.1, R5.2.3, R5.3.1, §5.4).

    `tokens` is the projected prompt size when known (persisted prompt + last output + pending
    prompt estimate); otherwise the row's fresh `totalTokens` is used. `sandbox_workspace_access`
    is None when the session is not sandboxed.
    """
    floor = reserve_tokens_floor
    if isinstance(settings, CompactionSettings):
        floor = settings.reserve_tokens_floor if floor is None else floor
        flush = settings.memory_flush
    else:
        flush = settings or MemoryFlushSettings()
    floor = DEFAULT_RESERVE_TOKENS_FLOOR if floor is None else floor
    window = context_window if context_window and context_window > 0 else DEFAULT_CONTEXT_WINDOW
    threshold = memory_flush_threshold(window, floor, flush.soft_threshold_tokens)
    count = _int(entry.get("compactionCount")) if isinstance(entry, Mapping) else None
    count = count or 0

    def skip(reason: str, figure: int | None = None) -> FlushDecision:
        return FlushDecision(False, reason, None, threshold, figure, count)

    if not flush.enabled:
        return skip(SKIP_DISABLED)
    if not isinstance(entry, Mapping):
        return skip(SKIP_NO_SESSION)
    if heartbeat:
        return skip(SKIP_HEARTBEAT)
    if cli_backend:
        return skip(SKIP_CLI_BACKEND)
    if native_compaction:
        return skip(SKIP_NATIVE_COMPACTION)
    if sandbox_workspace_access is not None and sandbox_workspace_access != "rw":
        return skip(SKIP_SANDBOX_READ_ONLY)
    if incognito:
        return skip(SKIP_INCOGNITO)
    figure = tokens if tokens is not None and tokens > 0 else None
    if figure is None and entry.get("totalTokensFresh") is not False:
        figure = _int(entry.get("totalTokens"))
    flushed_at = _int(entry.get("memoryFlushCompactionCount"))
    if flushed_at is not None and flushed_at == count:  # R5.3.1
        return skip(SKIP_ALREADY_FLUSHED, figure)
    if threshold > 0 and figure is not None and figure >= threshold:
        return FlushDecision(True, TRIGGER_TOKENS, TRIGGER_TOKENS, threshold, figure, count)
    force = flush.force_flush_transcript_bytes
    if force and force > 0 and transcript_bytes is not None and transcript_bytes >= force:  # R5.2.3
        return FlushDecision(True, TRIGGER_BYTES, TRIGGER_BYTES, threshold, figure, count)
    return skip(SKIP_BELOW_THRESHOLD, figure)


def flush_bookkeeping(
    entry: Mapping[str, Any], now_ms: int, *, compacted_during_flush: bool = False
) -> dict[str, Any]:
    """R5.3.2: the row fields to write after a successful flush."""
    count = _int(entry.get("compactionCount")) or 0
    updates: dict[str, Any] = {}
    if compacted_during_flush:
        count += 1
        updates["compactionCount"] = count
    updates["memoryFlushAt"] = now_ms
    updates["memoryFlushCompactionCount"] = count
    return updates


def ensure_no_reply_hint(prompt: str) -> str:
    """R5.5.4: append the NO_REPLY hint to a custom prompt that lacks it."""
    return prompt if "NO_REPLY" in prompt else prompt + NO_REPLY_HINT


def render_flush_prompt(prompt: str | None, *, date: str, current_time: str | None = None) -> str:
    """R5.5.1: `YYYY-MM-DD` -> the user's date; a `Current time:` line unless present."""
    text = ensure_no_reply_hint(prompt or DEFAULT_FLUSH_PROMPT).replace("YYYY-MM-DD", date)
    if current_time and "Current time:" not in text:
        text += f"\nCurrent time: {current_time}"
    return text
