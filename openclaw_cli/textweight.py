"""The weighted character count behind every token estimate (spec D7, R4.4.1, R4.4.4): ASCII
counts 1 per character (chars/4), other scripts what cl100k spends on them, in quarter tokens, by
the UTF-8 length class of each character (see `compaction.tokens` for the measured classes). A
base module so the SQLite store's write-time estimate and compaction's estimate are one figure."""

from __future__ import annotations


def _utf8_weight(lead: int) -> int:
    """Quarter tokens of a character whose UTF-8 encoding starts with byte `lead` (see the module doc);
    continuation bytes weigh 0 so each character is counted once."""
    if lead < 0x80:
        return 1
    if lead < 0xC0:
        return 0  # continuation byte
    if lead < 0xCE:
        return 2  # U+0080-U+037F: Latin-1 supplement, Latin extended, IPA, combining marks
    if lead < 0xD0:
        return 4  # Greek
    if lead < 0xD5:
        return 2  # Cyrillic
    if lead < 0xD8:
        return 4  # Armenian, Hebrew
    if lead < 0xDC:
        return 3  # Arabic
    if lead < 0xE0:
        return 4  # Syriac, Thaana, NKo, ...
    if lead < 0xF0:
        return 4  # the rest of the BMP: CJK, kana, Hangul, Indic, Thai, symbols
    return 12  # supplementary planes: emoji, rare CJK


_WEIGHT_TABLE = bytes(_utf8_weight(b) for b in range(256))
_WEIGHTS = tuple(sorted({w for w in _WEIGHT_TABLE if w}))


def weighted_chars(text: str) -> int:
    """Characters as the estimate counts them: `len(text)` for ASCII, non-Latin scripts weighted."""
    if text.isascii():
        return len(text)
    classes = text.encode("utf-8", "surrogatepass").translate(_WEIGHT_TABLE)
    return sum(w * classes.count(w.to_bytes(1, "little")) for w in _WEIGHTS)
