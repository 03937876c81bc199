"""Behaviour releases (spec D23, issue 22): the release facts, the per-store resolution in D23's
order, bad input named with the accepted values, and `status` showing each store's release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openclaw_cli import behavior as bh
from openclaw_cli.behavior import (
    BEHAVIOR_2026_7,
    BEHAVIOR_2026_9_6,
    BEHAVIOR_2026_9_9,
    parse_version,
    release_for_version,
    resolve_behavior,
)
from openclaw_cli.errors import ConfigError, UsageError
from tests.cleanup_support import entry, make_legacy, write_config
from tests.conftest import run_cli


def test_each_release_carries_its_rules() -> None:
    g1, g3, later = BEHAVIOR_2026_7.maintenance, BEHAVIOR_2026_9_6.maintenance, BEHAVIOR_2026_9_9.maintenance
    assert (g1.default_max_entries, g1.default_max_disk_bytes, g1.archive_in_place) == (
        500,
        2 * 1024**3,
        False,
    )
    assert (g3.default_max_entries, g3.default_max_disk_bytes, g3.archive_in_place) == (
        5000,
        10 * 1024**3,
        True,
    )
    assert g3.archive_dashboard_after_ms == 7 * 86_400_000 and g1.archive_dashboard_after_ms is None
    assert not g3.cron_placeholder_sweep and later.cron_placeholder_sweep and later.final_disk_tier
    for release in (BEHAVIOR_2026_9_6, BEHAVIOR_2026_9_9):
        life = release.lifecycle
        assert (
            life.reset_keeps_session_id
            and life.reset_appends_marker
            and life.compact_max_lines_keeps_session_id
        )
    life = BEHAVIOR_2026_7.lifecycle
    assert not (
        life.reset_keeps_session_id or life.reset_appends_marker or life.compact_max_lines_keeps_session_id
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026.9.6", (2026, 9, 6)),
        ("2026.10.1", (2026, 10, 1)),
        ("v2026.9.9", (2026, 9, 9)),
        ("2026.7", (2026, 7, 0)),
        ("2026.9.9-beta.1", (2026, 9, 8)),
        ("2026.9.6+build.7", (2026, 9, 6)),
        (" 2026.9.7 ", (2026, 9, 7)),
        ("latest", None),
        ("2026.13.1", None),
        ("9.6", None),
        ("", None),
        (20260906, None),
        (None, None),
    ],
)
def test_versions_parse_as_openclaw_calendar_versions(text, expected) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("2026.7.1", "2026.7"),
        ("2026.8.21", "2026.7"),
        ("2026.9.6", "2026.9.6"),
        ("2026.9.7", "2026.9.6"),
        ("2026.9.9-beta.2", "2026.9.6"),
        ("2026.9.9", "2026.9.9"),
        ("2026.10.1", "2026.9.9"),
        ("2026.6.30", "2026.7"),
    ],
)
def test_a_version_maps_to_the_newest_release_not_after_it(version: str, release: str) -> None:
    assert release_for_version(version).release == release


def test_resolution_follows_d23_order_first_match_wins() -> None:
    flag = bh.ResolvedBehavior(BEHAVIOR_2026_7, bh.SOURCE_FLAG, "--behavior 2026.7")
    everything = dict(gateway_version="2026.9.9", openclaw_schema=23, last_touched_version="2026.7.1")
    assert resolve_behavior(explicit=flag, **everything) is flag
    got = resolve_behavior(**everything, gateway_url="ws://127.0.0.1:1")
    assert (got.release, got.source) == ("2026.9.9", "gateway") and "ws://127.0.0.1:1" in got.reason
    # our own Gateway announces openclaw-cli's version: not an OpenClaw release, so the next rule decides
    assert resolve_behavior(gateway_version="0.1.0", openclaw_schema=23).release == "2026.9.6"
    assert resolve_behavior(openclaw_schema=24, last_touched_version="2026.7.1").release == "2026.9.9"
    got = resolve_behavior(openclaw_schema=23, last_touched_version="2026.7.1")
    assert (got.release, got.source) == ("2026.9.6", "database")
    got = resolve_behavior(last_touched_version="2026.8.2")
    assert (got.release, got.source, got.reason) == (
        "2026.7",
        "config",
        "config meta.lastTouchedVersion 2026.8.2",
    )
    got = resolve_behavior()
    assert (got.release, got.source) == ("2026.9.9", "default")
    assert got.to_json() == {"release": "2026.9.9", "source": "default", "reason": got.reason}


def test_bad_input_names_the_accepted_values_never_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_behavior(last_touched_version="yesterday", config_path="/x/openclaw.json")
    assert "'yesterday'" in caught.value.message and "2026.7, 2026.9.6, 2026.9.9" in caught.value.message
    with pytest.raises(ConfigError):
        resolve_behavior(last_touched_version=20260906)
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.8")
    with pytest.raises(UsageError) as caught:
        bh.requested()
    assert "OPENCLAW_CLI_BEHAVIOR" in caught.value.message and "2026.9.6" in caught.value.message
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", " 2026.9.6 ")
    assert (bh.requested().release, bh.requested().source) == ("2026.9.6", "env")
    bh.set_requested("2026.7")  # the flag wins over the environment
    assert (bh.requested().release, bh.requested().source) == ("2026.7", "flag")
    with pytest.raises(UsageError):
        bh.set_requested("9.6")


def _status_json(*args: str, env: dict[str, str] | None = None) -> dict:
    proc = run_cli(*args, "status", "--json", "--no-probe", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_status_shows_each_stores_release_and_why(state_dir: Path, imported_fixture_state: Path) -> None:
    make_legacy(state_dir, {"agent:work:direct:a": entry("s-work", 1)}, agent="work")
    write_config(
        state_dir,
        {
            "agents": {"list": [{"id": "main", "default": True}, {"id": "work"}]},
            "meta": {"lastTouchedVersion": "2026.8.21"},
        },
    )
    doc = _status_json()
    by_agent = {s["agent"]: s["behavior"] for s in doc["stores"]}
    assert by_agent["main"]["release"] == "2026.9.6" and by_agent["main"]["source"] == "database"
    assert by_agent["work"] == {
        "release": "2026.7",
        "source": "config",
        "reason": "config meta.lastTouchedVersion 2026.8.21",
    }
    assert doc["maintenance"]["maxEntries"] == 5000  # the default agent's store: 2026.9.6
    doc = _status_json("--behavior", "2026.9.9")
    assert {s["behavior"]["release"] for s in doc["stores"]} == {"2026.9.9"}
    assert {s["behavior"]["reason"] for s in doc["stores"]} == {"--behavior 2026.9.9"}
    text = run_cli("status", "--no-probe", env={"OPENCLAW_CLI_BEHAVIOR": "2026.7"})
    assert text.returncode == 0, text.stderr
    assert "rules: OpenClaw 2026.7 (OPENCLAW_CLI_BEHAVIOR=2026.7)" in text.stdout


def test_status_and_cleanup_on_a_bad_last_touched_version(state_dir: Path) -> None:
    make_legacy(state_dir, {"agent:main:direct:a": entry("s-a", 1)})
    write_config(state_dir, {"meta": {"lastTouchedVersion": "soon"}})
    doc = _status_json()
    assert doc["stores"][0]["behavior"]["release"] is None
    assert "not an OpenClaw version" in doc["stores"][0]["behavior"]["reason"]
    proc = run_cli("sessions", "cleanup", "--dry-run", "--json")
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert "meta.lastTouchedVersion" in error["message"] and "2026.9.6" in error["message"]
    # an explicit release needs no lastTouchedVersion: the run goes ahead
    assert run_cli("--behavior", "2026.7", "sessions", "cleanup", "--dry-run", "--json").returncode == 0


def test_an_unknown_behavior_flag_is_a_usage_error_naming_the_releases(state_dir: Path) -> None:
    for argv in (
        ("--behavior", "2026.8", "status"),
        ("sessions", "cleanup", "--dry-run", "--behavior", "new"),
    ):
        proc = run_cli(*argv)
        assert proc.returncode == 2
        assert "2026.7, 2026.9.6, 2026.9.9" in proc.stderr
