"""Reads side by side with the real OpenClaw 2026.9.6 on copies of one state its own import wrote
(a schema-23 database with an archived `recovered:` orphan, a Discord room with a channel name,
Telegram groups and DMs, words planted in some transcripts), one real Gateway for the module (a
start costs ~17 s of CPU, issue 24; the last test stops it). Skipped without /tmp/peer.

- Listings as the real one fills them (issue 22 §5): `openclaw sessions --json` row for row, and the
  Gateway's `sessions.list` / `sessions.describe` / `agents.list` fields against the real Gateway's.
- Search (issue 26): its `sessions.search` and ours return the same sessions for the same query on
  live (non-archived) data, and our CLI delegates a plain live-only query to it.
- Odd numbers in params (issue 29, finding 8): our Gateway answers them as the real one does.
- Our `sessions archive` / `sessions delete` served by the real Gateway (after the reads).
- `openclaw dashboard --no-open --json`, ours beside the real one's, with the real Gateway running,
  then stopped: the same document (the real one adds its device pairing fields, `browserUrl` and
  `browserBootstrapExpiresAtMs`, which we do not build), the same failure and exit code."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from tests.conftest import GEN_LEGACY_STORE, run_cli
from tests.gateway_server_support import TOKEN as OUR_TOKEN
from tests.gateway_server_support import GatewayThread
from tests.openclaw_db_support import (
    DB_REL,
    NO_PEER,
    TOKEN,
    gateway_calls,
    have_peer,
    peer,
    peer_gateway,
    peer_json,
)

pytestmark = [pytest.mark.peer, pytest.mark.slow, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]

# Row fields §5 names, compared value for value (displayName included: a row nothing names shows
# its first user message's title, as the real Gateway derives it)
GATEWAY_FIELDS = (
    "key",
    "spawnedBy",
    "controlOwnerSessionKey",
    "displayName",
    "kind",
    "classification",
    "agentId",
    "peerKind",
    "isMain",
    "isBackground",
    "channel",
    "subject",
    "groupChannel",
    "chatType",
    "origin",
    "updatedAt",
    "archived",
    "archivedAt",
    "pinned",
    "unread",
    "sessionId",
    "inputTokens",
    "outputTokens",
    "totalTokensFresh",
    "modelProvider",
    "model",
    "deliveryContext",
    "lastChannel",
)


# word -> (how many sessions get it, role)
PLANTED = {
    "quokka": (3, "user"),
    "zeppelin": (2, "assistant"),
    "marmalade": (1, "user"),
    "lighthouse": (4, "user"),
}


def _plant(state: Path) -> dict[str, set[str]]:
    """Append messages holding the planted words at the end of some sessions' active branch;
    returns word -> the session keys that hold it."""
    sdir = state / "agents" / "main" / "sessions"
    store = json.loads((sdir / "sessions.json").read_text())
    keys = sorted(store)
    holders: dict[str, set[str]] = {w: set() for w in PLANTED}
    now = int(time.time() * 1000) - 60_000
    for n, (word, (count, role)) in enumerate(PLANTED.items()):
        for key in keys[n : n + count]:
            path = sdir / f"{store[key]['sessionId']}.jsonl"
            last = json.loads(path.read_bytes().rstrip().rsplit(b"\n", 1)[-1])
            event = {
                "type": "message",
                "id": f"{n:02x}{len(holders[word]):02x}beef",
                "parentId": last.get("id"),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now / 1000)),
                "message": {
                    "role": role,
                    "content": [{"type": "text", "text": f"about the {word} plan"}],
                    "timestamp": now,
                },
            }
            with open(path, "ab") as fh:
                fh.write(orjson.dumps(event) + b"\n")
            holders[word].add(key)
    return holders


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, set[str]]]:
    """(the real OpenClaw's peer root, our copy of its state, planted word -> the keys holding it):
    25 generated sessions, words planted in some, and one orphan transcript, imported by the real
    OpenClaw."""
    base = tmp_path_factory.mktemp("listing-peer")
    root = base / "peer"
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            "25",
            "0",
            "4242",
            "--cron-key-style",
            "canonical",
            "--orphans",
            "1",
            "--now-ms",
            str(int(time.time() * 1000)),
        ],
        check=True,
        capture_output=True,
    )
    holders = _plant(state)
    done = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    ours = base / "ours" / ".openclaw"
    shutil.copytree(state, ours)
    return root, ours, holders


@pytest.fixture(scope="module")
def real_gateway(states: tuple[Path, Path, dict[str, set[str]]]) -> Iterator[SimpleNamespace]:
    """The real Gateway on the peer root's state for the module: `port`, and `stop()` (the dashboard
    test compares the stopped case last)."""
    with contextlib.ExitStack() as stack:
        port = stack.enter_context(peer_gateway(states[0]))
        yield SimpleNamespace(port=port, stop=stack.close)


@pytest.fixture
def our_env(states: tuple[Path, Path, dict[str, set[str]]], monkeypatch: pytest.MonkeyPatch) -> Path:
    ours = states[1]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(ours))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(ours / "openclaw.json"))
    return ours


def test_sessions_json_equals_the_real_listing_archived_rows_included(states, our_env):
    root, _, _ = states
    real = peer_json(root, "sessions", "--json", "--limit", "all")
    done = run_cli("sessions", "--json", "--limit", "all")
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    assert [r["key"] for r in ours["sessions"]] == [r["key"] for r in real["sessions"]]
    recovered = [r["key"] for r in real["sessions"] if ":recovered:" in r["key"]]
    assert recovered, "the real import archives the orphan as a recovered: row, and the real CLI lists it"
    assert {r["key"] for r in ours["sessions"] if r["archived"]} == set(recovered)  # listed and marked
    for mine, theirs in zip(ours["sessions"], real["sessions"], strict=True):
        assert [k for k in mine if k in theirs] == [k for k in theirs if k in mine], mine[
            "key"
        ]  # their order
        assert set(theirs) <= set(mine), (mine["key"], set(theirs) - set(mine))
        for name, value in theirs.items():
            if name != "ageMs":
                assert mine[name] == value, (mine["key"], name, mine[name], value)
    assert {k: ours[k] for k in ("count", "totalCount", "limitApplied", "hasMore")} == {
        k: real[k] for k in ("count", "totalCount", "limitApplied", "hasMore")
    }


def _our_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    ctx = Context.load(resolve_paths())
    return [call(ctx, method, params) for method, params in calls]


def test_gateway_rows_equal_the_real_gateways(states, our_env, real_gateway):
    root, ours, _ = states
    calls = [
        ("sessions.list", {"archived": "all", "limit": 100}),
        ("sessions.list", {}),
        ("sessions.describe", {"key": "main"}),
        ("agents.list", {}),
        ("sessions.list", {"archived": "all", "limit": 100, "includeDerivedTitles": True}),
    ]
    real = [frame["payload"] for frame in gateway_calls(real_gateway.port, calls)]
    mine = _our_calls(calls)

    for theirs, ours_list in ((real[0], mine[0]), (real[1], mine[1]), (real[4], mine[4])):
        for name in ("modelProvider", "model", "contextTokens"):
            assert ours_list["defaults"][name] == theirs["defaults"][name], name
        assert [r["key"] for r in ours_list["sessions"]] == [r["key"] for r in theirs["sessions"]]
        for row, want in zip(ours_list["sessions"], theirs["sessions"], strict=True):
            for name in (*GATEWAY_FIELDS, "derivedTitle"):
                assert row.get(name) == want.get(name), (row["key"], name, row.get(name), want.get(name))
            if want.get("classification") in ("group", "channel") or "label" in want:
                assert row.get("displayName") == want.get("displayName"), row["key"]
    by_key = {r["key"]: r for r in mine[0]["sessions"]}
    room = by_key["agent:main:discord:channel:900015"]
    assert (room["classification"], room["displayName"], room["groupChannel"]) == (
        "channel",
        "#chan-15",
        "#chan-15",
    )
    [orphan] = [r for r in mine[0]["sessions"] if ":recovered:" in r["key"]]
    assert (orphan["classification"], orphan["model"], orphan["archived"]) == ("custom", "gpt-6-astra", True)
    assert not any(r["archived"] for r in mine[1]["sessions"])  # the Gateway hides them unless asked

    assert any("derivedTitle" in r for r in mine[4]["sessions"])  # asked for: listed
    assert not any("derivedTitle" in r for r in mine[0]["sessions"])
    described, want = mine[2]["session"], real[2]["session"]
    assert described is not None and described["key"] == want["key"] == "agent:main:main"
    for name in GATEWAY_FIELDS:
        assert described.get(name) == want.get(name), name

    def relative(path: str, base: Path) -> str:
        return path.replace(str(base), "<state>")

    assert [(a["id"], relative(a["workspace"], ours), a["model"]) for a in mine[3]["agents"]] == [
        (a["id"], relative(a["workspace"], root / "home" / ".openclaw"), a["model"])
        for a in real[3]["agents"]
    ]
    for name in ("defaultId", "ownership", "selectionRequired", "mainKey", "scope"):
        assert mine[3][name] == real[3][name], name


def test_real_gateway_and_ours_return_the_same_sessions(
    states, real_gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search (issue 26) on live data: the real Gateway's `sessions.search` on its state, ours on our
    copy of it, and our CLI delegating to the real Gateway when it owns the state."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root, ours_state, holders = states
    state = root / "home" / ".openclaw"
    queries = [*PLANTED, "quokka plan", "lighthouse about"]
    answers = gateway_calls(
        real_gateway.port, [("sessions.search", {"query": q, "limit": 25}) for q in queries]
    )
    # our CLI on that state, the real Gateway owning it: a plain live-only query goes to it
    env = {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_HOME": str(root / "home"),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
    }
    delegated = run_cli(
        "sessions",
        "search",
        "quokka",
        "--no-archived",
        "--json",
        "--limit",
        "25",
        "--url",
        f"ws://127.0.0.1:{real_gateway.port}",
        "--token",
        TOKEN,
        env=env,
    )
    assert delegated.returncode == 0, delegated.stderr
    hits = json.loads(delegated.stdout)["results"]
    assert {h["source"] for h in hits} == {"gateway"} and {h["sessionKey"] for h in hits} == holders["quokka"]
    db = ours_state / DB_REL
    for query, answer in zip(queries, answers, strict=True):
        assert answer["ok"], answer
        theirs = {hit["sessionKey"] for hit in answer["payload"]["results"]}
        proc = run_cli(
            "sessions", "search", query, "--store", str(db), "--no-archived", "--limit", "25", "--json"
        )
        assert proc.returncode == 0, proc.stderr
        ours = json.loads(proc.stdout)["results"]
        assert {hit["sessionKey"] for hit in ours} == theirs, query
        assert {hit["source"] for hit in ours} == {"schema23"}
        word = query.split()[0]
        assert theirs == holders[word], query  # the real one agrees with what was planted, too


_JUDGED = [  # (method, params as written): where the real Gateway's answer is ours, byte for byte
    ("sessions.list", '{"limit":2.5}'),
    ("sessions.list", '{"limit":1e400}'),
    ("sessions.list", '{"limit":0}'),
    ("sessions.list", '{"limit":"3"}'),
    ("sessions.list", '{"limit":3.0}'),
    ("sessions.list", '{"limit":1E2}'),
    ("sessions.list", '{"offset":0.5}'),
    ("sessions.list", '{"activeMinutes":1.5}'),
    ("sessions.preview", '{"keys":["agent:main:main"],"limit":2.5}'),
    ("sessions.preview", '{"keys":["agent:main:main"],"maxChars":19.5}'),
    ("sessions.preview", '{"keys":["agent:main:main"],"limit":-0.5}'),
    ("sessions.list", '{"limit":-1e400}'),
]


def _raw_answers(url: str, token: str) -> list[dict]:
    """Each _JUDGED request's answer ({ok} or the error's code and message) on one connection;
    a Gateway still starting (closes 1013 or answers connect retryable) is retried for 90 s."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from tests.gateway_server_support import connect_params

    deadline = time.monotonic() + 90
    while True:
        try:
            with connect(url, proxy=None, max_size=None, open_timeout=30) as ws:
                ws.recv(timeout=30)
                ws.send(
                    json.dumps(
                        {"type": "req", "id": "c", "method": "connect", "params": connect_params(token)}
                    )
                )
                hello = json.loads(ws.recv(timeout=30))
                if not hello["ok"]:
                    raise ConnectionClosed(None, None)
                answers = []
                for n, (method, params) in enumerate(_JUDGED):
                    ws.send(f'{{"type":"req","id":"q{n}","method":"{method}","params":{params}}}')
                    while True:
                        frame = json.loads(ws.recv(timeout=60))
                        if frame.get("id") == f"q{n}":
                            break
                    error = frame.get("error") or {}
                    answers.append(
                        {"ok": frame["ok"], "code": error.get("code"), "message": error.get("message")}
                    )
                return answers
        except ConnectionClosed:
            assert time.monotonic() < deadline, "the real Gateway kept refusing connect"
            time.sleep(0.5)


