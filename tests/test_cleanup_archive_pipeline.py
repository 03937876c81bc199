"""The bulk archive path of a SQLite cleanup (issue 16): `SqliteStore.export_transcripts` (many
sessions a statement), `ExportArchiver` (one verified archive per export with one write and one
read-back) and `ArchiveBatch.archive_exports` (archive worker threads). Each must give exactly what
the one-by-one path gave, verify what it wrote, and leave nothing behind when it fails."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from cleanup_support import transcript_lines

import openclaw_cli.store.archives as ar
import openclaw_cli.store.sqlite.store as sqlite_mod
from openclaw_cli.errors import InvalidIdError
from openclaw_cli.store.retire import ArchiveBatch, Retirement
from openclaw_cli.store.sqlite.store import ImportRecord, SqliteStore

NOW = 1_796_000_000_000


@pytest.fixture
def store(tmp_path: Path):
    """Sessions of every shape: several turns, one header only, one with a quarantined
    (not UTF-8) line and one with a line that merely mentions the quarantine type."""
    db = SqliteStore(tmp_path / "agent" / "openclaw-agent.sqlite", "main", create=True)
    records = [
        ImportRecord(
            f"agent:main:s{i}",
            {"sessionId": f"s{i}", "updatedAt": i},
            [line.encode() for line in transcript_lines(f"s{i}", 1 + i % 4)],
        )
        for i in range(40)
    ]
    bad = [
        *(line.encode() for line in transcript_lines("q0", 2)),
        b'{"broken": \xff\xfe',
        b'{"type":"message","id":"z"}',
    ]
    records.append(ImportRecord("agent:main:q0", {"sessionId": "q0"}, bad))
    mention = transcript_lines("m0", 1) + [
        '{"type":"note","x":{"type":"openclaw-cli.quarantined-line","raw":"no"}}'
    ]
    records.append(ImportRecord("agent:main:m0", {"sessionId": "m0"}, [line.encode() for line in mention]))
    result = db.bulk_import(records, on_malformed="quarantine")
    assert sum(r.quarantined for r in result.records) == 1
    yield db
    db.close()


def _one_by_one(store: SqliteStore, sid: str) -> tuple[bytes, object]:
    buf = io.BytesIO()
    totals = store.export_transcript(sid, buf)
    return buf.getvalue(), totals


@pytest.mark.parametrize("batch_max", [sqlite_mod.EXPORT_BATCH_MAX_BYTES, 300])
def test_export_transcripts_equals_the_one_by_one_export(store, monkeypatch, batch_max):
    monkeypatch.setattr(sqlite_mod, "EXPORT_BATCH_MAX_BYTES", batch_max)  # 300: most go the streamed way
    sids = ["q0", *(f"s{i}" for i in range(40)), "m0", "missing", "s3", "q0"]  # unknown and repeated ids too
    with store.transcript_snapshot():
        got = list(store.export_transcripts(sids, batch=7))
    assert [g[0] for g in got] == sids
    for sid, content, totals in got:
        assert (content, totals) == _one_by_one(store, sid), sid
    quarantined = dict((sid, content) for sid, content, _ in got)["q0"]
    assert b'{"broken": \xff\xfe\n' in quarantined  # the bytes it was imported from
    assert dict((sid, t) for sid, _, t in got)["missing"].events == 0


def test_an_export_of_text_that_is_not_utf8_fails_as_the_one_by_one_export(store):
    """The batch export reads each line's stored bytes (issue 30, stop 45: no str made and encoded
    again); stored text that is not UTF-8 (another writer's damage) still fails it as reading the
    text fails the one-by-one export, and other sessions export as before."""
    conn = store._db()
    conn.execute(
        "UPDATE transcript_events SET event_json = CAST(X'7B2261223A22FF227D' AS TEXT)"
        " WHERE session_id = 's3' AND seq = (SELECT MIN(seq) FROM transcript_events WHERE session_id = 's3')"
    )
    with pytest.raises(Exception) as one:
        _one_by_one(store, "s3")
    with store.transcript_snapshot(), pytest.raises(Exception) as many:
        list(store.export_transcripts(["s1", "s3"]))
    assert type(many.value) is type(one.value) and "UTF-8" in str(many.value)
    with store.transcript_snapshot():
        got = list(store.export_transcripts(["s1", "s2"]))
    assert [(c, t) for _, c, t in got] == [_one_by_one(store, "s1"), _one_by_one(store, "s2")]


def test_export_archiver_writes_verified_archives_identical_to_the_general_writer(tmp_path):
    data = b"".join(line.encode() + b"\n" for line in transcript_lines("abc", 3))
    general = ar.write_verified_archive(tmp_path / "a", "abc", "deleted", data, now_ms=NOW, sync=False)
    (tmp_path / "b").mkdir()
    archiver = ar.ExportArchiver(tmp_path / "b", os.path.realpath(tmp_path / "b"), "deleted", NOW)
    fast = archiver.write("abc", data, "abc.jsonl")
    assert fast.path.name == general.path.name and fast.compressed and not fast.reused
    assert fast.path.read_bytes() == general.path.read_bytes()  # the same zstd frame
    assert (fast.sha256, fast.size, fast.stored_size) == (general.sha256, general.size, general.stored_size)
    assert fast.path.stat().st_mode & 0o777 == 0o600
    assert ar.read_archive_bytes(fast.path) == data
    assert os.listdir(tmp_path / "b") == [fast.path.name]  # no temp file left
    # a clash takes the next millisecond; identical content among `existing` is reused
    other = archiver.write("abc", data + b'{"more":1}\n', "abc.jsonl")
    assert other.path.name == ar.archive_name("abc.jsonl", "deleted", NOW + 1, compressed=True)
    listed = ar.list_archives(tmp_path / "b")
    again = archiver.write("abc", data, "abc.jsonl", listed)
    assert again.reused and again.path == fast.path
    assert len(os.listdir(tmp_path / "b")) == 2


@pytest.mark.parametrize("unnamed", [True, False] if hasattr(os, "O_TMPFILE") else [False])
def test_export_archiver_refuses_hostile_names_and_a_failed_read_back_leaves_nothing(
    tmp_path, monkeypatch, unnamed
):
    monkeypatch.setattr(ar, "_UNNAMED_FILES", unnamed)
    tmp_path = tmp_path / "d"
    tmp_path.mkdir()
    archiver = ar.ExportArchiver(tmp_path, os.path.realpath(tmp_path), "deleted", NOW)
    for sid, base in (("../x", "x.jsonl"), ("s", "../s.jsonl"), ("s", ".hidden")):
        with pytest.raises(InvalidIdError):
            archiver.write(sid, b"{}\n", base)
    monkeypatch.setattr(ar, "_validate_base", lambda base: None)  # the second guard still holds
    with pytest.raises(ar.RefusedError):
        archiver.write("s", b"{}\n", "../escape.jsonl")
    # the unnamed file's read-back (through its descriptor) or the temp way's (by name) fails
    monkeypatch.setattr(ar, "_holds" if unnamed else "_written_as", lambda *where_and_what: False)
    with pytest.raises(ar.ArchiveError, match="verification failed for s"):
        archiver.write("s", b'{"a":1}\n', "s.jsonl")
    archiver.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no unnamed files on this platform")
def test_an_unnamed_archive_is_verified_before_it_gets_its_name(tmp_path, monkeypatch):
    """D6.2 on the unnamed way (issue 30): the read-back goes through the file's own descriptor
    before the link, so no name ever shows an unverified archive; bytes other than the blob
    (a short or a damaged write) fail it and nothing is named."""
    directory = tmp_path / "d"
    directory.mkdir()
    seen: list[list[str]] = []
    real_holds = ar._holds

    def spy(fd, blob, original):
        seen.append(os.listdir(directory))  # what the directory shows while it is checked
        return real_holds(fd, blob, original)

    monkeypatch.setattr(ar, "_holds", spy)
    archiver = ar.ExportArchiver(directory, os.path.realpath(directory), "deleted", NOW)
    data = b'{"a":1}\n' * 40
    good = archiver.write("s1", data, "s1.jsonl")
    assert seen == [[]] and ar.read_archive_bytes(good.path) == data
    real_write_all = ar._write_all
    for damage in (
        lambda blob: blob[:-1],
        lambda blob: blob + b"\0",
        lambda blob: blob[:5] + b"x" + blob[6:],
    ):
        monkeypatch.setattr(
            ar, "_write_all", lambda fd, blob, damage=damage: real_write_all(fd, damage(blob))
        )
        with pytest.raises(ar.ArchiveError, match="verification failed for s2"):
            archiver.write("s2", data, "s2.jsonl")
        assert os.listdir(directory) == [good.path.name]
    archiver.close()


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no unnamed files on this platform")
def test_an_unnamed_archive_must_decompress_to_the_original_itself(tmp_path, monkeypatch):
    """The unnamed way compares the read-back's content with the export byte for byte (issue 30:
    no second sha256): a frame that holds exactly what was written but other content (a compressor
    gone wrong), or content that differs in one byte, fails it and nothing is named."""
    (tmp_path / "d").mkdir()
    archiver = ar.ExportArchiver(tmp_path / "d", os.path.realpath(tmp_path / "d"), "deleted", NOW)
    data = b'{"a":1}\n' * 40
    real = ar._compressor(3)

    class Wrong:
        def __init__(self, change) -> None:
            self.change = change

        def compress(self, content: bytes) -> bytes:
            return real.compress(self.change(content))

    for change in (lambda c: c[:-1], lambda c: c.replace(b"1", b"2", 1), lambda c: c + b"\n"):
        monkeypatch.setattr(ar, "_compressor", lambda level, change=change: Wrong(change))
        with pytest.raises(ar.ArchiveError, match="verification failed for s1"):
            archiver.write("s1", data, "s1.jsonl")
        assert os.listdir(tmp_path / "d") == []
    monkeypatch.setattr(ar, "_compressor", lambda level: real)
    good = archiver.write("s1", data, "s1.jsonl")
    archiver.close()
    assert ar.read_archive_bytes(good.path) == data and good.sha256 == hashlib.sha256(data).hexdigest()


def test_the_read_back_rejects_other_bytes(tmp_path):
    tmp_path = tmp_path / "d"
    tmp_path.mkdir()
    data = b'{"a":1}\n' * 50
    blob = ar._compressor(3).compress(data)
    sha = hashlib.sha256(data).hexdigest()
    path = tmp_path / "x.zst"
    path.write_bytes(blob)
    assert ar._written_as(str(path), blob, sha, len(data))
    path.write_bytes(blob[:-1])  # truncated
    assert not ar._written_as(str(path), blob, sha, len(data))
    path.write_bytes(blob + b"\0")  # longer
    assert not ar._written_as(str(path), blob, sha, len(data))
    path.write_bytes(blob)
    assert not ar._written_as(str(path), blob, "0" * 64, len(data))  # not the original's content
    os.unlink(path)
    os.symlink(tmp_path / "elsewhere", path)
    assert not ar._written_as(str(path), blob, sha, len(data))


def test_temp_names_are_the_shape_stale_temp_sweeps_recognise(tmp_path, monkeypatch):
    seen: list[str] = []
    real_publish = ar._publish_moved

    def spy(tmp, final):
        seen.append(os.path.basename(tmp))
        return real_publish(tmp, final)

    monkeypatch.setattr(ar, "_publish_moved", spy)
    monkeypatch.setattr(ar, "_UNNAMED_FILES", False)  # (where unnamed files are refused: temp + rename)
    tmp_path = tmp_path / "d"
    tmp_path.mkdir()
    archiver = ar.ExportArchiver(tmp_path, os.path.realpath(tmp_path), "deleted", NOW)
    archiver.write("s1", b"{}\n", "s1.jsonl")
    archiver.write("s2", b"{}\n", "s2.jsonl")
    assert len(set(seen)) == 2
    assert all(ar.archive_temp_pid(name) == os.getpid() for name in seen)


def _named_creations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    created: list[str] = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            created.append(os.path.basename(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return created


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no unnamed files on this platform")
def test_export_archives_are_unnamed_files_linked_under_their_name(tmp_path, monkeypatch):
    """No temp name, no rename (issue 30): the archive is written unnamed and linked once under its
    final name, which never replaces a file (a clash takes the next millisecond); what is linked is
    exactly what the general writer writes."""
    data = b"".join(line.encode() + b"\n" for line in transcript_lines("abc", 3))
    general = ar.write_verified_archive(tmp_path / "a", "abc", "deleted", data, now_ms=NOW, sync=False)
    (tmp_path / "b").mkdir()
    created = _named_creations(monkeypatch)
    renames: list[object] = []
    monkeypatch.setattr(ar, "_publish_moved", lambda tmp, final: renames.append(tmp) or (False, False))
    archiver = ar.ExportArchiver(tmp_path / "b", os.path.realpath(tmp_path / "b"), "deleted", NOW)
    fast = archiver.write("abc", data, "abc.jsonl")
    squatter = tmp_path / "b" / ar.archive_name("abc.jsonl", "deleted", NOW + 1, compressed=True)
    squatter.write_bytes(b"not ours")
    other = archiver.write("abc", data + b'{"more":1}\n', "abc.jsonl")
    archiver.close()
    assert created == [] and renames == []
    assert fast.path.read_bytes() == general.path.read_bytes() and fast.path.stat().st_mode & 0o777 == 0o600
    assert other.path.name == ar.archive_name("abc.jsonl", "deleted", NOW + 2, compressed=True)
    assert squatter.read_bytes() == b"not ours"  # never replaced
    assert ar.read_archive_bytes(other.path) == data + b'{"more":1}\n'
    assert sorted(os.listdir(tmp_path / "b")) == sorted([fast.path.name, squatter.name, other.path.name])


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no unnamed files on this platform")
def test_a_failed_unnamed_write_leaves_nothing_and_a_refused_link_takes_the_temp_way(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    archiver = ar.ExportArchiver(tmp_path / "d", os.path.realpath(tmp_path / "d"), "deleted", NOW)
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError, match="No space"):
        archiver.write("s1", b'{"a":1}\n', "s1.jsonl")
    assert os.listdir(tmp_path / "d") == []  # a kill or a failure before the link: no file at all
    monkeypatch.setattr(os, "write", real_write)
    real_link = os.link

    def no_proc(src, dst, **kwargs):
        if str(src).startswith("/proc/self/fd/"):
            raise FileNotFoundError(2, "No such file or directory")  # no /proc mounted
        return real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", no_proc)
    created = _named_creations(monkeypatch)
    first = archiver.write("s1", b'{"a":1}\n', "s1.jsonl")
    second = archiver.write("s2", b'{"a":2}\n', "s2.jsonl")
    archiver.close()
    assert (
        ar.read_archive_bytes(first.path) == b'{"a":1}\n'
        and ar.read_archive_bytes(second.path) == b'{"a":2}\n'
    )
    assert len(created) == 2 and all(name.endswith(".tmp") for name in created)  # the temp way from then on
    assert sorted(os.listdir(tmp_path / "d")) == sorted([first.path.name, second.path.name])


def _items(n: int) -> list[tuple[str, bytes, int]]:
    return [(f"sess{i}", (f'{{"i":{i}}}\n' * (1 + i % 5)).encode() if i % 7 else b"", i) for i in range(n)]


def test_archive_exports_archives_each_export_in_order_with_a_checkpoint_each(tmp_path):
    ticks: list[int] = []
    batch = ArchiveBatch(tmp_path / "d", NOW, checkpoint=lambda: ticks.append(1))
    got = list(batch.archive_exports(_items(100)))
    assert [tag for _, tag, _ in got] == list(range(100))
    for sid, tag, result in got:
        if tag % 7 == 0:
            assert result is None  # empty content: nothing to archive
            continue
        assert result.path.name.startswith(f"{sid}.jsonl.deleted.")
        assert ar.read_archive_bytes(result.path) == (f'{{"i":{tag}}}\n' * (1 + tag % 5)).encode()
    archived = sum(1 for _, _, r in got if r is not None)
    assert len(ticks) == archived == len(batch.created) == len(os.listdir(batch.directory))
    assert not any(name.endswith(".tmp") for name in os.listdir(batch.directory))
    # a re-run (after a kill before the commit) reuses the verified archives it finds
    again = ArchiveBatch(tmp_path / "d", NOW + 5000)
    assert all(r is None or r.reused for _, _, r in again.archive_exports(_items(100)))
    assert not again.created and len(os.listdir(batch.directory)) == archived


def test_a_failing_archive_leaves_every_published_file_to_the_rollback(tmp_path, monkeypatch):
    real_write = ar.ExportArchiver.write

    def failing(self, session_id, data, base, existing=(), prepared=None):
        if session_id == "sess50":
            raise OSError(28, "No space left on device")
        return real_write(self, session_id, data, base, existing, prepared)

    monkeypatch.setattr(ar.ExportArchiver, "write", failing)
    batch = ArchiveBatch(tmp_path / "d", NOW)
    with pytest.raises(OSError, match="No space"):
        for _ in batch.archive_exports(_items(100)):
            pass
    assert len(batch.created) == len(os.listdir(batch.directory)) > 0
    batch.rollback()
    assert os.listdir(batch.directory) == []


def test_each_archive_is_compressed_and_checked_on_another_thread_chunks_ahead(tmp_path, monkeypatch):
    """Issue 30 (stop 45): zstd and sha256 of archive k+1 run on a thread of their own while this
    thread writes, reads back and links archive k's file; the files, their order, the names and
    the checks are the same as archiving each export whole on this thread."""
    import threading

    import openclaw_cli.store.retire as retire_mod

    main = threading.get_ident()
    where: list[int] = []
    real_compressor = ar._compressor

    class Spy:
        def __init__(self, level: int) -> None:
            self.real = real_compressor(level)

        def compress(self, content: bytes) -> bytes:
            where.append(threading.get_ident())
            return self.real.compress(content)

    monkeypatch.setattr(ar, "_compressor", Spy)
    read: list[str] = []

    def items():
        for sid, data, tag in _items(100):
            read.append(sid)
            yield sid, data, tag

    batch = ArchiveBatch(tmp_path / "ahead", NOW)
    got = []
    for sid, tag, result in batch.archive_exports(items()):
        # the exports are read on this thread at most AHEAD_DEPTH + 1 chunks ahead of their archive
        assert len(read) - len(got) <= (retire_mod.AHEAD_DEPTH + 1) * retire_mod.AHEAD_CHUNK
        got.append((sid, tag, result))
    assert where and main not in where  # every compression off this thread
    assert [tag for _, tag, _ in got] == list(range(100))
    monkeypatch.setattr(ar, "_compressor", real_compressor)
    alone = ArchiveBatch(tmp_path / "alone", NOW)
    archiver = alone._exporter()  # each export whole on this thread, as before
    for (sid, _tag, result), (_, data, _) in zip(got, _items(100), strict=True):
        if not data:
            assert result is None
            continue
        same = archiver.write(sid, data, f"{sid}.jsonl")
        assert (result.name, result.sha256, result.size, result.stored_size) == (
            same.name,
            same.sha256,
            same.size,
            same.stored_size,
        )
        assert result.path.read_bytes() == same.path.read_bytes()
    archiver.close()


def test_the_exports_are_handed_over_up_to_ahead_depth_chunks_ahead_of_a_slow_compressor(
    tmp_path, monkeypatch
):
    """Issue 30 (stop 46): while the compressing thread has not finished the first chunk (it waits
    for a core), this thread goes on reading and handing over chunks — up to `AHEAD_DEPTH` of them
    (within `AHEAD_BYTES`), never more — instead of waiting once the next one is handed over."""
    import threading

    import openclaw_cli.store.retire as retire_mod

    depth, size = retire_mod.AHEAD_DEPTH, retire_mod.AHEAD_CHUNK
    assert depth >= 3
    gate = threading.Event()
    real_prepare = ar.ExportArchiver.prepare

    def prepare(self, data: bytes):
        gate.wait(5)  # (the first chunk is prepared once `depth` chunks were read)
        return real_prepare(self, data)

    monkeypatch.setattr(ar.ExportArchiver, "prepare", prepare)
    read: list[int] = []

    def items():
        for sid, data, tag in _items(100):
            read.append(tag)
            if len(read) == depth * size:
                gate.set()
            yield sid, data, tag

    batch = ArchiveBatch(tmp_path / "d", NOW)
    ahead: list[int] = []
    got = []
    for _, tag, _ in batch.archive_exports(items()):
        ahead.append(len(read) - len(got))
        got.append(tag)
    assert got == list(range(100))
    assert ahead[0] == depth * size  # the first archive came once `depth` chunks were handed over
    assert max(ahead) <= depth * size


def test_the_compressing_thread_starts_only_once_a_leaving_hook_has_forked(tmp_path, monkeypatch):
    """A leaving hook forks its worker at an export only while no other thread runs: until it says
    it will not fork any more (`ahead_when`), each export is archived whole on this thread and
    no thread of the archive loop exists."""
    import threading

    main = threading.get_ident()
    where: list[tuple[int, bool]] = []
    real_compressor = ar._compressor
    seen: list[str] = []

    class Spy:
        def __init__(self, level: int) -> None:
            self.real = real_compressor(level)

        def compress(self, content: bytes) -> bytes:
            where.append((int(content.split(b":")[1].split(b"}")[0]), threading.get_ident() == main))
            return self.real.compress(content)

    monkeypatch.setattr(ar, "_compressor", Spy)
    names: list[list[str]] = []

    def items():
        for sid, data, tag in _items(60):
            seen.append(sid)
            names.append([t.name for t in threading.enumerate() if t.name == "archive-prepare"])
            yield sid, data, tag

    batch = ArchiveBatch(tmp_path / "d", NOW)
    batch.ahead_when = lambda: len(seen) >= 9
    got = list(batch.archive_exports(items()))
    assert [tag for _, tag, _ in got] == list(range(60))
    assert names[:9] == [[]] * 9  # no thread while the hook may still fork (items 0-8 read)
    assert {i for i, on_main in where if on_main} == {i for i in range(9) if i % 7}
    assert {i for i, on_main in where if not on_main} == {i for i in range(9, 60) if i % 7}


def test_a_large_export_is_never_held_beside_the_next_ones(tmp_path, monkeypatch):
    """The chunks read ahead are bounded in bytes too: once the chunk in hand holds `AHEAD_BYTES`
    (a large transcript), nothing more is read until it is archived."""
    import openclaw_cli.store.retire as retire_mod

    monkeypatch.setattr(retire_mod, "AHEAD_BYTES", 60)
    read: list[int] = []

    def items():
        for sid, data, tag in _items(60):
            read.append(tag)
            yield sid, data, tag

    batch = ArchiveBatch(tmp_path / "d", NOW)
    for _, tag, _ in batch.archive_exports(items()):
        held = [t for t in read if t >= tag]  # read, not yet archived (this one included)
        size = sum(len(_items(60)[t][1]) for t in held)
        assert size < 60 + 2 * max(len(_items(60)[t][1]) for t in held), (tag, held)
    assert len(read) == 60


def test_a_frame_found_wrong_ahead_fails_its_archive_and_names_nothing(tmp_path, monkeypatch):
    """`prepare` decompresses each frame and compares it with the export before its file exists: a
    compressor gone wrong fails that archive as a read-back that differs does, with nothing named
    for it; an error on the compressing thread is raised here at its export."""
    real = ar._compressor(3)

    class Wrong:
        def compress(self, content: bytes) -> bytes:
            return real.compress(content.replace(b"1", b"2", 1) if b'"i":11}' in content else content)

    monkeypatch.setattr(ar, "_compressor", lambda level: Wrong())
    batch = ArchiveBatch(tmp_path / "d", NOW)
    done: list[int] = []
    with pytest.raises(ar.ArchiveError, match="verification failed for sess11"):
        for _, tag, _ in batch.archive_exports(_items(40)):
            done.append(tag)
    assert done == list(range(11))
    assert sorted(os.listdir(batch.directory)) == sorted(p.name for p in batch.created)
    assert not any(name.startswith("sess11.") for name in os.listdir(batch.directory))

    class Broken:
        def compress(self, content: bytes) -> bytes:
            raise MemoryError("zstd")

    monkeypatch.setattr(ar, "_compressor", lambda level: Broken())
    with pytest.raises(MemoryError, match="zstd"):
        for _ in ArchiveBatch(tmp_path / "e", NOW).archive_exports(_items(40)):
            pass


def test_the_read_back_is_one_read_of_the_size_written(tmp_path, monkeypatch):
    """The file's size (fstat) says nothing follows the bytes written: one read, not a second one
    to the end of the file (issue 30: a syscall per archive)."""
    data = b'{"a":1}\n' * 50
    blob = ar._compressor(3).compress(data)
    path = tmp_path / "x.zst"
    path.write_bytes(blob)
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(ar.os, "read", counting_read)
    assert ar._written_as(str(path), blob, hashlib.sha256(data).hexdigest(), len(data))
    assert reads == [len(blob)]


def _ten_leaving(store: SqliteStore) -> tuple[list[str], Retirement]:
    """The keys and the retirement plan of the fixture store's first ten sessions."""
    entries = store.load_entries()
    keys = [f"agent:main:s{i}" for i in range(10)]
    plan = Retirement(
        keys,
        entries={k: entries[k] for k in keys},
        session_ids=[f"s{i}" for i in range(10)],
        session_keys={f"s{i}": k for i, k in enumerate(keys)},
    )
    return keys, plan


