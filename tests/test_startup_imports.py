"""Start-up stays cheap (`openclaw --help` well under 150 ms): heavy modules are imported only by
the commands that need them. Checked with `python -X importtime` in a fresh process."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sqlite_utils", "pydantic", "tiktoken", "zstandard", "rich", "json5", "websockets", "sqlite3")


def imported_modules(*code: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "; ".join(code)],
        capture_output=True,
        text=True,
        check=True,
    )
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("module", HEAVY)
def test_cli_entry_point_does_not_import_heavy_modules(module: str) -> None:
    names = imported_modules("import openclaw_cli.cli.main")
    assert not any(n == module or n.startswith(module + ".") for n in names), module


def test_help_renders_without_rich_or_stores() -> None:
    names = imported_modules(
        "import sys",
        "sys.argv = ['openclaw', '--help']",
        "import openclaw_cli.cli.main as m",
        "m.app(standalone_mode=False)",
    )
    for module in ("rich", "sqlite3", "zstandard", "tiktoken"):
        assert not any(n == module or n.startswith(module + ".") for n in names), module
