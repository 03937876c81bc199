"""The usage ledger and `openclaw usage` (issue 27 §6): totals that do not drop when a transcript
leaves its store, on every store kind and every removal path; a damaged ledger still counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.storage_support import STORE_KINDS, cli, cli_json, make_state

STALE = "agent:main:telegram:direct:stale-1"
CRON = "agent:main:cron:job1"


def _usage(*args: str) -> dict:
    code, doc, err = cli_json("usage", *args)
    assert code == 0, err
    return doc


def _ledger(state: Path) -> list[dict]:
    path = state / "openclaw-cli-usage" / "main.ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _figures(doc: dict) -> tuple[int, int, int, int]:
    t = doc["totals"]
    return t["input"], t["output"], t["totalTokens"], t["messages"]


def _remove(path: str, state: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Remove sessions one way; returns the keys gone."""
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")  # G1: stale rows deleted, reset takes a new id
    if path == "delete":
        code, _, err = cli("sessions", "delete", CRON, "--yes")
        assert code == 0, err
        return {CRON}
    if path == "cleanup":
        (state / "openclaw.json").write_text(
            json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
        )
        code, doc, err = cli_json("sessions", "cleanup", "--enforce")
        assert code == 0, err
        return {STALE}
    code, doc, err = cli_json("sessions", "reset", CRON)
    assert code == 0, err
    assert doc.get("previousSessionId"), doc  # a new session: the old transcript left through an archive
    return set()


@pytest.mark.parametrize("path", ["delete", "cleanup", "reset"])
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_usage_totals_survive_every_removal_path(kind: str, path: str, state_dir: Path, monkeypatch) -> None:
    make_state(kind, state_dir)
    before = _usage()
    assert before["totals"]["messages"] > 0 and before["totals"]["ledgerMessages"] == 0
    gone = _remove(path, state_dir, monkeypatch)
    code, listing, _ = cli_json("sessions", "--limit", "all")
    assert not gone & {row["key"] for row in listing["sessions"]}
    after = _usage()
    assert _figures(after) == _figures(before)
    # (a database store keeps a reset's previous window: still live, its ledger record not counted)
    assert after["totals"]["ledgerMessages"] > 0 or (path == "reset" and kind != "legacy")
    records = _ledger(state_dir)
    assert records and all(r["reason"] in ("deleted", "cleanup", "reset") for r in records)
    by_kind = {g["name"]: g for g in _usage("--by", "kind")["groups"]}
    assert sum(g["totalTokens"] for g in by_kind.values()) == before["totals"]["totalTokens"]
    assert _figures(_usage("--by", "model")) == _figures(before)
    assert _figures(_usage("--by", "day")) == _figures(before)


def test_a_damaged_ledger_counts_its_readable_records(state_dir: Path, monkeypatch) -> None:
    make_state("legacy", state_dir)
    before = _usage()
    _remove("delete", state_dir, monkeypatch)
    ledger = state_dir / "openclaw-cli-usage" / "main.ledger.jsonl"
    good = ledger.read_bytes()
    ledger.write_bytes(b"not json at all\n" + good + b'{"v":1,"sessionId":"torn-rec')  # damage + torn tail
    code, doc, err = cli_json("usage")
    assert code == 0
    assert _figures(doc) == _figures(before)
    [info] = doc["ledgers"]
    assert info["records"] == 1 and info["unreadableLines"] == 2 and info["unreadableAt"] == [1, 3]
    code, out, err = cli("usage")
    assert code == 0 and "2 unreadable line(s) skipped" in err
    # the next append closes the torn line instead of gluing a record to it
    code, _, err = cli("sessions", "delete", STALE, "--yes")
    assert code == 0, err
    text = ledger.read_bytes()
    assert b'"sessionId":"torn-rec\n{' in text
    code, doc, _ = cli_json("usage")
    assert doc["ledgers"][0]["records"] == 2 and doc["ledgers"][0]["unreadableLines"] == 2
    assert _figures(doc) == _figures(before)


