"""The parser's rows files at the end of the bulk import (issue 30, `parser_process.RowsFiles`): the
last file is copied whichever closed it — `FINISH`, or the last record that took it past
`ROWS_FILE_BYTES` (that case failed the import: the parser answered -1 for a file it had closed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.errors import OpenClawError
from openclaw_cli.migration import parser_process
from tests.hardening_support import DB, SESSIONS, leftovers, make_state
from tests.test_import_parser import _report, _tables


def _import_in(template: Path, root: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """`doctor --session-sqlite import` (in process) of a copy of `template` under `root`, with the
    parser in `mode`: (its report, the database's tables, the sessions dir's names); nothing left."""
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = root / mode / "state"
    shutil.copytree(template, state)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
    report = doctor_in_process("import")
    assert report.exit_code == 0, report.to_json()
    assert leftovers(state) == [], mode
    return _report(report, state), _tables(state / DB), sorted(os.listdir(state / SESSIONS))


@pytest.mark.parametrize("file_bytes", [1, 30_000])
def test_the_last_rows_file_is_copied_whichever_closed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_bytes: int
) -> None:
    from openclaw_cli.migration import parser_process
    from openclaw_cli.store.sqlite import store as sqlite_store

    template = make_state(tmp_path / "template" / "state", sessions=12, mb=0.1, seed=44)
    copied: list[str] = []
    bulk_state = sqlite_store._BulkState

    class Counted(bulk_state):  # type: ignore[misc, valid-type]
        def copy_rows(self, path: str) -> None:
            copied.append(os.path.basename(path))
            super().copy_rows(path)

    monkeypatch.setattr(sqlite_store, "_BulkState", Counted)
    # 1 byte: every record closes its file, the last one included (sent to the parser at its start)
    monkeypatch.setattr(parser_process, "ROWS_FILE_BYTES", file_bytes)
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_STEAL", "0")
    results = {}
    for mode in ("inline", "process", "split"):
        copied.clear()
        results[mode] = _import_in(template, tmp_path, mode, monkeypatch)
        if mode == "process" and file_bytes == 1:
            assert len(copied) == 12 and len(set(copied)) == 12, copied  # one file per record, each once
        elif mode != "inline":
            assert copied and len(set(copied)) == len(copied), copied
    for mode in ("process", "split"):
        assert results[mode] == results["inline"], mode


def test_records_are_imported_while_a_rows_file_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rows file's copy runs in a thread of its own (`_BulkState.copy_rows`): the importing process
    goes on with the next records meanwhile (the parser is not left idle), and the outcome is the
    in-process import's. The copy is held until a record was imported after it started."""
    import threading

    from openclaw_cli.store.sqlite import store as sqlite_store

    template = make_state(tmp_path / "template" / "state", sessions=12, mb=0.1, seed=45)
    bulk_state = sqlite_store._BulkState
    during: list[int] = []  # records imported while a copy was held, per copy

    class Held(bulk_state):  # type: ignore[misc, valid-type]
        def copy_rows(self, path: str) -> None:
            self.moved_on = threading.Event()
            during.append(0)
            super().copy_rows(path)

        def _copy_file(self, conn: Any, path: str) -> None:
            self.moved_on.wait(timeout=20)
            super()._copy_file(conn, path)

        def import_one(self, record: Any, on_malformed: Any) -> Any:
            result = super().import_one(record, on_malformed)
            if self._copying is not None and self._copying.is_alive():
                during[-1] += 1
                self.moved_on.set()
            return result

    monkeypatch.setattr(sqlite_store, "_BulkState", Held)
    monkeypatch.setattr(parser_process, "ROWS_FILE_BYTES", 30_000)
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_STEAL", "0")
    results = {}
    for mode in ("inline", "split"):
        during.clear()
        results[mode] = _import_in(template, tmp_path, mode, monkeypatch)
        if mode == "split":
            # every copy but the last (after the last record) saw a record imported beside it
            assert len(during) >= 2 and all(during[:-1]), during
    assert results["split"] == results["inline"]
    assert not [t for t in threading.enumerate() if t.name == "rows-copy"]


def test_a_failed_rows_file_copy_fails_the_import_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy that fails in its thread is raised in the importing thread: the import fails typed, the
    private build is discarded, the legacy store is as it was, no thread is left copying."""
    import threading

    from openclaw_cli.store.sqlite import store as sqlite_store
    from tests.hardening_support import tree_digest
    from tests.test_migration_helpers import doctor as doctor_in_process

    state = make_state(tmp_path / "one" / "state", sessions=12, mb=0.1, seed=46)
    before = tree_digest(state / SESSIONS)
    monkeypatch.setattr(
        sqlite_store, "_WINDOW_COPY", "INSERT INTO main.no_such_table SELECT * FROM parsed_rows.wn"
    )
    monkeypatch.setattr(parser_process, "ROWS_FILE_BYTES", 1)  # every record closes its file
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER_STEAL", "0")
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", "process")
    with pytest.raises(OpenClawError, match="no_such_table") as failed:
        doctor_in_process("import")
    assert "rolled back" in failed.value.message
    assert not (state / DB).exists()
    assert leftovers(state) == []
    assert tree_digest(state / SESSIONS) == before
    assert not [t for t in threading.enumerate() if t.name == "rows-copy"]
