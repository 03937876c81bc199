"""Masking what looks like a secret in text shown to people (search snippets, exports).

One rule set for every front end: `redact(text)` replaces private-key blocks, bearer/basic
authorization values, well-known API-key and token shapes, and the values of `key=`/`"token":`
style assignments with `[REDACTED]`, keeping the label so the reader sees what was hidden.
Patterns are deliberately specific (prefixes, lengths): plain words and ids are left alone.
"""

from __future__ import annotations

import re

MASK = "[REDACTED]"

# (name, pattern, replacement): applied in order; a replacement may keep a labelled prefix (\1).
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        MASK,
    ),
    (
        "authorization-header",
        re.compile(
            r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*)"
            r"[A-Za-z0-9._~+/=-]{8,}"
        ),
        r"\1" + MASK,
    ),
    ("bearer", re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + MASK),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), MASK),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), MASK),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"), MASK),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), MASK),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), MASK),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), MASK),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), MASK),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), MASK),
    ("telegram-bot-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b"), MASK),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (
        "url-credentials",
        re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]{3,}(@)"),
        r"\1" + MASK + r"\2",
    ),
    # `api_key=…`, `"token": "…"`, `password: …`, `SECRET=…`: the value after a secret-named label
    (
        "labelled-secret",
        re.compile(
            r"(?i)((?:[\"']?)[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|client[_-]?secret|"
            r"access[_-]?key|private[_-]?key|auth)[A-Za-z0-9_.-]*[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\[REDACTED\])[^\s\"',;]{6,}"
        ),
        r"\1" + MASK,
    ),
)

RULE_NAMES = tuple(name for name, _, _ in _RULES)


def redact(text: str) -> str:
    """`text` with every secret-looking span replaced by `[REDACTED]`."""
    if not text:
        return text
    for _, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
