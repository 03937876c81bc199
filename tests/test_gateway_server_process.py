"""`openclaw gateway run|status` as processes: ownership of the state dir (doctor refuses while it
runs), graceful SIGTERM, stale markers after SIGKILL, start-up refusals, the default bind seen
from the kernel's socket table, file modes, and SIGKILL in the middle of a served cleanup or agent
delete (D6.4: nothing lost; a restarted Gateway serves the same state)."""

from __future__ import annotations

import json
import random
import shutil
import signal
import stat
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from tests.cleanup_support import release_2026_7  # noqa: F401 - the fixture
from tests.conftest import run_cli
from tests.gateway_server_support import Client, GatewayProcess, connected, write_config


def _listening_hosts(pid: int, port: int) -> set[str]:
    """Local addresses of the LISTEN sockets on `port` in the process's network namespace."""
    hosts = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                if width == 8:
                    raw = bytes.fromhex(address)[::-1]
                    hosts.add(".".join(str(b) for b in raw))
                else:
                    hosts.add(address)
    return hosts


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_run_status_ownership_and_graceful_stop(state_dir: Path) -> None:
    from openclaw_cli.gateway.ownership import marker_path

    with GatewayProcess() as gw:
        assert gw.url.startswith("ws://127.0.0.1:")
        if Path(f"/proc/{gw.pid}/net/tcp").exists():
            assert _listening_hosts(gw.pid, _port(gw.url)) == {"127.0.0.1"}
        marker = marker_path(state_dir)
        assert stat.S_IMODE(marker.stat().st_mode) == 0o600
        assert stat.S_IMODE(marker.parent.stat().st_mode) == 0o700
        status = run_cli("gateway", "status", "--json")
        doc = json.loads(status.stdout)
        assert (
            status.returncode == 0
            and doc["running"] is True
            and doc["pid"] == gw.pid
            and doc["url"] == gw.url
        )
        assert doc["probe"]["reachable"] is True
        refused = run_cli("doctor", "--session-sqlite", "import", "--json")
        assert refused.returncode == 5, refused.stdout
        assert "owns this OpenClaw state directory" in json.loads(refused.stdout)["error"]["message"]
        second = run_cli(
            "gateway", "run", "--port", "0", "--allow-unconfigured", "--auth", "none", timeout=30
        )
        assert second.returncode == 5 and f"pid {gw.pid}" in second.stderr
        ours = run_cli("status", "--json", env={"OPENCLAW_GATEWAY_PORT": str(_port(gw.url))})
        gateway = json.loads(ours.stdout)["gateway"]
        assert gateway["reachable"] is True and isinstance(gateway["connectLatencyMs"], int), gateway
        assert gateway["error"] is not None  # no credentials in this config: reachable, not authenticated
        client = connected(gw.url)
        gw.signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                client.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert gw.wait(30) == 0
        assert "[shutdown] completed cleanly" in "".join(gw.lines)
    assert not marker.exists()
    doc = json.loads(run_cli("gateway", "status", "--json").stdout)
    assert doc["running"] is False and doc["staleMarker"] is False and doc["ownedByOther"] is False
    assert (
        run_cli("doctor", "--session-sqlite", "import", "--json").returncode == 0
    )  # the state is free again


def test_shutdown_event_then_close_1001(state_dir: Path) -> None:
    with GatewayProcess() as gw:
        client = Client(gw.url)
        assert client.hello()["ok"]
        gw.signal(signal.SIGTERM)
        frames = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                frames.append(client.recv(timeout=10))
        assert [f["event"] for f in frames if f.get("type") == "event"][-1:] == ["shutdown"]
        assert closed.value.rcvd.code == 1001
        assert gw.wait(30) == 0