def test_the_removals_transaction_has_a_larger_page_cache_and_gives_it_back(store, monkeypatch):
    """Issue 30: the removals' transaction of a large cleanup changes most pages of the events
    table; with the usual 2 MB cache they spilled to the WAL and were read and written again. It
    runs with `REMOVAL_CACHE_KIB` and the connection has its own cache back afterwards."""
    import openclaw_cli.store.sqlite.retire as sqlite_retire

    seen: list[int] = []
    real_drop = SqliteStore.drop_session_events

    def spy(self, session_ids, *, expected=None):
        seen.append(self._db().execute("PRAGMA cache_size").fetchone()[0])
        return real_drop(self, session_ids, expected=expected)

    monkeypatch.setattr(SqliteStore, "drop_session_events", spy)
    before = store._db().execute("PRAGMA cache_size").fetchone()[0]
    assert -sqlite_retire.REMOVAL_CACHE_KIB < before < 0
    keys, plan = _ten_leaving(store)
    outcome = store.retire(plan, lock_settings=None, now_ms=NOW, checkpoint=lambda: None)
    assert seen == [-sqlite_retire.REMOVAL_CACHE_KIB]
    assert store._db().execute("PRAGMA cache_size").fetchone()[0] == before
    assert len(outcome.archives) == 10 and not outcome.kept
    assert not set(keys) & store.entry_keys() and not {f"s{i}" for i in range(10)} & set(
        store.session_totals()
    )


