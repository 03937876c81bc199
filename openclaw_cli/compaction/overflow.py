"""Context-overflow error detection (§4.15). The phrase tables are data (spec §7 item 13): one list
per scope, matched case-insensitively, so new provider wordings are one line each."""

from __future__ import annotations

import re
from collections.abc import Iterable

OVERFLOW_GUIDANCE = (
    "Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh "
    "session, or use a larger-context model."
)
MAX_OVERFLOW_COMPACTION_ATTEMPTS = 3

_N = r"[\d,]+"

# R4.15.1: any match means overflow (unless excluded below)
EXPLICIT_OVERFLOW_PATTERNS: tuple[str, ...] = (
    r"request_too_large",
    r"context_overflow",
    rf"prompt has {_N} tokens, but the configured context size is {_N} tokens",
    r"invalid_argument.*maximum number of tokens",
    r"request exceeds the maximum size",
    r"context[_ ]length[_ ]exceeded",
    r"maximum context length",
    r"prompt is too long",
    r"prompt too long",
    r"exceeds model context window",
    r"model token limit",
    r"input exceeds.*maximum number of tokens",
    r"context window.*ran out of (?:room|space)",
    r"ran out of (?:room|space).*context window",
    r"request size exceeds.*context window",
    r"context overflow:",
    r"exceeds? context limit",
    r"exceeds the model's maximum context",
    r"max_tokens.*exceed.*context",
    r"input length.*exceed.*context",
    rf"input \({_N} tokens\) is longer than the model's context length",
    r"\b413\b.*too large",
    r"context[_ ]window[_ ]exceeded",
    rf"input length {_N} tokens exceeds the model limit",
    r"上下文过长",
    r"上下文超出",
    r"上下文长度超",
    r"超出最大上下文",
    r"请压缩上下文",
)

# R4.15.2: provider-shaped phrases, only counted when the generic shape also holds
PROVIDER_FALLBACK_PATTERNS: tuple[str, ...] = (
    r"input token count exceeds the maximum number of input tokens",
    r"input is too long for this model",
    r"input exceeds the maximum number of tokens",
    r"ollama error: context length exceeded(?:, too many tokens)?",
    r"total tokens.*exceeds.*(?:max|maximum|limit)",
    rf"(?:request|prompt) \({_N} tokens\) exceeds the available context size",
    r"context size has been exceeded",
    r"input is too long for the model",
)
GENERIC_SUBJECT = r"\b(?:context|window|prompt|tokens?|input|request|model)\b"
GENERIC_PROBLEM = r"(?:too (?:large|long|many)|exceed\w*|overflow|\blimit\b|\bmaximum\b|\bmax\b)"

# R4.15.3: additionally matched on failed assistant responses
ASSISTANT_ERROR_PATTERNS: tuple[str, ...] = (
    rf"input length and max_tokens exceed context limit: {_N} \+ {_N} > {_N}",
    r"input is too long for requested model",
    r"exceeds the context window",
    rf"exceeds the model's maximum context length of {_N} tokens",
    r"input token count.*exceeds the maximum",
    rf"maximum prompt length is {_N}",
    r"reduce the length of the messages",
    rf"maximum context length is {_N} tokens",
    rf"exceeds maximum allowed input length of {_N} tokens",
    rf"exceeds the limit of {_N}",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"tokens in request more than max tokens allowed",
    r"prompt exceeds max length",
    rf"too large for model with {_N} maximum context length",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded max context length",
    r"context_length_exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^413 (?:status code )?\(no body\)",
)

# Exclusions: rate limits (TPM) and reasoning-budget constraint errors are not overflows
RATE_LIMIT_EXCLUSIONS: tuple[str, ...] = (
    r"tokens per minute",
    r"\bTPM\b",
    r"rate[ _-]?limit",
    r"too many requests",
)
REASONING_CONSTRAINT_EXCLUSIONS: tuple[str, ...] = (
    r"budget_tokens",
    r"thinking budget",
    r"reasoning (?:effort|budget|tokens?) ",
)
ASSISTANT_ERROR_PREFIX_EXCLUSIONS: tuple[str, ...] = (r"^throttling error:", r"^service unavailable:")