def test_stale_marker_after_sigkill_is_detected_and_replaced(state_dir: Path) -> None:
    gw = GatewayProcess().start()
    pid = gw.pid
    gw.signal(signal.SIGKILL)
    gw.wait(30)
    doc = json.loads(run_cli("gateway", "status", "--json").stdout)
    assert doc["running"] is False and doc["staleMarker"] is True and doc["stalePid"] == pid
    text = run_cli("gateway", "status")
    assert "Stale Gateway marker" in text.stdout
    with GatewayProcess() as again:  # the dead holder's lock went with it
        doc = json.loads(run_cli("gateway", "status", "--json").stdout)
        assert doc["running"] is True and doc["pid"] == again.pid and doc["staleMarker"] is False


@pytest.mark.parametrize(
    ("args", "config", "code", "text"),
    [
        (
            ["--bind", "lan", "--auth", "none"],
            {"gateway": {"mode": "local"}},
            2,
            "Refusing to bind gateway to lan without auth",
        ),
        (["--auth", "token"], {"gateway": {"mode": "local"}}, 3, "no token is configured"),
        (["--auth", "password"], {"gateway": {"mode": "local"}}, 3, "no password is configured"),
        (["--auth", "none"], {"gateway": {"port": 1}}, 3, "missing gateway.mode"),
        (["--auth", "none"], {"gateway": {"mode": "remote"}}, 3, "set gateway.mode=local (current: remote)"),
        (["--bind", "custom", "--auth", "none"], {"gateway": {"mode": "local"}}, 2, "gateway.customBindHost"),
    ],
)
def test_start_refusals(state_dir: Path, args: list[str], config: dict, code: int, text: str) -> None:
    write_config(state_dir, config)
    proc = run_cli("gateway", "run", "--port", "0", *args, timeout=30)
    assert proc.returncode == code, proc.stderr
    assert text in proc.stderr


def test_password_file_and_env_token(state_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2-pw\n")
    write_config(state_dir, {"gateway": {"mode": "local"}})
    from tests.gateway_server_support import connect_params

    with (
        GatewayProcess("--auth", "password", "--password-file", str(secret), token=None) as gw,
        Client(gw.url) as c,
    ):
        params = connect_params(None)
        params["auth"] = {"password": "hunter2-pw"}
        assert c.request("connect", params)["ok"] is True
    with (
        GatewayProcess(token=None, env={"OPENCLAW_GATEWAY_TOKEN": "from-env-token"}) as gw,
        Client(gw.url) as c,
    ):
        assert c.hello(token="from-env-token")["ok"] is True


# ---- SIGKILL while serving a write -------------------------------------------------------------------------


def _gateway_env(state: Path, **extra: str) -> dict[str, str]:
    return {"OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"), **extra}


def _served(state: Path, method: str, params: dict, **env: str) -> tuple[dict | None, GatewayProcess]:
    """Serve one request from a fresh Gateway on `state`; (response or None if the Gateway died)."""
    gw = GatewayProcess(env=_gateway_env(state, **env)).start()
    client = connected(gw.url)
    try:
        return client.request(method, params, timeout=60), gw
    except ConnectionClosed:
        return None, gw
    finally:
        client.close()


