"""Issue 29 finding 8 (errors): a full disk (ENOSPC) or a read-only filesystem (EROFS) gives exit 11
or 12 on every store kind — SQLite lifecycle commands exited 1 (a batch) or 1 `io_error` (SQLite's
"disk I/O error" on a full disk), and with the ownership guard a legacy write on a read-only
filesystem said "owned by another process" (5). Nothing is changed. Real tmpfs mounts (root)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from openclaw_cli.errors import ExitCode
from tests.hardening_support import can_mount, cli, doctor, make_state, tmpfs, tree_digest

COMMANDS = [("delete", "--yes"), ("label", "L"), ("reset",), ("cleanup", "--enforce")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["legacy", "sqlite"])
@pytest.mark.parametrize("fault", ["ENOSPC", "EROFS"])
def test_lifecycle_commands_exit_11_or_12_on_every_store_kind(kind: str, fault: str) -> None:
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    with tmpfs("8m") as mnt:
        state = make_state(mnt, 8)
        (state / "openclaw.json").write_text(json.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}))
        if kind == "sqlite":
            assert doctor(state, "import", "--json").returncode == 0
        keys = [row["key"] for row in json.loads(cli(state, "sessions", "list", "--json").stdout)["sessions"]]
        others = [key for key in keys if key != "agent:main:main"]
        if fault == "EROFS":
            subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        else:
            with open(mnt / "filler", "wb") as fh:
                try:
                    fh.write(b"\0" * shutil.disk_usage(mnt).free)
                except OSError:
                    pass
        before = {k: v for k, v in tree_digest(state).items() if v[0] != "dir"}
        want = ExitCode.NO_SPACE if fault == "ENOSPC" else ExitCode.PERMISSION
        kinds = {"no_space"} if fault == "ENOSPC" else {"read_only_filesystem", "permission_denied"}
        try:
            for i, (command, *more) in enumerate(COMMANDS):
                args = (
                    ["sessions", command] + ([others[i]] if command != "cleanup" else []) + more + ["--json"]
                )
                proc = cli(state, *args)
                assert proc.returncode == want, (command, proc.stdout[-600:], proc.stderr[-300:])
                assert "Traceback" not in proc.stderr
                error = json.loads(proc.stdout)["error"]  # the document says which, not "cli_error"
                assert error["type"] in kinds and error["type"] != "cli_error", (command, error)
                assert ("space" if fault == "ENOSPC" else "read-only") in error["message"].lower(), error
        finally:
            if fault == "EROFS":
                subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True)
        after = {k: v for k, v in tree_digest(state).items() if v[0] != "dir"}
        # SQLite's own sidecars of a failed open (an empty -wal, a -shm index) hold no data
        assert {k: v for k, v in after.items() if not k.endswith(("-shm", "-wal"))} == before


def test_a_batch_refused_one_way_names_that_refusal_in_its_document() -> None:
    """The batch document's `error` on exit 11/12 is the refusal (type and text), not the generic
    "did not complete" `cli_error` a mixed failure gets."""
    from openclaw_cli.ops.lifecycle_batch import Batch

    text = "/s/agents/main/agent/openclaw-agent.sqlite: no space left on the device (0 bytes free)"
    batch = Batch("pin", False)
    batch.results = [{"key": k, "ok": False, "status": "failed", "error": text} for k in ("a", "b")]
    batch.failure_codes, batch.failure_types = [11, 11], ["no_space", "no_space"]
    assert batch.exit_code() == 11
    assert batch.document()["error"] == {"type": "no_space", "message": text}
    batch.failure_codes, batch.failure_types = [11, 12], ["no_space", "read_only_filesystem"]
    assert batch.exit_code() == 1 and batch.document()["error"]["type"] == "cli_error"
