"""Snippets: a window of about 48 words around the best match, cut at word boundaries with
" … " where text was left out (as OpenClaw's `snippet(…, ' … ', 48)`), plus where the matched
words are so a terminal can highlight them. Built from the line's text read back from its store
(the index holds no text).

Costs stay linear in the line's length: the words are found by one regex pass (C), the matches
by comparing word lists, and the densest window by a bisection per candidate start, so a long
tool result holding a common word hundreds of times costs about what a short line does per word.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice

from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.search.query import Query, Term
from openclaw_cli.search.text import ASCII_TOKEN_RE, TOKEN_RE, fold

WINDOW = 48
SKIP_STEP = 64
# SKIP_STEP ASCII tokens (ASCII_TOKEN_RE's maximal runs) and what separates them, from a token
# boundary; possessive: a token is never split to make up the count
_SKIP_ASCII_TOKENS = lazy_pattern(
    globals(), "_SKIP_ASCII_TOKENS", rf"(?:[^A-Za-z0-9]*+[A-Za-z0-9]++){{{SKIP_STEP}}}"
)
MAX_CHARS = 500  # OpenClaw's SEARCH_SNIPPET_MAX_CHARS
# WINDOW tokens of an ASCII text's `shape` (below), from a token boundary: what separates them
# and their b"a" runs, possessive
_WINDOW_TOKENS = lazy_pattern(globals(), "_WINDOW_TOKENS", rb"(?: *+a++){%d}" % WINDOW)


# ASCII: letters lowered, digits kept, every other character a space (then `str.split` cuts the
# tokens: ~3x a `findall` over the lowered text, which runs the regex engine per character)
_ASCII_FOLD = str.maketrans({i: (chr(i).lower() if chr(i).isalnum() else " ") for i in range(128)})


def _words(text: str) -> list[str]:
    """The folded tokens of `text`, in order (unicode61's word rule)."""
    if text.isascii():
        return text.translate(_ASCII_FOLD).split()  # ASCII_TOKEN_RE's tokens of the lowered text
    return [fold(m.group()) for m in TOKEN_RE.finditer(text)]


def _word_starts(words: list[str], heads: list[str]) -> list[int]:
    """`_matches`' first token indexes for terms that are each one whole word (`heads`), without
    its pairs (and sort, for one term)."""
    found: list[int] = []
    index = words.index
    for head in heads:
        i = -1
        try:
            while True:
                i = index(head, i + 1)
                found.append(i)
        except ValueError:
            pass
    if len(heads) > 1:
        found.sort()
    return found


def _matches(words: list[str], terms: tuple[Term, ...]) -> list[tuple[int, int]]:
    """(first token index, last token index) of every occurrence of every term, sorted."""
    found: list[tuple[int, int]] = []
    count = len(words)
    for term in terms:
        n = len(term.words)
        head, last = term.words[0], term.words[-1]
        if n == 1:
            if term.prefix:
                found.extend((i, i) for i, w in enumerate(words) if w.startswith(head))
            else:  # each occurrence found by list.index (a C scan), not a comparison per word
                index = words.index
                i = -1
                try:
                    while True:
                        i = index(head, i + 1)
                        found.append((i, i))
                except ValueError:
                    pass
            continue
        middle = term.words[1:-1]
        for i, w in enumerate(words):
            if w != head or i + n > count:
                continue
            if words[i + 1 : i + n - 1] != list(middle):
                continue
            tail = words[i + n - 1]
            if tail == last or (term.prefix and tail.startswith(last)):
                found.append((i, i + n - 1))
    found.sort()
    return found


def _span(text: str, index: int, start: int = 0) -> tuple[int, int]:
    """Character span of token number `index` of `text` (counted from the token that starts at
    character `start`, a token boundary)."""
    if text.isascii():
        pattern = ASCII_TOKEN_RE
        skip = _SKIP_ASCII_TOKENS.match
        while index >= SKIP_STEP:  # SKIP_STEP tokens at a time in one match, no match object per token
            found = skip(text, start)
            if found is None:
                break
            start = found.end()
            index -= SKIP_STEP
    else:
        pattern = TOKEN_RE
    match = next(islice(pattern.finditer(text, start), index, None))
    return match.start(), match.end()


def _literal_span(text: str, literal: str) -> tuple[int, int] | None:
    folded = fold(text)
    at = folded.find(fold(literal))
    if at < 0 or len(folded) != len(text):
        return None
    return at, at + len(literal)


def highlights(text: str, query: Query) -> list[tuple[int, int]]:
    """Character spans of `text` that match the query (for a terminal's highlight)."""
    if query.literal is not None:
        lit = _literal_span(text, query.literal)
        return [lit] if lit else []
    spans = [(m.start(), m.end()) for m in TOKEN_RE.finditer(text)]
    return [(spans[a][0], spans[b][1]) for a, b in _matches(_words(text), query.highlight_terms)]


def _best_window(hits: list[tuple[int, int]], total: int) -> int:
    """First token of the WINDOW-token window holding the most whole matches (the earliest such
    window; candidates start 4 tokens before a match)."""
    starts = [a for a, _ in hits]
    if starts and all(a == b for a, b in hits):
        return _best_single_window(starts, total)
    return _best_any_window(hits, starts, total)


def _best_any_window(hits: list[tuple[int, int]], starts: list[int], total: int) -> int:
    # a match ending at or past a window's end starts at most `longest` tokens before it: only
    # those few are looked at (every match of a single word fits whenever it starts inside)
    longest = max((b - a for a, b in hits), default=0)
    best_start, best_count = 0, -1
    for start in sorted({max(0, a - 4) for a in starts}) or [0]:
        start = min(start, total - WINDOW)
        end = start + WINDOW
        lo, hi = bisect_left(starts, start), bisect_left(starts, end)
        count = hi - lo
        if longest:
            count -= sum(
                1 for k in range(bisect_left(starts, end - longest, lo, hi), hi) if hits[k][1] >= end
            )
        if count > best_count:
            best_start, best_count = start, count
    return best_start


def _best_single_window(starts: list[int], total: int) -> int:
    """`_best_window` for matches of one token each (a word, not a phrase: the common case): a
    window's count is how many starts fall in it, and as the candidates move right both of its
    ends only move right, so two indexes walk the starts once instead of two bisections per
    candidate (a common word's long tool result has hundreds of candidates)."""
    cap = total - WINDOW
    n = len(starts)
    best_start, best_count = 0, -1
    lo = hi = 0
    previous = None
    for a in starts:
        start = a - 4 if a > 4 else 0
        if start > cap:
            start = cap
        if start == previous:  # the same window again (an equal count never replaces the best)
            continue
        previous = start
        while starts[lo] < start:  # never past `a` itself, which is >= start
            lo += 1
        end = start + WINDOW
        while hi < n and starts[hi] < end:
            hi += 1
        if hi - lo > best_count:
            best_start, best_count = start, hi - lo
    return best_start


# ASCII bytes: a token character (letter, digit) as b"a", anything else as a space; and folded:
# letters lowered, digits kept, anything else a space
_SHAPE = bytes(0x61 if chr(i).isascii() and chr(i).isalnum() else 0x20 for i in range(256))
_FOLDED = bytes(ord(chr(i).lower()) if chr(i).isascii() and chr(i).isalnum() else 0x20 for i in range(256))


def _ascii_word_snippet(text: str, heads: list[str]) -> str:
    """`make_snippet` of an ASCII text for terms that are each one whole word (`heads`), with no
    list of the text's words: in `shape` (b" " + each character's class) a token starts at
    character i exactly where b" a" occurs at index i; each match is found as b" word " in the
    folded text (C scans), its token number counted as the token starts before it, one `count`
    per stretch between matches; the window's start is walked back to from a match, its end
    found by one match of WINDOW tokens."""
    raw = text.encode("ascii")
    shape = b" " + raw.translate(_SHAPE)
    folded = b" " + raw.translate(_FOLDED) + b" "
    ats: list[int] = []  # the character where each match starts, in order
    for head in heads:
        word = head.encode("ascii") if head.isascii() else b""
        if not word.isalnum() or word != word.lower():  # no token of the text can be it
            continue
        needle = b" " + word + b" "
        step = len(word) + 1
        find = folded.find
        at = find(needle)
        while at >= 0:
            ats.append(at)
            at = find(needle, at + step)
    if len(heads) > 1:
        ats.sort()
    count = shape.count
    starts: list[int] = []  # the token number of each match
    tokens = counted = 0  # token starts before character `counted`
    for at in ats:
        tokens += count(b" a", counted, at + 1)  # those at shape[counted:at]
        counted = at
        starts.append(tokens)
    total = tokens + count(b" a", counted)
    if total <= WINDOW:
        body = text.strip()
        return body if len(body) <= MAX_CHARS else body[:MAX_CHARS] + "…"
    first = _best_single_window(starts, total)
    last = first + WINDOW - 1
    start_char = 0
    if first > 0:  # walked back from the first match at or after it (4 tokens; at most WINDOW)
        i = bisect_left(starts, first)
        number, start_char = starts[i], ats[i]
        rfind = shape.rfind
        while number > first:
            start_char = rfind(b" a", 0, start_char + 1)
            number -= 1
    end_char = len(text)
    if last < total - 1:  # the end of WINDOW tokens from the first one's start
        walked = _WINDOW_TOKENS.match(shape, start_char)
        end_char = walked.end() - 1 if walked is not None else len(text)
    body = text[start_char:end_char].strip()
    snippet = ("… " if first > 0 else "") + body + (" …" if last < total - 1 else "")
    return snippet if len(snippet) <= MAX_CHARS else snippet[:MAX_CHARS] + "…"


def _plain_heads(terms: tuple[Term, ...]) -> list[str] | None:
    """The words of terms that are each one whole word (no phrase, no prefix); None otherwise."""
    heads = []
    for term in terms:
        if len(term.words) != 1 or term.prefix:
            return None
        heads.append(term.words[0])
    return heads


def make_snippet(text: str, query: Query) -> str:
    """About WINDOW words of `text` around its densest run of matches."""
    heads = _plain_heads(query.highlight_terms) if query.literal is None else None
    if heads is not None and text.isascii():
        return _ascii_word_snippet(text, heads)
    words = _words(text)
    if len(words) <= WINDOW:
        body = text.strip()
        return body if len(body) <= MAX_CHARS else body[:MAX_CHARS] + "…"
    if query.literal is not None:
        lit = _literal_span(text, query.literal)
        hits: list[tuple[int, int]] = []
        if lit:
            for i, m in enumerate(TOKEN_RE.finditer(text)):
                if m.end() > lit[0] and m.start() < lit[1]:
                    hits = [(i, i)]
                    break
        first = _best_window(hits, len(words))
    else:
        if heads is not None:
            first = _best_single_window(_word_starts(words, heads), len(words))
        else:
            first = _best_window(_matches(words, query.highlight_terms), len(words))
    last = first + WINDOW - 1
    start_char = 0 if first == 0 else _span(text, first)[0]
    # the last token counted on from the first (not from the text's start again)
    end_char = len(text) if last == len(words) - 1 else _span(text, last - first, start_char)[1]
    body = text[start_char:end_char].strip()
    snippet = ("… " if first > 0 else "") + body + (" …" if last < len(words) - 1 else "")
    return snippet if len(snippet) <= MAX_CHARS else snippet[:MAX_CHARS] + "…"
