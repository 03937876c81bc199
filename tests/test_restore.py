"""`sessions archives`, `sessions restore` and `sessions show` (issue 27 §3-4): every removal path
x store kind round-trips — removed, listed, restored with byte-identical events, usage unchanged;
a damaged archive is refused with nothing written; an existing key needs --as."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.cleanup_support import tree_digest
from tests.storage_support import STORE_KINDS, cli, cli_json, make_state

STALE = "agent:main:telegram:direct:stale-1"
CRON = "agent:main:cron:job1"


def _events(key: str) -> tuple[str, bytes]:
    """(sessionId, the transcript as the store hands it out) of `key`."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    with open_agent_store(resolve_paths(), "main", read_only=True) as store:
        entry = store.get_entry(key)
        assert entry is not None, key
        sink = io.BytesIO()
        store.export_transcript(entry["sessionId"], sink, entry=entry)
        return entry["sessionId"], sink.getvalue()


def _usage() -> tuple[int, int]:
    code, doc, err = cli_json("usage")
    assert code == 0, err
    return doc["totals"]["totalTokens"], doc["totals"]["messages"]


def _remove(path: str, state: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")  # G1: stale rows deleted, reset takes a new id
    if path == "delete":
        code, _, err = cli("sessions", "delete", CRON, "--yes")
        assert code == 0, err
        return CRON
    if path == "cleanup":
        (state / "openclaw.json").write_text(
            json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
        )
        code, _, err = cli_json("sessions", "cleanup", "--enforce")
        assert code == 0, err
        return STALE
    code, _, err = cli_json("sessions", "reset", CRON)
    assert code == 0, err
    return CRON


@pytest.mark.parametrize("path", ["delete", "cleanup", "reset"])
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_round_trip_every_removal_path(kind: str, path: str, state_dir: Path, monkeypatch) -> None:
    make_state(kind, state_dir)
    key = {"delete": CRON, "cleanup": STALE, "reset": CRON}[path]
    sid, before = _events(key)
    usage_before = _usage()
    assert _remove(path, state_dir, monkeypatch) == key
    code, listed, err = cli_json("sessions", "archives")
    assert code == 0, err
    if path == "reset" and kind.startswith("schema"):
        # a real OpenClaw database keeps the previous window in place: nothing left the store
        assert not [a for a in listed["archives"] if a["sessionId"] == sid]
        code, shown, err = cli_json("sessions", "show", key)
        assert code == 0, err
        assert sid in {w["sessionId"] for w in shown["windows"]}
        return
    [archive] = [a for a in listed["archives"] if a["sessionId"] == sid]
    assert archive["key"] == key and archive["reason"] == ("reset" if path == "reset" else "deleted")
    target = key
    args: list[str] = []
    if path == "reset":  # the key holds its new session: restore beside it
        code, _, err = cli("sessions", "restore", key)
        assert code == 1 and "--as" in err
        target, args = key, ["--as", f"{key}:restored"]
    code, dry, err = cli_json("sessions", "restore", target, *args, "--dry-run")
    assert code == 0, err
    assert dry["wouldRestore"] and dry["archive"]["name"] == archive["name"]
    code, doc, err = cli_json("sessions", "restore", target, *args)
    assert code == 0, err
    restored_key = doc["key"]
    new_sid, after = _events(restored_key)
    assert after == before  # byte-identical events
    assert doc["events"] == before.count(b"\n")
    if path != "reset":
        assert new_sid == sid and _usage() == usage_before
    # show names the restored session, its transcript and the archive it came from
    code, shown, err = cli_json("sessions", "show", restored_key)
    assert code == 0, err
    assert shown["transcript"]["sessionId"] == new_sid and shown["transcript"]["events"] == doc["events"]
    assert shown["transcript"]["bytes"] == len(before) - before.count(b"\n")
    if path != "reset":
        assert archive["name"] in {a["name"] for a in shown["archives"]}
    # restoring again into the now existing key is refused, nothing written
    if path != "reset":
        snapshot = tree_digest(state_dir / "agents")
        code, _, err = cli("sessions", "restore", key)
        assert code == 1 and "exists" in err
        assert tree_digest(state_dir / "agents") == snapshot


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_damaged_archive_is_refused_and_nothing_is_written(kind: str, state_dir: Path, monkeypatch) -> None:
    make_state(kind, state_dir)
    _remove("delete", state_dir, monkeypatch)
    code, listed, _ = cli_json("sessions", "archives")
    [archive] = listed["archives"]
    path = Path(archive["path"])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    before = tree_digest(state_dir)
    code, doc, err = cli_json("sessions", "restore", CRON)
    assert code == 6, err
    assert doc["error"]["type"] == "invalid_data" and archive["name"] in doc["error"]["message"]
    assert tree_digest(state_dir) == before


def test_a_schema23_archive_row_restores_from_its_blob_when_its_file_is_gone(
    state_dir: Path, monkeypatch
) -> None:
    make_state("schema23", state_dir)
    sid, before = _events(CRON)
    _remove("delete", state_dir, monkeypatch)
    code, listed, _ = cli_json("sessions", "archives")
    [archive] = listed["archives"]
    assert archive["checksum"]["of"] == "blob"
    Path(archive["path"]).unlink()  # never published, or removed by hand: the database keeps the blob
    code, listed, _ = cli_json("sessions", "archives")
    [archive] = listed["archives"]
    assert archive["source"] == "database"
    code, doc, err = cli_json("sessions", "restore", archive["name"])
    assert code == 0, err
    assert _events(CRON) == (sid, before)


def test_an_unknown_target_and_a_keyless_archive(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    code, doc, err = cli_json("sessions", "restore", "agent:main:telegram:direct:nobody")
    assert code == 4 and "sessions archives" in doc["error"]["message"]
    sessions = state_dir / "agents" / "main" / "sessions"
    plain = sessions / "0f0f0f0f-1111-2222-3333-444444444444.jsonl.deleted.2026-01-01T00-00-00.000Z"
    plain.write_text('{"type":"session","id":"0f0f0f0f-1111-2222-3333-444444444444"}\n')
    code, doc, err = cli_json("sessions", "restore", plain.name)
    assert code == 2 and "--as" in doc["error"]["message"]
    code, doc, err = cli_json("sessions", "restore", plain.name, "--as", "agent:main:recovered:one")
    assert code == 0, err
    assert doc["verified"].startswith("every line is JSON")
    assert _events("agent:main:recovered:one")[1] == plain.read_bytes()


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_archives_list_their_expiry_under_the_current_retention(
    kind: str, state_dir: Path, monkeypatch
) -> None:
    """`sessions archives` (issue 27 §3): key, reason, date, size and expiry under the current
    retention — none while `resetArchiveRetention` is unset (archives are kept, D15), the archive's
    date plus the retention once it is set."""
    make_state(kind, state_dir)
    _remove("delete", state_dir, monkeypatch)
    code, listed, err = cli_json("sessions", "archives")
    assert code == 0, err
    [archive] = listed["archives"]
    assert listed["retentionMs"] is None and archive["expiresAt"] is None
    assert archive["key"] == CRON and archive["reason"] == "deleted" and archive["bytes"] > 0
    assert isinstance(archive["archivedAt"], int)
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"resetArchiveRetention": "7d"}}})
    )
    code, listed, err = cli_json("sessions", "archives")
    assert code == 0, err
    [archive] = listed["archives"]
    week = 7 * 24 * 3600 * 1000
    assert listed["retentionMs"] == week and archive["expiresAt"] == archive["archivedAt"] + week
    code, out, _ = cli("sessions", "archives")
    assert code == 0 and CRON in out


def test_restore_is_refused_while_a_gateway_owns_the_state(state_dir: Path, monkeypatch) -> None:
    """Issue 27 §3: no Gateway (OpenClaw's or ours) has a restore method, so a running one that owns
    the state refuses the offline write (D25): exit 5, `state_owned`, nothing written; once it
    stopped, the same command restores."""
    from tests.gateway_server_support import GatewayProcess

    make_state("legacy", state_dir)
    _remove("delete", state_dir, monkeypatch)
    before = tree_digest(state_dir / "agents")
    with GatewayProcess():
        code, doc, err = cli_json("sessions", "restore", CRON)
    assert code == 5 and doc["error"]["type"] == "state_owned", (code, doc, err)
    assert tree_digest(state_dir / "agents") == before
    code, doc, err = cli_json("sessions", "restore", CRON)
    assert code == 0 and doc["restored"], err
