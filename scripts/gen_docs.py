"""Regenerate the generated docs: docs/exit-codes.md (from openclaw_cli/errors.py),
docs/commands.md and openclaw_cli/cli/help_texts.py (every `--help` text, served without Typer by
cli/helpfast.py), both from the Typer app. Run it after adding or changing a command or an option:

    python scripts/gen_docs.py

`tests/test_docs.py` and `tests/test_help_fast.py` fail when a file is stale."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

try:
    # typer too: the package may be importable (PYTHONPATH, the checkout as cwd) where its
    # dependencies are not, and commands_markdown imports typer only when it runs
    import typer  # noqa: F401

    from openclaw_cli.cli.reference import commands_markdown, help_texts_module
    from openclaw_cli.errors import exit_codes_markdown
except ImportError:
    # `python scripts/gen_docs.py` with a Python that lacks the package (the system one): run again
    # with the checkout's .venv (made by scripts/quickstart or scripts/test), as the README says
    VENV = ROOT / ".venv" / "bin" / "python"
    if VENV.exists() and not os.environ.get("OPENCLAW_GEN_DOCS_REEXEC"):  # once: no loop if it lacks it too
        os.environ["OPENCLAW_GEN_DOCS_REEXEC"] = "1"
        os.execv(str(VENV), [str(VENV), __file__, *sys.argv[1:]])
    sys.exit(
        "gen_docs: openclaw_cli is not importable here; run scripts/test (or scripts/quickstart) first to make "
        ".venv, or run .venv/bin/python scripts/gen_docs.py"
    )
(ROOT / "docs" / "exit-codes.md").write_text(exit_codes_markdown())
(ROOT / "docs" / "commands.md").write_text(commands_markdown())
written = ["docs/exit-codes.md", "docs/commands.md"]
if (ROOT / "openclaw_cli" / "cli").is_dir():  # not in a copy of scripts/ and docs/ alone
    (ROOT / "openclaw_cli" / "cli" / "help_texts.py").write_text(help_texts_module())
    written.append("openclaw_cli/cli/help_texts.py")
print(", ".join(written), "written")