def test_since_and_bad_options(state_dir: Path) -> None:
    make_state("legacy", state_dir)
    everything = _usage("--by", "day")
    days = [g["name"] for g in everything["groups"]]
    assert days == sorted(days) and len(days) > 1
    later = _usage("--by", "day", "--since", days[-1])
    assert [g["name"] for g in later["groups"]] == [days[-1]]
    assert later["totals"]["messages"] == everything["groups"][-1]["messages"]
    code, _, err = cli("usage", "--by", "color")
    assert code == 2 and "Unknown --by" in err
    code, _, err = cli("usage", "--since", "yesterday-ish")
    assert code == 2


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_max_lines_compaction_keeps_the_dropped_lines_usage(kind: str, state_dir: Path) -> None:
    make_state(kind, state_dir)
    before = _usage()
    code, out, err = cli("compact", CRON, "--max-lines", "4")
    assert code == 0, out + err
    after = _usage()
    assert _figures(after) == _figures(before)
    records = _ledger(state_dir) if (state_dir / "openclaw-cli-usage").exists() else []
    assert all(r.get("delta") for r in records if r["reason"] == "compaction")
    if kind == "legacy":  # the file keeps only 4 lines: what the dropped ones cost is in the ledger
        assert [r["reason"] for r in records] == ["compaction"] and records[0]["messages"] > 0


def test_a_timestamp_is_read_as_datetime_reads_it() -> None:
    """The `HH:MM:SS.mmm` fast path (a cached midnight per day, issue 30) gives exactly what
    `datetime.fromisoformat(...).timestamp() * 1000` gave, its float rounding included; other
    shapes and impossible dates go through datetime (None when it refuses them)."""
    import random

    from openclaw_cli.store.usage_ledger import _iso_ms, _slow_iso_ms

    rng = random.Random(30)
    cases = [
        (b"2026-11-01", b"12:34:56.789"),
        (b"2026-02-30", b"00:00:00.000"),
        (b"2024-02-29", b"24:00:00.000"),
        (b"2026-01-01", b"12:00:00"),
        (b"2026-01-01", b"12:00:00.5"),
        (b"2026-13-01", b"00:00:00.000"),
        (b"1978-08-04", b"00:23:15.159"),  # where the float reading is one below the exact ms
    ]
    for _ in range(5000):
        day = f"{rng.randint(1970, 2100):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
        clock = f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d}.{rng.randint(0, 999):03d}"
        cases.append((day.encode(), clock.encode()))
    for day, clock in cases:
        assert _iso_ms(day, clock) == _slow_iso_ms(day, clock), (day, clock)
    assert _iso_ms(b"1978-08-04", b"00:23:15.159") == 271038195158
    assert _iso_ms(b"2026-02-30", b"00:00:00.000") is None


def test_a_transcripts_usage_read_whole_equals_its_lines_read_one_by_one() -> None:
    """`content_usage` (cleanup's ledger, from an archive's export) compares the usual timestamps
    as text and converts only the earliest and the latest: the same totals, slices, times, model
    and events as `add_line` on every line, over mixed shapes (other clock shapes, impossible
    dates, lines without a timestamp, blank lines, usage lines of both readings)."""
    import random

    from openclaw_cli.store.usage_ledger import Usage, add_line, content_usage

    rng = random.Random(3035)

    def stamp() -> str:
        day = f"{rng.randint(1969, 2101):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
        if rng.random() < 0.7:
            day = f"{rng.randint(2025, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        clock = rng.choice(
            [
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}",
                f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d}.{rng.randint(0, 999):03d}",
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}",
            ]
        )
        return f"{day}T{clock}" + rng.choice(["Z", ""])

    def line() -> str:
        head = f'"timestamp":"{stamp()}",' if rng.random() < 0.9 else ""
        if rng.random() < 0.4:
            usage = {"input": rng.randint(0, 9000), "output": rng.randint(0, 900), "totalTokens": 0}
            if rng.random() < 0.5:
                usage["cost"] = {"total": rng.random()}
            message = {"role": "assistant", "content": [{"type": "text", "text": "x"}], "usage": usage}
            if rng.random() < 0.8:
                message.update(provider=rng.choice(["openai", "anthropic"]), model=rng.choice(["a", "b"]))
            if rng.random() < 0.05:
                message["usage"] = {}
            return (
                "{" + head + '"type":"message","message":' + json.dumps(message, separators=(",", ":")) + "}"
            )
        return "{" + head + '"type":"message","message":{"role":"user","content":"hi"}}'

    for _ in range(300):
        lines = [line() if rng.random() < 0.95 else rng.choice(["", "  "]) for _ in range(rng.randint(0, 30))]
        content = ("\n".join(lines) + rng.choice(["\n", ""])).encode()
        one_by_one = Usage()
        for raw in content.split(b"\n"):
            if raw.strip():
                add_line(one_by_one, raw)
        whole = content_usage(content)
        assert whole == one_by_one, content


