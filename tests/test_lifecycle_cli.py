"""The lifecycle commands (`openclaw sessions archive|unarchive|pin|unpin|label|mark-read|
mark-unread|reset|fork|delete|export`) on both store kinds: OpenClaw's envelope and statuses,
what would be sent to a Gateway (the recorded real CLI's requests), dry runs that write nothing,
the delete confirmation, and bad input (clear error, exit code, nothing modified)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lifecycle_support import (
    DB,
    KEYS,
    SESSIONS,
    archive_bytes,
    cli,
    cli_json,
    make_templates,
    recorded,
    rows,
    transcript_bytes,
    tree_digest,
    use_template,
)

NOT_FOUND = "Session not found. Run openclaw sessions list --json to choose a valid key."


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "cli")


@pytest.fixture(params=["legacy", "sqlite"])
def state(request, templates, state_dir: Path) -> Path:
    use_template(templates[request.param], state_dir)
    return state_dir


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every request the command would send to a Gateway (none listens: `delegate` says None)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake(
        method: str, params: dict[str, Any], options: Any, *, paths: Any, config: Any = None, hint: Any = None
    ):
        from openclaw_cli.cli.delegation import is_local_only, wire_params

        if not is_local_only(params):
            calls.append((method, wire_params(params)))
        return None

    monkeypatch.setattr("openclaw_cli.cli.delegation.delegate", fake)
    return calls


def test_archive_envelope_and_statuses(state: Path, sent):
    group, main = KEYS["group"], KEYS["main"]
    rc, doc = cli_json("sessions", "archive", group, main, "agent:main:nope")
    assert rc == 1
    assert doc["ok"] is False and doc["operation"] == "archive" and doc["dryRun"] is False
    assert doc["error"] == {
        "type": "cli_error",
        "message": "Session archive did not complete for every requested key.",
    }
    assert doc["results"] == [
        {"key": group, "ok": True, "status": "archived"},
        {"key": main, "ok": False, "status": "failed", "error": "Cannot archive an agent's main session."},
        {"key": "agent:main:nope", "ok": False, "status": "not_found", "error": NOT_FOUND},
    ]
    assert rows(state)[group]["archiveReason"] == "manual"
    rc, again = cli_json("sessions", "archive", group)
    again.pop("hint", None)
    assert rc == 0 and again == {
        "ok": True,
        "operation": "archive",
        "dryRun": False,
        "results": [{"key": group, "ok": True, "status": "already_archived"}],
    }


def test_the_local_fallback_is_said_once_and_only_when_something_ran(state: Path):
    rc, out, err = cli("sessions", "archive", KEYS["group"], KEYS["other"], "--json")
    assert rc == 0 and err.count("No Gateway is listening at ws://127.0.0.1:1; ran locally.") == 1
    assert json.loads(out)["ok"] is True
    rc, out, err = cli("sessions", "archive", KEYS["group"], "--json")  # already archived: nothing ran
    assert rc == 0 and "ran locally" not in err
    rc, out, err = cli("sessions", "pin", KEYS["direct"], "--dry-run")
    assert rc == 0 and "ran locally" not in err


def test_requests_are_the_real_clis(state: Path, sent):
    """`sessions archive KEY` and `sessions delete KEY --yes` ask the Gateway exactly what the
    real CLI sent (cli-sessions-archive / cli-sessions-delete), with the row's session id."""
    key = KEYS["other"]
    sid = rows(state)[key]["sessionId"]
    assert cli("sessions", "archive", key)[0] == 0
    real_list, real_patch = recorded("cli-sessions-archive.jsonl")[0]
    assert sent[0] == ("sessions.list", real_list["params"])
    assert set(sent[1][1]) == set(real_patch["params"]) and sent[1] == (
        "sessions.patch",
        {"key": key, "expectedSessionId": sid, "archived": True},
    )
    sent.clear()
    assert cli("sessions", "unarchive", key)[0] == 0
    sent.clear()
    assert cli("sessions", "delete", key, "--yes")[0] == 0
    real_list, real_delete = recorded("cli-sessions-delete.jsonl")[0]
    assert sent[0] == ("sessions.list", real_list["params"])
    assert sent[1] == ("sessions.delete", {"key": key, "expectedSessionId": sid, "deleteTranscript": True})
    assert set(sent[1][1]) == set(real_delete["params"])


