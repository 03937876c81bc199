"""openclaw_cli: OpenClaw's session-management layer as a Python library and CLI."""

__version__ = "0.1.0"

# Set by the `openclaw` executable (cli/entry.py), whose process ends only after its non-daemon
# threads: work that may follow a command's answer there (the WAL checkpoint after cleanup's
# COMMIT) runs after it. A library caller, the Gateway and in-process tests keep such work
# before the call returns, so what they measure or open next never races it.
EXECUTABLE = False
