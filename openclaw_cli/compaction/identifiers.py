"""Identifier extraction (§4.13 strict classes, R4.12.5 for the audit) and the summary quality audit
(R4.12.4, R4.12.6-7).

Preservation extracts every identifier of the text, in these kinds: `url` (any scheme), `path`
(POSIX, `~`, relative with an extension or >= 3 segments, relative Windows), `winpath` (`C:\\…`),
`email`, `hostport` (`host:port`, `[v6]:port`), `ip` (IPv4, IPv6, CIDR), `uuid`, `hex` (tokens
with a run of >= 8 hex characters holding a digit: hashes, tool-call ids), `date` (ISO dates and
date-times, `2026/03/14`, `14/03/2026`, `14.03.2026`, `2026-03`, and in prose `March 14, 2026` /
`14 Mar 2026`), `time` (`10:30`, `10:30:15.250`, `9:05pm`), `version` (`v1.2`, `1.2.3-rc.1`),
`number` (>= 6 digits), `id` (names mixing letters and digits: `OPS-88412`, `build_2291`,
`release-train-2026-03-14`, `gpt-4o`), `file` (a file name with a known extension), `host` (a
hostname whose last label is a common TLD or a private one such as `.internal`), `ref` (`#1234`),
and in prose only `unit` (`20 MB`, `150ms`, `95%`), which §4.13 does not name but a summary needs.

Speed (a 50 MB transcript holds ~38M characters of text): Python's `re` is slow when a pattern may
start at every position, and a Python loop over every token is slower still. Candidates are
therefore the delimiter-bounded tokens holding a digit, `/`, `\\`, `@` or `.`, found by ONE regex
whose possessive skip loop consumes the tokens without such a character, so each `findall` walks
the text once in C; `dict.fromkeys` de-duplicates them in C, and only unique candidates are
classified in Python (memoised). Tool output, which is most of a long transcript and repeats a lot
(files read twice, log lines), is also de-duplicated by line before the scan.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain

REQUIRED_SAFEGUARD_HEADINGS = (
    "## Decisions",
    "## Open TODOs",
    "## Constraints/Rules",
    "## Pending user asks",
    "## Exact identifiers",
)
AUDIT_IDENTIFIER_LIMIT = 12
AUDIT_MESSAGE_WINDOW = 10

# -- candidates -------------------------------------------------------------------------------
# Token delimiters: ASCII space, quotes, parentheses, braces and separators (square brackets are
# stripped from a token's ends instead, so `[::1]:443` stays one token), plus what separates words
# in CJK and typographic text (ideographic space and punctuation, full-width forms, curly quotes), so
# `修改/srv/app.py。` yields `/srv/app.py`. CJK letters themselves stay token characters (paths may
# hold them).
_DELIMS = (
    " \t\n\r\x0b\x0c\"'<>(){}`,;|\u00a0\u2000-\u200b\u2018\u2019\u201c\u201d\u2028\u2029"
    "\u3000-\u3003\u3008-\u3011\u3014-\u301f\uff01\uff02\uff08\uff09\uff0c\uff1b\uff1c\uff1e\uff1f"
    "\uff3b\uff3d\uff5b-\uff65"
)
_TRIGGERS = "0-9/\\\\@."
_LEAD_STRIP = "(\"'`[{<*"
_TRAIL_STRIP = ")]\"'`,;:.!?<>*…"
_MAX_TOKEN_CHARS = 4096  # longer tokens (base64, minified code) are data, not identifiers
# CJK text glued to an identifier (`修改/srv/app.py`, `见https://x.test`, `main.py中`): the CJK run is
# dropped where it meets ASCII; a CJK component inside a path (`/数据/报告.md`) stays.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_EDGES = re.compile(rf"^[{_CJK}]+(?=[A-Za-z0-9/~.\\])|(?<=[A-Za-z0-9])[{_CJK}]+$")

# -- classes ------------------------------------------------------------------------------------
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]{1,15}://\S+$")
_WIN_PATH = re.compile(r"^[A-Za-z]:\\\S*$|^\\\\[\w.$-]+\\\S+$")
_REL_WIN_PATH = re.compile(r"^[\w.-]+(?:\\[\w. -]+)+$")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_PATH = re.compile(r"^(?:~|\.{1,2})?/?[\w.@+~%=-]+(?:/[\w.@+~%=,-]*)+$")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_HOST_PORT = re.compile(r"^(?:[\w-]+(?:\.[\w-]+)+|localhost|\[[0-9a-fA-F:.]+\]):\d{2,5}$")
_IPV4 = re.compile(r"^(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?:/\d{1,2})?$")
_BRACKETED_V6 = re.compile(r"^\[[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\](?::\d{2,5})?$")
_IPV6 = re.compile(r"^[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%\w+)?(?:/\d{1,3})?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8,}")
_DIGIT_RUN = re.compile(r"\d{6,}")
_has_digit = re.compile(r"\d").search
_PURE_HEX = re.compile(r"^[0-9a-fA-F]{8,}$")
_DATE = re.compile(
    r"^(?:\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"(?:T\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{4}-(?:0[1-9]|1[0-2])"
    r"|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})|\d{1,2}\.\d{1,2}\.\d{4})$"
)
_TIME = re.compile(
    r"^(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{1,6})?)?(?:Z|[aApP]\.?[mM]\.?)?$"
    r"|^(?:0?[1-9]|1[0-2])[aApP]\.?[mM]\.?$"
)
_VERSION = re.compile(
    r"^v?\d+(?:\.\d+){2,}(?:[-+.]?[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$"
    r"|^v\d+\.\d+(?:[-+.]?[0-9A-Za-z]+)?$"
)
_ID = re.compile(r"^(?=.*[^\W\d_])(?=.*\d)[^\W_][\w.+#=~:-]*[^\W_]$")
_NOT_ID = re.compile(
    r"^\d+(?:st|nd|rd|th|s)$|^\d+(?:[.,]\d+)?[A-Za-z%]{1,3}$", re.IGNORECASE
)  # ordinals, 4GB
_REF = re.compile(r"^#\d{2,}$")
_FILE_EXTS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|json5|md|mdx|txt|yaml|yml|toml|ini|cfg|conf|env|sh|bash|zsh|"
    "ps1|rs|go|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|html|htm|css|scss|sql|sqlite|db|log|csv|tsv|xml|"
    "lock|zst|gz|tgz|tar|zip|pdf|png|jpg|jpeg|gif|svg|webp|ipynb|dockerfile|tf|proto|wasm|bin|patch|diff|"
    "bak|pem|crt|key|pub|service|plist|vue|svelte|lua|pl|r|scala|ex|exs|erl|hs|ml|nix|gradle|bat|cmd|mk"
)
_FILE_NAME = re.compile(rf"^[\w][\w.+-]*\.(?:{_FILE_EXTS})$", re.IGNORECASE)
_TLDS = (
    "com|org|net|io|dev|app|ai|co|us|uk|de|fr|nl|eu|jp|cn|ru|ch|se|no|fi|es|it|ca|au|br|edu|gov|mil|"
    "xyz|tech|cloud|test|example|invalid|local|localhost|internal|lan|home|corp|intranet|svc|onion"
)
_HOSTNAME = re.compile(rf"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\.)+(?:{_TLDS})$", re.IGNORECASE)
_UNITS = (
    r"ms|us|µs|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|d|days?|weeks?|"
    r"[kKMGT]i?B|[kmgt]b|B|bytes?|%|px|pt|em|rem|tokens?|k|K|M|x|req/s|rps|qps|°C|°F|MHz|GHz|Mbps|Gbps"
)
_NUM_UNIT_FULL = re.compile(rf"^\d+(?:[.,]\d+)*(?:{_UNITS})$")
# Prose forms that span tokens: a number and its unit word, a date with a month name. Each pattern
# starts with a character class (a digit, a capital letter) so `re` skips to candidates in C.
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
# Candidates: the tokens holding a trigger character, each with the word that follows when that
# makes a prose form spanning tokens (`20 MB`, `14 March 2026`; `_classify` splits others off
# again). Every match attempt succeeds (at a candidate or at the end), so `findall` never restarts
# a failed attempt one character later (which would make a long trigger-free stretch quadratic).
_FOLLOWING = rf"(?: (?:{_UNITS})(?![\w%/])| {_MONTH},? \d{{4}}(?![\w%/]))?"
_CANDIDATES = re.compile(
    rf"(?:[^{_DELIMS}{_TRIGGERS}]*+(?:[{_DELIMS}]++|\Z))*+"
    rf"(?:([^{_DELIMS}{_TRIGGERS}]*+[{_TRIGGERS}][^{_DELIMS}]*+{_FOLLOWING})|\Z)"
)
_SPANNING = re.compile(rf"^\d+(?:[.,]\d+)* (?:{_UNITS})$|^\d{{1,2}}(?:st|nd|rd|th)? {_MONTH},? \d{{4}}$")
_MONTH_FIRST = re.compile(
    r"[ADFJMNOS](?<![\w.][ADFJMNOS])(?:an(?:uary)?|eb(?:ruary)?|ar(?:ch)?|pr(?:il)?|ay|une?|uly?|ug(?:ust)?|"
    r"ep(?:t(?:ember)?)?|ct(?:ober)?|ov(?:ember)?|ec(?:ember)?)\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}(?![\w%/])"
)
_MONTH_NAMES = frozenset(
    str.split(
        "Jan January Feb February Mar March Apr April May Jun June Jul July Aug August Sep Sept September Oct "
        "October Nov November Dec December"
    )
)
_PROSE_BLOCK_CHARS = 1 << 16  # prose is scanned in blocks of about this size, newest first


@dataclass(frozen=True)
class Identifier:
    value: str
    kind: str  # see the module doc


def _classify(token: str, prose: bool) -> tuple[str, str] | None:
    """(value, kind) of one candidate token, or None. `prose` adds the `unit` kind. The checks are
    gated by what the token holds, so most tokens cost one or two regex calls."""
    if token[0] == "[" and _BRACKETED_V6.match(token.rstrip(_TRAIL_STRIP)):
        t = token.rstrip(_TRAIL_STRIP)
        return (t, "hostport") if t[-1] != "]" else (t, "ip")
    t = token.lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    if " " in t:  # a token and the word after it
        if prose and _SPANNING.match(t):
            return t, "unit" if t[-1].isalpha() or t[-1] in "%°" else "date"
        return _classify(t.split(" ", 1)[0], prose)
    if not t.isascii() and _CJK_EDGES.search(t):
        t = _CJK_EDGES.sub("", t).lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    if t[:1] == "~" and t[:2] != "~/":
        t = t.lstrip("~")  # `~approx` or `~~strike~~`, not a home path
    n = len(t)
    if n > _MAX_TOKEN_CHARS:
        return None
    if n < 4:
        if prose and n >= 2 and t[0].isdigit() and _NUM_UNIT_FULL.match(t):
            return t, "unit"  # 5ms, 95%
        return None
    if t.isdigit():
        return (t, "number") if n >= 6 else None
    if t.isalpha():
        return None
    if "://" in t:
        return (t, "url") if _URL.match(t) else None
    if "\\" in t:
        if t[1:3] == ":\\" or t.startswith("\\\\"):
            return (t, "winpath") if _WIN_PATH.match(t) else None
        if _REL_WIN_PATH.match(t) and (_EXT.search(t) or t.count("\\") >= 2):
            return t, "path"
    if "@" in t and _EMAIL.match(t):
        return t, "email"
    first_digit = t[0].isdigit()
    if "/" in t:
        if first_digit:
            if _DATE.match(t):
                return t, "date"
            if _IPV4.match(t):
                return t, "ip"
        if _PATH.match(t):
            segments = [s for s in t.split("/") if s not in ("", "~", ".", "..")]
            absolute = t.startswith(("/", "~/", "./", "../"))
            if (absolute and len(segments) >= 2) or (
                len(segments) >= 2 and (_EXT.search(t) or len(segments) >= 3)
            ):
                return t, "path"
    if ":" in t:
        if first_digit and _TIME.match(t):
            return t, "time"
        if _HOST_PORT.match(t):
            return t, "hostport"
        if t.count(":") >= 2 and _IPV6.match(t):
            try:
                ipaddress.ip_network(t.split("%")[0], strict=False)
            except ValueError:
                pass
            else:
                return t, "ip"
    if not _has_digit(t):  # a name with a dot: a file or a hostname
        if "." in t:
            if _FILE_NAME.match(t):
                return t, "file"
            if _HOSTNAME.match(t):
                return t, "host"
        return None
    if first_digit:
        if _DATE.match(t):
            return t, "date"
        if _IPV4.match(t):
            return t, "ip"
        if _VERSION.match(t):
            return t, "version"
        if _TIME.match(t):
            return t, "time"
        if prose and _NUM_UNIT_FULL.match(t):
            return t, "unit"
    elif t[0] in "vV" and _VERSION.match(t):
        return t, "version"
    if _UUID.match(t):
        return t, "uuid"
    hexrun = _HEX_RUN.search(t)
    if hexrun and not hexrun.group().isdigit() and _has_digit(hexrun.group()):
        return t, "hex"
    if _DIGIT_RUN.search(t):
        return t, "number"
    if "." in t:
        if _FILE_NAME.match(t):
            return t, "file"
        if _HOSTNAME.match(t):
            return t, "host"
    if _ID.match(t) and not _NOT_ID.match(t):
        return t, "id"
    if t[0] == "#" and _REF.match(t):
        return t, "ref"
    return None


class IdentifierScanner:
    """Extracts identifiers from many texts; the classification of a token is memoised, so one
    scanner for a whole compaction classifies each distinct token once."""

    def __init__(self) -> None:
        self._memo: tuple[dict[str, tuple[str, str] | None], dict[str, tuple[str, str] | None]] = ({}, {})

    def forget(self, *, prose: bool) -> None:
        """Drop the memo of one mode (prose or not) once no more text of that mode follows: the
        memo holds every distinct token seen (MBs for a large transcript)."""
        self._memo[prose].clear()

    def _classified(self, candidates: Iterable[str], prose: bool, out: dict[str, str]) -> None:
        memo = self._memo[prose]
        get = memo.get
        for token in candidates:
            found = get(token, _UNSEEN)
            if found is _UNSEEN:
                found = memo[token] = _classify(token, prose)
            if found is not None and found[0] not in out:  # type: ignore[index]
                out[found[0]] = found[1]  # type: ignore[index]

    def scan(self, text: str, *, prose: bool = True) -> dict[str, str]:
        """value -> kind of every identifier in `text`, in order of first appearance (the prose forms
        that span tokens come after the single-token ones)."""
        out: dict[str, str] = {}
        if text:
            self._scan_into(text, prose, out)
        return out

    def _scan_into(self, text: str, prose: bool, out: dict[str, str]) -> None:
        candidates = dict.fromkeys(_CANDIDATES.findall(text))
        candidates.pop("", None)
        self._classified(candidates, prose, out)
        if prose:
            for match in _MONTH_FIRST.finditer(text):
                value = match.group()
                if value.split(" ", 1)[0].rstrip(".") in _MONTH_NAMES and value not in out:
                    out[value] = "date"

    def scan_many(self, texts: Iterable[str], *, prose: bool = True) -> dict[str, str]:
        """value -> kind over `texts` in order: pass them newest first to get the identifiers newest
        first. Only distinct lines are scanned (a repeated line, as in a file read twice or a log,
        costs one hash); prose in blocks of ~64 KB (the order holds between blocks), tool output
        (`prose=False`) in one pass."""
        out: dict[str, str] = {}
        # whole texts first (a file read twice is one hash), then their lines
        lines = dict.fromkeys(chain.from_iterable(t.split("\n") for t in dict.fromkeys(texts) if t))
        lines.pop("", None)
        if not prose:
            self._scan_into("\n".join(lines), False, out)
            return out
        block: list[str] = []
        size = 0
        for line in lines:
            block.append(line)
            size += len(line)
            if size >= _PROSE_BLOCK_CHARS:
                self._scan_into("\n".join(block), True, out)
                block, size = [], 0
        if block:
            self._scan_into("\n".join(block), True, out)
        return out

    def scan_lines(self, lines: list[str]) -> list[tuple[str, ...]]:
        """The identifiers of each line (no newline in any), as `scan(line, prose=False)` finds them,
        from one pass over all of them: what a cache of tool-output lines is filled with."""
        import bisect

        out: list[dict[str, None]] = [{} for _ in lines]
        starts: list[int] = []
        position = 0
        for line in lines:
            starts.append(position)
            position += len(line) + 1
        memo = self._memo[False]
        get = memo.get
        where = bisect.bisect_right
        for match in _CANDIDATES.finditer("\n".join(lines)):
            token = match.group(1)
            if not token:
                continue
            found = get(token, _UNSEEN)
            if found is _UNSEEN:
                found = memo[token] = _classify(token, False)
            if found is not None:
                out[where(starts, match.start(1)) - 1][found[0]] = None  # type: ignore[index]
        return [tuple(values) for values in out]


_UNSEEN = object()


def scan_identifiers(text: str, *, conversational: bool = True) -> list[Identifier]:
    """Every identifier in `text`, in order of first appearance, unique. `conversational=False`
    (tool output) leaves out the prose-only forms: numbers with units and month-name dates."""
    return [Identifier(v, k) for v, k in IdentifierScanner().scan(text, prose=conversational).items()]


def iter_identifiers(text: str, *, conversational: bool = True) -> Iterator[tuple[str, str]]:
    """(value, kind) of the identifiers in `text`, unique, in order of first appearance."""
    yield from IdentifierScanner().scan(text, prose=conversational).items()


def extract_identifiers(text: str, *, conversational: bool = True) -> list[str]:
    return list(IdentifierScanner().scan(text, prose=conversational))


def _audit_kind(value: str, kind: str) -> bool:
    """R4.12.5's classes: URLs, absolute POSIX paths (>= 2 segments), Windows paths, host:port, and
    tokens with >= 8 hex characters or >= 6 digits."""
    if kind in ("url", "winpath", "hostport"):
        return True
    if kind == "path":
        return value.startswith("/")
    hexrun = _HEX_RUN.search(value)
    return bool(hexrun and _has_digit(hexrun.group()) or _DIGIT_RUN.search(value))


def _normalize_audit(value: str) -> str:
    return value.upper() if _PURE_HEX.match(value) else value


def extract_audit_identifiers(texts: Iterable[str], *, limit: int = AUDIT_IDENTIFIER_LIMIT) -> list[str]:
    """R4.12.5: URLs, absolute POSIX paths (>= 2 segments), Windows paths, host:port, tokens with
    >= 8 hex chars or >= 6 digits; pure-hex upper-cased; length >= 4; unique; the first `limit`."""
    out: list[str] = []
    seen: set[str] = set()
    scanner = IdentifierScanner()
    for text in texts:
        for value, kind in scanner.scan(text, prose=False).items():
            if not _audit_kind(value, kind):
                continue
            value = _normalize_audit(value)
            if value not in seen:
                seen.add(value)
                out.append(value)
                if len(out) >= limit:
                    return out
    return out


# -- the audit ---------------------------------------------------------------------------------
_STOP_WORDS = frozenset(
    str.split(
        "a an the and or but if then else of to in on at by for with from into onto about as is are was were be "
        "been being am do does did doing have has had having it its this that these those there here i me my we "
        "our you your he she they them their what which who whom whose when where why how can could would should "
        "will shall may might must please pls just also so not no yes ok okay hi hello hey thanks thank let lets "
        "me us all any some more most very too than up down out over again now"
    )
)
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)


def ask_keywords(ask: str, *, limit: int = 12) -> list[str]:
    """Up to 12 unique keywords of the NFKC-lower-cased ask; stop words and 1-char tokens are
    dropped when other tokens exist (R4.12.4)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", ask).lower())
    unique = list(dict.fromkeys(words))
    kept = [w for w in unique if len(w) > 1 and w not in _STOP_WORDS]
    return (kept or unique)[:limit]