def test_a_gateway_answer_is_used_instead_of_a_local_write(state: Path, monkeypatch: pytest.MonkeyPatch):
    """When `delegate` returns the Gateway's result, nothing is written locally."""
    key = KEYS["group"]
    sid = rows(state)[key]["sessionId"]
    archive_payload = recorded("cli-sessions-archive.jsonl")[1][1]["payload"]

    def gateway(
        method: str, params: dict[str, Any], options: Any, *, paths: Any, config: Any = None, hint: Any = None
    ):
        if method == "sessions.list":
            return {
                "sessions": [{"key": key, "sessionId": sid, "archived": False, "isMain": False}],
                "hasMore": False,
                "nextOffset": None,
            }
        assert method == "sessions.patch" and params["expectedSessionId"] == sid
        return {**archive_payload, "key": key}

    monkeypatch.setattr("openclaw_cli.cli.delegation.delegate", gateway)
    before = tree_digest(state)
    rc, doc = cli_json("sessions", "archive", key)
    assert rc == 0 and doc["results"] == [{"key": key, "ok": True, "status": "archived"}]
    assert tree_digest(state) == before


@pytest.mark.parametrize(
    "command",
    [
        ["archive", "<group>", "--dry-run"],
        ["unarchive", "<group>", "--dry-run"],
        ["pin", "<group>", "--dry-run"],
        ["unpin", "<group>", "--dry-run"],
        ["mark-read", "<group>", "--dry-run"],
        ["mark-unread", "<group>", "--dry-run"],
        ["label", "<group>", "New name", "--dry-run"],
        ["label", "<group>", "--clear", "--dry-run"],
        ["delete", "<group>", "<other>", "--dry-run"],
        ["reset", "<group>", "--dry-run"],
        ["fork", "<group>", "--dry-run"],
        ["export", "<group>", "--format", "md"],
    ],
)
def test_dry_runs_write_nothing(state: Path, sent, command: list[str]):
    args = [KEYS["group"] if a == "<group>" else KEYS["other"] if a == "<other>" else a for a in command]
    before = tree_digest(state)
    rc, out, err = cli("sessions", *args)
    assert rc == 0, out + err
    assert tree_digest(state) == before
    assert not sent  # dry runs and reads never ask a Gateway


def test_dry_run_statuses(state: Path):
    rc, doc = cli_json("sessions", "delete", KEYS["group"], KEYS["main"], "--dry-run")
    assert rc == 1 and doc["dryRun"] is True
    assert doc["results"] == [
        {"key": KEYS["group"], "ok": True, "status": "would_delete"},
        {
            "key": KEYS["main"],
            "ok": False,
            "status": "failed",
            "error": f"Cannot delete the main session ({KEYS['main']}).",
        },
    ]
    rc, doc = cli_json("sessions", "archive", KEYS["group"], "--dry-run")
    assert rc == 0 and doc["results"] == [{"key": KEYS["group"], "ok": True, "status": "would_archive"}]


def test_organisation_commands(state: Path):
    group, direct = KEYS["group"], KEYS["direct"]
    for args, status in [
        (["pin", group], "pinned"),
        (["mark-unread", direct], "marked_unread"),
        (["label", direct, "Quarterly planning"], "labeled"),
        (["unpin", group], "unpinned"),
        (["mark-read", direct], "marked_read"),
        (["label", direct, "--clear"], "label_cleared"),
    ]:
        rc, doc = cli_json("sessions", *args)
        assert rc == 0 and doc["results"][0]["status"] == status, (args, doc)
    row = rows(state)[direct]
    assert "label" not in row and "markedUnreadAt" not in row and isinstance(row["lastReadAt"], int)
    rc, out, err = cli("sessions", "pin", group)
    assert rc == 0 and out.strip() == f"Pinned session {group}."


def test_reset_of_an_unknown_key_as_the_release_does_it(state: Path, monkeypatch: pytest.MonkeyPatch):
    """2026.9.6+ (the real Gateway, observed): the row is created; 2026.7: not found (exit 4)."""
    rc, doc = cli_json("sessions", "reset", "agent:main:telegram:direct:no-such")
    assert rc == 0 and doc.get("created") is True and "previousSessionId" not in doc
    row = rows(state)["agent:main:telegram:direct:no-such"]
    assert (
        row["createdVia"] == "operator" and row["sessionId"] == doc["sessionId"] and row["totalTokens"] == 0
    )
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    before = tree_digest(state)
    rc, out, err = cli("sessions", "reset", "agent:main:nope")
    assert rc == 4 and "not found" in err.lower() and tree_digest(state) == before