def test_the_early_writeback_never_replaces_the_final_flush(store, monkeypatch):
    """Issue 30: while many archives are written, a thread of their own starts their writeback
    (`syncfs`) every `EARLY_FLUSH_FILES` archives; the flush that makes them durable is still the
    main thread's, after the last archive and before anything leaves (D6.2). Here every archive
    kicks the early writeback, and the last `syncfs` before the removals' COMMIT is the caller's."""
    import threading

    import openclaw_cli.store.retire as retire_mod

    monkeypatch.setattr(retire_mod, "EARLY_FLUSH_FILES", 1)
    events: list[tuple[str, str]] = []
    real_syncfs = retire_mod._syncfs
    real_drop = SqliteStore.drop_session_events
    real_write = ar.ExportArchiver.write

    early = threading.Event()

    def syncfs(directory):
        events.append(("syncfs", threading.current_thread().name))
        if threading.current_thread().name == "archive-writeback":
            early.set()
        return real_syncfs(directory)

    def write(self, *args, **kwargs):
        result = real_write(self, *args, **kwargs)
        events.append(("archive", threading.current_thread().name))
        if sum(1 for e in events if e[0] == "archive") == 2:
            early.wait(10)  # (the writeback thread kicked by the first archive has run once)
        return result

    def drop(self, session_ids, *, expected=None):
        events.append(("drop", threading.current_thread().name))
        return real_drop(self, session_ids, expected=expected)

    monkeypatch.setattr(retire_mod, "_syncfs", syncfs)
    monkeypatch.setattr(ar.ExportArchiver, "write", write)
    monkeypatch.setattr(SqliteStore, "drop_session_events", drop)
    committed: list[list[tuple[str, str]]] = []
    real_commit = retire_mod.ArchiveBatch.commit

    def commit(self):
        real_commit(self)
        committed.append(list(events))

    monkeypatch.setattr(retire_mod.ArchiveBatch, "commit", commit)
    keys, plan = _ten_leaving(store)
    outcome = store.retire(plan, lock_settings=None, now_ms=NOW, checkpoint=lambda: None)
    assert len(outcome.archives) == 10 and not outcome.kept
    assert ("syncfs", "archive-writeback") in events  # the early writeback ran
    main = threading.main_thread().name
    [at_commit] = committed
    last_archive = max(i for i, e in enumerate(at_commit) if e[0] == "archive")
    assert ("syncfs", main) in at_commit[last_archive:]  # the durable flush follows every archive
    assert not [t for t in threading.enumerate() if t.name == "archive-writeback"]  # joined


