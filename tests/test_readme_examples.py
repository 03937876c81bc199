"""The README's "Where did my disk go" and "Get it back" examples (issue 27's "Done when"), run as
printed — each line of their `sh` blocks through bash, with our installed `openclaw` first on PATH —
on every store kind: the fixture's state (legacy, our SQLite, OpenClaw's schema 23 and 24) with the
sessions the examples name made from its own (copies of a DM and of a cron run), then, between the
two blocks, the removals the second one undoes (`sessions delete`, and a reset that starts a new
session)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.storage_support import STORE_KINDS, cli, make_state

ROOT = Path(__file__).resolve().parent.parent
OPENCLAW = Path(sys.executable).parent / "openclaw"
DM, NIGHTLY, MAIN = "agent:main:telegram:direct:42", "agent:main:cron:nightly", "agent:main:main"


def block(title: str) -> list[str]:
    """The command lines of the first `sh` block under the README's `## <title>`."""
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    body = re.search(r"```sh\n(.*?)```", section, re.S)
    assert body, title
    return [line for line in body.group(1).splitlines() if line.strip()]


def run(line: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{OPENCLAW.parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, env=env, timeout=300
    )


def events(key: str) -> bytes:
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    with open_agent_store(resolve_paths(), "main", read_only=True) as store:
        entry = store.get_entry(key)
        assert entry is not None, key
        sink = io.BytesIO()
        store.export_transcript(entry["sessionId"], sink, entry=entry)
        return sink.getvalue()


def copy_session(key: str, parent: str) -> None:
    """A session of the examples' name holding a copy of `parent`'s transcript under a new session
    id, written by the store's own restore path (so in whatever store kind the state has; a fork
    would start these parents isolated: they are over the fork's token limit)."""
    import uuid

    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store
    from openclaw_cli.store.writer import store_writer

    ctx = Context.load(resolve_paths())
    content = events(parent)
    with open_agent_store(ctx.paths, "main") as store:
        entry = {
            k: v for k, v in (store.get_entry(parent) or {}).items() if k not in ("sessionFile", "label")
        }
        entry["sessionId"] = str(uuid.uuid4())
        with store_writer(store, ctx.lock_settings()):
            store.restore_session(key, entry, content, lock_settings=ctx.lock_settings(), now_ms=ctx.now_ms())


@pytest.mark.slow  # ~9 s of CPU per store kind: a dozen `openclaw` processes each
@pytest.mark.skipif(not OPENCLAW.exists(), reason=f"no installed openclaw script at {OPENCLAW}")
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_readme_storage_examples_run_as_printed(
    kind: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_state(kind, state_dir)
    copy_session(DM, "agent:main:telegram:direct:100001")
    copy_session(NIGHTLY, "agent:main:cron:job1")
    disk = block("Where did my disk go")
    assert len(disk) == 7 and disk[0].startswith("openclaw storage")
    outputs = {}
    for line in disk:
        done = run(line)
        assert done.returncode == 0, (line, done.stdout[-1500:], done.stderr[-1500:])
        outputs[line.split("#", 1)[0].strip()] = done.stdout

    def out(prefix: str) -> str:
        [found] = [text for command, text in outputs.items() if command.startswith(prefix)]
        return found

    assert outputs["openclaw storage"].strip()
    containers = [json.loads(doc) for doc in re.findall(r"\{[^{}]*\}", out("openclaw storage --top 5"))]
    assert containers and all(set(c) == {"container", "diskBytes"} for c in containers)
    assert DM in out("openclaw sessions --sort size")
    assert DM in out(f"openclaw sessions show {DM}")
    assert NIGHTLY in out("openclaw cleanup --explain")

    # what the second block undoes: the nightly run deleted, the main session reset to a new one
    nightly = events(NIGHTLY)
    code, _, err = cli("sessions", "delete", NIGHTLY, "--yes")
    assert code == 0, err
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")  # a reset that starts a new session
    main_before = events(MAIN)
    code, _, err = cli("sessions", "reset", MAIN)
    assert code == 0, err
    monkeypatch.delenv("OPENCLAW_CLI_BEHAVIOR")

    back = block("Get it back")
    assert len(back) == 5
    outputs = {}
    for line in back:
        done = run(line)
        command = line.split("#", 1)[0].strip()
        if command.endswith("--as agent:main:main-before-reset") and kind.startswith("schema"):
            # OpenClaw's databases keep the reset's earlier window in place: nothing left the store
            # (the README says so below the block)
            assert done.returncode == 4 and "No archive of agent:main:main" in done.stderr, done.stderr
            continue
        assert done.returncode == 0, (line, done.stdout[-1500:], done.stderr[-1500:])
        outputs[command] = done.stdout
    assert NIGHTLY in outputs["openclaw sessions archives"]
    assert events(NIGHTLY) == nightly  # restored, byte-identical
    if not kind.startswith("schema"):
        assert events("agent:main:main-before-reset") == main_before
    assert outputs["openclaw usage --by model --since 30d"].strip()
