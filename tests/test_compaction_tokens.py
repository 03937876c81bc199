"""Token counting (spec D7, R4.4) and thresholds (R4.2, R4.3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from openclaw_cli.compaction.thresholds import (
    CompactionSettings,
    compaction_threshold,
    effective_reserve,
    parse_byte_size,
    resolve_context_window,
    should_compact,
)
from openclaw_cli.compaction.tokens import (
    IMAGE_TOKENS,
    TokenCount,
    Tokenizer,
    context_tokens,
    estimate_message_tokens,
    exact_text_tokens,
    message_tokens,
)
from openclaw_cli.errors import ConfigError
from tests.session_generator import generate_session


def msg(role: str, text: str = "", **extra) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}], **extra}


def entry(ident: str, message: dict) -> dict:
    return {
        "type": "message",
        "id": ident,
        "parentId": None,
        "timestamp": "2026-10-01T00:00:00.000Z",
        "message": message,
    }


# -- estimate -------------------------------------------------------------------------------------
def test_estimate_is_ceil_chars_over_4_ex_4_4_a():
    assert estimate_message_tokens(msg("user", "hello world")) == 3
    assert estimate_message_tokens(msg("user", "x" * 4000)) == 1000
    text = "abcdefghij" * 777
    assert Tokenizer("estimate").count_text(text) == -(-len(text) // 4)


def test_assistant_tool_call_counted_chars_ex_4_4_b():
    m = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "ok"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}},
        ],
    }
    assert estimate_message_tokens(m) == 6  # 2 + 4 + 16 = 22 chars


def test_counted_chars_per_role_and_images():
    thinking = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "t" * 40}, {"type": "text", "text": "a" * 40}],
    }
    assert estimate_message_tokens(thinking) == 20
    image = {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "data": "AAAA"}]}
    assert estimate_message_tokens(image) == -(-(3 + 4800) // 4)
    bash = {"role": "bashExecution", "command": "ls -la", "output": "x" * 94}
    assert estimate_message_tokens(bash) == 25
    summary = {"role": "compactionSummary", "summary": "s" * 400}
    assert estimate_message_tokens(summary) == 100
    excluded = {"role": "bashExecution", "command": "ls", "output": "x" * 100, "excludeFromContext": True}
    assert estimate_message_tokens(excluded) == 0
    assert Tokenizer("exact").message_tokens(image) == exact_text_tokens("see") + IMAGE_TOKENS


def test_metadata_entries_count_zero_and_entries_project():
    tok = Tokenizer("estimate")
    assert tok.message_tokens({"type": "model_change", "id": "m1", "provider": "x", "modelId": "y"}) == 0
    assert tok.message_tokens(entry("e1", msg("user", "y" * 8))) == 2
    compaction = {
        "type": "compaction",
        "id": "c1",
        "summary": "z" * 40,
        "firstKeptEntryId": "c1",
        "tokensBefore": 1,
    }
    assert tok.message_tokens(compaction) == 10


# -- exact ----------------------------------------------------------------------------------------
def test_exact_count_is_stable_and_matches_cl100k():
    # cl100k ids of "hello world" are [15339, 1917]: the offline file is the real encoding
    from openclaw_cli.compaction.tokens import get_encoding

    assert get_encoding().encode("hello world") == [15339, 1917]
    text = "The quick brown fox jumps over the lazy dog. /srv/app/main.py:42 → call_d7eb89a64d0f"
    first = exact_text_tokens(text)
    assert first == exact_text_tokens(text) == Tokenizer("exact").count_text(text)
    assert first == len(get_encoding().encode_ordinary(text))
    assert 15 < first < 40


# Paragraphs in several scripts: the estimate should be near what cl100k counts (R4.4.4; chars/4 would
# be 3-4x too low for CJK, and ASCII must not change).
SCRIPTS = {
    "zh": "会话管理层负责保存对话记录，并在上下文窗口快满时压缩历史消息。请不要删除审计字段，并保留所有文件路径和标识符。",
    "ja": "セッション管理層は会話の記録を保存し、コンテキストウィンドウがいっぱいになりそうなときに履歴を圧縮します。",
    "ko": "세션 관리 계층은 대화 기록을 저장하고 컨텍스트 창이 거의 찼을 때 기록을 압축합니다. 감사 열을 삭제하지 마세요.",
    "ru": "Уровень управления сессиями сохраняет историю разговоров и сжимает старые сообщения, когда окно почти заполнено.",
    "el": "Το επίπεδο διαχείρισης συνεδριών αποθηκεύει το ιστορικό συνομιλιών και συμπιέζει τα παλιά μηνύματα.",
    "he": "שכבת ניהול ההפעלות שומרת את היסטוריית השיחות ודוחסת הודעות ישנות כאשר חלון ההקשר כמעט מלא.",
    "ar": "تحفظ طبقة إدارة الجلسات سجل المحادثات وتضغط الرسائل القديمة عندما تكون نافذة السياق ممتلئة تقريبًا.",
    "hi": "सत्र प्रबंधन परत बातचीत का इतिहास सहेजती है और संदर्भ विंडो लगभग भर जाने पर पुराने संदेशों को संपीड़ित करती है।",
    "th": "ชั้นการจัดการเซสชันจะบันทึกประวัติการสนทนาและบีบอัดข้อความเก่าเมื่อหน้าต่างบริบทใกล้เต็ม",
    "de": "Die Sitzungsverwaltung speichert den Gesprächsverlauf und komprimiert ältere Nachrichten, wenn es voll ist.",
    "emoji": "Release shipped 🎉🚀✅ tests green 👍🔥 thanks 🙏",
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_estimate_of_non_latin_scripts_is_near_the_tokenizer(script):
    from openclaw_cli.compaction.tokens import estimate_text_tokens

    text = SCRIPTS[script] * 3
    exact = exact_text_tokens(text)
    estimate = estimate_text_tokens(text)
    assert 0.75 <= estimate / exact <= 1.3, (script, estimate, exact)
    if script in ("zh", "ja"):
        assert estimate >= 0.9 * len(text)  # about one token per character, not len/4
    assert estimate_message_tokens(msg("user", text)) == estimate
    assert Tokenizer("estimate").count_text(text) == estimate


def test_ascii_estimate_is_unchanged_and_mixed_text_adds_up():
    from openclaw_cli.compaction.tokens import estimate_text_tokens, weighted_chars

    for text in ("", "a", "hello world", "x" * 4001, "/srv/app/main.py:42 call_d7eb89a64d0f"):
        assert estimate_text_tokens(text) == -(-len(text) // 4)
    assert weighted_chars("修复 bug") == 4 + 4 + 4  # two ideographs, a space and three letters
    assert weighted_chars("ü") == 2 and weighted_chars("🎉") == 12 and weighted_chars("Ωμέγα") == 20
    assert weighted_chars(chr(0xD83D)) == 4  # a lone surrogate (JSON "\ud83d") is counted once


def test_estimate_is_close_to_exact_on_prose():
    text = (
        "Compaction summarises older conversation turns so that the context window keeps room for new "
        "work; the recent tail is kept verbatim and the rest becomes a structured summary. "
    ) * 50
    exact = exact_text_tokens(text)
    estimate = Tokenizer("estimate").count_text(text)
    assert 0.8 <= estimate / exact <= 1.5


@pytest.mark.parametrize("user_cache", [False, True])
def test_encoder_loads_offline_and_writes_no_cache_anywhere(tmp_path, user_cache):
    """D6.1 (issue 13 case 7): a fresh process with sockets disabled loads the encoder from the
    bundled file and writes nothing — not under $HOME/.cache, not in the temp dir, not in a
    TIKTOKEN_CACHE_DIR the user set — and leaves the environment as it was."""
    code = (
        "import socket\n"
        "def boom(*a, **k):\n    raise RuntimeError('network used')\n"
        "socket.socket.connect = boom\nsocket.create_connection = boom\n"
        "import os\n"
        "from openclaw_cli.compaction.tokens import exact_text_tokens\n"
        "print(exact_text_tokens('hello world'))\n"
        "print(os.environ.get('TIKTOKEN_CACHE_DIR', '<unset>'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    for name in ("HOME", "XDG_CACHE_HOME", "TMPDIR"):
        (tmp_path / name).mkdir()
        env[name] = str(tmp_path / name)
    if user_cache:
        (tmp_path / "user-cache").mkdir()
        env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "user-cache")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    count, cache_dir = out.stdout.split()
    assert count == "2"
    assert cache_dir == (str(tmp_path / "user-cache") if user_cache else "<unset>")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_tokenizer_caches_per_entry_and_batches():
    session = generate_session(3, turns=6)
    tok = Tokenizer("exact")
    tok.prefetch(session.entries)
    tokenized = tok.tokenized
    assert tokenized == sum(1 for e in session.entries if "type" in e)
    values = [tok.message_tokens(e) for e in session.entries]
    assert tok.tokenized == tokenized  # every later call was served from the cache
    fresh = Tokenizer("exact")
    assert values == [fresh.message_tokens(e) for e in session.entries]
    # another entry reusing an id (e.g. a hand-made or copied transcript) is not mistaken for it
    e = session.entries[3]
    changed = {**e, "message": {**e["message"], "content": [{"type": "text", "text": "x" * 4000}]}}
    assert tok.message_tokens(changed) == Tokenizer("exact").message_tokens(changed) != values[3]
    with pytest.raises(ValueError):
        Tokenizer("fast")  # type: ignore[arg-type]


def test_module_level_message_tokens_methods():
    e = entry("x1", msg("user", "hello world, this is a test"))
    assert message_tokens(e, "estimate") == 7
    assert message_tokens(e, "exact") == exact_text_tokens("hello world, this is a test")


# -- context size (R4.4.5) ----------------------------------------------------------------------------
def test_context_prefers_last_usage_plus_trailing_estimate():
    usage = {"input": 1000, "output": 200, "cacheRead": 50, "cacheWrite": 0}
    entries = [
        entry("u1", msg("user", "a" * 400)),
        entry("a1", msg("assistant", "b" * 400, usage={**usage, "totalTokens": 5000}, stopReason="stop")),
        entry("u2", msg("user", "c" * 400)),
        entry("a2", msg("assistant", "d" * 40, usage=usage, stopReason="stop")),
        entry("u3", msg("user", "e" * 80)),
    ]
    count = context_tokens(entries, "estimate")
    assert count == TokenCount(
        1250 + 20,
        "usage",
        usage_tokens=1250,
        trailing_tokens=20,
        trailing_method="estimate",
        usage_entry_id="a2",
    )


def test_context_skips_aborted_and_errored_usage_and_honours_usage_from():
    entries = [
        entry("u1", msg("user", "a" * 400)),
        entry("a1", msg("assistant", "b" * 400, usage={"totalTokens": 7000}, stopReason="stop")),
        entry("u2", msg("user", "c" * 400)),
        entry("a2", msg("assistant", "d" * 40, usage={"totalTokens": 9999}, stopReason="aborted")),
        entry("a3", msg("assistant", "d" * 40, usage={"totalTokens": 8888}, stopReason="error")),
    ]
    count = context_tokens(entries, "estimate")
    assert count.method == "usage" and count.usage_tokens == 7000
    assert count.tokens == 7000 + 100 + 10 + 10
    # usage before `usage_from` is ignored (stale, before the latest compaction: R4.8.4)
    pure = context_tokens(entries, "estimate", usage_from=2)
    assert pure.method == "estimate"
    assert pure.tokens == 100 + 100 + 100 + 10 + 10  # no anchor: every message counted
    assert context_tokens([entry("u", msg("user", "x" * 8))], "estimate") == TokenCount(2, "estimate")


# -- thresholds -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("window", "floor", "reserve", "threshold"),
    [
        (200000, 20000, 20000, 180000),  # EX4.2.a
        (32768, 20000, 20000, 12768),  # EX4.2.b
        (16384, 20000, 8384, 8000),  # EX4.2.c (final clamp)
        (200000, 0, 16384, 183616),  # EX4.2.d
    ],
)
def test_effective_reserve_examples(window, floor, reserve, threshold):
    settings = CompactionSettings(reserve_tokens_floor=floor)
    assert effective_reserve(window, None, floor) == reserve
    assert compaction_threshold(window, settings) == threshold
    assert not should_compact(threshold, window, settings)  # strictly greater
    assert should_compact(threshold + 1, window, settings)


def test_ex_4_2_e_current_profile_reserve():
    from openclaw_cli.compaction.thresholds import effective_reserve_current

    assert effective_reserve_current(32768) == 8192
    assert 32768 - effective_reserve_current(32768) == 24576
    assert effective_reserve_current(200000) == 20000


def test_reserve_without_window_and_configured_base():
    assert effective_reserve(None) == 20000
    assert effective_reserve(0, 30000, 20000) == 30000
    assert effective_reserve(200000, 30000, 20000) == 30000
    assert effective_reserve(10000, 30000, 20000) == 5000  # clamped to W - min(8000, W/2)


def test_measure_carries_the_method():
    tok = Tokenizer("exact")
    assert tok.measure_text("hello world") == TokenCount(2, "exact")
    assert Tokenizer().measure(entry("m1", msg("user", "x" * 40))) == TokenCount(10, "estimate")
    assert should_compact(TokenCount(180001, "usage"), 200000)


def test_should_compact_disabled_or_unknown_window():
    assert not should_compact(10**9, 200000, CompactionSettings(enabled=False))
    assert not should_compact(10**9, 0)
    assert not should_compact(10**9, None)


def test_context_window_table_and_overrides():
    assert resolve_context_window("gpt-4o") == 128000
    assert resolve_context_window("openai/gpt-4o-mini") == 128000
    assert resolve_context_window("gpt-4.1-mini") == 1047576
    assert resolve_context_window("gpt-5.4") == 400000
    assert resolve_context_window("o3-mini") == 200000
    assert resolve_context_window("claude-sonnet-4-5") == 200000
    assert resolve_context_window("gemini-2.5-pro") == 1048576
    assert resolve_context_window("llama-3.1-70b") == 131072
    assert resolve_context_window("some-unknown-model") == 200000
    assert resolve_context_window(None, agent_context_tokens=64000) == 64000
    assert resolve_context_window("gpt-4o", overrides={"gpt-4o": 64000}) == 64000
    assert resolve_context_window("gpt-4o", provider="azure", overrides={"azure/gpt-4o": 32000}) == 32000


def test_settings_from_mapping_and_validation():
    s = CompactionSettings.from_mapping(
        {
            "keepRecentTokens": 5000,
            "reserveTokensFloor": 0,
            "mode": "safeguard",
            "qualityGuard": {"maxRetries": 9},
            "memoryFlush": {"forceFlushTranscriptBytes": "20mb"},
        }
    )
    assert s.keep_recent_tokens == 5000 and s.reserve_tokens_floor == 0
    assert s.quality_guard_active and s.quality_guard_retries == 3
    assert s.memory_flush.force_flush_transcript_bytes == 20 * 1024 * 1024
    assert CompactionSettings.from_mapping({"provider": "x"}).effective_mode == "safeguard"
    assert not CompactionSettings().quality_guard_active
    assert CompactionSettings().effective_keep_recent_tokens == 20000
    for bad in (
        {"keepRecentTokens": -1},
        {"keepRecentTokens": "lots"},
        {"mode": "turbo"},
        {"enabled": "yes"},
        {"maxHistoryShare": 2},
        {"memoryFlush": {"forceFlushTranscriptBytes": "2 parsecs"}},
    ):
        with pytest.raises(ConfigError) as info:
            CompactionSettings.from_mapping(bad)
        assert "agents.defaults.compaction" in info.value.message
    assert parse_byte_size("2mb") == 2097152 and parse_byte_size(0) == 0


def test_estimate_fast_path_equals_counted_parts():
    from openclaw_cli.compaction.tokens import IMAGE_CHARS, counted_parts, weighted_chars

    def slow(message):
        parts, images = counted_parts(message)
        return -(-(sum(weighted_chars(p) for p in parts) + images * IMAGE_CHARS) // 4)

    messages = [e["message"] for e in generate_session(9, turns=30).entries if e["type"] == "message"]
    messages += [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "abc"},
                {"type": "image"},
                {"type": "toolCall", "name": "x", "arguments": {"k": "ü"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": 5}, "stray string", {"type": "text", "text": "ok"}],
        },
        {"role": "toolResult", "content": [{"type": "thinking", "thinking": "not counted for tools"}]},
        {"role": "custom", "content": "plain string content"},
        {"role": "user", "content": [{"type": "text", "text": "x" * 9}], "excludeFromContext": True},
        {"role": "user", "content": [{"type": "text", "text": "请修复登录问题 /srv/app.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Проверю 🎉"},
                {"type": "toolCall", "name": "読む", "arguments": {"path": "/データ"}},
            ],
        },
    ]
    for message in messages:
        assert estimate_message_tokens(message) == slow(message)


# -- bounded exact counting (tokensBefore of huge contexts) ----------------------------------------------
def _no_usage(entries: list[dict]) -> list[dict]:
    out = []
    for e in entries:
        message = e.get("message")
        if isinstance(message, dict) and "usage" in message:
            e = {**e, "message": {k: v for k, v in message.items() if k != "usage"}}
        out.append(e)
    return out


def test_context_exact_budget_counts_newest_exactly_and_estimates_the_rest():
    entries = _no_usage(generate_session(12, turns=30).entries)
    full = context_tokens(entries, Tokenizer("exact"))
    assert full.method == "exact" and full.estimated_tokens == 0
    assert context_tokens(entries, Tokenizer("exact"), exact_chars=10**9) == full  # budget not reached
    tok = Tokenizer("exact")
    bounded = context_tokens(entries, tok, exact_chars=3000)
    assert bounded.method == "estimate" and bounded.estimated_tokens > 0  # D7: the figure says so
    # the newest messages (>= 3000 counted chars) are exact, every older one is its chars/4 estimate
    split = len(entries) - next(
        k
        for k in range(1, len(entries) + 1)
        if sum(estimate_message_tokens(e.get("message")) * 4 for e in entries[-k:]) >= 3000
    )
    exact_part = sum(Tokenizer("exact").message_tokens(e) for e in entries[split:])
    estimated_part = sum(estimate_message_tokens(e.get("message")) for e in entries[:split])
    assert bounded.tokens == exact_part + estimated_part and bounded.estimated_tokens == estimated_part
    assert bounded.estimated_messages == sum(
        1 for e in entries[:split] if estimate_message_tokens(e.get("message"))
    )
    assert tok.tokenized < len(entries) / 2  # the old ones were never run through the encoder
    assert bounded.to_json()["estimatedTokens"] == estimated_part
    # a decision threshold keeps counting exactly until the exact part alone exceeds it
    decided = context_tokens(entries, Tokenizer("exact"), exact_chars=3000, exact_min_tokens=full.tokens - 1)
    assert decided == full
    assert context_tokens(entries, Tokenizer("exact"), exact_chars=0).tokens > 0  # never stalls on a 0 budget
    # estimate mode is unaffected by the budget
    assert context_tokens(entries, "estimate", exact_chars=10) == context_tokens(entries, "estimate")


def test_context_exact_budget_applies_to_the_part_after_a_usage_anchor():
    entries = generate_session(13, turns=20).entries
    anchor = max(i for i, e in enumerate(entries) if e.get("message", {}).get("usage"))
    entries = entries[: anchor + 1] + _no_usage(generate_session(14, turns=20).entries)
    count = context_tokens(entries, Tokenizer("exact"), exact_chars=2000)
    assert count.method == "usage" and count.trailing_method == "estimate" and count.estimated_tokens > 0
    full = context_tokens(entries, Tokenizer("exact"))
    assert full.trailing_method == "exact" and full.usage_tokens == count.usage_tokens


def test_plan_with_a_small_exact_budget_keeps_every_decision_exact():
    from openclaw_cli.compaction import plan_compaction

    entries = _no_usage(generate_session(15, turns=60).entries)
    for keep, hard in ((3000, False), (None, True)):
        bounded = plan_compaction(
            entries,
            keep_recent_tokens=keep,
            hard_checkpoint=hard,
            tokenizer="exact",
            exact_context_chars=5000,
        )
        full = plan_compaction(
            entries,
            keep_recent_tokens=keep,
            hard_checkpoint=hard,
            tokenizer="exact",
            exact_context_chars=None,
        )
        assert bounded.first_kept_entry_id == full.first_kept_entry_id
        assert bounded.kept_tokens == full.kept_tokens and bounded.is_split_turn == full.is_split_turn
        assert bounded.tokens_before.method == "estimate" and full.tokens_before.method == "exact"
        assert bounded.tokens_after("summary", Tokenizer("exact")) == full.tokens_after(
            "summary", Tokenizer("exact")
        )
    # a threshold decision: exact until the exact part passes it, so the comparison is exact
    full = plan_compaction(entries, hard_checkpoint=True, tokenizer="exact", exact_context_chars=None)
    for threshold in (full.tokens_before.tokens - 1, full.tokens_before.tokens, 500):
        plan = plan_compaction(
            entries,
            hard_checkpoint=True,
            tokenizer="exact",
            exact_context_chars=5000,
            exact_min_tokens=threshold,
        )
        assert (plan.tokens_before.tokens > threshold) == (full.tokens_before.tokens > threshold)


def test_exact_encoder_keeps_no_python_copy_of_its_ranks_and_still_counts():
    """The loaded encoder drops tiktoken's Python rank table (only pickling reads it; ~15 MB a
    compaction of a large transcript needs): exact counts are unchanged."""
    from openclaw_cli.compaction import tokens

    tokens.preload_encoding()
    encoding = tokens.get_encoding()
    assert encoding._mergeable_ranks == {}
    assert tokens.exact_text_tokens("hello world") == 2
    assert encoding.decode(encoding.encode_ordinary("naïve 東京 /srv/a.py")) == "naïve 東京 /srv/a.py"