@pytest.mark.parametrize("executable", [True, False])
@pytest.mark.parametrize("grown", [False, True])
def test_the_commits_checkpoint_follows_it_only_when_it_cannot_change_the_files(store, grown, executable):
    """Issue 30: the removals' COMMIT leaves its WAL checkpoint to the removals' thread, and the
    caller goes on as soon as the COMMIT returned (the rows are gone for any reader then) — but
    only when the database file already holds every page of the committed database, so the
    checkpoint cannot change any file's size a caller may measure next. When earlier commits
    still in the WAL grew the database (`grown`), the checkpoint runs before the caller goes on,
    as the COMMIT ran it. Only in the `openclaw` executable (whose exit waits for the thread): in
    a library caller's process the checkpoint and the writer's close would race what it does next."""
    import sqlite3
    import threading

    import openclaw_cli
    import openclaw_cli.store.sqlite.retire as sqlite_retire

    store._db().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file holds the whole database
    if grown:  # ~400 KB of events for a kept session: pages beyond the file's end, in the WAL
        store.append_events(
            "s39",
            [f'{{"type":"message","n":{i},"pad":"{"x" * 4000}"}}' for i in range(100)],
            session_key="agent:main:s39",
        )
    path = store.path
    db_pages = (
        store._db().execute("PRAGMA page_count").fetchone()[0]
        * store._db().execute("PRAGMA page_size").fetchone()[0]
    )
    assert (os.path.getsize(path) < db_pages) is grown
    order: list[str] = []
    returned = threading.Event()
    real_pause, real_run = sqlite_retire._DeferredCheckpoint.pause, sqlite_retire._DeferredCheckpoint.run

    def pause(conn, at):
        later = real_pause(conn, at)
        assert later is not None
        later.every = 1  # (this small WAL is checkpointed too)
        return later

    def run(self):
        if not self._done:
            returned.wait(1.0)  # a deferred checkpoint waits for the caller to have gone on
            real_run(self)
            order.append("checkpointed")

    mp = pytest.MonkeyPatch()
    mp.setattr(openclaw_cli, "EXECUTABLE", executable)
    mp.setattr(sqlite_retire._DeferredCheckpoint, "pause", staticmethod(pause))
    mp.setattr(sqlite_retire._DeferredCheckpoint, "run", run)
    try:
        keys, plan = _ten_leaving(store)
        outcome = store.retire(plan, lock_settings=None, now_ms=NOW, checkpoint=lambda: None)
        order.append("returned")
        returned.set()
        other = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:  # committed: gone for any reader
            assert other.execute(
                "SELECT count(*) FROM session_windows WHERE session_id = 's0'"
            ).fetchone() == (0,)
        finally:
            other.close()
        for thread in threading.enumerate():
            if thread.name == "cleanup-removals":
                thread.join(5)
    finally:
        mp.undo()
    assert len(outcome.archives) == 10 and not outcome.kept
    deferred = executable and not grown
    assert order == (["returned", "checkpointed"] if deferred else ["checkpointed", "returned"])
    assert (
        os.path.getsize(path)
        == store._db().execute("PRAGMA page_count").fetchone()[0]
        * store._db().execute("PRAGMA page_size").fetchone()[0]
    )  # checkpointed: the file holds the whole database