def test_odd_numbers_answered_as_the_real_gateway_answers(real_gateway, state_dir: Path) -> None:
    """Issue 29, finding 8: odd numbers in params (`3.0`, `1E2`, fractions, beyond JavaScript's
    exact range) get the real Gateway's answers, byte for byte (tests/test_gateway_params_hardening.py
    holds the rest); ours on an empty state, the answers do not depend on it."""
    theirs = _raw_answers(f"ws://127.0.0.1:{real_gateway.port}", TOKEN)
    with GatewayThread(tick_interval_ms=60_000) as gw:
        ours = _raw_answers(gw.url, OUR_TOKEN)
    for (method, params), mine, real in zip(_JUDGED, ours, theirs, strict=True):
        assert mine == real, f"{method} {params}: ours {mine}, real {real}"
    assert [a["ok"] for a in theirs] == [
        params in ('{"limit":3.0}', '{"limit":1E2}') for _, params in _JUDGED
    ]


def _served(state: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    """Our CLI on the peer root's state, the real Gateway owning it (its port and token given)."""
    env = {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "HOME": str(state.parent),
        "OPENCLAW_HOME": str(state.parent),
        "OPENCLAW_GATEWAY_PORT": str(port),
        "OPENCLAW_GATEWAY_TOKEN": TOKEN,
    }
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args], capture_output=True, text=True, timeout=240, env=env
    )


