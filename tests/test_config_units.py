"""Durations and byte sizes: every example of maintenance.md §1, plus OpenClaw's exact errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openclaw_cli.config.units import (
    format_byte_size,
    format_duration_ms,
    js_string,
    parse_byte_size,
    parse_duration_ms,
)

DURATION_HINT = "Use values like 500ms, 30s, 5m, 2h, or 1h30m."
SIZE_HINT = "Use values like 512kb, 10mb, 1gb, or 500."


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("30d", "ms", 2_592_000_000),
        (30, "d", 2_592_000_000),  # number with pruneAfter's default unit
        ("1.5d", "ms", 129_600_000),
        ("1h30m", "ms", 5_400_000),
        ("24", "h", 86_400_000),  # cron.sessionRetention default unit
        ("0h", "ms", 0),
        ("1d12h", "ms", 129_600_000),
        ("2h0.5m", "ms", 7_230_000),
        ("500", "ms", 500),
        ("  30S ", "ms", 30_000),  # trimmed and lower-cased
        ("2m500ms", "ms", 120_500),
        ("0.5ms", "ms", 1),  # Math.round: halves go up
        ("1.5ms", "ms", 2),
        ("2.5ms", "ms", 3),  # Python's round() would give 2
        (1.5, "d", 129_600_000),
    ],
)
def test_durations(value, unit, expected):
    assert parse_duration_ms(value, unit) == expected


def test_duration_default_unit_is_ms():
    assert parse_duration_ms("250") == 250


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", f"Invalid duration (empty): empty value. {DURATION_HINT}"),
        ("   ", f"Invalid duration (empty): empty value. {DURATION_HINT}"),
        ("30 days", f'Invalid duration: "30 days". {DURATION_HINT}'),
        ("30 d", f'Invalid duration: "30 d". {DURATION_HINT}'),
        ("1h30", f'Invalid duration (each composite segment needs a unit): "1h30". {DURATION_HINT}'),
        ("1h 30m", f'Invalid duration (each composite segment needs a unit): "1h 30m". {DURATION_HINT}'),
        ("-1d", f'Invalid duration (each composite segment needs a unit): "-1d". {DURATION_HINT}'),
        ("2w", f'Invalid duration: "2w". {DURATION_HINT}'),
        ("1y", f'Invalid duration: "1y". {DURATION_HINT}'),
        (True, f'Invalid duration: "true". {DURATION_HINT}'),
        (-5, f'Invalid duration: "-5". {DURATION_HINT}'),
        ("9" * 20 + "d", f'Invalid duration: "{"9" * 20}d". {DURATION_HINT}'),  # not a safe integer
        ("٣d", f'Invalid duration: "٣d". {DURATION_HINT}'),  # non-ASCII digit
    ],
)
def test_duration_errors_have_openclaw_messages(value, message):
    with pytest.raises(ValueError) as info:
        parse_duration_ms(value)
    assert str(info.value) == message


def test_duration_keeps_original_text_in_error():
    with pytest.raises(ValueError, match=r'"  5X "'):
        parse_duration_ms("  5X ")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2gb", 2_147_483_648),
        ("20mb", 20_971_520),
        ("500mb", 524_288_000),
        ("1.5gb", 1_610_612_736),
        ("2GB", 2_147_483_648),
        (1048576, 1_048_576),
        ("512kb", 524_288),
        ("512k", 524_288),
        ("1t", 1024**4),
        ("1tb", 1024**4),
        ("7b", 7),
        ("500", 500),
        (" 3M ", 3 * 1024**2),
        (0, 0),
        (1.5, 2),
    ],
)
def test_byte_sizes(value, expected):
    assert parse_byte_size(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", f"Invalid byte size (empty): empty value. {SIZE_HINT}"),
        ("2 gb", f'Invalid byte size: "2 gb". {SIZE_HINT}'),
        ("2pb", f'Invalid byte size (unknown unit "pb"): "2pb". {SIZE_HINT}'),
        ("lots", f'Invalid byte size: "lots". {SIZE_HINT}'),
        ("-1mb", f'Invalid byte size: "-1mb". {SIZE_HINT}'),
        ("1" * 20 + "tb", f'Invalid byte size: "{"1" * 20}tb". {SIZE_HINT}'),
        (False, f'Invalid byte size: "false". {SIZE_HINT}'),
    ],
)
def test_byte_size_errors_have_openclaw_messages(value, message):
    with pytest.raises(ValueError) as info:
        parse_byte_size(value)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (30, "30"),
        (1.5, "1.5"),
        (2.0, "2"),
        (True, "true"),
        (float("inf"), "Infinity"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
    ],
)
def test_numbers_are_stringified_like_javascript(value, text):
    assert js_string(value) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_duration_format_roundtrip(ms):
    assert parse_duration_ms(format_duration_ms(ms)) == ms


@given(st.integers(min_value=0, max_value=2**50))
def test_byte_size_format_roundtrip(n):
    assert parse_byte_size(format_byte_size(n)) == n


@given(st.text(max_size=12))
def test_parsers_only_raise_value_error(text):
    for parse in (parse_duration_ms, parse_byte_size):
        try:
            result = parse(text)
        except ValueError:
            continue
        assert isinstance(result, int) and result >= 0
