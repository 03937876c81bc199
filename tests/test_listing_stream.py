"""`sessions --json --limit all` is streamed (issue 16): the document written row by row is byte
for byte the one the materialised listing prints, for both store kinds, one agent or several
(merged newest first, ties in store order), archived filters, the active window, and a broken
store beside healthy ones."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.jsonutil import Deferred, StreamedArray, dumps_pretty, write_pretty
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.sessions import list_sessions
from openclaw_cli.paths import resolve_paths
from openclaw_cli.store.sqlite.store import SqliteStore
from tests.conftest import run_cli

NOW = 1_796_000_000_000


def _entries(prefix: str, n: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for i in range(n):
        entry: dict[str, Any] = {
            "sessionId": f"{prefix[:4]}{i:04d}-0000-4000-8000-000000000000",
            "updatedAt": NOW - (i // 3) * 60_000,  # ties in threes
            "chatType": "direct",
            "label": f"{prefix} {i}" if i % 5 == 0 else None,
        }
        if i % 7 == 3:
            entry["archivedAt"] = NOW - 1000
        if i % 11 == 10:
            del entry["updatedAt"]  # listed last
        out[f"agent:{prefix}:direct:peer-{i:03d}"] = {k: v for k, v in entry.items() if v is not None}
    return out


@pytest.fixture
def two_agents(state_dir: Path) -> Path:
    """Agent `main` on our SQLite store, agent `work` on a legacy store, sharing timestamps."""
    with SqliteStore(
        state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite", "main", create=True
    ) as st:
        st.upsert_entries(_entries("main", 40))
    legacy = state_dir / "agents" / "work" / "sessions"
    legacy.mkdir(parents=True)
    (legacy / "sessions.json").write_text(json.dumps(_entries("work", 30), indent=2))
    return state_dir


def _streamed(doc: dict[str, Any]) -> str:
    out = io.StringIO()
    write_pretty(doc, out.write, batch=7)
    return out.getvalue()


@pytest.mark.parametrize("archived", [False, True, "all"])
@pytest.mark.parametrize("agent", [None, "work", "all"])
@pytest.mark.parametrize("active", [None, 5])
def test_streamed_listing_equals_the_materialised_one(
    two_agents: Path, archived: Any, agent: str | None, active: int | None
) -> None:
    paths = resolve_paths()
    kwargs = {
        "agent": None if agent == "all" else agent,
        "all_agents": agent == "all",
        "active_minutes": active,
        "limit": None,
        "now": NOW,
        "archived": archived,
    }
    whole = list_sessions(Context.load(paths), **kwargs)
    streamed = list_sessions(Context.load(paths), stream=True, **kwargs)
    assert isinstance(streamed["sessions"], StreamedArray)
    assert _streamed(streamed) == dumps_pretty(whole) + "\n"
    assert whole["count"] == len(whole["sessions"]) > 0 or archived is True


def test_a_limit_is_never_streamed(two_agents: Path) -> None:
    doc = list_sessions(Context.load(resolve_paths()), limit=10, now=NOW, stream=True)
    assert isinstance(doc["sessions"], list) and doc["count"] == 10


def test_a_broken_store_is_reported_beside_the_streamed_rows(two_agents: Path) -> None:
    broken = two_agents / "agents" / "bad" / "sessions"
    broken.mkdir(parents=True)
    (broken / "sessions.json").write_text("{ not json")
    paths = resolve_paths()
    whole_ctx, streamed_ctx = Context.load(paths), Context.load(paths)
    whole = list_sessions(whole_ctx, all_agents=True, limit=None, now=NOW)
    streamed = list_sessions(streamed_ctx, all_agents=True, limit=None, now=NOW, stream=True)
    assert _streamed(streamed) == dumps_pretty(whole) + "\n"
    assert [e["agentId"] for e in whole["errors"]] == ["bad"] and len(streamed_ctx.failures) == 1


def test_the_cli_prints_one_document_with_every_row(two_agents: Path) -> None:
    done = run_cli("sessions", "--json", "--limit", "all", "--all-agents")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # archived rows listed, as the real CLI lists them (issue 22); --archived lists only them
    assert doc["count"] == doc["totalCount"] == len(doc["sessions"]) == 40 + 30
    assert sum(row["archived"] for row in doc["sessions"]) == 6 + 4
    assert doc["hasMore"] is False and doc["limitApplied"] is None
    only = json.loads(run_cli("sessions", "--json", "--limit", "all", "--all-agents", "--archived").stdout)
    assert only["count"] == 6 + 4 and all(row["archived"] for row in only["sessions"])


def test_write_pretty_is_dumps_pretty_in_pieces() -> None:
    for doc in (
        {"a": 1, "s": [], "h": "x"},
        {"s": [{"k": [1, {"z": None}], "e": {}}, {"q": "a\nb"}]},
        {"p": None, "c": 2, "s": [1, 2, "x\u2028"], "d": {"x": [1]}},
    ):
        lazy: dict[str, Any] = {**doc, "s": StreamedArray(iter(doc["s"])), "none": Deferred(lambda: None)}
        if "h" in doc:
            lazy["h"] = Deferred(lambda: "x")
        assert _streamed(lazy) == dumps_pretty(doc) + "\n"


def _doc_with_hard_text() -> tuple[dict[str, Any], dict[str, Any]]:
    rows = [{"k": "é ü ✓ 🜂", "n": 10**30, "f": 1.5, "s": "\ud800x"}, {"q": "a\nb\u2028"}] * 300
    doc = {"path": "/tmp/é", "s": rows, "count": len(rows)}
    return doc, {**doc, "s": StreamedArray(iter(rows))}


def test_the_bytes_writer_writes_the_utf8_of_the_text() -> None:
    from openclaw_cli.jsonutil import write_pretty_bytes

    doc, lazy = _doc_with_hard_text()
    out = io.BytesIO()
    write_pretty_bytes(lazy, out.write, batch=7)
    assert out.getvalue() == (dumps_pretty(doc) + "\n").encode()


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8", "latin-1", "utf-16"])
def test_emit_json_streams_bytes_only_to_a_utf8_stdout(
    encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A UTF-8 stdout gets orjson's bytes (no decode and encode of ~70 MB); any other encoding
    the text, as before: the same bytes either way where the text can be encoded."""
    import sys

    from openclaw_cli.output import emit_json

    doc, lazy = _doc_with_hard_text()
    rows = [{"q": "a\nb é"}, {"n": 10**30}]  # what latin-1 can hold too
    doc["s"], lazy["s"] = rows, StreamedArray(iter(rows))
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding=encoding, newline="\n")
    stdout.write("before ")  # what the text layer holds is written first
    monkeypatch.setattr(sys, "stdout", stdout)
    emit_json(lazy)
    assert raw.getvalue() == ("before " + dumps_pretty(doc) + "\n").encode(encoding)
