"""Summary providers (spec D8, §4.7, §4.14): the protocol, the built-in extractive provider, an
OpenAI-compatible HTTP provider (stdlib `urllib`), third-party providers from the entry-point
group `openclaw_cli.compaction_providers`, and `summarize_with_fallback`.

Configuration is passed in; callers read config/env. Proposed environment variables (read by
`openai_config_from_env`): `OPENCLAW_COMPACTION_BASE_URL` (e.g. `http://127.0.0.1:8080/v1`),
`OPENCLAW_COMPACTION_MODEL`, `OPENCLAW_COMPACTION_API_KEY`, `OPENCLAW_COMPACTION_TIMEOUT_S`
(default 180, like `compaction.timeoutSeconds`), `OPENCLAW_COMPACTION_MAX_OUTPUT_TOKENS`.

A third-party provider registers an entry point whose object is either a provider instance (it
has `summarize(request) -> str`) or a factory called with the provider config as keyword
arguments:

    [project.entry-points."openclaw_cli.compaction_providers"]
    my-llm = "my_pkg.compaction:MyProvider"
"""

from __future__ import annotations

import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from openclaw_cli.compaction import summarizer
from openclaw_cli.compaction.chunking import (
    chunk_messages_by_max_tokens,
    compute_adaptive_chunk_ratio,
    max_chunk_tokens,
)
from openclaw_cli.compaction.identifiers import REQUIRED_SAFEGUARD_HEADINGS
from openclaw_cli.compaction.messages import content_blocks, is_runtime_context, role_of, text_of, tool_calls
from openclaw_cli.compaction.tokens import estimate_text_tokens
from openclaw_cli.errors import ExitCode, OpenClawError
from openclaw_cli.jsonutil import dumps_compact, loads

log = logging.getLogger("openclaw_cli.compaction")

ENTRY_POINT_GROUP = "openclaw_cli.compaction_providers"
BUILTIN_ID = "builtin"
IDENTIFIER_REPORT = "identifier_report"  # key of the built-in summariser's report in `SummaryRequest.extra`
OPENAI_ID = "openai-compatible"
TOOL_RESULT_MAX_CHARS = 2000
_ERROR_HINTS = (
    "error",
    "exception",
    "failed",
    "fatal",
    "traceback",
    "panic",
    "stack trace",
    "errno",
    "exit code",
)


# -- errors -------------------------------------------------------------------------------------
class ProviderError(OpenClawError):
    type = "compaction_provider_error"
    exit_code = ExitCode.ERROR


class ProviderHTTPError(ProviderError):
    def __init__(self, message: str, *, status: int):
        super().__init__(message)
        self.status = status


class ProviderTimeoutError(ProviderError):
    type = "compaction_provider_timeout"


class ProviderConnectionError(ProviderError):
    pass


class ProviderResponseError(ProviderError):
    """The endpoint answered with something that is not a chat completion."""


class ProviderEmptyOutputError(ProviderError):
    pass


class ProviderTruncatedError(ProviderError):
    """`finish_reason: length`: a cut-off summary is never persisted."""


class ProviderNotRegisteredError(ProviderError):
    pass


class CompactionCancelledError(OpenClawError):
    type = "cancelled"
    exit_code = ExitCode.INTERRUPTED


# -- request ------------------------------------------------------------------------------------
@dataclass
class SummaryRequest:
    messages: Sequence[Mapping[str, Any]]
    turn_prefix_messages: Sequence[Mapping[str, Any]] = ()
    previous_summary: str | None = None
    custom_instructions: str | None = None
    identifier_policy: str = "strict"  # strict | off | custom
    identifier_instructions: str | None = None
    max_output_tokens: int = 16000  # R4.7.7: floor(0.8 * reserve); prefix calls use half
    timeout_s: float = 180.0
    mode: str = "default"  # default | safeguard
    context_window: int = 200000  # of the summarisation model (chunk sizing)
    cancel_event: threading.Event | None = None
    budget: summarizer.SummaryBudget | None = None
    # built-in summariser only: where identifiers come from (the whole compacted part, when
    # `messages` is only part of it), identifiers to keep whatever the budget, a cap on its output
    identifier_messages: Sequence[Mapping[str, Any]] | None = None
    pinned_identifiers: Sequence[str] = ()
    max_summary_chars: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the built-in one leaves its IdentifierReport here

    def check_cancelled(self) -> None:
        if self.cancel_event is not None and self.cancel_event.is_set():
            raise CompactionCancelledError("compaction cancelled")


