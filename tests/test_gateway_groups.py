"""`sessions.groups.*` (issue 25): OpenClaw 2026.9.6's recorded exchanges replayed against our
Gateway on each store kind that holds group members — legacy, ours, a real schema-23 and a
schema-24 database — and with the catalog in a real OpenClaw state database; every groups answer
(payload or error) and every `{reason: "groups"}` change must be the recorded one, the members'
categories must land in the store, and group maintenance must leave `updatedAt` alone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OPENCLAW_FIXTURE, copy_tree, generate_legacy_state, run_cli
from tests.gateway_server_support import Client, GatewayThread, connected, write_config

RECORDED = Path(__file__).parent / "fixtures" / "gateway-2026.9.6-groups"
CONFIG = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}

# OpenClaw's own DDL for the two tables the catalog uses in its state database (its schema text)
STATE_DDL = (
    "CREATE TABLE session_groups (name TEXT NOT NULL PRIMARY KEY, position INTEGER NOT NULL, "
    "created_at INTEGER NOT NULL, cwd TEXT, worktree INTEGER) STRICT",
    "CREATE TABLE config_machine_state (state_key TEXT NOT NULL PRIMARY KEY, value_json TEXT NOT NULL, "
    "updated_at_ms INTEGER NOT NULL) STRICT",
)


def exchanges(name: str) -> list[tuple[dict[str, Any], dict[str, Any], int]]:
    """(request, its response, the `groups` changes recorded before the next request)."""
    out: list[tuple[dict[str, Any], dict[str, Any], int]] = []
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    groups = 0
    for line in (RECORDED / name).read_text().splitlines():
        item = json.loads(line)
        frame = item["frame"]
        if item["dir"] == "out" and frame.get("method") != "connect":
            if request is not None:
                assert response is not None
                out.append((request, response, groups))
            request, response, groups = frame, None, 0
        elif request is not None and frame.get("type") == "res" and frame.get("id") == request["id"]:
            response = frame
        elif request is not None and frame.get("event") == "sessions.changed":
            groups += frame["payload"].get("reason") == "groups"
    assert request is not None and response is not None
    out.append((request, response, groups))
    return out


def replay(url: str, name: str) -> None:
    with connected(url) as client:
        patched: dict[str, Any] = {}
        pending = None  # (request, recorded groups changes) whose own changes are still arriving
        for request, recorded, recorded_groups in exchanges(name):
            method, params = request["method"], request["params"]
            got = client.request(method, params, req_id=request["id"])
            if pending is not None:
                count = sum(e["payload"].get("reason") == "groups" for e in client.events)
                assert count == pending[1], (name, pending[0], client.events)
            client.events.clear()
            pending = (request["id"], recorded_groups)
            where = (name, request["id"], method, params)
            assert got["ok"] == recorded["ok"], (where, got)
            if not recorded["ok"]:
                assert got["error"]["code"] == recorded["error"]["code"], (where, got)
                assert got["error"]["message"] == recorded["error"]["message"], (where, got)
            elif method.startswith("sessions.groups."):
                assert got["payload"] == recorded["payload"], where
            elif method == "sessions.patch":
                entry, want = got["payload"]["entry"], recorded["payload"]["entry"]
                assert entry.get("category") == want.get("category"), where
                patched[got["payload"]["key"]] = entry["updatedAt"]
            elif method == "sessions.list":
                rows = [(r["key"], r.get("category")) for r in got["payload"]["sessions"]]
                assert rows == [(r["key"], r.get("category")) for r in recorded["payload"]["sessions"]], where
                for row in got["payload"]["sessions"]:  # renames and deletes left recency alone
                    if row["key"] in patched:
                        assert row["updatedAt"] == patched[row["key"]], (where, row)
        client.drain_events(1.0)
        count = sum(e["payload"].get("reason") == "groups" for e in client.events)
        assert pending is not None and count == pending[1], (name, pending, client.events)


def legacy_state(state: Path) -> Path:
    generate_legacy_state(state, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state, CONFIG)
    return state / "agents" / "main" / "sessions" / "sessions.json"


def ours_state(state: Path) -> Path:
    legacy_state(state)
    done = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert done.returncode == 0, done.stderr
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def openclaw23_state(state: Path) -> Path:
    copy_tree(OPENCLAW_FIXTURE / "imported-state", state)
    write_config(state, CONFIG)
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def openclaw24_state(state: Path) -> Path:
    from tests.schema24_support import migrated_state

    db, _ = migrated_state(state)
    write_config(state, CONFIG)
    return db


def state_db_state(state: Path) -> Path:
    """Legacy members, the catalog in a real OpenClaw state database."""
    store = legacy_state(state)
    (state / "state").mkdir()
    conn = sqlite3.connect(state / "state" / "openclaw.sqlite")
    for ddl in STATE_DDL:
        conn.execute(ddl)
    conn.commit()
    conn.close()
    return store


KINDS = {
    "legacy": legacy_state,
    "ours": ours_state,
    "openclaw23": openclaw23_state,
    "openclaw24": openclaw24_state,
    "state-db": state_db_state,
}


def categories(store: Path) -> dict[str, str]:
    """key -> category of every row that has one, read from the store itself."""
    from openclaw_cli.store.detect import open_store_at

    with open_store_at(store, agent_id="main", read_only=True) as st:
        return {k: e["category"] for k, e in st.load_entries().items() if e.get("category") is not None}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_recorded_group_exchanges_replay(kind: str, state_dir: Path) -> None:
    store = KINDS[kind](state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        replay(gw.url, "groups-1.jsonl")
        # groups-1 leaves the main session in "Missing" (Work -> Job -> Play -> Missing), the group chat ungrouped
        assert categories(store) == {"agent:main:main": "Missing"}
        replay(gw.url, "groups-2.jsonl")
    assert categories(store) == {}  # groups-2 deletes "Play" (both members) and clears main's category
    if kind == "state-db":  # the catalog is in OpenClaw's tables, where its Gateway reads it
        conn = sqlite3.connect(state_dir / "state" / "openclaw.sqlite")
        assert conn.execute("SELECT name, position FROM session_groups").fetchall() == [("Z", 0)]
        order = conn.execute(
            "SELECT value_json FROM config_machine_state WHERE state_key = 'sidebar.sectionOrder'"
        )
        assert json.loads(order.fetchone()[0]) == []
        conn.close()
        assert not (state_dir / "state" / "openclaw-cli-session-groups.json").exists()
    else:
        doc = json.loads((state_dir / "state" / "openclaw-cli-session-groups.json").read_text())
        assert [(g["name"], g["position"]) for g in doc["groups"]] == [("Z", 0)]


def test_rename_keeps_defaults_and_position_in_state_db(state_dir: Path) -> None:
    """A rename copies the group's row (position, created_at, cwd, worktree) to the new name, as
    OpenClaw's prepare step does; the state database keeps OpenClaw's column values (worktree 0/1)."""
    state_db_state(state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        assert c.request("sessions.groups.put", {"names": ["A", "B"]})["ok"]
        assert c.request("sessions.groups.update", {"name": "B", "cwd": "/srv/b", "worktree": False})["ok"]
        done = c.request("sessions.groups.rename", {"name": "B", "to": "C"})
        assert done["payload"]["groups"] == [{"name": "A", "position": 0}, {"name": "C", "position": 1}]
        assert c.request("sessions.groups.defaults", {})["payload"] == {
            "defaults": [{"name": "A"}, {"name": "C", "cwd": "/srv/b", "worktree": False}]
        }
    conn = sqlite3.connect(state_dir / "state" / "openclaw.sqlite")
    assert conn.execute(
        "SELECT name, position, cwd, worktree FROM session_groups ORDER BY position"
    ).fetchall() == [
        ("A", 0, None, None),
        ("C", 1, "/srv/b", 0),
    ]
    conn.close()


def test_group_scopes(state_dir: Path) -> None:
    """list is read-scoped; defaults and the writes need write; saving a cwd outside every agent
    workspace needs admin (the next test: inside one, write will do)."""
    legacy_state(state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        with connected(gw.url, scopes=["operator.read"]) as reader:
            assert reader.request("sessions.groups.list", {})["ok"]
            refused = reader.request("sessions.groups.defaults", {})
            assert refused["error"]["message"] == "missing scope: operator.write"
            assert not reader.request("sessions.groups.put", {"names": ["x"]})["ok"]
        with connected(gw.url, scopes=["operator.write"]) as writer:
            assert writer.request("sessions.groups.put", {"names": ["x"]})["ok"]
            assert writer.request("sessions.groups.update", {"name": "x", "cwd": None, "worktree": True})[
                "ok"
            ]
            refused = writer.request("sessions.groups.update", {"name": "x", "cwd": "/srv", "worktree": True})
            assert refused["error"]["message"] == "missing scope: operator.admin"


def test_group_cwd_inside_an_agent_workspace_needs_only_write(state_dir: Path, tmp_path: Path) -> None:
    """OpenClaw 2026.9.6's rule (its `sessions.groups.update` handler, read from the installed
    package): a caller without `operator.admin` may save a cwd that exists and, links resolved, lies
    in (or is) the real directory of a configured agent's workspace; it is saved as that real path.
    Anything else asks for admin, after the params and the absolute-path check, before the group is
    looked up; an admin saves any absolute directory as given, existing or not. (Judged against the
    real Gateway with these same paths: docs/decisions.md, issue 25, helper gwparams.)"""
    legacy_state(state_dir)
    workspace = state_dir / "workspace-ops"  # agent `ops`'s default workspace (no default agent)
    (workspace / "repo" / "src").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / "link-out").symlink_to(outside)
    (outside / "link-in").symlink_to(workspace / "repo")

    def update(client: Client, cwd: Any) -> dict[str, Any]:
        return client.request("sessions.groups.update", {"name": "x", "cwd": cwd, "worktree": False})

    denied = {
        "code": "FORBIDDEN",
        "message": "missing scope: operator.admin",
        "details": {
            "code": "MISSING_SCOPE",
            "missingScope": "operator.admin",
            "requiredScopes": ["operator.admin"],
        },
    }
    with GatewayThread(tick_interval_ms=60_000) as gw:
        with connected(gw.url, scopes=["operator.write"]) as writer:
            assert writer.request("sessions.groups.put", {"names": ["x"]})["ok"]
            saved = update(writer, f"{workspace}/repo/src/../src")
            assert saved["ok"], saved
            assert saved["payload"]["defaults"] == [
                {"name": "x", "cwd": str(workspace / "repo" / "src"), "worktree": False}
            ]
            assert update(writer, str(workspace))["ok"]  # the workspace itself
            assert update(writer, str(outside / "link-in"))["payload"]["defaults"][0]["cwd"] == str(
                workspace / "repo"
            )
            for cwd in (
                str(outside),
                str(workspace / "link-out"),
                str(workspace / "missing"),
                "/",
                f"{workspace}-x",
            ):
                assert update(writer, cwd)["error"] == denied, cwd
            # the checks before the scope's (the params, an absolute path), and after it (the group)
            assert update(writer, "relative/dir")["error"]["message"] == "session group cwd must be absolute"
            assert update(writer, "")["error"]["code"] == "INVALID_REQUEST"
            unknown = writer.request(
                "sessions.groups.update", {"name": "nope", "cwd": str(outside), "worktree": False}
            )
            assert unknown["error"] == denied
            unknown = writer.request(
                "sessions.groups.update", {"name": "nope", "cwd": str(workspace), "worktree": False}
            )
            assert unknown["error"]["message"] == "unknown session group: nope"
            assert update(writer, None)["ok"]  # clearing it stays write
        with connected(gw.url) as admin:
            got = update(admin, str(outside / "not-yet"))
            assert got["payload"]["defaults"][0]["cwd"] == str(outside / "not-yet"), got


def test_a_non_admins_blank_group_name_has_no_mutation_target(state_dir: Path) -> None:
    """OpenClaw resolves a non-admin's rename/delete/update target from `name` before the params and
    the handler: no non-blank name, no target (judged against the real Gateway, write-only and
    admin connections alike); an admin reads the handler's own texts (recorded: groups-1)."""
    legacy_state(state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        with connected(gw.url, scopes=["operator.write"]) as writer:
            assert writer.request("sessions.groups.put", {"names": ["x"]})["ok"]
            for method, params in [
                ("sessions.groups.update", {"name": " ", "cwd": None, "worktree": False}),
                ("sessions.groups.update", {"name": "", "cwd": None, "worktree": False}),
                ("sessions.groups.update", {"name": 5, "cwd": None, "worktree": False}),
                ("sessions.groups.update", {"cwd": None, "worktree": False}),
                ("sessions.groups.rename", {"name": " ", "to": "y"}),
                ("sessions.groups.delete", {"name": " "}),
            ]:
                assert writer.request(method, params)["error"] == {
                    "code": "INVALID_REQUEST",
                    "message": "session mutation target is unavailable",
                    "details": {"code": "SESSION_MUTATION_TARGET_REQUIRED", "method": method},
                }, params
            renamed = writer.request("sessions.groups.rename", {"name": "x", "to": " "})
            assert renamed["error"] == {
                "code": "UNAVAILABLE",
                "message": "group rename requires non-empty names",
            }
            assert (
                writer.request("sessions.groups.delete", {"name": "nope"})["payload"]["updatedSessions"] == 0
            )
            put = writer.request("sessions.groups.put", {"names": "x"})  # put has no such step
            assert put["error"]["message"] == "invalid sessions.groups.put params: at /names: must be array"
        with connected(gw.url) as admin:
            blank = admin.request("sessions.groups.update", {"name": " ", "cwd": None, "worktree": False})
            assert blank["error"]["message"] == "session group name must not be empty"
            blank = admin.request("sessions.groups.delete", {"name": " "})
            assert blank["error"] == {
                "code": "UNAVAILABLE",
                "message": "group delete requires a non-empty name",
            }


def test_unreadable_catalog_is_an_error_not_a_reset(state_dir: Path) -> None:
    """A damaged catalog file is reported, and left as it is (nothing rewritten over it)."""
    legacy_state(state_dir)
    path = state_dir / "state" / "openclaw-cli-session-groups.json"
    path.parent.mkdir()
    path.write_text("{not json")
    with GatewayThread(tick_interval_ms=60_000) as gw, Client(gw.url) as c:
        assert c.hello()["ok"]
        got = c.request("sessions.groups.put", {"names": ["x"]})
        assert got["ok"] is False and "session group catalog" in got["error"]["message"]
    assert path.read_text() == "{not json"


def test_blank_names_are_unavailable_as_openclaw_answers_them(state_dir: Path) -> None:
    """A name of spaces passes the schema; OpenClaw's rename/delete then throw a plain Error,
    which its handler answers UNAVAILABLE with the error's text."""
    legacy_state(state_dir)
    with GatewayThread(tick_interval_ms=60_000) as gw, connected(gw.url) as c:
        got = c.request("sessions.groups.rename", {"name": "  ", "to": "x"})
        assert got["error"] == {"code": "UNAVAILABLE", "message": "group rename requires non-empty names"}
        got = c.request("sessions.groups.delete", {"name": " "})
        assert got["error"] == {"code": "UNAVAILABLE", "message": "group delete requires a non-empty name"}
