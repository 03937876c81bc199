"""Summary providers through `openclaw compact` (spec D8): the OpenAI-compatible HTTP provider
against a local test server (stdlib http.server thread) — a good answer is stored; timeout, HTTP
error, empty and truncated answers fall back to the built-in summariser with the reason
reported — and a third-party entry-point provider."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.compaction.providers import ENTRY_POINT_GROUP
from tests.compact_support import (
    cli_json,
    import_sqlite,
    rows,
    transcript_lines,
    use_template,
    write_config,
    write_legacy_state,
)
from tests.session_generator import generate_session

KEY = "agent:main:main"
GOOD = "## Goal\nShip the API described in https://tickets.example.test/T-1\n\n## Next Steps\n1. Deploy"

SLOW_REPLY_S = 240  # the 'slow' endpoint answers when released (close) or after this


class QuietServer(ThreadingHTTPServer):
    """A reply to a client that already gave up (the timeout test) is a broken pipe: not an error
    to print on the stderr of whichever test runs next in this process."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeLLM:
    """A tiny OpenAI-compatible chat-completions endpoint whose behaviour a test chooses."""

    def __init__(self) -> None:
        self.mode = "good"
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()  # set by close(): a 'slow' reply stops waiting
        self.slow_answered = 0  # 'slow' replies sent (0 while a client that gave up is tested)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if fake.mode == "slow":
                    fake.released.wait(SLOW_REPLY_S)
                    fake.slow_answered += 1
                if fake.mode == "error":
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(b'{"error":{"message":"bad request"}}')
                    return
                content = {"good": GOOD, "slow": GOOD, "empty": "", "truncated": "## Goal\nShip the"}[
                    fake.mode
                ]
                finish = "length" if fake.mode == "truncated" else "stop"
                data = json.dumps(
                    {
                        "choices": [
                            {"message": {"role": "assistant", "content": content}, "finish_reason": finish}
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    sessions = {KEY: generate_session(31, turns=30)}
    legacy = tmp_path_factory.mktemp("provider-legacy") / "state"
    write_legacy_state(legacy, sessions)
    sqlite = tmp_path_factory.mktemp("provider-sqlite") / "state"
    write_legacy_state(sqlite, sessions)
    import_sqlite(sqlite)
    return {"legacy": legacy, "sqlite": sqlite}


def llm_env(llm: FakeLLM, **extra: str) -> dict[str, str]:
    return {
        "OPENCLAW_COMPACTION_BASE_URL": llm.base_url,
        "OPENCLAW_COMPACTION_MODEL": "test-model",
        "OPENCLAW_COMPACTION_API_KEY": "sk-test",
        **extra,
    }


def stored_summary(state: Path) -> str:
    row = rows(state)[KEY]
    last = json.loads(transcript_lines(state, row["sessionId"], row)[-1])
    assert last["type"] == "compaction"
    return last["summary"]


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_a_good_answer_is_stored(kind: str, templates, state_dir: Path, llm: FakeLLM):
    use_template(templates[kind], state_dir)
    result = cli_json(
        "compact", KEY, "--provider", "openai", "--keep-recent-tokens", "2000", env=llm_env(llm)
    )
    assert result["provider"] == "openai" and result["fallbackReason"] is None and result["compacted"]
    summary = stored_summary(state_dir)
    assert summary.startswith(GOOD) and "<read-files>" in summary  # R4.7.8: file lists appended by us
    request = llm.requests[-1]
    assert (
        request["path"] == "/v1/chat/completions" and request["headers"]["Authorization"] == "Bearer sk-test"
    )
    body = request["body"]
    assert body["model"] == "test-model" and [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "<conversation>" in body["messages"][1]["content"]


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("slow", "timed out after 0.5s"),
        ("error", "HTTP 400"),
        ("empty", "returned empty result, falling back to built-in summarizer"),
        ("truncated", "returned a truncated summary, falling back to built-in summarizer"),
    ],
)
def test_failures_fall_back_to_the_builtin_summariser(
    mode: str, reason: str, templates, state_dir: Path, llm: FakeLLM
):
    use_template(templates["legacy"], state_dir)
    llm.mode = mode
    result = cli_json(
        "compact",
        KEY,
        "--provider",
        "openai",
        "--keep-recent-tokens",
        "2000",
        env=llm_env(llm, OPENCLAW_COMPACTION_TIMEOUT_S="0.5"),
    )
    # the 0.5 s timeout applies: the run ended before the slow endpoint answered at all
    assert llm.slow_answered == 0
    assert result["compacted"] and result["provider"] == "builtin"
    assert (
        result["fallbackReason"].startswith('Compaction provider "openai"')
        and reason in result["fallbackReason"]
    )
    assert reason in result["_stderr"]  # reported in the text output as well
    summary = stored_summary(state_dir)
    assert summary.startswith("## Goal\nturn 1:") and GOOD not in summary
    assert llm.requests


def test_configured_provider_and_model_are_used_without_flags(templates, state_dir: Path, llm: FakeLLM):
    use_template(templates["legacy"], state_dir)
    write_config(state_dir, {"provider": "openai", "model": "openai/summary-mini", "keepRecentTokens": 2000})
    env = llm_env(llm)
    del env["OPENCLAW_COMPACTION_MODEL"]
    result = cli_json("compact", KEY, env=env)
    assert result["provider"] == "openai" and result["keepRecentTokens"] == 2000
    assert llm.requests and all(r["body"]["model"] == "summary-mini" for r in llm.requests)
    assert stored_summary(state_dir).startswith("## Goal\nShip the API")


def test_openai_without_a_base_url_falls_back_with_the_reason(templates, state_dir: Path):
    use_template(templates["legacy"], state_dir)
    result = cli_json("compact", KEY, "--provider", "openai")
    assert result["provider"] == "builtin" and "OPENCLAW_COMPACTION_BASE_URL" in result["fallbackReason"]


def test_entry_point_provider(templates, state_dir: Path, tmp_path: Path):
    use_template(templates["legacy"], state_dir)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "fake_compaction_plugin.py").write_text(
        "class Provider:\n"
        "    def __init__(self, **config):\n"
        "        pass\n"
        "    def summarize(self, request):\n"
        "        return 'PLUGIN SUMMARY of %d messages' % len(request.messages)\n"
    )
    dist = plugins / "fake_compaction_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-compaction-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nfake-llm = fake_compaction_plugin:Provider\n"
    )
    result = cli_json(
        "compact",
        KEY,
        "--provider",
        "fake-llm",
        "--keep-recent-tokens",
        "2000",
        env={"PYTHONPATH": str(plugins)},
    )
    assert result["provider"] == "fake-llm" and result["fallbackReason"] is None
    assert stored_summary(state_dir).startswith(f"PLUGIN SUMMARY of {result['summarizedMessages']} messages")


