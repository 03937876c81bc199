"""The parser's rows files at the end of the bulk import (issue 30, `parser_process.RowsFiles`): the
last file is copied whichever closed it — `FINISH`, or the last record that took it past
`ROWS_FILE_BYTES` (that case failed the import: the parser answered -1 for a file it had closed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.hardening_support import DB, SESSIONS, leftovers, make_state
from tests.test_import_parser import _report, _tables


@pytest.mark.parametrize("file_bytes", [1, 30_000])
def test_the_last_rows_file_is_copied_whichever_closed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_bytes: int
) -> None:
    from openclaw_cli.migration import parser_process
    from openclaw_cli.store.sqlite import store as sqlite_store
    from tests.test_migration_helpers import doctor as doctor_in_process

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
        state = tmp_path / mode / "state"
        shutil.copytree(template, state)
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
        monkeypatch.setenv("OPENCLAW_IMPORT_PARSER", mode)
        copied.clear()
        report = doctor_in_process("import")
        assert report.exit_code == 0, report.to_json()
        results[mode] = (_report(report, state), _tables(state / DB), sorted(os.listdir(state / SESSIONS)))
        assert leftovers(state) == [], mode
        if mode == "process" and file_bytes == 1:
            assert len(copied) == 12 and len(set(copied)) == 12, copied  # one file per record, each once
        elif mode != "inline":
            assert copied and len(set(copied)) == len(copied), copied
    for mode in ("process", "split"):
        assert results[mode] == results["inline"], mode
