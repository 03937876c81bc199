"""`[sessions] cleanup --enforce --json`'s start-up (issue 30): the modules on its path build no
dataclass and compile no pattern when they are imported (each `@dataclass` compiles its generated
methods, ~2-3 M instructions; a pattern ~0.1-1 M), except the ones named below, and a probe that
finds nothing listening imports no `encodings.idna`. The classes are `openclaw_cli.records`
classes with the dataclasses' fields, repr, equality and hashing; the patterns are
`lazyre.lazy_pattern`s, compiled on first use."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.gateway.probe import _resolvable, nothing_listens
from tests.conftest import copy_tree, modules_imported, ours_and_a_legacy_agent

# still dataclasses on this path: the import's per-session classes (the SQLite store module holds
# them) and MaintenanceSettings (tests use dataclasses.replace/asdict on it)
LEFT = {
    "openclaw_cli.config.resolve_maintenance.MaintenanceSettings",
    "openclaw_cli.store.sqlite.lines.PreparedLines",
    "openclaw_cli.store.sqlite.store.ImportRecord",
    "openclaw_cli.store.sqlite.store.ImportRecordResult",
    "openclaw_cli.store.sqlite.store.BulkImportResult",
    "openclaw_cli.store.sqlite.store.KeeperProbe",
}
# compiled at import and used by every apply anyway (a stand-in would only add a call)
EAGER = {"openclaw_cli.ops.behavior", "openclaw_cli.store.owner_file"}

_RECORDER = """
import dataclasses, json, re, sys
built, compiled = [], []
process = dataclasses._process_class
def _process(cls, *args, **kwargs):
    if cls.__module__.startswith("openclaw_cli"):
        built.append(f"{cls.__module__}.{cls.__qualname__}")
    return process(cls, *args, **kwargs)
dataclasses._process_class = _process
compile_ = re.compile
def _compile(pattern, flags=0):
    frame = sys._getframe(1)
    module = frame.f_globals.get("__name__", "")
    if frame.f_code.co_name == "<module>" and module.startswith("openclaw_cli"):
        compiled.append(module)
    return compile_(pattern, flags)
re.compile = _compile
from openclaw_cli.cli.entry import main
sys.argv = ["openclaw", "sessions", "cleanup", "--enforce", "--json"]
try:
    code = main()
except SystemExit as exit:
    code = exit.code
sys.stderr.write("BUILT" + json.dumps([code, built, compiled]))
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our SQLite store imported from the fixture, with a cap that makes rows leave (the apply's
    whole path: plan, archives, removals, ledger, rows archived in place)."""
    state = tmp_path_factory.mktemp("cleanup-startup") / "state"
    ours_and_a_legacy_agent(state, "work")
    config = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 2}}}
    (state / "openclaw.json").write_text(json.dumps(config))
    return state


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(state: Path) -> dict[str, str]:
    return {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_HOME": str(state.parent),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "OPENCLAW_GATEWAY_PORT": str(_free_port()),
    }


def test_an_applied_cleanup_builds_no_dataclass_and_compiles_no_pattern_at_import(
    template: Path, tmp_path: Path
) -> None:
    state = copy_tree(template, tmp_path / "state")
    done = subprocess.run(
        [sys.executable, "-c", _RECORDER],
        capture_output=True,
        text=True,
        env={**os.environ, **_env(state)},
        timeout=120,
    )
    code, built, compiled = json.loads(done.stderr.rsplit("BUILT", 1)[1])
    assert code in (0, None), done.stderr
    document = json.loads(done.stdout)
    assert document["appliedCount"] < document["beforeCount"]  # rows left: the apply ran
    assert "openclaw_cli.maintenance.plan.CleanupPlan" not in built
    assert set(built) <= LEFT, sorted(set(built) - LEFT)
    assert set(compiled) <= EAGER, sorted(set(compiled) - EAGER)


def test_a_cleanup_that_finds_nothing_listening_imports_no_idna_codec_nor_socket_module(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    code, names = modules_imported(["sessions", "cleanup", "--enforce", "--json"], **_env(state))
    assert code == 0
    assert "openclaw_cli.gateway.probe" in names  # (the probe ran)
    assert "encodings.idna" not in names and "stringprep" not in names
    assert "socket" not in names  # (the probe and the owner file use the C module `_socket`)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "::1",
        "gateway.example.com",
        "gateway.example.com.",
        "",
        "a" * 63 + ".com",
        "a" * 64 + ".com",
        "com." + "a" * 63,
        "com." + "a" * 64,
        "a..b",
        ".a",
        "bücher.example",
        "\u00e9",
    ],
)
def test_a_host_is_resolved_as_the_idna_codec_encodes_it(host: str) -> None:
    """The bytes given to getaddrinfo are exactly the codec's; a host the codec changes or
    refuses is still given as the str (the codec then encodes or refuses it as before)."""
    given = _resolvable(host)
    try:
        encoded: bytes | None = host.encode("idna")
    except UnicodeError:
        encoded = None
    if isinstance(given, bytes):
        assert given == encoded
    else:
        assert given == host and (encoded is None or not host.isascii())


def test_nothing_listening_is_still_reported_by_name() -> None:
    class Target:
        host, port = "127.0.0.1", _free_port()

    assert nothing_listens(Target(), 1000) == f"connect ECONNREFUSED 127.0.0.1:{Target.port}"
    Target.host = "localhost"
    assert nothing_listens(Target(), 1000) in (
        f"connect ECONNREFUSED localhost:{Target.port}",
        f"connect EADDRNOTAVAIL localhost:{Target.port}",
    )


def test_something_listening_is_found() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        class Target:
            host, port = "localhost", server.getsockname()[1]

        assert nothing_listens(Target(), 1000) is None
    Target.host = "name.invalid"
    assert nothing_listens(Target(), 1000) == "getaddrinfo ENOTFOUND name.invalid"