# G1 rules (stale rows deleted through verified archives): the test counts `pruned` and archives,
# which a 2026.9.6+ release replaces by archiving rows in place (D23)
@pytest.mark.slow
@pytest.mark.usefixtures("release_2026_7")
def test_sigkill_during_served_cleanup_loses_nothing(tmp_path: Path) -> None:
    from tests.test_cleanup_crash import _build, _check_invariant, _fingerprint, _originals

    initial = tmp_path / "initial"
    entries = _build(initial, "sqlite")
    originals = _originals(initial, "sqlite", entries)
    ref = tmp_path / "ref"
    shutil.copytree(initial, ref)
    count = tmp_path / "count"
    res, gw = _served(ref, "sessions.cleanup", {"enforce": True}, OPENCLAW_CLEANUP_CRASH_COUNT=str(count))
    gw.stop()
    assert res is not None and res["ok"] is True and res["payload"]["pruned"] == 71, res
    expected = _fingerprint(ref, "sqlite")
    total = int(count.read_text())
    rng = random.Random(20261201)
    for index, point in enumerate(sorted(rng.sample(range(1, total + 1), min(4, total)))):
        work = tmp_path / f"w{index}"
        shutil.copytree(initial, work)
        res, gw = _served(work, "sessions.cleanup", {"enforce": True}, OPENCLAW_CLEANUP_CRASH_AT=str(point))
        assert res is None, (point, res)  # the Gateway died mid-cleanup
        assert gw.wait(30) == -signal.SIGKILL
        _check_invariant(work, "sqlite", entries, originals)
        # a restarted Gateway serves the state as it is, then finishes the job
        gw2 = GatewayProcess(env=_gateway_env(work)).start()
        with connected(gw2.url) as c:
            listed = c.request("sessions.list", {"limit": 500, "archived": "all"})["payload"]
            from openclaw_cli.store.sqlite.store import SqliteStore

            with SqliteStore(
                work / "agents/main/agent/openclaw-agent.sqlite", "main", read_only=True
            ) as store:
                assert sorted(r["key"] for r in listed["sessions"]) == sorted(store.load_entries())
            again = c.request("sessions.cleanup", {"enforce": True}, timeout=60)
            assert again["ok"] is True, again
        gw2.stop()
        _check_invariant(work, "sqlite", entries, originals)
        got = _fingerprint(work, "sqlite")
        assert got[0] == expected[0] and got[1] == expected[1] and got[2:] == expected[2:], point
        shutil.rmtree(work)