def test_gc_is_paused_on_the_builtin_path_only(
    templates, state_dir: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    """The built-in path pauses the cyclic GC from the read to the write (speed); a network call
    (maybe minutes) never runs with it paused; it is back on afterwards either way."""
    import gc

    from openclaw_cli.compaction import summarizer
    from openclaw_cli.store.legacy import compaction as persist
    from tests.compact_support import invoke

    seen: dict[str, list[bool]] = {"summarize": [], "write": [], "request": []}
    real_summarize, real_write = summarizer.summarize_with_report, persist.commit_compaction

    def spy_summarize(*args: Any, **kwargs: Any) -> Any:
        seen["summarize"].append(gc.isenabled())
        return real_summarize(*args, **kwargs)

    def spy_write(*args: Any, **kwargs: Any) -> Any:
        seen["write"].append(gc.isenabled())
        return real_write(*args, **kwargs)

    monkeypatch.setattr(summarizer, "summarize_with_report", spy_summarize)
    monkeypatch.setattr(persist, "commit_compaction", spy_write)
    original_post = llm.server.RequestHandlerClass.do_POST

    def post(handler: Any) -> None:
        seen["request"].append(gc.isenabled())
        original_post(handler)

    monkeypatch.setattr(llm.server.RequestHandlerClass, "do_POST", post)
    assert gc.isenabled()
    use_template(templates["legacy"], state_dir)
    code, doc, _ = invoke("compact", KEY, "--keep-recent-tokens", "2000", "--dry-run")
    assert code == 0 and doc["provider"] == "builtin" and seen["summarize"] == [False] and gc.isenabled()
    code, doc, _ = invoke("compact", KEY, "--keep-recent-tokens", "2000")
    assert code == 0 and seen["write"] == [False] and gc.isenabled()
    use_template(templates["legacy"], state_dir)
    for name, value in llm_env(llm).items():
        monkeypatch.setenv(name, value)
    code, doc, _ = invoke("compact", KEY, "--provider", "openai", "--keep-recent-tokens", "2000")
    assert code == 0 and doc["provider"] == "openai" and seen["request"] == [True] and gc.isenabled()
