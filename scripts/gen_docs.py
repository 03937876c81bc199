"""Regenerate the generated docs: docs/exit-codes.md (from openclaw_cli/errors.py) and
docs/commands.md (from the Typer app). Run it after adding or changing a command or an option:

    python scripts/gen_docs.py

`tests/test_docs.py` fails when either file is stale."""

from pathlib import Path

from openclaw_cli.cli.reference import commands_markdown
from openclaw_cli.errors import exit_codes_markdown

ROOT = Path(__file__).resolve().parent.parent
(ROOT / "docs" / "exit-codes.md").write_text(exit_codes_markdown())
(ROOT / "docs" / "commands.md").write_text(commands_markdown())
print("docs/exit-codes.md and docs/commands.md written")
