"""Helpers for tests that write real OpenClaw schema-23 databases (issue 12): the databases
themselves (built by the real OpenClaw from a generated legacy state where /tmp/peer exists, else
the checked-in fixture DB), row-level comparisons, archive verification, and the real OpenClaw
as the judge (its CLI and its Gateway)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import GEN_LEGACY_STORE, OPENCLAW_FIXTURE, copy_tree, record_group_cpu

PEER = Path("/tmp/peer/openclaw")
PEER_GATEWAY = GEN_LEGACY_STORE.parent / "peer-gateway.sh"
DB_REL = Path("agents/main/agent/openclaw-agent.sqlite")
TOKEN = "schema23-test-token"
NO_PEER = "real OpenClaw not installed at /tmp/peer (run ../shared/tools/peer-install.sh)"


def have_peer() -> bool:
    """The real OpenClaw is installed (OPENCLAW_TEST_NO_PEER=1 pretends it is not: the fallback)."""
    return PEER.exists() and PEER_GATEWAY.exists() and not os.environ.get("OPENCLAW_TEST_NO_PEER")


def peer(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real OpenClaw CLI on the state `root/home/.openclaw` (the wrapper's layout)."""
    env = dict(os.environ, OC_PEER_ROOT=str(root))
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME", "OPENCLAW_GATEWAY_PORT"):
        env.pop(name, None)
    return subprocess.run([str(PEER), *args], capture_output=True, text=True, env=env, timeout=timeout)


def peer_json(root: Path, *args: str) -> Any:
    proc = peer(root, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def build_real_state(root: Path, sessions: int = 40, total_mb: float = 2, seed: int = 4242) -> Path:
    """A legacy state from the shared generator (updatedAt relative to now), imported by the real
    OpenClaw into a schema-23 database. Returns the state dir `root/home/.openclaw`."""
    state = root / "home" / ".openclaw"
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(state),
            str(sessions),
            str(total_mb),
            str(seed),
            "--cron-key-style",
            "canonical",
            "--now-ms",
            str(int(time.time() * 1000)),
        ],
        check=True,
        capture_output=True,
    )
    result = peer(root, "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    return state


def fixture_state(dest: Path) -> Path:
    return copy_tree(OPENCLAW_FIXTURE / "imported-state", dest)


def plant_artifacts(state: Path) -> dict[str, Path]:
    """Old leftovers in the agent's sessions dir: a stale store temp and an unreferenced prompt blob
    (the §7.5 sweep's), and an orphan trajectory sidecar (transcript-like: legacy data, D6.3)."""
    root = state / "agents" / "main" / "sessions"
    blob_dir = root / "skills-prompts" / "sha256" / "ab"
    blob_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "temp": root / "sessions.json.0f0e0d0c-0b0a-4908-8706-050403020100.tmp",
        "blob": blob_dir / ("ab" + "0" * 62 + ".txt"),
        "orphan": root / "orphan.trajectory.jsonl",
    }
    for path in files.values():
        path.write_text("x" * 300)
        os.utime(path, (631_152_000, 631_152_000))  # 1990
    return files


# ---- reading databases as rows -------------------------------------------------------------------------


def connect(db: Path) -> sqlite3.Connection:
    from openclaw_cli.store.openclaw.schema import add_schema_functions

    conn = sqlite3.connect(str(db))
    add_schema_functions(conn)
    return conn


def checks(db: Path) -> tuple[str, list[Any]]:
    """(`PRAGMA integrity_check`, `PRAGMA foreign_key_check` rows)."""
    conn = connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0], conn.execute(
            "PRAGMA foreign_key_check"
        ).fetchall()
    finally:
        conn.close()


