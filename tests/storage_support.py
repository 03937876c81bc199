"""Issue 27 tests: one small state per store kind (legacy sessions.json + JSONL, our SQLite, a real
OpenClaw schema-23 database, the same migrated to schema 24), built from the checked-in fixtures,
and the CLI run in-process."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.compact_support import import_sqlite
from tests.conftest import OPENCLAW_FIXTURE, copy_tree

if TYPE_CHECKING:
    import pytest

STORE_KINDS = ("legacy", "sqlite", "schema23", "schema24")
AGENT = Path("agents") / "main"
SESSIONS_DIR = AGENT / "sessions"
DB = AGENT / "agent" / "openclaw-agent.sqlite"


def make_state(kind: str, state: Path) -> Path:
    """`state` (the isolated state dir) filled with the fixture's sessions in a store of `kind`."""
    if kind == "legacy":
        copy_tree(OPENCLAW_FIXTURE / "legacy-state", state)
    elif kind == "sqlite":
        copy_tree(OPENCLAW_FIXTURE / "legacy-state", state)
        import_sqlite(state)
    elif kind == "schema23":
        copy_tree(OPENCLAW_FIXTURE / "imported-state", state)
    elif kind == "schema24":
        from tests.schema24_support import migrated_state

        migrated_state(state)
    else:
        raise ValueError(kind)
    return state


def cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def cli_json(*args: str) -> tuple[int, Any, str]:
    code, out, err = cli(*args, "--json")
    try:
        return code, json.loads(out), err
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not one JSON document (exit {code}): {out!r} {err!r}") from exc


def du_bytes(path: Path) -> int:
    """`du -sB1`: allocated bytes of the tree, hard links once."""
    out = subprocess.run(["du", "-sB1", str(path)], capture_output=True, text=True, check=False).stdout
    return int(out.split()[0])


PAST = time.time() - 3600  # written an hour ago: settled, so the kept figures and tallies are kept


def settle(state_dir: Path) -> None:
    """Every file and directory of the sessions dir dated `PAST` (a just-written file's figures are
    never kept: `maintenance/storage.py`'s racily-clean rule)."""
    for path in [*(state_dir / SESSIONS_DIR).rglob("*"), state_dir / SESSIONS_DIR]:
        os.utime(path, (PAST, PAST), follow_symlinks=False)


def settled_legacy_state(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture's legacy state (orphans, tombstones, media) settled, a cache dir of its own,
    settings under which the plan removes rows."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(state_dir.parent / "cache"))
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.9.6")
    make_state("legacy", state_dir)
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"pruneAfter": "3d", "maxEntries": 4}}})
    )
    settle(state_dir)
    return state_dir
