"""`openclaw sessions search`'s command path (issue 26, stop 36): the params the command builds go to
the handler without the method table and its schema when they pass it for certain, with the same
answer either way; `--limit` takes the local range (1-1000), not the Gateway's 1-25; the path
imports neither the method table, the schema module nor the behaviour module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.cli.search_body import _plainly_valid
from openclaw_cli.ops.methods import parse_params
from tests.conftest import generate_legacy_state, run_cli

BASE: dict[str, Any] = {"query": "session turn", "limit": 10, "archived": True}
ACCEPTED = [
    BASE,
    {**BASE, "limit": 25, "agent": "main", "sessionKeys": ["agent:main:main", "x"], "verbose": True},
    {**BASE, "roles": ["user", "tool"], "since": 0, "until": 1796000000000, "archived": False},
    {**BASE, "allAgents": True, "fixed": True, "redact": True, "reindex": True, "store": "/x/sessions.json"},
    {**BASE, "query": "q" * 4096},
]
# what the predicate leaves to the schema (some pass it, some do not)
LEFT = [
    {**BASE, "query": "café"},
    {**BASE, "query": ""},
    {**BASE, "query": "q" * 4097},
    {**BASE, "agent": ""},
    {**BASE, "sessionKeys": ["ok", ""]},
    {**BASE, "sessionKeys": []},
    {**BASE, "sessionKeys": [f"k{i}" for i in range(201)]},
    {**BASE, "since": 2**60},
    {**BASE, "since": 1.5},
    {**BASE, "until": True},
    {**BASE, "fixed": False},
    {k: v for k, v in BASE.items() if k != "archived"},
]


@pytest.mark.parametrize("params", ACCEPTED)
def test_what_the_command_skips_checking_the_schema_accepts_as_given(params: dict[str, Any]) -> None:
    assert _plainly_valid(params)
    error, checked = parse_params(
        "sessions.search", {**params, "limit": min(params["limit"], 25)}, local=True
    )
    assert error is None
    assert {**checked, "limit": params["limit"]} == params  # nothing normalised away either


@pytest.mark.parametrize("params", LEFT)
def test_anything_else_goes_through_the_schema(params: dict[str, Any]) -> None:
    assert not _plainly_valid(params)


@pytest.fixture
def legacy(state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    return state_dir


def test_the_local_limit_goes_past_the_gateways_25(legacy: Path) -> None:
    """`--limit` is 1-1000 locally (docs/decisions.md, issue 26); the schema's 25 refused 26 and up."""
    proc = run_cli("sessions", "search", "session", "--limit", "30", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["results"]) == 30
    assert run_cli("sessions", "search", "session", "--limit", "1001", "--json").returncode == 2


