"""Drop-in fidelity with OpenClaw 2026.9.6 (issue 14, spec D5/D17/D19): `agents list --json`'s array,
`status --json`'s agents/gateway blocks, configured-agents-only aggregation, usage errors as the
JSON envelope, exit codes, key resolution. Both store kinds wherever a store is read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cleanup_support import cli, cli_json, db_path, entry, make_legacy, make_sqlite, now_ms, write_config

from tests.conftest import run_cli

KINDS = ["legacy", "sqlite"]


def make(kind: str, state: Path, entries: dict, agent: str = "main") -> None:
    (make_legacy if kind == "legacy" else make_sqlite)(state, entries, agent=agent)


# ---- agents list --json -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_agents_list_is_openclaws_array(kind: str, state_dir: Path):
    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {"model": "openai/gpt-5.4", "workspace": "/srv/ws"},
                "list": [
                    {"id": "main"},
                    {"id": "work", "default": True, "name": "Work", "agentDir": "/srv/work"},
                ],
            },
            "bindings": [
                {"agentId": "main", "match": {"channel": "telegram", "accountId": "bot1"}},
                {"agentId": "main", "match": {"channel": "discord", "peer": {"kind": "group", "id": "42"}}},
            ],
        },
    )
    make(kind, state_dir, {"agent:work:main": entry("w1", now_ms())}, agent="work")
    code, items, _ = cli_json("agents", "list", "--json")
    assert code == 0 and isinstance(items, list)
    main, work = items
    # observed with 2026.9.6 on the same config: key order, workspace rule, model, bindings count
    assert list(main) == [
        "id",
        "workspace",
        "agentDir",
        "model",
        "bindings",
        "isDefault",
        "configured",
        "storeKind",
        "sessionsPath",
        "sessionsCount",
    ]
    assert (main["workspace"], main["model"], main["bindings"], main["isDefault"]) == (
        "/srv/ws/main",
        "openai/gpt-5.4",
        2,
        False,
    )
    assert list(work)[:7] == ["id", "name", "workspace", "agentDir", "model", "bindings", "isDefault"]
    assert (work["name"], work["workspace"], work["agentDir"], work["isDefault"]) == (
        "Work",
        "/srv/ws",
        "/srv/work",
        True,
    )
    assert (work["storeKind"], work["sessionsCount"]) == (kind, 1)
    code, detailed, _ = cli_json("agents", "list", "--json", "--bindings")
    assert detailed[0]["bindingDetails"] == ["telegram accountId=bot1", "discord peer=group:42"]
    assert detailed[1]["routes"] == ["default (no explicit rules)"]
    text = cli("agents", "list")
    assert text.returncode == 0 and text.stdout.startswith("Agents:\n- main\n  Workspace: /srv/ws/main\n")
    assert "- work (Work) (default)" in text.stdout and "Store: " + kind in text.stdout
    assert cli("agents", "list", "--tree").stdout == "Agents:\n- main\n- work (Work) (default)\n"


def test_explicit_ownership_has_no_default(state_dir: Path):
    write_config(state_dir, {"agents": {"ownership": "explicit", "list": [{"id": "main"}, {"id": "work"}]}})
    code, items, _ = cli_json("agents", "list", "--json")
    assert [(a["id"], a["isDefault"], a["workspace"]) for a in items] == [
        ("main", False, str(state_dir / "workspace-main")),
        ("work", False, str(state_dir / "workspace-work")),
    ]
    code, doc, _ = cli_json("status", "--json", "--no-probe")
    agents = doc["agents"]
    assert (agents["defaultId"], agents["ownership"], agents["selectionRequired"]) == (None, "explicit", True)
    assert [a["workspaceDir"] for a in agents["agents"]] == [
        str(state_dir / "workspace-main"),
        str(state_dir / "workspace-work"),
    ]


# ---- status --json ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_status_agents_and_gateway_blocks(kind: str, state_dir: Path):
    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {"model": "openai/gpt-5.4", "contextTokens": 150000},
                "list": [{"id": "main"}, {"id": "work", "default": True}],
            }
        },
    )
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms() - 60_000)})
    make(kind, state_dir, {"agent:work:main": entry("w1", now_ms())}, agent="work")
    code, doc, _ = cli_json("status", "--json", "--no-probe")
    assert code == 0
    agents = doc["agents"]
    assert list(agents) == ["defaultId", "ownership", "selectionRequired", "agents", "totalSessions"]
    assert (agents["defaultId"], agents["ownership"], agents["selectionRequired"]) == (
        "work",
        "legacy",
        False,
    )
    assert [a["id"] for a in agents["agents"]] == ["work", "main"]  # the default first, as OpenClaw
    assert list(agents["agents"][0]) == [
        "id",
        "workspaceDir",
        "sessionsPath",
        "sessionsCount",
        "lastUpdatedAt",
        "lastActiveAgeMs",
    ]
    assert agents["agents"][0]["workspaceDir"] == str(state_dir / "workspace")
    assert agents["agents"][1]["workspaceDir"] == str(state_dir / "workspace-main")
    assert doc["sessions"]["defaults"] == {"model": "gpt-5.4", "contextTokens": 150000}
    gateway = doc["gateway"]
    assert list(gateway)[:9] == [
        "mode",
        "url",
        "urlSource",
        "misconfigured",
        "reachable",
        "connectLatencyMs",
        "self",
        "error",
        "authWarning",
    ]
    assert gateway["misconfigured"] is False and gateway["self"] is None and gateway["probed"] is False
    assert gateway["error"] == "not probed" and "credentials" in gateway["authWarning"]
    assert {s["agent"]: s["readOnly"] for s in doc["stores"]} == {"work": False, "main": False}


def test_status_readonly_means_cannot_be_written(imported_fixture_state: Path, state_dir: Path):
    code, doc, _ = cli_json("status", "--json", "--no-probe")
    # a real OpenClaw schema-23 agent database is written since issue 12 (D21)
    assert (
        code == 0 and doc["stores"][0]["kind"] == "openclaw-sqlite" and doc["stores"][0]["readOnly"] is False
    )
    if os.geteuid() == 0:
        return  # root writes read-only files: the file-permission half cannot be observed
    make_legacy(state_dir, {"agent:ops:main": entry("o1", now_ms())}, agent="ops")
    os.chmod(state_dir / "agents/ops/sessions/sessions.json", 0o400)
    code, doc, _ = cli_json("status", "--json", "--no-probe")
    assert {s["agent"]: s["readOnly"] for s in doc["stores"]}["ops"] is True


def test_status_defaults_are_null_without_config(state_dir: Path):
    code, doc, _ = cli_json("status", "--json", "--no-probe")
    assert doc["sessions"]["defaults"] == {"model": None, "contextTokens": None}
    assert (doc["agents"]["ownership"], doc["agents"]["defaultId"], doc["agents"]["selectionRequired"]) == (
        "sole",
        "main",
        False,
    )


# ---- agents on disk but not in a config that lists agents --------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_disk_only_agents_are_left_out_and_named(kind: str, state_dir: Path):
    write_config(state_dir, {"agents": {"list": [{"id": "main", "default": True}]}})
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    make(kind, state_dir, {"agent:old:main": entry("o1", now_ms())}, agent="old")
    code, listing, err = cli_json("sessions", "--all-agents", "--json")
    assert code == 0 and [s["agentId"] for s in listing["stores"]] == ["main"] and listing["count"] == 1
    code, doc, err = cli_json("status", "--json", "--no-probe")
    assert [s["agent"] for s in doc["stores"]] == ["main"]
    old_path = (
        db_path(state_dir, "old") if kind == "sqlite" else state_dir / "agents/old/sessions/sessions.json"
    )
    assert doc["unconfiguredStores"] == [{"agent": "old", "path": str(old_path)}]
    assert "not in the config: old" in doc["hint"] and "not in the config" not in err  # said once: in JSON
    text = cli("status", "--no-probe")
    assert f"  old: not configured: {old_path}" in text.stdout and "not in the config: old" in text.stderr
    doctor = cli("doctor")
    assert "not in the config: old" in doctor.stderr
    assert json.loads(cli("doctor", "--json").stdout)["unconfiguredAgents"] == ["old"]
    code, doc, _ = cli_json("sessions", "--agent", "old", "--json")
    assert code == 4 and f"pass --store {old_path}" in doc["error"]["message"]
    code, doc, _ = cli_json("sessions", "--store", str(old_path), "--json")  # reachable with --store
    assert code == 0 and [r["key"] for r in doc["sessions"]] == ["agent:old:main"]


def test_without_configured_agents_disk_discovery_stays(state_dir: Path):
    make_legacy(state_dir, {"agent:main:main": entry("m1", now_ms())})
    make_legacy(state_dir, {"agent:old:main": entry("o1", now_ms())}, agent="old")
    code, listing, _ = cli_json("sessions", "--all-agents", "--json")
    assert [s["agentId"] for s in listing["stores"]] == ["main", "old"]
    assert [a["id"] for a in cli_json("agents", "list", "--json")[1]] == ["main", "old"]


# ---- usage errors under --json ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "--json", "--bogus"),  # unknown option
        ("sessions", "--json", "--limit"),  # an option without its value
        ("sessions", "tail", "--json", "--tail", "many"),  # a bad value caught by the parser
        ("gateway", "call", "--json"),  # a missing argument
        ("status", "--json", "--profile", "../x"),  # an invalid profile name
    ],
)
def test_usage_errors_print_the_json_envelope(args: tuple):
    proc = run_cli(*args)
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert list(doc) == ["ok", "error"] and doc["ok"] is False and doc["error"]["type"] == "cli_error"
    assert "Try: openclaw" in doc["error"]["message"]
    assert proc.stderr  # the usual usage text still goes to stderr
    plain = run_cli(*[a for a in args if a != "--json"])
    assert plain.returncode == 2 and plain.stdout == ""


def test_profile_names_are_validated_and_accepted_after_the_subcommand(isolated_env: dict, tmp_path: Path):
    home = isolated_env["home"]
    env = {"OPENCLAW_STATE_DIR": "", "OPENCLAW_CONFIG_PATH": ""}
    make_legacy(home / ".openclaw-work", {"agent:main:main": entry("w1", now_ms())})
    after = run_cli("sessions", "--json", "--profile", "work", env=env)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["path"].startswith(str(home / ".openclaw-work"))
    before = run_cli("--profile", "work", "sessions", "--json", env=env)
    assert json.loads(before.stdout)["path"] == json.loads(after.stdout)["path"]
    for bad in ("../x", "a/b", "x y"):
        proc = run_cli("--profile", bad, "status", "--json", env=env)
        assert proc.returncode == 2
        assert json.loads(proc.stdout)["error"]["message"].startswith(
            'Invalid --profile (use letters, numbers, "_", "-" only)'
        )
    assert not (home / ".openclaw-..").exists() and not (home / "x").exists()


def test_session_sqlite_without_a_mode_lists_the_modes():
    proc = run_cli("doctor", "--session-sqlite")
    assert proc.returncode == 2
    assert "dry-run, import, validate, inspect, compact, restore, recover" in proc.stderr


# ---- key resolution -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_key_selects_its_agent_with_several_agents(kind: str, state_dir: Path):
    write_config(state_dir, {"agents": {"ownership": "explicit", "list": [{"id": "main"}, {"id": "work"}]}})
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    make(kind, state_dir, {"agent:work:chat": entry("w1", now_ms())}, agent="work")
    code, doc, _ = cli_json("sessions", "tail", "--session-key", "agent:work:chat", "--json")
    assert code == 0 and (doc["agentId"], doc["sessionId"]) == ("work", "w1")
    code, doc, _ = cli_json("compact", "agent:work:chat", "--dry-run", "--tokenizer", "estimate", "--json")
    assert code == 0 and doc["key"] == "agent:work:chat"
    code, doc, _ = cli_json("sessions", "label", "agent:work:chat", "Work chat", "--dry-run", "--json")
    assert code == 0 and doc["ok"] is True
    code, doc, _ = cli_json(
        "sessions", "tail", "--session-key", "agent:work:chat", "--agent", "main", "--json"
    )
    assert code == 2 and 'belongs to agent "work"' in doc["error"]["message"]
    code, doc, _ = cli_json("sessions", "tail", "--session-key", "chat", "--json")  # no owner: refused
    # one owner rule for the CLI and the Gateway (ops/session_keys.py): OpenClaw's own text
    assert code == 1 and 'session key "chat" has no explicit owner' in doc["error"]["message"]


def test_a_bare_cron_key_resolves_before_and_after_import(state_dir: Path):
    make_legacy(state_dir, {"agent:main:main": entry("m1", now_ms()), "cron:job1": entry("c1", now_ms())})
    for key in ("cron:job1", "agent:main:cron:job1"):
        code, doc, err = cli_json("sessions", "tail", "--session-key", key, "--json")
        assert code == 0, err
        assert (doc["key"], doc["sessionId"]) == ("cron:job1", "c1")  # the stored legacy spelling
        code, doc, err = cli_json("compact", key, "--dry-run", "--tokenizer", "estimate", "--json")
        assert code == 0, err
    assert run_cli("doctor", "--session-sqlite", "import").returncode == 0
    for key in ("cron:job1", "agent:main:cron:job1", "CRON:job1"):
        code, doc, err = cli_json("sessions", "tail", "--session-key", key, "--json")
        assert code == 0, err
        assert (doc["key"], doc["sessionId"]) == (
            "agent:main:cron:job1",
            "c1",
        )  # canonical after import (D14)
        code, doc, err = cli_json("compact", key, "--dry-run", "--tokenizer", "estimate", "--json")
        assert code == 0 and doc["key"] == "agent:main:cron:job1", err


@pytest.mark.parametrize("kind", KINDS)
def test_tail_defaults_to_the_agents_main_session(kind: str, state_dir: Path):
    make(
        kind,
        state_dir,
        {"agent:main:main": entry("m1", now_ms()), "agent:main:other": entry("o1", now_ms() + 5)},
    )
    code, doc, _ = cli_json("sessions", "tail", "--json", "--tail", "1")
    assert code == 0 and (doc["key"], doc["sessionId"], doc["count"]) == ("agent:main:main", "m1", 1)
    text = cli("sessions", "tail", "--tail", "1")
    assert text.stdout.splitlines()[0] == "Session: agent:main:main (m1) — 1 entry"  # not "1 entries"
    assert "— 2 entries" in cli("sessions", "tail", "--tail", "2").stdout
    make(kind, state_dir, {"agent:ops:other": entry("o1", now_ms())}, agent="ops")
    code, doc, _ = cli_json("sessions", "tail", "--agent", "ops", "--json")
    assert code == 4 and "Session not found: agent:ops:main" in doc["error"]["message"]


# ---- one broken store among several ------------------------------------------------------------------------


def _break(state: Path, kind: str, agent: str) -> None:
    if kind == "legacy":
        path = state / "agents" / agent / "sessions" / "sessions.json"
        path.write_bytes(path.read_bytes()[:40])  # truncated mid-document
    else:
        path = db_path(state, agent)
        with path.open("r+b") as fh:
            fh.write(b"not a database header")


@pytest.mark.parametrize("kind", KINDS)
def test_one_broken_store_does_not_hide_the_others(kind: str, state_dir: Path):
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    make(
        kind,
        state_dir,
        {"agent:ops:main": entry("o1", now_ms()), "agent:ops:x": entry("o2", now_ms())},
        agent="ops",
    )
    _break(state_dir, kind, "ops")
    code, doc, err = cli_json("status", "--json", "--no-probe")
    assert code == 6, err  # the store-error code (invalid data), docs/exit-codes.md
    stores = {s["agent"]: s for s in doc["stores"]}
    assert (
        stores["main"]["sessions"] == 1
        and stores["ops"]["error"]
        and stores["ops"]["errorType"] == "invalid_data"
    )
    assert doc["errors"][0]["agentId"] == "ops" and doc["errors"][0]["error"]["type"] == "invalid_data"
    assert doc["sessions"]["count"] == 1
    text = cli("status", "--no-probe")
    assert text.returncode == 6 and "  ops: error: " in text.stdout and "  main: " + kind in text.stdout
    assert "Error: agent ops: " in text.stderr
    code, listing, err = cli_json("sessions", "--all-agents", "--json")
    assert code == 6
    assert [r["key"] for r in listing["sessions"]] == ["agent:main:main"]
    assert listing["errors"] == [
        {"agentId": "ops", "path": doc["errors"][0]["path"], "error": doc["errors"][0]["error"]}
    ]
    text = cli("sessions", "--all-agents")
    assert text.returncode == 6 and "agent:main:main" in text.stdout and "Error: agent ops:" in text.stderr
    assert cli_json("sessions", "--agent", "ops", "--json")[0] == 6  # one store named: its error, as before
    code, items, err = cli_json("agents", "list", "--json")
    assert code == 6 and [a["id"] for a in items] == ["main", "ops"] and items[1]["error"]
    assert items[0]["sessionsCount"] == 1 and "Error: agent ops:" in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_deleted_agent_is_neither_listed_nor_hinted(kind: str, state_dir: Path):
    """No roster: agents are discovered on disk. After `agents delete`, the directory holds only the
    verified archives (and an emptied index): not a store, so no listing, no "would migrate" hint."""
    make(kind, state_dir, {"agent:main:main": entry("m1", now_ms())})
    make(kind, state_dir, {"agent:ops:main": entry("o1", now_ms())}, agent="ops")
    assert [a["id"] for a in cli_json("agents", "list", "--json")[1]] == ["main", "ops"]
    code, doc, err = cli_json("agents", "delete", "ops", "--force", "--json")
    assert code == 0, err
    assert [a["id"] for a in cli_json("agents", "list", "--json")[1]] == ["main"]
    code, listing, err = cli_json("sessions", "--all-agents", "--json")
    assert [s["agentId"] for s in listing["stores"]] == ["main"]
    assert "agent ops" not in listing.get("hint", "") and "agents/ops" not in err
    status = cli("status", "--no-probe")
    assert "ops" not in status.stdout and "agents/ops" not in status.stderr
    assert cli_json("sessions", "--agent", "ops", "--json")[0] == 4
