"""Retired config keys: `legacy_key_findings` (read-only) and `fix_legacy_config` (doctor --fix)."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest

from openclaw_cli.config import fix_legacy_config, legacy_key_findings, load_config
from openclaw_cli.config.legacy_keys import (
    PARENT_FORK_MAX_TOKENS_MESSAGE,
    PRUNE_DAYS_MESSAGE,
    RESET_BY_TYPE_DM_MESSAGE,
    ROTATE_BYTES_MESSAGE,
)
from openclaw_cli.errors import ConfigError, RefusedError

LEGACY_JSON5 = """// my config
{
  gateway: { port: 18789, },  // trailing comma
  session: {
    parentForkMaxTokens: 50000,
    maintenance: {
      mode: 'enforce',
      rotateBytes: "10mb",
      maxEntries: 500,
    },
  },
}
"""


@pytest.fixture
def config_path(isolated_env) -> Path:
    return isolated_env["config"]


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def test_findings_are_read_only_and_use_openclaw_texts():
    raw = {
        "session": {
            "parentForkMaxTokens": 1,
            "maintenance": {"rotateBytes": 1, "pruneDays": 3},
            "resetByType": {"dm": {}},
        }
    }
    before = copy.deepcopy(raw)
    assert legacy_key_findings(raw) == [
        ROTATE_BYTES_MESSAGE,
        PARENT_FORK_MAX_TOKENS_MESSAGE,
        PRUNE_DAYS_MESSAGE,
        RESET_BY_TYPE_DM_MESSAGE,
    ]
    assert raw == before
    assert PARENT_FORK_MAX_TOKENS_MESSAGE == (
        'session.parentForkMaxTokens was removed; parent fork sizing is automatic. Run "openclaw doctor --fix" '
        "to remove it."
    )
    assert legacy_key_findings({}) == [] and legacy_key_findings({"session": 3}) == []


def test_fix_removes_legacy_keys_after_a_byte_identical_backup(config_path):
    config_path.write_text(LEGACY_JSON5)
    original = config_path.read_bytes()

    changes = fix_legacy_config(config_path)

    assert changes == [
        "Removed deprecated session.maintenance.rotateBytes.",
        "Removed session.parentForkMaxTokens; parent fork sizing is automatic.",
    ]
    backup = config_path.with_name("openclaw.json.bak")
    assert backup.read_bytes() == original
    text = config_path.read_text()
    assert text.endswith("\n")
    assert json.loads(text) == {
        "gateway": {"port": 18789},
        "session": {"maintenance": {"mode": "enforce", "maxEntries": 500}},
    }
    assert text.startswith('{\n  "gateway": {\n    "port": 18789\n  },')  # 2-space JSON, key order kept
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert not [n for n in siblings(config_path) if n.endswith(".tmp")]
    # The rewritten config no longer warns.
    assert load_config(config_path).warnings == []


def test_existing_backups_are_never_overwritten(config_path):
    config_path.with_name("openclaw.json.bak").write_text("first backup")
    config_path.with_name("openclaw.json.bak.1").write_text("second backup")
    config_path.write_text('{"session": {"parentForkMaxTokens": 1}}')
    original = config_path.read_bytes()

    assert fix_legacy_config(config_path) == [
        "Removed session.parentForkMaxTokens; parent fork sizing is automatic."
    ]

    assert config_path.with_name("openclaw.json.bak").read_text() == "first backup"
    assert config_path.with_name("openclaw.json.bak.1").read_text() == "second backup"
    assert config_path.with_name("openclaw.json.bak.2").read_bytes() == original


def test_clean_config_is_a_no_op(config_path):
    config_path.write_text("{session: {maintenance: {maxEntries: 5}}} // keep my comment\n")
    os.utime(config_path, (1_000_000, 1_000_000))
    before = (config_path.read_bytes(), config_path.stat().st_mtime_ns, siblings(config_path))

    assert fix_legacy_config(config_path) == []

    assert (config_path.read_bytes(), config_path.stat().st_mtime_ns, siblings(config_path)) == before


def test_missing_config_is_a_no_op(config_path):
    assert fix_legacy_config(config_path) == []
    assert not config_path.exists()


def test_prune_days_moves_to_prune_after_in_place(config_path):
    config_path.write_text('{"session": {"maintenance": {"mode": "warn", "pruneDays": 14, "maxEntries": 9}}}')
    assert fix_legacy_config(config_path) == [
        "Moved session.maintenance.pruneDays → session.maintenance.pruneAfter."
    ]
    maintenance = json.loads(config_path.read_text())["session"]["maintenance"]
    assert list(maintenance.items()) == [("mode", "warn"), ("pruneAfter", 14), ("maxEntries", 9)]
    loaded = load_config(config_path)
    assert loaded.model.session.maintenance.prune_after == 14 * 86_400_000 and loaded.warnings == []


def test_prune_days_removed_when_prune_after_is_set(config_path):
    config_path.write_text('{"session": {"maintenance": {"pruneAfter": "2d", "pruneDays": 14}}}')
    assert fix_legacy_config(config_path) == [
        "Removed session.maintenance.pruneDays (pruneAfter already set)."
    ]
    assert json.loads(config_path.read_text())["session"]["maintenance"] == {"pruneAfter": "2d"}


def test_reset_by_type_dm_becomes_direct(config_path):
    config_path.write_text('{"session": {"resetByType": {"dm": {"mode": "idle"}, "group": {}}}}')
    assert fix_legacy_config(config_path) == ["Moved session.resetByType.dm → session.resetByType.direct."]
    assert json.loads(config_path.read_text())["session"]["resetByType"] == {
        "direct": {"mode": "idle"},
        "group": {},
    }


def test_every_migration_in_openclaw_order(config_path):
    config_path.write_text(
        json.dumps(
            {
                "session": {
                    "parentForkMaxTokens": 1,
                    "resetByType": {"dm": {}, "direct": {"mode": "daily"}},
                    "maintenance": {"rotateBytes": 1, "pruneDays": 3},
                }
            }
        )
    )
    assert fix_legacy_config(config_path) == [
        "Moved session.maintenance.pruneDays → session.maintenance.pruneAfter.",
        "Removed session.resetByType.dm (direct already set).",
        "Removed deprecated session.maintenance.rotateBytes.",
        "Removed session.parentForkMaxTokens; parent fork sizing is automatic.",
    ]


def test_infinity_and_unicode_survive_the_rewrite(config_path):
    config_path.write_text(
        "{session: {parentForkMaxTokens: 1, writeLock: {acquireTimeoutMs: Infinity}, "
        "store: 'café/{agentId}'}}"
    )
    fix_legacy_config(config_path)
    loaded = load_config(config_path)
    assert loaded.model.session.write_lock.acquire_timeout_ms == float("inf")
    assert loaded.model.session.store == "café/{agentId}"


def test_unparseable_config_is_an_error_and_writes_nothing(config_path):
    config_path.write_text("{session: {rotateBytes: 1")
    before = siblings(config_path)
    with pytest.raises(ConfigError, match="Failed to parse config file"):
        fix_legacy_config(config_path)
    assert siblings(config_path) == before and config_path.read_text() == "{session: {rotateBytes: 1"


def test_symlinked_config_is_refused(config_path, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text('{"session": {"parentForkMaxTokens": 1}}')
    config_path.symlink_to(target)
    with pytest.raises(RefusedError, match="symbolic link"):
        fix_legacy_config(config_path)
    assert config_path.is_symlink()
    assert target.read_text() == '{"session": {"parentForkMaxTokens": 1}}'
    assert not config_path.with_name("openclaw.json.bak").exists()


def test_config_changed_during_fix_is_not_overwritten(config_path, monkeypatch):
    import openclaw_cli.config.legacy_keys as legacy_keys

    config_path.write_text('{"session": {"parentForkMaxTokens": 1}}')
    real_backup = legacy_keys._write_backup

    def backup_then_someone_edits(path, data):
        written = real_backup(path, data)
        path.write_text('{"edited": "by hand meanwhile"}')
        return written

    monkeypatch.setattr(legacy_keys, "_write_backup", backup_then_someone_edits)
    with pytest.raises(ConfigError, match="changed while it was being fixed"):
        fix_legacy_config(config_path)
    assert config_path.read_text() == '{"edited": "by hand meanwhile"}'
