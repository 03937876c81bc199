"""Gateway delegation for mutating commands (spec D9, D20): a mutation without `--store` (and not a
dry run) first asks the Gateway that owns the state dir; only when nothing listens does it run
locally, and says so. Every mutating command goes through `delegate` and declares the shared
Gateway flags below.

Contract: `delegate(method, params, options, paths=…)` returns the Gateway's result document for
`method` (an `ops.methods` name, same params as the local call), or None when no Gateway listens
(connection refused / unreachable before a WebSocket opened) — then the caller runs the same
method locally and prints `LOCAL_FALLBACK_HINT`. Any other failure (auth, protocol, timeout, a
request error) raises a typed error: never answered by a local write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

GATEWAY_URL = typer.Option(None, "--url", help="Gateway WebSocket URL (default: from config/env).")
GATEWAY_TOKEN = typer.Option(None, "--token", help="Gateway token (default: from config/env).")
GATEWAY_PASSWORD = typer.Option(None, "--password", help="Gateway password (default: from config/env).")
GATEWAY_TIMEOUT = typer.Option(None, "--timeout", metavar="MS", help="Gateway request timeout in milliseconds.")

LOCAL_FALLBACK_HINT = "No Gateway is listening at {url}; ran locally."


@dataclass
class GatewayOptions:
    url: str | None = None
    token: str | None = None
    password: str | None = None
    timeout_ms: int | None = None


def delegate(method: str, params: dict[str, Any], options: GatewayOptions | None, *, paths: Any,
             config: Any = None) -> dict[str, Any] | None:
    """The Gateway's result, or None when no Gateway listens (run locally). Not built yet: every
    mutation runs locally (the delegation issue fills this in)."""
    return None
