"""The state-ownership lock taken by destructive `doctor --session-sqlite` modes (§6.3).

OpenClaw's Gateway and its SQLite maintenance commands own a state directory by holding an exclusive
SQLite transaction on a coordinator file `/tmp/openclaw-state-locks-<uid>/gateway-lifecycle.<8 hex of
sha256(realpath(<state>/state/openclaw.sqlite))>.lock.sqlite`. We take the same coordinator
(`busy_timeout=0`, `journal_mode=MEMORY`, `BEGIN EXCLUSIVE`, polled for 250 ms) and also honour the
Gateway's own lock files under `<state>/tmp/openclaw-<uid>/` when they exist. The locking itself
is `store/state_owner.py` (shared with schema-23 writes and the Gateway); this module says the
migration's refusal.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openclaw_cli.store.state_owner import StateClaim, state_held


def refusal_message(mode: str) -> str:
    return (
        f"Cannot run session SQLite {mode} while the Gateway or another SQLite maintenance command owns "
        "this OpenClaw state directory. Stop the Gateway and retry."
    )


@contextmanager
def state_ownership(state_dir: Path, mode: str, *, defer_owner_file: bool = False) -> Iterator[StateClaim]:
    """Hold the state ownership for the whole block; StateOwnedError (exit BUSY) when taken. With
    `defer_owner_file`, our 2026.9.8+ owner file waits for `claim.take_owner_file()`."""
    with state_held(state_dir, refusal_message(mode), defer_owner_file=defer_owner_file) as claim:
        yield claim