def test_reset_keeps_the_session_and_appends_the_reset_entry(state: Path):
    """2026.9.6+ (observed on the real Gateway): same sessionId, counters zeroed, the transcript
    kept with a `reset` entry hanging from its last entry."""
    key = KEYS["direct"]
    old = rows(state)[key]
    before = transcript_bytes(state, old["sessionId"]).splitlines()
    rc, doc = cli_json("sessions", "reset", key, "--reason", "new")
    assert rc == 0 and doc["sessionId"] == old["sessionId"] and "previousSessionId" not in doc
    assert doc["archived"] == [] and doc["reason"] == "new"
    row = rows(state)[key]
    assert row["sessionId"] == old["sessionId"] and row["lifecycleRevision"] != old.get("lifecycleRevision")
    assert (row["inputTokens"], row["outputTokens"], row["totalTokens"], row["totalTokensFresh"]) == (
        0,
        0,
        0,
        True,
    )
    after = transcript_bytes(state, old["sessionId"]).splitlines()
    assert after[:-1] == before
    marker = json.loads(after[-1])
    assert {k: marker[k] for k in ("type", "reason")} == {"type": "reset", "reason": "new"}
    assert marker["parentId"] == json.loads(before[-1])["id"] and len(marker["id"]) == 8


def test_reset_fork_delete_export_end_to_end(state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "OPENCLAW_CLI_BEHAVIOR", "2026.7"
    )  # profile L's reset: a new session, the old archived
    key = KEYS["direct"]
    old = rows(state)[key]["sessionId"]
    original = transcript_bytes(state, old)
    rc, doc = cli_json("sessions", "reset", key, "--reason", "new")
    assert rc == 0 and doc["reason"] == "new" and doc["previousSessionId"] == old
    assert archive_bytes(doc["archived"][0]) == original
    rc, fork = cli_json(
        "sessions", "fork", KEYS["group"], "--to", "agent:main:experiment", "--label", "Try B"
    )
    assert rc == 0 and fork["key"] == "agent:main:experiment" and fork["forked"] is True
    assert rows(state)["agent:main:experiment"]["label"] == "Try B"
    out = tmp_path / "fork.jsonl"
    rc, exported = cli_json("sessions", "export", "agent:main:experiment", "--output", str(out))
    assert rc == 0 and out.read_bytes() == transcript_bytes(state, fork["sessionId"])
    assert exported["entries"] == fork["copiedEntries"] + 1 and oct(out.stat().st_mode & 0o777) == "0o600"
    rc, doc = cli_json("sessions", "delete", "agent:main:experiment", "--yes")
    assert rc == 0 and doc["results"][0]["status"] == "deleted"
    assert archive_bytes(doc["results"][0]["archived"][0]) == out.read_bytes()
    assert "agent:main:experiment" not in rows(state)


def test_delete_without_yes_refuses_off_a_terminal(state: Path):
    before = tree_digest(state)
    rc, doc = cli_json("sessions", "delete", KEYS["group"])
    assert rc == 2 and doc["ok"] is False
    assert doc["results"] == [
        {
            "key": KEYS["group"],
            "ok": False,
            "status": "failed",
            "error": "Deletion requires confirmation. Pass --yes to delete non-interactively.",
        }
    ]
    rc, out, err = cli("sessions", "delete", KEYS["group"])
    assert rc == 2 and "pass --yes" in err
    assert tree_digest(state) == before


