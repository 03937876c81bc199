"""The snippet window and highlights (search/snippet.py) against their plain definition: every
token listed, every term compared at every position, every candidate window counted. The fast
implementation must give the same text and spans."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.search.query import Query, parse
from openclaw_cli.search.snippet import MAX_CHARS, WINDOW, highlights, make_snippet

_TOKEN = re.compile(r"[^\W_]+|[\ue000-\uf8ff]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def _spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), _fold(m.group())) for m in _TOKEN.finditer(text)]


def _occurrences(words: list[str], query: Query) -> list[tuple[int, int]]:
    found = []
    for term in query.include:
        n = len(term.words)
        for i in range(len(words) - n + 1):
            window = words[i : i + n]
            if window[:-1] == list(term.words[:-1]) and (
                window[-1] == term.words[-1] or (term.prefix and window[-1].startswith(term.words[-1]))
            ):
                found.append((i, i + n - 1))
    return sorted(found)


def _plain_snippet(text: str, query: Query) -> str:
    spans = _spans(text)
    if len(spans) <= WINDOW:
        body = text.strip()
        return body if len(body) <= MAX_CHARS else body[:MAX_CHARS] + "…"
    if query.literal is not None:
        at = _fold(text).find(_fold(query.literal))
        lit = (at, at + len(query.literal)) if at >= 0 and len(_fold(text)) == len(text) else None
        hits = [(i, i) for i, (s, e, _) in enumerate(spans) if lit and e > lit[0] and s < lit[1]][:1]
    else:
        hits = _occurrences([w for _, _, w in spans], query)
    best, best_count = 0, -1
    for start in sorted({max(0, a - 4) for a, _ in hits}) or [0]:
        start = min(start, len(spans) - WINDOW)
        count = sum(1 for a, b in hits if a >= start and b < start + WINDOW)
        if count > best_count:
            best, best_count = start, count
    last = best + WINDOW - 1
    start_char = 0 if best == 0 else spans[best][0]
    end_char = len(text) if last == len(spans) - 1 else spans[last][1]
    out = ("… " if best > 0 else "") + text[start_char:end_char].strip()
    out += " …" if last < len(spans) - 1 else ""
    return out if len(out) <= MAX_CHARS else out[:MAX_CHARS] + "…"


_WORDS = ["gateway", "Gateway", "gate", "way", "café", "cafe", "ÉTÉ", "été", "token", "x_y", "42", "a"]
_TEXT = st.lists(
    st.tuples(st.sampled_from(_WORDS), st.sampled_from([" ", "  ", ", ", "\n", "-", "_", ". "])),
    max_size=160,
).map(lambda parts: "".join(w + sep for w, sep in parts))
_QUERY = st.sampled_from(
    ["gateway", "gate*", '"gate way"', '"gateway token" cafe', "ete", "42 a", '"way gateway gate"*', "x"]
)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _QUERY)
def test_snippet_and_highlights_equal_the_plain_definition(text: str, raw: str) -> None:
    query = parse(raw)
    assert make_snippet(text, query) == _plain_snippet(text, query)
    spans = _spans(text)
    expect = [(spans[a][0], spans[b][1]) for a, b in _occurrences([w for _, _, w in spans], query)]
    assert highlights(text, query) == expect


@settings(max_examples=100, deadline=None)
@given(_TEXT, st.sampled_from(["gateway", "way, gate", "_y", "été 42"]))
def test_literal_snippet_equals_the_plain_definition(text: str, literal: str) -> None:
    query = parse(literal, fixed=True)
    assert make_snippet(text, query) == _plain_snippet(text, query)


def test_a_long_line_with_many_matches_is_cut_around_the_densest_run() -> None:
    text = " ".join(["filler"] * 300 + ["gateway token"] * 30 + ["filler"] * 300)
    snippet = make_snippet(text, parse('"gateway token"'))
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert snippet.count("gateway token") == 24  # the first window wholly inside the run: 24 pairs
    assert snippet == _plain_snippet(text, parse('"gateway token"'))


def _lines_by_definition(data: bytes, pos: int, number: int) -> list[tuple[int, int, int, bytes]]:
    """Every non-blank line, stripped, with where it starts, where the next begins, and its number
    among the non-blank ones (the reader's contract, written the plain way)."""
    out = []
    for line in _split_keep_lf(data):
        start = pos
        pos += len(line)
        if line.strip():
            number += 1
            out.append((start, pos, number, line.strip()))
    return out


def _split_keep_lf(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"", b" ", b"\t", b"{}", b' {"a": 1} ', b"x" * 70, b"\r", b"\x0b", b"\xc3\xa9"]),
        max_size=30,
    ).map(lambda pieces: b"\n".join(pieces)),
    st.integers(min_value=1, max_value=9),
    st.integers(min_value=0, max_value=50),
)
def test_reader_lines_match_the_plain_definition(data: bytes, chunk: int, first: int) -> None:
    """The chunked line reader (one `find` per line, lines cut across chunk boundaries) gives
    the positions, numbers and stripped bytes of the plain split, whatever the chunk size."""
    import io

    from openclaw_cli.search.sources import _numbered_lines

    got = list(_numbered_lines(io.BytesIO(data), 100, first, size=chunk))
    assert got == _lines_by_definition(data, 100, first)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=400), max_size=120),
    st.integers(min_value=0, max_value=450),
)
def test_the_single_word_window_is_the_bisecting_one(starts: list[int], extra: int) -> None:
    """stop 38: matches of one token each take the two-index walk; it picks the very window the
    general search picks (duplicates included: two terms matching one word)."""
    from openclaw_cli.search.snippet import _best_any_window, _best_single_window, _best_window

    starts = sorted(starts)
    total = (starts[-1] if starts else 0) + extra + 1
    hits = [(a, a) for a in starts]
    if starts:
        assert _best_single_window(starts, total) == _best_any_window(hits, starts, total)
    assert _best_window(hits, total) == _best_any_window(hits, starts, total)


_ASCII_WORDS = ["gateway", "GATEWAY", "gate", "way", "token", "x_y", "42", "a", "b2b", "z"]
_ASCII_TEXT = st.tuples(
    st.sampled_from(["", " ", "\n  ", "--"]),
    st.lists(
        st.tuples(
            st.sampled_from(_ASCII_WORDS),
            st.sampled_from([" ", "  ", ", ", "\n", "-", "_", ". ", "!?", "\t"]),
        ),
        min_size=30,
        max_size=220,
    ),
    st.sampled_from(["", "gateway", " z", "gateway."]),
).map(lambda t: t[0] + "".join(w + sep for w, sep in t[1]) + t[2])


@settings(max_examples=500, deadline=None)
@given(
    _ASCII_TEXT,
    st.sampled_from(
        ["gateway", "Gateway token", "42 a", "z", "b2b gateway 42", "café", "missing", "x", "gateway gateway"]
    ),
)
def test_an_ascii_text_of_single_words_equals_the_plain_definition(text: str, raw: str) -> None:
    """stop 40: an ASCII text for terms of one word each takes the byte scans (no word list): the
    same snippet as the plain definition, windows at the start, the middle and the end alike."""
    query = parse(raw)
    assert make_snippet(text, query) == _plain_snippet(text, query)
