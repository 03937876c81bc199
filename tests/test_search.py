"""`openclaw sessions search` (issue 26): planted phrases in every store and archive kind found with
the right `source`, the query language and its bad input, incremental updates, a rebuilt index,
read-only state dirs, redaction, and the CLI, the library and the Gateway method agreeing."""

from __future__ import annotations

import io
import json
import marshal
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import orjson
import pytest
import zstandard

from openclaw_cli.errors import UsageError
from openclaw_cli.search import search as library_search
from openclaw_cli.search.query import parse
from tests.conftest import generate_legacy_state, run_cli

NOW = 1796000000000


def _line(mid: str, role: str, text: str, ts: int = NOW - 1000) -> bytes:
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": ts}
    if role == "toolResult":
        message["toolName"] = "read"
    return orjson.dumps({"type": "message", "id": mid, "parentId": None, "timestamp": ts, "message": message})


def _sessions(state: Path, agent: str = "main") -> tuple[Path, dict]:
    sdir = state / "agents" / agent / "sessions"
    return sdir, json.loads((sdir / "sessions.json").read_text())


def _append(path: Path, *lines: bytes) -> None:
    with open(path, "ab") as fh:
        for line in lines:
            fh.write(line + b"\n")


def _zst(path: Path, data: bytes) -> None:
    path.write_bytes(zstandard.ZstdCompressor().compress(data))


def search_json(*args: str, code: int = 0) -> dict:
    proc = run_cli("sessions", "search", *args, "--json")
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    return state_dir


def _plant_everything(state: Path) -> dict[str, tuple[str, str]]:
    """One phrase per legacy-era kind: phrase -> (source, sessionId)."""
    sdir, store = _sessions(state)
    key, entry = next(iter(store.items()))
    sid = entry["sessionId"]
    _append(sdir / f"{sid}.jsonl", _line("live0001", "user", "the quokka lighthouse protocol"))
    dead = "11111111-2222-4333-8444-555555555555"
    _zst(
        sdir / f"{dead}.jsonl.deleted.2026-10-01T10-00-00.000Z.zst",
        _line("dead0001", "assistant", "a zeppelin marmalade recipe") + b"\n",
    )
    old = "66666666-7777-4888-9999-aaaaaaaaaaaa"
    _zst(
        sdir / f"{old}.jsonl.reset.2026-10-02T10-00-00.000Z.zst",
        _line("reset001", "toolResult", "output of the wombat harmonica") + b"\n",
    )
    backup = "bbbbbbbb-7777-4888-9999-cccccccccccc"
    (sdir / f"{backup}.jsonl.bak.2026-10-03T10-00-00.000Z").write_bytes(
        _line("bak00001", "user", "a platypus euphonium backup") + b"\n"
    )
    return {
        "quokka lighthouse": ("legacy", sid),
        "zeppelin marmalade": ("archive:deleted", dead),
        "wombat harmonica": ("archive:reset", old),
        "platypus euphonium": ("archive:bak", backup),
    }


def test_planted_phrases_in_legacy_store_and_file_archives(legacy: Path) -> None:
    planted = _plant_everything(legacy)
    for phrase, (source, sid) in planted.items():
        doc = search_json(f'"{phrase}"')
        assert [(r["source"], r["sessionId"]) for r in doc["results"]] == [(source, sid)], phrase
        assert phrase.split()[0] in doc["results"][0]["snippet"]
    live_only = search_json('"zeppelin marmalade"', "--no-archived")
    assert live_only["results"] == []
    assert search_json("wombat", "--role", "tool")["results"][0]["role"] == "tool"
    assert search_json("wombat", "--role", "user")["results"] == []