# OpenClaw 2026.9.6's start-up selection of sessions whose transcript projection it must rebuild
# (`selectSessionsNeedingTranscriptIndexReconcile`, dist/session-transcript-index-*.mjs), re-expressed.
NEEDS_RECONCILE = """
SELECT w.session_id FROM session_windows AS w
JOIN transcript_events AS latest ON latest.session_id = w.session_id
 AND latest.seq = (SELECT c.seq FROM transcript_events AS c WHERE c.session_id = w.session_id ORDER BY c.seq DESC LIMIT 1)
LEFT JOIN session_transcript_index_state AS st ON st.session_id = w.session_id
WHERE coalesce(st.needs_rebuild, 1) != 0 OR latest.seq > coalesce(st.indexed_seq, -1)
   OR (EXISTS (SELECT 1 FROM session_transcript_active_events WHERE context_eligible IS NULL)
       AND EXISTS (SELECT 1 FROM session_transcript_active_events AS p WHERE p.session_id = w.session_id
                   AND p.context_eligible IS NULL))
ORDER BY w.session_id"""
ORPHAN_INDEX_ROWS = " UNION ALL ".join(
    f"SELECT '{t}', session_id FROM {t} WHERE session_id NOT IN (SELECT DISTINCT session_id FROM transcript_events)"
    for t in (
        "session_transcript_active_events",
        "session_transcript_fts_rows",
        "session_transcript_index_state",
    )
)


def projection_rows(conn: sqlite3.Connection) -> tuple[list[Any], list[Any], list[Any]]:
    """Active events, full-text rows (through their row map) and index states, without times."""
    return (
        conn.execute(
            "SELECT session_id, active_position, event_seq, message_position, context_eligible"
            " FROM session_transcript_active_events ORDER BY 1, 2"
        ).fetchall(),
        conn.execute(
            "SELECT r.session_id, r.message_id, f.text, f.role, f.timestamp FROM session_transcript_fts_rows"
            " AS r JOIN session_transcript_fts AS f ON f.rowid = r.id ORDER BY 1, r.id"
        ).fetchall(),
        conn.execute(
            "SELECT session_id, indexed_seq, leaf_event_id, needs_rebuild, active_event_count,"
            " active_message_count FROM session_transcript_index_state ORDER BY 1"
        ).fetchall(),
    )


def unsettled(db: Path) -> dict[str, Any]:
    """What the next real Gateway start would find to reconcile or validate after our writes:
    sessions whose projection it would rebuild, index rows of vanished transcripts, full-text rows
    with no row map entry, and the canonical validation queue."""
    conn = connect(db)
    try:
        return {
            "reconcile": [r[0] for r in conn.execute(NEEDS_RECONCILE)],
            "orphans": conn.execute(ORPHAN_INDEX_ROWS).fetchall(),
            "unmapped": conn.execute(
                "SELECT rowid FROM session_transcript_fts WHERE rowid NOT IN"
                " (SELECT id FROM session_transcript_fts_rows)"
            ).fetchall(),
            "pending": [
                r[0]
                for r in conn.execute(
                    "SELECT session_key FROM session_canonical_validation_pending ORDER BY 1"
                )
            ],
        }
    finally:
        conn.close()


