"""`openclaw agents delete <id>` and `openclaw agents list`: every transcript of a deleted agent
leaves through a verified archive (D6.2, D15); refusals change nothing."""

from __future__ import annotations

import json

import pytest
from cleanup_support import (
    archive_map,
    cli,
    cli_json,
    db_path,
    entry,
    make_legacy,
    make_sqlite,
    now_ms,
    sessions_dir,
    sha,
    sqlite_transcript_bytes,
    tree_digest,
    write_config,
)

TWO_AGENTS = {"agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]}}


def test_delete_legacy_agent_archives_every_transcript(state_dir):
    write_config(state_dir, TWO_AGENTS)
    now = now_ms()
    make_legacy(state_dir, {"agent:main:a": entry("a", now)})
    root = make_legacy(
        state_dir, {"agent:ops:x": entry("x", now), "agent:ops:y": entry("y", now - 1000)}, agent="ops"
    )
    (root / "orphan.jsonl").write_text('{"type":"session","version":3,"id":"orphan"}\n')
    (root / "x.trajectory.jsonl").write_text('{"t":1}\n')
    originals = {p.name: sha(p.read_bytes()) for p in root.iterdir() if p.name != "sessions.json"}
    main_before = tree_digest(sessions_dir(state_dir))
    code, doc, err = cli_json("agents", "delete", "ops", "--force", "--json")
    assert code == 0, err
    assert doc["ok"] is True and doc["agentId"] == "ops" and doc["removedEntries"] == 2
    assert doc["archivedTranscripts"] == len(originals) == 4
    archives = archive_map(root)
    for name, digest in originals.items():
        assert not (root / name).exists()
        assert digest in archives[name], name
    assert json.loads((root / "sessions.json").read_text()) == {}
    assert tree_digest(sessions_dir(state_dir)) == main_before  # the other agent is untouched
    config = json.loads((state_dir / "openclaw.json").read_text())
    assert [a["id"] for a in config["agents"]["list"]] == ["main"]
    assert json.loads((state_dir / "openclaw.json.bak").read_text()) == TWO_AGENTS
    code, listing, _ = cli_json("agents", "list", "--json")
    # the agent is gone from the roster and its directory holds only archives: not listed any more
    assert [a["id"] for a in listing] == ["main"]
    status = cli_json("status", "--json", "--no-probe")[1]
    assert [s["agent"] for s in status["stores"]] == ["main"] and "unconfiguredStores" not in status


def test_delete_sqlite_agent_archives_every_session_window(state_dir):
    write_config(state_dir, TWO_AGENTS)
    now = now_ms()
    make_sqlite(state_dir, {"agent:ops:x": entry("x", now), "agent:ops:y": entry("y", now)}, agent="ops")
    from openclaw_cli.store.sqlite.store import SqliteStore

    with SqliteStore(
        db_path(state_dir, "ops"), "ops"
    ) as store:  # an earlier window of x (compaction successor)
        store.create_window(
            "agent:ops:x",
            "x2",
            previous_session_id="x",
            raw_lines=['{"type":"message","id":"m1"}'],
            entry=entry("x2", now),
        )
    before = {sid: sha(sqlite_transcript_bytes(state_dir, sid, "ops")) for sid in ("x", "x2", "y")}
    code, doc, err = cli_json("agents", "delete", "ops", "--force", "--json")
    assert code == 0, err
    assert doc["removedEntries"] == 2 and doc["archivedTranscripts"] == 3
    archives = archive_map(sessions_dir(state_dir, "ops"))
    for sid, digest in before.items():
        assert digest in archives[f"{sid}.jsonl"]
    with SqliteStore(db_path(state_dir, "ops"), "ops", read_only=True) as store:
        assert store.count_entries() == 0 and store.list_windows() == []


def test_refuses_the_only_configured_agent(state_dir):
    make_legacy(state_dir, {"agent:main:a": entry("a", now_ms())})
    before = tree_digest(state_dir)
    code, doc, _ = cli_json("agents", "delete", "main", "--force", "--json")
    assert code == 1
    assert doc["error"]["message"] == 'Agent "main" is the only configured agent and cannot be deleted.'
    assert tree_digest(state_dir) == before


def test_unknown_agent_is_not_found(state_dir):
    code, doc, _ = cli_json("agents", "delete", "nope", "--force", "--json")
    assert (
        code == 4
        and doc["error"]["message"]
        == 'agent "nope" not found. Run openclaw agents list to see the configured agents.'
    )


def test_confirmation_required_without_force(state_dir):
    write_config(state_dir, TWO_AGENTS)
    make_legacy(state_dir, {"agent:ops:x": entry("x", now_ms())}, agent="ops")
    before = tree_digest(state_dir)
    proc = cli("agents", "delete", "ops")
    assert proc.returncode == 2 and "pass --force" in proc.stderr
    assert tree_digest(state_dir) == before


def test_a_newer_openclaw_database_is_named_and_refused(imported_fixture_state):
    import sqlite3

    write_config(imported_fixture_state, {"agents": {"list": [{"id": "main"}, {"id": "ops"}]}})
    conn = sqlite3.connect(imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.execute("PRAGMA user_version = 27")  # 24 is read and written since issue 23; 25/26 read only
    conn.commit()
    conn.close()
    before = tree_digest(imported_fixture_state)
    code, doc, _ = cli_json("agents", "delete", "main", "--force", "--json")
    assert (
        code == 6
        and doc["error"]["type"] == "unsupported_schema"
        and "newer schema version 27" in doc["error"]["message"]
    )
    assert tree_digest(imported_fixture_state) == before


def test_json5_config_is_left_for_the_operator(state_dir):
    text = '// agents\n{agents: {list: [{id: "main", default: true}, {id: "ops"}]}}\n'
    (state_dir / "openclaw.json").write_text(text)
    make_legacy(state_dir, {"agent:ops:x": entry("x", now_ms())}, agent="ops")
    code, doc, err = cli_json("agents", "delete", "ops", "--force", "--json")
    assert code == 0, err
    assert doc["config"]["updated"] is False and "ops" in doc["config"]["hint"]
    assert (state_dir / "openclaw.json").read_text() == text


@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
def test_agents_list_shows_stores_and_counts(kind, state_dir):
    write_config(state_dir, TWO_AGENTS)
    (make_legacy if kind == "legacy" else make_sqlite)(state_dir, {"agent:main:a": entry("a", now_ms())})
    code, doc, _ = cli_json("agents", "list", "--json")
    # OpenClaw's array of {id, workspace, agentDir, bindings, isDefault}, plus the store facts
    assert code == 0 and isinstance(doc, list)
    main, ops = doc
    assert list(main)[:5] == ["id", "workspace", "agentDir", "bindings", "isDefault"]
    assert (main["id"], main["isDefault"], main["storeKind"], main["sessionsCount"], main["configured"]) == (
        "main",
        True,
        kind,
        1,
        True,
    )
    assert main["workspace"] == str(state_dir / "workspace")
    assert main["agentDir"] == str(state_dir / "agents" / "main" / "agent")
    assert (ops["id"], ops["isDefault"], ops["sessionsCount"]) == ("ops", False, 0)
    assert ops["workspace"] == str(state_dir / "workspace-ops")
