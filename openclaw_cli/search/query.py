"""The query language of `sessions search`, translated into an FTS5 MATCH expression.

Words are all required; `"a phrase"` matches its words in order; `-word` / `-"a phrase"`
excludes; `foo*` matches words starting with foo. Every term is quoted in the FTS5 expression,
so FTS5's own operators (OR, NEAR, column filters, `^`) are plain words here and no input can make
SQLite report a syntax error. `--fixed` takes the whole query as literal text (ids, paths), found
anywhere in a line as `grep -F` finds it (case-insensitively): the index narrows the candidates to
lines holding its words in order — all but a first word the literal may start in the middle of —
then the text itself must contain the literal exactly. A literal that is one piece of a word
(`ession` in `session-42`) is looked up through the index's vocabulary: every indexed word that
contains it (`Query.infix`, expanded per index by the engine).
"""

from __future__ import annotations

from openclaw_cli.errors import UsageError
from openclaw_cli.search.text import fold, tokens

MAX_QUERY_CHARS = 4096


class Term:
    __slots__ = ("words", "prefix")

    def __init__(self, words: tuple[str, ...], prefix: bool = False):
        self.words = words  # folded tokens, in order (one word, or a phrase)
        self.prefix = prefix  # the last word is a prefix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and (self.words, self.prefix) == (other.words, other.prefix)

    def __hash__(self) -> int:
        return hash((self.words, self.prefix))

    def __repr__(self) -> str:
        return f"Term({self.words!r}, prefix={self.prefix})"

    def fts(self) -> str:
        body = '"' + " ".join(w.replace('"', '""') for w in self.words) + '"'
        return body + " *" if self.prefix else body


class Query:
    """A parsed query (plain class: no dataclass built at import on the search path)."""

    __slots__ = ("text", "include", "exclude", "literal", "fts", "infix")

    def __init__(
        self,
        text: str,
        include: tuple[Term, ...],
        exclude: tuple[Term, ...] = (),
        literal: str | None = None,  # --fixed: the exact text a line must contain
        fts: str = "",
        infix: str | None = None,  # --fixed, one word's piece: any indexed word containing it matches
    ):
        self.text = text
        self.include = include
        self.exclude = exclude
        self.literal = literal
        self.fts = fts
        self.infix = infix

    def with_fts(self, fts: str) -> Query:
        """The same query matched by another FTS5 expression."""
        return Query(self.text, self.include, self.exclude, self.literal, fts, self.infix)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and all(
            getattr(self, name) == getattr(other, name) for name in Query.__slots__
        )

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Query({self.text!r}, fts={self.fts!r}, literal={self.literal!r})"

    @property
    def highlight_terms(self) -> tuple[Term, ...]:
        return self.include

    def plain_words(self) -> bool:
        """Only plain words (no phrase, prefix, exclusion or literal): what OpenClaw's own
        `sessions.search` understands the same way (it ANDs each whitespace-separated token)."""
        if self.exclude or self.literal is not None:
            return False
        raw = self.text.split()
        return (
            len(raw) == len(self.include)
            and all(not t.prefix and len(t.words) == 1 for t in self.include)
            and all(
                tokens(word) == list(term.words) and word.isalnum()
                for word, term in zip(raw, self.include, strict=True)
            )
        )


def check_length(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UsageError("The search query must not be empty.")
    if len(text) > MAX_QUERY_CHARS:
        raise UsageError(f"The search query must not exceed {MAX_QUERY_CHARS} characters (got {len(text)}).")
    return text.strip()


def _split(text: str) -> list[tuple[bool, bool, str, bool]]:
    """(negated, quoted, body, prefix) chunks; unbalanced quotes are a usage error."""
    out: list[tuple[bool, bool, str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negated = False
        if text[i] == "-" and i + 1 < n and not text[i + 1].isspace():
            negated = True
            i += 1
        if text[i] == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise UsageError(
                    'Unbalanced quote in the search query: close the phrase with a second ", '
                    "or pass --fixed to search for the text literally."
                )
            body = text[i + 1 : end]
            i = end + 1
            prefix = i < n and text[i] == "*"
            if prefix:
                i += 1
            out.append((negated, True, body, prefix))
            continue
        start = i
        while i < n and not text[i].isspace() and text[i] != '"':
            i += 1
        word = text[start:i]
        if i < n and text[i] == '"':
            raise UsageError(
                'A quote inside a word in the search query: put phrases in "double quotes" '
                "separated by spaces, or pass --fixed to search for the text literally."
            )
        prefix = word.endswith("*")
        out.append((negated, False, word.rstrip("*"), prefix))
    return out


def parse(text: str, *, fixed: bool = False) -> Query:
    """The query, or a UsageError saying what is wrong with it."""
    text = check_length(text)
    if fixed:
        words = tuple(tokens(text))
        if not words:
            raise UsageError("--fixed text needs at least one letter or digit to look up in the index.")
        term = Term(words, prefix=True)
        if not tokens(text[0]):  # it starts outside a word: its first word starts a word
            return Query(text, (term,), (), literal=text, fts=term.fts())
        if len(words) > 1:  # its first word may end a longer one: the rest, in order, narrow
            return Query(text, (term,), (), literal=text, fts=Term(words[1:], prefix=True).fts())
        return Query(text, (term,), (), literal=text, fts=term.fts(), infix=words[0])
    include: list[Term] = []
    exclude: list[Term] = []
    for negated, _quoted, body, prefix in _split(text):
        words = tuple(tokens(body))
        if not words:
            continue  # punctuation only: nothing the index can match
        (exclude if negated else include).append(Term(words, prefix))
    if not include:
        raise UsageError(
            "The search query has no word to look for"
            + (" (it only excludes)" if exclude else "")
            + ": give at least one word, or pass --fixed to search for the text literally."
        )
    fts = " AND ".join(term.fts() for term in include)
    if exclude:
        fts = f"({fts}) NOT ({' OR '.join(term.fts() for term in exclude)})"
    return Query(text, tuple(include), tuple(exclude), None, fts)


def literal_in(text: str, literal: str) -> bool:
    """--fixed: the literal as written, case-insensitively (ids and paths are case-stable; a
    person typing one may not be)."""
    return fold(literal) in fold(text)
