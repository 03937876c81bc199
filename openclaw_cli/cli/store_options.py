"""Options every mutating command shares about how it writes stores (beside the Gateway flags of
`cli/delegation.py`)."""

from __future__ import annotations

import typer

NO_BACKUP = typer.Option(
    False,
    "--no-backup",
    help="Do not back up a real OpenClaw database (schema 23) before writing to it "
    "(default: a sibling <db>.openclaw-cli-backup-<time> file, once per run).",
)