def _run_on_terminal(args: list[str], answer: bytes) -> tuple[int, bytes]:
    """Run the CLI with a pseudo-terminal as stdin; answer its prompt."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "openclaw_cli", *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
        )
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 30
        while b"?" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
        os.write(master, answer)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, seen + err
    finally:
        os.close(master)


@pytest.mark.parametrize("answer, deleted", [(b"y\n", True), (b"n\n", False)])
def test_delete_asks_on_a_terminal(templates, state_dir: Path, answer: bytes, deleted: bool):
    use_template(templates["legacy"], state_dir)
    rc, err = _run_on_terminal(["sessions", "delete", KEYS["group"]], answer)
    assert rc == 0, err
    assert b"Delete 1 session?" in err
    assert (KEYS["group"] not in rows(state_dir)) is deleted
    if not deleted:
        assert b"Cancelled." in err


@pytest.mark.parametrize(
    "args, code, text",
    [
        (["archive", "agent:main:\x1b[31mx"], 2, "control characters"),
        (["reset", "agent:main:a\nb"], 2, "control characters"),
        (["archive", "  "], 2, "must not be blank"),
        (["label", "<group>", "   "], 2, "invalid label: empty"),
        (["label", "<group>"], 2, "Missing label TEXT"),
        (["fork", "<group>", "--to", "<other>"], 1, "session already exists"),
        (["fork", "<group>", "--to", "../x"], 2, "no empty, '.', '..' or path segments"),
        (["reset", "../x"], 2, "no empty, '.', '..' or path segments"),  # 2026.9.6+ would create it: refused
        (["export", "../x"], 4, "Session not found"),
        (["reset", "<group>", "--reason", "later"], 2, "--reason must be new or reset"),
        (["export", "<group>", "--format", "pdf"], 2, "--format must be one of"),
        (["export", "<group>", "--json"], 2, "--json needs --output"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(state: Path, args: list[str], code: int, text: str):
    args = [KEYS["group"] if a == "<group>" else KEYS["other"] if a == "<other>" else a for a in args]
    before = tree_digest(state)
    rc, out, err = cli("sessions", *args)
    assert rc == code, (rc, out, err)
    assert text in err and "Traceback" not in err
    assert tree_digest(state) == before
    if "--json" not in args and args[0] != "export":  # export --json needs --output first
        rc, doc = cli_json("sessions", *args)
        assert rc == code and doc["ok"] is False


def test_a_key_of_another_agent(templates, state_dir: Path):
    use_template(templates["legacy"], state_dir)
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"entries": {"main": {}, "ops": {}}}}))
    before = tree_digest(state_dir)
    rc, doc = cli_json("sessions", "archive", KEYS["group"], "--agent", "ops")
    assert rc == 1 and doc["results"][0]["status"] == "failed"
    assert doc["results"][0]["error"].startswith(
        f'Session key "{KEYS["group"]}" belongs to agent "main", not "ops".'
    )
    rc, out, err = cli("sessions", "reset", KEYS["group"], "--agent", "ops")
    assert rc == 2 and 'belongs to agent "main"' in err
    rc, out, err = cli("sessions", "reset", "telegram:group:123")
    assert rc == 1 and "Multiple agents are configured" in err
    assert tree_digest(state_dir) == before
    rc, doc = cli_json("sessions", "archive", KEYS["group"])  # the key names its agent
    assert rc == 0 and doc["results"][0]["status"] == "archived"


def test_hostile_not_found_key_reports_and_changes_nothing(state: Path):
    before = tree_digest(state)
    rc, doc = cli_json("sessions", "delete", "../x", "--yes")
    assert rc == 4 and doc["results"] == [
        {"key": "../x", "ok": False, "status": "not_found", "error": NOT_FOUND}
    ]
    assert doc["error"]["type"] == "not_found"  # every key unknown: exit 4, as every verb (issue 22 §7)
    assert tree_digest(state) == before


def test_pin_twice_and_unknown_keys(state: Path):
    """Issue 22 §7: `pin` of a pinned row says so; pin/archive of unknown keys exit 4 `not_found`."""
    rc, out, err = cli("sessions", "pin", KEYS["group"])
    assert rc == 0 and "Pinned session" in out
    rc, doc = cli_json("sessions", "pin", KEYS["group"])
    assert rc == 0 and doc["results"] == [{"key": KEYS["group"], "ok": True, "status": "already_pinned"}]
    rc, out, err = cli("sessions", "pin", KEYS["group"])
    assert rc == 0 and "already pinned" in out
    for verb in ("pin", "archive", "unpin", "mark-read"):
        rc, doc = cli_json("sessions", verb, "agent:main:nope")
        assert rc == 4 and doc["error"]["type"] == "not_found", verb


def test_export_formats(state: Path, tmp_path: Path):
    key = KEYS["main"]
    sid = rows(state)[key]["sessionId"]
    rc, out, _ = cli("sessions", "export", key, "--branch", "all")
    assert rc == 0 and out.encode() == transcript_bytes(state, sid)
    rc, md, _ = cli("sessions", "export", key, "--format", "md")
    assert (
        rc == 0
        and md.startswith(f"# Session {key}\n")
        and "### User" in md
        and "<details><summary>Tool call" in md
    )
    page = tmp_path / "s.html"
    assert cli("sessions", "export", key, "--format", "html", "-o", str(page))[0] == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text and "<details>" in text
    refused = (
        state / SESSIONS / "x.html" if not (state / DB).exists() else state / "agents" / "main" / "x.html"
    )
    rc, _, err = cli("sessions", "export", key, "-o", str(refused))
    assert rc == 2 and not refused.exists() and "inside the state directory" in err
