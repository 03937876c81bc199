"""Overflow detection (§4.15) and silent-reply tokens (§5.6)."""

from __future__ import annotations

import pytest

from openclaw_cli.compaction.overflow import (
    EXPLICIT_OVERFLOW_PATTERNS,
    OVERFLOW_GUIDANCE,
    compaction_token_count,
    is_context_overflow_error,
    is_silent_overflow,
    is_terminal_rate_limit,
    observed_token_count,
)
from openclaw_cli.compaction.silent import (
    HEARTBEAT_TOKEN,
    is_silent_reply,
    should_hold_stream_prefix,
    strip_leading_silent_token,
    strip_trailing_silent_tokens,
)


# -- overflow --------------------------------------------------------------------------------------
def test_ex_4_15_a_prompt_too_long_with_count():
    message = "prompt is too long: 213,462 tokens > 200000 maximum"
    assert is_context_overflow_error(message)
    assert observed_token_count(message) == 213462


def test_ex_4_15_b_sum_pattern():
    message = "input length and max_tokens exceed context limit: 190000 + 20000 > 200000"
    assert is_context_overflow_error(message)
    assert observed_token_count(message) == 210000
    assert (
        observed_token_count("input length and `max_tokens` exceed context limit: 1,000 + 500 > 1200") == 1500
    )


def test_ex_4_15_c_tpm_refusal_is_terminal_not_overflow():
    message = "Request too large for model in organization: TPM: Limit 12000, Requested 30000"
    assert is_terminal_rate_limit(message)
    assert not is_context_overflow_error(message)
    assert not is_terminal_rate_limit("TPM: Limit 30000, Requested 12000")


def test_ex_4_15_d_rate_limit_is_not_overflow():
    assert not is_context_overflow_error("429 rate limit: tokens per minute")
    assert not is_context_overflow_error(
        "Rate limit reached: maximum context length is 8192 tokens per minute"
    )


def test_ex_4_15_e_unparseable_count_uses_budget_plus_one():
    message = "Context window exceeded"
    assert is_context_overflow_error(message)
    assert observed_token_count(message) is None
    assert compaction_token_count(message, 128000) == 128001
    assert compaction_token_count(message, 128000, precheck_estimate=150000) == 150000
    assert compaction_token_count("prompt is too long: 5 tokens > 4 maximum", 128000) == 5


@pytest.mark.parametrize(
    "message",
    [
        "Error: request_too_large",
        "context_overflow: please shorten",
        "prompt has 9000 tokens, but the configured context size is 8192 tokens",
        "INVALID_ARGUMENT: The input token count exceeds the maximum number of tokens allowed",
        "This model's maximum context length is 128000 tokens.",
        "Context length exceeded",
        "prompt too long",
        "413 Payload Too Large",
        "input (300000 tokens) is longer than the model's context length",
        "Your input exceeds the context window of this model",  # assistant-error only
        "上下文过长，请压缩上下文",
    ],
)
def test_overflow_phrases(message):
    assistant_only = "exceeds the context window" in message
    assert is_context_overflow_error(message, assistant_error=True)
    assert is_context_overflow_error(message) is not assistant_only


@pytest.mark.parametrize(
    "message",
    [
        "",
        None,
        "connection reset by peer",
        "model not found",
        "Throttling error: too many tokens",
        "Service unavailable: too many tokens",
        "max_tokens must be greater than thinking.budget_tokens",
        "Your account has too many requests: context length exceeded",
    ],
)
def test_not_overflow(message):
    assert not is_context_overflow_error(message, assistant_error=True)


def test_provider_fallback_phrases_need_the_generic_shape():
    assert is_context_overflow_error("Ollama error: context length exceeded, too many tokens")
    assert is_context_overflow_error("input token count exceeds the maximum number of input tokens")
    assert is_context_overflow_error("context size has been exceeded")
    assert not is_context_overflow_error("operation exceeded")
    assert len(EXPLICIT_OVERFLOW_PATTERNS) > 20
    assert OVERFLOW_GUIDANCE.startswith("Context overflow: prompt too large for the model.")


