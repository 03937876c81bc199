"""Shared fixtures. The autouse fixture isolates every test from the real home directory."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# No per-example deadline anywhere: on a loaded 2-core CI machine a property's first example (its
# imports) can pass 200 ms, which Hypothesis reports as a failure that says nothing about the code.
settings.register_profile("openclaw", deadline=None)
settings.load_profile("openclaw")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENCLAW_FIXTURE = FIXTURES / "openclaw-2026.9.6"
GEN_LEGACY_STORE = ROOT.parent / "shared" / "tools" / "gen_legacy_store.py"
NOW_MS = 1796000000000


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENCLAW_HOME", str(home))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(state / "openclaw.json"))
    monkeypatch.delenv("OPENCLAW_PROFILE", raising=False)
    monkeypatch.delenv("OPENCLAW_DEBUG", raising=False)
    monkeypatch.delenv("OPENCLAW_CLI_BEHAVIOR", raising=False)
    from openclaw_cli import behavior

    monkeypatch.setattr(behavior, "_flag", None)  # a root `--behavior` of an in-process CLI run before
    for name in (
        "OPENCLAW_GATEWAY_TOKEN",
        "OPENCLAW_GATEWAY_PASSWORD",
        "OPENCLAW_GATEWAY_URL",
        "OPENCLAW_ALLOW_INSECURE_PRIVATE_WS",
        "NODE_EXTRA_CA_CERTS",
    ):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("OPENCLAW_SESSION_WRITE_LOCK_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # Gateway probes must never reach a real Gateway on the default port during tests.
    monkeypatch.setenv("OPENCLAW_GATEWAY_PORT", "1")
    return {"home": home, "state": state, "config": state / "openclaw.json"}


@pytest.fixture
def state_dir(isolated_env: dict[str, Path]) -> Path:
    return isolated_env["state"]


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, dirs_exist_ok=True)
    for path in [dest, *dest.rglob("*")]:
        mode = 0o700 if path.is_dir() else 0o600
        os.chmod(path, mode)
    return dest


@pytest.fixture
def legacy_fixture_state(state_dir: Path) -> Path:
    """The real OpenClaw fixture's legacy state, copied into the isolated state dir."""
    return copy_tree(OPENCLAW_FIXTURE / "legacy-state", state_dir)


@pytest.fixture
def imported_fixture_state(state_dir: Path) -> Path:
    """The state after the real OpenClaw import (a real schema-23 DB), copied into the state dir."""
    return copy_tree(OPENCLAW_FIXTURE / "imported-state", state_dir)


def ours_and_a_legacy_agent(state: Path, agent: str) -> Path:
    """The fixture's legacy state at `state`, main imported by our CLI (our SQLite store), and
    agent `agent` a copy of main's legacy store; returns that legacy store's directory."""
    copy_tree(OPENCLAW_FIXTURE / "legacy-state", state)
    env = {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_HOME": str(state.parent),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
    }
    done = run_cli("doctor", "--session-sqlite", "import", "--json", env=env)
    assert done.returncode == 0, done.stderr
    work = state / "agents" / agent / "sessions"
    copy_tree(OPENCLAW_FIXTURE / "legacy-state" / "agents" / "main" / "sessions", work)
    return work


def fast_path_options(command: Any, left_to_typer: set[str]) -> dict[str, bool]:
    """A Typer-built command's options the fast path parses itself (option -> is a flag), after
    checking each is plain enough for it: one name, no secondary name, env var, repetition,
    callback or requirement. Options in `left_to_typer` send the command to Typer instead."""
    declared = {}
    for param in command.params:
        assert len(param.opts) == 1 or param.opts[0] in left_to_typer, param.opts
        if param.opts[0] in left_to_typer:
            continue
        assert not param.secondary_opts and param.envvar is None and not param.multiple and param.nargs == 1
        assert param.callback is None and not param.required, param.opts
        declared[param.opts[0]] = bool(param.is_flag)
    return declared