def test_query_language(legacy: Path) -> None:
    _plant_everything(legacy)
    assert search_json("quokka -lighthouse")["results"] == []
    assert search_json("quok*")["results"][0]["messageId"] == "live0001"
    assert search_json('"lighthouse quokka"')["results"] == []  # a phrase keeps its order
    assert search_json("lighthouse quokka")["results"][0]["messageId"] == "live0001"
    # FTS5 operators are plain words here: no SQLite syntax error can come out
    assert search_json("quokka OR NEAR")["results"] == []
    assert search_json("quokka AND lighthouse")["results"] == []  # "and" is a word the line lacks


def test_fixed_literal_ids_and_paths(legacy: Path) -> None:
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    call = {
        "type": "message",
        "id": "call0001",
        "timestamp": NOW,
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": "call_9f1e",
                    "name": "read",
                    "arguments": {"path": "notes/q3-plan_v2.md"},
                }
            ],
        },
    }
    _append(sdir / f"{sid}.jsonl", orjson.dumps(call))
    hits = search_json("notes/q3-plan_v2.md", "--fixed")["results"]
    assert [h["messageId"] for h in hits] == ["call0001"]
    assert search_json("notes/q3-plan_v3.md", "--fixed")["results"] == []  # tokens match, literal does not
    # anywhere in the line, as grep -F finds it (issue 26): starting inside a word, or one word's piece
    for literal in ("otes/q3-plan_v2", "3-plan_v2.md", "lan_v2", "OTES/Q3", "q3-pl", "an"):
        hits = search_json(literal, "--fixed", "--role", "assistant")["results"]
        assert "call0001" in [h["messageId"] for h in hits], literal
    for literal in ("otes/q3-plan_v3", "lan_v3", "zqxj"):
        assert search_json(literal, "--fixed", "--role", "assistant")["results"] == [], literal


def test_a_query_starting_with_a_dash_gets_a_hint(legacy: Path) -> None:
    """`sessions search -word`: the shell hands us an option; the error says how to pass it."""
    _plant_everything(legacy)
    proc = run_cli("sessions", "search", "-lighthouse", "--json")
    assert proc.returncode == 2
    message = json.loads(proc.stdout)["error"]["message"]
    assert 'starts with "-" goes after "--"' in message and "Traceback" not in proc.stderr, message
    for args in (("--", "quokka -lighthouse"), ("--fixed", "--", "-quokka")):  # as the hint says
        proc = run_cli("sessions", "search", "--json", *args)
        assert proc.returncode == 0 and json.loads(proc.stdout)["results"] == [], proc.stderr
    proc = run_cli("sessions", "search", "--json", "--", "-lighthouse quokka")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"] == []
    proc = run_cli("sessions", "search", "--bogus", "x", "--json")  # a mistyped long option: no such hint
    assert proc.returncode == 2 and "goes after" not in json.loads(proc.stdout)["error"]["message"]