def test_a_repeated_timestamp_is_read_once_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: most of a transcript's lines repeat the previous line's timestamp (73 % on *many*);
    `content_usage` reads a stamp again only when it differs from the previous line's, and what it
    gives is still `add_line` on every line — over transcripts drawing their stamps from a few
    (usual, other clock shapes, impossible dates, with and without `Z`), usage lines taking the
    day of their repeated stamp, lines without one in between."""
    import random

    from openclaw_cli.store import usage_ledger as ul

    rng = random.Random(4545)
    pool = [
        "2026-11-17T22:19:38.569Z",
        "2026-11-17T22:19:38.569",
        "2026-11-18T00:00:00.000Z",
        "2026-11-17T22:19:38Z",
        "2026-02-30T10:00:00.000Z",
        "2026-11-17T25:61:00.000Z",
        "1999-12-31T23:59:59.999999Z",
    ]

    def line(stamp: str) -> str:
        head = f'"timestamp":"{stamp}",' if rng.random() < 0.9 else ""
        if rng.random() < 0.4:
            usage = {
                "input": rng.randint(0, 9000),
                "output": rng.randint(0, 900),
                "cost": {"total": rng.random()},
            }
            message = {
                "role": "assistant",
                "provider": "openai",
                "model": rng.choice(["a", "b"]),
                "usage": usage,
            }
            return (
                "{" + head + '"type":"message","message":' + json.dumps(message, separators=(",", ":")) + "}"
            )
        return "{" + head + '"type":"message","message":{"role":"user","content":"hi"}}'

    for _ in range(300):
        stamps = rng.sample(pool, rng.randint(1, 3))
        lines = [line(rng.choice(stamps)) if rng.random() < 0.95 else "" for _ in range(rng.randint(0, 20))]
        content = ("\n".join(lines) + "\n").encode()
        one_by_one = ul.Usage()
        for raw in content.split(b"\n"):
            if raw.strip():
                ul.add_line(one_by_one, raw)
        assert ul.content_usage(content) == one_by_one, content

    read: list[bytes] = []
    real = ul._CLOCK_MS

    class Counting:
        def fullmatch(self, clock: bytes) -> object:
            read.append(clock)
            return real.fullmatch(clock)

    monkeypatch.setattr(ul, "_CLOCK_MS", Counting())
    same = "\n".join([line("2026-11-17T22:19:38.569Z")] * 10 + [line("2026-11-17T22:19:39.001Z")] * 5)
    usage = ul.content_usage(same.encode() + b"\n")
    # each stamp read once on its lines, then the earliest and the latest converted
    assert read == [b"22:19:38.569", b"22:19:39.001", b"22:19:38.569", b"22:19:39.001"]
    assert usage.events == 15 and (usage.first_ms, usage.last_ms) == (1794953978569, 1794953979001)


def test_a_stamp_found_by_its_key_is_the_searchs_stamp_wherever_it_lies() -> None:
    """Issue 30 (stop 46): `content_usage` finds a line's stamp by its key (`"timestamp":"`) and
    takes a line whose key is followed by the previous line's whole stamp as that stamp, without the
    pattern's search — still `add_line` on every line: over keys that are no stamp (a decoy before
    the real one), the same stamp at other places, stamps running past the first 400 bytes, a
    longer clock or another ending after the same beginning, lines without a key."""
    import random

    from openclaw_cli.store import usage_ledger as ul

    rng = random.Random(4646)
    stamps = [
        "2026-11-17T22:19:38.569Z",
        "2026-11-17T22:19:38.569",
        "2026-11-17T22:19:38.5691Z",
        "2026-11-17T22:19:38.56Z",
        "2026-11-17T22:19:38",
        "2026-11-17T22:19:38.569ZZ",
        "2026-02-30T10:00:00.000Z",
    ]
    decoys = ['"timestamp":"x",', '"timestamp":"2026-11-17",', '"timestamp":"2026-11-17T",', '"timestamp":1,']

    def line() -> str:
        parts = [rng.choice(decoys) for _ in range(rng.choice([0, 0, 1, 2]))]
        if rng.random() < 0.9:
            parts.append(f'"timestamp":"{rng.choice(stamps)}",')
        if rng.random() < 0.3:
            parts.append(f'"timestamp":"{rng.choice(stamps)}",')
        pad = '"pad":"' + "p" * rng.choice([0, 5, 300, 340, 350, 355, 360, 365, 370, 380, 400]) + '",'
        if rng.random() < 0.5:
            parts.insert(0, pad)
        body = '"type":"message","message":{"role":"user","content":"hi"}'
        if rng.random() < 0.3:
            body = (
                '"type":"message","message":{"role":"assistant","model":"m","usage":{"input":3,"output":4}}'
            )
        return "{" + "".join(parts) + body + "}"

    for _ in range(600):
        content = ("\n".join(line() for _ in range(rng.randint(1, 25))) + "\n").encode()
        one_by_one = ul.Usage()
        for raw in content.split(b"\n"):
            if raw.strip():
                ul.add_line(one_by_one, raw)
        assert ul.content_usage(content) == one_by_one, content


def test_a_records_usage_fields_are_the_usage_docs() -> None:
    """Issue 30 (stop 46): `usage_record` spells `usage.doc()` and each slice's `slot_doc` out
    (no dict made first): the same keys in the same order and the same values, float costs
    rounded alike, over odd slots (floats where ints are usual, NaN-free costs of many digits)."""
    import random

    from openclaw_cli.store import usage_ledger as ul

    rng = random.Random(4647)
    for _ in range(200):
        usage = ul.Usage()
        for _ in range(rng.randint(0, 4)):
            slot = [rng.choice([rng.randint(0, 10**9), rng.random() * 1e6]) for _ in range(5)]
            slot += [rng.random() * rng.choice([1, 1e-7, 1e7]), rng.randint(0, 50)]
            usage.slices[(f"2026-01-{rng.randint(1, 28):02d}", rng.choice(["a/b", "c", "unknown"]))] = slot
            ul._merge(usage.totals, slot)
        record = ul.usage_record(
            agent_id="main", key="k", session_id="s", kind="direct", reason="cleanup", usage=usage, now_ms=1
        )
        doc = usage.doc()
        keys = list(record)
        assert keys[7 : 7 + len(doc)] == list(doc)
        assert [record[k] for k in doc] == list(doc.values())
        assert record["slices"] == [
            [day, name, *ul.slot_doc(slot).values()] for (day, name), slot in sorted(usage.slices.items())
        ]
        assert ul.slot_values(usage.totals) == list(doc.values())


def test_a_usage_object_with_a_quoted_first_key_goes_straight_to_the_whole_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every real usage line (`"usage":{"input":…`) is parsed whole without trying to cut the
    object out first (the cut gives up at its first quote); another shape still tries the cut."""
    from openclaw_cli.store import usage_ledger as ul

    tried: list[bytes] = []
    real = ul._balanced
    monkeypatch.setattr(ul, "_balanced", lambda line, start: tried.append(line) or real(line, start))
    real_line = (
        b'{"timestamp":"2026-11-04T19:52:33.344Z","message":{"role":"assistant","provider":"p",'
        b'"model":"m","usage":{"input":3,"output":4,"totalTokens":0,"cost":{"total":0.5}}}}'
    )
    usage = ul.content_usage(real_line + b"\n")
    assert tried == []
    assert (usage.totals, usage.model, usage.provider) == ([3, 4, 0, 0, 7, 0.5, 1], "m", "p")
    spaced = real_line.replace(b'"usage":{"input"', b'"usage":{ "input"')
    assert ul.content_usage(spaced + b"\n") == usage
    assert tried == [spaced]