def _contains_identifier(summary: str, summary_upper: str, ident: str) -> bool:
    if _PURE_HEX.match(ident):
        return ident.upper() in summary_upper
    return ident in summary


def audit_summary(
    summary: str,
    *,
    identifiers: Iterable[str] = (),
    latest_user_ask: str | None = None,
    identifier_policy: str = "strict",
    required_headings: Iterable[str] = REQUIRED_SAFEGUARD_HEADINGS,
) -> list[str]:
    """Reasons a summary fails the quality guard (empty list = passes)."""
    reasons: list[str] = []
    lines = {line.strip() for line in summary.splitlines()}
    for heading in required_headings:
        if heading not in lines:
            reasons.append(f"missing_section:{heading}")
    if identifier_policy == "strict":
        upper = summary.upper()
        missing = [i for i in identifiers if not _contains_identifier(summary, upper, i)]
        if missing:
            reasons.append("missing_identifiers:" + ",".join(missing[:3]))
    if latest_user_ask and latest_user_ask.strip():
        keywords = ask_keywords(latest_user_ask)
        if keywords:
            summary_words = set(_WORD.findall(unicodedata.normalize("NFKC", summary).lower()))
            hits = sum(1 for k in keywords if k in summary_words)
            needed = 2 if len(keywords) >= 3 else 1
            if hits < needed:
                reasons.append("latest_user_ask_not_reflected")
    return reasons


