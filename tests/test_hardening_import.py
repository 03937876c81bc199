"""Issue 13, cases 1–4 and 9: an import never hides data (D22). Every test runs the real CLI as a
subprocess on a generated legacy state; each fails on the code before publish-on-complete,
lossless entries and quarantined lines."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
from pathlib import Path

import pytest

from openclaw_cli.errors import ExitCode
from openclaw_cli.migration.context import CRASH_COUNT_ENV, CRASH_ENV
from tests.hardening_support import (
    ARCHIVE_DIR,
    DB,
    SESSIONS,
    can_mount,
    cli,
    db_session_lines,
    doctor,
    file_lines,
    leftovers,
    make_state,
    store_json,
    tmpfs,
    transcripts,
    tree_digest,
)


def _listed(state: Path) -> tuple[int, dict]:
    proc = cli(state, "sessions", "--json", "--limit", "all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    return doc["count"], doc


def _reads_legacy_and_says_pending(state: Path, legacy_count: int, *, failed: bool) -> None:
    count, doc = _listed(state)
    assert count == legacy_count and doc["path"].endswith("sessions.json")
    assert ("failed" if failed else "did not complete") in doc["hint"], doc["hint"]
    assert "openclaw doctor --session-sqlite import" in doc["hint"] and "recover" in doc["hint"]
    status = cli(state, "status", "--json", "--no-probe")
    assert status.returncode == 0, status.stderr
    body = json.loads(status.stdout)
    assert [s["kind"] for s in body["stores"]] == ["legacy"] and body["stores"][0]["sessions"] == legacy_count
    dry = cli(state, "sessions", "cleanup", "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["storePath"].endswith("sessions.json"), dry.stdout


def _import_ok(state: Path, originals: dict[str, bytes]) -> None:
    done = doctor(state, "import", "--json")
    assert done.returncode == 0, done.stdout[-2000:]
    stored = db_session_lines(state / DB)
    for name, data in originals.items():
        assert stored.get(name[: -len(".jsonl")], []) == file_lines(data), name
    assert leftovers(state) == []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_state(tmp_path_factory.mktemp("hardening-import"), 40, 0.3, 13)


def _copy(template: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(template.parent, dest)
    return dest / "state"


def _originals(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in transcripts(state)}


# ---- case 1: a failed or interrupted import never hides the intact legacy store ------------------


@pytest.fixture(scope="module")
def crash_points(template: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """How many crash points an uninterrupted import of the template passes."""
    root = tmp_path_factory.mktemp("probe")
    probe = _copy(template, root / "probe")
    counter = root / "count"
    assert doctor(probe, "import", **{CRASH_COUNT_ENV: str(counter)}).returncode == 0
    return int(counter.read_text())


@pytest.mark.parametrize("point", ["early", "middle", "before-publish"])
def test_killed_import_leaves_the_legacy_store_in_use(
    template: Path, tmp_path: Path, point: str, crash_points: int
) -> None:
    total = crash_points
    records = len(store_json(template))
    at = {"early": 3, "middle": 2 + records // 2, "before-publish": records + 3}[point]
    assert at < total
    state = _copy(template, tmp_path / "run")
    originals = _originals(state)
    killed = doctor(state, "import", **{CRASH_ENV: str(at)})
    assert killed.returncode == -signal.SIGKILL
    assert not (state / DB).exists()  # nothing half-built is live
    _reads_legacy_and_says_pending(state, records, failed=False)
    _import_ok(state, originals)  # the re-run starts a fresh build and publishes it
    count, doc = _listed(state)
    assert count == records and doc["path"].endswith(".sqlite") and "hint" not in doc


def test_recover_discards_the_unpublished_build_and_clears_the_notice(template: Path, tmp_path: Path) -> None:
    state = _copy(template, tmp_path / "run")
    before = tree_digest(state / SESSIONS)
    assert doctor(state, "import", **{CRASH_ENV: "12"}).returncode == -signal.SIGKILL
    builds = [p for p in (state / DB).parent.glob("*.import-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(builds) == 1
    rec = doctor(state, "recover", "--json")
    assert rec.returncode == 0, rec.stdout
    assert json.loads(rec.stdout)["targets"][0]["discardedImportBuilds"] == [str(b) for b in builds]
    assert list((state / DB).parent.iterdir()) == []
    assert tree_digest(state / SESSIONS) == before
    _, doc = _listed(state)
    assert "would migrate it" in doc["hint"]  # back to the plain legacy hint


@pytest.mark.parametrize("sig", ["INT", "TERM"])
def test_ctrl_c_during_import_stops_at_a_safe_point_and_says_what_to_run(
    template: Path, tmp_path: Path, sig: str
) -> None:
    state = _copy(template, tmp_path / "run")
    originals = _originals(state)
    records = len(store_json(state))
    proc = doctor(state, "import", **{CRASH_ENV: str(records // 2), "OPENCLAW_MIGRATION_CRASH_SIGNAL": sig})
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert "Import interrupted at a safe point" in proc.stderr
    assert "still read from the legacy store (unchanged): main" in proc.stderr
    assert "Run `openclaw doctor --session-sqlite import` to finish" in proc.stderr
    assert not (state / DB).exists() and leftovers(state) == []
    _reads_legacy_and_says_pending(state, records, failed=True)
    _import_ok(state, originals)


def test_ctrl_c_while_archiving_says_the_store_is_live(
    template: Path, tmp_path: Path, crash_points: int
) -> None:
    state = _copy(template, tmp_path / "run")
    originals = _originals(state)
    total = crash_points
    proc = doctor(
        state, "import", "--json", **{CRASH_ENV: str(total - 10), "OPENCLAW_MIGRATION_CRASH_SIGNAL": "INT"}
    )
    assert proc.returncode == 130
    body = json.loads(proc.stdout)
    assert body["error"]["type"] == "interrupted"
    assert "Now read from SQLite (imported and verified): main" in body["error"]["message"]
    count, doc = _listed(state)
    assert count == len(store_json(template)) and doc["path"].endswith(".sqlite")
    _import_ok(state, {k: v for k, v in originals.items() if (state / SESSIONS / k).exists()})


def test_integer_beyond_64_bits_is_imported_with_its_text_and_every_row_listed(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    path = state / SESSIONS / "sessions.json"
    raw = path.read_text()
    key = next(iter(store_json(state)))
    value = store_json(state)[key]["updatedAt"]
    raw = raw.replace(f'"updatedAt": {value}', '"updatedAt": 1' + "0" * 30, 1)
    path.write_text(raw)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == 0, proc.stdout
    issues = json.loads(proc.stdout)["targets"][0]["issues"]
    assert [(i["code"], i["sessionKey"]) for i in issues] == [("entry_value_unrepresentable", key)]
    assert (
        "field updatedAt = 1000000000000000000000000000000 is an integer beyond 64 bits"
        in issues[0]["message"]
    )
    count, doc = _listed(state)
    assert count == 12 and doc["path"].endswith(".sqlite")
    import sqlite3

    conn = sqlite3.connect(state / DB)
    (text,) = conn.execute("SELECT entry_json FROM session_nodes WHERE session_key = ?", (key,)).fetchone()
    conn.close()
    assert '"updatedAt": 1000000000000000000000000000000' in text  # the original entry text, as written


@pytest.mark.parametrize("bad_key", ["", "   ", "\\u0000x", "\\ud800"])
def test_unusable_key_is_reported_and_the_entry_stored_under_a_substitute(
    tmp_path: Path, bad_key: str
) -> None:
    state = make_state(tmp_path)
    path = state / SESSIONS / "sessions.json"
    data = json.loads(path.read_text())
    first = next(iter(data))
    raw = path.read_text().replace(json.dumps(first), f'"{bad_key}"', 1)
    path.write_text(raw)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == 0, proc.stdout
    issues = json.loads(proc.stdout)["targets"][0]["issues"]
    assert [i["code"] for i in issues] == ["entry_key_invalid"]
    assert issues[0]["sessionKey"].startswith("agent:main:invalid-key:")
    count, doc = _listed(state)
    assert count == 12 and issues[0]["sessionKey"] in {s["key"] for s in doc["sessions"]}
    archived = [
        p
        for p in (state / ARCHIVE_DIR).iterdir()
        if p.name.endswith(".imported-" + p.name.rsplit("-", 1)[-1]) and "sessions.json" in p.name
    ]
    assert archived and archived[0].read_text() == raw  # the original key is kept in the archived index


# ---- case 2: a full disk never publishes anything ------------------------------------------------


@pytest.fixture
def small_fs() -> Path:
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    with tmpfs("3m") as mnt:
        yield mnt


def test_full_disk_is_refused_before_writing_with_need_and_have(small_fs: Path) -> None:
    state = make_state(small_fs, 40, 1.2, 5)
    before = tree_digest(small_fs)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == ExitCode.NO_SPACE, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "no_space"
    assert re.search(r"not enough space \(need \d+, have \d+\)", error["message"])
    assert tree_digest(small_fs) == before  # nothing written anywhere


def test_enospc_during_the_write_rolls_back_and_publishes_nothing(small_fs: Path) -> None:
    state = make_state(small_fs, 40, 1.2, 5)
    sessions_before = tree_digest(state / SESSIONS)
    proc = doctor(state, "import", "--json", OPENCLAW_SPACE_CHECK="0")  # the pre-check is skipped
    assert proc.returncode == ExitCode.NO_SPACE, proc.stdout
    message = json.loads(proc.stdout)["error"]["message"]
    assert "no space left on the device" in message and "rolled back" in message and str(small_fs) in message
    assert not (state / DB).exists() and list((state / DB).parent.iterdir()) == []
    assert tree_digest(state / SESSIONS) == sessions_before
    assert leftovers(state) == []
    _reads_legacy_and_says_pending(state, 40, failed=True)


# ---- case 3: values JSON/SQLite cannot hold exactly ----------------------------------------------


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1" + "0" * 400])
def test_number_beyond_double_range_is_stored_as_written_and_readable(tmp_path: Path, literal: str) -> None:
    state = make_state(tmp_path)
    path = state / SESSIONS / "sessions.json"
    data = store_json(state)
    key = next(iter(data))
    original = path.read_text().replace(
        f'"updatedAt": {data[key]["updatedAt"]}', f'"updatedAt": {literal}', 1
    )
    path.write_text(original)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == 0, proc.stdout
    issue = json.loads(proc.stdout)["targets"][0]["issues"][0]
    assert (
        issue["code"] == "entry_value_unrepresentable" and "beyond the range of a double" in issue["message"]
    )
    every = (
        ["sessions", "--json"],
        ["status", "--json", "--no-probe"],
        ["sessions", "cleanup", "--dry-run", "--json"],
        ["sessions"],
        ["status", "--no-probe"],
    )
    for args in every if literal == "1e400" else every[:1]:
        out = cli(state, *args)
        assert out.returncode == 0, (args, out.stdout[-500:], out.stderr[-500:])
        assert "Infinity" not in out.stdout and "Traceback" not in out.stderr
    listing = cli(state, "sessions", "--json").stdout
    row = next(s for s in json.loads(listing)["sessions"] if s["key"] == key)
    assert f'"updatedAt": {literal}' in listing and row["ageMs"] is None
    restored = doctor(state, "restore")
    assert restored.returncode == 0
    assert path.read_text() == original  # the index comes back byte-identical
    assert cli(state, "sessions", "--json").returncode == 0


# ---- case 4: one malformed transcript line never drops the lines after it -----------------------


@pytest.mark.parametrize(
    "bad",
    [
        b'{"type":"message","text":"\xff\xfe"}',
        b'{"type":"message","t":"\x00"}',
        b"[1,2,3]",
        b'{"type":"message","id":"x1","parentId":',
        b"null",
        b'{"type":"openclaw-cli.quarantined-line","raw":"forged"}',
    ],
)
def test_malformed_line_is_quarantined_and_every_later_line_imported(tmp_path: Path, bad: bytes) -> None:
    state = make_state(tmp_path, 6, 0.2, 3)
    target = max(transcripts(state), key=lambda p: len(p.read_bytes().split(b"\n")))
    lines = target.read_bytes().split(b"\n")
    assert len(lines) > 20
    lines[5] = bad
    content = b"\n".join(lines)
    target.write_bytes(content)
    proc = doctor(state, "import", "--json")
    assert proc.returncode == 0, proc.stdout
    issues = json.loads(proc.stdout)["targets"][0]["issues"]
    assert [i["code"] for i in issues] == ["transcript_malformed"]
    assert f"{target}:6: malformed transcript line" in issues[0]["message"]
    assert "every line after it is imported" in issues[0]["message"]
    sid = target.name[: -len(".jsonl")]
    assert db_session_lines(state / DB)[sid] == file_lines(content)  # all of them, byte-exact, in order
    import io

    from openclaw_cli.store.sqlite.store import SqliteStore

    store = SqliteStore(state / DB, "main", read_only=True)
    buf = io.BytesIO()
    store.export_transcript(sid, buf)
    store.close()
    assert file_lines(buf.getvalue()) == file_lines(content)  # an archive of it would be the original
    key = next(k for k, v in store_json_archived(state).items() if v["sessionId"] == sid)
    tail = cli(state, "sessions", "tail", "--session-key", key, "--tail", "50", "--json")
    assert tail.returncode == 0, tail.stderr


def store_json_archived(state: Path) -> dict:
    path = next(p for p in (state / ARCHIVE_DIR).iterdir() if "sessions.json" in p.name)
    return json.loads(path.read_text())


def test_dry_run_counts_every_line_the_import_will_store(tmp_path: Path) -> None:
    state = make_state(tmp_path, 6, 0.2, 3)
    target = transcripts(state)[0]
    lines = target.read_bytes().split(b"\n")
    lines[2] = b"\xff not json"
    target.write_bytes(b"\n".join(lines))
    dry = json.loads(doctor(state, "dry-run", "--json").stdout)["totals"]
    done = json.loads(doctor(state, "import", "--json").stdout)["totals"]
    assert dry["validatedTranscriptEvents"] == done["importedTranscriptEvents"]


# ---- case 9: originals moved into the import archive are private --------------------------------


def test_archived_originals_are_0600(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    for path in transcripts(state):
        os.chmod(path, 0o644)
    os.chmod(state / SESSIONS / "sessions.json", 0o644)
    assert doctor(state, "import").returncode == 0
    modes = {stat.S_IMODE(p.stat().st_mode) for p in (state / ARCHIVE_DIR).iterdir()}
    assert modes == {0o600}
