"""Regenerate the generated docs (docs/exit-codes.md)."""

from pathlib import Path

from openclaw_cli.errors import exit_codes_markdown

ROOT = Path(__file__).resolve().parent.parent
(ROOT / "docs" / "exit-codes.md").write_text(exit_codes_markdown())
print("docs/exit-codes.md written")
