"""Summary providers (§4.7, §4.14): an OpenAI-compatible endpoint served by a local stdlib HTTP
server, fallback to the built-in summariser, cancellation, entry-point providers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from openclaw_cli.compaction import plan_compaction, summarize_plan
from openclaw_cli.compaction.identifiers import REQUIRED_SAFEGUARD_HEADINGS
from openclaw_cli.compaction.providers import (
    BUILTIN_ID,
    ENTRY_POINT_GROUP,
    OPENAI_ID,
    SYSTEM_PROMPT,
    BuiltinProvider,
    CompactionCancelledError,
    OpenAICompatibleProvider,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    ProviderTruncatedError,
    SummaryRequest,
    available_providers,
    load_provider,
    openai_config_from_env,
    serialize_conversation,
    summarize_with_fallback,
)
from openclaw_cli.compaction.thresholds import CompactionSettings
from tests.session_generator import generate_session

MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Fix /srv/app/main.py please"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {
                "type": "toolCall",
                "id": "call_0123abcd4567",
                "name": "read",
                "arguments": {"path": "/srv/app/main.py"},
            },
        ],
        "stopReason": "toolUse",
    },
    {
        "role": "toolResult",
        "toolCallId": "call_0123abcd4567",
        "toolName": "read",
        "content": [{"type": "text", "text": "print('hi')"}],
        "isError": False,
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "stopReason": "stop"},
]


class FakeLLM:
    """A local OpenAI-compatible endpoint; `mode` decides how it answers."""

    def __init__(self) -> None:
        self.mode = "ok"
        # `hold`: requests wait for `released` (set by close) before answering; `held_answered`
        # counts the held ones answered, so a test knows its client gave up before any reply
        self.hold = False
        self.released = threading.Event()
        self.held_answered = 0
        self.requests: list[dict] = []
        self.replies: list[str] = []
        self.responder = None  # optional callable(body) -> str | None, consulted first
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                if fake.hold:
                    fake.released.wait(240)
                    fake.held_answered += 1
                mode = fake.mode
                if mode.startswith("http"):
                    self.send_response(int(mode[4:]))
                    self.end_headers()
                    self.wfile.write(b'{"error":{"message":"boom"}}')
                    return
                if mode == "badjson":
                    payload = b"<html>not json</html>"
                else:
                    content = fake.responder(fake.requests[-1]["body"]) if fake.responder else None
                    if content is None:
                        content = (
                            fake.replies.pop(0) if fake.replies else f"## Goal\nsummary {len(fake.requests)}"
                        )
                    finish = "stop"
                    if mode == "empty":
                        content = "   "
                    elif mode == "length":
                        finish = "length"
                    payload = json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": content},
                                    "finish_reason": finish,
                                }
                            ],
                        }
                    ).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout / cancellation tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


def provider(llm: FakeLLM, **kw) -> OpenAICompatibleProvider:
    kw.setdefault("retry_delay_s", 0.01)
    return OpenAICompatibleProvider(
        llm.base_url,
        "summ-model-1",
        api_key="sk-test-123",
        timeout_s=kw.pop("timeout_s", 5),
        max_output_tokens=kw.pop("max_output_tokens", None),
        **kw,
    )


def request(**kw) -> SummaryRequest:
    kw.setdefault("messages", MESSAGES)
    return SummaryRequest(**kw)


def test_request_shape(llm):
    out = provider(llm).summarize(
        request(
            previous_summary="## Goal\nold goal",
            custom_instructions="Focus on the API",
            max_output_tokens=1234,
        )
    )
    assert out == "## Goal\nsummary 1"
    (req,) = llm.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["headers"]["Content-Type"] == "application/json"
    body = req["body"]
    assert body["model"] == "summ-model-1" and body["max_tokens"] == 1234
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    text = user["content"]
    assert text.startswith(
        "<conversation>\n[User]: Fix /srv/app/main.py please\n\n[Assistant]: Reading it.\n\n"
        "[Assistant tool calls]: read(path=\"/srv/app/main.py\")\n\n[Tool result]: print('hi')"
    )
    assert "</conversation>\n\n<previous-summary>\n## Goal\nold goal\n</previous-summary>\n\n" in text
    assert "fold into the existing summary" in text  # update prompt when a previous summary exists
    assert text.endswith("Additional focus:\nFocus on the API")
    assert "## Critical Context" in text


def test_initial_prompt_turn_prefix_and_no_key(llm):
    p = OpenAICompatibleProvider(llm.base_url + "/", "m", timeout_s=5)
    out = p.summarize(
        request(turn_prefix_messages=MESSAGES[:1], max_output_tokens=1000, identifier_policy="off")
    )
    assert out == "## Goal\nsummary 1\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nsummary 2"
    first, second = (r["body"] for r in llm.requests)
    assert "Authorization" not in llm.requests[0]["headers"]
    assert "<previous-summary>" not in first["messages"][1]["content"]
    assert "Write a structured context checkpoint" in first["messages"][1]["content"]
    assert second["max_tokens"] == 500  # the prefix call gets half (R4.7.7)
    assert "## Original Request" in second["messages"][1]["content"]


def test_large_input_is_summarised_in_sequential_chunks(llm):
    big = [
        {"role": "user", "content": [{"type": "text", "text": f"part {i} " + "x" * 8000}]} for i in range(6)
    ]
    out = provider(llm).summarize(request(messages=big, context_window=16000))
    assert len(llm.requests) > 1
    assert out == f"## Goal\nsummary {len(llm.requests)}"
    later = llm.requests[1]["body"]["messages"][1]["content"]
    assert "<previous-summary>\n## Goal\nsummary 1\n</previous-summary>" in later


@pytest.mark.parametrize(
    ("mode", "error", "fragment"),
    [
        ("http500", ProviderHTTPError, "failed, falling back to built-in summarizer: HTTP 500"),
        ("http401", ProviderHTTPError, "HTTP 401"),
        ("empty", ProviderError, "returned empty result, falling back to built-in summarizer."),
        ("length", ProviderTruncatedError, "returned a truncated summary"),
        ("badjson", ProviderError, "did not answer with JSON"),
    ],
)
def test_failures_fall_back_to_builtin(llm, mode, error, fragment, caplog):
    llm.mode = mode
    p = provider(llm, max_attempts=2)
    with pytest.raises(error):
        p.summarize(request())
    llm.requests.clear()
    summary, used, reason = summarize_with_fallback(p, request())
    assert used == BUILTIN_ID
    assert summary == BuiltinProvider().summarize(request())
    assert fragment in reason and 'Compaction provider "openai-compatible"' in reason
    assert reason in caplog.text
    # 429/5xx are retried, other HTTP errors and answers are not
    assert len(llm.requests) == (2 if mode == "http500" else 1)


def test_timeout_falls_back_quickly(llm):
    llm.hold = True  # the endpoint answers only when the test ends
    p = provider(llm, timeout_s=0.3)
    with pytest.raises(ProviderTimeoutError):
        p.summarize(request())
    summary, used, reason = summarize_with_fallback(p, request())
    assert llm.held_answered == 0  # both calls ended before any reply: the 0.3 s timeout ended them
    assert used == BUILTIN_ID and "timed out after 0.3s" in reason
    assert "## Goal" in summary and "/srv/app/main.py" in summary
    assert len(llm.requests) == 2  # timeouts are never retried


def test_success_is_used_as_is(llm):
    summary, used, reason = summarize_with_fallback(provider(llm), request())
    assert (summary, used, reason) == ("## Goal\nsummary 1", OPENAI_ID, None)


def test_cancellation_propagates_instead_of_falling_back(llm):
    llm.hold = True  # the endpoint answers only when the test ends
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    # without cancellation the 60 s timeout would end it, and fall back instead of raising
    with pytest.raises(CompactionCancelledError):
        summarize_with_fallback(provider(llm, timeout_s=60), request(cancel_event=cancel))
    assert llm.held_answered == 0

    class Interrupting:
        id = "interrupting"

        def summarize(self, req):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        summarize_with_fallback(Interrupting(), request())
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(CompactionCancelledError):
        summarize_with_fallback(None, request(cancel_event=cancel))


def test_quality_guard_retries_llm_output_and_accepts_last(llm):
    session = generate_session(5, turns=20)
    plan = plan_compaction(session.entries, keep_recent_tokens=2000)
    llm.replies = ["## Decisions\nonly one section", "## Decisions\nstill missing the rest"]
    llm.responder = lambda body: (
        "## Original Request\nprefix" if "## Original Request" in body["messages"][1]["content"] else None
    )
    outcome = summarize_plan(plan, provider(llm), settings=CompactionSettings(mode="safeguard"))
    assert outcome.provider_used == OPENAI_ID
    assert outcome.quality.attempts == 2 and not outcome.quality.passed  # profile L: keep the last one
    assert outcome.summary.startswith("## Decisions\nstill missing the rest")
    history_prompts = [
        r["body"]["messages"][1]["content"]
        for r in llm.requests
        if "## Original Request" not in r["body"]["messages"][1]["content"]
    ]
    assert "Produce a compact, factual summary with these exact section headings:" in history_prompts[0]
    assert "Previous summary failed quality checks (missing_section:## Open TODOs" in history_prompts[-1]
    # the built-in provider passes the same audit on the first attempt
    builtin = summarize_plan(plan, None, settings=CompactionSettings(mode="safeguard"))
    assert builtin.quality.passed and builtin.quality.attempts == 1
    assert all(h in builtin.summary for h in REQUIRED_SAFEGUARD_HEADINGS)


def test_serialization_of_images_and_long_tool_output():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "data": "AA"}]},
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "bash",
            "content": [{"type": "text", "text": "ok\n" * 2000 + "Traceback: boom at the end"}],
        },
    ]
    text = serialize_conversation(messages)
    assert "[User]: look\n[image data omitted from summary input]" in text
    assert "more characters truncated]" in text and "Traceback: boom at the end" in text
    assert len(text) < 2300


# -- registry, config ---------------------------------------------------------------------------------
def make_plugin(
    tmp_path: Path, monkeypatch, name: str = "fake-llm", target: str = "fake_compaction_plugin:Provider"
):
    (tmp_path / "fake_compaction_plugin.py").write_text(
        "class Provider:\n"
        "    def __init__(self, **config):\n"
        "        self.config = config\n"
        "    def summarize(self, request):\n"
        "        if self.config.get('fail'):\n"
        "            raise RuntimeError('plugin exploded')\n"
        "        return 'PLUGIN SUMMARY of %d messages' % len(request.messages)\n"
        "class Broken:\n"
        "    pass\n"
    )
    dist = tmp_path / "fake_compaction_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-compaction-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n{name} = {target}\nbroken = fake_compaction_plugin:Broken\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def test_entry_point_provider(tmp_path, monkeypatch):
    make_plugin(tmp_path, monkeypatch)
    assert {"builtin", "openai-compatible", "fake-llm"} <= set(available_providers())
    loaded = load_provider("fake-llm", {"x": 1})
    assert loaded.config == {"x": 1} and loaded.id == "fake-llm"
    assert summarize_with_fallback("fake-llm", request()) == (
        "PLUGIN SUMMARY of 4 messages",
        "fake-llm",
        None,
    )
    summary, used, reason = summarize_with_fallback("fake-llm", request(), provider_config={"fail": True})
    assert used == BUILTIN_ID and reason.endswith("plugin exploded")
    summary, used, reason = summarize_with_fallback("broken", request())
    assert used == BUILTIN_ID and 'Compaction provider "broken" has no summarize(request) method' in reason
    summary, used, reason = summarize_with_fallback("nope", request())
    assert used == BUILTIN_ID
    assert reason.startswith('Compaction provider "nope" is configured but not registered. Falling back')
    # third-party output is never audited (R4.12.8)
    plan = plan_compaction(generate_session(2, turns=20).entries, keep_recent_tokens=2000)
    outcome = summarize_plan(plan, "fake-llm", settings=CompactionSettings(mode="safeguard"))
    assert outcome.provider_used == "fake-llm" and outcome.quality is None
    assert outcome.summary.startswith("PLUGIN SUMMARY")


def test_openai_config_from_env_and_validation(llm, monkeypatch):
    assert openai_config_from_env({}) is None
    env = {
        "OPENCLAW_COMPACTION_BASE_URL": llm.base_url,
        "OPENCLAW_COMPACTION_MODEL": "m2",
        "OPENCLAW_COMPACTION_API_KEY": "k",
        "OPENCLAW_COMPACTION_TIMEOUT_S": "7.5",
    }
    assert openai_config_from_env(env) == {
        "base_url": llm.base_url,
        "model": "m2",
        "api_key": "k",
        "timeout_s": 7.5,
    }
    with pytest.raises(ProviderError):
        openai_config_from_env({**env, "OPENCLAW_COMPACTION_TIMEOUT_S": "soon"})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    p = load_provider("openai-compatible")
    assert isinstance(p, OpenAICompatibleProvider) and p.model == "m2" and p.timeout_s == 7.5
    assert summarize_with_fallback("openai-compatible", request())[1] == OPENAI_ID
    assert llm.requests[-1]["headers"]["Authorization"] == "Bearer k"
    with pytest.raises(ProviderError):
        OpenAICompatibleProvider("file:///etc/passwd", "m")
    with pytest.raises(ProviderError):
        OpenAICompatibleProvider(llm.base_url, "")