def corrective_instructions(reasons: list[str], identifier_policy: str = "strict") -> str:
    """R4.12.6 corrective feedback for a retry."""
    if identifier_policy == "off":
        head = (
            "Fix all issues and include every required section while following the configured "
            "identifier policy."
        )
    else:
        head = "Fix all issues and include every required section with exact identifiers preserved."
    return (
        f"{head}\n\nQuality check feedback:\nPrevious summary failed quality checks ({', '.join(reasons)})."
    )


@dataclass
class GuardResult:
    summary: str
    attempts: int
    passed: bool
    reasons: list[str] = field(default_factory=list)  # reasons of the accepted summary (empty if passed)


def run_quality_guard(
    generate: Callable[[str | None], str],
    audit: Callable[[str], list[str]],
    *,
    max_retries: int = 1,
    enabled: bool = True,
    identifier_policy: str = "strict",
) -> GuardResult:
    """Generate, audit, retry with corrective feedback up to `max_retries` times (clamped 0-3);
    on exhaustion accept the last summary (profile L, R4.12.7). `generate(feedback)` gets None
    first, then the corrective instructions."""
    retries = max(0, min(3, int(max_retries)))
    summary = generate(None)
    if not enabled:
        return GuardResult(summary, 1, True)
    reasons = audit(summary)
    attempts = 1
    while reasons and attempts <= retries:
        summary = generate(corrective_instructions(reasons, identifier_policy))
        attempts += 1
        reasons = audit(summary)
    return GuardResult(summary, attempts, not reasons, reasons)
