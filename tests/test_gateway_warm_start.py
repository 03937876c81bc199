"""Issue 30: what a Gateway prepares at start so its first writes do not pay for it under the
requests of its first group commit, and when it checkpoints the WAL (not every 0.5 s beside the
group commits of writes that do not pause)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway_server_support import GatewayThread, connected
from tests.lifecycle_support import DB, KEYS, make_templates, use_template


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "warm-start", kinds=("sqlite",))


@pytest.fixture
def sqlite_state(templates: dict[str, Path], state_dir: Path) -> Iterator[Path]:
    use_template(templates["sqlite"], state_dir)
    yield state_dir


def _kept_writer(db: Path) -> sqlite3.Connection | None:
    from openclaw_cli.store import sqlite_common

    keep = sqlite_common.keeper(db)
    assert keep is not None  # a live server runs in this process
    kept = keep._writer  # noqa: SLF001 - the idle write connection under test
    return kept[0] if kept is not None else None


def _fingerprint(db: Path) -> tuple[str, int]:
    """The database file's bytes, and how much its WAL holds (0: no frame written)."""
    wal = Path(f"{db}-wal")
    return hashlib.sha256(db.read_bytes()).hexdigest(), wal.stat().st_size if wal.exists() else 0


def test_the_gateway_opens_its_write_connection_at_start_and_writes_nothing(sqlite_state: Path) -> None:
    db = sqlite_state / DB
    before = _fingerprint(db)
    with GatewayThread() as gw:
        kept = _kept_writer(db)
        assert kept is not None, "no write connection kept at start"
        assert _fingerprint(db) == before  # opened and checked, nothing written
        # its savepoints' journals in memory: a group commit creates no temp file (`etilqs_*`)
        assert kept.execute("PRAGMA temp_store").fetchone()[0] == 2
        with connected(gw.url) as client:
            res = client.request("sessions.patch", {"key": KEYS["main"], "label": "first write"})
            assert res["ok"], res
        assert _kept_writer(db) is kept  # the first group commit took it and gave it back


def test_a_database_with_a_migration_pending_is_left_to_the_first_write(sqlite_state: Path) -> None:
    from openclaw_cli.store.sqlite import schema

    db = sqlite_state / DB
    conn = sqlite3.connect(db)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute(f"PRAGMA user_version = {version - 1}")  # one step behind: a migration pending
    conn.close()
    assert version - 1 - schema.USER_VERSION_BASE >= schema.READABLE_SCHEMA_VERSION
    before = _fingerprint(db)
    with GatewayThread():
        assert _kept_writer(db) is None
        assert _fingerprint(db) == before  # not migrated by the start


def test_a_read_only_server_keeps_no_write_connection(sqlite_state: Path) -> None:
    with GatewayThread(read_only=True):
        assert _kept_writer(sqlite_state / DB) is None


def test_a_checkpoint_waits_for_the_writes_to_pause_but_not_for_ever() -> None:
    from openclaw_cli.gateway.server import CHECKPOINT_MAX_S, CHECKPOINT_QUIET_S, checkpoint_due

    # writes that do not pause: none before CHECKPOINT_MAX_S, one then
    assert not checkpoint_due(pending_s=CHECKPOINT_MAX_S / 2, quiet_s=0.0, writing=True)
    assert not checkpoint_due(pending_s=CHECKPOINT_MAX_S / 2, quiet_s=CHECKPOINT_QUIET_S / 2, writing=False)
    assert checkpoint_due(pending_s=CHECKPOINT_MAX_S, quiet_s=0.0, writing=True)
    # the writes paused: at once
    assert checkpoint_due(pending_s=0.0, quiet_s=CHECKPOINT_QUIET_S, writing=False)
    assert not checkpoint_due(pending_s=0.0, quiet_s=CHECKPOINT_QUIET_S * 4, writing=True)
