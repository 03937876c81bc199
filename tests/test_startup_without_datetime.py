"""stop 41 (issue 26, the whole `sessions search` command): what a command's start no longer pays
for gives the very answers it replaced — the UTC helpers of `clock` against `datetime`, the agent-id
check against its pattern, a config of no file answering from the defaults without building the
model, and the stdlib JSON reader and string writer taken from `_json` against the `json` package."""

from __future__ import annotations

import json
import pickle
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.clock import iso_ms, utc_ms, utc_strftime
from openclaw_cli.config import (
    agent_roster,
    agents_ownership,
    configured_agent_ids,
    default_agent_id,
    session_store_template,
    write_lock_settings,
)
from openclaw_cli.config.loader import LoadedConfig, default_config, load_config
from openclaw_cli.config.model import OpenClawConfig
from openclaw_cli.ids import _valid_agent_id, normalize_agent_id
from openclaw_cli.search import plainjson
from openclaw_cli.store.archives import format_archive_timestamp, parse_archive_timestamp
from openclaw_cli.store.names import archive_stamp_ms


def _datetime_ms(*fields: int) -> int | None:
    try:
        return int(datetime(*fields, tzinfo=UTC).timestamp()) * 1000  # type: ignore[arg-type,misc]
    except ValueError:
        return None


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except (ValueError, OverflowError, OSError) as error:
        return type(error)


def test_utc_ms_is_datetimes_timestamp_and_refuses_what_it_refuses() -> None:
    edges = (0, 1, 2, 28, 29, 30, 31, 32)
    for year in (0, 1, 4, 99, 100, 400, 1600, 1900, 1970, 2000, 2024, 2026, 2100, 9999, 10000):
        for month in range(0, 14):
            for day in edges:
                for clock in ((0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60), (-1, 0, 0)):
                    fields = (year, month, day, *clock)
                    assert utc_ms(*fields) == _datetime_ms(*fields), fields
    rng = random.Random(41)
    for _ in range(20_000):
        fields = (
            rng.randint(-1, 10_001),
            rng.randint(-1, 13),
            rng.randint(-1, 32),
            rng.randint(-1, 24),
            rng.randint(-1, 60),
            rng.randint(-1, 60),
        )
        assert utc_ms(*fields) == _datetime_ms(*fields), fields


def test_iso_ms_and_utc_strftime_write_what_datetime_writes() -> None:
    def old_iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"

    rng = random.Random(7)
    year_10000 = 253_402_300_800_000
    samples = [0, 1, 999, 1000, 1001, -1, -999, -1000, -1001, year_10000 - 1, year_10000, 2**53, -(2**40)]
    samples += [rng.randint(0, year_10000 + 10_000) for _ in range(20_000)]
    samples += [rng.randint(-(10**13), 10**13) for _ in range(5_000)]
    for ms in samples:
        assert _outcome(iso_ms, ms) == _outcome(old_iso, ms), ms
        for fmt in ("%Y-%m-%dT%H-%M-%S", "%Y-%m-%dT%H:%M:%S."):
            seconds = ms // 1000
            expected = _outcome(lambda s: datetime.fromtimestamp(s, tz=UTC).strftime(fmt), seconds)  # noqa: B023
            assert _outcome(utc_strftime, fmt, seconds) == expected, (fmt, seconds)


def test_archive_names_keep_their_times() -> None:
    rng = random.Random(3)
    for _ in range(2_000):
        ms = rng.randint(0, 253_402_300_799_999)
        stamp = format_archive_timestamp(ms)
        assert stamp == datetime.fromtimestamp(ms // 1000, tz=UTC).strftime("%Y-%m-%dT%H-%M-%S") + (
            f".{ms % 1000:03d}Z"
        )
        assert parse_archive_timestamp(stamp) == ms
        assert archive_stamp_ms(f"x.jsonl.deleted.{stamp}.zst", "deleted") == ms
    for bad in (
        "2026-02-29T00-00-00Z",
        "2026-13-01T00-00-00Z",
        "0000-01-01T00-00-00Z",
        "2026-01-01T24-00-00Z",
    ):
        assert parse_archive_timestamp(bad) is None
        assert archive_stamp_ms(f"x.jsonl.reset.{bad}", "reset") is None
    assert parse_archive_timestamp("2024-02-29T23-59-59.123Z") == _datetime_ms(2024, 2, 29, 23, 59, 59) + 123  # type: ignore[operator]


def test_the_agent_id_check_is_its_pattern() -> None:
    pattern = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE)
    for code in range(0x10000):
        for text in (chr(code), "a" + chr(code), chr(code) + "\n", "a" + chr(code) + "b"):
            assert _valid_agent_id(text) == bool(pattern.match(text)), hex(code)
    rng = random.Random(5)
    alphabet = "aZ09_-.\n \u0130\u0131\u017f\u212a\u00e9\u00df"
    for _ in range(20_000):
        text = "".join(
            rng.choice(alphabet) for _ in range(rng.choice((rng.randint(0, 5), rng.randint(60, 67))))
        )
        assert _valid_agent_id(text) == bool(pattern.match(text)), text
    assert normalize_agent_id(" Main ") == "main" and normalize_agent_id("\u212a") == "\u212a".lower()


