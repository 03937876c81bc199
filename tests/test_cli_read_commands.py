"""`sessions`, `sessions tail`, `status`: real subprocesses over real legacy / SQLite states."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.conftest import OPENCLAW_FIXTURE, generate_legacy_state, run_cli


def tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[str(path.relative_to(root)) + "/"] = "dir"
    return out


def list_json(*extra: str) -> dict:
    proc = run_cli("sessions", "--json", "--limit", "all", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_fixture_legacy_state_lists_every_entry(legacy_fixture_state: Path) -> None:
    stored = json.loads((legacy_fixture_state / "agents/main/sessions/sessions.json").read_text())
    result = list_json()
    assert result["path"].endswith("agents/main/sessions/sessions.json")
    assert result["count"] == result["totalCount"] == len(stored) == 12
    assert result["limitApplied"] is None and result["hasMore"] is False
    got = {row["key"]: (row["sessionId"], row["updatedAt"]) for row in result["sessions"]}
    assert got == {k: (v["sessionId"], v["updatedAt"]) for k, v in stored.items()}
    updated = [row["updatedAt"] for row in result["sessions"]]
    assert updated == sorted(updated, reverse=True)
    assert "doctor --session-sqlite import" in result["hint"]
    # OpenClaw's field order for the fields the real listing printed
    real = json.loads((OPENCLAW_FIXTURE / "outputs/sessions.json").read_text())["sessions"][1]
    ours = next(r for r in result["sessions"] if r["key"] == real["key"])
    common = [k for k in real if k in ours and k not in ("contextTokens",)]
    assert [k for k in ours if k in common] == common
    for name in ("inputTokens", "outputTokens", "totalTokens", "sessionId", "updatedAt", "kind"):
        assert ours[name] == real[name]


@pytest.mark.parametrize(
    "options",
    [
        ("--header-version", "3"),
        ("--header-version", "4", "--relative-session-file"),
        ("--no-session-file", "--missing", "2", "--orphans", "2"),
        ("--cron-key-style", "legacy"),
    ],
)
def test_generated_states_list_every_entry(state_dir: Path, options: tuple[str, ...]) -> None:
    generate_legacy_state(state_dir, 25, 0, 11, *options)
    stored = json.loads((state_dir / "agents/main/sessions/sessions.json").read_text())
    result = list_json()
    assert {r["key"]: (r["sessionId"], r["updatedAt"]) for r in result["sessions"]} == {
        k: (v["sessionId"], v["updatedAt"]) for k, v in stored.items()
    }


def test_limit_active_and_usage_errors(legacy_fixture_state: Path) -> None:
    proc = run_cli("sessions", "--json", "--limit", "3")
    data = json.loads(proc.stdout)
    assert data["count"] == 3 and data["totalCount"] == 12 and data["hasMore"] is True
    for flag, value, message in (
        ("--limit", "0", '--limit must be a positive integer or "all"'),
        ("--active", "-5", "--active must be a positive number of minutes"),
    ):
        proc = run_cli("sessions", "--json", flag, value)
        assert proc.returncode == 2
        envelope = json.loads(proc.stdout)
        assert envelope["ok"] is False and message in envelope["error"]["message"]
        assert "Traceback" not in proc.stderr
    proc = run_cli("sessions", "--json", "--agent", " ")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["message"] == "--agent must not be blank"
    proc = run_cli("sessions", "--json", "--agent", "ghost")
    assert proc.returncode == 4 and "Unknown agent id" in json.loads(proc.stdout)["error"]["message"]


def test_read_commands_never_modify_the_state(legacy_fixture_state: Path) -> None:
    before = tree_digest(legacy_fixture_state)
    for args in (
        ("sessions",),
        ("sessions", "--json", "--limit", "all"),
        ("sessions", "tail", "--session-key", "agent:main:main", "--tail", "5"),
        ("sessions", "tail", "--session-key", "agent:main:main", "--json", "--context"),
        ("status",),
        ("status", "--json"),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert tree_digest(legacy_fixture_state) == before


def test_read_commands_on_real_openclaw_db_write_nothing(imported_fixture_state: Path) -> None:
    before = tree_digest(imported_fixture_state)
    real = json.loads((OPENCLAW_FIXTURE / "outputs/sessions.json").read_text())
    result = (
        list_json()
    )  # every row, the archived recovered orphan too (as the real CLI lists them, issue 22)
    assert [(r["key"], r["sessionId"], r["updatedAt"]) for r in result["sessions"]] == [
        (r["key"], r["sessionId"], r["updatedAt"]) for r in real["sessions"]
    ]
    assert "hint" not in result
    assert [r["key"] for r in list_json("--all")["sessions"]] == [
        r["key"] for r in result["sessions"]
    ]  # kept
    # archived rows are marked; `--archived` lists only them (here the orphan OpenClaw's import archived)
    archived = [r["key"] for r in result["sessions"] if r["archived"]]
    assert archived == ["agent:main:recovered:083ddf53-7690-42d8-9a49-01824250e803"]
    only = list_json("--archived")
    assert [r["key"] for r in only["sessions"]] == archived and only["totalCount"] == 1
    proc = run_cli("status", "--json")
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert (
        status["stores"][0]["kind"] == "openclaw-sqlite" and status["stores"][0]["readOnly"] is False
    )  # (D21)
    assert tree_digest(imported_fixture_state) == before


def test_tail_shows_the_last_entries_of_the_active_branch(legacy_fixture_state: Path) -> None:
    path = legacy_fixture_state / "agents/main/sessions/df30a0ea-38b3-46e4-abd3-2c8eddd59451.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    proc = run_cli("sessions", "tail", "--session-key", "agent:main:main", "--tail", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["entries"] == lines[-4:]
    proc = run_cli("sessions", "tail", "--session-key", "agent:main:nope", "--json")
    assert proc.returncode == 4 and json.loads(proc.stdout)["error"]["type"] == "not_found"


def test_tail_on_openclaw_db_matches_the_archived_original(imported_fixture_state: Path) -> None:
    archive = next(
        (imported_fixture_state / "agents/main/session-sqlite-import-archive").glob("agent_main_main.*")
    )
    lines = [json.loads(line) for line in archive.read_text().splitlines() if line.strip()]
    data = json.loads(
        run_cli("sessions", "tail", "--session-key", "agent:main:main", "--tail", "10", "--json").stdout
    )
    assert data["entries"] == lines[-10:]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "sessions.json"),
        ("[1, 2, 3]", "does not contain an object session store"),
    ],
)
def test_bad_sessions_json_is_a_clear_error(state_dir: Path, content: str, message: str) -> None:
    store = state_dir / "agents/main/sessions/sessions.json"
    _write(store, content)
    before = tree_digest(state_dir)
    for args in (("sessions", "--json"), ("status", "--json")):
        proc = run_cli(*args)
        assert "Traceback" not in proc.stderr
    proc = run_cli("sessions", "--json")
    assert proc.returncode == 6
    envelope = json.loads(proc.stdout)
    assert envelope["ok"] is False and message in envelope["error"]["message"]
    assert tree_digest(state_dir) == before


def test_wrong_types_hostile_ids_and_symlinks_are_reported_not_fatal(state_dir: Path, tmp_path: Path) -> None:
    sessions = state_dir / "agents/main/sessions"
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"type":"session","version":3,"id":"secret"}\n{"type":"message","id":"x"}\n')
    store = {
        "agent:main:main": {"sessionId": "good", "updatedAt": 3},
        "agent:main:typed": {"sessionId": "typed", "updatedAt": "yesterday", "inputTokens": "many"},
        "agent:main:evil": {"sessionId": "../../x", "updatedAt": 2},
        "agent:main:link": {"sessionId": "linked", "updatedAt": 1},
    }
    _write(sessions / "sessions.json", json.dumps(store, indent=2))
    _write(
        sessions / "good.jsonl",
        '{"type":"session","version":3,"id":"good"}\n{"type":"message","id":"a","parentId":null}\n'
        'not json at all\n{"type":"message","id":"b","parentId":"a"}\n{"type":"mess',
    )
    os.symlink(outside, sessions / "linked.jsonl")
    before = tree_digest(state_dir)
    data = list_json()
    keys = {row["key"] for row in data["sessions"]}
    assert "agent:main:main" in keys and "agent:main:evil" not in keys
    proc = run_cli("sessions", "tail", "--session-key", "agent:main:main", "--json")
    assert proc.returncode == 0, proc.stderr
    tail = json.loads(proc.stdout)
    assert [e["id"] for e in tail["entries"]] == ["a", "b"]
    assert len(tail["issues"]) == 2  # the malformed middle line and the truncated last line
    proc = run_cli("sessions", "tail", "--session-key", "agent:main:link", "--json")
    assert "secret" not in proc.stdout and "Traceback" not in proc.stderr
    proc = run_cli("status", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert tree_digest(state_dir) == before


def test_config_error_exit_code_and_envelope(state_dir: Path) -> None:
    (state_dir / "openclaw.json").write_text('{session: {maintenance: {maxDiskBytes: "lots"}}}')
    proc = run_cli("sessions", "--json")
    assert proc.returncode == 3
    envelope = json.loads(proc.stdout)
    assert envelope["error"]["type"] == "config_error"
    assert "session.maintenance.maxDiskBytes" in envelope["error"]["message"]
    proc = run_cli("status", "--json")  # status reports a broken config instead of failing
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["config"]["valid"] is False


def test_text_output_goes_to_stdout_and_is_sanitised(state_dir: Path) -> None:
    """D19: the listing is a result (stdout; 2026.9.6 prints it on stderr), the migration hint is
    not (stderr). Stored control characters reach neither stream (D6.8)."""
    sessions = state_dir / "agents/main/sessions"
    _write(
        sessions / "sessions.json",
        json.dumps(
            {"agent:main:x\u001b[31m": {"sessionId": "s1", "updatedAt": 1, "model": "m\u001b]0;pwn\u0007"}}
        ),
    )
    proc = run_cli("sessions")
    assert proc.returncode == 0
    assert proc.stdout.startswith("Session store:") and "agent:main:x " in proc.stdout
    assert "Session store:" not in proc.stderr and proc.stderr.startswith("Hint: Legacy session store in use")
    for stream in (proc.stdout, proc.stderr):
        assert "\u001b" not in stream and "\u0007" not in stream


def test_help_lists_commands() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    for name in ("sessions", "status"):
        assert name in proc.stdout


def test_store_flag_on_the_real_openclaw_db_lists_the_real_sessions(imported_fixture_state: Path) -> None:
    db = imported_fixture_state / "agents/main/agent/openclaw-agent.sqlite"
    real = json.loads((OPENCLAW_FIXTURE / "outputs/sessions.json").read_text())
    result = list_json("--store", str(db), "--all")
    assert result["path"] == str(db)
    assert [
        (
            r["key"],
            r["sessionId"],
            r["updatedAt"],
            r.get("inputTokens"),
            r.get("outputTokens"),
            r["totalTokens"],
        )
        for r in result["sessions"]
    ] == [
        (
            r["key"],
            r["sessionId"],
            r["updatedAt"],
            r.get("inputTokens"),
            r.get("outputTokens"),
            r["totalTokens"],
        )
        for r in real["sessions"]
    ]
    recovered = next(r for r in result["sessions"] if r["key"].startswith("agent:main:recovered:"))
    assert recovered["archived"] is True  # derived from archivedAt (the real CLI shows no marker)


@pytest.mark.parametrize(
    "command", [("sessions",), ("sessions", "tail"), ("compact", "agent:main:main", "--dry-run")]
)
@pytest.mark.parametrize("name", ["nope.sqlite", "agents/main/sessions/sessions.json", "."])
def test_store_flag_naming_nothing_is_not_found(state_dir: Path, command: tuple, name: str) -> None:
    target = (state_dir / name).absolute()
    proc = run_cli(*command, "--json", "--store", str(target))
    assert proc.returncode == 4, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "not_found" and error["message"].startswith("Session store not found: ")
    assert ("is a directory" in error["message"]) == (name == ".")


def test_store_flag_errors(state_dir: Path) -> None:
    proc = run_cli("sessions", "--json", "--store", str(state_dir), "--all-agents")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["message"] == "--store cannot be combined with --all-agents"


def test_profile_selects_its_own_state_dir(isolated_env: dict[str, Path]) -> None:
    home = isolated_env["home"]
    generate_legacy_state(home / ".openclaw-work", 6, 0, 3)
    proc = run_cli(
        "--profile", "work", "sessions", "--json", env={"OPENCLAW_STATE_DIR": "", "OPENCLAW_CONFIG_PATH": ""}
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["path"].startswith(str(home / ".openclaw-work")) and data["count"] == 6


@pytest.mark.parametrize(
    "agents",
    [
        {"ownership": "explicit", "entries": {"main": {}, "work": {}}},  # OpenClaw's multi-agent form
        {"entries": {"main": {}, "work": {}}},  # several agents and no default marker
    ],
)
def test_several_configured_agents_need_an_explicit_selection(state_dir: Path, agents: dict) -> None:
    generate_legacy_state(state_dir, 6, 0, 5)
    generate_legacy_state(state_dir, 5, 0, 6, "--agent", "work")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": agents}))
    proc = run_cli("sessions", "--json")
    assert proc.returncode == 1
    assert "Pass --agent <id>" in json.loads(proc.stdout)["error"]["message"]
    assert list_json("--agent", "work")["count"] == 5
    both = list_json("--all-agents")
    assert both["count"] == 11 and {s["agentId"] for s in both["stores"]} == {"main", "work"}


def test_a_legacy_default_marker_selects_its_agent(state_dir: Path) -> None:
    """As 2026.9.6 (`agents.ownership: "legacy"`): several agents, one marked `default: true`,
    and a command without --agent uses that one."""
    generate_legacy_state(state_dir, 6, 0, 5)
    generate_legacy_state(state_dir, 5, 0, 6, "--agent", "work")
    (state_dir / "openclaw.json").write_text(
        json.dumps({"agents": {"entries": {"main": {}, "work": {"default": True}}}})
    )
    listing = list_json()
    assert listing["count"] == 5 and "/agents/work/" in listing["path"]