def _cleanup_config(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")
    (state / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d"}}})
    )


def _archive_names(state: Path) -> set[str]:
    root = state / "agents" / "main" / "sessions"
    return {p.name for p in root.iterdir() if ".deleted." in p.name} if root.exists() else set()


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_cleanup_ledgers_between_the_archives_and_the_removal(
    kind: str, state_dir: Path, monkeypatch
) -> None:
    """Issue 30: cleanup appends the ledger once every leaving session's archive exists and before
    anything leaves (each row and its whole transcript still in the store then); a database store
    reads the usage from the archive's own export (no second export), equal to a fresh read."""
    from openclaw_cli.store import usage_ledger

    make_state(kind, state_dir)
    _cleanup_config(state_dir, monkeypatch)
    monkeypatch.delenv("OPENCLAW_CLEANUP_WORKER_MIN", raising=False)  # (the lines in this process: `records`)
    fresh_read = usage_ledger.transcript_usage
    second_reads: list[str] = []

    def counted(store, sid, entry=None):
        second_reads.append(sid)
        return fresh_read(store, sid, entry)

    monkeypatch.setattr(usage_ledger, "transcript_usage", counted)
    append = usage_ledger.RetirementLedger.before_leaving
    checked: list[str] = []

    def before_leaving(self) -> None:
        assert not (state_dir / "openclaw-cli-usage").exists()  # appended here, not before the archives
        archives = _archive_names(state_dir)
        for key, entry, sid in self.items:
            if key is not None:
                assert self.store.get_entry(key) == entry, key  # the row is still there
            assert any(name.startswith(sid) for name in archives), (sid, archives)
            now = fresh_read(self.store, sid, entry)  # the whole transcript is still in the store
            assert now.events > 0
            if kind != "legacy" and self.first[sid] == (key, entry):
                fresh = usage_ledger.leaving_record(
                    self.store, key, entry, sid, reason="cleanup", usage=now, now_ms=self.now_ms
                )
                assert json.loads(self.records[sid]) == json.loads(json.dumps(fresh)), sid
            checked.append(sid)
        append(self)

    monkeypatch.setattr(usage_ledger.RetirementLedger, "before_leaving", before_leaving)
    before = _usage()
    second_reads.clear()  # (`openclaw usage` reads the live transcripts)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce")
    assert code == 0, err
    assert checked, "the hook ran for the leaving sessions"
    if kind == "legacy":  # the files are archived as they are: the ledger reads them once more
        assert second_reads
    else:
        assert second_reads == []
    records = _ledger(state_dir)
    assert sorted(r["sessionId"] for r in records if r["reason"] == "cleanup") == sorted(set(checked))
    assert _figures(_usage()) == _figures(before)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_failing_ledger_leaves_the_store_and_the_sessions_dir_as_found(
    kind: str, state_dir: Path, monkeypatch
) -> None:
    """The hook fails after the archives are written: they are removed again, nothing left."""
    from openclaw_cli.store import usage_ledger

    make_state(kind, state_dir)
    _cleanup_config(state_dir, monkeypatch)
    archives = _archive_names(state_dir)
    code, listing, _ = cli_json("sessions", "--limit", "all")
    rows = sorted(row["key"] for row in listing["sessions"])
    assert STALE in rows

    def fail(self) -> None:
        assert _archive_names(state_dir) - archives  # the run's archives exist now
        raise RuntimeError("ledger failed")

    monkeypatch.setattr(usage_ledger.RetirementLedger, "before_leaving", fail)
    code, _, _ = cli("sessions", "cleanup", "--enforce", "--json")
    assert code != 0
    assert _archive_names(state_dir) == archives
    code, listing, _ = cli_json("sessions", "--limit", "all")
    assert sorted(row["key"] for row in listing["sessions"]) == rows
    assert not (state_dir / "openclaw-cli-usage").exists()


def _cleanup_ledger(state: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(state / "openclaw.json"))
    make_state("sqlite", state)
    _cleanup_config(state, monkeypatch)
    code, _, err = cli_json("sessions", "cleanup", "--enforce")
    assert code == 0, err
    return [{k: v for k, v in r.items() if k != "at"} for r in _ledger(state) if r["reason"] == "cleanup"]


def _removed_rows(state: Path) -> list[bytes]:
    """The removed-rows file's lines, each one's `at` cut out (the runs' clocks differ)."""
    import re

    from openclaw_cli.store.usage_ledger import removed_path

    return [
        re.sub(rb'"at":\d+,', b"", line) for line in removed_path(state, "main").read_bytes().splitlines()
    ]


@pytest.mark.parametrize("child_fails", [False, True])
def test_the_ledgers_worker_process_makes_the_same_lines(
    child_fails: bool, isolated_env: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: with many leaving sessions the ledger's lines are made by a forked process while the
    archives are written; the ledger is the one made in-process, line for line, and the process is
    gone afterwards. A child that fails is made up for from a fresh read: the same ledger again."""
    import os

    from openclaw_cli.store import usage_ledger, usage_worker

    monkeypatch.setenv("OPENCLAW_CLEANUP_WORKER_MIN", str(1 << 30))
    expected = _cleanup_ledger(tmp_path / "in-process", monkeypatch)
    expected_rows = _removed_rows(tmp_path / "in-process")
    assert expected and expected_rows
    made_here: list[str] = []  # removed-rows records made by this process (not the child)
    removed_row = usage_ledger.removed_row

    def counted(key, entry, sid, **kwargs):
        made_here.append(sid)
        return removed_row(key, entry, sid, **kwargs)

    monkeypatch.setattr(usage_ledger, "removed_row", counted)

    monkeypatch.setenv("OPENCLAW_CLEANUP_WORKER_MIN", "1")
    monkeypatch.setattr(usage_worker, "_forkable", lambda: True)  # (pytest-xdist runs a thread of its own)
    started: list[int] = []
    start = usage_worker.UsageWorker.start.__func__  # type: ignore[attr-defined]

    def recorded(cls, make, answer=None):
        worker = start(cls, make, answer)
        assert worker, "the worker started"
        started.append(worker.pid)
        return worker

    monkeypatch.setattr(usage_worker.UsageWorker, "start", classmethod(recorded))
    if child_fails:
        parent = os.getpid()
        line = usage_ledger.RetirementLedger.line

        def failing(self, sid, content):
            if os.getpid() != parent:
                raise RuntimeError("the child fails")
            return line(self, sid, content)

        monkeypatch.setattr(usage_ledger.RetirementLedger, "line", failing)
    made_here.clear()
    went_line_by_line: list[bool] = []  # record_leaving: the parent took the lines one by one
    record_leaving = usage_ledger.record_leaving

    def counted_leaving(*args, **kwargs):
        went_line_by_line.append(True)
        return record_leaving(*args, **kwargs)

    monkeypatch.setattr(usage_ledger, "record_leaving", counted_leaving)
    assert _cleanup_ledger(tmp_path / "worker", monkeypatch) == expected
    # the child's answer appended as it came (issue 30), unless it failed
    assert went_line_by_line == ([True] if child_fails else [])
    # the removed rows too, byte for byte: made by the child beside the archives (issue 30), or,
    # when it failed, here from the same entries
    assert _removed_rows(tmp_path / "worker") == expected_rows
    assert len(made_here) == (len(expected_rows) if child_fails else 0)
    assert len(started) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0], os.WNOHANG)  # reaped: nothing left running


def test_the_worker_forks_only_beside_idle_threads_of_ours() -> None:
    """A thread that is not one of our idle ones (state owner's heartbeat, lock watchdog) means no
    fork: the lines are made in-process."""
    import threading

    from openclaw_cli.store import usage_worker

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    stop = threading.Event()
    idle = threading.Thread(target=stop.wait, name="state-owner-heartbeat", daemon=True)
    idle.start()
    try:
        assert usage_worker._forkable() == all(t.name in usage_worker._IDLE_THREADS for t in others)
    finally:
        stop.set()
        idle.join()
    busy = threading.Thread(target=stop.wait, name="something-else", daemon=True)
    stop.clear()
    busy.start()
    try:
        assert not usage_worker._forkable()
        assert usage_worker.UsageWorker.start(lambda sid, content: b"", lambda made: []) is False
    finally:
        stop.set()
        busy.join()


def test_no_worker_when_the_system_refuses_a_pipe_or_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of descriptors or processes: `start` says no (the lines are made in-process) and leaves
    no descriptor open, instead of failing the cleanup."""
    import os

    from openclaw_cli.store import usage_worker

    monkeypatch.setattr(usage_worker, "_forkable", lambda: True)
    opened: list[int] = []
    real_pipe = os.pipe

    def pipe_then_refuse() -> tuple[int, int]:
        if opened:
            raise OSError(24, "Too many open files")
        pair = real_pipe()
        opened.extend(pair)
        return pair

    monkeypatch.setattr(usage_worker.os, "pipe", pipe_then_refuse)
    assert usage_worker.UsageWorker.start(lambda sid, content: b"", lambda made: []) is False
    for fd in opened:
        with pytest.raises(OSError):
            os.fstat(fd)  # closed again


def test_the_worker_starts_for_many_sessions_of_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough leaving sessions start the worker at the first export, small transcripts or large
    (stop 40: a mean above 16 KB no longer keeps the lines in-process); fewer never fork."""
    from openclaw_cli.store import usage_ledger, usage_worker

    started: list[bool] = []
    monkeypatch.setattr(
        usage_worker.UsageWorker,
        "start",
        classmethod(lambda cls, make, answer=None: started.append(True) or False),
    )
    monkeypatch.setattr(usage_ledger.RetirementLedger, "line", lambda self, sid, content: b"{}")
    monkeypatch.delenv("OPENCLAW_CLEANUP_WORKER_MIN", raising=False)

    def ledger(n: int) -> usage_ledger.RetirementLedger:
        hook = usage_ledger.RetirementLedger.__new__(usage_ledger.RetirementLedger)
        hook._lines, hook._at, hook._worker = bytearray(), {}, None
        hook.first = {f"s{i}": (None, None) for i in range(n)}
        return hook

    for n, size, starts in ((300, 2_000, True), (300, 100_000, True), (100, 2_000, False)):
        started.clear()
        hook = ledger(n)
        assert hook.may_fork()
        for i in range(n):
            hook.exported(f"s{i}", b"x" * size)
            assert not hook.may_fork()  # decided at the first export
        assert started == ([True] if starts else []), (n, size)


def test_the_pipe_to_the_worker_holds_several_sends() -> None:
    """The parent's sends do not wait for the child to parse the previous ones: the pipe to it
    holds `PIPE_BYTES` (Linux), several `_FLUSH`es (a 64 KiB pipe made the two run in lockstep)."""
    import fcntl
    import os

    from openclaw_cli.store import usage_worker

    if not hasattr(fcntl, "F_GETPIPE_SZ"):
        pytest.skip("no F_GETPIPE_SZ here")
    assert usage_worker.PIPE_BYTES >= 3 * usage_worker._FLUSH
    worker = usage_worker.UsageWorker.start(
        lambda sid, content: b"x", lambda made: [sid.encode() + line for sid, line in made.items()]
    )
    if worker is False:  # (pytest-xdist's own thread: fork refused)
        read, write = os.pipe()
        try:
            usage_worker._widen(write)
            assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == usage_worker.PIPE_BYTES
        finally:
            os.close(read)
            os.close(write)
        return
    assert isinstance(worker, usage_worker.UsageWorker)
    try:
        assert fcntl.fcntl(worker._to, fcntl.F_GETPIPE_SZ) == usage_worker.PIPE_BYTES
        assert worker.send("s1", b"{}\n")
        assert worker.answer() == b"s1x"
    except BaseException:
        worker.abort()
        raise


def test_the_workers_answer_holds_both_files_in_their_order() -> None:
    """Issue 30: the worker answers with what the parent appends — the ledger's lines, then the
    removed rows, in `record_leaving`'s order (`first`), whatever order the exports came in — and
    the lines' lengths, by which a partial answer is read back session by session; a damaged one
    (cut, or made for other sessions) reads as nothing."""
    from openclaw_cli.jsonutil import dumps_bytes
    from openclaw_cli.store import usage_ledger

    hook = usage_ledger.RetirementLedger.__new__(usage_ledger.RetirementLedger)
    hook.reason, hook.now_ms, hook._slots = "cleanup", 7, None
    hook._dumps = dumps_bytes
    hook.first = {
        "s1": ("k1", {"sessionId": "s1"}),
        "s2": (None, None),  # (an earlier window: no row of its own)
        "s3": ("k3", {"sessionId": "s3", "label": "x"}),
    }
    hook.line = lambda sid, content: b'{"sessionId":"%s","n":%d}' % (sid.encode(), len(content))  # type: ignore[method-assign]

    def row(sid: str) -> bytes:
        key, entry = hook.first[sid]
        return dumps_bytes(usage_ledger.removed_row(key, entry, sid, reason="cleanup", now_ms=7))

    made = {sid: hook.worker_lines(sid, b"x" * n) for sid, n in (("s3", 3), ("s1", 1))}
    partial = b"".join(hook.worker_answer(made))
    assert usage_ledger._answer_lines(partial, hook.first) == {
        "s1": (hook.line("s1", b"x"), row("s1")),
        "s3": (hook.line("s3", b"xxx"), row("s3")),
    }
    made["s2"] = hook.worker_lines("s2", b"xx")
    whole = b"".join(hook.worker_answer(made))
    head = usage_ledger._answer_head(whole, 3)
    assert head is not None and head[0] == 3
    start = usage_ledger._ANSWER.size
    ledger, removed = whole[start : start + head[1]], whole[start + head[1] : start + head[1] + head[2]]
    assert ledger == b"".join(
        hook.line(sid, b"x" * n) + b"\n" for sid, n in (("s1", 1), ("s2", 2), ("s3", 3))
    )
    assert removed == row("s1") + b"\n" + row("s3") + b"\n"
    assert usage_ledger._answer_head(whole, 2) is None
    assert usage_ledger._answer_head(whole[:-1], 3) is None
    assert usage_ledger._answer_lines(whole[:-1], hook.first) == {}
    assert usage_ledger._answer_lines(None, hook.first) == {}


def test_the_workers_input_is_held_here_while_the_child_is_behind(tmp_path: Path, monkeypatch) -> None:
    """Issue 30 (stop 46): the pipe to the worker does not block the archive loop — what it does
    not take while the child is behind is held here (up to `_BACKLOG` bytes) and sent at the next
    sends or when the input is closed; the child still gets every export, in order."""
    import time

    from openclaw_cli.store import usage_worker

    monkeypatch.setattr(usage_worker, "_forkable", lambda: True)  # (pytest-xdist runs a thread of its own)
    go = tmp_path / "go"

    def make(sid: str, content: bytes) -> int:
        if sid == "s0":  # the child is held at its first export until the parent has sent them all
            for _ in range(1000):
                if go.exists():
                    break
                time.sleep(0.01)
        return len(content)

    def answer(made):
        return [b",".join(b"%s=%d" % (sid.encode(), n) for sid, n in made.items())]

    worker = usage_worker.UsageWorker.start(make, answer)
    assert isinstance(worker, usage_worker.UsageWorker)
    payload = b"x" * 100_000
    sent = 30  # ~3 MB: more than the pipe holds, less than the backlog
    assert sent * len(payload) < usage_worker._BACKLOG
    try:
        for i in range(sent):
            assert worker.send(f"s{i}", payload)
        assert worker._unsent_bytes > 0  # held here: the sends went on while the child was held
        go.write_bytes(b"")
        got = worker.answer()
    except BaseException:
        worker.abort()
        raise
    assert got == b",".join(b"s%d=100000" % i for i in range(sent))


def test_the_workers_input_ends_with_the_last_leaving_sessions_export(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 30: once the last leaving session's export is sent, the worker's input is closed at
    once, so the child makes its last lines and answers while the archives are made durable —
    not only when the ledger is appended."""
    from openclaw_cli.store import usage_ledger, usage_worker

    monkeypatch.setattr(usage_worker, "_forkable", lambda: True)  # (pytest-xdist runs a thread of its own)
    hook = usage_ledger.RetirementLedger.__new__(usage_ledger.RetirementLedger)
    hook.reason, hook.now_ms, hook._slots, hook._lines, hook._at = "cleanup", 7, None, bytearray(), {}
    from openclaw_cli.jsonutil import dumps_bytes as _dumps

    hook._dumps = _dumps
    hook.first = {"s1": ("k1", {"sessionId": "s1"}), "s2": (None, None)}
    hook.line = lambda sid, content: b'{"sessionId":"%s"}' % sid.encode()  # type: ignore[method-assign]
    worker = usage_worker.UsageWorker.start(hook.worker_lines, hook.worker_answer)
    assert isinstance(worker, usage_worker.UsageWorker)
    hook._worker = worker
    try:
        hook.exported("s1", b"{}\n")
        assert worker._to >= 0
        hook.exported("s2", b"{}\n")
        assert worker._to == -1  # closed: the child answers now
        assert not worker.send("s3", b"{}\n")
        answer = worker.answer()
    except BaseException:
        worker.abort()
        raise
    from openclaw_cli.jsonutil import dumps_bytes

    row = dumps_bytes(usage_ledger.removed_row("k1", {"sessionId": "s1"}, "s1", reason="cleanup", now_ms=7))
    assert usage_ledger._answer_lines(answer, hook.first) == {
        "s1": (b'{"sessionId":"s1"}', row),
        "s2": (b'{"sessionId":"s2"}', b""),
    }
