"""Pre-compaction memory flush planning (§5.2-§5.5): EX5.a-f and the skip rules."""

from __future__ import annotations

import pytest

from openclaw_cli.compaction import plan_memory_flush
from openclaw_cli.compaction.memory_flush import (
    SKIP_ALREADY_FLUSHED,
    SKIP_BELOW_THRESHOLD,
    SKIP_CLI_BACKEND,
    SKIP_DISABLED,
    SKIP_HEARTBEAT,
    SKIP_INCOGNITO,
    SKIP_NATIVE_COMPACTION,
    SKIP_NO_SESSION,
    SKIP_SANDBOX_READ_ONLY,
    TRIGGER_BYTES,
    TRIGGER_TOKENS,
    ensure_no_reply_hint,
    flush_bookkeeping,
    memory_flush_threshold,
    memory_flush_threshold_current,
    render_flush_prompt,
)
from openclaw_cli.compaction.thresholds import CompactionSettings, MemoryFlushSettings

MB = 1024 * 1024


def test_ex_5_a_threshold_176000():
    assert memory_flush_threshold(200000) == 176000
    row = {"sessionId": "s", "compactionCount": 0}
    below = plan_memory_flush(row, MemoryFlushSettings(), 200000, tokens=175999)
    assert not below.run and below.reason == SKIP_BELOW_THRESHOLD and below.threshold == 176000
    at = plan_memory_flush(row, MemoryFlushSettings(), 200000, tokens=176000)
    assert at.run and at.trigger == TRIGGER_TOKENS and at.tokens == 176000


def test_ex_5_b_once_per_compaction_cycle():
    row = {"compactionCount": 2, "memoryFlushCompactionCount": 2}
    decision = plan_memory_flush(row, MemoryFlushSettings(), 200000, tokens=190000)
    assert not decision.run and decision.reason == SKIP_ALREADY_FLUSHED
    # the next cycle (after another compaction) may flush again
    assert plan_memory_flush({**row, "compactionCount": 3}, None, 200000, tokens=190000).run
    # no compactionCount means 0; a recorded 0 then blocks a second flush
    assert not plan_memory_flush({"memoryFlushCompactionCount": 0}, None, 200000, tokens=190000).run


def test_ex_5_c_current_profile_formula():
    assert memory_flush_threshold_current(32768) == (20576, 24576)


def test_ex_5_d_forced_by_transcript_bytes():
    row = {"compactionCount": 1, "memoryFlushCompactionCount": 0, "totalTokens": 10000}
    decision = plan_memory_flush(row, MemoryFlushSettings(), 200000, transcript_bytes=int(2.2 * MB))
    assert decision.run and decision.trigger == TRIGGER_BYTES and decision.tokens == 10000
    flushed = {**row, "memoryFlushCompactionCount": 1}
    assert (
        plan_memory_flush(flushed, MemoryFlushSettings(), 200000, transcript_bytes=int(2.2 * MB)).reason
        == SKIP_ALREADY_FLUSHED
    )
    off = MemoryFlushSettings(force_flush_transcript_bytes=0)
    assert not plan_memory_flush(row, off, 200000, transcript_bytes=50 * MB).run
    assert not plan_memory_flush(row, MemoryFlushSettings(), 200000, transcript_bytes=2 * MB - 1).run


def test_ex_5_e_heartbeat_and_read_only_sandbox():
    row = {"compactionCount": 0}
    assert plan_memory_flush(row, None, 200000, tokens=190000, heartbeat=True).reason == SKIP_HEARTBEAT
    assert (
        plan_memory_flush(row, None, 200000, tokens=190000, sandbox_workspace_access="ro").reason
        == SKIP_SANDBOX_READ_ONLY
    )
    assert (
        plan_memory_flush(row, None, 200000, tokens=190000, sandbox_workspace_access="none").reason
        == SKIP_SANDBOX_READ_ONLY
    )
    assert plan_memory_flush(row, None, 200000, tokens=190000, sandbox_workspace_access="rw").run


def test_ex_5_f_small_window_disables_token_trigger_only():
    assert memory_flush_threshold(16384, 20000) == 0
    row = {"compactionCount": 0, "totalTokens": 16000}
    assert plan_memory_flush(row, None, 16384, tokens=16000).reason == SKIP_BELOW_THRESHOLD
    assert plan_memory_flush(row, None, 16384, tokens=16000, transcript_bytes=3 * MB).trigger == TRIGGER_BYTES


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"cli_backend": True}, SKIP_CLI_BACKEND),
        ({"native_compaction": True}, SKIP_NATIVE_COMPACTION),
        ({"incognito": True}, SKIP_INCOGNITO),
    ],
)
def test_other_skip_rules(kwargs, reason):
    assert plan_memory_flush({"compactionCount": 0}, None, 200000, tokens=190000, **kwargs).reason == reason


def test_disabled_no_session_settings_and_stale_totals():
    assert (
        plan_memory_flush({}, MemoryFlushSettings(enabled=False), 200000, tokens=10**6).reason
        == SKIP_DISABLED
    )
    assert plan_memory_flush(None, None, 200000, tokens=10**6).reason == SKIP_NO_SESSION
    # the row's totalTokens is used when no projection is given, unless marked stale
    assert plan_memory_flush({"totalTokens": 180000}, None, 200000).run
    assert not plan_memory_flush({"totalTokens": 180000, "totalTokensFresh": False}, None, 200000).run
    # CompactionSettings carries the floor and the flush settings; an explicit floor wins
    settings = CompactionSettings(
        reserve_tokens_floor=0, memory_flush=MemoryFlushSettings(soft_threshold_tokens=1000)
    )
    assert plan_memory_flush({}, settings, 100000, tokens=1).threshold == 99000
    assert plan_memory_flush({}, settings, 100000, tokens=1, reserve_tokens_floor=50000).threshold == 49000
    assert plan_memory_flush({}, None, None, tokens=176000).run  # unknown window -> 200000


def test_bookkeeping_and_prompts():
    assert flush_bookkeeping({"compactionCount": 2}, 123) == {
        "memoryFlushAt": 123,
        "memoryFlushCompactionCount": 2,
    }
    assert flush_bookkeeping({"compactionCount": 2}, 5, compacted_during_flush=True) == {
        "compactionCount": 3,
        "memoryFlushAt": 5,
        "memoryFlushCompactionCount": 3,
    }
    assert (
        ensure_no_reply_hint("Save notes.")
        == "Save notes.\n\nIf no user-visible reply is needed, start with NO_REPLY."
    )
    assert ensure_no_reply_hint("Reply NO_REPLY if idle") == "Reply NO_REPLY if idle"
    prompt = render_flush_prompt(None, date="2026-10-21", current_time="2026-10-21 09:30 UTC")
    assert prompt.startswith("Pre-compaction memory flush.") and "memory/2026-10-21.md" in prompt
    assert "YYYY-MM-DD" not in prompt and prompt.endswith("Current time: 2026-10-21 09:30 UTC")
    assert "If nothing to store, reply with NO_REPLY." in prompt
    assert (
        render_flush_prompt("Current time: x. NO_REPLY", date="d", current_time="y").count("Current time:")
        == 1
    )