# R4.15.4 observed token counts
SUM_COUNT_PATTERNS: tuple[str, ...] = (
    rf"input length (?:and max_tokens )?exceeds? context (?:limit|window)[^0-9]*?({_N})\s*\+\s*({_N})\s*>\s*{_N}",
    rf"input length and `max_tokens` exceed context limit: ({_N})\s*\+\s*({_N})\s*>\s*{_N}",
)
SINGLE_COUNT_PATTERNS: tuple[str, ...] = (
    rf"prompt is too long: ({_N}) tokens > {_N} maximum",
    rf"prompt is too long: ({_N}), model maximum context length: {_N}",
    rf"requested ({_N}) tokens",
    rf"token limit: {_N} \(requested: ({_N})\)",
    rf"resulted in ({_N}) tokens",
)
TERMINAL_RATE_LIMIT = rf"limit:?\s*({_N}).*?requested:?\s*({_N})"


def _compile(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE | re.DOTALL) for p in patterns]


_EXPLICIT = _compile(EXPLICIT_OVERFLOW_PATTERNS)
_FALLBACK = _compile(PROVIDER_FALLBACK_PATTERNS)
_ASSISTANT = _compile(ASSISTANT_ERROR_PATTERNS)
_RATE = _compile(RATE_LIMIT_EXCLUSIONS)
_REASONING = _compile(REASONING_CONSTRAINT_EXCLUSIONS)
_PREFIX_EXCL = _compile(ASSISTANT_ERROR_PREFIX_EXCLUSIONS)
_SUM = _compile(SUM_COUNT_PATTERNS)
_SINGLE = _compile(SINGLE_COUNT_PATTERNS)
_SUBJECT = re.compile(GENERIC_SUBJECT, re.IGNORECASE)
_PROBLEM = re.compile(GENERIC_PROBLEM, re.IGNORECASE)
_TERMINAL = re.compile(TERMINAL_RATE_LIMIT, re.IGNORECASE | re.DOTALL)


def _any(patterns: list[re.Pattern[str]], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def is_rate_limit_message(message: str) -> bool:
    return _any(_RATE, message)


def is_context_overflow_error(message: str | None, *, assistant_error: bool = False) -> bool:
    """True when `message` says the prompt does not fit the model's context (R4.15.1-3).

    `assistant_error=True` also applies the patterns used on failed assistant responses.
    """
    if not message or not isinstance(message, str):
        return False
    text = message.strip()
    if is_rate_limit_message(text) or _any(_REASONING, text):
        return False
    if _any(_EXPLICIT, text):
        return True
    if _SUBJECT.search(text) and _PROBLEM.search(text) and _any(_FALLBACK, text):
        return True
    return assistant_error and not _any(_PREFIX_EXCL, text) and _any(_ASSISTANT, text)


def _number(raw: str) -> int:
    return int(raw.replace(",", ""))


def observed_token_count(message: str | None) -> int | None:
    """The prompt size an overflow error reports (R4.15.4), or None."""
    if not message:
        return None
    for pattern in _SUM:
        match = pattern.search(message)
        if match:
            value = _number(match.group(1)) + _number(match.group(2))
            if value > 0:
                return value
    for pattern in _SINGLE:
        match = pattern.search(message)
        if match:
            value = _number(match.group(1))
            if value > 0:
                return value
    return None


def compaction_token_count(message: str | None, budget: int, precheck_estimate: int | None = None) -> int:
    """`currentTokenCount` for overflow compaction (R4.15.5): observed count, else the pre-check
    estimate, else the synthetic just-over-budget `budget + 1`."""
    observed = observed_token_count(message)
    if observed is not None:
        return observed
    if precheck_estimate is not None and precheck_estimate > 0:
        return precheck_estimate
    return budget + 1


def is_terminal_rate_limit(message: str | None) -> bool:
    """A TPM refusal with `limit L ... requested R`, R > L: compaction cannot help (R4.15.6)."""
    if not message or not is_rate_limit_message(message):
        return False
    match = _TERMINAL.search(message)
    return match is not None and _number(match.group(2)) > _number(match.group(1))


def is_silent_overflow(
    *,
    input_tokens: int | None,
    context_window: int | None,
    stop_reason: str | None = None,
    output_tokens: int | None = None,
) -> bool:
    """R4.3.5: reported input above the window, or a `length` stop with no output at >= 99 %."""
    if not context_window or context_window <= 0 or input_tokens is None:
        return False
    if input_tokens > context_window:
        return True
    return stop_reason == "length" and not output_tokens and input_tokens >= 0.99 * context_window