def test_a_config_of_no_file_answers_from_the_defaults_without_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS",
        "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS",
        "OPENCLAW_SESSION_WRITE_LOCK_MAX_HOLD_MS",
    ):
        monkeypatch.delenv(name, raising=False)
    lazy = load_config(tmp_path / "openclaw.json")  # no such file
    assert lazy.defaults_only and not lazy.exists
    built = OpenClawConfig()
    for fn in (
        session_store_template,
        agent_roster,
        configured_agent_ids,
        default_agent_id,
        agents_ownership,
    ):
        assert fn(lazy) == fn(built) == fn(None), fn
    assert write_lock_settings(lazy) == write_lock_settings(built)
    env = {
        "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS": "Infinity",
        "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS": "7",
    }
    assert write_lock_settings(lazy, env) == write_lock_settings(built, env)
    assert lazy.defaults_only  # none of them built it
    # the model, when asked for, is the defaults'; the config then equals a built one, pickles alike
    eager = LoadedConfig(path=lazy.path, exists=False, raw={}, model=OpenClawConfig())
    assert default_config(lazy.path) == eager
    assert lazy.model == built and not lazy.defaults_only
    assert pickle.loads(pickle.dumps(default_config(lazy.path))) == eager
    assert repr(default_config(lazy.path)) == repr(eager)
    # a file (even `{}`) builds its model as before
    (tmp_path / "openclaw.json").write_text("{}")
    assert not load_config(tmp_path / "openclaw.json").defaults_only


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, -3e2, true, false, null, "x\\u00e9\\n"]}',
        '  \t\n{"a": 1}\r\n ',
        "[]",
        '"s"',
        "12",
        "",
        "   ",
        '{"a": 1} x',
        '{"a": 1}{"b": 2}',
        '{"a": "tab\there"}',
        '{"a": 1,}',
        '{"a" 1}',
        "[1, 2",
        "nul",
        '"\\ud83d\\ude00"',
        "[" * 50 + "]" * 50,
    ],
)
def test_the_stdlib_reader_reads_as_json_loads(text: str) -> None:
    reader = plainjson._stdlib_json()[1]

    def outcome(fn: Any) -> Any:
        try:
            return fn(text)
        except ValueError:  # json.JSONDecodeError is one
            return ValueError

    assert outcome(reader) == outcome(json.loads)


def test_the_string_writer_is_jsons() -> None:
    from json.encoder import encode_basestring

    write = plainjson._stdlib_json()[0]
    for text in ("", "plain", 'q"uote\\', "\x00\x1f\x7f", "caf\u00e9 \u2028 \U0001f600", "\ud800"):
        assert write(text) == encode_basestring(text)


def test_a_warm_search_builds_no_config_model_nor_imports_sqlite3s_package_or_json(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The modules a command without a config file no longer loads: the config model (its
    defaults are answered without it), `sqlite3`'s package (whose dbapi2 imports datetime: the
    index opens `_sqlite3`'s connection, the same one), the `json` package (plainjson reads and
    writes through `_json`); text output formats times without datetime."""
    from tests.conftest import generate_legacy_state, run_cli
    from tests.test_search_command import _imports_of_search

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    assert run_cli("sessions", "search", "session", "--json").returncode == 0  # the index, built
    for args in (("session", "--json"), ("session turn",), ("zzzz", "--json", "--no-archived")):
        imported = _imports_of_search(*args)
        assert "openclaw_cli.search.engine" in imported
        for module in ("openclaw_cli.config.model", "sqlite3", "sqlite3.dbapi2", "json", "json.decoder"):
            assert module not in imported, (module, args)
        # nor datetime: the hit lines read back (ISO timestamps) are not parsed for a time again
        assert "datetime" not in imported, args
    assert "datetime" not in _imports_of_search("zzzz")  # no line read back, text output


def test_sanitize_text_is_its_two_patterns() -> None:
    """A printable text is returned as is (no control character for either pattern, nothing to
    escape); anything else goes through the patterns, compiled then."""
    from openclaw_cli.output import sanitize_text

    ansi = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
    control = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

    def old(text: str) -> str:
        text = ansi.sub("", text).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        return control.sub("", text)

    for code in range(0x30000):
        for text in (chr(code), "a" + chr(code) + "b", "\x1b[" + chr(code) + "m"):
            assert sanitize_text(text) == old(text), hex(code)
    rng = random.Random(9)
    alphabet = "ab \x1b[]0;m\x07\\\n\r\t\x7f\x9f\u2028\u00e9"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert sanitize_text(text) == old(text), repr(text)


def test_extract_without_the_timestamp_is_extract_but_for_it() -> None:
    from openclaw_cli.search.text import extract

    lines: list[Any] = [
        {
            "type": "message",
            "id": "a1",
            "timestamp": "2026-11-02T10:00:00.123Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "a2",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}], "timestamp": 5},
        },
        {"type": "message", "message": {"role": "toolResult", "toolName": "ls", "content": "out"}},
        {"type": "message", "id": "a4", "message": {"role": "system", "content": "no"}},
        {"type": "session", "id": "s"},
        "not a dict",
    ]
    for n, obj in enumerate(lines, 1):
        full = extract(obj, n, 7)
        quick = extract(obj, n, 7, timestamp=False)
        assert (full is None) == (quick is None)
        if full is not None and quick is not None:
            assert quick == (full[0], full[1], 7, full[3])