def test_the_schema_path_answers_the_same_bytes(legacy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same searches with the predicate forced off (every call checked by the schema): the
    same stdout, stderr and exit code."""
    shim = legacy.parent / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import openclaw_cli.cli.search_body as b\nb._plainly_valid = lambda params: False\n"
    )
    cases = [
        ("session", "--json"),
        ("session", "--limit", "3"),
        ('"session turn"', "--role", "user", "--since", "2020-01-01", "--json"),
        ("session", "--agent", "main", "--session", "agent:main:main", "--json"),
        ("session", "--agent", "", "--json"),
        ("session", "--session", "", "--json"),
        ("café", "--json"),
        ("session", "--fixed", "--redact", "--no-archived"),
        ("session", "--limit", "40", "--json"),
    ]
    path = os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))
    for args in cases:
        lean = run_cli("sessions", "search", *args)
        checked = run_cli("sessions", "search", *args, env={"PYTHONPATH": path})
        assert (lean.returncode, lean.stdout, lean.stderr) == (
            checked.returncode,
            checked.stdout,
            checked.stderr,
        ), args


def test_the_search_path_imports_no_method_table_schema_or_behaviour_module(legacy: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "openclaw_cli", "sessions", "search", "session", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "openclaw_cli.search.engine" in imported
    assert not imported & {"openclaw_cli.ops.methods", "openclaw_cli.ops.params", "openclaw_cli.behavior"}
    # stop 37: no migration run to name (no runs dir), sessions.json present (no transcript scan
    # for the D2 hint), a first listing (no watch): none of their modules either
    assert not imported & {
        "openclaw_cli.migration.staging",
        "openclaw_cli.store.files",
        "openclaw_cli.search.watch",
    }
    assert "Legacy session store in use" in proc.stderr  # the D2 hint is still said


def _message(mid: str, text: str) -> bytes:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1796000000000}
    return json.dumps({"type": "message", "id": mid, "timestamp": 1796000000000, "message": message}).encode()


def test_a_warm_index_sees_each_kind_of_change_in_one_process(legacy: Path) -> None:
    """The freshness check on the warm path (the sessions directory's fingerprint): one process,
    searches between changes, each change found by the very next search: a line appended to a
    live transcript, a new transcript, a removed one, a new archive."""
    import zstandard

    from openclaw_cli.search import search

    sdir = legacy / "agents" / "main" / "sessions"
    store = json.loads((sdir / "sessions.json").read_text())
    sid = next(iter(store.values()))["sessionId"]
    assert list(search(legacy, "narwhal")) == []
    assert list(search(legacy, "narwhal")) == []  # warm: nothing changed

    with open(sdir / f"{sid}.jsonl", "ab") as fh:
        fh.write(_message("fresh001", "narwhal appended") + b"\n")
    assert [r["messageId"] for r in search(legacy, "narwhal")] == ["fresh001"]

    new = "12345678-1234-4234-8234-123456789abc"
    (sdir / f"{new}.jsonl").write_bytes(_message("fresh002", "narwhal new file") + b"\n")
    assert sorted(r["messageId"] for r in search(legacy, "narwhal")) == ["fresh001", "fresh002"]

    (sdir / f"{new}.jsonl").unlink()
    assert [r["messageId"] for r in search(legacy, "narwhal")] == ["fresh001"]

    gone = "abcdefab-1234-4234-8234-123456789abc"
    (sdir / f"{gone}.jsonl.deleted.2026-10-01T10-00-00.000Z.zst").write_bytes(
        zstandard.ZstdCompressor().compress(_message("fresh003", "narwhal archived") + b"\n")
    )
    found = {r["messageId"]: r["source"] for r in search(legacy, "narwhal")}
    assert found == {"fresh001": "legacy", "fresh003": "archive:deleted"}


def test_the_fast_path_searches_without_cyclic_collection_to_the_end(
    legacy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """stop 38: the process ends with the search, so the fast path turns the collector off for
    good: no young-generation passes over what its imports load and no full pass at exit
    (361.0 -> 348.7 M instructions for a warm common-word search)."""
    import gc

    from openclaw_cli.cli import common, fast

    seen: list[bool] = []
    real_run = common.run

    def watching(fn: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_run(fn, **kwargs)

    monkeypatch.setattr(common, "run", watching)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(legacy))
    assert gc.isenabled()
    try:
        assert fast.dispatch(["sessions", "search", "session", "--json", "--limit", "3"]) == 0
        assert seen == [False]
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert json.loads(capsys.readouterr().out)["results"]


# stop 40: what a warm search without archive hits imports only through these modules, each loaded
# by the path on purpose before: `typing` at run time (12.5 M instructions), `uuid` (fsio's and the
# archives' temp names; it imports `platform`: 11 M), `threading` and `signal` (the interrupt
# handlers; `signal` builds its enums: 7.3 M) — together ~11 % of a warm common-word search
LEAN_PATH_ABSENT = ("typing", "uuid", "platform", "threading", "signal")


def _imports_of_search(*args: str) -> set[str]:
    """The modules a `sessions search` process imports (`-X importtime` of a fresh process)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "openclaw_cli", "sessions", "search", *args],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize(
    "args",
    [
        ("session", "--json", "--no-archived"),
        ("session turn", "--no-archived", "--verbose"),  # the text output, its renderer and term
        ("zzzz-nothing", "--json"),  # archives searched, none hit
        ('"session turn"', "--json", "--role", "user", "--since", "7d", "--no-archived", "--limit", "3"),
    ],
)
def test_a_warm_search_imports_no_typing_uuid_platform_threading_or_signal(
    legacy: Path, args: tuple[str, ...]
) -> None:
    """A warm search that reads no archive hit (an archive hit imports zstandard, which imports
    `typing` and `platform` itself) loads none of LEAN_PATH_ABSENT: annotations name `typing`'s
    types under `TYPE_CHECKING` only, uuid is imported where a temp name is made, and the interrupt
    handlers are set through `_signal` (tests/test_interrupts.py)."""
    assert run_cli("sessions", "search", "session", "--json").returncode == 0  # the index, built
    imported = _imports_of_search(*args)
    assert "openclaw_cli.search.engine" in imported and "openclaw_cli.interrupts" in imported
    assert "zstandard" not in imported
    assert not imported & set(LEAN_PATH_ABSENT), sorted(imported & set(LEAN_PATH_ABSENT))


_NO_RARER_ERROR = """
import contextlib, io, sys
from openclaw_cli.cli import fast
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    assert fast.dispatch(sys.argv[1:]) == 0
import openclaw_cli.errors as errors
print(" ".join(sorted(name for name in errors._MORE if name in vars(errors))))
"""


def test_a_search_of_a_legacy_agent_does_not_import_the_legacy_store(legacy: Path) -> None:
    """stop 40: a search reads sessions.json and the transcripts itself, so the agent's legacy
    store is only located (`detect.LegacyLocation`), not imported (~5.5 M instructions of the
    common-word search); a `--store` path still opens the store (which is what a test sees). Nor
    does it create the rarer error classes (`errors._MORE`: ~2.6 M)."""
    assert run_cli("sessions", "search", "session", "--json").returncode == 0  # the index, built
    for args in (("session", "--json"), ("session turn", "--agent", "main"), ("zzzz", "--all-agents")):
        imported = _imports_of_search(*args)
        assert "openclaw_cli.store.detect" in imported
        assert "openclaw_cli.store.legacy.store" not in imported, args
        assert "openclaw_cli.errors_more" not in imported, args  # no rarer error class is created
    code = [sys.executable, "-c", _NO_RARER_ERROR, "sessions", "search", "session", "--json"]
    proc = subprocess.run(code, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == []  # before stop 40 errors.py created all 21 at import
    explicit = str(legacy / "agents" / "main" / "sessions" / "sessions.json")
    assert "openclaw_cli.store.legacy.store" in _imports_of_search("session", "--store", explicit)


_STILL_LAZY = """
import contextlib, io, sys
from openclaw_cli.cli import fast
from openclaw_cli.lazyre import _LazyPattern
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    assert fast.dispatch(sys.argv[1:]) == 0
import openclaw_cli.cli.rootopts as rootopts, openclaw_cli.cli.term as term
import openclaw_cli.config.resolve as resolve, openclaw_cli.store.archives as archives
named = {"rootopts.PROFILE_NAME": rootopts.PROFILE_NAME, "term._SGR": term._SGR,
         "resolve._DIGITS": resolve._DIGITS, "archives._ARCHIVE_RE": archives._ARCHIVE_RE,
         "archives._TS_RE": archives._TS_RE, "archives._STORE_BACKUP_RE": archives._STORE_BACKUP_RE}
print(" ".join(sorted(name for name, value in named.items() if not isinstance(value, _LazyPattern))))
"""


def test_a_search_with_live_hits_compiles_no_pattern_it_does_not_use(legacy: Path) -> None:
    """stop 40: patterns a warm search never matches (the `--profile` name, the colour-code strip,
    the lock env's digits, the archive names' three) are compiled on first use, not at import
    (~3 M instructions of the common-word search); one that is used is then the real pattern."""
    assert run_cli("sessions", "search", "session", "--json").returncode == 0  # the index, built
    code = [sys.executable, "-c", _STILL_LAZY, "sessions", "search", "session", "--json", "--no-archived"]
    proc = subprocess.run(code, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == []
    # the same process shape does compile one when it is used: `--profile` checks its name
    proc = subprocess.run([*code[:3], "--profile", "x", *code[3:]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["rootopts.PROFILE_NAME"]
