"""Loading openclaw.json: JSON5, file errors, strict validation (spec D10), warnings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli

from openclaw_cli.config import load_config, maintenance_settings, validate_config
from openclaw_cli.config.legacy_keys import PARENT_FORK_MAX_TOKENS_MESSAGE, ROTATE_BYTES_MESSAGE
from openclaw_cli.errors import ConfigError, ExitCode
from openclaw_cli.paths import resolve_paths


def write_config(isolated_env, text: str | bytes) -> Path:
    path: Path = isolated_env["config"]
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def load(isolated_env, text: str | bytes, **kwargs):
    write_config(isolated_env, text)
    return load_config(resolve_paths(), **kwargs)


def config_error(isolated_env, text: str | bytes) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(isolated_env, text)
    assert info.value.exit_code == ExitCode.CONFIG
    return info.value


# ---------------------------------------------------------------------------------------------
# Reading and parsing


def test_missing_file_gives_defaults(isolated_env):
    loaded = load_config(resolve_paths())
    assert loaded.exists is False
    assert loaded.raw == {}
    assert loaded.warnings == [] and loaded.valid
    assert loaded.path == isolated_env["config"]
    assert maintenance_settings(loaded).max_entries == 500


def test_accepts_a_plain_path(isolated_env):
    path = write_config(isolated_env, '{"session": {"maintenance": {"maxEntries": 7}}}')
    assert load_config(path).model.session.maintenance.max_entries == 7


def test_json5_syntax(isolated_env):
    loaded = load(
        isolated_env,
        """
        // OpenClaw accepts JSON5
        {
          session: {
            /* block comment */
            maintenance: { mode: 'warn', pruneAfter: "14d", maxEntries: 0x40, },
          },
          gateway: { port: +18790, },
        }
        """,
    )
    m = loaded.model.session.maintenance
    assert (m.mode, m.prune_after, m.max_entries) == ("warn", 14 * 86_400_000, 64)
    assert loaded.model.gateway.port == 18790
    assert loaded.exists and loaded.valid
    assert loaded.raw["session"]["maintenance"]["pruneAfter"] == "14d"


def test_utf8_bom_is_accepted(isolated_env):
    loaded = load(isolated_env, b'\xef\xbb\xbf{"session": {"dmScope": "per-peer"}}')
    assert loaded.model.session.dm_scope == "per-peer"


def test_empty_file_means_defaults_with_a_warning(isolated_env):
    loaded = load(isolated_env, "  \n")
    assert loaded.exists and loaded.raw == {}
    assert loaded.warnings and "is empty" in loaded.warnings[0]


def test_unparseable_file_names_file_and_position(isolated_env):
    error = config_error(isolated_env, "{\n  session: {maintenance: {mode: 'warn'}\n  oops\n}")
    path = str(isolated_env["config"])
    assert error.message.startswith(f"Failed to parse config file {path}: line 3, column 3:")
    assert error.path == path
    assert error.to_json()["error"]["type"] == "config_error"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[1, 2]", "an array"),
        ('"text"', "a string"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ],
)
def test_root_must_be_an_object(isolated_env, text, found):
    error = config_error(isolated_env, text)
    assert "top level must be a JSON object" in error.message
    assert str(isolated_env["config"]) in error.message
    assert found in error.message


def test_not_utf8_is_a_config_error(isolated_env):
    error = config_error(isolated_env, b'{"a": "\xff\xfe"}')
    assert "not UTF-8" in error.message and "offset 7" in error.message


def test_deeply_nested_file_is_a_config_error(isolated_env):
    error = config_error(isolated_env, "{a:" + "[" * 50_000 + "]" * 50_000 + "}")
    assert "nested too deeply" in error.message


def test_directory_instead_of_file(isolated_env):
    isolated_env["config"].mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(resolve_paths())


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(isolated_env):
    path = write_config(isolated_env, "{}")
    path.chmod(0)
    with pytest.raises(ConfigError, match="Cannot read config file"):
        load_config(resolve_paths())


def test_non_strict_load_reports_parse_errors_instead_of_raising(isolated_env):
    loaded = load(isolated_env, "{nope", ignore_errors=True)
    assert not loaded.valid and loaded.exists
    assert loaded.errors[0]["message"].startswith("Failed to parse config file")
    assert maintenance_settings(loaded).max_entries == 500


# ---------------------------------------------------------------------------------------------
# Strict validation (D10)


def test_conformance_item_9_bad_disk_budget_is_a_config_error(isolated_env):
    # maintenance.md §13 item 9 used to disable the budget silently; D10 makes it an error.
    error = config_error(isolated_env, '{"session": {"maintenance": {"maxDiskBytes": "lots"}}}')
    assert error.message.splitlines()[0] == (
        'Invalid config value at session.maintenance.maxDiskBytes: "lots" (not a byte size: use a number with b, '
        'kb, mb, gb or tb, such as 512kb, 10mb or 2gb). Example: "2gb"'
    )
    assert error.message.splitlines()[-1] == f"Config file: {isolated_env['config']}"
    assert error.issues == [
        {
            "path": "session.maintenance.maxDiskBytes",
            "message": '"lots" (not a byte size: use a number with b, kb, mb, gb or tb, such as 512kb, 10mb or '
            '2gb). Example: "2gb"',
        }
    ]
    assert error.to_json()["issues"] == error.issues


def test_every_issue_is_collected(isolated_env):
    config = {
        "session": {
            "maintenance": {
                "mode": "always",
                "pruneAfter": "30 days",
                "maxEntries": -3,
                "highWaterBytes": [],
            },
            "writeLock": {"staleMs": 2.5},
            "reset": {"atHour": 25},
            "dmScope": "everyone",
        },
        "agents": {
            "defaults": {"compaction": {"keepRecentTokens": "lots", "memoryFlush": {"enabled": "yes"}}}
        },
        "cron": {"sessionRetention": True},
        "gateway": {"port": "18789"},
    }
    error = config_error(isolated_env, json.dumps(config))
    by_path = {issue["path"]: issue["message"] for issue in error.issues}
    assert set(by_path) == {
        "session.maintenance.mode",
        "session.maintenance.pruneAfter",
        "session.maintenance.maxEntries",
        "session.maintenance.highWaterBytes",
        "session.writeLock.staleMs",
        "session.reset.atHour",
        "session.dmScope",
        "agents.defaults.compaction.keepRecentTokens",
        "agents.defaults.compaction.memoryFlush.enabled",
        "cron.sessionRetention",
        "gateway.port",
    }
    assert (
        by_path["session.maintenance.mode"]
        == '"always" (expected one of "enforce", "warn"). Example: "enforce"'
    )
    # the value once, then what a duration looks like (days included), then this key's example
    assert by_path["session.maintenance.pruneAfter"] == (
        '"30 days" (not a duration: use a number with ms, s, m, h or d, such as 30s, 5m, 2h, 30d or 1h30m). '
        'Example: "30d"'
    )
    assert by_path["session.maintenance.pruneAfter"].endswith('Example: "30d"')
    assert by_path["session.maintenance.maxEntries"] == "-3 (must be positive). Example: 500"
    assert by_path["session.writeLock.staleMs"] == "2.5 (expected an integer). Example: 1800000"
    assert by_path["session.reset.atHour"] == "25 (must be at most 23). Example: 4"
    assert by_path["gateway.port"] == '"18789" (expected an integer, got a string). Example: 18789'
    assert by_path["cron.sessionRetention"].startswith("true (expected a duration or false")
    # One sentence per issue in the message, then the file.
    for path in by_path:
        assert f"Invalid config value at {path}: " in error.message


@pytest.mark.parametrize(
    ("maintenance", "path"),
    [
        ({"pruneAfter": False}, "session.maintenance.pruneAfter"),  # false only where OpenClaw allows it
        ({"maxEntries": False}, "session.maintenance.maxEntries"),
        ({"maxEntries": 0}, "session.maintenance.maxEntries"),
        ({"maxEntries": 2.5}, "session.maintenance.maxEntries"),
        ({"maxEntries": "500"}, "session.maintenance.maxEntries"),
        ({"maxEntries": True}, "session.maintenance.maxEntries"),
        ({"highWaterBytes": False}, "session.maintenance.highWaterBytes"),
        ({"highWaterBytes": -1}, "session.maintenance.highWaterBytes"),
        ({"maxDiskBytes": True}, "session.maintenance.maxDiskBytes"),
        ({"maxDiskBytes": "2 gb"}, "session.maintenance.maxDiskBytes"),
        ({"resetArchiveRetention": "-1d"}, "session.maintenance.resetArchiveRetention"),
        ({"resetArchiveRetention": "false"}, "session.maintenance.resetArchiveRetention"),
        ({"mode": "Enforce"}, "session.maintenance.mode"),
    ],
)
def test_invalid_maintenance_values(isolated_env, maintenance, path):
    error = config_error(isolated_env, json.dumps({"session": {"maintenance": maintenance}}))
    assert [issue["path"] for issue in error.issues] == [path]
    assert "Example: " in error.issues[0]["message"]


def test_false_disables_where_openclaw_allows_it(isolated_env):
    loaded = load(
        isolated_env,
        '{"session": {"maintenance": {"maxDiskBytes": false, "resetArchiveRetention": false}},'
        ' "cron": {"sessionRetention": false}}',
    )
    m = loaded.model.session.maintenance
    assert m.max_disk_bytes is False and m.reset_archive_retention is False
    assert loaded.model.cron.session_retention is False


def test_blank_duration_and_size_mean_unset(isolated_env):
    loaded = load(isolated_env, '{"session": {"maintenance": {"pruneAfter": " ", "maxDiskBytes": ""}}}')
    settings = maintenance_settings(loaded)
    assert settings.prune_after_ms == 30 * 86_400_000 and settings.max_disk_bytes == 2 * 1024**3


def test_null_means_unset(isolated_env):
    loaded = load(
        isolated_env, '{"session": {"maintenance": null, "writeLock": {"staleMs": null}}, "cron": null}'
    )
    assert loaded.valid
    assert maintenance_settings(loaded).max_entries == 500
    assert loaded.model.session.write_lock.stale_ms is None


def test_section_of_the_wrong_type(isolated_env):
    error = config_error(
        isolated_env, '{"session": {"maintenance": "enforce"}, "agents": {"list": {"id": "x"}}}'
    )
    by_path = {issue["path"]: issue["message"] for issue in error.issues}
    assert by_path["session.maintenance"].startswith('"enforce" (expected an object). Example: {')
    assert by_path["agents.list"].startswith('{"id": "x"} (expected an array)')


def test_agent_list_entries_need_an_id(isolated_env):
    error = config_error(
        isolated_env, '{"agents": {"list": [{"id": "main"}, {"default": true}, {"id": "  "}]}}'
    )
    assert error.issues == [
        {"path": "agents.list[1].id", "message": 'required key is missing. Example: "main"'},
        {"path": "agents.list[2].id", "message": '"  " (must not be blank). Example: "main"'},
    ]


def test_long_bad_values_are_shortened(isolated_env):
    error = config_error(isolated_env, json.dumps({"session": {"maintenance": {"maxDiskBytes": "x" * 500}}}))
    shown = error.issues[0]["message"].split(" (")[0]
    assert len(shown) <= 80 and shown.endswith("…")


def test_non_strict_load_keeps_valid_keys_and_defaults_bad_ones(isolated_env):
    loaded = load(
        isolated_env,
        '{"session": {"maintenance": {"maxEntries": 42, "maxDiskBytes": "lots", "mode": "warn"}},'
        ' "agents": {"list": [{"id": "ops"}, 7]}}',
        strict=False,
    )
    assert not loaded.valid
    assert [e["path"] for e in loaded.errors] == ["session.maintenance.maxDiskBytes", "agents.list[1]"]
    settings = maintenance_settings(loaded)
    assert (settings.max_entries, settings.mode, settings.max_disk_bytes) == (42, "warn", 2 * 1024**3)
    assert [a.id for a in loaded.model.agents.agent_list] == ["ops"]


def test_validate_config_on_a_parsed_dict():
    loaded = validate_config({"session": {"maintenance": {"maxEntries": 3}}}, Path("/nowhere/openclaw.json"))
    assert loaded.model.session.maintenance.max_entries == 3


# ---------------------------------------------------------------------------------------------
# Unknown keys and warnings


def test_unknown_keys_outside_modelled_sections_are_ignored(isolated_env):
    loaded = load(
        isolated_env,
        json.dumps(
            {
                "channels": {"telegram": {"botToken": "x"}},
                "skills": {"entries": {"a": {"enabled": False}}},
                "session": {
                    "sendPolicy": {"default": "allow"},
                    "threadBindings": {"enabled": True},
                    "writeLock": {"someday": 1},
                },
                "agents": {
                    "defaults": {"workspace": "~/w", "heartbeat": {"every": "1h"}},
                    "entries": {"main": {"workspace": "~/w", "tools": {}}},
                },
                "gateway": {"controlUi": {"enabled": True}},
                "meta": {"lastTouchedVersion": "2026.9.6"},
            }
        ),
    )
    assert loaded.valid and loaded.warnings == []


def test_unknown_keys_in_maintenance_and_compaction_are_warnings(isolated_env):
    loaded = load(
        isolated_env,
        json.dumps(
            {
                "session": {"maintenance": {"pruneAftr": "7d", "coldStorage": {"enabled": True}}},
                "agents": {
                    "defaults": {"compaction": {"keepRecent": 1, "memoryFlush": {"softThreshold": 1}}}
                },
            }
        ),
    )
    assert loaded.valid
    assert loaded.warnings == [
        "Unknown key session.maintenance.pruneAftr is ignored.",
        "session.maintenance.coldStorage belongs to a later OpenClaw release and is ignored by openclaw-cli.",
        "Unknown key agents.defaults.compaction.keepRecent is ignored.",
        "Unknown key agents.defaults.compaction.memoryFlush.softThreshold is ignored.",
    ]


def test_legacy_keys_are_warnings_with_openclaw_texts(isolated_env):
    loaded = load(
        isolated_env,
        '{"session": {"parentForkMaxTokens": 50000, "maintenance": {"rotateBytes": "10mb", "maxEntries": 9}}}',
    )
    assert loaded.valid
    assert loaded.warnings == [ROTATE_BYTES_MESSAGE, PARENT_FORK_MAX_TOKENS_MESSAGE]
    assert ROTATE_BYTES_MESSAGE == (
        'session.maintenance.rotateBytes is deprecated and ignored; run "openclaw doctor --fix" to remove it.'
    )
    assert maintenance_settings(loaded).max_entries == 9


def test_prune_days_is_a_legacy_alias(isolated_env):
    loaded = load(isolated_env, '{"session": {"maintenance": {"pruneDays": 7}}}')
    assert maintenance_settings(loaded).prune_after_ms == 7 * 86_400_000
    assert loaded.warnings == [
        'session.maintenance.pruneDays was renamed to pruneAfter. Run "openclaw doctor --fix".'
    ]
    both = load(isolated_env, '{"session": {"maintenance": {"pruneDays": 7, "pruneAfter": "2d"}}}')
    assert maintenance_settings(both).prune_after_ms == 2 * 86_400_000


def test_zero_values_are_explained(isolated_env):
    loaded = load(
        isolated_env,
        '{"session": {"maintenance": {"pruneAfter": "0d", "resetArchiveRetention": 0, "maxDiskBytes": "0",'
        ' "highWaterBytes": 0}}}',
    )
    text = "\n".join(loaded.warnings)
    assert "pruneAfter is a zero duration; age-based pruning is disabled" in text
    assert "resetArchiveRetention is a zero duration" in text and "kept" in text
    assert "maxDiskBytes is 0; the disk budget is disabled" in text
    assert "highWaterBytes is 0" in text


# ---------------------------------------------------------------------------------------------
# Through the real command line


def test_cli_reports_a_broken_config_without_traceback(isolated_env):
    write_config(isolated_env, "{session: {maintenance: {mode: 'warn'}}")  # missing brace
    result = run_cli("sessions", "--json")
    assert result.returncode == ExitCode.CONFIG
    assert "Traceback" not in result.stderr + result.stdout
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False and envelope["error"]["type"] == "config_error"
    assert "Failed to parse config file" in envelope["error"]["message"]


def test_cli_reports_an_invalid_value_with_key_and_example(isolated_env):
    write_config(isolated_env, '{"session": {"maintenance": {"maxDiskBytes": "lots"}}}')
    result = run_cli("sessions", "--json")
    assert result.returncode == ExitCode.CONFIG
    envelope = json.loads(result.stdout)
    assert envelope["issues"][0]["path"] == "session.maintenance.maxDiskBytes"
    assert 'Example: "2gb"' in envelope["error"]["message"]
    assert "Traceback" not in result.stderr
