"""Effective settings: G1 maintenance, write locks (env > config > default), profile-L compaction,
cron, reset, gateway and the agent roster."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from openclaw_cli.config import (
    compaction_settings,
    configured_agent_ids,
    context_tokens_default,
    cron_settings,
    default_agent_id,
    default_model,
    dm_scope,
    gateway_settings,
    high_water_entries,
    load_config,
    maintenance_settings,
    max_hold_from_timeout,
    reset_settings,
    validate_config,
    write_lock_settings,
)
from openclaw_cli.errors import ConfigError

DAY = 86_400_000
GB = 1024**3


def cfg(**sections):
    """A validated LoadedConfig from keyword sections (e.g. session={...})."""
    return validate_config(sections, Path("/test/openclaw.json"))


def maint(**keys):
    return maintenance_settings(cfg(session={"maintenance": keys}))


# ---------------------------------------------------------------------------------------------
# session.maintenance (maintenance.md §2.1, G1 + [R])


def test_maintenance_defaults_are_g1():
    settings = maintenance_settings(None)
    assert settings.mode == "enforce"
    assert settings.prune_after_ms == 30 * DAY
    assert settings.max_entries == 500
    assert settings.reset_archive_retention_ms is None  # keep archives
    assert settings.max_disk_bytes == 2 * GB
    assert settings.high_water_bytes == 1_717_986_918
    assert settings.model_run_prune_after_ms == 86_400_000
    assert dataclasses.is_dataclass(settings) and settings.prune_enabled


def test_given_retention_and_disabled_budget():
    settings = maint(resetArchiveRetention="7d", maxDiskBytes=False)
    assert settings.reset_archive_retention_ms == 604_800_000
    assert settings.max_disk_bytes is None and settings.high_water_bytes is None


def test_given_unparseable_budget_d10_makes_it_an_error():
    with pytest.raises(ConfigError) as info:
        maint(maxDiskBytes="lots")
    assert info.value.issues[0]["path"] == "session.maintenance.maxDiskBytes"


def test_conformance_item_8_numeric_prune_after_is_days():
    assert maint(pruneAfter=30).prune_after_ms == 30 * DAY


def test_conformance_item_10_default_high_water():
    assert maint(maxDiskBytes="2gb").high_water_bytes == 1_717_986_918


@pytest.mark.parametrize("value", [0, "0", "0gb"])
def test_zero_disk_budget_disables_it(value):
    settings = maint(maxDiskBytes=value)
    assert settings.max_disk_bytes is None and settings.high_water_bytes is None


def test_high_water_rules():
    assert maint(maxDiskBytes="2gb", highWaterBytes="1gb").high_water_bytes == GB
    assert maint(maxDiskBytes="1gb", highWaterBytes="5gb").high_water_bytes == GB  # min(parsed, max)
    assert maint(maxDiskBytes="1gb", highWaterBytes=0).high_water_bytes == math.floor(GB * 0.8)  # [R]
    assert maint(maxDiskBytes=1).high_water_bytes == 1  # max(1, …)
    assert maint(maxDiskBytes=False, highWaterBytes="1gb").high_water_bytes is None


def test_zero_prune_after_disables_pruning():
    settings = maint(pruneAfter="0d")
    assert settings.prune_after_ms == 0 and not settings.prune_enabled


def test_retention_false_or_zero_keeps_archives():
    assert maint(resetArchiveRetention=False).reset_archive_retention_ms is None
    assert maint(resetArchiveRetention="0d").reset_archive_retention_ms is None
    assert maint(resetArchiveRetention=14).reset_archive_retention_ms == 14 * DAY


def test_other_maintenance_keys():
    settings = maint(mode="warn", maxEntries=5000, pruneAfter="12h")
    assert (settings.mode, settings.max_entries, settings.prune_after_ms) == ("warn", 5000, 12 * 3_600_000)


@pytest.mark.parametrize(
    ("max_entries", "expected"),
    [
        (2, 3),
        (50, 75),
        (500, 550),
        (1, 2),
        (49, 50),
        (1000, 1100),
        (5000, 5500),
        (0, 1),
        (-5, 1),
        (True, 1),
        (2.0, 1),
        (2**53, 1),
    ],
)
def test_high_water_entries(max_entries, expected):
    assert high_water_entries(max_entries) == expected


# ---------------------------------------------------------------------------------------------
# session.writeLock (maintenance.md §2.2)


def test_write_lock_defaults():
    settings = write_lock_settings(None, env={})
    assert (settings.acquire_timeout_ms, settings.stale_ms, settings.max_hold_ms) == (
        60_000,
        1_800_000,
        300_000,
    )


def test_write_lock_config_values():
    config = cfg(session={"writeLock": {"acquireTimeoutMs": 5000, "staleMs": 60_000, "maxHoldMs": 10_000}})
    settings = write_lock_settings(config, env={})
    assert (settings.acquire_timeout_ms, settings.stale_ms, settings.max_hold_ms) == (5000, 60_000, 10_000)


def test_write_lock_env_beats_config():
    config = cfg(session={"writeLock": {"acquireTimeoutMs": 5000, "staleMs": 60_000, "maxHoldMs": 10_000}})
    env = {
        "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS": " 1234 ",
        "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS": "99",
        "OPENCLAW_SESSION_WRITE_LOCK_MAX_HOLD_MS": "77",
    }
    settings = write_lock_settings(config, env=env)
    assert (settings.acquire_timeout_ms, settings.stale_ms, settings.max_hold_ms) == (1234, 99, 77)


@pytest.mark.parametrize("bad", ["", "abc", "0", "-5", "1e3", "12.5", "+7", str(2**53), "Infinityx"])
def test_invalid_env_values_fall_through_to_config(bad):
    config = cfg(session={"writeLock": {"acquireTimeoutMs": 5000, "staleMs": 60_000}})
    env = {"OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS": bad, "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS": bad}
    settings = write_lock_settings(config, env=env)
    assert (settings.acquire_timeout_ms, settings.stale_ms) == (5000, 60_000)


def test_infinity_only_for_acquire_timeout():
    env = {
        "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS": "Infinity",
        "OPENCLAW_SESSION_WRITE_LOCK_STALE_MS": "Infinity",
    }
    settings = write_lock_settings(None, env=env)
    assert settings.acquire_timeout_ms == math.inf
    assert settings.stale_ms == 1_800_000


def test_infinity_in_config(isolated_env):
    isolated_env["config"].write_text("{session: {writeLock: {acquireTimeoutMs: Infinity}}}")
    loaded = load_config(isolated_env["config"])
    assert write_lock_settings(loaded, env={}).acquire_timeout_ms == math.inf
    assert (
        write_lock_settings(
            cfg(session={"writeLock": {"acquireTimeoutMs": "Infinity"}}), env={}
        ).acquire_timeout_ms
        == math.inf
    )
    with pytest.raises(ConfigError, match="session.writeLock.staleMs"):
        cfg(session={"writeLock": {"staleMs": "Infinity"}})
    with pytest.raises(ConfigError, match="session.writeLock.maxHoldMs"):
        cfg(session={"writeLock": {"maxHoldMs": 0}})


def test_write_lock_reads_process_env_by_default(monkeypatch):
    monkeypatch.setenv("OPENCLAW_SESSION_WRITE_LOCK_STALE_MS", "4242")
    assert write_lock_settings(None).stale_ms == 4242


def test_max_hold_from_timeout():
    assert max_hold_from_timeout(60_000) == 300_000
    assert max_hold_from_timeout(600_000) == 720_000
    assert max_hold_from_timeout(math.inf) == 2_147_000_000
    assert max_hold_from_timeout(3_000_000_000) == 2_147_000_000


# ---------------------------------------------------------------------------------------------
# agents.defaults.compaction (compaction-lifecycle.md §4.1, §5.1, profile L)


def test_compaction_defaults_profile_l():
    s = compaction_settings(None)
    assert (s.enabled, s.mode, s.provider) == (True, "default", None)
    assert (s.reserve_tokens, s.reserve_tokens_floor, s.keep_recent_tokens) == (16_384, 20_000, 20_000)
    assert s.keep_recent_tokens_explicit is False
    assert (s.max_history_share, s.recent_turns_preserve, s.identifier_policy) == (0.5, 3, "strict")
    assert (s.quality_guard_enabled, s.quality_guard_max_retries) == (True, 1)
    assert (s.truncate_after_compaction, s.max_active_transcript_bytes, s.mid_turn_precheck_enabled) == (
        False,
        None,
        False,
    )
    assert (s.notify_user, s.timeout_seconds, s.post_compaction_sections) == (False, 180, None)
    mf = s.memory_flush
    assert (mf.enabled, mf.soft_threshold_tokens, mf.force_flush_transcript_bytes, mf.model) == (
        True,
        4000,
        2_097_152,
        None,
    )


def test_compaction_configured():
    s = compaction_settings(
        cfg(
            agents={
                "defaults": {
                    "compaction": {
                        "keepRecentTokens": 8000,
                        "reserveTokensFloor": 0,
                        "maxActiveTranscriptBytes": "20mb",
                        "postCompactionSections": ["Decisions"],
                        "qualityGuard": {"maxRetries": 3},
                        "memoryFlush": {
                            "forceFlushTranscriptBytes": "0",
                            "softThresholdTokens": 8000,
                            "model": "openai/x",
                        },
                    }
                }
            }
        )
    )
    assert (s.keep_recent_tokens, s.keep_recent_tokens_explicit, s.reserve_tokens_floor) == (8000, True, 0)
    assert s.max_active_transcript_bytes == 20 * 1024**2
    assert s.post_compaction_sections == ("Decisions",)
    assert s.quality_guard_max_retries == 3
    assert s.memory_flush.force_flush_transcript_bytes == 0  # 0 disables the forced flush
    assert (s.memory_flush.soft_threshold_tokens, s.memory_flush.model) == (8000, "openai/x")


def test_provider_forces_safeguard_mode():
    assert (
        compaction_settings(cfg(agents={"defaults": {"compaction": {"provider": "mine"}}})).mode
        == "safeguard"
    )
    assert (
        compaction_settings(cfg(agents={"defaults": {"compaction": {"mode": "safeguard"}}})).mode
        == "safeguard"
    )
    assert compaction_settings(cfg(agents={"defaults": {"compaction": {"provider": " "}}})).mode == "default"


@pytest.mark.parametrize(
    ("compaction", "path"),
    [
        ({"keepRecentTokens": 0}, "agents.defaults.compaction.keepRecentTokens"),
        ({"reserveTokens": -1}, "agents.defaults.compaction.reserveTokens"),
        ({"maxHistoryShare": 1.5}, "agents.defaults.compaction.maxHistoryShare"),
        ({"recentTurnsPreserve": 13}, "agents.defaults.compaction.recentTurnsPreserve"),
        ({"qualityGuard": {"maxRetries": 4}}, "agents.defaults.compaction.qualityGuard.maxRetries"),
        ({"identifierPolicy": "loose"}, "agents.defaults.compaction.identifierPolicy"),
        ({"mode": "aggressive"}, "agents.defaults.compaction.mode"),
        ({"postCompactionSections": "Decisions"}, "agents.defaults.compaction.postCompactionSections"),
        (
            {"memoryFlush": {"forceFlushTranscriptBytes": "2 mb"}},
            "agents.defaults.compaction.memoryFlush.forceFlushTranscriptBytes",
        ),
    ],
)
def test_invalid_compaction_values(compaction, path):
    with pytest.raises(ConfigError) as info:
        cfg(agents={"defaults": {"compaction": compaction}})
    assert [issue["path"] for issue in info.value.issues] == [path]


def test_context_tokens_and_model_defaults():
    assert context_tokens_default(None) is None and default_model(None) is None
    config = cfg(
        agents={
            "defaults": {
                "contextTokens": 128_000,
                "model": {"primary": "openai/gpt-5", "fallbacks": ["x/y"]},
            },
            "entries": {"Ops": {"model": "anthropic/claude"}},
            "list": [{"id": "writer", "model": "google/gemini"}],
        }
    )
    assert context_tokens_default(config) == 128_000
    assert default_model(config) == "openai/gpt-5"
    assert default_model(config, "ops") == "anthropic/claude"
    assert default_model(config, "writer") == "google/gemini"
    assert default_model(config, "other") == "openai/gpt-5"


# ---------------------------------------------------------------------------------------------
# cron (maintenance.md §2.3)


def test_cron_defaults():
    s = cron_settings(None)
    assert (s.session_retention_ms, s.run_log_keep_lines, s.run_log_max_bytes) == (
        86_400_000,
        2000,
        2_000_000,
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("24", 86_400_000),
        (48, 172_800_000),
        ("30m", 1_800_000),
        ("1d", 86_400_000),
        (False, None),
        ("0h", None),
    ],
)
def test_cron_session_retention(value, expected):
    assert cron_settings(cfg(cron={"sessionRetention": value})).session_retention_ms == expected


def test_cron_run_log():
    s = cron_settings(cfg(cron={"runLog": {"keepLines": 10, "maxBytes": "2mb"}}))
    assert (s.run_log_keep_lines, s.run_log_max_bytes) == (10, 2_097_152)
    with pytest.raises(ConfigError, match="cron.runLog.keepLines"):
        cfg(cron={"runLog": {"keepLines": 0}})


# ---------------------------------------------------------------------------------------------
# session.reset and dmScope (compaction-lifecycle.md §3.4)


def test_reset_default_is_daily_at_four():
    s = reset_settings(None)
    assert (s.mode, s.at_hour, s.idle_minutes, s.configured) == ("daily", 4, None, False)


def test_legacy_idle_minutes_alone_means_idle_mode():
    s = reset_settings(cfg(session={"idleMinutes": 90}))
    assert (s.mode, s.idle_minutes, s.configured) == ("idle", 90, True)


def test_reset_base_type_and_channel_overrides():
    config = cfg(
        session={
            "reset": {"mode": "daily", "atHour": 6},
            "resetByType": {"group": {"mode": "idle", "idleMinutes": 120}, "dm": {"atHour": 2}},
            "resetByChannel": {"discord": {"mode": "idle", "idleMinutes": 10080}},
            "idleMinutes": 30,
        }
    )
    assert reset_settings(config) == reset_settings(config, "thread")
    base = reset_settings(config)
    assert (base.mode, base.at_hour, base.idle_minutes) == ("daily", 6, 30)
    group = reset_settings(config, "group")
    assert (group.mode, group.at_hour, group.idle_minutes) == ("idle", 6, 120)
    direct = reset_settings(config, "direct")  # legacy `dm` key
    assert (direct.mode, direct.at_hour) == ("daily", 2)
    discord = reset_settings(config, "group", channel="discord")  # the channel override wins
    assert (discord.mode, discord.at_hour, discord.idle_minutes) == ("idle", 4, 10080)


def test_dm_scope():
    assert dm_scope(None) == "main"
    assert dm_scope(cfg(session={"dmScope": "per-channel-peer"})) == "per-channel-peer"


# ---------------------------------------------------------------------------------------------
# gateway


def test_gateway_defaults():
    s = gateway_settings(None, env={})
    assert (s.port, s.port_source, s.bind, s.mode, s.auth_mode, s.token) == (
        18789,
        "default",
        "loopback",
        "local",
        None,
        None,
    )


def test_gateway_port_env_overrides_config():
    config = cfg(gateway={"port": 19000, "bind": "lan", "mode": "remote"})
    assert gateway_settings(config, env={}).port == 19000
    s = gateway_settings(config, env={"OPENCLAW_GATEWAY_PORT": "28789"})
    assert (s.port, s.port_source, s.bind, s.mode) == (28789, "env", "lan", "remote")
    for bad in ("0", "70000", "abc", ""):
        assert gateway_settings(config, env={"OPENCLAW_GATEWAY_PORT": bad}).port == 19000


def test_gateway_token_config_then_env():
    env = {"OPENCLAW_GATEWAY_TOKEN": "from-env", "MY_TOKEN": "from-ref"}
    assert gateway_settings(None, env=env).token == "from-env"
    s = gateway_settings(cfg(gateway={"auth": {"mode": "token", "token": "from-config"}}), env=env)
    assert (s.auth_mode, s.token) == ("token", "from-config")
    assert gateway_settings(cfg(gateway={"auth": {"token": "${MY_TOKEN}"}}), env=env).token == "from-ref"
    ref = {"source": "env", "provider": "default", "id": "MY_TOKEN"}
    assert gateway_settings(cfg(gateway={"auth": {"token": ref}}), env=env).token == "from-ref"
    # An unresolvable reference falls back to the env variable.
    assert gateway_settings(cfg(gateway={"auth": {"token": "${NOPE}"}}), env=env).token == "from-env"
    assert "from-config" not in repr(s)  # secrets stay out of reprs / logs


def test_gateway_password():
    s = gateway_settings(cfg(gateway={"auth": {"password": "pw"}}), env={})
    assert (s.auth_mode, s.password) == ("password", "pw")
    assert gateway_settings(None, env={"OPENCLAW_GATEWAY_PASSWORD": "pw2"}).password == "pw2"


def test_gateway_invalid_values():
    with pytest.raises(ConfigError, match="gateway.port"):
        cfg(gateway={"port": 0})
    with pytest.raises(ConfigError, match="gateway.mode"):
        cfg(gateway={"mode": "cloud"})
    with pytest.raises(ConfigError, match="gateway.auth.token"):
        cfg(gateway={"auth": {"token": 12345}})


# ---------------------------------------------------------------------------------------------
# Agent roster


def test_empty_roster_is_main():
    assert configured_agent_ids(None) == ["main"]
    assert default_agent_id(None) == "main"
    assert configured_agent_ids(cfg(agents={"entries": {}, "list": []})) == ["main"]


def test_roster_from_entries_and_list():
    config = cfg(
        agents={
            "entries": {"Main": {}, "Work Bot": {"name": "Work"}},
            "list": [{"id": "ops"}, {"id": "MAIN"}, {"id": "research", "default": True}],
        }
    )
    assert configured_agent_ids(config) == ["main", "work-bot", "ops", "research"]
    assert default_agent_id(config) == "research"


def test_default_marker_in_entries():
    config = cfg(agents={"entries": {"alpha": {}, "beta": {"default": True}}})
    assert default_agent_id(config) == "beta"


def test_first_configured_agent_is_default_without_marker():
    config = cfg(agents={"list": [{"id": "zeta"}, {"id": "alpha"}]})
    assert configured_agent_ids(config) == ["zeta", "alpha"]
    assert default_agent_id(config) == "zeta"


def test_hostile_agent_ids_are_normalised():
    config = cfg(agents={"entries": {"../../etc": {}}, "list": [{"id": "a/b"}]})
    ids = configured_agent_ids(config)
    assert ids == ["etc", "a-b"]
    assert all("/" not in i and ".." not in i for i in ids)


def test_resolvers_accept_every_config_form(isolated_env):
    raw = {"session": {"maintenance": {"maxEntries": 11}}}
    isolated_env["config"].write_text('{"session": {"maintenance": {"maxEntries": 11}}}')
    loaded = load_config(isolated_env["config"])
    for form in (loaded, loaded.model, raw):
        assert maintenance_settings(form).max_entries == 11
    with pytest.raises(TypeError):
        maintenance_settings(42)


def test_settings_are_frozen():
    settings = maintenance_settings(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_entries = 1  # type: ignore[misc]
