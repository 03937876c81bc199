"""Transcript archive names, listing, reading and the verified writer (maintenance §7, D6.2, D15)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest
import zstandard
from conftest import OPENCLAW_FIXTURE

from openclaw_cli.errors import InvalidDataError, InvalidIdError, RefusedError
from openclaw_cli.ids import is_checkpoint_name
from openclaw_cli.store import archives as ar
from openclaw_cli.store.transcript import iter_jsonl

STAMP = "2026-01-01T00-00-00.000Z"
NOW = 1796000000000  # 2026-11-30T00:53:20.000Z
FIXTURE_TRANSCRIPT = (
    OPENCLAW_FIXTURE
    / "legacy-state"
    / "agents"
    / "main"
    / "sessions"
    / "df30a0ea-38b3-46e4-abd3-2c8eddd59451.jsonl"
)


@pytest.fixture
def d(tmp_path: Path) -> Path:
    """An empty directory (tmp_path also holds the isolated home of conftest)."""
    path = tmp_path / "sessions"
    path.mkdir()
    return path


def test_timestamp_format_and_parse():
    assert ar.format_archive_timestamp(1771850096000) == "2026-02-23T12-34-56.000Z"
    assert ar.format_archive_timestamp(NOW + 7) == "2026-11-30T00-53-20.007Z"
    assert ar.parse_archive_timestamp("2026-11-30T00-53-20.007Z") == NOW + 7
    assert ar.parse_archive_timestamp("2026-11-30T00-53-20Z") == NOW
    assert ar.parse_archive_timestamp("2026-13-30T00-53-20.000Z") is None
    assert ar.parse_archive_timestamp("2026-11-30T00:53:20.000Z") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (f"abc.jsonl.deleted.{STAMP}", ("abc.jsonl", "deleted", 1767225600000, False)),
        (f"abc.jsonl.reset.{STAMP}", ("abc.jsonl", "reset", 1767225600000, False)),
        (f"abc.jsonl.bak.{STAMP}", ("abc.jsonl", "bak", 1767225600000, False)),
        (f"abc.jsonl.reset.{STAMP}.zst", ("abc.jsonl", "reset", 1767225600000, True)),
        (f"abc.jsonl.deleted.{STAMP}.{'0f' * 16}.zst", ("abc.jsonl", "deleted", 1767225600000, True)),
        ("abc.jsonl.deleted.2026-01-01T00-00-00Z", ("abc.jsonl", "deleted", 1767225600000, False)),
        (f"x.reset.y.jsonl.deleted.{STAMP}", ("x.reset.y.jsonl", "deleted", 1767225600000, False)),
        ("sessions.json.bak.1737420882", ("sessions.json", "bak", None, False)),
        ("keep.deleted.keep.jsonl", None),
        ("abc.jsonl", None),
        (f"abc.jsonl.deleted.{STAMP}.{'0F' * 16}", None),  # the nonce is lowercase hex
        (f"abc.jsonl.deleted.{STAMP}.junk", None),
        (f"abc.jsonl.archived.{STAMP}", None),
        ("abc.jsonl.deleted.2026-02-30T00-00-00.000Z", None),
        ("sessions.json.bak.12a", None),
    ],
)
def test_parse_archive_name(name, expected):
    assert ar.parse_archive_name(name) == expected
    assert ar.is_archive_name(name) is (expected is not None)


def test_reason_specific_parse_and_classification():
    assert ar.parse_archive_name(f"abc.jsonl.deleted.{STAMP}", "reset") is None
    assert ar.parse_archive_name(f"abc.jsonl.deleted.{STAMP}", "deleted") is not None
    assert ar.is_primary_transcript_name("keep.deleted.keep.jsonl")
    assert ar.is_primary_transcript_name("abc-topic-12.jsonl")
    assert not ar.is_primary_transcript_name("sessions.json")
    assert not ar.is_primary_transcript_name("abc.trajectory.jsonl")
    assert not ar.is_primary_transcript_name(f"abc.jsonl.reset.{STAMP}")
    sid = "abc.checkpoint.123e4567-e89b-42d3-a456-426614174000.jsonl"
    assert is_checkpoint_name(sid) and not ar.is_primary_transcript_name(sid)
    assert not is_checkpoint_name("abc.checkpoint.not-a-uuid.jsonl")
    assert ar.is_trajectory_name("abc.trajectory.jsonl") and ar.is_trajectory_name("abc.trajectory-path.json")
    assert ar.is_migration_leftover_name("abc.jsonl.migrated") and ar.is_migration_leftover_name(
        "s.json.migrated.2"
    )
    assert ar.is_migration_leftover_name("a.jsonl.pre-doctor-branch-repair-2026-01-01T00-00-00-000Z.bak")
    assert not ar.is_migration_leftover_name("a.jsonl")
    assert ar.is_store_temp_name("sessions.json.123.0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f.tmp")
    assert ar.is_store_temp_name("sessions.json.123e4567-e89b-42d3-a456-426614174000.tmp")
    assert not ar.is_store_temp_name("sessions.json.tmp")


def test_list_archives(d):
    (d / f"s1.jsonl.deleted.{STAMP}").write_bytes(b"x" * 5)
    (d / f"s2.jsonl.reset.{STAMP}.zst").write_bytes(b"y" * 3)
    (d / "sessions.json.bak.17").write_bytes(b"{}")
    (d / "s3.jsonl").write_bytes(b"{}\n")
    (d / f"dir.jsonl.deleted.{STAMP}").mkdir()
    outside = d.parent / "outside-archive"
    outside.write_bytes(b"z")
    (d / f"link.jsonl.deleted.{STAMP}").symlink_to(outside)
    found = ar.list_archives(d)
    assert [(a.path.name, a.session_id, a.reason, a.compressed, a.size) for a in found] == [
        (f"s1.jsonl.deleted.{STAMP}", "s1", "deleted", False, 5),
        (f"s2.jsonl.reset.{STAMP}.zst", "s2", "reset", True, 3),
        ("sessions.json.bak.17", None, "bak", False, 2),
    ]
    assert found[0].timestamp_ms == 1767225600000
    assert ar.list_archives(d / "missing") == []


@pytest.mark.parametrize("compress", [True, False])
def test_write_verified_archive_round_trip(d, compress):
    source = FIXTURE_TRANSCRIPT.read_bytes()
    result = ar.write_verified_archive(
        d, "sess-1", "deleted", FIXTURE_TRANSCRIPT, now_ms=NOW, compress=compress
    )
    expected_name = "sess-1.jsonl.deleted.2026-11-30T00-53-20.000Z" + (".zst" if compress else "")
    assert result.path == d / expected_name
    assert result.sha256 == hashlib.sha256(source).hexdigest() and result.size == len(source)
    assert result.compressed is compress and not result.reused
    assert result.stored_size == result.path.stat().st_size
    if compress:
        assert result.stored_size < len(source) / 2
        assert zstandard.ZstdDecompressor().stream_reader(result.path.read_bytes()).read() == source
    assert ar.read_archive_bytes(result.path) == source
    assert ar.hash_archive(result.path) == (result.sha256, len(source))
    assert [line.raw for line in ar.iter_archive_lines(result.path)] == [
        line.raw for line in iter_jsonl(FIXTURE_TRANSCRIPT)
    ]
    assert (result.path.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in d.iterdir()) == [expected_name]  # no temp file left
    listed = ar.list_archives(d)
    assert [(a.session_id, a.reason, a.compressed) for a in listed] == [("sess-1", "deleted", compress)]


def test_bytes_source_and_empty_content_is_never_compressed(d):
    result = ar.write_verified_archive(d, "e", "reset", b"", now_ms=NOW)
    assert result.path.name == "e.jsonl.reset.2026-11-30T00-53-20.000Z" and not result.compressed
    assert result.path.read_bytes() == b""
    data = b'{"a":1}\n' * 100
    result = ar.write_verified_archive(d, "b", "reset", data, now_ms=NOW, level=19)
    assert result.path.name.endswith(".zst") and ar.read_archive_bytes(result.path) == data


def test_name_clash_retries_next_millisecond_and_reuses_identical(d):
    taken = d / "s.jsonl.deleted.2026-11-30T00-53-20.000Z.zst"
    taken.write_bytes(b"someone else's archive")
    first = ar.write_verified_archive(d, "s", "deleted", b'{"v":1}\n', now_ms=NOW)
    assert first.path.name == "s.jsonl.deleted.2026-11-30T00-53-20.001Z.zst"
    assert taken.read_bytes() == b"someone else's archive"
    again = ar.write_verified_archive(d, "s", "deleted", b'{"v":1}\n', now_ms=NOW + 50)
    assert again.reused and again.path == first.path
    other_reason = ar.write_verified_archive(d, "s", "reset", b'{"v":1}\n', now_ms=NOW)
    assert not other_reason.reused
    different = ar.write_verified_archive(d, "s", "deleted", b'{"v":2}\n', now_ms=NOW)
    assert different.path.name == "s.jsonl.deleted.2026-11-30T00-53-20.002Z.zst"
    assert len(list(d.iterdir())) == 4


def test_ten_clashes_give_up(d):
    for i in range(10):
        (d / ar.archive_name("s.jsonl", "deleted", NOW + i, compressed=False)).write_bytes(b"x")
    with pytest.raises(ar.ArchiveError, match="Could not create transcript archive for s"):
        ar.write_verified_archive(d, "s", "deleted", b"data\n", now_ms=NOW, compress=False)
    assert len(list(d.iterdir())) == 10


@pytest.mark.parametrize("bad_id", ["../../x", "a/b", "..", ".hidden", ""])
def test_hostile_session_ids_are_refused(tmp_path, bad_id):
    with pytest.raises(InvalidIdError):
        ar.write_verified_archive(tmp_path / "d", bad_id, "deleted", b"x\n", now_ms=NOW)
    assert not (tmp_path / "d").exists() or list((tmp_path / "d").iterdir()) == []
    assert list(tmp_path.parent.glob("x.jsonl*")) == []


def test_bad_reason_and_base_name_are_refused(tmp_path):
    with pytest.raises(InvalidIdError):
        ar.write_verified_archive(tmp_path, "s", "evil/../x", b"x\n", now_ms=NOW)
    with pytest.raises(InvalidIdError):
        ar.write_verified_archive(tmp_path, "s", "deleted", b"x\n", now_ms=NOW, base_name="../s.jsonl")


def test_path_guard_refuses_to_write_outside_the_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(ar, "_validate_base", lambda base: None)  # defeat the first line of defence
    dest = tmp_path / "sessions"
    with pytest.raises(RefusedError, match="Cannot archive transcript outside"):
        ar.write_verified_archive(dest, "s", "deleted", b"x\n", now_ms=NOW, base_name="../escape.jsonl")
    assert list(tmp_path.glob("escape*")) == []


def test_verification_mismatch_deletes_the_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(ar, "hash_archive", lambda path: ("0" * 64, 1))
    with pytest.raises(ar.ArchiveError, match="Transcript archive verification failed for s"):
        ar.write_verified_archive(tmp_path / "d", "s", "deleted", b'{"a":1}\n', now_ms=NOW)
    assert list((tmp_path / "d").iterdir()) == []


def test_symlinked_source_is_refused(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(b'{"a":1}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(RefusedError):
        ar.write_verified_archive(tmp_path / "arch", "s", "deleted", link, now_ms=NOW)
    with pytest.raises(RefusedError):
        ar.read_archive_bytes(link)


def test_corrupt_compressed_archive_is_a_typed_error(d):
    good = ar.write_verified_archive(d, "s", "deleted", b'{"a":1}\n' * 1000, now_ms=NOW)
    broken = d / "t.jsonl.deleted.2026-11-30T00-53-20.000Z.zst"
    broken.write_bytes(good.path.read_bytes()[:-20])
    with pytest.raises(InvalidDataError):
        ar.read_archive_bytes(broken)
    with pytest.raises(InvalidDataError):
        list(ar.iter_archive_lines(broken))
    (d / "garbage.jsonl.deleted.2026-11-30T00-53-20.000Z.zst").write_bytes(b"not zstd at all")
    with pytest.raises(InvalidDataError):
        ar.read_archive_bytes(d / "garbage.jsonl.deleted.2026-11-30T00-53-20.000Z.zst")


def test_large_source_is_streamed_not_held_in_memory(tmp_path):
    source = tmp_path / "big.jsonl"
    with source.open("wb") as fh:
        for _ in range(32_000):  # ~31 MB of poorly compressible lines
            fh.write(b'{"type":"message","content":"' + os.urandom(480).hex().encode() + b'"}\n')
    size = source.stat().st_size
    tracemalloc.start()
    try:
        result = ar.write_verified_archive(tmp_path / "arch", "big", "deleted", source, now_ms=NOW)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.size == size
    assert peak < size / 4, f"peak Python allocations {peak} for a {size}-byte source"
    digest = hashlib.sha256()
    with source.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    assert result.sha256 == digest.hexdigest()
    os.unlink(source)


@pytest.mark.parametrize("compress", [True, False])
def test_writer_source_is_streamed_verified_and_a_failing_writer_leaves_nothing(d, compress):
    """A writer source (what a compaction snapshot archives through) is hashed and compressed as
    it writes; when it raises midway (the transcript changed) no temp file and no archive remain."""
    source = FIXTURE_TRANSCRIPT.read_bytes()

    def writer(sink) -> None:
        for start in range(0, len(source), 100):
            sink.write(memoryview(source)[start : start + 100])

    result = ar.write_verified_archive(d, "w", "bak", writer, now_ms=NOW, compress=compress)
    assert result.compressed is compress and result.size == len(source)
    assert (
        result.sha256 == hashlib.sha256(source).hexdigest() and ar.read_archive_bytes(result.path) == source
    )

    class Changed(Exception):
        pass

    def failing(sink) -> None:
        sink.write(source[:50])
        raise Changed

    with pytest.raises(Changed):
        ar.write_verified_archive(d, "x", "bak", failing, now_ms=NOW, compress=compress)
    assert sorted(p.name for p in d.iterdir()) == [result.path.name]
    if compress:  # a declared size is recorded in the frame and enforced
        sized = ar.write_verified_archive(d, "y", "bak", writer, now_ms=NOW, source_size=len(source))
        assert zstandard.get_frame_parameters(sized.path.read_bytes()).content_size == len(source)
        with pytest.raises(ar.ArchiveError):
            ar.write_verified_archive(d, "z", "bak", writer, now_ms=NOW, source_size=len(source) - 1)
        assert sorted(p.name for p in d.iterdir()) == sorted([result.path.name, sized.path.name])
