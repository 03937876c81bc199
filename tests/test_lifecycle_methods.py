"""`sessions.patch|reset|create|delete` as the Gateway serves them (ops.lifecycle via the method
table), on both store kinds: results shaped like the recorded 2026.9.6 Gateway answers, the same
precondition texts, every transcript that leaves (reset, delete) a verified archive whose bytes
are the original's, nothing written by dry runs or refused requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.errors import (
    NotFoundError,
    OpenClawError,
    PreconditionError,
    SessionChangedError,
    UsageError,
)
from tests.lifecycle_support import (
    DB,
    KEYS,
    SESSIONS,
    archive_bytes,
    make_templates,
    recorded,
    rows,
    transcript_bytes,
    tree_digest,
    use_template,
)

NOW = 1796019218434


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "methods")


@pytest.fixture(params=["legacy", "sqlite"])
def state(request, templates, state_dir: Path) -> Path:
    use_template(templates[request.param], state_dir)
    return state_dir


def call(method: str, params: dict[str, Any], now: int = NOW) -> dict[str, Any]:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call as run
    from openclaw_cli.paths import resolve_paths

    ctx = Context.load(resolve_paths(), clock=lambda: now)
    return run(ctx, method, params)


def sid(state: Path, key: str) -> str:
    return rows(state)[key]["sessionId"]


def payload(name: str) -> dict[str, Any]:
    return recorded(name)[1][0]["payload"]


def error(name: str) -> dict[str, Any]:
    return recorded(name)[1][0]["error"]


# ---- sessions.patch ----------------------------------------------------------------------------------


def test_archive_and_unarchive_match_the_recorded_results(state: Path):
    key = KEYS["direct"]
    done = call("sessions.patch", {"key": key, "archived": True, "expectedSessionId": sid(state, key)})
    want = payload("sessions-patch-archive.jsonl")
    assert set(done) == set(want) and set(done["resolved"]) <= set(want["resolved"])
    assert done["ok"] is True and done["key"] == key and done["entry"]["archivedAt"] == NOW
    assert done["entry"]["archiveReason"] == "manual" and done["entry"]["updatedAt"] == NOW
    assert rows(state)[key]["archivedAt"] == NOW
    again = call(
        "sessions.patch", {"key": key, "archived": False, "expectedSessionId": sid(state, key)}, NOW + 5
    )
    assert "archivedAt" not in again["entry"] and "archiveReason" not in again["entry"]
    assert "archivedAt" not in payload("sessions-patch-unarchive.jsonl")["entry"]
    assert "archivedAt" not in rows(state)[key]


def test_pin_unread_and_label_fields_as_recorded(state: Path):
    group, direct = KEYS["group"], KEYS["direct"]
    assert call("sessions.patch", {"key": group, "pinned": True})["entry"]["pinnedAt"] == NOW
    assert "pinnedAt" in payload("sessions-patch-pin.jsonl")["entry"]
    assert "pinnedAt" not in call("sessions.patch", {"key": group, "pinned": False})["entry"]
    unread = call("sessions.patch", {"key": direct, "unread": True})["entry"]
    assert (
        unread["markedUnreadAt"] == NOW
        and "markedUnreadAt" in payload("sessions-patch-unread-true.jsonl")["entry"]
    )
    read = call("sessions.patch", {"key": direct, "unread": False}, NOW + 7)["entry"]
    recorded_read = payload("sessions-patch-unread-false.jsonl")["entry"]
    assert read["lastReadAt"] == NOW + 7 and "markedUnreadAt" not in read
    assert "lastReadAt" in recorded_read and "markedUnreadAt" not in recorded_read
    labelled = call("sessions.patch", {"key": direct, "label": "  Quarterly planning "})["entry"]
    assert (
        labelled["label"] == "Quarterly planning" == payload("sessions-patch-label.jsonl")["entry"]["label"]
    )
    assert rows(state)[direct]["label"] == "Quarterly planning"
    assert "label" not in call("sessions.patch", {"key": direct, "label": None})["entry"]
    assert "label" not in payload("sessions-patch-label-clear.jsonl")["entry"]


def test_listing_flags_follow_the_patches(state: Path):
    from tests.lifecycle_support import cli_json

    call("sessions.patch", {"key": KEYS["group"], "pinned": True})
    call("sessions.patch", {"key": KEYS["direct"], "unread": True})
    call(
        "sessions.patch",
        {"key": KEYS["other"], "archived": True, "expectedSessionId": sid(state, KEYS["other"])},
    )
    rc, listing = cli_json("sessions")
    flags = {r["key"]: (r["archived"], r["pinned"], r["unread"]) for r in listing["sessions"]}
    # the archived row is listed and marked, as the real CLI lists it (issue 22)
    assert rc == 0 and flags[KEYS["other"]] == (True, False, False) and listing["totalCount"] == 6
    assert flags[KEYS["group"]] == (False, True, False) and flags[KEYS["direct"]] == (False, False, True)
    rc, archived = cli_json("sessions", "--archived")
    assert [r["key"] for r in archived["sessions"]] == [KEYS["other"]] and archived["sessions"][0]["archived"]
    rc, everything = cli_json("sessions", "--all")
    assert everything["count"] == 6 == everything["totalCount"]


def test_unknown_key_creates_an_operator_row(state: Path):
    key = "agent:main:telegram:direct:no-such"
    done = call("sessions.patch", {"key": key, "pinned": True})
    want = payload("sessions-patch-unknown-key-creates.jsonl")["entry"]
    assert list(done["entry"]) == list(want)  # same fields, same order
    assert done["entry"]["createdVia"] == "operator" and done["entry"]["pinnedAt"] == NOW
    assert rows(state)[key]["sessionId"] == done["entry"]["sessionId"]


@pytest.mark.parametrize(
    "name, params, kind",
    [
        ("error-patch-archive-no-expected.jsonl", {"key": "<direct>", "archived": True}, PreconditionError),
        (
            "error-patch-archive-wrong-expected.jsonl",
            {
                "key": "<direct>",
                "archived": True,
                "expectedSessionId": "00000000-0000-4000-8000-000000000000",
            },
            SessionChangedError,
        ),
        (
            "error-patch-archive-main.jsonl",
            {"key": "<main>", "archived": True, "expectedSessionId": "<sid>"},
            PreconditionError,
        ),
    ],
)
def test_patch_preconditions_use_the_recorded_texts(state: Path, name: str, params: dict, kind: type):
    recorded_key = recorded(name)[0][0]["params"]["key"]
    key = KEYS["main"] if params["key"] == "<main>" else KEYS["direct"]
    params = {**params, "key": key}
    if params.get("expectedSessionId") == "<sid>":
        params["expectedSessionId"] = sid(state, key)
    before = tree_digest(state)
    with pytest.raises(kind) as caught:
        call("sessions.patch", params)
    assert caught.value.message == error(name)["message"].replace(recorded_key, key)
    if kind is SessionChangedError:
        assert caught.value.details == error(name)["details"] == {"reason": "session-changed"}
    assert tree_digest(state) == before


def test_duplicate_label_and_bad_params_change_nothing(state: Path):
    call("sessions.patch", {"key": KEYS["direct"], "label": "Quarterly planning"})
    before = tree_digest(state)
    with pytest.raises(PreconditionError) as caught:
        call("sessions.patch", {"key": KEYS["group"], "label": "Quarterly planning"})
    assert caught.value.message == error("error-patch-label-duplicate.jsonl")["message"]
    for bad, text in [
        # the Gateway's schema first (one contract for both paths), then OpenClaw's label rule
        ({"label": ""}, "at /label: must not have fewer than 1 characters"),
        ({"label": "x" * 513}, "at /label: must not have more than 512 characters"),
        ({"label": "   "}, "invalid label: empty"),
        ({"pinned": "yes"}, "at /pinned: must be boolean"),
        ({"bogus": 1}, "unexpected property"),
        ({"model": "openai/x"}, "not supported"),
    ]:
        with pytest.raises(UsageError, match=text):
            call("sessions.patch", {"key": KEYS["group"], **bad})
    with pytest.raises(UsageError, match="required property 'key'"):
        call("sessions.patch", {"pinned": True})
    with pytest.raises(PreconditionError, match="cannot pin a child session"):
        call("sessions.patch", {"key": KEYS["sub"], "pinned": True})
    assert tree_digest(state) == before


def test_patch_dry_run_writes_nothing(state: Path):
    before = tree_digest(state)
    done = call(
        "sessions.patch",
        {
            "key": KEYS["group"],
            "archived": True,
            "expectedSessionId": sid(state, KEYS["group"]),
            "dryRun": True,
        },
    )
    assert done["dryRun"] is True and done["entry"]["archivedAt"] == NOW
    assert tree_digest(state) == before


def test_scopes_follow_the_recorded_policy():
    from openclaw_cli.ops.methods import method

    patch, delete = method("sessions.patch"), method("sessions.delete")
    assert patch.required_scope({"key": "k", "pinned": True}) == "operator.write"
    assert patch.required_scope({"key": "k", "label": "x", "expectedSessionId": "s"}) == "operator.write"
    assert patch.required_scope({"key": "k", "verboseLevel": "on"}) == "operator.admin"
    assert delete.required_scope({"key": "k"}) == "operator.admin"
    assert delete.required_scope({"key": "k", "archivedOnly": True}) == "operator.write"
    assert method("sessions.reset").required_scope({"key": "k"}) == "operator.admin"
    assert method("sessions.create").mutates and method("sessions.reset").mutates


# ---- sessions.reset ---------------------------------------------------------------------------------------


def test_reset_starts_a_new_session_and_archives_the_old_transcript(
    state: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    key = KEYS["main"]
    old = rows(state)[key]
    original = transcript_bytes(state, old["sessionId"])
    done = call("sessions.reset", {"key": key, "expectedSessionId": old["sessionId"]})
    want = payload("sessions-reset-expected.jsonl")
    assert set(want) <= set(done)
    entry = done["entry"]
    for name in (
        "lifecycleRevision",
        "updatedAt",
        "sessionStartedAt",
        "systemSent",
        "abortedLastRun",
        "compactionCount",
        "inputTokens",
        "outputTokens",
        "totalTokens",
        "totalTokensFresh",
    ):
        assert name in entry and name in want["entry"], name
    assert entry["sessionId"] != old["sessionId"] and done["previousSessionId"] == old["sessionId"]
    assert (
        entry["sessionStartedAt"] == NOW and entry["totalTokens"] == 0 and entry["totalTokensFresh"] is True
    )
    assert entry["systemSent"] is False and entry["compactionCount"] == 0
    assert rows(state)[key]["sessionId"] == entry["sessionId"]
    [archive] = done["archived"]
    assert ".jsonl.reset." in archive and archive.endswith(".zst")
    assert archive_bytes(archive) == original  # the verified archive holds the old transcript exactly
    new_lines = transcript_bytes(state, entry["sessionId"]).decode().splitlines()
    assert len(new_lines) == 1 and json.loads(new_lines[0])["id"] == entry["sessionId"]
    if (state / DB).exists():
        assert transcript_bytes(state, old["sessionId"]) == b""  # the old window's events left (archived)
    else:
        assert not (state / SESSIONS / f"{old['sessionId']}.jsonl").exists()


def test_reset_with_a_stale_expected_id_changes_nothing(state: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    before = tree_digest(state)
    recorded_key = recorded("error-reset-wrong-expected.jsonl")[0][0]["params"]["key"]
    with pytest.raises(SessionChangedError) as caught:
        call(
            "sessions.reset",
            {"key": KEYS["other"], "expectedSessionId": "00000000-0000-4000-8000-000000000000"},
        )
    assert caught.value.message == error("error-reset-wrong-expected.jsonl")["message"].replace(
        recorded_key, KEYS["other"]
    )
    with pytest.raises(NotFoundError):
        call("sessions.reset", {"key": "agent:main:telegram:direct:nope"})
    with pytest.raises(UsageError, match="/reason"):
        call("sessions.reset", {"key": KEYS["other"], "reason": "later"})
    assert tree_digest(state) == before


def test_reset_keeps_organisation_and_drops_runtime_fields(state: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset (a new session) is what this tests
    key = KEYS["group"]
    call("sessions.patch", {"key": key, "label": "Team", "pinned": True})
    entry = call("sessions.reset", {"key": key, "reason": "new"})["entry"]
    assert entry["label"] == "Team" and entry["pinnedAt"] == NOW and entry["groupId"] == "123"
    assert "contextTokens" not in entry and "model" not in entry and entry["chatType"] == "group"


# ---- sessions.delete ---------------------------------------------------------------------------------------


def test_delete_archives_then_removes(state: Path):
    key = KEYS["other"]
    old = rows(state)[key]
    original = transcript_bytes(state, old["sessionId"])
    done = call("sessions.delete", {"key": key, "expectedSessionId": old["sessionId"]})
    want = payload("sessions-delete.jsonl")
    assert set(done) == set(want) and done["deleted"] is True
    [archive] = done["archived"]
    assert Path(archive).is_absolute() and ".jsonl.deleted." in archive and archive.endswith(".zst")
    assert archive_bytes(archive) == original
    assert key not in rows(state)
    assert (
        transcript_bytes(state, old["sessionId"]) == b""
        if (state / DB).exists()
        else not (state / SESSIONS / f"{old['sessionId']}.jsonl").exists()
    )


def test_delete_unknown_main_and_archived_only(state: Path):
    assert call("sessions.delete", {"key": "agent:main:telegram:group:no-such"}) == payload(
        "sessions-delete-unknown-key.jsonl"
    ) | {"key": "agent:main:telegram:group:no-such"}
    before = tree_digest(state)
    with pytest.raises(PreconditionError) as caught:
        call("sessions.delete", {"key": KEYS["main"]})
    assert caught.value.message == error("error-delete-main.jsonl")["message"]
    with pytest.raises(PreconditionError, match="is not archived. Archive it first, then delete it."):
        call("sessions.delete", {"key": KEYS["group"], "archivedOnly": True})
    with pytest.raises(SessionChangedError, match="changed before deletion"):
        call(
            "sessions.delete",
            {"key": KEYS["group"], "expectedSessionId": "00000000-0000-4000-8000-000000000000"},
        )
    assert tree_digest(state) == before
    dry = call("sessions.delete", {"key": KEYS["group"], "dryRun": True})
    assert dry["wouldDelete"] is True and dry["deleted"] is False and tree_digest(state) == before


def test_delete_of_a_header_only_session(state: Path):
    key = KEYS["empty"]
    old = rows(state)[key]
    original = transcript_bytes(state, old["sessionId"])
    done = call("sessions.delete", {"key": key})
    assert done["deleted"] is True and key not in rows(state)
    assert [archive_bytes(a) for a in done["archived"]] == [original]


# ---- sessions.create (fork) ---------------------------------------------------------------------------------


def test_fork_copies_the_active_branch(state: Path):
    from openclaw_cli.store.base import TranscriptLine
    from openclaw_cli.store.tree import active_branch

    parent = rows(state)[KEYS["group"]]
    done = call("sessions.create", {"parentSessionKey": KEYS["group"], "fork": True, "label": "Experiment"})
    want = payload("sessions-create-fork.jsonl")
    assert set(want) <= set(done) and done["forked"] is True and done["isolated"] is False
    entry = done["entry"]
    for name in (
        "sessionId",
        "lifecycleRevision",
        "updatedAt",
        "delivery",
        "createdVia",
        "createdAt",
        "spawnDepth",
        "parentSessionKey",
        "parentSessionId",
        "forkSource",
        "totalTokensFresh",
        "forkedFromParent",
    ):
        assert name in entry and name in want["entry"], name
    assert entry["forkSource"] == {"sessionKey": KEYS["group"], "sessionId": parent["sessionId"]}
    assert done["key"].startswith("agent:main:dashboard:") and entry["label"] == "Experiment"
    assert "totalTokens" not in entry and entry["totalTokensFresh"] is False

    def objects(raw: bytes) -> list[dict]:
        return [json.loads(x) for x in raw.decode().splitlines()]

    def branch(objs: list[dict]) -> list[dict]:
        lines = [TranscriptLine(seq=i, raw=json.dumps(o), obj=o) for i, o in enumerate(objs)]
        return [line.obj for line in active_branch(lines)]

    parent_objs = objects(transcript_bytes(state, parent["sessionId"]))
    child_objs = objects(transcript_bytes(state, done["sessionId"]))
    assert child_objs[0]["type"] == "session" and child_objs[0]["id"] == done["sessionId"]
    assert branch(child_objs) == branch(parent_objs) == child_objs[1:]
    assert done["copiedEntries"] == len(child_objs) - 1


def test_fork_errors_as_recorded(state: Path):
    before = tree_digest(state)
    with pytest.raises(PreconditionError) as caught:
        call("sessions.create", {"fork": True, "agentId": "main"})
    assert caught.value.message == error("error-create-fork-without-parent.jsonl")["message"]
    with pytest.raises(PreconditionError, match="forkFrom requires fork=true"):
        call("sessions.create", {"parentSessionKey": KEYS["main"], "forkFrom": "last-completed"})
    with pytest.raises(PreconditionError, match="session already exists"):
        call("sessions.create", {"parentSessionKey": KEYS["main"], "fork": True, "key": KEYS["group"]})
    with pytest.raises(UsageError):
        call("sessions.create", {"parentSessionKey": KEYS["main"], "fork": True, "key": "../x"})
    with pytest.raises(UsageError, match="not supported"):
        call("sessions.create", {"parentSessionKey": KEYS["main"], "fork": True, "message": "hi"})
    with pytest.raises(NotFoundError):
        call("sessions.create", {"parentSessionKey": "agent:main:nope", "fork": True})
    assert tree_digest(state) == before


def test_fork_above_the_cap_starts_isolated(state: Path):
    from openclaw_cli.store.snapshot import read_file_snapshot  # noqa: F401 - the module the cap reads through

    key = KEYS["main"]
    call("sessions.patch", {"key": key, "label": "big"})  # any write: the row must stay readable
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    ctx = Context.load(resolve_paths())
    with ctx_store(ctx) as st:
        entry = dict(st.get_entry(key))
        entry.update(totalTokens=150_000, totalTokensFresh=True)
        if hasattr(st, "upsert_entries"):
            st.upsert_entries({key: entry})
    done = call("sessions.create", {"parentSessionKey": key, "fork": True})
    assert done["isolated"] is True and done["forked"] is False and done["parentTokens"] == 150_000
    assert done["warning"] == (
        "Parent context is too large to fork (150000/100000 tokens); starting with isolated context instead."
    )
    assert "forkedFromParent" not in done["entry"] and done["entry"]["parentSessionKey"] == key
    assert len(transcript_bytes(state, done["sessionId"]).decode().splitlines()) == 1


def ctx_store(ctx: Any):
    from openclaw_cli.ops.targets import open_target, select_targets

    return open_target(
        ctx, select_targets(ctx.paths, ctx.config, agent="main", all_agents=False, store=None)[0]
    )


def test_errors_are_typed_for_the_gateway():
    exc = SessionChangedError("k", "patch")
    assert isinstance(exc, OpenClawError) and exc.to_json()["error"]["type"] == "session_changed"
    assert exc.exit_code == 1 and PreconditionError("x").type == "invalid_request"