def modules_imported(args: list[str], **env: str) -> tuple[int, set[str]]:
    """The exit code of `openclaw ARGS` (with `env` over ours) and every module it imported
    (`python -X importtime`'s names)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "openclaw_cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return proc.returncode, names


def generate_legacy_state(dest: Path, sessions: int, total_mb: float, seed: int, *extra: str) -> Path:
    """Run the shared deterministic generator (../shared/tools/gen_legacy_store.py)."""
    if not GEN_LEGACY_STORE.exists():
        pytest.fail(f"legacy-state generator not found at {GEN_LEGACY_STORE}")
    subprocess.run(
        [
            sys.executable,
            str(GEN_LEGACY_STORE),
            str(dest),
            str(sessions),
            str(total_mb),
            str(seed),
            "--now-ms",
            str(NOW_MS),
            *extra,
        ],
        check=True,
        capture_output=True,
    )
    return dest


def run_cli(
    *args: str, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run `python -m openclaw_cli` as a real subprocess."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "openclaw_cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=timeout,
    )


@pytest.fixture
def spawn():
    """Start `python -c CODE` as a live holder whose argv names openclaw (spec D12); CODE prints
    `ready` once it holds what it should. Every holder is killed after the test."""
    procs: list[subprocess.Popen] = []

    def start(code: str, **env: str) -> subprocess.Popen:
        argv = [sys.executable, "-c", code, "/opt/tools/openclaw-gateway"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=dict(os.environ, **env))
        procs.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def real_db_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    """A state holding a real schema-23 database, built once per test session: imported by the real
    OpenClaw from a generated legacy state where /tmp/peer exists (zstd rows, FTS, watermarks), else
    the checked-in fixture DB. Returns (state dir, built by the real OpenClaw)."""
    from tests.openclaw_db_support import build_real_state, fixture_state, have_peer

    if not have_peer():
        return fixture_state(tmp_path_factory.mktemp("real-db") / "home" / ".openclaw"), False
    # One real import for the whole run: the xdist workers share the run's base temp dir (or
    # OPENCLAW_TEST_SHARED_DIR, which scripts/test sets for both of its steps), and the first to
    # take the lock builds (the real OpenClaw's import costs seconds of CPU); the others find it
    # done. Tests only ever copy it (real_state, or a copytree of their own).
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    if os.environ.get("OPENCLAW_TEST_SHARED_DIR"):
        shared = Path(os.environ["OPENCLAW_TEST_SHARED_DIR"])
    root, done = shared / "real-db-shared", shared / "real-db-shared.done"
    with open(shared / "real-db-shared.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a worker that died half-way
            build_real_state(root)
            done.touch()
    return root / "home" / ".openclaw", True


@pytest.fixture
def real_state(real_db_template: tuple[Path, bool], state_dir: Path) -> Path:
    """The template's state copied into this test's isolated state dir (the real OpenClaw's
    wrapper finds it at OC_PEER_ROOT = the test's tmp dir)."""
    copy_tree(real_db_template[0], state_dir)
    return state_dir


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a `slow` or `peer` test (the real OpenClaw's CLI or Gateway costs seconds of
    CPU a run) go first, the rest after, each file's tests kept together in their order. With `scripts/test`'s `--dist loadfile --no-loadscope-reorder` the two workers
    start on the long files and finish on short ones (no worker idle while the other runs a
    minute-long peer test at the end), and a file's module-scoped templates are built once."""
    heavy = {
        item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("peer")
    }
    items.sort(key=lambda item: item.path not in heavy)  # stable: collected order within each group


# ---- per-test CPU (issue 24): OPENCLAW_TEST_CPU_LOG=FILE appends one JSON line per test ----------


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    """Wall time, the worker's CPU and its waited-for children's CPU over a test's set-up, call and
    tear-down (module fixtures land on the first/last test of the module). Processes started in
    their own group and never waited for (the real Gateway) are recorded by `record_group_cpu`."""
    log = os.environ.get("OPENCLAW_TEST_CPU_LOG")
    if not log:
        yield
        return
    wall, (own, kids) = time.perf_counter(), _cpu()
    yield
    own2, kids2 = _cpu()
    with open(log, "a") as fh:
        fh.write(
            json.dumps(
                {
                    "test": item.nodeid,
                    "wall": round(time.perf_counter() - wall, 3),
                    "own": round(own2 - own, 3),
                    "children": round(kids2 - kids, 3),
                    "load": os.getloadavg()[0],
                }
            )
            + "\n"
        )


def record_group_cpu(pgid: int, what: str) -> None:
    """With OPENCLAW_TEST_CPU_LOG set: the CPU so far of every live process in group `pgid` (own and
    waited-for children's), as one JSON line; called just before the group is stopped."""
    log = os.environ.get("OPENCLAW_TEST_CPU_LOG")
    if not log:
        return
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state ppid pgrp ... utime(11) stime cutime cstime
            total += sum(int(v) for v in fields[11:15])
    with open(log, "a") as fh:
        fh.write(json.dumps({"group": what, "pgid": pgid, "cpu": round(total / tick, 2)}) + "\n")
