"""openclaw_cli: OpenClaw's session-management layer as a Python library and CLI."""

__version__ = "0.1.0"