def test_archive_and_delete_are_served_by_the_real_gateway(states, real_gateway) -> None:
    """Our `sessions archive` and `sessions delete --yes` served by the real Gateway, and the real
    CLI's listing agreeing afterwards (was tests/test_lifecycle_peer.py with a Gateway of its own).
    After the reads above: it writes. (`--timeout`: the real Gateway can take over our default 10 s
    to answer at a load average of 20.)"""
    root = states[0]
    state, port = root / "home" / ".openclaw", real_gateway.port

    def real_rows() -> dict[str, dict]:
        return {
            row["key"]: row for row in peer_json(root, "sessions", "--json", "--limit", "all")["sessions"]
        }

    before = real_rows()
    archive_key = "agent:main:telegram:group:-1006"
    delete_key = next(key for key in before if ":subagent:" in key)
    assert archive_key in before

    proc = _served(state, port, "sessions", "archive", archive_key, "--json", "--timeout", "180000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["results"] == [{"key": archive_key, "ok": True, "status": "archived"}]
    assert "ran locally" not in doc.get("hint", "")  # served by the Gateway, not by a local write

    proc = _served(state, port, "sessions", "delete", delete_key, "--yes", "--json", "--timeout", "180000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    [result] = doc["results"]
    assert result["status"] == "deleted" and "ran locally" not in doc.get("hint", "")
    assert result["archived"] and all(
        ".jsonl.deleted." in path and Path(path).exists() for path in result["archived"]
    )

    after = real_rows()
    assert delete_key not in after
    if archive_key in after:  # the real local listing may still show it: then with the archive's time
        assert after[archive_key]["updatedAt"] >= before[archive_key]["updatedAt"]
    ours = _served(state, port, "sessions", "--all", "--json", "--limit", "all")
    flags = {row["key"]: row["archived"] for row in json.loads(ours.stdout)["sessions"]}
    assert flags[archive_key] is True and delete_key not in flags


PAIRING_FIELDS = {"browserUrl", "browserBootstrapExpiresAtMs"}


def _dashboards(root: Path, port: int) -> tuple[tuple[int, dict], tuple[int, dict]]:
    state = root / "home" / ".openclaw"
    env = {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "OPENCLAW_GATEWAY_PORT": str(port),  # the conftest points probes at port 1
    }
    ours = run_cli("dashboard", "--no-open", "--json", env=env)
    theirs = peer(root, "dashboard", "--no-open", "--json")
    return (ours.returncode, json.loads(ours.stdout)), (theirs.returncode, json.loads(theirs.stdout))


def test_dashboard_json_matches_the_real_command(states, real_gateway) -> None:
    """Last in the module: it stops the module's real Gateway for the second half."""
    root = states[0]
    (code, ours), (their_code, theirs) = _dashboards(root, real_gateway.port)
    assert code == their_code == 0
    assert set(theirs) - set(ours) <= PAIRING_FIELDS
    assert ours == {k: v for k, v in theirs.items() if k not in PAIRING_FIELDS}
    assert ours["port"] == real_gateway.port and ours["tokenIncluded"] is True
    real_gateway.stop()
    (code, ours), (their_code, theirs) = _dashboards(root, real_gateway.port)
    assert code == their_code == 1
    assert ours == theirs == {"ok": False, "reason": "Gateway is not running."}