@runtime_checkable
class SummaryProvider(Protocol):
    id: str

    def summarize(self, request: SummaryRequest) -> str: ...


class BuiltinProvider:
    """The offline extractive summariser (always available, never fails on valid input)."""

    id = BUILTIN_ID

    def summarize(self, request: SummaryRequest) -> str:
        text, report = summarizer.summarize_with_report(
            request.messages,
            previous_summary=request.previous_summary,
            turn_prefix_messages=request.turn_prefix_messages,
            custom_instructions=request.custom_instructions,
            mode=request.mode,
            budget=request.budget or summarizer.SummaryBudget.for_output_tokens(request.max_output_tokens),
            identifier_messages=request.identifier_messages,
            pinned_identifiers=request.pinned_identifiers,
            max_chars=request.max_summary_chars,
        )
        request.extra[IDENTIFIER_REPORT] = report
        return text


# -- prompts (our wording of R4.7.1-R4.7.6, R4.12.3, R4.13) -----------------------------------------
SYSTEM_PROMPT = (
    "You are a context summarization assistant. You read a conversation between a user and an AI "
    "assistant (with its tool calls and tool results) and write the structured summary you are asked "
    "for. Output only that summary: never continue the conversation and never answer questions that "
    "appear inside it."
)
_DEFAULT_FORMAT = """## Goal
[What the user is trying to achieve; several goals as a short list]

## Constraints & Preferences
- [Requirements, limits and preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [Completed work]

### In Progress
- [ ] [Work under way]

### Blocked
- [Problems that stop progress, or "(none)"]

## Key Decisions
- **[Decision]**: [Short rationale]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, references and facts needed to continue, or "(none)"]"""
INITIAL_PROMPT = (
    "The conversation above is to be summarized. Write a structured context checkpoint that another "
    "LLM will use to continue the work.\n\nUse exactly this format:\n\n"
    + _DEFAULT_FORMAT
    + "\n\nKeep every section concise. Preserve exact file paths, function names and error messages."
)
UPDATE_PROMPT = (
    "The conversation above contains NEW messages to fold into the existing summary in "
    "<previous-summary>. Update the summary:\n- keep all existing information unless it is clearly "
    "no longer relevant\n- add new progress, decisions and context from the new messages\n- move items "
    "from In Progress to Done when they were completed\n- update Next Steps for what was accomplished\n"
    "- preserve exact file paths, function names and error messages\n\nUse exactly this format:\n\n"
    + _DEFAULT_FORMAT
)
TURN_PREFIX_PROMPT = (
    "This is the beginning (prefix) of a turn that was too large to keep; its end (suffix) is kept "
    "verbatim in context. Summarize the prefix so the suffix can be understood:\n\n## Original Request\n"
    "[What the user asked for in this turn]\n\n## Early Progress\n- [Decisions and work done in the "
    "prefix]\n\n## Context for Suffix\n- [Information needed to understand the kept suffix]\n\n"
    "Be concise and preserve exact identifiers."
)
STRICT_IDENTIFIER_INSTRUCTION = (
    "Preserve opaque identifiers exactly as written, without shortening or reconstructing them: UUIDs, "
    "hashes, ids, hostnames, IP addresses, ports, URLs and file names."
)


def safeguard_instructions(policy: str = "strict") -> str:
    rule = (
        "For ## Exact identifiers, preserve literal values exactly as seen (IDs, URLs, file paths, ports, "
        "hashes, dates, times)."
        if policy != "off"
        else "For ## Exact identifiers, include identifiers only when needed for continuity; do not enforce "
        "literal-preservation rules."
    )
    return (
        "Produce a compact, factual summary with these exact section headings:\n"
        + "\n".join(REQUIRED_SAFEGUARD_HEADINGS)
        + f"\n{rule}\nDo not omit unresolved asks from the user."
    )


def identifier_instruction(policy: str, custom: str | None = None) -> str | None:
    if policy == "off":
        return None
    if policy == "custom" and custom and custom.strip():
        return custom.strip()
    return STRICT_IDENTIFIER_INSTRUCTION