def test_silent_overflow():
    assert is_silent_overflow(input_tokens=210000, context_window=200000)
    assert is_silent_overflow(
        input_tokens=198500, context_window=200000, stop_reason="length", output_tokens=0
    )
    assert not is_silent_overflow(
        input_tokens=198500, context_window=200000, stop_reason="length", output_tokens=5
    )
    assert not is_silent_overflow(input_tokens=100, context_window=None)


# -- silent tokens (§5.6) ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "NO_REPLY",
        "  NO_REPLY  ",
        "\nNO_REPLY\n",
        "no_reply",
        "  No_RePlY  ",
        "NO_REPLY NO_REPLY",
        "<think>Internal reasoning here.</think>\nNO_REPLY",
        '"NO_REPLY"',
        '{"action": "NO_REPLY"}',
        "<thinking>x</thinking>\nI'll stay quiet. NO_REPLY",
        "thinking\nthe user is chatting with someone else\nNO_REPLY",
    ],
)
def test_ex_5_6_a_silent(text):
    assert is_silent_reply(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Here is a helpful response.\n\nNO_REPLY",
        "NO_REPLY but here is more content",
        "Please NO_REPLY to this",
        "I think this is a helpful response.\n\nNO_REPLY",
        "thinking about it. NO_REPLY",
        "<think>…</think>\nHere is the answer you should send to the user.\nNO_REPLY",
        '{"action": "NO_REPLY", "text": "hi"}',
    ],
)
def test_ex_5_6_b_not_silent(text):
    assert not is_silent_reply(text)


def test_heartbeat_token():
    assert is_silent_reply("HEARTBEAT_OK", HEARTBEAT_TOKEN)
    assert not is_silent_reply("HEARTBEAT_OK")


def test_ex_5_6_c_streaming_prefixes():
    for held in ("NO", "NO_", "NO_RE", "NO_REPLY", "  NO_R"):
        assert should_hold_stream_prefix(held), held
    for shown in ("N", "No", "no", "Hello", "NO_X", "NO-", "NO_REPLY more", ""):
        assert not should_hold_stream_prefix(shown), shown
    assert should_hold_stream_prefix("HEARTBEAT_", HEARTBEAT_TOKEN)
    for shown in ("HE", "HEART", "HEARTBEAT"):
        assert not should_hold_stream_prefix(shown, HEARTBEAT_TOKEN), shown


def test_ex_5_6_d_leading_glued_token():
    assert strip_leading_silent_token("NO_REPLYThe user is saying") == "The user is saying"
    assert strip_leading_silent_token("No_RePlYThe user") == "The user"
    assert strip_leading_silent_token("NO_REPLY\nActually, one more thing") == "Actually, one more thing"
    for text in ("NO_REPLY -- nope", "NO_REPLY: explanation", "NO_REPLY—note", "NO_REPLY", "Hello"):
        assert strip_leading_silent_token(text) is None, text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Done.\n\nNO_REPLY", "Done."),
        ("NO_REPLY 👍", "NO_REPLY 👍"),
        ("😄 NO_REPLY", "😄"),
        ("interject.NO_REPLY", "interject.NO_REPLY"),
        ("NO_REPLY ok NO_REPLY", "NO_REPLY ok"),
        ("**NO_REPLY", ""),
        ("some text **NO_REPLY", "some text"),
        ("**bold** NO_REPLY", "**bold**"),
    ],
)
def test_ex_5_6_e_trailing_strip(text, expected):
    assert strip_trailing_silent_tokens(text) == expected


def test_trailing_heartbeat_strip():
    assert strip_trailing_silent_tokens("done HEARTBEAT_OK", HEARTBEAT_TOKEN) == "done"
