"""The `openclaw sessions cleanup` / `openclaw cleanup` command line: flags, parent options,
selection errors, JSON shapes and envelopes, text reports (real subprocesses)."""

from __future__ import annotations

import json

import pytest
from cleanup_support import (
    DAY,
    cli,
    cli_json,
    entry,
    load_store,
    maintenance_config,
    make_legacy,
    now_ms,
    release_2026_7,  # noqa: F401 - the fixture, used by pytestmark
    sessions_dir,
    tree_digest,
    write_config,
)
from conftest import OPENCLAW_FIXTURE

pytestmark = pytest.mark.usefixtures("release_2026_7")  # G1 rules: written against 2026.7 (D23)

FIXTURE_KEYS = list(json.loads((OPENCLAW_FIXTURE / "outputs" / "cleanup-dry-run.json").read_text()))


@pytest.fixture
def small_store(state_dir):
    now = now_ms()
    entries = {
        "agent:main:main": entry("m", now, label="\x1b[31mAlert\nInjected", model="gpt-5"),
        "agent:main:old": entry("o", now - 40 * DAY, label="Cron: daily"),
        "agent:main:recent": entry("r", now - 3_600_000, label="Cron: daily"),
    }
    make_legacy(state_dir, entries)
    maintenance_config(state_dir, pruneAfter="30d")
    return entries


def test_json_summary_keys_in_openclaw_order(small_store, state_dir):
    code, doc, _ = cli_json("sessions", "cleanup", "--dry-run", "--json")
    assert code == 0
    assert list(doc) == FIXTURE_KEYS
    assert (doc["beforeCount"], doc["afterCount"], doc["pruned"]) == (3, 2, 1)
    assert list(doc["unreferencedArtifacts"]) == ["scannedFiles", "removedFiles", "freedBytes", "olderThanMs"]
    code, applied, _ = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert list(applied) == [*FIXTURE_KEYS, "applied", "appliedCount"]
    assert applied["applied"] is True and applied["appliedCount"] == 2


def test_top_level_cleanup_is_the_same_command(small_store, state_dir):
    code1, doc1, _ = cli_json("sessions", "cleanup", "--dry-run", "--json")
    code2, doc2, _ = cli_json("cleanup", "--dry-run", "--json")
    assert code1 == code2 == 0 and doc1 == doc2


def test_parent_options_are_inherited_or_rejected(small_store, state_dir):
    code, doc, _ = cli_json("sessions", "--json", "--agent", "main", "cleanup", "--dry-run")
    assert code == 0 and doc["agentId"] == "main"
    proc = cli("sessions", "--active", "5", "cleanup", "--dry-run")
    assert proc.returncode == 1
    assert (
        "`sessions cleanup` does not support the parent `sessions` option --active; session-list filters "
        "cannot scope session maintenance."
    ) in proc.stderr
    code, doc, _ = cli_json("sessions", "--limit", "5", "--verbose", "--json", "cleanup", "--dry-run")
    assert code == 1
    assert doc["error"]["message"] == (
        "`sessions cleanup` does not support the parent `sessions` options --limit, "
        "--verbose; session-list filters cannot scope session maintenance."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", " "], "--agent must not be blank"),
        (["--store", ""], "--store must not be blank"),
        (["--agent", "main", "--all-agents"], "--agent and --all-agents cannot be used together"),
        (["--store", "x.json", "--all-agents"], "--store cannot be combined with --all-agents"),
    ],
)
def test_selection_errors_exit_1(small_store, args, message):
    code, doc, _ = cli_json("sessions", "cleanup", "--dry-run", "--json", *args)
    assert code == 1 and doc == {"ok": False, "error": {"type": "cli_error", "message": message}}


@pytest.mark.parametrize("name", ["nope.sqlite", "agents/main/sessions/nope.json", "agents"])
def test_missing_store_target_is_not_found(small_store, state_dir, name):
    """docs/exit-codes.md: a named store that does not exist is "not found" (4), for a database
    path, a legacy path and a directory alike."""
    target = state_dir / name
    code, doc, _ = cli_json("sessions", "cleanup", "--store", str(target), "--enforce", "--json")
    assert code == 4 and doc["error"]["type"] == "not_found"
    assert doc["error"]["message"].startswith(f"Session store not found: {target} ")


def test_unknown_agent_is_not_found(small_store):
    code, doc, _ = cli_json("sessions", "cleanup", "--agent", "ghost", "--dry-run", "--json")
    assert code == 4 and doc["error"]["type"] == "not_found"