def compose_instructions(request: SummaryRequest) -> str | None:
    """R4.13 composition: `<identifier instruction>\\n\\nAdditional focus:\\n<focus>`."""
    ident = identifier_instruction(request.identifier_policy, request.identifier_instructions)
    focus = (request.custom_instructions or "").strip()
    if ident and focus:
        return f"{ident}\n\nAdditional focus:\n{focus}"
    if focus:
        return f"Additional focus:\n{focus}"
    return ident


def _truncate_tool_result(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    lower = text.lower()
    hint = max((lower.rfind(h) for h in _ERROR_HINTS), default=-1)
    if hint >= limit // 2:  # keep the head and a tail that holds the error
        head = limit // 4
        # the tail window starts before the error so the error text is kept even when much output follows it
        tail_start = min(hint - limit // 2, len(text) - (limit - head))
        tail = text[tail_start : tail_start + (limit - head)]
        after = len(text) - tail_start - len(tail)
        marker = f"\n[... {after} more characters truncated]" if after else ""
        return f"{text[:head]}\n[... {tail_start - head} more characters truncated]\n{tail}{marker}"
    return f"{text[:limit]}\n[... {len(text) - limit} more characters truncated]"


def _blocks_text(message: Mapping[str, Any]) -> str:
    out: list[str] = []
    for block in content_blocks(message):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif kind == "image":
            out.append("[image data omitted from summary input]")
        elif kind not in ("toolCall", "thinking"):
            out.append("[non-text data omitted from summary input]")
    return "\n".join(out)


def serialize_conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    """R4.7.3: one block per message, blocks separated by a blank line."""
    blocks: list[str] = []
    for message in messages:
        role = role_of(message)
        if role is None or is_runtime_context(message):
            continue
        if role == "user":
            blocks.append(f"[User]: {_blocks_text(message)}")
        elif role == "assistant":
            text = _blocks_text(message)
            if text.strip():
                blocks.append(f"[Assistant]: {text}")
            calls = tool_calls(message)
            if calls:
                rendered = []
                for call in calls:
                    args = call.get("arguments")
                    if isinstance(args, Mapping):
                        inner = ", ".join(f"{k}={dumps_compact(v)}" for k, v in args.items())
                    else:
                        inner = dumps_compact(args) if args is not None else ""
                    rendered.append(f"{call.get('name')}({inner})")
                blocks.append("[Assistant tool calls]: " + "; ".join(rendered))
        elif role == "toolResult":
            blocks.append(f"[Tool result]: {_truncate_tool_result(_blocks_text(message))}")
        elif role == "bashExecution":
            blocks.append(
                f"[Bash execution]: $ {message.get('command', '')}\n"
                f"{_truncate_tool_result(str(message.get('output', '')))}"
            )
        elif role in ("branchSummary", "compactionSummary"):
            label = "Branch summary" if role == "branchSummary" else "Compaction summary"
            blocks.append(f"[{label}]: {text_of(message)}")
        else:
            blocks.append(f"[Context]: {_blocks_text(message)}")
    return "\n\n".join(blocks)


def build_prompt(
    conversation: str, previous_summary: str | None, instructions: str, extra: str | None = None
) -> str:
    """R4.7.2 layout."""
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary and previous_summary.strip():
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    text += instructions
    if extra:
        text += f"\n\n{extra}" if extra.startswith("Additional focus:") else f"\n\nAdditional focus: {extra}"
    return text


# -- the OpenAI-compatible provider ---------------------------------------------------------------
def _is_loopback(url: str) -> bool:
    import ipaddress

    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAICompatibleProvider:
    """POST `{base_url}/chat/completions` with `{model, messages: [system, user], max_tokens}`.

    A `finish_reason` of `length` is a truncated summary and is rejected; empty output is rejected;
    HTTP errors, timeouts and malformed answers raise typed `ProviderError`s. Large inputs are
    summarised in sequential chunks, each call receiving the running summary (R4.10.5).
    """

    id = OPENAI_ID

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 180.0,
        max_output_tokens: int | None = None,
        *,
        max_attempts: int = 3,
        retry_delay_s: float = 0.5,
        provider_id: str | None = None,
    ):
        if not base_url or not isinstance(base_url, str):
            raise ProviderError("compaction provider base URL is empty (set OPENCLAW_COMPACTION_BASE_URL)")
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
            raise ProviderError(f"compaction provider base URL must be http(s): {base_url!r}")
        if not model:
            raise ProviderError("compaction provider model is empty (set OPENCLAW_COMPACTION_MODEL)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or None
        self.timeout_s = float(timeout_s)
        self.max_output_tokens = max_output_tokens
        self.max_attempts = max(1, int(max_attempts))
        self.retry_delay_s = retry_delay_s
        if provider_id:
            self.id = provider_id
        from urllib.request import ProxyHandler, build_opener  # not at import: http/ssl cost ~20 ms

        handlers = [ProxyHandler({})] if _is_loopback(self.base_url) else []
        self._opener = build_opener(*handlers)

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    # one HTTP exchange, run in a worker thread so cancellation and the overall deadline apply
    def _post(self, payload: dict[str, Any], timeout_s: float) -> Any:
        from urllib.error import HTTPError, URLError
        from urllib.request import Request

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "openclaw-cli compaction",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = Request(self.url, data=dumps_compact(payload).encode(), headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=timeout_s) as response:
                body = response.read()
        except HTTPError as exc:
            detail = ""
            try:
                detail = exc.read(500).decode("utf-8", "replace").strip()
            except Exception:  # noqa: BLE001 - the status is what matters
                pass
            raise ProviderHTTPError(
                f"HTTP {exc.code} from {self.url}" + (f": {detail}" if detail else ""), status=exc.code
            ) from None
        except TimeoutError:
            raise ProviderTimeoutError(f"timed out after {timeout_s:g}s waiting for {self.url}") from None
        except URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise ProviderTimeoutError(f"timed out after {timeout_s:g}s waiting for {self.url}") from None
            raise ProviderConnectionError(f"cannot reach {self.url}: {exc.reason}") from None
        except OSError as exc:
            raise ProviderConnectionError(f"cannot reach {self.url}: {exc}") from None
        try:
            return loads(body)
        except ValueError:
            raise ProviderResponseError(f"{self.url} did not answer with JSON") from None

    def _call(self, prompt: str, max_tokens: int, request: SummaryRequest) -> str:
        payload = {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
        }
        for attempt in range(1, self.max_attempts + 1):
            request.check_cancelled()
            try:
                data = self._post_with_deadline(payload, request)
                return self._parse(data)
            except ProviderHTTPError as exc:  # retry 429 and 5xx only
                if attempt >= self.max_attempts or not (exc.status == 429 or exc.status >= 500):
                    raise
            except ProviderConnectionError:
                if attempt >= self.max_attempts:
                    raise
            delay = min(5.0, self.retry_delay_s * (2 ** (attempt - 1)))
            if request.cancel_event is not None:
                if request.cancel_event.wait(delay):
                    raise CompactionCancelledError("compaction cancelled")
            else:
                time.sleep(delay)
        raise ProviderError("unreachable")  # pragma: no cover

    def _post_with_deadline(self, payload: dict[str, Any], request: SummaryRequest) -> Any:
        timeout = min(self.timeout_s, request.timeout_s) if request.timeout_s else self.timeout_s
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["data"] = self._post(payload, timeout)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=work, name="openclaw-compaction-http", daemon=True)
        worker.start()
        deadline = time.monotonic() + timeout + 1.0
        while not done.wait(0.05):
            request.check_cancelled()
            if time.monotonic() > deadline:
                raise ProviderTimeoutError(f"timed out after {timeout:g}s waiting for {self.url}")
        if "error" in box:
            raise box["error"]
        return box["data"]

    def _parse(self, data: Any) -> str:
        choices = data.get("choices") if isinstance(data, Mapping) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            error = data.get("error") if isinstance(data, Mapping) else None
            if error:
                raise ProviderResponseError(
                    f"{self.url} answered with an error: {dumps_compact(error)[:300]}"
                )
            raise ProviderResponseError(f"{self.url} answered without choices")
        choice = choices[0]
        raw_message = choice.get("message")
        message = raw_message if isinstance(raw_message, Mapping) else {}
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        text = content.strip() if isinstance(content, str) else ""
        if choice.get("finish_reason") == "length":
            raise ProviderTruncatedError(
                f"summary was truncated by the model (finish_reason=length, {len(text)} chars received)"
            )
        if not text:
            raise ProviderEmptyOutputError("model returned no summary text")
        return text

    def _history_instructions(self, request: SummaryRequest, previous: str | None) -> str:
        if request.mode == "safeguard":
            return safeguard_instructions(request.identifier_policy)
        return UPDATE_PROMPT if previous and previous.strip() else INITIAL_PROMPT

    def summarize(self, request: SummaryRequest) -> str:
        max_tokens = self.max_output_tokens or request.max_output_tokens
        extra = compose_instructions(request)
        previous = request.previous_summary
        messages = list(request.messages)
        if messages:
            ratio = compute_adaptive_chunk_ratio(messages, request.context_window)
            limit = max_chunk_tokens(request.context_window, ratio)
            conversation = serialize_conversation(messages)
            if estimate_text_tokens(conversation) > limit and len(messages) > 1:
                chunks = chunk_messages_by_max_tokens(messages, limit)
            else:
                chunks = [messages]
            running = previous
            for index, chunk in enumerate(chunks):
                text = conversation if len(chunks) == 1 else serialize_conversation(chunk)
                prompt = build_prompt(text, running, self._history_instructions(request, running), extra)
                try:
                    running = self._call(prompt, max_tokens, request)
                except ProviderError as exc:
                    if index == 0:
                        raise
                    raise ProviderError(
                        f"{exc.message}\n\n{running}\n\n[Partial summary: chunks 1-{index} of "
                        f"{len(chunks)} were summarized. Chunks {index + 1}-{len(chunks)} could "
                        f"not be processed.]"
                    ) from exc
            history = running or summarizer.NO_PRIOR_HISTORY
        else:
            history = previous.strip() if previous and previous.strip() else summarizer.NO_PRIOR_HISTORY
        if request.turn_prefix_messages:
            prompt = build_prompt(
                serialize_conversation(request.turn_prefix_messages), None, TURN_PREFIX_PROMPT, extra
            )
            prefix = self._call(prompt, max(1, max_tokens // 2), request)
            if request.mode == "safeguard":
                prefix = "\n".join(
                    "#" + line if line.startswith("## ") else line for line in prefix.splitlines()
                )
                prefix = prefix[: summarizer.SPLIT_TURN_MAX_CHARS]
            history = history + summarizer.TURN_CONTEXT_DIVIDER + prefix
        return history


def openai_config_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The OpenAI-compatible provider config from `OPENCLAW_COMPACTION_*` (None when no base URL)."""
    env = os.environ if env is None else env
    base = (env.get("OPENCLAW_COMPACTION_BASE_URL") or "").strip()
    if not base:
        return None
    config: dict[str, Any] = {
        "base_url": base,
        "model": (env.get("OPENCLAW_COMPACTION_MODEL") or "").strip(),
        "api_key": (env.get("OPENCLAW_COMPACTION_API_KEY") or "").strip() or None,
    }
    for name, key, kind in (
        ("OPENCLAW_COMPACTION_TIMEOUT_S", "timeout_s", float),
        ("OPENCLAW_COMPACTION_MAX_OUTPUT_TOKENS", "max_output_tokens", int),
    ):
        raw = (env.get(name) or "").strip()
        if raw:
            try:
                value = kind(raw)
            except ValueError:
                raise ProviderError(f"{name} must be a number (got {raw!r}); example: 180") from None
            if value <= 0:
                raise ProviderError(f"{name} must be positive (got {raw!r}); example: 180")
            config[key] = value
    return config


# -- registry -------------------------------------------------------------------------------------
def available_providers() -> list[str]:
    from importlib.metadata import entry_points

    names = {BUILTIN_ID, OPENAI_ID}
    names.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def load_provider(name: str, config: Mapping[str, Any] | None = None) -> SummaryProvider:
    """Resolve a provider id: `builtin`, `openai-compatible` (config or env), or an entry point."""
    config = dict(config or {})
    if name == BUILTIN_ID:
        return BuiltinProvider()
    if name in (OPENAI_ID, "openai"):
        merged = {**(openai_config_from_env() or {}), **config}
        if not merged.get("base_url"):
            raise ProviderNotRegisteredError(
                f'Compaction provider "{name}" has no base URL (set OPENCLAW_COMPACTION_BASE_URL)'
            )
        return OpenAICompatibleProvider(**merged)
    from importlib.metadata import entry_points

    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        raise ProviderNotRegisteredError(f'Compaction provider "{name}" is not registered')
    try:
        target = matches[0].load()
        provider: SummaryProvider = (
            target
            if callable(getattr(target, "summarize", None)) and not isinstance(target, type)
            else target(**config)
        )
    except ProviderError:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not crash compaction
        raise ProviderError(f'Compaction provider "{name}" could not be loaded: {exc}') from exc
    if not callable(getattr(provider, "summarize", None)):
        raise ProviderError(f'Compaction provider "{name}" has no summarize(request) method')
    if not isinstance(getattr(provider, "id", None), str):
        try:
            provider.id = name
        except AttributeError:
            pass
    return provider


def _reason_for(provider_id: str, exc: BaseException) -> str:
    if isinstance(exc, ProviderEmptyOutputError):
        return (
            f'Compaction provider "{provider_id}" returned empty result, falling back to built-in summarizer.'
        )
    if isinstance(exc, ProviderTruncatedError):
        return (
            f'Compaction provider "{provider_id}" returned a truncated summary, falling back to built-in '
            f"summarizer: {exc}"
        )
    return f'Compaction provider "{provider_id}" failed, falling back to built-in summarizer: {exc}'


def try_provider(
    provider: SummaryProvider | str,
    request: SummaryRequest,
    *,
    provider_config: Mapping[str, Any] | None = None,
) -> tuple[str | None, str, str | None]:
    """Run a non-built-in provider: `(summary, provider_id, None)`, or `(None, provider_id, reason)`
    when it is not registered, fails, or returns nothing (the reason is logged). Cancellation
    (KeyboardInterrupt, `request.cancel_event`) propagates."""
    request.check_cancelled()
    provider_id = (
        provider if isinstance(provider, str) else str(getattr(provider, "id", type(provider).__name__))
    )
    reason: str | None = None
    if isinstance(provider, str):
        try:
            provider = load_provider(provider, provider_config)
        except ProviderNotRegisteredError as exc:
            reason = (
                f'Compaction provider "{provider_id}" is configured but not registered. Falling back to '
                f"built-in summarizer. ({exc})"
            )
        except ProviderError as exc:
            reason = _reason_for(provider_id, exc)
    if reason is None:
        try:
            summary = provider.summarize(request)  # type: ignore[union-attr]
        except (KeyboardInterrupt, CompactionCancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - any provider failure falls back
            request.check_cancelled()
            reason = _reason_for(provider_id, exc)
        else:
            request.check_cancelled()
            if isinstance(summary, str) and summary.strip():
                return summary.strip(), provider_id, None
            reason = _reason_for(provider_id, ProviderEmptyOutputError("empty"))
    log.warning(reason)
    return None, provider_id, reason


def is_builtin(provider: Any) -> bool:
    return provider is None or provider == BUILTIN_ID or isinstance(provider, BuiltinProvider)


def summarize_with_fallback(
    provider: SummaryProvider | str | None,
    request: SummaryRequest,
    *,
    provider_config: Mapping[str, Any] | None = None,
    fallback_request: SummaryRequest | None = None,
) -> tuple[str, str, str | None]:
    """Run `provider`; on failure, empty or truncated output use the built-in summariser (R4.14.5),
    with `fallback_request` when the provider's request is shaped for a model.

    Returns `(summary, provider_used, fallback_reason | None)`. Cancellation (KeyboardInterrupt,
    `request.cancel_event`) propagates and is never turned into a fallback.
    """
    request.check_cancelled()
    if is_builtin(provider):
        return BuiltinProvider().summarize(request), BUILTIN_ID, None
    summary, provider_id, reason = try_provider(provider, request, provider_config=provider_config)  # type: ignore[arg-type]
    if summary is not None:
        return summary, provider_id, None
    fallback = fallback_request or request
    text = BuiltinProvider().summarize(fallback)
    if fallback is not request:
        request.extra.update(fallback.extra)
    return text, BUILTIN_ID, reason