def test_sigkill_during_served_agent_delete_loses_nothing(tmp_path: Path) -> None:
    from tests.cleanup_support import entry, make_sqlite, now_ms, sha, sqlite_transcript_bytes

    state = tmp_path / "s"
    state.mkdir()
    write_config(state, {"agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]}})
    now = now_ms()
    make_sqlite(state, {"agent:main:a": entry("a", now)})
    ops = {f"agent:ops:s{i}": entry(f"s{i}", now - i) for i in range(40)}
    make_sqlite(state, ops, agent="ops", turns=3)
    originals = {
        e["sessionId"]: sha(sqlite_transcript_bytes(state, e["sessionId"], "ops")) for e in ops.values()
    }
    res, gw = _served(state, "agents.delete", {"agentId": "ops"}, OPENCLAW_CLEANUP_CRASH_AT="5")
    assert res is None and gw.wait(30) == -signal.SIGKILL
    _assert_kept_or_archived(state, originals)
    res, gw = _served(state, "agents.delete", {"agentId": "ops"})
    gw.stop()
    assert res is not None and res["ok"] is True, res
    _assert_kept_or_archived(state, originals)
    archived = {name.split(".jsonl", 1)[0] for name, _ in _archives_of(state, "ops")}
    assert archived == set(originals)


def _archives_of(state: Path, agent: str) -> list:
    from collections import Counter

    from openclaw_cli.store.archives import read_archive_bytes
    from tests.cleanup_support import sha

    found: Counter = Counter()
    root = state / "agents" / agent / "sessions"
    for p in root.iterdir() if root.exists() else []:
        if ".deleted." in p.name and not p.name.endswith(".tmp"):
            found[(p.name.split(".deleted.", 1)[0], sha(read_archive_bytes(p)))] += 1
    return list(found)


def _assert_kept_or_archived(state: Path, originals: dict[str, str]) -> None:
    from openclaw_cli.store.sqlite.store import SqliteStore
    from tests.cleanup_support import sha, sqlite_transcript_bytes

    archives = set(_archives_of(state, "ops"))
    db = state / "agents/ops/agent/openclaw-agent.sqlite"
    with SqliteStore(db, "ops", read_only=True) as store:
        present = {e.get("sessionId") for e in store.load_entries().values()}
    for sid, digest in originals.items():
        kept = sid in present and sha(sqlite_transcript_bytes(state, sid, "ops")) == digest
        assert kept or (f"{sid}.jsonl", digest) in archives, f"{sid}: transcript lost"


@pytest.mark.usefixtures("release_2026_7")  # a cleanup that writes archives (G1, D23)
def test_files_the_gateway_writes_are_private(state_dir: Path) -> None:
    from tests.cleanup_support import entry, make_sqlite, now_ms

    make_sqlite(state_dir, {f"agent:main:s{i}": entry(f"s{i}", now_ms() - 90 * 86_400_000) for i in range(3)})
    write_config(state_dir, {"session": {"maintenance": {"pruneAfter": "30d"}}})
    before = {p: p.stat().st_mtime_ns for p in state_dir.rglob("*")}
    with GatewayProcess() as gw, connected(gw.url) as c:
        assert c.request("sessions.cleanup", {"enforce": True})["payload"]["pruned"] == 3
        written = [p for p in state_dir.rglob("*") if p.is_file() and before.get(p) != p.stat().st_mtime_ns]
        assert len([p for p in written if ".deleted." in p.name]) == 3  # the archives, the marker, the DB
        for path in written:
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
        for directory in {p.parent for p in written} - set(before):  # the directories it created
            assert stat.S_IMODE(directory.stat().st_mode) & 0o077 == 0, directory


@pytest.mark.slow
def test_sigkill_during_served_session_delete_loses_nothing(tmp_path: Path) -> None:
    """A delete has no numbered crash points: the Gateway is killed at random instants while it
    serves one (a long transcript makes the window wide). At every instant the transcript is in the
    store or in a verified archive; a restarted Gateway lists the state as it is and finishes."""
    from openclaw_cli.store.archives import read_archive_bytes
    from openclaw_cli.store.sqlite.store import SqliteStore
    from tests.cleanup_support import entry, make_sqlite, now_ms, sqlite_transcript_bytes

    initial = tmp_path / "initial"
    initial.mkdir()
    key = "agent:main:telegram:direct:long"
    make_sqlite(initial, {key: entry("long", now_ms()), "agent:main:main": entry("m", now_ms())}, turns=3000)
    original = sqlite_transcript_bytes(initial, "long")
    db = "agents/main/agent/openclaw-agent.sqlite"

    def kept_or_archived(state: Path) -> bool:
        with SqliteStore(state / db, "main", read_only=True) as store:
            if key in store.load_entries():
                return sqlite_transcript_bytes(state, "long") == original
        root = state / "agents" / "main" / "sessions"
        return any(
            read_archive_bytes(p) == original
            for p in root.glob("long.jsonl.deleted.*")
            if not p.name.endswith(".tmp")
        )

    timing = tmp_path / "timing"
    shutil.copytree(initial, timing)
    started = time.monotonic()
    res, gw = _served(timing, "sessions.delete", {"key": key})
    duration = time.monotonic() - started
    gw.stop()
    assert res is not None and res["ok"] is True and res["payload"]["deleted"] is True, res
    rng = random.Random(20261202)
    for index in range(4):
        work = tmp_path / f"w{index}"
        shutil.copytree(initial, work)
        gw = GatewayProcess(env=_gateway_env(work)).start()
        client = connected(gw.url)
        client.send({"type": "req", "id": "d", "method": "sessions.delete", "params": {"key": key}})
        time.sleep(rng.uniform(0.0, duration))
        gw.signal(signal.SIGKILL)
        gw.wait(30)
        client.close()
        assert kept_or_archived(work), index
        gw2 = GatewayProcess(env=_gateway_env(work)).start()
        with connected(gw2.url) as c:
            listed = c.request("sessions.list", {"archived": "all"})["payload"]
            with SqliteStore(work / db, "main", read_only=True) as store:
                assert sorted(r["key"] for r in listed["sessions"]) == sorted(store.load_entries())
            again = c.request("sessions.delete", {"key": key})
            assert again["ok"] is True, again
        gw2.stop()
        assert kept_or_archived(work), index
        with SqliteStore(work / db, "main", read_only=True) as store:
            assert key not in store.load_entries()
        shutil.rmtree(work)