def test_cold_archives_planted_phrases(
    imported_fixture_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cold archives of both kinds: a zstd file in `sessions/cold/` and a
    `session_transcript_cold_archives` row stored in the database (`storage = 'sqlite'`)."""
    import hashlib

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    state = imported_fixture_state
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(db)
    sid, key = conn.execute(
        "SELECT session_id, session_key FROM session_windows ORDER BY session_id"
    ).fetchone()
    data = _line("cold0001", "user", "the narwhal accordion in the cellar") + b"\n"
    blob = zstandard.ZstdCompressor().compress(data)
    conn.execute(
        "INSERT INTO session_transcript_cold_archives (session_id, generation, archive_name, archive_sha256,"
        " event_count, raw_bytes, archive_bytes, last_seq, archived_at, storage, archive_blob)"
        " VALUES (?, ?, ?, ?, 1, ?, ?, 1, ?, 'sqlite', ?)",
        (
            sid,
            "0" * 32,
            f"{sid}.cold.jsonl.zst",
            hashlib.sha256(blob).hexdigest(),
            len(data),
            len(blob),
            NOW,
            blob,
        ),
    )
    conn.commit()
    conn.close()
    cold_dir = state / "agents" / "main" / "sessions" / "cold"
    cold_dir.mkdir(parents=True, exist_ok=True)
    cold_sid = "abababab-cdcd-4efe-8a0a-121212121212"
    _zst(
        cold_dir / f"{cold_sid}.jsonl.zst",
        _line("cold0002", "assistant", "a pangolin harpsichord recital") + b"\n",
    )
    hit = search_json('"narwhal accordion"')["results"]
    assert [(r["source"], r["sessionId"], r["sessionKey"], r["messageId"]) for r in hit] == [
        ("cold-archive", sid, key, "cold0001")
    ]
    hit = search_json('"pangolin harpsichord"')["results"]
    assert [(r["source"], r["messageId"]) for r in hit] == [("cold-archive", "cold0002")]
    assert search_json('"narwhal accordion"', "--no-archived")["results"] == []


@pytest.mark.parametrize(
    "query, message",
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("x" * 10_240, "must not exceed 4096"),
        ('"unbalanced phrase', "Unbalanced quote"),
        ("-only -excluded", "only excludes"),
        ("!!! ???", "no word to look for"),
        ('a"b', "quote inside a word"),
    ],
)
def test_bad_queries_are_usage_errors(legacy: Path, query: str, message: str) -> None:
    proc = run_cli("sessions", "search", "--json", "--", query)  # `--`: a query may start with "-"
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and message in doc["error"]["message"]
    assert "sqlite" not in proc.stderr.lower() and "Traceback" not in proc.stderr


def test_corrupt_archive_and_bad_lines_are_skipped_and_named(legacy: Path) -> None:
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    _append(sdir / f"{sid}.jsonl", b"{not json", _line("good0001", "user", "narwhal saxophone"))
    (sdir / "abababab-2222-4333-8444-555555555555.jsonl.deleted.2026-10-01T10-00-00.000Z.zst").write_bytes(
        b"\x28\xb5\x2f\xfd garbage"
    )
    doc = search_json("narwhal")
    assert [r["messageId"] for r in doc["results"]] == ["good0001"]
    assert any("not a JSON line" in s for s in doc["skipped"])
    assert any("abababab" in s and "cannot read" in s for s in doc["skipped"])
    text = run_cli("sessions", "search", "narwhal", "--verbose")
    assert text.returncode == 0 and "Skipped:" in text.stderr and "Traceback" not in text.stderr


def test_incremental_update_and_rewrite(legacy: Path) -> None:
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    path = sdir / f"{sid}.jsonl"
    assert search_json("pangolin")["results"] == []
    _append(path, _line("inc00001", "user", "pangolin accordion"))
    proc = run_cli("sessions", "search", "pangolin", "--json", "--verbose")
    doc = json.loads(proc.stdout)
    assert [r["messageId"] for r in doc["results"]] == ["inc00001"]
    assert doc["index"][0]["sourcesRead"] == 1 and doc["index"][0]["rowsIndexed"] == 1  # only the new line
    # a rewrite (not an append): the old text is gone from the results
    path.write_bytes(path.read_bytes().replace(b"pangolin accordion", b"iguana accordion"))
    assert search_json("pangolin")["results"] == []
    assert [r["messageId"] for r in search_json("iguana")["results"]] == ["inc00001"]


def test_a_line_being_written_is_read_once_whole(legacy: Path) -> None:
    """A search while a writer is halfway through a line (no newline yet) neither reports it nor
    reads past it: once the line is whole, it is indexed (it was lost: the resume point had gone
    past its first half, and the second half alone is not JSON)."""
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    path = sdir / f"{sid}.jsonl"
    line = _line("half0001", "user", "okapi theremin")
    with open(path, "ab") as fh:
        fh.write(line[:40])
    doc = search_json("okapi")
    assert doc["results"] == [] and doc["skipped"] == []
    with open(path, "ab") as fh:
        fh.write(line[40:] + b"\n")
    assert [r["messageId"] for r in search_json("okapi")["results"]] == ["half0001"]
    _append(path, _line("half0002", "user", "okapi again"))
    assert sorted(r["messageId"] for r in search_json("okapi")["results"]) == ["half0001", "half0002"]


def test_unchanged_state_is_not_read_and_a_renamed_key_is_seen(legacy: Path) -> None:
    """The index's fingerprint of every source token: nothing read when nothing changed; a key
    renamed in sessions.json (transcript untouched) is the key results and --session filters see."""
    sdir, store = _sessions(legacy)
    key, entry = next(iter(store.items()))
    _append(sdir / f"{entry['sessionId']}.jsonl", _line("ren00001", "user", "capybara oboe"))
    assert [r["sessionKey"] for r in library_search(legacy, "capybara")] == [key]
    proc = run_cli("sessions", "search", "capybara", "--json", "--verbose")
    assert json.loads(proc.stdout)["index"][0]["sourcesRead"] == 0
    renamed = "agent:main:renamed-for-search"
    store = {renamed if k == key else k: v for k, v in store.items()}
    (sdir / "sessions.json").write_text(json.dumps(store, indent=2))
    assert [r["sessionKey"] for r in library_search(legacy, "capybara")] == [renamed]
    assert [r["messageId"] for r in library_search(legacy, "capybara", session_keys=[renamed])] == [
        "ren00001"
    ]
    assert list(library_search(legacy, "capybara", session_keys=[key])) == []


def test_a_reindex_between_update_and_record_leaves_no_stale_fingerprint(
    legacy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two searches at once: one brings the index up to date and then records the fingerprint of
    the sources it compared; another's `--reindex` empties the index in between. The fingerprint
    is recorded only under the content generation the update left, so the emptied index is not
    marked up to date and the next search rebuilds it (recorded unconditionally, it skipped the
    update and found nothing until the state changed again)."""
    from openclaw_cli.search import index as search_index

    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    _append(sdir / f"{sid}.jsonl", _line("race0001", "user", "narwhal bassoon"))
    original = search_index.AgentIndex._update
    interleaved: list[int] = []

    def update_then_reindex_elsewhere(
        self: search_index.AgentIndex, agent: object, **kwargs: object
    ) -> object:
        result = original(self, agent, **kwargs)  # type: ignore[arg-type]
        if not interleaved:  # the other search's reset, on its own connections, before our record
            other = search_index.AgentIndex(search_index.index_path(sdir / "sessions.json"))
            other.reset()
            other.close()
            interleaved.append(1)
        return result

    monkeypatch.setattr(search_index.AgentIndex, "_update", update_then_reindex_elsewhere)
    list(library_search(legacy, "narwhal"))
    assert interleaved
    monkeypatch.setattr(search_index.AgentIndex, "_update", original)
    assert [r["messageId"] for r in library_search(legacy, "narwhal")] == ["race0001"]
    proc = run_cli("sessions", "search", "narwhal", "--json", "--verbose")
    assert json.loads(proc.stdout)["index"][0]["sourcesRead"] == 0  # recorded now: nothing read again


def test_kept_ranking_is_served_only_for_an_unchanged_index(legacy: Path, tmp_path: Path) -> None:
    """A ranking kept in the index (bm25 over a common word) is the one a fresh index gives, and a
    change of the index's content (an append that moves the corpus statistics) is ranked anew."""
    first = list(library_search(legacy, "session", limit=25))
    shards = sorted((tmp_path / "cache" / "openclaw-cli" / "search").glob("*.sqlite"))
    kept: dict[Path, list[tuple[str, int, bytes]]] = {}
    planted_ids = set()
    for shard in shards:  # one file per shard of the store's index
        with closing(sqlite3.connect(shard)) as conn:
            gen = int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
            kept[shard] = conn.execute("SELECT key, gen, ranked FROM ranked").fetchall()
            assert kept[shard] and {row[1] for row in kept[shard]} == {gen}  # kept for the index's generation
            # read back, not ranked again: a kept ranking naming one hit is what the same query serves
            planted = marshal.loads(kept[shard][0][2])[-1:]
            planted_ids.add(
                conn.execute("SELECT message_id FROM rows WHERE id = ?", (planted[0][0],)).fetchone()[0]
            )
            conn.execute("UPDATE ranked SET ranked = ?", (marshal.dumps(planted),))
            conn.commit()
    # (the page this process answered last is served again while the index is unchanged: the
    # ranking planted behind its back is read by a search that does not hold that page)
    from openclaw_cli.search import engine

    engine.close_kept()
    assert shards and {r["messageId"] for r in library_search(legacy, "session", limit=25)} == planted_ids
    for shard in shards:
        with closing(sqlite3.connect(shard)) as conn:
            conn.executemany(
                "UPDATE ranked SET ranked = ? WHERE key = ?", [(r, k) for k, _g, r in kept[shard]]
            )
            conn.commit()
    engine.close_kept()
    assert list(library_search(legacy, "session", limit=25)) == first
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    _append(sdir / f"{sid}.jsonl", _line("rank0001", "user", "session session session"))
    after = list(library_search(legacy, "session", limit=25))
    assert "rank0001" in [r["messageId"] for r in after] and after != first
    fresh = list(library_search(legacy, "session", limit=25, index_root=tmp_path / "fresh"))
    assert [(r["messageId"], r["score"]) for r in after] == [(r["messageId"], r["score"]) for r in fresh]


def test_index_rebuilt_after_deletion_gives_same_results(legacy: Path, tmp_path: Path) -> None:
    _plant_everything(legacy)
    first = search_json("session", "--limit", "25")
    shutil.rmtree(tmp_path / "cache")
    again = search_json("session", "--limit", "25")
    assert again["results"] == first["results"] and len(first["results"]) == 25
    reindexed = search_json("session", "--limit", "25", "--reindex")
    assert reindexed["results"] == first["results"]
    # ranked in FTS5 first (no filter) or joined to every row (a filter): the same page
    every_role = search_json(
        "session", "--limit", "25", "--role", "user", "--role", "assistant", "--role", "tool"
    )
    assert every_role["results"] == first["results"]


def test_state_dir_untouched_and_cache_unwritable(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant_everything(legacy)
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in legacy.rglob("*")}
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    doc = search_json('"quokka lighthouse"')
    assert doc["results"][0]["source"] == "legacy"
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in legacy.rglob("*")} == before


