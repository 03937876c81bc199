"""Snippets: a window of about 48 words around the best match, cut at word boundaries with
" … " where text was left out (as OpenClaw's `snippet(…, ' … ', 48)`), plus where the matched
words are so a terminal can highlight them. Built from the line's text read back from its store
(the index holds no text)."""

from __future__ import annotations

from openclaw_cli.search.query import Query, Term
from openclaw_cli.search.text import fold, token_spans

WINDOW = 48
MAX_CHARS = 500  # OpenClaw's SEARCH_SNIPPET_MAX_CHARS


def _matches(spans: list[tuple[int, int, str]], terms: tuple[Term, ...]) -> list[tuple[int, int]]:
    """(first token index, last token index) of every occurrence of every term."""
    words = [w for _, _, w in spans]
    found: list[tuple[int, int]] = []
    for term in terms:
        n = len(term.words)
        for i in range(len(words) - n + 1):
            ok = True
            for j, want in enumerate(term.words):
                got = words[i + j]
                last = j == n - 1
                if not (got == want or (last and term.prefix and got.startswith(want))):
                    ok = False
                    break
            if ok:
                found.append((i, i + n - 1))
    found.sort()
    return found


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
    spans = token_spans(text)
    return [(spans[a][0], spans[b][1]) for a, b in _matches(spans, query.highlight_terms)]


def make_snippet(text: str, query: Query) -> str:
    """About WINDOW words of `text` around its densest run of matches."""
    spans = token_spans(text)
    if len(spans) <= WINDOW:
        body = text.strip()
        return body if len(body) <= MAX_CHARS else body[:MAX_CHARS] + "…"
    if query.literal is not None:
        lit = _literal_span(text, query.literal)
        hits = [(i, i) for i, (s, e, _) in enumerate(spans) if lit and e > lit[0] and s < lit[1]][:1]
    else:
        hits = _matches(spans, query.highlight_terms)
    best_start, best_count = 0, -1
    for start in sorted({max(0, a - 4) for a, _ in hits}) or [0]:
        start = min(start, len(spans) - WINDOW)
        count = sum(1 for a, b in hits if a >= start and b < start + WINDOW)
        if count > best_count:
            best_start, best_count = start, count
    first, last = best_start, best_start + WINDOW - 1
    start_char = 0 if first == 0 else spans[first][0]
    end_char = len(text) if last == len(spans) - 1 else spans[last][1]
    body = text[start_char:end_char].strip()
    snippet = ("… " if first > 0 else "") + body + (" …" if last < len(spans) - 1 else "")
    return snippet if len(snippet) <= MAX_CHARS else snippet[:MAX_CHARS] + "…"
