"""The legacy store: sessions.json + JSONL transcripts (D3, storage-migration §2–§3)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generate_legacy_state

from openclaw_cli.errors import ExitCode, InvalidDataError, InvalidIdError, RefusedError, SessionBusyError
from openclaw_cli.store.base import ReadIssue
from openclaw_cli.store.legacy.store import LegacyStore, dump_store_bytes, parse_store_bytes
from openclaw_cli.store.lock import LockSettings, lock_path_for
from openclaw_cli.store.transcript import iter_jsonl

FAST = LockSettings(acquire_timeout_ms=300)


def store_at(state: Path, agent: str = "main") -> LegacyStore:
    return LegacyStore(state / "agents" / agent / "sessions" / "sessions.json", agent)


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with a checksum (files), a link target, or 'dir'."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + f":{path.stat().st_mtime_ns}"
    return out


def exercise_reads(store: LegacyStore) -> None:
    entries = store.load_entries()
    store.list_entries(limit=5)
    store.count_entries()
    store.session_totals()
    store.stats()
    store.list_archives()
    store.load_rows()
    for key, entry in entries.items():
        store.get_entry(key)
        sid = entry["sessionId"]
        store.has_transcript(sid, entry=entry)
        list(store.iter_transcript(sid, entry=entry))
        store.tail_transcript(sid, 3, entry=entry)
        store.transcript_path(sid, entry)
    list(store.iter_transcript("../../x"))


def assert_streams_byte_identical(store: LegacyStore) -> int:
    checked = 0
    for entry in store.load_entries().values():
        path = store.resolve_transcript(entry["sessionId"], entry)
        if path is None:
            continue
        issues: list[ReadIssue] = []
        lines = list(store.iter_transcript(entry["sessionId"], entry=entry, issues=issues))
        assert issues == []
        assert "".join(line.raw + "\n" for line in lines).encode() == path.read_bytes()
        tail = store.tail_transcript(entry["sessionId"], 4, entry=entry)
        assert [t.raw for t in tail] == [line.raw for line in lines[-4:]]
        checked += 1
    return checked


# ---- the real fixture ---------------------------------------------------------------------------


def test_fixture_state_loads_every_entry_and_transcript(legacy_fixture_state):
    store = store_at(legacy_fixture_state)
    entries = store.load_entries()
    assert len(entries) == 12 and store.issues == []
    raw = json.loads(store.path.read_text())
    assert list(entries) == list(raw)  # file order
    for key, entry in entries.items():
        assert entry == raw[key]
        assert isinstance(entry["sessionId"], str) and isinstance(entry["updatedAt"], int)
    assert entries["agent:main:main"]["sessionId"] == "df30a0ea-38b3-46e4-abd3-2c8eddd59451"
    assert assert_streams_byte_identical(store) == 11  # one entry's transcript is missing
    missing = [k for k, e in entries.items() if not store.has_transcript(e["sessionId"], entry=e)]
    assert missing == ["agent:main:dashboard:b7c03984-2be3-4ecc-9f07-a223563ebc38"]
    assert store.count_entries() == 12
    assert store.kind == "legacy" and store.agent_id == "main"
    assert store.sessions_dir == legacy_fixture_state / "agents" / "main" / "sessions"


def test_fixture_totals_and_stats(legacy_fixture_state):
    store = store_at(legacy_fixture_state)
    totals = store.session_totals()
    assert len(totals) == 11
    for sid, total in totals.items():
        data = (store.sessions_dir / f"{sid}.jsonl").read_bytes()
        lines = data.splitlines()
        assert total.events == len(lines) and total.bytes == sum(len(line) for line in lines)
    assert sum(t.events for t in totals.values()) == 335 - 11  # all lines minus the orphan's
    stats = store.stats()
    assert stats.sessions == 12 and stats.compactions == 3 and stats.archives_count == 0
    assert stats.extra["missingTranscripts"] == 1 and stats.extra["orphanTranscripts"] == 1
    referenced = sum(p.stat().st_size for p in store.referenced_transcripts())
    assert stats.transcript_bytes == referenced
    assert (
        stats.extra["orphanTranscriptBytes"]
        == (store.sessions_dir / "083ddf53-7690-42d8-9a49-01824250e803.jsonl").stat().st_size
    )


def test_reads_never_modify_anything(legacy_fixture_state, tmp_path):
    generated = generate_legacy_state(tmp_path / "gen", 20, 0.1, 3, "--missing", "2", "--orphans", "1")
    for state in (legacy_fixture_state, generated):
        before = snapshot(state)
        store = store_at(state)
        exercise_reads(store)
        exercise_reads(store_at(state))  # a fresh instance: no cache involved
        assert snapshot(state) == before
        assert not list(state.rglob("*.lock")) and not list(state.rglob("*.tmp"))


# ---- generated states ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        ("--header-version", "4"),
        ("--relative-session-file",),
        ("--no-session-file",),
        ("--missing", "2"),
        ("--orphans", "2"),
        (),  # absolute sessionFile
    ],
    ids=["v4", "relative", "no-session-file", "missing", "orphans", "absolute"],
)
def test_generated_states(tmp_path, extra):
    state = generate_legacy_state(tmp_path / "state", 30, 0.2, 7, *extra)
    store = store_at(state)
    entries = store.load_entries()
    raw = json.loads(store.path.read_text())
    assert len(entries) == 30 and list(entries) == list(raw) and store.issues == []
    for key, entry in entries.items():
        assert key and isinstance(entry["sessionId"], str) and isinstance(entry["updatedAt"], int)
    missing = 2 if "--missing" in extra else 0
    assert assert_streams_byte_identical(store) == 30 - missing
    stats = store.stats()
    assert stats.extra["missingTranscripts"] == missing
    assert stats.extra["orphanTranscripts"] == (2 if "--orphans" in extra else 0)
    if extra == ("--header-version", "4"):
        first = next(iter(entries.values()))
        lines = list(store.iter_transcript(first["sessionId"], entry=first))
        assert lines[0].obj["version"] == 4


def test_absolute_session_file_from_another_machine_is_rerooted(tmp_path):
    state = generate_legacy_state(tmp_path / "a", 8, 0.05, 5)
    moved = tmp_path / "b"
    shutil.move(str(state), str(moved))
    store = store_at(moved)
    entries = store.load_entries()
    assert all(e["sessionFile"].startswith(str(tmp_path / "a")) for e in entries.values())
    assert assert_streams_byte_identical(store) == 8
    for entry in entries.values():
        entry_copy = dict(
            entry, sessionFile=f"/home/other/.openclaw/agents/main/sessions/{entry['sessionId']}.jsonl"
        )
        assert (
            store.resolve_transcript(entry["sessionId"], entry_copy)
            == store.sessions_dir / f"{entry['sessionId']}.jsonl"
        )


def test_topic_transcript_named_by_session_file(tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sess-topic-42.jsonl").write_bytes(b'{"type":"session","version":3,"id":"sess"}\n{"a":1}\n')
    (sessions / "sessions.json").write_text(
        json.dumps(
            {
                "agent:main:telegram:group:1:topic:42": {
                    "sessionId": "sess",
                    "updatedAt": 1,
                    "sessionFile": "sess-topic-42.jsonl",
                }
            }
        )
    )
    store = store_at(tmp_path)
    lines = list(store.iter_transcript("sess"))
    assert [line.obj for line in lines][1:] == [{"a": 1}]
    assert store.transcript_path("sess") == sessions / "sess-topic-42.jsonl"


# ---- bad input ----------------------------------------------------------------------------------


def _write_store(tmp_path: Path, content: bytes) -> LegacyStore:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "sessions.json").write_bytes(content)
    return store_at(tmp_path)


def test_sessions_json_not_json(tmp_path):
    store = _write_store(tmp_path, b'{"agent:main:main": {"sessionId": "a",')
    with pytest.raises(InvalidDataError) as info:
        store.load_entries()
    assert info.value.message.startswith(f"{store.path}: ")
    assert info.value.exit_code == ExitCode.INVALID_DATA
    assert [str(i) for i in store.issues] == [info.value.message]
    with pytest.raises(InvalidDataError):
        store.upsert_entries({"k": {"sessionId": "b", "updatedAt": 1}})
    assert store.path.read_bytes() == b'{"agent:main:main": {"sessionId": "a",'


@pytest.mark.parametrize("content", [b"[]", b'"text"', b"null", b"42"])
def test_sessions_json_not_an_object(tmp_path, content):
    store = _write_store(tmp_path, content)
    with pytest.raises(InvalidDataError) as info:
        store.count_entries()
    assert info.value.message == f"{store.path} does not contain an object session store."
    with pytest.raises(InvalidDataError):
        store.save_entries({})
    assert store.path.read_bytes() == content


def test_missing_store_is_empty_and_creates_nothing(tmp_path):
    store = store_at(tmp_path)
    assert store.load_entries() == {} and store.session_totals() == {} and store.list_archives() == []
    assert store.stats().sessions == 0
    assert not (tmp_path / "agents").exists()


def test_symlinked_store_and_non_directory_parent(tmp_path):
    real = tmp_path / "elsewhere.json"
    real.write_text("{}")
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").symlink_to(real)
    with pytest.raises(RefusedError):
        store_at(tmp_path).load_entries()
    (tmp_path / "agents" / "x").mkdir()
    (tmp_path / "agents" / "x" / "sessions").write_text("a file")
    with pytest.raises(InvalidDataError, match="parent path is not a directory"):
        store_at(tmp_path, "x").load_entries()


BAD_ROWS = (
    '{\n  "good": {\n    "sessionId": "g1",\n    "updatedAt": 5\n  },\n'
    '  "typed": {\n    "sessionId": "t1",\n    "updatedAt": "yesterday",\n    "systemSent": "yes"\n  },\n'
    '  "number": 7,\n'
    '  "no-id": {\n    "updatedAt": 1\n  },\n'
    '  "hostile": {\n    "sessionId": "../../x",\n    "updatedAt": 2\n  }\n}'
)


def test_bad_rows_are_reported_kept_and_preserved_on_rewrite(tmp_path):
    store = _write_store(tmp_path, BAD_ROWS.encode())
    assert len(store.issues) == 5  # available before any explicit load
    entries = store.load_entries()
    assert list(entries) == ["good", "typed"]
    messages = [str(issue) for issue in store.issues]
    assert messages == [
        f"{store.path}: session entry 'typed': field updatedAt should be a number, got string",
        f"{store.path}: session entry 'typed': field systemSent should be a boolean, got string",
        f"{store.path}: session entry 'number' is not an object (number); skipped while preserving it in the store.",
        f"{store.path}: session entry 'no-id' is missing a valid sessionId; skipped while preserving the original index for recovery.",
        f"{store.path}: session entry 'hostile' has an unsafe sessionId '../../x'; skipped while preserving it in the store.",
    ]
    rows, total = store.list_entries()
    assert [key for key, _ in rows] == ["good", "typed"] and total == 2  # a string updatedAt sorts last
    assert list(store.iter_transcript("../../x")) == []
    assert store.load_rows()["number"] == 7

    store.upsert_entries({"new": {"sessionId": "n1", "updatedAt": 9}})
    text = store.path.read_text()
    assert text == BAD_ROWS[:-2] + ',\n  "new": {\n    "sessionId": "n1",\n    "updatedAt": 9\n  }\n}'
    store.save_entries({"good": entries["good"]})  # "typed" and "new" go; unusable rows stay
    assert list(json.loads(store.path.read_text())) == ["good", "number", "no-id", "hostile"]
    assert store.delete_entries(["hostile", "missing"]) == ["hostile"]
    assert list(json.loads(store.path.read_text())) == ["good", "number", "no-id"]


def test_transcript_with_malformed_and_truncated_lines(tmp_path):
    store = _write_store(tmp_path, json.dumps({"k": {"sessionId": "s1", "updatedAt": 1}}).encode())
    data = b'{"type":"session","version":3,"id":"s1"}\n{"a":1}\n{"broken"\n{"b":2}\n{"c":'
    transcript = store.sessions_dir / "s1.jsonl"
    transcript.write_bytes(data)
    issues: list[ReadIssue] = []
    lines = list(store.iter_transcript("s1", issues=issues))
    assert [line.obj for line in lines][1:] == [{"a": 1}, {"b": 2}]
    assert [(i.path, i.line) for i in issues] == [(str(transcript), 3), (str(transcript), 5)]
    list(store.iter_transcript("s1"))  # without a list: the issues land on the store
    assert [i.line for i in store.issues] == [3, 5]
    assert [line.obj for line in store.tail_transcript("s1", 2)] == [{"a": 1}, {"b": 2}]
    assert store.session_totals()["s1"].events == 5
    assert transcript.read_bytes() == data


def test_hostile_session_ids(tmp_path):
    store = _write_store(tmp_path, b"{}")
    outside = tmp_path / "x.jsonl"
    outside.write_text('{"secret":1}\n')
    for bad in ("../../x", "../x", "a/b", "..", ".", ""):
        assert list(store.iter_transcript(bad)) == []
        assert store.tail_transcript(bad, 5) == []
        assert not store.has_transcript(bad)
        with pytest.raises(InvalidIdError):
            store.transcript_path(bad)
        with pytest.raises(InvalidIdError):
            store.append_transcript(bad, ['{"a":1}'])
        with pytest.raises(InvalidIdError):
            store.upsert_entries({"k": {"sessionId": bad, "updatedAt": 1}})
    assert outside.read_text() == '{"secret":1}\n'
    assert store.path.read_bytes() == b"{}"
    assert sorted(p.name for p in store.sessions_dir.iterdir()) == ["sessions.json"]


def test_symlinked_transcript_pointing_outside_is_not_followed(tmp_path):
    store = _write_store(tmp_path, json.dumps({"k": {"sessionId": "s1", "updatedAt": 1}}).encode())
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b'{"type":"session","version":3,"id":"s1"}\n{"secret":1}\n')
    link = store.sessions_dir / "s1.jsonl"
    link.symlink_to(outside)
    issues: list[ReadIssue] = []
    assert list(store.iter_transcript("s1", issues=issues)) == []
    assert [(i.path, i.message) for i in issues] == [
        (str(link), "transcript is a symbolic link; not followed (treated as missing)")
    ]
    assert not store.has_transcript("s1")
    assert store.session_totals() == {}
    assert store.stats().extra["missingTranscripts"] == 1
    assert any("symbolic link" in i.message for i in store.issues)
    with pytest.raises(RefusedError):
        store.append_transcript("s1", ['{"x":1}'])
    assert outside.read_bytes() == b'{"type":"session","version":3,"id":"s1"}\n{"secret":1}\n'


# ---- writing ------------------------------------------------------------------------------------


def test_rewrite_of_the_fixture_is_byte_identical(legacy_fixture_state):
    store = store_at(legacy_fixture_state)
    original = store.path.read_bytes()
    store.save_entries(store.load_entries())
    assert store.path.read_bytes() == original
    store.upsert_entries(dict(store.load_entries()))
    assert store.path.read_bytes() == original
    assert (store.path.stat().st_mode & 0o777) == 0o600
    names = {p.name for p in store.sessions_dir.iterdir()}
    assert not [n for n in names if n.startswith("sessions.json.") and n != "sessions.json"]
    assert not lock_path_for(store.path).exists()


def test_rewrite_formats_like_json_stringify(tmp_path):
    state = generate_legacy_state(tmp_path / "s", 6, 0, 9)
    store = store_at(state)
    data = json.loads(store.path.read_text())
    first = next(iter(data))
    entry = dict(
        data[first], label="Café ☕ \u2028 \x1b", custom={"nested": [1, {"x": None}], "empty": {}, "list": []}
    )
    store.upsert_entries({first: entry})
    text = store.path.read_text(encoding="utf-8")
    data[first] = entry
    assert text == json.dumps(data, indent=2, ensure_ascii=False)  # what JSON.stringify(store, null, 2) gives
    assert "Café ☕" in text and not text.endswith("\n") and "\\u001b" in text
    assert list(json.loads(text)) == list(data)


def test_numbers_unknown_fields_and_order_survive_a_rewrite(tmp_path):
    original = (
        '{\n  "b": {\n    "sessionId": "s-b",\n    "updatedAt": 1e+21,\n    "cost": 1.50,\n    "zero": -0,\n'
        '    "big": 123456789012345678901234567890,\n    "small": 0.1,\n    "exp": 2.5E-7,\n'
        '    "future": {"z": 1, "a": [true, null]}\n  },\n  "a": {\n    "sessionId": "s-a",\n    "updatedAt": 5\n  }\n}'
    )
    store = _write_store(tmp_path, original.encode())
    assert store.load_entries()["b"]["cost"] == 1.5
    store.upsert_entries({"c": {"sessionId": "s-c", "updatedAt": 7}})
    text = store.path.read_text()
    for token in (
        '"updatedAt": 1e+21',
        '"cost": 1.50',
        '"zero": -0',
        '"big": 123456789012345678901234567890',
        '"small": 0.1',
        '"exp": 2.5E-7',
    ):
        assert token in text
    assert list(json.loads(text)) == ["b", "a", "c"]
    assert list(json.loads(text)["b"]["future"]) == ["z", "a"]
    # a whole-store save with entries that came from load_entries() keeps the texts too
    store.save_entries(store.load_entries())
    assert '"updatedAt": 1e+21' in store.path.read_text() and '"cost": 1.50' in store.path.read_text()
    # a changed row is written from its new value
    changed = dict(store.load_entries()["b"], cost=2.25)
    store.upsert_entries({"b": changed})
    assert '"cost": 2.25' in store.path.read_text()


def test_parse_and_dump_helpers():
    raw = b'{"x": 1.0, "y": [1e5, -0.0], "z": "\\ud800"}'
    value = parse_store_bytes(raw, lossless=True)
    assert value["z"] == "\ud800"
    dumped = dump_store_bytes(value).decode()
    assert '"x": 1.0' in dumped and "1e5" in dumped and '"\\ud800"' in dumped
    with pytest.raises(ValueError):
        parse_store_bytes(b'{"x": NaN}')


def test_upsert_update_keeps_position_and_delete(tmp_path):
    store = _write_store(
        tmp_path,
        json.dumps(
            {"a": {"sessionId": "s1", "updatedAt": 1}, "b": {"sessionId": "s2", "updatedAt": 2}}, indent=2
        ).encode(),
    )
    store.upsert_entries(
        {"a": {"sessionId": "s1", "updatedAt": 3, "label": "x"}, "c": {"sessionId": "s3", "updatedAt": 4}}
    )
    assert list(store.load_entries()) == ["a", "b", "c"]
    assert store.get_entry("a")["label"] == "x"
    assert store.delete_entries(["b"]) == ["b"] and list(store.load_entries()) == ["a", "c"]
    assert store.delete_entries(["zzz"]) == []


def test_new_store_file_is_created_atomically(tmp_path):
    store = store_at(tmp_path)
    store.upsert_entries({"agent:main:main": {"sessionId": "abc", "updatedAt": 1}})
    assert (
        store.path.read_text()
        == '{\n  "agent:main:main": {\n    "sessionId": "abc",\n    "updatedAt": 1\n  }\n}'
    )
    assert (store.path.stat().st_mode & 0o777) == 0o600
    assert (store.sessions_dir.stat().st_mode & 0o777) == 0o700


def test_append_transcript_creates_v4_header_and_appends(tmp_path):
    store = store_at(tmp_path)
    path = store.append_transcript(
        "new-session", ['{"type":"message","id":"a1","parentId":null}'], cwd="/work", now_ms=1796000000000
    )
    assert path == store.sessions_dir / "new-session.jsonl"
    assert path.read_text() == (
        '{"type":"session","version":4,"id":"new-session","timestamp":"2026-11-30T00:53:20.000Z","cwd":"/work"}\n'
        '{"type":"message","id":"a1","parentId":null}\n'
    )
    assert (path.stat().st_mode & 0o777) == 0o600
    store.append_transcript("new-session", ['{"type":"message","id":"a2","parentId":"a1"}'], cwd="/elsewhere")
    lines = list(iter_jsonl(path))
    assert [line.obj.get("id") for line in lines] == ["new-session", "a1", "a2"]
    assert not lock_path_for(path).exists()


def test_append_to_fixture_transcript_keeps_existing_bytes(legacy_fixture_state):
    store = store_at(legacy_fixture_state)
    entry = store.get_entry("agent:main:main")
    path = store.resolve_transcript(entry["sessionId"], entry)
    before = path.read_bytes()
    store.append_transcript(
        entry["sessionId"], ['{"type":"custom","id":"zz","parentId":null,"customType":"t"}'], entry=entry
    )
    after = path.read_bytes()
    assert after == before + b'{"type":"custom","id":"zz","parentId":null,"customType":"t"}\n'


def test_append_transcript_waits_for_a_live_openclaw_lock(tmp_path):
    store = store_at(tmp_path)
    path = store.append_transcript("s1", ['{"a":1}'], cwd="/w")
    before = path.read_bytes()
    code = (
        "import json, os, sys, time\n"
        "fd = os.open(os.environ['LOCK_PATH'], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n"
        "os.write(fd, json.dumps({'pid': os.getpid(), 'createdAt': time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime())}, indent=2).encode())\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    lock_path = lock_path_for(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", code, "/usr/bin/openclaw"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, LOCK_PATH=str(lock_path)),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(SessionBusyError) as info:
            store.append_transcript("s1", ['{"b":2}'], lock_settings=FAST)
        assert re.fullmatch(
            rf"session file locked \(timeout 300ms\): pid={holder.pid} alive=true ageMs=\d+ {re.escape(str(lock_path))}",
            info.value.message,
        )
        assert path.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