def test_redaction_in_snippets(legacy: Path) -> None:
    sdir, store = _sessions(legacy)
    sid = next(iter(store.values()))["sessionId"]
    secret = "sk-proj-" + "A1b2C3d4" * 5
    _append(
        sdir / f"{sid}.jsonl",
        _line("sec00001", "user", f"ferret deploy with Authorization: Bearer abcdefghijklmnop and {secret}"),
    )
    plain = search_json("ferret")["results"][0]["snippet"]
    masked = search_json("ferret", "--redact")["results"][0]["snippet"]
    assert secret in plain and "abcdefghijklmnop" in plain
    assert secret not in masked and "abcdefghijklmnop" not in masked and "[REDACTED]" in masked


def test_sqlite_store_and_import_archive(legacy: Path) -> None:
    planted = _plant_everything(legacy)
    proc = run_cli("doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert proc.returncode == 0, proc.stderr
    hit = search_json('"quokka lighthouse"')["results"]
    assert [(r["source"], r["sessionId"]) for r in hit] == [("sqlite", planted["quokka lighthouse"][1])]
    # an append to our SQLite store is read incrementally: only the new event
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    sid = planted["quokka lighthouse"][1]
    with open_agent_store(resolve_paths(), "main") as store:
        key = next(k for k, e in store.load_entries().items() if e.get("sessionId") == sid)
        assert (
            store.append_events(
                sid, [_line("sql00001", "assistant", "an okapi bassoon reply")], session_key=key
            )
            == 1
        )
    doc = search_json("okapi", "--verbose")
    assert [(r["source"], r["messageId"]) for r in doc["results"]] == [("sqlite", "sql00001")]
    assert sum(u["rowsIndexed"] for u in doc["index"]) == 1
    archive_dir = legacy / "agents" / "main" / "session-sqlite-import-archive"
    original = next(p for p in archive_dir.iterdir() if planted["quokka lighthouse"][1] in p.name)
    _append(original, _line("imp00001", "user", "only the axolotl trombone original"))
    hit = search_json('"axolotl trombone"')["results"]
    assert [(r["source"], r["messageId"]) for r in hit] == [("import-archive", "imp00001")]
    for phrase, (source, _) in planted.items():
        if source.startswith("archive:"):
            assert search_json(f'"{phrase}"')["results"][0]["source"] == source


def test_schema23_store_their_fts_and_blob_archive(
    imported_fixture_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    db = imported_fixture_state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(db)
    sid, mid, text = conn.execute(
        "SELECT session_id, message_id, text FROM session_transcript_fts"
        " WHERE role = 'user' ORDER BY rowid LIMIT 1"
    ).fetchone()
    key = conn.execute("SELECT session_key FROM session_windows WHERE session_id = ?", (sid,)).fetchone()[0]
    blob_sid = "99999999-8888-4777-8666-555555555555"
    blob = zstandard.ZstdCompressor().compress(_line("blob0001", "user", "the capybara glockenspiel") + b"\n")
    import hashlib

    conn.execute(
        "INSERT INTO session_transcript_archives (session_id, generation, session_key, reason, encoding,"
        " archive_blob, archive_sha256, archive_name, created_at) VALUES (?, ?, ?, 'deleted', 'zstd', ?, ?,"
        " ?, ?)",
        (
            blob_sid,
            "0" * 32,
            "agent:main:gone",
            blob,
            hashlib.sha256(blob).hexdigest(),
            f"{blob_sid}.jsonl.deleted.2026-10-01T10-00-00.000Z.zst",
            NOW,
        ),
    )
    conn.commit()
    conn.close()
    phrase = " ".join(text.split()[:8])
    doc = search_json(f'"{phrase}"', "--limit", "25")
    ours = [r for r in doc["results"] if r["sessionId"] == sid and r["messageId"] == mid]
    assert ours and ours[0]["source"] == "schema23" and ours[0]["sessionKey"] == key
    hit = search_json('"capybara glockenspiel"')["results"]
    assert [(r["source"], r["sessionKey"]) for r in hit] == [("archive-blob:deleted", "agent:main:gone")]


def test_library_cli_and_gateway_agree(legacy: Path) -> None:
    from tests.gateway_server_support import GatewayThread, connected

    _plant_everything(legacy)
    cli = search_json("session alpha", "--limit", "20", "--no-archived")["results"]
    lib = list(library_search(legacy, "session alpha", limit=20, archived=False))
    assert lib == cli and len(cli) == 20
    with GatewayThread() as gw, connected(gw.url) as client:
        res = client.request("sessions.search", {"query": "session alpha", "limit": 20})
        assert res["ok"], res
        assert res["payload"]["results"] == cli
        archived = client.request("sessions.search", {"query": '"zeppelin marmalade"', "archived": True})
        assert archived["payload"]["results"][0]["source"] == "archive:deleted"
        scoped = client.request("sessions.search", {"query": '"quokka lighthouse"', "scope": {}})
        assert scoped["ok"], scoped
        hit = scoped["payload"]["results"][0]
        assert [row["key"] for row in scoped["payload"]["sessions"]] == [hit["sessionKey"]]
        bad = client.request("sessions.search", {"query": "x", "limit": 26})
        assert not bad["ok"] and "must be <= 25" in bad["error"]["message"]
        both = client.request("sessions.search", {"query": "x", "scope": {}, "sessionKeys": ["a"]})
        assert not both["ok"] and "must not be valid" in both["error"]["message"]


def test_query_parser_units() -> None:
    q = parse('alpha "beta gamma"* -delta')
    assert q.fts == '("alpha" AND "beta gamma" *) NOT ("delta")'
    assert parse("alpha beta").plain_words() and not parse("alpha*").plain_words()
    with pytest.raises(UsageError):
        parse('"open')


def _all_lines(state: Path) -> list[tuple[str, str, str]]:
    """(sessionId, messageId, text) of every indexed line of the live transcripts."""
    from openclaw_cli.search.text import extract

    out = []
    for path in sorted((state / "agents" / "main" / "sessions").glob("*.jsonl")):
        for n, raw in enumerate(io.BytesIO(path.read_bytes()), 1):
            found = extract(orjson.loads(raw), n)
            if found:
                out.append((path.stem, found[0], found[3]))
    return out


def test_property_random_phrase_from_any_line_is_found(legacy: Path) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from openclaw_cli.search.text import tokens

    lines = [line for line in _all_lines(legacy) if len(tokens(line[2])) >= 3]
    assert lines

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.integers(0, len(lines) - 1), st.integers(0, 10_000), st.integers(3, 6))
    def check(which: int, start: int, width: int) -> None:
        sid, mid, text = lines[which]
        words = tokens(text)
        start %= max(1, len(words) - width + 1)
        phrase = " ".join(words[start : start + width])
        found = list(library_search(legacy, f'"{phrase}"', limit=1000, archived=False))
        assert (sid, mid) in {(r["sessionId"], r["messageId"]) for r in found}, phrase

    check()


def test_parallel_first_build_matches_one_process(
    legacy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build split over forked processes (one per shard) indexes exactly what one process does."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.search import index as index_mod
    from openclaw_cli.search.engine import Options, StoreTarget, search
    from openclaw_cli.store.detect import open_agent_store

    _plant_everything(legacy)
    monkeypatch.setattr(index_mod, "PARALLEL_MIN_SOURCES", 1)
    monkeypatch.setattr(index_mod, "_single_threaded", lambda: True)
    forks: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    outcomes = []
    for workers, root in ((2, tmp_path / "par"), (1, tmp_path / "seq")):
        paths = resolve_paths()
        store = open_agent_store(paths, "main", read_only=True)
        try:
            target = StoreTarget(store, paths.import_archive_dir("main"))
            outcome = search([target], parse("session"), Options(limit=50, index_root=root, workers=workers))
        finally:
            store.close()
        outcomes.append(outcome)
    assert len(forks) == 1  # the second shard was built by a child, the first here
    a, b = ([(r["sessionId"][:6], r["messageId"], r["score"]) for r in o.results] for o in outcomes)
    assert a == b, (sorted(set(a) - set(b)), sorted(set(b) - set(a)))
    assert len(a) > 20
    assert outcomes[0].updates[0].sources_read == outcomes[1].updates[0].sources_read


def test_schema24_stores_fresh_and_migrated(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published v2026.9.9 database (agent keeper) and the real 9.6 database migrated to 24:
    their lines found with source `schema24`; a phrase planted in the migrated one's events too."""
    from tests.schema24_support import FRESH_KEY, connect, fresh_state, migrated_state

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fresh = fresh_state(state_dir)
    conn = sqlite3.connect(fresh)
    text = conn.execute("SELECT text FROM session_transcript_fts ORDER BY rowid LIMIT 1").fetchone()[0]
    conn.close()
    phrase = " ".join(text.split()[:6])
    hits = search_json(f'"{phrase}"', "--agent", "keeper")["results"]
    assert [(r["source"], r["sessionKey"]) for r in hits][:1] == [("schema24", FRESH_KEY)]
    db, _ = migrated_state(state_dir)
    conn = connect(db)  # OpenClaw's triggers call its SQL functions
    sid, seq = conn.execute(
        "SELECT session_id, max(seq) FROM transcript_events GROUP BY session_id LIMIT 1"
    ).fetchone()
    key = conn.execute("SELECT session_key FROM session_windows WHERE session_id = ?", (sid,)).fetchone()[0]
    cols = [r[1] for r in conn.execute("PRAGMA table_info(transcript_events)")]
    row = dict(
        zip(
            cols,
            conn.execute(
                "SELECT * FROM transcript_events WHERE session_id = ? AND seq = ?", (sid, seq)
            ).fetchone(),
            strict=True,
        )
    )
    planted = _line("s24plant", "toolResult", "a tapir ocarina result").decode()
    row.update(seq=seq + 1, event_json=planted)
    for name in ("event_zstd", "navigation_json"):
        if name in row:
            row[name] = None
    if "event_utf8_bytes" in row:
        row["event_utf8_bytes"] = len(planted.encode())
    conn.execute(
        f"INSERT INTO transcript_events ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    conn.close()
    hits = search_json('"tapir ocarina"', "--agent", "main")["results"]
    assert [(r["source"], r["sessionKey"], r["role"]) for r in hits] == [("schema24", key, "tool")]


def test_export_redact_uses_the_same_rules(legacy: Path, tmp_path: Path) -> None:
    sdir, store = _sessions(legacy)
    key, entry = next(iter(store.items()))
    secret = "ghp_" + "Z9y8X7w6" * 5
    _append(
        sdir / f"{entry['sessionId']}.jsonl",
        _line(
            "sec00002",
            "user",
            f"push with token {secret} and -----BEGIN PRIVATE KEY-----\nMIIEabc\n-----END PRIVATE KEY-----",
        ),
    )
    for fmt in ("jsonl", "md"):
        plain, masked = tmp_path / f"plain.{fmt}", tmp_path / f"masked.{fmt}"
        assert run_cli("sessions", "export", key, "--format", fmt, "--output", str(plain)).returncode == 0
        done = run_cli("sessions", "export", key, "--format", fmt, "--output", str(masked), "--redact")
        assert done.returncode == 0, done.stderr
        assert secret in plain.read_text() and "MIIEabc" in plain.read_text()
        text = masked.read_text()
        assert secret not in text and "MIIEabc" not in text and "[REDACTED]" in text
        if fmt == "jsonl":
            assert all(json.loads(line) for line in text.splitlines())  # still one JSON object a line


def test_cli_delegates_to_our_gateway_that_owns_the_state(legacy: Path) -> None:
    """With our Gateway running for the state, the CLI asks it (found through its marker) and prints
    its answer; without credentials, or with wrong ones, it searches locally and says why."""
    from tests.gateway_server_support import TOKEN, GatewayProcess

    _plant_everything(legacy)
    local = search_json('"zeppelin marmalade"', "--verbose")
    assert "index" in local  # a local run reports its index update
    with GatewayProcess():
        served = json.loads(
            run_cli(
                "sessions",
                "search",
                '"zeppelin marmalade"',
                "--json",
                "--verbose",
                env={"OPENCLAW_GATEWAY_TOKEN": TOKEN},
            ).stdout
        )
        assert "index" not in served and served["results"] == local["results"]  # --verbose is not sent
        plain = run_cli("sessions", "search", "zeppelin", "--json")
        assert plain.returncode == 0 and "no credentials are configured" in plain.stderr
        wrong = run_cli("sessions", "search", "zeppelin", "--json", env={"OPENCLAW_GATEWAY_TOKEN": "x" * 30})
        assert wrong.returncode == 0 and "did not answer" in wrong.stderr
        assert json.loads(wrong.stdout)["results"][0]["source"] == "archive:deleted"
