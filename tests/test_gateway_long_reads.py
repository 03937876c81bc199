"""Issue 30: the Gateway's long reads (a `sessions.cleanup` dry run) run in its reader process, so
a mutation never waits behind one. The reader is stopped (SIGSTOP) to hold a dry run in progress
for as long as the test needs: the ordering asserted — patches and lists answered while the dry
run is still unanswered — cannot depend on timing."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway_server_support import GatewayThread, connected
from tests.lifecycle_support import DB, KEYS, make_templates, rows, use_template


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "long-reads")


@pytest.fixture(params=["sqlite", "legacy"])
def gateway(
    request: pytest.FixtureRequest, templates: dict[str, Path], state_dir: Path
) -> Iterator[GatewayThread]:
    use_template(templates[request.param], state_dir)
    with GatewayThread() as gw:
        yield gw


def _no_answer_yet(client, req_id: str) -> bool:
    """Nothing with this id has arrived (a short look: the reader is stopped, so nothing can)."""
    try:
        frame = client.response(req_id, timeout=0.3)
    except TimeoutError:
        return True
    raise AssertionError(f"answered while its reader was stopped: {frame}")


def test_a_patch_is_answered_while_a_cleanup_dry_run_is_still_running(
    gateway: GatewayThread, state_dir: Path
) -> None:
    with connected(gateway.url) as reader, connected(gateway.url) as writer:
        first = reader.request("sessions.cleanup", {"dryRun": True}, timeout=120)
        assert first["ok"], first
        pid = gateway.server._readers.pid  # noqa: SLF001 - the reader process under test
        assert pid is not None and pid != os.getpid()
        os.kill(pid, signal.SIGSTOP)
        try:
            reader.send(
                {"type": "req", "id": "long", "method": "sessions.cleanup", "params": {"dryRun": True}}
            )
            _no_answer_yet(reader, "long")
            patched = writer.request("sessions.patch", {"key": KEYS["main"], "label": "while reading"})
            listed = writer.request("sessions.list", {"limit": 10})
            described = writer.request("sessions.describe", {"key": KEYS["group"]})
            assert patched["ok"] and listed["ok"] and described["ok"], (patched, listed, described)
            assert rows(state_dir)[KEYS["main"]]["label"] == "while reading"  # committed, not queued
            _no_answer_yet(reader, "long")  # the dry run is still running
        finally:
            os.kill(pid, signal.SIGCONT)
        late = reader.response("long", timeout=120)
        assert late["ok"], late
        # a patched label changes no cleanup plan (the store's bytes, which the disk budget
        # measures, did change: the WAL grew)
        assert {k: v for k, v in late["payload"].items() if k != "diskBudget"} == {
            k: v for k, v in first["payload"].items() if k != "diskBudget"
        }


def test_the_dry_run_in_the_reader_is_the_local_one(gateway: GatewayThread) -> None:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    params = {"dryRun": True, "enforce": True, "includeActions": True}
    with connected(gateway.url) as client:
        remote = client.request("sessions.cleanup", params, timeout=120)
    assert remote["ok"], remote
    local = call(Context.load(resolve_paths()), "sessions.cleanup", dict(params))
    assert remote["payload"] == local
    pid = gateway.server._readers.pid  # noqa: SLF001 - computed in the child
    assert pid not in (None, os.getpid())
    # at a lower CPU priority than the server's (a long read is background work)
    ours, its = os.getpriority(os.PRIO_PROCESS, 0), os.getpriority(os.PRIO_PROCESS, pid)
    assert its == min(19, ours + 10), (ours, its)


def test_a_refused_dry_run_is_answered_as_before(gateway: GatewayThread) -> None:
    with connected(gateway.url) as client:
        res = client.request("sessions.cleanup", {"dryRun": True, "agent": "nobody-here"}, timeout=120)
    assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", res
    assert "nobody-here" in res["error"]["message"], res


def test_a_reader_that_died_answers_unavailable_and_is_started_again(gateway: GatewayThread) -> None:
    with connected(gateway.url) as client:
        assert client.request("sessions.cleanup", {"dryRun": True}, timeout=120)["ok"]
        pid = gateway.server._readers.pid  # noqa: SLF001
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        client.send({"type": "req", "id": "doomed", "method": "sessions.cleanup", "params": {"dryRun": True}})
        _no_answer_yet(client, "doomed")
        os.kill(pid, signal.SIGKILL)
        doomed = client.response("doomed", timeout=120)
        assert not doomed["ok"] and doomed["error"]["code"] == "UNAVAILABLE", doomed
        assert doomed["error"]["retryable"] is True, doomed
        again = client.request("sessions.cleanup", {"dryRun": True}, timeout=120)
        assert again["ok"], again
        assert gateway.server._readers.pid not in (None, pid)  # noqa: SLF001 - a new child


def test_a_dry_run_needs_no_write_lock(templates: dict[str, Path], state_dir: Path) -> None:
    """A cleanup dry run is a read: answered while another connection holds the SQLite store's
    write lock (a dry run that took the writer would wait for it)."""
    use_template(templates["sqlite"], state_dir)
    holder = sqlite3.connect(state_dir / DB, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with GatewayThread() as gw, connected(gw.url) as client:
            res = client.request("sessions.cleanup", {"dryRun": True}, timeout=120)
        assert res["ok"], res
    finally:
        holder.rollback()
        holder.close()


def test_the_gateway_imports_its_write_path_at_start(tmp_path: Path) -> None:
    """Issue 30: a Gateway imports every method's handler and the stores' write modules when it
    starts, so its first group commit does not import them under its requests (~14 ms of CPU for
    each of the ~20 patches in it: the p99 of 1,000)."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from openclaw_cli.gateway.server import GatewayServer, ServerOptions\n"
        "from openclaw_cli.paths import resolve_paths\n"
        "async def main():\n"
        "    server = GatewayServer(resolve_paths(), ServerOptions())\n"
        "    await server.start()\n"
        "    await server.stop()\n"
        "asyncio.run(main())\n"
        "wanted = ['openclaw_cli.ops.lifecycle', 'openclaw_cli.lifecycle', 'openclaw_cli.store.writer', 'openclaw_cli.store.sqlite.lifecycle']\n"
        "print([m for m in wanted if m not in sys.modules])\n"
    )
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