def rebuilt_projection_equal(db: Path) -> bool:
    """Every stored projection equals one rebuilt from scratch from the events (in a transaction
    rolled back): what we keep is what a rebuild would give."""
    from openclaw_cli.store.openclaw.projection import rebuild
    from openclaw_cli.store.openclaw.store import OpenClawDbStore

    store = OpenClawDbStore(db, read_only=False)
    try:
        conn = store._db()
        stored = projection_rows(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for (sid,) in conn.execute("SELECT DISTINCT session_id FROM transcript_events").fetchall():
                rebuild(store, sid, 0)
            fresh = projection_rows(conn)
        finally:
            conn.execute("ROLLBACK")
    finally:
        store.close()
    return stored == fresh


def event_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """session id -> its `transcript_events` rows exactly as stored (JSON or zstd alike)."""
    conn = connect(db)
    try:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for row in conn.execute(
            "SELECT session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json,"
            " created_at FROM transcript_events ORDER BY session_id, seq"
        ):
            out.setdefault(row[0], []).append(row[1:])
        return out
    finally:
        conn.close()


def decoded_jsonl(db: Path, sid: str) -> bytes:
    """The session's events decoded as JSONL (what an archive of it holds)."""
    import zstandard

    conn = connect(db)
    dctx = zstandard.ZstdDecompressor()
    try:
        lines = []
        for text, blob, size in conn.execute(
            "SELECT event_json, event_zstd, event_utf8_bytes FROM transcript_events"
            " WHERE session_id = ? ORDER BY seq",
            (sid,),
        ):
            lines.append(
                text.encode("utf-8") if text is not None else dctx.decompress(blob, max_output_size=size)
            )
        return b"".join(line + b"\n" for line in lines)
    finally:
        conn.close()


def reset_kept_its_session(db: Path, ours: dict[str, Any], before: dict[str, Any], key: str) -> None:
    """A reset as 2026.9.6 does it (the release of a schema-23 store, D23; the real Gateway keeps
    the sessionId): same sessionId, the transcript ends in a `reset` entry."""
    assert ours[key][0] == before[key][0], key
    last = decoded_jsonl(db, ours[key][0]).rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert json.loads(last)["type"] == "reset", last[:300]


def nodes(db: Path) -> dict[str, tuple[str, str]]:
    """key -> (current_session_id, entry_json) of the valid rows."""
    conn = connect(db)
    try:
        return {
            k: (s, e)
            for k, s, e in conn.execute(
                "SELECT session_key, current_session_id, entry_json FROM session_nodes WHERE entry_valid = 1"
            )
        }
    finally:
        conn.close()


def windows(db: Path) -> dict[str, str]:
    conn = connect(db)
    try:
        return dict(conn.execute("SELECT session_id, session_key FROM session_windows"))
    finally:
        conn.close()


def archive_rows(db: Path) -> dict[str, dict[str, Any]]:
    conn = connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return {
            row["session_id"]: dict(row) for row in conn.execute("SELECT * FROM session_transcript_archives")
        }
    finally:
        conn.close()


def assert_archived(db: Path, sessions_dir: Path, sid: str, content: bytes) -> None:
    """The session's archive row holds a zstd blob whose sha256 is recorded and which decompresses
    to `content`; its published file holds exactly the blob."""
    import zstandard

    row = archive_rows(db)[sid]
    blob = row["archive_blob"]
    assert hashlib.sha256(blob).hexdigest() == row["archive_sha256"]
    assert row["encoding"] == "zstd" and row["reason"] == "deleted" and row["published_at"] is not None
    assert zstandard.ZstdDecompressor().decompressobj().decompress(blob) == content
    assert (sessions_dir / row["archive_name"]).read_bytes() == blob


def logical_state(db: Path) -> tuple[Any, ...]:
    """What "as before or as after" compares: rows of every session table that a write touches."""
    conn = connect(db)
    try:
        return tuple(
            tuple(conn.execute(sql).fetchall())
            for sql in (
                "SELECT session_key, current_session_id, entry_json, entry_valid FROM session_nodes ORDER BY session_key",
                "SELECT session_id, session_key FROM session_windows ORDER BY session_id",
                "SELECT session_id, count(*), max(seq) FROM transcript_events GROUP BY session_id ORDER BY session_id",
                "SELECT session_id, count(*) FROM transcript_event_identities GROUP BY session_id ORDER BY session_id",
                "SELECT session_id, archive_sha256 FROM session_transcript_archives ORDER BY session_id",
                "SELECT session_id, count(*) FROM session_transcript_fts_rows GROUP BY session_id ORDER BY session_id",
            )
        )
    finally:
        conn.close()


# ---- the real OpenClaw as the judge --------------------------------------------------------------------


def peer_inspect(root: Path, agent: str = "main") -> dict[str, Any]:
    doc = peer_json(root, "doctor", "--session-sqlite", "inspect", "--session-sqlite-agent", agent, "--json")
    [target] = [t for t in doc["targets"] if t["agentId"] == agent]
    return target


def peer_rows(root: Path) -> list[tuple[Any, ...]]:
    doc = peer_json(root, "sessions", "--json", "--limit", "all")
    fields = ("key", "sessionId", "updatedAt", "inputTokens", "outputTokens", "totalTokens")
    return sorted(tuple(r.get(f) for f in fields) for r in doc["sessions"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PeerGateway:
    """The real Gateway on `root`'s state, as ../shared/tools/peer-gateway.sh starts it (the same
    config merged into the state's openclaw.json, the same command in its own process group, output
    in ROOT/gateway.out), but waited for here: the script polls the port with a new python3 every
    0.2 s (~20 ms of CPU each, ~10 s of CPU at load 11 while the Gateway took ~100 s to listen), and
    the Gateway is then this process's child, its CPU counted with the test's children's."""

    def __init__(self, root: Path, token: str = TOKEN) -> None:
        self.root, self.token, self.port = root, token, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 300) -> PeerGateway:  # (a loaded machine: 60-120 s to listen)
        """Started and listening. At a load average over 20 on 2 cores its start-up can time out
        on its own state lease ("state lease heartbeat did not become ready", it exits with
        gateway.maintenance_required, no migration run): one more start then, on a new port."""
        try:
            return self._start(timeout)
        except _ExitedEarly:
            self.port = free_port()
            return self._start(timeout)

    def _start(self, timeout: float) -> PeerGateway:
        state = self.root / "home" / ".openclaw"
        (state / "logs").mkdir(parents=True, exist_ok=True)
        config_path = state / "openclaw.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        auth = {"mode": "token", "token": self.token}
        config.setdefault("gateway", {}).update(mode="local", bind="loopback", port=self.port, auth=auth)
        config.setdefault("logging", {})["file"] = str(state / "logs" / "openclaw.log")
        config_path.write_text(json.dumps(config))
        argv = [str(PEER), "gateway", "run", "--bind", "loopback", "--port", str(self.port)]
        with open(self.root / "gateway.out", "wb") as out:
            self.proc = subprocess.Popen(
                [*argv, "--auth", "token", "--token", self.token],
                cwd=self.root / "home",
                env=dict(os.environ, OC_PEER_ROOT=str(self.root)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            with socket.socket() as sock:
                sock.settimeout(0.2)
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                exited = self.proc.poll() is not None
                self.stop()
                out_text = (self.root / "gateway.out").read_text(errors="replace")[-2000:]
                message = f"the real Gateway did not listen on {self.port}: {out_text}"
                if exited and "state lease heartbeat did not become ready" in out_text:
                    raise _ExitedEarly(message)
                raise AssertionError(message)
            time.sleep(0.2)
        time.sleep(2)  # it accepts a moment before it answers (the script's grace period)
        return self

    def stop(self) -> None:
        """SIGTERM to its group, SIGKILL after 5 s (as the script's `stop`); idempotent."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        record_group_cpu(proc.pid, "real Gateway (also in the test's children)")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its group's stragglers too
        proc.wait(timeout=60)


class _ExitedEarly(AssertionError):
    pass


@contextlib.contextmanager
def peer_gateway(root: Path) -> Iterator[int]:
    """The real Gateway on `root`'s state (own process group, stopped at the end); yields its port."""
    gateway = PeerGateway(root).start()
    try:
        yield gateway.port
    finally:
        gateway.stop()


async def _calls(port: int, calls: list[tuple[str, dict[str, Any]]], timeout: float) -> list[dict[str, Any]]:
    import websockets

    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=64 << 20, open_timeout=timeout) as ws:
        await asyncio.wait_for(ws.recv(), timeout)  # connect.challenge
        await ws.send(
            json.dumps(
                {
                    "type": "req",
                    "id": "connect",
                    "method": "connect",
                    "params": {
                        "minProtocol": 4,
                        "maxProtocol": 4,
                        "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
                        "role": "operator",
                        "scopes": ["operator.admin", "operator.read", "operator.write"],
                        "caps": [],
                        "auth": {"token": TOKEN},
                    },
                }
            )
        )
        out: list[dict[str, Any]] = []
        for index, (method, params) in enumerate([("connect", {}), *calls]):
            rid = "connect" if index == 0 else f"r{index}"
            if index:
                await ws.send(json.dumps({"type": "req", "id": rid, "method": method, "params": params}))
            for _ in range(10_000):
                frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
                if frame.get("type") == "res" and frame.get("id") == rid:
                    break
            else:
                raise AssertionError(f"no response to {method}")
            if index:
                out.append(frame)
            elif not frame["ok"] and (frame.get("error") or {}).get("retryable"):
                raise _Starting()
            else:
                assert frame["ok"], frame
        return out


class _Starting(Exception):
    pass


def gateway_calls(
    port: int, calls: list[tuple[str, dict[str, Any]]], timeout: float = 120
) -> list[dict[str, Any]]:
    """Responses (`res` frames) to `calls` on one authenticated connection (a Gateway still
    starting its sidecars answers `connect` with a retryable UNAVAILABLE: retried for up to 90 s)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            return asyncio.run(_calls(port, calls, timeout))
        except _Starting:
            if time.monotonic() > deadline:
                raise AssertionError("the real Gateway kept answering 'gateway starting'") from None
            time.sleep(0.5)