def test_text_dry_run_report_is_sanitised(small_store, state_dir):
    before = tree_digest(state_dir)
    proc = cli("sessions", "cleanup", "--dry-run")
    # D19: the report is the result (stdout); only the migration hint is on stderr
    assert proc.returncode == 0 and proc.stderr.startswith("Hint: Legacy session store")
    assert "Session store:" not in proc.stderr
    text = proc.stdout
    assert "\x1b" not in text and "\x1b" not in proc.stderr
    lines = text.splitlines()
    assert lines[0] == f"Session store: {sessions_dir(state_dir) / 'sessions.json'}"
    assert "Entries: 3 -> 2 (remove 1)" in lines and "Would prune stale: 1" in lines
    assert "Planned session actions:" in lines
    assert any(line.startswith("┌") for line in lines) and any("prune-stale" in line for line in lines)
    summary = lines[lines.index("Summary by Label:") + 1 :]
    assert summary[:3] == [
        "Alert\\nInjected  1 kept, 0 pruned",
        "Cron: daily      1 kept, 1 pruned",
        "Total: 2 kept, 1 pruned",
    ]
    assert tree_digest(state_dir) == before


def test_text_apply_report(small_store, state_dir):
    proc = cli("cleanup", "--enforce")
    assert proc.returncode == 0, proc.stderr
    assert "Applied maintenance. Current entries: 2" in proc.stdout.splitlines()
    assert "Applied maintenance" not in proc.stderr
    assert set(load_store(state_dir)) == {"agent:main:main", "agent:main:recent"}


def test_several_stores_print_the_wrapper(state_dir):
    write_config(
        state_dir,
        {
            "agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]},
            "session": {"maintenance": {"pruneAfter": "30d"}},
        },
    )
    now = now_ms()
    make_legacy(state_dir, {"agent:main:a": entry("a", now)})
    make_legacy(state_dir, {"agent:ops:b": entry("b", now - 40 * DAY)}, agent="ops")
    code, doc, _ = cli_json("sessions", "cleanup", "--all-agents", "--dry-run", "--json")
    assert code == 0
    assert list(doc) == ["allAgents", "mode", "dryRun", "stores"]
    assert [s["agentId"] for s in doc["stores"]] == ["main", "ops"]
    proc = cli("sessions", "cleanup", "--all-agents", "--dry-run")
    assert "Agent: main" in proc.stdout.splitlines() and "Agent: ops" in proc.stdout.splitlines()
    code, doc, _ = cli_json("sessions", "cleanup", "--all-agents", "--enforce", "--json")
    assert code == 0 and [s["appliedCount"] for s in doc["stores"]] == [1, 0]
    code, doc, _ = cli_json("sessions", "cleanup", "--agent", "ops", "--dry-run", "--json")
    assert code == 0 and doc["agentId"] == "ops" and doc["beforeCount"] == 0


def test_invalid_config_is_a_config_error(small_store, state_dir):
    maintenance_config(state_dir, pruneAfter="30 days")
    code, doc, _ = cli_json("sessions", "cleanup", "--dry-run", "--json")
    assert code == 3 and doc["ok"] is False


def test_corrupt_store_is_reported_not_crashed(state_dir):
    root = sessions_dir(state_dir)
    root.mkdir(parents=True)
    (root / "sessions.json").write_text('{"agent:main:a": {"sessionId": "a", ')
    before = tree_digest(state_dir)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--json")
    assert code == 6 and doc["error"]["type"] == "invalid_data" and "Traceback" not in err
    assert tree_digest(state_dir) == before


def test_partial_failure_reports_what_committed(state_dir):
    write_config(
        state_dir,
        {
            "agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]},
            "session": {"maintenance": {"pruneAfter": "30d"}},
        },
    )
    now = now_ms()
    make_legacy(state_dir, {"agent:main:a": entry("a", now), "agent:main:old": entry("old", now - 40 * DAY)})
    broken = sessions_dir(state_dir, "ops")
    broken.mkdir(parents=True)
    (broken / "sessions.json").write_text("[1, 2")
    code, doc, _ = cli_json("sessions", "cleanup", "--all-agents", "--enforce", "--json")
    assert code == 1
    assert [s["agentId"] for s in doc["stores"]] == ["main"] and doc["stores"][0]["appliedCount"] == 1
    partial = doc["partialError"]
    assert partial["failingAgentId"] == "ops" and partial["lifecycleCommitted"] is True
    assert partial["message"].startswith("Session cleanup failed for agent 'ops': ")
    proc = cli("sessions", "cleanup", "--all-agents", "--enforce")
    assert proc.returncode == 1
    assert any(
        line.startswith("[error] Session cleanup failed for agent 'ops'") for line in proc.stderr.splitlines()
    )
