"""Identifier extraction (R4.12.5, extended for preservation) and the summary quality audit
(R4.12.4, R4.12.6-7).

Preservation extracts *every* identifier, not only 12: URLs (any scheme), POSIX / `~` / relative
paths, Windows paths, e-mail addresses, `host:port`, UUIDs, hex hashes and ids containing >= 8 hex
characters (tool-call ids such as `call_d7eb89a64d0f`), numbers of >= 6 digits; and in
conversation text also dates, times, IPs, versions, file names with a known extension and numbers
with units (`20 MB`, `150ms`, `95%`).

Speed: Python's `re` is slow when a pattern may start at most positions (a 50 MB transcript would
take seconds). The scanner therefore only looks where a trigger occurs — `/ \\ @`, `:` before a
digit or `//`, a run of 8 hex characters or 6 digits (found with C-level `bytes.find` on a
translated copy of the text), and in conversation text any digit or `.ext` — expands the trigger to
its delimiter-bounded token and classifies that short token.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

REQUIRED_SAFEGUARD_HEADINGS = (
    "## Decisions",
    "## Open TODOs",
    "## Constraints/Rules",
    "## Pending user asks",
    "## Exact identifiers",
)
AUDIT_IDENTIFIER_LIMIT = 12
AUDIT_MESSAGE_WINDOW = 10

# -- byte tables ------------------------------------------------------------------------------
_DELIMITERS = b" \t\n\r\x0b\x0c\"'<>()[]{}`,;|"
_HEX = b"0123456789abcdefABCDEF"
_HEX_TABLE = bytes(0x68 if i in _HEX else 0x2E for i in range(256))  # hex/digit -> 'h'

# Triggers are found with C-level `bytes.find` on translated copies of the text (memchr speed):
# `_TRIGGER_TABLE` maps token delimiters to " " (the same copy bounds tokens), keeps / \\ : @ and maps
# digits to "0" (":0" finds host:port and times); `_HEX_TABLE` maps hex digits to "h" ("hhhhhh" finds
# hashes, uuids, tool-call ids and long numbers).
_TRIGGER_TABLE = bytes(0x20 if i in _DELIMITERS else i if i in b"/\\:@" else 0x30 if 0x30 <= i <= 0x39 else 0x2E
                       for i in range(256))
_STRUCT_NEEDLES = (b"/", b"\\", b"@", b":0")
_CONV_NEEDLES = (b"/", b"\\", b"@", b"0")  # any digit in conversation text
_FILE_EXT_TRIGGER = re.compile(rb"\.(?=[A-Za-z][A-Za-z0-9]{0,7}\b)")
_LEAD_STRIP = "(\"'`[{<*"
_TRAIL_STRIP = ")]\"'`,;:.!?<>*"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]{1,15}://\S+$")
_WIN_PATH = re.compile(r"^[A-Za-z]:\\\S+$")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_PATH = re.compile(r"^(?:~|\.{1,2})?/?[\w.@+~%=-]+(?:/[\w.@+~%=,-]*)+$")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_HOST_PORT = re.compile(r"^(?:[\w-]+(?:\.[\w-]+)+|localhost|\[[0-9a-fA-F:]+\]):\d{2,5}$")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8,}")
_DIGIT_RUN = re.compile(r"\d{6,}")
_PURE_HEX = re.compile(r"^[0-9a-fA-F]{8,}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")
_TIME = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?$")
_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+][\w.]+)?$")
_FILE_EXTS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|json5|md|mdx|txt|yaml|yml|toml|ini|cfg|conf|env|sh|bash|zsh|"
    "ps1|rs|go|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|html|htm|css|scss|sql|sqlite|db|log|csv|tsv|xml|"
    "lock|zst|gz|tgz|tar|zip|pdf|png|jpg|jpeg|gif|svg|webp|ipynb|dockerfile|tf|proto|wasm|bin|patch|diff"
)
_FILE_NAME = re.compile(rf"^[\w][\w.+-]*\.(?:{_FILE_EXTS})$", re.IGNORECASE)
_UNITS = (
    r"ms|us|µs|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|d|days?|weeks?|"
    r"[kKMGT]i?B|[kmgt]b|B|bytes?|%|px|pt|em|rem|tokens?|k|K|M|x|req/s|rps|qps|°C|°F|MHz|GHz|Mbps|Gbps"
)
_NUM_UNIT = re.compile(rf"\d+(?:[.,]\d+)*(?:\s?(?:{_UNITS}))(?![\w%/])")
_NUM_UNIT_FULL = re.compile(rf"^\d+(?:[.,]\d+)*(?:{_UNITS})$")


@dataclass(frozen=True)
class Identifier:
    value: str
    kind: str  # url | path | winpath | email | hostport | hex | number | date | time | ip | version | file | unit


def _classify(token: str, conversational: bool) -> tuple[str, str] | None:
    t = token.lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    if len(t) < 4:
        if conversational and len(t) >= 2 and _NUM_UNIT_FULL.match(t):
            return t, "unit"  # 5ms, 95%
        return None
    if "://" in t:
        return (t, "url") if _URL.match(t) else None
    if t[1:3] == ":\\" and _WIN_PATH.match(t):
        return t, "winpath"
    if "@" in t and _EMAIL.match(t):
        return t, "email"
    if "/" in t and _PATH.match(t):
        segments = [s for s in t.split("/") if s not in ("", "~", ".", "..")]
        absolute = t.startswith(("/", "~/", "./", "../"))
        if (absolute and len(segments) >= 2) or (len(segments) >= 2 and (_EXT.search(t) or len(segments) >= 3)):
            return t, "path"
    if ":" in t and _HOST_PORT.match(t):
        return t, "hostport"
    if conversational:
        if _DATE.match(t):
            return t, "date"
        if _IP.match(t):
            return t, "ip"
        if _VERSION.match(t):
            return t, "version"
        if _TIME.match(t):
            return t, "time"
        if _NUM_UNIT_FULL.match(t):
            return t, "unit"
    hexrun = _HEX_RUN.search(t)
    if hexrun and any(c.isdigit() for c in hexrun.group()) and not hexrun.group().isdigit():
        return t, "hex"
    if _DIGIT_RUN.search(t):
        return t, "number"
    if conversational and "." in t and _FILE_NAME.match(t):
        return t, "file"
    return None


class _Scan:
    """One text, encoded once; tokens are expanded on the delimiter-translated copy."""

    def __init__(self, text: str):
        self.raw = text.encode("utf-8", "surrogatepass")
        self.delim = self.raw.translate(_TRIGGER_TABLE)  # delimiters are b" " in it
        self.n = len(self.raw)

    def token_at(self, pos: int) -> tuple[int, int]:
        start = self.delim.rfind(b" ", 0, pos) + 1
        end = self.delim.find(b" ", pos)
        return start, self.n if end < 0 else end

    def text(self, start: int, end: int) -> str:
        return self.raw[start:end].decode("utf-8", "surrogatepass")


def scan_identifiers(text: str, *, conversational: bool = True) -> list[Identifier]:
    """Every identifier in `text`, in order of first appearance, unique.

    `conversational=False` (tool output) skips the prose-only kinds (dates, times, versions, bare
    file names, numbers with units), which are noise in logs and file dumps and expensive there.
    """
    out: list[Identifier] = []
    seen: set[str] = set()
    for value, kind in iter_identifiers(text, conversational=conversational):
        if value not in seen:
            seen.add(value)
            out.append(Identifier(value, kind))
    return out


_UNSEEN = object()


def iter_identifiers(text: str, *, conversational: bool = True) -> Iterator[tuple[str, str]]:
    """(value, kind) of every identifier occurrence in `text`, in order (repeats included), so a
    caller can also tell where an identifier was mentioned last."""
    if not text:
        return
    scan = _Scan(text)
    raw = scan.raw
    n = scan.n

    def needle_finder(buf: bytes, needle: bytes) -> Callable[[int], int]:
        find = buf.find

        def locate(at: int) -> int:
            found = find(needle, at)
            return n if found < 0 else found
        return locate

    triggers = scan.delim
    finders = [needle_finder(triggers, needle) for needle in (_CONV_NEEDLES if conversational else _STRUCT_NEEDLES)]
    if conversational:
        search = _FILE_EXT_TRIGGER.search

        def find_ext(at: int) -> int:
            m = search(raw, at)
            return m.start() if m else n
        finders.append(find_ext)
    else:  # ids without / : @ in tool output: runs of >= 6 hex/digit characters
        finders.append(needle_finder(raw.translate(_HEX_TABLE), b"hhhhhh"))
    nexts = [f(0) for f in finders]
    memo: dict[bytes, tuple[str, str] | None] = {}  # token bytes -> what it classified as
    pos = 0
    while True:
        p = min(nexts)
        if p >= n:
            break
        start, end = scan.token_at(p)
        pos = end + 1
        chunk = raw[start:end]
        found = memo.get(chunk, _UNSEEN)
        if found is _UNSEEN:
            token = chunk.decode("utf-8", "surrogatepass")
            found = _classify(token, conversational)
            if found is None and conversational and token[:1].isdigit():
                # a number followed by a separate unit word: "20 MB", "1.5 GB" (depends on what
                # follows, so such tokens are never memoised)
                match = _NUM_UNIT.match(raw[start:start + 48].decode("utf-8", "ignore"))
                if match and " " in match.group():
                    found = (match.group(), "unit")
                    pos = start + len(match.group().encode()) + 1
            else:
                memo[chunk] = found
        if found is not None:
            yield found  # type: ignore[misc]
        for k, at in enumerate(nexts):
            if at < pos:
                nexts[k] = finders[k](pos)


def extract_identifiers(text: str, *, conversational: bool = True) -> list[str]:
    return [i.value for i in scan_identifiers(text, conversational=conversational)]


_AUDIT_KINDS = frozenset({"url", "path", "winpath", "hostport", "hex", "number"})


def _normalize_audit(value: str) -> str:
    return value.upper() if _PURE_HEX.match(value) else value


def extract_audit_identifiers(texts: Iterable[str], *, limit: int = AUDIT_IDENTIFIER_LIMIT) -> list[str]:
    """R4.12.5: URLs, absolute POSIX paths (>= 2 segments), Windows paths, host:port, tokens with
    >= 8 hex chars or >= 6 digits; pure-hex upper-cased; length >= 4; unique; the first `limit`."""
    out: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for ident in scan_identifiers(text, conversational=False):
            if ident.kind not in _AUDIT_KINDS:
                continue
            if ident.kind == "path" and not ident.value.startswith("/"):
                continue
            value = _normalize_audit(ident.value)
            if value not in seen:
                seen.add(value)
                out.append(value)
                if len(out) >= limit:
                    return out
    return out


# -- the audit ---------------------------------------------------------------------------------
_STOP_WORDS = frozenset(str.split(
    "a an the and or but if then else of to in on at by for with from into onto about as is are was were be "
    "been being am do does did doing have has had having it its this that these those there here i me my we "
    "our you your he she they them their what which who whom whose when where why how can could would should "
    "will shall may might must please pls just also so not no yes ok okay hi hello hey thanks thank let lets "
    "me us all any some more most very too than up down out over again now"
))
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


def audit_summary(summary: str, *, identifiers: Iterable[str] = (), latest_user_ask: str | None = None,
                  identifier_policy: str = "strict",
                  required_headings: Iterable[str] = REQUIRED_SAFEGUARD_HEADINGS) -> list[str]:
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
        head = ("Fix all issues and include every required section while following the configured "
                "identifier policy.")
    else:
        head = "Fix all issues and include every required section with exact identifiers preserved."
    return f"{head}\n\nQuality check feedback:\nPrevious summary failed quality checks ({', '.join(reasons)})."


@dataclass
class GuardResult:
    summary: str
    attempts: int
    passed: bool
    reasons: list[str] = field(default_factory=list)  # reasons of the accepted summary (empty if passed)


def run_quality_guard(generate: Callable[[str | None], str], audit: Callable[[str], list[str]], *,
                      max_retries: int = 1, enabled: bool = True,
                      identifier_policy: str = "strict") -> GuardResult:
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
