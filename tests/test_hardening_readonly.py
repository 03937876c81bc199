"""D6.1, checked over the whole temporary HOME (issue 13, "What must hold" and case 7): no read
command and no dry run writes anything anywhere — not the state directory, not $HOME/.cache (the
tokenizer), not a config backup. Every entry of HOME (content, mode, size, mtime; directories by
mode and mtime, so a file created and removed again shows too) is compared before and after."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hardening_support import cli, doctor, make_state, tree_digest

KEY = "agent:main:main"

M = ("--agent", "main")
READS: list[tuple[str, ...]] = [
    ("sessions", *M),
    ("sessions", *M, "--json"),
    ("sessions", "--all-agents", "--json"),
    ("sessions", "--agent", "work"),
    ("sessions", *M, "--limit", "all", "--active", "100000", "--json"),
    ("sessions", "tail", "--session-key", KEY, *M),
    ("sessions", "tail", "--session-key", KEY, *M, "--context", "--json"),
    ("sessions", "tail", "--session-key", "agent:work:main", "--agent", "work", "--json"),
    ("status",),
    ("status", "--json"),
    ("status", "--no-probe", "--json"),
    ("doctor",),
    ("doctor", "--json"),
    ("doctor", "--session-sqlite", "dry-run", "--session-sqlite-all-agents"),
    ("doctor", "--session-sqlite", "validate", "--session-sqlite-all-agents", "--json"),
    ("doctor", "--session-sqlite", "inspect", "--session-sqlite-all-agents", "--json"),
    ("sessions", "cleanup", "--dry-run", *M),
    ("sessions", "cleanup", "--dry-run", "--json", "--all-agents"),
    ("cleanup", "--dry-run", "--agent", "work", "--json"),
    ("sessions", "cleanup", "--dry-run", "--fix-missing", *M),
    ("compact", KEY, *M, "--dry-run"),
    ("compact", KEY, *M, "--dry-run", "--tokenizer", "exact", "--json"),
    ("compact", "agent:work:main", "--agent", "work", "--dry-run", "--json"),
    ("compact", "--over-threshold", "--dry-run", "--all-agents", "--json"),
    ("compact", KEY, *M, "--max-lines", "3", "--dry-run", "--json"),
    ("agents", "list"),
    ("agents", "list", "--json"),
    ("--help",),
    ("--version",),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HOME with a legacy agent `main`, an imported agent `work` (SQLite) and a config."""
    root = tmp_path_factory.mktemp("readonly-home")
    state = make_state(root, 12, 0.3, 21)
    work = root / "work"
    make_state(work, 8, 0.2, 22, "--agent", "work")
    shutil.copytree(work / "state" / "agents" / "work", state / "agents" / "work")
    shutil.rmtree(work)
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {
                    "list": [{"id": "main", "default": True}, {"id": "work"}],
                    "defaults": {"compaction": {}},
                },
                "session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "rotateBytes": "10mb"}},
            }
        )
    )
    assert doctor(state, "import", "--session-sqlite-agent", "work").returncode == 0
    return root


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a))
def test_read_commands_and_dry_runs_write_nothing_anywhere(home: Path, args: tuple[str, ...]) -> None:
    state = home / "state"
    before = tree_digest(home)
    proc = cli(state, *args)
    # validate exits 1 on the legacy agent (nothing imported yet): a report, not an error
    assert proc.returncode == (1 if "validate" in args else 0), (args, proc.returncode, proc.stderr[-800:])
    assert "Error:" not in proc.stderr and '"ok": false' not in proc.stdout, (args, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr
    after = tree_digest(home)
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert changed == [], (args, changed[:6])


def test_the_exact_tokenizer_really_ran(home: Path) -> None:
    """The compact dry run above counted with tiktoken (otherwise case 7 would pass vacuously)."""
    proc = cli(home / "state", "compact", KEY, *M, "--dry-run", "--tokenizer", "exact", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"exact"' in proc.stdout