def test_the_checkpoint_after_the_commit_writes_the_database_back_as_it_copies(store, monkeypatch):
    """Issue 30: the checkpoint after the removals' COMMIT copies the WAL's pages into the database
    and syncs it; a thread of its own flushes the database file while the pages are copied (the
    disk was idle during the copy and the CPU during the sync, and the exit waited for both). The
    flushes start only once the copy has written the file — SQLite syncs the WAL first, and a flush
    of a file with nothing to write still flushes the disk's cache behind the WAL's writes (stop 46:
    the WAL's sync 462 -> 295 ms) — and end with the checkpoint: none before, the thread gone when
    it returns; the rows are gone and the file holds the whole database as before."""
    import threading

    import openclaw_cli.store.sqlite.retire as sqlite_retire

    monkeypatch.setattr(sqlite_retire, "WRITEBACK_PAUSE_S", 0.0)
    db = os.stat(store.path)
    # (the file's last write well in the past: the copy's first write changes its mtime whatever
    # the clock's granularity)
    os.utime(store.path, ns=(db.st_atime_ns, db.st_mtime_ns - 10**9))
    flushed: list[str] = []
    started: dict[str, int] = {}  # the database's mtime when the writeback began
    done = threading.Event()
    real_fdatasync = os.fdatasync

    def fdatasync(fd):
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (db.st_dev, db.st_ino) and threading.current_thread().name == (
            "cleanup-writeback"
        ):
            if done.is_set():
                flushed.append("after")
            elif st.st_mtime_ns == started["mtime"]:
                flushed.append("unwritten")  # nothing copied yet: a flush of the disk's cache only
            else:
                flushed.append("copying")
        return real_fdatasync(fd)

    real_pause = sqlite_retire._DeferredCheckpoint.pause

    def pause(conn, at):
        later = real_pause(conn, at)
        assert later is not None
        later.every = 1  # (this small WAL is checkpointed too)
        real_execute = later.conn.execute

        class Conn:
            def execute(self, sql, *args):
                if "wal_checkpoint" not in sql:
                    return real_execute(sql, *args)
                for _ in range(20):  # a thread flushing from its start would have flushed by now
                    if flushed:
                        break
                    threading.Event().wait(0.01)
                result = real_execute(sql, *args)
                for _ in range(500):  # the statement held until the thread has seen the copy
                    if flushed:
                        break
                    threading.Event().wait(0.01)
                return result

        later.conn = Conn()
        return later

    real_enter, real_exit = sqlite_retire._Writeback.__enter__, sqlite_retire._Writeback.__exit__

    def writeback_enter(self):
        started["mtime"] = os.stat(store.path).st_mtime_ns
        return real_enter(self)

    def writeback_exit(self, *exc):
        # "after": once the context has ended (a flush between the statement's return and the
        # context's exit is still the checkpoint's: with no pause the thread may make one there)
        real_exit(self, *exc)
        done.set()

    monkeypatch.setattr(sqlite_retire._Writeback, "__enter__", writeback_enter)
    monkeypatch.setattr(sqlite_retire._Writeback, "__exit__", writeback_exit)
    monkeypatch.setattr(sqlite_retire.os, "fdatasync", fdatasync)
    monkeypatch.setattr(sqlite_retire._DeferredCheckpoint, "pause", staticmethod(pause))
    keys, plan = _ten_leaving(store)
    outcome = store.retire(plan, lock_settings=None, now_ms=NOW, checkpoint=lambda: None)
    for thread in threading.enumerate():
        if thread.name == "cleanup-removals":
            thread.join(5)
    assert flushed and set(flushed) == {"copying"}
    assert not [t for t in threading.enumerate() if t.name == "cleanup-writeback"]
    assert len(outcome.archives) == 10 and not outcome.kept
    assert not set(keys) & store.entry_keys()
    assert (
        os.path.getsize(store.path)
        == store._db().execute("PRAGMA page_count").fetchone()[0]
        * store._db().execute("PRAGMA page_size").fetchone()[0]
    )


def test_export_results_name_their_file_and_the_batch_keeps_its_order(tmp_path):
    """The loop's results carry the archive's name (their `Path` made only when asked, issue 30);
    the batch's `created` and `created_names` list the same files in the order they were made."""
    batch = ArchiveBatch(tmp_path / "d", NOW)
    first = [r for _, _, r in batch.archive_exports(_items(20)) if r is not None]
    again = ArchiveBatch(tmp_path / "d", NOW)  # a second batch on the same files: all reused
    assert all(r is None or r.reused for _, _, r in again.archive_exports(_items(20)))
    more = [r for _, _, r in batch.archive_exports([("late", b'{"late":1}\n', 0)])]
    names = batch.created_names()
    assert names == [r.name for r in first + more]
    assert [p.name for p in batch.created] == names and batch.created_names() == names
    for result in first + more:
        assert result.path == batch.directory / result.name and result.path.is_file()
        assert result.path.name == result.name and not result.reused
    batch.rollback([first[0].path])
    assert batch.created_names() == names[1:] and not first[0].path.exists()
